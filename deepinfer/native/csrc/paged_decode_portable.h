/* Paged decode attention, portable path: any head dims, any CPU (see paged_decode.c).
 * Keys in tiles of TILE positions, copied to float rows; one query at a time. */
#ifndef DEEPINFER_PAGED_DECODE_PORTABLE_H
#define DEEPINFER_PAGED_DECODE_PORTABLE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fast_exp.h"

#define TILE 32

/* Dot product in a fixed order (16 partial sums, then the tail, then the partial sums in order):
 * a compiler-vectorized reduction may peel leading elements to align its loads, so the same row
 * would round differently at another address. */
static inline float dot_fixed(const float *a, const float *b, int n) {
    float part[16] = {0};
    int d = 0;
    for (; d + 16 <= n; d += 16)
        for (int j = 0; j < 16; j++) part[j] += a[d + j] * b[d + j];
    for (int j = 0; d < n; d++, j++) part[j] += a[d] * b[d];
    float sum = 0.0f;
    for (int j = 0; j < 16; j++) sum += part[j];
    return sum;
}

static inline void load_row_f32(float *dst, const void *pool, int64_t index, int d) {
    memcpy(dst, (const float *)pool + index * d, (size_t)d * sizeof(float));
}

static inline void load_row_bf16(float *dst, const void *pool, int64_t index, int d) {
    const uint16_t *src = (const uint16_t *)pool + index * d;
    uint32_t *out = (uint32_t *)dst;
#pragma omp simd
    for (int i = 0; i < d; i++) out[i] = (uint32_t)src[i] << 16;
}

typedef void (*load_row_fn)(float *, const void *, int64_t, int);

static void attend_item(const float *q, const void *kpool, const void *vpool, float *out,
                        const int64_t *seq, const int64_t *tables, int heads, int hkv, int dk, int dv,
                        int block_size, int window, float scale, int h, load_row_fn load_row,
                        float *work) {
    const int64_t first_row = seq[0], cached = seq[2];
    const int n_new = (int)seq[1], group = heads / hkv, nq = n_new * group;
    const int64_t *blocks = tables + seq[3];
    float *ktile = work, *vtile = ktile + TILE * dk, *m = vtile + TILE * dv, *l = m + nq;
    float *acc = l + nq, *s = acc + (size_t)nq * dv;
    for (int i = 0; i < nq; i++) { m[i] = -INFINITY; l[i] = 0.0f; }
    memset(acc, 0, sizeof(float) * (size_t)nq * dv);
    const int64_t total = cached + n_new;
    int64_t start = window > 0 ? cached - window + 1 : 0;
    if (start < 0) start = 0;
    for (int64_t j0 = start - start % TILE; j0 < total; j0 += TILE) {  /* tiles at fixed positions */
        const int tile = (int)(total - j0 < TILE ? total - j0 : TILE);
        for (int t = 0; t < tile; t++) {
            const int64_t j = j0 + t;
            const int64_t slot = blocks[j / block_size] * block_size + j % block_size;
            load_row(ktile + t * dk, kpool, slot * hkv + h, dk);
            load_row(vtile + t * dv, vpool, slot * hkv + h, dv);
        }
        for (int i = 0; i < nq; i++) {
            const int r = i / group, g = i % group;
            const int64_t pos = cached + r;
            int64_t lo = window > 0 ? pos - window + 1 : 0;
            int a = (int)(lo > j0 ? lo - j0 : 0);
            int b = (int)(pos + 1 - j0 < tile ? pos + 1 - j0 : tile);
            if (a >= b) continue;
            const float *qi = q + ((first_row + r) * heads + (int64_t)h * group + g) * dk;
            float top = -INFINITY;
            for (int t = a; t < b; t++) {
                s[t] = dot_fixed(qi, ktile + t * dk, dk) * scale;
                top = s[t] > top ? s[t] : top;
            }
            float *ai = acc + (size_t)i * dv;
            if (top > m[i]) {
                const float alpha = m[i] == -INFINITY ? 0.0f : exp_nonpositive(m[i] - top);
                m[i] = top;
                l[i] *= alpha;
#pragma omp simd
                for (int d = 0; d < dv; d++) ai[d] *= alpha;
            }
            const float mi = m[i];
            float sum = 0.0f;
            for (int t = a; t < b; t++) {  /* in key order: a fixed summation order */
                s[t] = exp_nonpositive(s[t] - mi);
                sum += s[t];
            }
            l[i] += sum;
            for (int t = a; t < b; t++) {
                const float p = s[t];
                const float *vt = vtile + t * dv;
#pragma omp simd
                for (int d = 0; d < dv; d++) ai[d] += p * vt[d];
            }
        }
    }
    for (int i = 0; i < nq; i++) {
        const int r = i / group, g = i % group;
        float *o = out + ((first_row + r) * heads + (int64_t)h * group + g) * dv;
        const float inv = 1.0f / l[i];
        const float *ai = acc + (size_t)i * dv;
#pragma omp simd
        for (int d = 0; d < dv; d++) o[d] = ai[d] * inv;
    }
}


#endif
