"""What a user sees when a ``protocol_test`` fails under pytest: the replayed numbered trace
and the ``coherence fuzz`` command that reproduces it, not Hypothesis's internals."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTANT = ROOT / "specs/mutants/msi_dir_early_ack_dropped.coh"


def _pytest(folder: Path, source: str) -> subprocess.CompletedProcess[str]:
    (folder / "test_mine.py").write_text(source)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "test_mine.py"], cwd=folder, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)


def _failure_section(out: str) -> str:
    return out.split("= FAILURES =", 1)[1].split("short test summary", 1)[0]


def _fuzz_cli(folder: Path, command: str) -> dict:
    argv = shlex.split(command)
    assert argv[:2] == ["coherence", "fuzz"]
    done = subprocess.run([sys.executable, "-m", "coherence.cli", *argv[1:], "--json",
                           "--progress", "never"], cwd=folder, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    assert done.returncode == 1, done.stderr
    return json.loads(done.stdout)


def test_a_failure_is_the_trace_and_the_command_without_hypothesis_internals(
        tmp_path: Path) -> None:
    shutil.copy(MUTANT, tmp_path / "my.coh")
    done = _pytest(tmp_path, "from coherence.testing import protocol_test\n"
                             "TestMine = protocol_test('my.coh', max_examples=300)\n")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    section = _failure_section(out)
    assert "ProtocolTestFailure: deadlock (deadlock)" in section
    steps = re.findall(r"^\s+(\d+)\. ", section, re.MULTILINE)
    assert steps and steps == [str(k) for k in range(1, len(steps) + 1)]
    (command,) = re.findall(r"reproduce: (coherence fuzz .*)$", section, re.MULTILINE)
    assert command == "coherence fuzz my.coh --seed 0 --budget 300 --steps 50"
    for noise in ("hypothesis/", "Traceback", "Falsifying", "reproduce_failure",
                  "During handling", "direct cause"):
        assert noise not in out, noise
    # nothing but the message: no source lines of coherence or of Hypothesis
    others = [ln for ln in section.splitlines()
              if ln.strip() and not ln.startswith(("E ", "    ", "___", "=="))]
    assert all(ln.startswith("All traceback entries are hidden") for ln in others), others
    # and the command does repeat it: the same failure after the same number of runs
    doc = _fuzz_cli(tmp_path, command)
    (f,) = doc["failures"]
    assert f["property"] == "deadlock" and f["length"] == len(steps)
    found = re.search(r"found in random run (\d+) of 300", section)
    assert found and int(found.group(1)) == doc["stats"]["examples_to_failure"]


def test_a_fresh_seed_each_time_is_shown_in_the_command(tmp_path: Path) -> None:
    shutil.copy(ROOT / "specs/broadcast_invalidate.coh", tmp_path / "bi.coh")
    done = _pytest(tmp_path, "from coherence.testing import protocol_test\n"
                             "TestMine = protocol_test('bi.coh', seed=None, agents=3,\n"
                             "                         params={'capacity': 6})\n")
    assert done.returncode == 1, done.stdout + done.stderr
    # the failure section: under CI=true pytest repeats the whole message in its summary
    (command,) = re.findall(r"reproduce: (coherence fuzz .*)$", _failure_section(done.stdout),
                            re.MULTILINE)
    assert re.fullmatch(r"coherence fuzz bi\.coh --seed \d+ --budget 1000 --steps 50 "
                        r"--agents 3 --param capacity=6", command), command
    property_ = re.search(r"ProtocolTestFailure: (\S+) \(", done.stdout)
    assert property_ is not None
    assert _fuzz_cli(tmp_path, command)["failures"][0]["property"] == property_.group(1)


def test_a_saved_failure_is_replayed_first_from_the_database(tmp_path: Path) -> None:
    shutil.copy(ROOT / "specs/broadcast_invalidate.coh", tmp_path / "bi.coh")
    source = ("from coherence.testing import protocol_test\n"
              "TestMine = protocol_test('bi.coh', database='db', seed=3)\n")
    first = _pytest(tmp_path, source)
    assert first.returncode == 1 and "found in random run" in first.stdout
    assert any((tmp_path / "db").rglob("*"))
    again = _pytest(tmp_path, source)
    assert again.returncode == 1
    assert "replayed from the example database" in again.stdout
    (command,) = re.findall(r"reproduce: (coherence fuzz .*)$", _failure_section(again.stdout),
                            re.MULTILINE)
    assert command.endswith("--database db")
    assert _fuzz_cli(tmp_path, command)["stats"]["examples_to_failure"] == 1
