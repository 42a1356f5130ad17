"""The driver's side of a distributed search: level-synchronous BFS over Ray actors.

Per level every worker expands its frontier into one bucket per owner (``Worker.expand``),
and every worker then inserts the buckets addressed to it (``Worker.insert``): the buckets
pass as Ray object references, so the states go from worker to worker through the object
store and the driver reads only each call's small figures. A level ends when every
``insert`` has returned; a search ends when a level stores nothing new. Each failure key
keeps its shallowest occurrence as (depth, worker, index); its path is rebuilt by following
the parent references from worker to worker.

A worker that dies (``RayActorError``) stops the search with the states of the last complete
level and a note; waits poll (``ray.wait`` with a timeout), so limits and signals are seen
while a level runs.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from coherence.engines.api import RawFailure, RawResult
from coherence.engines.stopping import (
    StopRequest,
    memory_limit_reached,
    time_limit_reached,
)
from coherence.results import CheckOptions, FailureKey, Progress

DEADLOCK: FailureKey = ("deadlock",)
POLL_S = 0.1
MANIFEST = "manifest.json"
FORMAT = 1


class WorkerDied(Exception):
    pass


class CheckpointError(Exception):
    """A --resume directory that does not hold a checkpoint of this run."""


@attrs.define
class Totals:
    states: int = 0
    rules: int = 0
    depth: int = 0
    frontier: int = 0
    bytes: int = 0
    peak_rss: int = 0
    # failure key index -> (depth, worker, index)
    first: dict[int, tuple[int, int, int]] = attrs.Factory(dict)

    def note(self, depth: int, worker: int, failures: dict[Any, int]) -> None:
        for k, index in failures.items():
            here = (depth, worker, index)
            k = int(k)
            if k not in self.first or here < self.first[k]:
                self.first[k] = here


class Search:
    def __init__(self, ray: Any, actors: Sequence[Any], options: CheckOptions,
                 checkpoint: Path | None, fingerprint: str,
                 level_hook: Callable[[int, Sequence[Any]], None] | None = None) -> None:
        self.ray = ray
        self.actors = list(actors)
        self.options = options
        self.checkpoint = checkpoint
        self.fingerprint = fingerprint
        self.level_hook = level_hook
        self.totals = Totals()
        self.stop = StopRequest()
        self.start = time.perf_counter()
        self.last_progress = self.start

    # ------------------------------------------------------------ waiting

    def gather(self, refs: list[Any]) -> list[Any] | None:
        """Every ref's value (ref i from worker i), polling for limits, signals and progress;
        None when a stop came first. Raises WorkerDied."""
        from ray.exceptions import RayActorError
        pending = list(refs)
        while pending:
            _ready, pending = self.ray.wait(pending, num_returns=len(pending), timeout=POLL_S)
            self.poll()
            if pending and self.stop.reason is not None:
                return None
        values = []
        for w, ref in enumerate(refs):
            try:
                values.append(self.ray.get(ref))
            except RayActorError as err:
                raise WorkerDied(f"worker {w} of {len(self.actors)} died "
                                 f"({type(err).__name__})") from err
        return values

    def poll(self) -> None:
        now = time.perf_counter()
        limit = self.options.time_limit
        if limit is not None and now - self.start > limit and self.stop.reason is None:
            self.stop.reason = time_limit_reached(limit)
        if self.options.progress is not None and \
                now - self.last_progress >= self.options.progress_every:
            self.last_progress = now
            t = self.totals
            self.options.progress(Progress(t.states, t.frontier, t.depth, t.rules,
                                           now - self.start, t.bytes))

    # ------------------------------------------------------------ levels

    def _absorb(self, figures: list[dict[str, Any]], depth: int) -> int:
        new = 0
        for w, fig in enumerate(figures):
            new += fig["new"]
            self.totals.note(depth, w, fig["failures"])
        self.totals.states = sum(f["states"] for f in figures)
        self.totals.bytes = sum(f["bytes"] for f in figures)
        self.totals.peak_rss = max(self.totals.peak_rss, sum(f["peak_rss"] for f in figures))
        return new

    def seed(self) -> None:
        figures = self.gather([a.seed.remote() for a in self.actors])
        if figures is None:
            return
        self.totals.frontier = self._absorb(figures, 0)
        self.save(0)

    def resume(self, manifest: dict[str, Any]) -> None:
        depth = int(manifest["depth"])
        figures = self.gather([a.resume.remote(depth) for a in self.actors])
        if figures is None:
            return
        self.totals.frontier = self._absorb(figures, depth)
        self.totals.depth = depth
        self.totals.rules = int(manifest["rules"])
        for k, here in manifest["failures"].items():
            self.totals.first[int(k)] = (int(here[0]), int(here[1]), int(here[2]))

    def run(self) -> str | None:
        """Levels until none is new or a stop; returns why it stopped early (None: done)."""
        opts = self.options
        t = self.totals
        workers = len(self.actors)
        while True:
            if self.stop.reason is not None:
                return self.stop.reason
            if opts.stop_at_first and t.first:
                return "stopped at the first failure"
            if opts.max_depth is not None and t.depth >= opts.max_depth:
                return f"--max-depth {opts.max_depth} reached"
            if opts.max_states is not None and t.states >= opts.max_states:
                return f"--max-states {opts.max_states} reached"
            if opts.memory_limit and t.bytes >= opts.memory_limit:
                return memory_limit_reached(opts.memory_limit)
            if self.level_hook is not None:
                self.level_hook(t.depth, self.actors)
            outs = [a.expand.options(num_returns=workers + 1).remote() for a in self.actors]
            stats = self.gather([o[-1] for o in outs])
            if stats is None:
                return self.stop.reason
            inserts = [a.insert.remote(t.depth + 1, *[outs[src][dst] for src in range(workers)])
                       for dst, a in enumerate(self.actors)]
            figures = self.gather(inserts)
            if figures is None:  # the level is not complete: its states are not counted
                return self.stop.reason
            for w, s in enumerate(stats):
                t.rules += s["rules"]
                t.note(t.depth, w, s["failures"])
            new = self._absorb(figures, t.depth + 1)
            if new == 0:  # every worker's level is in and none stored a new state: done
                return None
            t.depth += 1
            t.frontier = new
            self.save(t.depth)

    # ------------------------------------------------------------ checkpoints

    def save(self, depth: int) -> None:
        """The manifest that makes levels 0..depth of every worker's segments a checkpoint
        (written after every worker wrote its segment, replaced atomically)."""
        if self.checkpoint is None:
            return
        doc = {"format": FORMAT, "fingerprint": self.fingerprint,
               "workers": len(self.actors), "depth": depth, "rules": self.totals.rules,
               "states": self.totals.states,
               "failures": {str(k): list(v) for k, v in self.totals.first.items()}}
        tmp = self.checkpoint / f"{MANIFEST}.tmp{os.getpid()}"
        tmp.write_text(json.dumps(doc, indent=1))
        os.replace(tmp, self.checkpoint / MANIFEST)

    # ------------------------------------------------------------ the result

    def path(self, worker: int, index: int) -> list[bytes]:
        out: list[bytes] = []
        while worker >= 0:
            state, worker, index = self.ray.get(self.actors[worker].entry.remote(index),
                                                timeout=60)
            out.append(state)
        return out[::-1]

    def result(self, keys: Sequence[FailureKey], stopped: str | None,
               decode: Callable[[bytes], int], notes: list[str]) -> RawResult:
        t = self.totals
        found: list[tuple[int, int, RawFailure]] = []
        for k, (depth, worker, index) in sorted(t.first.items()):
            key = keys[k] if k < len(keys) else DEADLOCK
            try:
                path = [decode(s) for s in self.path(worker, index)]
            except Exception as err:  # a dead worker held part of the path
                notes.append(f"the counterexample for {key} is lost: {err}")
                continue
            found.append((depth, k, RawFailure(key, path)))
        failures = [f for _, _, f in sorted(found, key=lambda x: x[:2])]
        seconds = time.perf_counter() - self.start
        driver_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        return RawResult(
            states=t.states, rules_fired=t.rules, depth=t.depth, seconds=seconds,
            peak_memory_bytes=t.peak_rss + driver_rss,
            bytes_per_state=t.bytes / t.states if t.states else 0.0,
            failures=failures, stopped=stopped, threads=len(self.actors), notes=notes)


def read_manifest(directory: Path, fingerprint: str, workers: int | None) -> dict[str, Any]:
    path = directory / MANIFEST
    try:
        doc: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        raise CheckpointError(f"--resume {directory}: no checkpoint there ({MANIFEST} is "
                              "missing)") from None
    except (OSError, ValueError) as err:
        raise CheckpointError(f"--resume {directory}: {MANIFEST} cannot be read: "
                              f"{err}") from None
    if doc.get("format") != FORMAT or doc.get("fingerprint") != fingerprint:
        raise CheckpointError(f"--resume {directory}: the checkpoint is of another model, "
                              "parameters or options (symmetry, deadlock)")
    if workers is not None and workers != doc["workers"]:
        raise CheckpointError(f"--resume {directory}: the checkpoint was written by "
                              f"{doc['workers']} workers; resume with --workers "
                              f"{doc['workers']} (states are placed by hash modulo the "
                              "number of workers)")
    return doc
