"""checks.jsonl (results/device/gpu-hier/run.sh) as a Markdown table: the GPU engine's row
beside the compiled engine's for each spec, size and symmetry, and whether they agree."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(path: str) -> None:
    rows = [json.loads(line) for line in Path(path).read_text().splitlines()]
    keys = ("verdict", "states", "rules_fired", "depth", "failures")
    print("| spec | size | symmetry | verdict | states | rules fired | depth | failures "
          "(property, length) | GPU s | compiled s | same |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    by = {(r["spec"], r["size"], r["symmetry"], r["engine"]): r for r in rows}
    for (spec, size, sym, engine), g in by.items():
        if engine != "gpu":
            continue
        c = by.get((spec, size, sym, "compiled"), {})
        same = all(g.get(k) == c.get(k) for k in keys)
        fails = ", ".join(f"{p} {n}" for p, n in g["failures"]) or "-"
        if g["verdict"] is None:  # the run gave no report: its exit code
            print(f"| {spec} | {size} | {sym} | exit {g['rc']} | | | | | | "
                  f"{c.get('seconds')} | NO |")
            continue
        print(f"| {spec} | {size} | {sym} | {g['verdict']} | {g['states']:,} | "
              f"{g['rules_fired']:,} | {g['depth']} | {fails} | {g['seconds']} | "
              f"{c.get('seconds')} | {'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main(sys.argv[1])
