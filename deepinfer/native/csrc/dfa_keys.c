/* Language keys of DFA states for the constraint compiler's run cache (constraints/cfg/scan.py).

   The sub-DFA reachable from a state, renumbered breadth first (targets in byte order), names
   the language read from that state: equal keys exactly for equal sub-DFAs, so runs are shared
   between states of different lexemes that read the same language. Per state in that order the
   key holds: its acceptance, its number of runs of equal targets over the 256 bytes, the first
   byte of each run and the renumbered target of each run (-1: no transition).

   Also the literal a state forces (literal_runs.py): the bytes read while each state has one move. */

#include <stdint.h>
#include <string.h>

/* Writes the first byte of each run of equal targets in a row to firsts (byte 0 first) and
   returns the number of runs. The comparison loop has no side effects, so the compiler
   vectorizes it, and the run starts are then read 8 bytes at a time: a scalar scan of the 256
   bytes per state was most of a key's time. */
static int32_t run_starts(const int32_t *row, int32_t *firsts) {
    uint8_t differs[256];
    differs[0] = 1;
    for (int b = 1; b < 256; b++) differs[b] = row[b] != row[b - 1];
    int32_t runs = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && defined(__GNUC__)
    for (int k = 0; k < 256; k += 8) {
        uint64_t word;  /* byte k + j of the row is byte j of the word */
        memcpy(&word, differs + k, 8);
        while (word) {
            firsts[runs++] = k + __builtin_ctzll(word) / 8;
            word &= word - 1;
        }
    }
#else
    for (int b = 0; b < 256; b++)
        if (differs[b]) firsts[runs++] = b;
#endif
    return runs;
}

/* trans: int32 [S, 256]; accepting: 0/1 [S]; index: int32 [S] scratch, all -1 on entry (left
   so on return). Writes the key to out (capacity cap int32s). Returns its length, -1 when more
   than `limit` states are reachable, -2 when cap is too small. */
int64_t sub_dfa_key(const int32_t *trans, const uint8_t *accepting, int32_t state, int32_t limit,
                    int32_t *index, int32_t *order, int32_t *out, int64_t cap) {
    int64_t n = 1, length = 0, result = 0;
    int32_t firsts[256];
    order[0] = state;
    index[state] = 0;
    for (int64_t i = 0; i < n; i++) {
        const int32_t *row = trans + (int64_t)order[i] * 256;
        int32_t runs = run_starts(row, firsts);
        for (int32_t r = 0; r < runs; r++) {
            int32_t t = row[firsts[r]];
            if (t >= 0 && index[t] < 0) {
                if (n >= limit) {
                    result = -1;
                    goto done;
                }
                index[t] = (int32_t)n;
                order[n++] = t;
            }
        }
        if (length + 2 + 2 * runs > cap) {
            result = -2;
            goto done;
        }
        out[length++] = accepting[order[i]];
        out[length++] = runs;
        int32_t *targets = out + length + runs;
        for (int32_t r = 0; r < runs; r++) {
            int32_t t = row[firsts[r]];
            out[length + r] = firsts[r];
            targets[r] = t < 0 ? -1 : index[t];
        }
        length += 2 * runs;
    }
    result = length;
done:
    for (int64_t i = 0; i < n; i++) index[order[i]] = -1;
    return result;
}

/* The literal forced from `state`: while the current state has exactly one byte with a move
   (and, after the first byte, is not accepting), append that byte and follow it; at most
   `limit` bytes. Writes the state reached to *end. Returns the literal's length. */
int64_t forced_literal(const int32_t *trans, const uint8_t *accepting, int32_t state, int64_t limit,
                       uint8_t *out, int32_t *end) {
    int64_t length = 0;
    int32_t q = state;
    while (length < limit && !(length > 0 && accepting[q])) {
        const int32_t *row = trans + (int64_t)q * 256;
        int live = 0;
        for (int b = 0; b < 256; b++) live += row[b] >= 0;  /* vectorized */
        if (live != 1) break;
        int only = 0;
        while (row[only] < 0) only++;
        out[length++] = (uint8_t)only;
        q = row[only];
    }
    *end = q;
    return length;
}
