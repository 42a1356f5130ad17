"""Old (stateful) fuzz and old protocol_test defaults on every mutant: examples/time to failure."""
import json, sys, time
from pathlib import Path
from coherence.spec.load import load_spec
from coherence.testing.fuzz import fuzz
root = Path(sys.argv[1])
specs = [root / "specs/broadcast_invalidate.coh", *sorted((root / "specs/mutants").glob("*.coh"))]
for s in specs:
    model = load_spec(str(s), {})
    for seed in range(3):
        for label, budget in (("fuzz", 1000), ("pytest-old-defaults", 100)):
            if label != "fuzz" and seed: continue
            r = fuzz(model, seed=seed, budget=budget, steps=50)
            print(json.dumps({"spec": s.stem, "path": label, "seed": seed, "found": r.failure is not None,
                              "examples_to_failure": r.stats.examples_to_failure,
                              "s_to_failure": r.stats.seconds_to_failure, "examples": r.stats.examples,
                              "seconds": round(r.seconds, 3), "prop": r.failure.name if r.failure else None}), flush=True)
