/* The compiled engine's fixed runtime: multi-threaded breadth-first search over packed states.
 *
 * Built once per model together with the generated model source (co_model.c, see
 * co_runtime.h and the contract in docs / COMPILED.md):
 *   cc -std=c11 -O3 -march=native -fPIC -shared -pthread co_runtime.c -I<dir of co_model.c>
 *
 * Storage (what makes a state cost CO_BYTES + 4 + 4/load bytes, lossless):
 *   - states: one contiguous array of packed states, CO_BYTES = ceil(CO_BITS / 8) bytes each
 *     (the little-endian bytes of layout.pack(), unused high bytes dropped); a state's id is
 *     its index. The array is a virtual-memory reservation (mmap, MAP_NORESERVE) as large as
 *     the memory limit allows, so it grows without moving and without locks: pages are
 *     committed as they are first written.
 *   - parents: one uint32 id per state, for the shortest path back to an initial state.
 *   - the visited set: an open-addressing table of uint32 slots, linear probing, lock-free
 *     insertion with compare-and-swap (Laarman, van de Pol, Weber, "Boosting multi-core
 *     reachability performance with shared hash tables", FMCAD 2010; Rumur's header.c).
 *     A slot holds the state's id, not the state: 4 bytes a slot instead of 16+, so the
 *     table can be kept at a low load (fast probing) for little memory, and doubling it
 *     moves 4-byte slots, never states or parent references. The bits of a slot that the id
 *     does not need (32 - log2(capacity)) hold the top bits of the state's hash, so a probe
 *     reads the state array only when those bits match (Laarman's "hash memoization").
 *     Slot values: 0 empty; tag|idmask "being written" (claimed, id not yet known);
 *     tag|(id+1) a stored state.
 *
 * Insertion (no locks): claim an empty slot by CAS 0 -> tag|busy, take the next id from the
 * global counter (fetch-add), write the state and its parent, then publish tag|(id+1) with a
 * release store. A prober that meets a busy slot with its own tag waits (a few nanoseconds:
 * one memcpy) for the id. Because ids are handed out only to new states, the states found in
 * level d+1 are exactly the ids [end of level d, count): the next frontier needs no queue and
 * no merge, and a chunk of the level is a range of ids.
 *
 * Search: level-synchronous BFS. Each level is cut into chunks of ids that the threads take
 * with a fetch-add (dynamic load balance); the successors of several states are buffered
 * and stored through a prefetching pipeline (flush_sink: memory-level parallelism on the
 * cache misses that dominate the hot loop). Invariants are checked when a state is first stored, actions
 * when it is expanded, so every failure key's first occurrence is at minimal depth: all of
 * level d is finished before level d+1 starts, and the first CAS on a key's record wins.
 *
 * Growth: the table doubles when its load reaches 3/4. Resizing a concurrent table in place
 * is hard, so the threads stop the world instead: every thread is "active" while it may
 * touch the table and leaves that state only at safe points (before a probe, at the end of
 * its share of the level). The thread that sees the table full enough leaves, becomes the
 * resizer with a CAS, waits until no thread is active, rehashes every id into a table twice
 * as large (reading the state array sequentially, prefetching the new slots), and lets the
 * others in again; threads that wait meanwhile take chunks of the rehash. Seq_cst
 * operations on `active`/`resizing` make this the classic Dekker handshake.
 *
 * Limits: ids are uint32 (at most 2^32 - 3 states); the memory limit bounds states, parents
 * and table together; a stop (limit, co_request_stop) ends every thread after the state it is
 * expanding and leaves a consistent partial result (states, parents, failures so far).
 */
#define _GNU_SOURCE
#include "co_runtime.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "co_model.c"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the packed state format is little-endian; this host is not"
#endif

#define CO_BYTES ((CO_BITS + 7) / 8 > 0 ? (CO_BITS + 7) / 8 : 1)
#define CO_NONE UINT32_MAX      /* no parent */
#define CO_NO_FAILURE UINT64_MAX
#define SINK_MAX 512            /* successors buffered (of several states) */
#define SINK_FLUSH 256          /* stored once a state's expansion leaves this many */
#define DEFAULT_TABLE_LOG2 16
#define MIN_TABLE_LOG2 8
#define MAX_IDS ((uint64_t)UINT32_MAX - 2) /* ids + 1 and the busy marker fit 32 bits */

struct co_log;
static void log_edge(struct co_log *log, uint32_t src, uint32_t dst, uint64_t hi, uint64_t lo);
static void *reserve(uint64_t bytes);

typedef struct {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    int count, waiting;
    unsigned generation;
} co_barrier;

struct co_sink {
    uint32_t parent; /* the state being expanded */
    uint64_t depth;  /* its depth */
    int failures;    /* co_emit_failure calls for it */
    int n;           /* buffered successors */
    uint64_t hash[SINK_MAX];
    uint32_t parents[SINK_MAX];
    co_state buf[SINK_MAX];
    uint64_t rules;  /* local counter, flushed per chunk */
    uint64_t cycles_model, cycles_store; /* CO_PROFILE only */
    uint64_t task_hi, task_lo;          /* co_set_task: the action being tried */
    uint64_t thi[SINK_MAX], tlo[SINK_MAX]; /* co_options.graph: each successor's task */
    struct co_log *log;                 /* co_options.graph: this thread's edges */
};

/* The search. Fields that every thread writes often (count: every new state; next and the
 * counters: every chunk) sit on cache lines of their own, apart from the read-mostly fields
 * that every probe reads (false sharing would make each new state a cross-core miss). */
static struct {
    _Alignas(64) co_options opt;   /* read-mostly from here */
    uint8_t *states;               /* CO_BYTES per id */
    uint32_t *parents;
    uint64_t reserved_ids;         /* size of the two reservations */
    _Atomic uint32_t *table;
    uint64_t cap, mask;
    int idbits;
    uint64_t grow_at, hard_at;     /* counts at which to grow / at which inserting stops */
    uint64_t id_limit;             /* ids the memory limit allows with the current table */
    bool no_grow;                  /* the memory limit forbids doubling again */
    _Atomic int stop;              /* a CO_STOP_* reason, 0 while running */
    _Atomic int resizing;
    uint64_t level_start, level_end;
    bool finished;
    _Alignas(64) _Atomic uint64_t count;
    _Alignas(64) _Atomic uint64_t next; /* next unclaimed id of the level */
    _Alignas(64) _Atomic int active;
    _Alignas(64) _Atomic uint64_t first[CO_NUM_KEYS + 1]; /* depth << 32 | id */
    _Alignas(64) _Atomic uint64_t rules, expanded, depth, frontier, bytes, peak, resizes,
        resize_ns, slots;
    _Atomic uint64_t cycles_model, cycles_store;
    _Atomic int64_t result;
    co_barrier barrier;
} S;

/* ------------------------------------------------------------------ helpers */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void wait_a_little(unsigned *spins) {
    if (++*spins < 64) {
        cpu_relax();
    } else {
        /* the machine may have fewer free cores than threads: give the CPU away */
        struct timespec ts = {0, 50000};
        nanosleep(&ts, NULL);
    }
}

static inline uint64_t hash_state(const co_state *s) {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < CO_WORDS; i++) {
        h = (h ^ s->w[i]) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 29;
    }
    h ^= h >> 32; /* splitmix64's finalizer */
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return h;
}

/* The stored bytes of a state equal those of s (constant sizes: no call to memcmp). */
static inline bool same_state(const uint8_t *stored, const co_state *s) {
    const uint8_t *mine = (const uint8_t *)s->w;
    int i = 0;
    for (; i + 8 <= CO_BYTES; i += 8) {
        uint64_t a, b;
        memcpy(&a, stored + i, 8);
        memcpy(&b, mine + i, 8);
        if (a != b) return false;
    }
    for (; i < CO_BYTES; i++)
        if (stored[i] != mine[i]) return false;
    return true;
}

static inline void load_state(uint64_t id, co_state *out) {
    memset(out, 0, sizeof *out);
    memcpy(out->w, S.states + id * CO_BYTES, CO_BYTES);
}

static void request_stop(int reason) {
    int expected = 0;
    atomic_compare_exchange_strong(&S.stop, &expected, reason);
}

void co_request_stop(void) { request_stop(CO_STOP_INTERRUPT); }

static void record_failure(int key, uint32_t id, uint64_t depth) {
    uint64_t expected = CO_NO_FAILURE;
    if (key < 0 || key > CO_NUM_KEYS) return; /* a model bug; Python checks the keys */
    if (atomic_load_explicit(&S.first[key], memory_order_relaxed) != CO_NO_FAILURE) return;
    atomic_compare_exchange_strong(&S.first[key], &expected, depth << 32 | id);
}

static void note_bytes(uint64_t bytes) {
    atomic_store(&S.bytes, bytes);
    uint64_t peak = atomic_load(&S.peak);
    while (bytes > peak && !atomic_compare_exchange_weak(&S.peak, &peak, bytes)) {
    }
}

static uint64_t storage_bytes(uint64_t count, uint64_t cap) {
    return count * (CO_BYTES + 4) + cap * 4;
}

static void barrier_init(co_barrier *b, int count) {
    pthread_mutex_init(&b->mutex, NULL);
    pthread_cond_init(&b->cond, NULL);
    b->count = count;
    b->waiting = 0;
    b->generation = 0;
}

static void barrier_wait(co_barrier *b) {
    pthread_mutex_lock(&b->mutex);
    unsigned gen = b->generation;
    if (++b->waiting == b->count) {
        b->waiting = 0;
        b->generation++;
        pthread_cond_broadcast(&b->cond);
    } else {
        while (gen == b->generation) pthread_cond_wait(&b->cond, &b->mutex);
    }
    pthread_mutex_unlock(&b->mutex);
}

/* ------------------------------------------------------------------ the liveness graph */

/* co_options.graph: each thread logs the edges it stores (target, task: 6 bytes, 8 once the
 * thread has seen more than 32,767 tasks), in the order it stores them, in fixed blocks (never
 * copied; mapped and unmapped one by one, so a freed block goes back to the system at once,
 * never into malloc's free lists: NOTE(graph-memory) in coherence/engines/compiled/graph.py),
 * so a state's edges are one thread's, consecutive, in the order the model emitted them: the
 * sources are kept as runs (a source and its edge count). A task is interned per thread (a
 * small open-addressing table of its key pairs), and the threads' tables are merged once,
 * after the search (co_graph_sizes). */
#define LOG_BLOCK (1u << 18) /* edges per block: 1.5 MiB (2 MiB wide) */
#define CO_TASK_STRONG ((uint64_t)1 << 60)

typedef struct {
    uint64_t *hi, *lo;
    uint8_t *strong;
    uint32_t n, cap;  /* ids in use, id capacity */
    uint32_t *slots;  /* id + 1, 0 empty */
    uint32_t smask;   /* slots - 1 */
} co_task_table;

typedef struct co_block {
    struct co_block *next;
    uint32_t n;
    bool wide;                /* task holds LOG_BLOCK int32_t, else LOG_BLOCK int16_t */
    uint32_t dst[LOG_BLOCK];
    int16_t task[];           /* the thread's own task ids, -1 unfair */
} co_block;

static size_t block_bytes(bool wide) {
    return sizeof(co_block) + (size_t)LOG_BLOCK * (wide ? sizeof(int32_t) : sizeof(int16_t));
}

static inline int32_t block_task(const co_block *b, uint32_t at) {
    return b->wide ? ((const int32_t *)b->task)[at] : b->task[at];
}

typedef struct co_log {
    co_block *head, *tail;
    uint64_t n;                 /* edges */
    uint32_t *run_src, *run_len; /* runs of edges of one source */
    uint64_t runs, run_cap;
    co_task_table tasks;
    int32_t *global; /* after the merge: local task id -> global id */
    bool failed;     /* an allocation failed: the search was stopped */
} co_log;

static struct {
    co_log *logs;
    int nlogs;
    _Atomic uint64_t log_bytes; /* edge blocks, counted against the memory limit */
    co_task_table tasks; /* merged */
    bool merged;
    uint64_t edges;
} G;

static uint64_t task_hash(uint64_t hi, uint64_t lo) {
    uint64_t h = (hi * 0x9E3779B97F4A7C15ull) ^ lo;
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    return h;
}

static void table_free(co_task_table *t) {
    free(t->hi);
    free(t->lo);
    free(t->strong);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

/* The id of (hi, lo) in t, added if new; -1 when memory ran out. */
static int32_t intern_task(co_task_table *t, uint64_t hi, uint64_t lo, bool strong) {
    if (t->slots == NULL || (uint64_t)(t->n + 1) * 2 > (uint64_t)t->smask + 1) {
        uint32_t size = t->slots == NULL ? 64 : (t->smask + 1) * 2;
        uint32_t *slots = calloc(size, sizeof *slots);
        if (slots == NULL) return -1;
        for (uint32_t i = 0; i < t->n; i++) {
            uint32_t at = (uint32_t)task_hash(t->hi[i], t->lo[i]) & (size - 1);
            while (slots[at]) at = (at + 1) & (size - 1);
            slots[at] = i + 1;
        }
        free(t->slots);
        t->slots = slots;
        t->smask = size - 1;
    }
    uint32_t at = (uint32_t)task_hash(hi, lo) & t->smask;
    for (; t->slots[at]; at = (at + 1) & t->smask) {
        uint32_t i = t->slots[at] - 1;
        if (t->hi[i] == hi && t->lo[i] == lo) {
            if (strong) t->strong[i] = 1;
            return (int32_t)i;
        }
    }
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        uint64_t *h = realloc(t->hi, cap * sizeof *h);
        if (h == NULL) return -1;
        t->hi = h;
        uint64_t *l = realloc(t->lo, cap * sizeof *l);
        if (l == NULL) return -1;
        t->lo = l;
        uint8_t *s = realloc(t->strong, cap);
        if (s == NULL) return -1;
        t->strong = s;
        t->cap = cap;
    }
    uint32_t i = t->n++;
    t->hi[i] = hi;
    t->lo[i] = lo;
    t->strong[i] = strong;
    t->slots[at] = i + 1;
    return (int32_t)i;
}

static void log_failed(co_log *log) {
    log->failed = true;
    request_stop(CO_STOP_MEMORY);
}

static void log_edge(co_log *log, uint32_t src, uint32_t dst, uint64_t hi, uint64_t lo) {
    if (log->failed) return;
    int32_t task = -1;
    if (hi != 0) {
        task = intern_task(&log->tasks, hi & ~CO_TASK_STRONG, lo, (hi & CO_TASK_STRONG) != 0);
        if (task < 0) { log_failed(log); return; }
    }
    bool wide = log->tasks.n > INT16_MAX; /* some id of this thread may not fit 16 bits */
    if (log->tail == NULL || log->tail->n == LOG_BLOCK || (wide && !log->tail->wide)) {
        /* NOTE(memory-limit): the edges count against the limit with the state storage */
        size_t bytes = block_bytes(wide);
        uint64_t logs = atomic_fetch_add(&G.log_bytes, bytes) + bytes;
        if (logs + atomic_load(&S.bytes) > S.opt.memory_limit) { log_failed(log); return; }
        co_block *block = reserve(bytes);
        if (block == NULL) { log_failed(log); return; }
        block->next = NULL;
        block->n = 0;
        block->wide = wide;
        if (log->tail != NULL) log->tail->next = block;
        else log->head = block;
        log->tail = block;
    }
    if (log->runs == 0 || log->run_src[log->runs - 1] != src) {
        if (log->runs == log->run_cap) {
            uint64_t cap = log->run_cap ? log->run_cap * 2 : 4096;
            uint32_t *a = realloc(log->run_src, cap * sizeof *a);
            if (a == NULL) { log_failed(log); return; }
            log->run_src = a;
            uint32_t *b = realloc(log->run_len, cap * sizeof *b);
            if (b == NULL) { log_failed(log); return; }
            log->run_len = b;
            log->run_cap = cap;
        }
        log->run_src[log->runs] = src;
        log->run_len[log->runs++] = 0;
    }
    co_block *block = log->tail;
    block->dst[block->n] = dst;
    if (block->wide) ((int32_t *)block->task)[block->n++] = task;
    else block->task[block->n++] = (int16_t)task;
    log->run_len[log->runs - 1]++;
    log->n++;
}

static void block_free(co_block *b) { munmap(b, block_bytes(b->wide)); }

static void log_free_edges(co_log *log) {
    for (co_block *b = log->head; b != NULL;) {
        co_block *next = b->next;
        block_free(b);
        b = next;
    }
    log->head = log->tail = NULL;
    free(log->run_src);
    free(log->run_len);
    log->run_src = log->run_len = NULL;
    log->n = log->runs = log->run_cap = 0;
}

static void graph_free(void) {
    for (int i = 0; i < G.nlogs && G.logs != NULL; i++) {
        co_log *log = &G.logs[i];
        log_free_edges(log);
        free(log->global);
        table_free(&log->tasks);
    }
    free(G.logs);
    table_free(&G.tasks);
    memset(&G, 0, sizeof G);
}

int co_graph_sizes(uint64_t *states, uint64_t *edges, uint64_t *tasks) {
    if (G.logs == NULL) return -1;
    if (!G.merged) {
        G.edges = 0;
        for (int i = 0; i < G.nlogs; i++) {
            co_log *log = &G.logs[i];
            if (log->failed) return -1;
            G.edges += log->n;
            log->global = malloc(((size_t)log->tasks.n + 1) * sizeof(int32_t));
            if (log->global == NULL) return -1;
            for (uint32_t j = 0; j < log->tasks.n; j++) {
                log->global[j] = intern_task(&G.tasks, log->tasks.hi[j], log->tasks.lo[j],
                                             log->tasks.strong[j]);
                if (log->global[j] < 0) return -1;
            }
        }
        G.merged = true;
        /* the search is over: its hash table is not needed to read states by id */
        if (S.table != NULL) munmap((void *)S.table, S.cap * 4);
        S.table = NULL;
    }
    *states = atomic_load(&S.count);
    *edges = G.edges;
    *tasks = G.tasks.n;
    return 0;
}

/* One edge's task in an array of task_bytes-wide signed ids (1, 2 or 4; -1: unfair). */
static inline int32_t task_at(const void *task, int task_bytes, int64_t e) {
    switch (task_bytes) {
    case 1: return ((const int8_t *)task)[e];
    case 2: return ((const int16_t *)task)[e];
    default: return ((const int32_t *)task)[e];
    }
}

static inline void task_put(void *task, int task_bytes, int64_t e, int32_t k) {
    switch (task_bytes) {
    case 1: ((int8_t *)task)[e] = (int8_t)k; break;
    case 2: ((int16_t *)task)[e] = (int16_t)k; break;
    default: ((int32_t *)task)[e] = k; break;
    }
}

/* NOTE(graph-memory): the rows are written in order of source, merging the threads' logs (each
 * holds its sources in increasing order), so first, dst and task are written front to back
 * (the caller may hand in memory that is committed as it is first written) while each log
 * block is unmapped as soon as it is read: the logs and the rows are never both whole. */
int co_graph_fill(int64_t *first, int32_t *dst, void *task, int task_bytes) {
    if (!G.merged) return -1;
    uint64_t n = atomic_load(&S.count);
    memset(first, 0, (n + 1) * sizeof *first);
    for (int i = 0; i < G.nlogs; i++) {
        co_log *log = &G.logs[i];
        for (uint64_t r = 0; r < log->runs; r++) first[log->run_src[r] + 1] += log->run_len[r];
    }
    for (uint64_t s = 0; s < n; s++) first[s + 1] += first[s];
    int nl = G.nlogs;
    uint64_t *run = calloc((size_t)(nl > 0 ? nl : 1), sizeof *run);
    uint32_t *at = calloc((size_t)(nl > 0 ? nl : 1), sizeof *at);
    co_block **block = calloc((size_t)(nl > 0 ? nl : 1), sizeof *block);
    if (run == NULL || at == NULL || block == NULL) {
        free(run); free(at); free(block);
        return -1;
    }
    for (int i = 0; i < nl; i++) block[i] = G.logs[i].head;
    for (;;) {
        int best = -1;
        uint32_t src = 0;
        for (int i = 0; i < nl; i++) {
            co_log *log = &G.logs[i];
            if (run[i] < log->runs && (best < 0 || log->run_src[run[i]] < src)) {
                best = i;
                src = log->run_src[run[i]];
            }
        }
        if (best < 0) break;
        co_log *log = &G.logs[best];
        int64_t to = first[src];
        for (uint32_t k = 0; k < log->run_len[run[best]]; k++) {
            if (at[best] == block[best]->n) {
                co_block *next = block[best]->next;
                block_free(block[best]);
                block[best] = next;
                at[best] = 0;
            }
            dst[to] = (int32_t)block[best]->dst[at[best]];
            int32_t t = block_task(block[best], at[best]++);
            task_put(task, task_bytes, to++, t < 0 ? -1 : log->global[t]);
        }
        run[best]++;
    }
    for (int i = 0; i < nl; i++) {
        if (block[i] != NULL) block_free(block[i]);
        G.logs[i].head = G.logs[i].tail = NULL;
        log_free_edges(&G.logs[i]);
    }
    free(run); free(at); free(block);
    return 0;
}

void co_graph_tasks(uint64_t *hi, uint64_t *lo, uint8_t *strong) {
    for (uint32_t i = 0; i < G.tasks.n; i++) {
        hi[i] = G.tasks.hi[i];
        lo[i] = G.tasks.lo[i];
        strong[i] = G.tasks.strong[i];
    }
}

const int32_t *co_parents_view(void) { return (const int32_t *)S.parents; }

void co_parents(int32_t *out) {
    uint64_t n = atomic_load(&S.count);
    for (uint64_t i = 0; i < n; i++) out[i] = (int32_t)S.parents[i]; /* CO_NONE -> -1 */
}

int co_state_at(uint64_t id, uint64_t *out_words) {
    if (S.states == NULL || id >= atomic_load(&S.count)) return -1;
    _Alignas(32) co_state s; /* as in co_live_table */
    load_state(id, &s);
    memcpy(out_words, s.w, sizeof s.w);
    return 0;
}

#ifdef CO_LIVE_INSTANCES
int co_live_instances(void) { return CO_LIVE_INSTANCES; }

int co_live_table(const int32_t *slot, uint8_t *goal, uint8_t *premise, int64_t *err_state) {
    uint64_t n = atomic_load(&S.count);
    uint8_t want[CO_LIVE_INSTANCES + 1], g[CO_LIVE_INSTANCES + 1], p[CO_LIVE_INSTANCES + 1],
        e[CO_LIVE_INSTANCES + 1];
    for (int i = 0; i < CO_LIVE_INSTANCES; i++) {
        want[i] = slot[i] >= 0;
        err_state[i] = -1;
    }
    for (uint64_t id = 0; id < n; id++) {
        /* aligned explicitly: GCC 12 -O3 inlined load_state here with an aligned 16-byte
         * store to this local at an address 8 mod 16 (a crash on hmg.coh at 2 GPUs) */
        _Alignas(32) co_state s;
        load_state(id, &s);
        co_live_eval(&s, want, g, p, e);
        for (int i = 0; i < CO_LIVE_INSTANCES; i++) {
            if (!want[i]) continue;
            if (goal != NULL) { /* NULL: the errors only (NOTE(graph-memory)) */
                goal[(uint64_t)slot[i] * n + id] = g[i];
                premise[(uint64_t)slot[i] * n + id] = p[i];
            }
            if (e[i] && err_state[i] < 0) err_state[i] = (int64_t)id;
        }
    }
    return 0;
}
#else
int co_live_instances(void) { return -1; }

int co_live_table(const int32_t *slot, uint8_t *goal, uint8_t *premise, int64_t *err_state) {
    (void)slot;
    (void)goal;
    (void)premise;
    (void)err_state;
    return -1;
}
#endif

/* ------------------------------------------------------------------ liveness algorithms */

/* The graph algorithms of coherence/liveness/graph.py (that file is their definition and
 * says why each is right), on the same compressed rows, for graphs too large for Python:
 * backward reachability (by components, NOTE(graph-memory)), and the fair sets (iterative
 * Tarjan, the weak-fairness test of each component, strong-fairness refinement).
 * Model-independent;
 * tests/test_liveness_engines.py compares them with graph.py on random graphs. */

int co_alg_forward(int64_t n, const int64_t *first, const int32_t *dst,
                   const uint8_t *sources, const uint8_t *allowed, uint8_t *seen) {
    int32_t *queue = malloc((size_t)(n > 0 ? n : 1) * sizeof *queue);
    if (queue == NULL) return -1;
    int64_t head = 0, tail = 0;
    memset(seen, 0, (size_t)n);
    for (int64_t s = 0; s < n; s++)
        if (sources[s] && (allowed == NULL || allowed[s])) {
            seen[s] = 1;
            queue[tail++] = (int32_t)s;
        }
    while (head < tail) {
        int32_t s = queue[head++];
        for (int64_t e = first[s]; e < first[s + 1]; e++) {
            int32_t w = dst[e];
            if (!seen[w] && (allowed == NULL || allowed[w])) {
                seen[w] = 1;
                queue[tail++] = w;
            }
        }
    }
    free(queue);
    return 0;
}

/* Per state, 8 bytes (a visited target costs one random read). index: -2 outside the region,
 * -1 not visited yet, FINISHED once its component is complete, and then low holds the
 * component's number (NOTE(graph-memory): no third field); else it is on the stack. */
typedef struct {
    int32_t index, low;
} co_tnode;

#define FINISHED INT32_MAX /* above every index: a finished state never lowers a low-link */

/* The component of a state, -1 outside the region or not finished. */
static inline int32_t comp_of(const co_tnode *x) { return x->index == FINISHED ? x->low : -1; }

/* so: the Tarjan stack grows from so[0] up, the finished components' states fill it from
 * so[n - 1] down (a state is on the stack or finished, never both: they never meet); wv and
 * we: the explicit call stack (a state and how far along its edges it is). */
typedef struct {
    co_tnode *node;
    int32_t *so, *wv, *we, *cstart;
    int64_t n;
} co_tarjan;

/* The j-th finished state (components are contiguous: cstart[c] .. cstart[c + 1] - 1). */
static inline int32_t finished(const co_tarjan *t, int32_t j) { return t->so[t->n - 1 - j]; }

/* Tarjan's components of the states with in[s] (every state if in is NULL), iteratively;
 * comp_of(&node[s]) numbers them (-1 outside). Returns the number of components. */
static int32_t tarjan(int64_t n, const int64_t *first, const int32_t *dst, const uint8_t *in,
                      co_tarjan *t) {
    int32_t counter = 0, ncomp = 0, sp = 0, placed = 0;
    co_tnode *node = t->node;
    for (int64_t s = 0; s < n; s++) {
        node[s].index = in == NULL || in[s] ? -1 : -2;
    }
    for (int64_t root = 0; root < n; root++) {
        if (node[root].index != -1) continue;
        node[root].index = node[root].low = counter++;
        t->so[sp++] = (int32_t)root;
        t->wv[0] = (int32_t)root;
        t->we[0] = 0;
        int32_t depth = 1;
        while (depth > 0) {
            int32_t v = t->wv[depth - 1];
            int64_t e = first[v] + t->we[depth - 1], end = first[v + 1];
            bool descended = false;
            int32_t low = node[v].low;
            while (e < end) {
                int32_t w = dst[e++];
                co_tnode *nw = &node[w];
                if (nw->index == -2) continue;
                if (nw->index == -1) {
                    node[v].low = low;
                    t->we[depth - 1] = (int32_t)(e - first[v]);
                    nw->index = nw->low = counter++;
                    t->so[sp++] = w;
                    t->wv[depth] = w;
                    t->we[depth] = 0;
                    depth++;
                    descended = true;
                    break;
                }
                if (nw->index < low) low = nw->index; /* on the stack (FINISHED is not) */
            }
            if (descended) continue;
            node[v].low = low;
            depth--;
            if (depth > 0) {
                int32_t u = t->wv[depth - 1];
                if (low < node[u].low) node[u].low = low;
            }
            if (low == node[v].index) {
                t->cstart[ncomp] = placed;
                for (;;) {
                    int32_t w = t->so[--sp];
                    node[w].index = FINISHED;
                    node[w].low = ncomp;
                    t->so[n - 1 - placed++] = w;
                    if (w == v) break;
                }
                ncomp++;
            }
        }
    }
    t->cstart[ncomp] = placed;
    return ncomp;
}

/* NOTE(graph-memory): backward reachability without predecessor rows. Tarjan's components
 * of the allowed states complete in reverse topological order (a component's successors
 * before it), so when one completes, whether it reaches a target is final: it holds one, or
 * an edge leaves it for an allowed state already known to reach one. One pass over the
 * forward rows, and the rows of predecessors (4 bytes an edge) are never built. */
int co_alg_backward(int64_t n, const int64_t *first, const int32_t *dst,
                    const uint8_t *targets, const uint8_t *allowed, uint8_t *seen) {
    size_t nn = (size_t)(n > 0 ? n : 1);
    co_tarjan t = {malloc(nn * sizeof(co_tnode)), malloc(nn * 4), malloc(nn * 4),
                   malloc(nn * 4), malloc((nn + 1) * 4), n};
    int rc = -1;
    if (!t.node || !t.so || !t.wv || !t.we || !t.cstart) goto out;
    int32_t ncomp = tarjan(n, first, dst, allowed, &t);
    memset(seen, 0, (size_t)n);
    for (int32_t c = 0; c < ncomp; c++) {
        int32_t a = t.cstart[c], b = t.cstart[c + 1];
        bool reach = false;
        for (int32_t i = a; i < b && !reach; i++) {
            int32_t s = finished(&t, i);
            if (targets[s]) { reach = true; break; }
            for (int64_t e = first[s]; e < first[s + 1]; e++) {
                int32_t w = dst[e];
                int32_t cw = comp_of(&t.node[w]);
                if (cw >= 0 && cw != c && seen[w]) {
                    reach = true;
                    break;
                }
            }
        }
        if (reach)
            for (int32_t i = a; i < b; i++) seen[finished(&t, i)] = 1;
    }
    rc = 0;
out:
    free(t.node); free(t.so); free(t.wv); free(t.we); free(t.cstart);
    return rc;
}

/* label (may be NULL): each state's fair set, -1 outside them; fair: 1 in a fair set. The
 * arrays a strong-fairness refinement needs are made only when one happens
 * (NOTE(graph-memory)). */
int64_t co_alg_fair_sets(int64_t n, const int64_t *first, const int32_t *dst,
                         const void *task, int task_bytes, int64_t ntasks,
                         const uint8_t *strong, const uint8_t *allowed, int32_t *label,
                         uint8_t *fair) {
    size_t nn = (size_t)(n > 0 ? n : 1), nt = (size_t)(ntasks > 0 ? ntasks : 1);
    co_tarjan t = {malloc(nn * sizeof(co_tnode)), malloc(nn * 4), malloc(nn * 4),
                   malloc(nn * 4), malloc((nn + 1) * 4), n};
    uint8_t *in = NULL, *next = NULL; /* the refined rounds' states, made when needed */
    const uint8_t *cur = allowed;     /* this round's states (NULL: every state) */
    int32_t *cnt = calloc(nt, 4), *touched = malloc(nt * 4);
    int64_t *seen = malloc(nt * 8), *taken = calloc(nt, 8), *bad = calloc(nt, 8);
    int64_t count = -1;
    if (!t.node || !t.so || !t.wv || !t.we || !t.cstart ||
        !cnt || !touched || !seen || !taken || !bad)
        goto out;
    count = 0;
    if (label != NULL)
        for (int64_t s = 0; s < n; s++) label[s] = -1;
    memset(fair, 0, (size_t)n);
    for (size_t i = 0; i < nt; i++) seen[i] = -1;
    int64_t stamp = 0;
    for (;;) { /* a round: the components of `cur`; the refined rest goes to the next one */
        int32_t ncomp = tarjan(n, first, dst, cur, &t);
        bool again = false;
        if (next != NULL) memset(next, 0, nn);
        for (int32_t c = 0; c < ncomp; c++) {
            stamp++;
            int32_t a = t.cstart[c], b = t.cstart[c + 1], ntouched = 0;
            for (int32_t i = a; i < b; i++) {
                int32_t s = finished(&t, i);
                for (int64_t e = first[s]; e < first[s + 1]; e++) {
                    int32_t k = task_at(task, task_bytes, e);
                    if (k < 0) continue;
                    if (seen[k] != s) {
                        if (cnt[k] == 0) touched[ntouched++] = k;
                        seen[k] = s;
                        cnt[k]++;
                    }
                    if (comp_of(&t.node[dst[e]]) == c) taken[k] = stamp;
                }
            }
            bool weak_ok = true, any_bad = false;
            for (int32_t j = 0; j < ntouched; j++) {
                int32_t k = touched[j];
                if (taken[k] == stamp) continue;
                if (strong[k]) {
                    bad[k] = stamp;
                    any_bad = true;
                } else if (cnt[k] == b - a) {
                    weak_ok = false;
                }
            }
            for (int32_t j = 0; j < ntouched; j++) {
                cnt[touched[j]] = 0;
                seen[touched[j]] = -1;
            }
            if (!weak_ok) continue;
            if (!any_bad) {
                for (int32_t i = a; i < b; i++) {
                    int32_t s = finished(&t, i);
                    fair[s] = 1;
                    if (label != NULL) label[s] = (int32_t)count;
                }
                count++;
                continue;
            }
            if (next == NULL && (next = calloc(nn, 1)) == NULL) {
                count = -1;
                goto out;
            }
            /* NOTE(strong-fairness): drop the states that enable a failing strong task */
            for (int32_t i = a; i < b; i++) {
                int32_t s = finished(&t, i);
                bool keep = true;
                for (int64_t e = first[s]; e < first[s + 1] && keep; e++) {
                    int32_t k = task_at(task, task_bytes, e);
                    if (k >= 0 && bad[k] == stamp) keep = false;
                }
                if (keep) {
                    next[s] = 1;
                    again = true;
                }
            }
        }
        if (!again) break;
        if (in == NULL && (in = malloc(nn)) == NULL) {
            count = -1;
            goto out;
        }
        memcpy(in, next, nn);
        cur = in;
    }
out:
    free(t.node); free(t.so); free(t.wv); free(t.we); free(t.cstart);
    free(in); free(next); free(cnt);
    free(touched); free(seen); free(taken); free(bad);
    return count;
}

/* ------------------------------------------------------------------ the table */

static void *reserve(uint64_t bytes) {
    void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return NULL;
#if defined(MADV_HUGEPAGE) && !defined(CO_NO_HUGEPAGE)
    /* 2 MiB pages: the table and the states are read at random, and with 4 KiB pages
     * nearly every probe of a large table is also a TLB miss */
    if (bytes >= ((uint64_t)4 << 20)) madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

/* Sets the derived limits of a table of 2^log2 slots. */
static void set_table(_Atomic uint32_t *table, int log2) {
    S.table = table;
    S.idbits = log2;
    S.cap = (uint64_t)1 << log2;
    S.mask = S.cap - 1;
    atomic_store(&S.slots, S.cap);
    S.grow_at = S.cap / 4 * 3;
    S.hard_at = S.cap / 10 * 9;
    uint64_t limit = S.opt.memory_limit;
    uint64_t table_bytes = S.cap * 4;
    uint64_t by_memory = limit > table_bytes ? (limit - table_bytes) / (CO_BYTES + 4) : 0;
    uint64_t ids = by_memory < S.reserved_ids ? by_memory : S.reserved_ids;
    uint64_t margin = (uint64_t)S.opt.threads + 2; /* inserts that may pass the check at once */
    S.id_limit = ids > margin ? ids - margin : 0;
    /* doubling holds both tables at once */
    S.no_grow = log2 >= 32 || storage_bytes(S.grow_at, S.cap * 3) > limit;
}

static inline uint32_t slot_tag(uint64_t h) {
    int tagbits = 32 - S.idbits;
    return tagbits > 0 ? (uint32_t)(h >> (64 - tagbits)) << S.idbits : 0;
}

static inline uint32_t id_mask(void) {
    return (uint32_t)(((uint64_t)1 << S.idbits) - 1);
}

/* The rehash of a doubling, shared by the resizer and the threads waiting for it: ids are
 * handed out in chunks; `helpers` counts the threads inside help_rehash so that the resizer
 * can wait until none is left before it lets the search go on. */
static struct {
    uint64_t count;
    _Atomic uint64_t next, done;
    _Atomic int open, helpers;
} R;

#define REHASH_CHUNK 4096

static void rehash_range(uint64_t a, uint64_t b) {
    enum { AHEAD = 16 };
    uint64_t ring[AHEAD];
    _Atomic uint32_t *table = S.table;
    for (uint64_t i = a; i < b + AHEAD; i++) {
        if (i >= a + AHEAD) {
            uint64_t id = i - AHEAD, h = ring[id % AHEAD];
            uint32_t val = slot_tag(h) | (uint32_t)(id + 1);
            for (uint64_t at = h & S.mask;; at = (at + 1) & S.mask) {
                uint32_t empty = 0;
                if (atomic_load_explicit(&table[at], memory_order_relaxed) == 0 &&
                    atomic_compare_exchange_strong_explicit(&table[at], &empty, val,
                                                            memory_order_relaxed,
                                                            memory_order_relaxed))
                    break;
            }
        }
        if (i < b) {
            co_state s;
            load_state(i, &s);
            uint64_t h = hash_state(&s);
            ring[i % AHEAD] = h;
            __builtin_prefetch((const void *)&table[h & S.mask], 1);
        }
    }
}

static void rehash_chunks(void) {
    for (;;) {
        uint64_t a = atomic_fetch_add(&R.next, REHASH_CHUNK);
        if (a >= R.count) return;
        uint64_t b = a + REHASH_CHUNK < R.count ? a + REHASH_CHUNK : R.count;
        rehash_range(a, b);
        atomic_fetch_add(&R.done, b - a);
    }
}

static void help_rehash(void) {
    atomic_fetch_add(&R.helpers, 1);
    if (atomic_load(&R.open)) rehash_chunks();
    atomic_fetch_sub(&R.helpers, 1);
}

/* Doubles the table (called by the one resizer while no thread is active; the threads
 * waiting for it help with the rehash). */
static void grow(void) {
    uint64_t t0 = now_ns();
    int log2 = S.idbits + 1;
    uint64_t cap = (uint64_t)1 << log2;
    _Atomic uint32_t *old = S.table;
    uint64_t old_cap = S.cap;
    _Atomic uint32_t *table = reserve(cap * 4);
    if (table == NULL) {
        S.no_grow = true;
        return;
    }
    uint64_t count = atomic_load(&S.count);
    note_bytes(storage_bytes(count, cap + old_cap));
    set_table(table, log2); /* published to the helpers by the seq_cst store of R.open */
    R.count = count;
    atomic_store(&R.next, 0);
    atomic_store(&R.done, 0);
    atomic_store(&R.open, 1);
    rehash_chunks();
    unsigned spins = 0;
    while (atomic_load(&R.done) < count) wait_a_little(&spins);
    atomic_store(&R.open, 0);
    while (atomic_load(&R.helpers) > 0) wait_a_little(&spins);
    munmap((void *)old, old_cap * 4);
    note_bytes(storage_bytes(count, cap));
    atomic_fetch_add(&S.resizes, 1);
    atomic_fetch_add(&S.resize_ns, now_ns() - t0);
}

static void enter(void) {
    for (;;) {
        atomic_fetch_add(&S.active, 1);
        if (!atomic_load(&S.resizing)) return;
        atomic_fetch_sub(&S.active, 1);
        unsigned spins = 0;
        while (atomic_load(&S.resizing)) {
            help_rehash();
            wait_a_little(&spins);
        }
    }
}

static void leave(void) { atomic_fetch_sub(&S.active, 1); }

/* A safe point: this thread holds no claimed slot. Grows the table or waits for whoever
 * does. */
static void safepoint_grow(void) {
    leave();
    int expected = 0;
    if (atomic_compare_exchange_strong(&S.resizing, &expected, 1)) {
        unsigned spins = 0;
        while (atomic_load(&S.active) > 0) wait_a_little(&spins);
        if (atomic_load(&S.count) >= S.grow_at && !S.no_grow) grow();
        atomic_store(&S.resizing, 0);
    } else {
        unsigned spins = 0;
        while (atomic_load(&S.resizing)) {
            help_rehash();
            wait_a_little(&spins);
        }
    }
    enter();
}

enum { INS_OLD = 0, INS_NEW = 1, INS_DROPPED = 2 };

/* Adds s (hash h) with its parent unless already present; *id gets its id. */
static int insert(const co_state *s, uint64_t h, uint32_t parent, uint32_t *id) {
restart:;
    const uint32_t tag = slot_tag(h), imask = id_mask(), busy = tag | imask;
    _Atomic uint32_t *table = S.table;
    const uint8_t *bytes = (const uint8_t *)s->w;
    for (uint64_t at = h & S.mask;; at = (at + 1) & S.mask) {
        uint32_t v = atomic_load_explicit(&table[at], memory_order_acquire);
        for (;;) {
            if (v == 0) {
                /* A new state. The limits are checked here, not on every probe: the count's
                 * cache line is written by every thread's new states, and most successors
                 * are old ones. At most one check-then-claim per thread is in flight, which
                 * the margins of set_table allow for. */
                uint64_t c = atomic_load_explicit(&S.count, memory_order_relaxed);
                if (c >= S.grow_at && !S.no_grow) {
                    safepoint_grow(); /* nothing claimed: a safe point; the table changed */
                    goto restart;
                }
                if (c >= S.hard_at || c >= S.id_limit) {
                    request_stop(CO_STOP_MEMORY);
                    return INS_DROPPED;
                }
                if (!atomic_compare_exchange_strong_explicit(&table[at], &v, busy,
                                                             memory_order_acq_rel,
                                                             memory_order_acquire))
                    continue; /* someone else took it: look at what they wrote */
                uint64_t n = atomic_fetch_add_explicit(&S.count, 1, memory_order_relaxed);
                memcpy(S.states + n * CO_BYTES, bytes, CO_BYTES);
                S.parents[n] = parent;
                atomic_store_explicit(&table[at], tag | (uint32_t)(n + 1), memory_order_release);
                *id = (uint32_t)n;
                return INS_NEW;
            }
            if ((v & ~imask) != tag) break; /* another state: next slot */
            if ((v & imask) == imask) {     /* same tag, being written: wait for its id */
                unsigned spins = 0;
                do {
                    wait_a_little(&spins);
                    v = atomic_load_explicit(&table[at], memory_order_acquire);
                } while ((v & imask) == imask);
                continue;
            }
            uint64_t other = (v & imask) - 1;
            if (same_state(S.states + other * CO_BYTES, s)) {
                *id = (uint32_t)other;
                return INS_OLD;
            }
            break;
        }
    }
}

/* A new state: its invariants are checked once, when it is stored. */
static void check_new_state(const co_state *s, uint32_t id, uint64_t depth) {
    int keys[CO_NUM_KEYS + 1];
    int n = co_check_state(s, keys, CO_NUM_KEYS + 1);
    for (int i = 0; i < n && i < CO_NUM_KEYS + 1; i++) record_failure(keys[i], id, depth);
}

/* Stores the buffered successors (of several states) as a software pipeline: the successor
 * i is hashed and its table line prefetched, i - D1 has its line read and, on a matching
 * tag, the stored state's line prefetched, and i - D1 - D2 is inserted; so about D1 + D2
 * cache misses are in flight instead of one (the hot loop is bound by memory latency). */
enum { D1 = 16, D2 = 16 }; /* measured on German, 5 caches: 8 costs 10% more, 4 15% */

/* Whether s is stored (read-only probe: no claim, no safe point). */
static bool lookup(const co_state *s, uint64_t h) {
    const uint32_t tag = slot_tag(h), imask = id_mask();
    _Atomic uint32_t *table = S.table;
    for (uint64_t at = h & S.mask;; at = (at + 1) & S.mask) { /* the table is never full */
        uint32_t v = atomic_load_explicit(&table[at], memory_order_acquire);
        if (v == 0) return false;
        if ((v & ~imask) != tag || (v & imask) == imask) continue;
        if (same_state(S.states + (uint64_t)((v & imask) - 1) * CO_BYTES, s)) return true;
    }
}

/* Under symmetry: drops the successors that are stored as they are (a stored state is an
 * orbit representative, so canonicalizing it would give it back; the reference engine skips
 * them the same way), canonicalizes the others; returns how many are left. Exact
 * canonicalization costs far more than a probe. */
static int canonicalize_sink(co_sink *sink, int n) {
    int m = 0;
    for (int i = 0; i < n + D1; i++) {
        if (i < n) {
            sink->hash[i] = hash_state(&sink->buf[i]);
            __builtin_prefetch((const void *)&S.table[sink->hash[i] & S.mask], 0);
        }
        int j = i - D1;
        if (j < 0 || j >= n || lookup(&sink->buf[j], sink->hash[j])) continue;
        if (m != j) { /* m <= j: compacting never overwrites an entry still to be read */
            sink->buf[m] = sink->buf[j];
            sink->parents[m] = sink->parents[j];
        }
        co_canonicalize(&sink->buf[m++]);
    }
    return m;
}

static void flush_sink(co_sink *sink) {
    int n = sink->n;
    sink->n = 0;
    if (S.opt.symmetry) n = canonicalize_sink(sink, n);
    for (int i = 0; i < n + D1 + D2; i++) {
        if (i < n) {
            sink->hash[i] = hash_state(&sink->buf[i]);
            __builtin_prefetch((const void *)&S.table[sink->hash[i] & S.mask], 0);
        }
        int j = i - D1;
        if (j >= 0 && j < n) {
            const uint32_t imask = id_mask();
            uint32_t v = atomic_load_explicit(&S.table[sink->hash[j] & S.mask],
                                              memory_order_relaxed);
            if (v != 0 && (v & ~imask) == slot_tag(sink->hash[j]) && (v & imask) != imask)
                __builtin_prefetch(S.states + (uint64_t)((v & imask) - 1) * CO_BYTES, 0);
        }
        int k = i - D1 - D2;
        if (k >= 0 && k < n) {
            uint32_t id;
            int r = insert(&sink->buf[k], sink->hash[k], sink->parents[k], &id);
            if (r == INS_NEW) {
                check_new_state(&sink->buf[k], id, sink->depth + 1);
            } else if (r == INS_DROPPED) {
                return;
            }
            if (sink->log != NULL)
                log_edge(sink->log, sink->parents[k], id, sink->thi[k], sink->tlo[k]);
        }
    }
}

CO_FN void co_emit_state(co_sink *sink, const void *succ) {
    if (sink->n == SINK_MAX) flush_sink(sink);
    sink->parents[sink->n] = sink->parent;
    sink->thi[sink->n] = sink->task_hi;
    sink->tlo[sink->n] = sink->task_lo;
    memcpy(&sink->buf[sink->n++], succ, sizeof(co_state));
}

CO_FN void co_set_task(co_sink *sink, uint64_t hi, uint64_t lo) {
    sink->task_hi = hi;
    sink->task_lo = lo;
}

CO_FN void co_emit_failure(co_sink *sink, int key) {
    sink->failures++;
    if (key >= 0 && key < CO_NUM_KEYS) record_failure(key, sink->parent, sink->depth);
}

/* -DCO_PROFILE: cycles in the generated successor code vs in the runtime's storing of the
 * successors (canonicalize, hash, probe, insert, invariants), for `where does time go`. */
#if defined(CO_PROFILE) && (defined(__x86_64__) || defined(__i386__))
#include <x86intrin.h>
#define CO_TICK() __rdtsc()
#else
#define CO_TICK() 0
#endif

static void expand(co_sink *sink, uint32_t id, uint64_t depth) {
    co_state s;
    load_state(id, &s);
    sink->parent = id;
    sink->depth = depth;
    sink->failures = 0;
    int live = 0, problems = 0;
    uint64_t t0 = CO_TICK();
    int fired = co_expand(&s, sink, &live, &problems);
    uint64_t t1 = CO_TICK();
    sink->rules += (uint64_t)(fired > 0 ? fired : 0);
    if (sink->n >= SINK_FLUSH) flush_sink(sink);
    uint64_t t2 = CO_TICK();
    sink->cycles_model += t1 - t0;
    sink->cycles_store += t2 - t1;
    if (S.opt.deadlock && live == 0 && problems == 0 && sink->failures == 0 &&
        !co_quiescent(&s))
        record_failure(CO_NUM_KEYS, id, depth);
}

/* ------------------------------------------------------------------ the search */

static bool any_failure(void) {
    for (int k = 0; k <= CO_NUM_KEYS; k++)
        if (atomic_load(&S.first[k]) != CO_NO_FAILURE) return true;
    return false;
}

/* Between levels (thread 0 alone): sets the next level or S.finished, as the reference
 * engine's loop does: stop_at_first and max_depth are checked before a level is expanded. */
static void next_level(bool first) {
    uint64_t count = atomic_load(&S.count);
    int stop = atomic_load(&S.stop);
    if (stop) {
        atomic_store(&S.result, stop);
        S.finished = true;
        return;
    }
    if (!first) {
        if (count == S.level_end) { /* no new states: done */
            atomic_store(&S.result, CO_DONE);
            S.finished = true;
            return;
        }
        atomic_fetch_add(&S.depth, 1);
    }
    S.level_start = first ? 0 : S.level_end;
    S.level_end = count;
    atomic_store(&S.next, S.level_start);
    atomic_store(&S.frontier, S.level_end - S.level_start);
    if (S.opt.stop_at_first && any_failure()) {
        atomic_store(&S.result, CO_STOP_FIRST);
        S.finished = true;
    } else if (S.opt.max_depth >= 0 && atomic_load(&S.depth) >= (uint64_t)S.opt.max_depth) {
        atomic_store(&S.result, CO_STOP_MAX_DEPTH);
        S.finished = true;
    }
}

static void *worker(void *arg) {
    const int tid = (int)(intptr_t)arg;
    co_sink *sink = malloc(sizeof *sink);
    if (sink == NULL) {
        request_stop(CO_STOP_MEMORY);
    } else {
        sink->log = S.opt.graph ? &G.logs[tid] : NULL;
        sink->task_hi = sink->task_lo = 0;
    }
    for (;;) {
        barrier_wait(&S.barrier);
        if (S.finished) break;
        const uint64_t end = S.level_end, depth = atomic_load(&S.depth);
        uint64_t chunk = (end - S.level_start) / ((uint64_t)S.opt.threads * 64);
        chunk = chunk < 1 ? 1 : chunk > 256 ? 256 : chunk;
        if (sink != NULL) {
            sink->n = 0;
            sink->rules = sink->cycles_model = sink->cycles_store = 0;
            enter();
            while (!atomic_load_explicit(&S.stop, memory_order_relaxed)) {
                uint64_t a = atomic_fetch_add(&S.next, chunk);
                if (a >= end) break;
                uint64_t b = a + chunk < end ? a + chunk : end;
                uint64_t id;
                for (id = a; id < b; id++) {
                    expand(sink, (uint32_t)id, depth);
                    if (S.opt.max_states) { /* as the reference: stop after this state */
                        uint64_t c = atomic_load_explicit(&S.count, memory_order_relaxed);
                        if (c + (uint64_t)sink->n >= S.opt.max_states) {
                            flush_sink(sink);
                            if (atomic_load(&S.count) >= S.opt.max_states)
                                request_stop(CO_STOP_MAX_STATES);
                        }
                    }
                    if (atomic_load_explicit(&S.stop, memory_order_relaxed)) {
                        id++;
                        break;
                    }
                }
                uint64_t t0 = CO_TICK();
                flush_sink(sink); /* the chunk's last successors */
                sink->cycles_store += CO_TICK() - t0;
                atomic_fetch_add(&S.rules, sink->rules);
                atomic_fetch_add(&S.expanded, id - a);
                atomic_fetch_add(&S.cycles_model, sink->cycles_model);
                atomic_fetch_add(&S.cycles_store, sink->cycles_store);
                sink->rules = sink->cycles_model = sink->cycles_store = 0;
                note_bytes(storage_bytes(atomic_load(&S.count), S.cap));
            }
            leave();
        }
        barrier_wait(&S.barrier);
        if (tid == 0) next_level(false);
    }
    free(sink);
    return NULL;
}

static void graph_free(void);

void co_free(void) {
    graph_free();
    if (S.states) munmap(S.states, S.reserved_ids * CO_BYTES);
    if (S.parents) munmap(S.parents, S.reserved_ids * 4);
    if (S.table) munmap((void *)S.table, S.cap * 4);
    S.states = NULL;
    S.parents = NULL;
    S.table = NULL;
    atomic_store(&S.count, 0);
}

static uint64_t physical_memory(void) {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : (uint64_t)1 << 32;
}

int co_run(const co_options *options) {
    co_free();
    S.opt = *options;
    if (S.opt.threads < 1 || S.opt.threads > 4096) return CO_ERR_OPTIONS;
    if (S.opt.memory_limit == 0) S.opt.memory_limit = physical_memory() / 4 * 3;
    atomic_store(&S.stop, 0);
    atomic_store(&S.result, -100);
    atomic_store(&S.count, 0);
    atomic_store(&S.active, 0);
    atomic_store(&S.resizing, 0);
    atomic_store(&S.rules, 0);
    atomic_store(&S.expanded, 0);
    atomic_store(&S.depth, 0);
    atomic_store(&S.frontier, 0);
    atomic_store(&S.peak, 0);
    atomic_store(&S.bytes, 0);
    atomic_store(&S.resizes, 0);
    atomic_store(&S.resize_ns, 0);
    atomic_store(&S.cycles_model, 0);
    atomic_store(&S.cycles_store, 0);
    for (int k = 0; k <= CO_NUM_KEYS; k++) atomic_store(&S.first[k], CO_NO_FAILURE);
    S.finished = false;
    S.level_start = S.level_end = 0;
    if (S.opt.graph) {
        G.logs = calloc((size_t)S.opt.threads, sizeof(co_log));
        G.nlogs = S.opt.threads;
        if (G.logs == NULL) return CO_ERR_NOMEM;
    }

    /* Reserve address space for every state the memory limit allows (committed lazily). */
    uint64_t ids = S.opt.memory_limit / (CO_BYTES + 4);
    if (ids > MAX_IDS) ids = MAX_IDS;
    if (ids < 16) ids = 16;
    for (;;) {
        S.states = reserve(ids * CO_BYTES);
        S.parents = reserve(ids * 4);
        if (S.states && S.parents) break;
        if (S.states) munmap(S.states, ids * CO_BYTES);
        if (S.parents) munmap(S.parents, ids * 4);
        S.states = NULL;
        S.parents = NULL;
        if (ids <= 1024) return CO_ERR_NOMEM;
        ids /= 2;
    }
    S.reserved_ids = ids;
    int log2 = S.opt.table_log2 > 0 ? S.opt.table_log2 : DEFAULT_TABLE_LOG2;
    if (S.opt.table_log2 <= 0 && S.opt.max_states) { /* no doubling below the bound */
        while (log2 < 30 && ((uint64_t)1 << log2) / 4 * 3 < S.opt.max_states) log2++;
    }
    if (log2 < MIN_TABLE_LOG2) log2 = MIN_TABLE_LOG2;
    if (log2 > 32) log2 = 32;
    _Atomic uint32_t *table = reserve(((uint64_t)1 << log2) * 4);
    if (table == NULL) {
        co_free();
        return CO_ERR_NOMEM;
    }
    set_table(table, log2);

    /* Level 0: the initial states, canonical, each checked once. */
    int max_init = 256;
    co_state *init = NULL;
    int n;
    for (;;) {
        free(init);
        init = malloc(sizeof(co_state) * (size_t)max_init);
        if (init == NULL) return CO_ERR_NOMEM;
        n = co_initial(init, max_init);
        if (n <= max_init) break;
        max_init = n;
    }
    enter();
    for (int i = 0; i < n; i++) {
        if (S.opt.symmetry) co_canonicalize(&init[i]);
        uint32_t id;
        int r = insert(&init[i], hash_state(&init[i]), CO_NONE, &id);
        if (r == INS_NEW) check_new_state(&init[i], id, 0);
        if (r == INS_DROPPED) break;
    }
    leave();
    free(init);
    note_bytes(storage_bytes(atomic_load(&S.count), S.cap));
    next_level(true);

    barrier_init(&S.barrier, S.opt.threads);
    pthread_t *threads = calloc((size_t)S.opt.threads, sizeof(pthread_t));
    int started = 1;
    if (threads != NULL) {
        for (; started < S.opt.threads; started++)
            if (pthread_create(&threads[started], NULL, worker, (void *)(intptr_t)started))
                break;
    }
    if (started < S.opt.threads) { /* run with the threads we got */
        pthread_mutex_lock(&S.barrier.mutex);
        S.barrier.count = started; /* thread 0 has not arrived: no round can be complete */
        pthread_mutex_unlock(&S.barrier.mutex);
    }
    worker((void *)(intptr_t)0);
    for (int t = 1; t < started; t++) pthread_join(threads[t], NULL);
    free(threads);
    return (int)atomic_load(&S.result);
}

void co_get_progress(co_progress *out) {
    out->states = atomic_load(&S.count);
    out->rules = atomic_load(&S.rules);
    out->depth = atomic_load(&S.depth);
    out->frontier = atomic_load(&S.frontier);
    out->expanded = atomic_load(&S.expanded);
    out->bytes_in_use = atomic_load(&S.bytes);
    out->peak_bytes = atomic_load(&S.peak);
    out->table_slots = atomic_load(&S.slots);
    out->resizes = atomic_load(&S.resizes);
    out->resize_ns = atomic_load(&S.resize_ns);
    out->state_bytes = CO_BYTES;
    out->stop_reason = atomic_load(&S.result);
    out->cycles_model = atomic_load(&S.cycles_model);
    out->cycles_store = atomic_load(&S.cycles_store);
}

int co_num_keys(void) { return CO_NUM_KEYS; }
int co_state_words(void) { return CO_WORDS; }
int co_state_bits(void) { return CO_BITS; }

int64_t co_failure(int key, uint64_t *depth) {
    if (key < 0 || key > CO_NUM_KEYS) return -1;
    uint64_t v = atomic_load(&S.first[key]);
    if (v == CO_NO_FAILURE) return -1;
    *depth = v >> 32;
    return (int64_t)(v & 0xffffffffu);
}

int64_t co_path(uint64_t id, uint64_t *out_words, int64_t max) {
    uint64_t count = atomic_load(&S.count);
    if (S.parents == NULL || id >= count) return -1;
    int64_t len = 0;
    for (uint64_t at = id; at != CO_NONE; at = S.parents[at]) len++;
    if (len > max) return len;
    int64_t i = len;
    for (uint64_t at = id; at != CO_NONE; at = S.parents[at]) {
        co_state s;
        load_state(at, &s);
        memcpy(out_words + (size_t)(--i) * CO_WORDS, s.w, sizeof s.w);
    }
    return len;
}
