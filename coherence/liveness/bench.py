"""For ``coherence bench liveness``: the liveness check's time and memory against safety's.

Each measurement runs in a fresh Python process (``python -m coherence.liveness.bench``), so
its peak resident memory is its own (the peak of a process never goes down). Three runs per
case, all on the reference engine, which is where the liveness graph is built:

* safety with exact symmetry (what ``coherence check --engine reference`` does),
* safety without symmetry (the same states as the liveness graph),
* the liveness check (graph of every state and edge, then every property), without symmetry
  (NOTE(liveness-symmetry) in ``coherence.liveness.check``).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CASES = {"german": "specs/german.coh", "acked": "specs/broadcast_invalidate_acked.coh"}
DEFAULT_CASES = ("german:3", "acked:3", "german:4")
MODES = ("safety-symmetry", "safety-no-symmetry", "liveness")


def child(spec: str, agents: int, mode: str, time_limit: float) -> dict[str, Any]:
    """One measurement, in this process (called by the parent in a fresh one)."""
    from coherence.engines import check
    from coherence.results import CheckOptions
    from coherence.spec.load import load_spec
    from coherence.spec.select import drop_properties

    model = drop_properties(load_spec(spec, {"agents": agents}), ["coherent"])
    t = time.perf_counter()
    if mode == "liveness":
        from coherence.liveness import check_liveness
        live = check_liveness(model, CheckOptions(symmetry=False, time_limit=time_limit))
        states, stopped = live.states, live.stopped
        verdict = "fails" if live.failures else ("incomplete" if stopped else "holds")
        extra = {"edges": live.edges, "graph_bytes": live.graph_bytes,
                 "properties": len(model.liveness)}
    else:
        res = check(model, CheckOptions(symmetry=mode == "safety-symmetry",
                                        time_limit=time_limit, vacuity=False),
                    engine="reference")
        states, stopped, verdict, extra = res.states, res.stopped, res.verdict, {}
    return {"seconds": round(time.perf_counter() - t, 3), "states": states,
            "stopped": stopped, "verdict": verdict,
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            **extra}


def measure_case(case: str, time_limit: float) -> dict[str, Any]:
    name, _, agents = case.partition(":")
    spec = str(ROOT / CASES[name])
    runs = {}
    for mode in MODES:
        proc = subprocess.run([sys.executable, "-m", "coherence.liveness.bench", spec, agents,
                               mode, str(time_limit)], capture_output=True, text=True,
                              check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"{case} {mode} failed:\n{proc.stderr[-2000:]}")
        runs[mode] = json.loads(proc.stdout)
    live = runs["liveness"]

    def ratio(mode: str, key: str) -> float | None:
        base = runs[mode][key]
        if live["stopped"] or runs[mode]["stopped"] or not base:
            return None
        return round(live[key] / base, 2)

    return {"case": case, "spec": CASES[name], "agents": int(agents), "runs": runs,
            "time_ratio_vs_symmetry": ratio("safety-symmetry", "seconds"),
            "time_ratio_vs_no_symmetry": ratio("safety-no-symmetry", "seconds"),
            "memory_ratio_vs_symmetry": ratio("safety-symmetry", "peak_rss_bytes"),
            "memory_ratio_vs_no_symmetry": ratio("safety-no-symmetry", "peak_rss_bytes")}


if __name__ == "__main__":
    print(json.dumps(child(sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]))))
