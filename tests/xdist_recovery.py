"""A worker that dies must not hang the test run, and its Python stack must reach the log.

pytest-xdist 3.8 (the newest release) hangs for good after a worker dies under
``--dist loadgroup``: CI sat idle for 26 minutes after a segfault inside libz3 killed a worker
(session 18). Two scheduler faults, both fixed upstream but not released:
- ``remove_node`` puts the dead worker's finished tests back in the queue; a worker handed
  only finished tests is sent an empty batch and waits forever (pytest-dev/pytest-xdist#1323,
  fixed by #1324). It also re-queues the test that crashed, whose failure is already
  reported, so its replacement can die the same way (#1371).
- a worker runs a test only once it knows the next one (or is told to stop), and the worker
  that replaces a dead one is given a single test (#1327, fixed by #1328).
``install()`` patches both into ``LoadScopeScheduling`` (``loadgroup``'s base).

A worker's ``faulthandler`` writes to its stderr, which xdist does not forward, so a segfault
left no trace in CI. ``worker_faults`` points each worker's at a file, and the controller
prints that file when the worker goes down (``report_dead_worker``).
"""

from __future__ import annotations

import faulthandler
import os
import tempfile
from pathlib import Path
from typing import Any

FAULTS = Path(tempfile.gettempdir()) / f"coherence-pytest-faults-{os.getpid()}"


def install() -> None:
    """Patch the scheduler's two faults (a no-op where xdist is not installed)."""
    try:
        from xdist.scheduler.loadscope import LoadScopeScheduling
    except ImportError:
        return
    LoadScopeScheduling.remove_node = _remove_node  # type: ignore[method-assign]
    LoadScopeScheduling._reschedule = _reschedule  # type: ignore[method-assign]
    LoadScopeScheduling.mark_test_pending = _mark_test_pending  # type: ignore[method-assign]


def _mark_test_pending(self: Any, item: str) -> None:
    """Run a crashed test again (``rerun_crash``): its unit back in the queue, it pending."""
    scope, unit = self.crashed_units.pop(item)
    unit[item] = False
    self.workqueue[scope] = unit
    for node in self.assigned_work:
        self._reschedule(node)


def _remove_node(self: Any, node: Any) -> str | None:
    workload = self.assigned_work.pop(node)
    if not self._pending_of(workload):
        return None
    crashitem = next(nodeid for unit in workload.values()
                     for nodeid, done in unit.items() if not done)
    for scope, unit in workload.items():
        if crashitem in unit:
            unit[crashitem] = True  # not run again, unless ``rerun_crash`` asks
            if not hasattr(self, "crashed_units"):
                self.crashed_units = {}
            self.crashed_units[crashitem] = (scope, unit)
    for scope, unit in workload.items():
        if not all(unit.values()):
            self.workqueue[scope] = unit
    for other in self.assigned_work:
        self._reschedule(other)
    return crashitem


def _reschedule(self: Any, node: Any) -> None:
    if node.shutting_down:
        return
    if not self.workqueue:
        node.shutdown()
        return
    if self._pending_of(self.assigned_work[node]) > 2:
        return
    self._assign_work_unit(node)
    # a node runs a test only once it knows the next one: at least two, or the shutdown
    while self.workqueue and self._pending_of(self.assigned_work[node]) < 2:
        self._assign_work_unit(node)
    if not self.workqueue:
        node.shutdown()


CRASH_RERUNS = 1
_reruns: dict[str, int] = {}


def rerun_crash(crashitem: str, report: Any, sched: Any) -> bool:
    """A test whose worker died is run once more on a new worker before it counts as failed
    (as pytest-rerunfailures does): libz3 5.4 segfaulted in 2 of the last 4 CI runs, each
    time in another counting test that passes alone. A second crash fails it."""
    if _reruns.get(crashitem, 0) >= CRASH_RERUNS or not hasattr(sched, "crashed_units"):
        return False
    _reruns[crashitem] = _reruns.get(crashitem, 0) + 1
    sched.mark_test_pending(crashitem)
    report.outcome = "rerun"
    return True


def fault_file(worker: str, root: Path = FAULTS) -> Path:
    return root / f"{worker}.txt"


def worker_faults(worker: str, root: Path) -> Any:
    """Send this worker's fatal-error dumps (segfault, abort) to its file; the open file,
    which must stay open while the worker runs."""
    root.mkdir(parents=True, exist_ok=True)
    out = open(fault_file(worker, root), "w")  # noqa: SIM115
    faulthandler.enable(file=out, all_threads=True)
    return out


def report_dead_worker(worker: str, root: Path) -> str:
    """What the dead worker's faulthandler wrote ('' when nothing)."""
    path = fault_file(worker, root)
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return ""
