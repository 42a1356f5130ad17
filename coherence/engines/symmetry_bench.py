"""For ``coherence bench check``: an engine's throughput with symmetry on against off."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from coherence import ir
from coherence.results import Progress


def measure(model: ir.Model, repeat: int = 1, engine: str = "reference",
            case: Callable[[str, int, int], None] | None = None,
            progress: Callable[[Progress], None] | None = None,
            progress_every: float = 0.5) -> dict[str, Any]:
    """The best of ``repeat`` runs with symmetry off and with exact symmetry, and the ratios.
    ``case(what, i, n)`` is told as each of the ``n`` runs starts; ``progress`` is the
    engine's callback, every ``progress_every`` s (at 0.5 s it does not weigh on the
    figures)."""
    from coherence.engines import check
    from coherence.results import CheckOptions

    rows: list[dict[str, Any]] = []
    for symmetry in (False, True):
        best = None
        for k in range(repeat):
            if case is not None:
                case(f"symmetry {'exact' if symmetry else 'off'}, run {k + 1} of {repeat}",
                     symmetry * repeat + k, 2 * repeat)
            t = time.perf_counter()
            result = check(model, CheckOptions(symmetry=symmetry, progress=progress,
                                               progress_every=progress_every), engine=engine)
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
