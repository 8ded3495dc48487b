/* Table-level steps after a subset construction (constraints/dfa_minimize.py, through
   constraints/native_subset.py): Moore refinement, the states that can reach acceptance, and the
   canonical breadth-first order. Plain loops over an int32 [states, classes] table (-1: no move). */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Moore partition refinement of a table [S, C] (-1: no move): rounds of "same block, same
   target blocks" until the block count is stable, as dfa_minimize._moore does (exactly, no
   hashing of signatures: equal signatures are compared in full). Writes each state's block
   to part (blocks numbered in order of first state). Returns the block count, -1 after
   max_rounds rounds (the caller keeps the table as it is), -3 out of memory. */
int64_t moore_blocks(int64_t states, int32_t classes, const int32_t *table, const uint8_t *accepting,
                     int64_t max_rounds, int32_t *part) {
    int64_t slots = 64, result = -3;
    while (slots < 2 * states) slots *= 2;
    int32_t *next = malloc((size_t)states * sizeof(int32_t));
    int32_t *slot = malloc((size_t)slots * sizeof(int32_t));
    int32_t *rep = malloc((size_t)states * sizeof(int32_t)); /* first state of each new block */
    if (!next || !slot || !rep) goto done;
    int64_t blocks = 0;
    int8_t seen[2] = {0, 0};
    for (int64_t s = 0; s < states; s++) {
        part[s] = accepting[s] ? 1 : 0;
        if (!seen[part[s]]) seen[part[s]] = 1, blocks++;
    }
    for (int64_t round = 0; round < max_rounds; round++) {
        memset(slot, 0xff, (size_t)slots * sizeof(int32_t));
        int64_t count = 0;
        for (int64_t s = 0; s < states; s++) {
            const int32_t *row = table + s * classes;
            uint64_t h = 1469598103934665603ULL ^ (uint64_t)part[s];
            for (int32_t c = 0; c < classes; c++)
                h = (h ^ (uint32_t)(row[c] < 0 ? -1 : part[row[c]])) * 1099511628211ULL;
            int64_t at = (int64_t)(h & (uint64_t)(slots - 1));
            int32_t found = -1;
            while (slot[at] >= 0) {
                int32_t r = rep[slot[at]];
                const int32_t *other = table + (int64_t)r * classes;
                int same = part[r] == part[s];
                for (int32_t c = 0; same && c < classes; c++)
                    same = (row[c] < 0 ? -1 : part[row[c]]) == (other[c] < 0 ? -1 : part[other[c]]);
                if (same) {
                    found = slot[at];
                    break;
                }
                at = (at + 1) & (slots - 1);
            }
            if (found < 0) {
                found = (int32_t)count;
                rep[count++] = (int32_t)s;
                slot[at] = found;
            }
            next[s] = found;
        }
        memcpy(part, next, (size_t)states * sizeof(int32_t));
        if (count == blocks) {
            result = count;
            goto done;
        }
        blocks = count;
    }
    result = -1;
done:
    free(next);
    free(slot);
    free(rep);
    return result;
}

/* States that can reach an accepting state (dfa_minimize.trim): live[s] = 1 or 0. Backward
   search over the reversed table. Returns 0, or -3 out of memory. */
int64_t live_states(int64_t states, int32_t classes, const int32_t *table, const uint8_t *accepting,
                    uint8_t *live) {
    int64_t edges = states * classes, result = -3;
    int64_t *start = calloc((size_t)states + 1, sizeof(int64_t));
    int32_t *source = malloc((size_t)(edges ? edges : 1) * sizeof(int32_t));
    int32_t *stack = malloc((size_t)(states ? states : 1) * sizeof(int32_t));
    if (!start || !source || !stack) goto done;
    for (int64_t e = 0; e < edges; e++)
        if (table[e] >= 0) start[table[e] + 1]++;
    for (int64_t s = 0; s < states; s++) start[s + 1] += start[s];
    for (int64_t e = 0; e < edges; e++) /* reversed edges, grouped by target */
        if (table[e] >= 0) source[start[table[e]]++] = (int32_t)(e / classes);
    for (int64_t s = states; s > 0; s--) start[s] = start[s - 1];
    start[0] = 0;
    int64_t top = 0;
    for (int64_t s = 0; s < states; s++) {
        live[s] = accepting[s] ? 1 : 0;
        if (live[s]) stack[top++] = (int32_t)s;
    }
    while (top) {
        int32_t t = stack[--top];
        for (int64_t k = start[t]; k < start[t + 1]; k++)
            if (!live[source[k]]) live[source[k]] = 1, stack[top++] = source[k];
    }
    result = 0;
done:
    free(start);
    free(source);
    free(stack);
    return result;
}

/* Breadth-first order from `first` (dfa_minimize.canonical_order): targets in class order.
   Writes the reached states to order; returns their count. */
int64_t bfs_order(int64_t states, int32_t classes, const int32_t *table, int32_t first, int32_t *order,
                  uint8_t *seen) {
    int64_t n = 1;
    memset(seen, 0, (size_t)states);
    order[0] = first;
    seen[first] = 1;
    for (int64_t i = 0; i < n; i++) {
        const int32_t *row = table + (int64_t)order[i] * classes;
        for (int32_t c = 0; c < classes; c++)
            if (row[c] >= 0 && !seen[row[c]]) seen[row[c]] = 1, order[n++] = row[c];
    }
    return n;
}
