"""The Z3 back end's figures for ``coherence bench prove``, each beside a baseline run.

* BMC: seconds per depth as depth grows, and the depth reached within a time budget (60 s by
  default) at each agent count; baseline: the reference checker's BFS to the same depth
  (``--max-depth``), run side by side, as a ratio.
* Parameterised proofs (``--agents any``): the time and verdict of each spec's proof.
* Inferred invariants (``--infer``): per protocol without its hand-written auxiliary
  invariants, the candidates mined, taken in and kept, and the seconds of each phase, beside
  the proof with the hand-written ones.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coherence.smt.infer_mine import StateSource

SPECS = Path(__file__).resolve().parents[2] / "specs"  # the repository's bundled specs
DEFAULT_SPECS = [str(SPECS / n) for n in (
    "german.coh", "broadcast_invalidate_acked.coh", "broadcast_invalidate.coh")]


def bmc_rows(spec: str, agents: int, budget: float, skip: list[str],
              max_depth: int = 10_000, params: dict[str, int] | None = None,
              progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """BMC to ``max_depth`` within ``budget`` s, then the checker's BFS to each depth reached;
    ``progress(what)`` is told of each depth as it is done."""
    from coherence.engines import check
    from coherence.results import CheckOptions
    from coherence.smt.bmc import bmc
    from coherence.spec.load import load_spec
    from coherence.spec.select import drop_properties

    model = drop_properties(load_spec(spec, {**(params or {}), "agents": agents}), skip)
    result = bmc(model, max_depth, all_failures=True, timeout=budget,
                 progress=None if progress is None else
                 lambda d: progress(f"BMC depth {d.depth} checked ({d.cumulative:.1f} s)"))
    rows = []
    for d in result.depths:
        if progress is not None:
            progress(f"checker BFS to depth {d.depth} of {result.depth}")
        t = time.perf_counter()
        check(model, CheckOptions(max_depth=d.depth, deadlock=True))
        baseline = time.perf_counter() - t
        rows.append({"depth": d.depth, "bmc_seconds": round(d.seconds, 4),
                     "bmc_cumulative": round(d.cumulative, 4),
                     "checker_bfs_seconds": round(baseline, 4),
                     "ratio_bmc_over_checker": round(d.cumulative / baseline, 2)
                     if baseline > 0 else None})
    return {"agents": agents, "budget_seconds": budget, "depth_reached": result.depth,
            "verdict": result.verdict, "failures": result.groups, "depths": rows}


def proof_row(spec: str, timeout: float, rlimit: int | None = None,
              progress: Callable[[int, int, str], None] | None = None,
              jobs: int = 1) -> dict[str, Any]:
    from coherence.errors import SpecError
    from coherence.smt.param import prove_all
    from coherence.spec.load import load_spec
    from coherence.spec.select import drop_properties

    model = load_spec(spec)
    model = drop_properties(model, [p.name for p in model.properties])
    t = time.perf_counter()
    try:
        r = prove_all(model, timeout=timeout, rlimit=rlimit, progress=progress, jobs=jobs)
        verdict, detail = r.verdict, r.reason or (f"refuted at {r.instance} agents"
                                                  if r.instance else "proved")
    except SpecError as err:
        verdict, detail = "unsupported", f"{err.location()}: {err.message}"
    return {"spec": spec, "verdict": verdict, "detail": detail, "jobs": jobs,
            "seconds": round(time.perf_counter() - t, 3)}


# ``bench prove --infer``: each bundled protocol without its hand-written auxiliary invariants
# (tests/specs/infer/), beside the proof of the bundled spec with them (the baseline)
NOAUX = SPECS.parent / "tests" / "specs" / "infer"
INFER_SPECS = [(str(NOAUX / f"{n}.coh"), str(SPECS / f"{n}.coh"))
               for n in ("german", "broadcast_invalidate_acked")] + [
    # NOTE(param-count): a counter beside a set; its baseline has the aux lines by hand
    (str(NOAUX / "sharer_counter.coh"),
     str(SPECS.parent / "tests" / "specs" / "count" / "sharer_set_and_counter.coh"))] + [
    (str(SPECS / f"{n}.coh"), str(SPECS / f"{n}.coh"))
    for n in ("msi_directory", "mesi_directory")]


def infer_row(spec: str, baseline: str | None, timeout: float,
              rlimit: int | None = None,
              progress: Callable[[str], None] | None = None,
              source: StateSource | None = None, jobs: int = 1) -> dict[str, Any]:
    """``prove --agents any --infer`` on ``spec`` (coherence monitors skipped): verdict,
    counts and seconds per phase; beside it the proof of ``baseline`` (hand-written aux).
    ``source``: mining's state source (``infer``); ``jobs``: processes of the proofs."""
    from coherence.errors import SpecError
    from coherence.smt.infer import InferOptions, infer
    from coherence.spec.load import load_spec
    from coherence.spec.select import drop_properties

    model = load_spec(spec)
    model = drop_properties(model, [p.name for p in model.properties])
    t = time.perf_counter()
    row: dict[str, Any] = {"spec": spec, "jobs": jobs}
    try:
        r = infer(model, InferOptions(timeout=timeout, final_rlimit=rlimit, jobs=jobs),
                  progress, source)
        row.update(verdict=r.proof.verdict, detail=r.missing or r.proof.reason or "",
                   stats=r.stats, invariants=r.lines)
    except SpecError as err:
        row.update(verdict="unsupported", detail=f"{err.location()}: {err.message}", stats={},
                   invariants=[])
    row["seconds"] = round(time.perf_counter() - t, 3)
    if baseline is not None:
        row["baseline"] = proof_row(baseline, timeout, rlimit, jobs=jobs)
    return row


# ``bench prove --hier``: hierarchical specs proved for every size of one index type (issue
# 20), the others fixed; beside each, the checker at fixed sizes of that type (the baseline:
# what an exhaustive check covers, one size at a time)
HIER_DIR = SPECS.parent / "tests" / "specs" / "hierarchy"
HIER_PROOFS: list[dict[str, Any]] = [
    {"spec": str(SPECS / "gpu_two_level.coh"), "params": {"gpus": 1}, "over": "sms",
     "aux": str(SPECS / "proofs" / "gpu_two_level_one_gpu.coh")},
    {"spec": str(HIER_DIR / "one_gpu_readers.coh"), "params": {"gpus": 1}, "over": "sms",
     "aux": None},
    {"spec": str(HIER_DIR / "dir_over_gpus.coh"), "params": {}, "over": "gpus", "aux": None},
    {"spec": str(HIER_DIR / "one_gpu_flush.coh"), "params": {}, "over": "sms", "aux": None},
]


def hier_proof_row(case: dict[str, Any], timeout: float, rlimit: int | None = None,
                   sizes: tuple[int, ...] = (2, 3),
                   progress: Callable[[int, int, str], None] | None = None) -> dict[str, Any]:
    """``prove --agents any --over`` of one ``HIER_PROOFS`` case (coherence monitors
    skipped), then the checker at each of ``sizes`` ids of the free index type."""
    from coherence.engines import check
    from coherence.errors import SpecError, read_source
    from coherence.results import CheckOptions
    from coherence.smt.param import prove_all
    from coherence.smt.param_hier import shape_of
    from coherence.spec.load import extend, load_spec, rebind
    from coherence.spec.select import drop_properties

    model = load_spec(case["spec"], case["params"])
    model = drop_properties(model, [p.name for p in model.properties])
    if case["aux"]:
        model = extend(model, read_source(case["aux"], "aux invariants"))
    row: dict[str, Any] = {"spec": case["spec"], "params": case["params"],
                           "over": case["over"], "aux": case["aux"]}
    t = time.perf_counter()
    try:
        r = prove_all(model, timeout=timeout, rlimit=rlimit, progress=progress,
                      over=case["over"])
        row.update(verdict=r.verdict, proved=len(r.proved),
                   detail=r.reason or (f"refuted at {r.instance} {r.unit}" if r.instance
                                       else "proved"))
    except SpecError as err:
        row.update(verdict="unsupported", proved=0, detail=f"{err.location()}: {err.message}")
    row["seconds"] = round(time.perf_counter() - t, 3)
    param = shape_of(model, case["over"]).param
    row["checker"] = []
    for n in sizes:
        t = time.perf_counter()
        result = check(rebind(model, {param: n}), CheckOptions(deadlock=False))
        row["checker"].append({param: n, "verdict": result.verdict,
                               "states": result.states,
                               "seconds": round(time.perf_counter() - t, 3)})
    return row
