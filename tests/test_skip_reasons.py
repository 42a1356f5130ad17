"""The README's test command (``python3 -m pytest -q``) says why each skipped test skipped (a
missing ``dot``, ``rumur``, ``spin`` or C compiler), as the README promises: ``-q`` alone
printed only a count."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_test_command_prints_each_skip_reason(tmp_path: Path) -> None:
    test = tmp_path / "test_skips.py"
    test.write_text("import pytest\n\n\ndef test_draws() -> None:\n"
                    "    pytest.skip(\"Graphviz's dot missing\")\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-c", str(ROOT / "pyproject.toml"),
         "--rootdir", str(tmp_path), "-p", "no:cacheprovider", "-n", "0", str(test)],
        capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert "1 skipped" in done.stdout, done.stdout + done.stderr
    assert "SKIPPED [1] test_skips.py:5: Graphviz's dot missing" in done.stdout, done.stdout
