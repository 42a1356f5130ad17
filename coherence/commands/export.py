"""``coherence export SPEC --to murphi``: the spec as a Murphi model for Rumur.

``--cross-check`` also runs Rumur on it and our checker on the spec (both with the coherence
monitor skipped, which the export leaves out) and prints both verdicts, counts and times.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from coherence.cli import add_spec_args, emit_json

HELP = "write the spec as a Murphi model (for Rumur); --cross-check runs Rumur on it"


def add_args(p: argparse.ArgumentParser) -> None:
    add_spec_args(p)
    p.add_argument("--to", choices=["murphi"], default="murphi", help="target language")
    p.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")
    p.add_argument("--skip", action="append", default=[], metavar="NAME",
                   help="leave this invariant out (repeatable)")
    p.add_argument("--cross-check", choices=["off", "heuristic", "exhaustive"],
                   metavar="SYMMETRY", help="run Rumur (symmetry off|heuristic|exhaustive) "
                   "and our checker (symmetry off, or exact) and compare")


def run(args: argparse.Namespace) -> int:
    from coherence.commands.common import load_model
    from coherence.export.murphi import to_murphi
    from coherence.spec.select import drop_properties

    model = load_model(args)
    monitors = [p.name for p in model.properties if p.kind == "coherence"]
    model = drop_properties(model, [*args.skip, *[m for m in monitors if m not in args.skip]])
    text = to_murphi(model)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    elif not args.cross_check:
        sys.stdout.write(text)
    doc: dict[str, Any] = {"spec": args.spec, "to": args.to, "output": args.output,
                           "skipped_monitors": monitors, "exit_code": 0}
    if args.cross_check:
        doc.update(_cross_check(model, text, args.cross_check))
    if args.json:
        emit_json(doc)
    elif args.cross_check:
        ours, theirs = doc["ours"], doc["rumur"]
        print(f"{args.spec} ({' '.join(f'{k}={v}' for k, v in doc['params'].items())}), "
              f"coherence monitor skipped")
        print(f"  ours : {ours['verdict']:6} {ours['states']:>9,} states  "
              f"{ours['seconds']:.2f} s  (symmetry {ours['symmetry']})")
        print(f"  rumur: {theirs['verdict']:6} {theirs['states']:>9,} states  "
              f"{theirs['seconds']:.2f} s  (symmetry {theirs['symmetry']}; build "
              f"{theirs['compile_seconds']:.1f} s)")
        print(f"  verdicts {'agree' if doc['verdicts_agree'] else 'DISAGREE'}")
    return int(doc["exit_code"])


def _cross_check(model: Any, text: str, symmetry: str) -> dict[str, Any]:
    from coherence.checker import CheckOptions, check
    from coherence.export.rumur import run_rumur

    ours = check(model, CheckOptions(symmetry=symmetry != "off"))
    theirs = run_rumur(text, symmetry=symmetry, optimize=True)
    agree = ours.verdict == theirs.verdict
    return {
        "params": {p.name: p.value for p in model.params},
        "ours": {"verdict": ours.verdict, "states": ours.states, "seconds": ours.seconds,
                 "symmetry": ours.symmetry},
        "rumur": {"verdict": theirs.verdict, "states": theirs.states,
                  "seconds": theirs.seconds, "compile_seconds": theirs.compile_seconds,
                  "symmetry": symmetry},
        "verdicts_agree": agree,
        # Rumur stops at its first error: counts compare only when both hold.
        "counts_agree": ours.states == theirs.states if ours.verdict == "holds" else None,
        "exit_code": 0 if agree else 1,
    }
