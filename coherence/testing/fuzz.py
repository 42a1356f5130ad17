"""Fuzzing a spec: run its state machine under Hypothesis with a seed and a budget.

The first failure is shrunk by Hypothesis, minimised further by replay
(``coherence.testing.shrink``) and replayed once more through
``coherence.trace.replay_actions`` into the numbered steps ``coherence check`` prints. A run
is reproducible from its seed: with no example database Hypothesis draws the same examples for
the same seed, spec and configuration.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import attrs
from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.stateful import run_state_machine_as_test

from coherence import ir
from coherence.results import Failure
from coherence.semantics import Semantics
from coherence.testing.machine import build_machine
from coherence.testing.oracle import DEFAULT_LIMIT
from coherence.testing.run import ProtocolFailure, Run
from coherence.testing.shrink import minimise
from coherence.trace import replay_actions

DEFAULT_BUDGET = 1000
DEFAULT_STEPS = 50
# "replay" (the default) minimises the first failing run by replay, in well under a second;
# Hypothesis's own shrinker ("hypothesis", "both") is thorough but re-runs hundreds of whole
# examples, minutes for 8 agents and 4 lines (see docs/fuzz.md for measurements).
SHRINKERS = ("replay", "both", "hypothesis", "none")


@attrs.define
class FuzzStats:
    examples: int = 0
    examples_to_failure: int | None = None
    seconds_to_failure: float | None = None
    undecided: int = 0


@attrs.define
class FuzzResult:
    spec: str
    params: dict[str, int]
    seed: int
    budget: int
    steps: int
    oracle: str
    verdict: str  # "fails" | "passes" (no failure within the budget: nothing is proved)
    stats: FuzzStats
    seconds: float
    failure: Failure | None
    hypothesis_length: int | None  # steps of the trace as Hypothesis shrank it

    @property
    def exit_code(self) -> int:
        return 1 if self.verdict == "fails" else 0


def fuzz(model: ir.Model, seed: int = 0, budget: int = DEFAULT_BUDGET,
         steps: int = DEFAULT_STEPS, oracle: str = "coherence", database: str | None = None,
         shrink: str = "replay",
         progress: Callable[[FuzzStats, float], None] | None = None,
         oracle_limit: int = DEFAULT_LIMIT) -> FuzzResult:
    """Run up to ``budget`` random runs of ``steps`` steps each; report the first failure."""
    stats = FuzzStats()
    start = time.perf_counter()
    observer = _Observer(stats, start, progress)
    machine = build_machine(model, oracle, observer, oracle_limit)
    factory = hypothesis_seed(seed)(machine)
    options = settings(
        max_examples=budget, stateful_step_count=steps, deadline=None,
        suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
        database=DirectoryBasedExampleDatabase(database) if database else None,
        phases=[Phase.explicit, Phase.reuse, Phase.generate,
                *([Phase.shrink] if shrink in ("hypothesis", "both") else [])],
        verbosity=Verbosity.quiet, print_blob=False)
    failure: Failure | None = None
    hyp_len: int | None = None
    try:
        run_state_machine_as_test(factory, settings=options)
    except ProtocolFailure as exc:
        failure, hyp_len = _shrunk_failure(model, exc, oracle, shrink in ("replay", "both"))
    return FuzzResult(
        spec=model.file, params={p.name: p.value for p in model.params}, seed=seed,
        budget=budget, steps=steps, oracle=oracle,
        verdict="fails" if failure is not None else "passes", stats=stats,
        seconds=time.perf_counter() - start, failure=failure, hypothesis_length=hyp_len)


def _shrunk_failure(model: ir.Model, exc: ProtocolFailure, oracle: str,
                    minimise_by_replay: bool) -> tuple[Failure, int]:
    sem: Semantics = exc.sem
    actions, problem = list(exc.actions), exc.problem
    if actions and minimise_by_replay:
        actions, problem = minimise(sem, actions, problem, oracle, exc.coherence_name)
    trace = replay_actions(sem, actions)  # NOTE(replay): every shown trace is a replay
    message = trace[-1].error if trace and trace[-1].error else problem.message
    return Failure(problem.kind, problem.name, message, trace), len(exc.actions)


class _Observer:
    def __init__(self, stats: FuzzStats, start: float,
                 progress: Callable[[FuzzStats, float], None] | None) -> None:
        self.stats = stats
        self.start = start
        self.progress = progress

    def started(self) -> None:
        self.stats.examples += 1
        if self.progress is not None:
            self.progress(self.stats, time.perf_counter() - self.start)

    def failed(self) -> None:
        if self.stats.examples_to_failure is None:
            self.stats.examples_to_failure = self.stats.examples
            self.stats.seconds_to_failure = time.perf_counter() - self.start

    def ended(self, run: Run) -> None:
        self.stats.undecided += run.undecided
