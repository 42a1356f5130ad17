"""Outcomes as histogram buckets: the GPU adds 1 to a bucket, the host turns buckets back into
the ``name=value`` outcomes the report reads.

An outcome is the registers (``Litmus.registers()`` order) then the final memory, each value in
``0 .. base-1`` with ``base = max_value + 1``; its bucket is ``sum(v[i] * base**i)``. One more
bucket, the last, counts outcomes with a value outside that range (a value no store of the
test writes: it would mean the harness read memory it does not own). Pure arithmetic, shared
by the CUDA and C generators and by the decoding, so all three agree by construction.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from coherence.litmus.program import Litmus

MAX_BUCKETS = 4096  # per SM-class half of a block's shared-memory histogram (16 KiB)


@attrs.frozen
class Codec:
    names: tuple[str, ...]
    base: int

    @property
    def buckets(self) -> int:
        """Buckets of real outcomes; the overflow bucket is index ``buckets``."""
        return int(self.base ** len(self.names))

    @property
    def size(self) -> int:
        return self.buckets + 1

    def encode(self, values: Sequence[int]) -> int:
        if len(values) != len(self.names):
            raise ValueError(f"{len(values)} values for {len(self.names)} names")
        if any(v < 0 or v >= self.base for v in values):
            return self.buckets
        return sum(v * self.base ** i for i, v in enumerate(values))

    def decode(self, bucket: int) -> tuple[int, ...] | None:
        """The outcome of a bucket; None for the overflow bucket."""
        if not 0 <= bucket < self.size:
            raise ValueError(f"bucket {bucket} outside 0..{self.size - 1}")
        if bucket == self.buckets:
            return None
        out = []
        for _ in self.names:
            out.append(bucket % self.base)
            bucket //= self.base
        return tuple(out)

    def text(self, bucket: int) -> str:
        values = self.decode(bucket)
        if values is None:
            return "overflow"
        return " ".join(f"{n}={v}" for n, v in zip(self.names, values, strict=True))

    def histogram(self, counts: Sequence[int]) -> tuple[dict[str, int], int]:
        """Non-zero buckets as ``{outcome text: count}``, sorted by bucket, and the overflow
        count."""
        if len(counts) != self.size:
            raise ValueError(f"{len(counts)} counts for {self.size} buckets")
        hist = {self.text(b): int(c) for b, c in enumerate(counts[: self.buckets]) if c}
        return hist, int(counts[self.buckets])


def codec(test: Litmus) -> Codec:
    c = Codec(tuple(test.outcome_names()), test.max_value() + 1)
    if c.size > MAX_BUCKETS:
        raise ValueError(f"{test.name}: {c.size} outcome buckets, more than the harness's "
                         f"{MAX_BUCKETS}")
    return c
