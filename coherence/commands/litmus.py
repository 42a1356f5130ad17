"""``coherence litmus SPEC TEST...``: the outcomes a protocol allows for litmus programs,
beside the outcomes sequential consistency allows."""

from __future__ import annotations

import argparse
import time
from typing import Any

from coherence.cli import EXIT_FAILS, EXIT_HOLDS, EXIT_INCOMPLETE, emit_json

HELP = "run litmus programs on a protocol model: allowed outcomes vs sequential consistency"


def add_args(p: argparse.ArgumentParser) -> None:
    from coherence.commands.options import positive_int
    p.add_argument("spec", help="the protocol spec (.coh)")
    p.add_argument("tests", nargs="+", metavar="TEST",
                   help="litmus file or catalogue name (MP, SB, ...); 'all' for the catalogue")
    p.add_argument("--variant", "-V", action="append", default=[], metavar="NAME",
                   help="variant to run (repeatable; default: every variant; see "
                        "coherence.litmus.variants)")
    p.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE",
                   help="override a spec parameter (agents, lines, values are set per test)")
    add_core_arg(p)
    p.add_argument("--max-states", type=positive_int, metavar="N",
                   help="stop a test's exploration after N states (result: incomplete)")
    p.add_argument("--outcomes", action="store_true",
                   help="list every allowed outcome, not only the condition's verdict")
    p.add_argument("--witness", action="store_true",
                   help="for each outcome the model allows, print the shortest run that ends "
                        "in it, as numbered steps (as `coherence check` prints a "
                        "counterexample); in --json, each row's 'witnesses'")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")


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
    from coherence.litmus.catalogue import load_catalogue
    from coherence.litmus.model import model_overrides, program_key, run_on_model
    from coherence.litmus.program import holds, outcome_dict, outcome_text
    from coherence.litmus.sc import sc_outcomes
    from coherence.litmus.variants import apply_variant, variant_names
    from coherence.spec.load import load_spec

    extra = litmus_params(args.param)
    tests = load_catalogue(args.tests)
    rows: list[dict[str, Any]] = []
    cache: dict[tuple, Any] = {}
    worst = EXIT_HOLDS
    started = time.perf_counter()
    for test in tests:
        model = load_spec(args.spec, {**extra, **model_overrides(test)})
        variants = args.variant or variant_names(test)
        sc = sc_outcomes(test)
        for v in variants:
            vt = apply_variant(test, v)
            key = program_key(model, vt)
            if key not in cache:
                cache[key] = run_on_model(model, vt, args.max_states, args.core,
                                          witnesses=args.witness)
            res = cache[key]
            allowed = sorted(res.outcomes)
            cond_model = any(holds(test.condition, outcome_dict(test, o)) for o in allowed)
            cond_sc = any(holds(test.condition, outcome_dict(test, o)) for o in sc)
            if res.errors or res.stuck:
                worst = max(worst, EXIT_FAILS) if worst != EXIT_INCOMPLETE else worst
            if res.stopped and worst == EXIT_HOLDS:
                worst = EXIT_INCOMPLETE
            rows.append({
                "test": test.name, "variant": v, "condition": test.condition.text(),
                "allowed_by_model": None if res.stopped else cond_model,
                "allowed_by_sc": cond_sc,
                "model_outcomes": [outcome_text(test, o) for o in allowed],
                "sc_outcomes": [outcome_text(test, o) for o in sorted(sc)],
                "beyond_sc": [outcome_text(test, o) for o in allowed if o not in sc],
                "events": res.events_used, "states": res.states,
                "errors": res.errors, "stuck": res.stuck, "stopped": res.stopped,
            })
            if args.witness:
                rows[-1]["lines"] = {loc: i for i, loc in enumerate(test.locations)}
                rows[-1]["threads"] = [f"{model.caches[0].name}[{t}]"
                                       for t in range(len(test.threads))]
                rows[-1]["witnesses"] = [
                    {"outcome": outcome_text(test, o),
                     "condition": holds(test.condition, outcome_dict(test, o)),
                     "beyond_sc": o not in sc,
                     "steps": [step.to_json() for step in res.witnesses[o]],
                     "text": [step.render() for step in res.witnesses[o]]}
                    for o in allowed]
    if args.json:
        emit_json({"schema": 1, "tool": "coherence litmus", "spec": args.spec, "core": args.core,
                   "results": rows, "exit_code": worst,
                   "seconds": round(time.perf_counter() - started, 3)})
        return worst
    _print(args, rows)
    return worst


def _print(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    from rich.table import Table

    from coherence.commands.common import out_console

    out = out_console()
    table = Table(title=f"litmus on {args.spec} ({args.core} core)", title_justify="left")
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
