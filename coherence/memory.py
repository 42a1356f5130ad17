"""What this process has to work with: memory figures for reports and limits, and the CPUs
it may run on (Linux; 0 where a figure is unknown)."""

from __future__ import annotations

import os
import resource


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize()
    except OSError:  # pragma: no cover - not Linux
        return 0


def _meminfo(field: str) -> int:
    """A line of ``/proc/meminfo`` in bytes (0 where unknown)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    return 0


def total_memory_bytes() -> int:
    """The machine's memory (cgroup limits are not read: a conservative share is taken)."""
    return _meminfo("MemTotal") or 8 << 30


def available_memory_bytes() -> int:
    """What the kernel could give without swapping (0 where unknown)."""
    return _meminfo("MemAvailable")


def default_memory_limit() -> int:
    """What a search may use unless told otherwise: three quarters of the machine, so that a
    huge configuration stops with a partial result instead of being killed by the kernel."""
    return total_memory_bytes() * 3 // 4


_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """``4G``, ``512M``, ``1500000000``: bytes. ValueError with a readable message."""
    t = text.strip().lower().removesuffix("b").removesuffix("i")
    unit = t[-1] if t and t[-1] in _UNITS else ""
    number = t[: len(t) - len(unit)]
    if not number or not number.replace(".", "", 1).isdigit() or not number[0].isdigit():
        raise ValueError(f"'{text}' is not a size (e.g. 512M, 4G)")
    value = int(float(number) * _UNITS[unit])
    if value <= 0:
        raise ValueError(f"'{text}' must be more than 0 bytes")
    return value
