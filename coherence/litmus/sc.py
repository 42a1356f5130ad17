"""The sequential-consistency baseline (Lamport 1979): every interleaving of the threads'
operations on one flat memory, annotations ignored. Its outcome set is the baseline column
that a protocol's allowed outcomes are compared against."""

from __future__ import annotations

from coherence.litmus.program import Litmus, Outcome


def sc_outcomes(test: Litmus) -> set[Outcome]:
    regs = {name: i for i, name in enumerate(test.registers())}
    threads = [[op for op in ops if op.kind != "fence"] for ops in test.threads]
    mem0 = tuple(test.initial(loc) for loc in test.locations)
    start = (tuple(0 for _ in threads), tuple(-1 for _ in regs), mem0)
    seen = {start}
    stack = [start]
    out: set[Outcome] = set()
    while stack:
        pcs, rv, mem = stack.pop()
        if all(pc == len(ops) for pc, ops in zip(pcs, threads, strict=True)):
            out.add((*rv, *mem))
            continue
        for t, ops in enumerate(threads):
            if pcs[t] == len(ops):
                continue
            op = ops[pcs[t]]
            line = test.locations.index(op.loc or "")
            if op.until is not None and mem[line] != op.until:
                continue  # a poll that reads another value reads again: no new state
            new_rv, new_mem = list(rv), list(mem)
            if op.kind == "load":
                new_rv[regs[f"{t}:{op.reg}"]] = mem[line]
            else:
                v = op.value
                new_mem[line] = v if isinstance(v, int) else rv[regs[f"{t}:{v}"]]
            nxt = ((*pcs[:t], pcs[t] + 1, *pcs[t + 1:]), tuple(new_rv), tuple(new_mem))
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return out
