/* libFuzzer target: the key index segment reader (src/lance/keyindex.c). Every input is opened
 * as a segment; an open that succeeds is walked and probed for a few keys. Each call ends in a
 * result or OG_E_CORRUPT (OG_E_NOMEM under the allocation limits), never a crash, and a walk
 * that succeeds reports exactly the entries the directory claims. */
#include "core/alloc.h"
#include "lance/keyindex.h"
#include "omnigraph.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok) abort();
}

static int count(void *arg, size_t key, uint32_t slot, uint32_t off, const uint8_t *pay,
                 size_t plen)
{
    (void)key;
    (void)slot;
    (void)off;
    (void)pay;
    (void)plen;
    ++*(uint64_t *)arg;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lance_kix_seg *g = NULL;
    int rc = lance_kix_seg_open_bytes(&g, data, size);
    check(rc == 0 || rc == OG_E_CORRUPT || rc == OG_E_NOMEM);
    check((rc == 0) == (g != NULL));
    if (!g) return 0;
    static const char *const names[] = {"id", "id>src", "src>dst", "dst>src"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        int t = lance_kix_seg_find_tree(g, names[i]);
        if (t < 0) continue;
        uint64_t n = 0;
        rc = lance_kix_seg_walk(g, t, count, &n);
        check(rc == 0 || rc == OG_E_CORRUPT || rc == OG_E_NOMEM);
        static const uint8_t *const keys[] = {(const uint8_t *)"", (const uint8_t *)"a",
                                              (const uint8_t *)"p1", (const uint8_t *)"zzzz"};
        static const size_t lens[] = {0, 1, 2, 4};
        n = 0;
        rc = lance_kix_seg_lookup(g, t, keys, lens, 4, count, &n);
        check(rc == 0 || rc == OG_E_CORRUPT || rc == OG_E_NOMEM);
    }
    const uint64_t *rows;
    const uint64_t *files;
    (void)lance_kix_seg_slots(g, &rows, &files);
    lance_kix_seg_close(g);
    return 0;
}
