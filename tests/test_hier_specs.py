"""The hierarchical GPU specs (issue 20): verdicts, reachable-state counts and counterexamples,
pinned.

specs/gpu_two_level.coh (write-through L1s, an L2 per GPU, no inter-GPU invalidation),
specs/multigpu_broadcast.coh and multigpu_broadcast_acked.coh (the seed's NVLink broadcast
invalidation between the L2s, literal and acknowledged) and specs/hmg.coh (HMG, HPCA 2020),
at 1 GPU x 2 SMs, 2 GPUs x 1 SM and (slow tier) 2 GPUs x 2 SMs, on the reference engine. The
coherence monitor multiplies the state space (10-20 times here), so its rows are fewer.
Counts with exact nested symmetry (GPUs permuted with their SMs, SMs within each GPU) and
without (HIER_COUNTS in helpers: tests/test_library.py checks that every spec in specs/ is
pinned somewhere).
"""

from __future__ import annotations

import pytest
from helpers import HIER_COUNTS, HIER_SLOW, ROOT

from coherence import load_spec
from coherence.engines import check
from coherence.results import CheckOptions
from coherence.spec.select import drop_properties

# (spec, gpus, sms, monitor?) -> the properties that fail, with their shortest counterexample
FAILS: dict[tuple[str, int, int, bool], dict[str, int]] = {
    ("gpu_two_level", 2, 1, False): {"l2_copy_current": 7},
    # two GPUs' racing stores, each performed first at its own L2, reach memory in the other
    # order: the GPUs see them in opposite orders
    ("gpu_two_level", 2, 1, True): {"l2_copy_current": 7, "coherent": 13},
    ("gpu_two_level", 2, 2, False): {"l2_copy_current": 7},
    ("multigpu_broadcast", 2, 1, False): {"data_value": 6, "stale_copy_is_doomed": 7},
    # HMG's by-design failure: racing weak stores of two GPUs (PTX orders only morally
    # strong ones), each seen first at its own GPU home
    ("hmg", 2, 1, True): {"coherent": 12},
    # per-location coherence holds: the stale copy is old, not out of order
    ("multigpu_broadcast", 2, 1, True): {"data_value": 6, "stale_copy_is_doomed": 7},
    ("multigpu_broadcast", 2, 2, False): {"data_value": 6, "stale_copy_is_doomed": 7},
}


def run(spec: str, gpus: int, sms: int, monitor: bool, symmetry: bool = False,
        max_depth: int | None = None, engine: str = "reference"):
    model = load_spec(ROOT / "specs" / f"{spec}.coh", {"gpus": gpus, "sms": sms})
    if not monitor:
        model = drop_properties(model, ["coherent"])
    return check(model, CheckOptions(symmetry=symmetry, max_depth=max_depth), engine=engine)


# rows the reference engine would take minutes on: the compiled engine (same counts)
COMPILED_OVER = 100_000


def _cases() -> list:
    return [pytest.param(*key, sym, marks=[pytest.mark.slow] if (key, sym) in HIER_SLOW else [],
                         id=f"{key[0]}-{key[1]}x{key[2]}-{'mon' if key[3] else 'nomon'}-"
                            f"{'sym' if sym else 'nosym'}")
            for key, counts in HIER_COUNTS.items()
            for sym, n in zip((True, False), counts, strict=True) if n is not None]


@pytest.mark.parametrize(("spec", "gpus", "sms", "monitor", "symmetry"), _cases())
def test_counts_and_verdicts(spec: str, gpus: int, sms: int, monitor: bool,
                             symmetry: bool) -> None:
    expected = HIER_COUNTS[(spec, gpus, sms, monitor)][0 if symmetry else 1]
    assert expected is not None
    engine = "compiled" if expected > COMPILED_OVER else "reference"
    result = run(spec, gpus, sms, monitor, symmetry, engine=engine)
    assert result.states == expected
    lengths = {f.name: f.length for f in result.failures}
    assert lengths == FAILS.get((spec, gpus, sms, monitor), {}), [
        f.message for f in result.failures]
    assert result.verdict == ("fails" if lengths else "holds")


def test_one_gpu_is_coherent_in_every_model() -> None:
    """With one GPU the four specs differ only in what their L2 does towards other GPUs."""
    for spec in ("gpu_two_level", "multigpu_broadcast", "multigpu_broadcast_acked", "hmg"):
        assert (spec, 1, 2, False) in HIER_COUNTS
        assert (spec, 1, 2, False) not in FAILS


def test_literal_counterexample_is_the_overtaken_invalidation() -> None:
    # breadth-first to depth 7 finds the shortest counterexamples (the whole row: slow tier)
    result = run("multigpu_broadcast", 2, 1, False, max_depth=7)
    assert {f.name: f.length for f in result.failures} == FAILS[
        ("multigpu_broadcast", 2, 1, False)]
    failure = next(f for f in result.failures if f.name == "stale_copy_is_doomed")
    events = [(s.actor, s.event) for s in failure.trace]
    # a read misses in GPU 0's L2, memory answers with the old value, GPU 1 stores, and the
    # invalidation reaches GPU 0's L2 before the fill: it is dropped, then the old data cached
    assert [e for _, e in events] == [
        "Load", "Store(v=1)", "receives Get from L1[0, 0]", "receives Fetch from L2[0]",
        "receives WT(val=1) from L1[1, 0]", "receives Inv from Mem",
        "receives Fill(val=0) from Mem"]
    assert events[5][0] == events[6][0] == "L2[0]"


def test_two_level_counterexample_is_the_other_gpus_write() -> None:
    result = run("gpu_two_level", 2, 1, False, max_depth=7)
    failure = next(f for f in result.failures if f.name == "l2_copy_current")
    actors = [s.actor for s in failure.trace]
    assert "Mem" in actors and {"L2[0]", "L2[1]"} <= set(actors)
