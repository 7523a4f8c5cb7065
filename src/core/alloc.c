/* Allocation wrappers; in a testing build (OG_TESTING) with an atomic fail-Nth switch for
 * out-of-memory testing. */
#include "core/alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <sys/mman.h>

static atomic_uint_fast64_t g_failures; /* NULL results, injected or not */

#ifdef OG_TESTING
static atomic_uint_fast64_t g_count;
static atomic_uint_fast64_t g_fail_at; /* absolute count at which to fail; 0 = off */
static atomic_int g_persistent;
static atomic_uint_fast64_t g_injected;

static _Thread_local unsigned g_hold;

void core_alloc_inject_hold(void)
{
    g_hold++;
}

void core_alloc_inject_release(void)
{
    g_hold--;
}

static int should_fail(void)
{
    if (g_hold) return 0;
    uint64_t n = atomic_fetch_add(&g_count, 1) + 1;
    uint64_t at = atomic_load_explicit(&g_fail_at, memory_order_relaxed);
    if (at == 0) return 0;
    if (n == at || (n > at && atomic_load(&g_persistent))) {
        atomic_fetch_add(&g_injected, 1);
        atomic_fetch_add(&g_failures, 1);
        return 1;
    }
    return 0;
}
#else
/* A release build has no injection: not even the count of allocations is kept. */
#define should_fail() 0

void core_alloc_inject_hold(void) {}

void core_alloc_inject_release(void) {}
#endif

/* p, counting it when it is NULL (a real out-of-memory). */
static void *counted(void *p)
{
    if (!p) atomic_fetch_add(&g_failures, 1);
    return p;
}

/* Large buffers (a load's columns, encoded data files, index entries) ask for transparent
 * huge pages: their first touch then costs one fault per 2 MiB instead of one per 4 KiB.
 * On a virtual machine a fault costs microseconds: a 100k-node / 500k-edge load took 62.5k
 * faults and 1.5 s of CPU before this, 17k faults and 0.85 s with it (same run, loaded
 * machine). The kernel honours the advice only when THP is in "madvise" or "always" mode;
 * otherwise it is a no-op. */
#define HUGE_ALIGN ((uintptr_t)2 << 20)
#define HUGE_MIN ((size_t)4 << 20)

static void *advise_huge(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
    if (p && n >= HUGE_MIN) {
        uintptr_t lo = ((uintptr_t)p + HUGE_ALIGN - 1) & ~(HUGE_ALIGN - 1);
        uintptr_t hi = ((uintptr_t)p + n) & ~(HUGE_ALIGN - 1);
        if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE); /* advice only */
    }
#else
    (void)n;
#endif
    return p;
}

void *core_malloc(size_t n)
{
    if (should_fail()) return NULL;
    return advise_huge(counted(malloc(n ? n : 1)), n);
}

void *core_calloc(size_t count, size_t size)
{
    if (should_fail()) return NULL;
    size_t n;
    if (core_size_mul(&n, count, size)) n = 0;
    return advise_huge(counted(calloc(count ? count : 1, size ? size : 1)), n);
}

void *core_realloc(void *p, size_t n)
{
    if (should_fail()) return NULL;
#if defined(__GLIBC__) && defined(MADV_HUGEPAGE)
    if (p && n >= HUGE_MIN) {
        /* A large block that grows moves by hand into advised memory: realloc would fault
         * the destination in 4 KiB pages while it copies, before any advice could apply. The
         * price: a copy where glibc might have remapped, and old + new held for the copy. */
        size_t old = malloc_usable_size(p);
        if (old >= n) return counted(realloc(p, n)); /* shrinking: the allocator may give back */
        void *q = advise_huge(counted(malloc(n)), n);
        if (!q) return NULL;
        memcpy(q, p, old);
        free(p);
        return q;
    }
#endif
    return advise_huge(counted(realloc(p, n ? n : 1)), n);
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

uint64_t core_alloc_failures(void)
{
    return atomic_load(&g_failures);
}

#ifdef OG_TESTING
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
#endif /* OG_TESTING */
