"""Holding observed outcomes (from hardware) against the outcomes a model allows.

Each outcome falls in one class:

* ``forbidden-observed``: the model is wrong about this hardware, or the hardware is buggy;
* ``allowed-observed``;
* ``allowed-unobserved``: never seen in ``n`` instances; by the rule of three its rate is
  below ``3/n`` with 95 % confidence (Hanley & Lippman-Hand, JAMA 1983), nothing more.

The model is *consistent* with the observations when nothing forbidden was observed.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from coherence.litmus.program import Litmus, Outcome, holds, outcome_dict, outcome_text


@attrs.frozen
class Row:
    outcome: str
    count: int
    allowed: bool
    sc: bool
    interesting: bool  # satisfies the test's condition
    verdict: str  # forbidden-observed | allowed-observed | allowed-unobserved
    rate_bound: float | None = None  # upper bound (95 %) for unobserved outcomes


@attrs.frozen
class Comparison:
    test: str
    variant: str
    model: str
    instances: int
    rows: tuple[Row, ...]

    @property
    def consistent(self) -> bool:
        return not any(r.verdict == "forbidden-observed" for r in self.rows)

    @property
    def condition_observed(self) -> int:
        return sum(r.count for r in self.rows if r.interesting)

    def to_json(self) -> dict:
        return {"test": self.test, "variant": self.variant, "model": self.model,
                "instances": self.instances, "consistent": self.consistent,
                "condition_observed": self.condition_observed,
                "rows": [attrs.asdict(r) for r in self.rows]}


def rule_of_three(n: int) -> float:
    return 1.0 if n <= 0 else min(1.0, 3.0 / n)


def compare(test: Litmus, model_name: str, allowed: set[Outcome], sc: set[Outcome],
            observed: Mapping[Outcome, int]) -> Comparison:
    n = sum(observed.values())
    rows: list[Row] = []
    for o in sorted(set(allowed) | set(observed)):
        count = observed.get(o, 0)
        ok = o in allowed
        if count and not ok:
            verdict, bound = "forbidden-observed", None
        elif count:
            verdict, bound = "allowed-observed", None
        else:
            verdict, bound = "allowed-unobserved", rule_of_three(n)
        rows.append(Row(outcome_text(test, o), count, ok, o in sc,
                        holds(test.condition, outcome_dict(test, o)), verdict, bound))
    return Comparison(test.name, test.variant, model_name, n, tuple(rows))
