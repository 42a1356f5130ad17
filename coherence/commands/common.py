"""Helpers shared by verbs: loading the spec with overrides; the consoles, re-exported from
``coherence.console`` (where back ends import them from)."""

from __future__ import annotations

import argparse
import sys

from coherence.console import err_console, out_console, params_text
from coherence.ir import Model
from coherence.progress import add_progress_args, reporter
from coherence.spec.load import load_spec, parse_overrides

__all__ = ["add_diagram_arg", "add_progress_args", "draw_failures", "err_console",
           "load_model", "out_console", "params_text", "reporter"]


def load_model(args: argparse.Namespace) -> Model:
    return load_spec(args.spec, parse_overrides(args.param, args.agents))




def add_diagram_arg(p: argparse.ArgumentParser) -> None:
    """``--diagram DIR``: draw each counterexample as a message-sequence chart."""
    from coherence.commands.options import output_dir
    p.add_argument("--diagram", type=output_dir, metavar="DIR",
                   help="draw each counterexample as a message-sequence chart (DOT/SVG/PNG) "
                        "into DIR")


def draw_failures(args: argparse.Namespace, model: Model, failures: list, source: str) -> list[str]:
    """Draw the failures' traces if ``--diagram`` was given; returns the files written."""
    directory = getattr(args, "diagram", None)
    if not directory or not failures:
        return []
    from coherence.diagrams.msc import draw_failures as draw  # needs the graphviz package
    from coherence.diagrams.render import dot_available
    if dot_available():
        return draw(directory, model, failures, source)
    # the verdict and its counterexamples matter more than the pictures: DOT files only
    print("note: Graphviz's `dot` is not installed (Debian: apt-get install graphviz): "
          "--diagram wrote DOT files only", file=sys.stderr)
    return draw(directory, model, failures, source, ("dot",))
