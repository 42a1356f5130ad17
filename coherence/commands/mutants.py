"""``coherence mutants DIR``: check every seeded-bug spec; mutation score and CE lengths."""

from __future__ import annotations

import argparse
from typing import Any

from coherence.cli import emit_json

HELP = "check every mutant spec in a directory: mutation score, counterexample lengths"


def add_args(p: argparse.ArgumentParser) -> None:
    from coherence.commands.options import int_at_least
    p.add_argument("directory", help="a directory of mutant specs (e.g. specs/mutants/)")
    p.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE",
                   help="override a parameter of every mutant (repeatable)")
    p.add_argument("--agents", "-n", type=int_at_least(1, 8), metavar="N",
                   help="override each mutant's AGENTS")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    from coherence.progress import add_progress_args
    add_progress_args(p)


def run(args: argparse.Namespace) -> int:
    from coherence.commands.common import out_console, reporter
    from coherence.mutants import find_mutants, parse_header, run_mutant
    from coherence.spec.load import parse_overrides

    params = parse_overrides(args.param, args.agents)
    agents = params.pop("agents", None)
    paths = find_mutants(args.directory)
    mutants = [parse_header(p) for p in paths]
    results = []
    with reporter(args, "coherence mutants") as rep:
        rep.header(args.directory, params, "reference", {}, mutants=len(mutants),
                   **({"agents": agents} if agents is not None else {}))
        for i, m in enumerate(mutants):
            rep.update(f"mutant {i + 1} of {len(mutants)}: {m.path}", done=i,
                       total=len(mutants), force=True, mutant=m.path)
            results.append(run_mutant(m, agents, params))
        caught = sum(r.caught for r in results)
        rep.update(f"{len(mutants)} mutants checked, {caught} caught", done=len(mutants),
                   total=len(mutants), caught=caught)
        rep.finish("caught" if results and caught == len(results) else "missed",
                   0 if results and caught == len(results) else 1, caught=caught)
    score = caught / len(results) if results else 0.0
    doc: dict[str, Any] = {
        "directory": args.directory, "mutants": len(results), "caught": caught,
        "score": round(score, 4),
        "results": [{"mutant": r.mutant.path, "base": r.mutant.base, "change": r.mutant.change,
                     "expect": list(r.mutant.expect), "caught": r.caught,
                     "caught_as_expected": r.expected_caught, "failed": list(r.failed),
                     "counterexample_length": r.length, "states": r.states,
                     "seconds": round(r.seconds, 3)} for r in results],
        "exit_code": 0 if results and caught == len(results) else 1,
    }
    if args.json:
        emit_json(doc)
    else:
        con = out_console()
        for r in results:
            mark = "caught" if r.caught else "MISSED"
            by = ", ".join(r.failed) or "-"
            note = "" if r.expected_caught or not r.caught else "  (not by EXPECT: " + \
                ",".join(r.mutant.expect) + ")"
            con.print(f"{mark:7} {r.mutant.path}  CE {r.length if r.length else '-':>3}  "
                      f"by {by}{note}")
        con.print(f"mutation score: {caught}/{len(results)} = {score:.0%}")
    return int(doc["exit_code"])
