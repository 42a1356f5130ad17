"""Fuzzing against the checker, for ``coherence bench fuzz``: does fuzzing find each bug, how
fast, how short; and does the pytest path (``protocol_test``) find it as fast.

For the seed spec and every mutant in ``specs/mutants/`` it runs the reference checker (the
baseline: every failing property with its shortest counterexample, and its time) side by side
with ``coherence fuzz`` under several seeds, and reports per spec: whether the fuzzer found a
failure, the examples (random runs) and seconds it needed, and the shrunk trace's length
against the checker's shortest for the same property. Goals (issue 5): every bug found within
1,000 examples, shrunk traces at most twice the shortest.

The pytest path is measured the same way: ``protocol_test(spec, seed=...)`` with the same
budget and steps, run as a ``unittest`` case in this process (what pytest runs, without its
collection), from the start of the test to its failure report; against ``fuzz``'s own
time to its report, and examples per second, as ratios (pytest path / fuzz).
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
               max_states: int, checker: bool = True) -> dict[str, Any]:
    """One spec's row. Without ``checker`` (quick runs) the checker's columns are None."""
    from coherence.engines import check
    from coherence.results import CheckOptions
    from coherence.spec.load import load_spec
    from coherence.testing.fuzz import fuzz

    model = load_spec(path, overrides)
    t = time.perf_counter()
    baseline = check(model, CheckOptions(max_states=max_states)) if checker else None
    check_seconds = time.perf_counter() - t
    shortest: dict[str, int] = {}
    # a name may fail several ways (no-transition per message): its shortest
    for g in baseline.failures if baseline is not None else []:
        shortest[g.name] = min(g.length, shortest.get(g.name, g.length))
    fuzz(model, budget=1, steps=steps)  # warm-up (lazily built tables), not measured
    runs = []
    for seed in range(seeds):
        r = fuzz(model, seed=seed, budget=budget, steps=steps)
        pytest_path = bench_pytest_path(path, overrides, seed, budget, steps)
        f = r.failure
        row: dict[str, Any] = {
            "seed": seed, "found": f is not None, "examples": r.stats.examples,
            "examples_to_failure": r.stats.examples_to_failure,
            "seconds_to_failure": _round(r.stats.seconds_to_failure),
            "seconds": _round(r.seconds), "property": f.name if f else None,
            "kind": f.kind if f else None, "length": f.length if f else None,
            "unshrunk_length": r.hypothesis_length,
            "checker_shortest": shortest.get(f.name) if f else None,
            "pytest_path": pytest_path,
        }
        fuzz_rate = r.stats.examples / r.seconds if r.seconds else None
        row["pytest_seconds_ratio"] = _ratio(pytest_path["seconds"], r.seconds)
        row["pytest_examples_per_second_ratio"] = _ratio(pytest_path["examples_per_second"],
                                                         fuzz_rate)
        if f is not None and row["checker_shortest"]:
            row["length_ratio"] = round(f.length / row["checker_shortest"], 3)
        runs.append(row)
    found = [r for r in runs if r["found"]]
    pytest_found = [r for r in runs if r["pytest_path"]["found"]]
    ratios = [r["length_ratio"] for r in found if "length_ratio" in r]
    return {
        "spec": path, "params": {p.name: p.value for p in model.params},
        "checker": None if baseline is None else {
            "verdict": baseline.verdict, "states": baseline.states,
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
        "pytest_found": f"{len(pytest_found)}/{len(runs)}",
        "median_pytest_seconds_ratio": _median([r["pytest_seconds_ratio"] for r in runs]),
        "median_pytest_examples_per_second_ratio": _median(
            [r["pytest_examples_per_second_ratio"] for r in runs]),
        # None: the checker found no bug, so there is nothing to find (a fuzz failure there
        # would be a disagreement between the engines: "agree" says so)
        "goal_met": None if not shortest else (  # None too without the checker
            len(found) == len(runs) and len(ratios) == len(found)
            and all(r["examples_to_failure"] <= 1000 for r in found)
            and all(x <= 2 for x in ratios)),
        "agree": None if baseline is None else (
            all(r["property"] in shortest for r in found)
            and (baseline.verdict == "fails" or not found)),
    }


def bench_pytest_path(path: str, overrides: dict[str, int], seed: int, budget: int,
                      steps: int) -> dict[str, Any]:
    """``protocol_test`` with ``seed``, ``budget`` and ``steps``, run as unittest runs it:
    whether it failed, after how many examples, and its wall time to the failure report."""
    import unittest

    from coherence.testing import ProtocolTestFailure, protocol_test

    t = time.perf_counter()
    case: Any = protocol_test(path, seed=seed, max_examples=budget, steps=steps,
                              params=overrides)
    outcome = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(case).run(outcome)
    seconds = time.perf_counter() - t
    if outcome.errors:
        raise RuntimeError(f"the pytest path raised: {outcome.errors[0][1]}")
    r = case.last_result
    failed = bool(outcome.failures)
    assert failed == (r.failure is not None) and (
        not failed or ProtocolTestFailure.__name__ in outcome.failures[0][1])
    return {"found": failed, "examples": r.stats.examples,
            "examples_to_failure": r.stats.examples_to_failure,
            "property": r.failure.name if r.failure else None,
            "seconds": _round(seconds),
            "examples_per_second": _round(r.stats.examples / seconds) if seconds else None}


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else round(a / b, 3)


def _median(xs: list[float | None]) -> float | None:
    got = [x for x in xs if x is not None]
    return round(statistics.median(got), 3) if got else None


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)
