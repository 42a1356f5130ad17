"""One obligation's quantified query, restricted to its 4-agent core (NOTE(finite-core)),
asked of Z3 directly in several ways, each on a fresh solver capped at ``--seconds``: the
default settings, ``smt.mbqi=false``, after ``simplify``/``propagate-values``, with the
hypotheses that only say "no evaluation error" dropped (dropping hypotheses cannot make an
unsat unsound), and with closed quantifiers nested under others named by fresh Booleans. A
measurement, not part of the tool (results/infer/README.md, "Session 32": all unknown at
60 s on MSI's ``inferred_36`` at ``Dir.message GetM in I``).

    PYTHONHASHSEED=0 python3 results/infer/z3_direct.py specs/msi_directory.coh \\
        results/infer/msi_directory_s30.aux "Dir.message GetM in I" invariant:inferred_36 \\
        --seconds 60 [--smt2 FILE]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any

import z3

from coherence.smt import param
from coherence.smt.finite_core import FiniteCore
from coherence.spec.load import extend, load_spec
from coherence.spec.select import drop_properties

ERROR_VALUES = ("32768", "1099511627776")  # the encoding's "undefined" sentinels


def _simplified(fs: list[Any]) -> list[Any]:
    g = z3.Goal()
    g.add(fs)
    return list(z3.Then("simplify", "propagate-values", "simplify")(g)[0])


def _without_error_guards(fs: list[Any]) -> list[Any]:
    return [f for f in fs if not (z3.is_not(f) and z3.is_quantifier(f.arg(0))
                                  and any(v in str(f) for v in ERROR_VALUES))]


def _named_nested(fs: list[Any]) -> list[Any]:
    """Each closed quantifier under another replaced by a fresh Boolean, with its definition."""
    free: dict[int, frozenset[int]] = {}

    def fv(e: Any) -> frozenset[int]:
        k = e.get_id()
        if k not in free:
            if z3.is_var(e):
                free[k] = frozenset([z3.get_var_index(e)])
            elif z3.is_quantifier(e):
                n = e.num_vars()
                free[k] = frozenset(i - n for i in fv(e.body()) if i >= n)
            elif z3.is_app(e):
                free[k] = frozenset().union(*map(fv, e.children()))
            else:
                free[k] = frozenset()
        return free[k]
    found: dict[int, Any] = {}
    seen: set[tuple[int, bool]] = set()

    def walk(e: Any, nested: bool) -> None:
        if (e.get_id(), nested) in seen:
            return
        seen.add((e.get_id(), nested))
        if z3.is_quantifier(e):
            if nested and not e.is_lambda() and not fv(e):
                found.setdefault(e.get_id(), e)
            walk(e.body(), True)
        elif z3.is_app(e):
            for c in e.children():
                walk(c, nested)
    for f in fs:
        walk(f, False)
    fresh = count()
    pairs = [(q, z3.Bool(f"nested!{next(fresh)}")) for q in found.values()]
    if not pairs:
        return fs
    return [z3.substitute(f, *pairs) for f in fs] + [b == q for q, b in pairs]


def _ask(fs: list[Any], seconds: float, params: dict[str, Any]) -> tuple[str, float]:
    z3.reset_params()
    for k, v in params.items():
        z3.set_param(k, v)
    s = z3.Solver()
    s.set("timeout", int(seconds * 1000))
    s.add(fs)
    t = time.perf_counter()
    r = s.check()
    z3.reset_params()
    why = f" ({s.reason_unknown()})" if r == z3.unknown else ""
    return f"{r}{why}", round(time.perf_counter() - t, 1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("aux")
    ap.add_argument("action", help="the action's label, as `Machine.label`")
    ap.add_argument("goal")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--smt2", help="also write the restricted query as SMT-LIB here")
    args = ap.parse_args()
    model = extend(drop_properties(load_spec(args.spec), ["coherent"]),
                   Path(args.aux).read_text(encoding="utf-8"))
    ob = param.Obligations(model)
    core = FiniteCore(ob, 4)
    q = next(q for g in ob.groups_of(args.action) for q in ob.group(g)
             if not q.unchanged and q.goal == args.goal)
    keep = core.hypotheses(q, param.CORE_RLIMIT)
    if keep is None:
        raise SystemExit("no core at 4 agents (the goal fails there, or Z3 ran out)")
    fs = list(core.restricted(q, keep).quantified)
    if args.smt2:
        s = z3.Solver()
        s.add(*fs)
        Path(args.smt2).write_text(s.to_smt2(), encoding="utf-8")
    simple = _simplified(fs)
    tries: dict[str, Callable[[], tuple[str, float]]] = {
        "default": lambda: _ask(fs, args.seconds, {}),
        "mbqi off": lambda: _ask(fs, args.seconds, {"smt.mbqi": False}),
        "simplified": lambda: _ask(simple, args.seconds, {}),
        "no error guards": lambda: _ask(_without_error_guards(simple), args.seconds, {}),
        "nested named": lambda: _ask(_named_nested(simple), args.seconds, {}),
    }
    print(json.dumps({"core": len(keep)}), flush=True)
    for name, run in tries.items():
        answer, seconds = run()
        print(json.dumps({"try": name, "answer": answer, "seconds": seconds}), flush=True)


if __name__ == "__main__":
    main()
