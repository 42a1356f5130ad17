"""Choosing which properties a run checks (``--skip NAME``)."""

from __future__ import annotations

import attrs

from coherence.errors import NO_SPAN, SpecError
from coherence.ir import Model

BUILTIN_CHECKS = ("deadlock",)


def drop_properties(model: Model, names: list[str]) -> Model:
    """The model without the named invariants and history properties.

    Skipping a ``coherence`` property also removes its monitor from the state, which can make
    the state space much smaller.
    """
    known = ({i.name for i in model.invariants} | {p.name for p in model.properties}
             | {p.name for p in model.liveness})
    for name in names:
        if name not in known:
            listed = ", ".join(sorted(known)) or "none"
            raise SpecError(f"--skip {name}: the spec has no invariant or property of that name "
                            f"(it has: {listed})", NO_SPAN)
    if not names:
        return model
    return attrs.evolve(
        model,
        invariants=tuple(i for i in model.invariants if i.name not in names),
        properties=tuple(p for p in model.properties if p.name not in names),
        liveness=tuple(p for p in model.liveness if p.name not in names),
    )
