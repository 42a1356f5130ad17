"""The generation strategy shared by ``coherence fuzz``, ``protocol_test`` and
``state_machine`` (coherence/testing/strategy.py)."""

from __future__ import annotations

import random
import unittest
from pathlib import Path
from typing import Any

import pytest

from coherence import ir
from coherence.semantics import Semantics
from coherence.testing import fuzz, load_model, protocol_test
from coherence.testing.run import Run, prepare, rule_transitions
from coherence.testing.strategy import (
    DELIVERY,
    Stepper,
    Swarm,
    draw_swarm,
    random_draw,
    random_run,
)

ROOT = Path(__file__).resolve().parent.parent
ACKED = ROOT / "specs/broadcast_invalidate_acked.coh"
BI = ROOT / "specs/broadcast_invalidate.coh"


def _sem(path: Path = ACKED, **kw: Any) -> Semantics:
    return Semantics(prepare(load_model(path, **kw))[0])


def _lowest(lo: int, hi: int) -> int:
    return lo


def test_swarm_draws_shrink_to_the_uniform_configuration() -> None:
    """All-lowest draws (where Hypothesis shrinks to) give no swarm at all."""
    assert draw_swarm(_lowest, 5, 3, 2) == Swarm.uniform(5, 3, 2)
    assert Swarm.uniform(2, 3, 1) == Swarm((1, 1), frozenset({0, 1, 2}), frozenset({0}),
                                          DELIVERY[0])


def test_swarm_configurations_vary_and_never_switch_everything_off() -> None:
    rng = random.Random(1)
    swarms = [draw_swarm(random_draw(rng), 6, 4, 3) for _ in range(300)]
    assert all(any(s.weights) for s in swarms)
    assert all(s.agents and s.lines for s in swarms)
    assert any(0 in s.weights for s in swarms) and any(4 in s.weights for s in swarms)
    assert len({s.agents for s in swarms}) > 4 and len({s.delivery for s in swarms}) == 3
    uniform = sum(s == Swarm.uniform(6, 4, 3) for s in swarms)
    assert 100 < uniform < 200  # about half the runs


def _only(sem: Semantics, names: set[str], **kw: Any) -> Stepper:
    trs = rule_transitions(sem.model)
    weights = tuple(1 if t.name in names else 0 for t in trs)
    return Stepper(sem, Swarm(weights, kw.get("agents", frozenset(range(sem.n))),
                              kw.get("lines", frozenset(range(sem.model.lines))),
                              DELIVERY[0]), trs)


def test_a_step_takes_a_transition_that_is_on_and_focused() -> None:
    sem = _sem(agents=3, lines=2)
    state = sem.initial_states()[0]
    stepper = _only(sem, {"Store"}, agents=frozenset({1}), lines=frozenset({1}))
    rng = random.Random(0)
    for _ in range(20):
        out = stepper.next(random_draw(rng), state)
        assert out is not None
        name = sem.model.machine(out.action.machine).transitions[out.action.transition].name
        assert (name, out.action.agent, out.action.line) == ("Store", 1, 1)


def test_when_nothing_on_can_move_any_enabled_action_is_taken() -> None:
    """Swarm changes the odds, never what is reachable: a run whose only transition on is
    a message handler still moves from the initial state (no message in flight)."""
    sem = _sem(agents=2)
    state = sem.initial_states()[0]
    stepper = _only(sem, {"WriteAck"})
    out = stepper.next(random_draw(random.Random(0)), state)
    assert out is not None and out.action.kind is not ir.TransitionKind.MESSAGE


def test_delivery_weight_changes_how_many_messages_are_in_flight() -> None:
    """Deliveries weighted 1 to requests' 4 let messages pile up (races, reorderings);
    weighted 16 to 4, runs are nearly sequential."""
    sem = _sem(agents=3)
    trs = rule_transitions(sem.model)

    def in_flight(delivery: int) -> int:
        swarm = Swarm((1,) * len(trs), frozenset(range(3)), frozenset({0}), delivery)
        rng, count = random.Random(5), 0
        for _ in range(30):
            run = Run(sem)
            stepper = Stepper(sem, swarm, trs)
            for _ in range(20):
                out = stepper.next(random_draw(rng), run.state)
                if out is None or run.take(out) is not None:
                    break
                count += len(sem.messages_in_flight(run.state))
        return count

    assert in_flight(1) > 1.25 * in_flight(16)


def test_random_runs_are_reproducible_from_their_draws() -> None:
    sem = _sem(BI)

    def actions(seed: int) -> list:
        run = Run(sem)
        random_run(random_draw(random.Random(seed)), run, 30)
        return run.actions

    assert actions(4) == actions(4)
    assert any(actions(4) != actions(s) for s in range(5, 10))


def test_fuzz_protocol_test_and_state_machine_all_step_with_the_strategy(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every path chooses its steps through ``Stepper.next`` (counted here)."""
    calls: list[int] = []
    real = Stepper.next

    def counting(self: Stepper, draw: Any, state: Any) -> Any:
        calls.append(1)
        return real(self, draw, state)

    monkeypatch.setattr(Stepper, "next", counting)
    fuzz(load_model(ACKED, agents=2), budget=3, steps=5)
    after_fuzz = len(calls)
    case = protocol_test(ACKED, agents=2, max_examples=3, steps=5)
    unittest.defaultTestLoader.loadTestsFromTestCase(case).run(unittest.TestResult())
    after_pytest = len(calls)
    from hypothesis import HealthCheck, settings
    from hypothesis.stateful import run_state_machine_as_test

    from coherence.testing import state_machine
    run_state_machine_as_test(state_machine(ACKED, agents=2), settings=settings(
        max_examples=3, stateful_step_count=5, database=None,
        suppress_health_check=list(HealthCheck)))
    assert 0 < after_fuzz < after_pytest < len(calls)


def test_the_pytest_path_makes_fuzz_s_runs() -> None:
    """Same seed, budget and steps: the same failing run, found at the same example."""
    case: Any = protocol_test(BI, seed=7, max_examples=300, steps=40)
    unittest.defaultTestLoader.loadTestsFromTestCase(case).run(unittest.TestResult())
    mine = case.last_result
    theirs = fuzz(load_model(BI), seed=7, budget=300, steps=40)
    assert mine.failure is not None and theirs.failure is not None
    assert mine.stats.examples_to_failure == theirs.stats.examples_to_failure
    assert [s.render() for s in mine.failure.trace] == [s.render() for s in theirs.failure.trace]
