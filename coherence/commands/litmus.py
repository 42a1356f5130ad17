"""``coherence litmus SPEC TEST...``: the outcomes a protocol allows for litmus programs,
beside the outcomes sequential consistency allows."""

from __future__ import annotations

import argparse
import time
from typing import Any

from coherence.cli import EXIT_FAILS, EXIT_HOLDS, EXIT_INCOMPLETE, emit_json

HELP = "run litmus programs on a protocol model: allowed outcomes vs sequential consistency"


def add_args(p: argparse.ArgumentParser) -> None:
    from coherence.commands.common import add_progress_args
    from coherence.commands.options import nonnegative_int
    p.add_argument("spec", help="the protocol spec (.coh)")
    p.add_argument("tests", nargs="+", metavar="TEST",
                   help="litmus file or catalogue name (MP, SB, ...); 'all' for the catalogue")
    p.add_argument("--variant", "-V", action="append", default=[], metavar="NAME",
                   help="variant to run (repeatable; default: every variant; see "
                        "coherence.litmus.variants)")
    p.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE",
                   help="override a spec parameter (agents, lines, values are set per test)")
    add_core_arg(p)
    p.add_argument("--place", metavar="PLACE",
                   help="hierarchical specs: where the threads run. same-gpu (the default): "
                        "processors that share every outer index (SMs of one GPU); cross-gpu: "
                        "one per value of the outermost index (an SM on each GPU); or each "
                        "thread's index values, e.g. 0.0,0.1,1.0")
    p.add_argument("--max-states", type=nonnegative_int, metavar="N",
                   help="stop a program's exploration after N states (result: incomplete; "
                        f"default {DEFAULT_MAX_STATES:,}, 2.5x what any bundled GPU model "
                        "needs for a catalogue program; 0: no bound)")
    p.add_argument("--outcomes", action="store_true",
                   help="list every allowed outcome, not only the condition's verdict")
    p.add_argument("--witness", action="store_true",
                   help="for each outcome the model allows, print the shortest run that ends "
                        "in it, as numbered steps (as `coherence check` prints a "
                        "counterexample); in --json, each row's 'witnesses'")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    add_progress_args(p)


# A program on a large model (German's MP: millions of states, at about 1,500 states/s) would
# otherwise run for hours; the catalogue on specs/broadcast_invalidate.coh needs at most 19,881.
DEFAULT_MAX_STATES = 50_000


def bound_note(args: argparse.Namespace, stopped: bool) -> str | None:
    """What to say when the default bound stopped a program."""
    if args.max_states is not None or not stopped:
        return None
    return (f"stopped at the default bound of {DEFAULT_MAX_STATES:,} states per program "
            "(result: incomplete); raise it with --max-states N, or lift it with "
            "--max-states 0")


def add_core_arg(p: argparse.ArgumentParser) -> None:
    """``--core``, one option with one default for ``litmus`` and ``hw report``."""
    from coherence.litmus.model import CORES, DEFAULT_CORE
    p.add_argument("--core", choices=CORES, default=DEFAULT_CORE,
                   help="the processor each thread runs on. blocking: a thread waits for each "
                        "operation, so every weak outcome comes from the protocol; pipelined: "
                        "later accesses to other lines issue while earlier ones are "
                        "outstanding, up to an ordering point (a GPU SM's scoreboard). "
                        f"Default: {DEFAULT_CORE}")


def litmus_params(items: list[str]) -> dict[str, int]:
    """``--param`` of the verbs that run litmus tests: each test sets agents, lines, values."""
    from coherence.errors import NO_SPAN, SpecError
    from coherence.spec.load import parse_overrides

    extra = parse_overrides(items)
    for fixed in ("agents", "lines", "values"):
        if fixed in extra:
            raise SpecError(f"--param {fixed}: set by each litmus test, not on the command "
                            "line", NO_SPAN)
    return extra


def run(args: argparse.Namespace) -> int:
    from coherence.commands.common import reporter
    from coherence.litmus.catalogue import load_catalogue
    from coherence.litmus.model import program_key, run_on_model
    from coherence.litmus.place import check_place, load_for_test
    from coherence.litmus.variants import apply_variant, variant_names

    extra = litmus_params(args.param)
    place = check_place(args.place) if args.place is not None else None
    tests = load_catalogue(args.tests)
    rows: list[dict[str, Any]] = []
    cache: dict[tuple, Any] = {}
    worst = EXIT_HOLDS
    started = time.perf_counter()
    max_states = (DEFAULT_MAX_STATES if args.max_states is None else args.max_states) or None
    jobs = [(test, v) for test in tests for v in (args.variant or variant_names(test))]
    with reporter(args, "coherence litmus") as rep:
        rep.header(args.spec, extra, f"litmus explorer ({args.core} core)",
                   {"max_states_per_program": max_states}, programs=len(jobs))
        interrupted = False  # Ctrl-C: the programs finished so far are the result (exit 3)
        try:
            for n, (test, v) in enumerate(jobs):
                model, where = load_for_test(args.spec, extra, test, place)
                vt = apply_variant(test, v)
                key = (program_key(model, vt), where.nodes)
                what = f"{test.name} {v} ({n + 1} of {len(jobs)})"
                rep.update(f"{what}: starting", done=n, total=len(jobs), force=True,
                           test=test.name, variant=v, states=0)

                def explored(states: int, frontier: int, what: str = what, n: int = n) -> None:
                    rep.update(f"{what}: {states:,} states, frontier {frontier:,}", done=n,
                               total=len(jobs), test=jobs[n][0].name, variant=jobs[n][1],
                               states=states, frontier=frontier)
                if key not in cache:
                    cache[key] = run_on_model(model, vt, max_states, args.core,
                                              witnesses=args.witness, progress=explored,
                                              nodes=where.nodes)
                res = cache[key]
                if vt.polls() and ("poll", key) not in cache:
                    from coherence.litmus.poll import poll_spins
                    cache["poll", key] = poll_spins(model, vt, max_states, args.core,
                                                   nodes=where.nodes)
                spin = cache.get(("poll", key))
                if spin is not None and spin.can_spin is None and worst == EXIT_HOLDS:
                    worst = EXIT_INCOMPLETE
                if res.errors or res.stuck:
                    worst = max(worst, EXIT_FAILS) if worst != EXIT_INCOMPLETE else worst
                if res.stopped and worst == EXIT_HOLDS:
                    worst = EXIT_INCOMPLETE
                rows.append(_row(args, where, test, v, res))
                if spin is not None:
                    rows[-1]["poll_can_spin_forever"] = spin.can_spin
                    rows[-1]["poll_lasso"] = [s.render() for s in spin.lasso]
                    rows[-1]["poll_loop_start"] = spin.loop_start
        except KeyboardInterrupt:
            interrupted, worst = True, EXIT_INCOMPLETE
        rep.update(f"{len(rows)} program{'s' if len(rows) != 1 else ''} run", done=len(rows),
                   total=len(jobs))
        notes = [note] if (note := bound_note(args, any(r["stopped"] for r in rows))) else []
        if interrupted:
            notes.insert(0, f"interrupted (Ctrl-C) after {len(rows)} of {len(jobs)} programs: "
                            "only those finished are shown")
        rep.finish("interrupted" if interrupted else
                   "incomplete" if worst == EXIT_INCOMPLETE else
                   "fails" if worst == EXIT_FAILS else "ok", worst, programs=len(rows))
    if args.json:
        emit_json({"schema": 1, "tool": "coherence litmus", "spec": args.spec, "core": args.core,
                   "max_states": max_states, "notes": notes, "results": rows,
                   "exit_code": worst, "seconds": round(time.perf_counter() - started, 3)})
        return worst
    _print(args, rows)
    for note in notes:
        print(f"note: {note}")
    return worst


def _row(args: argparse.Namespace, where: Any, test: Any, v: str, res: Any) -> dict[str, Any]:
    """One program's line of the report (and of --json's ``results``)."""
    from coherence.litmus.program import holds, outcome_dict, outcome_text
    from coherence.litmus.sc import sc_outcomes

    sc = sc_outcomes(test)
    allowed = sorted(res.outcomes)
    cond_model = any(holds(test.condition, outcome_dict(test, o)) for o in allowed)
    cond_sc = any(holds(test.condition, outcome_dict(test, o)) for o in sc)
    row = {
        "test": test.name, "variant": v, "condition": test.condition.text(),
        "allowed_by_model": None if res.stopped else cond_model,
        "allowed_by_sc": cond_sc,
        "model_outcomes": [outcome_text(test, o) for o in allowed],
        "sc_outcomes": [outcome_text(test, o) for o in sorted(sc)],
        "beyond_sc": [outcome_text(test, o) for o in allowed if o not in sc],
        "events": res.events_used, "states": res.states,
        "errors": res.errors, "stuck": res.stuck, "stopped": res.stopped,
    }
    if where.place != "agents":
        row["place"] = where.place
        row["processors"] = where.names()
    if args.witness:
        row["lines"] = {loc: i for i, loc in enumerate(test.locations)}
        row["threads"] = where.names()
        row["witnesses"] = [
            {"outcome": outcome_text(test, o),
             "condition": holds(test.condition, outcome_dict(test, o)),
             "beyond_sc": o not in sc,
             "steps": [step.to_json() for step in res.witnesses[o]],
             "text": [step.render() for step in res.witnesses[o]]}
            for o in allowed]
    return row


def _print(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    from rich.table import Table

    from coherence.commands.common import out_console

    out = out_console()
    places = sorted({r["place"] for r in rows if "place" in r})
    where = f", threads placed {places[0]}" if places else ""
    table = Table(title=f"litmus on {args.spec} ({args.core} core{where})", title_justify="left")
    for col in ("test", "variant", "condition", "SC", "model", "beyond SC", "states"):
        table.add_column(col)

    def yn(v: bool | None) -> str:
        return "?" if v is None else ("[red]allowed[/]" if v else "[green]forbidden[/]")

    for r in rows:
        note = (", ".join(r["beyond_sc"]) or "none") if args.outcomes else \
            str(len(r["beyond_sc"]))
        if r["errors"] or r["stuck"]:
            note += f" [red]{len(r['errors'])} errors, {r['stuck']} stuck[/]"
        table.add_row(r["test"], r["variant"], r["condition"], yn(r["allowed_by_sc"]),
                      yn(r["allowed_by_model"]), note, f"{r['states']:,}")
    out.print(table)
    for r in rows:
        for e in r["errors"][:3]:
            out.print(f"[red]{r['test']} {r['variant']}: model error:[/] {e}", markup=True)
        if args.outcomes:
            out.print(f"{r['test']} {r['variant']}: model allows "
                      f"{'; '.join(r['model_outcomes'])}", markup=False)
    for r in rows:
        if "witnesses" in r:
            _print_witnesses(out, r)
    for r in rows:
        if "poll_can_spin_forever" in r:
            _print_poll(out, r)


def _print_poll(out: Any, r: dict[str, Any]) -> None:
    """Whether a fair run can leave the test's poll spinning forever (coherence.litmus.poll)."""
    spin = r["poll_can_spin_forever"]
    head = f"{r['test']} {r['variant']}: poll "
    if spin is None:
        out.print(head + "unknown (the search stopped)", markup=False)
        return
    if not spin:
        out.print(head + "always ends: every fair run sees the value", markup=False)
        return
    out.print(head + "can spin forever: a fair run never sees the value", markup=False)
    for i, text in enumerate(r["poll_lasso"], start=1):
        if i == r["poll_loop_start"]:
            out.print(f"  -- cycle: steps {i}..{len(r['poll_lasso'])} repeat forever --",
                      markup=False)
        out.print(text, markup=False)


def _print_witnesses(out: Any, r: dict[str, Any]) -> None:
    where = ", ".join(f"{loc} is line {i}" for loc, i in r["lines"].items())
    threads = ", ".join(f"thread {t} on {name}" for t, name in enumerate(r["threads"]))
    out.print(f"\n{r['test']} {r['variant']}: {len(r['witnesses'])} allowed outcomes "
              f"({threads}; {where})", markup=False)
    for w in r["witnesses"]:
        notes = [n for n, on in (("the condition", w["condition"]),
                                 ("beyond SC", w["beyond_sc"])) if on]
        note = f" ({', '.join(notes)})" if notes else ""
        out.print(f"\nwitness of {w['outcome']}{note}: {len(w['steps'])} steps", markup=False)
        for text in w["text"]:
            out.print(text, markup=False)
