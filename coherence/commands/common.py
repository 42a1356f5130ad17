"""Helpers shared by verbs: loading the spec with overrides, rich consoles."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from coherence.ir import Model
from coherence.spec.load import load_spec, parse_overrides


def load_model(args: argparse.Namespace) -> Model:
    return load_spec(args.spec, parse_overrides(args.param, args.agents))


def out_console() -> Console:
    return Console(highlight=False, soft_wrap=True)


def err_console() -> Console:
    return Console(stderr=True, highlight=False)


def progress_enabled(mode: str) -> bool:
    if mode == "always":
        return True
    if mode == "never":
        return False
    return sys.stderr.isatty()


def params_text(model: Model) -> str:
    return " ".join(f"{p.name}={p.value}" for p in model.params)


def add_diagram_arg(p: argparse.ArgumentParser) -> None:
    """``--diagram DIR``: draw each counterexample as a message-sequence chart."""
    p.add_argument("--diagram", metavar="DIR",
                   help="draw each counterexample as a message-sequence chart (DOT/SVG/PNG) "
                        "into DIR")


def draw_failures(args: argparse.Namespace, model: Model, failures: list, source: str) -> list[str]:
    """Draw the failures' traces if ``--diagram`` was given; returns the files written."""
    directory = getattr(args, "diagram", None)
    if not directory or not failures:
        return []
    from coherence.diagrams.msc import draw_failures as draw  # needs the graphviz package
    return draw(directory, model, failures, source)
