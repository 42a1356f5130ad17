"""``coherence bench prove``: the Z3 back end's figures (coherence/smt/bench.py), each beside a
baseline run: seconds per BMC depth against the checker's BFS to that depth, and the time of
each proof for every number of agents."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from coherence.cli import emit_json
from coherence.progress import add_progress_args
from coherence.smt.bench import DEFAULT_SPECS, bmc_rows, proof_row

HELP = "Z3 back end: seconds per BMC depth, depth reached in a budget, time of each proof"


def add_args(p: argparse.ArgumentParser) -> None:
    from coherence.commands.options import (
        add_jobs_arg,
        nonnegative_int,
        positive_int,
        positive_seconds,
    )
    p.add_argument("spec", nargs="?", default=DEFAULT_SPECS[0],
                   help="spec for the BMC figures (default: specs/german.coh)")
    p.add_argument("--agents-list", default="3,4", metavar="N,N",
                   help="agent counts for BMC (default: 3,4)")
    p.add_argument("--budget", type=positive_seconds, default=60.0, metavar="S",
                   help="seconds of BMC per agent count (default: 60)")
    p.add_argument("--bmc-depth", type=nonnegative_int, default=10_000, metavar="K",
                   help="stop BMC at depth K even within the budget (default: 10000)")
    p.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE",
                   help="override a parameter of the BMC spec (repeatable; agents come from "
                        "--agents-list)")
    p.add_argument("--skip", action="append", default=[], metavar="NAME",
                   help="drop this invariant or property (repeatable)")
    p.add_argument("--proofs", nargs="*", default=DEFAULT_SPECS, metavar="SPEC",
                   help="specs whose --agents any proof is timed (coherence monitors skipped)")
    p.add_argument("--proof-timeout", type=positive_seconds, default=300.0, metavar="S",
                   help="seconds each proof may take (default: 300)")
    p.add_argument("--rlimit", type=positive_int, metavar="N",
                   help="bound each Z3 check of the proofs by N resource units (see prove)")
    p.add_argument("--infer", action="store_true",
                   help="instead: prove --agents any --infer on each protocol without its "
                        "hand-written aux invariants (tests/specs/infer/, or the --proofs "
                        "given), beside the proof with them: candidates, kept, seconds per "
                        "phase")
    p.add_argument("--mine-engine", choices=("auto", "reference"), default="auto",
                   help="with --infer: the search the candidates are mined from (see prove "
                        "--mine-engine; default: auto)")
    p.add_argument("--hier", action="store_true",
                   help="instead: the proofs of hierarchical specs for every size of one index "
                        "type (smt/bench.py's HIER_PROOFS), beside the checker at 2 and 3 ids")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    add_jobs_arg(p)
    add_progress_args(p)


def run(args: argparse.Namespace) -> int:
    from coherence.commands.common import out_console, reporter
    from coherence.commands.options import jobs_of
    from coherence.errors import NO_SPAN, SpecError
    from coherence.spec.load import parse_overrides

    params = parse_overrides(args.param)
    if "agents" in params:
        raise SpecError("--param agents: the agent counts come from --agents-list", NO_SPAN)
    if args.infer:
        return _run_infer(args)
    if args.hier:
        return _run_hier(args)
    agents = [int(x) for x in args.agents_list.split(",") if x.strip()]
    cases = len(agents) + len(args.proofs)
    with reporter(args, "coherence bench prove") as rep:
        rep.header(args.spec, params, "z3",
                   {"bmc_budget": args.budget, "bmc_depth": args.bmc_depth,
                    "proof_timeout": args.proof_timeout, "rlimit": args.rlimit},
                   agents=agents, proofs=args.proofs)
        bmc_runs = []
        for i, n in enumerate(agents):
            what = f"case {i + 1} of {cases}: BMC agents={n}"
            rep.update(what, done=i, total=cases, force=True)
            bmc_runs.append(bmc_rows(
                args.spec, n, args.budget, args.skip, args.bmc_depth, params,
                progress=lambda step, what=what, i=i: rep.update(f"{what}, {step}", done=i,
                                                                 total=cases)))
        proofs = []
        for k, spec in enumerate(args.proofs):
            i = len(agents) + k
            what = f"case {i + 1} of {cases}: proof --agents any {spec}"
            rep.update(what, done=i, total=cases, force=True)
            proofs.append(proof_row(
                spec, args.proof_timeout, args.rlimit,
                progress=lambda d, t, step, what=what, i=i: rep.update(
                    f"{what}, {step} ({d} of {t})", done=i, total=cases),
                jobs=jobs_of(args)))
        rep.update(f"{cases} cases measured", done=cases, total=cases)
        rep.finish("measured", 0, cases=cases)
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


def _run_hier(args: argparse.Namespace) -> int:
    from coherence.commands.common import out_console, reporter
    from coherence.smt.bench import HIER_PROOFS, hier_proof_row

    cases = HIER_PROOFS
    with reporter(args, "coherence bench prove") as rep:
        rep.header(None, {}, "z3", {"proof_timeout": args.proof_timeout,
                                    "rlimit": args.rlimit}, hier=[c["spec"] for c in cases])
        rows = []
        for i, case in enumerate(cases):
            what = f"case {i + 1} of {len(cases)}: prove --agents any --over {case['over']} " \
                   f"{case['spec']}"
            rep.update(what, done=i, total=len(cases), force=True)
            rows.append(hier_proof_row(case, args.proof_timeout, args.rlimit,
                                       progress=lambda d, t, step, what=what, i=i: rep.update(
                                           f"{what}, {step} ({d} of {t})", done=i,
                                           total=len(cases))))
        rep.finish("measured", 0, cases=len(cases))
    if args.json:
        emit_json({"tool": "coherence bench prove --hier", "hier": rows})
        return 0
    out = out_console()
    for r in rows:
        fixed = " ".join(f"{k}={v}" for k, v in r["params"].items())
        out.print(f"proof --agents any --over {r['over']} {r['spec']} ({fixed}): "
                  f"{r['verdict']} in {r['seconds']:.2f} s, {r['proved']} properties "
                  f"({r['detail']})", markup=False)
        for c in r["checker"]:
            size = next(f"{k}={v}" for k, v in c.items() if k not in ("verdict", "states",
                                                                       "seconds"))
            out.print(f"  checker at {size}: {c['verdict']}, {c['states']:,} states in "
                      f"{c['seconds']:.2f} s", markup=False)
    return 0


def _run_infer(args: argparse.Namespace) -> int:
    from coherence.commands.common import out_console, reporter
    from coherence.commands.infer_states import state_source
    from coherence.commands.options import jobs_of
    from coherence.memory import peak_rss_bytes
    from coherence.smt.bench import INFER_SPECS, infer_row
    from coherence.smt.forked import Isolated

    pairs: list[tuple[str, str | None]] = list(INFER_SPECS)
    if args.proofs != DEFAULT_SPECS:
        pairs = [(s, None) for s in args.proofs]
    with reporter(args, "coherence bench prove") as rep:
        rep.header(None, {}, "z3", {"proof_timeout": args.proof_timeout,
                                    "rlimit": args.rlimit}, infer=[s for s, _ in pairs],
                   mine_engine=args.mine_engine)
        rows = []
        for i, (spec, base) in enumerate(pairs):
            what = f"case {i + 1} of {len(pairs)}: prove --infer {spec}"
            rep.update(what, done=i, total=len(pairs), force=True)

            def case(say: Callable[[str], None], spec: str = spec,
                     base: str | None = base) -> dict[str, Any]:
                row = infer_row(spec, base, args.proof_timeout, args.rlimit, progress=say,
                                source=state_source(args.mine_engine), jobs=jobs_of(args))
                # the case's own process (the summary's peak is this one's)
                return {**row, "peak_rss_bytes": peak_rss_bytes()}
            # each case in a forked child: its lines and figures are those `prove --infer`
            # gives alone, whatever ran before it (NOTE(bench-isolated))
            run = Isolated(case, lambda s, what=what, i=i: rep.update(
                f"{what}: {s}", done=i, total=len(pairs)))
            rows.append(run.result())
            if run.failure is not None:
                rep.note(f"{spec}: {run.failure}")
        rep.finish("measured", 0, cases=len(pairs))
    if args.json:
        emit_json({"tool": "coherence bench prove --infer", "infer": rows})
        return 0
    out = out_console()
    out.print(f"processes: {jobs_of(args)} (--jobs)", markup=False)
    out.print("spec | verdict | conjunctions tested | candidates (reachable filter) | never "
              "refuted | support | final | explore s | filter s | Houdini s (queries) | final "
              "proof s | total s | hand-written aux proof s", markup=False)
    for r in rows:
        st = r["stats"]
        sec = st.get("seconds", {})
        base = r.get("baseline")
        out.print(" | ".join(str(x) for x in (
            r["spec"], r["verdict"], st.get("conjunctions_tested", "-"),
            st.get("candidates", "-"), st.get("after_houdini", "-"), st.get("support", "-"),
            st.get("final", "-"), sec.get("explore", "-"), sec.get("filter", "-"),
            f"{sec.get('houdini', '-')} ({st.get('houdini_queries', '-')})",
            sec.get("final_proof", "-"),
            r["seconds"], f"{base['seconds']} ({base['verdict']})" if base else "-")),
            markup=False)
        if r["detail"]:
            out.print(f"  {r['detail']}", markup=False)
    return 0
