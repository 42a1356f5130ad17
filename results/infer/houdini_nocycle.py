"""Mine a spec at 2 and 3 agents as ``--infer`` does, leave out the cycle clauses
(NOTE(cycle-clauses)) and run Houdini at ``--agents`` (default 4; at that size directly, unless
``--select-at``): whether every target is kept, and the lines chosen, written to OUT as
``invariant aux`` lines (results/infer/README.md, "Session 31"). The final proof is not run;
give OUT to ``prove --aux`` for it. A measurement, not part of the tool.

    PYTHONHASHSEED=0 python3 results/infer/houdini_nocycle.py \\
        tests/specs/infer/msi_home_acks.coh results/infer/msi_home_acks_s31.aux
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from coherence.smt.infer import InferOptions
from coherence.smt.infer_finite import houdini_finite
from coherence.smt.infer_mine import closes_cycle, mine
from coherence.spec.load import load_spec
from coherence.spec.select import drop_properties


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("out")
    ap.add_argument("--skip", action="append", default=["coherent"])
    ap.add_argument("--agents", type=int, default=4, help="Houdini's instance (--houdini-agents)")
    ap.add_argument("--select-at", type=int, default=None,
                    help="choose at this size first (--infer: 3; default: at 4 directly)")
    args = ap.parse_args()
    model = drop_properties(load_spec(args.spec), args.skip)
    t0 = time.perf_counter()
    opts = InferOptions()
    cands, _stats, tpl = mine(model, sizes=opts.sizes, max_literals=opts.literals)
    cycles = [c.text for c in cands if closes_cycle(c)]
    kept = [c for c in cands if not closes_cycle(c)]
    print(len(cands), "candidates,", len(cycles), "cycle clauses left out:", cycles, flush=True)
    t1 = time.perf_counter()
    result = houdini_finite(model, kept, tpl, args.agents, select_at=args.select_at,
                            progress=lambda s: print(f"[{time.perf_counter() - t0:.0f}s] {s}",
                                                     flush=True))
    t2 = time.perf_counter()
    chosen = [kept[k] for k in result.support]
    print(json.dumps({"mine_s": round(t1 - t0, 1), "houdini_s": round(t2 - t1, 1),
                      "failed": result.failed, "lines": len(chosen), "stats": result.stats},
                     default=str), flush=True)
    Path(args.out).write_text("".join(f"invariant aux inferred_{k + 1}: {c.text};\n"
                                      for k, c in enumerate(chosen)), encoding="utf-8")


if __name__ == "__main__":
    main()
