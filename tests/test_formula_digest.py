"""NOTE(formula-digest): one digest per formula, whatever the process that built it: equal
digests exactly for equal formulas (up to the names of fresh symbols)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import z3
from helpers import ROOT, SPECS
from hypothesis import given, settings
from hypothesis import strategies as st

from coherence.smt.formula_digest import Digest, digest

X, Y = z3.Ints("dx dy")
P = z3.Bool("dp")
F = z3.Function("df", z3.IntSort(), z3.IntSort())
A = z3.Array("da", z3.IntSort(), z3.BoolSort())
B8 = z3.BitVec("db", 8)
Q = z3.Int("di")  # the bound variable


def _ints(depth: int) -> st.SearchStrategy[z3.ArithRef]:
    leaf = st.sampled_from([X, Y, z3.IntVal(0), z3.IntVal(1), z3.IntVal(-1), z3.IntVal(2), Q])
    if depth == 0:
        return leaf
    sub = _ints(depth - 1)
    return st.one_of(leaf, st.builds(lambda a, b: a + b, sub, sub),
                     st.builds(lambda a, b: a * b, sub, sub), st.builds(lambda a: F(a), sub),
                     st.builds(lambda c, a, b: z3.If(c, a, b), _bools(depth - 1), sub, sub))


def _bools(depth: int) -> st.SearchStrategy[z3.BoolRef]:
    leaf = st.sampled_from([P, z3.BoolVal(True), z3.BoolVal(False), A[X], B8 == 3,
                            z3.ULT(B8, 200)])
    if depth == 0:
        return leaf
    sub, ints = _bools(depth - 1), _ints(depth - 1)
    return st.one_of(
        leaf, st.builds(lambda a, b: a < b, ints, ints), st.builds(lambda a, b: a == b, ints, ints),
        st.builds(z3.Not, sub), st.builds(lambda a, b: z3.And(a, b), sub, sub),
        st.builds(lambda a, b: z3.Or(a, b), sub, sub),
        st.builds(lambda b: z3.ForAll([Q], b), sub), st.builds(lambda b: z3.Exists([Q], b), sub),
        st.builds(lambda b: z3.Select(z3.Lambda([Q], b), X), sub))


@settings(max_examples=300, deadline=None)
@given(_bools(3), _bools(3))
def test_equal_digests_exactly_for_equal_formulas(f: z3.BoolRef, g: z3.BoolRef) -> None:
    assert (digest(f) == digest(g)) == f.eq(g), (f, g)


@settings(max_examples=100, deadline=None)
@given(st.lists(_bools(2), min_size=1, max_size=4), st.lists(_bools(2), min_size=1, max_size=4))
def test_a_list_of_assertions_is_read_in_order(fs: list[z3.BoolRef],
                                               gs: list[z3.BoolRef]) -> None:
    same = len(fs) == len(gs) and all(f.eq(g) for f, g in zip(fs, gs, strict=True))
    assert (digest(*fs) == digest(*gs)) == same
    context = Digest().add(*fs[:-1])
    assert context.extended(fs[-1]) == digest(*fs)  # the shared hypotheses read once


def test_fresh_names_are_renamed_by_the_order_they_are_met() -> None:
    def built(skip: int) -> tuple[str, str]:
        for _ in range(skip):
            z3.FreshInt("s")  # other terms first: the counter moves on
        a, b = z3.FreshInt("s"), z3.FreshInt("s")
        return digest(a + b > 0, a < 5), digest(a + a > 0, a < 5)
    two, one = built(0)
    assert built(7) == (two, one)
    assert two != one  # two fresh constants stay two
    assert digest(z3.Int("s") > 0) != digest(z3.FreshInt("s") > 0)  # kept apart from names


def test_a_fresh_binder_is_read_without_its_number() -> None:
    """A multicast binds a ``FreshConst``: its number follows how many were made before (MSI's
    `GetM in S` digested differently in two processes before this)."""
    def built(skip: int) -> str:
        for _ in range(skip):
            z3.FreshInt("a")
        a = z3.FreshInt("a")
        return digest(z3.Exists([a], z3.And(a > X, F(a) == Y)))
    assert built(0) == built(20)
    b = z3.FreshInt("a")
    assert built(0) != digest(z3.Exists([b], z3.And(b > Y, F(b) == Y)))  # the body counts


def test_a_datatype_is_read_with_its_members() -> None:
    """Two processes (here two contexts) may declare one enumeration name with other members;
    `x == a || x == b` is valid in one only."""
    def either(members: list[str]) -> str:
        ctx = z3.Context()
        sort, values = z3.EnumSort("St", members, ctx=ctx)
        x = z3.Const("x", sort)
        return digest(z3.Not(z3.Or(x == values[0], x == values[1])))
    assert either(["a", "b"]) == either(["a", "b"])
    assert either(["a", "b"]) != either(["a", "b", "c"])


def test_values_sorts_and_binders_count() -> None:
    assert digest(X > 1) != digest(X > 2)
    assert digest(z3.BitVecVal(1, 8) == z3.BitVecVal(1, 8)) != \
        digest(z3.BitVecVal(1, 16) == z3.BitVecVal(1, 16))
    assert digest(z3.ForAll([Q], Q > X)) != digest(z3.Exists([Q], Q > X))
    assert digest(z3.Extract(3, 0, B8) == 0) != digest(z3.Extract(4, 1, B8) == 0)


PROBE = """
import json, sys, z3
from coherence.spec.load import load_spec
from coherence.spec.select import drop_properties
from coherence.smt.param import Obligations
from coherence.smt.formula_digest import digest
for _ in range(int(sys.argv[2])):
    z3.FreshInt("mc_y")  # a process that made other terms first
model = load_spec(sys.argv[1])
if any(p.name == "coherent" for p in model.properties):
    model = drop_properties(model, ["coherent"])
ob = Obligations(model)
groups = [int(g) for g in sys.argv[3].split(",")] if sys.argv[3] != "all" else range(ob.groups)
if sys.argv[4] == "reversed":
    groups = list(groups)[::-1]
out = {g: [digest(*q.assertions) for q in ob.group(g)] for g in groups}
print(json.dumps({str(g): out[g] for g in sorted(out)}))
"""


def _digests_in_a_process(spec: str, seed: str, skip: int, groups: str,
                          order: str) -> dict[str, list[str]]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run([sys.executable, "-c", PROBE, spec, str(skip), groups, order],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
                         check=True)
    return json.loads(out.stdout)


def test_the_same_obligations_get_the_same_digests_in_other_processes() -> None:
    """Obligations built in two processes with other hash seeds, other groups built first and
    other fresh counters get the same digests (Z3's own printing differs there): German's, and
    every one of a spec whose multicast binds a fresh variable (`for a: agent { ... }`)."""
    german = str(SPECS / "german.coh")
    a = _digests_in_a_process(german, "1", 0, "0,3,7", "given")
    b = _digests_in_a_process(german, "2", 5, "7,5,3,0", "given")
    assert {g: b[g] for g in a} == a
    assert len({d for ds in a.values() for d in ds}) == sum(len(ds) for ds in a.values())
    multicast = str(ROOT / "tests" / "specs" / "infer" / "join_then_go.coh")
    assert "for a: agent" in Path(multicast).read_text()
    forward = _digests_in_a_process(multicast, "1", 0, "all", "given")
    backward = _digests_in_a_process(multicast, "3", 9, "all", "reversed")
    assert forward == backward
