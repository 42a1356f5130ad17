"""Compile and run a Murphi model with Rumur (Debian's ``rumur``) and a C compiler.

The verifier's summary lines are parsed, never evaluated. Rumur stops at its first error
(``--max-errors 1``), so for a failing model only the verdict is comparable, not the count.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import attrs

SYMMETRY = ("off", "heuristic", "exhaustive")
_STATES = re.compile(r"(\d+) states, (\d+) rules fired")


@attrs.frozen
class RumurResult:
    verdict: str  # "holds" | "fails"
    states: int
    rules_fired: int
    seconds: float          # the verifier's run, wall clock
    compile_seconds: float  # rumur + cc
    output: str


class RumurUnavailable(RuntimeError):
    """rumur or cc is not installed."""


def rumur_available() -> bool:
    return shutil.which("rumur") is not None and shutil.which("cc") is not None


def run_rumur(murphi: str, symmetry: str = "off", optimize: bool = False,
              threads: int = 1, timeout: float = 600.0,
              cflags: Sequence[str] = ()) -> RumurResult:
    """Check ``murphi`` with Rumur. ``optimize`` compiles with -O2 (slow to build, for timing);
    ``cflags`` come last on cc's command line (``-O3`` for ``coherence bench engines``)."""
    if symmetry not in SYMMETRY:
        raise ValueError(f"symmetry must be one of {SYMMETRY}")
    if not rumur_available():
        raise RumurUnavailable("rumur and cc are needed (Debian: apt-get install rumur gcc)")
    with tempfile.TemporaryDirectory(prefix="coherence-rumur-") as tmp:
        d = Path(tmp)
        (d / "model.m").write_text(murphi, encoding="utf-8")
        t0 = time.perf_counter()
        _run(["rumur", "--symmetry-reduction", symmetry, "--deadlock-detection", "stuck",
              "--threads", str(threads), "--colour", "off", "--output", str(d / "model.c"),
              str(d / "model.m")], timeout)
        _run(["cc", "-O2" if optimize else "-O0", "-std=c11", "-mcx16", "-pthread", "-w",
              *cflags, "-o", str(d / "verifier"), str(d / "model.c")], timeout)
        t1 = time.perf_counter()
        proc = subprocess.run([str(d / "verifier")], capture_output=True, text=True,
                              timeout=timeout, check=False)
        t2 = time.perf_counter()
    out = proc.stdout + proc.stderr
    m = _STATES.search(out)
    if m is None:
        raise RuntimeError(f"no state count in Rumur's output:\n{out[-2000:]}")
    if "No error found" in out:
        verdict = "holds"
    elif re.search(r"\d+ error\(s\) found", out):
        verdict = "fails"
    else:
        raise RuntimeError(f"no verdict in Rumur's output:\n{out[-2000:]}")
    return RumurResult(verdict, int(m.group(1)), int(m.group(2)), t2 - t1, t1 - t0, out)


def _run(cmd: list[str], timeout: float) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
