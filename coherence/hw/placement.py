"""Which agent runs which litmus role, and where the locations live: the plans of the link
harness (``coherence.hw.link``), made without a GPU so that they are unit-tested anywhere.

An agent is ``cpu`` (a host thread) or ``gpuN``; a memory is ``host`` (ordinary host memory:
CPU agents only), ``pinned`` (mapped pinned host memory, ``cudaHostAlloc``), ``managed``
(``cudaMallocManaged``) or ``gpuN`` (device memory of GPU N, reached by the others over peer
access). A plan is run only if every agent can reach the memory.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from coherence.errors import NO_SPAN, SpecError

MEMORIES = ("host", "pinned", "managed")


@attrs.frozen
class Placement:
    agents: tuple[str, ...]  # per role
    memory: str

    def label(self) -> str:
        return f"{'+'.join(self.agents)} on {self.memory}"

    @property
    def gpus(self) -> list[int]:
        return sorted({gpu_index(a) for a in self.agents if a != "cpu"})

    @property
    def cpu_roles(self) -> list[int]:
        return [t for t, a in enumerate(self.agents) if a == "cpu"]


def gpu_index(agent: str) -> int:
    if not agent.startswith("gpu") or not agent[3:].isdigit():
        raise ValueError(f"not a GPU agent: {agent!r}")
    return int(agent[3:])


def reachable(agent: str, memory: str, peer: Sequence[Sequence[bool]]) -> bool:
    """Can ``agent`` load and store ``memory``? ``peer[i][j]``: GPU i can access GPU j."""
    if memory == "host":
        return agent == "cpu"
    if memory in ("pinned", "managed"):
        return True
    home = gpu_index(memory)
    if agent == "cpu":
        return False
    g = gpu_index(agent)
    return g == home or bool(peer[g][home])


def check(p: Placement, gpus: int, peer: Sequence[Sequence[bool]]) -> None:
    for a in p.agents:
        if a != "cpu" and gpu_index(a) >= gpus:
            raise SpecError(f"{p.label()}: this machine has {gpus} GPU(s)", NO_SPAN)
    if p.memory not in MEMORIES:
        gpu_index(p.memory)
        if gpu_index(p.memory) >= gpus:
            raise SpecError(f"{p.label()}: this machine has {gpus} GPU(s)", NO_SPAN)
    bad = [a for a in p.agents if not reachable(a, p.memory, peer)]
    if bad:
        raise SpecError(f"{p.label()}: {', '.join(sorted(set(bad)))} cannot reach "
                        f"{p.memory} memory", NO_SPAN)


def cpu_gpu_plans(roles: int, memories: Sequence[str] = ("pinned", "managed"),
                  gpu: int = 0) -> list[Placement]:
    """Each role alone on a CPU thread against the others on one GPU, per memory (for a
    2-thread test: the CPU writes and the GPU reads, then the other way round)."""
    out = []
    for memory in memories:
        for cpu_role in range(roles):
            agents = tuple("cpu" if t == cpu_role else f"gpu{gpu}" for t in range(roles))
            out.append(Placement(agents, memory))
    return out


def peer_pairs(peer: Sequence[Sequence[bool]]) -> tuple[list[tuple[int, int]], str | None]:
    """Ordered pairs of GPUs that reach each other's memory, or none and why not (the words
    every multi-GPU measurement reports on a machine without them: "not run: 1 GPU")."""
    n = len(peer)
    if n < 2:
        return [], f"not run: {n} GPU"
    pairs = [(i, j) for i in range(n) for j in range(n)
             if i != j and peer[i][j] and peer[j][i]]
    if not pairs:
        return [], f"not run: no two of the {n} GPUs have peer access"
    return pairs, None


def peer_plans(roles: int, peer: Sequence[Sequence[bool]]) -> tuple[list[Placement], str | None]:
    """Roles on different GPUs over peer memory: for each ordered pair (i, j) of GPUs that
    reach each other, roles alternate i, j, i, ... with the locations on j, then on i."""
    pairs, why = peer_pairs(peer)
    out: list[Placement] = []
    for i, j in pairs:
        agents = tuple(f"gpu{(i, j)[t % 2]}" for t in range(roles))
        out.extend(Placement(agents, f"gpu{home}") for home in (j, i))
    return out, why


def parse_placement(text: str) -> Placement:
    """``AGENT+AGENT...@MEMORY``, e.g. ``cpu+gpu0@pinned`` (the ``--place`` option)."""
    agents, sep, memory = text.partition("@")
    names = tuple(a.strip() for a in agents.split("+"))
    if not sep or not memory or not all(names):
        raise SpecError(f"placement {text!r}: expected AGENT+AGENT...@MEMORY, e.g. "
                        "cpu+gpu0@pinned", NO_SPAN)
    for a in names:
        if a != "cpu":
            try:
                gpu_index(a)
            except ValueError:
                raise SpecError(f"placement {text!r}: agent {a!r} is neither cpu nor gpuN",
                                NO_SPAN) from None
    if memory not in MEMORIES:
        try:
            gpu_index(memory)
        except ValueError:
            raise SpecError(f"placement {text!r}: memory {memory!r} is none of "
                            f"{', '.join(MEMORIES)}, gpuN", NO_SPAN) from None
    return Placement(names, memory)
