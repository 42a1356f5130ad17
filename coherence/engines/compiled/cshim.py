"""A test harness for generated model code: each contract function, one state at a time.

The runtime (``runtime/co_runtime.c``) runs the whole search; this shim instead exposes
``co_initial``, ``co_expand``, ``co_check_state``, ``co_quiescent``, ``co_canonicalize`` and
``co_permute`` to Python through ctypes, with a sink that collects successors and failure
keys into arrays, so that tests can compare them state by state with the reference
semantics. Compiled with the system C compiler into a cache directory keyed by the source's
hash.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import attrs

from coherence.engines.cgen.codegen import GeneratedModel

PREAMBLE = r"""
#include <stdint.h>
#include <string.h>
#define CO_FN static inline
typedef struct co_sink co_sink;
CO_FN void co_emit_state(co_sink *sink, const void *succ);
CO_FN void co_emit_failure(co_sink *sink, int key);
"""

ENTRY_POINTS = r"""
struct co_sink { uint64_t *states; int nstates, cap; int *fails; int nfails, fcap; };
CO_FN void co_emit_state(co_sink *k, const void *succ) {
    if (k->nstates < k->cap)
        memcpy(k->states + (size_t)k->nstates * CO_WORDS, succ, sizeof(co_state));
    k->nstates++;
}
CO_FN void co_emit_failure(co_sink *k, int key) {
    if (k->nfails < k->fcap) k->fails[k->nfails] = key;
    k->nfails++;
}
int shim_words(void) { return CO_WORDS; }
int shim_num_keys(void) { return CO_NUM_KEYS; }
int shim_initial(uint64_t *out, int max) { return co_initial((co_state *)out, max); }
int shim_expand(const uint64_t *s, uint64_t *states, int cap, int *nstates, int *fails,
                int fcap, int *nfails, int *live, int *problems) {
    co_sink k = {states, 0, cap, fails, 0, fcap};
    int rules = co_expand((const co_state *)s, &k, live, problems);
    *nstates = k.nstates;
    *nfails = k.nfails;
    return rules;
}
int shim_check(const uint64_t *s, int *keys, int max) {
    return co_check_state((const co_state *)s, keys, max);
}
int shim_quiescent(const uint64_t *s) { return co_quiescent((const co_state *)s); }
void shim_canonicalize(uint64_t *s) { co_canonicalize((co_state *)s); }
/* Expands states[0..n) reps times with a sink that only counts: the successor function's
 * own cost (unpack, guards, bodies, pack), for figures; mode 1 adds co_canonicalize of each
 * state, mode 2 co_check_state. Returns the successors counted. */
long shim_bench(const uint64_t *states, int n, int reps, int mode) {
    long total = 0;
    co_state buf[1];
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < n; i++) {
            co_sink k = {(uint64_t *)buf, 0, 0, 0, 0, 0};
            int live, problems;
            co_expand((const co_state *)(states + (size_t)i * CO_WORDS), &k, &live, &problems);
            total += k.nstates;
            if (mode == 2) {
                int keys[CO_NUM_KEYS + 1];
                total += co_check_state((const co_state *)(states + (size_t)i * CO_WORDS), keys,
                                        CO_NUM_KEYS + 1);
            }
            if (mode == 1) {
                co_state c = *(const co_state *)(states + (size_t)i * CO_WORDS);
                co_canonicalize(&c);
                total += (long)(c.w[0] & 1);
            }
        }
    return total;
}
void shim_permute(const uint64_t *s, const int *p, uint64_t *out) {
    co_permute((const co_state *)s, p, (co_state *)out);
}
"""

FLAGS = ["-std=c11", "-shared", "-fPIC", "-Wall", "-Werror", "-Wno-unused-function",
         "-Wno-unused-variable", "-Wno-unused-but-set-variable"]


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "coherence" / "compiled-shim"


def compile_shim(gen: GeneratedModel, cc: str | None = None, opt: str = "-O2") -> Path:
    """The shared library of ``gen`` with the shim's entry points (cached by hash); tests
    use ``opt="-O0"``, which compiles several times faster."""
    compiler = cc or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise RuntimeError("no C compiler (cc or gcc) on PATH")
    source = PREAMBLE + gen.source + ENTRY_POINTS
    flags = [opt, *FLAGS]
    digest = hashlib.sha256((source + " ".join(flags)).encode()).hexdigest()[:32]
    out_dir = _cache_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    lib = out_dir / f"{digest}.so"
    if lib.exists():
        return lib
    # built beside the cache and renamed into place: a concurrent test process (pytest -n)
    # sees no library or a whole one
    with tempfile.TemporaryDirectory(dir=out_dir, prefix="build-") as tmp:
        c_file = Path(tmp) / "model.c"
        c_file.write_text(source)
        tmp_lib = Path(tmp) / "model.so"
        proc = subprocess.run([compiler, *flags, "-o", str(tmp_lib), str(c_file)],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"C compilation failed:\n{proc.stderr[:4000]}")
        os.replace(tmp_lib, lib)
    return lib


@attrs.frozen
class Expansion:
    successors: list[int]  # packed states, in emission order
    failures: list[int]  # key indices
    rules: int
    live: int
    problems: int


class Shim:
    """ctypes access to one generated model's functions, on packed states as Python ints."""

    def __init__(self, gen: GeneratedModel, cc: str | None = None, opt: str = "-O2") -> None:
        self.gen = gen
        self.lib = ctypes.CDLL(str(compile_shim(gen, cc, opt)))
        self.words = self.lib.shim_words()
        self._arr = ctypes.c_uint64 * self.words
        self._succ_cap = 1024
        self._succ = (ctypes.c_uint64 * (self.words * self._succ_cap))()
        self._fails = (ctypes.c_int * 4096)()
        self._keys = (ctypes.c_int * 1024)()

    def _state(self, code: int) -> ctypes.Array[ctypes.c_uint64]:
        return self._arr(*[(code >> (64 * w)) & ((1 << 64) - 1) for w in range(self.words)])

    def _int(self, arr: ctypes.Array[ctypes.c_uint64], at: int = 0) -> int:
        return sum(int(arr[at + w]) << (64 * w) for w in range(self.words))

    def initial(self) -> list[int]:
        out = (ctypes.c_uint64 * (self.words * 64))()
        n = self.lib.shim_initial(out, 64)
        return [self._int(out, i * self.words) for i in range(n)]

    def expand(self, code: int) -> Expansion:
        ns, nf, live, problems = (ctypes.c_int() for _ in range(4))
        rules = self.lib.shim_expand(self._state(code), self._succ, self._succ_cap,
                                     ctypes.byref(ns), self._fails, len(self._fails),
                                     ctypes.byref(nf), ctypes.byref(live),
                                     ctypes.byref(problems))
        if ns.value > self._succ_cap or nf.value > len(self._fails):
            raise RuntimeError("the shim's buffers are too small for this state")
        succ = [self._int(self._succ, i * self.words) for i in range(ns.value)]
        return Expansion(succ, list(self._fails[:nf.value]), rules, live.value,
                         problems.value)

    def check_state(self, code: int) -> list[int]:
        n = self.lib.shim_check(self._state(code), self._keys, len(self._keys))
        return list(self._keys[:n])

    def quiescent(self, code: int) -> bool:
        return bool(self.lib.shim_quiescent(self._state(code)))

    def canonicalize(self, code: int) -> int:
        s = self._state(code)
        self.lib.shim_canonicalize(s)
        return self._int(s)

    def bench(self, codes: list[int], reps: int, mode: int = 0) -> float:
        """Seconds per state of ``co_expand`` (plus ``co_canonicalize`` with mode 1,
        ``co_check_state`` with mode 2) over ``codes``, in C, with a sink that only counts."""
        import time
        arr = (ctypes.c_uint64 * (self.words * len(codes)))()
        for i, c in enumerate(codes):
            for w in range(self.words):
                arr[i * self.words + w] = (c >> (64 * w)) & ((1 << 64) - 1)
        self.lib.shim_bench.restype = ctypes.c_long
        start = time.thread_time()  # CPU time: steadier than wall time on a shared machine
        self.lib.shim_bench(arr, len(codes), reps, mode)
        return (time.thread_time() - start) / (reps * len(codes))

    def permute(self, code: int, perm: tuple[int, ...]) -> int:
        out = self._arr()
        self.lib.shim_permute(self._state(code), (ctypes.c_int * len(perm))(*perm), out)
        return self._int(out)
