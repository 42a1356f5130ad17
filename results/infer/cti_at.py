"""A concrete counterexample to induction of one obligation at each size given, with a longer
search than the proof's (``param_cti.find_cti``, CTI_SECONDS raised): whether an obligation the
proof leaves unknown is false at 5 or 6 agents, where the proof's search (1-4) never looks. A
measurement, not part of the tool (results/infer/README.md, "Session 24").

    PYTHONHASHSEED=0 python3 results/infer/cti_at.py specs/msi_directory.coh \\
        results/infer/msi_directory_plus.aux "Cache.message Inv in S" invariant:putback_34 \\
        --sizes 5 6 --seconds 300
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
    ap.add_argument("action")
    ap.add_argument("goal")
    ap.add_argument("--sizes", type=int, nargs="+", default=[5])
    ap.add_argument("--seconds", type=float, default=300.0)
    args = ap.parse_args()
    model = extend(drop_properties(load_spec(args.spec), ["coherent"]),
                   Path(args.aux).read_text())
    ob = param.Obligations(model)
    param.CTI_SECONDS = args.seconds
    for g in ob.groups_of(args.action):
        for q in ob.group(g):
            if q.goal != args.goal:
                continue
            for k in args.sizes:
                began = time.perf_counter()
                budget = param.Budget(None, None, began)
                cti = param_cti.find_cti(model, q, budget, range(k, k + 1))
                print(json.dumps({"agents": k, "cti": cti is not None,
                                  "s": round(time.perf_counter() - began, 1),
                                  "pre": None if cti is None else str(cti.pre)[:4000]}),
                      flush=True)


if __name__ == "__main__":
    main()
