"""One fresh solver per obligation, capped at SECONDS: the final proof's plainest try, on
obligations named ACTION|GOAL (session 22: before and after NOTE(home-sources)).

    python3 results/infer/fresh_tries.py specs/msi_directory.coh \\
        results/infer/msi_directory_completed.aux 30 "Inv in S|invariant:inferred_41"
"""

import json
import sys
import time
from pathlib import Path

import z3

from coherence.smt import interrupt, param
from coherence.spec.load import extend, load_spec
from coherence.spec.select import drop_properties

spec, aux, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
pairs = [a.split("|") for a in sys.argv[4:]]
model = extend(drop_properties(load_spec(spec), ["coherent"]), Path(aux).read_text())
ob = param.Obligations(model)
for gi in range(1, ob.groups):
    m, tr = ob.acts[gi - 1]
    act = f"{m.name}.{param._label(tr)}"
    goals = [g for a, g in pairs if act.endswith(a)]
    if not goals:
        continue
    for q in ob.group(gi):
        if q.goal not in goals or q.what != f"action {act}":
            continue
        s = z3.Solver()
        s.add(*q.quantified)
        interrupt.cap(s, secs)
        t = time.perf_counter()
        r = interrupt.check(s)
        print(
            json.dumps(
                {
                    "action": act,
                    "goal": q.goal,
                    "fresh": str(r),
                    "s": round(time.perf_counter() - t, 2),
                }
            ),
            flush=True,
        )
