/* Allocation indirection: every library allocation goes through these, so tests can make the
 * Nth allocation fail (once, or persistently) and prove each failure ends in a clean error. */
#ifndef OG_CORE_ALLOC_H
#define OG_CORE_ALLOC_H

#include <stddef.h>
#include <stdint.h>

void *core_malloc(size_t n);
void *core_calloc(size_t count, size_t size);
void *core_realloc(void *p, size_t n);
char *core_strdup(const char *s);
char *core_strndup(const char *s, size_t n);
void core_free(void *p);

/* Overflow-checked size arithmetic: return 0 on success, -1 on overflow. */
static inline int core_size_mul(size_t *out, size_t a, size_t b)
{
    return __builtin_mul_overflow(a, b, out) ? -1 : 0;
}
static inline int core_size_add(size_t *out, size_t a, size_t b)
{
    return __builtin_add_overflow(a, b, out) ? -1 : 0;
}

/* Allocations that returned NULL since the process started (all threads; injected ones
 * included): a caller whose library reports both bad input and out of memory as NULL
 * (protobuf-c) tells them apart by this count moving. */
uint64_t core_alloc_failures(void);

/* While held (a counter per thread: nestable), this thread's allocations are neither counted
 * nor failed on purpose (a release build injects nothing anyway). For code that must not see
 * an injected failure: jansson's parser (core_json_loadb). */
void core_alloc_inject_hold(void);
void core_alloc_inject_release(void);

/* Test hooks, defined only in a testing build (OG_TESTING; a release build counts nothing and
 * never fails on purpose). After core_alloc_fail_at(n), the n-th allocation from now (1-based)
 * fails; with persistent set, every later one fails too. n = 0 disarms. */
void core_alloc_fail_at(uint64_t n, int persistent);
/* Allocations attempted since the process started (all threads). */
uint64_t core_alloc_count(void);
/* Failures injected since the last core_alloc_fail_at(). */
uint64_t core_alloc_injected(void);

#endif
