"""Every malformed spec gives its exact located message, exit code 2, and no traceback.

Golden cases: ``tests/specs/errors/NAME.coh`` with the full expected stderr in ``NAME.expect``
(regenerate after a deliberate wording change with ``COHERENCE_UPDATE_GOLDEN=1``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from coherence.cli import main

ERRORS = Path(__file__).parent / "specs" / "errors"
SPECS = Path(__file__).resolve().parent.parent / "specs"
CASES = sorted(p.stem for p in ERRORS.glob("*.coh"))


def test_there_are_at_least_30_cases() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize("name", CASES)
def test_error_message(name: str, monkeypatch: pytest.MonkeyPatch,
                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ERRORS)
    rc = main(["check", f"{name}.coh"])
    err = capsys.readouterr().err
    expect = ERRORS / f"{name}.expect"
    if os.environ.get("COHERENCE_UPDATE_GOLDEN"):
        expect.write_text(err)
    assert rc == 2
    assert "Traceback" not in err
    assert err == expect.read_text()
    first = err.splitlines()[0]
    assert first.startswith(f"{name}.coh:")  # file:line:col: error: ...
    _, line, col, *_ = first.split(":")
    assert int(line) >= 1 and int(col) >= 1


@pytest.mark.parametrize(("argv", "message"), [
    (["--param", "foo=1"], "--param foo=1: the spec has no parameter 'foo' (it has: agents, "
                           "capacity, lines, values)"),
    (["--param", "capacity=x"], "--param capacity: 'x' is not an integer"),
    (["--param", "capacity"], "--param 'capacity': expected NAME=VALUE"),
    (["--param", "agents=0"], "--param agents=0: must be in 1..65536"),
    (["--agents", "17"], "--param agents=17: at most 16 agents are supported"),
    (["--skip", "nosuch"], "--skip nosuch: the spec has no invariant or property of that name "
                           "(it has: coherent, data_value, stale_copy_is_doomed)"),
])
def test_bad_command_line(argv: list[str], message: str,
                          capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["check", str(SPECS / "broadcast_invalidate.coh"), *argv])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.strip() == f"<command line>: error: {message}"


def test_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "no/such/spec.coh"]) == 2
    assert capsys.readouterr().err.strip() == "no/such/spec.coh: error: no such file"


def test_directory_instead_of_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(SPECS)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_json_error_document(capsys: pytest.CaptureFixture[str]) -> None:
    import json
    rc = main(["check", str(ERRORS / "unknown_name.coh"), "--json"])
    out = capsys.readouterr().out
    assert rc == 2
    doc = json.loads(out)
    assert doc["exit_code"] == 2
    assert doc["error"]["message"] == "unknown name 'datum'"
    assert doc["error"]["location"].endswith("unknown_name.coh:5:39")


def test_unknown_verb_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["frobnicate"]) == 2
