"""Houdini (``infer_finite.houdini_finite``) over a given set of lines instead of every mined
candidate: which of an aux file's lines stay, with the spec's own invariants, inductive at a
fixed size, and whether the targets survive. The lines must be among the mined candidates
(their text is matched). A measurement, not part of the tool (results/infer/README.md,
"Session 30").

    PYTHONHASHSEED=0 python3 results/infer/houdini_subset.py specs/msi_directory.coh \\
        results/infer/msi_directory_s25.aux --agents 5 --select-at 4 --out kept.aux
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

from coherence.commands.infer_states import compiled_states
from coherence.smt.infer import InferOptions
from coherence.smt.infer_finite import houdini_finite
from coherence.smt.infer_mine import mine
from coherence.spec.load import load_spec
from coherence.spec.select import drop_properties

LINE = re.compile(r"^invariant aux (\w+): (.*);\s*$")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("aux")
    ap.add_argument("--agents", type=int, default=4, help="Houdini's instance")
    ap.add_argument("--select-at", type=int, default=None, help="the size chosen at first")
    ap.add_argument("--without", action="append", default=[], help="a line's name to leave out")
    ap.add_argument("--skip", action="append", default=["coherent"])
    ap.add_argument("--out", help="the kept lines, as an aux file")
    args = ap.parse_args()
    model = drop_properties(load_spec(args.spec), args.skip)
    named = {}
    for text in Path(args.aux).read_text(encoding="utf-8").splitlines():
        m = LINE.match(text)
        if m and m.group(1) not in args.without:
            named[m.group(2)] = m.group(1)
    opts = InferOptions()
    t0 = time.perf_counter()
    cands, _stats, tpl = mine(model, opts.sizes, opts.max_states, opts.explore_seconds,
                              opts.literals, source=compiled_states)
    sub = [c for c in cands if c.text in named]
    missing = set(named) - {c.text for c in sub}
    print(json.dumps({"mined": len(cands), "lines": len(named), "matched": len(sub),
                      "not_mined": sorted(named[t] for t in missing),
                      "seconds": round(time.perf_counter() - t0, 1)}), flush=True)
    h = houdini_finite(model, sub, tpl, args.agents, select_at=args.select_at,
                       progress=lambda s: print(json.dumps({"t": round(time.perf_counter() - t0),
                                                            "say": s}), flush=True))
    kept = [named[sub[k].text] for k in h.support]
    dropped = sorted(named[c.text] for k, c in enumerate(sub) if k not in set(h.alive))
    print(json.dumps({"alive": len(h.alive), "support": kept, "dropped": dropped,
                      "failed": h.failed, "stats": h.stats,
                      "seconds": round(time.perf_counter() - t0, 1)}), flush=True)
    if args.out:
        Path(args.out).write_text("".join(f"invariant aux {named[sub[k].text]}: {sub[k].text};\n"
                                          for k in h.support), encoding="utf-8")


if __name__ == "__main__":
    main()
