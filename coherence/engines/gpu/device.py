"""Where the GPU engine's kernels run: the GPU through CuPy (``CupyDevice``), or the host
(``HostDevice``: the same translation unit compiled as C by the system's C compiler, each
launch running its threads
one after another), so that the search's host logic and the kernels' hashing and insertion
are tested on machines without a GPU. CuPy is imported only by ``CupyDevice``."""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Protocol

from coherence.engines.gpu.source import KERNELS


class DeviceMemoryError(Exception):
    """The device (or the memory limit) has no room for an allocation."""


class DeviceUnavailable(Exception):
    """No device of this kind here (the message says why, in one line)."""


class Buffer(Protocol):
    ptr: int
    nbytes: int


class Device(Protocol):
    """What the search needs from a device: zeroed allocations, copies, kernel launches."""

    name: str
    resident_threads: int  # threads that can run at once: inserts that may pass a check together
    batch_states: int      # frontier states per expansion launch

    def alloc(self, nbytes: int) -> Buffer: ...
    def free(self, buf: Buffer) -> None: ...
    def read(self, buf: Buffer, offset: int, nbytes: int) -> bytes: ...
    def write(self, buf: Buffer, offset: int, data: bytes) -> None: ...
    def launch(self, kernel: str, threads: int, ctx: Buffer, a: int, b: int, c: int) -> None: ...
    def free_bytes(self) -> int: ...


# ------------------------------------------------------------------ the host emulation


class HostBuffer:
    def __init__(self, nbytes: int) -> None:
        self.raw = ctypes.create_string_buffer(max(1, nbytes))  # zeroed
        self.ptr = ctypes.addressof(self.raw)
        self.nbytes = nbytes


def find_cc() -> str | None:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name.split()[0]):
            return name
    return None


def build_host_library(source: str, cache: Path | None = None) -> Path:
    """``source`` compiled as C by the host's C compiler into a shared library, cached by
    hash (the generated model is C99 and the runtime keeps to the C/C++ common subset)."""
    cc = find_cc()
    if cc is None:
        raise DeviceUnavailable("no C compiler (cc, gcc or clang) for the host emulation")
    digest = hashlib.sha256(source.encode()).hexdigest()[:24]
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    cache = cache or Path(base) / "coherence" / "gpu-host"  # as the compiled engine's builds
    cache.mkdir(parents=True, exist_ok=True)
    lib = cache / f"co_gpu_{digest}.so"
    if lib.exists():
        return lib
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        src = Path(tmp) / "co_gpu.c"
        src.write_text(source)
        out = Path(tmp) / lib.name
        cmd = [*cc.split(), "-std=gnu11", "-O1", "-fPIC", "-shared", "-w", "-o", str(out),
               str(src)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"{cc} failed on the GPU engine's host source:\n{proc.stderr}")
        os.replace(out, lib)
    return lib


class HostDevice:
    """The kernels on the CPU, one thread at a time (for tests; slow)."""

    name = "host emulation"
    resident_threads = 1
    batch_states = 4096

    def __init__(self, source: str, memory_bytes: int = 1 << 30) -> None:
        self.lib = ctypes.CDLL(str(build_host_library(source)))
        self.lib.co_host_launch.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_void_p,
                                            ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64]
        self.lib.co_host_launch.restype = ctypes.c_int
        self.lib.co_host_bytes.restype = ctypes.c_int
        self.memory_bytes = memory_bytes
        self.in_use = 0

    def alloc(self, nbytes: int) -> HostBuffer:
        if self.in_use + nbytes > self.memory_bytes:
            raise DeviceMemoryError(f"{nbytes} bytes more do not fit in {self.memory_bytes}")
        self.in_use += nbytes
        return HostBuffer(nbytes)

    def free(self, buf: Buffer) -> None:
        self.in_use -= buf.nbytes

    def read(self, buf: Buffer, offset: int, nbytes: int) -> bytes:
        assert offset >= 0 and offset + nbytes <= buf.nbytes
        return ctypes.string_at(buf.ptr + offset, nbytes)

    def write(self, buf: Buffer, offset: int, data: bytes) -> None:
        assert offset >= 0 and offset + len(data) <= buf.nbytes
        ctypes.memmove(buf.ptr + offset, data, len(data))

    def launch(self, kernel: str, threads: int, ctx: Buffer, a: int, b: int, c: int) -> None:
        if self.lib.co_host_launch(KERNELS.index(kernel), threads, ctx.ptr, a, b, c) != 0:
            raise RuntimeError(f"unknown kernel {kernel}")

    def free_bytes(self) -> int:
        return self.memory_bytes - self.in_use


# ------------------------------------------------------------------ the GPU (CuPy)


def import_cupy() -> Any:
    """CuPy, or DeviceUnavailable with the reason in one line."""
    try:
        import cupy
    except ImportError:
        raise DeviceUnavailable("CuPy is not installed (pip install 'coherence[gpu]')") from None
    except Exception as err:  # a broken CUDA installation raises its own errors on import
        raise DeviceUnavailable(f"CuPy cannot be loaded: {_one_line(err)}") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as err:  # CUDARuntimeError: no driver, no device
        raise DeviceUnavailable(f"no CUDA GPU: {_one_line(err)}") from None
    if count < 1:
        raise DeviceUnavailable("no CUDA GPU")
    return cupy


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


class CupyBuffer:
    def __init__(self, array: Any) -> None:
        self.array = array
        self.ptr = int(array.data.ptr)
        self.nbytes = int(array.nbytes)


class CupyDevice:
    """The kernels compiled by NVRTC (``cupy.RawModule``), one thread per state."""

    block = 256

    def __init__(self, source: str) -> None:
        self.cp = import_cupy()
        cp = self.cp
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        name = props["name"]
        self.name = name.decode() if isinstance(name, bytes) else str(name)
        self.resident_threads = int(props["multiProcessorCount"]) * int(
            props["maxThreadsPerMultiProcessor"])
        self.batch_states = 1 << 21
        self.module = cp.RawModule(code=source, options=("-std=c++17", "-diag-suppress=177"))
        self.module.compile()
        self.kernels = {k: self.module.get_function(k) for k in KERNELS}
        self._np = __import__("numpy")

    def alloc(self, nbytes: int) -> CupyBuffer:
        cp = self.cp
        try:
            return CupyBuffer(cp.zeros(max(1, nbytes), dtype=cp.uint8))
        except cp.cuda.memory.OutOfMemoryError as err:
            raise DeviceMemoryError(_one_line(err)) from None

    def free(self, buf: Buffer) -> None:
        assert isinstance(buf, CupyBuffer)
        buf.array = None
        self.cp.get_default_memory_pool().free_all_blocks()

    def read(self, buf: Buffer, offset: int, nbytes: int) -> bytes:
        assert isinstance(buf, CupyBuffer)
        return bytes(buf.array[offset:offset + nbytes].get().tobytes())

    def write(self, buf: Buffer, offset: int, data: bytes) -> None:
        assert isinstance(buf, CupyBuffer)
        buf.array[offset:offset + len(data)].set(self._np.frombuffer(data, dtype=self._np.uint8))

    def launch(self, kernel: str, threads: int, ctx: Buffer, a: int, b: int, c: int) -> None:
        assert isinstance(ctx, CupyBuffer)
        if threads <= 0:
            return
        u64 = self._np.uint64
        grid = (threads + self.block - 1) // self.block
        self.kernels[kernel]((grid,), (self.block,), (ctx.array, u64(a), u64(b), u64(c)))

    def free_bytes(self) -> int:
        free, _total = self.cp.cuda.runtime.memGetInfo()
        pool = self.cp.get_default_memory_pool()
        return int(free) + int(pool.free_bytes())
