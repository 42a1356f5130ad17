"""NOTE(finite-core) per goal of one action of a final proof: the hypotheses its instance at 4
agents uses (``FiniteCore.hypotheses``), then the quantified query with only those
(``FiniteCore.restricted``) on a fresh solver capped at ``--seconds``. A measurement, not part
of the tool (results/infer/README.md, "Session 27").

    PYTHONHASHSEED=0 python3 results/infer/core_per_goal.py specs/msi_directory.coh \\
        results/infer/msi_directory_s25.aux "Cache.message FwdGetS in M" --seconds 10
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

import z3

from coherence.smt import interrupt, param
from coherence.spec.load import extend, load_spec
from coherence.spec.select import drop_properties


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("aux")
    ap.add_argument("action", help="the action's label, as `Machine.label`")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rlimit", type=int, default=param.CORE_RLIMIT)
    args = ap.parse_args()
    model = extend(drop_properties(load_spec(args.spec), ["coherent"]),
                   Path(args.aux).read_text())
    ob = param.Obligations(model)
    core = ob.finite_core()
    began = time.perf_counter()
    core.ob  # noqa: B018 (built here, to time it)
    print(json.dumps({"fixed size built s": round(time.perf_counter() - began, 1)}), flush=True)
    tally: Counter[str] = Counter()
    for g in ob.groups_of(args.action):
        for q in ob.group(g):
            if q.unchanged:
                continue
            began = time.perf_counter()
            keep = core.hypotheses(q, args.rlimit)
            row = {"goal": q.goal, "key": list(q.key),
                   "core s": round(time.perf_counter() - began, 2),
                   "hypotheses": None if keep is None else len(keep)}
            if keep is not None:
                solver = z3.Solver()
                interrupt.cap(solver, args.seconds)
                solver.add(*core.restricted(q, keep).quantified)
                began = time.perf_counter()
                row["answer"] = str(interrupt.check(solver))
                row["s"] = round(time.perf_counter() - began, 2)
            tally[row.get("answer", "no core")] += 1
            print(json.dumps(row), flush=True)
    print(json.dumps({"of": len(ob.inv), **tally}), flush=True)


if __name__ == "__main__":
    main()
