"""Testing environments: named parameter sets of the persistent harness.

In the spirit of MC Mutants (Levine et al., ASPLOS 2023): the same litmus kernel behaves very
differently depending on how its threads meet and what else the memory system is doing, so a
"never seen" is only worth the environment it was seen in. Four are bundled. Roles are placed
a warp at a time (every thread of a warp plays the same role, for 32 instances whose other
roles sit in other random warps) unless said otherwise:

* ``plain``: every thread runs instances; after the per-iteration barrier each role waits a
  random delay (up to ``jitter_cycles``), so the roles of an instance rarely overlap in time
  (the baseline of a harness without synchronised starts);
* ``barrier``: the roles start together, right after the barrier (no delay), no stress;
* ``scatter``: as ``barrier``, but the roles are placed a thread at a time rather than a warp
  at a time, so the threads of a warp play different roles of different instances (more
  mixing, more divergence);
* ``stress``: as ``barrier``, but half the threads hammer a few scratch lines for the whole
  launch (memory stress) and every role touches them before each instance (pre-stress).

Each environment's *mutation score* (``coherence.hw.mutation``) says how many of the variants
whose weak outcome is allowed it actually revealed.
"""

from __future__ import annotations

from typing import Any

import attrs

from coherence.errors import NO_SPAN, SpecError


@attrs.frozen
class Environment:
    name: str
    doc: str
    test_fraction: float  # share of the grid's threads that run instances; the rest stress
    stress_lines: int  # scratch lines the stress threads and pre-stress touch (0: none)
    stress_iters: int  # accesses of a stress thread between checks that the testers are done
    pre_stress: int  # accesses to the scratch lines by each role before each instance
    jitter_cycles: int  # a role's random delay after the barrier, in clock cycles (0: none)
    placement: str = "warp"  # roles placed a warp at a time, or a thread at a time

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


ENVIRONMENTS: dict[str, Environment] = {
    e.name: e for e in (
        Environment("plain", "no stress; each role starts after a random delay of up to "
                    "2,048 cycles", 1.0, 0, 0, 0, 2048),
        Environment("barrier", "no stress; the roles start together after the barrier",
                    1.0, 0, 0, 0, 0),
        Environment("scatter", "as barrier, but every role of every instance on a random "
                    "thread (a warp's threads play different roles of different instances)",
                    1.0, 0, 0, 0, 0, "thread"),
        Environment("stress", "roles start together; half the threads stress 64 scratch "
                    "lines; each role makes 4 scratch accesses before each instance",
                    0.5, 64, 32, 4, 0),
    )
}
DEFAULT_ENVIRONMENTS = ("plain", "barrier", "scatter", "stress")


def environment(name: str) -> Environment:
    try:
        return ENVIRONMENTS[name]
    except KeyError:
        raise SpecError(f"unknown environment {name!r} (known: {', '.join(ENVIRONMENTS)})",
                        NO_SPAN) from None
