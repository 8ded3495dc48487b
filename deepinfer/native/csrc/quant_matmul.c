/* y = x W^T with W held as block-quantized unsigned integers (deepinfer/model/quant/packed.py).
 *
 * Weights: rows in panels of 16 (the last one zero-padded); per panel and per chunk of 32 input
 * values, `chunk_bytes` = 64 * bits bytes of 64-byte vectors whose byte 4 * lane + t is value
 * 4 * g + t of the chunk for the panel's row `lane`, group g = 0..7:
 *   bits 4: vectors j = 0..3 hold group 2j in the low nibble, group 2j + 1 in the high nibble;
 *   bits 5, 6: then one (two) vectors whose bit g is bit 4 (bit 5) of group g's value;
 *   bits 8: vectors g = 0..7, one byte per value.
 * Scales (and mins) are float32 [panel][input / block][16]; value = scale * (u - offset) + min.
 *
 * Activations are quantized on the fly, as llama.cpp does: per row and per 32 values, s = max|x| /
 * 127 and a = round(x * 127 / max|x|) as int8, so that each block's products are exact integers
 * (u8 x s8 dot products: VNNI's vpdpbusd, AVX2's maddubs, or plain C). Per output, for each block
 * b in order: y = fma(float(dot_b - offset * sum(a_b)), scale_b * s_b, y), then for formats with
 * mins y = fma(min_b, s_b * sum(a_b), y). Every path (AVX-512, AVX2, portable) performs exactly
 * these float operations per output, and no output's arithmetic depends on how many rows the
 * batch has or where a row sits in it: results are bitwise batch-invariant and the same on every
 * path.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#define QM_AVX512 1
#include <immintrin.h>
#elif defined(__AVX2__) && defined(__FMA__)
#define QM_AVX2 1
#include <immintrin.h>
#endif

#define LANES 16

typedef struct {
    const uint8_t *data;
    const float *scales, *mins;     /* mins NULL: symmetric, offset applies */
    int bits, block, offset;
    int64_t n, k, chunks, nblocks, chunk_bytes;
} Weights;

typedef struct {
    int8_t *q;          /* [m][k] */
    float *s;           /* [m][k / 32] */
    float *sa;          /* [m][k / block]: s * sum(a) (formats with mins) */
    int32_t *corr;      /* [m][k / block]: offset * sum(a) (symmetric formats) */
    int64_t k, nblocks;
} Acts;

/* ---- activation quantization (the same in every path) ---- */

static void quantize_row(const float *x, int64_t k, int block, int offset, int asymmetric,
                         int8_t *q, float *s, float *sa, int32_t *corr) {
    for (int64_t c = 0; c < k / 32; c++) {
        const float *xc = x + 32 * c;
        float amax = 0.0f;
        for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(xc[i]));
        const float scale = amax / 127.0f, inv = amax > 0.0f ? 127.0f / amax : 0.0f;
        int32_t sums[2] = {0, 0};
        for (int i = 0; i < 32; i++) {
            const int v = (int)nearbyintf(xc[i] * inv);
            q[32 * c + i] = (int8_t)v;
            sums[i / 16] += v;
        }
        s[c] = scale;
        const int per = 32 / block;   /* weight blocks in this chunk: 1 (block 32) or 2 (block 16) */
        for (int j = 0; j < per; j++) {
            const int32_t sum = per == 1 ? sums[0] + sums[1] : sums[j];
            if (asymmetric) sa[c * per + j] = scale * (float)sum;
            else corr[c * per + j] = offset * sum;
        }
    }
}

/* ---- portable path: the reference arithmetic, one output at a time ---- */

static int unpacked_value(const uint8_t *chunk, int bits, int g, int byte) {
    if (bits == 8) return chunk[64 * g + byte];
    int u = (chunk[64 * (g / 2) + byte] >> (4 * (g % 2))) & 15;
    if (bits >= 5) u |= ((chunk[256 + byte] >> g) & 1) << 4;
    if (bits == 6) u |= ((chunk[320 + byte] >> g) & 1) << 5;
    return u;
}

static void panel_portable(const Weights *w, int64_t p, const Acts *a, int64_t m0, int64_t mt, float *y,
                           int64_t ldy) {
    const int per = 32 / w->block;
    for (int64_t i = 0; i < mt; i++) {
        const int8_t *aq = a->q + (m0 + i) * a->k;
        float out[LANES] = {0};
        for (int64_t c = 0; c < w->chunks; c++) {
            const uint8_t *chunk = w->data + (p * w->chunks + c) * w->chunk_bytes;
            for (int j = 0; j < per; j++) {
                const int64_t b = c * per + j;
                const float s = a->s[(m0 + i) * w->chunks + c];
                for (int lane = 0; lane < LANES; lane++) {
                    int32_t dot = 0;
                    for (int g = j * 8 / per; g < (j + 1) * 8 / per; g++)
                        for (int t = 0; t < 4; t++)
                            dot += unpacked_value(chunk, w->bits, g, 4 * lane + t) * aq[32 * c + 4 * g + t];
                    const float *sc = w->scales + (p * w->nblocks + b) * LANES;
                    if (w->mins == NULL) dot -= a->corr[(m0 + i) * w->nblocks + b];
                    out[lane] = fmaf((float)dot, sc[lane] * s, out[lane]);
                    if (w->mins != NULL)
                        out[lane] = fmaf(w->mins[(p * w->nblocks + b) * LANES + lane],
                                         a->sa[(m0 + i) * w->nblocks + b], out[lane]);
                }
            }
        }
        const int64_t rows = w->n - p * LANES < LANES ? w->n - p * LANES : LANES;
        memcpy(y + (m0 + i) * ldy + p * LANES, out, sizeof(float) * rows);
    }
}

#if QM_AVX512
#define MT 8

static inline __attribute__((always_inline)) void unpack512(const uint8_t *chunk, const int bits, __m512i *v) {
    if (bits == 8) {
        for (int g = 0; g < 8; g++) v[g] = _mm512_loadu_si512(chunk + 64 * g);
        return;
    }
    const __m512i low = _mm512_set1_epi8(15);
    for (int j = 0; j < 4; j++) {
        const __m512i both = _mm512_loadu_si512(chunk + 64 * j);
        v[2 * j] = _mm512_and_si512(both, low);
        v[2 * j + 1] = _mm512_and_si512(_mm512_srli_epi16(both, 4), low);
    }
    for (int plane = 0; plane < bits - 4; plane++) {
        const __m512i high = _mm512_loadu_si512(chunk + 256 + 64 * plane);
        const __m512i add = _mm512_set1_epi8((char)(16 << plane));
        for (int g = 0; g < 8; g++) {
            const __mmask64 set = _mm512_test_epi8_mask(high, _mm512_set1_epi8((char)(1 << g)));
            v[g] = _mm512_mask_add_epi8(v[g], set, v[g], add);
        }
    }
}

static inline __attribute__((always_inline)) __m512i dot512(const __m512i *v, const int8_t *aq, int g0, int g1) {
    __m512i acc = _mm512_setzero_si512();
    for (int g = g0; g < g1; g++) {
        int32_t four;
        memcpy(&four, aq + 4 * g, 4);
        acc = _mm512_dpbusd_epi32(acc, v[g], _mm512_set1_epi32(four));
    }
    return acc;
}

static inline __attribute__((always_inline)) void tile512(const Weights *w, int64_t p, const Acts *a, int64_t m0,
                                                          const int mt, const int bits, const int block,
                                                          const int asym, float *y, int64_t ldy) {
    __m512 out[MT];
    for (int i = 0; i < mt; i++) out[i] = _mm512_setzero_ps();
    const int per = 32 / block;
    const uint8_t *chunk = w->data + p * w->chunks * w->chunk_bytes;
    const float *scales = w->scales + p * w->nblocks * LANES;
    const float *mins = asym ? w->mins + p * w->nblocks * LANES : NULL;
    for (int64_t c = 0; c < w->chunks; c++, chunk += w->chunk_bytes) {
        __m512i v[8];
        unpack512(chunk, bits, v);
        for (int j = 0; j < per; j++) {
            const int64_t b = c * per + j;
            const __m512 d = _mm512_loadu_ps(scales + b * LANES);
            const __m512 mn = asym ? _mm512_loadu_ps(mins + b * LANES) : _mm512_setzero_ps();
            for (int i = 0; i < mt; i++) {
                const int64_t row = m0 + i;
                __m512i dot = dot512(v, a->q + row * a->k + 32 * c, j * 8 / per, (j + 1) * 8 / per);
                if (!asym) dot = _mm512_sub_epi32(dot, _mm512_set1_epi32(a->corr[row * a->nblocks + b]));
                const __m512 ds = _mm512_mul_ps(d, _mm512_set1_ps(a->s[row * w->chunks + c]));
                out[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), ds, out[i]);
                if (asym) out[i] = _mm512_fmadd_ps(mn, _mm512_set1_ps(a->sa[row * a->nblocks + b]), out[i]);
            }
        }
    }
    const int64_t rows = w->n - p * LANES < LANES ? w->n - p * LANES : LANES;
    const __mmask16 keep = (__mmask16)((1u << rows) - 1u);
    for (int i = 0; i < mt; i++) _mm512_mask_storeu_ps(y + (m0 + i) * ldy + p * LANES, keep, out[i]);
}

#define TILES(BITS, BLOCK, ASYM)                                                                    \
    switch (mt) {                                                                                   \
    case 1: tile512(w, p, a, m0, 1, BITS, BLOCK, ASYM, y, ldy); break;                             \
    case 2: tile512(w, p, a, m0, 2, BITS, BLOCK, ASYM, y, ldy); break;                             \
    case 3: tile512(w, p, a, m0, 3, BITS, BLOCK, ASYM, y, ldy); break;                             \
    case 4: tile512(w, p, a, m0, 4, BITS, BLOCK, ASYM, y, ldy); break;                             \
    case 5: tile512(w, p, a, m0, 5, BITS, BLOCK, ASYM, y, ldy); break;                             \
    case 6: tile512(w, p, a, m0, 6, BITS, BLOCK, ASYM, y, ldy); break;                             \
    case 7: tile512(w, p, a, m0, 7, BITS, BLOCK, ASYM, y, ldy); break;                             \
    default: tile512(w, p, a, m0, 8, BITS, BLOCK, ASYM, y, ldy); break;                            \
    }                                                                                               \
    return 1;

/* 1 when a specialised tile ran; 0 for a format combination it has none for. */
static int tile_vector(const Weights *w, int64_t p, const Acts *a, int64_t m0, int mt, float *y, int64_t ldy) {
    const int asym = w->mins != NULL;
    if (w->bits == 4 && w->block == 32 && asym) { TILES(4, 32, 1) }
    if (w->bits == 4 && w->block == 32 && !asym) { TILES(4, 32, 0) }
    if (w->bits == 8 && w->block == 32 && !asym) { TILES(8, 32, 0) }
    if (w->bits == 5 && w->block == 32 && asym) { TILES(5, 32, 1) }
    if (w->bits == 6 && w->block == 16 && !asym) { TILES(6, 16, 0) }
    return 0;
}
#elif QM_AVX2
#define MT 4

/* AVX2: a 64-byte vector is two 32-byte halves (rows 0-7, rows 8-15), each done as an 8-row panel. */
static inline __attribute__((always_inline)) void unpack256(const uint8_t *chunk, const int bits, int half,
                                                            __m256i *v) {
    chunk += 32 * half;
    if (bits == 8) {
        for (int g = 0; g < 8; g++) v[g] = _mm256_loadu_si256((const __m256i *)(chunk + 64 * g));
        return;
    }
    const __m256i low = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    for (int j = 0; j < 4; j++) {
        const __m256i both = _mm256_loadu_si256((const __m256i *)(chunk + 64 * j));
        v[2 * j] = _mm256_and_si256(both, low);
        v[2 * j + 1] = _mm256_and_si256(_mm256_srli_epi16(both, 4), low);
    }
    for (int plane = 0; plane < bits - 4; plane++) {
        const __m256i high = _mm256_loadu_si256((const __m256i *)(chunk + 256 + 64 * plane));
        for (int g = 0; g < 8; g++) {
            const __m256i bit = _mm256_and_si256(_mm256_srli_epi16(high, g), one);   /* bit g of each byte */
            v[g] = _mm256_or_si256(v[g], _mm256_slli_epi16(bit, 4 + plane));
        }
    }
}

/* Sum over groups g0..g1 of u * a per lane. 8-bit values are taken as u - 128 (signed; maddubs
 * would saturate on u up to 255), so that dot already holds the offset's correction. */
static inline __attribute__((always_inline)) __m256i dot256(const __m256i *v, const int8_t *aq, int g0, int g1,
                                                           const int bits) {
    const __m256i ones = _mm256_set1_epi16(1), flip = _mm256_set1_epi8((char)0x80);
    __m256i acc = _mm256_setzero_si256();
    for (int g = g0; g < g1; g++) {
        int32_t four;
        memcpy(&four, aq + 4 * g, 4);
        const __m256i a = _mm256_set1_epi32(four);
        __m256i pairs;
        if (bits == 8) {
            const __m256i q = _mm256_xor_si256(v[g], flip);
            pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(q), _mm256_sign_epi8(a, q));
        } else {
            pairs = _mm256_maddubs_epi16(v[g], a);
        }
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
    }
    return acc;
}

static inline __attribute__((always_inline)) void tile256(const Weights *w, int64_t p, const Acts *a, int64_t m0,
                                                          const int mt, const int bits, const int block,
                                                          const int asym, float *y, int64_t ldy) {
    const int per = 32 / block;
    for (int half = 0; half < 2; half++) {
        __m256 out[MT];
        for (int i = 0; i < mt; i++) out[i] = _mm256_setzero_ps();
        const uint8_t *chunk = w->data + p * w->chunks * w->chunk_bytes;
        const float *scales = w->scales + p * w->nblocks * LANES + 8 * half;
        const float *mins = asym ? w->mins + p * w->nblocks * LANES + 8 * half : NULL;
        for (int64_t c = 0; c < w->chunks; c++, chunk += w->chunk_bytes) {
            __m256i v[8];
            unpack256(chunk, bits, half, v);
            for (int j = 0; j < per; j++) {
                const int64_t b = c * per + j;
                const __m256 d = _mm256_loadu_ps(scales + b * LANES);
                const __m256 mn = asym ? _mm256_loadu_ps(mins + b * LANES) : _mm256_setzero_ps();
                for (int i = 0; i < mt; i++) {
                    const int64_t row = m0 + i;
                    __m256i dot = dot256(v, a->q + row * a->k + 32 * c, j * 8 / per, (j + 1) * 8 / per, bits);
                    if (!asym && bits != 8)
                        dot = _mm256_sub_epi32(dot, _mm256_set1_epi32(a->corr[row * a->nblocks + b]));
                    const __m256 ds = _mm256_mul_ps(d, _mm256_set1_ps(a->s[row * w->chunks + c]));
                    out[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), ds, out[i]);
                    if (asym) out[i] = _mm256_fmadd_ps(mn, _mm256_set1_ps(a->sa[row * a->nblocks + b]), out[i]);
                }
            }
        }
        const int64_t first = p * LANES + 8 * half;
        const int64_t rows = w->n - first < 8 ? w->n - first : 8;
        if (rows <= 0) continue;
        const __m256i keep = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)rows), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        for (int i = 0; i < mt; i++) _mm256_maskstore_ps(y + (m0 + i) * ldy + first, keep, out[i]);
    }
}

#define TILES(BITS, BLOCK, ASYM)                                                                    \
    switch (mt) {                                                                                   \
    case 1: tile256(w, p, a, m0, 1, BITS, BLOCK, ASYM, y, ldy); break;                             \
    case 2: tile256(w, p, a, m0, 2, BITS, BLOCK, ASYM, y, ldy); break;                             \
    case 3: tile256(w, p, a, m0, 3, BITS, BLOCK, ASYM, y, ldy); break;                             \
    default: tile256(w, p, a, m0, 4, BITS, BLOCK, ASYM, y, ldy); break;                            \
    }                                                                                               \
    return 1;

static int tile_vector(const Weights *w, int64_t p, const Acts *a, int64_t m0, int mt, float *y, int64_t ldy) {
    const int asym = w->mins != NULL;
    if (w->bits == 4 && w->block == 32 && asym) { TILES(4, 32, 1) }
    if (w->bits == 4 && w->block == 32 && !asym) { TILES(4, 32, 0) }
    if (w->bits == 8 && w->block == 32 && !asym) { TILES(8, 32, 0) }
    if (w->bits == 5 && w->block == 32 && asym) { TILES(5, 32, 1) }
    if (w->bits == 6 && w->block == 16 && !asym) { TILES(6, 16, 0) }
    return 0;
}
#else
#define MT 8
static int tile_vector(const Weights *w, int64_t p, const Acts *a, int64_t m0, int mt, float *y, int64_t ldy) {
    (void)w; (void)p; (void)a; (void)m0; (void)mt; (void)y; (void)ldy;
    return 0;
}
#endif

static void tile(const Weights *w, int64_t p, const Acts *a, int64_t m0, int mt, float *y, int64_t ldy) {
    if (!tile_vector(w, p, a, m0, mt, y, ldy)) panel_portable(w, p, a, m0, mt, y, ldy);
}

/* x: m rows of k floats, row i at x + i * x_stride; y: [m][n] contiguous. */
void quant_matmul(const uint8_t *data, const float *scales, const float *mins, int bits, int block, int offset,
                  int64_t n, int64_t k, const float *x, int64_t x_stride, int64_t m, float *y, int threads) {
    Weights w = {data, scales, mins, bits, block, offset, n, k, k / 32, k / block, 64 * bits};
    Acts a = {malloc((size_t)(m * k)), malloc(sizeof(float) * (size_t)(m * (k / 32))), NULL, NULL, k, k / block};
    if (mins != NULL) a.sa = malloc(sizeof(float) * (size_t)(m * a.nblocks));
    else a.corr = malloc(sizeof(int32_t) * (size_t)(m * a.nblocks));
    const int64_t panels = (n + LANES - 1) / LANES;
    const int parallel = threads > 1 && panels > 1;
#pragma omp parallel num_threads(threads) if (parallel)
    {
#pragma omp for schedule(static)
        for (int64_t i = 0; i < m; i++)
            quantize_row(x + i * x_stride, k, block, offset, mins != NULL, a.q + i * k, a.s + i * (k / 32),
                         a.sa ? a.sa + i * a.nblocks : NULL, a.corr ? a.corr + i * a.nblocks : NULL);
#pragma omp for schedule(static)
        for (int64_t p = 0; p < panels; p++)
            for (int64_t m0 = 0; m0 < m; m0 += MT)
                tile(&w, p, &a, m0, (int)(m - m0 < MT ? m - m0 : MT), y, n);
    }
    free(a.q); free(a.s); free(a.sa); free(a.corr);
}
