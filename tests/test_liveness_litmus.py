"""Litmus polls (issue 16): a reader polls until it sees a value; can the poll spin forever?"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coherence.cli import main
from coherence.errors import SpecError
from coherence.litmus.model import model_overrides, run_on_model
from coherence.litmus.parse import load_litmus, parse_litmus
from coherence.litmus.poll import poll_spins
from coherence.litmus.sc import sc_outcomes
from coherence.spec.load import load_spec

ROOT = Path(__file__).resolve().parent.parent
POLL = ROOT / "specs" / "litmus" / "poll" / "Poll.litmus"
MP_POLL = ROOT / "specs" / "litmus" / "poll" / "MP+poll.litmus"


def spins(spec: str, test_path: Path = POLL) -> tuple[bool | None, list[str], int | None]:
    test = load_litmus(test_path)
    model = load_spec(ROOT / "specs" / spec, model_overrides(test))
    res = poll_spins(model, test, 50_000)
    return res.can_spin, [s.render() for s in res.lasso], res.loop_start


def test_poll_parses_and_prints() -> None:
    test = parse_litmus("litmus P; locations x; thread 0 { store x 1; }\n"
                        "thread 1 { r0 = poll.relaxed.gpu x == 1; } exists 1:r0 == 1;")
    op = test.threads[1][0]
    assert (op.kind, op.until, op.order, op.scope) == ("load", 1, "relaxed", "gpu")
    assert op.text() == "r0 = poll.relaxed.gpu x == 1"
    assert test.polls() == [(1, 0)]


def test_poll_without_its_value_is_a_located_error() -> None:
    with pytest.raises(SpecError) as err:
        parse_litmus("litmus P; locations x;\nthread 0 { r0 = poll x; } exists 0:r0 == 1;")
    assert err.value.span is not None and err.value.span.line == 2
    assert "'=='" in str(err.value)


def test_sc_poll_only_ends_on_its_value() -> None:
    test = load_litmus(MP_POLL)
    assert {o[0] for o in sc_outcomes(test)} == {1}  # r0 is the polled value
    assert all(o[1] == 1 for o in sc_outcomes(test))  # MP: after the flag, the data


def test_literal_scheme_stale_copy_spins_forever() -> None:
    can, lasso, k = spins("broadcast_invalidate.coh")
    assert can is True and k is not None
    assert "receives Inv" in lasso[3] and "IS_D → S" in lasso[4]  # the dropped invalidation
    cycle = lasso[k - 1:]
    assert cycle and all("load returns 0" in step for step in cycle)


@pytest.mark.parametrize("spec", ["broadcast_invalidate_acked.coh", "gpu_write_through.coh",
                                  "msi_snooping.coh"])
def test_poll_always_ends(spec: str) -> None:
    assert spins(spec)[0] is False


def test_poll_outcomes_are_the_polled_value() -> None:
    test = load_litmus(POLL)
    model = load_spec(ROOT / "specs" / "broadcast_invalidate_acked.coh", model_overrides(test))
    assert run_on_model(model, test).outcomes == {(1, 1)}


def test_litmus_verb_reports_the_spin(capsys: pytest.CaptureFixture[str]) -> None:
    spec = str(ROOT / "specs" / "broadcast_invalidate.coh")
    main(["litmus", spec, str(POLL), "-V", "as-written", "--json"])
    row = json.loads(capsys.readouterr().out)["results"][0]
    assert row["poll_can_spin_forever"] is True and row["poll_loop_start"] == 6
    main(["litmus", spec, str(POLL), "-V", "as-written"])
    assert "poll can spin forever" in capsys.readouterr().out


def test_gpu_poll_kernels_use_each_load_kind() -> None:
    from coherence.hw.poll import LOADS, kernel_source
    for kind, ptx in LOADS.items():
        src = kernel_source(kind)
        reader = src.split("// writer")[0]
        assert reader.count(ptx) == 2  # the warming load and the poll itself
        assert "st.relaxed.gpu.global.u32" in src and "%%smid" in src


def test_gpu_poll_runs_where_there_is_a_gpu() -> None:
    cp = pytest.importorskip("cupy")
    try:
        cp.cuda.runtime.getDeviceCount()
    except Exception:
        pytest.skip("no CUDA device")
    from coherence.hw.poll import run_poll
    res = run_poll("relaxed", launches=1, budget=1 << 16, pairs=8)
    assert res.seen + res.spun_out == 8 and res.seen >= 1
