"""Rendering a check result: the human summary and the JSON document (progress:
``coherence/progress.py``)."""

from __future__ import annotations

import time
from typing import Any

import attrs

from coherence.commands.common import out_console, params_text
from coherence.failures import property_of
from coherence.ir import Model
from coherence.results import CheckResult

SCHEMA_VERSION = 1


def failed_properties(result: CheckResult) -> set[str]:
    """The entries of ``result.properties`` that some failure breaks."""
    return {property_of(f.key) if f.key else f.name for f in result.failures}


def property_status(result: CheckResult) -> dict[str, str]:
    failed = failed_properties(result)
    return {name: "fails" if name in failed else ("unknown" if result.stopped else "holds")
            for name in result.properties}


def result_json(result: CheckResult) -> dict[str, Any]:
    return {
        "schema": SCHEMA_VERSION,
        "tool": "coherence check",
        "spec": result.spec,
        "params": result.params,
        "symmetry": result.symmetry,
        "engine": result.engine,
        "threads": result.threads,
        "verdict": result.verdict,
        "exit_code": result.exit_code,
        "stopped": result.stopped,
        "stats": {
            "states": result.states,
            "rules_fired": result.rules_fired,
            "depth": result.depth,
            "seconds": round(result.seconds, 4),
            "states_per_second": round(result.states_per_second, 1),
            "peak_memory_bytes": result.peak_memory_bytes,
            "bytes_per_state": round(result.bytes_per_state, 1),
        },
        "properties": property_status(result),
        "notes": result.notes,
        "vacuous": result.vacuous,
        "coverage": None if result.coverage is None else [
            attrs.asdict(c) for c in result.coverage],
        "failures": [
            {"kind": f.kind, "property": f.name, "message": f.message, "length": f.length,
             "location": f.span, "details": f.details, "loop_start": f.loop_start,
             "trace": [s.to_json() for s in f.trace]}
            for f in result.failures
        ],
        "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def print_coverage(result: CheckResult) -> None:
    out = out_console()
    if result.coverage is None:
        out.print(f"coverage: not counted by the {result.engine} engine (use --engine "
                  "reference)")
        return
    never = [c for c in result.coverage if c.fired == 0]
    out.print(f"coverage: {len(result.coverage) - len(never)} of {len(result.coverage)} "
              f"transitions fired" + (" in the explored states (partial search)"
                                      if result.stopped else ""))
    for c in result.coverage:
        mark = "[red]never[/]" if c.fired == 0 else f"{c.fired:,}"
        out.print(f"  {mark:>12}  {c.machine}: {c.transition}  ({c.location})")


def print_check_result(model: Model, result: CheckResult,
                       show_coverage: bool = False) -> None:
    out = out_console()
    threads = f", {result.threads} threads" if result.threads > 1 else ""
    out.print(f"[bold]coherence check[/] {model.file} ({params_text(model)}; "
              f"symmetry {result.symmetry}; engine {result.engine}{threads})")
    for f in result.failures:
        out.print()
        out.print(f"[bold red]FAIL[/] [bold]{f.name}[/] ({f.kind}): {f.message}")
        out.print(f"shortest counterexample: {f.length} step{'s' if f.length != 1 else ''}")
        for step in f.trace:
            if step.index == f.loop_start:
                out.print(f"  -- cycle: steps {step.index}..{len(f.trace)} repeat forever --",
                          markup=False)
            out.print(step.render(), markup=False)
        if f.loop_start is not None:
            if f.loop_start > len(f.trace):
                out.print("  -- from here the system stays in this state forever --",
                          markup=False)
            else:
                out.print(f"  -- repeats from step {f.loop_start} --", markup=False)
        for i, line in enumerate(f.details):
            out.print(("  " if i else "") + line, markup=False)
        if f.span:
            out.print(f"at {f.span}", markup=False)
    out.print()
    marks = []
    for name, status in property_status(result).items():
        if status == "fails":
            marks.append(f"[red]{name} FAILS[/]")
        elif status == "unknown":
            marks.append(f"[yellow]{name} unknown[/]")
        else:
            marks.append(f"[green]{name} holds[/]")
    out.print("properties: " + ", ".join(marks))
    for note in result.notes:
        out.print(f"[yellow]note[/]: {note}")
    unchecked = [p.name for p in model.liveness if p.name not in result.properties]
    if unchecked:
        out.print(f"[yellow]note[/]: liveness not checked: {', '.join(unchecked)} (--liveness "
                  "checks them)")
    for what in result.vacuous:
        out.print(f"[yellow]vacuous[/]: {what}", markup=True)
    if show_coverage:
        print_coverage(result)
    colour = {"holds": "green", "fails": "red", "incomplete": "yellow"}[result.verdict]
    verdict = result.verdict.upper()
    if result.stopped:
        verdict += f" (partial: {result.stopped})"
    out.print(f"verdict: [bold {colour}]{verdict}[/]")
    out.print(
        f"{result.states:,} states, {result.rules_fired:,} rules fired, depth {result.depth}, "
        f"{result.seconds:.2f} s, {result.states_per_second:,.0f} states/s, peak memory "
        f"{result.peak_memory_bytes / 2**20:.0f} MiB, {result.bytes_per_state:.0f} bytes/state")
