"""Where MSI's final proof stalls: one forked process per action (the actions with the most
obligations not in the proof cache first), each settling its action's obligations in order
with the final proof's own tries (``param._share``), the cache skipping what is settled and
recording what it settles; then, per action, how many were settled, cached, left unknown or
refuted by a concrete counterexample to induction (its summary printed), and how many the
time left unreached. ``prove --jobs`` deals whole actions to its workers and stops at its
``--timeout``; this says which obligations are slow and why.

    PYTHONHASHSEED=0 python3 results/infer/per_action.py specs/msi_directory.coh \\
        results/infer/msi_directory_completed.aux results/infer/msi_directory.proof-cache \\
        --skip coherent --processes 16 --seconds 450 [--after EARLIER.jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import select
import time
from pathlib import Path
from typing import Any

from coherence.smt import param
from coherence.smt.proof_cache import ProofCache
from coherence.spec.load import extend, load_spec
from coherence.spec.select import drop_properties


class _Tally:
    def set(self, *_a: Any) -> None:
        pass

    def sums(self) -> tuple[int, int]:
        return (0, 0)


def _missing(cache_path: str) -> dict[str, int]:
    """Records per action (format 4) in the cache."""
    out: dict[str, int] = {}
    for line in Path(cache_path).read_text().splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("v") == 4 and "what" in r:
            what = r["what"].split(" (then")[0]
            out[what] = out.get(what, 0) + 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("spec")
    ap.add_argument("aux")
    ap.add_argument("cache")
    ap.add_argument("--processes", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seconds", type=float, default=300.0)
    ap.add_argument("--skip", action="append", default=[])
    ap.add_argument("--after", metavar="JSONL",
                    help="an earlier run's output: its unknown goals are not asked again "
                         "(counted as 'passed over', never recorded), so the time goes to the "
                         "obligations after them")
    ap.add_argument("--actions-from", metavar="JSONL",
                    help="an earlier run's output: the same actions, in its order (to compare "
                         "two encodings or line sets side by side); or a first line "
                         "{\"groups\": [...]} naming the obligation groups themselves "
                         "(cache_left.py --goals)")
    ap.add_argument("--out-dir", metavar="DIR",
                    help="each action's line is also written to DIR/<n>.json as soon as its "
                         "process ends, so an outer timeout keeps what finished")
    args = ap.parse_args()
    t0 = time.perf_counter()
    model = extend(drop_properties(load_spec(args.spec), args.skip),
                   Path(args.aux).read_text())
    ob = param.Obligations(model)
    recorded = _missing(args.cache)
    labels = {g: f"action {ob.label(g)}" for g in range(1, ob.groups)}
    passed_over: dict[str, set[str]] = {}
    if args.after:
        for line in Path(args.after).read_text().splitlines():
            r = json.loads(line)
            if "outcomes" in r:
                passed_over[r["action"]] = set(r["unknown"])
    order = sorted(labels, key=lambda g: recorded.get(labels[g], 0))[:args.processes]
    if args.actions_from:
        first = json.loads(Path(args.actions_from).read_text().splitlines()[0])
        if "groups" in first:  # the action indices themselves (two actions may share a label)
            order = [int(g) for g in first["groups"]][:args.processes]
        else:
            by_label = {label: g for g, label in labels.items()}
            order = [by_label[a] for a in first["actions"]][:args.processes]
    print(json.dumps({"built_s": round(time.perf_counter() - t0, 1),
                      "actions": [labels[g] for g in order]}), flush=True)
    pids = {}
    for g in order:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            budget = param.Budget(args.seconds, None, time.perf_counter())
            cache = ProofCache(args.cache)
            over = passed_over.get(labels[g], set())
            reuse = frozenset(q.key for q in ob.group(g) if q.goal in over)
            outs = param._share(model, ob, [g], budget, reuse, 0, _Tally(), None, cache)
            kinds: dict[str, int] = {}
            ctis = []
            for o in outs:
                if o.key in reuse:
                    kinds["passed over"] = kinds.get("passed over", 0) + 1
                    continue
                kind = o.kind if "--timeout" not in o.message else "unreached"
                kinds[kind] = kinds.get(kind, 0) + 1
                kinds["cached"] = kinds.get("cached", 0) + o.cached
                if o.kind == "cti":
                    ctis.append({"goal": o.goal, "message": o.message,
                                 "pre": getattr(o.cti, "pre", None)})
            unknown = [o.goal for o in outs if o.kind == "unknown" and "--timeout" not in
                       o.message]
            line = json.dumps({"action": labels[g], "outcomes": kinds,
                               "unknown": unknown[:20], "ctis": ctis[:5]})
            if args.out_dir:
                Path(args.out_dir, f"{g}.json").write_text(line + "\n")
            os.write(w, line.encode())
            os.close(w)
            os._exit(0)
        os.close(w)
        pids[pid] = r
    # Whichever process ends first is printed first: one slow action does not hide the rest.
    chunks: dict[int, list[bytes]] = {r: [] for r in pids.values()}
    pid_of = {r: pid for pid, r in pids.items()}
    while chunks:
        ready, _, _ = select.select(list(chunks), [], [])
        for r in ready:
            b = os.read(r, 1 << 16)
            if b:
                chunks[r].append(b)
                continue
            os.waitpid(pid_of[r], 0)
            print(b"".join(chunks.pop(r)).decode()
                  or json.dumps({"pid": pid_of[r], "result": None}), flush=True)
            os.close(r)


if __name__ == "__main__":
    main()
