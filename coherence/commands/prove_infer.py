"""``coherence prove SPEC --agents any --infer [--write]``: the command-line side of
``coherence.smt.infer`` (printing, JSON, and appending the lines to the spec)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coherence.cli import emit_json


def run_infer(args: argparse.Namespace, model: Any, header: Callable[..., None]) -> int:
    from coherence.commands.common import draw_failures
    from coherence.commands.infer_states import state_source
    from coherence.commands.options import jobs_of
    from coherence.progress import reporter
    from coherence.smt.infer import InferOptions, appended_text, infer
    from coherence.smt.report import param_json, print_param

    opts = InferOptions(timeout=args.timeout, final_rlimit=args.rlimit, jobs=jobs_of(args),
                        cache=args.proof_cache)
    if args.houdini_agents is not None:
        opts.cutoff = args.houdini_agents
    opts.cycle_clauses = bool(args.cycle_clauses)  # NOTE(cycle-clauses): off unless asked
    if args.keep_global_lines is not None:  # NOTE(minimize-keeps-global)
        opts.keep_global = args.keep_global_lines
    with reporter(args, "coherence prove") as rep:
        header(rep, args, model, "z3 proof for every number of agents, invariants inferred")
        result = infer(model, opts, progress=lambda s: rep.update(s, force=True),
                       source=state_source(args.mine_engine))
        rep.finish(result.proof.verdict, result.proof.exit_code)
    proof = result.proof
    written = None
    if args.write and proof.verdict == "holds" and result.lines:
        written = _append(args.spec, model, appended_text(result.lines))
    if args.json:
        doc = param_json(result.model or model, proof)
        doc["inferred"] = {"invariants": result.lines, "stats": result.stats,
                           "missing": result.missing, "written_to": written}
        emit_json(doc)
        return proof.exit_code
    if result.missing:
        print(f"inference: {result.missing}")
    if proof.verdict == "holds":
        print(f"inferred {len(result.lines)} auxiliary invariant(s); the spec with them is "
              "proved for every number of agents:")
    elif result.lines:
        print(f"inferred {len(result.lines)} auxiliary invariant(s), but the spec with them "
              "is not proved (see below); they were:")
    for line in result.lines:
        print(f"  {line}")
    print_param(result.model or model, proof)
    s = result.stats.get("seconds")
    if s and "explore" in s:
        print(f"inference: {result.stats['candidates']} candidates, "
              f"{result.stats['after_houdini']} never refuted, {result.stats['support']} kept; "
              "explore "
              f"{s['explore']:.1f} s, filter {s['filter']:.1f} s, Houdini "
              f"{s['houdini']:.1f} s, final proof {s['final_proof']:.1f} s")
    if written:
        print(f"appended {len(result.lines)} invariant(s) to {written} after the line "
              f"'{appended_text([]).strip()}'")
    elif args.write:
        print(f"nothing written to {args.spec}: no proof", file=sys.stderr)
    for f in draw_failures(args, result.model or model, proof.failures,
                           "prove --agents any --infer"):
        print(f"diagram: {f}")
    return proof.exit_code


def _append(spec: str, model: Any, text: str) -> str:
    """Append ``text`` to the spec file, unless it changed since it was read (then a
    SpecError: the user's edits are never overwritten)."""
    from coherence.errors import NO_SPAN, SpecError, read_source
    path = Path(spec)
    now = read_source(path, "spec")
    origin = getattr(model.origin, "text", None)
    if origin is None or now != origin:
        raise SpecError(f"{spec} changed since it was read: nothing written (run again)",
                        NO_SPAN)
    raw = path.read_bytes()
    sep = b"" if raw.endswith(b"\n") or not raw else b"\n"
    tmp = path.with_name(f".{path.name}.infer-tmp")
    tmp.write_bytes(raw + sep + text.encode())
    os.replace(tmp, path)
    return str(path)
