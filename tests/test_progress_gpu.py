"""Progress of the GPU verbs (``hw run``, ``hw bench``) on a real GPU: a header, a record per
variant (or measurement), a summary. Skipped where CuPy or a GPU is missing (as on CI)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

cp = pytest.importorskip("cupy")
try:
    if cp.cuda.runtime.getDeviceCount() < 1:
        pytest.skip("no GPU", allow_module_level=True)
except Exception as e:  # pragma: no cover - no driver
    pytest.skip(f"no usable GPU: {e}", allow_module_level=True)

from coherence.cli import main  # noqa: E402

pytestmark = pytest.mark.gpu


def _stream(argv: list[str],
            capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict[str, Any]]]:
    code = main([*argv, "--json", "--progress", "jsonl", "--progress-every", "0"])
    captured = capsys.readouterr()
    json.loads(captured.out)  # stdout: the --json document, whole
    return code, [json.loads(line) for line in captured.err.splitlines()]


def test_hw_run_reports_each_variant_and_launch(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, recs = _stream(["hw", "run", "CoWW", "MP", "-V", "weak", "--env", "barrier",
                          "--seconds", "0.2", "--out", str(tmp_path / "r.json")], capsys)
    assert code == 0
    assert recs[0]["type"] == "header" and recs[0]["variants"] == 2
    assert recs[-1]["type"] == "summary" and recs[-1]["variants"] == 2
    messages = [r["message"] for r in recs if r["type"] == "progress"]
    assert "variant 1 of 2: CoWW weak [barrier]" in messages
    assert "variant 2 of 2: MP weak [barrier]" in messages
    # within a variant, the seconds of its budget spent so far
    assert any(m.startswith("variant 2 of 2: MP weak [barrier], ") and m.endswith(
        "of 0.2 s") for m in messages)
    assert sum(r["type"] == "note" for r in recs) == 2  # each variant's result line


def test_hw_bench_reports_each_measurement(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, recs = _stream(["hw", "bench", "--quick", "--repeats", "1",
                          "--out", str(tmp_path / "b.json")], capsys)
    assert code == 0
    assert recs[0]["type"] == "header" and recs[-1]["type"] == "summary"
    done = [r["done"] for r in recs if r["type"] == "progress"]
    assert done == list(range(8)) and all(r["total"] == 8 for r in recs[1:-1])
