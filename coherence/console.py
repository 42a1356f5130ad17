"""Terminal output shared by the verbs and the back ends' reports (``smt.report``), so that a
back end prints through the same consoles without importing the CLI (``commands``)."""

from __future__ import annotations

from rich.console import Console

from coherence.ir import Model


def out_console() -> Console:
    return Console(highlight=False, soft_wrap=True)


def err_console() -> Console:
    return Console(stderr=True, highlight=False)


def params_text(model: Model) -> str:
    """The parameter values a model is bound to, as ``name=value`` words."""
    return " ".join(f"{p.name}={p.value}" for p in model.params)
