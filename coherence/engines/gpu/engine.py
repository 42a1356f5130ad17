"""``--engine gpu``: the generated model (``coherence.engines.cgen``) compiled for the GPU with
NVRTC and explored one thread per frontier state (issue 18). Failures come back as paths of
packed states, which the driver replays through the reference semantics.

NOTE(gpu-hierarchy): hierarchical specs (issue 20) need nothing of their own here:
``cgen.codegen.generate`` translates them (``chier.py``: a block per machine instance, nodes,
multicast; ``chsym.py``: the nested symmetry's ``co_canonicalize``), and the runtime only calls
the contract's functions, so the kernels run the compiled engine's successor and
canonicalisation code. tests/test_gpu_hierarchy.py holds them to the reference and compiled
engines on the host emulation; tests/test_gpu_device.py on a GPU."""

from __future__ import annotations

from coherence import ir
from coherence.engines.api import RawResult
from coherence.engines.gpu.device import CupyDevice, Device, DeviceUnavailable, HostDevice
from coherence.engines.gpu.source import kernel_source
from coherence.layout import Layout
from coherence.results import CheckOptions
from coherence.semantics import Semantics

# The store's own figures for the last search (table slots, segments, device bytes): for
# the benchmark, not part of RawResult.
LAST_STATS: dict[str, float] = {}

MEMORY_MARGIN = 256 << 20  # device memory left to CuPy, NVRTC's module and the driver


class GpuEngine:
    """``--engine gpu``. ``target="host"`` runs the same kernels on the CPU, one thread at a
    time (the tests' emulation); ``nvrtc`` (the default) on the GPU through CuPy."""

    name = "gpu"

    def __init__(self, target: str = "nvrtc") -> None:
        self.target = target

    def available(self) -> str | None:
        if self.target == "host":
            return None
        from coherence.engines.gpu.device import import_cupy
        try:
            import_cupy()
        except DeviceUnavailable as err:
            return str(err)
        return None

    def explore(self, model: ir.Model, layout: Layout, options: CheckOptions) -> RawResult:
        from coherence.engines import EngineUnavailable
        from coherence.engines.cgen.codegen import CodegenError, generate

        try:
            generated = generate(model, layout)
        except CodegenError as err:
            raise EngineUnavailable(f"the gpu engine cannot translate this model: {err}") from err
        initial = len(list(Semantics(model).initial_states()))
        source = kernel_source(generated, initial, self.target)
        device: Device
        try:
            device = HostDevice(source) if self.target == "host" else CupyDevice(source)
        except DeviceUnavailable as err:
            raise EngineUnavailable(f"the gpu engine cannot run here: {err}") from err
        free = max(0, device.free_bytes() - MEMORY_MARGIN)
        limit = min(options.memory_limit, free) if options.memory_limit else free
        from coherence.engines.gpu.search import search
        state_bytes = max(1, (layout.bits + 7) // 8)
        decode = layout.from_bytes  # little-endian: a short tail reads as zero padding
        result, stats = search(device, generated.keys, state_bytes, initial, options, limit,
                               decode)
        LAST_STATS.clear()
        LAST_STATS.update(stats)
        return result

