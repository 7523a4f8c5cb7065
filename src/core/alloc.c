/* Allocation wrappers with an atomic fail-Nth switch for out-of-memory testing. */
#include "core/alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_uint_fast64_t g_count;
static atomic_uint_fast64_t g_fail_at;   /* absolute count at which to fail; 0 = off */
static atomic_int g_persistent;
static atomic_uint_fast64_t g_injected;

static int should_fail(void)
{
    uint64_t n = atomic_fetch_add(&g_count, 1) + 1;
    uint64_t at = atomic_load_explicit(&g_fail_at, memory_order_relaxed);
    if (at == 0) return 0;
    if (n == at || (n > at && atomic_load(&g_persistent))) {
        atomic_fetch_add(&g_injected, 1);
        return 1;
    }
    return 0;
}

void *core_malloc(size_t n)
{
    if (should_fail()) return NULL;
    return malloc(n ? n : 1);
}

void *core_calloc(size_t count, size_t size)
{
    if (should_fail()) return NULL;
    return calloc(count ? count : 1, size ? size : 1);
}

void *core_realloc(void *p, size_t n)
{
    if (should_fail()) return NULL;
    return realloc(p, n ? n : 1);
}

char *core_strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *d = core_malloc(len + 1);
    if (!d) return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

char *core_strdup(const char *s)
{
    return core_strndup(s, strlen(s));
}

void core_free(void *p)
{
    free(p);
}

void core_alloc_fail_at(uint64_t n, int persistent)
{
    atomic_store(&g_persistent, persistent);
    atomic_store(&g_injected, 0);
    atomic_store(&g_fail_at, n ? atomic_load(&g_count) + n : 0);
}

uint64_t core_alloc_count(void)
{
    return atomic_load(&g_count);
}

uint64_t core_alloc_injected(void)
{
    return atomic_load(&g_injected);
}
