"""The hardware side: litmus programs compiled to CUDA and run on GPUs (CuPy, extra ``[gpu]``),
the SASS order check, the memory benchmarks, and reports rendered from saved results.

NOTE(optional-deps): only ``harness`` and ``bench`` import cupy, and only inside functions;
``cuda_gen``, ``sass`` and ``report`` run on machines without a GPU (and are tested there).
"""
