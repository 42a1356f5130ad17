"""Exploration engines behind one interface, and the one way to run them.

``check(model, options, engine=...)`` runs an engine through the driver (symmetry audit,
fallback, replayed traces, verdict). Engines are imported only when chosen, so optional
toolchains (a C compiler, CuPy, Ray) are needed only by the engine that uses them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coherence import ir
from coherence.engines.api import Engine
from coherence.results import CheckOptions, CheckResult

ENGINE_NAMES = ("auto", "reference", "compiled", "gpu", "distributed")


class EngineUnavailable(Exception):
    """The chosen engine cannot run here (the message says why, in one line)."""


def get_engine(name: str, settings: Mapping[str, Any] | None = None) -> Engine:
    """The engine called ``name``; ``settings`` are its own options (the distributed engine's
    workers, address, checkpoint, resume)."""
    if name == "reference":
        from coherence.engines.reference import ReferenceEngine
        return ReferenceEngine()
    if name == "compiled":
        try:
            from coherence.engines.compiled import CompiledEngine
        except ImportError as err:  # pragma: no cover - a broken installation
            raise EngineUnavailable(f"the compiled engine cannot be loaded: {err}") from err
        return CompiledEngine()
    if name == "gpu":  # CuPy is imported only when the engine runs
        from coherence.engines.gpu import GpuEngine
        return GpuEngine()
    if name == "distributed":  # Ray is imported only when the engine runs
        from coherence.engines.distributed import DistributedEngine
        return DistributedEngine(**(settings or {}))
    raise EngineUnavailable(f"unknown engine '{name}' (choose from {', '.join(ENGINE_NAMES)})")


def resolve_engine(name: str, settings: Mapping[str, Any] | None = None
                   ) -> tuple[Engine, list[str]]:
    """The engine to run for ``name``, and notes for the report (``auto`` picks the fastest
    that can run here)."""
    if name == "auto":
        try:
            compiled = get_engine("compiled")
        except EngineUnavailable as err:
            return get_engine("reference"), [f"reference engine used: {err}"]
        reason = compiled.available()
        if reason is None:
            return compiled, []
        return get_engine("reference"), [f"reference engine used: {reason}"]
    engine = get_engine(name, settings)
    reason = engine.available()
    if reason is not None:
        raise EngineUnavailable(f"the {name} engine cannot run here: {reason}")
    return engine, []


def check(model: ir.Model, options: CheckOptions | None = None,
          engine: str = "reference", settings: Mapping[str, Any] | None = None) -> CheckResult:
    from coherence.engines.driver import run
    chosen, notes = resolve_engine(engine, settings)
    try:
        result = run(chosen, model, options)
    except EngineUnavailable as err:
        if engine != "auto" or chosen.name == "reference":
            raise
        # e.g. a construct the code generator does not translate: the oracle takes it
        result = run(get_engine("reference"), model, options)
        notes.append(f"reference engine used: {err}")
    result.notes[:0] = notes
    return result


__all__ = ["ENGINE_NAMES", "Engine", "EngineUnavailable", "check", "get_engine",
           "resolve_engine"]
