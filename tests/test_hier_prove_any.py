"""``coherence prove --agents any`` on hierarchical specs (issue 20): a proof for every size of
one index type, the others fixed by ``--param`` (NOTE(param-hierarchy) in
coherence/smt/param_hier.py). Proved specs also hold at fixed sizes in the checker, mutants
are refuted by replayed counterexamples, counterexamples to induction are replayed, and every
spec of another shape gets a located refusal (exit 2). Z3 runs under deterministic rlimits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import PROOF_RLIMIT, ROOT, SPECS

from coherence.cli import main
from coherence.engines import check
from coherence.results import CheckOptions
from coherence.smt.param import prove_all
from coherence.spec.load import load_spec

HIER = ROOT / "tests" / "specs" / "hierarchy"
READERS = HIER / "one_gpu_readers.coh"
TWO_LEVEL_WT = HIER / "two_level_wt.coh"
DIR_OVER_GPUS = HIER / "dir_over_gpus.coh"
FLUSH = HIER / "one_gpu_flush.coh"
GPU_TWO_LEVEL = SPECS / "gpu_two_level.coh"


# one machine over (gpu, sm): free sizes of gpu would multiply the sm ids
NESTED_TEXT = """param gpus = 1;
param sms = 2;
index gpu: gpus;
index sm: sms within gpu;
network net: fifo, capacity = 1; message Ping;
machine L1[g: gpu, s: sm] { state A; init A; rule go in A { send Ping to Mem; } }
machine Mem { state R; init R; on Ping { } }
"""
NESTED = Path("nested.coh")  # written by the test into its tmp_path
NO_INDEX_TEXT = """network net: fifo, capacity = 1;
message Ping;
machine A { state S; init S; rule go in S { send Ping to B; } }
machine B { state R; init R; on Ping { } }
"""
NO_INDEX = Path("no_index.coh")


def _variant(tmp_path: Path, old: str, new: str) -> Path:
    text = READERS.read_text()
    assert old in text
    out = tmp_path / "variant.coh"
    out.write_text(text.replace(old, new))
    return out


def test_small_spec_is_proved_for_every_number_of_sms_and_holds_at_fixed_sizes() -> None:
    result = prove_all(load_spec(READERS), rlimit=PROOF_RLIMIT)
    assert result.verdict == "holds" and result.exit_code == 0, (result.ctis, result.reason)
    assert result.over == "sm" and result.unit == "sm ids"
    for goal in ("invariant:read_tracked", "invariant:copy_defined", "no-transition:*",
                 "error:error", "abstraction:one-message-per-kind"):
        assert goal in result.proved
    for sms in (1, 2, 3):
        assert check(load_spec(READERS, {"sms": sms})).verdict == "holds"


def test_a_top_level_index_type_is_proved_for_every_number_of_gpus(tmp_path: Path) -> None:
    """A directory over ``gpu`` (no nesting): ``owner: gpu``, ``set<gpu>``, a rule parameter
    over the free type; its mutant (holders never recorded) is refuted."""
    result = prove_all(load_spec(DIR_OVER_GPUS), rlimit=PROOF_RLIMIT)
    assert result.verdict == "holds", (result.ctis, result.reason)
    assert result.over == "gpu" and "invariant:held" in result.proved
    for gpus in (1, 2, 3):
        assert check(load_spec(DIR_OVER_GPUS, {"gpus": gpus})).verdict == "holds"
    text = DIR_OVER_GPUS.read_text()
    assert "holders.add(msg.src.gpu); " in text
    mutant = tmp_path / "mutant.coh"
    mutant.write_text(text.replace("holders.add(msg.src.gpu); ", ""))
    refuted = prove_all(load_spec(mutant), rlimit=PROOF_RLIMIT)
    assert refuted.verdict == "fails" and refuted.instance == 2 and refuted.unit == "gpu ids"
    assert refuted.failures and refuted.failures[0].trace


# statement deletions of dir_over_gpus.coh: whatever the proof says must agree with the
# checker (deadlock aside: a proof for every N does not cover it) at 1-3 GPUs
DELETIONS = ["send Get to Dir; ", "holders.remove(x);", "goto W; ", "data := msg.val; ",
             "goto V; ", "undefine data; ", "goto I; ", "owner := msg.src.gpu; ",
             "send Inv to C[x];"]


@pytest.mark.parametrize("old", [pytest.param(d, marks=[] if i < 2 else [pytest.mark.slow])
                                 for i, d in enumerate(DELETIONS)])
def test_no_mutant_is_proved_that_the_checker_refutes(old: str, tmp_path: Path) -> None:
    text = DIR_OVER_GPUS.read_text()
    assert text.count(old) == 1
    mutant = tmp_path / "mutant.coh"
    mutant.write_text(text.replace(old, ""))
    result = prove_all(load_spec(mutant), rlimit=PROOF_RLIMIT)
    checked = [check(load_spec(mutant, {"gpus": n}), CheckOptions(deadlock=False)).verdict
               for n in (1, 2, 3)]
    if result.verdict == "holds":
        assert checked == ["holds"] * 3
    if result.verdict == "fails":
        assert "fails" in checked and result.failures[0].trace


def test_a_mutant_is_refuted_by_a_replayed_counterexample(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    mutant = _variant(tmp_path, "readers.add(msg.src.sm); ", "")  # the L2 forgets its readers
    result = prove_all(load_spec(mutant), rlimit=PROOF_RLIMIT)
    assert result.verdict == "fails" and result.exit_code == 1
    assert result.instance == 2 and result.over == "sm"
    failure = result.failures[0]
    assert failure.name == "data_to_reader" and failure.length == 2
    assert main(["prove", str(mutant), "--agents", "any", "--rlimit", str(PROOF_RLIMIT)]) == 1
    out = capsys.readouterr().out
    assert "refuted with 2 sm ids:" in out
    assert "L2[0]: receives Get from L1[0, 0]" in out


def test_without_an_aux_invariant_the_counterexample_to_induction_is_concrete(
        tmp_path: Path) -> None:
    spec = _variant(tmp_path, "&& m.dst.sm in L2[m.dst.gpu].readers", "")
    result = prove_all(load_spec(spec), rlimit=PROOF_RLIMIT)
    assert result.verdict == "unknown" and result.exit_code == 3
    cti = next(c for c in result.cti_details if "invariant:read_tracked" in c.summary)
    assert cti.summary.startswith("invariant:read_tracked can break with 1 sm id(s)")
    # an L1 about to receive data from an L2 that does not count it among its readers
    assert any(x.startswith("L2[0]: state R") and "readers={}" in x for x in cti.pre)
    assert any(line.startswith("network net: Data(val=0) L2[0]→L1[0, 0]") for line in cti.pre)
    assert "receives Data" in cti.step.event


def test_the_command_line_proof_names_the_free_index_type(capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    argv = ["prove", str(READERS), "--agents", "any", "--over", "sms", "--param", "gpus=1",
            "--rlimit", str(PROOF_RLIMIT), "--json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "holds" and doc["over"] == "sm"
    assert any("the agents are the L1 instances, beside the fixed nodes L2[0]" in n
               for n in doc["notes"])
    assert main(["prove", str(READERS), "--agents", "any", "--over", "sm",
                 "--rlimit", str(PROOF_RLIMIT)]) == 0
    assert "PROVED for every number of sm ids" in capsys.readouterr().out


@pytest.mark.parametrize(("spec", "extra", "where", "what"), [
    pytest.param(GPU_TWO_LEVEL, [], "gpu_two_level.coh:82:9:",
                 "machine L1 is replicated over sm once per value of gpu (gpus = 2)",
                 id="a-family-per-gpu"),
    pytest.param(GPU_TWO_LEVEL, ["--over", "gpus", "--param", "sms=1"],
                 "gpu_two_level.coh:108:9:",
                 "machines L1 and L2 are both replicated over gpu", id="two-replicated"),
    pytest.param(NESTED, ["--over", "gpu"], "nested.coh:6:9:",
                 "index type sm is nested in gpu", id="nested-index"),
    pytest.param(NO_INDEX, [], "no_index.coh:3:9:",
                 "this spec declares none", id="no-index-type"),
    pytest.param(GPU_TWO_LEVEL, ["--over", "cores"], "<command line>:",
                 "--over cores: no index type or index parameter of that name", id="no-index"),
    pytest.param(SPECS / "german.coh", ["--over", "sms"], "<command line>:",
                 "needs --agents any and a hierarchical spec", id="flat-spec"),
    pytest.param(GPU_TWO_LEVEL, ["--param", "gpus=1", "--infer"], "gpu_two_level.coh:82:9:",
                 "--infer does not support hierarchical specs yet", id="infer"),
])
def test_other_shapes_are_located_refusals(spec: Path, extra: list[str], where: str, what: str,
                                           tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    if spec in (NESTED, NO_INDEX):
        text = NESTED_TEXT if spec == NESTED else NO_INDEX_TEXT
        spec = tmp_path / spec.name
        spec.write_text(text)
    skip = ["--skip", "coherent"] if "coherent" in spec.read_text() else []
    argv = ["prove", str(spec), "--agents", "any", *skip, *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if ": error: " in x)
    assert where in line and what in line, err


FLUSH_MUTANTS = [("if t in readers {", "if !(t in readers) {"),
                 ("send Inv to L1[g, t]; ", ""), ("readers.add(msg.src.sm); ", ""),
                 ("readers.clear();", ""), ("if t in readers {", "if t in readers && t != t {")]


def test_a_for_over_the_free_index_type_is_one_multicast() -> None:
    result = prove_all(load_spec(FLUSH), rlimit=PROOF_RLIMIT)
    assert result.verdict == "holds", (result.ctis, result.reason)
    assert "invariant:current" in result.proved
    for sms in (1, 2, 3):
        assert check(load_spec(FLUSH, {"sms": sms})).verdict == "holds"


@pytest.mark.parametrize(("old", "new"), [
    pytest.param(o, n, marks=[] if i < 2 else [pytest.mark.slow])
    for i, (o, n) in enumerate(FLUSH_MUTANTS)])
def test_mutants_of_the_multicast_loop_are_refuted(old: str, new: str, tmp_path: Path) -> None:
    text = FLUSH.read_text()
    assert old in text
    mutant = tmp_path / "mutant.coh"
    mutant.write_text(text.replace(old, new))
    result = prove_all(load_spec(mutant), rlimit=PROOF_RLIMIT)
    assert result.verdict == "fails" and result.instance == 2 and result.failures[0].trace
    assert check(load_spec(mutant, {"sms": 2}), CheckOptions(deadlock=False)).verdict == "fails"


def test_a_for_body_other_than_sends_is_located(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    text = FLUSH.read_text()
    old = "if t in readers { send Inv to L1[g, t]; }"
    assert old in text
    spec = tmp_path / "loop.coh"
    spec.write_text(text.replace(old, "if t in readers { send Inv to L1[g, t]; "
                                      "readers.remove(t); }"))
    assert main(["prove", str(spec), "--agents", "any", "--rlimit", str(PROOF_RLIMIT)]) == 2
    err = capsys.readouterr().err
    assert "loop.coh:37:" in err and "only `if`s and sends to L1[..., t]" in err, err


@pytest.mark.slow  # about 20 s: two_level_wt's obligations, a CTI searched for each failing one
def test_two_level_wt_gets_replayed_counterexamples_to_induction(
        capsys: pytest.CaptureFixture[str]) -> None:
    """two_level_wt at one GPU is encoded (`for t: sm`, `Put(val, by: node)`, `broadcast Inv
    to L2 except`), but its two invariants are not inductive alone."""
    argv = ["prove", str(TWO_LEVEL_WT), "--agents", "any", "--param", "gpus=1",
            "--rlimit", str(PROOF_RLIMIT), "--json"]
    assert main(argv) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "unknown" and doc["cti_states"]
    assert any(c["summary"].startswith("invariant:l1_copy_is_tracked can break with")
               for c in doc["cti_states"])


def test_the_free_size_used_as_a_number_is_located(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    spec = _variant(tmp_path, "on WTAck in W { goto I; }",
                    "on WTAck in W when sms > 1 { goto I; }\n  on WTAck in I, V, IV { }")
    assert main(["prove", str(spec), "--agents", "any", "--rlimit", str(PROOF_RLIMIT)]) == 2
    err = capsys.readouterr().err
    assert "variant.coh:31:" in err and "depends on sms (the number of sm ids)" in err, err


def test_aux_invariants_from_a_file_are_located_there(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    aux = tmp_path / "bad.coh"
    aux.write_text("// one line\ninvariant aux broken: forall g: gpu :: L2[g].nothing == 1;\n")
    argv = ["prove", str(GPU_TWO_LEVEL), "--agents", "any", "--param", "gpus=1", "--skip",
            "coherent", "--aux", str(aux)]
    assert main(argv) == 2
    assert f"{aux}:2:46: error: machine L2 has no variable 'nothing'" in capsys.readouterr().err


def test_bench_prove_hier_times_the_proof_beside_the_checker(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import coherence.smt.bench as bench
    case = next(c for c in bench.HIER_PROOFS if c["spec"].endswith("one_gpu_readers.coh"))
    monkeypatch.setattr(bench, "HIER_PROOFS", [case])  # the bundled proof: the slow test
    assert main(["bench", "prove", "--hier", "--rlimit", str(PROOF_RLIMIT), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["hier"][0]
    assert row["verdict"] == "holds" and row["over"] == "sms" and row["proved"] == 10
    assert [(c["sms"], c["verdict"]) for c in row["checker"]] == [(2, "holds"), (3, "holds")]
    assert 0 < row["checker"][0]["states"] < row["checker"][1]["states"]


@pytest.mark.slow  # 903 proof obligations: 5-15 minutes on the shared 2-core machine
def test_gpu_two_level_is_proved_for_every_number_of_sms_in_one_gpu(
        capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["prove", str(GPU_TWO_LEVEL), "--agents", "any", "--over", "sms", "--param",
            "gpus=1", "--skip", "coherent", "--aux", str(SPECS / "proofs" /
                                                         "gpu_two_level_one_gpu.coh"),
            "--rlimit", str(PROOF_RLIMIT), "--json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "holds" and doc["over"] == "sm"
    assert {"invariant:l2_copy_current", "invariant:acks_counted",
            "abstraction:one-message-per-kind"} <= set(doc["proved"])


def test_gpu_two_level_without_a_write_through_step_is_refuted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A mutant of the bundled spec (the L2 forgets to take the written value) is refuted at
    2 SMs of one GPU by a replayed counterexample (BMC, once the proof has failed)."""
    text = GPU_TWO_LEVEL.read_text()
    old = "    data := msg.val;\n    who := msg.src;\n"
    assert old in text
    mutant = tmp_path / "gpu_two_level_mutant.coh"
    mutant.write_text(text.replace(old, "    who := msg.src;\n"))
    argv = ["prove", str(mutant), "--agents", "any", "--param", "gpus=1", "--skip", "coherent",
            "--rlimit", str(PROOF_RLIMIT), "--json"]
    assert main(argv) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "fails" and doc["instance_agents"] == 2
    failure = doc["failures"][0]
    assert failure["property"] == "l2_copy_current" and failure["trace"], failure
