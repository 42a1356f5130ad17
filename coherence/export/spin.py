"""Compile and run a Promela model with Spin (Debian's ``spin``) and gcc: safety checking only.

``spin -a -o2`` writes the verifier (``-o2`` keeps write-only variables in the stored state,
which Spin drops by default, so that its count relates exactly to ours); gcc builds it with
``-DSAFETY`` (assertions and invalid end states; no cycle detection) and a state vector large
enough for the model, and ``./pan`` runs it with a depth limit. Its summary lines are parsed,
never evaluated. pan stops at its first error, so for a failing model only the verdict
compares; the failure's kind and message are read back by replaying the trail (``spin -t``):
the failing ``assert``'s line carries a ``/* coherence-failure: ... */`` tag. A search cut
short by the depth or memory limit is "incomplete", never a pass.
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

_STORED = re.compile(r"(\d+) states, stored")
_MATCHED = re.compile(r"(\d+) states, matched")
_VECTOR = re.compile(r"State-vector (\d+) byte, depth reached (\d+), errors: (\d+)")
_FAILURE = re.compile(r"/\* coherence-failure: (.*?) \*/")
_AT_LINE = re.compile(r"model\.pml:(\d+), Error: assertion violated")


@attrs.frozen
class SpinResult:
    verdict: str  # "holds" | "fails" | "incomplete"
    states: int   # Spin's stored states
    transitions: int
    depth: int
    seconds: float          # the verifier's run, wall clock
    compile_seconds: float  # spin -a + gcc
    failure: str | None     # "assertion violated ..." / "invalid end state" and our message
    output: str


class SpinUnavailable(RuntimeError):
    """spin or gcc is not installed."""


def spin_available() -> bool:
    return shutil.which("spin") is not None and shutil.which("gcc") is not None


def run_spin(promela: str, max_depth: int = 2_000_000, optimize: bool = False,
             memory_mb: int = 2048, timeout: float = 600.0, ncore: int = 1,
             cflags: Sequence[str] = (), pan_args: Sequence[str] = ()) -> SpinResult:
    """Check ``promela`` with Spin. ``optimize`` builds with -O2 (slower build, for timing);
    ``cflags`` and ``pan_args`` come last on gcc's and pan's command lines.

    ``ncore > 1`` builds pan multi-core (``-DNCORE``). pan refuses ``hidden`` variables
    there (``HAS_HIDDEN``), since each core is a process with its own copy of them; the
    export's hidden variables are scratch of one ``d_step`` (shadow copies and loop
    counters, written before they are read), so the refusal is lifted by dropping
    ``HAS_HIDDEN`` from the generated ``pan.h``."""
    if not spin_available():
        raise SpinUnavailable("spin and gcc are needed (Debian: apt-get install spin gcc)")
    with tempfile.TemporaryDirectory(prefix="coherence-spin-") as tmp:
        d = Path(tmp)
        (d / "model.pml").write_text(promela, encoding="utf-8")
        vector = _vector_size(promela)
        t0 = time.perf_counter()
        _run(["spin", "-a", "-o2", "model.pml"], d, timeout)
        multi: list[str] = []
        if ncore > 1:
            header = d / "pan.h"
            header.write_text(re.sub(r"^#define HAS_HIDDEN.*$", "", header.read_text(), flags=re.M))
            multi = [f"-DNCORE={ncore}"]
        _run(["gcc", "-O2" if optimize else "-O0", "-w", "-DSAFETY", f"-DVECTORSZ={vector}",
              f"-DMEMLIM={memory_mb}", *multi, *cflags, "-o", "pan", "pan.c"], d, timeout)
        t1 = time.perf_counter()
        proc = subprocess.run(["./pan", f"-m{max_depth}", "-w22", *pan_args], cwd=d,
                              capture_output=True, text=True, timeout=timeout, check=False)
        t2 = time.perf_counter()
        out = proc.stdout + proc.stderr
        failure = None
        m = _VECTOR.search(out)
        if m is None or _STORED.search(out) is None:
            raise RuntimeError(f"no summary in Spin's output:\n{out[-2000:]}")
        errors = int(m.group(3))
        if errors:
            failure = _failure(out, d, timeout)
    stored = int(_STORED.search(out).group(1))  # type: ignore[union-attr]
    matched = _MATCHED.search(out)
    transitions = stored + (int(matched.group(1)) if matched else 0)
    if errors:
        verdict = "fails"
    elif ("max search depth too small" in out or "Search not completed" in out
          or "out of memory" in out.lower() or "MEMLIM" in out):
        verdict = "incomplete"
    else:
        verdict = "holds"
    return SpinResult(verdict, stored, transitions, int(m.group(2)), t2 - t1, t1 - t0,
                      failure, out)


def _vector_size(promela: str) -> int:
    """Bytes for -DVECTORSZ: the model's ints and flags, doubled for pan's own fields."""
    ints = sum(int(n or 1) for n in re.findall(r"^(?:int|short) \w+(?:\[(\d+)\])?;",
                                               promela, re.M))
    flags = re.search(r"^#define NINST (\d+)", promela, re.M)
    return max(1024, 2 * (4 * ints + (int(flags.group(1)) if flags else 0) + 64))


def _failure(out: str, d: Path, timeout: float) -> str:
    """What pan reported, and the model's own message read back from the trail."""
    kind = "error"
    for line in out.splitlines():
        if line.startswith("pan:1:") or line.startswith("pan: "):
            kind = line.split(":", 2)[-1].strip()
            break
    if "invalid end state" in kind:
        return "deadlock (invalid end state)"
    proc = subprocess.run(["spin", "-t", "model.pml"], cwd=d, capture_output=True, text=True,
                          timeout=timeout, check=False)
    m = _AT_LINE.search(proc.stdout + proc.stderr)
    if m is not None:
        lines = (d / "model.pml").read_text(encoding="utf-8").splitlines()
        line = lines[int(m.group(1)) - 1] if int(m.group(1)) <= len(lines) else ""
        tag = _FAILURE.search(line)
        if tag is not None:
            return tag.group(1).strip()
    return kind


def _run(cmd: list[str], cwd: Path, timeout: float) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}):\n"
                           f"{(proc.stdout + proc.stderr)[-3000:]}")
