"""``export --cross-check`` where Rumur or Spin is not installed: one line and exit 2, before
any work (it was a traceback, after our own search)."""

from __future__ import annotations

import json

import pytest
from helpers import SPECS

from coherence.cli import main


@pytest.mark.parametrize(("to", "tool"), [("murphi", "rumur"), ("promela", "spin")])
def test_cross_check_without_the_checker_is_one_line(
        to: str, tool: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", "")  # neither the checker nor a C compiler can be found
    spec = str(SPECS / "msi_snooping.coh")
    assert main(["export", spec, "--to", to, "--cross-check"]) == 2
    err = capsys.readouterr().err
    assert err == (f"<command line>: error: --cross-check: {tool} and "
                   f"{'gcc' if tool == 'spin' else 'cc'} are needed (Debian: apt-get install "
                   f"{tool} gcc)\n")
    assert main(["export", spec, "--to", to, "--cross-check", "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["exit_code"] == 2 and tool in doc["error"]["message"]
