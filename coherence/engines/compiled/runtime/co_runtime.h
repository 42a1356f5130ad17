/* The compiled engine's fixed runtime: its interface to the generated model and to Python.
 *
 * One translation unit is built per model: co_runtime.c includes this header, then the
 * generated model source (co_model.c, written by coherence/engines/compiled/build.py), then
 * defines the search. See /tmp/team/COMPILED.md (the contract) and co_runtime.c (the design).
 *
 * NOTE(compiled-contract): the model source must not declare co_sink, co_emit_state or
 * co_emit_failure: they are declared here, before it, with `const void *` for the successor
 * (the model passes a `co_state *`, which converts implicitly), because co_state is only
 * defined by the model.
 */
#ifndef CO_RUNTIME_H
#define CO_RUNTIME_H

#include <stdint.h>
#include <string.h>

#ifndef CO_FN
#define CO_FN static inline /* __device__ when the GPU runtime compiles the model */
#endif

/* ------------------------------------------------------------------ for the model */

typedef struct co_sink co_sink;
/* One enabled action's successor (a co_state *): deduplicated and stored by the runtime. */
CO_FN void co_emit_state(co_sink *sink, const void *succ);
/* A failing action (model error, coherence violation, no-transition) from the state being
 * expanded; key indexes GeneratedModel.keys. */
CO_FN void co_emit_failure(co_sink *sink, int key);
/* Liveness (generate(..., liveness=True), NOTE(compiled-liveness)): the fairness task of the
 * action about to be tried; hi == 0: unfair. */
CO_FN void co_set_task(co_sink *sink, uint64_t hi, uint64_t lo);

/* ------------------------------------------------------------------ for Python (ctypes) */

typedef struct {
    int32_t threads;       /* worker threads, >= 1 */
    int32_t symmetry;      /* canonicalize every state (co_canonicalize) */
    int32_t deadlock;      /* report deadlocks (key CO_NUM_KEYS) */
    int32_t stop_at_first; /* stop after the level in which the first failure was found */
    uint64_t max_states;   /* stop once this many states are stored; 0: no bound */
    int64_t max_depth;     /* do not expand states at this depth; -1: no bound */
    uint64_t memory_limit; /* bytes of state storage (states, parents, hash table); 0: 3/4 of RAM */
    int32_t table_log2;    /* initial hash table size (log2 slots); 0: default */
    int32_t graph;         /* keep every edge with its task (the liveness graph); needs the
                            * model generated with liveness=True and symmetry off */
} co_options;

/* Why co_run returned (the stop reasons Python maps to the reference engine's messages). */
enum {
    CO_DONE = 0,           /* every reachable state was explored */
    CO_STOP_MAX_STATES = 1,
    CO_STOP_MAX_DEPTH = 2,
    CO_STOP_MEMORY = 3,    /* the memory limit (or the 2^32 state-id space) was reached */
    CO_STOP_INTERRUPT = 4, /* co_request_stop() */
    CO_STOP_FIRST = 5,     /* stop_at_first */
    CO_ERR_NOMEM = -1,     /* the initial reservation failed */
    CO_ERR_OPTIONS = -2,   /* threads outside 1..4096 */
};

/* Counters Python polls while co_run runs in another thread (and reads after it returns). */
typedef struct {
    uint64_t states;       /* stored states */
    uint64_t rules;        /* actions fired, erroring ones included */
    uint64_t depth;        /* depth of the level being expanded (final: the deepest level) */
    uint64_t frontier;     /* states in the level being expanded */
    uint64_t expanded;     /* states expanded so far */
    uint64_t bytes_in_use; /* state storage now: states + parents + hash table */
    uint64_t peak_bytes;   /* most state storage at once (a resize holds both tables) */
    uint64_t table_slots;  /* hash table capacity */
    uint64_t resizes;      /* hash table doublings */
    uint64_t resize_ns;    /* time spent doubling (all threads wait meanwhile) */
    uint64_t state_bytes;  /* bytes per stored state (packed) */
    int64_t stop_reason;   /* as co_run returns; -100 while running */
    uint64_t cycles_model; /* -DCO_PROFILE: TSC cycles in co_expand (generated code) */
    uint64_t cycles_store; /* -DCO_PROFILE: TSC cycles storing successors (runtime) */
} co_progress;

int co_run(const co_options *options);
void co_request_stop(void);
void co_get_progress(co_progress *out);
int co_num_keys(void);    /* CO_NUM_KEYS; deadlock is key index CO_NUM_KEYS */
int co_state_words(void); /* CO_WORDS */
int co_state_bits(void);  /* CO_BITS */
/* State id of key k's first occurrence (minimal depth) or -1; *depth gets its depth. */
int64_t co_failure(int key, uint64_t *depth);
/* The states from an initial state to state id (CO_WORDS words each, little-endian words of
 * layout.pack()); returns the path length, writing only when it is <= max; -1: bad id. */
int64_t co_path(uint64_t id, uint64_t *out_words, int64_t max);
void co_free(void);

/* The liveness graph (co_options.graph), after co_run and before co_free:
 * co_graph_sizes merges the threads' edge logs and task tables (once) and gives the counts;
 * co_graph_fill writes the edges in compressed rows by source (first: states + 1 offsets,
 * dst and task per edge in task_bytes (1, 2 or 4) signed bytes, -1 for an unfair edge,
 * NOTE(graph-memory)) and frees the logs; co_graph_tasks the
 * key of each task (NOTE(task-keys)) and whether a strongly fair transition performs it.
 * co_parents: the breadth-first parent of each state (-1 at initial states); co_state_at: one
 * state's words; co_live_table: each liveness instance i with slot[i] >= 0: its goal and
 * premise per state ([slot[i] * states + id]; goal and premise NULL: not written) and the
 * least state where it raises an error (-1). */
int co_graph_sizes(uint64_t *states, uint64_t *edges, uint64_t *tasks);
int co_graph_fill(int64_t *first, int32_t *dst, void *task, int task_bytes);
void co_graph_tasks(uint64_t *hi, uint64_t *lo, uint8_t *strong);
void co_parents(int32_t *out);
const int32_t *co_parents_view(void); /* the search's own parents, valid until co_free */
int co_state_at(uint64_t id, uint64_t *out_words);
int co_live_instances(void);
int co_live_table(const int32_t *slot, uint8_t *goal, uint8_t *premise, int64_t *err_state);
/* The liveness checks' graph algorithms (coherence/liveness/graph.py defines them) on
 * compressed rows; allowed may be NULL (every state); -1: out of memory. */
int co_alg_backward(int64_t n, const int64_t *first, const int32_t *dst,
                    const uint8_t *targets, const uint8_t *allowed, uint8_t *seen);
int co_alg_forward(int64_t n, const int64_t *first, const int32_t *dst,
                   const uint8_t *sources, const uint8_t *allowed, uint8_t *seen);
int64_t co_alg_fair_sets(int64_t n, const int64_t *first, const int32_t *dst,
                         const void *task, int task_bytes, int64_t ntasks,
                         const uint8_t *strong, const uint8_t *allowed, int32_t *label,
                         uint8_t *fair);

#endif
