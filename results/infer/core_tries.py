"""NOTE(finite-core) on the goals the core try leaves: per goal of one action, the core at 4
agents and its restricted query asked by a fresh solver, part by part (``_split``), by the
witnessed Venn try, by the ground try (``Grounded``), then the core at 5 agents and its
restricted query. A measurement, not part of the tool (results/infer/README.md, "Session 28").

    PYTHONHASHSEED=0 python3 results/infer/core_tries.py specs/msi_directory.coh \\
        results/infer/msi_directory_s25.aux "Cache.message FwdGetS in M" \\
        --goal invariant:inferred_36 --goal invariant:inferred_9 --seconds 10
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import z3

from coherence.smt import interrupt, param
from coherence.smt.finite_core import FiniteCore
from coherence.spec.load import extend, load_spec
from coherence.spec.select import drop_properties


def _timed(row: dict[str, Any], name: str, run: Callable[[], Any]) -> Any:
    began = time.perf_counter()
    try:
        out = run()
    except Exception as e:  # noqa: BLE001 (a measurement: the error is the answer)
        out = f"error: {e}"[:120]
    row[name] = [str(out), round(time.perf_counter() - began, 2)]
    return out


def _fresh(q: param.Query, seconds: float) -> Any:
    solver = z3.Solver()
    interrupt.cap(solver, seconds)
    solver.add(*q.quantified)
    return interrupt.check(solver)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("aux")
    ap.add_argument("action", help="the action's label, as `Machine.label`")
    ap.add_argument("--goal", action="append", default=[])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--five", action="store_true", help="also the core at 5 agents")
    args = ap.parse_args()
    model = extend(drop_properties(load_spec(args.spec), ["coherent"]),
                   Path(args.aux).read_text())
    ob = param.Obligations(model)
    budget = param.Budget(None, None, time.perf_counter())
    cores = {4: FiniteCore(ob, 4), **({5: FiniteCore(ob, 5)} if args.five else {})}
    for g in ob.groups_of(args.action):
        for q in ob.group(g):
            if q.unchanged or (args.goal and q.goal not in args.goal):
                continue
            row: dict[str, Any] = {"goal": q.goal, "key": list(q.key)}
            for agents, core in cores.items():
                keep = _timed(row, f"core{agents}",
                              lambda core=core: core.hypotheses(q, param.CORE_RLIMIT))
                if not isinstance(keep, list):
                    continue
                row[f"core{agents} size"] = len(keep)
                small = core.restricted(q, keep)
                if _timed(row, f"fresh{agents}",
                          lambda small=small: _fresh(small, args.seconds)) == z3.unsat:
                    continue
                if agents == 4:
                    _timed(row, "split", lambda small=small: param._split(small, budget))
                    grounded = param.Grounded(small)
                    _timed(row, "venn", lambda small=small, grounded=grounded:
                           param._skolem_venn(small, grounded, budget))
                    grounded.deadline = budget.deadline(param.GROUND_SECONDS)
                    _timed(row, "ground", lambda small=small, grounded=grounded:
                           grounded.proves(small.assertions[-1]))
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
