"""The ground try of one obligation split by which of its node terms are equal (the
partitions of the action's agent, the state's node variables and two witnesses), each
partition a check of its own (session 22: MSI's `inferred_84` at `Store in S`: 12 of 15
unsat at once, the 3 where the acting cache is the owner unknown after 20 s).

    python3 results/infer/ground_cases.py specs/msi_directory.coh \\
        results/infer/msi_directory_completed.aux "Cache.event Store in S" invariant:inferred_84 20
"""

from __future__ import annotations

import itertools
import sys
import time
from pathlib import Path

from coherence.smt import interrupt, param
from coherence.spec.load import extend, load_spec
from coherence.spec.select import drop_properties

spec, aux, action, goal = sys.argv[1:5]
secs = float(sys.argv[5])
model = extend(drop_properties(load_spec(spec), ["coherent"]), Path(aux).read_text())
ob = param.Obligations(model)
for g in range(1, ob.groups):
    machine, tr = ob.acts[g - 1]
    if not f"{machine.name}.{param._label(tr)}".endswith(action):
        continue
    for q in ob.group(g):
        if q.goal != goal:
            continue
        gl = q.assertions[-1]
        gr = param.Grounded(q)
        gr.deadline = time.perf_counter() + 200
        t = time.perf_counter()
        r = gr.proves(gl, wider=False)
        print("built+first", r, round(time.perf_counter() - t, 1), gr.ready, flush=True)
        if not gr.ready:
            sys.exit()
        grounder, solver, counting = gr.main
        grounder.left = param.GROUND_INSTANCES
        grounder.deadline = None
        gg = grounder.goal(gr._resolved(gl), gr.pool)
        solver.set("rlimit", 0)
        T = [x for x in gr.terms if not x.eq(param.HOME)]
        print("terms", T)

        # all partitions of T
        def parts(xs):
            if not xs:
                yield []
                return
            first, rest = xs[0], xs[1:]
            for p in parts(rest):
                for i in range(len(p)):
                    yield [*p[:i], [first] + p[i], *p[i + 1:]]
                yield [[first], *p]

        n = 0
        for p in parts(T):
            lits = []
            for b in p:
                lits += [b[0] == x for x in b[1:]]
            for b1, b2 in itertools.combinations(p, 2):
                lits.append(b1[0] != b2[0])
            interrupt.cap(solver, secs)
            t = time.perf_counter()
            r = solver.check(gg, *lits)
            n += 1  # noqa: SIM113
            print(
                n,
                [[str(x) for x in b] for b in p],
                r,
                round(time.perf_counter() - t, 2),
                flush=True,
            )
