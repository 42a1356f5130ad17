"""NOTE(frame-unread): a property whose leaves an action does not write is not encoded after
the action but taken as it was, and one whose leaves it writes is asked; so is another
action's error. That must mark exactly the obligations that encoding every property and error
again and comparing it up to bound names (and the error's parameters) marks, on flat, counting
and hierarchical specs."""

from __future__ import annotations

from pathlib import Path

import pytest
import z3
from helpers import ROOT, SPECS

from coherence.smt.alpha import alpha_equal
from coherence.smt.frame_reads import leaf_index, leaves_read, leaves_written
from coherence.smt.param import Obligations, _properties, _step
from coherence.spec.load import load_spec
from coherence.spec.select import drop_properties

TESTS = ROOT / "tests" / "specs"


def _obligations(path: Path) -> Obligations:
    model = drop_properties(load_spec(path), [p.name for p in load_spec(path).properties])
    shape = None
    if model.is_hierarchical:
        from coherence.smt.param_hier import shape_of
        shape = shape_of(model, None)
    return Obligations(model, shape)


@pytest.mark.parametrize("path", [
    SPECS / "german.coh",
    SPECS / "broadcast_invalidate_acked.coh",
    TESTS / "count" / "msi_counting_aux.coh",
    TESTS / "count" / "message_count_aux.coh",
    TESTS / "hierarchy" / "one_gpu_readers.coh",
], ids=lambda p: p.stem)
def test_unread_properties_are_the_unchanged_ones(path: Path) -> None:
    ob = _obligations(path)
    shortcut = errors = 0
    for g in range(1, ob.groups):
        machine, tr = ob.acts[g - 1]
        succ = _step(ob.enc, ob.cur, machine, tr, f"again{g}")[2]
        full = _properties(ob.enc, succ)  # every property encoded again
        written = leaves_written(ob.cur_leaves, succ.leaves())
        assert written is not None
        queries = ob.group(g)
        marked = {q.goal for q in queries if q.unchanged and q.goal != "error:error"}
        expected = {name for name, p in full.items()
                    if name in ob.props and alpha_equal(p, ob.props[name])}
        assert marked == expected, (ob.label(g), marked ^ expected)
        assert marked == {n for n in ob.props if not ob.reads[n] & written}
        shortcut += len(marked)
        # action j's error after this action: marked where it is action j's error before it,
        # its parameters renamed
        marked_errs = {q.key[2] for q in queries if q.unchanged and q.goal == "error:error"}
        same_errs = set()
        for j, err in ob.errs:
            m2, tr2 = ob.acts[j]
            _ok, again, _succ, params, _dup = _step(ob.enc, succ, m2, tr2, f"again{g}b{j}")
            # the same names as ``err``'s (its step, made again, makes the same constants)
            before = _step(ob.enc, ob.cur, m2, tr2, f"e{j}")[3]
            renamed = z3.substitute(again, *zip(params, before, strict=True)) if params \
                else again
            if alpha_equal(renamed, err):
                same_errs.add(j)
        assert marked_errs == same_errs, (ob.label(g), marked_errs ^ same_errs)
        errors += len(marked_errs)
    assert shortcut > 0  # the shortcut is taken on each of these specs
    assert errors > 0


def test_leaves_read_and_written() -> None:
    a, b, c = z3.Ints("fr_a fr_b fr_c")
    arr = z3.Array("fr_arr", z3.IntSort(), z3.IntSort())
    i = z3.Int("fr_i")
    leaves = [a, b, arr]
    index = leaf_index(leaves)
    assert leaves_read(z3.And(a > c, z3.ForAll([i], arr[i] > 0)), index) == {0, 2}
    assert leaves_read(b + c > 1, index) == {1}
    assert leaves_read(c > 1, index) == frozenset()
    assert leaves_written(leaves, [a, b + 0, z3.Store(arr, a, 1)]) == {1, 2}
    assert leaves_written(leaves, [a, b, arr]) == frozenset()
    assert leaves_written(leaves, [a, b]) is None
