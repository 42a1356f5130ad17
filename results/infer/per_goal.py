"""The obligations a proof cache leaves, one forked process per obligation, from a queue.

``prove --jobs`` and ``per_action.py`` give a process a whole action, and the action's
obligations are settled in turn: with MSI's last 166 obligations left in 26 actions, two
actions held 34 and 31 of them, and 14 of 16 processes sat idle behind them (session 31's
second device run settled 184). Here each left obligation is one work item: a process
builds its action's queries, passes over every other one (``reuse``, as ``per_action.py
--after`` does) and settles that one with the final proof's own tries (``param._share``),
for at most ``--item-seconds``; the proof cache records what it settles. A measurement and a
way to fill a cache, not part of the tool: the tool's proof resumes from the cache and
re-checks nothing it records under the same formula digest.

    PYTHONHASHSEED=0 python3 results/infer/cache_left.py specs/msi_directory.coh \\
        results/infer/msi_directory_s30.aux CACHE --goals LEFT.jsonl
    PYTHONHASHSEED=0 python3 results/infer/per_goal.py specs/msi_directory.coh \\
        results/infer/msi_directory_s30.aux CACHE LEFT.jsonl --skip coherent \\
        --processes 16 --item-seconds 240 --seconds 540
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import time
from pathlib import Path
from typing import Any

from coherence.smt import param
from coherence.smt.forked import Tally
from coherence.smt.proof_cache import ProofCache
from coherence.spec.load import extend, load_spec
from coherence.spec.select import drop_properties


def _items(left_path: str) -> list[tuple[int, int, str]]:
    """(group, index among the group's left obligations, goal), the actions taken in turn so
    that every action has one item in flight before any has two."""
    rows = [json.loads(line) for line in Path(left_path).read_text().splitlines() if line]
    by_group = [[(int(r["group"]), i, goal) for i, goal in enumerate(r["goals"])] for r in rows]
    out: list[tuple[int, int, str]] = []
    depth = max((len(b) for b in by_group), default=0)
    for k in range(depth):
        out.extend(b[k] for b in by_group if k < len(b))
    return out


def _settle_one(model: Any, ob: param.Obligations, cache_path: str, snapshot: str, g: int,
                i: int, seconds: float) -> dict[str, Any]:
    """The ``i``-th obligation of group ``g`` that ``snapshot`` (the cache as the run began:
    the indices stay put while other items record) leaves, settled into ``cache_path``."""
    t0 = time.perf_counter()
    cache = ProofCache(cache_path)
    before = ProofCache(snapshot)
    qs = ob.group(g)
    left = [q for q in qs if not q.unchanged and not before.look(q.assertions, q.anchor).found]
    if i >= len(left):
        return {"group": g, "index": i, "outcome": "settled before"}
    target = left[i]
    if cache.look(target.assertions, target.anchor).found:
        return {"group": g, "index": i, "outcome": "settled meanwhile"}
    reuse = frozenset(q.key for q in qs if q.key != target.key)
    budget = param.Budget(seconds, None, time.perf_counter())
    outs = [o for o in param._share(model, ob, [g], budget, reuse, 0, Tally(1), None, cache)
            if o.key == target.key]
    o = outs[0]
    row: dict[str, Any] = {"group": g, "index": i, "action": target.what, "goal": o.goal,
                           "outcome": o.kind, "s": round(time.perf_counter() - t0, 1)}
    if o.kind != "settled":
        row["message"] = o.message[:300]
    if o.kind == "cti":
        row["pre"] = getattr(o.cti, "pre", None)
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("aux")
    ap.add_argument("cache")
    ap.add_argument("left", help="cache_left.py --goals output")
    ap.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--item-seconds", type=float, default=240.0)
    ap.add_argument("--seconds", type=float, default=540.0, help="no item starts after this")
    ap.add_argument("--skip", action="append", default=[])
    ap.add_argument("--after", metavar="JSONL", action="append", default=[],
                    help="an earlier run's output: the items it asked are not asked again")
    ap.add_argument("--goals-matching", metavar="REGEX", default="",
                    help="only the obligations whose goal matches (re.search)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    model = extend(drop_properties(load_spec(args.spec), args.skip),
                   Path(args.aux).read_text(encoding="utf-8"))
    ob = param.Obligations(model)
    snapshot = f"{args.cache}.snapshot"
    shutil.copyfile(args.cache, snapshot)
    asked = {(r["group"], r["index"]) for path in args.after
             for r in map(json.loads, Path(path).read_text().splitlines()[1:])}
    items = [it for it in _items(args.left)
             if it[:2] not in asked and re.search(args.goals_matching, it[2])]
    print(json.dumps({"built_s": round(time.perf_counter() - t0, 1), "items": len(items)}),
          flush=True)
    running: dict[int, tuple[int, int, float]] = {}  # pid -> (group, index, started)
    while items or running:
        while items and len(running) < args.processes \
                and time.perf_counter() - t0 < args.seconds:
            g, i, _goal = items.pop(0)
            pid = os.fork()
            if pid == 0:
                try:
                    row = _settle_one(model, ob, args.cache, snapshot, g, i,
                                      args.item_seconds)
                except BaseException as e:  # reported; the queue goes on
                    row = {"group": g, "index": i, "outcome": "error", "message": repr(e)}
                print(json.dumps(row), flush=True)
                os._exit(0)
            running[pid] = (g, i, time.perf_counter())
        if not items or time.perf_counter() - t0 >= args.seconds:
            items = []
        # a Z3 check that ignores its limits is killed 60 s past the item's cap
        for pid, (g, i, began) in list(running.items()):
            if time.perf_counter() - began > args.item_seconds + 60:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                running.pop(pid)
                print(json.dumps({"group": g, "index": i, "outcome": "killed"}), flush=True)
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.5)
            continue
        running.pop(pid, None)


if __name__ == "__main__":
    main()
