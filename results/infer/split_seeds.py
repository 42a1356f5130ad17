"""NOTE(split-witness-axioms), measured: for each part of one obligation's split that the small
context leaves open, the query with every hypothesis alone, with the existentials' instances
(``body(t) -> exists``), with the hypotheses at the part's witnesses, and with both, each
under several Z3 random seeds and a 5 s cap; then ``param._split`` itself at each budget
given ("wall" or Z3 units). A measurement, not part of the tool (results/infer/README.md,
"Session 24").

    PYTHONHASHSEED=0 python3 results/infer/split_seeds.py specs/msi_directory.coh \\
        results/infer/msi_directory_putback.aux "Cache.message Inv in S" \\
        invariant:inferred_51 [--extra FILE] [--budgets wall 150000000 600000000]
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path
from typing import Any

import z3

from coherence.smt import goal_split, param
from coherence.smt.nodes import node_constants
from coherence.spec.load import extend, load_spec
from coherence.spec.select import drop_properties


def _seeded(assertions: list[Any], seconds: float, seed: int) -> str:
    solver = z3.Solver()
    solver.set("random_seed", seed)
    solver.set("timeout", int(seconds * 1000))
    solver.add(*assertions)
    began = time.perf_counter()
    answer = solver.check()
    return f"{answer}/{time.perf_counter() - began:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("aux")
    ap.add_argument("action")
    ap.add_argument("goal")
    ap.add_argument("--extra", help="more aux lines (a file), appended to AUX")
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--budgets", nargs="*", default=[])
    args = ap.parse_args()
    text = Path(args.aux).read_text() + (Path(args.extra).read_text() if args.extra else "")
    model = extend(drop_properties(load_spec(args.spec), ["coherent"]), text)
    ob = param.Obligations(model)
    [q] = [q for g in ob.groups_of(args.action) for q in ob.group(g)
           if q.goal == args.goal and q.what == f"action {args.action}"]
    assert q.before is not None and q.frame is not None
    split = goal_split.parts(q.assertions[-1].arg(0), q.before)
    assert split is not None
    full, nat = q.assertions[:-1], goal_split.naturals()
    for n, part in enumerate(split):
        known = [part.before] if part.before is not None else []
        small = [*q.frame, *known, *nat, part.refuted]
        if _seeded(small, 1.0, 0).startswith("unsat"):
            continue
        terms = node_constants(z3.And(*q.frame, part.refuted))
        frame = {t.get_id() for t in node_constants(z3.And(*q.frame))}
        own = [t for t in terms if t.get_id() not in frame]
        exists = [z3.Implies(z3.substitute_vars(e.body(), *reversed(combo)), e)
                  for e in goal_split._closed_exists(part.refuted)
                  for combo in itertools.product(terms, repeat=e.num_vars())]
        at = [x for h in full for c in goal_split.conjuncts(h) for x in goal_split._at(c, own)]
        base = [*full, *known, *nat, part.refuted]
        for name, extra in (("every hypothesis", []), ("+ existentials", exists),
                            ("+ at the witnesses", at), ("+ both", [*exists, *at])):
            print(json.dumps({"part": n, "query": name, "axioms": len(extra),
                              "answers": [_seeded([*base, *extra], 5.0, s)
                                          for s in range(args.seeds)]}), flush=True)
    for b in args.budgets:
        rlimit = None if b == "wall" else int(b)
        began = time.perf_counter()
        proved = param._split(q, param.Budget(None, rlimit, began))
        print(json.dumps({"split": b, "proved": proved,
                          "s": round(time.perf_counter() - began, 1)}), flush=True)


if __name__ == "__main__":
    main()
