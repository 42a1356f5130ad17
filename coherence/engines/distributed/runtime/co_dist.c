/* One distributed worker's partition: a hash set of packed states with batch entry points.
 *
 * Built per model together with the generated model source (co_model.c, from
 * coherence.engines.cgen), as the compiled engine's runtime is, but with no search loop of its
 * own: the Python actor (worker.py) drives it level by level, and every call takes or returns
 * flat arrays of packed states (CO_WORDS uint64 each), so no state is ever a Python object.
 *
 *   dw_insert  - a batch of states into the set: which are new (they get the next indices, in
 *                order, so a level's new states are a contiguous range of indices);
 *   dw_check   - the invariants of a range of stored states (first index per failure key);
 *   dw_expand  - the successors of a range of stored states, each with its parent's index,
 *                canonicalised under symmetry, less those known to be stored or sent
 *                already, and the action errors and deadlocks found;
 *   dw_owners  - the worker that owns each state (its hash modulo the number of workers).
 *
 * The set is open addressing with linear probing over int64 slots (index + 1, 0 empty),
 * doubled at load 1/2; the states array grows by doubling. One handle per partition.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CO_FN static inline
typedef struct co_sink co_sink;
CO_FN void co_emit_state(co_sink *sink, const void *succ);
CO_FN void co_emit_failure(co_sink *sink, int key);

#include "co_model.c"

struct co_sink {
    uint64_t *out;   /* room for cap states */
    int64_t n, cap;
    int overflow;
    int failures;
    int64_t parent;
    int64_t *first;  /* CO_NUM_KEYS + 1 entries: the first index showing each key, or -1 */
};

CO_FN void co_emit_state(co_sink *k, const void *succ) {
    if (k->n < k->cap)
        memcpy(k->out + (size_t)k->n * CO_WORDS, succ, sizeof(co_state));
    else
        k->overflow = 1;
    k->n++;
}

CO_FN void co_emit_failure(co_sink *k, int key) {
    k->failures++;
    if (key >= 0 && key < CO_NUM_KEYS && k->first[key] < 0) k->first[key] = k->parent;
}

static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static uint64_t hash_state(const uint64_t *w) {
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < CO_WORDS; i++) h = mix(h ^ w[i]);
    return h;
}

#define SENT_LOG2 16 /* successors remembered as sent: a direct-mapped cache of states */

typedef struct {
    uint64_t *states;
    int64_t count, room;
    int64_t *table;
    uint64_t mask;
    uint64_t *sent; /* (1 << SENT_LOG2) states + a used flag each, allocated on first use */
} dw_set;

int dw_words(void) { return CO_WORDS; }
int dw_bits(void) { return CO_BITS; }
int dw_num_keys(void) { return CO_NUM_KEYS; }

void *dw_new(void) {
    dw_set *s = calloc(1, sizeof *s);
    if (s == NULL) return NULL;
    s->room = 1024;
    s->states = malloc((size_t)s->room * sizeof(co_state));
    s->mask = 4095;
    s->table = calloc(s->mask + 1, sizeof(int64_t));
    if (s->states == NULL || s->table == NULL) {
        free(s->states);
        free(s->table);
        free(s);
        return NULL;
    }
    return s;
}

void dw_free(void *h) {
    dw_set *s = h;
    if (s == NULL) return;
    free(s->states);
    free(s->table);
    free(s->sent);
    free(s);
}

int64_t dw_count(void *h) { return ((dw_set *)h)->count; }

/* Bytes the partition holds (states and table). */
int64_t dw_bytes(void *h) {
    dw_set *s = h;
    return s->room * (int64_t)sizeof(co_state) + (int64_t)(s->mask + 1) * 8;
}

static int grow_table(dw_set *s) {
    uint64_t mask = s->mask * 2 + 1;
    int64_t *table = calloc(mask + 1, sizeof(int64_t));
    if (table == NULL) return -1;
    for (int64_t i = 0; i < s->count; i++) {
        uint64_t at = hash_state(s->states + (size_t)i * CO_WORDS) & mask;
        while (table[at]) at = (at + 1) & mask;
        table[at] = i + 1;
    }
    free(s->table);
    s->table = table;
    s->mask = mask;
    return 0;
}

/* Inserts states[0..n); index_out[i] is the new state's index, or -1 if it was stored
 * already. Returns how many were new, -1 when memory ran out (the set stays consistent:
 * states before the failing one are in). */
int64_t dw_insert(void *h, const uint64_t *states, int64_t n, int64_t *index_out) {
    dw_set *s = h;
    int64_t fresh = 0;
    for (int64_t i = 0; i < n; i++) {
        const uint64_t *w = states + (size_t)i * CO_WORDS;
        if ((uint64_t)(s->count + 1) * 2 > s->mask + 1 && grow_table(s) < 0) return -1;
        if (s->count == s->room) {
            uint64_t *more = realloc(s->states, (size_t)s->room * 2 * sizeof(co_state));
            if (more == NULL) return -1;
            s->states = more;
            s->room *= 2;
        }
        uint64_t at = hash_state(w) & s->mask;
        int64_t found = -1;
        for (; s->table[at]; at = (at + 1) & s->mask) {
            int64_t j = s->table[at] - 1;
            if (memcmp(s->states + (size_t)j * CO_WORDS, w, sizeof(co_state)) == 0) {
                found = j;
                break;
            }
        }
        if (found >= 0) {
            index_out[i] = -1;
            continue;
        }
        memcpy(s->states + (size_t)s->count * CO_WORDS, w, sizeof(co_state));
        s->table[at] = s->count + 1;
        index_out[i] = s->count++;
        fresh++;
    }
    return fresh;
}

/* The index of the stored state w (hash h), or -1. */
static int64_t find(const dw_set *s, const uint64_t *w, uint64_t h) {
    for (uint64_t at = h & s->mask; s->table[at]; at = (at + 1) & s->mask) {
        int64_t j = s->table[at] - 1;
        if (memcmp(s->states + (size_t)j * CO_WORDS, w, sizeof(co_state)) == 0) return j;
    }
    return -1;
}

/* Whether successor w (hash h) need not be sent: it is this worker's and stored already, or
 * it was sent before (the cache remembers the last successor per slot; a successor sent at an
 * earlier level is stored by its owner now, one sent at this level gets there with a parent
 * of the same depth). Only drops duplicates, so the search is the same, with less traffic. */
static int already_sent(dw_set *s, const uint64_t *w, uint64_t h, int workers, int self) {
    if ((int)((h >> 32) % (uint64_t)workers) == self && find(s, w, h) >= 0) return 1;
    if (s->sent == NULL) return 0;
    uint64_t *slot = s->sent + (size_t)(h & ((1u << SENT_LOG2) - 1)) * (CO_WORDS + 1);
    if (slot[CO_WORDS] && memcmp(slot, w, sizeof(co_state)) == 0) return 1;
    memcpy(slot, w, sizeof(co_state));
    slot[CO_WORDS] = 1;
    return 0;
}

/* Copies the stored states [first, last) to out. */
void dw_get(void *h, int64_t first, int64_t last, uint64_t *out) {
    dw_set *s = h;
    memcpy(out, s->states + (size_t)first * CO_WORDS, (size_t)(last - first) * sizeof(co_state));
}

/* The initial states (canonical under symmetry); returns how many there are (more than max:
 * call again with room for them). */
int64_t dw_initial(uint64_t *out, int64_t max, int symmetry) {
    int n = co_initial((co_state *)out, (int)max);
    if (n <= max && symmetry)
        for (int i = 0; i < n; i++) co_canonicalize((co_state *)out + i);
    return n;
}

void dw_owners(const uint64_t *states, int64_t n, int workers, int32_t *out) {
    for (int64_t i = 0; i < n; i++)
        out[i] = (int32_t)((hash_state(states + (size_t)i * CO_WORDS) >> 32) % (uint64_t)workers);
}

/* Invariants of the stored states [first, last): first[k] = the first index showing key k
 * (left alone where it is set already). */
void dw_check(void *h, int64_t from, int64_t last, int64_t *first) {
    dw_set *s = h;
    int keys[CO_NUM_KEYS + 1];
    for (int64_t i = from; i < last; i++) {
        int n = co_check_state((const co_state *)(s->states + (size_t)i * CO_WORDS), keys,
                               CO_NUM_KEYS + 1);
        for (int j = 0; j < n && j < CO_NUM_KEYS + 1; j++)
            if (keys[j] >= 0 && keys[j] < CO_NUM_KEYS && first[keys[j]] < 0)
                first[keys[j]] = i;
    }
}

/* Expands the stored states [from, last) into out (room for cap states) with each
 * successor's parent index in parents, until a state's successors do not fit. Returns the
 * index reached (from when even the first state's successors do not fit: give more room);
 * *n_out successors were written, *rules counts the actions fired, first[k] the first index
 * whose expansion showed action error k (k = CO_NUM_KEYS: a deadlock). */
int64_t dw_expand(void *h, int64_t from, int64_t last, int symmetry, int deadlock,
                  int workers, int self, uint64_t *out, int64_t *parents, int64_t cap,
                  int64_t *n_out, int64_t *first, uint64_t *rules) {
    dw_set *s = h;
    co_sink k = {out, 0, cap, 0, 0, 0, first};
    if (s->sent == NULL)
        s->sent = calloc((size_t)1 << SENT_LOG2, (CO_WORDS + 1) * sizeof(uint64_t));
    int64_t i;
    for (i = from; i < last; i++) {
        co_state st;
        memcpy(&st, s->states + (size_t)i * CO_WORDS, sizeof st);
        int64_t before = k.n;
        k.parent = i;
        k.failures = 0;
        int live = 0, problems = 0;
        int fired = co_expand(&st, &k, &live, &problems);
        if (k.overflow) { /* roll this state back; the caller comes again with room */
            k.n = before;
            break;
        }
        int64_t kept = before;
        for (int64_t j = before; j < k.n; j++) {
            uint64_t *w = out + (size_t)j * CO_WORDS;
            if (symmetry) co_canonicalize((co_state *)w);
            if (already_sent(s, w, hash_state(w), workers, self)) continue;
            if (kept != j) memcpy(out + (size_t)kept * CO_WORDS, w, sizeof(co_state));
            parents[kept++] = i;
        }
        k.n = kept;
        *rules += (uint64_t)(fired > 0 ? fired : 0);
        if (deadlock && live == 0 && problems == 0 && k.failures == 0 && !co_quiescent(&st) &&
            first[CO_NUM_KEYS] < 0)
            first[CO_NUM_KEYS] = i;
    }
    *n_out = k.n;
    return i;
}
