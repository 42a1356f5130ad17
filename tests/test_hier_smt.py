"""The Z3 back end on hierarchical specs (issue 20, NOTE(z3-hierarchy)): the encoding agrees
with the reference semantics state by state (actions, errors, successors, failure groups), BMC
finds each failure first at the reference checker's shortest length (seeded bugs of the test
spec with known shortest counterexamples) and nothing where the checker proves the spec, every
Z3 trace replays through ``coherence.semantics``, and k-induction proves or gives a replayed
counterexample to induction. The bundled hierarchical specs (specs/*.coh with ``index``
declarations) are included as they land.

Default tier: the first 40 states and small depths; slow tier:
``python3 -m pytest -m slow tests/test_hier_smt.py`` (deeper, more states)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import z3
from helpers import ROOT, SPECS, assert_agree, checker_groups

from coherence import ir
from coherence.explore import Search, bfs
from coherence.results import Failure
from coherence.semantics import Semantics, State, param_values, spontaneous
from coherence.smt.bmc import bmc
from coherence.smt.extract import action_of, state_of
from coherence.smt.induction import induction
from coherence.smt.state import terms
from coherence.smt.system import Encoder
from coherence.spec.load import load_spec, load_spec_text
from coherence.trace import action_from_json

TWO_LEVEL = ROOT / "tests/specs/hierarchy/two_level_wt.coh"
RLIMIT = 400_000_000  # Z3's deterministic resource bound per check (never wall-clock)


def _bundled() -> list[Path]:
    """The bundled hierarchical specs (those declaring an index type)."""
    return [p for p in sorted(SPECS.glob("*.coh"))
            if re.search(r"^\s*index\s+\w+\s*:", p.read_text(), re.M)]


# ---------------------------------------------------------------- state by state

FIRST, DEEP = 40, 1500


def _first_states(sem: Semantics, limit: int) -> list[State]:
    search: Search[Any] = Search()

    def expand(_i: int, state: Any, add: Callable[[Any], int]) -> None:
        for out in sem.enabled(state)[0]:
            if out.state is not None and len(search.nodes) < limit:
                add(out.state)

    bfs(sem.initial_states(), expand, search=search)
    return search.nodes


def _agreement_cases() -> list[Any]:
    out = [pytest.param(TWO_LEVEL, {"gpus": 1, "sms": 2, "values": 2}, FIRST,
                        id="two_level_wt-1x2"),
           pytest.param(TWO_LEVEL, {"gpus": 2, "sms": 1, "values": 1}, FIRST,
                        id="two_level_wt-2x1"),
           pytest.param(TWO_LEVEL, {"gpus": 2, "sms": 2, "values": 1}, DEEP,
                        id="two_level_wt-2x2-deep", marks=pytest.mark.slow)]
    for p in _bundled():
        out.append(pytest.param(p, {"gpus": 2, "sms": 1}, FIRST, id=f"{p.stem}-2x1"))
        out.append(pytest.param(p, {"gpus": 1, "sms": 2}, DEEP, id=f"{p.stem}-1x2-deep",
                                marks=pytest.mark.slow))
    return out


@pytest.mark.parametrize(("path", "params", "limit"), _agreement_cases())
def test_z3_agrees_with_the_semantics_state_by_state(path: Path, params: dict[str, int],
                                                     limit: int) -> None:
    """On each of the first reachable states: the Z3 actions that fire are the semantics'
    enabled actions, those that err the erring ones, each successor Z3 builds is the
    semantics' successor, and 'no transition', deadlock and every invariant agree."""
    model = load_spec(path, params)
    assert model.is_hierarchical
    sem = Semantics(model)
    enc = Encoder(model)
    system = enc.system()
    fires = [z3.Or(r.ok, r.error, r.coherence) for r in system.results]
    states = _first_states(sem, limit)
    assert len(states) == limit  # the sample is full
    kinds: set[ir.TransitionKind] = set()
    for state in states:
        solver = z3.Solver()
        solver.add([a == b for a, b in
                    zip(system.cur_leaves, terms(enc.layout.of_state(state)), strict=True)])
        assert solver.check() == z3.sat
        m = solver.model()

        def holds(f: Any, m: z3.ModelRef = m) -> bool:
            return z3.is_true(m.eval(f, model_completion=True))

        outcomes, problems = sem.enabled(state)
        by_action = {o.action: o for o in outcomes}
        fired, erred = set(), set()
        for i, spec in enumerate(enc.actions):
            if not holds(fires[i]):
                continue
            act = action_of(enc, spec, state)
            if isinstance(spec.where, int):  # unordered: the message in that slot
                act = act._replace(msg=state[1][spec.net][spec.where])
            fired.add(act)
            r = system.results[i]
            if holds(r.error) or holds(r.coherence):
                erred.add(act)
            elif act in by_action:  # the successor, monitor included
                assert state_of(enc, m, r.state) == by_action[act].state, (act, state)
        assert fired == set(by_action), state
        assert erred == {o.action for o in outcomes if o.error is not None}, state
        assert holds(system.groups[("no-transition", "*")][0]) == bool(problems), state
        assert holds(system.groups[("deadlock", "deadlock")][0]) == sem.is_deadlock(
            state, outcomes, problems), state
        violated = {(v.kind, v.name) for v in sem.invariant_violations(state)}
        for inv in model.invariants:
            assert holds(system.groups[("invariant", inv.name)][0]) == (
                ("invariant", inv.name) in violated), (inv.name, state)
        kinds |= {o.action.kind for o in outcomes}
    assert ir.TransitionKind.MESSAGE in kinds and ir.TransitionKind.EVENT in kinds


def test_z3_actions_are_the_semantics_per_node_instances() -> None:
    """The spontaneous actions are the semantics' (machine, node, line, transition, params)
    in its order (NOTE(actions)); receipts are per non-stalling handler."""
    model = load_spec(TWO_LEVEL, {"gpus": 2, "sms": 2})
    enc = Encoder(model)
    sem = enc.sem
    got = [(a.machine, a.agent, a.line, a.transition, a.params) for a in enc.actions
           if a.kind is not ir.TransitionKind.MESSAGE]
    want = [(mach.name, node, line, tr.index, ps) for line in range(model.lines)
            for node, mach in enumerate(sem.node_machine)
            for tr in spontaneous(mach) for ps in param_values(tr)]
    assert got == want and len(got) == 4 * (2 + model.values)  # Load in V, in I, Store(v)
    enabled = {(a.machine, a.agent, a.line, a.transition, a.params)
               for a in sem.action_instances(sem.initial_states()[0])}
    assert enabled < set(got)
    assert {a.agent for a in enc.actions if a.kind is ir.TransitionKind.MESSAGE
            and a.machine == "L2"} == {4, 5}


FIFO = """
param gpus = 2;
param sms = 2;
index gpu: gpus;
index sm: sms within gpu;
network net: fifo, capacity = 1;
message Hello;
message Back;
event Go;
machine L1[g: gpu, s: sm] {
  state I, W, D;
  init I;
  on Go in I { send Hello to L2[g]; goto W; }
  on Back in W { goto D; }
}
machine L2[g: gpu] {
  state R;
  init R;
  on Hello { send Back to msg.src; }
}
invariant not_all_done: forall g: gpu :: exists s: sm :: L1[g, s].state != D;
"""


def test_fifo_queues_are_those_the_sends_can_connect() -> None:
    """NOTE(z3-fifo-pairs): an L1 sends only to its own gpu's L2 (4 queues, not 4 x 6); a
    reply to msg.src may reach any node; BMC still agrees with the checker."""
    model = load_spec_text(FIFO, "fifo.coh")
    enc = Encoder(model)
    l1_to_l2 = {(0, 4), (1, 4), (2, 5), (3, 5)}
    assert enc.layout.pairs["net"] == l1_to_l2 | {(s, d) for s in (4, 5) for d in range(6)}
    assert len(enc.layout.fifo_keys("net")) == 16
    assert assert_agree(model, 6) == {"invariant:not_all_done": 6}  # 3 steps per SM


# ---------------------------------------------------------------- BMC against the checker

TEXT = TWO_LEVEL.read_text()

# seeded bugs: (replaced, replacement, params, depth, {group: shortest length}), by name
STALE = ("on Inv in V { undefine data; goto I; }", "on Inv in V { }")
SEEDED = [
    pytest.param("send Data(data) to msg.src; sharers.add(msg.src.sm);",
                 "send Data(data) to msg.src;", {"gpus": 1, "sms": 2, "values": 1}, 7,
                 {"invariant:l1_copy_is_tracked": 7}, id="untracked"),
    pytest.param("on GetS in R when valid {", "on GetS in R when true {",
                 {"gpus": 1, "sms": 2, "values": 2}, 4, {"error:error": 3}, id="unguarded"),
    pytest.param("    send Ack to msg.src;\n  }", "  }", {"gpus": 1, "sms": 2, "values": 2}, 5,
                 {"deadlock:deadlock": 4}, id="unacknowledged"),
    pytest.param(*STALE, {"gpus": 1, "sms": 2, "values": 2}, 8,
                 {"invariant:l1_copy_is_tracked": 8}, id="stale", marks=pytest.mark.slow),
    pytest.param(*STALE, {"gpus": 2, "sms": 1, "values": 2}, 10,
                 {"invariant:l1_copy_is_tracked": 10}, id="stale-2x1", marks=pytest.mark.slow),
]


def _seeded(replaced: str, replacement: str, params: dict[str, int],
            coherence: bool = False) -> ir.Model:
    assert TEXT.count(replaced) == 1
    text = TEXT.replace(replaced, replacement)
    if coherence:
        text += "\nproperty coherent: coherence;\n"
    return load_spec_text(text, str(TWO_LEVEL), params)


@pytest.mark.parametrize(("replaced", "replacement", "params", "depth", "want"), SEEDED)
def test_bmc_finds_seeded_bugs_at_the_checkers_depth(
        replaced: str, replacement: str, params: dict[str, int], depth: int,
        want: dict[str, int]) -> None:
    model = _seeded(replaced, replacement, params)
    assert assert_agree(model, depth) == want
    if want:
        result = bmc(model, depth, rlimit=RLIMIT)
        assert result.verdict == "fails" and result.first_failing_depth == min(want.values())
        for f in result.failures:
            _replays(model, f)


def test_bmc_finds_a_coherence_violation_at_the_checkers_depth() -> None:
    """The coherence monitor over the processors (the L1s): an L2 that serves a read while
    its write is on its way to memory hands out a value not yet performed (5 steps)."""
    model = _seeded("on GetS, Put in BR, BW stall;",
                    "on GetS in BW { send Data(data) to msg.src; }\n"
                    "  on GetS in BR stall;\n  on Put in BR, BW stall;",
                    {"gpus": 1, "sms": 2, "values": 2}, coherence=True)
    groups = assert_agree(model, 5)
    assert groups == {"coherence:coherent": 5, "invariant:l1_copy_is_tracked": 5}
    result = bmc(model, 5, all_failures=True, rlimit=RLIMIT)
    coherence = [f for f in result.failures if f.kind == "coherence"]
    assert [f.length for f in coherence] == [5]
    _replays(model, coherence[0])


def test_bmc_finds_nothing_where_the_checker_proves_the_spec() -> None:
    model = load_spec(TWO_LEVEL, {"gpus": 1, "sms": 2, "values": 1})
    from coherence.engines import check
    from coherence.results import CheckOptions
    assert check(model, CheckOptions(symmetry=False)).verdict == "holds"
    result = bmc(model, 6, rlimit=RLIMIT)
    assert result.verdict == "bounded" and result.depth == 6 and not result.failures


def _bmc_cases() -> list[Any]:
    out = []
    for path in [TWO_LEVEL, *_bundled()]:
        out.append(pytest.param(path, {"gpus": 2, "sms": 1}, 4, id=f"{path.stem}-2x1"))
        out.append(pytest.param(path, {"gpus": 1, "sms": 2}, 5, id=f"{path.stem}-1x2",
                                marks=pytest.mark.slow))
        out.append(pytest.param(path, {"gpus": 2, "sms": 2}, 5, id=f"{path.stem}-2x2",
                                marks=pytest.mark.slow))
    return out


@pytest.mark.parametrize(("path", "params", "depth"), _bmc_cases())
def test_bmc_agrees_with_the_checker(path: Path, params: dict[str, int], depth: int) -> None:
    """Same first failing depth per failure group as the checker's BFS, and every trace
    replays (the test spec and the bundled hierarchical specs)."""
    model = load_spec(path, params)
    expected = checker_groups(model, depth)
    result = bmc(model, depth, all_failures=True, rlimit=RLIMIT)
    assert result.verdict != "unknown", result.reason
    assert result.groups == expected
    for f in result.failures:
        _replays(model, f)


@pytest.mark.parametrize(("spec", "depth", "want"), [
    pytest.param("multigpu_broadcast", 6, {"invariant:data_value": 6}, id="broadcast"),
    pytest.param("multigpu_broadcast", 7, {"invariant:data_value": 6,
                                           "invariant:stale_copy_is_doomed": 7},
                 id="broadcast-7", marks=pytest.mark.slow),
    pytest.param("gpu_two_level", 7, {"invariant:l2_copy_current": 7}, id="two_level-7",
                 marks=pytest.mark.slow),
])
def test_bmc_finds_the_bundled_specs_failures(spec: str, depth: int,
                                              want: dict[str, int]) -> None:
    """The bundled specs that fail by design (2 GPUs x 1 SM): BMC's first failing depth per
    invariant is the checker's shortest counterexample, and each trace replays."""
    model = load_spec(SPECS / f"{spec}.coh", {"gpus": 2, "sms": 1})
    assert checker_groups(model, depth) == want
    result = bmc(model, depth, all_failures=True, rlimit=RLIMIT)
    assert result.groups == want
    for f in result.failures:
        _replays(model, f)


def _replays(model: ir.Model, f: Failure) -> None:
    """The trace's actions, executed by the reference semantics from its initial state, are
    each enabled, and the last state (or step) shows the failure."""
    sem = Semantics(model)
    state = sem.initial_states()[0]
    actions = [action_from_json(s.action) for s in f.trace]
    for k, act in enumerate(actions):
        out = sem.execute(state, act)
        assert out is not None, (k, act)
        if out.error is not None:
            assert k == len(actions) - 1 and f.kind in ("error", "coherence")
            return
        assert out.state is not None
        state = out.state
    if f.kind == "invariant":
        assert (f.kind, f.name) in {(v.kind, v.name) for v in sem.invariant_violations(state)}
    elif f.kind == "deadlock":
        outcomes, problems = sem.enabled(state)
        assert sem.is_deadlock(state, outcomes, problems)
    else:
        assert f.kind == "no-transition" and sem.no_transitions(state)


# ---------------------------------------------------------------- k-induction

TOKEN = """
param gpus = 2;
param sms = 2;
index gpu: gpus;
index sm: sms within gpu;
network net: unordered, capacity = 1;
message Ping;
event Go;
machine L1[g: gpu, s: sm] {
  state I, D;
  init I;
  on Go in I { goto D; }
}
machine L2[g: gpu] {
  state R;
  init R;
  var seen: set<sm> = {};
  on Ping { }
}
invariant clean: forall g: gpu :: size(L2[g].seen) == 0;
invariant nothing_sent: !inflight(Ping);
"""


def test_induction_proves_a_hierarchical_invariant() -> None:
    result = induction(load_spec_text(TOKEN, "token.coh"), 1, deadlock=False, rlimit=RLIMIT)
    assert result.verdict == "holds", result.reason


def test_induction_gives_a_replayed_counterexample_to_induction() -> None:
    """two_level_wt is safe (the checker proves it) but not 2-inductive: the counterexample
    to induction is a state Z3 chose, its step replayed by the semantics (``_cti``)."""
    model = load_spec(TWO_LEVEL, {"gpus": 1, "sms": 2, "values": 1})
    result = induction(model, 2, rlimit=RLIMIT)
    assert result.verdict == "unknown" and result.cti is not None
    assert any(line.startswith("L2[0]: state ") for line in result.cti.pre)
    assert result.cti.step.actor in {"L1[0, 0]", "L1[0, 1]", "L2[0]", "Mem"}


def test_induction_base_case_fails_with_the_bmc_trace() -> None:
    model = _seeded("on GetS in R when valid {", "on GetS in R when true {",
                    {"gpus": 1, "sms": 2, "values": 2})
    result = induction(model, 3, rlimit=RLIMIT)
    assert result.verdict == "fails" and result.failures[0].length == 3
    _replays(model, result.failures[0])


# ---------------------------------------------------------------- the command line


def _prove(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coherence.cli", "prove", *args],
                          capture_output=True, text=True, cwd=ROOT, check=False)


def test_prove_bmc_json_on_a_hierarchical_spec() -> None:
    r = _prove(str(TWO_LEVEL), "--bmc", "3", "--param", "gpus=1", "--param", "sms=2",
               "--json")
    assert r.returncode == 3, r.stderr
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "bounded" and doc["depth_reached"] == 3
    assert doc["params"]["gpus"] == 1 and doc["params"]["sms"] == 2


def test_prove_agents_any_refuses_a_hierarchical_spec_at_its_machine() -> None:
    """At 2 GPUs the L1s are two families over sm: no proof for every size of one index type
    (tests/test_hier_prove_any.py has the shapes that are proved)."""
    r = _prove(str(TWO_LEVEL), "--agents", "any")
    assert r.returncode == 2
    assert re.search(r"two_level_wt\.coh:24:9: error: --agents any over sm: machine L1 is "
                     r"replicated over sm once per value of gpu", r.stderr), r.stderr
    assert "Traceback" not in r.stderr
