"""For ``coherence bench check``: an engine's throughput with symmetry on against off."""

from __future__ import annotations

import time
from typing import Any

from coherence import ir


def measure(model: ir.Model, repeat: int = 1, engine: str = "reference") -> dict[str, Any]:
    """The best of ``repeat`` runs with symmetry off and with exact symmetry, and the ratios."""
    from coherence.engines import check
    from coherence.results import CheckOptions

    rows: list[dict[str, Any]] = []
    for symmetry in (False, True):
        best = None
        for _ in range(repeat):
            t = time.perf_counter()
            result = check(model, CheckOptions(symmetry=symmetry), engine=engine)
            elapsed = time.perf_counter() - t
            if best is None or elapsed < best[0]:
                best = (elapsed, result)
        assert best is not None
        elapsed, result = best
        rows.append({"symmetry": "exact" if symmetry else "off", "states": result.states,
                     "seconds": round(elapsed, 4),
                     "states_per_second": round(result.states / elapsed, 1),
                     "bytes_per_state": round(result.bytes_per_state, 1),
                     "peak_memory_bytes": result.peak_memory_bytes})
    off, on = rows
    return {"tool": "coherence bench check", "engine": engine, "spec": model.file,
            "params": {p.name: p.value for p in model.params}, "runs": rows,
            "state_reduction": round(off["states"] / on["states"], 3),
            "time_ratio_off_over_exact": round(off["seconds"] / on["seconds"], 3)}
