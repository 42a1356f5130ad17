"""Rendering ``coherence prove`` results: the human text (traces exactly as ``coherence check``
prints them) and the ``--json`` documents."""

from __future__ import annotations

import time
from typing import Any

from coherence.console import out_console, params_text
from coherence.ir import Model
from coherence.results import Failure

SCHEMA_VERSION = 1


def _print_failures(out: Any, failures: list[Failure], what: str) -> None:
    for f in failures:
        out.print()
        out.print(f"[bold red]FAIL[/] [bold]{f.name}[/] ({f.kind}): {f.message}", markup=True)
        out.print(f"{what}: {f.length} step{'s' if f.length != 1 else ''}")
        for step in f.trace:
            out.print(step.render(), markup=False)
        if f.span:
            out.print(f"at {f.span}", markup=False)


def failures_json(failures: list[Failure]) -> list[dict[str, Any]]:
    return [{"kind": f.kind, "property": f.name, "message": f.message, "length": f.length,
             "location": f.span, "trace": [s.to_json() for s in f.trace]} for f in failures]


def _head(model: Model, mode: str) -> dict[str, Any]:
    return {"schema": SCHEMA_VERSION, "tool": "coherence prove", "mode": mode,
            "spec": model.file, "params": {p.name: p.value for p in model.params}}


# ---------------------------------------------------------------- BMC


def print_bmc(model: Model, result: Any) -> None:
    out = out_console()
    out.print(f"[bold]coherence prove --bmc[/] {model.file} ({params_text(model)})")
    _print_failures(out, result.failures, "shortest counterexample (replayed)")
    out.print()
    times = ", ".join(f"{d.depth}:{d.seconds:.2f}" for d in result.depths)
    out.print(f"seconds per depth: {times}", markup=False)
    colour = {"fails": "red", "bounded": "yellow", "unknown": "yellow"}[result.verdict]
    if result.verdict == "fails":
        text = f"FAILS at depth {result.first_failing_depth}"
    elif result.verdict == "bounded":
        text = (f"no failure up to depth {result.depth} (bounded: nothing is proved beyond "
                "that depth)")
    else:
        text = f"UNKNOWN after depth {result.depth}: {result.reason}"
    out.print(f"verdict: [bold {colour}]{text}[/]")
    out.print(f"{result.seconds:.2f} s")


def bmc_json(model: Model, result: Any) -> dict[str, Any]:
    return {**_head(model, "bmc"), "verdict": result.verdict, "exit_code": result.exit_code,
            "depth_reached": result.depth, "first_failing_depth": result.first_failing_depth,
            "first_failing_depth_by_property": result.groups, "reason": result.reason,
            "seconds_per_depth": [{"depth": d.depth, "seconds": round(d.seconds, 4)}
                                  for d in result.depths],
            "seconds": round(result.seconds, 4), "failures": failures_json(result.failures),
            "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


# ---------------------------------------------------------------- k-induction


def print_induction(model: Model, result: Any) -> None:
    out = out_console()
    out.print(f"[bold]coherence prove --induction {result.k}[/] {model.file} "
              f"({params_text(model)})")
    _print_failures(out, result.failures, "counterexample (replayed)")
    if result.cti is not None:
        cti = result.cti
        out.print()
        out.print(f"[bold yellow]not inductive[/]: {cti.summary}")
        out.print(f"a state that satisfies every checked property for {result.k} step(s) "
                  "but is not necessarily reachable:", markup=False)
        for line in cti.pre:
            out.print(f"       {line}", markup=False)
        out.print("the step that breaks it:", markup=False)
        out.print(cti.step.render(), markup=False)
        out.print("add an `invariant aux NAME: ...;` that rules this state out, or try a "
                  "larger K", markup=False)
    out.print()
    colour = {"holds": "green", "fails": "red", "unknown": "yellow"}[result.verdict]
    size = (params_text(model) if model.is_hierarchical  # NOTE(z3-hierarchy): by index sizes
            else f"{model.agents} agent(s)")
    text = {"holds": f"PROVED for {size} by {result.k}-induction",
            "fails": "FAILS (base case)",
            "unknown": f"UNKNOWN: {result.reason}"}[result.verdict]
    out.print(f"verdict: [bold {colour}]{text}[/]")
    out.print(f"{result.seconds:.2f} s")


def induction_json(model: Model, result: Any) -> dict[str, Any]:
    cti = None
    if result.cti is not None:
        cti = {"summary": result.cti.summary, "groups": result.cti.groups,
               "pre_state": result.cti.pre, "step": result.cti.step.to_json()}
    return {**_head(model, "induction"), "k": result.k, "verdict": result.verdict,
            "exit_code": result.exit_code, "reason": result.reason,
            "seconds": round(result.seconds, 4), "failures": failures_json(result.failures),
            "counterexample_to_induction": cti,
            "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


# ---------------------------------------------------------------- every N


def print_param(model: Model, result: Any) -> None:
    out = out_console()
    out.print(f"[bold]coherence prove --agents any[/] {model.file}")
    for line in result.notes:
        out.print(line, markup=False)
    if result.instance is not None:
        size = "agent(s)" if result.over is None else result.unit
        out.print(f"refuted with {result.instance} {size}:", markup=False)
    _print_failures(out, result.failures, "counterexample (replayed)")
    for c in result.ctis:
        out.print()
        out.print(f"[bold yellow]not inductive[/]: {c}", markup=True)
    for cti in result.cti_details:
        out.print()
        out.print(f"[bold yellow]counterexample to induction[/]: {cti.summary}")
        out.print("a state that satisfies every invariant but is not necessarily reachable:",
                  markup=False)
        for line in cti.pre:
            out.print(f"       {line}", markup=False)
        out.print("the step that breaks it (replayed by the reference semantics):",
                  markup=False)
        out.print(cti.step.render(), markup=False)
    if result.cti_details:
        out.print("add an `invariant aux NAME: ...;` that rules such a state out", markup=False)
    out.print()
    colour = {"holds": "green", "fails": "red", "unknown": "yellow"}[result.verdict]
    text = {"holds": f"PROVED for every number of {result.unit}",
            "fails": "FAILS", "unknown": f"UNKNOWN: {result.reason}"}[result.verdict]
    out.print(f"verdict: [bold {colour}]{text}[/]")
    if result.cached:
        out.print(f"{result.cached} proof obligation(s) settled by earlier runs "
                  "(--proof-cache)", markup=False)
    out.print(f"{result.seconds:.2f} s")


def param_json(model: Model, result: Any) -> dict[str, Any]:
    return {**_head(model, "agents-any"), "verdict": result.verdict,
            "exit_code": result.exit_code, "reason": result.reason,
            "proved": result.proved, "instance_agents": result.instance,
            **({"over": result.over} if result.over is not None else {}),
            "counterexamples_to_induction": result.ctis,
            "cti_states": [{"summary": c.summary, "groups": c.groups, "pre_state": c.pre,
                            "step": c.step.to_json()} for c in result.cti_details],
            "notes": result.notes, "jobs": result.jobs, "cached": result.cached,
            "seconds": round(result.seconds, 4), "failures": failures_json(result.failures),
            "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
