/* Thompson construction of a byte NFA from a serialized regular expression
   (constraints/native_nfa.py writes the program; constraints/nfa.py is the Python twin).

   The program is int32 words, prefix order:
     1 LIT   n b1..bn            bytes of a literal
     2 CLASS k, k times: m lo1 hi1 .. lom him   UTF-8 byte-range sequences of a class
     3 SEQ   n item1..itemn
     4 ALT   n item1..itemn
     5 REP   lo hi item          hi = -1: unbounded
     6 DFA   S, r, r times: q lo hi t, a, a times: q   a DFA leaf: its states' byte-range
                                 runs and its accepting states (one NFA state each, then exit)
   States and edges are made in exactly the order nfa.py makes them, so the NFA is the same
   one, state for state (tests compare them), and the state limit fails at the same point.
   Output: CSR arrays (per state, epsilon targets and (lo, hi, target) byte edges in the order
   they were added), allocated here and released by the caller with nfa_free.
   Returns the state count, -1 past max_states, -3 out of memory, -4 a malformed program. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "int_vec.h"

typedef struct {
    const int32_t *prog;
    int64_t len, max_states;
    int32_t states;
    vec eps_from, eps_to;                    /* epsilon moves, in creation order */
    vec edge_from, edge_lo, edge_hi, edge_to; /* byte-range moves, in creation order */
    vec trie;                                /* a class's (state, lo, hi, target) entries */
    int error;                               /* 0, -1 too large, -3 out of memory, -4 malformed */
} builder;

static int32_t new_state(builder *b) {
    if (b->states >= b->max_states) {
        if (!b->error) b->error = -1;
        return -1;
    }
    return b->states++;
}

static void eps(builder *b, int32_t from, int32_t to) {
    if (push(&b->eps_from, from) || push(&b->eps_to, to)) b->error = -3;
}

static void edge(builder *b, int32_t from, int32_t lo, int32_t hi, int32_t to) {
    if (push(&b->edge_from, from) || push(&b->edge_lo, lo) || push(&b->edge_hi, hi) || push(&b->edge_to, to))
        b->error = -3;
}

static int64_t build(builder *b, int64_t at, int32_t *entry, int32_t *exit_);
static int64_t word(builder *b, int64_t at);

/* The offset after the expression at `at`, building nothing. */
static int64_t skip(builder *b, int64_t at) {
    int64_t n;
    switch (word(b, at)) {
        case 1: return at + 2 + word(b, at + 1);
        case 2:
            n = word(b, at + 1);
            at += 2;
            for (int64_t s = 0; s < n && !b->error; s++) at += 1 + 2 * word(b, at);
            return at;
        case 3:
        case 4:
            n = word(b, at + 1);
            at += 2;
            for (int64_t i = 0; i < n && !b->error; i++) at = skip(b, at);
            return at;
        case 5: return skip(b, at + 3);
        case 6:
            at += 2;
            at += 1 + 4 * word(b, at);
            return at + 1 + word(b, at);
        default: b->error = -4; return at;
    }
}

static int64_t word(builder *b, int64_t at) {
    if (at >= b->len) {
        b->error = -4;
        return 0;
    }
    return b->prog[at];
}

static int64_t literal(builder *b, int64_t at, int32_t *entry, int32_t *exit_) {
    int64_t n = word(b, at++);
    int32_t cur = *entry = new_state(b);
    for (int64_t i = 0; i < n && !b->error; i++) {
        int32_t byte = (int32_t)word(b, at++), nxt = new_state(b);
        edge(b, cur, byte, byte, nxt);
        cur = nxt;
    }
    *exit_ = cur;
    return at;
}

/* Sequences sharing leading byte ranges share states (a small trie), as nfa.py does. */
static int64_t char_class(builder *b, int64_t at, int32_t *entry, int32_t *exit_) {
    int64_t count = word(b, at++);
    *entry = new_state(b);
    *exit_ = new_state(b);
    b->trie.len = 0;
    for (int64_t s = 0; s < count && !b->error; s++) {
        int64_t m = word(b, at++);
        int32_t cur = *entry;
        for (int64_t k = 0; k < m && !b->error; k++) {
            int32_t lo = (int32_t)word(b, at), hi = (int32_t)word(b, at + 1);
            at += 2;
            if (k == m - 1) {
                edge(b, cur, lo, hi, *exit_);
                break;
            }
            int32_t nxt = -1;
            for (int64_t t = 0; t < b->trie.len; t += 4)
                if (b->trie.data[t] == cur && b->trie.data[t + 1] == lo && b->trie.data[t + 2] == hi) {
                    nxt = b->trie.data[t + 3];
                    break;
                }
            if (nxt < 0) {
                nxt = new_state(b);
                if (push(&b->trie, cur) || push(&b->trie, lo) || push(&b->trie, hi) || push(&b->trie, nxt))
                    b->error = -3;
                edge(b, cur, lo, hi, nxt);
            }
            cur = nxt;
        }
    }
    return at;
}

static int64_t sequence(builder *b, int64_t at, int32_t *entry, int32_t *exit_) {
    int64_t n = word(b, at++);
    int32_t cur = *entry = new_state(b);
    for (int64_t i = 0; i < n && !b->error; i++) {
        int32_t a, z;
        at = build(b, at, &a, &z);
        eps(b, cur, a);
        cur = z;
    }
    *exit_ = cur;
    return at;
}

static int64_t alternation(builder *b, int64_t at, int32_t *entry, int32_t *exit_) {
    int64_t n = word(b, at++);
    *entry = new_state(b);
    *exit_ = new_state(b);
    for (int64_t i = 0; i < n && !b->error; i++) {
        int32_t a, z;
        at = build(b, at, &a, &z);
        eps(b, *entry, a);
        eps(b, z, *exit_);
    }
    return at;
}

/* Each copy re-reads the item's program from `item`; returns the offset after it. */
static int64_t repeat(builder *b, int64_t at, int32_t *entry, int32_t *exit_) {
    int64_t lo = word(b, at), hi = word(b, at + 1), item = at + 2, end = item;
    int32_t cur = *entry = new_state(b), a, z;
    if (lo < 0 || (hi >= 0 && hi < lo)) b->error = -4;
    for (int64_t i = 0; i < lo && !b->error; i++) {
        end = build(b, item, &a, &z);
        eps(b, cur, a);
        cur = z;
    }
    if (hi < 0) {
        if (b->error) return end;
        end = build(b, item, &a, &z);
        int32_t loop = new_state(b);
        eps(b, cur, loop);
        eps(b, loop, a);
        eps(b, z, loop);
        *exit_ = loop;
        return end;
    }
    *exit_ = new_state(b);
    for (int64_t i = 0; i < hi - lo && !b->error; i++) {
        eps(b, cur, *exit_);
        end = build(b, item, &a, &z);
        eps(b, cur, a);
        cur = z;
    }
    eps(b, cur, *exit_);
    return hi == 0 ? skip(b, item) : end;  /* no copy read the item: step over its program */
}

static int64_t byte_dfa(builder *b, int64_t at, int32_t *entry, int32_t *exit_) {
    int64_t count = word(b, at++);
    int32_t base = b->states;
    for (int64_t q = 0; q <= count && !b->error; q++) new_state(b);
    *entry = base;
    *exit_ = base + (int32_t)count;
    int64_t runs = word(b, at++);
    for (int64_t r = 0; r < runs && !b->error; r++, at += 4) {
        int64_t q = word(b, at), t = word(b, at + 3);
        if (q < 0 || q >= count || t < 0 || t >= count) b->error = -4;
        else edge(b, base + (int32_t)q, (int32_t)word(b, at + 1), (int32_t)word(b, at + 2), base + (int32_t)t);
    }
    int64_t accepting = word(b, at++);
    for (int64_t i = 0; i < accepting && !b->error; i++) {
        int64_t q = word(b, at++);
        if (q < 0 || q >= count) b->error = -4;
        else eps(b, base + (int32_t)q, *exit_);
    }
    return at;
}

static int64_t build(builder *b, int64_t at, int32_t *entry, int32_t *exit_) {
    *entry = *exit_ = -1;
    if (b->error) return at;
    switch (word(b, at)) {
        case 1: return literal(b, at + 1, entry, exit_);
        case 2: return char_class(b, at + 1, entry, exit_);
        case 3: return sequence(b, at + 1, entry, exit_);
        case 4: return alternation(b, at + 1, entry, exit_);
        case 5: return repeat(b, at + 1, entry, exit_);
        case 6: return byte_dfa(b, at + 1, entry, exit_);
        default: b->error = -4; return at;
    }
}

/* Counting sort of (from, payload...) rows by `from`, stable: CSR in creation order. */
static int32_t *csr_starts(const vec *from, int32_t states) {
    int32_t *start = calloc((size_t)states + 1, sizeof(int32_t));
    if (!start) return NULL;
    for (int64_t i = 0; i < from->len; i++) start[from->data[i] + 1]++;
    for (int32_t s = 0; s < states; s++) start[s + 1] += start[s];
    return start;
}

static int32_t *scatter(const vec *from, const vec *values, const int32_t *start, int32_t states) {
    int32_t *out = malloc((size_t)(values->len ? values->len : 1) * sizeof(int32_t));
    int32_t *fill = malloc(((size_t)states + 1) * sizeof(int32_t));
    if (!out || !fill) {
        free(out);
        free(fill);
        return NULL;
    }
    memcpy(fill, start, ((size_t)states + 1) * sizeof(int32_t));
    for (int64_t i = 0; i < from->len; i++) out[fill[from->data[i]]++] = values->data[i];
    free(fill);
    return out;
}

/* out: eps_start[n+1], eps[], edge_start[n+1], edge_lo[], edge_hi[], edge_to[] (free each with
   nfa_free); ends: start state, accept state. */
int64_t nfa_build(const int32_t *prog, int64_t len, int64_t max_states, int32_t **out, int32_t *ends) {
    builder b;
    memset(&b, 0, sizeof b);
    b.prog = prog;
    b.len = len;
    b.max_states = max_states;
    int32_t entry, exit_;
    int64_t end = build(&b, 0, &entry, &exit_);
    if (!b.error && end != len) b.error = -4;
    int64_t result = b.error ? b.error : b.states;
    for (int i = 0; i < 6; i++) out[i] = NULL;
    if (!b.error) {
        out[0] = csr_starts(&b.eps_from, b.states);
        out[2] = csr_starts(&b.edge_from, b.states);
        if (out[0]) out[1] = scatter(&b.eps_from, &b.eps_to, out[0], b.states);
        if (out[2]) {
            out[3] = scatter(&b.edge_from, &b.edge_lo, out[2], b.states);
            out[4] = scatter(&b.edge_from, &b.edge_hi, out[2], b.states);
            out[5] = scatter(&b.edge_from, &b.edge_to, out[2], b.states);
        }
        for (int i = 0; i < 6; i++)
            if (!out[i]) result = -3;
        ends[0] = entry;
        ends[1] = exit_;
    }
    if (result < 0)
        for (int i = 0; i < 6; i++) {
            free(out[i]);
            out[i] = NULL;
        }
    free(b.eps_from.data);
    free(b.eps_to.data);
    free(b.edge_from.data);
    free(b.edge_lo.data);
    free(b.edge_hi.data);
    free(b.edge_to.data);
    free(b.trie.data);
    return result;
}

void nfa_free(void *p) { free(p); }
