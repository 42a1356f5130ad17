"""A reader that closes the pipe early (``coherence … | head``) ends the run quietly."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from coherence.cli import EXIT_BROKEN_PIPE, main

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "specs" / "msi_snooping.coh"


class _ClosedPipe(io.TextIOBase):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def writable(self) -> bool:
        return True


def test_main_returns_the_broken_pipe_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert main(["check", str(SPEC), "--engine", "reference", "--json"]) == EXIT_BROKEN_PIPE


def test_a_closed_pipe_prints_no_traceback() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte is written
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "coherence.cli", "check", str(SPEC), "--engine", "reference",
         "--json"], stdout=write_end, stderr=subprocess.PIPE, text=True, env=env, timeout=300)
    os.close(write_end)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "BrokenPipeError" not in proc.stderr, proc.stderr
    assert proc.returncode == EXIT_BROKEN_PIPE
