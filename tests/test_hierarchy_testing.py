"""Random testing of hierarchical specs (issue 20): ``coherence fuzz``, ``protocol_test`` and
``state_machine`` on a spec whose processors are the L1 instances of each GPU's SMs.

The processors are the instances of the machine that handles processor events; the swarm
strategy's agent subsets are subsets of them; the coherence oracle sees their loads and
stores. Seeded bugs (tests/specs/hierarchy_bugs/) are found and shrunk to traces that replay
through ``coherence.semantics``; the correct spec passes. Seeds are fixed and budgets small.
"""

from __future__ import annotations

import json
import random
import unittest
from importlib.resources import files
from pathlib import Path

import jsonschema
import pytest
from hierarchy_script import scripted
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from coherence import ir
from coherence.cli import main
from coherence.semantics import Semantics
from coherence.spec.load import load_spec, load_spec_text
from coherence.testing import ProtocolFailure, fuzz, load_model, protocol_test, state_machine
from coherence.testing.run import Run, prepare, replay
from coherence.testing.strategy import Stepper, Swarm, processors, random_draw, random_run, start
from coherence.trace import action_from_json, replay_actions

ROOT = Path(__file__).resolve().parents[1]
WT = ROOT / "tests" / "specs" / "hierarchy" / "two_level_wt.coh"
BUGS = ROOT / "tests" / "specs" / "hierarchy_bugs"
KEEPS_V = BUGS / "two_level_keeps_v.coh"
NO_SIBLING_INV = BUGS / "two_level_no_sibling_inv.coh"
# the checker's shortest counterexamples of the seeded bugs (coherence check ... -p gpus=1)
SHORTEST_KEEPS_V = 11
SHORTEST_NO_SIBLING_INV = 7


def reordered_wt(params: dict[str, int] | None = None) -> ir.Model:
    """two_level_wt with memory declared first and the L2 before the L1: the processors are
    then nodes 3.., not 0.. (NOTE(hierarchy-nodes)), so nothing may take node ids for agent
    ids."""
    text = WT.read_text(encoding="utf-8")
    cut = [text.index("machine L1["), text.index("machine L2["), text.index("machine Mem"),
           text.index("invariant l1_copy")]
    head, l1, l2, mem, tail = (text[:cut[0]], text[cut[0]:cut[1]], text[cut[1]:cut[2]],
                               text[cut[2]:cut[3]], text[cut[3]:])
    return load_spec_text(head + mem + l2 + l1 + tail, "reordered_wt.coh", params)


def replays_to(model: ir.Model, failure: object, oracle: str = "coherence") -> None:
    """The failure's trace replays through the semantics, and replaying its actions with
    every check (the oracle too) fails the same way at the last step."""
    trace = failure.trace  # type: ignore[attr-defined]
    actions = [action_from_json(s.action) for s in trace]
    assert [s.render() for s in replay_actions(Semantics(prepare(model)[0]), actions)] == [
        s.render() for s in trace]
    prepared, name = prepare(model)
    problem, taken = replay(Semantics(prepared), actions, oracle, name)
    assert problem is not None and (problem.kind, problem.name) == (
        failure.kind, failure.name)  # type: ignore[attr-defined]
    assert len(taken) == len(actions)


# ---------------------------------------------------------------- processors and swarm


def test_processors_are_the_event_machines_instances() -> None:
    sem = Semantics(load_spec(WT))
    assert processors(sem) == [0, 1, 2, 3]
    assert [sem.node_name(n) for n in processors(sem)] == [
        "L1[0, 0]", "L1[0, 1]", "L1[1, 0]", "L1[1, 1]"]
    sem = Semantics(reordered_wt())
    assert [sem.node_name(n) for n in processors(sem)] == [
        "L1[0, 0]", "L1[0, 1]", "L1[1, 0]", "L1[1, 1]"]
    assert processors(sem) == [3, 4, 5, 6]  # Mem is node 0, the L2s 1 and 2


def test_swarm_subsets_are_subsets_of_the_processors() -> None:
    """Over many drawn configurations: the agents a run confines requests to are L1 nodes,
    every non-empty wrapping subset occurs, and the L2s and memory are never confined."""
    sem = Semantics(prepare(reordered_wt())[0])
    procs = set(processors(sem))
    seen: set[frozenset[int]] = set()
    rng = random.Random(7)
    for _ in range(400):
        stepper = start(random_draw(rng), Run(sem))
        assert stepper.swarm.agents and stepper.swarm.agents <= procs
        seen.add(stepper.swarm.agents)
    assert frozenset(procs) in seen and len(seen) == 1 + 4 * 3  # all, and 4 starts x 3 sizes
    # a run confined to one L1: that L1's requests are on, other L1s' off, L2 and Mem on
    run = Run(sem)
    one = Swarm((1,) * len(run.transitions), frozenset({4}), frozenset({0}), 4)
    stepper = Stepper(sem, one, run.transitions)
    acts = sem.action_instances(run.state)
    on = {sem.node_name(a.agent) for a in acts if stepper._focused(a)}
    assert on == {"L1[0, 1]"}  # at the start only the L1s can move: loads and stores
    l2 = next(a for a in acts if a.machine == "L1")._replace(machine="L2", agent=1)
    assert stepper._focused(l2)  # not a processor: never confined


@pytest.mark.parametrize("model", [load_spec(WT), reordered_wt()], ids=["declared", "reordered"])
def test_the_oracle_sees_every_processors_loads_and_stores(model: ir.Model) -> None:
    """Random runs of the correct spec pass every check, and the oracle's history holds
    loads and stores of every L1 instance (and only of L1 instances)."""
    sem = Semantics(prepare(model)[0])
    rng = random.Random(3)
    kinds: dict[str, set[str]] = {}
    for _ in range(40):
        run = Run(sem)
        assert random_run(random_draw(rng), run, 40) is None
        for p in run.history:
            kinds.setdefault(sem.node_name(p.agent), set()).add(p.kind)
    assert kinds == {name: {"load", "store"} for name in
                     ("L1[0, 0]", "L1[0, 1]", "L1[1, 0]", "L1[1, 1]")}


# ---------------------------------------------------------------- fuzz


def test_fuzz_finds_a_bug_only_the_oracle_sees_and_shrinks_it() -> None:
    """The invariant that tracks L1 copies is skipped: the coherence oracle, fed the L1s'
    loads and stores, finds the stale read, and the trace is shrunk to at most twice the
    checker's shortest."""
    model = load_model(KEEPS_V, skip=["l1_copy_is_tracked"])
    result = fuzz(model, seed=0, budget=300)
    assert result.verdict == "fails" and result.failure is not None
    f = result.failure
    assert (f.kind, f.name) == ("coherence", "coherent")
    assert "L1[" in f.message and "agent" not in f.message  # instances, not node numbers
    assert SHORTEST_KEEPS_V <= f.length <= 2 * SHORTEST_KEEPS_V
    assert result.hypothesis_length is not None and result.hypothesis_length >= f.length
    replays_to(model, f)
    # the spec's own coherence monitor (coherence.semantics) agrees at the last step
    steps = replay_actions(Semantics(model), [action_from_json(s.action) for s in f.trace])
    assert steps[-1].error is not None and "coherence violated" in steps[-1].error


def test_fuzz_finds_an_invariant_bug() -> None:
    model = load_model(NO_SIBLING_INV)
    result = fuzz(model, seed=0, budget=200)
    assert result.failure is not None
    f = result.failure
    assert (f.kind, f.name) == ("invariant", "l1_copy_is_tracked")
    assert SHORTEST_NO_SIBLING_INV <= f.length <= 2 * SHORTEST_NO_SIBLING_INV
    replays_to(model, f)


def test_fuzz_passes_the_correct_spec() -> None:
    result = fuzz(load_model(WT), seed=0, budget=40, steps=40)
    assert result.verdict == "passes" and result.failure is None
    assert result.stats.examples >= 40 and result.stats.undecided == 0
    assert result.stats.steps > 40 * 10  # runs did go somewhere


def test_fuzz_verb_on_a_hierarchy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "t.json"
    code = main(["fuzz", str(KEEPS_V), "--skip", "l1_copy_is_tracked", "--budget", "100",
                 "-p", "gpus=1", "-p", "sms=2", "--trace-out", str(saved), "--json",
                 "--progress", "never"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["failures"][0]["property"] == "coherent"
    assert "--agents" not in doc["reproduce"] and "--skip l1_copy_is_tracked" in doc["reproduce"]
    code = main(["diagram", str(KEEPS_V), "--kind", "trace", "--trace", str(saved),
                 "--format", "dot", "--out", str(tmp_path / "d"), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["failures"] == ["coherent"] and len(doc["files"]) == 1
    code = main(["fuzz", str(WT), "--agents", "2", "--json"])
    assert code == 2  # a hierarchy has no agents parameter: a located error, not a traceback
    assert "no parameter 'agents'" in capsys.readouterr().err


# ---------------------------------------------------------------- pytest integration


def _run_case(case: type[unittest.TestCase]) -> unittest.TestResult:
    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(case).run(result)
    return result


def test_protocol_test_on_a_hierarchy() -> None:
    ok = _run_case(protocol_test(WT, max_examples=15, steps=30,
                                 params={"gpus": 2, "sms": 1}))
    assert ok.wasSuccessful() and ok.testsRun == 1
    bad = _run_case(protocol_test(KEEPS_V, max_examples=100, skip=["l1_copy_is_tracked"],
                                  params={"gpus": 1, "sms": 2}))
    assert len(bad.failures) == 1
    text = bad.failures[0][1]
    assert "coherent (coherence)" in text and "L1[" in text
    assert "reproduce: coherence fuzz" in text and "--skip l1_copy_is_tracked" in text


def test_state_machine_on_a_hierarchy() -> None:
    machine = state_machine(WT, params={"gpus": 2, "sms": 1})
    run_state_machine_as_test(machine, settings=settings(
        max_examples=10, stateful_step_count=20, deadline=None, database=None,
        suppress_health_check=list(HealthCheck)))
    bad = state_machine(KEEPS_V, skip=["l1_copy_is_tracked"], params={"gpus": 1, "sms": 2})
    with pytest.raises(ProtocolFailure) as err:
        run_state_machine_as_test(bad, settings=settings(
            max_examples=200, stateful_step_count=30, deadline=None, database=None,
            phases=[Phase.generate], suppress_health_check=list(HealthCheck)))
    assert "coherent (coherence)" in str(err.value)


# ---------------------------------------------------------------- the oracle's definition


# hmg.coh, 2 GPUs x 1 SM: the checker's shortest `coherent` counterexample (12 steps, BFS):
# two racing stores, each performed at its own GPU's L2, reach memory in the other order, and
# GPU 1's SM then reads 0 from memory after its own store of 1
HMG_RACE = [
    ("L1[0, 0]", "Store(v=0)"), ("L1[1, 0]", "Store(v=1)"), ("L2[0]", "?WT(val=0)"),
    ("L2[1]", "?WT(val=1)"), ("L1[1, 0]", "Load"), ("L1[1, 0]", "?WTAck"),
    ("Mem", "?WB(val=1)"), ("L2[1]", "?Get"), ("Mem", "?WB(val=0)"), ("Mem", "?Fetch"),
    ("L2[1]", "?Fill(val=0)"), ("L1[1, 0]", "?Data(val=0)"),
]


def test_the_performed_oracle_is_the_checkers_definition() -> None:
    """hmg's by-design `coherent` failure: the spec's monitor (coherence.semantics) and
    `--oracle performed` reject it at the last step, the default per-location oracle accepts
    it (ordering the store of 1 first explains every load)."""
    model = load_spec(ROOT / "specs" / "hmg.coh", {"gpus": 2, "sms": 1})
    trace = scripted(model, HMG_RACE)
    assert trace[-1].error is not None and "coherence violated" in trace[-1].error
    prepared, name = prepare(model)
    sem = Semantics(prepared)
    actions = [action_from_json(s.action) for s in trace]
    problem, taken = replay(sem, actions, "performed", name)
    assert problem is not None and (problem.kind, problem.name) == ("coherence", "coherent")
    assert len(taken) == len(HMG_RACE)
    assert problem.message.startswith("line 0: L1[1, 0] load returning 0")
    assert replay(sem, actions, "coherence", name)[0] is None


def test_fuzz_with_the_performed_oracle_finds_the_seeded_bug() -> None:
    model = load_model(KEEPS_V, skip=["l1_copy_is_tracked"], params={"gpus": 1, "sms": 2})
    result = fuzz(model, seed=0, budget=100, oracle="performed")
    assert result.failure is not None
    assert (result.failure.kind, result.failure.name) == ("coherence", "coherent")
    replays_to(model, result.failure, "performed")


def test_fuzz_verb_performed_oracle_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fuzz", str(KEEPS_V), "--skip", "l1_copy_is_tracked", "--budget", "100",
                 "-p", "gpus=1", "-p", "sms=2", "--oracle", "performed", "--json",
                 "--progress", "never"])
    doc = json.loads(capsys.readouterr().out)
    schema = json.loads(files("coherence.schemas").joinpath("fuzz.json").read_text())
    jsonschema.validate(doc, schema)
    assert code == 1 and doc["oracle"] == "performed"
    assert doc["failures"][0]["kind"] == "coherence"
    assert "--oracle performed" in doc["reproduce"]
