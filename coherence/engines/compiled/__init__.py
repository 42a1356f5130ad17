"""The compiled engine (issue 13): each model generated as C (``coherence.engines.cgen``)
and explored by a fixed multi-threaded C runtime (``runtime/``), built with the system
compiler (``build``)."""

from coherence.engines.compiled.build import BuildError, CompilerNotFound
from coherence.engines.compiled.engine import CompiledEngine

__all__ = ["BuildError", "CompiledEngine", "CompilerNotFound"]
