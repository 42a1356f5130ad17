"""The worker's C library: the generated model (``coherence.engines.cgen``) with the partition
entry points of ``runtime/co_dist.c``, compiled by the system C compiler and loaded by ctypes.

Every worker builds the library from the model's source itself (cached by hash under
``$XDG_CACHE_HOME/coherence/distributed``), so workers on other machines of a Ray cluster need
only a C compiler and this package, no shared file system. The batch calls take NumPy arrays
of packed states (``words`` uint64 each, little-endian: the layout's bytes).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import numpy.typing as npt

RUNTIME = Path(__file__).parent / "runtime" / "co_dist.c"
FLAGS = ("-std=c11", "-O2", "-fPIC", "-shared")
COMPILE_TIMEOUT_S = 600

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]


class NativeError(RuntimeError):
    """No C compiler, or it rejected the generated code."""


def find_compiler() -> list[str] | None:
    env = os.environ.get("CC", "").strip()
    if env:
        cmd = shlex.split(env)
        return cmd if shutil.which(cmd[0]) else None
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path is not None:
            return [path]
    return None


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "coherence" / "distributed"


def build(model_source: str) -> Path:
    """The worker library for this model source (compiled once, then from the cache);
    ``$COHERENCE_CFLAGS`` is appended to the flags, as for the compiled engine."""
    cmd = find_compiler()
    if cmd is None:
        raise NativeError("no C compiler found (tried $CC, cc, gcc, clang): install gcc or "
                          "clang on every machine of the cluster")
    flags = (*FLAGS, *shlex.split(os.environ.get("COHERENCE_CFLAGS", "")))
    h = hashlib.sha256(RUNTIME.read_bytes())
    h.update(b"\0" + model_source.encode() + b"\0" + " ".join([*cmd, *flags]).encode())
    out_dir = cache_dir()
    target = out_dir / f"{h.hexdigest()[:40]}.so"
    if target.exists():
        return target
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir, prefix="build-") as tmp:
        (Path(tmp) / "co_model.c").write_text(model_source)
        so = Path(tmp) / "worker.so"
        argv = [*cmd, *flags, "-I", tmp, "-o", str(so), str(RUNTIME)]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True,
                                  timeout=COMPILE_TIMEOUT_S, check=False)
        except OSError as err:
            raise NativeError(f"the C compiler {shlex.join(cmd)!r} cannot run: {err}") from err
        if proc.returncode != 0:
            tail = "\n".join(proc.stderr.strip().splitlines()[-30:])
            raise NativeError(f"compiling the worker library failed ({shlex.join(argv)}):\n"
                              f"{tail}")
        os.replace(so, target)  # atomic: concurrent builds see no library or a whole one
    return target


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(a.ctypes.data)


class Partition:
    """One worker's share of the visited states (a C hash set), with batch operations."""

    def __init__(self, path: Path) -> None:
        lib = ctypes.CDLL(str(path))
        vp, i64 = ctypes.c_void_p, ctypes.c_int64
        for name in ("dw_words", "dw_bits", "dw_num_keys"):
            getattr(lib, name).restype = ctypes.c_int
            getattr(lib, name).argtypes = []
        lib.dw_new.restype = vp
        lib.dw_new.argtypes = []
        lib.dw_free.argtypes = [vp]
        lib.dw_free.restype = None
        lib.dw_count.argtypes = [vp]
        lib.dw_count.restype = i64
        lib.dw_bytes.argtypes = [vp]
        lib.dw_bytes.restype = i64
        lib.dw_insert.argtypes = [vp, vp, i64, vp]
        lib.dw_insert.restype = i64
        lib.dw_get.argtypes = [vp, i64, i64, vp]
        lib.dw_get.restype = None
        lib.dw_initial.argtypes = [vp, i64, ctypes.c_int]
        lib.dw_initial.restype = i64
        lib.dw_owners.argtypes = [vp, i64, ctypes.c_int, vp]
        lib.dw_owners.restype = None
        lib.dw_check.argtypes = [vp, i64, i64, vp]
        lib.dw_check.restype = None
        lib.dw_expand.argtypes = [vp, i64, i64, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                  ctypes.c_int, vp, vp, i64, vp, vp, vp]
        lib.dw_expand.restype = i64
        self.lib = lib
        self.words = int(lib.dw_words())
        self.bits = int(lib.dw_bits())
        self.num_keys = int(lib.dw_num_keys())
        self.handle = lib.dw_new()
        if not self.handle:
            raise MemoryError("the worker cannot allocate its hash set")

    def close(self) -> None:
        if self.handle:
            self.lib.dw_free(self.handle)
            self.handle = None

    @property
    def count(self) -> int:
        return int(self.lib.dw_count(self.handle))

    @property
    def bytes(self) -> int:
        return int(self.lib.dw_bytes(self.handle))

    def empty(self, n: int) -> U64:
        return np.empty((n, self.words), dtype=np.uint64)

    def no_failures(self) -> I64:
        return np.full(self.num_keys + 1, -1, dtype=np.int64)

    def initial(self, symmetry: bool) -> U64:
        room = 64
        while True:
            out = self.empty(room)
            n = int(self.lib.dw_initial(_ptr(out), room, int(symmetry)))
            if n <= room:
                return out[:n]
            room = n

    def owners(self, states: U64, workers: int) -> npt.NDArray[np.int32]:
        states = np.ascontiguousarray(states, dtype=np.uint64)
        out = np.empty(len(states), dtype=np.int32)
        self.lib.dw_owners(_ptr(states), len(states), workers, _ptr(out))
        return out

    def insert(self, states: U64) -> I64:
        """Each state's new index, or -1 where it was stored already."""
        states = np.ascontiguousarray(states, dtype=np.uint64)
        out = np.empty(len(states), dtype=np.int64)
        if self.lib.dw_insert(self.handle, _ptr(states), len(states), _ptr(out)) < 0:
            raise MemoryError("the worker's hash set cannot grow")
        return out

    def get(self, first: int, last: int) -> U64:
        out = self.empty(last - first)
        if last > first:
            self.lib.dw_get(self.handle, first, last, _ptr(out))
        return out

    def check(self, first: int, last: int, found: I64) -> None:
        self.lib.dw_check(self.handle, first, last, _ptr(found))

    def expand(self, first: int, last: int, symmetry: bool, deadlock: bool, workers: int,
               me: int, found: I64, chunk: int = 1 << 15) -> tuple[U64, I64, int]:
        """The successors of the stored states [first, last) that may be new (worker ``me``
        of ``workers`` drops its own stored ones and those it sent before), their parents'
        indices and the actions fired."""
        outs: list[U64] = []
        parents: list[I64] = []
        rules = ctypes.c_uint64(0)
        n = ctypes.c_int64(0)
        at = first
        room = chunk
        while at < last:
            out = self.empty(room)
            par = np.empty(room, dtype=np.int64)
            reached = int(self.lib.dw_expand(self.handle, at, last, int(symmetry),
                                             int(deadlock), workers, me, _ptr(out),
                                             _ptr(par), room,
                                             ctypes.byref(n), _ptr(found),
                                             ctypes.byref(rules)))
            if reached == at:  # one state has more successors than the room
                room *= 2
                continue
            outs.append(out[:n.value])
            parents.append(par[:n.value])
            at = reached
        if not outs:
            return self.empty(0), np.empty(0, dtype=np.int64), 0
        return np.concatenate(outs), np.concatenate(parents), int(rules.value)
