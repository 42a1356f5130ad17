"""``coherence export SPEC --to murphi|promela``: the spec as a Murphi model for Rumur, or a
Promela model for Spin.

``--cross-check`` also runs Rumur or Spin on it and our checker on the spec (both with the
coherence monitor skipped, which the exports leave out) and prints both verdicts, counts and
times. Spin has no symmetry reduction: ours runs with symmetry off for it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from coherence.cli import add_spec_args, emit_json

HELP = ("write the spec as a Murphi model (for Rumur) or a Promela model (for Spin); "
        "--cross-check runs the other checker on it")


def add_args(p: argparse.ArgumentParser) -> None:
    from coherence.commands.options import output_file
    add_spec_args(p)
    p.add_argument("--to", choices=["murphi", "promela"], default="murphi",
                   help="target language")
    p.add_argument("-o", "--output", type=output_file, metavar="FILE",
                   help="write here (default: stdout)")
    p.add_argument("--skip", action="append", default=[], metavar="NAME",
                   help="leave this invariant out (repeatable)")
    p.add_argument("--cross-check", choices=["off", "heuristic", "exhaustive"], nargs="?",
                   const="off", metavar="SYMMETRY",
                   help="run Rumur (symmetry off|heuristic|exhaustive; default off) or Spin "
                   "(off only) and our checker (symmetry off, or exact) and compare")


def run(args: argparse.Namespace) -> int:
    from coherence.commands.common import load_model
    from coherence.spec.select import drop_properties

    if args.to == "promela" and args.cross_check not in (None, "off"):
        print("coherence export: error: Spin has no symmetry reduction: use --cross-check "
              "(or --cross-check off) with --to promela", file=sys.stderr)
        return 2
    _check_output(args.output, args.spec)
    if args.cross_check:
        _check_checker_installed(args.to)
    model = load_model(args)
    monitors = [p.name for p in model.properties if p.kind == "coherence"]
    model = drop_properties(model, [*args.skip, *[m for m in monitors if m not in args.skip]])
    if args.to == "promela":
        from coherence.export.promela import to_promela
        text = to_promela(model)
    else:
        from coherence.export.murphi import to_murphi
        text = to_murphi(model)
    if args.output:
        _write_output(args.output, text)
    elif not args.cross_check:
        sys.stdout.write(text)
    doc: dict[str, Any] = {"spec": args.spec, "to": args.to, "output": args.output,
                           "skipped_monitors": monitors, "exit_code": 0}
    if args.cross_check and args.to == "promela":
        doc.update(_cross_check_spin(model, text))
    elif args.cross_check:
        doc.update(_cross_check(model, text, args.cross_check))
    if args.json:
        emit_json(doc)
    elif args.cross_check and args.to == "promela":
        _print_spin(args.spec, doc)
    elif args.cross_check:
        ours, theirs = doc["ours"], doc["rumur"]
        print(f"{args.spec} ({' '.join(f'{k}={v}' for k, v in doc['params'].items())}), "
              f"coherence monitor skipped")
        print(f"  ours : {ours['verdict']:6} {ours['states']:>9,} states  "
              f"{ours['seconds']:.2f} s  (symmetry {ours['symmetry']})")
        print(f"  rumur: {theirs['verdict']:6} {theirs['states']:>9,} states  "
              f"{theirs['seconds']:.2f} s  (symmetry {theirs['symmetry']}; build "
              f"{theirs['compile_seconds']:.1f} s)")
        counts = doc["counts_agree"]
        print(f"  verdicts {'agree' if doc['verdicts_agree'] else 'DISAGREE'}"
              + ("" if counts is None else f"; counts {'agree' if counts else 'DISAGREE'}"))
    return int(doc["exit_code"])


def _check_output(output: str | None, spec: str) -> None:
    """Refuse to write over the spec being exported (the user's file would be lost)."""
    from coherence.errors import NO_SPAN, SpecError
    target = Path(output) if output else None
    if target is not None and target.exists() and Path(spec).exists() and \
            target.resolve() == Path(spec).resolve():
        raise SpecError(f"-o {output}: is the spec being exported; choose another file", NO_SPAN)


def _check_checker_installed(to: str) -> None:
    """--cross-check needs the other checker: say so before any work, as one line (exit 2)."""
    from coherence.errors import NO_SPAN, SpecError
    from coherence.export.rumur import rumur_available
    from coherence.export.spin import spin_available
    if to == "promela" and not spin_available():
        raise SpecError("--cross-check: spin and gcc are needed (Debian: apt-get install spin "
                        "gcc)", NO_SPAN)
    if to == "murphi" and not rumur_available():
        raise SpecError("--cross-check: rumur and cc are needed (Debian: apt-get install rumur "
                        "gcc)", NO_SPAN)


def _write_output(output: str, text: str) -> None:
    """Write a regular file whole or not at all (through a temporary file beside it), so a
    failure never leaves half a file where the user's was; anything else (a pipe, /dev/null)
    is written directly."""
    target = Path(output)
    if target.exists() and not target.is_file():
        with target.open("w", encoding="utf-8") as f:
            f.write(text)
        return
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(target)


def _cross_check(model: Any, text: str, symmetry: str) -> dict[str, Any]:
    from coherence.engines import check
    from coherence.export.rumur import run_rumur
    from coherence.results import CheckOptions

    ours = check(model, CheckOptions(symmetry=symmetry != "off"))
    theirs = run_rumur(text, symmetry=symmetry, optimize=True)
    agree = ours.verdict == theirs.verdict
    # Rumur stops at its first error: counts compare only when both hold, and with symmetry
    # only where both reduce by the same group (NOTE(murphi-hierarchy)).
    comparable = ours.verdict == "holds"
    if model.is_hierarchical and symmetry != "off":
        from coherence.export.murphi_hier import rumur_symmetry_is_ours
        comparable &= ours.symmetry == "exact" and rumur_symmetry_is_ours(model)
    return {
        "params": {p.name: p.value for p in model.params},
        "ours": {"verdict": ours.verdict, "states": ours.states, "seconds": ours.seconds,
                 "symmetry": ours.symmetry},
        "rumur": {"verdict": theirs.verdict, "states": theirs.states,
                  "seconds": theirs.seconds, "compile_seconds": theirs.compile_seconds,
                  "symmetry": symmetry},
        "verdicts_agree": agree,
        "counts_agree": ours.states == theirs.states if comparable else None,
        "exit_code": 0 if agree else 1,
    }


def _cross_check_spin(model: Any, text: str) -> dict[str, Any]:
    import re

    from coherence.engines import check
    from coherence.export.spin import run_spin
    from coherence.results import CheckOptions

    ours = check(model, CheckOptions(symmetry=False))
    theirs = run_spin(text, optimize=True)
    agree = ours.verdict == theirs.verdict
    ready = re.search(r"^#define READY (\d+)", text, re.M)
    steps = int(ready.group(1)) + 1 if ready else 2
    return {
        "params": {p.name: p.value for p in model.params},
        "ours": {"verdict": ours.verdict, "states": ours.states, "seconds": ours.seconds,
                 "symmetry": ours.symmetry,
                 "failure": _first_failure(ours)},
        "spin": {"verdict": theirs.verdict, "states": theirs.states,
                 "transitions": theirs.transitions, "depth": theirs.depth,
                 "seconds": theirs.seconds, "compile_seconds": theirs.compile_seconds,
                 "failure": theirs.failure, "spin_states_per_state": steps},
        "verdicts_agree": agree,
        # Each of our states is `steps` Spin states (raw, partly ready, ready), plus the
        # state before initialisation; pan stops at its first error.
        "counts_agree": (theirs.states == steps * ours.states + 1
                         if ours.verdict == "holds" and theirs.verdict == "holds" else None),
        "exit_code": 0 if agree else 1,
    }


def _first_failure(result: Any) -> str | None:
    if not result.failures:
        return None
    f = min(result.failures, key=lambda f: f.length)
    return f"{f.kind}: {f.message}"


def _print_spin(spec: str, doc: dict[str, Any]) -> None:
    ours, theirs = doc["ours"], doc["spin"]
    print(f"{spec} ({' '.join(f'{k}={v}' for k, v in doc['params'].items())}), "
          f"coherence monitor skipped")
    print(f"  ours : {ours['verdict']:6} {ours['states']:>9,} states  "
          f"{ours['seconds']:.2f} s  (symmetry off)"
          + (f"  {ours['failure']}" if ours["failure"] else ""))
    print(f"  spin : {theirs['verdict']:6} {theirs['states']:>9,} states  "
          f"{theirs['seconds']:.2f} s  (stored; {theirs['spin_states_per_state']} per state "
          f"of ours; build {theirs['compile_seconds']:.1f} s)"
          + (f"  {theirs['failure']}" if theirs["failure"] else ""))
    counts = doc["counts_agree"]
    print(f"  verdicts {'agree' if doc['verdicts_agree'] else 'DISAGREE'}"
          + ("" if counts is None else f"; counts {'agree' if counts else 'DISAGREE'}"))
