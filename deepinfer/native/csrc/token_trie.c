/* Token-trie walks for the constraint compiler's mask runs (constraints/cfg/native_walks.py).

   The vocabulary's tokens, sorted by their bytes, make a trie whose preorder is that sorted
   order: node i is a distinct prefix, its subtree holds the sorted positions lo[i] .. hi[i]-1
   and the nodes i .. end[i]-1. A walk runs one lexeme DFA over the trie from one state: a
   node whose byte is dead skips its whole subtree, so a walk costs the live prefixes only.

   Outputs are sorted positions: `inside` (every byte of the token read, the DFA still live)
   and boundary crossings (position, offset) where the DFA accepts with bytes left over and
   the next byte may follow the lexeme. The caller owns the buffers; a walk returns how many
   crossings it found, and writes at most `hit_cap` of them (the caller retries when short).
   No allocation, no OpenMP: called from Python through ctypes, one walk per cold run. */

#include <stdint.h>

#define MAX_DEPTH 4096

/* Build the trie of n sorted tokens (token p: bytes[start[p] .. start[p] + len[p]), lcp[p]
   bytes shared with token p-1). Fills the node arrays (capacity cap) and, per node, the
   ASCII bytes (sig, two words) and whether any non-ASCII byte (wide) occur strictly below it.
   Returns the node count, or -1 when cap or MAX_DEPTH is too small. */
int64_t trie_build(int64_t n, const uint8_t *bytes, const int64_t *start, const int64_t *len,
                   const int64_t *lcp, int64_t cap, uint8_t *byte, int32_t *depth, int32_t *end,
                   int32_t *lo, int32_t *hi, int32_t *here, uint64_t *sig, uint8_t *wide) {
    int32_t open[MAX_DEPTH];
    int64_t count = 0, top = 0; /* open[d-1]: the node at depth d on the current path */
    for (int64_t p = 0; p < n; p++) {
        int64_t length = len[p], shared = lcp[p];
        if (length > MAX_DEPTH || length < 1 || shared > top) return -1;
        while (top > shared) { /* close the previous token's nodes below the shared prefix */
            int32_t node = open[--top];
            end[node] = (int32_t)count;
            hi[node] = (int32_t)p;
        }
        if (shared == length) { /* the same bytes as token p-1 */
            here[open[length - 1]]++;
            continue;
        }
        for (int64_t d = shared + 1; d <= length; d++) {
            if (count >= cap) return -1;
            byte[count] = bytes[start[p] + d - 1];
            depth[count] = (int32_t)d;
            lo[count] = (int32_t)p;
            here[count] = 0;
            open[d - 1] = (int32_t)count++;
        }
        top = length;
        here[open[length - 1]] = 1;
    }
    while (top > 0) {
        int32_t node = open[--top];
        end[node] = (int32_t)count;
        hi[node] = (int32_t)n;
    }
    for (int64_t i = count - 1; i >= 0; i--) { /* children come after their parent */
        uint64_t s0 = 0, s1 = 0;
        uint8_t w = 0;
        for (int64_t j = i + 1; j < end[i]; j = end[j]) {
            uint8_t b = byte[j];
            if (b < 64) s0 |= 1ULL << b;
            else if (b < 128) s1 |= 1ULL << (b - 64);
            else w = 1;
            s0 |= sig[2 * j];
            s1 |= sig[2 * j + 1];
            w |= wide[j];
        }
        sig[2 * i] = s0;
        sig[2 * i + 1] = s1;
        wide[i] = w;
    }
    return count;
}

static inline void emit_hits(int32_t first, int32_t last, int32_t offset, int32_t *hit_pos,
                             int32_t *hit_off, int64_t hit_cap, int64_t *hits) {
    for (int32_t p = first; p < last; p++, (*hits)++) {
        if (*hits < hit_cap) {
            hit_pos[*hits] = p;
            hit_off[*hits] = offset;
        }
    }
}

/* Walk the trie from DFA state `state`, reading only first bytes b with first_ok[b].
   trans: int32 [S, 256] (-1 dead); accepting, follow: 0/1 bytes. loop_bits (uint64 [S, 2],
   the ASCII bytes looping on each state) and loop_ok ([S]: a token whose rest loops there
   is inside and crosses no boundary) may be NULL; with them a subtree whose bytes all loop
   on its state is taken whole. inside: capacity n. Returns the number of crossings. */
int64_t trie_walk(int64_t nodes, const uint8_t *byte, const int32_t *depth, const int32_t *end,
                  const int32_t *lo, const int32_t *hi, const int32_t *here, const uint64_t *sig,
                  const uint8_t *wide, const int32_t *trans, const uint8_t *accepting,
                  const uint8_t *follow, const uint64_t *loop_bits, const uint8_t *loop_ok,
                  int32_t state, const uint8_t *first_ok, int32_t *inside, int64_t *n_inside,
                  int32_t *hit_pos, int32_t *hit_off, int64_t hit_cap) {
    int32_t st[MAX_DEPTH + 1];
    int64_t count = 0, hits = 0, i = 0;
    st[0] = state;
    while (i < nodes) {
        int32_t d = depth[i];
        uint8_t b = byte[i];
        if (d == 1 && !first_ok[b]) {
            i = end[i];
            continue;
        }
        int32_t q = trans[(int64_t)st[d - 1] * 256 + b];
        if (q < 0) {
            i = end[i];
            continue;
        }
        if (loop_ok != 0 && loop_ok[q] && !wide[i] && (sig[2 * i] & ~loop_bits[2 * q]) == 0 &&
            (sig[2 * i + 1] & ~loop_bits[2 * q + 1]) == 0) {
            for (int32_t p = lo[i]; p < hi[i]; p++) inside[count++] = p;
            i = end[i];
            continue;
        }
        st[d] = q;
        for (int32_t k = 0; k < here[i]; k++) inside[count++] = lo[i] + k;
        if (accepting[q]) {
            for (int64_t j = i + 1; j < end[i]; j = end[j]) {
                if (follow[byte[j]]) emit_hits(lo[j], hi[j], d, hit_pos, hit_off, hit_cap, &hits);
            }
        }
        i++;
    }
    *n_inside = count;
    return hits;
}

/* Walk k entries (sorted position pos[e], bytes already read off[e]) from DFA state `state`,
   each on its own: the scope of a run below the root. inside: capacity k. Returns the number
   of crossings (a token may cross at several offsets). */
int64_t entries_walk(const uint8_t *bytes, const int64_t *start, const int64_t *len, int64_t k,
                     const int64_t *pos, const int64_t *off, const int32_t *trans,
                     const uint8_t *accepting, const uint8_t *follow, int32_t state,
                     int32_t *inside, int64_t *n_inside, int32_t *hit_pos, int32_t *hit_off,
                     int64_t hit_cap) {
    int64_t count = 0, hits = 0;
    for (int64_t e = 0; e < k; e++) {
        int64_t p = pos[e], j = off[e], length = len[p];
        const uint8_t *token = bytes + start[p];
        int32_t s = state;
        while (j < length) {
            s = trans[(int64_t)s * 256 + token[j]];
            if (s < 0) break;
            j++;
            if (j < length && accepting[s] && follow[token[j]]) {
                if (hits < hit_cap) {
                    hit_pos[hits] = (int32_t)p;
                    hit_off[hits] = (int32_t)j;
                }
                hits++;
            }
        }
        if (s >= 0) inside[count++] = (int32_t)p;
    }
    *n_inside = count;
    return hits;
}
