"""C generated from the IR for one bound model: the successor, invariant and canonicalisation
functions that every compiling back end runs (issue 13's CPU runtime and issue 18's GPU
kernel). It sits beside the engines, not in one of them, so that back ends which compile it
never import each other; it imports no engine (import-linter contract in pyproject.toml).

The code is C99 that also compiles as CUDA C++ under NVRTC: every function is ``CO_FN``,
constant tables are ``CO_CONST`` and popcount is ``CO_POPCOUNT``, each defined by the
includer (``static inline`` / ``static const`` / ``__builtin_popcount`` for gcc,
``__device__`` variants for the GPU)."""
