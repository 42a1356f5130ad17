"""``coherence check``: explicit-state exploration with the reference checker."""

from __future__ import annotations

import argparse
from typing import Any

from coherence.cli import add_spec_args, emit_json
from coherence.commands.common import add_diagram_arg, add_progress_args

HELP = "explore every reachable state; check invariants, coherence, deadlock"


def add_args(p: argparse.ArgumentParser) -> None:
    from coherence.commands.options import nonnegative_int, output_file, positive_int
    add_spec_args(p)
    p.add_argument("--symmetry", choices=["exact", "off"], default="exact",
                   help="symmetry reduction over agent ids (default: exact)")
    p.add_argument("--no-symmetry", dest="symmetry", action="store_const", const="off",
                   help="same as --symmetry off")
    from coherence.engines import ENGINE_NAMES
    p.add_argument("--engine", choices=ENGINE_NAMES, default="auto",
                   help="how to explore: reference (plain Python, the oracle), compiled (C "
                        "generated from the spec, on every core), gpu (the same C compiled for an "
                        "NVIDIA GPU with CuPy), distributed (the same C on Ray workers, "
                        "docs/distributed.md), auto (compiled where a C compiler exists, else "
                        "reference with a note; the default)")
    p.add_argument("--threads", type=positive_int, metavar="N",
                   help="threads for engines that use several cores (default: all cores)")
    dist = p.add_argument_group("distributed engine (--engine distributed)")
    dist.add_argument("--workers", type=positive_int, metavar="N",
                      help="Ray workers, one CPU each (default: this machine's cores, or the "
                           "checkpoint's when resuming)")
    dist.add_argument("--address", metavar="HOST:PORT",
                      help="join this Ray cluster (default: start a local one)")
    dist.add_argument("--checkpoint", metavar="DIR",
                      help="write every worker's partition to DIR at each level's end")
    dist.add_argument("--resume", metavar="DIR",
                      help="continue the run checkpointed in DIR (and keep checkpointing there)")
    p.add_argument("--time-limit", type=_positive_float, metavar="SECONDS",
                   help="stop with a partial result after this long (exit 3)")
    p.add_argument("--memory-limit", type=_size, metavar="SIZE",
                   help="stop with a partial result when the search uses this much memory, "
                        "e.g. 4G (default: three quarters of this machine's memory)")
    p.add_argument("--max-states", type=positive_int, metavar="N", help="stop after N states")
    p.add_argument("--max-depth", type=nonnegative_int, metavar="D", help="stop at depth D")
    p.add_argument("--no-deadlock", dest="deadlock", action="store_false",
                   help="do not report deadlocks")
    p.add_argument("--coverage", action="store_true",
                   help="list how often each transition fired; those that never fired in the "
                        "reachable states are marked (as TLC's -coverage); counted by the "
                        "reference engine, which --engine auto then uses")
    p.add_argument("--no-vacuity", dest="vacuity", action="store_false",
                   help="do not look for invariants that hold only because their premise is "
                        "never true")
    p.add_argument("--stop-at-first", action="store_true",
                   help="stop at the first failure instead of finding each property's "
                        "shortest counterexample")
    p.add_argument("--liveness", action="store_true",
                   help="also check the spec's liveness properties (AG EF and leads-to under "
                        "weak fairness) on the state graph, built by the reference engine "
                        "without symmetry reduction")
    p.add_argument("--skip", action="append", default=[], metavar="NAME",
                   help="do not check this invariant or property (repeatable)")
    add_progress_args(p)
    p.add_argument("--trace-out", type=output_file, metavar="FILE",
                   help="save the counterexample traces as JSON (for `coherence diagram`)")
    add_diagram_arg(p)


def _settings(args: argparse.Namespace, engine: str) -> dict[str, Any] | None:
    """The distributed engine's own options; refused with any other engine."""
    given = {k: getattr(args, k) for k in ("workers", "address", "checkpoint", "resume")
             if getattr(args, k) is not None}
    if engine == "distributed":
        return given
    if given:
        from coherence.errors import NO_SPAN, SpecError
        flags = ", ".join(f"--{k}" for k in given)
        raise SpecError(f"{flags} only apply to --engine distributed", NO_SPAN)
    return None


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"'{text}' must be more than 0")
    return value


def _size(text: str) -> int:
    from coherence.memory import parse_size
    try:
        return parse_size(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def run(args: argparse.Namespace) -> int:
    from coherence.commands.common import draw_failures, load_model, reporter
    from coherence.commands.report import print_check_result, result_json
    from coherence.engines import EngineUnavailable, check
    from coherence.errors import SpecError
    from coherence.memory import default_memory_limit
    from coherence.progress import check_progress
    from coherence.results import CheckOptions
    from coherence.spec.select import drop_properties

    model = drop_properties(load_model(args), args.skip)
    # only the reference engine counts firings: --coverage picks it under auto
    engine = "reference" if args.coverage and args.engine == "auto" else args.engine
    memory_limit = args.memory_limit or default_memory_limit()
    with reporter(args, "coherence check") as rep:
        rep.header(model.file, {p.name: p.value for p in model.params}, engine,
                   {"max_states": args.max_states, "max_depth": args.max_depth,
                    "time_limit": args.time_limit, "memory_limit": memory_limit},
                   symmetry=args.symmetry)
        options = CheckOptions(
            symmetry=args.symmetry == "exact", max_states=args.max_states,
            max_depth=args.max_depth, deadlock=args.deadlock,
            stop_at_first=args.stop_at_first, progress=check_progress(rep, args.max_states),
            progress_every=rep.engine_every, threads=args.threads,
            time_limit=args.time_limit, vacuity=args.vacuity, liveness=args.liveness,
            memory_limit=memory_limit)
        rep.update(f"preparing the {engine} engine")
        try:
            result = check(model, options, engine=engine, settings=_settings(args, engine))
        except EngineUnavailable as err:
            raise SpecError(str(err)) from err
        rep.update(f"states {result.states:,}  depth {result.depth}  "
                   f"rules {result.rules_fired:,}  (done)", states=result.states,
                   depth=result.depth, rules=result.rules_fired)
        rep.finish(result.verdict, result.exit_code, engine=result.engine,
                   states=result.states, stopped=result.stopped,
                   failures=len(result.failures))
    doc: dict[str, Any] = result_json(result)
    if args.trace_out:
        from coherence.traces_io import save_traces
        save_traces(args.trace_out, model, result.failures, source="check")
    diagrams = draw_failures(args, model, result.failures, "check")
    if diagrams:
        doc["diagrams"] = diagrams
    if args.json:
        emit_json(doc)
    else:
        print_check_result(model, result, args.coverage)
        for f in diagrams:
            print(f"diagram: {f}")
    return result.exit_code
