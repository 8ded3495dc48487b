/* SwiGLU's gate: out[i][c] = silu(gate[i][c]) * up[i][c] for float32 rows, in one pass.
 *
 * gate and up are the two halves of the fused gate/up projection's output row (strided views);
 * silu(x) = x / (1 + exp(-x)). Every element goes through the same instruction sequence wherever
 * it lies (AVX-512: full vectors and one masked vector for a row's tail; elsewhere a scalar loop
 * the compiler must not vectorize), so an element's result never depends on the tensor's size:
 * batch invariant without padding.
 */
#include <math.h>
#include <stdint.h>

#include "fast_exp.h"

#ifdef __AVX512F__
static void swiglu_row(const float *gate, const float *up, float *out, int width) {
    for (int c = 0; c < width; c += 16) {
        const __mmask16 lanes = width - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (width - c)) - 1u);
        const __m512 g = _mm512_maskz_loadu_ps(lanes, gate + c), u = _mm512_maskz_loadu_ps(lanes, up + c);
        const __m512 denom = _mm512_add_ps(_mm512_set1_ps(1.0f), exp16(_mm512_sub_ps(_mm512_setzero_ps(), g)));
        _mm512_mask_storeu_ps(out + c, lanes, _mm512_mul_ps(_mm512_div_ps(g, denom), u));
    }
}
#else
__attribute__((optimize("no-tree-vectorize")))
static void swiglu_row(const float *gate, const float *up, float *out, int width) {
    for (int c = 0; c < width; c++) out[c] = gate[c] / (1.0f + expf(-gate[c])) * up[c];
}
#endif

/* gate row i at gate + i * stride, up row i at up + i * stride; out: contiguous [rows, width]. */
void swiglu_f32(const float *gate, const float *up, int64_t stride, float *out, int64_t rows, int width,
                int threads) {
    const int parallel = threads > 1 && rows * width >= 65536;
#pragma omp parallel for schedule(static) num_threads(threads) if (parallel)
    for (int64_t i = 0; i < rows; i++) swiglu_row(gate + i * stride, up + i * stride, out + i * width, width);
}
