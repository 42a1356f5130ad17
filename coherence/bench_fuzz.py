"""``coherence bench fuzz``: does fuzzing find each bug, how fast, how short, against the checker.

For the seed spec and every mutant in ``specs/mutants/`` it runs the reference checker (the
baseline: every failing property with its shortest counterexample, and its time) side by side
with ``coherence fuzz`` under several seeds, and reports per spec: whether the fuzzer found a
failure, the examples (random runs) and seconds it needed, and the shrunk trace's length
against the checker's shortest for the same property. Goals (issue 5): every bug found within
1,000 examples, shrunk traces at most twice the shortest.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from coherence.cli import add_param_args, emit_json

HELP = "fuzzing against the checker: bugs found, examples needed, shrunk/shortest length"


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("specs", nargs="*",
                   help="specs to fuzz (default: specs/broadcast_invalidate.coh and "
                        "specs/mutants/*.coh)")
    add_param_args(p)
    p.add_argument("--seeds", type=int, default=3, metavar="K", help="fuzz seeds 0..K-1")
    p.add_argument("--budget", type=int, default=1000, metavar="N",
                   help="examples per fuzz run (default 1000)")
    p.add_argument("--steps", type=int, default=50, metavar="N", help="steps per example")
    p.add_argument("--max-states", type=int, default=500_000, metavar="N",
                   help="stop the baseline checker after N states (default 500000)")


def default_specs() -> list[str]:
    mutants = sorted(str(p) for p in Path("specs/mutants").glob("*.coh"))
    return ["specs/broadcast_invalidate.coh", *mutants]


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


def run(args: argparse.Namespace) -> int:
    from coherence.commands.common import out_console
    from coherence.spec.load import parse_overrides

    overrides = parse_overrides(args.param, args.agents)
    specs = args.specs or default_specs()
    rows = [bench_spec(s, overrides, args.seeds, args.budget, args.steps, args.max_states)
            for s in specs]
    doc = {"tool": "coherence bench fuzz", "seeds": args.seeds, "budget": args.budget,
           "steps": args.steps, "specs": rows,
           "all_goals_met": all(r["goal_met"] is not False for r in rows),
           "all_agree": all(r["agree"] for r in rows)}
    if args.json:
        emit_json(doc)
        return 0
    out = out_console()
    out.print(f"fuzz vs checker: seeds 0..{args.seeds - 1}, budget {args.budget} examples of "
              f"{args.steps} steps")
    for r in rows:
        c = r["checker"]
        out.print(f"\n{r['spec']} ({' '.join(f'{k}={v}' for k, v in r['params'].items())})",
                  markup=False)
        out.print(f"  checker: {c['verdict']}, {c['states']:,} states, {c['seconds']} s, "
                  f"shortest {c['shortest']}", markup=False)
        for x in r["runs"]:
            if x["found"]:
                out.print(f"  seed {x['seed']}: {x['property']} ({x['kind']}) after "
                          f"{x['examples_to_failure']} examples, {x['seconds_to_failure']} s; "
                          f"shrunk {x['unshrunk_length']} -> {x['length']} steps "
                          f"(shortest {x['checker_shortest']})", markup=False)
            else:
                out.print(f"  seed {x['seed']}: nothing found in {x['examples']} examples, "
                          f"{x['seconds']} s", markup=False)
        goal = {None: "n/a (the checker finds no bug)", True: "met", False: "NOT met"}
        out.print(f"  found {r['found']}, median examples {r['median_examples_to_failure']}, "
                  f"max length ratio {r['max_length_ratio']}, goal {goal[r['goal_met']]}"
                  f"{'' if r['agree'] else ', DISAGREES with the checker'}", markup=False)
    out.print(f"\nall goals met: {doc['all_goals_met']}; fuzz and checker agree: "
              f"{doc['all_agree']}")
    return 0


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 3)
