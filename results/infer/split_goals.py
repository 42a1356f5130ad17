"""The split try (NOTE(goal-split), ``coherence/smt/goal_split.py``) alone on every changed goal
of one action of a spec with aux lines, each with the caps the proof gives it (1 s per part
from the small context, 5 s from every hypothesis). A measurement, not part of the tool
(results/infer/README.md, "Session 20").

    python3 results/infer/split_goals.py specs/msi_directory.coh \\
        results/infer/msi_directory_houdini.aux "Dir.message GetM in S" [GOAL]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from coherence.smt import goal_split, param
from coherence.spec.load import extend, load_spec
from coherence.spec.select import drop_properties


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("aux")
    ap.add_argument("action", help="the action's label as the progress stream ends it")
    ap.add_argument("goal", nargs="?", help="one goal only, e.g. invariant:inferred_38")
    args = ap.parse_args()
    model = extend(drop_properties(load_spec(args.spec), ["coherent"]),
                   Path(args.aux).read_text())
    ob = param.Obligations(model)
    total = proved = 0
    seconds = 0.0
    for g in range(1, ob.groups):
        machine, tr = ob.acts[g - 1]
        if not f"{machine.name}.{param._label(tr)}".endswith(args.action):
            continue
        for q in ob.group(g):
            if q.before is None or q.frame is None or q.unchanged or (
                    args.goal and q.goal != args.goal):
                continue
            began = time.perf_counter()
            ok = goal_split.proves(q.frame, q.assertions[:-1], q.assertions[-1].arg(0),
                                   q.before, goal_split.wall_check, param.SPLIT_SMALL_SECONDS,
                                   param.SPLIT_FULL_SECONDS)
            took = time.perf_counter() - began
            total, proved, seconds = total + 1, proved + ok, seconds + took
            print(json.dumps({"goal": q.goal, "proved": ok, "seconds": round(took, 2)}),
                  flush=True)
    print(json.dumps({"goals": total, "proved": proved, "seconds": round(seconds, 1)}))


if __name__ == "__main__":
    main()
