/* Subset construction of a byte NFA over byte classes (constraints/dfa.py's determinize).

   The NFA comes as CSR arrays: epsilon targets, and byte-class-range edges. A DFA state is
   the sorted set of "important" NFA states (those with edges, and the accept state) in the
   epsilon closure; closures are computed once per NFA state. The output table is
   [states, classes] (-1: no move), numbered in discovery order; dfa.py then trims,
   minimizes and renumbers it canonically, so the result does not depend on this order.
   The table and acceptance flags are allocated here (their size is known only at the end) and
   handed to the caller, who copies them and releases them with subset_free.
   wall_s bounds wall-clock seconds too (a compile's time limit; <= 0: none).
   Returns the state count, -1 past max_states, -2 past the CPU-time budget or the wall-clock
   limit, -3 out of memory. */

#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c11 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "int_vec.h"

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double wall_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_int(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static uint64_t hash_set(const int32_t *set, int64_t len) {
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)len;
    for (int64_t i = 0; i < len; i++) h = (h ^ (uint32_t)set[i]) * 1099511628211ULL;
    return h;
}

typedef struct {
    int64_t n;
    const int32_t *eps_start, *eps, *edge_start, *class_lo, *class_hi, *edge_to;
    uint8_t *important;
    int64_t *closure_at; /* per NFA state: offset into closures (-1: not computed) */
    int32_t *closure_len;
    vec closures, stack;
    int32_t *mark;       /* per NFA state: stamp of the last search that saw it */
    int32_t stamp;
} nfa_t;

/* The important states of the epsilon closure of s (sorted), memoized. */
static int closure(nfa_t *a, int32_t s, const int32_t **out, int32_t *len) {
    if (a->closure_at[s] < 0) {
        int64_t at = a->closures.len;
        a->stamp++;
        a->stack.len = 0;
        if (push(&a->stack, s)) return -1;
        a->mark[s] = a->stamp;
        while (a->stack.len) {
            int32_t q = a->stack.data[--a->stack.len];
            if (a->important[q] && push(&a->closures, q)) return -1;
            for (int32_t e = a->eps_start[q]; e < a->eps_start[q + 1]; e++) {
                int32_t t = a->eps[e];
                if (a->mark[t] != a->stamp) {
                    a->mark[t] = a->stamp;
                    if (push(&a->stack, t)) return -1;
                }
            }
        }
        a->closure_at[s] = at;
        a->closure_len[s] = (int32_t)(a->closures.len - at);
        qsort(a->closures.data + at, (size_t)a->closure_len[s], sizeof(int32_t), cmp_int);
    }
    *out = a->closures.data + a->closure_at[s];
    *len = a->closure_len[s];
    return 0;
}

int64_t subset_construct(int64_t n, const int32_t *eps_start, const int32_t *eps,
                         const int32_t *edge_start, const int32_t *class_lo,
                         const int32_t *class_hi, const int32_t *edge_to, int32_t start,
                         int32_t accept, int32_t num_classes, int64_t max_states, double budget_s,
                         double wall_s, int32_t **table_out, uint8_t **accepting_out) {
    nfa_t a = {0};
    a.n = n, a.eps_start = eps_start, a.eps = eps, a.edge_start = edge_start;
    a.class_lo = class_lo, a.class_hi = class_hi, a.edge_to = edge_to;
    int64_t result = -3, count = 0, slots = 1024;
    double deadline = cpu_seconds() + budget_s;
    double wall_deadline = wall_s > 0 ? wall_seconds() + wall_s : 0;
    vec sets = {0}, merged = {0}, *buckets = calloc((size_t)num_classes, sizeof(vec));
    int64_t *set_at = malloc((size_t)(max_states + 1) * sizeof(int64_t));
    int32_t *set_len = malloc((size_t)(max_states + 1) * sizeof(int32_t));
    int32_t *slot = malloc((size_t)slots * sizeof(int32_t));
    vec table = {0}, accepting = {0}; /* accepting: one int32 per state (a vec), bytes out */
    a.important = calloc((size_t)n, 1);
    a.closure_at = malloc((size_t)n * sizeof(int64_t));
    a.closure_len = calloc((size_t)n, sizeof(int32_t));
    a.mark = calloc((size_t)n, sizeof(int32_t));
    if (!buckets || !set_at || !set_len || !slot || !a.important || !a.closure_at || !a.closure_len || !a.mark)
        goto done;
    for (int64_t s = 0; s < n; s++) {
        a.important[s] = edge_start[s + 1] > edge_start[s] || s == accept;
        a.closure_at[s] = -1;
    }
    memset(slot, 0xff, (size_t)slots * sizeof(int32_t));
    const int32_t *first;
    int32_t first_len;
    if (closure(&a, start, &first, &first_len)) goto done;
    /* state 0: the start closure */
    set_at[0] = 0;
    set_len[0] = first_len;
    for (int32_t i = 0; i < first_len; i++)
        if (push(&sets, first[i])) goto done;
    slot[hash_set(sets.data, first_len) & (uint64_t)(slots - 1)] = 0;
    count = 1;
    for (int64_t d = 0; d < count; d++) {
        if ((d & 63) == 0 && (cpu_seconds() > deadline || (wall_s > 0 && wall_seconds() > wall_deadline))) {
            result = -2;
            goto done;
        }
        for (int32_t c = 0; c < num_classes; c++) buckets[c].len = 0;
        int8_t acc = 0;
        /* first the edge targets per class (members often share them), then their closures */
        for (int32_t i = 0; i < set_len[d]; i++) {
            int32_t m = sets.data[set_at[d] + i];
            if (m == accept) acc = 1;
            for (int32_t e = edge_start[m]; e < edge_start[m + 1]; e++)
                for (int32_t c = class_lo[e]; c <= class_hi[e]; c++)
                    if (push(&buckets[c], edge_to[e])) goto done;
        }
        for (int32_t c = 0; c < num_classes; c++) {
            vec *b = &buckets[c];
            if (!b->len) continue;
            a.stamp++;
            int64_t u = 0;
            for (int64_t k = 0; k < b->len; k++) { /* distinct targets */
                int32_t t = b->data[k];
                if (a.mark[t] != a.stamp) a.mark[t] = a.stamp, b->data[u++] = t;
            }
            const int32_t *cl;
            int32_t cl_len;
            for (int64_t k = 0; k < u; k++) /* computed first: a new closure's search uses the marks */
                if (closure(&a, b->data[k], &cl, &cl_len)) goto done;
            merged.len = 0;
            a.stamp++;
            for (int64_t k = 0; k < u; k++) {
                if (closure(&a, b->data[k], &cl, &cl_len)) goto done; /* memoized: no search */
                for (int32_t j = 0; j < cl_len; j++)
                    if (a.mark[cl[j]] != a.stamp) {
                        a.mark[cl[j]] = a.stamp;
                        if (push(&merged, cl[j])) goto done;
                    }
            }
            b->len = 0; /* the bucket now holds the merged closure, deduplicated */
            for (int64_t k = 0; k < merged.len; k++)
                if (push(b, merged.data[k])) goto done;
        }
        if (push(&accepting, acc)) goto done;
        for (int32_t c = 0; c < num_classes; c++) {
            vec *b = &buckets[c];
            int32_t target = -1;
            if (b->len) {
                int64_t u = b->len; /* distinct already: sort for the set's canonical form */
                qsort(b->data, (size_t)u, sizeof(int32_t), cmp_int);
                uint64_t h = hash_set(b->data, u);
                int64_t at = (int64_t)(h & (uint64_t)(slots - 1));
                while (slot[at] >= 0) {
                    int32_t j = slot[at];
                    if (set_len[j] == u && !memcmp(sets.data + set_at[j], b->data, (size_t)u * sizeof(int32_t))) {
                        target = j;
                        break;
                    }
                    at = (at + 1) & (slots - 1);
                }
                if (target < 0) {
                    if (count >= max_states) {
                        result = -1;
                        goto done;
                    }
                    target = (int32_t)count;
                    set_at[count] = sets.len;
                    set_len[count] = (int32_t)u;
                    for (int64_t k = 0; k < u; k++)
                        if (push(&sets, b->data[k])) goto done;
                    slot[at] = target;
                    count++;
                    if (2 * count > slots) { /* grow and rehash */
                        int64_t bigger = 4 * slots;
                        int32_t *grown = malloc((size_t)bigger * sizeof(int32_t));
                        if (!grown) goto done;
                        memset(grown, 0xff, (size_t)bigger * sizeof(int32_t));
                        for (int64_t j = 0; j < count; j++) {
                            int64_t p = (int64_t)(hash_set(sets.data + set_at[j], set_len[j]) & (uint64_t)(bigger - 1));
                            while (grown[p] >= 0) p = (p + 1) & (bigger - 1);
                            grown[p] = (int32_t)j;
                        }
                        free(slot);
                        slot = grown;
                        slots = bigger;
                    }
                }
            }
            if (push(&table, target)) goto done;
        }
    }
    *table_out = table.data;
    *accepting_out = malloc((size_t)count);
    if (!*accepting_out) goto done;
    for (int64_t d = 0; d < count; d++) (*accepting_out)[d] = (uint8_t)accepting.data[d];
    table.data = 0;
    result = count;
done:
    free(table.data);
    free(accepting.data);
    if (buckets)
        for (int32_t c = 0; c < num_classes; c++) free(buckets[c].data);
    free(buckets);
    free(sets.data);
    free(merged.data);
    free(set_at);
    free(set_len);
    free(slot);
    free(a.important);
    free(a.closure_at);
    free(a.closure_len);
    free(a.mark);
    free(a.closures.data);
    free(a.stack.data);
    return result;
}

void subset_free(void *p) { free(p); }
