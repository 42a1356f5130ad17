"""The reference engine (plain Python BFS): the oracle of every other engine."""

from coherence.engines.reference.engine import ReferenceEngine

__all__ = ["ReferenceEngine"]
