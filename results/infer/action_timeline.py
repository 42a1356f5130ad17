"""Each obligation of one action of a final proof, in order, with the seconds its tries took
and their answer (``param._share``, its own tries, timed per query): which goals an action's
time goes to. A measurement, not part of the tool (results/infer/README.md, "Session 24").

    PYTHONHASHSEED=0 python3 results/infer/action_timeline.py specs/msi_directory.coh \\
        results/infer/msi_directory_putback.aux "Cache.message Inv in S" --seconds 600
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from coherence.smt import param
from coherence.spec.load import extend, load_spec
from coherence.spec.select import drop_properties


class _Tally:
    def set(self, *_a: Any) -> None:
        pass

    def sums(self) -> tuple[int, int]:
        return (0, 0)


def _trace_tries() -> None:
    """Print each try of ``_settle`` as it ends: its name, seconds and answer."""
    def wrap(owner: Any, name: str) -> None:
        inner = getattr(owner, name)

        def traced(*a: Any, **k: Any) -> Any:
            began = time.perf_counter()
            out = inner(*a, **k)
            shown = out[0] if isinstance(out, tuple) else out
            print(json.dumps({"try": name, "s": round(time.perf_counter() - began, 2),
                              "answer": str(shown)}), flush=True)
            return out
        setattr(owner, name, traced)

    from coherence.smt import param_cti
    for name in ("_split", "_skolem_venn", "_check", "_check_guarded", "_core_try"):
        wrap(param, name)
    wrap(param.Grounded, "proves")
    from coherence.smt import finite_core
    wrap(finite_core.FiniteCore, "hypotheses")  # NOTE(finite-core): the first builds the size
    wrap(param_cti, "find_cti")  # the search for a concrete counterexample (None: none found)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("aux")
    ap.add_argument("action", help="the action's label, as `Machine.label`")
    ap.add_argument("--seconds", type=float, default=600.0)
    ap.add_argument("--skip", action="append", default=["coherent"])
    ap.add_argument("--tries", action="store_true",
                    help="also each try's seconds and answer (split, witnessed Venn, ground, "
                         "and every solver check)")
    args = ap.parse_args()
    model = extend(drop_properties(load_spec(args.spec), args.skip),
                   Path(args.aux).read_text())
    ob = param.Obligations(model)
    groups = ob.groups_of(args.action)
    if not groups:
        raise SystemExit(f"no action {args.action!r}")
    def timer(settle: Any, stage: str) -> Any:
        def timed(model: Any, q: Any, *rest: Any, **kw: Any) -> Any:
            began = time.perf_counter()
            answer = settle(model, q, *rest, **kw)
            print(json.dumps({"goal": q.goal, "stage": stage,
                              "s": round(time.perf_counter() - began, 2),
                              "answer": str(answer[0]), "cti": answer[1] is not None,
                              "why": answer[2][:80]}), flush=True)
            return answer
        return timed

    # NOTE(quick-first): a goal's quick tries, and later its long ones where they gave up
    param._settle = timer(param._settle, "quick")
    param._settle_late = timer(param._settle_late, "late")
    if args.tries:
        _trace_tries()
    budget = param.Budget(args.seconds, None, time.perf_counter())
    outs = param._share(model, ob, groups, budget, frozenset(), 0, _Tally(), None, None)
    kinds: dict[str, int] = {}
    for o in outs:
        kinds[o.kind] = kinds.get(o.kind, 0) + 1
    print(json.dumps({"outcomes": kinds}), flush=True)


if __name__ == "__main__":
    main()
