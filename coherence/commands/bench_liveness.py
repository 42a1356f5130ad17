"""``coherence bench liveness``: the liveness check's time and memory against the safety
check's (coherence/liveness/bench.py)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from coherence.cli import emit_json

HELP = "liveness check's time and memory against safety's (German, acked scheme)"


def add_args(p: argparse.ArgumentParser) -> None:
    from coherence.liveness.bench import CASES, DEFAULT_CASES, ENGINES
    p.add_argument("cases", nargs="*", default=list(DEFAULT_CASES), metavar="CASE",
                   help=f"NAME:AGENTS with NAME one of {', '.join(CASES)} (default: "
                        f"{' '.join(DEFAULT_CASES)})")
    p.add_argument("--time-limit", type=float, default=600.0, metavar="SECONDS",
                   help="stop each run after this long (its ratio is then not given; "
                        "default: 600)")
    p.add_argument("--engine", choices=ENGINES, default="compiled",
                   help="the engine of every run (default: compiled, as coherence check "
                        "uses it where a C compiler exists)")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")


def run(args: argparse.Namespace) -> int:
    from coherence.commands.common import out_console
    from coherence.errors import NO_SPAN, SpecError
    from coherence.liveness.bench import CASES, measure_case

    for case in args.cases:
        name, _, agents = case.partition(":")
        if name not in CASES or not agents.isdigit() or not 1 <= int(agents) <= 8:
            raise SpecError(f"bad case {case!r}: expected NAME:AGENTS, NAME one of "
                            f"{', '.join(CASES)}, AGENTS 1..8", NO_SPAN)
    started = time.perf_counter()
    rows: list[dict[str, Any]] = [measure_case(c, args.time_limit, args.engine)
                                  for c in args.cases]
    doc = {"schema": 1, "tool": "coherence bench liveness", "time_limit": args.time_limit,
           "engine": args.engine, "results": rows,
           "seconds": round(time.perf_counter() - started, 1)}
    if args.json:
        emit_json(doc)
        return 0
    out = out_console()
    for r in rows:
        out.print(f"[bold]{r['case']}[/] ({r['spec']}, {r['agents']} agents, engine "
                  f"{r['engine']})")
        for mode, m in r["runs"].items():
            stop = f"  (stopped: {m['stopped']})" if m["stopped"] else ""
            out.print(f"  {mode:20} {m['states']:>10,} states {m['seconds']:9.2f} s "
                      f"{m['peak_rss_bytes'] / 2**20:8.0f} MiB  {m['verdict']}{stop}",
                      markup=False)
        out.print(f"  liveness / default safety check: time {r['time_ratio_vs_symmetry']}x, "
                  f"memory {r['memory_ratio_vs_symmetry']}x; / safety without symmetry: "
                  f"time {r['time_ratio_vs_no_symmetry']}x, memory "
                  f"{r['memory_ratio_vs_no_symmetry']}x", markup=False)
        out.print(f"  check --liveness / check: time {r['check_time_ratio']}x, memory "
                  f"{r['check_memory_ratio']}x", markup=False)
    return 0
