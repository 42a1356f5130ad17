"""Planning a launch without a GPU: how many blocks fit, how many instances a grid holds, and
which thread plays which role (a random permutation, redrawn every launch).

Pure arithmetic over numpy, so the harness's placement is unit-tested on machines without a
GPU; ``harness`` feeds it the device's real attributes.
"""

from __future__ import annotations

import attrs
import numpy as np

# Hopper (sm_90) per-SM limits, the defaults of ``blocks_per_sm``
MAX_THREADS_PER_SM = 2048
MAX_BLOCKS_PER_SM = 32
REGS_PER_SM = 65536
REG_ALLOC_UNIT = 8  # registers are allocated per thread in multiples of 8 (per warp: 256)
SHARED_PER_SM = 228 * 1024


def blocks_per_sm(threads_per_block: int, regs_per_thread: int, shared_bytes: int,
                  max_threads: int = MAX_THREADS_PER_SM, regs_per_sm: int = REGS_PER_SM,
                  shared_per_sm: int = SHARED_PER_SM) -> int:
    """Blocks of the persistent kernel that are resident on one SM at once. Every block must
    be resident (roles spin on partners in other blocks), so the grid is at most this many
    blocks per SM."""
    if threads_per_block <= 0 or threads_per_block % 32:
        raise ValueError("threads per block must be a positive multiple of 32")
    regs = max(1, -(-regs_per_thread // REG_ALLOC_UNIT) * REG_ALLOC_UNIT)
    limits = [max_threads // threads_per_block, regs_per_sm // (regs * threads_per_block),
              MAX_BLOCKS_PER_SM]
    if shared_bytes:
        limits.append(shared_per_sm // shared_bytes)
    return max(0, min(limits))


WARP = 32
PLACEMENTS = ("thread", "warp")


@attrs.frozen
class Grid:
    blocks: int
    threads_per_block: int
    instances: int
    roles: int
    unit: int = 1  # threads placed together: 1 (each thread alone) or a warp

    @property
    def threads(self) -> int:
        return self.blocks * self.threads_per_block

    @property
    def stress_threads(self) -> int:
        return self.threads - self.instances * self.roles


def grid(sms: int, per_sm: int, threads_per_block: int, roles: int,
         test_fraction: float, placement: str = "thread") -> Grid:
    """The whole-GPU grid: ``test_fraction`` of its threads run instances of ``roles`` roles,
    placed a thread at a time or a warp at a time (``placement``)."""
    if not 0.0 < test_fraction <= 1.0:
        raise ValueError("test fraction must be in (0, 1]")
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}")
    if sms < 1 or per_sm < 1:
        raise ValueError("the kernel fits no block on this GPU")
    unit = WARP if placement == "warp" else 1
    if threads_per_block % unit:
        raise ValueError("threads per block must be a multiple of the warp size")
    blocks = sms * per_sm
    units = blocks * threads_per_block // unit
    instances = int(units * test_fraction) // roles * unit
    if instances < 1:
        raise ValueError("the grid holds no instance")
    return Grid(blocks, threads_per_block, instances, roles, unit)


def assign_roles(rng: np.random.Generator, g: Grid) -> tuple[np.ndarray, np.ndarray]:
    """``inst_of[thread]`` (-1: a stress thread) and ``role_of[thread]``, redrawn every launch.

    Thread placement: instance ``i``'s roles sit at random threads, in general on different
    blocks and SMs. Warp placement: random warps, ``roles`` of them per group of 32
    instances, each warp playing one role for all 32 (so a warp's threads follow the same
    code), its lanes matched to the group's instances by a random permutation per warp."""
    units = g.threads // g.unit
    groups = g.instances // g.unit
    perm = rng.permutation(units)[: groups * g.roles]
    inst_of = np.full(g.threads, -1, dtype=np.int32)
    role_of = np.zeros(g.threads, dtype=np.int32)
    group = np.repeat(np.arange(groups, dtype=np.int32), g.roles)
    role = np.tile(np.arange(g.roles, dtype=np.int32), groups)
    if g.unit == 1:
        inst_of[perm] = group
        role_of[perm] = role
        return inst_of, role_of
    lanes = np.argsort(rng.random((len(perm), g.unit)), axis=1).astype(np.int32)
    threads = perm[:, None] * g.unit + np.arange(g.unit)[None, :]
    inst_of[threads] = group[:, None] * g.unit + lanes
    role_of[threads] = role[:, None]
    return inst_of, role_of


def next_iterations(iters: int, launch_ms: float, target_s: float, left_s: float,
                    most: int = 1 << 20) -> int:
    """Iterations of the next launch: about ``target_s`` long, never past the time left."""
    per_iter_s = max(launch_ms, 1e-3) / 1000.0 / max(iters, 1)
    return int(max(1, min(most, min(target_s, max(left_s, 0.0)) / per_iter_s)))
