/* Unit tests for core/hmap: the index (caller-kept entries, caller-supplied hashes) and the
 * byte-string map on it: growth, equal keys and their order, collisions of every kind,
 * limits and allocation failures, and a randomized comparison with a plain array. */
#include "testutil.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/hmap.h"

#include <stdio.h>
#include <string.h>

/* The entries of hash h in m, in the order the map yields them. */
static size_t entries_of(const core_hmap *m, uint64_t h, uint32_t *out, size_t cap)
{
    core_hmap_probe p = core_hmap_probe_of(m, h);
    uint32_t e;
    size_t n = 0;
    while (core_hmap_next(m, &p, &e)) {
        assert_true(n < cap);
        out[n++] = e;
    }
    return n;
}

static void test_empty(void **state)
{
    (void)state;
    core_hmap m = CORE_HMAP_INIT;
    uint32_t got[4];
    assert_int_equal(entries_of(&m, 42, got, 4), 0);
    core_hmap_prefetch(&m, 42);
    core_hmap_free(&m);
    core_hmap_free(&m); /* twice: back to empty both times */
    core_bmap b = CORE_BMAP_INIT;
    assert_null(core_bmap_find(&b, "x", 1));
    assert_null(core_bmap_find_h(&b, "x", 1, 7));
    core_bmap_prefetch(&b, 7);
    core_bmap_prefetch_entry(&b, 7);
    assert_int_equal(core_bmap_count(&b), 0);
    core_bmap_free(&b);
}

/* Entries keyed by their own number: the caller-kept keys of an index. */
static void test_index_growth(void **state)
{
    (void)state;
    enum { N = 100000 };
    static uint64_t key[N];
    core_hmap m = CORE_HMAP_INIT;
    for (uint32_t i = 0; i < N; i++) {
        key[i] = (uint64_t)i * 7919 + 3;
        uint64_t h = core_hmap_hash(&key[i], sizeof key[i]);
        core_hmap_probe p = core_hmap_probe_of(&m, h);
        uint32_t e;
        while (core_hmap_next(&m, &p, &e))
            assert_true(key[e] != key[i]);
        assert_og_ok(core_hmap_add_at(&m, &p, h, i));
        assert_int_equal(m.n, i + 1);
        assert_true(m.n <= (m.mask + 1) / 2); /* at most half full */
    }
    for (uint32_t i = 0; i < N; i++) {
        uint64_t h = core_hmap_hash(&key[i], sizeof key[i]);
        core_hmap_probe p = core_hmap_probe_of(&m, h);
        uint32_t e, found = UINT32_MAX;
        while (found == UINT32_MAX && core_hmap_next(&m, &p, &e))
            if (key[e] == key[i]) found = e;
        assert_int_equal(found, i);
    }
    uint64_t absent = 5; /* not of the form i * 7919 + 3 */
    uint64_t h = core_hmap_hash(&absent, sizeof absent);
    core_hmap_probe p = core_hmap_probe_of(&m, h);
    uint32_t e;
    while (core_hmap_next(&m, &p, &e))
        assert_true(key[e] != absent);
    core_hmap_free(&m);
    assert_null(m.slot);
    assert_int_equal(m.n, 0);
}

static void test_index_reserve(void **state)
{
    (void)state;
    core_hmap m = CORE_HMAP_INIT;
    assert_og_ok(core_hmap_reserve(&m, 1000));
    uint64_t *slots = m.slot;
    size_t mask = m.mask;
    uint32_t room = (uint32_t)(mask + 1) / 2; /* the reserve rounds up */
    assert_true(room >= 1000 && room < 2000);
    for (uint32_t i = 0; i < room; i++)
        assert_og_ok(core_hmap_add(&m, core_hmap_hash(&i, sizeof i), i));
    assert_ptr_equal(m.slot, slots); /* no growth up to the reserved size */
    assert_int_equal(m.mask, mask);
    assert_og_ok(core_hmap_reserve(&m, 10)); /* never shrinks */
    assert_ptr_equal(m.slot, slots);
    uint64_t h = core_hmap_hash("other", 5);
    assert_og_ok(core_hmap_add(&m, h, room)); /* one more grows it */
    assert_true(m.mask > mask);
    uint32_t got[2];
    assert_int_equal(entries_of(&m, h, got, 2), 1);
    assert_int_equal(got[0], room);
    core_hmap_free(&m);
}

/* Equal hashes (equal keys, or full collisions): every entry comes back, in the order added,
 * also after growth and also when the run of the hash wraps past the last slot. */
static void test_index_duplicates_keep_order(void **state)
{
    (void)state;
    core_hmap m = CORE_HMAP_INIT;
    assert_og_ok(core_hmap_reserve(&m, 8)); /* 16 slots */
    assert_int_equal(m.mask, 15);
    uint64_t last = (uint64_t)15 << 32; /* lands on the last slot: its run wraps to slot 0 */
    for (uint32_t i = 0; i < 5; i++)
        assert_og_ok(core_hmap_add(&m, last, 100 + i));
    assert_int_equal(m.slot[0] >> 32, 15); /* wrapped */
    uint32_t got[64];
    assert_int_equal(entries_of(&m, last, got, 64), 5);
    for (uint32_t i = 0; i < 5; i++)
        assert_int_equal(got[i], 100 + i);
    /* Grow through several doublings, adding more of the same hash on the way. */
    for (uint32_t i = 0; i < 2000; i++) {
        uint64_t h = core_hmap_hash(&i, sizeof i);
        if ((h >> 32) == 15) continue;
        assert_og_ok(core_hmap_add(&m, h, 1000 + i));
        if (i % 500 == 0) assert_og_ok(core_hmap_add(&m, last, 105 + i / 500));
    }
    assert_int_equal(entries_of(&m, last, got, 64), 9);
    for (uint32_t i = 0; i < 9; i++)
        assert_int_equal(got[i], 100 + i);
    /* One probe: the lookup runs to the end, then adds there. */
    core_hmap_probe p = core_hmap_probe_of(&m, last);
    uint32_t e;
    while (core_hmap_next(&m, &p, &e)) {
    }
    assert_og_ok(core_hmap_add_at(&m, &p, last, 200));
    assert_int_equal(entries_of(&m, last, got, 64), 10);
    assert_int_equal(got[9], 200);
    /* A probe stopped on a match adds after the run too. */
    p = core_hmap_probe_of(&m, last);
    assert_true(core_hmap_next(&m, &p, &e));
    assert_og_ok(core_hmap_add_at(&m, &p, last, 201));
    assert_int_equal(entries_of(&m, last, got, 64), 11);
    assert_int_equal(got[10], 201);
    assert_int_equal(got[0], 100);
    core_hmap_free(&m);
}

/* Hashes that share a slot but not their upper bits are told apart by the map; hashes that
 * share their upper bits (the map keeps no more) come back for the caller to compare. */
static void test_index_collisions(void **state)
{
    (void)state;
    core_hmap m = CORE_HMAP_INIT;
    assert_og_ok(core_hmap_reserve(&m, 8));
    /* same slot (low bits of the upper half), different upper bits */
    for (uint32_t i = 0; i < 8; i++)
        assert_og_ok(core_hmap_add(&m, (uint64_t)(i * 16 + 3) << 32, i));
    uint32_t got[16];
    for (uint32_t i = 0; i < 8; i++) {
        assert_int_equal(entries_of(&m, (uint64_t)(i * 16 + 3) << 32, got, 16), 1);
        assert_int_equal(got[0], i);
    }
    /* same upper bits, different lower bits: candidates of each other */
    core_hmap_free(&m);
    assert_og_ok(core_hmap_add(&m, 0xabcdef0100000001ull, 1));
    assert_og_ok(core_hmap_add(&m, 0xabcdef0100000002ull, 2));
    assert_int_equal(entries_of(&m, 0xabcdef01ffffffffull, got, 16), 2);
    assert_int_equal(got[0], 1);
    assert_int_equal(got[1], 2);
    core_hmap_free(&m);
}

static void test_index_limits(void **state)
{
    (void)state;
    core_hmap m = CORE_HMAP_INIT;
    assert_og_error(core_hmap_reserve(&m, CORE_HMAP_MAX_ENTRIES + 1), OG_E_RESOURCE_LIMIT);
    assert_null(m.slot);
    assert_og_error(core_hmap_add(&m, 1, UINT32_MAX), OG_E_RESOURCE_LIMIT);
    assert_int_equal(m.n, 0);
    assert_og_ok(core_hmap_add(&m, 1, UINT32_MAX - 1));
    uint32_t got[2];
    assert_int_equal(entries_of(&m, 1, got, 2), 1);
    assert_int_equal(got[0], UINT32_MAX - 1);
    core_hmap_free(&m);
}

static void test_bmap_basics(void **state)
{
    (void)state;
    core_bmap m = CORE_BMAP_INIT;
    static const char bin1[] = {'a', 0, 'b'}, bin2[] = {'a', 0, 'c'};
    const struct {
        const void *k;
        size_t n;
    } keys[] = {{"a", 1}, {"ab", 2}, {"abc", 3}, {"", 0}, {bin1, 3}, {bin2, 3}, {"b", 1}};
    size_t nk = sizeof keys / sizeof keys[0];
    for (size_t i = 0; i < nk; i++) {
        core_bmap_entry *e;
        int fresh;
        assert_og_ok(core_bmap_put(&m, keys[i].k, keys[i].n, &e, &fresh));
        assert_true(fresh);
        assert_int_equal(e->val, 0);
        e->val = (int64_t)i + 10;
        assert_int_equal(e - m.e, i); /* numbered in insertion order */
    }
    assert_int_equal(core_bmap_count(&m), nk);
    for (size_t i = 0; i < nk; i++) {
        core_bmap_entry *e = core_bmap_find(&m, keys[i].k, keys[i].n);
        assert_non_null(e);
        assert_int_equal(e->val, (int64_t)i + 10);
        /* a put of a present key (other bytes, same contents) finds it */
        char copy[8];
        memcpy(copy, keys[i].k, keys[i].n);
        int fresh;
        assert_og_ok(core_bmap_put(&m, copy, keys[i].n, &e, &fresh));
        assert_false(fresh);
        assert_int_equal(e->val, (int64_t)i + 10);
        assert_ptr_equal(e->key, keys[i].k); /* the first key's bytes stay */
    }
    assert_int_equal(core_bmap_count(&m), nk);
    /* the empty key may come as NULL */
    assert_non_null(core_bmap_find(&m, NULL, 0));
    assert_null(core_bmap_find(&m, "abcd", 4));
    assert_ptr_equal(core_bmap_find(&m, "ab", 1), core_bmap_find(&m, "a", 1)); /* len bytes */
    core_bmap_free(&m);
    core_bmap_free(&m);
}

/* Every key under one hash (as a caller-supplied hash could make them): still a map. */
static void test_bmap_all_collide(void **state)
{
    (void)state;
    core_bmap m = CORE_BMAP_INIT;
    enum { N = 600 };
    static char names[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "k%d", i);
        core_bmap_entry *e;
        int fresh;
        assert_og_ok(core_bmap_put_h(&m, names[i], strlen(names[i]), 0x1234, &e, &fresh));
        assert_true(fresh);
        e->val = i;
    }
    for (int i = 0; i < N; i++) {
        core_bmap_entry *e = core_bmap_find_h(&m, names[i], strlen(names[i]), 0x1234);
        assert_non_null(e);
        assert_int_equal(e->val, i);
        int fresh;
        assert_og_ok(core_bmap_put_h(&m, names[i], strlen(names[i]), 0x1234, &e, &fresh));
        assert_false(fresh);
    }
    assert_null(core_bmap_find_h(&m, "k600", 4, 0x1234));
    assert_int_equal(core_bmap_count(&m), N);
    core_bmap_free(&m);
}

static void test_bmap_reserve_and_prefetch(void **state)
{
    (void)state;
    core_bmap m = CORE_BMAP_INIT;
    assert_og_ok(core_bmap_reserve(&m, 500));
    core_bmap_entry *e0 = m.e;
    uint64_t *s0 = m.ix.slot;
    static uint32_t k[500];
    for (uint32_t i = 0; i < 500; i++) {
        k[i] = i * 2654435761u;
        uint64_t h = core_hmap_hash(&k[i], sizeof k[i]);
        core_bmap_prefetch(&m, h);
        core_bmap_prefetch_entry(&m, h);
        core_bmap_entry *e;
        int fresh;
        assert_og_ok(core_bmap_put_h(&m, &k[i], sizeof k[i], h, &e, &fresh));
        assert_true(fresh);
    }
    assert_ptr_equal(m.e, e0); /* neither array moved */
    assert_ptr_equal(m.ix.slot, s0);
    core_bmap_free(&m);
}

/* An allocation failure (of the entries, or of the slots: the first or the second allocation
 * of a put) leaves the map as it was, and usable. */
static void test_bmap_nomem(void **state)
{
    (void)state;
    static char names[100][8];
    for (uint64_t nth = 1; nth <= 2; nth++) {
        core_bmap m = CORE_BMAP_INIT;
        int failed = 0;
        for (int i = 0; i < 100; i++) {
            snprintf(names[i], sizeof names[i], "n%d", i);
            core_bmap_entry *e;
            int fresh;
            core_alloc_fail_at(nth, 0);
            int rc = core_bmap_put(&m, names[i], strlen(names[i]), &e, &fresh);
            core_alloc_fail_at(0, 0);
            if (rc) {
                failed++;
                assert_og_error(rc, OG_E_NOMEM);
                assert_int_equal(core_bmap_count(&m), (size_t)i);
                assert_null(core_bmap_find(&m, names[i], strlen(names[i])));
                assert_og_ok(core_bmap_put(&m, names[i], strlen(names[i]), &e, &fresh));
            }
            assert_true(fresh);
            e->val = i;
        }
        assert_true(failed > 0);
        assert_int_equal(core_bmap_count(&m), 100);
        for (int i = 0; i < 100; i++) {
            core_bmap_entry *e = core_bmap_find(&m, names[i], strlen(names[i]));
            assert_non_null(e);
            assert_int_equal(e->val, i);
        }
        core_bmap_free(&m);
    }
}

/* Random puts and lookups over a small key space (so most are repeats), checked against a
 * plain list. */
static void test_bmap_random(void **state)
{
    (void)state;
    enum { KEYS = 3000, OPS = 20000 };
    static char text[KEYS][12];
    static int64_t want[KEYS]; /* -1: absent */
    for (int i = 0; i < KEYS; i++) {
        snprintf(text[i], sizeof text[i], "%x", (unsigned)i * 40503u);
        want[i] = -1;
    }
    core_bmap m = CORE_BMAP_INIT;
    uint64_t x = 88172645463325252ull;
    size_t present = 0;
    for (int op = 0; op < OPS; op++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int k = (int)(x % KEYS);
        size_t n = strlen(text[k]);
        if (x & (1ull << 40)) {
            core_bmap_entry *e;
            int fresh;
            assert_og_ok(core_bmap_put(&m, text[k], n, &e, &fresh));
            assert_int_equal(fresh, want[k] < 0);
            if (fresh) {
                present++;
                want[k] = op;
                e->val = op;
            }
            assert_int_equal(e->val, want[k]);
        } else {
            core_bmap_entry *e = core_bmap_find(&m, text[k], n);
            if (want[k] < 0)
                assert_null(e);
            else
                assert_int_equal(e->val, want[k]);
        }
    }
    assert_int_equal(core_bmap_count(&m), present);
    core_bmap_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_index_growth),
        cmocka_unit_test(test_index_reserve),
        cmocka_unit_test(test_index_duplicates_keep_order),
        cmocka_unit_test(test_index_collisions),
        cmocka_unit_test(test_index_limits),
        cmocka_unit_test(test_bmap_basics),
        cmocka_unit_test(test_bmap_all_collide),
        cmocka_unit_test(test_bmap_reserve_and_prefetch),
        cmocka_unit_test(test_bmap_nomem),
        cmocka_unit_test(test_bmap_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
