"""NOTE(fast-connectives): ``all_of`` and ``any_of`` build the very terms that the general
path (z3.And/z3.Or after dropping ``true``/``false`` members, the code before the fast path)
builds, whatever mix of Bool terms, quantifiers and Python bools they get."""

from __future__ import annotations

import z3
from hypothesis import given
from hypothesis import strategies as st

from coherence.smt.execute import FALSE, TRUE, _all_of_any, _any_of_any, all_of, any_of

A, B, C = z3.Bools("fa fb fc")
X = z3.Int("fx")
TERMS = [TRUE, FALSE, A, B, C, z3.Not(A), z3.And(B, C), z3.ForAll([X], X * X >= 0)]


@given(st.lists(st.sampled_from(TERMS), max_size=6), st.booleans())
def test_the_same_terms_as_the_general_path(xs: list[z3.BoolRef], python_bool: bool) -> None:
    if python_bool:  # a Python bool among them takes the general path
        xs = [*xs, True]
    for fast, general in ((all_of, _all_of_any), (any_of, _any_of_any)):
        got, want = fast(list(xs)), general(list(xs))
        if isinstance(want, bool):  # a lone Python bool comes back as it is, on both
            assert got is want, (xs, got, want)
        else:
            assert got.eq(want), (xs, got, want)
