"""Seconds to mine a spec (compiled search, sizes 2 and 3) and to encode Houdini's cutoff
instance with its atom terms (session 23, NOTE(infer-endpoint-atoms)).

    PYTHONHASHSEED=0 python3 results/infer/encode_time.py specs/msi_directory.coh [AGENTS]
"""

import sys
import time

from coherence.commands.infer_states import compiled_states
from coherence.smt import infer_finite, infer_mine
from coherence.spec.load import load_spec
from coherence.spec.select import drop_properties

model = drop_properties(load_spec(sys.argv[1]), ["coherent"])
t = time.perf_counter()
cands, _stats, tpl = infer_mine.mine(model, source=compiled_states)
print("mine", round(time.perf_counter() - t, 2), "s,", len(cands), "candidates", flush=True)
t = time.perf_counter()
infer_finite.encode_instance(model, tpl, int(sys.argv[2]) if len(sys.argv) > 2 else 4)
print("encode", round(time.perf_counter() - t, 2), "s", flush=True)
