"""The GPU engine (issue 18): the generated model compiled for the GPU with NVRTC and explored
one thread per frontier state. CuPy is imported only when the engine runs."""

from coherence.engines.gpu.engine import GpuEngine

__all__ = ["GpuEngine"]
