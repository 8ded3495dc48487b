/* RMSNorm of float32 rows: out[i] = x[i] / sqrt(mean(x[i]^2) + eps) * weight.
 *
 * One pass per row in a fixed order (a row's result never depends on the other rows), rows split
 * between threads only when there are enough of them to pay for waking the threads.
 */
#include <math.h>
#include <stdint.h>

#define LANES 16

/* Sum of squares in a fixed order: LANES partial sums over the row, then the tail, then the
 * partial sums left to right. (A compiler-vectorized reduction may peel a few leading elements to
 * align its loads, and the peel depends on where the row lies in memory: the same row would then
 * round differently at another position in the batch.) */
static float sum_of_squares(const float *x, int dim) {
    float part[LANES] = {0};
    int d = 0;
    for (; d + LANES <= dim; d += LANES)
        for (int j = 0; j < LANES; j++) part[j] += x[d + j] * x[d + j];
    for (int j = 0; d < dim; d++, j++) part[j] += x[d] * x[d];
    float sum = 0.0f;
    for (int j = 0; j < LANES; j++) sum += part[j];
    return sum;
}

static void norm_row(const float *x, const float *weight, float *out, int dim, float eps) {
    const float sum = sum_of_squares(x, dim);
    const float inv = 1.0f / sqrtf(sum / (float)dim + eps);
#pragma omp simd
    for (int d = 0; d < dim; d++) out[d] = x[d] * inv * weight[d];
}

/* x: rows of dim floats, row i at x + i * x_stride; out: contiguous rows. */
void rms_norm_f32(const float *x, int64_t x_stride, const float *weight, float *out, int64_t rows, int dim,
                  float eps, int threads) {
    const int parallel = threads > 1 && rows * dim >= 65536;
#pragma omp parallel for schedule(static) num_threads(threads) if (parallel)
    for (int64_t i = 0; i < rows; i++) norm_row(x + i * x_stride, weight, out + i * dim, dim, eps);
}
