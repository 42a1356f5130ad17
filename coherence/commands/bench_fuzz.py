"""``coherence bench fuzz``: fuzzing against the checker on the seed spec and every mutant
(coherence/testing/bench.py): bugs found, examples needed, shrunk against shortest length;
and the pytest path (``protocol_test``) against ``coherence fuzz``, as ratios."""

from __future__ import annotations

import argparse

from coherence.cli import add_param_args, emit_json
from coherence.progress import add_progress_args

HELP = ("fuzzing against the checker: bugs found, examples needed, shrunk/shortest length; "
        "the pytest path against fuzz")


def add_args(p: argparse.ArgumentParser) -> None:
    from coherence.commands.options import positive_int
    p.add_argument("specs", nargs="*",
                   help="specs to fuzz (default: specs/broadcast_invalidate.coh and "
                        "specs/mutants/*.coh)")
    add_param_args(p)
    p.add_argument("--seeds", type=positive_int, default=3, metavar="K", help="fuzz seeds 0..K-1")
    p.add_argument("--budget", type=positive_int, default=1000, metavar="N",
                   help="examples per fuzz run (default 1000)")
    p.add_argument("--steps", type=positive_int, default=50, metavar="N", help="steps per example")
    p.add_argument("--max-states", type=positive_int, default=500_000, metavar="N",
                   help="stop the baseline checker after N states (default 500000)")
    add_progress_args(p)
    p.add_argument("--no-checker", action="store_true",
                   help="leave the checker out: only fuzz and the pytest path (quick runs)")


def run(args: argparse.Namespace) -> int:
    from coherence.commands.common import out_console, reporter
    from coherence.spec.load import parse_overrides
    from coherence.testing.bench import bench_spec, default_specs  # hypothesis: 0.2 s to import

    overrides = parse_overrides(args.param, args.agents)
    specs = args.specs or default_specs()
    rows = []
    with reporter(args, "coherence bench fuzz") as rep:
        rep.header(None, overrides, "hypothesis",
                   {"seeds": args.seeds, "budget": args.budget, "steps": args.steps,
                    "checker_max_states": args.max_states}, specs=len(specs))
        for i, s in enumerate(specs):  # each: the checker, then one fuzz run per seed
            rep.update(f"spec {i + 1} of {len(specs)}: {s}", done=i, total=len(specs),
                       force=True, spec=s)
            rows.append(bench_spec(s, overrides, args.seeds, args.budget, args.steps,
                                   args.max_states, checker=not args.no_checker))
        rep.update(f"{len(specs)} spec{'s' if len(specs) != 1 else ''} measured",
                   done=len(specs), total=len(specs))
        rep.finish("measured", 0, specs=len(specs))
    doc = {"tool": "coherence bench fuzz", "seeds": args.seeds, "budget": args.budget,
           "steps": args.steps, "specs": rows,
           "all_goals_met": all(r["goal_met"] is not False for r in rows),
           "all_agree": None if args.no_checker else all(r["agree"] for r in rows),
           "pytest_path_found_all_fuzz_found": all(
               x["pytest_path"]["found"] or not x["found"] for r in rows for x in r["runs"])}
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
        if c is not None:
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
            py = x["pytest_path"]
            found = (f"{py['property']} after {py['examples_to_failure']} examples"
                     if py["found"] else f"nothing found in {py['examples']} examples")
            out.print(f"    pytest path: {found}, {py['seconds']} s "
                      f"(x{x['pytest_seconds_ratio']} of fuzz's time; examples/s "
                      f"x{x['pytest_examples_per_second_ratio']})", markup=False)
        goal = {None: "n/a (the checker finds no bug)" if c else "n/a (no checker)",
                True: "met", False: "NOT met"}
        out.print(f"  found {r['found']}, median examples {r['median_examples_to_failure']}, "
                  f"max length ratio {r['max_length_ratio']}, goal {goal[r['goal_met']]}; "
                  f"pytest path found {r['pytest_found']}, time x"
                  f"{r['median_pytest_seconds_ratio']} (median)"
                  f"{', DISAGREES with the checker' if r['agree'] is False else ''}",
                  markup=False)
    out.print(f"\nall goals met: {doc['all_goals_met']}; fuzz and checker agree: "
              f"{doc['all_agree']}; the pytest path found all that fuzz found: "
              f"{doc['pytest_path_found_all_fuzz_found']}")
    return 0
