"""One round of Houdini at a fixed size, action by action: which of an aux file's lines (and
the spec's invariants) some step at N agents breaks from a state satisfying all of them
(``FiniteCore.broken``: one quantifier-free query per model, not per goal). A line broken here
is not inductive at N, so the proof for every N cannot use it; none broken in any action: the
set is inductive at N. A measurement, not part of the tool (results/infer/README.md,
"Session 30").

    PYTHONHASHSEED=0 python3 results/infer/finite_round.py specs/msi_directory.coh \\
        results/infer/msi_directory_s25.aux --agents 5 --share 0/16
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from coherence.smt import param
from coherence.smt.finite_core import FiniteCore
from coherence.spec.load import extend, load_spec
from coherence.spec.select import drop_properties


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("aux")
    ap.add_argument("--agents", type=int, default=5)
    ap.add_argument("--share", default="0/1",
                    help="K/N: every Nth group from the Kth (of --groups when given)")
    ap.add_argument("--groups", default="", help="comma-separated group numbers (default all)")
    ap.add_argument("--action", action="append", default=[], help="only these labels")
    ap.add_argument("--rlimit", type=int, default=20_000_000_000)
    ap.add_argument("--skip", action="append", default=[], help="e.g. coherent")
    args = ap.parse_args()
    model = extend(drop_properties(load_spec(args.spec), args.skip),
                   Path(args.aux).read_text(encoding="utf-8"))
    ob = param.Obligations(model)
    k, n = (int(x) for x in args.share.split("/"))
    core = FiniteCore(ob, args.agents)
    groups = ([int(x) for x in args.groups.split(",")] if args.groups
              else list(range(1, ob.groups)))
    for at, g in enumerate(groups):
        if at % n != k or (args.action and ob.label(g) not in args.action):
            continue
        began = time.perf_counter()
        qs = ob.group(g)
        built = time.perf_counter() - began
        broken, last = core.broken(qs, args.rlimit)
        print(json.dumps({"agents": args.agents, "group": g, "action": ob.label(g),
                          "goals": len(qs), "broken": broken, "last": str(last),
                          "build_s": round(built, 1),
                          "seconds": round(time.perf_counter() - began, 1)}), flush=True)


if __name__ == "__main__":
    main()
