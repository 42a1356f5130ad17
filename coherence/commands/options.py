"""argparse ``type=`` functions for every numeric option and every output path.

They run while the command line is parsed, so a bad value is a clean usage error (exit 2, a JSON
error document under ``--json``) before any spec is read or any long work starts, and an output
that cannot be written is refused before hours of search are spent on a result that would be
lost. Numbers are plain decimal digits with an optional sign: ``1_0``, ``0x10``, `` 10`` and
non-ASCII digits, all of which Python's ``int`` accepts, are refused.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable
from pathlib import Path

_DECIMAL = re.compile(r"[+-]?[0-9]{1,18}")
_FLOAT = re.compile(r"[+-]?([0-9]{1,18}(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]{1,3})?")


def parse_decimal(text: str) -> int | None:
    """``text`` as an integer if it is plain decimal digits (at most 18, optional sign)."""
    if _DECIMAL.fullmatch(text) is None:
        return None
    return int(text)


def int_at_least(lo: int, hi: int | None = None) -> Callable[[str], int]:
    """An argparse type: a plain decimal integer in ``lo..hi``."""
    def convert(text: str) -> int:
        value = parse_decimal(text)
        if value is None:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer")
        if value < lo:
            raise argparse.ArgumentTypeError(f"{text!r} must be at least {lo}")
        if hi is not None and value > hi:
            raise argparse.ArgumentTypeError(f"{text!r} must be at most {hi}")
        return value
    convert.__name__ = "integer"  # argparse names the type in its messages
    return convert


positive_int = int_at_least(1)
nonnegative_int = int_at_least(0)
any_int = int_at_least(-(10**18))


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds, more than 0."""
    if _FLOAT.fullmatch(text) is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds")
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be more than 0")
    return value


positive_seconds.__name__ = "seconds"


def agents_or_any(text: str) -> int | str:
    """An argparse type: a number of agents (at least 1), or ``any``."""
    return "any" if text == "any" else positive_int(text)


agents_or_any.__name__ = "agents"


def output_file(text: str) -> str:
    """An argparse type: a file that can be written (its folder exists, it is not a folder)."""
    if not text:
        raise argparse.ArgumentTypeError("empty file name")
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a directory, not a file")
    folder = path.parent
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r}: no such directory {str(folder)!r}")
    if not os.access(path if path.exists() else folder, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text!r}: permission denied")
    return text


output_file.__name__ = "output file"


def output_dir(text: str) -> str:
    """An argparse type: a folder to write into, existing or creatable (every existing part of
    the path is a folder that can be written)."""
    if not text:
        raise argparse.ArgumentTypeError("empty directory name")
    path = Path(text)
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r}: {str(probe)!r} is a file, not a directory")
    if probe.exists() and not os.access(probe, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text!r}: permission denied")
    return text


output_dir.__name__ = "output directory"


def add_jobs_arg(p: argparse.ArgumentParser) -> None:
    """``--jobs N``: the processes a proof for every N settles its obligations in."""
    p.add_argument("--jobs", "-j", type=int_at_least(1), metavar="N",
                   help="with --agents any: settle the proof obligations in N processes "
                        "(forked; Linux only; default: every CPU this process may use). "
                        "The verdict is read in the order one process would meet them")


def jobs_of(args: argparse.Namespace) -> int:
    from coherence.memory import usable_cpus
    return args.jobs if args.jobs is not None else usable_cpus()
