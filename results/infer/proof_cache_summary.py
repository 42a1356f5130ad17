"""Where a proof's time went, from its --proof-cache file (NOTE(proof-cache)): per action, the
obligations recorded, their seconds in all, the slowest; then the slowest obligations. A
measurement, not part of the tool.

    python3 results/infer/proof_cache_summary.py results/infer/msi_directory.proof-cache
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("cache")
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    records = []
    with open(args.cache, encoding="utf-8") as f:
        for line in f:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if "what" in record and record.get("v") == 4:  # not a hypothesis set, not format 3
                records.append(record)
    by: dict[str, list[float]] = defaultdict(list)
    for r in records:
        by[r["what"].split(" (then")[0]].append(r["seconds"])
    print(f"{len(records)} obligations, {sum(r['seconds'] for r in records):.0f} s in all")
    print("| action | obligations | seconds | slowest s |")
    print("|---|---|---|---|")
    for what, secs in by.items():
        print(f"| {what} | {len(secs)} | {sum(secs):.0f} | {max(secs):.1f} |")
    print()
    for r in sorted(records, key=lambda r: -r["seconds"])[:args.top]:
        print(f"{r['seconds']:8.1f}  {r['goal']}  {r['what']}")


if __name__ == "__main__":
    main()
