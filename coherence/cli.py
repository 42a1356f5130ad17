"""The ``coherence`` command line: one entry point, one verb per back end.

Exit codes (one map for every verb): 0 every property holds, 1 a property fails (a
counterexample was printed), 2 the input is wrong, 3 the search stopped early at a bound
without finding a failure (nothing was proved).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import sys
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from coherence.errors import NO_SPAN, SpecError

EXIT_HOLDS, EXIT_FAILS, EXIT_BAD_INPUT, EXIT_INCOMPLETE = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # interrupted outside a search (which gives a partial result, 3)
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a reader that closed the pipe

Verb = Callable[[argparse.Namespace], int]


def add_spec_args(p: argparse.ArgumentParser) -> None:
    """Arguments every verb that reads a spec takes."""
    p.add_argument("spec", help="the protocol spec (.coh)")
    add_param_args(p)


def add_param_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--param", "-p", action="append", default=[], metavar="NAME=VALUE",
                   help="override a spec parameter (repeatable)")
    from coherence.commands.options import positive_int
    p.add_argument("--agents", "-n", type=positive_int, metavar="N",
                   help="number of agents (same as --param agents=N)")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")


# Whether the command line being parsed asked for --json (argparse errors are then printed as a
# JSON error document too); set by main for the duration of parse_args.
_json_errors: ContextVar[bool] = ContextVar("json_errors", default=False)


def error_document(message: str, location: str) -> dict[str, Any]:
    """The one JSON shape of an error, for bad input and bad command lines alike."""
    return {"error": {"message": message, "location": location}, "exit_code": EXIT_BAD_INPUT}


# Whether it asked for --progress jsonl: stderr is then a tool's stream, JSON records only.
_jsonl_errors: ContextVar[bool] = ContextVar("jsonl_errors", default=False)


def _asks_for_jsonl(argv: Sequence[str]) -> bool:
    return "--progress=jsonl" in argv or any(
        a == "--progress" and b == "jsonl" for a, b in itertools.pairwise(argv))


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        if _json_errors.get():
            print(json.dumps(error_document(f"{self.prog}: {message}", NO_SPAN.file)))
        if _jsonl_errors.get():
            from coherence.progress import write_error_summary
            write_error_summary(self.prog, ValueError(f"{self.prog}: {message}"), EXIT_BAD_INPUT)
            raise SystemExit(EXIT_BAD_INPUT)
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
    """Run one command line and return its exit code, for every outcome: a bad command line
    (argparse's usage error) is 2, ``--help`` and ``--version`` are 0."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser()
        token = _json_errors.set("--json" in argv)
        jsonl_token = _jsonl_errors.set(_asks_for_jsonl(argv))
        try:
            args = parser.parse_args(argv)
        except SystemExit as e:  # argparse exits: usage errors, --help, --version
            return e.code if isinstance(e.code, int) else EXIT_BAD_INPUT if e.code else 0
        finally:
            _json_errors.reset(token)
            _jsonl_errors.reset(jsonl_token)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    try:
        return int(args.run(args))
    except BrokenPipeError:
        return _reader_went_away()
    except SpecError as err:
        if getattr(args, "json", False):
            print(json.dumps(error_document(err.message, err.location())))
        _attach_source(err)
        if getattr(args, "progress", None) == "jsonl":  # stderr is a tool's stream: JSON only
            from coherence.progress import write_error_summary
            write_error_summary(f"coherence {args.verb}", err, EXIT_BAD_INPUT)
        else:
            print(err.render(), file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        # NOTE(partial-results): a search turns SIGINT into a partial result itself; this is
        # an interrupt before or after one (loading, compiling, drawing): nothing to report
        if getattr(args, "json", False):
            print(json.dumps({"error": {"message": "interrupted", "location": None},
                              "exit_code": EXIT_INTERRUPTED}))
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _attach_source(err: SpecError) -> None:
    """A back end that refuses a construct knows its span but not the text: read the line
    from the file, so every located error shows its line and caret."""
    if err.source is not None or err.span.line <= 0:
        return
    with contextlib.suppress(OSError, UnicodeDecodeError, ValueError):
        err.source = Path(err.span.file).read_text(encoding="utf-8")


def _reader_went_away() -> int:
    """``coherence … | head`` closes the pipe early: that is the reader's choice, not an error
    worth a traceback; stdout is pointed at /dev/null so the interpreter's final flush stays
    quiet too."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout without a descriptor (a test's)
        pass
    return EXIT_BROKEN_PIPE


def emit_json(doc: dict[str, Any]) -> None:
    json.dump(doc, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
