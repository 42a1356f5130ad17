"""Fuzzing a spec: random runs (``coherence.testing.strategy``) under Hypothesis, from a seed.

``coherence fuzz`` and ``protocol_test`` both call ``fuzz``: one Hypothesis test,
``@given(st.data())``, whose every example is one run whose choices are Hypothesis draws, so
the same seed, budget, steps and configuration give the same runs on the command line and in
pytest, and ``coherence fuzz SPEC --seed N ...`` reproduces a pytest failure.

The first failure is minimised by replay (``coherence.testing.shrink``; Hypothesis's own
shrinker on request) and replayed once more through ``coherence.trace.replay_actions`` into
the numbered steps ``coherence check`` prints.
"""

from __future__ import annotations

import hashlib
import os
import time
import unittest
from collections.abc import Callable
from typing import Any

import attrs
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

from coherence import ir
from coherence.fuzz_options import DEFAULT_BUDGET, DEFAULT_STEPS, SHRINKERS
from coherence.results import Failure
from coherence.semantics import Semantics
from coherence.testing.oracle import DEFAULT_LIMIT
from coherence.testing.run import ORACLES, ProtocolFailure, Run, prepare
from coherence.testing.shrink import minimise
from coherence.testing.strategy import hypothesis_draw, random_run
from coherence.trace import replay_actions


@attrs.define
class FuzzStats:
    examples: int = 0
    examples_to_failure: int | None = None
    seconds_to_failure: float | None = None
    undecided: int = 0
    steps: int = 0  # steps taken, over every run


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
    hypothesis_length: int | None  # steps of the failing run before minimisation
    from_database: bool = False  # the failure was a saved example, replayed first

    @property
    def exit_code(self) -> int:
        return 1 if self.verdict == "fails" else 0


def fuzz(model: ir.Model, seed: int = 0, budget: int = DEFAULT_BUDGET,
         steps: int = DEFAULT_STEPS, oracle: str = "coherence",
         database: str | os.PathLike[str] | ExampleDatabase | None = None,
         shrink: str = "replay",
         progress: Callable[[FuzzStats, float], None] | None = None,
         oracle_limit: int = DEFAULT_LIMIT) -> FuzzResult:
    """Run up to ``budget`` random runs of up to ``steps`` steps each; report the first
    failure. With a ``database``, the failures saved there are replayed first."""
    if oracle not in ORACLES:
        raise ValueError(f"oracle must be one of {', '.join(ORACLES)}, not {oracle!r}")
    if shrink not in SHRINKERS:
        raise ValueError(f"shrink must be one of {', '.join(SHRINKERS)}, not {shrink!r}")
    stats = FuzzStats()
    start = time.perf_counter()
    db = (DirectoryBasedExampleDatabase(database) if isinstance(database, (str, os.PathLike))
          else database)
    failure: Failure | None = None
    hyp_len: int | None = None
    from_db = False
    phases = ([[Phase.reuse]] if db is not None else []) + [
        [Phase.generate, *([Phase.shrink] if shrink in ("hypothesis", "both") else [])]]
    for phase in phases:
        test = _search(model, seed, steps, oracle, oracle_limit, stats, start, progress)
        options = settings(
            max_examples=budget, deadline=None, database=db, phases=phase,
            suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
            verbosity=Verbosity.quiet, print_blob=False)
        try:
            options(hypothesis_seed(seed)(test))()
        except unittest.SkipTest:  # the database had nothing saved to replay
            continue
        except ProtocolFailure as exc:
            failure, hyp_len = _shrunk_failure(exc, shrink in ("replay", "both"))
            from_db = phase == [Phase.reuse]
            break
    return FuzzResult(
        spec=model.file, params={p.name: p.value for p in model.params}, seed=seed,
        budget=budget, steps=steps, oracle=oracle,
        verdict="fails" if failure is not None else "passes", stats=stats,
        seconds=time.perf_counter() - start, failure=failure, hypothesis_length=hyp_len,
        from_database=from_db)


def _search(model: ir.Model, seed: int, steps: int, oracle: str, oracle_limit: int,
            stats: FuzzStats, start: float,
            progress: Callable[[FuzzStats, float], None] | None) -> Any:
    """The Hypothesis test: one example is one random run; a failed check raises
    ``ProtocolFailure``."""
    prepared, coherence_name = prepare(model)
    sem = Semantics(prepared)

    def one_run(data: st.DataObject) -> None:
        stats.examples += 1
        if progress is not None:
            progress(stats, time.perf_counter() - start)
        run = Run(sem, oracle, coherence_name, oracle_limit)
        try:
            problem = random_run(hypothesis_draw(data), run, steps)
        finally:
            stats.undecided += run.undecided
            stats.steps += len(run.actions)
        if problem is not None:
            if stats.examples_to_failure is None:
                stats.examples_to_failure = stats.examples
                stats.seconds_to_failure = time.perf_counter() - start
            raise ProtocolFailure(problem, run)

    test: Any = given(st.data())(one_run)
    # saved examples belong to this spec's text (wherever the file is and however its path
    # is written), configuration and run length, as stateful machines' do to their class
    key = repr((_spec_text(model.file), sorted(
        (p.name, p.value) for p in model.params), steps, oracle)).encode()
    test.hypothesis.inner_test._hypothesis_internal_add_digest = hashlib.sha256(key).digest()
    return test


def _spec_text(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


def _shrunk_failure(exc: ProtocolFailure, minimise_by_replay: bool) -> tuple[Failure, int]:
    sem: Semantics = exc.sem
    actions, problem = list(exc.actions), exc.problem
    if actions and minimise_by_replay:
        actions, problem = minimise(sem, actions, problem, exc.oracle, exc.coherence_name)
    trace = replay_actions(sem, actions)  # NOTE(replay): every shown trace is a replay
    message = trace[-1].error if trace and trace[-1].error else problem.message
    return Failure(problem.kind, problem.name, message, trace), len(exc.actions)
