"""NOTE(finite-cti): a goal the quantified tries leave unknown (or answer with a model no
search with 1-4 agents replays) is asked at 5 agents, on the fixed-size encoding; a model
there is replayed in the reference semantics and reported as a counterexample to induction.
MSI's inferred lines, chosen at 4 agents, break at 5 (results/infer/README.md, "Session
29"). A goal that breaks only at 6 agents stays unknown: never proved."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

from coherence.smt import param
from coherence.smt.finite_core import CTI_AGENTS
from coherence.spec.load import extend, load_spec, load_spec_text
from coherence.spec.select import drop_properties

RLIMIT = 20_000_000  # Z3 units per check: deterministic


def _waiting(at_most: int) -> str:
    """Every cache may go from I to W, once; the invariant bounds how many are in W: it holds
    up to ``at_most`` agents and its counterexample to induction needs ``at_most + 1``."""
    return f"""
param agents = 3;
home machine H {{ stable state R; init R; }}
cache machine C {{
  stable state I, W;
  init I;
  rule Wait in I {{ goto W; }}
}}
invariant few: count(i: agent :: C[i].state == W) <= {at_most};
"""


def _prove(tmp_path: Path, text: str) -> dict:
    spec = tmp_path / "waiting.coh"
    spec.write_text(text)
    r = subprocess.run([sys.executable, "-m", "coherence.cli", "prove", str(spec), "--agents",
                        "any", "--json", "--rlimit", str(RLIMIT)], cwd=ROOT, text=True,
                       capture_output=True, timeout=600)
    assert r.returncode == 3, r.stderr[-2000:]
    return json.loads(r.stdout)


def test_a_goal_that_breaks_at_five_agents_gets_a_replayed_counterexample(
        tmp_path: Path) -> None:
    doc = _prove(tmp_path, _waiting(4))
    assert doc["verdict"] == "unknown" and "not inductive" in doc["reason"]
    (cti,) = doc["cti_states"]
    assert cti["summary"].startswith("invariant:few can break with 5 agent(s)")
    pre = cti["pre_state"]
    caches = [line for line in pre if line.startswith("C[")]
    assert len(caches) == CTI_AGENTS == 5
    # the pre-state keeps the invariant (four in W), the step breaks it
    assert sum(line.endswith("state W") for line in caches) == 4
    assert cti["step"]["changes"] == [f"{cti['step']['actor']}: state I → W"]


def test_a_goal_that_breaks_only_at_six_agents_stays_unknown(tmp_path: Path) -> None:
    doc = _prove(tmp_path, _waiting(5))
    assert doc["verdict"] == "unknown"
    assert not doc["cti_states"] and "invariant:few" not in doc["proved"]


def test_the_fixed_size_says_nothing_of_a_goal_it_refutes() -> None:
    model = load_spec_text(_waiting(4), "waiting.coh")
    ob = param.Obligations(model)
    (g,) = ob.groups_of("C.rule Wait in I")
    (q,) = [q for q in ob.group(g) if q.goal == "invariant:few"]
    assert ob.finite_core(5).counterexample(q, RLIMIT) is not None
    assert ob.finite_core(4).counterexample(q, RLIMIT) is None  # refuted at 4 agents
    assert ob.finite_core(4).hypotheses(q, RLIMIT) is not None


@pytest.mark.slow
def test_msis_lines_break_at_five_agents_through_a_cycle_of_requestors() -> None:
    """`inferred_48` at `FwdGetM in MI_A`: three requestors each forwarded to the next (a
    cycle no run reaches) beside the owner's chain; the lines, chosen at 4 agents, do not
    exclude the cycle."""
    model = extend(drop_properties(load_spec(ROOT / "specs" / "msi_directory.coh"),
                                   ["coherent"]),
                   (ROOT / "results" / "infer" / "msi_directory_s25.aux").read_text())
    ob = param.Obligations(model)
    (g,) = ob.groups_of("Cache.message FwdGetM in MI_A")
    (q,) = [q for q in ob.group(g) if q.goal == "invariant:inferred_48"]
    cti = ob.finite_core(CTI_AGENTS).counterexample(q, 2_000_000_000)
    assert cti is not None and "5 agent(s)" in cti.summary
    assert sum("FwdGetM" in part for part in cti.pre[-2].split(", ")) == 4
