/* The hash map (see hmap.h): growth of the slot array, adds, and the byte-string layer. */
#include "core/hmap.h"

#include "core/alloc.h"
#include "core/error.h"

#include <string.h>

#define MIN_SLOTS 16

void core_hmap_free(core_hmap *m)
{
    core_free(m->slot);
    memset(m, 0, sizeof *m);
}

/* Move every slot into a new array of `slots` slots. The walk starts just after an empty
 * slot, so no run of occupied slots is split at the wrap: entries of one hash keep their
 * order. */
static int rehash(core_hmap *m, size_t slots)
{
    uint64_t *ns = core_calloc(slots, sizeof *ns);
    if (!ns) return core_err_nomem();
    size_t nmask = slots - 1;
    if (m->slot) {
        size_t old = m->mask + 1, start = 0;
        while (m->slot[start])
            start++; /* at most half full: there is one */
        for (size_t k = 1; k <= old; k++) {
            uint64_t s = m->slot[(start + k) & m->mask];
            if (!s) continue;
            size_t i = (size_t)(s >> 32) & nmask;
            while (ns[i])
                i = (i + 1) & nmask;
            ns[i] = s;
        }
        core_free(m->slot);
    }
    m->slot = ns;
    m->mask = nmask;
    return 0;
}

int core_hmap_reserve(core_hmap *m, size_t n)
{
    if (n > CORE_HMAP_MAX_ENTRIES)
        return core_err(OG_E_RESOURCE_LIMIT, "a hash map of %zu entries is over the limit of %zu",
                        n, CORE_HMAP_MAX_ENTRIES);
    size_t slots = m->slot ? m->mask + 1 : MIN_SLOTS;
    while (slots / 2 < n)
        slots *= 2;
    return m->slot && slots == m->mask + 1 ? 0 : rehash(m, slots);
}

int core_hmap_add_at(core_hmap *m, core_hmap_probe *p, uint64_t h, uint32_t entry)
{
    if (entry == UINT32_MAX)
        return core_err(OG_E_RESOURCE_LIMIT, "hash map entry number %u is over the limit", entry);
    if (!m->slot || m->n + 1 > (m->mask + 1) / 2) {
        int rc = core_hmap_reserve(m, m->n + 1);
        if (rc) return rc;
        *p = core_hmap_probe_of(m, h);
    }
    /* After a lookup that found nothing, p is on an empty slot; otherwise (a key added again)
     * its run goes on to one. */
    while (m->slot[p->pos])
        p->pos = (p->pos + 1) & m->mask;
    m->slot[p->pos] = (h & ~(uint64_t)UINT32_MAX) | ((uint64_t)entry + 1);
    p->pos = (p->pos + 1) & m->mask;
    m->n++;
    return 0;
}

int core_hmap_add(core_hmap *m, uint64_t h, uint32_t entry)
{
    core_hmap_probe p = core_hmap_probe_of(m, h);
    return core_hmap_add_at(m, &p, h, entry);
}

/* ---- byte-string keys -------------------------------------------------------------------- */

void core_bmap_free(core_bmap *m)
{
    core_hmap_free(&m->ix);
    core_free(m->e);
    memset(m, 0, sizeof *m);
}

static int entries_reserve(core_bmap *m, size_t n)
{
    if (n <= m->cap) return 0;
    size_t cap = m->cap ? m->cap : MIN_SLOTS / 2;
    while (cap < n)
        cap *= 2;
    core_bmap_entry *e = core_realloc(m->e, cap * sizeof *e);
    if (!e) return core_err_nomem();
    m->e = e;
    m->cap = cap;
    return 0;
}

int core_bmap_reserve(core_bmap *m, size_t n)
{
    int rc = core_hmap_reserve(&m->ix, n);
    return rc ? rc : entries_reserve(m, n);
}

static int same_key(const core_bmap_entry *e, const void *key, size_t len)
{
    return e->len == len && (len == 0 || memcmp(e->key, key, len) == 0);
}

core_bmap_entry *core_bmap_find_h(const core_bmap *m, const void *key, size_t len, uint64_t h)
{
    core_hmap_probe p = core_hmap_probe_of(&m->ix, h);
    uint32_t i;
    while (core_hmap_next(&m->ix, &p, &i))
        if (same_key(&m->e[i], key, len)) return &m->e[i];
    return NULL;
}

int core_bmap_put_h(core_bmap *m, const void *key, size_t len, uint64_t h, core_bmap_entry **out,
                    int *fresh)
{
    core_hmap_probe p = core_hmap_probe_of(&m->ix, h);
    uint32_t i;
    while (core_hmap_next(&m->ix, &p, &i))
        if (same_key(&m->e[i], key, len)) {
            *out = &m->e[i];
            *fresh = 0;
            return 0;
        }
    size_t n = m->ix.n;
    int rc = entries_reserve(m, n + 1);
    if (rc == 0) rc = core_hmap_add_at(&m->ix, &p, h, (uint32_t)n);
    if (rc) return rc;
    m->e[n] = (core_bmap_entry){(const uint8_t *)key, len, 0};
    *out = &m->e[n];
    *fresh = 1;
    return 0;
}
