"""Which try proves each changed goal of one action of a final proof (results/infer/README.md,
"Session 17"): the action's incremental solver (1 s), then a fresh solver, and separately the
witnessed Venn try (NOTE(count-skolem-venn)). A measurement, not part of the tool.

    python3 results/infer/tries_per_goal.py specs/msi_directory.coh \
        results/infer/msi_directory_houdini.aux "Dir.message GetM in S" --fresh 8
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

import z3

from coherence.smt import interrupt, param
from coherence.smt.param_count import card_terms, venn_axioms
from coherence.spec.load import extend, load_spec
from coherence.spec.select import drop_properties


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("aux")
    ap.add_argument("action", help="a part of the action's label, as the progress stream says it")
    ap.add_argument("--fresh", type=float, default=5.0, help="the fresh solver's cap, s")
    ap.add_argument("--witnessed", type=float, default=5.0, help="the witnessed try's cap, s")
    args = ap.parse_args()
    model = extend(drop_properties(load_spec(args.spec), ["coherent"]), Path(args.aux).read_text())
    ob = param.Obligations(model)
    for g in range(1, ob.groups):
        machine, tr = ob.acts[g - 1]
        label = f"{machine.name}.{param._label(tr)}"
        if args.action not in label:
            continue
        qs = ob.group(g)
        shared = z3.Solver()
        shared.add(*qs[0].quantified[:-1])  # NOTE(count-set-names): as the prover gives it
        grounded = param.Grounded(qs[0])
        counts: Counter[str] = Counter()
        fresh_seconds: list[float] = []
        left: list[str] = []
        witnessed_left: list[str] = []
        for q in qs:
            if q.unchanged:
                counts["unchanged"] += 1
                continue
            interrupt.cap(shared, 1.0)
            if interrupt.check(shared, q.quantified[-1]) == z3.unsat:
                counts["incremental"] += 1
            else:
                fresh = z3.Solver()
                interrupt.cap(fresh, args.fresh)
                fresh.add(*q.quantified)
                t = time.perf_counter()
                if interrupt.check(fresh) == z3.unsat:
                    counts["fresh"] += 1
                    fresh_seconds.append(round(time.perf_counter() - t, 1))
                else:
                    left.append(q.goal)
            goal = grounded.skolemized(q.assertions[-1])
            hyps = q.assertions[:-1]
            witnessed = z3.Solver()
            interrupt.cap(witnessed, args.witnessed)
            if goal is not None:
                witnessed.add(*hyps, goal, *venn_axioms(card_terms([goal, *hyps]), None))
            if goal is not None and interrupt.check(witnessed) == z3.unsat:
                counts["witnessed"] += 1
            else:
                witnessed_left.append(q.goal)
        out = {"action": label, "obligations": len(qs), **counts,
               "fresh_seconds": fresh_seconds, "left": left, "witnessed_left": witnessed_left}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
