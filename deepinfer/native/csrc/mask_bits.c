/* Setting token bits in an int32 mask row (constraints/masks.py `or_ids`): ids given as int32
   or int64, duplicates fine. A plain loop; numpy's ufunc.at cost ~10 us per call before its
   first id, and mask steps make several calls. Returns -1, having set nothing, when an id is
   outside the row's [0, 32 * words). */

#include <stdint.h>

int64_t or_ids32(uint32_t *row, int64_t words, const int32_t *ids, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || (int64_t)ids[i] >= 32 * words) return -1;
    for (int64_t i = 0; i < n; i++) row[(uint32_t)ids[i] >> 5] |= 1u << ((uint32_t)ids[i] & 31u);
    return 0;
}

int64_t or_ids64(uint32_t *row, int64_t words, const int64_t *ids, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= 32 * words) return -1;
    for (int64_t i = 0; i < n; i++) row[(uint64_t)ids[i] >> 5] |= 1u << ((uint64_t)ids[i] & 31u);
    return 0;
}
