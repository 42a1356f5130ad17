"""The distributed engine (issue 21): states hash-partitioned over Ray actors, each a C hash
set built from the generated model (``coherence.engines.cgen``), level-synchronous BFS.
Ray is imported only when a search runs (extra ``[distributed]``)."""

from coherence.engines.distributed.engine import DistributedEngine

__all__ = ["DistributedEngine"]
