"""The harness's GPU-free parts: CUDA generation, the SASS order check (on SASS recorded on
the H200), the comparison logic, and report rendering from recorded and synthetic results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coherence.cli import main
from coherence.errors import SpecError
from coherence.hw import cuda_gen, sass
from coherence.hw.report import load_results, markdown, parse_outcome, rows
from coherence.litmus.catalogue import find_test
from coherence.litmus.compare import compare, rule_of_three
from coherence.litmus.sc import sc_outcomes
from coherence.litmus.variants import VARIANTS, apply_variant

DATA = Path(__file__).parent / "data"
RESULTS = Path(__file__).parent.parent / "results" / "h200-litmus.json"

SPECS = Path(__file__).resolve().parent.parent / "specs"


def test_ptx_of_each_annotation() -> None:
    mp = find_test("MP")
    got = {v: [[cuda_gen.ptx_of(op) for op in ops] for ops in apply_variant(mp, v).threads]
           for v in VARIANTS}
    assert got["weak"][0] == ["st.global.u32", "st.global.u32"]
    assert got["volatile"][1] == ["ld.volatile.global.u32", "ld.volatile.global.u32"]
    assert got["acqrel.sys"][0] == ["st.release.sys.global.u32"] * 2
    assert got["acqrel.gpu"][1] == ["ld.acquire.gpu.global.u32"] * 2
    assert got["fence.cta"][1] == ["ld.relaxed.gpu.global.u32", "fence.sc.cta",
                                   "ld.relaxed.gpu.global.u32"]


def test_kernel_source_has_roles_probes_barrier_and_warmup() -> None:
    src = cuda_gen.kernel_source(apply_variant(find_test("MP+cached"), "relaxed.gpu"))
    assert src.count("__device__ __forceinline__ uint4 role") == 2
    assert "probe_role0" in src and "probe_role1" in src
    assert "co_barrier(&bar[inst], ++epoch * NT, timeout_ns)" in src
    assert 'if (role == 1) { unsigned int w; asm volatile("ld.global.ca.u32' in src
    assert '"st.relaxed.gpu.global.u32 [%0], %1;" :: "l"(l0), "r"(1u)' in src
    dep = cuda_gen.kernel_source(apply_variant(find_test("LB+data"), "weak"))
    assert '"st.global.u32 [%0], %1;" :: "l"(l1), "r"(v0)' in dep  # data dependency


def test_sass_functions_and_classes_on_recorded_h200_sass() -> None:
    funcs = sass.functions((DATA / "mp_acqrel_gpu.sass").read_text())
    assert set(funcs) == {"probe_role0", "probe_role1"}
    mem1 = [op for op in funcs["probe_role1"] if sass.classify(op)]
    # ld.acquire.gpu = strong load + L1 invalidation (the Primer's self-invalidation)
    assert mem1 == ["LDG.E.STRONG.GPU", "CCTL.IVALL", "LDG.E.STRONG.GPU", "CCTL.IVALL",
                    "STG.E.128"]
    mp = apply_variant(find_test("MP"), "acqrel.gpu")
    for t, ops in enumerate(mp.threads):
        chk = sass.check_role(t, funcs[f"probe_role{t}"], cuda_gen.expected_sequence(ops), [])
        assert chk.ok, chk


def test_sass_check_catches_the_merged_store_recorded_on_h200() -> None:
    funcs = sass.functions((DATA / "coww_relaxed_gpu.sass").read_text())
    test = apply_variant(find_test("CoWW"), "relaxed.gpu")
    chk = sass.check_role(0, funcs["probe_role0"], cuda_gen.expected_sequence(test.threads[0]),
                          [])
    assert not chk.ok
    assert chk.notes == ("loads/stores SS != program order SSS",)


def test_sass_fence_checks() -> None:
    ok = sass.check_role(0, ["LDG.E", "MEMBAR.SC.GPU", "LDG.E", "STG.E.128"], ["L", "F", "L"],
                         ["gpu"])
    assert ok.ok and ok.notes == ()
    missing = sass.check_role(0, ["LDG.E", "LDG.E", "STG.E.128"], ["L", "F", "L"], ["gpu"])
    assert not missing.ok and "no fence instruction" in missing.notes[0]
    cta = sass.check_role(0, ["LDG.E", "LDG.E", "STG.E.128"], ["L", "F", "L"], ["cta"])
    assert cta.ok and "cta scope" in cta.notes[0]
    swapped = sass.check_role(0, ["STG.E", "LDG.E", "STG.E.128"], ["L", "S"], [])
    assert not swapped.ok


def test_compare_classes_and_rule_of_three() -> None:
    test = apply_variant(find_test("MP"), "weak")
    sc = sc_outcomes(test)
    weird = (1, 0, 1, 1)
    obs = {o: 10 for o in list(sc)[:2]}
    obs[weird] = 3
    c = compare(test, "sc", sc, sc, obs)
    verdicts = {r.outcome: r.verdict for r in c.rows}
    assert verdicts["1:r0=1 1:r1=0 x=1 y=1"] == "forbidden-observed"
    assert sorted(verdicts.values()).count("allowed-observed") == 2
    unobserved = [r for r in c.rows if r.verdict == "allowed-unobserved"]
    assert len(unobserved) == 1 and unobserved[0].rate_bound == pytest.approx(3 / 23)
    assert not c.consistent and c.condition_observed == 3
    assert compare(test, "sc", sc, sc, {o: 1 for o in sc}).consistent
    assert rule_of_three(0) == 1.0 and rule_of_three(3_000_000) == pytest.approx(1e-6)


def test_report_from_synthetic_results(tmp_path: Path) -> None:
    doc = {"schema": 1, "provenance": {"gpu": "synthetic"}, "results": [
        {"test": "MP+cached", "variant": "weak", "timeouts": 0,
         "shared_sm": {"1:r0=0 1:r1=0 x=1 y=1": 5},
         "sass": {"checked": False},
         "distinct_sm": {"1:r0=1 1:r1=0 x=1 y=1": 7, "1:r0=1 1:r1=1 x=1 y=1": 93}}]}
    table = rows([doc], [str(SPECS / "broadcast_invalidate.coh"),
                         str(SPECS / "broadcast_invalidate_acked.coh")], core="blocking")
    (r,) = table
    assert r["instances"] == 100 and r["condition_observed"] == 7
    assert r["shared_sm_instances"] == 5
    assert r["models"]["broadcast_invalidate"]["consistent"]
    assert not r["models"]["broadcast_invalidate_acked"]["consistent"]
    assert r["models"]["broadcast_invalidate_acked"]["forbidden_observed"] == [
        "1:r0=1 1:r1=0 x=1 y=1"]
    md = markdown(table, doc["provenance"], "blocking")
    assert ("| MP+cached | weak | - | 100 | 7 | 7.00e-02 | allows; consistent | "
            "forbids; **REFUTED**") in md
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    pytest.importorskip("matplotlib")
    assert main(["hw", "report", str(path), "--model", str(SPECS / "broadcast_invalidate.coh"),
                 "--core", "blocking",
                 "--out-dir", str(tmp_path)]) == 0
    png = (tmp_path / "report.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 1000


def test_recorded_h200_results_load_and_parse() -> None:
    doc = load_results(RESULTS)
    assert doc["provenance"]["gpu"] == "NVIDIA H200" and doc["complete"]
    assert len(doc["results"]) == 14 * len(VARIANTS)
    for r in doc["results"]:
        test = apply_variant(find_test(r["test"]), r["variant"])
        for k in r["distinct_sm"]:
            parse_outcome(test, k)
        assert r["timeouts"] == 0


@pytest.mark.parametrize("text", ["{", json.dumps({"schema": 9}), json.dumps([1])])
def test_bad_results_file(tmp_path: Path, text: str) -> None:
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(SpecError):
        load_results(p)
    assert main(["hw", "report", str(p)]) == 2


def test_hw_run_without_gpu_is_a_clean_error(capsys: pytest.CaptureFixture[str]) -> None:
    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy is installed here")
    except ImportError:
        pass
    assert main(["hw", "run", "MP", "--seconds", "0.1"]) == 2
    assert "needs CuPy" in capsys.readouterr().err
    assert main(["hw", "run", "MP", "--place", "cpu-gpu"]) == 2
    assert "needs CuPy" in capsys.readouterr().err
