"""The generated C that the liveness graph needs (``generate(..., liveness=True)``).

NOTE(compiled-liveness): two additions to the model, both absent from the safety search's
source:

* before each top-level action is tried, ``co_set_task(sink, hi, lo)`` names the fairness
  task it performs, as the pair ``coherence.liveness.tasks.TaskKeys.key`` computes
  (NOTE(task-keys)); ``hi`` is 0 for an unfair transition and has bit 60 set for a strongly
  fair one (the runtime strips it: strength belongs to the transition, the task is the same);
* ``co_live_eval(state, want, goal, premise, err)``: each wanted instance of every liveness
  property (``coherence.liveness.built.instances``, in that order) evaluated on one state: its goal,
  its premise where the goal is false (NOTE(premise-where-goal)), and whether either raised a
  model error.
"""

from __future__ import annotations

from coherence import ir
from coherence.engines.cgen.cexpr import Frame
from coherence.engines.cgen.cmodel import CModel, CodegenError, NetInfo
from coherence.liveness.tasks import MESSAGE, RULE

STRONG_BIT = 1 << 60
LO_LIMIT = 1 << 63  # a rule's code must fit an unsigned 64-bit word with room to spare


def _hi(base: int, t: ir.Transition) -> int:
    if not t.weakly_fair:
        return 0
    return base | (STRONG_BIT if t.strong else 0)


def rule_task(cm: CModel, m: ir.Machine, t: ir.Transition, self_: str) -> str:
    """``co_set_task`` for rule or event ``t`` of machine ``m`` at agent ``self_`` (C; in a
    hierarchy the node, as ``Action.agent``), with its parameters in ``pr[]``."""
    mi = [x.name for x in cm.model.machines].index(m.name)
    hi = _hi(RULE << 32 | mi << 16 | t.index, t)
    if hi == 0:
        return "co_set_task(sink, 0, 0);"
    code = f"((uint64_t){self_} * {cm.lines} + (uint64_t)line)"
    nodes = len(ir.instances(cm.model)) if cm.model.is_hierarchical else cm.n + 1
    radix = nodes * cm.lines
    for i, p in enumerate(t.params):
        dom = ir.domain(p.type)
        code = f"({code} * {len(dom)} + (uint64_t)(pr[{i}] - ({dom.start})))"
        radix *= len(dom)
    if radix >= LO_LIMIT:
        raise CodegenError(f"{t.span}: the fairness tasks of {t.name} need more than 63 bits")
    return f"co_set_task(sink, 0x{hi:x}ull, {code});"


def message_task(info: NetInfo, m: ir.Machine, t: ir.Transition) -> str:
    """``co_set_task`` for delivering the message (``line``, ``src``, ``dst``, ``code``) of
    network ``info`` to transition ``t``: its record as ``Layout.record_code`` packs it."""
    hi = _hi(MESSAGE << 32 | info.index, t)
    if hi == 0:
        return "co_set_task(sink, 0, 0);"
    lay = info.lay
    nb = lay.node_bits
    head = f"((((uint64_t)line << {nb} | (uint64_t)src) << {nb}) | (uint64_t)dst)"
    return (f"co_set_task(sink, 0x{hi:x}ull, "
            f"({head} << {lay.type_bits + lay.union_bits}) | (uint64_t)code);")


def live_source(cm: CModel, frame_class: type[Frame] = Frame) -> str:
    """The predicates of every liveness property and ``co_live_eval`` (``frame_class``
    translates expressions: ``chier.HierFrame`` for a hierarchical spec)."""
    out = []
    body = ["CO_FN int co_live_eval(const co_state *s, const uint8_t *want, uint8_t *goal, "
            "uint8_t *premise, uint8_t *err) {",
            "    co_u u;", "    co_unpack(s, &u);", "    int k = 0;"]
    count = 0
    for i, prop in enumerate(cm.model.liveness):
        for kind, e in (("goal", prop.goal), ("premise", prop.premise)):
            if e is None:
                continue
            f = frame_class(cm, "inv", params=prop.binders)
            v = f.ex(e)
            f.emit(f"return {v} != 0;")
            out.append(f"/* liveness {prop.name}: {kind} ({prop.span}) */\n"
                       f"CO_FN int co_live_{kind}_{i}(const co_u *u, int line, const int *pr) "
                       "{\n    (void)u; (void)line; (void)pr;\n" + "\n".join(f.out) + "\n}\n")
        nb = len(prop.binders)
        body.append("    for (int line = 0; line < CO_LINES; line++) {")
        body.append(f"        int pr[{max(1, nb)}] = {{0}};")
        ind = "        "
        for j, b in enumerate(prop.binders):
            dom = ir.domain(b.type)
            body.append(f"{ind}for (pr[{j}] = {dom.start}; pr[{j}] < {dom.stop}; pr[{j}]++)")
            ind += "    "
        premise = (f"co_live_premise_{i}(&u, line, pr)" if prop.premise is not None else "0")
        body += [f"{ind}if (!want[k]) {{",
                 f"{ind}    k++;",
                 f"{ind}}} else {{",
                 f"{ind}    const int q = co_live_goal_{i}(&u, line, pr);",
                 f"{ind}    const int p = q == 0 ? {premise} : 0;",
                 f"{ind}    const int bad = q >= 2 || p >= 2;",
                 f"{ind}    goal[k] = (uint8_t)(!bad && q);",
                 f"{ind}    premise[k] = (uint8_t)(!bad && p);",
                 f"{ind}    err[k] = (uint8_t)bad;",
                 f"{ind}    k++;",
                 f"{ind}}}"]
        body.append("    }")
        domains = 1
        for b in prop.binders:
            domains *= len(ir.domain(b.type))
        count += cm.lines * domains
    body += ["    return k;", "}", ""]
    header = f"#define CO_LIVE_INSTANCES {count}\n"
    return header + "\n".join(out) + "\n" + "\n".join(body)
