"""The host side of the GPU harnesses (time budget, launch sizing, histogram reading, the
link harness's timeouts) run against a stand-in for CuPy: numpy arrays and kernels whose
effect on the histogram is known. What the kernels do on a GPU is for test_hw_gpu.py."""

from __future__ import annotations

import sys
import time
import types
from typing import Any

import numpy as np
import pytest

from coherence.hw.environments import environment
from coherence.litmus.catalogue import find_test
from coherence.litmus.variants import apply_variant


class _Array(np.ndarray):
    def get(self) -> np.ndarray:
        return np.asarray(self)


def _wrap(a: Any) -> _Array:
    return np.asarray(a).view(_Array)


class _PersistentKernel:
    """Every launch adds ``iters * instances`` to one bucket (of roles on distinct SMs) and
    takes about ``seconds_per_iter * iters``."""

    num_regs = 40
    shared_size_bytes = 136

    def __init__(self, bucket: int, seconds_per_iter: float) -> None:
        self.bucket = bucket
        self.seconds_per_iter = seconds_per_iter
        self.launches: list[int] = []

    def __call__(self, grid: tuple, block: tuple, args: tuple) -> None:
        hist, iters, n_inst = args[6], int(args[9]), int(args[13])
        self.launches.append(iters)
        hist[self.bucket] += iters * n_inst
        time.sleep(self.seconds_per_iter * iters)


class _Event:
    def record(self) -> None:
        self.t = time.perf_counter()

    def synchronize(self) -> None:
        pass


def _fake_cupy() -> types.ModuleType:
    cp = types.ModuleType("cupy")
    cp.uint8, cp.uint32, cp.uint64 = np.uint8, np.uint32, np.uint64  # type: ignore[attr-defined]
    cp.zeros = lambda n, dtype=float: _wrap(np.zeros(n, dtype=dtype))  # type: ignore[attr-defined]
    cp.asarray = lambda a: _wrap(np.array(a))  # type: ignore[attr-defined]

    class Device:
        def __init__(self, i: int = 0) -> None:
            self.id = i
            self.attributes = {"MultiProcessorCount": 4}

        def __enter__(self) -> Device:
            return self

        def __exit__(self, *a: object) -> None:
            return None

        def synchronize(self) -> None:
            pass

    cuda = types.SimpleNamespace(
        Device=Device, Event=_Event,
        get_elapsed_time=lambda a, b: (b.t - a.t) * 1000.0,
        driver=types.SimpleNamespace(),  # no occupancy query: the harness counts alone
        runtime=types.SimpleNamespace())
    cp.cuda = cuda  # type: ignore[attr-defined]
    return cp


@pytest.fixture
def fake_cupy(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    cp = _fake_cupy()
    monkeypatch.setitem(sys.modules, "cupy", cp)
    return cp


def test_time_budget_launch_sizing_and_histogram(fake_cupy: types.ModuleType) -> None:
    from coherence.hw.harness import RunOptions, run_environment
    from coherence.hw.outcomes import codec

    test = apply_variant(find_test("MP"), "weak")
    weak = codec(test).encode((1, 0, 1, 1))
    kernel = _PersistentKernel(weak, 1e-5)
    opts = RunOptions(seconds=0.3, launch_seconds=0.05, first_iterations=16)
    res = run_environment(test, kernel, environment("barrier"), opts, {"checked": False})
    # 4 SMs x 6 resident blocks of 256 threads (40 registers each), 2 roles per instance
    assert res.grid_instances == 4 * 6 * 256 // 2
    assert kernel.launches[0] == 16 and len(kernel.launches) == res.launches >= 3
    assert max(kernel.launches[1:]) > 16  # later launches sized from the first one's time
    assert res.iterations == sum(kernel.launches)
    assert res.instances == res.iterations * res.grid_instances
    assert res.distinct_sm == {"1:r0=1 1:r1=0 x=1 y=1": res.instances}
    assert res.shared_sm == {} and res.overflow == 0 and res.timeouts == 0
    assert 0.3 <= res.seconds < 1.0  # the budget is kept, and not overrun by much
    stress = run_environment(test, _PersistentKernel(0, 1e-5), environment("stress"),
                             RunOptions(seconds=0.05), {"checked": False})
    assert stress.grid_instances == res.grid_instances // 2  # half the threads stress


def test_link_run_reports_a_gpu_that_never_answers(fake_cupy: types.ModuleType,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A GPU role that never runs: the CPU role's barrier times out, the run stops and says
    so, and nothing is counted."""
    import coherence.hw.harness as harness
    from coherence.hw.link import LinkOptions, run_link
    from coherence.hw.placement import Placement

    class Silent:
        def get_function(self, name: str) -> Any:
            return lambda grid, block, args: None

    kept: dict[int, np.ndarray] = {}

    def host_alloc(n: int, flags: int) -> int:
        b = np.zeros(n, np.uint8)
        kept[b.ctypes.data] = b
        return int(b.ctypes.data)

    fake_cupy.cuda.runtime.hostAlloc = host_alloc
    fake_cupy.cuda.runtime.freeHost = lambda p: kept.pop(p)
    monkeypatch.setattr(harness, "cuda_module", lambda source: Silent())
    test = apply_variant(find_test("MP"), "relaxed.sys")
    res = run_link(test, Placement(("cpu", "gpu0"), "pinned"),
                   LinkOptions(seconds=5.0, instances=1, timeout_ms=50.0, pin_cpus=False))
    assert res.timeouts == 1 and res.instances == 0 and res.launches == 1
    assert not kept  # pinned buffers freed
