"""One module per verb, each with ``HELP``, ``add_args(parser)`` and ``run(args) -> int``.

Verb modules import their back end inside ``run``, so ``coherence --help`` stays fast and the
core runs without the optional dependencies of other verbs.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

VERBS = ["check", "bench", "litmus", "prove", "diagram", "hw", "fuzz", "export", "mutants"]


def verb_modules() -> dict[str, ModuleType]:
    return {name: import_module(f"coherence.commands.{name}") for name in VERBS}
