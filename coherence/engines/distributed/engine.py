"""``--engine distributed``: the search spread over Ray actors, each owning the states whose
hash picks it (Stern and Dill's parallel Murphi; PReach), with the generated model's C as
every worker's successor function (issue 21).

``ray.init()`` starts a local cluster with one CPU per worker unless ``address`` names an
existing cluster to join. The driver (``search.Search``) runs the levels; the failures come
back as paths of packed states, which the engine driver replays through the reference
semantics, as for every engine.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import socket
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from coherence import ir
from coherence.engines.api import RawResult
from coherence.engines.stopping import StopOnSignals
from coherence.layout import Layout
from coherence.results import CheckOptions

START_TIMEOUT_S = 120  # workers that are not up by then (no room in the cluster): an error


def local_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class DistributedEngine:
    """``--engine distributed``. ``workers``: actors (default: this machine's cores, or the
    checkpoint's count when resuming); ``address``: a Ray cluster to join (default: a local
    one); ``checkpoint``: a directory for every level's partitions; ``resume``: a checkpoint
    directory to continue from (and to keep writing to). ``level_hook(depth, actors)`` runs
    before each level is expanded (fault injection in the tests)."""

    name = "distributed"

    def __init__(self, workers: int | None = None, address: str | None = None,
                 checkpoint: str | os.PathLike[str] | None = None,
                 resume: str | os.PathLike[str] | None = None,
                 level_hook: Callable[[int, Sequence[Any]], None] | None = None) -> None:
        self.workers = workers
        self.address = address
        self.checkpoint = Path(checkpoint) if checkpoint is not None else None
        self.resume = Path(resume) if resume is not None else None
        self.level_hook = level_hook

    def available(self) -> str | None:
        if importlib.util.find_spec("ray") is None:
            return ("Ray is not installed (pip install 'coherence[distributed]', or "
                    "pip install 'ray>=2.9')")
        from coherence.engines.distributed.native import find_compiler
        if find_compiler() is None:
            return "no C compiler found (tried $CC, cc, gcc, clang): install gcc or clang"
        return None

    def explore(self, model: ir.Model, layout: Layout, options: CheckOptions) -> RawResult:
        from coherence.engines import EngineUnavailable
        from coherence.engines.cgen.codegen import CodegenError, generate
        from coherence.engines.distributed import search
        from coherence.engines.distributed.native import NativeError, build

        try:
            generated = generate(model, layout)
        except CodegenError as err:
            raise EngineUnavailable(f"the distributed engine cannot translate this model: "
                                    f"{err}") from err
        fingerprint = hashlib.sha256(
            f"{generated.source}\0{options.symmetry}\0{options.deadlock}".encode()).hexdigest()
        manifest = None
        directory = self.resume or self.checkpoint
        if self.resume is not None:
            try:
                manifest = search.read_manifest(self.resume, fingerprint, self.workers)
            except search.CheckpointError as err:
                raise EngineUnavailable(str(err)) from err
        workers = self.workers or (manifest["workers"] if manifest else local_cores())
        try:
            build(generated.source)  # once here, so that local workers find it in the cache
        except NativeError as err:
            raise EngineUnavailable(f"the distributed engine cannot build its worker: "
                                    f"{err}") from err
        ray, started = _connect(self.address, workers)
        actors: list[Any] = []
        try:
            actors = _start_workers(ray, workers, generated.source, options, directory)
            run = search.Search(ray, actors, options, directory, fingerprint, self.level_hook)
            notes: list[str] = []
            stopped: str | None
            with StopOnSignals(run.stop):
                try:
                    if manifest is not None:
                        run.resume(manifest)
                        notes.append(f"resumed from {self.resume} at depth {manifest['depth']}")
                    else:
                        run.seed()
                    stopped = run.run()
                except search.WorkerDied as err:
                    stopped = f"{err}: the result is partial (through depth {run.totals.depth})"
            if directory is not None:
                notes.append(f"checkpoint: {directory} (depth {run.totals.depth}; "
                             f"--resume {directory} continues)")
            return run.result(generated.keys, stopped, layout.from_bytes, notes)
        finally:
            for actor in actors:
                ray.kill(actor)
            if started:
                ray.shutdown()


def _connect(address: str | None, workers: int) -> tuple[Any, bool]:
    """Ray, initialised (a local cluster with a CPU per worker, unless ``address`` or an
    earlier ``ray.init`` in this process gives one), and whether this call started it."""
    import ray

    from coherence.engines import EngineUnavailable
    if ray.is_initialized():
        return ray, False
    if address is not None:
        unreachable = check_address(address)
        if unreachable is not None:
            raise EngineUnavailable(unreachable)
    try:
        if address is not None:
            ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
                     logging_level=logging.ERROR)
    except (ConnectionError, RuntimeError, ValueError) as err:
        where = f"join the Ray cluster at {address}" if address else "start a local Ray cluster"
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise EngineUnavailable(f"the distributed engine cannot {where}: {first}") from err
    return ray, True


def check_address(address: str, timeout: float = 5.0) -> str | None:
    """Why a ``HOST:PORT`` cluster address cannot be joined, found by opening a TCP connection
    to it (Ray itself retries an unreachable head for minutes); None when it answers, or for
    the addresses Ray resolves itself (``auto``, ``ray://...``)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or "://" in address:
        return None
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return None
    except OSError as err:
        return (f"--address {address}: no Ray cluster answers there ({err.strerror or err}); "
                "start one with `ray start --head` (docs/distributed.md)")


def _start_workers(ray: Any, workers: int, source: str, options: CheckOptions,
                   directory: Path | None) -> list[Any]:
    from coherence.engines import EngineUnavailable
    from coherence.engines.distributed.worker import Worker

    cpus = ray.cluster_resources().get("CPU", 0)
    if cpus < workers:
        raise EngineUnavailable(f"--workers {workers}: the Ray cluster has {cpus:g} CPUs "
                                "(one per worker is needed)")
    remote = ray.remote(num_cpus=1, max_restarts=0, scheduling_strategy="SPREAD")(Worker)
    checkpoint = str(directory.resolve()) if directory is not None else None
    actors = [remote.remote(i, workers, source, options.symmetry, options.deadlock,
                            checkpoint) for i in range(workers)]
    ready, pending = ray.wait([a.ready.remote() for a in actors], num_returns=workers,
                              timeout=START_TIMEOUT_S)
    if pending:
        for a in actors:
            ray.kill(a)
        raise EngineUnavailable(f"only {len(ready)} of {workers} workers started within "
                                f"{START_TIMEOUT_S} s")
    ray.get(ready)  # a worker that failed to start (e.g. its build) raises here
    return actors

