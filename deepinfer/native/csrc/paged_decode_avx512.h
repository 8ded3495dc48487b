/* Paged decode attention, AVX-512 path (see paged_decode.c). */
#ifndef DEEPINFER_PAGED_DECODE_AVX512_H
#define DEEPINFER_PAGED_DECODE_AVX512_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fast_exp.h"

#ifdef __AVX512F__
#include <immintrin.h>

/* The AVX-512 path: keys in chunks of 16 positions (slots looked up per key, any block size). Each
 * chunk's keys are transposed once into [dk][16] so that a query's 16 scores are one vector: dk
 * FMAs with the query's elements broadcast, shared by 4 queries per pass; softmax runs 16 lanes
 * wide; values are summed into 4 queries' accumulators per pass, one 16-wide column at a time.
 * Queries are padded to a multiple of 4 (padding queries see no key, weigh 0 and are not
 * written). Head dims must be multiples of 16. */

static inline __attribute__((always_inline)) __m512 load16(const void *pool, int64_t offset, int bf16) {
    if (bf16) {
        __m256i bits = _mm256_loadu_si256((const __m256i *)((const uint16_t *)pool + offset));
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
    }
    return _mm512_loadu_ps((const float *)pool + offset);
}

/* Transpose the 16x16 block r[row][column] in place. */
static inline void transpose16(__m512 *r) {
    __m512 t[16];
    for (int i = 0; i < 8; i++) {  /* per 128-bit lane L: rows 2i, 2i+1, columns 4L..4L+3 interleaved */
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {  /* r[4i + c], lane L: column 4L + c of rows 4i..4i+3 */
        __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 2]);
        __m512d c = _mm512_castps_pd(t[4 * i + 1]), d = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
    }
    for (int c = 0; c < 4; c++) {  /* column 4L + c gathers lane L of r[c], r[4 + c], r[8 + c], r[12 + c] */
        __m512 x0 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x44), x1 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xEE);
        __m512 y0 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x44);
        __m512 y1 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xEE);
        t[c] = _mm512_shuffle_f32x4(x0, y0, 0x88);
        t[4 + c] = _mm512_shuffle_f32x4(x0, y0, 0xDD);
        t[8 + c] = _mm512_shuffle_f32x4(x1, y1, 0x88);
        t[12 + c] = _mm512_shuffle_f32x4(x1, y1, 0xDD);
    }
    for (int i = 0; i < 16; i++) r[i] = t[i];
}

/* Scores of one query over the chunk -> its online-softmax state and weights p (16 lanes). */
static inline void softmax_step(__m512 s, __mmask16 valid, float *m, float *l, float *acc, int dv, float *p) {
    const float top = _mm512_mask_reduce_max_ps(valid, s);
    if (top > *m) {
        const float alpha = *m == -INFINITY ? 0.0f : exp_nonpositive(*m - top);
        *m = top;
        *l *= alpha;
        const __m512 av = _mm512_set1_ps(alpha);
        for (int d0 = 0; d0 < dv; d0 += 16) _mm512_storeu_ps(acc + d0, _mm512_mul_ps(_mm512_loadu_ps(acc + d0), av));
    }
    const __m512 w = _mm512_maskz_mov_ps(valid, exp16(_mm512_sub_ps(s, _mm512_set1_ps(*m))));
    *l += _mm512_reduce_add_ps(w);
    _mm512_storeu_ps(p, w);
}

static inline __attribute__((always_inline)) void attend_item_avx512(
        const float *q, const void *kpool, const void *vpool, float *out, const int64_t *seq,
        const int64_t *tables, int heads, int hkv, int dk, int dv, int block_size, int window, float scale,
        int h, int bf16, float *work) {
    const int64_t first_row = seq[0], cached = seq[2];
    const int n_new = (int)seq[1], group = heads / hkv, nq = n_new * group, nqp = (nq + 3) & ~3;
    const int64_t *blocks = tables + seq[3];
    float *kt = work, *qs = kt + 16 * dk, *p = qs + (size_t)nqp * dk, *m = p + 16 * nqp, *l = m + nqp;
    float *acc = l + nqp;
    for (int i = 0; i < nqp; i++) { m[i] = -INFINITY; l[i] = 0.0f; }
    memset(acc, 0, sizeof(float) * (size_t)nqp * dv);
    memset(p, 0, sizeof(float) * 16 * (size_t)nqp);
    memset(qs, 0, sizeof(float) * (size_t)nqp * dk);
    for (int i = 0; i < nq; i++) {  /* scaled queries, row i = token i / G, head h * G + i % G */
        const float *qi = q + ((first_row + i / group) * heads + (int64_t)h * group + i % group) * dk;
        for (int d = 0; d < dk; d++) qs[(size_t)i * dk + d] = qi[d] * scale;
    }
    const int64_t total = cached + n_new;
    int64_t start = window > 0 ? cached - window + 1 : 0;
    if (start < 0) start = 0;
    const int64_t kstride = (int64_t)hkv * dk, vstride = (int64_t)hkv * dv;
    /* Chunks are the 16 positions [16c, 16c + 16): fixed whatever the block size, the window or how
     * many tokens this pass computes, so a row's sequence of softmax updates never changes. */
    for (int64_t j0 = start - start % 16; j0 < total; j0 += 16) {
        const int n = (int)(total - j0 < 16 ? total - j0 : 16);
        int64_t krow[16], vrow[16];
        const int64_t first_slot = blocks[j0 / block_size] * block_size + j0 % block_size;
        for (int t = 0; t < n; t++) {  /* a chunk lies in one block when blocks hold 16k slots */
            const int64_t j = j0 + t;
            const int64_t slot = block_size % 16 == 0 ? first_slot + t : blocks[j / block_size] * block_size + j % block_size;
            krow[t] = slot * kstride + (int64_t)h * dk;
            vrow[t] = slot * vstride + (int64_t)h * dv;
        }
        for (int d0 = 0; d0 < dk; d0 += 16) {
            __m512 rows[16];
            for (int t = 0; t < 16; t++)
                rows[t] = t < n ? load16(kpool, krow[t] + d0, bf16) : _mm512_setzero_ps();
            transpose16(rows);
            for (int e = 0; e < 16; e++) _mm512_storeu_ps(kt + (d0 + e) * 16, rows[e]);
        }
        for (int i0 = 0; i0 < nqp; i0 += 4) {
            __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
            const float *q0 = qs + (size_t)i0 * dk;
            for (int d = 0; d < dk; d++) {
                const __m512 kd = _mm512_loadu_ps(kt + d * 16);
                s0 = _mm512_fmadd_ps(_mm512_set1_ps(q0[d]), kd, s0);
                s1 = _mm512_fmadd_ps(_mm512_set1_ps(q0[dk + d]), kd, s1);
                s2 = _mm512_fmadd_ps(_mm512_set1_ps(q0[2 * dk + d]), kd, s2);
                s3 = _mm512_fmadd_ps(_mm512_set1_ps(q0[3 * dk + d]), kd, s3);
            }
            const __m512 sv[4] = {s0, s1, s2, s3};
            for (int j = 0; j < 4; j++) {
                const int i = i0 + j;
                const int64_t pos = cached + i / group, lo = window > 0 ? pos - window + 1 : 0;
                const int64_t a = lo > j0 ? lo - j0 : 0, b = pos + 1 - j0 < n ? pos + 1 - j0 : n;
                if (i >= nq || a >= b) {
                    _mm512_storeu_ps(p + 16 * i, _mm512_setzero_ps());
                    continue;
                }
                const __mmask16 valid = (__mmask16)(((1u << b) - 1u) & ~((1u << a) - 1u));
                softmax_step(sv[j], valid, m + i, l + i, acc + (size_t)i * dv, dv, p + 16 * i);
            }
        }
        for (int i0 = 0; i0 < nqp; i0 += 4) {
            const float *p0 = p + 16 * i0;
            for (int d0 = 0; d0 < dv; d0 += 16) {
                float *a0 = acc + (size_t)i0 * dv + d0;
                __m512 o0 = _mm512_loadu_ps(a0), o1 = _mm512_loadu_ps(a0 + dv);
                __m512 o2 = _mm512_loadu_ps(a0 + 2 * dv), o3 = _mm512_loadu_ps(a0 + 3 * dv);
                for (int t = 0; t < n; t++) {
                    const __m512 vt = load16(vpool, vrow[t] + d0, bf16);
                    o0 = _mm512_fmadd_ps(_mm512_set1_ps(p0[t]), vt, o0);
                    o1 = _mm512_fmadd_ps(_mm512_set1_ps(p0[16 + t]), vt, o1);
                    o2 = _mm512_fmadd_ps(_mm512_set1_ps(p0[32 + t]), vt, o2);
                    o3 = _mm512_fmadd_ps(_mm512_set1_ps(p0[48 + t]), vt, o3);
                }
                _mm512_storeu_ps(a0, o0);
                _mm512_storeu_ps(a0 + dv, o1);
                _mm512_storeu_ps(a0 + 2 * dv, o2);
                _mm512_storeu_ps(a0 + 3 * dv, o3);
            }
        }
    }
    for (int i = 0; i < nq; i++) {
        float *o = out + ((first_row + i / group) * heads + (int64_t)h * group + i % group) * dv;
        const __m512 inv = _mm512_set1_ps(1.0f / l[i]);
        for (int d0 = 0; d0 < dv; d0 += 16)
            _mm512_storeu_ps(o + d0, _mm512_mul_ps(_mm512_loadu_ps(acc + (size_t)i * dv + d0), inv));
    }
}

static void attend_item_avx512_f32(const float *q, const void *kpool, const void *vpool, float *out,
                                   const int64_t *seq, const int64_t *tables, int heads, int hkv, int dk, int dv,
                                   int block_size, int window, float scale, int h, float *work) {
    attend_item_avx512(q, kpool, vpool, out, seq, tables, heads, hkv, dk, dv, block_size, window, scale, h, 0, work);
}

static void attend_item_avx512_bf16(const float *q, const void *kpool, const void *vpool, float *out,
                                    const int64_t *seq, const int64_t *tables, int heads, int hkv, int dk, int dv,
                                    int block_size, int window, float scale, int h, float *work) {
    attend_item_avx512(q, kpool, vpool, out, seq, tables, heads, hkv, dk, dv, block_size, window, scale, h, 1, work);
}
#endif

#endif
