"""NOTE(count-skolem-venn), NOTE(ground-deadline): the quantified try of a spec that counts
with the goal's existentials witnessed, and the deadlines of the ground try and of the CTI
search."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import z3
from helpers import PROOF_RLIMIT, SPECS

from coherence.smt import param
from coherence.smt.infer_ground import Grounder, TooLarge
from coherence.smt.nodes import HOME, NODE, UNDEF_N
from coherence.smt.param import Budget, Grounded, obligations, prove_all
from coherence.smt.param_count import card_terms, venn_axioms
from coherence.smt.param_cti import _TooLarge, expand
from coherence.spec.load import extend, load_spec, load_spec_text
from coherence.spec.select import drop_properties

COUNT = Path(__file__).parent / "specs" / "count"
# MSI's inferred line whose cards sit under its quantifier (results/infer/msi_directory_houdini.aux)
ACKS_COUNTED = (
    "invariant aux inferred_38: forall i: agent :: ((!(inflight(Data, i))) -> (Cache[i].acks == "
    "count(y: agent :: (exists k: Inv :: k.dst == y && k.req == i) || (exists k: InvAck :: "
    "k.src == y && k.dst == i))));\n")


def _budget() -> Budget:
    return Budget(None, None, time.perf_counter())


def test_a_count_under_the_goals_quantifier_gets_its_axioms() -> None:
    """At the initial state no message is in flight and every count is 0; without the goal's
    witness the card term is not ground, gets no axiom, and Z3 finds a count of 1."""
    model = extend(drop_properties(load_spec(SPECS / "msi_directory.coh"), ["coherent"]),
                   ACKS_COUNTED)
    _enc, _cur, queries = obligations(model)
    q = next(q for q in queries if q.goal == "invariant:inferred_38" and q.what == "init")
    plain = z3.Solver()
    plain.add(*q.assertions, *venn_axioms(card_terms(q.assertions), None))
    assert plain.check() == z3.sat  # spurious: the old quick try could not prove it
    assert param._skolem_venn(q, Grounded(q), _budget())


def test_never_proves_an_obligation_with_a_counterexample() -> None:
    """A counter the home forgets to decrement: the obligations the proof finds
    counterexamples to induction for are not proved by the try."""
    text = (COUNT / "sharer_set_and_counter.coh").read_text()
    mutant = text.replace("    n := n - 1;\n", "")
    assert mutant != text
    model = load_spec_text(mutant, "mutant.coh")
    result = prove_all(model, rlimit=PROOF_RLIMIT)
    assert result.verdict == "fails" and result.ctis, (result.verdict, result.ctis)
    _enc, _cur, queries = obligations(model)
    broken = [q for q in queries
              if any(c.startswith(f"{q.goal} is not preserved by {q.what} ") for c in result.ctis)]
    assert len(broken) == len(result.ctis), result.ctis
    for q in broken:
        assert not param._skolem_venn(q, Grounded(q), _budget()), (q.goal, q.what)


def test_grounding_stops_at_its_deadline() -> None:
    p = z3.Function("deadline_p", NODE, NODE, z3.BoolSort())
    x, y = z3.Consts("x y", NODE)
    claim = z3.ForAll([x, y], p(x, y))
    grounder = Grounder(NODE, [HOME, UNDEF_N])
    assert z3.is_and(grounder.ground(claim, True))
    late = Grounder(NODE, [HOME, UNDEF_N])
    late.deadline = time.perf_counter() - 1
    with pytest.raises(TooLarge):
        late.ground(claim, True)


def test_unrolling_stops_at_its_deadline() -> None:
    p = z3.Function("deadline_q", NODE, z3.BoolSort())
    x = z3.Const("x", NODE)
    claim = z3.ForAll([x], p(x))
    assert z3.is_and(expand(claim, [HOME, UNDEF_N], NODE, {}, [10]))
    with pytest.raises(_TooLarge):
        expand(claim, [HOME, UNDEF_N], NODE, {}, [10], time.perf_counter() - 1)
