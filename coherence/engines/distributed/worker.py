"""One Ray actor's side of the search: its partition of the states, level by level.

The driver (``search.py``) calls ``seed`` once (or ``resume``), then per level ``expand``
(successors of this worker's frontier, bucketed by owner: ``workers`` arrays of packed states
plus their parents' indices, each its own Ray object, which the driver hands to the owners
without reading them) and ``insert`` (the batches every worker sent here: the new states
become the next frontier, their invariants are checked, and their parents are recorded as
(worker, index) pairs). A level's result is in only when every worker's ``insert`` has
returned, so no level ends while a batch is in flight.

This module imports neither Ray nor the rest of coherence: the engine wraps the class with
``ray.remote``, so a worker process loads NumPy and the model library, nothing else.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from coherence.engines.distributed.native import I64, U64, Partition, build

Bucket = tuple[U64, I64]


class Worker:
    def __init__(self, index: int, workers: int, source: str, symmetry: bool,
                 deadlock: bool, checkpoint: str | None) -> None:
        self.index = index
        self.workers = workers
        self.symmetry = symmetry
        self.deadlock = deadlock
        self.part = Partition(build(source))
        self.parent_owner: list[npt.NDArray[np.int32]] = []
        self.parent_index: list[I64] = []
        self.level = (0, 0)  # the frontier: stored indices [start, end)
        self.checkpoint = Path(checkpoint) if checkpoint else None

    def ready(self) -> int:
        return os.getpid()

    # ------------------------------------------------------------ levels

    def seed(self) -> dict[str, Any]:
        """Level 0: the initial states this worker owns."""
        init = self.part.initial(self.symmetry)
        mine = init[self.part.owners(init, self.workers) == self.index]
        return self._store([(mine, np.full(len(mine), -1, dtype=np.int64))], 0, own=False)

    def expand(self) -> tuple[Any, ...]:
        """The frontier's successors, one bucket per owner, then this level's figures."""
        found = self.part.no_failures()
        succ, parents, rules = self.part.expand(*self.level, self.symmetry, self.deadlock,
                                                self.workers, self.index, found)
        owners = self.part.owners(succ, self.workers)
        order = np.argsort(owners, kind="stable")
        bounds = np.searchsorted(owners[order], np.arange(self.workers + 1))
        buckets: list[Bucket] = []
        for w in range(self.workers):
            pick = order[bounds[w]:bounds[w + 1]]
            buckets.append((succ[pick], parents[pick]))
        stats = {"rules": rules, "expanded": self.level[1] - self.level[0],
                 "sent": len(succ), "failures": _failures(found)}
        return (*buckets, stats)

    def insert(self, depth: int, *buckets: Bucket) -> dict[str, Any]:
        """The successors that every worker sent here (bucket i from worker i), at ``depth``."""
        return self._store(list(buckets), depth, own=True)

    def _store(self, buckets: list[Bucket], depth: int, own: bool) -> dict[str, Any]:
        start = self.part.count
        owners: list[npt.NDArray[np.int32]] = []
        indices: list[I64] = []
        for src, (states, parents) in enumerate(buckets):
            fresh = self.part.insert(states) >= 0
            owners.append(np.full(int(fresh.sum()), src if own else -1, dtype=np.int32))
            indices.append(parents[fresh])
        end = self.part.count
        self.parent_owner.append(np.concatenate(owners) if owners else
                                 np.empty(0, dtype=np.int32))
        self.parent_index.append(np.concatenate(indices) if indices else
                                 np.empty(0, dtype=np.int64))
        self.level = (start, end)
        found = self.part.no_failures()
        self.part.check(start, end, found)
        if self.checkpoint is not None:
            self._save_level(depth)
        return self._figures(end - start, found)

    def _figures(self, new: int, found: I64) -> dict[str, Any]:
        parents = sum(a.nbytes for a in self.parent_owner) + sum(
            a.nbytes for a in self.parent_index)
        return {"new": new, "states": self.part.count, "failures": _failures(found),
                "bytes": self.part.bytes + parents,
                "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}

    # ------------------------------------------------------------ paths

    def entry(self, index: int) -> tuple[bytes, int, int]:
        """The stored state ``index`` (its packed bytes) and its parent (worker, index), or
        (-1, -1) for an initial state."""
        level = 0
        at = index
        while at >= len(self.parent_index[level]):
            at -= len(self.parent_index[level])
            level += 1
        state = self.part.get(index, index + 1)
        return (state.tobytes(), int(self.parent_owner[level][at]),
                int(self.parent_index[level][at]))

    # ------------------------------------------------------------ checkpoints

    def _segment(self, depth: int) -> Path:
        assert self.checkpoint is not None
        return self.checkpoint / f"worker-{self.index}-level-{depth}.npz"

    def _save_level(self, depth: int) -> None:
        """This level's new states and their parents, written whole or not at all."""
        assert self.checkpoint is not None
        self.checkpoint.mkdir(parents=True, exist_ok=True)
        target = self._segment(depth)
        tmp = target.with_suffix(f".tmp{os.getpid()}.npz")
        np.savez(tmp, states=self.part.get(*self.level), owner=self.parent_owner[-1],
                 index=self.parent_index[-1])
        os.replace(tmp, target)

    def resume(self, depth: int) -> dict[str, Any]:
        """Reloads levels 0..depth from the checkpoint (the last one is the frontier)."""
        assert self.checkpoint is not None
        new = 0
        found = self.part.no_failures()
        for level in range(depth + 1):
            with np.load(self._segment(level)) as seg:
                states, owner, index = seg["states"], seg["owner"], seg["index"]
            start = self.part.count
            if (self.part.insert(states) < 0).any():
                raise RuntimeError(f"checkpoint {self._segment(level)} holds a state twice")
            self.parent_owner.append(owner.astype(np.int32))
            self.parent_index.append(index.astype(np.int64))
            self.level = (start, self.part.count)
            new = len(states)
        return self._figures(new, found)


def _failures(found: I64) -> dict[int, int]:
    """Failure key -> the first stored index showing it."""
    return {int(k): int(i) for k, i in enumerate(found) if i >= 0}
