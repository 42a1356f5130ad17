"""Fuzzing against the checker, for ``coherence bench fuzz``: does fuzzing find each bug, how
fast, how short.

For the seed spec and every mutant in ``specs/mutants/`` it runs the reference checker (the
baseline: every failing property with its shortest counterexample, and its time) side by side
with ``coherence fuzz`` under several seeds, and reports per spec: whether the fuzzer found a
failure, the examples (random runs) and seconds it needed, and the shrunk trace's length
against the checker's shortest for the same property. Goals (issue 5): every bug found within
1,000 examples, shrunk traces at most twice the shortest.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

SPECS = Path(__file__).resolve().parents[2] / "specs"  # the repository's bundled specs


def default_specs() -> list[str]:
    mutants = sorted(str(p) for p in (SPECS / "mutants").glob("*.coh"))
    return [str(SPECS / "broadcast_invalidate.coh"), *mutants]


def bench_spec(path: str, overrides: dict[str, int], seeds: int, budget: int, steps: int,
               max_states: int) -> dict[str, Any]:
    from coherence.engines import check
    from coherence.results import CheckOptions
    from coherence.spec.load import load_spec
    from coherence.testing.fuzz import fuzz

    model = load_spec(path, overrides)
    t = time.perf_counter()
    baseline = check(model, CheckOptions(max_states=max_states))
    check_seconds = time.perf_counter() - t
    shortest: dict[str, int] = {}
    for f in baseline.failures:  # a name may fail several ways (no-transition per message)
        shortest[f.name] = min(f.length, shortest.get(f.name, f.length))
    runs = []
    for seed in range(seeds):
        r = fuzz(model, seed=seed, budget=budget, steps=steps)
        f = r.failure
        row: dict[str, Any] = {
            "seed": seed, "found": f is not None, "examples": r.stats.examples,
            "examples_to_failure": r.stats.examples_to_failure,
            "seconds_to_failure": _round(r.stats.seconds_to_failure),
            "seconds": _round(r.seconds), "property": f.name if f else None,
            "kind": f.kind if f else None, "length": f.length if f else None,
            "unshrunk_length": r.hypothesis_length,
            "checker_shortest": shortest.get(f.name) if f else None,
        }
        if f is not None and row["checker_shortest"]:
            row["length_ratio"] = round(f.length / row["checker_shortest"], 3)
        runs.append(row)
    found = [r for r in runs if r["found"]]
    ratios = [r["length_ratio"] for r in found if "length_ratio" in r]
    return {
        "spec": path, "params": {p.name: p.value for p in model.params},
        "checker": {"verdict": baseline.verdict, "states": baseline.states,
                    "seconds": _round(check_seconds), "shortest": shortest},
        "runs": runs,
        "found": f"{len(found)}/{len(runs)}",
        "median_examples_to_failure": (statistics.median(r["examples_to_failure"]
                                                         for r in found) if found else None),
        "max_examples_to_failure": max((r["examples_to_failure"] for r in found), default=None),
        "median_seconds_to_failure": (_round(statistics.median(r["seconds_to_failure"]
                                                               for r in found))
                                      if found else None),
        "max_length_ratio": max(ratios, default=None),
        # None: the checker found no bug, so there is nothing to find (a fuzz failure there
        # would be a disagreement between the engines: "agree" says so)
        "goal_met": None if not shortest else (
            len(found) == len(runs) and len(ratios) == len(found)
            and all(r["examples_to_failure"] <= 1000 for r in found)
            and all(x <= 2 for x in ratios)),
        "agree": all(r["property"] in shortest for r in found) and (
            baseline.verdict == "fails" or not found),
    }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)
