"""The public ``coherence.testing`` API: state machines and pytest test cases from a spec."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import unittest
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from coherence.errors import SpecError
from coherence.testing import ProtocolFailure, load_model, protocol_test, state_machine

ROOT = Path(__file__).resolve().parent.parent
BI = ROOT / "specs/broadcast_invalidate.coh"
ACKED = ROOT / "specs/broadcast_invalidate_acked.coh"


def _run(case: type[unittest.TestCase]) -> unittest.TestResult:
    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(case).run(result)
    return result


def test_state_machine_runs_the_shared_strategy() -> None:
    """``state_machine`` draws a swarm configuration, then steps with the shared strategy."""
    machine = state_machine(ACKED, agents=3)
    assert issubclass(machine, RuleBasedStateMachine)
    rules = {name for name, f in vars(machine).items()
             if hasattr(f, "hypothesis_stateful_rule")}
    starts = {name for name, f in vars(machine).items()
              if hasattr(f, "hypothesis_stateful_initialize_rule")}
    assert (rules, starts) == ({"step"}, {"begin"})
    with pytest.raises(ProtocolFailure) as info:
        run_state_machine_as_test(seed(3)(state_machine(BI)), settings=settings(
            max_examples=200, database=None, deadline=None, phases=[Phase.generate],
            suppress_health_check=list(HealthCheck)))
    assert info.value.problem.name in {"data_value", "stale_copy_is_doomed"}


def test_correct_protocol_passes_as_a_unittest_case() -> None:
    case = protocol_test(ACKED, agents=3, max_examples=15, steps=30)
    result = _run(case)
    assert result.wasSuccessful(), result.failures + result.errors
    assert result.testsRun == 1
    assert case.last_result.verdict == "passes"  # type: ignore[attr-defined]
    assert case.last_result.stats.examples >= 15  # type: ignore[attr-defined]


def test_buggy_protocol_fails_with_a_numbered_trace_and_the_command() -> None:
    case = protocol_test(BI, max_examples=200)
    result = _run(case)
    assert not result.wasSuccessful() and not result.errors
    (_, text), = result.failures
    assert "ProtocolTestFailure" in text
    assert "(invariant)" in text and "  1. GPU[" in text
    assert "reproduce: coherence fuzz " in text and "--seed 0 --budget 200 --steps 50" in text
    assert "hypothesis" not in text.lower()


def test_failure_text_is_minimised_by_replay() -> None:
    machine = seed(3)(state_machine(BI))
    with pytest.raises(ProtocolFailure) as info:
        run_state_machine_as_test(machine, settings=settings(
            max_examples=200, database=None, deadline=None, phases=[Phase.generate],
            suppress_health_check=list(HealthCheck)))
    text = str(info.value)
    steps = [ln for ln in text.splitlines() if ln[:4].strip().rstrip(".").isdigit()]
    raw = len(info.value.actions)
    assert 4 <= len(steps) <= 8  # the shortest counterexample has 4 steps
    assert len(steps) == raw or f"minimised by replay from {raw}" in text


def test_8_agents_4_lines_run() -> None:
    """The runs really use the 8 agents and 4 lines (and pass the SC oracle on all of them)."""
    base = state_machine(ACKED, agents=8, lines=4, params={"capacity": 64}, oracle="sc")
    runs: list[list] = []

    class Recording(base):  # type: ignore[misc,valid-type]
        def teardown(self) -> None:
            runs.append(list(self.run.actions))
            super().teardown()

    run_state_machine_as_test(Recording, settings=settings(
        max_examples=8, stateful_step_count=40, database=None, deadline=None,
        derandomize=True, suppress_health_check=list(HealthCheck)))
    actions = [a for run in runs for a in run]
    assert len(runs) >= 8 and len(actions) >= 40
    assert {a.agent for a in actions if a.agent is not None} == set(range(8))
    assert {a.line for a in actions} == set(range(4))


def test_bad_spec_and_bad_options() -> None:
    with pytest.raises(SpecError):
        state_machine(ROOT / "specs/no_such.coh")
    with pytest.raises(SpecError, match="--skip"):
        state_machine(ACKED, skip=["nope"])
    with pytest.raises(ValueError, match="oracle"):
        machine = state_machine(ACKED, oracle="linearizable")
        machine()
    with pytest.raises(ValueError, match="oracle"):
        protocol_test(ACKED, oracle="linearizable")
    with pytest.raises(ValueError, match="shrink"):
        protocol_test(ACKED, shrink="lots")
    with pytest.raises(ValueError, match="already instantiated"):
        load_model(load_model(ACKED), agents=2)


def test_the_example_file_runs_under_pytest() -> None:
    # -n 0: one test needs no worker processes (the repository's addopts start them)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-n", "0", "examples/test_my_protocol.py"], cwd=ROOT,
                          capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout


def test_a_relative_spec_path_is_found_beside_the_calling_test_file(tmp_path: Path) -> None:
    """`protocol_test("my.coh")` in tests/test_x.py finds tests/my.coh from any folder."""
    here = Path(__file__).resolve().parent.parent
    shutil.copy(here / "specs" / "msi_snooping.coh", tmp_path / "my.coh")
    (tmp_path / "test_mine.py").write_text(
        "from coherence.testing import protocol_test\n"
        "TestMine = protocol_test('my.coh', max_examples=3, steps=5)\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(tmp_path / "test_mine.py")], cwd=elsewhere, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(here)},
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
