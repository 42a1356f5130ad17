"""The variants a GPU programmer would try on one litmus program.

Each fills in the unannotated operations (an operation written with an annotation keeps it):

* ``weak``: plain ``ld``/``st`` (what C++ without atomics compiles to);
* ``volatile``: ``ld.volatile``/``st.volatile`` (CUDA's ``volatile``);
* ``relaxed.S``: ``ld.relaxed.S``/``st.relaxed.S`` (``cuda::atomic`` with memory_order_relaxed);
* ``acqrel.S``: every load ``acquire``, every store ``release`` at scope S;
* ``fence.S``: relaxed.gpu accesses with ``fence.sc.S`` between consecutive accesses of a
  thread (``__threadfence_block``/``__threadfence``/``__threadfence_system`` style).

The PTX ISA (sections "Memory Consistency Model" and "Scope") defines these; a cta-scope
fence between threads on different SMs is expected to be too weak, which is the point of
trying it.
"""

from __future__ import annotations

import attrs

from coherence.errors import NO_SPAN, SpecError
from coherence.litmus.program import Litmus, Op

VARIANTS: tuple[str, ...] = (
    "weak", "volatile", "relaxed.gpu", "relaxed.sys", "acqrel.gpu", "acqrel.sys",
    "fence.cta", "fence.gpu", "fence.sys",
)


def variant_names(test: Litmus) -> list[str]:
    """The variants that make sense for ``test``: as written if annotated, else the set."""
    return ["as-written"] if test.annotated() else list(VARIANTS)


def _fill(op: Op, order: str, scope: str | None) -> Op:
    if op.order is not None or op.kind == "fence":
        return op
    if order == "acqrel":
        order = "acquire" if op.kind == "load" else "release"
    return attrs.evolve(op, order=order, scope=scope)


def apply_variant(test: Litmus, variant: str) -> Litmus:
    """The test with every unannotated operation annotated as ``variant`` says."""
    if variant == "as-written":
        return attrs.evolve(test, variant=variant)
    if variant not in VARIANTS:
        raise SpecError(f"unknown variant {variant!r} (known: as-written, "
                        f"{', '.join(VARIANTS)})", NO_SPAN)
    kind, _, scope = variant.partition(".")
    threads = []
    for ops in test.threads:
        if kind == "fence":
            new: list[Op] = []
            for op in ops:
                if op.kind != "fence" and new and new[-1].kind != "fence":
                    new.append(Op("fence", order="sc", scope=scope, span=op.span))
                new.append(_fill(op, "relaxed", "gpu"))
            threads.append(tuple(new))
        elif kind == "weak":
            threads.append(tuple(_fill(op, "weak", None) for op in ops))
        elif kind == "volatile":
            threads.append(tuple(_fill(op, "volatile", "sys") for op in ops))
        else:
            threads.append(tuple(_fill(op, kind, scope) for op in ops))
    return attrs.evolve(test, threads=tuple(threads), variant=variant)
