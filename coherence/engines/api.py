"""The interface every exploration engine implements, and the raw result it returns.

An engine explores the reachable states of one bound model in the shared packed layout
(``coherence.layout``) and reports counts and, for each failure key, the path of packed
states that leads to its first (shallowest) occurrence. Everything that gives those paths
meaning — replaying them through the reference semantics into numbered traces, the symmetry
audit and the fallback without symmetry, the verdict — is done once, by the driver in
``coherence.engines``, for every engine alike.
"""

from __future__ import annotations

from typing import Protocol

import attrs

from coherence import ir
from coherence.layout import Layout
from coherence.results import CheckOptions, FailureKey


@attrs.define
class RawFailure:
    """The first occurrence of one failure key.

    ``path`` holds the packed states from an initial state to the state where the failure
    shows: the violating state for invariants and deadlocks, the state that the failing
    action leaves from for action errors, coherence violations and no-transition.
    """

    key: FailureKey
    path: list[int]


@attrs.define
class RawResult:
    states: int
    rules_fired: int
    depth: int
    seconds: float
    peak_memory_bytes: int
    bytes_per_state: float
    failures: list[RawFailure]
    stopped: str | None
    threads: int = 1
    notes: list[str] = attrs.Factory(list)
    # (machine, transition index) -> times it fired (with or without a model error), for
    # --coverage; None from an engine that does not count
    coverage: dict[tuple[str, int], int] | None = None


class NotSymmetric(Exception):
    """Raised by an engine that finds the model is not symmetric in its agents (the driver
    then searches again without symmetry)."""


class Engine(Protocol):
    """One way of exploring a model; stateless between runs."""

    name: str

    def available(self) -> str | None:
        """None when the engine can run here, else the one-line reason it cannot."""
        ...

    def explore(self, model: ir.Model, layout: Layout, options: CheckOptions) -> RawResult:
        """Breadth-first search of every reachable state (under ``options.symmetry``)."""
        ...
