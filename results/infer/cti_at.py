"""A concrete counterexample to induction of one obligation at a given number of agents
(``param_cti.find_cti``, its model replayed in the reference semantics: a pre-state that
breaks no invariant there, one action, the goal false after it), with the search's caps
raised. For the goals ``finite_sizes.py`` finds satisfiable at 5 agents. A measurement, not
part of the tool (results/infer/README.md, "Session 29").

    PYTHONHASHSEED=0 python3 results/infer/cti_at.py specs/msi_directory.coh \\
        results/infer/msi_directory_s25.aux "Cache.message FwdGetS in M" \\
        --goal invariant:inferred_9 --agents 5
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from coherence.smt import param, param_cti
from coherence.spec.load import extend, load_spec
from coherence.spec.select import drop_properties


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("aux")
    ap.add_argument("action", help="the action's label, as `Machine.label`")
    ap.add_argument("--goal", action="append", required=True)
    ap.add_argument("--agents", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=1200.0)
    args = ap.parse_args()
    param.CTI_SECONDS = args.seconds
    param_cti.MAX_UNROLLED = 20_000_000
    model = extend(drop_properties(load_spec(args.spec), ["coherent"]),
                   Path(args.aux).read_text(encoding="utf-8"))
    ob = param.Obligations(model)
    budget = param.Budget(None, None, time.perf_counter())
    for g in ob.groups_of(args.action):
        for q in ob.group(g):
            if q.unchanged or q.goal not in args.goal:
                continue
            began = time.perf_counter()
            try:
                cti = param_cti.find_cti(model, q, budget, range(args.agents, args.agents + 1))
                found = None if cti is None else str(cti)
            except Exception as e:  # a measurement: a failed replay is the answer
                found = f"{type(e).__name__}: {e}"
            print(json.dumps({"group": g, "key": list(q.key), "agents": args.agents,
                              "cti": found, "seconds": round(time.perf_counter() - began, 1)}),
                  flush=True)


if __name__ == "__main__":
    main()
