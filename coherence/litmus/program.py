"""Litmus programs as data: threads of loads, stores and fences, and the outcome of interest.

The format follows the litmus tests of the GPU weak-memory literature (Alglave et al.,
"GPU concurrency: weak behaviours and programming assumptions", ASPLOS 2015; the PTX memory
model's litmus tests, Lustig et al., ASPLOS 2019): per-thread instruction lists, initial
values, and a condition on registers and final memory. Each memory operation carries a PTX
ordering (``weak``, ``volatile``, ``relaxed``, ``acquire``, ``release``) and scope (``cta``,
``gpu``, ``sys``); each fence a kind (``sc``, ``acq_rel``) and scope. An operation written
without annotation is *base*: the variants (``coherence.litmus.variants``) fill it in.
"""

from __future__ import annotations

import attrs

from coherence.errors import NO_SPAN, Span

ORDERS_LOAD = ("weak", "volatile", "relaxed", "acquire")
ORDERS_STORE = ("weak", "volatile", "relaxed", "release")
ORDERS_FENCE = ("sc", "acq_rel")
SCOPES = ("cta", "gpu", "sys")


def _span() -> Span:
    return attrs.field(default=NO_SPAN, eq=False, repr=False)


@attrs.frozen
class Op:
    """One instruction. ``value`` of a store is a literal or a register of the same thread
    (a data dependency); ``order``/``scope`` are None while the op is unannotated."""

    kind: str  # "load" | "store" | "fence"
    loc: str | None = None
    reg: str | None = None
    value: int | str | None = None
    order: str | None = None
    scope: str | None = None
    span: Span = _span()
    # a poll (``r = poll x == V``): a load repeated until it returns V (liveness, issue 16)
    until: int | None = None

    def text(self) -> str:
        ann = "".join(f".{a}" for a in (self.order, self.scope) if a)
        if self.kind == "fence":
            return f"fence{ann}"
        if self.kind == "load" and self.until is not None:
            return f"{self.reg} = poll{ann} {self.loc} == {self.until}"
        if self.kind == "load":
            return f"{self.reg} = load{ann} {self.loc}"
        return f"store{ann} {self.loc} {self.value}"


# ---------------------------------------------------------------- conditions


@attrs.frozen
class Atom:
    """``name == value`` (or ``!=``); name is ``T:reg`` or a location (its final value)."""

    name: str
    value: int
    negated: bool = False
    span: Span = _span()

    def text(self) -> str:
        return f"{self.name} {'!=' if self.negated else '=='} {self.value}"


@attrs.frozen
class And:
    items: tuple[Cond, ...]

    def text(self) -> str:
        return " && ".join(_paren(i) for i in self.items)


@attrs.frozen
class Or:
    items: tuple[Cond, ...]

    def text(self) -> str:
        return " || ".join(_paren(i) for i in self.items)


@attrs.frozen
class Not:
    item: Cond

    def text(self) -> str:
        return f"!{_paren(self.item)}"


Cond = Atom | And | Or | Not


def _paren(c: Cond) -> str:
    return f"({c.text()})" if isinstance(c, (And, Or)) else c.text()


def holds(cond: Cond, outcome: dict[str, int]) -> bool:
    if isinstance(cond, Atom):
        return (outcome[cond.name] == cond.value) != cond.negated
    if isinstance(cond, And):
        return all(holds(i, outcome) for i in cond.items)
    if isinstance(cond, Or):
        return any(holds(i, outcome) for i in cond.items)
    return not holds(cond.item, outcome)


def atoms(cond: Cond) -> list[Atom]:
    if isinstance(cond, Atom):
        return [cond]
    if isinstance(cond, Not):
        return atoms(cond.item)
    return [a for i in cond.items for a in atoms(i)]


# ---------------------------------------------------------------- programs


@attrs.frozen
class Litmus:
    name: str
    doc: str
    locations: tuple[str, ...]
    init: tuple[tuple[str, int], ...]
    cached: tuple[tuple[int, str], ...]  # (thread, location) loaded before the test starts
    threads: tuple[tuple[Op, ...], ...]
    condition: Cond
    file: str = attrs.field(default="<litmus>", eq=False)
    variant: str = "as-written"

    def initial(self, loc: str) -> int:
        return dict(self.init).get(loc, 0)

    def registers(self) -> list[str]:
        """Every register as ``T:reg``, in thread and program order."""
        return [f"{t}:{op.reg}" for t, ops in enumerate(self.threads)
                for op in ops if op.kind == "load"]

    def outcome_names(self) -> list[str]:
        return [*self.registers(), *self.locations]

    def max_value(self) -> int:
        vals = [v for _, v in self.init] + [op.value for ops in self.threads for op in ops
                                            if op.kind == "store" and isinstance(op.value, int)]
        vals += [a.value for a in atoms(self.condition)]
        vals += [op.until for ops in self.threads for op in ops if op.until is not None]
        return max([1, *vals])

    def polls(self) -> list[tuple[int, int]]:
        """(thread, index among its operations) of every poll."""
        return [(t, k) for t, ops in enumerate(self.threads) for k, op in enumerate(ops)
                if op.until is not None]

    def annotated(self) -> bool:
        return any(op.order is not None for ops in self.threads for op in ops)


Outcome = tuple[int, ...]  # values in the order of Litmus.outcome_names()


def outcome_text(test: Litmus, outcome: Outcome) -> str:
    return " ".join(f"{n}={v}" for n, v in zip(test.outcome_names(), outcome, strict=True))


def outcome_dict(test: Litmus, outcome: Outcome) -> dict[str, int]:
    return dict(zip(test.outcome_names(), outcome, strict=True))
