"""Process memory figures for reports (Linux; 0 where unknown)."""

from __future__ import annotations

import resource


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def rss_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize()
    except OSError:  # pragma: no cover - not Linux
        return 0
