/* The GPU engine's fixed runtime: one thread per frontier state, the successors stored in a
 * device-wide hash set, level-synchronous breadth-first search driven by the host
 * (coherence/engines/gpu/search.py), which launches the kernels below level by level.
 *
 * One translation unit per model (coherence/engines/gpu/source.py): the target's macros
 * (NVRTC: __device__ functions and CUDA atomics; the host emulation: plain C++ with GCC
 * atomics and a serial launcher), the context indices CTX_* and CO_SEG_LOG, the generated
 * model (coherence/engines/cgen, the same code the compiled engine runs on the CPU), then
 * this file.
 *
 * Storage (the compiled engine's scheme, for the same reasons; see co_runtime.c):
 *   - states: CO_BYTES bytes each (the low bytes of layout.pack()), indexed by id, in
 *     segments of 2^CO_SEG_LOG states allocated as the search grows (no copy, no moving);
 *     each segment holds its states, then one uint32 parent id per state;
 *   - the visited set: open addressing over uint32 slots, linear probing; a slot holds
 *     tag | (id + 1), the tag being the hash's top bits that the id does not need, so a probe
 *     reads the state array only when the tags match; tag | idmask marks a slot claimed by a
 *     thread that has not published its id yet. Ids are handed out in order by one counter,
 *     so the states of level d + 1 are the ids [end of level d, count): the frontier is a
 *     range, with no queue.
 * A state costs CO_BYTES + 4 + 4 / load bytes of device memory.
 *
 * Insertion: claim an empty slot (CAS 0 -> busy), take the next id (atomic add), write the
 * state and its parent, fence, publish tag | (id + 1). A thread meeting a busy slot with
 * its own tag spins until the id is published (independent thread scheduling, sm_70 and
 * later, lets the claimer finish). States written during this kernel are read through
 * volatile loads (L1 is not coherent between multiprocessors); the frontier, written by an
 * earlier launch, is read plainly.
 *
 * Capacity: the host keeps count + successors-to-come below CTX_HARD (free slots and
 * allocated ids, minus one id per resident thread: each insert checks the count before it
 * claims, so at most that many can pass the check at once). A successor that finds the
 * count at CTX_HARD is dropped and CTX_OVERFLOW set: the host grows the store and runs the
 * batch again (its successors already stored are found again; its rule count is only
 * added once the batch completes).
 */

#define CO_BYTES ((CO_BITS + 7) / 8 > 0 ? (CO_BITS + 7) / 8 : 1)
#define CO_SEG_STATES ((uint64_t)1 << CO_SEG_LOG)
#define CO_NONE 0xffffffffu

struct co_sink {
    uint64_t *ctx;
    uint32_t parent; /* the state being expanded */
    uint32_t depth;  /* its depth */
    int failures;    /* co_emit_failure calls for it */
};

CO_FN uint64_t co_hash(const co_state *s) {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < CO_WORDS; i++) {
        h = (h ^ s->w[i]) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 29;
    }
    h ^= h >> 32;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return h;
}

CO_FN uint8_t *co_state_at(const uint64_t *ctx, uint64_t id) {
    const uint64_t *segs = (const uint64_t *)(uintptr_t)ctx[CTX_SEGS];
    return (uint8_t *)(uintptr_t)segs[id >> CO_SEG_LOG] + (id & (CO_SEG_STATES - 1)) * CO_BYTES;
}

CO_FN uint32_t *co_parent_at(const uint64_t *ctx, uint64_t id) {
    const uint64_t *segs = (const uint64_t *)(uintptr_t)ctx[CTX_SEGS];
    return (uint32_t *)((uint8_t *)(uintptr_t)segs[id >> CO_SEG_LOG] + CO_SEG_STATES * CO_BYTES) +
           (id & (CO_SEG_STATES - 1));
}

/* A state stored by an earlier launch. */
CO_FN void co_load(const uint64_t *ctx, uint64_t id, co_state *s) {
    const uint8_t *p = co_state_at(ctx, id);
    for (int w = 0; w < CO_WORDS; w++) s->w[w] = 0;
    for (int i = 0; i < CO_BYTES; i++) s->w[i >> 3] |= (uint64_t)p[i] << (8 * (i & 7));
}

/* Words that cover CO_BYTES bytes from any offset within a word. */
#define CO_SAME_WORDS ((CO_BYTES + 6) / 4)

/* Whether the stored state id (maybe written during this launch) equals s. Its bytes are
 * read as the aligned 32-bit words that cover them, all loads issued before any compare
 * (a byte-by-byte loop that returns at the first difference makes each load wait for the
 * last: one memory round trip per byte), through L2 (co_load32cg), not the multiprocessor's
 * L1. The words past a segment's last state are its parent ids: never out of bounds. */
CO_FN int co_same(const uint64_t *ctx, uint64_t id, const co_state *s) {
    const uintptr_t at = (uintptr_t)co_state_at(ctx, id);
    const uint32_t *w = (const uint32_t *)(at & ~(uintptr_t)3);
    const int off = (int)(at & 3);
    uint32_t got[CO_SAME_WORDS];
    for (int k = 0; k < CO_SAME_WORDS; k++) got[k] = co_load32cg(w + k);
    uint32_t diff = 0;
    for (int i = 0; i < CO_BYTES; i++) {
        const int j = off + i;
        diff |= ((got[j >> 2] >> (8 * (j & 3))) ^ (uint32_t)(s->w[i >> 3] >> (8 * (i & 7)))) & 0xffu;
    }
    return diff == 0;
}

CO_FN void co_record_failure(uint64_t *ctx, int key, uint32_t id, uint64_t depth) {
    if (key < 0 || key > CO_NUM_KEYS) return;
    uint64_t *first = (uint64_t *)(uintptr_t)ctx[CTX_FIRST];
    const uint64_t v = depth << 32 | id;
    if (co_load64(&first[key]) > v) co_min64(&first[key], v); /* smallest id at least depth */
}

enum { CO_INS_OLD = 0, CO_INS_NEW = 1, CO_INS_DROPPED = 2 };

CO_FN int co_insert(uint64_t *ctx, const co_state *s, uint64_t h, uint32_t parent,
                    uint32_t *id) {
    uint32_t *table = (uint32_t *)(uintptr_t)ctx[CTX_TABLE];
    const int log2 = (int)ctx[CTX_LOG2];
    const uint64_t mask = ((uint64_t)1 << log2) - 1;
    const uint32_t imask = (uint32_t)mask;
    const uint32_t tag = log2 < 32 ? (uint32_t)(h >> (32 + log2)) << log2 : 0;
    const uint32_t busy = tag | imask;
    for (uint64_t at = h & mask;; at = (at + 1) & mask) {
        uint32_t v = co_load32(&table[at]);
        for (;;) {
            if (v == 0) {
                if (co_load64(&ctx[CTX_COUNT]) >= ctx[CTX_HARD]) {
                    co_store64(&ctx[CTX_OVERFLOW], 1);
                    return CO_INS_DROPPED;
                }
                const uint32_t was = co_cas32(&table[at], 0, busy);
                if (was != 0) { v = was; continue; } /* taken: look at what they wrote */
                const uint64_t n = co_add64(&ctx[CTX_COUNT], 1);
                uint8_t *p = co_state_at(ctx, n);
                for (int i = 0; i < CO_BYTES; i++) p[i] = (uint8_t)(s->w[i >> 3] >> (8 * (i & 7)));
                *co_parent_at(ctx, n) = parent;
                co_fence();
                co_xchg32(&table[at], tag | (uint32_t)(n + 1));
                *id = (uint32_t)n;
                return CO_INS_NEW;
            }
            if ((v & ~imask) != tag) break; /* another state: next slot */
            if ((v & imask) == imask) {     /* same tag, being written: wait for its id */
                do { v = co_load32(&table[at]); } while ((v & imask) == imask);
                continue;
            }
            const uint64_t other = (v & imask) - 1;
            if (co_same(ctx, other, s)) {
                *id = (uint32_t)other;
                return CO_INS_OLD;
            }
            break;
        }
    }
}

/* Whether s is stored (a read-only probe, used before canonicalizing). */
CO_FN int co_lookup(const uint64_t *ctx, const co_state *s, uint64_t h) {
    const uint32_t *table = (const uint32_t *)(uintptr_t)ctx[CTX_TABLE];
    const int log2 = (int)ctx[CTX_LOG2];
    const uint64_t mask = ((uint64_t)1 << log2) - 1;
    const uint32_t imask = (uint32_t)mask;
    const uint32_t tag = log2 < 32 ? (uint32_t)(h >> (32 + log2)) << log2 : 0;
    for (uint64_t at = h & mask;; at = (at + 1) & mask) {
        const uint32_t v = co_load32((uint32_t *)&table[at]);
        if (v == 0) return 0;
        if ((v & ~imask) != tag || (v & imask) == imask) continue;
        if (co_same(ctx, (v & imask) - 1, s)) return 1;
    }
}

/* A new state: its invariants are checked once, when it is stored. */
CO_FN void co_check_new(uint64_t *ctx, const co_state *s, uint32_t id, uint64_t depth) {
    int keys[CO_NUM_KEYS + 1];
    const int n = co_check_state(s, keys, CO_NUM_KEYS + 1);
    for (int i = 0; i < n && i < CO_NUM_KEYS + 1; i++) co_record_failure(ctx, keys[i], id, depth);
}

CO_SINK_FN void co_emit_state(co_sink *sink, const void *succ) {
    co_state s = *(const co_state *)succ;
    uint64_t h = co_hash(&s);
    if (sink->ctx[CTX_SYMMETRY]) {
        /* a stored state is its orbit's representative: canonicalizing it would give it back */
        if (co_lookup(sink->ctx, &s, h)) return;
        co_canonicalize(&s);
        h = co_hash(&s);
    }
    uint32_t id;
    if (co_insert(sink->ctx, &s, h, sink->parent, &id) == CO_INS_NEW)
        co_check_new(sink->ctx, &s, id, (uint64_t)sink->depth + 1);
}

CO_SINK_FN void co_emit_failure(co_sink *sink, int key) {
    sink->failures++;
    if (key >= 0 && key < CO_NUM_KEYS) co_record_failure(sink->ctx, key, sink->parent, sink->depth);
}

/* ------------------------------------------------------------------ kernels */

/* Expands the states [lo, hi) of depth `depth`; counts the rules fired into CTX_RULES. */
CO_KERNEL void co_k_expand(uint64_t *ctx, uint64_t lo, uint64_t hi, uint64_t depth) {
    const uint64_t id = lo + CO_TID();
    if (id >= hi) return;
    co_state s;
    co_load(ctx, id, &s);
    co_sink sink;
    sink.ctx = ctx;
    sink.parent = (uint32_t)id;
    sink.depth = (uint32_t)depth;
    sink.failures = 0;
    int live = 0, problems = 0;
    const int fired = co_expand(&s, &sink, &live, &problems);
    co_add_rules(&ctx[CTX_RULES], (uint64_t)(fired > 0 ? fired : 0));
    if (ctx[CTX_DEADLOCK] && live == 0 && problems == 0 && sink.failures == 0 && !co_quiescent(&s))
        co_record_failure(ctx, CO_NUM_KEYS, (uint32_t)id, depth);
}

/* Stores the initial states [lo, hi) of co_initial's list (canonical under symmetry); the
 * host launches one thread per initial state (CO_INIT_MAX of them). */
CO_KERNEL void co_k_initial(uint64_t *ctx, uint64_t lo, uint64_t hi, uint64_t unused) {
    (void)unused;
    const uint64_t i = lo + CO_TID();
    if (i >= hi) return;
    co_state init[CO_INIT_MAX];
    const int n = co_initial(init, CO_INIT_MAX);
    if ((int)i >= n) return;
    co_state s = init[i];
    if (ctx[CTX_SYMMETRY]) co_canonicalize(&s);
    uint32_t id;
    if (co_insert(ctx, &s, co_hash(&s), CO_NONE, &id) == CO_INS_NEW) co_check_new(ctx, &s, id, 0);
}

/* Puts the ids [lo, hi) into the (new, empty) table: every stored state is distinct. */
CO_KERNEL void co_k_rehash(uint64_t *ctx, uint64_t lo, uint64_t hi, uint64_t unused) {
    (void)unused;
    const uint64_t id = lo + CO_TID();
    if (id >= hi) return;
    co_state s;
    co_load(ctx, id, &s);
    const uint64_t h = co_hash(&s);
    uint32_t *table = (uint32_t *)(uintptr_t)ctx[CTX_TABLE];
    const int log2 = (int)ctx[CTX_LOG2];
    const uint64_t mask = ((uint64_t)1 << log2) - 1;
    const uint32_t tag = log2 < 32 ? (uint32_t)(h >> (32 + log2)) << log2 : 0;
    for (uint64_t at = h & mask;; at = (at + 1) & mask)
        if (co_load32(&table[at]) == 0 && co_cas32(&table[at], 0, tag | (uint32_t)(id + 1)) == 0)
            return;
}
