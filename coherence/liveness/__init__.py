"""Liveness: AG EF and leads-to under weak fairness, on the explicit state graph."""

from coherence.liveness.check import SYMMETRY_NOTE, LivenessResult, check_liveness

__all__ = ["SYMMETRY_NOTE", "LivenessResult", "check_liveness"]
