"""What a resumed proof for every N still has to ask: per action, its obligations, the frames
(settled without Z3), those a --proof-cache file settles, and those left. A measurement, not
part of the tool (the proof itself reads the cache the same way, ``ProofCache.look``).

    PYTHONHASHSEED=0 python3 results/infer/cache_left.py specs/msi_directory.coh \\
        results/infer/msi_directory_s25.aux CACHE
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from coherence.smt.param import Obligations
from coherence.smt.proof_cache import ProofCache
from coherence.spec.load import extend, load_spec
from coherence.spec.select import drop_properties


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("aux")
    ap.add_argument("cache")
    ap.add_argument("--goals", type=Path, help="write the goals left, one JSON line per action")
    args = ap.parse_args()
    model = extend(drop_properties(load_spec(args.spec), ["coherent"]),
                   Path(args.aux).read_text(encoding="utf-8"))
    ob = Obligations(model)
    cache = ProofCache(args.cache)
    sums = [0, 0, 0, 0]
    left: list[dict[str, object]] = []
    print("| action | obligations | frames | in the cache | left |\n|---|---|---|---|---|")
    for g in range(ob.groups):
        qs = ob.group(g)
        frames = sum(q.unchanged for q in qs)
        open_goals = [q.goal for q in qs
                      if not q.unchanged and not cache.look(q.assertions, q.anchor).found]
        cached = len(qs) - frames - len(open_goals)
        row = [len(qs), frames, cached, len(open_goals)]
        if open_goals:
            left.append({"action": qs[0].what, "group": g, "goals": open_goals})
        sums = [a + b for a, b in zip(sums, row, strict=True)]
        print(f"| {'init' if g == 0 else ob.label(g)} | " + " | ".join(map(str, row)) + " |")
    print("| all | " + " | ".join(map(str, sums)) + " |")
    if args.goals is not None:
        args.goals.write_text("".join(json.dumps(row) + "\n" for row in left), encoding="utf-8")


if __name__ == "__main__":
    main()
