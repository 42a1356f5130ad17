"""Whether a goal the final proof leaves unknown is false at a fixed size: its obligation
built with every agent quantifier ranging over N agents (NOTE(finite-core)), quantifier-free,
asked with all its hypotheses. ``unsat`` at N: no counterexample to induction with N agents;
``sat``: one exists, and the aux lines are not inductive (the proof for every N cannot
succeed without more lines). A measurement, not part of the tool (results/infer/README.md,
"Session 29").

    PYTHONHASHSEED=0 python3 results/infer/finite_sizes.py specs/msi_directory.coh \\
        results/infer/msi_directory_s25.aux "Cache.message FwdGetS in M" \\
        --goal invariant:inferred_64 --sizes 4,5,6
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import z3

from coherence.smt import param
from coherence.smt.finite_core import FiniteCore
from coherence.spec.load import extend, load_spec
from coherence.spec.select import drop_properties


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("aux")
    ap.add_argument("action", help="the action's label, as `Machine.label`")
    ap.add_argument("--goal", action="append", default=[], help="default: every goal")
    ap.add_argument("--sizes", default="5", help="comma-separated agent counts")
    ap.add_argument("--rlimit", type=int, default=2_000_000_000)
    args = ap.parse_args()
    model = extend(drop_properties(load_spec(args.spec), ["coherent"]),
                   Path(args.aux).read_text(encoding="utf-8"))
    ob = param.Obligations(model)
    for n in (int(x) for x in args.sizes.split(",")):
        core = FiniteCore(ob, n)
        for g in ob.groups_of(args.action):
            for q in ob.group(g):
                if q.unchanged or (args.goal and q.goal not in args.goal):
                    continue
                began = time.perf_counter()
                seen: dict[str, Any] = {}

                def read(answer: Any, solver: Any, _tracks: list[Any], _fq: Any,
                         seen: dict[str, Any] = seen) -> None:
                    seen["why"] = solver.reason_unknown() if answer == z3.unknown else ""
                    seen["core"] = len(solver.unsat_core()) if answer == z3.unsat else None
                answer = core.ask(q, args.rlimit, read=read)
                if answer is None:
                    continue
                row = {"agents": n, "group": g, "key": list(q.key), "goal": q.goal,
                       "answer": str(answer), **seen,
                       "seconds": round(time.perf_counter() - began, 1)}
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
