"""Promela export cross-checked by Spin: same verdict, and an exact state-count relation.

Every spec and mutant is exported with the coherence monitor skipped (the export leaves it
out, docs/spin.md) and checked by Spin (safety: assertions and invalid end states). Each of our
states is READY + 1 stored Spin states (raw, partly ready, ready), plus the state before
initialisation, so a spec that holds must give exactly ``(READY + 1) * ours + 1`` with our
symmetry off. Needs spin and gcc; skipped when they are missing. Default tier: the snooping
protocols and German at 2 agents, one mutant of each, and small specs for each failure kind;
slow tier (`python -m pytest -m slow tests/test_export_promela.py`): every spec at 2 and 3
agents and every mutant at 2 agents.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from helpers import flat_specs

from coherence import load_spec
from coherence.cli import main
from coherence.engines import check
from coherence.export.promela import ExportError, to_promela
from coherence.export.spin import run_spin
from coherence.results import CheckOptions
from coherence.spec.select import drop_properties

pytestmark = pytest.mark.skipif(shutil.which("spin") is None or shutil.which("gcc") is None,
                                reason="spin and gcc are needed")

ROOT = Path(__file__).resolve().parent.parent
SPECS = flat_specs(ROOT / "specs")  # hierarchical specs: tests/test_hier_export.py
MUTANTS = sorted((ROOT / "specs" / "mutants").glob("*.coh"))
MSI_SNOOP = str(ROOT / "specs" / "msi_snooping.coh")
FAST_SPECS = {"msi_snooping", "mesi_snooping", "german"}
FAST_MUTANTS = {"msi_snoop_no_inval_on_upgrade", "mesi_snoop_shared_wire_ignored",
                "german_gnte_while_shared"}


def test_the_case_lists_are_not_empty() -> None:
    """The lists come from the files: found wherever pytest runs from, never vacuous."""
    assert len(SPECS) >= 8 and len(MUTANTS) >= 20
    assert {p.stem for p in SPECS} >= FAST_SPECS
    assert {p.stem for p in MUTANTS} >= FAST_MUTANTS


def _model(path: Path, agents: int):
    model = load_spec(path, {"agents": agents})
    return drop_properties(model, [p.name for p in model.properties if p.kind == "coherence"])


def _compare(model) -> tuple:
    text = to_promela(model)
    ours = check(model, CheckOptions(symmetry=False, stop_at_first=True))
    theirs = run_spin(text)
    assert theirs.verdict == ours.verdict, theirs.output[-3000:]
    if ours.verdict == "holds":
        steps = int(re.search(r"^#define READY (\d+)", text, re.M).group(1)) + 1
        assert theirs.states == steps * ours.states + 1
    return ours, theirs


def _cases(paths: list[Path], agents: tuple[int, ...], fast: set[str]) -> list:
    out = []
    for p in paths:
        for n in agents:
            slow = p.stem not in fast or n > 2
            out.append(pytest.param(p, n, id=f"{p.stem}-{n}",
                                    marks=[pytest.mark.slow] if slow else []))
    return out


@pytest.mark.parametrize(("path", "agents"), _cases(SPECS, (2, 3), FAST_SPECS))
def test_spec_agrees_with_spin(path: Path, agents: int) -> None:
    _compare(_model(path, agents))


@pytest.mark.parametrize(("path", "agents"), _cases(MUTANTS, (2,), FAST_MUTANTS))
def test_mutant_caught_by_spin(path: Path, agents: int) -> None:
    ours, theirs = _compare(_model(path, agents))
    assert ours.verdict == theirs.verdict == "fails"


# ---------------------------------------------------------------- each failure kind

_HEAD = """
param agents = 2;
network net: fifo, capacity = 1;
message Req;
message Ack(v: value);
event Go;
"""

_FAILING = {
    # the home answers nothing, and the requester waits in a transient state: deadlock
    "deadlock": """
home machine H { state R; init R; on Req { } }
cache machine C {
  stable state I; transient state W; init I;
  on Go in I { send Req to home; goto W; }
  on Ack in W { goto I; }
}
""",
    # the Ack carries an undefined value that the cache then compares
    "undefined read": """
home machine H { state R; init R; var x: value = undefined; on Req { send Ack(x) to msg.src; } }
cache machine C {
  stable state I; transient state W; init I;
  on Go in I { send Req to home; goto W; }
  on Ack in W { if msg.v == 0 { goto I; } else { goto I; } }
}
""",
    # the home has no transition for Req in state B
    "no transition": """
home machine H { state R, B; init R; on Req in R { goto B; } }
cache machine C {
  state I; init I;
  on Go in I { send Req to home; }
  on Ack { }
}
""",
    # a counter overflows its range
    "overflow": """
home machine H { state R; init R; var n: int[0..1] = 0; on Req { n := n + 1; } }
cache machine C {
  state I; init I;
  on Go in I { send Req to home; }
  on Ack { }
}
""",
    "invariant": """
home machine H { state R; init R; var n: int[0..3] = 0; on Req { n := n + 1; } }
cache machine C {
  state I; init I;
  on Go in I { send Req to home; }
  on Ack { }
}
invariant small: H.n <= 1;
""",
}

_HOLDS = """
home machine H { state R; init R; var n: int[0..3] = 0;
  on Req { if n < 3 { n := n + 1; } send Ack(0) to msg.src; } }
cache machine C {
  stable state I; transient state W; init I;
  on Go in I { send Req to home; goto W; }
  on Ack in W { goto I; }
}
invariant bounded: H.n <= 3;
"""


@pytest.mark.parametrize("kind", sorted(_FAILING))
def test_each_failure_kind_agrees(tmp_path: Path, kind: str) -> None:
    spec = tmp_path / "m.coh"
    spec.write_text(_HEAD + _FAILING[kind], encoding="utf-8")
    ours, theirs = _compare(load_spec(spec, {}))
    assert ours.verdict == "fails"
    expected = {"deadlock": "deadlock", "undefined read": "undefined", "no transition":
                "no-transition", "overflow": "out of range", "invariant": "invariant"}[kind]
    assert theirs.failure is not None and expected in theirs.failure
    assert expected in f"{ours.failures[0].kind}: {ours.failures[0].message}"


_MIXED = """
param agents = 2;
network bus: bus;
network q: fifo, capacity = 1;
network u: unordered, capacity = 3;
message Snoop on bus;
message Note(x: value) on q;
message Tok(x: value) on u;
event Go;
event Put(v: value);
home machine H {
  state R, B;
  init R;
  var last: value = undefined;   // written, never read: Spin would drop it without -o2
  on Snoop { }
  on Note in R when msg.x == 0 { last := msg.x; }
  on Note in R when msg.x == 1 { goto B; }
  on Note in B stall;
  on Tok { let y = msg.x; if y == 1 { goto R; } }
  rule Spray in B { goto R; }
}
cache machine C {
  state I, S;
  init I;
  var d: value = undefined;
  // the snoopers' handlers send on the fifo inside this step: a full queue blocks it all
  on Go in I { broadcast Snoop except self; send Snoop to home; send Note(0) to home; goto S; }
  on Put(v) in S { d := v; send Note(v) to home; send Tok(v) to home; }
  on Snoop in I, S { send Note(1) to home; }
  rule Drop in S { undefine d; goto I; }
}
invariant fine: forall a: agent :: C[a].state == S -> C[a].state != I;
"""


def test_mixed_features_give_the_exact_count(tmp_path: Path) -> None:
    """Bus handlers that block on a fifo, a stall, overlapping guards, let, a write-only
    variable, an unordered multiset: the same states, counted exactly."""
    spec = tmp_path / "m.coh"
    spec.write_text(_MIXED, encoding="utf-8")
    ours, theirs = _compare(load_spec(spec, {}))
    assert ours.verdict == theirs.verdict == "holds"
    assert ours.states == 6847


def test_blocking_send_is_not_a_step(tmp_path: Path) -> None:
    """A full queue disables the sender (back-pressure), it does not fail or fire half."""
    spec = tmp_path / "m.coh"
    spec.write_text(_HEAD + _HOLDS, encoding="utf-8")
    ours, theirs = _compare(load_spec(spec, {}))
    assert ours.verdict == theirs.verdict == "holds"


_MSG_INVARIANTS = [
    # fifo network: what the grants in flight carry (true), and a false claim about them
    ("german.coh", "invariant aux gnts_data: forall m: GntS :: m.data == AuxData;\n"
     "invariant aux gnte_dst: forall m: GntE :: m.dst != home && m.src == home;", "holds"),
    ("german.coh", "invariant bad: forall m: GntS :: m.data == 1;", "fails"),
    ("german.coh", "invariant bad: !(exists m: InvAck :: m.src == m.src);", "fails"),
    # unordered network (slow tier: the directory's Spin build takes 10-20 s)
    pytest.param("msi_directory.coh", "invariant aux to_home: forall m: GetS :: m.dst == home;",
                 "holds", marks=pytest.mark.slow),
    pytest.param("msi_directory.coh", "invariant bad: !(exists m: GetS :: m.dst == home);",
                 "fails", marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("spec", "extra", "verdict"), _MSG_INVARIANTS)
def test_quantifier_over_messages_in_flight(tmp_path: Path, spec: str, extra: str,
                                            verdict: str) -> None:
    path = tmp_path / spec
    path.write_text((ROOT / "specs" / spec).read_text(encoding="utf-8") + extra + "\n",
                    encoding="utf-8")
    ours, theirs = _compare(_model(path, 2))
    assert ours.verdict == theirs.verdict == verdict


def test_unsupported_construct_is_a_located_error(tmp_path: Path) -> None:
    spec = tmp_path / "m.coh"
    spec.write_text("param lines = 2;\n" + _HEAD + _HOLDS, encoding="utf-8")
    with pytest.raises(ExportError, match="lines = 1") as err:
        to_promela(load_spec(spec, {}))
    assert "m.coh:1:" in str(err.value)
    assert main(["export", str(spec), "--to", "promela"]) == 2


def test_cli_cross_check_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["export", MSI_SNOOP, "--to", "promela", "--agents", "2",
                 "--cross-check", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert doc["ours"]["verdict"] == doc["spin"]["verdict"] == "holds"
    assert doc["verdicts_agree"] and doc["counts_agree"]
    assert doc["spin"]["states"] == doc["spin"]["spin_states_per_state"] * doc["ours"][
        "states"] + 1


def test_cli_refuses_symmetry_for_spin(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", MSI_SNOOP, "--to", "promela",
                 "--cross-check", "heuristic"]) == 2
    assert "symmetry" in capsys.readouterr().err


def test_export_writes_promela(tmp_path: Path) -> None:
    out = tmp_path / "m.pml"
    german = str(ROOT / "specs" / "german.coh")
    assert main(["export", german, "--to", "promela", "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "active proctype main()" in text and "#define READY" in text
    # called on a model that still has the monitor, the export says what it leaves out
    assert "NOT exported: the coherence monitor (coherent)" in to_promela(
        load_spec(ROOT / "specs" / "german.coh", {"agents": 2}))
