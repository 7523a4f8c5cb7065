/* Key indexes (src/lance/keyindex.c): segment files round-trip, and on a table grown by
 * appends, deletes, upserts and compactions every lookup equals a full scan, at every version,
 * with segments intact, damaged or missing. */
#include "testutil.h"
#include "core/alloc.h"
#include "core/buf.h"
#include "lance/branch.h"
#include "lance/cleanup.h"
#include "lance/compact.h"
#include "lance/dataset.h"
#include "lance/keyindex.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROOT "k.lance"

typedef struct fixture {
    char dir[256];
    store *s;
    arrow_schema schema;
    uint64_t rnd;
} fixture;

static uint64_t next_rand(fixture *f)
{
    f->rnd ^= f->rnd << 13;
    f->rnd ^= f->rnd >> 7;
    f->rnd ^= f->rnd << 17;
    return f->rnd;
}

static void add_field(arrow_schema *s, const char *name, arrow_type_id id, bool nullable)
{
    arrow_field fl;
    arrow_type t = arrow_type_simple(id);
    assert_og_ok(arrow_field_init(&fl, name, &t, nullable));
    assert_og_ok(arrow_schema_add(s, &fl));
    arrow_field_clear(&fl);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->s = test_sandbox_store(f->dir, sizeof f->dir, "kix");
    arrow_schema_init(&f->schema);
    add_field(&f->schema, "id", ARROW_UTF8, false);
    add_field(&f->schema, "src", ARROW_UTF8, false);
    add_field(&f->schema, "dst", ARROW_UTF8, true);
    add_field(&f->schema, "n", ARROW_INT64, false);
    f->rnd = 0x9e3779b97f4a7c15ull;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    store_close(f->s);
    arrow_schema_clear(&f->schema);
    test_sandbox_done(f->dir);
    free(f);
    return 0;
}

/* Rows k = start..start+n-1: id "e<k>", src "n<k % 37 + salt>", dst "n<k*7 % 53>" (null
 * when k % 29 == 5), n = k. */
static arrow_batch *rows(const arrow_schema *s, int64_t start, int64_t n, int salt)
{
    arrow_builder *b[4];
    for (int c = 0; c < 4; c++)
        assert_og_ok(arrow_builder_new(&b[c], &s->fields[c].type));
    for (int64_t k = start; k < start + n; k++) {
        char buf[32];
        snprintf(buf, sizeof buf, "e%" PRId64, k);
        assert_og_ok(arrow_builder_append_str(b[0], buf));
        snprintf(buf, sizeof buf, "n%" PRId64, k % 37 + salt);
        assert_og_ok(arrow_builder_append_str(b[1], buf));
        if (k % 29 == 5) {
            assert_og_ok(arrow_builder_append_null(b[2]));
        } else {
            snprintf(buf, sizeof buf, "n%" PRId64, k * 7 % 53);
            assert_og_ok(arrow_builder_append_str(b[2], buf));
        }
        assert_og_ok(arrow_builder_append_int(b[3], k));
    }
    arrow_array *cols[4];
    for (int c = 0; c < 4; c++) {
        assert_og_ok(arrow_builder_finish(b[c], &cols[c]));
        arrow_builder_free(b[c]);
    }
    arrow_batch *out = NULL;
    assert_og_ok(arrow_batch_new(&out, s, cols, 4));
    for (int c = 0; c < 4; c++)
        arrow_array_free(cols[c]);
    return out;
}

static lance_dataset *open_at(fixture *f, uint64_t v)
{
    lance_dataset *ds = NULL;
    assert_og_ok(lance_dataset_open(&ds, f->s, ROOT, v, LANCE_ACCESS_WRITE));
    return ds;
}

static void commit(lance_staged *st)
{
    lance_dataset *nd = NULL;
    assert_og_ok(lance_staged_commit(st, &nd, NULL));
    lance_dataset_free(nd);
    lance_staged_free(st);
}

static void append(fixture *f, int64_t start, int64_t n, int salt)
{
    lance_dataset *ds = open_at(f, 0);
    arrow_batch *b = rows(&f->schema, start, n, salt);
    lance_staged *st = NULL;
    assert_og_ok(lance_stage_append(&st, ds, &b, 1, NULL));
    commit(st);
    arrow_batch_free(b);
    lance_dataset_free(ds);
}

static void upsert(fixture *f, int64_t start, int64_t n, int salt)
{
    lance_dataset *ds = open_at(f, 0);
    arrow_batch *b = rows(&f->schema, start, n, salt);
    lance_staged *st = NULL;
    assert_og_ok(lance_stage_merge_insert(&st, ds, "id", &b, 1, LANCE_MERGE_UPSERT, NULL));
    commit(st);
    arrow_batch_free(b);
    lance_dataset_free(ds);
}

static void delete_range(fixture *f, int64_t lo, int64_t hi)
{
    lance_dataset *ds = open_at(f, 0);
    lance_term t[2] = {{"n", ARROW_CMP_GE, {.kind = ARROW_INT64, .i = lo}},
                       {"n", ARROW_CMP_LT, {.kind = ARROW_INT64, .i = hi}}};
    lance_filter fl = {t, 2};
    lance_staged *st = NULL;
    assert_og_ok(lance_stage_delete(&st, ds, &fl, NULL));
    lance_staged_info info;
    lance_staged_get_info(st, &info);
    if (info.noop)
        lance_staged_free(st);
    else
        commit(st);
    lance_dataset_free(ds);
}

static void compact(fixture *f, unsigned tiers)
{
    lance_dataset *ds = open_at(f, 0), *out = NULL;
    lance_compact_options co = LANCE_COMPACT_OPTIONS_INIT;
    co.tier_factor = tiers;
    lance_compact_report rep;
    assert_og_ok(lance_compact(&out, ds, &co, &rep));
    lance_dataset_free(out);
    lance_dataset_free(ds);
}

/* ---- the oracle --------------------------------------------------------------------------- */

typedef struct found {
    char key[32];
    uint64_t addr;
    char pay[32];
    int has_pay;
} found;

typedef struct found_set {
    found *v;
    size_t n, cap;
    const char *const *keys;
} found_set;

static int on_hit(void *arg, size_t key, uint64_t addr, const uint8_t *pay, size_t plen)
{
    found_set *fs = arg;
    if (fs->n == fs->cap) {
        fs->cap = fs->cap ? fs->cap * 2 : 64;
        fs->v = realloc(fs->v, fs->cap * sizeof *fs->v);
    }
    found *x = &fs->v[fs->n++];
    memset(x, 0, sizeof *x);
    snprintf(x->key, sizeof x->key, "%s", fs->keys ? fs->keys[key] : "");
    x->addr = addr;
    if (pay) {
        x->has_pay = 1;
        snprintf(x->pay, sizeof x->pay, "%.*s", (int)plen, (const char *)pay);
    }
    return 0;
}

static int found_cmp(const void *a, const void *b)
{
    const found *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c) return c;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The same answers from a full scan. */
static void scan_oracle(const lance_dataset *ds, const char *col, const char *pay,
                        const char *const *keys, size_t n, found_set *out)
{
    const char *cols[2] = {col, pay};
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.columns = cols;
    so.n_columns = pay ? 2 : 1;
    so.with_row_addr = true;
    arrow_batch *b = NULL;
    assert_og_ok(lance_dataset_scan_all(&b, ds, &so));
    for (int64_t r = 0; r < b->num_rows; r++) {
        if (!arrow_array_is_valid(b->columns[0], r)) continue;
        size_t vn;
        const char *v = (const char *)arrow_array_get_bytes(b->columns[0], r, &vn);
        for (size_t k = 0; k < n; k++) {
            if (strlen(keys[k]) != vn || memcmp(keys[k], v, vn)) continue;
            const uint8_t *pv = NULL;
            size_t pn = 0;
            if (pay && arrow_array_is_valid(b->columns[1], r))
                pv = arrow_array_get_bytes(b->columns[1], r, &pn);
            out->keys = keys;
            on_hit(out, k, arrow_array_get_uint(b->columns[b->n_columns - 1], r), pv, pn);
            break;
        }
    }
    arrow_batch_free(b);
}

static void check_equal(found_set *a, found_set *b)
{
    if (a->n > 1) qsort(a->v, a->n, sizeof *a->v, found_cmp);
    if (b->n > 1) qsort(b->v, b->n, sizeof *b->v, found_cmp);
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_string_equal(a->v[i].key, b->v[i].key);
        assert_int_equal(a->v[i].addr, b->v[i].addr);
        assert_int_equal(a->v[i].has_pay, b->v[i].has_pay);
        assert_string_equal(a->v[i].pay, b->v[i].pay);
    }
}

/* Random lookups of ids, sources and destinations (present, absent, repeated) against the
 * scan; returns the stats of the last lookup. */
static void check_version(fixture *f, const lance_dataset *ds, lance_kix_stats *last)
{
    static const char *const spec[3][2] = {{"id", NULL}, {"src", "dst"}, {"dst", "src"}};
    for (int round = 0; round < 12; round++) {
        int which = round % 3;
        char kb[24][32];
        const char *keys[24];
        size_t n = 1 + next_rand(f) % 20;
        for (size_t k = 0; k < n; k++) {
            uint64_t r = next_rand(f);
            if (which == 0)
                snprintf(kb[k], sizeof kb[k], "e%" PRIu64, r % 1400);
            else
                snprintf(kb[k], sizeof kb[k], "n%" PRIu64, r % 70);
            keys[k] = kb[k];
        }
        if (n > 2) keys[n - 1] = keys[0]; /* a repeated key is answered once */
        size_t lens[24];
        for (size_t k = 0; k < n; k++)
            lens[k] = strlen(keys[k]);
        found_set got = {.keys = keys}, want = {.keys = keys};
        lance_kix_stats st;
        assert_og_ok(lance_kix_lookup(ds, spec[which][0], spec[which][1],
                                      (const uint8_t *const *)keys, lens, n, on_hit, &got, &st));
        scan_oracle(ds, spec[which][0], spec[which][1], keys, n, &want);
        check_equal(&got, &want);
        free(got.v);
        free(want.v);
        if (last) *last = st;
    }
}

static void create(fixture *f, const char *decls)
{
    lance_create_options co = LANCE_CREATE_OPTIONS_INIT;
    co.key_indexes = decls;
    lance_dataset *ds = NULL;
    assert_og_ok(lance_dataset_create(&ds, f->s, ROOT, &f->schema, &co));
    lance_dataset_free(ds);
}

static uint64_t latest(fixture *f)
{
    lance_dataset *ds = open_at(f, 0);
    uint64_t v = lance_dataset_version(ds);
    lance_dataset_free(ds);
    return v;
}

/* lance_kix_verify of ds: the report, the problems counted. */
static void on_problem(void *arg, const char *segment, const char *what)
{
    (void)segment;
    (void)what;
    ++*(unsigned *)arg;
}

static lance_kix_verify_report verify(const lance_dataset *ds, unsigned *told)
{
    lance_kix_verify_report rep;
    *told = 0;
    assert_og_ok(lance_kix_verify(ds, &rep, on_problem, told));
    return rep;
}

/* Grow a table through every kind of write, checking lookups after each; then check every
 * version again (time travel reads each version's own segments). */
static void grow_and_check(fixture *f)
{
    int64_t next = 0;
    for (int step = 0; step < 40; step++) {
        uint64_t r = next_rand(f) % 10;
        if (r < 3) {
            int64_t n = (int64_t)(1 + next_rand(f) % 6);
            append(f, next, n, 0);
            next += n;
        } else if (r < 5) {
            int64_t n = (int64_t)(64 + next_rand(f) % 150);
            append(f, next, n, 0);
            next += n;
        } else if (r < 7 && next > 10) {
            int64_t lo = (int64_t)(next_rand(f) % (uint64_t)next);
            delete_range(f, lo, lo + 1 + (int64_t)(next_rand(f) % 40));
        } else if (r < 8 && next > 10) {
            int64_t lo = (int64_t)(next_rand(f) % (uint64_t)next);
            upsert(f, lo, 1 + (int64_t)(next_rand(f) % 90), 100 + step);
        } else {
            compact(f, r == 9 ? 8 : 0);
        }
        lance_dataset *ds = open_at(f, 0);
        check_version(f, ds, NULL);
        lance_dataset_free(ds);
    }
    uint64_t v = latest(f);
    uint64_t entries = 0;
    for (uint64_t old = 1; old <= v; old++) {
        lance_dataset *ds = open_at(f, old);
        check_version(f, ds, NULL);
        /* every version's segments agree with its data */
        unsigned told;
        lance_kix_verify_report rep = verify(ds, &told);
        assert_int_equal(rep.problems, 0);
        assert_int_equal(told, 0);
        assert_int_equal(rep.segments_ok, rep.segments);
        entries += rep.entries;
        lance_dataset_free(ds);
    }
    assert_true(entries > 0);
}

static void test_lookup_equals_scan(void **state)
{
    fixture *f = *state;
    create(f, "id;src>dst;dst>src");
    grow_and_check(f);
    /* The indexes were used: a lookup at the head answers most fragments from segments. */
    compact(f, 0);
    append(f, 5000, 3, 0);
    lance_dataset *ds = open_at(f, 0);
    lance_kix_stats st;
    check_version(f, ds, &st);
    assert_true(st.fragments_indexed >= 1);
    assert_int_equal(st.fragments_scanned, 1);
    assert_int_equal(st.damaged, 0);
    lance_dataset_free(ds);
}

static void test_unindexed_table_scans(void **state)
{
    fixture *f = *state;
    create(f, NULL);
    append(f, 0, 100, 0);
    lance_dataset *ds = open_at(f, 0);
    lance_kix_stats st;
    check_version(f, ds, &st);
    assert_int_equal(st.segments, 0);
    assert_int_equal(st.fragments_scanned, 1);
    lance_dataset_free(ds);
}

/* Damage every segment (one flipped byte in the middle, then a missing file): same answers,
 * the damage counted. */
static void test_damaged_segments_fall_back(void **state)
{
    fixture *f = *state;
    create(f, "id;src>dst;dst>src");
    append(f, 0, 300, 0);
    append(f, 300, 200, 0);
    append(f, 500, 900, 0);
    store_list l;
    memset(&l, 0, sizeof l);
    assert_og_ok(store_list_prefix(f->s, ROOT "/" LANCE_KIX_DIR, 0, &l));
    assert_int_equal(l.count, 3);
    uint64_t before = lance_kix_damaged();
    core_buf b = CORE_BUF_INIT;
    /* one segment's directory damaged (found at open), one with a flipped byte in its data
     * blocks (found when a lookup reads that block), one missing */
    for (int i = 0; i < 2; i++) {
        assert_og_ok(store_get(f->s, l.items[i].key, 0, STORE_ALL, &b));
        b.data[i == 0 ? b.len - 40 : b.len / 3] ^= 0x40;
        assert_og_ok(store_put(f->s, l.items[i].key, b.data, b.len, 0));
    }
    assert_og_ok(store_delete(f->s, l.items[2].key, 0));
    lance_dataset *ds = open_at(f, 0);
    /* verify names all three */
    unsigned told;
    lance_kix_verify_report rep = verify(ds, &told);
    assert_int_equal(rep.segments, 3);
    assert_int_equal(rep.segments_ok, 0);
    assert_true(rep.problems >= 3);
    assert_true(told >= 3);
    lance_kix_stats st;
    check_version(f, ds, &st);
    assert_true(lance_kix_damaged() >= before + 2);
    assert_true(st.fragments_scanned >= 2);
    lance_dataset_free(ds);
    core_buf_free(&b);
    store_list_free(&l);
}

static int seg_hit(void *arg, size_t key, uint32_t slot, uint32_t off, const uint8_t *pay,
                   size_t plen)
{
    found_set *fs = arg;
    (void)key;
    (void)pay;
    (void)plen;
    return on_hit(fs->keys ? arg : arg, 0, (uint64_t)slot << 32 | off, NULL, 0);
}

static int seg_count(void *arg, size_t key, uint32_t slot, uint32_t off, const uint8_t *pay,
                     size_t plen)
{
    (void)slot;
    (void)off;
    (void)pay;
    (void)plen;
    ((size_t *)arg)[key]++;
    return 0;
}

/* Many ascending keys in one lookup (the merge of keys and leaves): every key's count the
 * same as alone, absent keys between present ones and past either end included. */
static void batch_lookups(lance_kix_seg *g, const size_t *want)
{
    static const size_t strides[] = {1, 2, 37, 500, 4001};
    char(*kb)[16] = calloc(2 * 4001 + 2, sizeof *kb);
    const uint8_t **kp = calloc(2 * 4001 + 2, sizeof *kp);
    size_t *kl = calloc(2 * 4001 + 2, sizeof *kl), *cnt = calloc(2 * 4001 + 2, sizeof *cnt);
    size_t *expect = calloc(2 * 4001 + 2, sizeof *expect);
    for (size_t si = 0; si < sizeof strides / sizeof *strides; si++) {
        size_t nk = 0;
        snprintf(kb[nk++], 16, "a"); /* before every key */
        for (size_t k = 0; k <= 4000; k += strides[si]) {
            expect[nk] = want[k];
            snprintf(kb[nk++], 16, "k%05zu", k);
            if (k % 3 == 1) snprintf(kb[nk++], 16, "k%05zux", k); /* absent, just above */
        }
        snprintf(kb[nk++], 16, "z"); /* past every key */
        for (size_t i = 0; i < nk; i++) {
            kp[i] = (const uint8_t *)kb[i];
            kl[i] = strlen(kb[i]);
            if (kb[i][0] != 'k' || kl[i] != 6) expect[i] = 0;
            cnt[i] = 0;
        }
        assert_og_ok(lance_kix_seg_lookup(g, 0, kp, kl, nk, seg_count, cnt));
        for (size_t i = 0; i < nk; i++)
            if (cnt[i] != expect[i])
                fail_msg("stride %zu: key %s found %zu times, not %zu", strides[si], kb[i], cnt[i],
                         expect[i]);
    }
    free(kb);
    free(kp);
    free(kl);
    free(cnt);
    free(expect);
}

/* The file format alone: many duplicates spanning leaves, every key found whole, the walk in
 * order; truncations and flipped bytes are refused, never crash. */
static void test_segment_roundtrip(void **state)
{
    fixture *f = *state;
    size_t n = 20000;
    lance_kix_entry *e = calloc(n, sizeof *e);
    char(*kb)[16] = calloc(n, sizeof *kb);
    for (size_t i = 0; i < n; i++) {
        /* key 0 has 3000 entries (spans many leaves); others a few each */
        size_t k = i < 3000 ? 0 : 1 + next_rand(f) % 4000;
        snprintf(kb[i], sizeof kb[i], "k%05zu", k);
        e[i].key = (const uint8_t *)kb[i];
        e[i].klen = (uint32_t)strlen(kb[i]);
        e[i].pay = (const uint8_t *)"p";
        e[i].plen = 1;
        e[i].slot = (uint32_t)(i % 3);
        e[i].off = (uint32_t)(i / 3);
    }
    uint64_t slot_rows[3] = {n, n, n};
    const char *names[1] = {"k>p"};
    lance_kix_entry *ep[1] = {e};
    size_t ne[1] = {n};
    core_buf out = CORE_BUF_INIT;
    assert_og_ok(lance_kix_encode(&out, names, ep, ne, 1, slot_rows, NULL, 3));
    lance_kix_seg *g = NULL;
    assert_og_ok(lance_kix_seg_open_bytes(&g, out.data, out.len));
    assert_int_equal(lance_kix_seg_find_tree(g, "k>p"), 0);
    assert_int_equal(lance_kix_seg_find_tree(g, "k"), -1);
    /* Count per key from the entries themselves. */
    size_t *want = calloc(4001, sizeof *want);
    for (size_t i = 0; i < n; i++)
        want[atoi(kb[i] + 1)]++;
    size_t got_n = 0;
    for (size_t k = 0; k <= 4000; k += 1) {
        char key[16];
        snprintf(key, sizeof key, "k%05zu", k);
        const uint8_t *kp = (const uint8_t *)key;
        size_t kl = strlen(key);
        found_set fs = {0};
        const char *kk[1] = {key};
        fs.keys = kk;
        assert_og_ok(lance_kix_seg_lookup(g, 0, &kp, &kl, 1, seg_hit, &fs));
        assert_int_equal(fs.n, want[k]);
        got_n += fs.n;
        free(fs.v);
    }
    assert_int_equal(got_n, n);
    batch_lookups(g, want);
    found_set all = {0};
    assert_og_ok(lance_kix_seg_walk(g, 0, seg_hit, &all));
    assert_int_equal(all.n, n);
    free(all.v);
    lance_kix_seg_close(g);
    /* Damage: every truncation point of the tail, and flipped bytes, fail cleanly. */
    for (size_t cut = out.len - 200; cut < out.len; cut += 7) {
        if (lance_kix_seg_open_bytes(&g, out.data, cut) == 0) lance_kix_seg_close(g);
    }
    for (size_t at = 0; at < out.len; at += out.len / 97) {
        out.data[at] ^= 0x5a;
        if (lance_kix_seg_open_bytes(&g, out.data, out.len) == 0) {
            /* every block read is checked: an answer is either refused or whole */
            found_set fs = {0};
            int rc = lance_kix_seg_walk(g, 0, seg_hit, &fs);
            if (rc != OG_E_CORRUPT) {
                assert_int_equal(rc, 0);
                assert_int_equal(fs.n, n);
            }
            free(fs.v);
            memset(&fs, 0, sizeof fs);
            const uint8_t *k0 = (const uint8_t *)"k00000";
            size_t l0 = 6;
            rc = lance_kix_seg_lookup(g, 0, &k0, &l0, 1, seg_hit, &fs);
            if (rc != OG_E_CORRUPT) {
                assert_int_equal(rc, 0);
                assert_int_equal(fs.n, want[0]);
            }
            free(fs.v);
            lance_kix_seg_close(g);
        }
        out.data[at] ^= 0x5a;
    }
    free(want);
    free(e);
    free(kb);
    core_buf_free(&out);
}

/* The segment of a builder that borrows the rows (as a write's does) equals, byte for byte,
 * the one a copying builder makes of the same rows; the borrowing one only notes the rows
 * while they are added (a handful of allocations for 40 adds, no entries: each index's entries
 * are drawn when its tree is encoded), and the copying one, reserved for its rows, allocates
 * no entries while they are added either. The segment (three trees: large enough to be
 * spread over workers) holds every entry. */
static void test_builder_borrowed_equals_copied(void **state)
{
    fixture *f = *state;
    create(f, "id;src>dst;dst>src");
    lance_dataset *ds = open_at(f, 0);
    int64_t n = 40000;
    arrow_batch *b = rows(&f->schema, 0, n, 0);
    uint64_t slot_rows[2] = {(uint64_t)n / 2, (uint64_t)n / 2}, slot_files[2] = {0, 0};
    core_buf seg[2] = {CORE_BUF_INIT, CORE_BUF_INIT};
    for (int borrow = 0; borrow < 2; borrow++) {
        lance_kix_builder *kb = NULL;
        assert_og_ok(lance_kix_builder_new(&kb, ds));
        assert_non_null(kb);
        if (borrow) lance_kix_builder_borrow(kb);
        assert_og_ok(lance_kix_builder_reserve(kb, (uint64_t)n));
        uint64_t before = core_alloc_count();
        for (int64_t off = 0; off < n; off += 1000)
            assert_og_ok(lance_kix_builder_add(kb, b, off, 1000, (uint32_t)(off / (n / 2)),
                                               (uint32_t)(off % (n / 2))));
        uint64_t allocs = core_alloc_count() - before;
        if (borrow)
            assert_true(allocs <= 4);
        else
            assert_true(allocs < 100); /* the arena's chunks of copied keys only */
        lance_kix_staged st;
        char key[STORE_KEY_MAX];
        assert_og_ok(lance_kix_builder_finish(kb, slot_rows, slot_files, 2, &st, key));
        assert_int_equal(st.n, 2);
        lance_kix_builder_free(kb);
        assert_og_ok(store_get(f->s, key, 0, STORE_ALL, &seg[borrow]));
    }
    assert_int_equal(seg[0].len, seg[1].len);
    assert_memory_equal(seg[0].data, seg[1].data, seg[0].len);
    lance_kix_seg *g = NULL;
    assert_og_ok(lance_kix_seg_open_bytes(&g, seg[1].data, seg[1].len));
    for (int t = 0; t < 3; t++) {
        found_set all = {0};
        assert_og_ok(lance_kix_seg_walk(g, t, seg_hit, &all));
        /* dst is null in one row of 29 (k % 29 == 5): those rows are not in dst's tree */
        size_t want = (size_t)n;
        if (t == 2)
            for (int64_t k = 0; k < n; k++)
                want -= k % 29 == 5;
        assert_int_equal(all.n, want);
        free(all.v);
    }
    lance_kix_seg_close(g);
    core_buf_free(&seg[0]);
    core_buf_free(&seg[1]);
    arrow_batch_free(b);
    lance_dataset_free(ds);
}

/* A table without indexes gets them from a compaction that declares them: its one big
 * fragment is rewritten alone so the new one has a segment; small ones are left to scans. */
static void test_compaction_builds_missing_indexes(void **state)
{
    fixture *f = *state;
    create(f, NULL);
    append(f, 0, 400, 0);
    lance_dataset *ds = open_at(f, 0), *out = NULL;
    assert_true(lance_kix_missing(ds, "id;src>dst;dst>src"));
    assert_false(lance_kix_missing(ds, NULL));
    lance_compact_options co = LANCE_COMPACT_OPTIONS_INIT;
    co.key_indexes = "id;src>dst;dst>src";
    lance_compact_report rep;
    assert_og_ok(lance_compact(&out, ds, &co, &rep));
    assert_int_equal(rep.n_commits, 1);
    assert_false(lance_kix_missing(out, "id;src>dst;dst>src"));
    lance_kix_stats st;
    check_version(f, out, &st);
    assert_int_equal(st.fragments_scanned, 0);
    assert_true(st.fragments_indexed >= 1);
    lance_dataset_free(out);
    lance_dataset_free(ds);
    /* nothing left to do: a second run commits nothing */
    ds = open_at(f, 0);
    assert_og_ok(lance_compact(&out, ds, &co, &rep));
    assert_int_equal(rep.n_commits, 0);
    lance_dataset_free(out);
    lance_dataset_free(ds);
    /* another declaration drops the old segments (their trees differ) and builds anew */
    ds = open_at(f, 0);
    co.key_indexes = "dst";
    assert_true(lance_kix_missing(ds, "dst"));
    assert_og_ok(lance_compact(&out, ds, &co, &rep));
    assert_int_equal(rep.n_commits, 1);
    check_version(f, out, &st);
    assert_int_equal(st.damaged, 0);
    lance_dataset_free(out);
    lance_dataset_free(ds);
}

/* A segment that cannot be used (damaged, or written in another format version) is missing
 * for optimize: the compaction that declares the same indexes rewrites its fragment. */
static void test_unusable_segment_rebuilt(void **state)
{
    fixture *f = *state;
    const char *decl = "id;src>dst;dst>src";
    create(f, decl);
    append(f, 0, 300, 0);
    lance_dataset *ds = open_at(f, 0), *out = NULL;
    assert_false(lance_kix_missing(ds, decl));
    lance_dataset_free(ds);
    store_list l;
    memset(&l, 0, sizeof l);
    assert_og_ok(store_list_prefix(f->s, ROOT "/" LANCE_KIX_DIR, 0, &l));
    assert_int_equal(l.count, 1);
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(store_get(f->s, l.items[0].key, 0, STORE_ALL, &b));
    b.data[b.len - 20] ^= 0x01; /* the trailer's format version */
    assert_og_ok(store_put(f->s, l.items[0].key, b.data, b.len, 0));
    core_buf_free(&b);
    store_list_free(&l);
    ds = open_at(f, 0);
    assert_true(lance_kix_missing(ds, decl));
    lance_compact_options co = LANCE_COMPACT_OPTIONS_INIT;
    co.key_indexes = decl;
    lance_compact_report rep;
    assert_og_ok(lance_compact(&out, ds, &co, &rep));
    assert_int_equal(rep.n_commits, 1);
    assert_false(lance_kix_missing(out, decl));
    uint64_t before = lance_kix_damaged();
    lance_kix_stats st;
    check_version(f, out, &st);
    assert_int_equal(lance_kix_damaged(), before);
    assert_int_equal(st.fragments_scanned, 0);
    lance_dataset_free(out);
    lance_dataset_free(ds);
}

/* A branch reads the segments it inherited (under the main table's directory) and writes
 * its own under the branch's: no segment is reported missing, and lookups equal scans. */
static void test_branch_segments(void **state)
{
    fixture *f = *state;
    create(f, "id;src>dst;dst>src");
    append(f, 0, 300, 0);
    lance_branch br;
    assert_og_ok(lance_branch_create(f->s, ROOT, "b1", NULL, latest(f), &br));
    uint64_t before = lance_kix_damaged();
    lance_dataset *ds = NULL;
    assert_og_ok(lance_branch_open(&ds, f->s, ROOT, "b1", 0, NULL, LANCE_ACCESS_WRITE));
    lance_kix_stats st;
    check_version(f, ds, &st);
    assert_int_equal(lance_kix_damaged(), before);
    assert_true(st.fragments_indexed >= 1);
    /* a write on the branch: its own segment */
    arrow_batch *b = rows(&f->schema, 300, 100, 0);
    lance_staged *stg = NULL;
    lance_dataset *nd = NULL;
    assert_og_ok(lance_stage_append(&stg, ds, &b, 1, NULL));
    assert_og_ok(lance_staged_commit(stg, &nd, NULL));
    lance_staged_free(stg);
    arrow_batch_free(b);
    check_version(f, nd, &st);
    assert_int_equal(lance_kix_damaged(), before);
    assert_int_equal(st.fragments_scanned, 0);
    lance_dataset_free(nd);
    lance_dataset_free(ds);
}

/* Cleanup keeps exactly the segments retained versions name, and lookups still agree. */
static void test_cleanup_keeps_named_segments(void **state)
{
    fixture *f = *state;
    create(f, "id;src>dst;dst>src");
    for (int i = 0; i < 6; i++)
        append(f, i * 100, 100, 0);
    compact(f, 0); /* six segments superseded by one */
    append(f, 600, 80, 0);
    store_list l;
    memset(&l, 0, sizeof l);
    assert_og_ok(store_list_prefix(f->s, ROOT "/" LANCE_KIX_DIR, 0, &l));
    assert_int_equal(l.count, 8);
    store_list_free(&l);
    lance_cleanup_options co = LANCE_CLEANUP_OPTIONS_INIT;
    co.before_version = latest(f);
    co.older_than_ms = -1;
    lance_cleanup_report rep;
    assert_og_ok(lance_cleanup(f->s, ROOT, &co, &rep));
    assert_int_equal(rep.index_files_deleted, 6);
    memset(&l, 0, sizeof l);
    assert_og_ok(store_list_prefix(f->s, ROOT "/" LANCE_KIX_DIR, 0, &l));
    assert_int_equal(l.count, 2);
    store_list_free(&l);
    lance_dataset *ds = open_at(f, 0);
    lance_kix_stats st;
    check_version(f, ds, &st);
    assert_int_equal(st.damaged, 0);
    assert_int_equal(st.fragments_scanned, 0);
    lance_dataset_free(ds);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_segment_roundtrip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lookup_equals_scan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unindexed_table_scans, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_segments_fall_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cleanup_keeps_named_segments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_builder_borrowed_equals_copied, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compaction_builds_missing_indexes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_branch_segments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unusable_segment_rebuilt, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
