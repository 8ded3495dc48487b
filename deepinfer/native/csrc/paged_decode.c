/* Paged attention: the new query tokens of each sequence over that sequence's paged KV.
 *
 * Reads keys and values in place from the pool (no per-layer gather copy), one work item per
 * (sequence, kv head): the G query heads of every new token of the sequence share each key tile,
 * so a key is read from memory once per kv head, not once per query. Online softmax over tiles
 * of keys at fixed positions, float32 accumulation. A query row's result depends only on its own
 * sequence and position (fixed order of operations whatever else is in the batch, however many
 * tokens its sequence computes in this pass). Two paths: paged_decode_avx512.h (head dims
 * multiples of 16) and paged_decode_portable.h (anything else, or no AVX-512).
 *
 * Layouts (row-major, contiguous):
 *   q    [T, H, dk] float32       out [T, H, dv] float32 (only the rows of the listed sequences)
 *   kpool [slots, Hkv, dk]        vpool [slots, Hkv, dv]   float32 or bfloat16 (uint16 bits)
 *   seqs [S, 4] int64: first row in q/out, new tokens, tokens cached before them, offset in tables
 *   tables int64: block ids, each sequence's run starting at its offset
 * Query token r of a sequence sits at position cached + r and sees keys [lo, cached + r], where
 * lo = max(0, cached + r - window + 1) with a window (window > 0), else 0.
 */
#include <stdint.h>
#include <stdlib.h>

#include "paged_decode_avx512.h"
#include "paged_decode_portable.h"

/* 1 when attention with these head dims runs the vectorized path (AVX-512 compiled in, dims multiples
 * of 16), 0 when it would take the portable path (correct, but slower than PyTorch's batched path). */
int paged_decode_fast_path(int dk, int dv) {
#ifdef __AVX512F__
    return dk % 16 == 0 && dv % 16 == 0;
#else
    (void)dk;
    (void)dv;
    return 0;
#endif
}

/* Returns 0, or -1 when a work buffer could not be allocated (out is then incomplete). */
int paged_decode_attention(const float *q, const void *kpool, const void *vpool, float *out,
                           const int64_t *seqs, const int64_t *tables, int n_seqs, int heads, int hkv,
                           int dk, int dv, int block_size, int window, float scale, int kv_bf16,
                           int threads) {
    load_row_fn load_row = kv_bf16 ? load_row_bf16 : load_row_f32;
    int max_new = 1;
    for (int i = 0; i < n_seqs; i++) max_new = seqs[4 * i + 1] > max_new ? (int)seqs[4 * i + 1] : max_new;
    const size_t nq = (size_t)((max_new * (heads / hkv) + 3) & ~3);  /* rounded up for the AVX-512 path */
    const size_t floats = (size_t)TILE * (dk + dv) + 16 * (size_t)dk + nq * (dk + 16 + 2 + dv) + TILE;
    int failed = 0;
#pragma omp parallel num_threads(threads) reduction(| : failed)
    {
        float *work = malloc(floats * sizeof(float));
        failed = work == NULL;
#pragma omp for schedule(static)
        for (int w = 0; w < n_seqs * hkv; w++) {
            if (work == NULL) continue;
#ifdef __AVX512F__
            if (dk % 16 == 0 && dv % 16 == 0) {
                (kv_bf16 ? attend_item_avx512_bf16 : attend_item_avx512_f32)(
                    q, kpool, vpool, out, seqs + 4 * (w / hkv), tables, heads, hkv, dk, dv, block_size, window,
                    scale, w % hkv, work);
                continue;
            }
#endif
            attend_item(q, kpool, vpool, out, seqs + 4 * (w / hkv), tables, heads, hkv, dk, dv,
                        block_size, window, scale, w % hkv, load_row, work);
        }
        free(work);
    }
    return failed ? -1 : 0;
}
