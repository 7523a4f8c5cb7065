/* Chunked bump allocator. Oversized requests get a chunk of their own. */
#include "core/arena.h"
#include "core/alloc.h"
#include "core/error.h"

#include <stdarg.h>
#include <stdalign.h>
#include <stdio.h>
#include <string.h>

struct core_arena_chunk {
    core_arena_chunk *next;
    size_t cap;
    size_t used;
    alignas(max_align_t) unsigned char data[];
};

void core_arena_init(core_arena *a, size_t chunk_size)
{
    a->head = NULL;
    a->chunk_size = chunk_size ? chunk_size : 16384;
    a->total = 0;
}

void *core_arena_alloc(core_arena *a, size_t n)
{
    const size_t align = alignof(max_align_t);
    size_t need;
    if (core_size_add(&need, n ? n : 1, align - 1) != 0) {
        core_err(OG_E_RESOURCE_LIMIT, "arena allocation of %zu bytes overflows", n);
        return NULL;
    }
    need &= ~(align - 1);
    core_arena_chunk *c = a->head;
    if (!c || c->cap - c->used < need) {
        size_t cap = need > a->chunk_size ? need : a->chunk_size;
        size_t bytes;
        if (core_size_add(&bytes, sizeof *c, cap) != 0) {
            core_err(OG_E_RESOURCE_LIMIT, "arena allocation of %zu bytes overflows", n);
            return NULL;
        }
        c = core_malloc(bytes);
        if (!c) {
            core_err_nomem();
            return NULL;
        }
        c->cap = cap;
        c->used = 0;
        /* Keep the partly used head in front when the new chunk is a one-off big one. */
        if (a->head && cap > a->chunk_size) {
            c->next = a->head->next;
            a->head->next = c;
        } else {
            c->next = a->head;
            a->head = c;
        }
    }
    void *p = c->data + c->used;
    c->used += need;
    a->total += n;
    return p;
}

void *core_arena_calloc(core_arena *a, size_t count, size_t size)
{
    size_t n;
    if (core_size_mul(&n, count, size) != 0) {
        core_err(OG_E_RESOURCE_LIMIT, "arena allocation of %zu x %zu bytes overflows", count, size);
        return NULL;
    }
    void *p = core_arena_alloc(a, n);
    if (p) memset(p, 0, n);
    return p;
}

char *core_arena_strndup(core_arena *a, const char *s, size_t n)
{
    char *d = core_arena_alloc(a, n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *core_arena_strdup(core_arena *a, const char *s)
{
    return core_arena_strndup(a, s, strlen(s));
}

char *core_arena_sprintf(core_arena *a, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *d = n < 0 ? NULL : core_arena_alloc(a, (size_t)n + 1);
    if (d) vsnprintf(d, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return d;
}

void core_arena_reset(core_arena *a)
{
    core_arena_chunk *c = a->head;
    while (c) {
        core_arena_chunk *next = c->next;
        core_free(c);
        c = next;
    }
    a->head = NULL;
    a->total = 0;
}

void core_arena_free(core_arena *a)
{
    core_arena_reset(a);
}
