"""``count(a: T :: body)``, the counting expression, end to end.

The front end (syntax, typing, located errors, ``count`` still an ordinary name elsewhere, the
printer's text re-parses), the reference semantics, and every back end that takes it against
the reference: the compiled engine (same states, rules, depth and failures), BMC and
k-induction at a fixed size, and the Murphi (Rumur) and Promela (Spin) exports. The specs are
tests/specs/count/: a directory that counts its sharers in an int (``sharer_counter``, on an
unordered network; ``bus_counter``, on an atomic bus, where the count invariant is inductive)
and a mutant of each that forgets to decrement.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from helpers import assert_agree

from coherence import ir, load_spec
from coherence.cli import main
from coherence.diagrams.pretty import Printer
from coherence.engines import check
from coherence.engines.compiled import CompiledEngine
from coherence.errors import SpecError
from coherence.export.murphi import ExportError, to_murphi
from coherence.export.promela import to_promela
from coherence.export.rumur import rumur_available, run_rumur
from coherence.export.spin import run_spin
from coherence.results import CheckOptions, CheckResult
from coherence.spec.load import load_spec_text
from coherence.spec.select import drop_properties

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "tests" / "specs" / "count"
SHARERS = SPECS / "sharer_counter.coh"
SHARERS_BAD = SPECS / "sharer_counter_no_decrement.coh"
BUS = SPECS / "bus_counter.coh"
BUS_BAD = SPECS / "bus_counter_no_decrement.coh"
ALL = [SHARERS, SHARERS_BAD, BUS, BUS_BAD]
TWO_LEVEL = ROOT / "tests" / "specs" / "hierarchy" / "two_level_wt.coh"

needs_cc = pytest.mark.skipif(CompiledEngine().available() is not None, reason="no C compiler")
needs_spin = pytest.mark.skipif(shutil.which("spin") is None or shutil.which("gcc") is None,
                                reason="spin and gcc are needed")
needs_rumur = pytest.mark.skipif(not rumur_available(), reason="rumur and cc are needed")

HEAD = """
param agents = 3;
event Go;
home machine H { stable state R; init R; var n: int[0..3] = 0; }
cache machine C {
  stable state I, S;
  init I;
  var k: int[0..2] = 0;
  var d: value = undefined;
  on Go in I { goto S; }
}
"""


def _load(text: str, name: str = "t.coh") -> ir.Model:
    return load_spec_text(HEAD + text, name)


def _invariant(model: ir.Model, name: str) -> ir.Expr:
    return next(i.expr for i in model.invariants if i.name == name)


def _counts(e: object) -> list[ir.Count]:
    """Every Count node under ``e``, outermost first."""
    out: list[ir.Count] = []
    stack = [e]
    while stack:
        node = stack.pop()
        if isinstance(node, ir.Count):
            out.append(node)
        if isinstance(node, tuple):
            stack.extend(reversed(node))
        elif hasattr(type(node), "__attrs_attrs__") and not isinstance(node, ir.Type):
            stack.extend(getattr(node, f.name) for f in type(node).__attrs_attrs__)
    return out


# ---------------------------------------------------------------- front end


@pytest.mark.parametrize(("binder", "size"), [
    ("agent", 3), ("int[2..6]", 5), ("bool", 2), ("value", 2), ("node", 4)])
def test_count_is_an_int_up_to_its_domain_size(binder: str, size: int) -> None:
    model = _load(f"invariant x: count(a: {binder} :: true) >= 0;")
    (c,) = _counts(_invariant(model, "x"))
    assert c.var == "a" and c.type == ir.IntT(0, size)
    assert len(ir.domain(c.var_type)) == size
    assert c.body == ir.Lit(ir.BoolT(), 1)


def test_count_binds_its_variable_and_is_an_int_everywhere() -> None:
    model = _load("""
invariant nested: forall i: agent :: count(a: agent :: a != i && C[a].state == S) + 1 <= 3;
invariant in_msg: count(a: agent :: C[a].state == S) == count(b: agent :: C[b].k > 0);
""")
    nested = _invariant(model, "nested")
    assert isinstance(nested, ir.Quant)
    outer = nested.body
    assert isinstance(outer, ir.Binary) and isinstance(outer.left, ir.Binary)
    assert outer.left.type == ir.IntT(1, 4)  # count + 1
    (c,) = _counts(nested)
    assert ir.Local("i", ir.AgentT(3)) in _locals(c.body)
    assert len(_counts(_invariant(model, "in_msg"))) == 2


def _locals(e: object) -> list[ir.Local]:
    out = []
    stack = [e]
    while stack:
        node = stack.pop()
        if isinstance(node, ir.Local):
            out.append(node)
        elif hasattr(type(node), "__attrs_attrs__") and not isinstance(node, ir.Type):
            stack.extend(getattr(node, f.name) for f in type(node).__attrs_attrs__)
    return out


def test_count_in_a_guard_and_an_assignment_lowers() -> None:
    model = load_spec(SHARERS)
    dir_ = model.machine("Dir")
    cache = model.machine("Cache")
    assigns = [s for t in dir_.transitions for s in ir.walk_stmts(t.body)
               if isinstance(s, ir.Assign) and isinstance(s.value, ir.Count)]
    guards = [t.guard for t in cache.transitions if t.guard is not None and _counts(t.guard)]
    assert len(assigns) == 1 and len(guards) == 1


def test_count_is_still_an_ordinary_name() -> None:
    """``count`` is a keyword only right before ``(``."""
    model = load_spec_text("""
param agents = 2;
event Go;
home machine H { stable state R; init R; var count: int[0..3] = 0; }
cache machine C { stable state I; init I; on Go { H.count := H.count + 1; } }
invariant small: H.count <= 3 && count(a: agent :: C[a].state == I) == 2;
""", "names.coh")
    assert [v.name for v in model.machine("H").vars] == ["count"]
    assert len(_counts(_invariant(model, "small"))) == 1


PROCEDURE = """
param agents = 3;
event Go;
procedure tally(x: agent) { H.n := count(a: agent :: a != x && C[a].state == S); }
home machine H { stable state R; init R; var n: int[0..3] = 0; }
cache machine C {
  stable state I, S;
  init I;
  on Go in I { let a = self; tally(a); goto S; }
}
"""


def test_a_count_in_a_procedure_binds_its_own_name() -> None:
    """Expanding ``tally(a)`` renames the count's ``a``, so it does not capture the caller's
    ``a``: the third cache to go counts the two already in S."""
    model = load_spec_text(PROCEDURE + "invariant two: H.n <= 2;\n", "proc.coh")
    (c,) = [c for t in model.machine("C").transitions for s in ir.walk_stmts(t.body)
            if isinstance(s, ir.Assign) for c in _counts(s.value)]
    assert c.var != "a" and ir.Local("a", ir.AgentT(3)) in _locals(c.body)
    assert check(model).verdict == "holds"
    one = load_spec_text(PROCEDURE + "invariant one: H.n <= 1;\n", "proc.coh")
    result = check(one)
    assert result.verdict == "fails" and [f.length for f in result.failures] == [3]


@pytest.mark.parametrize(("text", "message"), [
    ("invariant x: count(a: agent :: C[a].k) == 0;", "expected a bool, got int[0..2]"),
    ("invariant x: forall a: agent :: count(a: agent :: true) == 0;", "'a' is already bound"),
    ("invariant x: count(a: agent :: true) == 0 && a == a;", "a"),
    ("invariant x: count(a: agent :: true);", "expected a bool, got int[0..3]"),
    ("invariant x: count(a: set<agent> :: true) == 0;", "cannot quantify over"),
])
def test_bad_counts_are_located_errors(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=re.escape(message)) as err:
        _load(text, "bad.coh")
    assert str(err.value).startswith(f"bad.coh:{HEAD.count(chr(10)) + 1}:")


def test_count_over_messages_outside_an_invariant_is_refused() -> None:
    """NOTE(message-count): like the message quantifiers, a count of messages in flight is
    for invariants only (a guard reading the network would be a new kind of step)."""
    text = """
param agents = 2;
message Req;
network net: unordered, capacity = 2;
home machine H { stable state R; init R; on Req when count(m: Req :: true) == 0 { } }
cache machine C { stable state I; init I; }
"""
    with pytest.raises(SpecError, match="only allowed in invariants") as err:
        load_spec_text(text, "msg.coh")
    assert str(err.value).startswith("msg.coh:5:")


def test_cli_reports_a_non_bool_body_with_its_location(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "bad.coh"
    spec.write_text(HEAD + "invariant x:\n  count(a: agent :: C[a].k + 1) == 0;\n")
    assert main(["check", str(spec)]) == 2
    err = capsys.readouterr().err
    line = HEAD.count("\n") + 2
    assert f"bad.coh:{line}:21: error: expected a bool, got int[1..3]" in err
    assert "Traceback" not in err


def _count_sites(model: ir.Model) -> list[ir.Expr]:
    """Each invariant that holds a count, whole (its counts may use the invariant's bound
    names), then each count in a guard or an assignment."""
    out: list[ir.Expr] = [i.expr for i in model.invariants if _counts(i.expr)]
    for m in model.machines:
        for t in m.transitions:
            if t.guard is not None:
                out += _counts(t.guard)
            for s in ir.walk_stmts(t.body):
                if isinstance(s, ir.Assign):
                    out += _counts(s.value)
    return out


@pytest.mark.parametrize("path", [SHARERS, BUS])
def test_printed_counts_parse_back_to_the_same_ir(path: Path) -> None:
    """The diagram printer's text of every count (in invariants, guards, assignments) is spec
    text that lowers to the same IR."""
    model = load_spec(path)
    sites = _count_sites(model)
    printed = [Printer(model).expr(e) for e in sites]
    assert len(printed) >= 2 and sum(p.startswith("count(") for p in printed) >= 1
    extra = "".join(
        f"invariant again{k}: {p}{'' if isinstance(e.type, ir.BoolT) else ' >= 0'};\n"
        for k, (p, e) in enumerate(zip(printed, sites, strict=True)))
    again = load_spec_text(path.read_text() + extra, path.name)
    for k, e in enumerate(sites):
        back = _invariant(again, f"again{k}")
        if not isinstance(e.type, ir.BoolT):
            assert isinstance(back, ir.Binary)
            back = back.left
        assert back == e, printed[k]


def test_printer_text() -> None:
    model = load_spec(BUS)
    (c,) = _counts(_invariant(model, "counted"))
    assert Printer(model).expr(c) == "count(a: agent :: Cache[a].state == S)"


# ---------------------------------------------------------------- reference semantics


@pytest.mark.parametrize(("text", "verdict"), [
    ("invariant x: count(v: int[0..3] :: v < 2) == 2;", "holds"),
    ("invariant x: count(v: int[0..3] :: v < 2) == 3;", "fails"),
    ("invariant x: count(a: agent :: true) == agents;", "holds"),
    # after one Go, one cache is in S: the count is 0 initially, then 1, ...
    ("invariant x: count(a: agent :: C[a].state == S) <= 1;", "fails"),
    ("invariant x: count(a: agent :: C[a].state == S) + count(a: agent :: C[a].state == I)"
     " == 3;", "holds"),
])
def test_reference_counts(text: str, verdict: str) -> None:
    assert check(_load(text)).verdict == verdict


def test_an_error_in_the_body_is_an_error() -> None:
    """Every value's body is evaluated: an undefined read in any one is a model error."""
    result = check(_load("invariant x: count(a: agent :: C[a].d == 0) >= 0;"))
    assert result.verdict == "fails"
    assert [f.kind for f in result.failures] == ["error"]
    assert "undefined" in result.failures[0].message


@pytest.mark.parametrize(("agents", "states"), [(2, 34), (3, 109)])
def test_sharer_counter_holds(agents: int, states: int) -> None:
    result = check(load_spec(SHARERS, {"agents": agents}))
    assert (result.verdict, result.states) == ("holds", states)


def test_the_mutant_breaks_the_count_invariant() -> None:
    result = check(load_spec(SHARERS_BAD), CheckOptions(stop_at_first=True))
    assert result.verdict == "fails"
    assert {(f.name, f.length) for f in result.failures} == {("counted", 5)}


# ---------------------------------------------------------------- compiled engine


def _summary(result: CheckResult) -> tuple:
    return (result.states, result.rules_fired, result.depth, result.verdict,
            sorted((f.key, f.length) for f in result.failures))


@needs_cc
@pytest.mark.parametrize("symmetry", [True, False], ids=["sym", "nosym"])
@pytest.mark.parametrize("agents", [2, 3])
@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_compiled_engine_matches_the_reference(path: Path, agents: int, symmetry: bool,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COHERENCE_CFLAGS", "-O0")
    model = load_spec(path, {"agents": agents})
    options = CheckOptions(symmetry=symmetry, threads=2)
    ours = check(model, options, engine="compiled")
    assert ours.engine == "compiled"
    ref = check(model, options, engine="reference")
    assert _summary(ours) == _summary(ref)
    assert ref.verdict == ("fails" if "no_decrement" in path.stem else "holds")
    if ref.verdict == "fails":
        assert "counted" in {f.name for f in ours.failures}


@needs_cc
@pytest.mark.parametrize("symmetry", [True, False], ids=["sym", "nosym"])
def test_compiled_engine_matches_the_reference_on_a_hierarchy(
        symmetry: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counts over an index type nested in a gpu (``sm``), in a hierarchical spec."""
    monkeypatch.setenv("COHERENCE_CFLAGS", "-O0")
    model = _hier(HIER_FAILS)
    options = CheckOptions(symmetry=symmetry, threads=2)
    ours = check(model, options, engine="compiled")
    assert ours.engine == "compiled"
    assert _summary(ours) == _summary(check(model, options, engine="reference"))
    assert {f.name for f in ours.failures} == {"none_valid"}


@needs_cc
def test_compiled_engine_reports_an_error_in_a_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COHERENCE_CFLAGS", "-O0")
    model = _load("invariant x: count(a: agent :: C[a].d == 0) >= 0;")
    ours = check(model, CheckOptions(threads=1), engine="compiled")
    assert _summary(ours) == _summary(check(model, CheckOptions(), engine="reference"))
    assert [f.kind for f in ours.failures] == ["error"]


# ---------------------------------------------------------------- Z3, fixed size


def test_k_induction_proves_the_bus_counter(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", str(BUS), "--agents", "2", "--induction", "1"]) == 0
    assert "PROVED for 2 agent(s) by 1-induction" in capsys.readouterr().out


def test_k_induction_refutes_the_bus_mutant(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", str(BUS_BAD), "--agents", "2", "--induction", "3"]) == 1
    out = capsys.readouterr().out
    assert "FAIL counted (invariant)" in out and "FAILS (base case)" in out


def test_bmc_agrees_with_the_checker_on_the_mutants() -> None:
    """BMC finds each failure first at the checker's shortest counterexample length."""
    assert assert_agree(load_spec(SHARERS_BAD, {"agents": 2}), 6) == {"invariant:counted": 5}
    groups = assert_agree(load_spec(BUS_BAD, {"agents": 2}), 3)
    assert groups["invariant:counted"] == 2


def test_bmc_finds_nothing_in_the_sharer_counter(capsys: pytest.CaptureFixture[str]) -> None:
    """13 steps: the checker's whole reachable space at 2 agents is within depth 13 (exit 3:
    a bounded search proves nothing beyond its depth)."""
    assert check(load_spec(SHARERS, {"agents": 2})).depth == 13
    assert main(["prove", str(SHARERS), "--agents", "2", "--bmc", "13"]) == 3
    assert "no failure up to depth 13" in capsys.readouterr().out


def test_hierarchical_proof_for_every_size_refuses_a_free_count(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "h.coh"
    spec.write_text("""param sms = 2;
index sm: sms;
event Go;
machine L1[s: sm] {
  stable state I, V;
  init I;
  on Go in I { goto V; }
}
machine Mem { stable state R; init R; }
invariant bounded: count(s: sm :: L1[s].state == V) >= 0;
""")
    assert check(load_spec(spec)).verdict == "holds"
    assert main(["prove", str(spec), "--agents", "any", "--over", "sm"]) == 2
    err = capsys.readouterr().err
    assert "h.coh:10:20: error: count() over the free index or nodes is not supported" in err


# ---------------------------------------------------------------- exports


def _flat(path: Path, agents: int) -> ir.Model:
    model = load_spec(path, {"agents": agents})
    return drop_properties(model, [p.name for p in model.properties if p.kind == "coherence"])


def _hier(extra: str) -> ir.Model:
    text = TWO_LEVEL.read_text() + extra
    model = load_spec_text(text, "two_level_count.coh", {"gpus": 1, "sms": 2, "capacity": 1})
    return drop_properties(model, [p.name for p in model.properties if p.kind == "coherence"])


HIER_HOLDS = """
invariant sharers_counted: forall g: gpu :: count(s: sm :: s in L2[g].sharers)
  == size(L2[g].sharers);
invariant valid_tracked: forall g: gpu :: count(s: sm :: L1[g, s].state == V)
  <= count(t: sm :: t in L2[g].sharers || inflight(Inv, L1[g, t]));
"""
HIER_FAILS = HIER_HOLDS + "invariant none_valid: forall g: gpu :: count(s: sm :: " \
    "L1[g, s].state == V) == 0;\n"


def _rumur_agrees(model: ir.Model, symmetry: bool = False) -> str:
    ours = check(model, CheckOptions(symmetry=symmetry, stop_at_first=True))
    theirs = run_rumur(to_murphi(model), symmetry="exhaustive" if symmetry else "off")
    assert theirs.verdict == ours.verdict, theirs.output[-3000:]
    if ours.verdict == "holds":
        assert theirs.states == ours.states
    else:
        names = {f.name for f in ours.failures}
        assert any(f'invariant "{n}" failed' in theirs.output for n in names), (
            theirs.output[-3000:])
    return ours.verdict


def _spin_agrees(model: ir.Model) -> str:
    text = to_promela(model)
    ours = check(model, CheckOptions(symmetry=False, stop_at_first=True))
    theirs = run_spin(text)
    assert theirs.verdict == ours.verdict, theirs.output[-3000:]
    if ours.verdict == "holds":
        steps = int(re.search(r"^#define READY (\d+)", text, re.M).group(1)) + 1
        assert theirs.states == steps * ours.states + 1
    else:
        assert theirs.failure is not None
        assert any(f.name in theirs.failure for f in ours.failures), theirs.failure
    return ours.verdict


@needs_rumur
@pytest.mark.parametrize("agents", [2, 3])
@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_rumur_agrees(path: Path, agents: int) -> None:
    verdict = _rumur_agrees(_flat(path, agents))
    assert verdict == ("fails" if "no_decrement" in path.stem else "holds")


@needs_rumur
def test_rumur_symmetry_agrees_on_the_count() -> None:
    """Rumur's exhaustive scalarset reduction meets our exact symmetry: 109 states."""
    assert _rumur_agrees(_flat(SHARERS, 3), symmetry=True) == "holds"


@needs_rumur
@pytest.mark.parametrize(("extra", "verdict"), [
    pytest.param(HIER_HOLDS, "holds", id="holds"),
    # Rumur's build of the hierarchy takes ~7 s: the failing case in the slow tier
    pytest.param(HIER_FAILS, "fails", id="fails", marks=pytest.mark.slow)])
def test_rumur_agrees_on_a_hierarchical_count(extra: str, verdict: str) -> None:
    assert _rumur_agrees(_hier(extra)) == verdict


@needs_spin
@pytest.mark.parametrize("agents", [2, 3])
@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_spin_agrees(path: Path, agents: int) -> None:
    verdict = _spin_agrees(_flat(path, agents))
    assert verdict == ("fails" if "no_decrement" in path.stem else "holds")


@needs_spin
@pytest.mark.parametrize(("extra", "verdict"), [
    pytest.param(HIER_HOLDS, "holds", id="holds"), pytest.param(HIER_FAILS, "fails", id="fails")])
def test_spin_agrees_on_a_hierarchical_count(extra: str, verdict: str) -> None:
    assert _spin_agrees(_hier(extra)) == verdict


UNDEFINED_READ = """
param agents = 3;
event Go;
home machine H { stable state R; init R; }
cache machine C {
  stable state I, S;
  init I;
  var d: value = 0;
  on Go in I { undefine d; goto S; }
}
invariant x: count(a: agent :: C[a].d == 0) <= 3;
"""


@needs_rumur
def test_rumur_reports_an_error_in_a_count_body() -> None:
    """After one Go, one agent's body reads an undefined value: an error in every engine."""
    model = load_spec_text(UNDEFINED_READ, "undef.coh")
    ours = check(model, CheckOptions(symmetry=False))
    assert [(f.kind, f.length) for f in ours.failures] == [("error", 1)]
    theirs = run_rumur(to_murphi(model), symmetry="off")
    assert theirs.verdict == "fails"
    assert re.search(r'read of undefined value in .* within property "x"', theirs.output)


@needs_spin
def test_spin_reports_an_error_in_a_count_body() -> None:
    model = load_spec_text(UNDEFINED_READ, "undef.coh")
    theirs = run_spin(to_promela(model))
    assert theirs.verdict == "fails" and theirs.failure is not None
    assert theirs.failure.startswith("error: read of undefined value")


def test_murphi_refuses_a_count_over_nodes(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Nodes are not a Murphi type here: a located error, exit 2 from the CLI."""
    spec = tmp_path / "nodes.coh"
    spec.write_text(HEAD + "invariant x: count(n: node :: true) == 4;\n")
    with pytest.raises(ExportError, match=r"count\(\) over node") as err:
        to_murphi(load_spec(spec))
    line = HEAD.count("\n") + 1
    assert f"nodes.coh:{line}:14:" in str(err.value)
    assert main(["export", str(spec), "--to", "murphi"]) == 2
    assert f"nodes.coh:{line}:14:" in capsys.readouterr().err


def test_murphi_text_of_a_count() -> None:
    """Over a scalarset: one term per 'at least k distinct agents'; over an int range: one
    constant per value."""
    text = to_murphi(_flat(BUS, 2))
    inv = next(line for line in text.splitlines() if line.startswith('invariant "counted"'))
    assert "exists l_a__0: AGENT do exists l_a__1: AGENT do l_a__0 != l_a__1 &" in inv
    assert inv.count("? 1 : 0") == 2
    below = next(line for line in to_murphi(_flat(SHARERS, 2)).splitlines()
                 if line.startswith('invariant "below_n"'))
    assert below.count("? 1 : 0") == 3 and "(0 <= st.h_n)" in below
