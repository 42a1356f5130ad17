"""``coherence diagram SPEC --kind fsm|states|trace``: draw a protocol with graphviz.

fsm: one controller state machine per machine. states: the reachable state graph of a small
configuration (refused, exit 3, beyond --max-nodes). trace: message-sequence charts of
counterexamples, from a saved trace file (``--trace FILE``, written by ``check --trace-out``)
or, without one, from a fresh ``coherence check`` of the spec.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from coherence.cli import EXIT_HOLDS, EXIT_INCOMPLETE, add_spec_args, emit_json
from coherence.errors import Span, SpecError
from coherence.trace import TraceReplayError

HELP = "draw controller FSMs, the reachable state graph, or counterexample charts"
SCHEMA_VERSION = 1


def add_args(p: argparse.ArgumentParser) -> None:
    from coherence.commands.options import output_dir, positive_int
    add_spec_args(p)
    p.add_argument("--kind", choices=["fsm", "states", "trace"], required=True,
                   help="fsm: controller state machines; states: reachable state graph; "
                        "trace: message-sequence charts of counterexamples")
    p.add_argument("--out", type=output_dir, metavar="DIR", required=True,
                   help="directory to write into")
    p.add_argument("--format", choices=["all", "dot"], default="all",
                   help="all: DOT, SVG and PNG (needs Graphviz's dot); dot: DOT only")
    p.add_argument("--trace", metavar="FILE",
                   help="(trace) a saved trace file (check --trace-out); without it the "
                        "spec is checked and each counterexample drawn")
    p.add_argument("--max-nodes", type=positive_int, default=None, metavar="N",
                   help="(states) draw at most N states (default 60)")
    p.add_argument("--symmetry", choices=["exact", "off"], default="exact",
                   help="(states, trace) symmetry reduction over agent ids, or a hierarchy's "
                        "index types (default: exact)")
    p.add_argument("--max-states", type=positive_int, metavar="N",
                   help="(trace without --trace) stop checking after N states")
    p.add_argument("--max-depth", type=positive_int, metavar="N",
                   help="(trace without --trace) check only runs of at most N steps (the "
                        "shortest counterexamples are found all the same)")
    p.add_argument("--skip", action="append", default=[], metavar="NAME",
                   help="(trace without --trace) do not check this property (repeatable)")
    from coherence.commands.common import add_progress_args
    add_progress_args(p)


def run(args: argparse.Namespace) -> int:
    from coherence.commands.common import reporter
    with reporter(args, "coherence diagram") as rep:
        return _run(args, rep)


def _run(args: argparse.Namespace, rep: Any) -> int:
    from coherence.commands.common import load_model

    formats = ("dot", "svg", "png") if args.format == "all" else ("dot",)
    if args.kind == "trace" and args.trace:
        return _saved_trace(args, formats, rep)
    model = load_model(args)
    bounds = ({"max_nodes": args.max_nodes or _default_nodes()} if args.kind == "states" else
              {"max_states": args.max_states, "max_depth": args.max_depth}
              if args.kind == "trace" else {})
    rep.header(model.file, {p.name: p.value for p in model.params},
               "reference" if args.kind != "fsm" else None, bounds, kind=args.kind)
    doc: dict[str, Any] = {"schema": SCHEMA_VERSION, "tool": "coherence diagram",
                           "kind": args.kind, "spec": model.file,
                           "params": {p.name: p.value for p in model.params}}
    if args.kind == "fsm":
        from coherence.diagrams.fsm import spec_graphs
        from coherence.diagrams.render import write
        files: list[str] = []
        graphs = spec_graphs(model)
        for i, (stem, graph) in enumerate(graphs):
            rep.update(f"drawing {stem}", done=i, total=len(graphs))
            files += write(graph, args.out, stem, formats)
        return _done(args, doc, files, EXIT_HOLDS, f"{len(model.machines)} machine(s)", rep=rep)
    if args.kind == "states":
        return _states(args, model, doc, formats, rep)
    return _checked_trace(args, model, doc, formats, rep)


def _default_nodes() -> int:
    from coherence.diagrams.states import DEFAULT_MAX_NODES
    return DEFAULT_MAX_NODES


def _states(args: argparse.Namespace, model: Any, doc: dict[str, Any],
            formats: tuple[str, ...], rep: Any) -> int:
    from coherence.diagrams import states
    from coherence.diagrams.render import write
    limit = args.max_nodes or states.DEFAULT_MAX_NODES
    symmetry = args.symmetry == "exact"
    rep.update(f"exploring the state graph (at most {limit:,} states)")
    try:
        sg = states.explore(model, limit, symmetry)
    except states.TooLarge:
        sizes = ", ".join(f"--param {name}=1" for name in _index_params(model))
        fewer = ("fewer --agents" if not model.is_hierarchical else
                 f"smaller index types: {sizes}" if sizes else "smaller index types")
        message = (f"not drawn: {Path(model.file).name} has more than {limit} reachable "
                   f"states with these parameters, too many for a readable picture. Draw a "
                   f"smaller configuration ({fewer}, --param values=1, a smaller "
                   f"network capacity) or raise --max-nodes.")
        doc.update(verdict="too-large", max_nodes=limit, summary=message, files=[],
                   exit_code=EXIT_INCOMPLETE)
        rep.finish("too-large", EXIT_INCOMPLETE, message=message)
        if args.json:
            emit_json(doc)
        elif rep.kind != "jsonl":  # there, the summary record carries it
            print(message, file=sys.stderr)
        return EXIT_INCOMPLETE
    rep.update(f"drawing {len(sg.states):,} states", states=len(sg.states))
    files = write(states.graph(model, sg, symmetry), args.out,
                  f"{Path(model.file).stem}.states", formats)
    doc.update(states=len(sg.states), failure_path=sg.failure_steps)
    what = f"{len(sg.states)} states"
    if sg.path:
        n = sg.failure_steps
        what += f", shortest path to a failure: {n} step{'' if n == 1 else 's'} (in red)"
    return _done(args, doc, files, EXIT_HOLDS, what, rep=rep)


def _index_params(model: Any) -> list[str]:
    """The parameters a hierarchy's index types are probably sized by: ``gpus`` for
    ``index gpu: gpus;`` when the spec has such a parameter (only a hint in a message)."""
    names = {p.name for p in model.params}
    return [name for t in model.indexes
            for name in [getattr(t, "param", None) or f"{t.name}s"] if name in names]


def _checked_trace(args: argparse.Namespace, model: Any, doc: dict[str, Any],
                   formats: tuple[str, ...], rep: Any) -> int:
    from coherence.diagrams.msc import draw_failures
    from coherence.engines import check
    from coherence.progress import check_progress
    from coherence.results import CheckOptions
    from coherence.spec.select import drop_properties
    model = drop_properties(model, args.skip)
    rep.update("checking the spec for counterexamples", total=args.max_states)
    result = check(model, CheckOptions(symmetry=args.symmetry == "exact",
                                       max_states=args.max_states,
                                       max_depth=args.max_depth,
                                       progress=check_progress(rep, args.max_states),
                                       progress_every=rep.engine_every))
    files: list[str] = []
    for i, f in enumerate(result.failures):
        rep.update(f"drawing {f.name}", done=i, total=len(result.failures), states=result.states)
        files += draw_failures(args.out, model, [f], "check", formats)
    doc["failures"] = [f.name for f in result.failures]
    if not result.failures:
        if result.stopped:
            message = f"no counterexample found before the search stopped ({result.stopped})"
            return _done(args, doc, files, EXIT_INCOMPLETE, message, "incomplete", rep)
        return _done(args, doc, files, EXIT_HOLDS,
                     "no counterexample to draw: every property holds", "nothing-to-draw", rep)
    return _done(args, doc, files, EXIT_HOLDS,
                 f"{len(result.failures)} counterexample(s): "
                 + ", ".join(f.name for f in result.failures), rep=rep)


def replay_saved(model: Any, saved: dict[str, Any]) -> Any:
    """NOTE(replay): a saved trace is drawn only if its actions replay on this spec, from its
    initial state, and end where the saved property fails; it is drawn as replayed."""
    from coherence.results import Failure
    from coherence.semantics import Semantics
    from coherence.trace import Step, action_from_json, describe
    sem = Semantics(model)
    state = sem.initial_states()[0]
    steps = []
    error = None
    for i, step in enumerate(saved["steps"], 1):
        if error is not None:
            raise TraceReplayError(f"step {i} comes after the model error of step {i - 1}")
        if not isinstance(step, Step):
            step = Step.from_json(step)
        out = sem.execute(state, action_from_json(step.action))
        if out is None:
            raise TraceReplayError(f"step {i} ({step.actor}: {step.event}) is not enabled")
        steps.append(describe(sem, i, state, out))
        error = out.error
        if out.state is not None:
            state = out.state
    kind, name = saved["kind"], saved["property"]
    if kind in ("error", "coherence"):
        shown = error is not None
    elif kind == "deadlock":
        shown = error is None and sem.is_deadlock(state, *sem.enabled(state))
    elif kind == "no-transition":
        shown = error is None and any(v.name == name for v in sem.no_transitions(state))
    else:
        shown = error is None and any(
            v.name == name for v in sem.invariant_violations(state))
    if not shown:
        raise TraceReplayError(f"it replays, but {name} ({kind}) does not fail at its end")
    message = steps[-1].error if error is not None and steps[-1].error else saved.get(
        "message", name)
    return Failure(kind, name, message, steps)


def _saved_trace(args: argparse.Namespace, formats: tuple[str, ...], rep: Any) -> int:
    from coherence.diagrams.msc import draw_failures
    from coherence.spec.load import load_spec, parse_overrides
    from coherence.traces_io import load_traces
    where = Span(args.trace, 1, 1)
    try:
        saved = load_traces(args.trace)
        overrides = {str(k): int(v) for k, v in saved.get("params", {}).items()}
        traces = saved.get("traces", [])
        if not isinstance(traces, list):
            raise TypeError("'traces' is not a list")
        source = str(saved.get("source", "saved trace"))
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise SpecError(f"not a valid trace file ({type(e).__name__}: {e})", where) from None
    overrides.update(parse_overrides(args.param, args.agents))
    model = load_spec(args.spec, overrides)
    rep.header(model.file, {p.name: p.value for p in model.params}, None, {}, kind="trace",
               trace_file=args.trace)
    replayed = []
    for i, t in enumerate(traces):
        rep.update(f"replaying {t.get('property', '?')}", done=i, total=len(traces))
        try:
            replayed.append(replay_saved(model, t))
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise SpecError(f"trace of {t.get('property', '?')!r} does not fit "
                            f"{args.spec}: {e}", where) from None
        except TraceReplayError as e:
            raise SpecError(f"trace of {t.get('property', '?')!r} does not replay on "
                            f"{args.spec}: {e}", where) from None
    files = draw_failures(args.out, model, replayed, source, formats) if traces else []
    doc: dict[str, Any] = {"schema": SCHEMA_VERSION, "tool": "coherence diagram",
                           "kind": "trace", "spec": model.file, "trace_file": args.trace,
                           "params": {p.name: p.value for p in model.params},
                           "failures": [t.get("property") for t in traces]}
    if not traces:
        return _done(args, doc, files, EXIT_HOLDS, f"{args.trace} holds no trace",
                     "nothing-to-draw", rep)
    return _done(args, doc, files, EXIT_HOLDS, f"{len(traces)} trace(s) from {args.trace}",
                 rep=rep)


def _done(args: argparse.Namespace, doc: dict[str, Any], files: list[str], code: int,
          what: str, verdict: str = "drawn", rep: Any = None) -> int:
    doc.update(verdict=verdict, files=files, exit_code=code, summary=what)
    if rep is not None:
        rep.finish(verdict, code, files=len(files))
    if args.json:
        emit_json(doc)
        return code
    from coherence.commands.common import out_console
    out = out_console()
    out.print(f"[bold]coherence diagram[/] --kind {args.kind}: {what}")
    for f in files:
        out.print(f"  wrote {f}", markup=False)
    return code

