"""``coherence prove``: the Z3 back end (bounded model checking, k-induction, every N)."""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from typing import Any

from coherence.cli import emit_json

HELP = "Z3: bounded model checking (--bmc K), k-induction (--induction K), proofs for any N"


def add_args(p: argparse.ArgumentParser) -> None:
    from coherence.commands.common import add_diagram_arg, add_progress_args
    from coherence.commands.options import (
        add_jobs_arg,
        agents_or_any,
        nonnegative_int,
        output_file,
        positive_int,
        positive_seconds,
    )
    p.add_argument("spec", help="the protocol spec (.coh)")
    p.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE",
                   help="override a spec parameter (repeatable)")
    p.add_argument("--agents", "-n", type=agents_or_any, metavar="N|any",
                   help="number of agents, or 'any' for a proof for every number of agents")
    p.add_argument("--over", metavar="INDEX",
                   help="with --agents any on a hierarchical spec: the index type (or its "
                        "parameter, e.g. sms) whose every size is proved, the others fixed by "
                        "--param (inferred when only one index type fits)")
    p.add_argument("--aux", metavar="FILE",
                   help="append FILE's declarations (`invariant aux` lines) to the spec for "
                        "this run only: auxiliary invariants of a proof, proved with it, "
                        "without changing the spec every engine checks")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--bmc", type=nonnegative_int, metavar="K",
                      help="bounded model checking up to depth K (incremental)")
    mode.add_argument("--induction", type=positive_int, metavar="K",
                      help="k-induction with K steps (base case and inductive step)")
    p.add_argument("--all-failures", action="store_true",
                   help="BMC: keep going to depth K to find each property's first failure")
    p.add_argument("--timeout", type=positive_seconds, metavar="S",
                   help="give up after S seconds (reported as unknown, never as a pass); "
                        "with --infer, Houdini and the final proof get S seconds each")
    p.add_argument("--rlimit", type=positive_int, metavar="N",
                   help="bound each Z3 check by N of Z3's resource units instead of wall-clock "
                        "caps: the same verdict however loaded the machine is (unknown, never "
                        "a pass, when it runs out)")
    p.add_argument("--no-deadlock", dest="deadlock", action="store_false",
                   help="do not check for deadlock")
    p.add_argument("--skip", action="append", default=[], metavar="NAME",
                   help="do not check this invariant or property (repeatable)")
    p.add_argument("--trace-out", type=output_file, metavar="FILE",
                   help="save the counterexample traces as JSON (for `coherence diagram`)")
    p.add_argument("--proof-cache", metavar="FILE",
                   help="with --agents any: record each settled proof obligation in FILE and "
                        "skip each whose formula an earlier run recorded there, so a proof "
                        "stopped by --timeout, Ctrl-C or a kill resumes where it stopped, and "
                        "runs on several machines add up (created when missing; only "
                        "appended to)")
    add_jobs_arg(p)
    add_progress_args(p)  # BMC depth by depth, induction's k + 1 parts, each proof obligation
    p.add_argument("--infer", action="store_true",
                   help="with --agents any: find the auxiliary invariants the proof needs "
                        "(mined from reachable states, selected by Houdini, proved again)")
    p.add_argument("--mine-engine", choices=("auto", "reference"), default="auto",
                   help="with --infer: the search that finds the reachable states candidates "
                        "are mined from: auto (the compiled engine where it can run and gives "
                        "the same states, else the reference), or reference (default: auto)")
    p.add_argument("--houdini-agents", type=int, default=None, metavar="N",
                   help="with --infer: the agents of the fixed-size instance Houdini selects "
                        "the invariants at (default 4). Lines inductive there may not be at "
                        "more agents; their final proof then stays unknown on some goals, and "
                        "a larger instance is a remedy (slower: its encoding grows with N; "
                        "above 4, each size from 3 up completes the set in turn), "
                        "leaving out the cycle clauses (the default) another")
    p.add_argument("--cycle-clauses", action=argparse.BooleanOptionalAction, default=None,
                   help="with --infer: offer the candidates that only rule out a cycle of one "
                        "relation (i waits on j and j on i). Left out by default: no bounded "
                        "clause rules out the longer cycles larger sizes allow, so lines that "
                        "lean on these may not be inductive there (MSI's broke at 5 agents)")
    p.add_argument("--keep-global-lines", action=argparse.BooleanOptionalAction, default=None,
                   help="with --infer: minimisation keeps every chosen line about no agent "
                        "(the home's state and the message types in flight). At Houdini's "
                        "size a chain through the agents may imply one; for every N the "
                        "proof may then need it and stay unknown without it")
    p.add_argument("--write", action="store_true",
                   help="with --infer: append the inferred invariants to SPEC, after a "
                        "marker comment (refused if SPEC changed since it was read)")
    add_diagram_arg(p)


def _agents(args: argparse.Namespace) -> tuple[int | None, bool]:
    """(the number of agents, if fixed; whether the proof is for every number)."""
    if args.agents == "any":
        return None, True
    return args.agents, False


MAX_HOUDINI_AGENTS = 8  # its encoding grows as agents^3 (pairs and triples of agents)

NOTHING_TO_PROVE = ("nothing to prove: the spec states no invariant and no property (after "
                    "--skip); a proof only shows that no model error can occur")


def _vacuity(model: Any, doc: dict[str, Any]) -> dict[str, Any]:
    doc["nothing_to_prove"] = not model.invariants and not model.properties
    return doc


def run(args: argparse.Namespace) -> int:
    from coherence.errors import NO_SPAN, SpecError
    from coherence.spec.load import load_spec, parse_overrides
    from coherence.spec.select import drop_properties

    n, any_n = _agents(args)
    model = drop_properties(load_spec(args.spec, parse_overrides(args.param, n)), args.skip)
    if args.aux is not None:
        model = with_aux(model, args.aux)
    from coherence.engines.size import refuse_absurd
    refuse_absurd(model)  # e.g. 40 nested quantifiers: refused before Z3 sees them
    if not model.invariants and not model.properties and not args.json \
            and args.progress != "jsonl":  # there, a note record after the header
        print(f"note: {NOTHING_TO_PROVE}", file=sys.stderr)
    if (args.infer or args.write) and not any_n:
        raise SpecError("--infer needs --agents any", NO_SPAN)
    if args.proof_cache is not None and not any_n:
        raise SpecError("--proof-cache needs --agents any (it records a proof's obligations)",
                        NO_SPAN)
    if args.write and not args.infer:
        raise SpecError("--write needs --infer", NO_SPAN)
    if args.cycle_clauses is not None and not args.infer:
        flag = "--cycle-clauses" if args.cycle_clauses else "--no-cycle-clauses"
        raise SpecError(f"{flag} needs --infer", NO_SPAN)
    if args.keep_global_lines is not None and not args.infer:
        flag = "--keep-global-lines" if args.keep_global_lines else "--no-keep-global-lines"
        raise SpecError(f"{flag} needs --infer", NO_SPAN)
    if args.houdini_agents is not None:
        if not args.infer:
            raise SpecError("--houdini-agents needs --infer", NO_SPAN)
        if not 2 <= args.houdini_agents <= MAX_HOUDINI_AGENTS:
            raise SpecError(f"--houdini-agents {args.houdini_agents}: Houdini's instance has "
                            f"2 to {MAX_HOUDINI_AGENTS} agents", NO_SPAN)
    if args.over is not None and not (any_n and model.is_hierarchical):
        raise SpecError(f"--over {args.over} needs --agents any and a hierarchical spec (it "
                        "names the index type whose every size is proved)", NO_SPAN)
    if any_n:
        if args.bmc is not None:
            raise SpecError("--bmc needs a fixed number of agents (--agents N)", NO_SPAN)
        if model.is_hierarchical:
            return _run_hier(args, model)
        if args.infer:
            from coherence.commands.prove_infer import run_infer
            return run_infer(args, model, _header)
        return _run_param(args, model)
    if args.induction is not None:
        return _run_induction(args, model)
    if args.bmc is None:
        raise SpecError("say what to prove: --bmc K, --induction K, or --agents any", NO_SPAN)
    return _run_bmc(args, model)


def with_aux(model: Any, path: str) -> Any:
    """``model``'s spec with the declarations of file ``path`` appended
    (``coherence.spec.load.extend``); an error in them is located in ``path``."""
    from coherence.errors import Span, SpecError, read_source
    from coherence.spec.load import extend
    text = read_source(path, "aux invariants")
    spec = model.origin.text if hasattr(model.origin, "text") else ""
    offset = spec.count("\n") + (0 if spec.endswith("\n") or not spec else 1)
    try:
        return extend(model, text)
    except SpecError as e:
        if e.span.file != model.file or e.span.line <= offset:
            raise
        raise SpecError(e.message, Span(path, e.span.line - offset, e.span.col),
                        text) from None


def _run_hier(args: argparse.Namespace, model: Any) -> int:
    """NOTE(param-hierarchy): the proof for every size of one index type of a hierarchical
    spec (``--over``), the others fixed by ``--param``; a spec of another shape gets a located
    refusal naming the construct (exit 2) before Z3 runs."""
    from coherence import ir
    from coherence.errors import SpecError
    from coherence.smt.param_hier import shape_of
    if args.infer:
        first = next(m for m in model.machines if m.kind is ir.MachineKind.MACHINE)
        raise SpecError("--infer does not support hierarchical specs yet (machine "
                        f"{first.name}); write the `invariant aux` lines by hand", first.span)
    shape = shape_of(model, args.over)
    return _run_param(args, model, shape)


def _header(rep: Any, args: argparse.Namespace, model: Any, engine: str,
            shape: Any = None, **bounds: Any) -> None:
    params = {} if args.agents == "any" else {p.name: p.value for p in model.params}
    extra: dict[str, Any] = {"agents": "any"} if args.agents == "any" else {}
    if shape is not None:  # the fixed sizes, and the free one
        params = {p.name: p.value for p in model.params if p.name != shape.param}
        extra = {"agents": "any", "over": shape.index}
    rep.header(model.file, params, engine,
               {**bounds, "timeout": args.timeout, "rlimit": args.rlimit}, **extra)
    if not model.invariants and not model.properties and rep.kind == "jsonl":
        rep.note(NOTHING_TO_PROVE)


def _steps(rep: Any) -> Any:
    """The back ends' ``progress(done, total, what)`` feeding the reporter. A step is not a
    milestone (MSI's proof has 7,000 obligations): lines come every ``--progress-every``
    seconds, and one when the last step is done."""
    def report(done: int, total: int, what: str) -> None:
        rep.update(what, done=done, total=total, force=done >= total)
    return report


def bmc_eta(seconds: list[float], left: int) -> float | None:
    """The time ``left`` more BMC depths take if depth d's time grows as a power of d, its
    exponent fitted to the last two depths (clamped to 0..6): depths get slower, so a linear
    estimate would be far too short."""
    if left <= 0:
        return 0.0
    k = len(seconds)  # depths 0..k-1 are done; depth d is x = d + 1 below
    if k < 2 or seconds[-2] <= 0 or seconds[-1] <= 0:
        return None
    power = min(6.0, max(0.0, math.log(seconds[-1] / seconds[-2]) / math.log(k / (k - 1))))
    return sum(seconds[-1] * ((k + j) / k) ** power for j in range(1, left + 1))


def _run_bmc(args: argparse.Namespace, model: Any) -> int:
    from coherence.commands.common import draw_failures, reporter
    from coherence.smt.bmc import DepthStat, bmc
    from coherence.smt.report import bmc_json, print_bmc

    with reporter(args, "coherence prove") as rep:
        _header(rep, args, model, "z3 bmc", depth=args.bmc)

        seconds: list[float] = []

        def progress(d: DepthStat) -> None:
            seconds.append(d.seconds)
            rep.update(f"BMC depth {d.depth} of {args.bmc} checked in {d.seconds:.2f} s",
                       done=d.depth + 1, total=args.bmc + 1,
                       eta=bmc_eta(seconds, args.bmc - d.depth), force=True, depth=d.depth,
                       depth_seconds=round(d.seconds, 4))

        rep.update(f"BMC depth 0 of {args.bmc}", done=0, total=args.bmc + 1)
        result = bmc(model, args.bmc, deadlock=args.deadlock, all_failures=args.all_failures,
                     timeout=args.timeout, rlimit=args.rlimit, progress=progress)
        rep.finish(result.verdict, result.exit_code, depth=result.depth,
                   failures=len(result.failures))
    _save(args, model, result.failures, "prove --bmc")
    if args.json:
        emit_json(_vacuity(model, bmc_json(model, result)))
    else:
        print_bmc(model, result)
        for f in draw_failures(args, model, result.failures, "prove --bmc"):
            print(f"diagram: {f}")
    return result.exit_code


def _run_induction(args: argparse.Namespace, model: Any) -> int:
    from coherence.commands.common import draw_failures, reporter
    from coherence.smt.induction import induction
    from coherence.smt.report import induction_json, print_induction

    with reporter(args, "coherence prove") as rep:
        _header(rep, args, model, "z3 k-induction", k=args.induction)
        result = induction(model, args.induction, deadlock=args.deadlock,
                           timeout=args.timeout, rlimit=args.rlimit, progress=_steps(rep))
        rep.finish(result.verdict, result.exit_code)
    _save(args, model, result.failures, "prove --induction")
    if args.json:
        emit_json(_vacuity(model, induction_json(model, result)))
    else:
        print_induction(model, result)
        for f in draw_failures(args, model, result.failures, "prove --induction"):
            print(f"diagram: {f}")
    return result.exit_code


def _run_param(args: argparse.Namespace, model: Any, shape: Any = None) -> int:
    from coherence.commands.common import draw_failures, reporter
    from coherence.commands.hard_stop import hard_stop, reason
    from coherence.commands.options import jobs_of
    from coherence.smt.param import ParamResult, prove_all
    from coherence.smt.report import param_json, print_param

    def show(result: Any) -> None:
        if args.json:
            emit_json(_vacuity(model, param_json(model, result)))
        else:
            print_param(model, result)

    with reporter(args, "coherence prove") as rep:
        what = "agents" if shape is None else f"{shape.index} ids"
        _header(rep, args, model, f"z3 proof for every number of {what}", shape)
        began = time.perf_counter()

        def stopped() -> int:  # NOTE(hard-stop)
            result = ParamResult("unknown", [], [], [], None, [], reason(args.timeout),
                                 time.perf_counter() - began, jobs=jobs_of(args),
                                 over=None if shape is None else shape.index)
            with contextlib.suppress(Exception):  # the display may be mid-update
                rep.finish(result.verdict, result.exit_code)
            show(result)
            return result.exit_code
        with hard_stop(args.timeout, stopped):
            result = prove_all(model, timeout=args.timeout, rlimit=args.rlimit,
                               progress=_steps(rep), over=None if shape is None else shape.index,
                               jobs=jobs_of(args), cache=args.proof_cache)
        rep.finish(result.verdict, result.exit_code)
    _save(args, model, result.failures, "prove --agents any")
    show(result)
    if not args.json:
        for f in draw_failures(args, model, result.failures, "prove --agents any"):
            print(f"diagram: {f}")
    return result.exit_code


def _save(args: argparse.Namespace, model: Any, failures: list, source: str) -> None:
    if args.trace_out:
        from coherence.traces_io import save_traces
        save_traces(args.trace_out, model, failures, source=source)
