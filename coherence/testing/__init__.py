"""Bring a protocol model into your own test suite: random runs with a coherence oracle.

Two lines in a pytest file give a test (see ``examples/test_my_protocol.py``)::

    from coherence.testing import protocol_test
    TestMyProtocol = protocol_test("specs/broadcast_invalidate_acked.coh", agents=8, lines=4)

The test is ``coherence fuzz`` with the same defaults (``coherence.testing.fuzz``): the same
seed, budget and steps give the same runs, chosen by the shared swarm strategy
(``coherence.testing.strategy``), so it finds what the command line finds, in the same time.
After every step the spec's invariants, unhandled messages and the oracle over the performed
loads and stores are checked. A failure is a ``ProtocolTestFailure`` (an ``AssertionError``)
whose text is the replayed numbered-step trace of ``coherence check`` and the ``coherence
fuzz`` command that reproduces it. The oracle is also usable alone on any history
(``check_coherence``, ``check_sc``).
"""

from __future__ import annotations

import inspect
import random
import unittest
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, cast

from hypothesis.database import ExampleDatabase
from hypothesis.stateful import RuleBasedStateMachine

from coherence import ir
from coherence.fuzz_options import DEFAULT_BUDGET, DEFAULT_STEPS, ORACLES, SHRINKERS
from coherence.testing.fuzz import FuzzResult, fuzz
from coherence.testing.machine import build_machine
from coherence.testing.oracle import Op, Verdict, check_coherence, check_performed, check_sc
from coherence.testing.report import ProtocolTestFailure, failure_text, fuzz_command
from coherence.testing.run import Problem, ProtocolFailure

__all__ = [
    "ORACLES", "FuzzResult", "Op", "Problem", "ProtocolFailure", "ProtocolTestFailure",
    "Verdict", "check_coherence", "check_performed", "check_sc", "fuzz", "load_model",
    "protocol_test", "state_machine",
]

# unittest leaves frames of modules with this global out of its tracebacks
__unittest = True


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
    consistency across lines), "performed" (coherence with the stores in perform order, as
    ``coherence check`` defines it) or "none". ``skip`` names invariants to leave out.
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


def protocol_test(spec: str | Path | ir.Model, *, max_examples: int = DEFAULT_BUDGET,
                  steps: int = DEFAULT_STEPS, seed: int | None = 0,
                  oracle: str = "coherence", agents: int | None = None,
                  lines: int | None = None, values: int | None = None,
                  params: Mapping[str, int] | None = None, skip: Iterable[str] = (),
                  shrink: str = "replay",
                  database: str | ExampleDatabase | None = None) -> type[unittest.TestCase]:
    """A ``unittest.TestCase`` (collected by pytest) that runs ``coherence fuzz``'s
    ``max_examples`` random runs of up to ``steps`` steps from ``seed`` (None: a new seed
    each time, shown on failure). A relative spec path is taken relative to the test file
    that calls this (so the test runs from any folder), else to the working directory.
    ``database``: a Hypothesis example database (or its folder) whose saved failures are
    replayed first; ``shrink`` as ``coherence fuzz --shrink``."""
    if oracle not in ORACLES:
        raise ValueError(f"oracle must be one of {', '.join(ORACLES)}, not {oracle!r}")
    if shrink not in SHRINKERS:
        raise ValueError(f"shrink must be one of {', '.join(SHRINKERS)}, not {shrink!r}")
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None  # the test file calling this
    caller_file = caller.f_code.co_filename if caller is not None else "."
    caller_module = caller.f_globals.get("__name__", __name__) if caller is not None else __name__
    del frame, caller
    spec = _beside_caller(spec, caller_file)
    model = load_model(spec, agents=agents, lines=lines, values=values, params=params,
                       skip=skip)
    skipped = list(skip)
    if isinstance(spec, ir.Model):
        shown: str | Path = spec.file
        cli_agents, cli_params = None, [f"{p.name}={p.value}" for p in spec.params]
    else:
        shown, cli_agents = spec, agents
        cli_params = [f"{k}={v}" for k, v in (("lines", lines), ("values", values))
                      if v is not None] + [f"{k}={v}" for k, v in (params or {}).items()]

    def test_random_runs(self: unittest.TestCase) -> None:
        __tracebackhide__ = True  # pytest shows the failure's text, not this frame
        run_seed = random.SystemRandom().randrange(2**32) if seed is None else seed
        result = fuzz(model, seed=run_seed, budget=max_examples, steps=steps, oracle=oracle,
                      database=database, shrink=shrink)
        case.last_result = result
        if result.failure is None:
            return
        reproduce = fuzz_command(
            shown, seed=run_seed, budget=max_examples, steps=steps, agents=cli_agents,
            params=cli_params, oracle=oracle, shrink=shrink, skip=skipped,
            database=database if isinstance(database, str) and result.from_database
            else None)
        raise ProtocolTestFailure(failure_text(result, reproduce), result) from None

    test_random_runs.__doc__ = (f"{max_examples} random runs of {model.file} "
                                f"({', '.join(f'{p.name}={p.value}' for p in model.params)})")
    name = "".join(c if c.isalnum() else "_" for c in Path(model.file).stem.title())
    case: Any = type(f"Test{name}", (unittest.TestCase,), {
        "test_random_runs": test_random_runs, "model": model, "last_result": None,
        "__module__": caller_module})
    return cast("type[unittest.TestCase]", case)
