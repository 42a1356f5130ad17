"""NOTE(error-split) up close: the error obligations of one action ("action j errs after
this one") split into their places, each asked of the small context (the action, the domain
and the same place's error before the action) and, where that leaves it open, of every
hypothesis. ``--old-witnesses``: the error before at the witnesses of the ``no_error``
hypothesis (``e{j}|self``), as the obligation held it before session 33. A measurement, not
part of the tool (results/infer/README.md, "Session 33").

    PYTHONHASHSEED=0 python3 results/infer/error_parts.py specs/msi_directory.coh \\
        results/infer/msi_directory_s30.aux "Cache.event Evict in S" "InvAck in IM_AD"
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import z3

from coherence.smt import param
from coherence.smt.goal_split import naturals, parts
from coherence.spec.load import extend, load_spec
from coherence.spec.select import drop_properties


def _check(assertions: list[object], seconds: float) -> tuple[str, float]:
    solver = z3.Solver()
    solver.set("timeout", int(seconds * 1000))
    solver.add(*assertions)
    began = time.perf_counter()
    return str(solver.check()), round(time.perf_counter() - began, 2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("aux")
    ap.add_argument("action", help="the action's label, as `Machine.label`")
    ap.add_argument("erring", help="a substring of the erring action's label")
    ap.add_argument("--old-witnesses", action="store_true")
    ap.add_argument("--small-seconds", type=float, default=5.0)
    ap.add_argument("--full-seconds", type=float, default=20.0)
    args = ap.parse_args()
    model = extend(drop_properties(load_spec(args.spec), ["coherent"]),
                   Path(args.aux).read_text(encoding="utf-8"))
    ob = param.Obligations(model)
    errs = dict(ob.errs)
    for g in ob.groups_of(args.action):
        for q in ob.group(g):
            if q.goal != "error:error" or q.unchanged or "(then " not in q.what \
                    or args.erring not in q.what.split("(then ")[1]:
                continue
            before = z3.Not(errs[q.key[2]]) if args.old_witnesses else q.before
            split = parts(z3.Not(q.assertions[-1]), before, whole=True) or []
            print(json.dumps({"what": q.what, "places": len(split)}), flush=True)
            for k, part in enumerate(split):
                known = [part.before] if part.before is not None else []
                row: dict[str, object] = {"place": k, "before": bool(known)}
                row["small"], row["small_s"] = _check(
                    [*(q.frame or []), *known, *naturals(), part.refuted], args.small_seconds)
                if row["small"] != "unsat":
                    row["full"], row["full_s"] = _check(
                        [*q.assertions[:-1], *known, *naturals(), part.refuted],
                        args.full_seconds)
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
