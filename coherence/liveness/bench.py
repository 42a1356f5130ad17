"""For ``coherence bench liveness``: the liveness check's time and memory against safety's.

Each measurement runs in a fresh Python process (``python -m coherence.liveness.bench``), so
its peak resident memory is its own (the peak of a process never goes down). Four runs per
case, on one engine (the compiled engine by default, as ``coherence check`` uses it):

* ``safety-symmetry``: the default safety check (``coherence check SPEC``: exact symmetry,
  vacuity witnesses), the baseline of the ratios;
* ``safety-no-symmetry``: safety over every state (the states the liveness graph holds);
* ``liveness``: the liveness check alone (graph of every state and edge without symmetry,
  then every property, one instance per orbit of its agent binders: NOTE(liveness-symmetry)
  in ``coherence.liveness.check``);
* ``check-liveness``: the whole ``coherence check SPEC --liveness`` (safety, then liveness).

With the compiled engine each process first builds its libraries (a search bounded to one
state), so the C compiler's time, paid once per model and then cached, is not measured.
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
MODES = ("safety-symmetry", "safety-no-symmetry", "liveness", "check-liveness")
ENGINES = ("compiled", "reference")


def _once(model: Any, mode: str, engine: str, options: Any) -> dict[str, Any]:
    import attrs

    from coherence.engines import check
    from coherence.liveness import check_liveness

    if mode == "liveness":
        builder = None
        if engine == "compiled":
            from coherence.engines.compiled.graph import build
            builder = build
        live = check_liveness(model, options, builder)
        verdict = "fails" if live.failures else ("incomplete" if live.stopped else "holds")
        return {"states": live.states, "stopped": live.stopped, "verdict": verdict,
                "edges": live.edges, "graph_bytes": live.graph_bytes,
                "properties": len(model.liveness), "graph_engine": live.engine,
                "instances_skipped": live.skipped}
    opts = attrs.evolve(options, symmetry=mode != "safety-no-symmetry",
                        liveness=mode == "check-liveness")
    res = check(model, opts, engine=engine)
    return {"states": res.states, "stopped": res.stopped, "verdict": res.verdict}


def child(spec: str, agents: int, mode: str, time_limit: float,
          engine: str = "compiled") -> dict[str, Any]:
    """One measurement, in this process (called by the parent in a fresh one)."""
    import attrs

    from coherence.results import CheckOptions
    from coherence.spec.load import load_spec
    from coherence.spec.select import drop_properties

    model = drop_properties(load_spec(spec, {"agents": agents}), ["coherent"])
    options = CheckOptions(time_limit=time_limit)
    if engine == "compiled":  # build (or find cached) the libraries, unmeasured
        _once(model, mode, engine, attrs.evolve(options, max_states=1))
    t = time.perf_counter()
    out = _once(model, mode, engine, options)
    return {"seconds": round(time.perf_counter() - t, 3), **out,
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def measure_case(case: str, time_limit: float, engine: str = "compiled") -> dict[str, Any]:
    name, _, agents = case.partition(":")
    spec = str(ROOT / CASES[name])
    runs = {}
    for mode in MODES:
        proc = subprocess.run([sys.executable, "-m", "coherence.liveness.bench", spec, agents,
                               mode, str(time_limit), engine], capture_output=True, text=True,
                              check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"{case} {mode} failed:\n{proc.stderr[-2000:]}")
        runs[mode] = json.loads(proc.stdout)

    def ratio(of: str, base: str, key: str) -> float | None:
        top, bottom = runs[of], runs[base]
        if top["stopped"] or bottom["stopped"] or not bottom[key]:
            return None
        return round(top[key] / bottom[key], 2)

    return {"case": case, "spec": CASES[name], "agents": int(agents), "engine": engine,
            "runs": runs,
            "time_ratio_vs_symmetry": ratio("liveness", "safety-symmetry", "seconds"),
            "time_ratio_vs_no_symmetry": ratio("liveness", "safety-no-symmetry", "seconds"),
            "memory_ratio_vs_symmetry": ratio("liveness", "safety-symmetry", "peak_rss_bytes"),
            "memory_ratio_vs_no_symmetry": ratio("liveness", "safety-no-symmetry",
                                                 "peak_rss_bytes"),
            "check_time_ratio": ratio("check-liveness", "safety-symmetry", "seconds"),
            "check_memory_ratio": ratio("check-liveness", "safety-symmetry",
                                        "peak_rss_bytes")}


if __name__ == "__main__":
    print(json.dumps(child(sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]),
                           sys.argv[5] if len(sys.argv) > 5 else "compiled")))
