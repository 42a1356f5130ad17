"""The ``coherence`` command line: one entry point, one verb per back end.

Exit codes (one map for every verb): 0 every property holds, 1 a property fails (a
counterexample was printed), 2 the input is wrong, 3 the search stopped early at a bound
without finding a failure (nothing was proved).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from coherence.errors import SpecError

EXIT_HOLDS, EXIT_FAILS, EXIT_BAD_INPUT, EXIT_INCOMPLETE = 0, 1, 2, 3

Verb = Callable[[argparse.Namespace], int]


def add_spec_args(p: argparse.ArgumentParser) -> None:
    """Arguments every verb that reads a spec takes."""
    p.add_argument("spec", help="the protocol spec (.coh)")
    add_param_args(p)


def add_param_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE",
                   help="override a spec parameter (repeatable)")
    p.add_argument("--agents", "-n", type=int, metavar="N",
                   help="number of agents (same as --param agents=N)")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    from coherence.commands import verb_modules
    parser = _Parser(prog="coherence", description=(
        "Model cache-coherence protocols once, as a spec; explore, prove, fuzz, draw them, "
        "and hold GPU memory against them. Exit codes: 0 holds, 1 fails, 2 bad input, "
        "3 stopped at a bound."))
    from coherence import __version__
    parser.add_argument("--version", action="version", version=f"coherence {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    sub.required = True
    for name, module in verb_modules().items():
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_args(p)
        p.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except SpecError as err:
        if getattr(args, "json", False):
            print(json.dumps({"error": {"message": err.message, "location": err.location()},
                              "exit_code": EXIT_BAD_INPUT}))
        print(err.render(), file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def emit_json(doc: dict[str, Any]) -> None:
    json.dump(doc, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
