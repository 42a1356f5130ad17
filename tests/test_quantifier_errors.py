"""NOTE(quantifier-errors): a quantifier's verdict and failure key do not depend on the order
of its instances, in any engine.

An instance that decides a quantifier (false for ``forall``, true for ``exists``) decides it
even when another instance raises a model error; when none decides, the quantifier raises the
least of its instances' errors (by source position, then code); ``count`` raises the least
error of any instance. Before this rule a quantifier stopped at its first false or erring
instance in agent order, so symmetry reduction (which renames agents and re-sorts messages)
could turn a violation into an error: a shortest counterexample of 1 step became 2.

Each spec below is built so that the old rule gives a different answer from the new one in
one of the two agent orders; the expected failures are written out, and the reference and
compiled engines, with and without symmetry, and BMC must all give them.
"""

from __future__ import annotations

import pytest
from helpers import assert_agree
from quantifier_specs import COUNT, GUARD, INVARIANT, LEAST, MESSAGES, ORDERS, span_of

from coherence.engines import check
from coherence.engines.compiled.build import CompilerNotFound, find_compiler
from coherence.errors import Span
from coherence.ir import Model
from coherence.results import CheckOptions, CheckResult
from coherence.semantics import ERROR_CODES, ModelError, error_rank, least_error
from coherence.spec.load import load_spec_text


def _compiler_missing() -> str | None:
    try:
        find_compiler()
    except CompilerNotFound as err:
        return str(err)
    return None


ENGINES = ["reference", pytest.param("compiled", marks=pytest.mark.skipif(
    _compiler_missing() is not None, reason=f"needs a C compiler: {_compiler_missing()}"))]


def lengths(result: CheckResult) -> dict[tuple[str, ...], int]:
    out = {f.key: f.length for f in result.failures}
    assert len(out) == len(result.failures), "two failures with one key"
    return out


def run(model: Model, engine: str, symmetry: bool) -> dict[tuple[str, ...], int]:
    result = check(model, CheckOptions(symmetry=symmetry), engine=engine)
    assert result.stopped is None
    return lengths(result)




@pytest.mark.parametrize("symmetry", [False, True])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_false_instance_decides_over_an_erring_one(engine: str, symmetry: bool) -> None:
    model = load_spec_text(INVARIANT)
    assert run(model, engine, symmetry) == {("error", "named"): 0, ("invariant", "named"): 1}




@pytest.mark.parametrize("symmetry", [False, True])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_true_instance_enables_a_guard_another_instance_errs_in(engine: str,
                                                                  symmetry: bool) -> None:
    model = load_spec_text(GUARD)
    assert run(model, engine, symmetry) == {("invariant", "quiet"): 2}




@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("engine", ENGINES)
def test_the_least_error_is_reported_in_either_order(engine: str, order: str) -> None:
    text = LEAST.replace("BRANCHES", ORDERS[order])
    first = "C[a].u == a" if order == "u-first" else "C[a].w == a"
    model = load_spec_text(text)
    for symmetry in (False, True):
        assert run(model, engine, symmetry) == {("error", "undefined", span_of(text, first)): 3}




@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("engine", ENGINES)
def test_count_reports_the_least_error_of_all_instances(engine: str, order: str) -> None:
    text = COUNT.replace("BRANCHES", ORDERS[order])
    first = "C[a].u == a" if order == "u-first" else "C[a].w == a"
    assert run(load_spec_text(text), engine, False) == {
        ("error", "undefined", span_of(text, first)): 3}




@pytest.mark.parametrize("symmetry", [False, True])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_false_message_decides_over_an_erring_one(engine: str, symmetry: bool) -> None:
    model = load_spec_text(MESSAGES)
    assert run(model, engine, symmetry) == {("error", "two"): 1, ("invariant", "two"): 2}


@pytest.mark.parametrize("text", [INVARIANT, GUARD, MESSAGES,
                                  LEAST.replace("BRANCHES", ORDERS["w-first"])],
                         ids=["invariant", "guard", "messages", "least"])
def test_bmc_agrees_with_the_checker(text: str) -> None:
    """The Z3 step (``smt.execute``) makes the same choice: BMC finds each failure group first
    at the checker's shortest length."""
    assert assert_agree(load_spec_text(text), 3)


def test_error_rank_orders_by_position_then_code() -> None:
    at = Span("f.coh", 3, 7)
    assert error_rank("undefined", Span("f.coh", 2, 90)) < error_rank("assert", at)
    assert error_rank("undefined", Span("f.coh", 3, 6)) < error_rank("assert", at)
    assert error_rank("not-agent", at) < error_rank("undefined-agent", at)
    assert list(ERROR_CODES) == sorted(ERROR_CODES)
    assert error_rank("a-code-nobody-knows", at) > error_rank("undefined-dst", at)


def test_least_error_keeps_the_first_on_a_tie() -> None:
    a = ModelError("a", Span("f.coh", 1, 1), "range")
    b = ModelError("b", Span("f.coh", 1, 1), "range")
    c = ModelError("c", Span("f.coh", 0, 5), "range")
    assert least_error(None, a) is a
    assert least_error(a, b) is a
    assert least_error(a, c) is c
    assert least_error(c, a) is c
