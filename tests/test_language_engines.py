"""The language additions of issue 15 (item 6) in every back end: the same state counts from
the reference semantics, the compiled engine, Rumur and Spin; Z3 agreeing with the checker;
``assume`` meaning the same everywhere (a discarded state is not stored, counted, checked or
expanded, and the move into it still counts, so its source is no deadlock).

``tests/specs/language/features.coh`` uses every addition; ``members.coh`` is small enough for
a proof for every number of agents.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from helpers import PROOF_RLIMIT, assert_agree

from coherence import ir
from coherence.cli import main
from coherence.diagrams.pretty import Printer
from coherence.engines import check
from coherence.export.murphi import to_murphi
from coherence.export.promela import ExportError, to_promela
from coherence.results import CheckOptions
from coherence.smt.induction import induction
from coherence.smt.param import prove_all
from coherence.smt.state import Unsupported
from coherence.spec.load import load_spec, load_spec_text
from coherence.testing import fuzz

HERE = Path(__file__).resolve().parent / "specs" / "language"
FEATURES = HERE / "features.coh"
MEMBERS = HERE / "members.coh"

# (agents, symmetry) -> reachable states of features.coh; with its `assume` dropped, and of
# members.coh. Pinned: the reference and compiled engines (and Rumur, below) must give these.
FEATURE_COUNTS = {(2, False): 68, (2, True): 36, (3, False): 196, (3, True): 53}
UNCONSTRAINED_COUNTS = {(2, False): 392, (2, True): 207}


def without_assume(path: Path) -> str:
    return re.sub(r"^assume .*$", "", path.read_text(), flags=re.M)


@pytest.mark.parametrize("engine", ["reference", "compiled"])
@pytest.mark.parametrize(("agents", "symmetry"), sorted(FEATURE_COUNTS))
def test_engines_agree_on_every_addition(engine: str, agents: int, symmetry: bool) -> None:
    model = load_spec(FEATURES, {"agents": agents})
    result = check(model, CheckOptions(symmetry=symmetry), engine=engine)
    assert result.verdict == "holds", [f.message for f in result.failures]
    assert result.states == FEATURE_COUNTS[(agents, symmetry)]


@pytest.mark.parametrize("engine", ["reference", "compiled"])
def test_assume_bounds_the_search(engine: str) -> None:
    """Without its `assume` the same spec has more states: the constraint is what cut them."""
    model = load_spec_text(without_assume(FEATURES), "unconstrained.coh")
    for symmetry in (False, True):
        result = check(model, CheckOptions(symmetry=symmetry), engine=engine)
        assert result.states == UNCONSTRAINED_COUNTS[(2, symmetry)]


STUCK = """
event Go;
cache machine C {
  stable state I;
  transient state T;
  init I;
  var n: int[0..3] = 0;
  on Go in I { n := n + 1; goto T; }
  on Go in T { n := n + 1; }
}
invariant never_two: forall a: agent :: C[a].n != 2;
"""


@pytest.mark.parametrize("engine", ["reference", "compiled"])
def test_a_discarded_state_is_not_checked_and_its_source_is_no_deadlock(engine: str) -> None:
    """In T with n = 1 the only move reaches n = 2, which the assumption discards: no
    invariant failure there, and T is not a deadlock (Rumur's and TLC's reading)."""
    free = check(load_spec_text(STUCK, "stuck.coh"), CheckOptions(symmetry=False),
                 engine=engine)
    assert "never_two" in {f.name for f in free.failures}  # (and n overflows later)
    model = load_spec_text(STUCK + "assume forall a: agent :: C[a].n <= 1;\n", "stuck.coh")
    result = check(model, CheckOptions(symmetry=False), engine=engine)
    assert (result.verdict, result.states) == ("holds", 4)


def test_an_initial_state_that_violates_an_assumption_is_a_located_error(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Nothing would be left to explore: certainly a mistake, refused by every verb."""
    path = tmp_path / "none.coh"
    path.write_text(STUCK + "assume nothing: forall a: agent :: C[a].n == 5;\n")
    for argv in (["check"], ["check", "--engine", "compiled"], ["fuzz"], ["prove", "--bmc", "2"]):
        assert main([*argv, str(path)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"{path}:12:1: error: the initial state violates the assumption "
                              "'nothing'"), err


def test_an_assumption_that_reads_undefined_counts_as_false() -> None:
    text = STUCK.replace("var n: int[0..3] = 0;",
                         "var n: int[0..3] = 0;\n  var u: bool = undefined;")
    model = load_spec_text(text + "assume forall a: agent :: C[a].n == 0 || C[a].u;\n", "u.coh")
    for engine in ("reference", "compiled"):
        result = check(model, CheckOptions(symmetry=False), engine=engine)
        assert (result.verdict, result.states) == ("holds", 1)


def test_liveness_sees_only_the_explored_system() -> None:
    """A move into a discarded state is no step of a path: the goal beyond it never comes."""
    text = STUCK.replace("  on Go", "  fair on Go") + (
        "liveness grows: forall a: agent :: C[a].state == T ~> C[a].n >= 2;\n")
    free = check(load_spec_text(text, "l.coh"), CheckOptions(liveness=True, symmetry=False))
    assert "grows" in free.properties and "grows" not in {f.name for f in free.failures}
    bounded = check(load_spec_text(text + "assume forall a: agent :: C[a].n <= 1;\n", "l.coh"),
                    CheckOptions(liveness=True, symmetry=False))
    assert [(f.kind, f.name) for f in bounded.failures] == [("liveness", "grows")]


# ---------------------------------------------------------------- Z3

BROKEN = "invariant not_shared: forall a: agent :: C[a].state == S -> a not in Dir.sharers;\n"


def test_bmc_agrees_with_the_checker_under_assume() -> None:
    """BMC constrains every state of a path by the assumptions: the same first failing depth
    per property as the checker (the invariant fails after Load, Req and Data)."""
    model = load_spec_text(FEATURES.read_text() + BROKEN, "broken.coh")
    assert assert_agree(model, 4) == {"invariant:not_shared": 3}


def test_bmc_does_not_report_a_failure_only_in_discarded_states() -> None:
    stuck = STUCK + "assume forall a: agent :: C[a].n <= 1;\n"
    assert assert_agree(load_spec_text(stuck, "stuck.coh"), 4) == {}
    assert assert_agree(load_spec_text(STUCK, "stuck.coh"), 4) == {"invariant:never_two": 2,
                                                                   "error:error": 4}


def test_k_induction_proves_the_constrained_spec() -> None:
    stuck = STUCK + "assume forall a: agent :: C[a].n <= 1;\n"
    result = induction(load_spec_text(stuck, "stuck.coh"), 2, rlimit=PROOF_RLIMIT)
    assert result.verdict == "holds", result.reason


def test_proof_for_every_number_of_agents_with_not_in_and_conditionals() -> None:
    result = prove_all(load_spec(MEMBERS), rlimit=PROOF_RLIMIT)
    assert result.verdict == "holds", result.reason
    assert "invariant:member_joined" in result.proved


def test_proof_for_every_number_of_agents_refuses_assume() -> None:
    with pytest.raises(Unsupported) as info:
        prove_all(load_spec(FEATURES), refute_depth=2)
    assert "assume few_grants: state constraints are not supported" in info.value.message
    assert (info.value.span.line, info.value.span.col) == (44, 1)


# ---------------------------------------------------------------- exporters


@pytest.mark.skipif(shutil.which("rumur") is None or shutil.which("cc") is None,
                    reason="rumur and cc are needed")
def test_rumur_counts_the_same_states_with_assume() -> None:
    from coherence.export.rumur import run_rumur
    model = load_spec(FEATURES)
    text = to_murphi(model)
    assert 'assume "few_grants"' in text and " ? " in text
    theirs = run_rumur(text, symmetry="off")
    assert (theirs.verdict, theirs.states) == ("holds", FEATURE_COUNTS[(2, False)])


@pytest.mark.skipif(shutil.which("spin") is None or shutil.which("gcc") is None,
                    reason="spin and gcc are needed")
def test_spin_counts_the_same_states() -> None:
    from coherence.export.spin import run_spin
    model = load_spec_text(without_assume(FEATURES), "unconstrained.coh")
    text = to_promela(model)
    theirs = run_spin(text)
    ready = int(re.search(r"^#define READY (\d+)", text, re.M).group(1))  # type: ignore[union-attr]
    assert theirs.verdict == "holds"
    assert theirs.states == (ready + 1) * UNCONSTRAINED_COUNTS[(2, False)] + 1


def test_promela_export_refuses_assume_with_a_located_error() -> None:
    with pytest.raises(ExportError) as info:
        to_promela(load_spec(FEATURES))
    assert "state constraints are not supported by the Promela export" in info.value.message
    assert (info.value.span.line, info.value.span.col) == (44, 1)


# ---------------------------------------------------------------- fuzzing and diagrams


def test_fuzzing_finds_a_bug_behind_the_additions() -> None:
    model = load_spec_text(FEATURES.read_text() + BROKEN, "broken.coh")
    result = fuzz(model, seed=1, budget=200, steps=20)
    assert result.failure is not None and "not_shared" in result.failure.message


def test_fuzzing_respects_assume() -> None:
    """Random runs never enter a discarded state: the invariant that only such states break
    is never reported."""
    model = load_spec_text(STUCK + "assume forall a: agent :: C[a].n <= 1;\n", "stuck.coh")
    assert fuzz(model, seed=1, budget=100, steps=10).failure is None


def test_diagrams_print_the_additions_as_written() -> None:
    model = load_spec(FEATURES)
    home = model.machine("Dir")
    printer = Printer(model, home)
    guard = home.transitions[0].body[0]
    assert isinstance(guard, ir.If)
    assert printer.expr(guard.cond) == "msg.src not in sharers"
    give = guard.then[-1]
    assert isinstance(give, ir.Assign) and isinstance(give.value, ir.Cond)
    assert printer.expr(give.value) == "if grants < 2 then grants + 1 else 2"
