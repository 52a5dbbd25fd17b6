/* The decode-time products over the GGUF file's blocks with AVX2 + FMA intrinsics (resispec.engine.model.block_kernels).
 *
 * Built with -O2 -mavx2 -mfma only (no -march, no -ffast-math): the same machine code on every x86-64 CPU with
 * those extensions, and the floating-point operations in the order written here.
 *
 * q4_1_mm: y[r, o] = bf16( sum_b ( s_ob * sum_{j<32} x[r, 32 b + j] L_o,32b+j  +  (z_ob - 8 s_ob) * sum_j x[r, 32 b + j] ) )
 *   with x[r, 32 b + j] ~ xq_j 2^(E - 13) block by block (quantize_rows) and sum_j xq_j L_j exact in int32 (block_dot);
 *   x: bfloat16 [rows, in]; levels: uint8 [out, in / 2], block b of row o at byte 16 b, byte j holding L_32b+j in its low
 *   nibble and L_32b+16+j in its high one (the GGUF Q4_1 order); s, z: bfloat16 [out, in / 32] (torch's int4 scales and
 *   zeros, (L - 8) s + z = s L + (z - 8 s)); y: bfloat16 [rows, out].
 * q8_0_mm: y[r, o] = sum_b d_ob * sum_{j<32} x[r, 32 b + j] q_o,32b+j   (float32 out)
 *   x: bfloat16 [rows, in]; q: int8 [out, in]; d: bfloat16 [out, in / 32]; y: float32 [rows, out].
 *
 * Each row of x is computed with the same operations in the same order whatever the other rows are (rows are taken
 * in groups of up to four that share one decoding of the weights), so a row's result does not depend on the row count.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define GROUP 32
#define ROWS_TOGETHER 4
#ifndef PREFETCH
#define PREFETCH 1024
#endif

static inline float bf16_to_float(uint16_t bits) {
    uint32_t wide = (uint32_t)bits << 16;
    float value;
    memcpy(&value, &wide, sizeof value);
    return value;
}

static inline uint16_t float_to_bf16(float value) { /* round to nearest even, NaN kept quiet */
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((bits >> 16) | 0x40u);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return (uint16_t)(bits >> 16);
}

static inline __m256 bf16x8_to_float(const uint16_t *bits) {
    __m128i half = _mm_loadu_si128((const __m128i *)bits);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(half), 16));
}

static inline float sum8(__m256 v) {
    __m128 low = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    __m128 odd = _mm_movehdup_ps(low);
    low = _mm_add_ps(low, odd);
    return _mm_cvtss_f32(_mm_add_ss(low, _mm_movehl_ps(odd, low)));
}

/* The rows of x (bfloat16 [rows, in]) block by block as int16 and a power-of-two scale, x_j ~ xq_j * scale, with
 * scale = 2^(E - 13), E = floor(log2 max_j |x_j|): |xq_j| <= 2^14, exact for every x_j of exponent E - 6 or more (bfloat16
 * has 8 significant bits), else rounded to even, off by at most 2^-15 max_j |x_j|; a block below 2^-100 is zero.
 * xq holds each block's even elements, then its odd ones (the lanes the weights unpack into); sums[b] is the block's
 * float32 sum of the x_j themselves (by 8 lanes of 4, then the lanes). */
static void quantize_rows(const uint16_t *x, Py_ssize_t rows, Py_ssize_t in, int16_t *xq, float *scales, float *sums) {
    Py_ssize_t blocks = in / GROUP;
    const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    for (Py_ssize_t r = 0; r < rows; r++) {
        for (Py_ssize_t b = 0; b < blocks; b++) {
            const uint16_t *xb = x + r * in + b * GROUP;
            int16_t *qb = xq + r * in + b * GROUP;
            __m256 v[4], sum = _mm256_setzero_ps(), largest = _mm256_setzero_ps();
            for (int i = 0; i < 4; i++) {
                v[i] = bf16x8_to_float(xb + 8 * i);
                sum = _mm256_add_ps(sum, v[i]);
                largest = _mm256_max_ps(largest, _mm256_and_ps(v[i], magnitude));
            }
            __m128 half = _mm_max_ps(_mm256_castps256_ps128(largest), _mm256_extractf128_ps(largest, 1));
            half = _mm_max_ps(half, _mm_movehl_ps(half, half));
            float top = _mm_cvtss_f32(_mm_max_ss(half, _mm_movehdup_ps(half)));
            uint32_t bits;
            memcpy(&bits, &top, sizeof bits);
            int exponent = (int)(bits >> 23) - 127;
            float up = 0.0f, scale = 0.0f;
            if (top >= 0x1p-100f) { /* up = 2^(13 - E), scale = 2^(E - 13), both normal floats */
                uint32_t up_bits = (uint32_t)(13 - exponent + 127) << 23, scale_bits = (uint32_t)(exponent - 13 + 127) << 23;
                memcpy(&up, &up_bits, sizeof up);
                memcpy(&scale, &scale_bits, sizeof scale);
            }
            int32_t rounded[GROUP];  /* to nearest, ties to even (the default rounding mode) */
            for (int i = 0; i < 4; i++)
                _mm256_storeu_si256((__m256i *)(rounded + 8 * i),
                                    _mm256_cvtps_epi32(_mm256_mul_ps(v[i], _mm256_set1_ps(up))));
            for (int j = 0; j < GROUP; j++) qb[(j & 1) * (GROUP / 2) + j / 2] = (int16_t)rounded[j];
            scales[r * blocks + b] = scale;
            sums[r * blocks + b] = sum8(sum);
        }
    }
}

/* One Q4_1 block's 32 levels as two int16 vectors, no shuffles: its 16 bytes as 8 words w_i (nibbles L_2i, L_2i+16,
 * L_2i+1, L_2i+17 from the low bits), in both halves of a register; low[i] = L_2i, low[8+i] = 16 L_2i+16, high[i] =
 * L_2i+1, high[8+i] = 16 L_2i+17. Against xq's even / odd elements the upper halves count 16 times (undone at the end). */
static inline void q4_levels(const uint8_t *block, __m256i *low, __m256i *high) {
    const __m256i mask = _mm256_setr_epi16(15, 15, 15, 15, 15, 15, 15, 15, 240, 240, 240, 240, 240, 240, 240, 240);
    __m256i words = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)block));
    *low = _mm256_and_si256(words, mask);
    *high = _mm256_and_si256(_mm256_srli_epi16(words, 8), mask);
}

/* One Q8_0 block's 32 levels as two int16 vectors: even elements (sign-extended low bytes), then odd ones. */
static inline void q8_levels(const int8_t *block, __m256i *even, __m256i *odd) {
    __m256i words = _mm256_loadu_si256((const __m256i *)block);
    *even = _mm256_srai_epi16(_mm256_slli_epi16(words, 8), 8);
    *odd = _mm256_srai_epi16(words, 8);
}

/* sum_j xq_j L_j of one block by lanes (int32, exact: |16 L xq| <= 240 * 2^14, four a lane), as float32 (exact: < 2^24).
 * The Q8_0 lanes hold even elements 0..14 | 16..30 against xq's evens, so the pairing matches for both layouts. */
static inline __m256 block_dot(const int16_t *xq, __m256i low, __m256i high) {
    __m256i products = _mm256_add_epi32(_mm256_madd_epi16(low, _mm256_loadu_si256((const __m256i *)xq)),
                                        _mm256_madd_epi16(high, _mm256_loadu_si256((const __m256i *)(xq + 16))));
    return _mm256_cvtepi32_ps(products);
}

/* scale[b] = w[b] * x_scale[b] for a row's blocks, w bfloat16 (exact: x_scale is a power of two). */
static inline void block_scales(const uint16_t *w, const float *x_scale, Py_ssize_t blocks, float *scale) {
    Py_ssize_t b = 0;
    for (; b + 8 <= blocks; b += 8)
        _mm256_storeu_ps(scale + b, _mm256_mul_ps(bf16x8_to_float(w + b), _mm256_loadu_ps(x_scale + b)));
    for (; b < blocks; b++) scale[b] = bf16_to_float(w[b]) * x_scale[b];
}

/* sum_b (z_b - 8 s_b) sums_b over a row's blocks: eight blocks at a time, then the rest one by one. */
static inline float offset_term(const uint16_t *s, const uint16_t *z, const float *sums, Py_ssize_t blocks) {
    __m256 acc = _mm256_setzero_ps();
    const __m256 eight = _mm256_set1_ps(8.0f);
    Py_ssize_t b = 0;
    for (; b + 8 <= blocks; b += 8) {
        __m256 offset = _mm256_fnmadd_ps(eight, bf16x8_to_float(s + b), bf16x8_to_float(z + b));
        acc = _mm256_fmadd_ps(offset, _mm256_loadu_ps(sums + b), acc);
    }
    float total = sum8(acc);
    for (; b < blocks; b++) total += (bf16_to_float(z[b]) - 8.0f * bf16_to_float(s[b])) * sums[b];
    return total;
}

/* The lanes' sum, lanes 4..7 divided by 16 first (the Q4_1 upper halves, `q4_levels`; 1 for Q8_0). */
static inline float lane_sum(__m256 acc, float upper) {
    return sum8(_mm256_mul_ps(acc, _mm256_setr_ps(1.0f, 1.0f, 1.0f, 1.0f, upper, upper, upper, upper)));
}

/* y[k, o] for the `count` rows k of xq (<= ROWS_TOGETHER), every output o: Q4_1 (levels, s, z non-NULL: bfloat16 out)
 * or Q8_0 (q, s as d: float32 out). */
static inline __attribute__((always_inline)) void rows_together(
        const int16_t *xq, const float *x_scales, const float *sums, Py_ssize_t in, Py_ssize_t out,
        const uint8_t *levels, const int8_t *q, const uint16_t *s, const uint16_t *z, uint16_t *y_bf16, float *y_f32,
        float *scale, const int q4, const int count) {
    Py_ssize_t blocks = in / GROUP;
    for (Py_ssize_t o = 0; o < out; o++) {
        const uint16_t *row_s = s + o * blocks;
        __m256 acc[ROWS_TOGETHER];
        for (int k = 0; k < count; k++) {
            acc[k] = _mm256_setzero_ps();
            block_scales(row_s, x_scales + k * blocks, blocks, scale + k * blocks);
        }
        for (Py_ssize_t b = 0; b < blocks; b++) {
            __m256i low, high;
            if (PREFETCH && (b & 1) == 0)
                _mm_prefetch((const char *)(q4 ? levels + o * (in / 2) + b * (GROUP / 2) : (const uint8_t *)q + o * in + b * GROUP) + PREFETCH, _MM_HINT_T0);
            if (q4) q4_levels(levels + o * (in / 2) + b * (GROUP / 2), &low, &high);
            else q8_levels(q + o * in + b * GROUP, &low, &high);
            for (int k = 0; k < count; k++)
                acc[k] = _mm256_fmadd_ps(_mm256_broadcast_ss(scale + k * blocks + b),
                                         block_dot(xq + k * in + b * GROUP, low, high), acc[k]);
        }
        for (int k = 0; k < count; k++) {
            if (q4)
                y_bf16[k * out + o] = float_to_bf16(lane_sum(acc[k], 1.0f / 16.0f)
                                                    + offset_term(row_s, z + o * blocks, sums + k * blocks, blocks));
            else
                y_f32[k * out + o] = lane_sum(acc[k], 1.0f);
        }
    }
}

/* Both products over all rows, four at a time (Q4_1 where levels is non-NULL, else Q8_0). */
static void blocks_mm(const uint16_t *x, Py_ssize_t rows, Py_ssize_t in, Py_ssize_t out, const uint8_t *levels,
                      const int8_t *q, const uint16_t *s, const uint16_t *z, uint16_t *y_bf16, float *y_f32,
                      int16_t *xq, float *floats) {
    Py_ssize_t blocks = in / GROUP;
    float *x_scales = floats, *sums = floats + rows * blocks, *scale = floats + 2 * rows * blocks;
    quantize_rows(x, rows, in, xq, x_scales, sums);
    for (Py_ssize_t r = 0; r < rows; r += ROWS_TOGETHER) {
        const int16_t *xr = xq + r * in;
        const float *xs = x_scales + r * blocks, *sr = sums + r * blocks;
        uint16_t *yb = y_bf16 ? y_bf16 + r * out : NULL;
        float *yf = y_f32 ? y_f32 + r * out : NULL;
        Py_ssize_t count = rows - r >= ROWS_TOGETHER ? ROWS_TOGETHER : rows - r;
#define ROWS(q4, count) rows_together(xr, xs, sr, in, out, levels, q, s, z, yb, yf, scale, q4, count)
        if (levels) {
            switch (count) { case 4: ROWS(1, 4); break; case 3: ROWS(1, 3); break; case 2: ROWS(1, 2); break;
                             default: ROWS(1, 1); }
        } else {
            switch (count) { case 4: ROWS(0, 4); break; case 3: ROWS(0, 3); break; case 2: ROWS(0, 2); break;
                             default: ROWS(0, 1); }
        }
#undef ROWS
    }
}

/* Python: q4_1_mm(x, rows, in, out, levels, s, z, y) and q8_0_mm(x, rows, in, out, q, d, y), pointers as ints
 * (tensor.data_ptr()); the caller checks shapes, dtypes and contiguity (block_kernels.py). */
static int read_arguments(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t expected, void **pointers,
                          Py_ssize_t *sizes) {
    if (nargs != expected) {
        PyErr_Format(PyExc_TypeError, "expected %zd arguments, got %zd", expected, nargs);
        return -1;
    }
    pointers[0] = PyLong_AsVoidPtr(args[0]);
    for (int i = 0; i < 3; i++) sizes[i] = PyLong_AsSsize_t(args[1 + i]);
    for (Py_ssize_t i = 4; i < expected; i++) pointers[i - 3] = PyLong_AsVoidPtr(args[i]);
    if (PyErr_Occurred()) return -1;
    if (sizes[0] < 0 || sizes[1] <= 0 || sizes[2] <= 0 || sizes[1] % GROUP) {
        PyErr_SetString(PyExc_ValueError, "rows >= 0, in > 0 a multiple of 32 and out > 0 expected");
        return -1;
    }
    return 0;
}

static int scratch(Py_ssize_t rows, Py_ssize_t in, int16_t **xq, float **floats) {
    Py_ssize_t blocks = in / GROUP;
    *xq = malloc(sizeof(int16_t) * (size_t)(rows * in) + 32);
    *floats = malloc(sizeof(float) * (size_t)(2 * rows * blocks + ROWS_TOGETHER * blocks) + 32);
    if (*xq != NULL && *floats != NULL) return 0;
    free(*xq);
    free(*floats);
    return -1;
}

static PyObject *py_q4_1_mm(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    void *p[5];
    Py_ssize_t n[3];
    int16_t *xq;
    float *floats;
    if (read_arguments(args, nargs, 8, p, n) < 0) return NULL;
    if (scratch(n[0], n[1], &xq, &floats) < 0) return PyErr_NoMemory();
    Py_BEGIN_ALLOW_THREADS
    blocks_mm(p[0], n[0], n[1], n[2], p[1], NULL, p[2], p[3], p[4], NULL, xq, floats);
    Py_END_ALLOW_THREADS
    free(xq);
    free(floats);
    Py_RETURN_NONE;
}

static PyObject *py_q8_0_mm(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    void *p[4];
    Py_ssize_t n[3];
    int16_t *xq;
    float *floats;
    if (read_arguments(args, nargs, 7, p, n) < 0) return NULL;
    if (scratch(n[0], n[1], &xq, &floats) < 0) return PyErr_NoMemory();
    Py_BEGIN_ALLOW_THREADS
    blocks_mm(p[0], n[0], n[1], n[2], NULL, p[1], p[2], NULL, NULL, p[3], xq, floats);
    Py_END_ALLOW_THREADS
    free(xq);
    free(floats);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"q4_1_mm", (PyCFunction)(void (*)(void))py_q4_1_mm, METH_FASTCALL, "Q4_1 blocks x bfloat16 rows -> bfloat16."},
    {"q8_0_mm", (PyCFunction)(void (*)(void))py_q8_0_mm, METH_FASTCALL, "Q8_0 blocks x bfloat16 rows -> float32."},
    {NULL, NULL, 0, NULL},
};

#define CONCAT(a, b) a##b
#define INIT_NAME(name) CONCAT(PyInit_, name)

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, MODULE_NAME_STRING, NULL, -1, methods};

PyMODINIT_FUNC INIT_NAME(MODULE_NAME)(void) { return PyModule_Create(&module); }
