"""``coherence bench prove``: the Z3 back end's figures, each beside a baseline run.

* BMC: seconds per depth as depth grows, and the depth reached within a time budget (60 s by
  default) at each agent count; baseline: the reference checker's BFS to the same depth
  (``--max-depth``), run side by side, as a ratio.
* Parameterised proofs (``--agents any``): the time and verdict of each spec's proof.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from coherence.cli import emit_json

HELP = "Z3 back end: seconds per BMC depth, depth reached in a budget, time of each proof"

DEFAULT_SPECS = ["specs/german.coh", "specs/broadcast_invalidate_acked.coh",
                 "specs/broadcast_invalidate.coh"]


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", nargs="?", default="specs/german.coh",
                   help="spec for the BMC figures (default: specs/german.coh)")
    p.add_argument("--agents-list", default="3,4", metavar="N,N",
                   help="agent counts for BMC (default: 3,4)")
    p.add_argument("--budget", type=float, default=60.0, metavar="S",
                   help="seconds of BMC per agent count (default: 60)")
    p.add_argument("--bmc-depth", type=int, default=10_000, metavar="K",
                   help="stop BMC at depth K even within the budget (default: 10000)")
    p.add_argument("--skip", action="append", default=[], metavar="NAME",
                   help="drop this invariant or property (repeatable)")
    p.add_argument("--proofs", nargs="*", default=DEFAULT_SPECS, metavar="SPEC",
                   help="specs whose --agents any proof is timed (coherence monitors skipped)")
    p.add_argument("--proof-timeout", type=float, default=300.0, metavar="S")
    p.add_argument("--rlimit", type=int, metavar="N",
                   help="bound each Z3 check of the proofs by N resource units (see prove)")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")


def _bmc_rows(spec: str, agents: int, budget: float, skip: list[str],
              max_depth: int = 10_000) -> dict[str, Any]:
    from coherence.engines import check
    from coherence.results import CheckOptions
    from coherence.smt.bmc import bmc
    from coherence.spec.load import load_spec
    from coherence.spec.select import drop_properties

    model = drop_properties(load_spec(spec, {"agents": agents}), skip)
    result = bmc(model, max_depth, all_failures=True, timeout=budget)
    rows = []
    for d in result.depths:
        t = time.perf_counter()
        check(model, CheckOptions(max_depth=d.depth, deadlock=True))
        baseline = time.perf_counter() - t
        rows.append({"depth": d.depth, "bmc_seconds": round(d.seconds, 4),
                     "bmc_cumulative": round(d.cumulative, 4),
                     "checker_bfs_seconds": round(baseline, 4),
                     "ratio_bmc_over_checker": round(d.cumulative / baseline, 2)
                     if baseline > 0 else None})
    return {"agents": agents, "budget_seconds": budget, "depth_reached": result.depth,
            "verdict": result.verdict, "failures": result.groups, "depths": rows}


def _proof_row(spec: str, timeout: float, rlimit: int | None = None) -> dict[str, Any]:
    from coherence.errors import SpecError
    from coherence.smt.param import prove_all
    from coherence.spec.load import load_spec
    from coherence.spec.select import drop_properties

    model = load_spec(spec)
    model = drop_properties(model, [p.name for p in model.properties])
    t = time.perf_counter()
    try:
        r = prove_all(model, timeout=timeout, rlimit=rlimit)
        verdict, detail = r.verdict, r.reason or (f"refuted at {r.instance} agents"
                                                  if r.instance else "proved")
    except SpecError as err:
        verdict, detail = "unsupported", f"{err.location()}: {err.message}"
    return {"spec": spec, "verdict": verdict, "detail": detail,
            "seconds": round(time.perf_counter() - t, 3)}


def run(args: argparse.Namespace) -> int:
    from coherence.commands.common import out_console

    agents = [int(x) for x in args.agents_list.split(",") if x.strip()]
    bmc_runs = [_bmc_rows(args.spec, n, args.budget, args.skip, args.bmc_depth) for n in agents]
    proofs = [_proof_row(s, args.proof_timeout, args.rlimit) for s in args.proofs]
    doc = {"tool": "coherence bench prove", "spec": args.spec, "bmc": bmc_runs,
           "proofs": proofs}
    if args.json:
        emit_json(doc)
        return 0
    out = out_console()
    for run_ in bmc_runs:
        out.print(f"BMC {args.spec} agents={run_['agents']}: depth {run_['depth_reached']} "
                  f"reached in {run_['budget_seconds']:g} s ({run_['verdict']})")
        for r in run_["depths"]:
            out.print(f"  depth {r['depth']:>3}: {r['bmc_seconds']:8.3f} s  (cumulative "
                      f"{r['bmc_cumulative']:8.2f} s; checker BFS to this depth "
                      f"{r['checker_bfs_seconds']:.3f} s; ratio {r['ratio_bmc_over_checker']})")
    for p in proofs:
        out.print(f"proof --agents any {p['spec']}: {p['verdict']} in {p['seconds']:.2f} s "
                  f"({p['detail']})", markup=False)
    return 0
