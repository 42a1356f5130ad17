"""Compile a generated model with the fixed runtime into a shared library, cached by hash.

The system C compiler is used directly (``$CC``, else ``cc``, ``gcc``, ``clang`` on the
``PATH``), as Rumur's users do with its generated C. One translation unit: the runtime's
``co_runtime.c`` includes the generated ``co_model.c``. The library is cached under
``$XDG_CACHE_HOME/coherence/compiled/<sha256>.so`` (default ``~/.cache``), keyed by the
runtime and model sources, the flags, the compiler's version and the host CPU (the flags
include ``-march=native``); it is compiled to a temporary file in the cache directory and
renamed into place, so concurrent builds of one model never see a half-written library.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from coherence.errors import Span, SpecError

RUNTIME_DIR = Path(__file__).parent / "runtime"
RUNTIME_FILES = ("co_runtime.c", "co_runtime.h")
FLAGS = ("-std=c11", "-O3", "-march=native", "-fPIC", "-shared", "-pthread")
CANDIDATES = ("cc", "gcc", "clang")
COMPILE_TIMEOUT_S = 600


class CompilerNotFound(SpecError):
    """No C compiler: the compiled engine cannot run. A SpecError, so the CLI exits 2 with
    one line and no traceback."""

    def __init__(self, message: str) -> None:
        super().__init__(message, Span("--engine compiled", 0, 0))


class BuildError(RuntimeError):
    """The compiler rejected the generated code: a bug in the code generator or runtime."""


def find_compiler() -> list[str]:
    """The compiler command (``$CC`` may carry arguments, e.g. ``ccache gcc``)."""
    env = os.environ.get("CC", "").strip()
    if env:
        cmd = shlex.split(env)
        if shutil.which(cmd[0]) is None:
            raise CompilerNotFound(f"no C compiler: $CC is {env!r}, which is not a program "
                                   "on the PATH (install gcc or clang, or set CC)")
        return cmd
    for name in CANDIDATES:
        path = shutil.which(name)
        if path is not None:
            return [path]
    raise CompilerNotFound("no C compiler found (tried $CC, " + ", ".join(CANDIDATES)
                           + "): install gcc or clang, or set CC, or use --engine reference")


@functools.cache
def compiler_version(cmd: tuple[str, ...]) -> str:
    try:
        out = subprocess.run([*cmd, "--version"], capture_output=True, text=True, timeout=60,
                             check=False)
    except OSError as err:
        raise CompilerNotFound(f"the C compiler {shlex.join(cmd)!r} cannot run: {err}") from err
    return out.stdout.strip() or out.stderr.strip()


@functools.cache
def _cpu() -> str:
    """What -march=native depends on: the machine and its CPU's feature flags."""
    flags = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features", "model name")):
                flags += line
    except OSError:  # not Linux
        pass
    return f"{platform.machine()} {flags}"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "coherence" / "compiled"


def cache_key(model_source: str, cmd: Sequence[str], flags: Sequence[str]) -> str:
    h = hashlib.sha256()
    for name in RUNTIME_FILES:
        h.update((RUNTIME_DIR / name).read_bytes())
        h.update(b"\0")
    h.update(model_source.encode())
    h.update(b"\0" + "\0".join(flags).encode())
    h.update(b"\0" + compiler_version(tuple(cmd)).encode())
    h.update(b"\0" + _cpu().encode())
    return h.hexdigest()


def build(model_source: str, extra_flags: Sequence[str] = ()) -> tuple[Path, bool]:
    """The shared library for this model source, and whether it came from the cache.

    ``$COHERENCE_CFLAGS`` is appended to the flags (e.g. ``-O1``: the test suite builds dozens
    of small models, where compile time is all the time there is)."""
    cmd = find_compiler()
    flags = (*FLAGS, *shlex.split(os.environ.get("COHERENCE_CFLAGS", "")), *extra_flags)
    key = cache_key(model_source, cmd, flags)
    out_dir = cache_dir()
    target = out_dir / f"{key}.so"
    if target.exists():
        return target, True
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir, prefix="build-") as tmp:
        tmp_dir = Path(tmp)
        (tmp_dir / "co_model.c").write_text(model_source)
        so = tmp_dir / "model.so"
        argv = [*cmd, *flags, "-I", str(tmp_dir), "-I", str(RUNTIME_DIR),
                "-o", str(so), str(RUNTIME_DIR / "co_runtime.c")]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True,
                                  timeout=COMPILE_TIMEOUT_S, check=False)
        except OSError as err:
            raise CompilerNotFound(f"the C compiler {shlex.join(cmd)!r} cannot run: "
                                   f"{err}") from err
        if proc.returncode != 0:
            tail = "\n".join(proc.stderr.strip().splitlines()[-30:])
            raise BuildError(f"compiling the generated model failed ({shlex.join(argv)}):\n"
                             f"{tail}")
        os.replace(so, target)  # atomic: readers see no library or a whole one
    return target, False
