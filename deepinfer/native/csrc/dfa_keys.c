/* Language keys of DFA states for the constraint compiler's run cache (constraints/cfg/scan.py).

   The sub-DFA reachable from a state, renumbered breadth first (targets in byte order), names
   the language read from that state: equal keys exactly for equal sub-DFAs, so runs are shared
   between states of different lexemes that read the same language. Per state in that order the
   key holds: its acceptance, its number of runs of equal targets over the 256 bytes, the first
   byte of each run and the renumbered target of each run (-1: no transition). */

#include <stdint.h>

/* trans: int32 [S, 256]; accepting: 0/1 [S]; index: int32 [S] scratch, all -1 on entry (left
   so on return). Writes the key to out (capacity cap int32s). Returns its length, -1 when more
   than `limit` states are reachable, -2 when cap is too small. */
int64_t sub_dfa_key(const int32_t *trans, const uint8_t *accepting, int32_t state, int32_t limit,
                    int32_t *index, int32_t *order, int32_t *out, int64_t cap) {
    int64_t n = 1, length = 0, result = 0;
    order[0] = state;
    index[state] = 0;
    for (int64_t i = 0; i < n; i++) {
        const int32_t *row = trans + (int64_t)order[i] * 256;
        int64_t runs = 0;
        for (int b = 0; b < 256; b++) {
            if (b == 0 || row[b] != row[b - 1]) {
                runs++;
                int32_t t = row[b];
                if (t >= 0 && index[t] < 0) {
                    if (n >= limit) {
                        result = -1;
                        goto done;
                    }
                    index[t] = (int32_t)n;
                    order[n++] = t;
                }
            }
        }
        if (length + 2 + 2 * runs > cap) {
            result = -2;
            goto done;
        }
        out[length++] = accepting[order[i]];
        out[length++] = (int32_t)runs;
        int32_t *firsts = out + length, *targets = out + length + runs;
        int64_t r = 0;
        for (int b = 0; b < 256; b++) {
            if (b == 0 || row[b] != row[b - 1]) {
                firsts[r] = b;
                targets[r] = row[b] < 0 ? -1 : index[row[b]];
                r++;
            }
        }
        length += 2 * runs;
    }
    result = length;
done:
    for (int64_t i = 0; i < n; i++) index[order[i]] = -1;
    return result;
}
