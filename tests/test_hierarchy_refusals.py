"""Every back end that does not support hierarchical specs yet refuses one with a located
error (NOTE(hierarchy-refusal)), never a traceback or a wrong answer; `coherence check` runs
them on every engine (tests/test_{compiled,gpu,distributed}_hierarchy.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import ROOT

from coherence import ir
from coherence.engines import check
from coherence.results import CheckOptions
from coherence.spec.load import load_spec, load_spec_text

TWO_LEVEL = str(ROOT / "tests/specs/hierarchy/two_level_wt.coh")
WHERE = (24, 9)  # machine L1's name, the first general machine


# Every back end takes hierarchical specs now (BMC, k-induction, prove --agents any over one
# index type, the Murphi and Promela exports, diagrams, random testing, litmus and every
# engine: tests/test_hier_*.py, tests/test_hierarchy_*.py, tests/test_*_hierarchy.py); what
# is left are refusals of shapes a back end cannot encode, located at the construct.


def test_two_kind_specs_are_not_refused() -> None:
    m = load_spec(str(ROOT / "specs/msi_directory.coh"))
    assert not m.is_hierarchical
    ir.refuse_hierarchical(m, "anything")  # returns


def test_the_command_line_exits_with_2() -> None:
    """prove --agents any at 2 GPUs: the L1s are two families over sm (the shapes that are
    proved: tests/test_hier_prove_any.py)."""
    argv = ["prove", TWO_LEVEL, "--agents", "any"]
    out = subprocess.run([sys.executable, "-m", "coherence.cli", *argv], capture_output=True,
                         text=True, cwd=ROOT, check=False)
    assert out.returncode == 2, out.stderr
    assert f"two_level_wt.coh:{WHERE[0]}:{WHERE[1]}: error: --agents any over sm" in out.stderr
    assert "Traceback" not in out.stderr


def test_size_check_counts_every_instance() -> None:
    """The configuration-size check (engines/size.py) counts a hierarchical machine once per
    index tuple: 16 GPUs of 16 SMs on 512 lines is 139,264 values per state, refused before
    anything is built."""
    from coherence.engines.size import ConfigurationTooLarge, estimate
    small = (ROOT / "tests/specs/hierarchy/two_level_wt.coh").read_text()
    small = small.replace("range 1..4", "")
    m = load_spec_text(small, "big.coh", {"gpus": 16, "sms": 16, "lines": 512})
    assert estimate(m).values_per_state > 100_000
    with pytest.raises(ConfigurationTooLarge, match="configuration too large"):
        check(m, CheckOptions(), engine="reference")


@pytest.mark.parametrize("option", [["--agents", "2"], ["--param", "agents=2"]])
def test_agents_on_a_hierarchy_says_how_it_is_sized(option: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "coherence.cli", "check", TWO_LEVEL, *option],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2, proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first.startswith("<command line>: error: --param agents=2: the spec has no "
                            "parameter 'agents' (it has: capacity, gpus, lines, sms, values)")
    assert "sized by the parameters of its index types" in first
    assert "Traceback" not in proc.stderr
