"""The final proof's own tries on one obligation (``param._settle``, its order and caps), with
whether the split try (NOTE(goal-split)) was asked and what it answered (session 22:
NOTE(split-quantified-counts)).

    python3 results/infer/settle_one.py specs/msi_directory.coh \\
        results/infer/msi_directory_completed.aux "Cache.message Inv in S" invariant:inferred_30
"""

import json
import sys
import time
from pathlib import Path

import z3

from coherence.smt import param
from coherence.spec.load import extend, load_spec
from coherence.spec.select import drop_properties

spec, aux, action, goal = sys.argv[1:5]
model = extend(drop_properties(load_spec(spec), ["coherent"]), Path(aux).read_text())
ob = param.Obligations(model)
orig_split = param._split


def split(q, budget):
    t = time.perf_counter()
    r = orig_split(q, budget)
    print(
        "split",
        r,
        round(time.perf_counter() - t, 2),
        "before",
        q.before is not None,
        "frame",
        q.frame is not None,
        flush=True,
    )
    return r


param._split = split
for gi in ob.groups_of(action):
    for q in ob.group(gi):
        if q.goal != goal or q.what != f"action {action}":
            continue
        budget = param.Budget(None, None, time.perf_counter())
        t = time.perf_counter()
        shared = z3.Solver()
        shared.add(*q.quantified[:-1])
        r = param._settle(model, q, shared, budget)
        print(
            json.dumps(
                {
                    "answer": str(r[0]),
                    "cti": r[1] is not None,
                    "why": r[2],
                    "s": round(time.perf_counter() - t, 1),
                }
            ),
            flush=True,
        )
