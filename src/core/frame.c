/* frame.c — see frame.h. */
#include "core/frame.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

void carlo_frame_init(carlo_frame *f)
{
    memset(f, 0, sizeof *f);
}

int carlo_frame_add(carlo_frame *f, const char *name, carlo_dtype type, uint64_t rows,
                    uint64_t cols, const void *data)
{
    if (f->n >= CARLO_FRAME_MAX)
        return carlo_seterr("a frame holds at most %d chunks", CARLO_FRAME_MAX);
    if (strlen(name) >= CARLO_CHUNK_NAME)
        return carlo_seterr("chunk name '%s' is longer than %d bytes", name, CARLO_CHUNK_NAME - 1);
    carlo_chunk *c = &f->chunk[f->n++];
    memset(c, 0, sizeof *c);
    strcpy(c->name, name);
    c->type = type;
    c->rows = rows;
    c->cols = cols;
    c->data = data;
    return 0;
}

int carlo_frame_add_owned(carlo_frame *f, const char *name, carlo_dtype type, uint64_t rows,
                          uint64_t cols, void *data)
{
    if (carlo_frame_add(f, name, type, rows, cols, data)) {
        free(data);
        return -1;
    }
    f->chunk[f->n - 1].owned = data;
    return 0;
}

int carlo_frame_add_copy(carlo_frame *f, const char *name, carlo_dtype type, uint64_t rows,
                         uint64_t cols, const void *data)
{
    size_t bytes = carlo_mulsize(carlo_mulsize((size_t)rows, (size_t)cols), carlo_dtype_size(type));
    void *copy = carlo_malloc(bytes, "a frame chunk");
    if (!copy)
        return -1;
    if (bytes)
        memcpy(copy, data, bytes);
    return carlo_frame_add_owned(f, name, type, rows, cols, copy);
}

int carlo_frame_add_u64(carlo_frame *f, const char *name, uint64_t v)
{
    return carlo_frame_add_copy(f, name, CARLO_U64, 1, 1, &v);
}

int carlo_frame_add_f64(carlo_frame *f, const char *name, double v)
{
    return carlo_frame_add_copy(f, name, CARLO_F64, 1, 1, &v);
}

int carlo_frame_add_string(carlo_frame *f, const char *name, const char *s)
{
    return carlo_frame_add_copy(f, name, CARLO_U8, strlen(s), 1, s);
}

const carlo_chunk *carlo_frame_find(const carlo_frame *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->chunk[i].name, name) == 0)
            return &f->chunk[i];
    return NULL;
}

void carlo_frame_free(carlo_frame *f)
{
    for (int i = 0; i < f->n; i++)
        free(f->chunk[i].owned);
    f->n = 0;
}

const void *carlo_frame_expect(const carlo_frame *f, const char *name, carlo_dtype type,
                               uint64_t rows, uint64_t cols)
{
    const carlo_chunk *c = carlo_frame_find(f, name);
    if (!c) {
        carlo_seterr("chunk '%s' is missing", name);
        return NULL;
    }
    if (c->type != type || (rows && c->rows != rows) || (cols && c->cols != cols)) {
        carlo_seterr("chunk '%s' is %s %llu x %llu, expected %s %llu x %llu", name,
                     carlo_dtype_name(c->type), (unsigned long long)c->rows,
                     (unsigned long long)c->cols, carlo_dtype_name(type),
                     (unsigned long long)rows, (unsigned long long)cols);
        return NULL;
    }
    return c->data;
}

int carlo_frame_split(const carlo_frame *f, const char *name)
{
    if (!carlo_frame_find(f, name))
        return 0;
    const uint64_t *v = carlo_frame_expect(f, name, CARLO_U64, 1, 1);
    if (!v)
        return -1;
    if (*v != 1 && *v != 2)
        return carlo_seterr("chunk '%s' is %llu: 1 (split) or 2 (split, edges frozen) expected", name,
                            (unsigned long long)*v);
    return (int)*v;
}
