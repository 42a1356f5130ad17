"""``coherence fuzz``: failures found, shrunk, replayed and reproducible; against the checker."""

from __future__ import annotations

import json
import shutil
from importlib.resources import files
from pathlib import Path

import jsonschema
import pytest

from coherence.cli import main
from coherence.engines import check
from coherence.results import CheckOptions
from coherence.testing import load_model
from coherence.testing.run import Run, prepare, replay
from coherence.trace import action_from_json
from coherence.traces_io import load_traces

ROOT = Path(__file__).resolve().parent.parent
BI = str(ROOT / "specs/broadcast_invalidate.coh")
ACKED = str(ROOT / "specs/broadcast_invalidate_acked.coh")

DEADLOCK_SPEC = """
param agents = 2;
param lines = 1;
param values = 2;
message GetS;
message Data(val: value);
network net: unordered, capacity = 4;
event Load;
home machine Home {
  stable state Busy;
  init Busy;
  on GetS in Busy stall;   // the home never serves anybody
}
cache machine C {
  stable state I, S;
  transient state IS_D;
  init I;
  on Load in I { send GetS to home; goto IS_D; }
  on Data in IS_D { perform load(msg.val); goto S; }
}
"""


SCHEMA = json.loads(files("coherence.schemas").joinpath("fuzz.json").read_text())


def fuzz_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    """Run the verb with --json; every document must match coherence/schemas/fuzz.json."""
    code = main(["fuzz", *argv, "--json", "--progress", "never"])
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, SCHEMA)
    assert doc["exit_code"] == code
    return code, doc


def test_finds_the_seed_bug_and_shrinks_it_near_the_shortest(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = fuzz_json(capsys, BI, "--seed", "3", "--budget", "200")
    assert code == 1 and doc["verdict"] == "fails" and doc["exit_code"] == 1
    (f,) = doc["failures"]
    shortest = {g.name: g.length for g in check(load_model(BI)).failures}
    assert f["property"] in shortest
    assert shortest[f["property"]] <= f["length"] <= 2 * shortest[f["property"]]
    assert f["length"] <= f["unshrunk_length"]
    assert doc["stats"]["examples_to_failure"] <= doc["stats"]["examples"]
    assert [s["index"] for s in f["trace"]] == list(range(1, f["length"] + 1))


def test_same_seed_same_trace(capsys: pytest.CaptureFixture[str]) -> None:
    runs = [fuzz_json(capsys, BI, "--seed", "11", "--budget", "100")[1] for _ in range(2)]
    assert runs[0]["failures"] == runs[1]["failures"]
    assert runs[0]["stats"]["examples_to_failure"] == runs[1]["stats"]["examples_to_failure"]
    assert "--seed 11" in runs[0]["reproduce"]


def test_saved_trace_replays_to_the_same_failure(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t.json"
    code, doc = fuzz_json(capsys, BI, "--seed", "5", "--budget", "100", "--trace-out", str(out))
    assert code == 1
    saved = load_traces(out)
    assert saved["source"] == "fuzz"
    (t,) = saved["traces"]
    actions = [action_from_json(s.action) for s in t["steps"]]
    model, name = prepare(load_model(BI))
    from coherence.semantics import Semantics
    problem, taken = replay(Semantics(model), actions, "coherence", name)
    assert problem is not None and problem.name == t["property"] == doc["failures"][0]["property"]
    assert len(taken) == len(actions)


def test_human_output_is_the_check_step_format(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fuzz", BI, "--seed", "3", "--budget", "100", "--progress", "never"])
    text = capsys.readouterr().out
    assert code == 1
    assert "FAIL data_value (invariant)" in text
    assert "  1. GPU[" in text and "verdict: FAILS" in text
    assert "reproduce: coherence fuzz" in text and "--seed 3" in text


def test_correct_protocol_passes_with_8_agents_and_4_lines(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = fuzz_json(capsys, ACKED, "--agents", "8", "--param", "lines=4", "--param",
                          "capacity=64", "--budget", "8", "--steps", "40", "--seed", "1")
    assert code == 0 and doc["verdict"] == "passes" and doc["failures"] == []
    assert doc["params"]["agents"] == 8 and doc["params"]["lines"] == 4
    assert doc["stats"]["examples"] >= 8


def test_deadlock_matches_the_checker(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "dead.coh"
    spec.write_text(DEADLOCK_SPEC)
    code, doc = fuzz_json(capsys, str(spec), "--budget", "20")
    (f,) = doc["failures"]
    (g,) = check(load_model(str(spec))).failures
    assert code == 1 and (f["kind"], f["property"]) == (g.kind, g.name) == ("deadlock", "deadlock")
    assert f["length"] == g.length == 2


def _do(run: Run, name: str, agent: int | None, line: int, params: tuple = ()) -> object:
    """Take the enabled instance of transition ``name`` for ``agent`` on ``line``."""
    for tr in run.transitions:
        if tr.name != name:
            continue
        for k, act in enumerate(run.instances(tr)):
            if (act.agent, act.line) == (agent, line) and act.params == params:
                out = run.outcome(tr, k)
                if out is not None:
                    return run.take(out)
    raise AssertionError(f"{name} not enabled for {agent} on line {line}")


@pytest.mark.parametrize("oracle,fails", [("coherence", False), ("sc", True)])
def test_message_passing_is_coherent_but_not_sc(oracle: str, fails: bool) -> None:
    """MP on the seed scheme: GPU 1 reads y's new value, then x's stale copy (2 lines)."""
    model = load_model(BI, agents=2, lines=2, skip=["data_value", "stale_copy_is_doomed"])
    from coherence.semantics import Semantics
    model, name = prepare(model)
    run = Run(Semantics(model), oracle, name)
    x, y = 0, 1
    steps = [("Load", 1, x, ()), ("GetS", None, x, ()), ("Data", 1, x, ()),  # 1 caches x=0
             ("Store", 0, x, (1,)), ("Store", 0, y, (1,)),                  # Inv to 1 in flight
             ("Load", 1, y, ()), ("GetS", None, y, ()), ("Data", 1, y, ())]  # 1 reads y=1
    for step in steps:
        assert _do(run, *step) is None
    problem = _do(run, "Load", 1, x)  # a hit on the stale copy: x=0
    if fails:
        assert problem is not None and problem.kind == "sc"
        assert "GPU[1]" in problem.message and "returning 0 on line 0" in problem.message
    else:
        assert problem is None


@pytest.mark.parametrize("argv,needle", [
    (["--budget", "0"], "argument --budget: '0' must be at least 1"),
    (["--param", "agents=x"], "not an integer"),
    (["--skip", "nope"], "--skip nope"),
])
def test_bad_input_exits_2(argv: list[str], needle: str,
                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fuzz", BI, *argv]) == 2
    assert needle in capsys.readouterr().err


def test_missing_spec_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fuzz", "no/such.coh"]) == 2
    err = capsys.readouterr().err
    assert "no/such.coh" in err and "Traceback" not in err


def test_diagram_of_the_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("dot") is None:
        pytest.skip("needs Graphviz's dot")
    code, doc = fuzz_json(capsys, BI, "--seed", "3", "--budget", "100", "--diagram",
                          str(tmp_path))
    assert code == 1
    assert any(p.endswith(".dot") and "fuzz" in p for p in doc["diagrams"])
    assert all(Path(p).exists() for p in doc["diagrams"])


def test_bench_fuzz_reports_against_the_checker(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "fuzz", BI, "--seeds", "2", "--budget", "100", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (row,) = doc["specs"]
    assert row["checker"]["verdict"] == "fails"
    assert row["found"] == "2/2"
    for run in row["runs"]:
        assert run["checker_shortest"] == row["checker"]["shortest"][run["property"]]
        assert run["length_ratio"] == round(run["length"] / run["checker_shortest"], 3)
        assert run["examples_to_failure"] <= run["examples"]
        # the pytest path makes the same runs (same seed, budget, steps): same failure
        py = run["pytest_path"]
        assert py["found"] and py["property"] == run["property"]
        assert py["examples_to_failure"] == run["examples_to_failure"]
        # both times are printed rounded to 1 ms and the ratio is taken before rounding:
        # allow what half a millisecond on each time moves the quotient, plus the ratio's own
        # rounding (a 10 ms run rounded by 0.5 ms moves a ratio of 1.1 by about 0.1)
        slack = 0.0005 * (1 + py["seconds"] / run["seconds"]) / (run["seconds"] - 0.0005)
        assert run["pytest_seconds_ratio"] == pytest.approx(py["seconds"] / run["seconds"],
                                                            abs=slack + 0.0005)
        assert run["pytest_examples_per_second_ratio"] > 0
    assert row["goal_met"] == (row["max_length_ratio"] <= 2)
    assert row["pytest_found"] == "2/2" and doc["pytest_path_found_all_fuzz_found"] is True


def test_bench_fuzz_without_the_checker(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "fuzz", ACKED, "--seeds", "1", "--budget", "5", "--steps", "10",
            "--no-checker"]
    assert main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (row,) = doc["specs"]
    assert row["checker"] is None and row["agree"] is None and doc["all_agree"] is None
    (run,) = row["runs"]
    assert not run["found"] and not run["pytest_path"]["found"]
    assert run["pytest_path"]["examples"] >= 5
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "pytest path: nothing found in" in text and "\n  checker:" not in text


@pytest.mark.parametrize("mutant", ["german_store_in_shared", "msi_snoop_putm_data_dropped"])
def test_fuzz_trace_is_one_the_checker_reaches(mutant: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A fuzz trace is real: BFS to its depth finds the same property, no longer."""
    spec = ROOT / "specs" / "mutants" / f"{mutant}.coh"
    code, doc = fuzz_json(capsys, str(spec), "--seed", "1", "--budget", "200")
    (f,) = doc["failures"]
    base = check(load_model(str(spec)), CheckOptions(max_depth=f["length"]))
    shortest = min(g.length for g in base.failures if g.name == f["property"])
    assert code == 1 and shortest <= f["length"]


def test_replay_refuses_actions_out_of_their_source_state() -> None:
    from coherence.semantics import Action, Semantics
    from coherence.testing.run import applicable
    model, _ = prepare(load_model(ACKED, agents=2))
    sem = Semantics(model)
    gpu = model.machine("GPU")
    (ack,) = [t for t in gpu.transitions if t.name == "WriteAck"]
    (store,) = [t for t in gpu.transitions if t.name == "Store"]
    init = sem.initial_states()[0]
    assert applicable(sem, init, Action("event", "GPU", 0, 0, store.index, (1,)))
    # the GPU is in I, and no WriteAck is in flight: replaying either would invent a step
    assert not applicable(sem, init, Action("message", "GPU", 0, 0, ack.index, (), 0,
                                            (0, 2, 0, model.messages.index(
                                                model.message("WriteAck")), ())))
    problem, taken = replay(sem, [Action("message", "GPU", 0, 0, ack.index, (), 0,
                                         (0, 2, 0, 5, ()))], skip_disabled=True)
    assert problem is None and taken == []


def test_schema_is_strict(capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = fuzz_json(capsys, BI, "--seed", "3", "--budget", "50")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**doc, "verdict": "holds"}, SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**doc, "surprise": 1}, SCHEMA)
