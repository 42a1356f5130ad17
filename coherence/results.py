"""Engine-neutral results: what any engine (reference, compiled, GPU, distributed) returns.

No engine owns these types, so the Z3 back end, fuzzing, diagrams and the command line can
use them without importing an engine (Stateright's split of ``Model`` and ``Checker``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from coherence.trace import Step

# NOTE(failure-keys): a failure's identity, the same in every engine, so that engines can be
# compared failure for failure and each property fails once in a report:
#   ("invariant", name)                    the invariant is false in a state
#   ("error", name)                        evaluating invariant ``name`` raised a model error
#   ("error", code, span)                  an action raised a model error (ModelError.code)
#   ("coherence", name)                    the coherence monitor rejected a load
#   ("no-transition", machine, message, state)
#   ("deadlock",)
FailureKey = tuple[str, ...]


def failure_kind(key: FailureKey) -> str:
    return key[0]


@attrs.define
class Failure:
    """One violated property with its shortest counterexample."""

    kind: str  # invariant | coherence | error | deadlock | no-transition
    name: str
    message: str
    trace: list[Step]
    span: str | None = None
    key: FailureKey = ()
    details: list[str] = attrs.Factory(list)  # e.g. the stuck state of a deadlock
    # liveness: the trace's steps from this one (1-based) to the end repeat forever (a lasso;
    # past the last step when the system only stutters in its last state)
    loop_start: int | None = None

    @property
    def length(self) -> int:
        return len(self.trace)


@attrs.define
class Progress:
    states: int
    frontier: int
    depth: int
    rules: int
    elapsed: float
    memory_bytes: int = 0


@attrs.define
class CheckOptions:
    symmetry: bool = True
    max_states: int | None = None
    max_depth: int | None = None
    deadlock: bool = True
    stop_at_first: bool = False
    progress: Callable[[Progress], None] | None = None
    progress_every: float = 0.5
    threads: int | None = None  # engines that run on several cores; None: all of them
    memory_limit: int | None = None  # bytes of memory the search may use (clean stop)
    time_limit: float | None = None  # seconds before a clean stop
    vacuity: bool = True  # report invariants whose premises no reachable state makes true
    liveness: bool = False  # check the spec's liveness properties (coherence.liveness)


@attrs.define
class Coverage:
    """How often one transition fired in the explored states (TLC's -coverage)."""

    machine: str
    transition: str  # as written: "on GetS in I", "rule SendInv"
    location: str  # file:line:col
    fired: int


@attrs.define
class CheckResult:
    spec: str
    params: dict[str, int]
    symmetry: str
    verdict: str  # holds | fails | incomplete
    states: int
    rules_fired: int
    depth: int
    seconds: float
    peak_memory_bytes: int
    bytes_per_state: float
    failures: list[Failure]
    stopped: str | None  # why the search stopped early, if it did
    properties: list[str]
    notes: list[str] = attrs.Factory(list)
    vacuous: list[str] = attrs.Factory(list)  # what holds only because nothing happens
    coverage: list[Coverage] | None = None  # per transition, from engines that count
    engine: str = "reference"
    threads: int = 1

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0

    @property
    def exit_code(self) -> int:
        return {"holds": 0, "fails": 1, "incomplete": 3}[self.verdict]
