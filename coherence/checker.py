"""The reference explicit-state checker: breadth-first, exact symmetry, shortest traces.

This engine is the correctness oracle the faster ones are tested against, so it is plain:
BFS over canonical states, visited states kept as packed bytes with a parent index each,
and every counterexample rebuilt by replaying the semantics from the initial state.
"""

from __future__ import annotations

import resource
import sys
import time
from array import array
from collections.abc import Callable

import attrs

from coherence import ir
from coherence.encode import decode, encode
from coherence.semantics import CoherenceViolation, Outcome, Semantics, State, Violation
from coherence.symmetry import Symmetry
from coherence.trace import Step, TraceReplayError, replay_path


@attrs.define
class Failure:
    """One violated property with its shortest counterexample."""

    kind: str  # invariant | coherence | error | deadlock | no-transition
    name: str
    message: str
    trace: list[Step]
    span: str | None = None

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

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0

    @property
    def exit_code(self) -> int:
        return {"holds": 0, "fails": 1, "incomplete": 3}[self.verdict]


@attrs.define
class CheckOptions:
    symmetry: bool = True
    max_states: int | None = None
    max_depth: int | None = None
    deadlock: bool = True
    stop_at_first: bool = False
    progress: Callable[[Progress], None] | None = None
    progress_every: float = 0.5


NOT_SYMMETRIC = ("symmetry reduction was turned off: this model is not symmetric in its agents "
                 "(renaming the agents of a state does not rename its successors, e.g. a bus "
                 "broadcast whose receivers' order decides the outcome), so the search was "
                 "run again over every state")


def check(model: ir.Model, options: CheckOptions | None = None) -> CheckResult:
    options = options or CheckOptions()
    try:
        return _Search(model, options).run()
    except (TraceReplayError, _NotSymmetric):
        if not options.symmetry:
            raise
    # NOTE(symmetry-soundness): symmetry reduction is exact only for models whose behaviour
    # does not depend on agent ids; a reduced path that cannot be replayed concretely proves
    # this one's does, and its reduced answer cannot be trusted either way.
    result = _Search(model, attrs.evolve(options, symmetry=False)).run()
    result.notes.append(NOT_SYMMETRIC)
    return result


class _NotSymmetric(Exception):
    """Two agent-renamed states have successors that are not renamings of each other."""


AUDITED_STATES = 512  # states whose successors are compared with a renamed copy's


def property_names(model: ir.Model) -> list[str]:
    names = [inv.name for inv in model.invariants]
    names += [p.name for p in model.properties]
    return [*names, "deadlock", "no-transition", "errors"]


class _Search:
    def __init__(self, model: ir.Model, options: CheckOptions) -> None:
        self.model = model
        self.options = options
        self.sem = Semantics(model)
        self.sym = Symmetry(self.sem) if options.symmetry and model.agents > 1 else None
        self.keys: list[bytes] = []
        self.parents = array("i")
        self.visited: dict[bytes, int] = {}
        self.failures: dict[str, Failure] = {}
        self.rules = 0
        self.audits = AUDITED_STATES if self.sym is not None else 0
        n = model.agents
        # a transposition and a rotation generate every renaming of the agents
        self.audit_perms = [(1, 0, *range(2, n)), (*range(1, n), 0)]

    def audit(self, state: State, outcomes: list[Outcome]) -> None:
        """NOTE(symmetry-soundness): the reduction is exact only if renaming the agents of a
        state renames its successors; the first states explored are checked for it."""
        assert self.sym is not None
        self.audits -= 1
        perm = self.audit_perms[self.audits % 2]
        mine = sorted(self.canon(o.state)[0] for o in outcomes if o.state is not None)
        renamed = self.sem.enabled(self.sym.permute(state, perm))[0]
        theirs = sorted(self.canon(o.state)[0] for o in renamed if o.state is not None)
        if mine != theirs or sum(o.error is not None for o in outcomes) != sum(
                o.error is not None for o in renamed):
            raise _NotSymmetric()

    def canon(self, state: State) -> tuple[bytes, State]:
        if self.sym is None:
            return encode(state), state
        return self.sym.canonical(state)

    def add(self, key: bytes, parent: int) -> int | None:
        if key in self.visited:
            return None
        idx = len(self.keys)
        self.visited[key] = idx
        self.keys.append(key)
        self.parents.append(parent)
        return idx

    def path_to(self, idx: int) -> list[bytes]:
        path = []
        while idx >= 0:
            path.append(self.keys[idx])
            idx = self.parents[idx]
        return path[::-1]

    def record(self, key: str, kind: str, name: str, message: str, idx: int,
               final: Outcome | None = None, span: str | None = None) -> None:
        if key in self.failures:
            return
        trace = replay_path(self.sem, self.canon, self.path_to(idx), final)
        if trace and trace[-1].error:
            message = trace[-1].error  # in the replayed trace's agent names
        self.failures[key] = Failure(kind, name, message, trace, span)

    def run(self) -> CheckResult:
        opts = self.options
        start = time.perf_counter()
        last_report = start
        mem0 = _rss_bytes()
        # The frontier holds indices only; states are decoded from their packed keys.
        frontier: list[int] = []
        for s in self.sem.initial_states():
            key, canon = self.canon(s)
            idx = self.add(key, -1)
            if idx is not None:
                frontier.append(idx)
                self.check_state(canon, idx)
        depth = 0
        stopped: str | None = None
        while frontier:
            if opts.stop_at_first and self.failures:
                stopped = "stopped at the first failure"
                break
            if opts.max_depth is not None and depth >= opts.max_depth:
                stopped = f"--max-depth {opts.max_depth} reached"
                break
            next_frontier: list[int] = []
            for idx in frontier:
                state = decode(self.keys[idx])
                outcomes, problems = self.sem.enabled(state)
                if self.audits > 0:
                    self.audit(state, outcomes)
                for p in problems:
                    self.record(f"no-transition:{p.message}", "no-transition", p.name,
                                p.message, idx)
                live = 0
                for out in outcomes:
                    self.rules += 1
                    if out.error is not None:
                        self.record_error(out, idx)
                        continue
                    live += 1
                    assert out.state is not None
                    if self.sym is not None and encode(out.state) in self.visited:
                        continue  # the successor is itself a visited representative
                    key, canon = self.canon(out.state)
                    child = self.add(key, idx)
                    if child is not None:
                        next_frontier.append(child)
                        self.check_state(canon, child)
                if (opts.deadlock and live == 0 and not problems and not any(
                        o.error for o in outcomes) and not self.sem.quiescent(state)):
                    self.record("deadlock", "deadlock", "deadlock",
                                "deadlock: nothing can move, but a request or message is "
                                "pending", idx)
                if opts.max_states is not None and len(self.keys) >= opts.max_states:
                    stopped = f"--max-states {opts.max_states} reached"
                    break
                now = time.perf_counter()
                if opts.progress is not None and now - last_report >= opts.progress_every:
                    last_report = now
                    opts.progress(Progress(len(self.keys), len(frontier) + len(next_frontier),
                                           depth, self.rules, now - start))
            if stopped:
                break
            frontier = next_frontier
            if frontier:
                depth += 1
        seconds = time.perf_counter() - start
        n = len(self.keys)
        structure = (sys.getsizeof(self.visited) + sys.getsizeof(self.keys)
                     + self.parents.itemsize * len(self.parents)
                     + sum(sys.getsizeof(k) for k in self.keys))
        failures = sorted(self.failures.values(), key=lambda f: (f.length, f.name))
        if failures:
            verdict = "fails"
        elif stopped:
            verdict = "incomplete"
        else:
            verdict = "holds"
        return CheckResult(
            spec=self.model.file,
            params={p.name: p.value for p in self.model.params},
            symmetry="exact" if self.sym is not None else "off",
            verdict=verdict,
            states=n,
            rules_fired=self.rules,
            depth=depth,
            seconds=seconds,
            peak_memory_bytes=max(_peak_rss_bytes(), mem0),
            bytes_per_state=structure / n if n else 0.0,
            failures=failures,
            stopped=stopped,
            properties=property_names(self.model),
        )

    def check_state(self, state: State, idx: int) -> None:
        for v in self.sem.invariant_violations(state):
            self.record(f"{v.kind}:{v.name}", v.kind, v.name, v.message, idx)

    def record_error(self, out: Outcome, idx: int) -> None:
        err = out.error
        assert err is not None
        if isinstance(err, CoherenceViolation):
            for name in err.properties:
                self.record(f"coherence:{name}", "coherence", name, err.message, idx, out)
            return
        span = str(err.span) if err.span is not None else None
        self.record(f"error:{err.message}:{span}", "error", "error", err.message, idx, out,
                    span)


def _peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize()
    except OSError:  # pragma: no cover - not Linux
        return 0


_ = Violation
