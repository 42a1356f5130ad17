/* A hand-written model that follows the compiled engine's contract (COMPILED.md), for testing
 * the runtime without the code generator: MOCK_AGENTS counters of 4 bits each, 0..MOCK_K-1.
 *
 *   - one initial state, every counter 0;
 *   - action "inc i": counter i < K-1 goes up by one;
 *   - action "reset i": enabled when counter i is K-1 and every other counter is 0; it fails
 *     with failure key 1 (an action error), so the first one is at depth K-1;
 *   - invariant key 0: the counters do not sum to MOCK_TARGET (first false at depth TARGET);
 *   - quiescent: every counter 0, so the state with every counter at K-1 is a deadlock at
 *     depth AGENTS * (K-1).
 *
 * Without symmetry there are K^A states; with symmetry (counters sorted) C(A+K-1, A).
 * MOCK_PAD extra bits, the top one set in every state, make the states as wide as a real
 * model's (for measurements) without changing any count.
 */
#ifndef MOCK_AGENTS
#define MOCK_AGENTS 3
#endif
#ifndef MOCK_K
#define MOCK_K 4
#endif
#ifndef MOCK_TARGET
#define MOCK_TARGET 5
#endif
#ifndef MOCK_PAD
#define MOCK_PAD 0
#endif
#define CO_BITS (MOCK_AGENTS * 4 + MOCK_PAD)
#define CO_WORDS ((CO_BITS + 63) / 64)
#define CO_AGENTS MOCK_AGENTS
#define CO_NUM_KEYS 2

typedef struct { uint64_t w[CO_WORDS]; } co_state;

CO_FN int mock_get(const co_state *s, int i) {
    return (int)((s->w[i / 16] >> (4 * (i % 16))) & 15u);
}

CO_FN void mock_set(co_state *s, int i, int v) {
    uint64_t m = (uint64_t)15u << (4 * (i % 16));
    s->w[i / 16] = (s->w[i / 16] & ~m) | ((uint64_t)v << (4 * (i % 16)));
}

CO_FN int co_initial(co_state *out, int max) {
    if (max >= 1) {
        memset(&out[0], 0, sizeof out[0]);
        if (MOCK_PAD > 0) out[0].w[(CO_BITS - 1) / 64] |= (uint64_t)1 << ((CO_BITS - 1) % 64);
    }
    return 1;
}

CO_FN int co_expand(const co_state *s, co_sink *sink, int *live, int *problems) {
    int fired = 0, nonzero = 0;
    *live = 0;
    *problems = 0;
    for (int i = 0; i < MOCK_AGENTS; i++) nonzero += mock_get(s, i) != 0;
    for (int i = 0; i < MOCK_AGENTS; i++) {
        int c = mock_get(s, i);
        if (c < MOCK_K - 1) {
            co_state succ = *s;
            mock_set(&succ, i, c + 1);
            co_emit_state(sink, &succ);
            fired++;
            (*live)++;
        } else if (nonzero == 1) {
            co_emit_failure(sink, 1);
            fired++;
        }
    }
    return fired;
}

CO_FN int co_check_state(const co_state *s, int *keys, int max) {
    int sum = 0;
    for (int i = 0; i < MOCK_AGENTS; i++) sum += mock_get(s, i);
    if (sum == MOCK_TARGET && max >= 1) {
        keys[0] = 0;
        return 1;
    }
    return 0;
}

CO_FN int co_quiescent(const co_state *s) {
    for (int i = 0; i < MOCK_AGENTS; i++)
        if (mock_get(s, i) != 0) return 0;
    return 1;
}

CO_FN void co_canonicalize(co_state *s) { /* counters in descending order */
    int c[MOCK_AGENTS];
    for (int i = 0; i < MOCK_AGENTS; i++) c[i] = mock_get(s, i);
    for (int i = 1; i < MOCK_AGENTS; i++) {
        int v = c[i], j = i;
        for (; j > 0 && c[j - 1] < v; j--) c[j] = c[j - 1];
        c[j] = v;
    }
    for (int i = 0; i < MOCK_AGENTS; i++) mock_set(s, i, c[i]);
}

CO_FN void co_permute(const co_state *s, const int *perm, co_state *out) {
    *out = *s; /* the padding */
    for (int i = 0; i < MOCK_AGENTS; i++) mock_set(out, perm[i], mock_get(s, i));
}
