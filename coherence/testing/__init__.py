"""Bring a protocol model into your own test suite: Hypothesis random runs with a coherence oracle.

Two lines in a pytest file give a test (see ``examples/test_my_protocol.py``)::

    from coherence.testing import protocol_test
    TestMyProtocol = protocol_test("specs/broadcast_invalidate_acked.coh", agents=8, lines=4)

Random runs take the spec's transitions with Hypothesis choosing the agent, line, parameters
and which in-flight message arrives; after every step the spec's invariants, unhandled
messages and the oracle over the performed loads and stores are checked. A failure shows the
trace in the numbered-step format of ``coherence check``. The oracle is also usable alone on
any history (``check_coherence``, ``check_sc``).
"""

from __future__ import annotations

import inspect
import unittest
from collections.abc import Iterable, Mapping
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine

from coherence import ir
from coherence.testing.fuzz import FuzzResult, fuzz
from coherence.testing.machine import build_machine
from coherence.testing.oracle import Op, Verdict, check_coherence, check_sc
from coherence.testing.run import ORACLES, Problem, ProtocolFailure

__all__ = [
    "ORACLES", "FuzzResult", "Op", "Problem", "ProtocolFailure", "Verdict", "check_coherence",
    "check_sc", "fuzz", "load_model", "protocol_test", "state_machine",
]


def load_model(spec: str | Path | ir.Model, *, agents: int | None = None,
               lines: int | None = None, values: int | None = None,
               params: Mapping[str, int] | None = None, skip: Iterable[str] = ()) -> ir.Model:
    """The spec instantiated for one configuration (a ``SpecError`` if it does not fit)."""
    from coherence.spec.load import load_spec
    from coherence.spec.select import drop_properties
    if isinstance(spec, ir.Model):
        if agents or lines or values or params:
            raise ValueError("give a spec path to set parameters; a Model is already instantiated")
        return drop_properties(spec, list(skip))
    overrides = dict(params or {})
    for name, value in (("agents", agents), ("lines", lines), ("values", values)):
        if value is not None:
            overrides[name] = value
    return drop_properties(load_spec(spec, overrides), list(skip))


def state_machine(spec: str | Path | ir.Model, *, oracle: str = "coherence",
                  agents: int | None = None, lines: int | None = None,
                  values: int | None = None, params: Mapping[str, int] | None = None,
                  skip: Iterable[str] = ()) -> type[RuleBasedStateMachine]:
    """A ``RuleBasedStateMachine`` class for the spec in one configuration.

    ``oracle``: "coherence" (per-location coherence, the default), "sc" (sequential
    consistency across lines) or "none". ``skip`` names invariants to leave out.
    """
    model = load_model(spec, agents=agents, lines=lines, values=values, params=params,
                       skip=skip)
    return build_machine(model, oracle)


def _beside_caller(spec: str | Path | ir.Model, caller: str) -> str | Path | ir.Model:
    if isinstance(spec, (str, Path)) and not Path(spec).is_absolute():
        beside = Path(caller).resolve().parent / spec
        if beside.exists():
            return beside
    return spec


def protocol_test(spec: str | Path | ir.Model, *, max_examples: int = 100, steps: int = 50,
                  oracle: str = "coherence", agents: int | None = None,
                  lines: int | None = None, values: int | None = None,
                  params: Mapping[str, int] | None = None,
                  skip: Iterable[str] = ()) -> type[unittest.TestCase]:
    """A ``unittest.TestCase`` (collected by pytest) that runs ``max_examples`` random runs of
    up to ``steps`` steps each. A relative spec path is taken relative to the test file that
    calls this (so the test runs from any folder), else to the working directory."""
    spec = _beside_caller(spec, inspect.stack()[1].filename)
    machine = state_machine(spec, oracle=oracle, agents=agents, lines=lines, values=values,
                            params=params, skip=skip)
    case = machine.TestCase  # a new class at each access: set its settings once
    case.settings = settings(
        max_examples=max_examples, stateful_step_count=steps, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                               HealthCheck.data_too_large])
    return case
