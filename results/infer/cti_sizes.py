"""The CTI search of the final proof at each size from LO to HI agents, alone, on one
obligation (session 22: MSI's `inferred_84` at `Store in S`, none at 4, 5 or 6 agents).

    python3 results/infer/cti_sizes.py specs/msi_directory.coh \\
        results/infer/msi_directory_completed.aux "Cache.event Store in S" \\
        invariant:inferred_84 4 6 400
"""

import json
import sys
import time
from pathlib import Path

from coherence.smt import param
from coherence.smt.param_cti import find_cti
from coherence.spec.load import extend, load_spec
from coherence.spec.select import drop_properties

spec, aux, action, goal, lo, hi, secs = sys.argv[1:8]
model = extend(drop_properties(load_spec(spec), ["coherent"]), Path(aux).read_text())
ob = param.Obligations(model)
param.CTI_SECONDS = float(secs)
for g in range(1, ob.groups):
    machine, tr = ob.acts[g - 1]
    if not f"{machine.name}.{param._label(tr)}".endswith(action):
        continue
    for q in ob.group(g):
        if q.goal != goal:
            continue
        for n in range(int(lo), int(hi) + 1):
            t = time.perf_counter()
            cti = find_cti(model, q, param.Budget(None, None, time.perf_counter()), range(n, n + 1))
            print(
                json.dumps(
                    {"agents": n, "found": cti is not None, "s": round(time.perf_counter() - t, 1)}
                ),
                flush=True,
            )
            if cti is not None:
                print(cti.summary)
                print(cti.pre)
                break
