"""Every try of the final proof, alone and with a budget of its own, on one obligation of a
spec with aux lines: the fresh solver, the fresh solver with the action's "no duplicate send"
(its one-message-per-kind obligation) as a lemma, the ground try, the witnessed Venn try, and
the CTI search at 1-2 and 3-4 agents. A measurement, not part of the tool (results/infer/
README.md, "Session 19": MSI's `inferred_38` at `Dir.message GetM in S`).

    python3 results/infer/one_obligation.py specs/msi_directory.coh \\
        results/infer/msi_directory_houdini.aux "Dir.message GetM in S" invariant:inferred_38 \\
        --seconds 150

``--cti-only``: the two CTI searches alone, printing the counterexample found (session 20:
`invariant:inferred_150` at the same action, one at 1 agent in 55 s).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import z3

from coherence.smt import interrupt, param
from coherence.smt.param_cti import find_cti
from coherence.spec.load import extend, load_spec
from coherence.spec.select import drop_properties


def _fresh(assertions: list[Any], seconds: float) -> str:
    solver = z3.Solver()
    interrupt.cap(solver, seconds)
    solver.add(*assertions)
    return str(interrupt.check(solver))


def _timed(what: str, run: Any) -> None:
    t = time.perf_counter()
    answer = run()
    print(json.dumps({"try": what, "answer": answer,
                      "seconds": round(time.perf_counter() - t, 1)}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("aux")
    ap.add_argument("action", help="the action's label as the progress stream ends it")
    ap.add_argument("goal", help="the obligation's property, e.g. invariant:inferred_38")
    ap.add_argument("--seconds", type=float, default=60.0, help="each try's cap")
    ap.add_argument("--cti-only", action="store_true",
                    help="only the CTI searches (printing a counterexample found)")
    args = ap.parse_args()
    model = extend(drop_properties(load_spec(args.spec), ["coherent"]),
                   Path(args.aux).read_text())
    ob = param.Obligations(model)
    for g in range(1, ob.groups):
        machine, tr = ob.acts[g - 1]
        if not f"{machine.name}.{param._label(tr)}".endswith(args.action):
            continue
        qs = ob.group(g)
        lemma = [z3.Not(d.quantified[-1]) for d in qs if d.goal == param.ONE_PER_KIND]
        for q in (q for q in qs if q.goal == args.goal):
            if args.cti_only:
                _ctis(model, q, args.seconds)
                continue
            _timed("fresh", lambda q=q: _fresh(q.quantified, args.seconds))
            _timed("fresh + no duplicate send",
                   lambda q=q, lemma=lemma: _fresh([*q.quantified, *lemma], args.seconds))
            grounded = param.Grounded(q)
            grounded.deadline = time.perf_counter() + args.seconds
            _timed("ground", lambda q=q, gr=grounded: str(gr.proves(q.assertions[-1])))
            budget = param.Budget(None, None, time.perf_counter())
            _timed("witnessed", lambda q=q, gr=grounded, b=budget: str(
                param._skolem_venn(q, gr, b)))
            _ctis(model, q, args.seconds)


def _ctis(model: Any, q: param.Query, seconds: float) -> None:
    param.CTI_SECONDS = seconds
    found: list[Any] = []

    def search(sizes: range) -> str:
        cti = find_cti(model, q, param.Budget(None, None, time.perf_counter()), sizes)
        found.append(cti)
        return "found" if cti is not None else "none"

    for sizes in (range(1, 3), range(3, 5)):
        _timed(f"CTI search {sizes.start}-{sizes.stop - 1} agents",
               lambda s=sizes: search(s))
        if found[-1] is not None:
            print(json.dumps({"summary": found[-1].summary, "pre": found[-1].pre,
                              "step": found[-1].step.event}), flush=True)
            return


if __name__ == "__main__":
    main()
