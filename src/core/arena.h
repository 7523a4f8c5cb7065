/* Bump allocator for per-operation scratch (parse, plan, batch): many small allocations,
 * freed together. Not thread-safe; one arena per operation. */
#ifndef OG_CORE_ARENA_H
#define OG_CORE_ARENA_H

#include <stddef.h>

typedef struct core_arena_chunk core_arena_chunk;
typedef struct core_arena {
    core_arena_chunk *head;
    size_t chunk_size; /* default size of a new chunk */
    size_t total;      /* bytes handed out, for accounting */
} core_arena;

void core_arena_init(core_arena *a, size_t chunk_size);
/* Aligned to max_align_t. NULL (with an OG_E_NOMEM error set) on failure. */
void *core_arena_alloc(core_arena *a, size_t n);
void *core_arena_calloc(core_arena *a, size_t count, size_t size);
char *core_arena_strndup(core_arena *a, const char *s, size_t n);
char *core_arena_strdup(core_arena *a, const char *s);
char *core_arena_sprintf(core_arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Free every chunk but keep the arena usable. */
void core_arena_reset(core_arena *a);
void core_arena_free(core_arena *a);

#endif
