"""Where a litmus test's threads run: on which processor instances of a hierarchical spec.

A flat spec (``cache machine``) runs thread t on agent t, with ``agents`` = threads. A
hierarchical spec (``machine L1[g: gpu, s: sm]``, HIER.md) has processors indexed by a tuple
of index types, outermost first; a *placement* gives each thread its index values, and the
spec is loaded with each index type sized to fit:

* ``same-gpu``: the threads differ only in the innermost index (``L1[0, 0]``, ``L1[0, 1]``,
  ...: SMs of one GPU, which is what one GPU's hardware results can be compared with);
* ``cross-gpu``: the threads differ in the outermost index (``L1[0, 0]``, ``L1[1, 0]``, ...:
  one SM on each of several GPUs);
* ``G.S,G.S,...``: each thread's index values, e.g. ``0.0,0.1,1.0`` for IRIW's writers on one
  GPU and a reader on another.

The sizes are set through the parameters that size the index types (``index gpu: gpus;``):
each index type is matched to its parameter by loading the spec once with that parameter
moved by one and seeing which index type follows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import attrs

from coherence import ir
from coherence.errors import NO_SPAN, SpecError
from coherence.litmus.program import Litmus

SAME = "same-gpu"
CROSS = "cross-gpu"
PLACES = (SAME, CROSS)
DEFAULT_PLACE = SAME  # what a one-GPU hardware run is compared with (`hw report`)


@attrs.frozen
class Placement:
    """Thread t runs on processor node ``nodes[t]`` (for a flat spec: agent t)."""

    place: str  # as asked: a name of PLACES, an explicit list, or "agents" (flat spec)
    machine: str  # the processor machine
    coords: tuple[tuple[int, ...], ...]  # each thread's index values (flat: (t,))
    nodes: tuple[int, ...]

    def names(self) -> list[str]:
        """Each thread's processor, as traces and diagrams name it (``L1[0, 1]``)."""
        return [f"{self.machine}[{', '.join(map(str, c))}]" for c in self.coords]


def check_place(text: str) -> str:
    """``--place``'s value, checked (a usage error names the accepted forms)."""
    if text in PLACES or re.fullmatch(r"\d+(\.\d+)*(,\d+(\.\d+)*)*", text):
        return text
    raise SpecError(f"--place {text!r}: expected {', '.join(PLACES)}, or each thread's index "
                    "values, e.g. 0.0,0.1,1.0", NO_SPAN)


def coordinates(place: str, threads: int, depth: int) -> tuple[tuple[int, ...], ...]:
    """Each thread's index values (``depth`` of them) under ``place``."""
    if place == SAME:
        return tuple((*(0,) * (depth - 1), t) for t in range(threads)) if depth else ()
    if place == CROSS:
        return tuple((t, *(0,) * (depth - 1)) for t in range(threads)) if depth else ()
    coords = tuple(tuple(int(x) for x in item.split(".")) for item in place.split(","))
    if len(coords) != threads:
        raise SpecError(f"--place {place}: {len(coords)} places for {threads} threads",
                        NO_SPAN)
    if any(len(c) != depth for c in coords):
        raise SpecError(f"--place {place}: each place needs {depth} index values (the "
                        "processor machine's indices)", NO_SPAN)
    if len(set(coords)) != len(coords):
        raise SpecError(f"--place {place}: two threads on one processor", NO_SPAN)
    return coords


def processor(model: ir.Model) -> ir.Machine:
    """The machine whose instances run the threads: the one that handles processor events."""
    m = ir.event_machine(model) if model.is_hierarchical else (
        model.caches[0] if model.caches else None)
    if m is None:
        raise SpecError(f"{model.file}: the spec has no machine that handles processor events "
                        "to run threads on", NO_SPAN)
    return m


def index_params(model: ir.Model) -> list[str]:
    """For each index of the processor machine, outermost first, the parameter that sizes it."""
    from coherence.spec.load import rebind

    out: list[str] = []
    for f in processor(model).indices:
        assert isinstance(f.type, ir.IndexT)
        t = f.type
        named = getattr(t, "param", None)
        if isinstance(named, str):
            out.append(named)
            continue
        found = None
        for p in model.params:
            if p.name in ("lines", "values", *out) or p.value != t.n:
                continue
            for probe in (p.value + 1, p.value - 1):
                if probe < 1:
                    continue
                try:
                    other = rebind(model, {p.name: probe})
                except SpecError:
                    continue
                if other.index_type(t.name).n == probe:
                    found = p.name
                break
            if found:
                break
        if found is None:
            raise SpecError(f"{model.file}: cannot tell which parameter sizes index type "
                            f"{t.name!r}: litmus placement needs `index {t.name}: PARAM;`",
                            NO_SPAN)
        out.append(found)
    return out


def overrides(model: ir.Model, test: Litmus, place: str | None) -> dict[str, int]:
    """The parameter values ``model``'s spec is loaded with to run ``test`` at ``place``."""
    base = {"lines": len(test.locations), "values": test.max_value() + 1}
    if not model.is_hierarchical:
        if place is not None:
            raise SpecError(f"--place {place}: {model.file} is not hierarchical; thread t runs "
                            "on agent t", NO_SPAN)
        return {"agents": len(test.threads), **base}
    params = index_params(model)
    coords = coordinates(place or DEFAULT_PLACE, len(test.threads), len(params))
    sizes = {p: max(c[i] for c in coords) + 1 for i, p in enumerate(params)}
    return {**sizes, **base}


def placement(model: ir.Model, test: Litmus, place: str | None) -> Placement:
    """Where each thread of ``test`` runs in ``model`` (loaded with ``overrides``)."""
    proc = processor(model)
    threads = len(test.threads)
    if not model.is_hierarchical:
        return Placement("agents", proc.name, tuple((t,) for t in range(threads)),
                         tuple(range(threads)))
    coords = coordinates(place or DEFAULT_PLACE, threads, len(proc.indices))
    where = {(i.machine, i.values): i.node for i in ir.instances(model)}
    try:
        nodes = tuple(where[(proc.name, c)] for c in coords)
    except KeyError:
        raise SpecError(f"{model.file}: loaded with too few {proc.name} instances for "
                        f"{test.name} placed {place or DEFAULT_PLACE}", NO_SPAN) from None
    return Placement(place or DEFAULT_PLACE, proc.name, coords, nodes)


def load_for_test(path: str, extra: Mapping[str, int], test: Litmus,
                  place: str | None = None) -> tuple[ir.Model, Placement]:
    """The spec at ``path`` loaded to run ``test`` (``extra``: the user's ``--param``s), and
    where its threads run. ``place`` None: agents for a flat spec, DEFAULT_PLACE for a
    hierarchical one."""
    from coherence.spec.load import load_spec, rebind

    model = load_spec(path, dict(extra))
    model = rebind(model, overrides(model, test, place))
    return model, placement(model, test, place)
