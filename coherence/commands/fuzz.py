"""``coherence fuzz SPEC``: Hypothesis random runs with the coherence oracle, from a seed.

The runs are ``protocol_test``'s (``coherence.testing.fuzz``, ``coherence.testing.strategy``):
a pytest failure's ``reproduce:`` line is a command of this verb.

For configurations too large to enumerate (8 agents, 4 lines): it proves nothing, but a
failure it prints is a real, replayed trace. Exit 1 on a failure, 0 when none was found
within the budget, 2 on bad input.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from coherence.cli import EXIT_INCOMPLETE, add_spec_args, emit_json
from coherence.commands.common import add_diagram_arg, add_progress_args

HELP = "random runs (Hypothesis) with the spec's invariants and a coherence oracle"
SCHEMA_VERSION = 1


def add_args(p: argparse.ArgumentParser) -> None:
    from coherence.commands.options import any_int, output_dir, output_file, positive_int
    from coherence.fuzz_options import DEFAULT_BUDGET, DEFAULT_STEPS, ORACLES, SHRINKERS
    add_spec_args(p)
    p.add_argument("--seed", type=any_int, default=0, help="Hypothesis seed (default 0)")
    p.add_argument("--budget", type=positive_int, default=DEFAULT_BUDGET, metavar="N",
                   help=f"random runs (Hypothesis examples) to try (default {DEFAULT_BUDGET})")
    p.add_argument("--steps", type=positive_int, default=DEFAULT_STEPS, metavar="N",
                   help=f"steps per run (default {DEFAULT_STEPS})")
    p.add_argument("--oracle", choices=ORACLES, default="coherence",
                   help="coherence: per-location coherence (default); sc: sequential "
                        "consistency across lines; performed: coherence with the stores in "
                        "the order they performed, as check's `property P: coherence` "
                        "defines it; none: invariants only")
    p.add_argument("--shrink", choices=SHRINKERS, default="replay",
                   help="replay: minimise the failing run by replay (fast, default); "
                        "hypothesis: Hypothesis's shrinker (slow on large configurations); "
                        "both; none")
    p.add_argument("--database", type=output_dir, metavar="DIR",
                   help="Hypothesis example database: failures saved there are replayed first")
    p.add_argument("--skip", action="append", default=[], metavar="NAME",
                   help="do not check this invariant (repeatable)")
    add_progress_args(p)
    p.add_argument("--trace-out", type=output_file, metavar="FILE",
                   help="save the failing trace as JSON (for `coherence diagram`)")
    add_diagram_arg(p)


def run(args: argparse.Namespace) -> int:
    from coherence.commands.common import draw_failures, load_model, reporter
    from coherence.spec.select import drop_properties
    from coherence.testing.fuzz import fuzz

    model = drop_properties(load_model(args), args.skip)
    with reporter(args, "coherence fuzz") as rep:
        rep.header(model.file, {p.name: p.value for p in model.params}, "hypothesis",
                   {"budget": args.budget, "steps": args.steps}, seed=args.seed,
                   oracle=args.oracle)
        seen: dict[str, Any] = {"runs": 0, "found": False, "seconds": 0.0}
        report = _runs(rep, args.budget) if rep.enabled else None

        def progress(stats: Any, elapsed: float) -> None:
            seen["runs"], seen["found"] = stats.examples, stats.examples_to_failure is not None
            seen["seconds"] = elapsed
            if report is not None:
                report(stats, elapsed)

        try:
            result = fuzz(model, seed=args.seed, budget=args.budget, steps=args.steps,
                          oracle=args.oracle, database=args.database, shrink=args.shrink,
                          progress=progress)
        except KeyboardInterrupt:
            rep.finish("interrupted", EXIT_INCOMPLETE, runs=seen["runs"])
            return _interrupted(args, model, seen)
        rep.finish(result.verdict, result.exit_code, runs=result.stats.examples,
                   failures=0 if result.failure is None else 1)
    failures = [result.failure] if result.failure is not None else []
    if args.trace_out:
        from coherence.traces_io import save_traces
        save_traces(args.trace_out, model, failures, source="fuzz")
    drawn = draw_failures(args, model, failures, "fuzz")
    doc = result_json(result, reproduce_command(args, result.from_database))
    if drawn:
        doc["diagrams"] = drawn
    if args.json:
        emit_json(doc)
    else:
        print_result(model, result, doc["reproduce"], drawn)
    return result.exit_code


def _interrupted(args: argparse.Namespace, model: Any, seen: dict[str, Any]) -> int:
    """Ctrl-C: what was tried so far and the command that tries it again (exit 3), rather than
    a bare 'interrupted'; a failure still being shrunk is said to exist, without its trace."""
    reproduce = reproduce_command(args)
    runs, found = seen["runs"], seen["found"]
    what = ("a failure was found and was being shrunk: run the command again to see it"
            if found else "no failure found so far (random testing: nothing is proved)")
    if args.json:
        emit_json({"schema": SCHEMA_VERSION, "tool": "coherence fuzz", "spec": model.file,
                   "params": {p.name: p.value for p in model.params}, "seed": args.seed,
                   "budget": args.budget, "steps": args.steps, "oracle": args.oracle,
                   "verdict": "interrupted", "exit_code": EXIT_INCOMPLETE,
                   "stats": {"examples": runs, "examples_to_failure": None,
                             "seconds": round(seen["seconds"], 4),
                             "seconds_to_failure": None, "oracle_undecided": 0},
                   "failure_found": found, "failures": [], "reproduce": reproduce,
                   "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    else:
        print(f"interrupted after {runs} of {args.budget} runs: {what}")
        print(f"reproduce: {reproduce}")
    return EXIT_INCOMPLETE


def reproduce_command(args: argparse.Namespace, from_database: bool = False) -> str:
    """The command line that repeats this run (same seed, budget and configuration; the same
    database when the failure was a saved example)."""
    from coherence.testing.report import fuzz_command
    return fuzz_command(args.spec, seed=args.seed, budget=args.budget, steps=args.steps,
                        agents=args.agents, params=args.param, oracle=args.oracle,
                        shrink=args.shrink, skip=args.skip,
                        database=args.database if from_database else None)


def result_json(result: Any, reproduce: str) -> dict[str, Any]:
    f = result.failure
    return {
        "schema": SCHEMA_VERSION,
        "tool": "coherence fuzz",
        "spec": result.spec,
        "params": result.params,
        "seed": result.seed,
        "budget": result.budget,
        "steps": result.steps,
        "oracle": result.oracle,
        "verdict": result.verdict,
        "exit_code": result.exit_code,
        "stats": {
            "examples": result.stats.examples,
            "examples_to_failure": result.stats.examples_to_failure,
            "seconds": round(result.seconds, 4),
            "seconds_to_failure": (round(result.stats.seconds_to_failure, 4)
                                   if result.stats.seconds_to_failure is not None else None),
            "oracle_undecided": result.stats.undecided,
        },
        "failures": [] if f is None else [
            {"kind": f.kind, "property": f.name, "message": f.message, "length": f.length,
             "unshrunk_length": result.hypothesis_length,
             "trace": [s.to_json() for s in f.trace]}],
        "reproduce": reproduce,
        "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def print_result(model: Any, result: Any, reproduce: str, drawn: list[str]) -> None:
    from coherence.commands.common import out_console, params_text
    out = out_console()
    out.print(f"[bold]coherence fuzz[/] {model.file} ({params_text(model)}; seed {result.seed}, "
              f"budget {result.budget} runs of {result.steps} steps, oracle {result.oracle})")
    f = result.failure
    if f is not None:
        out.print()
        out.print(f"[bold red]FAIL[/] [bold]{f.name}[/] ({f.kind}): {f.message}", markup=True)
        where = ("a saved example from the database" if result.from_database
                 else f"run {result.stats.examples_to_failure}")
        out.print(f"found in {where} after "
                  f"{result.stats.seconds_to_failure:.2f} s; shrunk from "
                  f"{result.hypothesis_length} to {f.length} step{'s' if f.length != 1 else ''}")
        for step in f.trace:
            out.print(step.render(), markup=False)
        for path in drawn:
            out.print(f"diagram: {path}", markup=False)
    out.print()
    if result.stats.undecided:
        out.print(f"[yellow]oracle undecided on {result.stats.undecided} histories[/] "
                  "(search limit reached; neither passed nor failed)")
    if f is not None:
        out.print("verdict: [bold red]FAILS[/]")
    else:
        out.print(f"verdict: [bold green]no failure found[/] in {result.stats.examples} runs "
                  "(random testing: nothing is proved)")
    out.print(f"{result.seconds:.2f} s; reproduce: {reproduce}", markup=False)


def _runs(rep: Any, budget: int) -> Callable[[Any, float], None]:
    """The fuzzer's callback (once per run started) feeding the reporter."""
    def update(stats: Any, _elapsed: float) -> None:
        found = stats.examples_to_failure is not None
        phase = "shrinking" if found else "searching"
        total = None if found else max(budget, stats.examples)  # a few beyond: Hypothesis's
        rep.update(f"{phase}: run {stats.examples:,} of {max(budget, stats.examples):,}, "
                   f"{1 if found else 0} failure{'' if found else 's'}",
                   done=None if found else stats.examples, total=total, runs=stats.examples,
                   failures=1 if found else 0, undecided=stats.undecided)
    return update
