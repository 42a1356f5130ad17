"""The reference engine: breadth-first search in plain Python over the reference semantics.

It is the oracle that every other engine is differential-tested against, so it is plain:
canonical states (``coherence.symmetry``) packed in the shared layout, a parent id each, and
for each failure key the shallowest state where it shows. Symmetry audits, trace replay and
verdicts belong to the driver (``coherence.engines.driver``), shared by all engines.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

from coherence import ir
from coherence.engines.api import RawFailure, RawResult
from coherence.engines.reference.store import PackedStore
from coherence.engines.stopping import (
    StopOnSignals,
    StopRequest,
    memory_limit_reached,
    time_limit_reached,
)
from coherence.failures import DEADLOCK, outcome_keys, violation_key
from coherence.layout import Layout
from coherence.memory import peak_rss_bytes, rss_bytes
from coherence.results import CheckOptions, FailureKey, Progress
from coherence.semantics import Semantics, State
from coherence.symmetry import has_symmetry, make_symmetry
from coherence.vacuity import is_witness


class ReferenceEngine:
    name = "reference"

    def available(self) -> str | None:
        return None

    def explore(self, model: ir.Model, layout: Layout, options: CheckOptions) -> RawResult:
        return _Search(model, layout, options).run()


class _Search:
    def __init__(self, model: ir.Model, layout: Layout, options: CheckOptions) -> None:
        self.model = model
        self.layout = layout
        self.options = options
        self.sem = Semantics(model)
        self.sym = make_symmetry(self.sem) if options.symmetry and has_symmetry(model) else None
        self.nbytes = max(1, (layout.bits + 7) // 8)
        self.store = PackedStore(self.nbytes)
        self.first: dict[FailureKey, int] = {}
        self.settled: set[str] = set()  # invariants no longer evaluated
        self.rules = 0
        self.fired: Counter[tuple[str, int]] = Counter()

    def key_of(self, state: State) -> bytes:
        return self.layout.pack(state).to_bytes(self.nbytes, "little")

    def canon(self, state: State) -> tuple[bytes, State]:
        if self.sym is not None:
            state = self.sym.canonical(state)[1]
        return self.key_of(state), state

    def record(self, key: FailureKey, idx: int) -> None:
        if key not in self.first:
            self.first[key] = idx
            if is_witness(key):  # a vacuity witness is needed once (coherence.vacuity)
                self.settled.add(key[1])

    def check_state(self, state: State, idx: int) -> None:
        for v in self.sem.invariant_violations(state, self.settled):
            self.record(violation_key(v), idx)

    def run(self) -> RawResult:
        request = StopRequest()
        with StopOnSignals(request):
            return self.search(request)

    def search(self, request: StopRequest) -> RawResult:
        opts, store, sem = self.options, self.store, self.sem
        start = time.perf_counter()
        last_report = start
        mem0 = rss_bytes()
        report: Callable[[Progress], None] | None = opts.progress
        frontier: list[int] = []
        for s in sem.initial_states():
            key, canon = self.canon(s)
            idx = store.add(key, -1)
            if idx is not None:
                frontier.append(idx)
                self.check_state(canon, idx)
        depth = 0
        stopped: str | None = None
        while frontier:
            if opts.stop_at_first and self.first:
                stopped = "stopped at the first failure"
                break
            if opts.max_depth is not None and depth >= opts.max_depth:
                stopped = f"--max-depth {opts.max_depth} reached"
                break
            next_frontier: list[int] = []
            for idx in frontier:
                state = self.layout.unpack(self.layout.from_bytes(store[idx]))
                outcomes, problems = sem.enabled(state)
                for p in problems:
                    self.record(violation_key(p), idx)
                for out in outcomes:
                    self.rules += 1
                    self.fired[out.action.machine, out.action.transition] += 1
                    if out.error is not None:
                        for k in outcome_keys(out):
                            self.record(k, idx)
                        continue
                    assert out.state is not None
                    if self.sym is not None and self.key_of(out.state) in store:
                        continue  # the successor is itself a stored representative
                    key, canon = self.canon(out.state)
                    child = store.add(key, idx)
                    if child is not None:
                        next_frontier.append(child)
                        self.check_state(canon, child)
                if opts.deadlock and sem.is_deadlock(state, outcomes, problems):
                    self.record(DEADLOCK, idx)
                if opts.max_states is not None and len(store) >= opts.max_states:
                    stopped = f"--max-states {opts.max_states} reached"
                    break
                if request.reason is not None:
                    stopped = request.reason
                    break
                now = time.perf_counter()
                if opts.time_limit is not None and now - start > opts.time_limit:
                    stopped = time_limit_reached(opts.time_limit)
                    break
                if (opts.memory_limit is not None and len(store) % 256 == 0
                        and rss_bytes() > opts.memory_limit):
                    stopped = memory_limit_reached(opts.memory_limit)
                    break
                if report is not None and now - last_report >= opts.progress_every:
                    last_report = now
                    report(Progress(len(store), len(frontier) + len(next_frontier), depth,
                                    self.rules, now - start, store.nbytes()))
            if stopped:
                break
            frontier = next_frontier
            if frontier:
                depth += 1
        seconds = time.perf_counter() - start
        n = len(store)
        failures = [RawFailure(key, [self.layout.from_bytes(store[i])
                                     for i in store.path_to(idx)])
                    for key, idx in self.first.items()]
        return RawResult(
            states=n, rules_fired=self.rules, depth=depth, seconds=seconds,
            peak_memory_bytes=max(peak_rss_bytes(), mem0),
            bytes_per_state=store.nbytes() / n if n else 0.0,
            failures=failures, stopped=stopped, threads=1, coverage=dict(self.fired))
