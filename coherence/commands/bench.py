"""``coherence bench KIND``: performance figures, each measured against a baseline side by side.

Each kind's measurements live with its back end (``engines/symmetry_bench.py``,
``engines/bench.py``, ``testing/bench.py``, ``smt/bench.py``); the modules named here hold the
command-line side: ``HELP``, ``add_args(parser)`` and ``run(args) -> int`` like a verb.
"""

from __future__ import annotations

import argparse
from importlib import import_module

HELP = "measure performance (ratios against a baseline run side by side)"

# kind -> module; each back end registers its own benchmarks here (one line each).
BENCHES: dict[str, str] = {
    "check": "coherence.commands.bench_check",
    "engines": "coherence.engines.bench",
    "fuzz": "coherence.commands.bench_fuzz",
    "liveness": "coherence.commands.bench_liveness",
    "prove": "coherence.commands.bench_prove",
}


def add_args(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="bench_kind", metavar="KIND", parser_class=type(p))
    sub.required = True
    for kind, module_name in BENCHES.items():
        module = import_module(module_name)
        q = sub.add_parser(kind, help=module.HELP, description=module.HELP)
        module.add_args(q)
        q.set_defaults(run=module.run)


def run(args: argparse.Namespace) -> int:  # replaced by the kind's run via set_defaults
    raise SystemExit(2)
