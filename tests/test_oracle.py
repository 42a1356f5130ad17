"""The coherence oracle against brute force (two definitions) and hand-written litmus histories."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coherence.testing.oracle import Op, Verdict, check_coherence, check_sc, is_witness


def W(agent: int, line: int, value: int) -> Op:
    return Op(agent, line, "store", value)


def R(agent: int, line: int, value: int) -> Op:
    return Op(agent, line, "load", value)


# ---------------------------------------------------------------- brute force


def _interleavings(ops: Sequence[Op]) -> list[list[int]]:
    """Every permutation of the history indices that keeps each agent's program order."""
    out = []
    for perm in itertools.permutations(range(len(ops))):
        last: dict[int, int] = {}
        if all(last.setdefault(ops[i].agent, i) <= i and not last.update({ops[i].agent: i})
               for i in perm):
            out.append(list(perm))
    return out


def _legal(ops: Sequence[Op], order: list[int], initial: int) -> bool:
    mem: dict[int, int] = {}
    for i in order:
        if ops[i].kind == "store":
            mem[ops[i].line] = ops[i].value
        elif mem.get(ops[i].line, initial) != ops[i].value:
            return False
    return True


def brute_sc(ops: Sequence[Op], initial: int = 0) -> bool:
    return any(_legal(ops, order, initial) for order in _interleavings(ops))


def brute_coherence(ops: Sequence[Op], initial: int = 0) -> bool:
    """Operational definition: SC for each line's operations alone."""
    for line in {op.line for op in ops}:
        sub = [op for op in ops if op.line == line]
        if not brute_sc(sub, initial):
            return False
    return True


def _acyclic(n: int, edges: set[tuple[int, int]]) -> bool:
    indeg = [0] * n
    for _, b in edges:
        indeg[b] += 1
    ready = [i for i in range(n) if indeg[i] == 0]
    seen = 0
    while ready:
        a = ready.pop()
        seen += 1
        for x, b in edges:
            if x == a:
                indeg[b] -= 1
                if indeg[b] == 0:
                    ready.append(b)
    return seen == n


def axiomatic_coherence(ops: Sequence[Op], initial: int = 0) -> bool:
    """Axiomatic definition: some co and rf make po-loc | rf | co | fr acyclic, per line."""
    for line in {op.line for op in ops}:
        sub = [op for op in ops if op.line == line]
        stores = [i for i, op in enumerate(sub) if op.kind == "store"]
        loads = [i for i, op in enumerate(sub) if op.kind == "load"]
        po = {(i, j) for i in range(len(sub)) for j in range(i + 1, len(sub))
              if sub[i].agent == sub[j].agent}
        sources = []  # per load: the stores it may read from (None: the initial value)
        for r in loads:
            cands: list[int | None] = [w for w in stores if sub[w].value == sub[r].value]
            if sub[r].value == initial:
                cands.append(None)
            sources.append(cands)
        ok = False
        for co in itertools.permutations(stores):
            rank = {w: k for k, w in enumerate(co)}
            co_edges = {(co[k], co[k + 1]) for k in range(len(co) - 1)}
            for rf in itertools.product(*sources):
                edges = set(po) | co_edges
                for r, w in zip(loads, rf, strict=True):
                    if w is not None:
                        edges.add((w, r))
                    for w2 in stores:  # fr: r before every store co-after its source
                        if w is None or rank[w2] > rank[w]:
                            edges.add((r, w2))
                if _acyclic(len(sub), edges):
                    ok = True
                    break
            if ok:
                break
        if not ok:
            return False
    return True


# ---------------------------------------------------------------- random histories

ops_strategy = st.builds(Op, st.integers(0, 2), st.integers(0, 1),
                         st.sampled_from(["load", "store"]), st.integers(0, 2))


@st.composite
def near_sc_histories(draw: st.DrawFn) -> list[Op]:
    """A history produced by some SC execution, then perhaps one load's value changed, so that
    both answers are common (uniformly random histories are almost all incoherent)."""
    n = draw(st.integers(1, 7))
    mem = {0: 0, 1: 0}
    out = []
    for _ in range(n):
        op = draw(ops_strategy)
        if op.kind == "store":
            mem[op.line] = op.value
        else:
            op = op._replace(value=mem[op.line])
        out.append(op)
    if draw(st.booleans()):
        loads = [i for i, op in enumerate(out) if op.kind == "load"]
        if loads:
            i = draw(st.sampled_from(loads))
            out[i] = out[i]._replace(value=draw(st.integers(0, 2)))
    return out


histories = st.one_of(st.lists(ops_strategy, max_size=6), near_sc_histories())


def _check_witness(ops: list[Op], v: Verdict, initial: int) -> None:
    assert v.witness is not None
    if v.model == "sc":
        assert is_witness(ops, v.witness, initial)
        return
    assert sorted(v.witness) == list(range(len(ops)))
    for line in {op.line for op in ops}:
        idx = [i for i in v.witness if ops[i].line == line]
        sub_ops = [ops[i] for i in sorted(idx)]
        renum = {i: k for k, i in enumerate(sorted(idx))}
        assert is_witness(sub_ops, [renum[i] for i in idx], initial)


@settings(max_examples=300, deadline=None)
@given(histories, st.integers(0, 2))
def test_oracle_matches_brute_force(ops: list[Op], initial: int) -> None:
    coh = check_coherence(ops, initial)
    sc = check_sc(ops, initial)
    assert coh.holds == brute_coherence(ops, initial)
    assert sc.holds == brute_sc(ops, initial)
    if sc.holds:
        assert coh.holds  # SC implies coherence
    for v in (coh, sc):
        if v.holds:
            _check_witness(ops, v, initial)
        else:
            # the reported load ends the shortest unexplainable prefix (of its line)
            assert v.first_bad is not None and ops[v.first_bad].kind == "load"
            in_scope = [i for i in range(len(ops)) if v.model == "sc" or ops[i].line == v.line]
            scope = [ops[i] for i in in_scope]
            cut = in_scope.index(v.first_bad)
            assert not brute_sc(scope[:cut + 1], initial)
            assert brute_sc(scope[:cut], initial)


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.lists(ops_strategy, max_size=5), near_sc_histories()), st.integers(0, 1))
def test_operational_and_axiomatic_coherence_agree(ops: list[Op], initial: int) -> None:
    assert brute_coherence(ops, initial) == axiomatic_coherence(ops, initial)
    assert check_coherence(ops, initial).holds == axiomatic_coherence(ops, initial)


# ---------------------------------------------------------------- litmus histories

X, Y = 0, 1
LITMUS: list[tuple[str, list[Op], bool, bool]] = [
    # name, history (observed order), coherent, sequentially consistent
    ("CoRR", [W(0, X, 1), R(1, X, 1), R(1, X, 0)], False, False),
    ("CoRR-ok", [W(0, X, 1), R(1, X, 0), R(1, X, 1)], True, True),
    ("CoWR", [W(0, X, 1), R(0, X, 0)], False, False),
    ("CoWR-other-store", [W(0, X, 1), W(1, X, 0), R(0, X, 0)], True, True),
    ("CoRW", [R(0, X, 2), W(0, X, 1), W(1, X, 2), R(2, X, 1), R(2, X, 2)], False, False),
    ("CoRW-ok", [R(0, X, 2), W(0, X, 1), W(1, X, 2), R(2, X, 2), R(2, X, 1)], True, True),
    ("CoWW", [W(0, X, 1), W(0, X, 2), R(1, X, 2), R(1, X, 1)], False, False),
    ("thin-air", [R(0, X, 5)], False, False),
    ("SB", [W(0, X, 1), W(1, Y, 1), R(0, Y, 0), R(1, X, 0)], True, False),
    ("MP", [W(0, X, 1), W(0, Y, 1), R(1, Y, 1), R(1, X, 0)], True, False),
    ("MP-ok", [W(0, X, 1), W(0, Y, 1), R(1, Y, 1), R(1, X, 1)], True, True),
    ("IRIW", [W(0, X, 1), W(1, Y, 1), R(2, X, 1), R(2, Y, 0), R(3, Y, 1), R(3, X, 0)],
     True, False),
    ("2+2W", [W(0, X, 1), W(0, Y, 2), W(1, Y, 1), W(1, X, 2),
              R(2, X, 2), R(2, X, 1), R(3, Y, 2), R(3, Y, 1)], True, False),
    # ambiguous values: the initial 0 explains agent 3's first load, so both orders fit
    ("ambiguous", [W(0, X, 1), W(1, X, 0), R(2, X, 1), R(2, X, 0), R(3, X, 0), R(3, X, 1)],
     True, True),
]


@pytest.mark.parametrize("name,ops,coherent,sc", LITMUS, ids=[t[0] for t in LITMUS])
def test_litmus(name: str, ops: list[Op], coherent: bool, sc: bool) -> None:
    assert check_coherence(ops).holds is coherent
    assert check_sc(ops).holds is sc
    assert brute_coherence(ops) is coherent and brute_sc(ops) is sc


def test_initial_value_matters() -> None:
    ops = LITMUS[-1][1]
    # with the line starting at 2, agent 3 must read 0 from agent 1's store: no order fits
    assert check_coherence(ops, initial=2).holds is False
    assert not brute_coherence(ops, initial=2)


def test_violation_names_the_line_and_first_bad_load() -> None:
    ops = [W(0, Y, 1), W(0, X, 1), R(1, Y, 1), R(1, X, 1), R(1, X, 0), R(1, Y, 1)]
    v = check_coherence(ops)
    assert (v.holds, v.line, v.first_bad) == (False, X, 4)
    assert "line 0" in v.message and "operation 4" in v.message


def test_thin_air_is_explained() -> None:
    v = check_coherence([W(0, X, 1), R(1, X, 3)])
    assert "no store of 3 to line 0 precedes it" in v.message


def test_search_limit_gives_undecided_not_a_guess() -> None:
    ops = [W(0, X, 1), W(0, Y, 1), R(1, Y, 1), R(1, X, 0)]  # MP: needs a search for SC
    assert check_sc(ops, limit=0).holds is None
    assert check_sc(ops).holds is False


def test_bad_kind_is_rejected() -> None:
    with pytest.raises(ValueError, match="'load' or 'store'"):
        check_coherence([Op(0, 0, "fence", 0)])


def test_long_history_from_an_sc_execution_is_settled() -> None:
    """4,000 operations of 8 agents on 4 lines, as an SC execution performs them."""
    rng = random.Random(5)
    mem = [0, 0, 0, 0]
    ops = []
    for _ in range(4000):
        agent, line, value = rng.randrange(8), rng.randrange(4), rng.randrange(3)
        if rng.random() < 0.3:
            mem[line] = value
            ops.append(W(agent, line, value))
        else:
            ops.append(R(agent, line, mem[line]))
    assert check_sc(ops).holds is True
    assert check_coherence(ops).holds is True
    ops[3999] = ops[3999]._replace(kind="load", value=7)
    assert check_coherence(ops).holds is False
