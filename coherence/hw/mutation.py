"""Mutation score of a testing environment: of the litmus variants whose weak outcome is
allowed (the *mutants*), the share in which the environment observed it (*killed* them).

MC Mutants (Levine et al., ASPLOS 2023) scores environments by the mutants of conformance tests
they kill; here the mutants are the catalogue's variants whose condition a reference model
allows (weak, relaxed or cta-fenced MP, SB with release/acquire, ...). A score of 1 says the
environment reveals every weak behaviour the variants permit; a "never seen" of a forbidden
variant in that environment is then worth its rule-of-three bound. A low score says a "never
seen" may be the harness's weakness, not the hardware's strength.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

Key = tuple[str, str]  # (test, variant)


@attrs.frozen
class Score:
    environment: str
    mutants: int
    killed: int
    missed: tuple[str, ...]  # "TEST VARIANT" of each mutant the environment did not reveal

    @property
    def score(self) -> float | None:
        return self.killed / self.mutants if self.mutants else None

    def to_json(self) -> dict[str, Any]:
        return {**attrs.asdict(self), "missed": list(self.missed), "score": self.score}


def mutation_scores(observed: Mapping[str, Mapping[Key, int]], allowed: Mapping[Key, bool],
                    threshold: int = 1) -> list[Score]:
    """``observed[env][(test, variant)]``: how often the condition was seen; ``allowed``: whether
    the reference allows it. A mutant counts for an environment only if that environment ran
    it; it is killed when seen at least ``threshold`` times."""
    if threshold < 1:
        raise ValueError("threshold must be at least 1")
    out = []
    for env, counts in observed.items():
        mutants = sorted(k for k in counts if allowed.get(k, False))
        missed = tuple(f"{t} {v}" for t, v in mutants if counts[(t, v)] < threshold)
        out.append(Score(env, len(mutants), len(mutants) - len(missed), missed))
    return out


def forbidden_bounds(observed: Mapping[str, Mapping[Key, int]],
                     instances: Mapping[str, Mapping[Key, int]],
                     allowed: Mapping[Key, bool]) -> dict[Key, dict[str, Any]]:
    """For each variant the reference forbids: instances over all environments, times seen,
    and the 95 % upper bound of its rate (3/n, the rule of three) when never seen."""
    out: dict[Key, dict[str, Any]] = {}
    for env, counts in observed.items():
        for k, seen in counts.items():
            if allowed.get(k, True):
                continue
            row = out.setdefault(k, {"instances": 0, "seen": 0})
            row["instances"] += instances[env][k]
            row["seen"] += seen
    for row in out.values():
        n = row["instances"]
        row["rate_bound"] = (3.0 / n if n else 1.0) if row["seen"] == 0 else None
    return out
