/* A growable int32 array (the C kernels' scratch lists). */
#ifndef DEEPINFER_INT_VEC_H
#define DEEPINFER_INT_VEC_H

#include <stdint.h>
#include <stdlib.h>

typedef struct {
    int32_t *data;
    int64_t len, cap;
} vec;

/* Append x; 0, or -1 out of memory (v unchanged). */
static inline int push(vec *v, int32_t x) {
    if (v->len == v->cap) {
        int64_t cap = v->cap ? 2 * v->cap : 64;
        int32_t *data = realloc(v->data, (size_t)cap * sizeof(int32_t));
        if (!data) return -1;
        v->data = data;
        v->cap = cap;
    }
    v->data[v->len++] = x;
    return 0;
}

#endif
