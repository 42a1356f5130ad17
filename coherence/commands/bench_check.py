"""``coherence bench check``: an engine's throughput with symmetry on against off
(coherence/engines/symmetry_bench.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from coherence.cli import add_param_args, emit_json
from coherence.progress import add_progress_args

HELP = "an engine's states/s and the state-count ratio of symmetry reduction"

DEFAULT_SPEC = str(Path(__file__).resolve().parents[2] / "specs"
                   / "broadcast_invalidate_acked.coh")


def add_args(p: argparse.ArgumentParser) -> None:
    from coherence.commands.options import positive_int
    from coherence.engines import ENGINE_NAMES
    p.add_argument("spec", nargs="?", default=DEFAULT_SPEC,
                   help="the spec to measure (default: specs/broadcast_invalidate_acked.coh)")
    add_param_args(p)
    p.add_argument("--repeat", type=positive_int, default=1, help="runs per configuration")
    p.add_argument("--engine", choices=ENGINE_NAMES[1:], default="reference",
                   help="the engine to measure (default: reference)")
    add_progress_args(p)


def run(args: argparse.Namespace) -> int:
    from coherence.commands.common import load_model, out_console, reporter
    from coherence.engines.symmetry_bench import measure
    from coherence.results import Progress

    model = load_model(args)
    with reporter(args, "coherence bench check") as rep:
        rep.header(model.file, {p.name: p.value for p in model.params}, args.engine,
                   {"repeat": args.repeat})
        at: dict[str, Any] = {"what": "starting", "i": 0, "n": 2 * args.repeat}

        def case(what: str, i: int, n: int) -> None:
            at.update(what=f"case {i + 1} of {n}: {what}", i=i, n=n)
            rep.update(at["what"], done=i, total=n, force=True)

        def states(p: Progress) -> None:  # the engine's report, under its case
            rep.update(f"{at['what']}: {p.states:,} states, depth {p.depth}", done=at["i"],
                       total=at["n"], states=p.states, depth=p.depth)

        doc = measure(model, args.repeat, args.engine, case=case,
                      progress=states if rep.enabled else None,
                      progress_every=rep.engine_every)
        rep.finish("measured", 0, runs=2 * args.repeat)
    if args.json:
        emit_json(doc)
        return 0
    out = out_console()
    for r in doc["runs"]:
        out.print(f"symmetry {r['symmetry']:>5}: {r['states']:>10,} states  "
                  f"{r['seconds']:8.2f} s  {r['states_per_second']:>10,.0f} states/s  "
                  f"{r['bytes_per_state']:.0f} B/state")
    out.print(f"symmetry reduces states {doc['state_reduction']}x; "
              f"time off/exact {doc['time_ratio_off_over_exact']}x")
    return 0
