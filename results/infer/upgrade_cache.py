"""Upgrade a proof cache's format-3 records (exact digests) to format 4 (NOTE(proof-cache-
subsets)) without proving anything: build every obligation of SPEC with AUX appended, look
each up, and record as format 4 each one a format-3 record settles. A run of ``prove`` does the
same for each obligation it meets, but also tries to prove the others.

    python3 results/infer/upgrade_cache.py specs/msi_directory.coh \\
        results/infer/msi_directory_houdini.aux results/infer/msi_directory.proof-cache
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from coherence.smt import param
from coherence.smt.proof_cache import ProofCache
from coherence.spec.load import extend, load_spec
from coherence.spec.select import drop_properties


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("aux")
    ap.add_argument("cache")
    ap.add_argument("--skip", action="append", default=["coherent"])
    args = ap.parse_args()
    model = extend(drop_properties(load_spec(args.spec), args.skip), Path(args.aux).read_text())
    cache = ProofCache(args.cache)
    ob = param.Obligations(model)
    t0 = time.perf_counter()
    seen = found = upgraded = no_entry = 0
    for g in range(ob.groups):
        for q in ob.group(g):
            seen += 1
            look = cache.look(q.assertions, q.anchor)
            no_entry += look.entry is None
            if look.found:
                found += 1
                if look.entry is not None and not cache.covers(look.entry):
                    upgraded += 1
                cache.record(look, q.goal, q.what, 0.0, model.file)
        print(f"group {g} of {ob.groups}: {seen} obligations, {found} settled, {upgraded} "
              f"upgraded, {no_entry} without an entry ({time.perf_counter() - t0:.0f} s)",
              flush=True)


if __name__ == "__main__":
    main()
