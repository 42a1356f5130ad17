"""``coherence bench check``: reference checker throughput, symmetry on against off."""

from __future__ import annotations

import argparse
import time

from coherence.cli import add_param_args, emit_json

HELP = "reference checker: states/s and the state-count ratio of symmetry reduction"


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", nargs="?", default="specs/broadcast_invalidate_acked.coh")
    add_param_args(p)
    p.add_argument("--repeat", type=int, default=1, help="runs per configuration")


def run(args: argparse.Namespace) -> int:
    from coherence.commands.common import load_model, out_console
    from coherence.engines import check
    from coherence.results import CheckOptions

    model = load_model(args)
    rows = []
    for symmetry in (False, True):
        best = None
        for _ in range(args.repeat):
            t = time.perf_counter()
            result = check(model, CheckOptions(symmetry=symmetry))
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
    doc = {"tool": "coherence bench check", "spec": model.file,
           "params": {p.name: p.value for p in model.params}, "runs": rows,
           "state_reduction": round(off["states"] / on["states"], 3),
           "time_ratio_off_over_exact": round(off["seconds"] / on["seconds"], 3)}
    if args.json:
        emit_json(doc)
    else:
        out = out_console()
        for r in rows:
            out.print(f"symmetry {r['symmetry']:>5}: {r['states']:>10,} states  "
                      f"{r['seconds']:8.2f} s  {r['states_per_second']:>10,.0f} states/s  "
                      f"{r['bytes_per_state']:.0f} B/state")
        out.print(f"symmetry reduces states {doc['state_reduction']}x; "
                  f"time off/exact {doc['time_ratio_off_over_exact']}x")
    return 0
