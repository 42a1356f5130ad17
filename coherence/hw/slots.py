"""Where an instance's locations live in each iteration: one hash, written once in C and
compiled into both the CUDA kernels and the host C helper, with a Python twin for the tests.

Instance ``i`` owns ``nl * spread`` slots of ``LOC_STRIDE`` words (128 bytes each). In
iteration ``it`` location ``k`` sits at slot ``(a + k*d) mod (nl*spread)`` of that region, with
``a`` and ``d in 1..spread`` drawn from the hash of (seed, instance, iteration): distinct slots
for distinct locations (``k*d < nl*spread``), at a distance and an order that change every
iteration.
"""

from __future__ import annotations

LOC_STRIDE = 32  # 32-bit words: one 128-byte line per slot
MASK = 0xFFFFFFFF

# CO_FN is defined by the including source: `__device__ __forceinline__` in CUDA,
# `static inline` in C.
SLOT_C = r"""
CO_FN unsigned int co_mix(unsigned int x) {
  x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16;
  return x;
}
CO_FN unsigned int co_slot(unsigned int seed, unsigned int inst, unsigned int it, unsigned int k,
                           unsigned int spread, unsigned int nl) {
  unsigned int h = co_mix(seed ^ co_mix(inst * 0x9e3779b9u ^ co_mix(it + 0x632be5abu)));
  unsigned int s = nl * spread;
  unsigned int a = h % s;
  unsigned int d = 1u + co_mix(h) % spread;
  return inst * s + (a + k * d) % s;
}
"""


def mix(x: int) -> int:
    x &= MASK
    x ^= x >> 16
    x = (x * 0x7FEB352D) & MASK
    x ^= x >> 15
    x = (x * 0x846CA68B) & MASK
    x ^= x >> 16
    return x


def slot(seed: int, inst: int, it: int, k: int, spread: int, nl: int) -> int:
    """The Python twin of ``co_slot`` (unsigned 32-bit arithmetic)."""
    h = mix((seed & MASK) ^ mix(((inst * 0x9E3779B9) & MASK) ^ mix(it + 0x632BE5AB)))
    s = nl * spread
    a = h % s
    d = 1 + mix(h) % spread
    return (inst * s + (a + k * d) % s) & MASK
