"""Building the harness's host-side C helper: the system C compiler, a shared library cached
by the hash of its source, flags and compiler (like the compiled engine's build, which this
package may not import: the import-linter contract keeps ``hw`` off the engines).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from coherence.errors import Span, SpecError

FLAGS = ("-std=c11", "-O2", "-fPIC", "-shared", "-pthread")
CANDIDATES = ("cc", "gcc", "clang")


class NoCompiler(SpecError):
    def __init__(self, message: str) -> None:
        super().__init__(message, Span("coherence hw", 0, 0))


def compiler() -> list[str]:
    env = os.environ.get("CC", "").strip()
    if env:
        cmd = shlex.split(env)
        if shutil.which(cmd[0]) is None:
            raise NoCompiler(f"$CC is {env!r}, which is not a program on the PATH")
        return cmd
    for name in CANDIDATES:
        path = shutil.which(name)
        if path is not None:
            return [path]
    raise NoCompiler("no C compiler found (tried $CC, cc, gcc, clang): the CPU agents of "
                     "`coherence hw` need one")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "coherence" / "hw"


def build_shared(source: str) -> Path:
    """The shared library of ``source`` (compiled once per source, flags and compiler)."""
    cmd = compiler()
    version = subprocess.run([*cmd, "--version"], capture_output=True, text=True,
                             check=False).stdout
    key = hashlib.sha256("\0".join([source, *FLAGS, version]).encode()).hexdigest()
    out = cache_dir()
    target = out / f"{key}.so"
    if target.exists():
        return target
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out, prefix="build-") as tmp:
        src = Path(tmp) / "helper.c"
        so = Path(tmp) / "helper.so"
        src.write_text(source)
        argv = [*cmd, *FLAGS, "-o", str(so), str(src)]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            tail = "\n".join(done.stderr.strip().splitlines()[-30:])
            raise RuntimeError(f"compiling the CPU helper failed ({shlex.join(argv)}):\n{tail}")
        os.replace(so, target)
    return target
