/* The engine's hash map: open addressing with linear probing over 64-bit key hashes, a
 * power-of-two number of slots, at most half of them used, no removal.
 *
 * core_hmap is the map itself, an index: a slot holds the upper 32 bits of a key's hash and
 * an entry number, and the entries (keys and values) stay wherever the caller keeps them: the
 * rows of an id column, the fragments of a manifest. It never sees a key, so the caller
 * hashes (core_hmap_hash for bytes) and decides which candidate of a matching hash is its key
 * (core_hmap_next), at 8 bytes a slot; equal keys may be added and come back in the order
 * they were added, across growth too.
 *
 * core_bmap is core_hmap with the entries kept in the map: borrowed byte-string keys (the
 * bytes must outlive the map and not change) with a value each, for keys that live in no one
 * array. Its entries are numbered in insertion order, so per-key side arrays can follow them.
 *
 * A map does not lock: several threads may look up in one they no longer change. */
#ifndef OG_CORE_HMAP_H
#define OG_CORE_HMAP_H

#include "core/hash.h"

#include <stddef.h>
#include <stdint.h>

/* Entries a map can hold: entry numbers are 32-bit, as are the hash bits that place a slot. */
#define CORE_HMAP_MAX_ENTRIES ((size_t)1 << 31)

typedef struct core_hmap {
    uint64_t *slot; /* 0: empty; else hash >> 32 << 32 | (entry + 1) */
    size_t mask;    /* slots - 1 (0 before the first add) */
    size_t n;       /* entries */
} core_hmap;

#define CORE_HMAP_INIT                                                                             \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* The hash the maps of this engine use for byte strings (XXH3, seed 0). */
static inline uint64_t core_hmap_hash(const void *key, size_t len)
{
    return core_hash64(key, len, 0);
}

/* Back to empty, releasing the slots. Accepts a zeroed map. */
void core_hmap_free(core_hmap *m);
/* Make room for n entries in all, so the next adds do not grow the map. OG_E_NOMEM, or
 * OG_E_RESOURCE_LIMIT past CORE_HMAP_MAX_ENTRIES. */
int core_hmap_reserve(core_hmap *m, size_t n);

/* A lookup of hash h: the entries stored under it, in the order they were added. */
typedef struct core_hmap_probe {
    size_t pos;   /* the slot looked at next */
    uint64_t tag; /* h's upper 32 bits, in place */
} core_hmap_probe;

static inline core_hmap_probe core_hmap_probe_of(const core_hmap *m, uint64_t h)
{
    core_hmap_probe p = {(size_t)(h >> 32) & m->mask, h & ~(uint64_t)UINT32_MAX};
    return p;
}

/* The next entry stored under the probe's hash: 1 and *entry, or 0 when there is none left;
 * then the probe marks where core_hmap_add_at adds one. */
static inline int core_hmap_next(const core_hmap *m, core_hmap_probe *p, uint32_t *entry)
{
    if (!m->slot) return 0;
    for (;;) {
        uint64_t s = m->slot[p->pos];
        if (!s) return 0;
        p->pos = (p->pos + 1) & m->mask;
        if ((s & ~(uint64_t)UINT32_MAX) == p->tag) {
            *entry = (uint32_t)s - 1;
            return 1;
        }
    }
}

/* Add entry under hash h, at the end of probe p of h whose core_hmap_next returned 0 (one
 * probe for a lookup and its insert). The map grows when it must. entry < UINT32_MAX. */
int core_hmap_add_at(core_hmap *m, core_hmap_probe *p, uint64_t h, uint32_t entry);
/* Add entry under hash h without looking (the caller knows the key is new, or wants it
 * twice). */
int core_hmap_add(core_hmap *m, uint64_t h, uint32_t entry);

/* Start fetching the slot hash h lands on, so a batch of lookups waits for memory once
 * rather than once per key. */
static inline void core_hmap_prefetch(const core_hmap *m, uint64_t h)
{
    if (m->slot) __builtin_prefetch(&m->slot[(size_t)(h >> 32) & m->mask]);
}

/* ---- byte-string keys -------------------------------------------------------------------- */

typedef struct core_bmap_entry {
    const uint8_t *key; /* borrowed */
    size_t len;
    int64_t val; /* the caller's; 0 when added */
} core_bmap_entry;

typedef struct core_bmap {
    core_hmap ix;
    core_bmap_entry *e; /* e[0..ix.n), in insertion order */
    size_t cap;
} core_bmap;

#define CORE_BMAP_INIT                                                                             \
    {                                                                                              \
        CORE_HMAP_INIT, NULL, 0                                                                    \
    }

void core_bmap_free(core_bmap *m);
int core_bmap_reserve(core_bmap *m, size_t n);
static inline size_t core_bmap_count(const core_bmap *m)
{
    return m->ix.n;
}

/* The entry of key (len bytes, hash h = core_hmap_hash(key, len)), or NULL. */
core_bmap_entry *core_bmap_find_h(const core_bmap *m, const void *key, size_t len, uint64_t h);
/* Add key if absent: *out is its entry (new or not; valid until the next add) and *fresh says
 * whether it was added. */
int core_bmap_put_h(core_bmap *m, const void *key, size_t len, uint64_t h, core_bmap_entry **out,
                    int *fresh);

static inline core_bmap_entry *core_bmap_find(const core_bmap *m, const void *key, size_t len)
{
    return m->ix.n ? core_bmap_find_h(m, key, len, core_hmap_hash(key, len)) : NULL;
}
static inline int core_bmap_put(core_bmap *m, const void *key, size_t len, core_bmap_entry **out,
                                int *fresh)
{
    return core_bmap_put_h(m, key, len, core_hmap_hash(key, len), out, fresh);
}

/* The two stages of a batched lookup's prefetch: the slot of h, then (once it has arrived)
 * the entry it holds. */
static inline void core_bmap_prefetch(const core_bmap *m, uint64_t h)
{
    core_hmap_prefetch(&m->ix, h);
}
static inline void core_bmap_prefetch_entry(const core_bmap *m, uint64_t h)
{
    if (!m->ix.slot) return;
    uint64_t s = m->ix.slot[(size_t)(h >> 32) & m->ix.mask];
    if (s) __builtin_prefetch(&m->e[(uint32_t)s - 1]);
}

#endif
