"""Agent permutations and exact canonicalization in C (``co_permute``, ``co_canonicalize``).

``co_perm_u`` renames agents in an unpacked state exactly as ``Symmetry.permute`` does
(cache and monitor blocks move to the new name, agent-, node- and set-typed values are
renamed, agent-indexed arrays are reordered, messages are renamed and the unordered multisets
re-sorted), so ``co_permute`` is bit-for-bit ``layout.pack(Symmetry.permute(state, p))``.

``co_canonicalize`` picks the minimum (in ``co_ucmp``'s order on unpacked states, a total
order on states) over a candidate set of permutations: those that sort the agents by a
signature, in every order within groups of equal signature. It is exact, i.e. it gives one
representative per orbit, because the candidate set is equivariant: the signature of agent
``pi(a)`` in ``pi(s)`` equals that of ``a`` in ``s`` (it is built only from what a renaming
does not change: the agent's own non-agent-typed slots and monitor entry, whether global or
home agent/set variables name it, and the messages it sends or receives with their
non-agent-typed fields, summed so that order does not matter), so the candidates of ``pi(s)``
are those of ``s`` composed with ``pi^-1`` and yield the same set of images; the minimum of one
set is one state. Hash collisions in the signature only merge groups (more candidates, still
exact).

To stay fast at 5-6 agents, a group is not enumerated when every transposition of adjacent
members leaves the state unchanged: those transpositions generate the group's full symmetric
group, which then fixes the state, so every order within it gives the same image (agents that
are idle and named nowhere, the common case, cost one comparison each instead of k!).
"""

from __future__ import annotations

from coherence import ir
from coherence.engines.cgen.cmodel import CModel, Shape


def _renames(t: ir.Type) -> bool:
    return isinstance(t, (ir.AgentT, ir.NodeT, ir.SetT))


def _ren(t: ir.Type, c: str) -> str:
    """A renamed code (codes are value + 1, 0 undefined)."""
    if isinstance(t, ir.AgentT):
        return f"({c} ? p[{c} - 1] + 1 : 0)"
    if isinstance(t, ir.NodeT):
        return f"(({c} && {c} - 1 < CO_AGENTS) ? p[{c} - 1] + 1 : {c})"
    if isinstance(t, ir.SetT):
        return f"({c} ? (int)co_pmask((unsigned)({c} - 1), p) + 1 : 0)"
    return c


class _Emitter:
    def __init__(self) -> None:
        self.out: list[str] = []
        self.n = 0

    def var(self) -> str:
        self.n += 1
        return f"i{self.n}"

    def map_var(self, shape: Shape, src: str, dst: str, ind: str) -> None:
        """``symmetry.type_mapper`` of one variable, from ``u->v[src..]`` to ``o->v[dst..]``."""
        if not shape.is_array:
            c = f"u->v[{src}]"
            if _renames(shape.type):
                ren = _ren(shape.type, "c")
                self.out.append(f"{ind}{{ const int c = {c}; o->v[{dst}] = (CO_VT){ren}; }}")
            else:
                self.out.append(f"{ind}o->v[{dst}] = {c};")
            return
        assert shape.elem is not None and isinstance(shape.type, ir.ArrayT)
        f = int(shape.flag)
        if shape.flag:
            self.out.append(f"{ind}o->v[{dst}] = u->v[{src}];")
        es = shape.elem.size
        i = self.var()
        index = shape.type.index
        elem_sym = ir.is_symmetric(shape.type.elem)
        if isinstance(index, (ir.AgentT, ir.NodeT)):
            self.out.append(f"{ind}for (int {i} = 0; {i} < CO_AGENTS; {i}++) {{")
            if elem_sym:
                self.map_var(shape.elem, f"{src}+{f}+{i}*{es}", f"{dst}+{f}+p[{i}]*{es}",
                             ind + "    ")
            else:
                self.out.append(f"{ind}    for (int k = 0; k < {es}; k++) o->v[{dst}+{f}+p[{i}]*"
                                f"{es} + k] = u->v[{src}+{f}+{i}*{es} + k];")
            self.out.append(f"{ind}}}")
            if isinstance(index, ir.NodeT):  # the home's element: copied, as type_mapper does
                self.out.append(f"{ind}for (int k = 0; k < {es}; k++) o->v[{dst}+{f}+CO_AGENTS*"
                                f"{es} + k] = u->v[{src}+{f}+CO_AGENTS*{es} + k];")
            return
        self.out.append(f"{ind}for (int {i} = 0; {i} < {shape.count}; {i}++) {{")
        self.map_var(shape.elem, f"{src}+{f}+{i}*{es}", f"{dst}+{f}+{i}*{es}", ind + "    ")
        self.out.append(f"{ind}}}")


def _field_renamer(cm: CModel, net_i: int) -> str:
    """``co_ren_N(code, p)``: the ``type + 1 | fields`` code with agent fields renamed."""
    info = cm.nets[net_i]
    lay = info.lay
    lines = [f"CO_FN uint64_t co_ren_{net_i}(uint64_t code, const int *p) {{",
             "    (void)p;", f"    switch ((int)(code >> {lay.union_bits})) {{"]
    for _t, fmt in lay.formats.items():
        sym = [(sh, w, ft) for sh, w, ft in fmt.fields if _renames(ft)]
        if not sym:
            continue
        lines.append(f"    case {fmt.type_code}: {{")
        for sh, w, ft in sym:
            mask = (1 << w) - 1
            lines.append(f"        {{ const int c = (int)((code >> {sh}) & 0x{mask:x}u); "
                         f"code = (code & ~((uint64_t)0x{mask:x}u << {sh})) | "
                         f"((uint64_t){_ren(ft, 'c')} << {sh}); }}")
        lines.append("        break;")
        lines.append("    }")
    lines += ["    default: break;", "    }", "    return code;", "}", ""]
    return "\n".join(lines)


def _plain_masks(cm: CModel, net_i: int) -> list[int]:
    """Per type code: the bits of the ``type + 1 | fields`` code that no renaming changes."""
    lay = cm.nets[net_i].lay
    masks = [0] * (len(lay.formats) + 1)
    for fmt in lay.formats.values():
        m = fmt.type_code << lay.union_bits
        for sh, w, ft in fmt.fields:
            if not _renames(ft):
                m |= ((1 << w) - 1) << sh
        masks[fmt.type_code] = m
    return masks


def symmetry_source(cm: CModel) -> str:
    out: list[str] = []
    n = cm.n
    out.append("""CO_FN unsigned co_pmask(unsigned m, const int *p) {
    unsigned r = 0;
    for (int a = 0; a < CO_AGENTS; a++) if ((m >> a) & 1u) r |= 1u << p[a];
    return r | (m & ~((1u << CO_AGENTS) - 1u));
}
CO_FN uint64_t co_mix(uint64_t x) {
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27; x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
/* A total order on unpacked states (the multisets are sorted, so equal states compare 0). */
CO_FN int co_ucmp(const co_u *a, const co_u *b) {
    for (int k = 0; k < CO_NV; k++) if (a->v[k] != b->v[k]) return a->v[k] < b->v[k] ? -1 : 1;
    for (int k = 0; k < CO_NR; k++) if (a->r[k] != b->r[k]) return a->r[k] < b->r[k] ? -1 : 1;
    return 0;
}
""")
    for info in cm.nets:
        if info.net.ordering != "bus":
            out.append(_field_renamer(cm, info.index))
    # ---- permute
    e = _Emitter()
    body = e.out
    body.append("CO_FN void co_perm_u(const co_u *u, const int *p, co_u *o) {")
    body.append("    *o = *u;")
    body.append("    for (int line = 0; line < CO_LINES; line++) {")
    lb = cm.line_base("line")
    for v in cm.model.globals:
        sh = cm.gshape[v.name]
        if ir.is_symmetric(v.type):
            e.map_var(sh, f"{lb}+{cm.gstart[v.name]}", f"{lb}+{cm.gstart[v.name]}", "        ")
    if cm.home is not None:
        for v in cm.home.vars:
            sh = cm.hshape[v.name]
            if ir.is_symmetric(v.type):
                e.map_var(sh, f"{lb}+{cm.hstart[v.name]}", f"{lb}+{cm.hstart[v.name]}",
                          "        ")
    if cm.cache is not None:
        body.append("        for (int a = 0; a < CO_AGENTS; a++) {")
        body.append(f"            const int sb = {cm.cache_block('line', 'a')}, "
                    f"db = {cm.cache_block('line', 'p[a]')};")
        body.append("            o->v[db] = u->v[sb];")
        for v in cm.cache.vars:
            sh = cm.cshape[v.name]
            off = cm.cstart[v.name]
            if ir.is_symmetric(v.type):
                e.map_var(sh, f"sb+{off}", f"db+{off}", "            ")
            else:
                body.append(f"            for (int k = 0; k < {sh.size}; k++) "
                            f"o->v[db+{off} + k] = u->v[sb+{off} + k];")
        body.append("        }")
    if cm.monitor:
        body.append("        for (int a = 0; a < CO_AGENTS; a++)")
        body.append(f"            for (int k = 0; k < {cm.mon_stride}; k++) "
                    f"o->v[{cm.mon_block('line', 'p[a]')} + k] = "
                    f"u->v[{cm.mon_block('line', 'a')} + k];")
    body.append("    }")
    for info in cm.nets:
        lay = info.lay
        if info.net.ordering == "unordered":
            nb, low = lay.node_bits, lay.type_bits + lay.union_bits
            nm = (1 << nb) - 1
            rb = info.rbase
            body += [
                "    {",
                f"        const int c = u->uc[{info.uc}];",
                "        for (int k = 0; k < c; k++) {",
                f"            const uint64_t rec = u->r[{rb} + k];",
                f"            int s = (int)((rec >> {low + nb}) & {nm}), "
                f"d = (int)((rec >> {low}) & {nm});",
                "            if (s < CO_AGENTS) s = p[s];",
                "            if (d < CO_AGENTS) d = p[d];",
                f"            const uint64_t head = ((rec >> {low + 2 * nb}) << {2 * nb}) | "
                f"((uint64_t)s << {nb}) | (uint64_t)d;",
                f"            const uint64_t nr = (head << {low}) | "
                f"co_ren_{info.index}(rec & 0x{(1 << low) - 1:x}u, p);",
                "            int i = k;",
                f"            while (i > 0 && o->r[{rb} + i - 1] > nr) {{ o->r[{rb} + i] = "
                f"o->r[{rb} + i - 1]; i--; }}",
                f"            o->r[{rb} + i] = (CO_RT)nr;",
                "        }",
                "    }"]
        elif info.net.ordering == "fifo":
            cap = info.net.capacity
            for q in info.queues:
                body.append(f"    for (int k = 0; k < {cap}; k++) o->r[{q} + k] = 0;")
            n1 = n + 1
            for (line, src, dst), q in zip(lay.pairs, info.queues, strict=True):
                ps = f"p[{src}]" if src < n else str(src)
                pd = f"p[{dst}]" if dst < n else str(dst)
                body += [
                    f"    if (u->r[{q}]) {{",
                    f"        const int q = co_fifo_{info.index}[({line} * {n1} + {ps}) * {n1}"
                    f" + {pd}];",
                    f"        for (int k = 0; k < {cap} && u->r[{q} + k]; k++) "
                    f"o->r[q + k] = (CO_RT)co_ren_{info.index}(u->r[{q} + k], p);",
                    "    }"]
    body += ["    o->coh = 0;", "}", ""]
    out.append("\n".join(body))
    out.append(_signature(cm))
    out.append("""CO_FN void co_permute(const co_state *s, const int *perm, co_state *out) {
    co_u u, o;
    co_unpack(s, &u);
    co_perm_u(&u, perm, &o);
    co_pack(&o, out);
}
/* The next order of seq[b .. b+l) (lexicographic); 0 when it wrapped to ascending. */
CO_FN int co_next_perm(int *seq, int b, int l) {
    int i = b + l - 2;
    while (i >= b && seq[i] > seq[i + 1]) i--;
    if (i < b) {
        for (int x = b, y = b + l - 1; x < y; x++, y--) {
            int t = seq[x]; seq[x] = seq[y]; seq[y] = t;
        }
        return 0;
    }
    int j = b + l - 1;
    while (seq[j] < seq[i]) j--;
    { int t = seq[i]; seq[i] = seq[j]; seq[j] = t; }
    for (int x = i + 1, y = b + l - 1; x < y; x++, y--) {
        int t = seq[x]; seq[x] = seq[y]; seq[y] = t;
    }
    return 1;
}
CO_FN void co_canonicalize(co_state *s) {
    if (CO_AGENTS < 2) return;
    co_u u, t, best;
    co_unpack(s, &u);
    uint64_t sig[CO_AGENTS];
    co_sigs(&u, sig);
    int seq[CO_AGENTS], p[CO_AGENTS];
    for (int a = 0; a < CO_AGENTS; a++) {
        int i = a;
        while (i > 0 && sig[seq[i - 1]] > sig[a]) { seq[i] = seq[i - 1]; i--; }
        seq[i] = a;
    }
    /* groups of equal signature that need enumerating */
    int gb[CO_AGENTS], gl[CO_AGENTS], ng = 0;
    for (int i = 0; i < CO_AGENTS;) {
        int j = i + 1;
        while (j < CO_AGENTS && sig[seq[j]] == sig[seq[i]]) j++;
        if (j - i > 1) {
            int fixed = 1;
            for (int k = i; k + 1 < j && fixed; k++) {
                for (int a = 0; a < CO_AGENTS; a++) p[a] = a;
                p[seq[k]] = seq[k + 1];
                p[seq[k + 1]] = seq[k];
                co_perm_u(&u, p, &t);
                if (co_ucmp(&t, &u) != 0) fixed = 0;
            }
            if (!fixed) { gb[ng] = i; gl[ng] = j - i; ng++; }
        }
        i = j;
    }
    for (int i = 0; i < CO_AGENTS; i++) p[seq[i]] = i;
    co_perm_u(&u, p, &best);
    for (;;) {
        int g = 0;
        while (g < ng && !co_next_perm(seq, gb[g], gl[g])) g++;
        if (g == ng) break;
        for (int i = 0; i < CO_AGENTS; i++) p[seq[i]] = i;
        co_perm_u(&u, p, &t);
        if (co_ucmp(&t, &best) < 0) best = t;
    }
    co_pack(&best, s);
}
""")
    return "\n".join(out)


def _signature(cm: CModel) -> str:
    """``co_sigs``: per agent, a hash of what no renaming changes (see the module doc)."""
    lines = ["CO_FN void co_sigs(const co_u *u, uint64_t *sig) {",
             "    uint64_t acc[CO_AGENTS];",
             "    for (int a = 0; a < CO_AGENTS; a++) { sig[a] = 0x9e3779b97f4a7c15ull; "
             "acc[a] = 0; }",
             "    for (int line = 0; line < CO_LINES; line++) {"]
    lb = cm.line_base("line")
    # global and home scalars that name agents (not inside arrays: kept simple and exact)
    named: list[tuple[str, ir.Type]] = []
    for v in cm.model.globals:
        if _renames(v.type):
            named.append((f"{lb}+{cm.gstart[v.name]}", v.type))
    if cm.home is not None:
        for v in cm.home.vars:
            if _renames(v.type):
                named.append((f"{lb}+{cm.hstart[v.name]}", v.type))
    for i, (slot, t) in enumerate(named):
        test = "(((c - 1) >> a) & 1)" if isinstance(t, ir.SetT) else "(c == a + 1)"
        lines += [f"        {{ const int c = u->v[{slot}];",
                  f"          if (c) for (int a = 0; a < CO_AGENTS; a++) if {test} "
                  f"acc[a] += co_mix({i + 1}ull * 0x100000001b3ull + (uint64_t)line); }}"]
    if cm.cache is not None:
        plain = [0]  # the control state
        for v in cm.cache.vars:
            sh = cm.cshape[v.name]
            if not ir.is_symmetric(v.type):
                plain += list(range(cm.cstart[v.name], cm.cstart[v.name] + sh.size))
        lines.append("        for (int a = 0; a < CO_AGENTS; a++) {")
        lines.append(f"            const int b = {cm.cache_block('line', 'a')};")
        for off in plain:
            lines.append(f"            sig[a] = co_mix(sig[a] ^ u->v[b + {off}]);")
        lines.append("        }")
    if cm.monitor:
        lines.append("        for (int a = 0; a < CO_AGENTS; a++)")
        lines.append(f"            for (int k = 0; k < {cm.mon_stride}; k++) sig[a] = "
                     f"co_mix(sig[a] ^ u->v[{cm.mon_block('line', 'a')} + k]);")
    lines.append("    }")
    n = cm.n
    for info in cm.nets:
        lay = info.lay
        masks = _plain_masks(cm, info.index)
        table = ", ".join(f"0x{m:x}ull" for m in masks)
        salt = 0x51ED270B + 7919 * info.index
        if info.net.ordering == "unordered":
            nb, low = lay.node_bits, lay.type_bits + lay.union_bits
            nm = (1 << nb) - 1
            lines += [
                "    {",
                f"        const uint64_t plain[{len(masks)}] = {{{table}}};",
                f"        for (int k = 0; k < u->uc[{info.uc}]; k++) {{",
                f"            const uint64_t rec = u->r[{info.rbase} + k];",
                f"            const int s = (int)((rec >> {low + nb}) & {nm}), "
                f"d = (int)((rec >> {low}) & {nm});",
                f"            const uint64_t m = rec & 0x{(1 << low) - 1:x}u;",
                f"            const uint64_t h = co_mix((m & plain[(int)(m >> {lay.union_bits})])"
                f" ^ ((rec >> {low + 2 * nb}) << 56) ^ {salt}ull);",
                "            if (s < CO_AGENTS)",
                "                acc[s] += co_mix(h ^ (1u | (unsigned)(d == s) << 1));",
                "            if (d < CO_AGENTS && d != s) acc[d] += co_mix(h ^ 2u);",
                "        }",
                "    }"]
        elif info.net.ordering == "fifo":
            lines.append("    {")
            lines.append(f"        const uint64_t plain[{len(masks)}] = {{{table}}};")
            for (line, src, dst), q in zip(lay.pairs, info.queues, strict=True):
                if src >= n and dst >= n:
                    continue
                lines.append(f"        if (u->r[{q}]) {{")
                lines.append(f"            uint64_t h = {salt}ull ^ ((uint64_t){line} << 56);")
                lines.append(f"            for (int k = 0; k < {info.net.capacity} && "
                             f"u->r[{q} + k]; k++) h = co_mix(h ^ (u->r[{q} + k] & "
                             f"plain[(int)(u->r[{q} + k] >> {lay.union_bits})]));")
                if src < n:
                    flags = 1 | (int(dst == src) << 1)
                    lines.append(f"            acc[{src}] += co_mix(h ^ {flags}u);")
                if dst < n and dst != src:
                    lines.append(f"            acc[{dst}] += co_mix(h ^ 2u);")
                lines.append("        }")
            lines.append("    }")
    lines += ["    for (int a = 0; a < CO_AGENTS; a++) sig[a] = co_mix(sig[a] ^ acc[a]);",
              "}", ""]
    return "\n".join(lines)
