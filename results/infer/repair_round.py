"""One repair round on MSI, simulated: the picks of every repair rule (``localized``,
``related`` with its shortcuts and same-message lines, ``for_spec_goals``) for the
obligations session 33 left (msi_left_s33_after_errors.jsonl), added to s33's lines; then
each of those obligations asked again (one model build, forked per obligation, ITEM seconds
each; a third argument: without the picks, the control). A measurement, not part of the tool
(results/infer/README.md, "Session 34"). An ``error:*`` or ``no-transition:*`` goal is asked
at its action's first query of that name, which need not be the one left.

    PYTHONHASHSEED=0 python3 results/infer/repair_round.py 30 2 [without]
"""
import json, os, re, sys, time
from pathlib import Path
from coherence.spec.load import load_spec, extend
from coherence.spec.select import drop_properties
from coherence.smt.infer_mine import mine, closes_cycle
from coherence.smt.infer import InferOptions
from coherence.smt import infer_repair as R
from coherence.smt import param
from coherence.smt.forked import Tally
from coherence.commands.infer_states import compiled_states

ITEM = float(sys.argv[1]); PROCS = int(sys.argv[2]); WITHOUT = len(sys.argv) > 3
model0 = drop_properties(load_spec("specs/msi_directory.coh"), ["coherent"])
aux = Path("results/infer/msi_directory_s33.aux").read_text()
rows = [json.loads(l) for l in open("results/infer/msi_left_s33_after_errors.jsonl")]
o = InferOptions()
cands, _s, _t = mine(model0, o.sizes, o.max_states, o.explore_seconds, o.literals, source=compiled_states)
cands = [c for c in cands if not closes_cycle(c)]
named = dict(re.findall(r"invariant aux (\w+): (.*);\n", aux))
by_text = {c.text: k for k, c in enumerate(cands)}
taken = [by_text[t] for t in named.values() if t in by_text]
ob0 = param.Obligations(model0)
label = {ob0.label(g): g for g in range(1, ob0.groups)}
acts = param.actions_of(model0)
own = {f"invariant:{i.name}": i.expr for i in model0.invariants}
unknown, spec_goals, loc = [], [], []
for r in rows:
    g = r["group"]
    m, tr = acts[g - 1]
    at = R.action_atoms(m.name, m.kind.name == "CACHE", tr.states)
    msg = tr.name if tr.kind.name == "MESSAGE" else ""
    for goal in r["goals"]:
        name = goal.split(":", 1)[1]
        if name in named and named[name] in by_text:
            unknown.append((by_text[named[name]], at)); loc.append(by_text[named[name]])
        elif goal in own:
            st, cmp = R.invariant_atoms(own[goal])
            spec_goals.append(R.SpecGoal(st, cmp, at, msg, *R.fields_into(model0, m.name, tr.states, msg, cmp)))
alive = range(len(cands))
added = R.localized(cands, alive, taken, loc)
added += R.related(cands, alive, [*taken, *added], unknown)
added += R.for_spec_goals(cands, alive, [*taken, *added], spec_goals)
added = list(dict.fromkeys(added))
print(json.dumps({"taken": len(taken), "unknown_lines": len(unknown), "spec_goals": len(spec_goals), "added": len(added)}), flush=True)
extra = "" if WITHOUT else "\n".join(f"invariant aux putback_{n}: {cands[k].text};" for n, k in enumerate(added, 1))
Path("/tmp/repair_sim_lines.txt").write_text(extra + "\n")
t0 = time.perf_counter()
model = extend(model0, aux + "\n" + extra + "\n")
ob = param.Obligations(model)
print(json.dumps({"built_s": round(time.perf_counter() - t0, 1)}), flush=True)
items = [(r["group"], goal) for r in rows for goal in r["goals"]]
running = {}
while items or running:
    while items and len(running) < PROCS:
        g, goal = items.pop(0)
        pid = os.fork()
        if pid == 0:
            try:
                qs = ob.group(g)
                q = next(q for q in qs if q.goal == goal)
                reuse = frozenset(x.key for x in qs if x.key != q.key)
                budget = param.Budget(ITEM, None, time.perf_counter())
                t = time.perf_counter()
                outs = [x for x in param._share(model, ob, [g], budget, reuse, 0, Tally(1), None, None) if x.key == q.key]
                print(json.dumps({"g": g, "what": q.what, "goal": goal, "outcome": outs[0].kind, "s": round(time.perf_counter() - t, 1)}), flush=True)
            except BaseException as e:
                print(json.dumps({"g": g, "goal": goal, "outcome": "error", "msg": repr(e)[:200]}), flush=True)
            os._exit(0)
        running[pid] = 1
    pid, _ = os.wait()
    running.pop(pid, None)
