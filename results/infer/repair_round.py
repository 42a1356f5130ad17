"""One repair round on MSI, simulated: the picks of every repair rule (``localized``,
``related`` with its shortcuts and same-message lines, ``for_spec_goals``) for the
obligations session 33 left (msi_left_s33_after_errors.jsonl), added to s33's lines; then
each of those obligations asked again (one model build, forked per obligation, ITEM seconds
each). ``without``: the control, s33's lines alone, on the obligations a run's output
(``--only``) settled. A measurement, not part of the tool (results/infer/README.md,
"Session 34"). An ``error:*`` or ``no-transition:*`` goal is asked at its action's first
query of that name, which need not be the one left.

    PYTHONHASHSEED=0 python3 results/infer/repair_round.py 30 2 > ROUND.jsonl
    PYTHONHASHSEED=0 python3 results/infer/repair_round.py 30 2 --without --only ROUND.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path
from typing import Any

from coherence.commands.infer_states import compiled_states
from coherence.smt import infer_repair as repair
from coherence.smt import param
from coherence.smt.forked import Tally
from coherence.smt.infer import InferOptions
from coherence.smt.infer_mine import closes_cycle, mine
from coherence.spec.load import extend, load_spec
from coherence.spec.select import drop_properties

INFER = Path(__file__).resolve().parent
SPEC = INFER.parent.parent / "specs" / "msi_directory.coh"
AUX = INFER / "msi_directory_s33.aux"
LEFT = INFER / "msi_left_s33_after_errors.jsonl"


def _say(row: dict[str, Any]) -> None:
    print(json.dumps(row), flush=True)


def _picks(model: Any, aux: str, rows: list[dict[str, Any]]) -> list[str]:
    """The text of every kept candidate the repair rules put back for ``rows``' goals."""
    opts = InferOptions()
    cands, _stats, _tpl = mine(model, opts.sizes, opts.max_states, opts.explore_seconds,
                               opts.literals, source=compiled_states)
    cands = [c for c in cands if not closes_cycle(c)]
    named = dict(re.findall(r"invariant aux (\w+): (.*);\n", aux))
    by_text = {c.text: k for k, c in enumerate(cands)}
    taken = [by_text[t] for t in named.values() if t in by_text]
    own = {f"invariant:{i.name}": i.expr for i in model.invariants}
    actions = param.actions_of(model)
    unknown: list[tuple[int, frozenset[str]]] = []
    spec_goals: list[repair.SpecGoal] = []
    for r in rows:
        machine, tr = actions[r["group"] - 1]
        at = repair.action_atoms(machine.name, machine.kind.name == "CACHE", tr.states)
        msg = tr.name if tr.kind.name == "MESSAGE" else ""
        for goal in r["goals"]:
            name = goal.split(":", 1)[1]
            if named.get(name) in by_text:
                unknown.append((by_text[named[name]], at))
            elif goal in own:
                states, compares = repair.invariant_atoms(own[goal])
                spec_goals.append(repair.SpecGoal(
                    states, compares, at, msg,
                    *repair.fields_into(model, machine.name, tr.states, msg, compares)))
    alive = range(len(cands))
    added = repair.localized(cands, alive, taken, [k for k, _at in unknown])
    added += repair.related(cands, alive, [*taken, *added], unknown)
    added += repair.for_spec_goals(cands, alive, [*taken, *added], spec_goals)
    added = list(dict.fromkeys(added))
    _say({"taken": len(taken), "unknown_lines": len(unknown), "spec_goals": len(spec_goals),
          "added": len(added)})
    return [cands[k].text for k in added]


def _ask(model: Any, ob: param.Obligations, g: int, goal: str, seconds: float) -> None:
    qs = ob.group(g)
    q = next(q for q in qs if q.goal == goal)
    reuse = frozenset(x.key for x in qs if x.key != q.key)
    budget = param.Budget(seconds, None, time.perf_counter())
    t = time.perf_counter()
    outs = [x for x in param._share(model, ob, [g], budget, reuse, 0, Tally(1), None, None)
            if x.key == q.key]
    _say({"g": g, "what": q.what, "goal": goal, "outcome": outs[0].kind,
          "s": round(time.perf_counter() - t, 1)})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("item_seconds", type=float)
    ap.add_argument("processes", type=int)
    ap.add_argument("--without", action="store_true", help="the control: no picks added")
    ap.add_argument("--only", type=Path, help="ask only what this output settled")
    args = ap.parse_args()
    model0 = drop_properties(load_spec(SPEC), ["coherent"])
    aux = AUX.read_text()
    rows = [json.loads(line) for line in LEFT.read_text().splitlines() if line]
    picks = [] if args.without else _picks(model0, aux, rows)
    extra = "\n".join(f"invariant aux putback_{n}: {t};" for n, t in enumerate(picks, 1))
    t0 = time.perf_counter()
    model = extend(model0, aux + "\n" + extra + "\n")
    ob = param.Obligations(model)
    _say({"built_s": round(time.perf_counter() - t0, 1)})
    items = [(r["group"], goal) for r in rows for goal in r["goals"]]
    if args.only is not None:
        done = [json.loads(line) for line in args.only.read_text().splitlines()
                if line.startswith('{"g"')]
        items = [(r["g"], r["goal"]) for r in done
                 if r["goal"].startswith("invariant:") and r["outcome"] == "settled"]
    running: set[int] = set()
    while items or running:
        while items and len(running) < args.processes:
            g, goal = items.pop(0)
            pid = os.fork()
            if pid == 0:
                try:
                    _ask(model, ob, g, goal, args.item_seconds)
                except BaseException as e:  # reported; the queue goes on
                    _say({"g": g, "goal": goal, "outcome": "error", "msg": repr(e)[:200]})
                os._exit(0)
            running.add(pid)
        pid, _status = os.wait()
        running.discard(pid)


if __name__ == "__main__":
    main()
