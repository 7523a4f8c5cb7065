/* Store access of the Lance 2.0 reader: how many gets and bytes opening and reading a data
 * file costs (small files in one get, large files through a tail window and coalesced
 * projected ranges), that the results equal exact ranged reads and the source rows, and that
 * damaged or failing files still give typed errors. Counts come from the store's counters. */
#include "testutil.h"

#include "core/alloc.h"
#include "lance/dataset.h"
#include "lance/file2.h"
#include "store/store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fixture {
    char dir[256];
    store *s;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->s = test_sandbox_store(f->dir, sizeof f->dir, "file2io");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    test_sandbox_store_done(f->dir, f->s);
    free(f);
    return 0;
}

static const lance_file2_read_options exact_opt = {1, 0, LANCE_FILE2_READ_EXACT, 0, 0, NULL, 0};

/* ---- batches ------------------------------------------------------------------------------- */

static void add_field(arrow_schema *s, const char *name, const arrow_type *t, bool nullable)
{
    arrow_field f;
    assert_og_ok(arrow_field_init(&f, name, t, nullable));
    assert_og_ok(arrow_schema_add(s, &f));
    arrow_field_clear(&f);
}

/* Columns: k int64, name utf8?, flag bool?, x float64?, tags list<int32>?,
 * pt struct{a int32, b utf8?}, then n_extra int64 columns e0.. (all rows derived from i). */
static arrow_batch *make_batch(int64_t rows, int n_extra)
{
    arrow_schema s;
    arrow_schema_init(&s);
    arrow_type t = arrow_type_simple(ARROW_INT64);
    add_field(&s, "k", &t, false);
    t = arrow_type_simple(ARROW_UTF8);
    add_field(&s, "name", &t, true);
    t = arrow_type_simple(ARROW_BOOL);
    add_field(&s, "flag", &t, true);
    t = arrow_type_simple(ARROW_FLOAT64);
    add_field(&s, "x", &t, true);
    arrow_field item;
    arrow_type it = arrow_type_simple(ARROW_INT32);
    assert_og_ok(arrow_field_init(&item, "item", &it, true));
    arrow_type lt;
    assert_og_ok(arrow_type_list(&lt, &item));
    arrow_field_clear(&item);
    add_field(&s, "tags", &lt, true);
    arrow_type_clear(&lt);
    arrow_field kids[2];
    it = arrow_type_simple(ARROW_INT32);
    assert_og_ok(arrow_field_init(&kids[0], "a", &it, false));
    it = arrow_type_simple(ARROW_UTF8);
    assert_og_ok(arrow_field_init(&kids[1], "b", &it, true));
    arrow_type st;
    assert_og_ok(arrow_type_struct(&st, kids, 2));
    arrow_field_clear(&kids[0]);
    arrow_field_clear(&kids[1]);
    add_field(&s, "pt", &st, false);
    arrow_type_clear(&st);
    for (int e = 0; e < n_extra; e++) {
        char nm[16];
        snprintf(nm, sizeof nm, "e%d", e);
        t = arrow_type_simple(ARROW_INT64);
        add_field(&s, nm, &t, false);
    }

    size_t nc = s.n_fields;
    arrow_builder **b = calloc(nc, sizeof *b);
    for (size_t c = 0; c < nc; c++)
        assert_og_ok(arrow_builder_new(&b[c], &s.fields[c].type));
    arrow_builder *tag_items = arrow_builder_child(b[4], 0);
    arrow_builder *pa = arrow_builder_child(b[5], 0), *pb = arrow_builder_child(b[5], 1);
    assert_non_null(tag_items);
    assert_non_null(pa);
    assert_non_null(pb);
    char buf[64];
    for (int64_t i = 0; i < rows; i++) {
        assert_og_ok(arrow_builder_append_int(b[0], i * 3 + 1));
        if (i % 5 == 2) {
            assert_og_ok(arrow_builder_append_null(b[1]));
        } else {
            snprintf(buf, sizeof buf, "node-%" PRId64 "-%s", i, i % 2 ? "odd" : "even");
            assert_og_ok(arrow_builder_append_str(b[1], buf));
        }
        if (i % 7 == 0)
            assert_og_ok(arrow_builder_append_null(b[2]));
        else
            assert_og_ok(arrow_builder_append_bool(b[2], i % 3 == 0));
        if (i % 11 == 4)
            assert_og_ok(arrow_builder_append_null(b[3]));
        else
            assert_og_ok(arrow_builder_append_double(b[3], (double)i * 0.25));
        if (i % 9 == 1) {
            assert_og_ok(arrow_builder_append_null(b[4]));
        } else {
            int64_t n = i % 4;
            for (int64_t j = 0; j < n; j++)
                assert_og_ok(arrow_builder_append_int(tag_items, i + j));
            assert_og_ok(arrow_builder_append_list(b[4], n));
        }
        assert_og_ok(arrow_builder_append_int(pa, (int64_t)(i % 1000)));
        if (i % 6 == 5) {
            assert_og_ok(arrow_builder_append_null(pb));
        } else {
            snprintf(buf, sizeof buf, "b%" PRId64, i % 97);
            assert_og_ok(arrow_builder_append_str(pb, buf));
        }
        assert_og_ok(arrow_builder_append_valid(b[5]));
        for (int e = 0; e < n_extra; e++)
            assert_og_ok(arrow_builder_append_int(b[6 + e], i * (e + 2) - 7));
    }
    arrow_array **cols = calloc(nc, sizeof *cols);
    for (size_t c = 0; c < nc; c++) {
        assert_og_ok(arrow_builder_finish(b[c], &cols[c]));
        arrow_builder_free(b[c]);
    }
    arrow_batch *out;
    assert_og_ok(arrow_batch_new(&out, &s, cols, nc));
    for (size_t c = 0; c < nc; c++)
        arrow_array_free(cols[c]);
    free(cols);
    free(b);
    arrow_schema_clear(&s);
    return out;
}

/* Write b to key with pages of page_bytes; the file's bytes go to *file. */
static void put_file(store *s, const char *key, const arrow_batch *b, size_t page_bytes,
                     core_buf *file, lance_file2_info *info)
{
    lance_file2_options o = LANCE_FILE2_OPTIONS_INIT;
    o.page_bytes = page_bytes;
    lance_file2_writer *w;
    assert_og_ok(lance_file2_writer_new(&w, &b->schema, &o));
    assert_og_ok(lance_file2_writer_write(w, b));
    assert_og_ok(lance_file2_writer_finish_bytes(w, file, info));
    lance_file2_info_clear(info); /* these reads take no block list: only size and xxh3 used */
    lance_file2_writer_free(w);
    assert_og_ok(store_put(s, key, file->data, file->len, 0));
}

/* The reference: the same read with exact ranged gets (the reader's behaviour before reads
 * were coalesced). */
static arrow_batch *read_exact(store *s, const char *key, const size_t *cols, size_t n,
                               uint64_t start, uint64_t count)
{
    lance_file2_reader *r;
    assert_og_ok(lance_file2_open(&r, s, key, 0, &exact_opt));
    arrow_batch *out;
    assert_og_ok(lance_file2_read(r, cols, n, start, count, &out));
    lance_file2_close(r);
    return out;
}

static void counts_since(store *s, const store_counts *a, store_counts *d)
{
    store_counts b;
    store_counts_get(s, &b);
    store_counts_diff(&b, a, d);
}

/* ---- small files --------------------------------------------------------------------------- */

static void test_small_file_one_get(void **state)
{
    fixture *f = *state;
    arrow_batch *b = make_batch(200, 2);
    core_buf file = CORE_BUF_INIT;
    lance_file2_info info;
    put_file(f->s, "small.lance", b, 0, &file, &info);
    assert_true(info.size < LANCE_FILE2_PROBE_BYTES);
    assert_true(info.columns >= 10);
    arrow_batch *ref = read_exact(f->s, "small.lance", NULL, 0, 0, UINT64_MAX);
    assert_true(arrow_batch_equal(ref, b));

    /* size known (DataFile.file_size_bytes): open + full read = 1 get of exactly the file */
    store_counts a, d;
    store_counts_get(f->s, &a);
    lance_file2_reader *r;
    assert_og_ok(lance_file2_open(&r, f->s, "small.lance", info.size, NULL));
    arrow_batch *got;
    assert_og_ok(lance_file2_read(r, NULL, 0, 0, UINT64_MAX, &got));
    counts_since(f->s, &a, &d);
    print_message("small file (%" PRIu64 " bytes, %u columns), size known: %" PRIu64
                  " get, %" PRIu64 " head, %" PRIu64 " bytes\n",
                  info.size, info.columns, d.ops[STORE_OP_GET], d.ops[STORE_OP_HEAD], d.bytes_read);
    assert_int_equal(d.ops[STORE_OP_GET], 1);
    assert_int_equal(d.total_ops, 1);
    assert_int_equal(d.bytes_read, info.size);
    assert_true(arrow_batch_equal(got, ref));
    arrow_batch_free(got);

    /* later reads of the same reader (projection, window) cost nothing */
    size_t cols[2] = {4, 5};
    store_counts_get(f->s, &a);
    assert_og_ok(lance_file2_read(r, cols, 2, 17, 50, &got));
    counts_since(f->s, &a, &d);
    assert_int_equal(d.total_ops, 0);
    arrow_batch *want = read_exact(f->s, "small.lance", cols, 2, 17, 50);
    assert_true(arrow_batch_equal(got, want));
    arrow_batch_free(got);
    arrow_batch_free(want);
    lance_file2_close(r);

    /* size unknown: the probe get is the whole file */
    store_counts_get(f->s, &a);
    assert_og_ok(lance_file2_open(&r, f->s, "small.lance", 0, NULL));
    assert_og_ok(lance_file2_read(r, NULL, 0, 0, UINT64_MAX, &got));
    counts_since(f->s, &a, &d);
    assert_int_equal(d.ops[STORE_OP_GET], 1);
    assert_int_equal(d.total_ops, 1);
    assert_true(arrow_batch_equal(got, ref));
    arrow_batch_free(got);
    lance_file2_close(r);

    /* the exact mode, for comparison: a head, the footer, metadata and page ranges */
    store_counts_get(f->s, &a);
    arrow_batch *again = read_exact(f->s, "small.lance", NULL, 0, 0, UINT64_MAX);
    counts_since(f->s, &a, &d);
    print_message("same file, exact ranged reads: %" PRIu64 " get, %" PRIu64 " head\n",
                  d.ops[STORE_OP_GET], d.ops[STORE_OP_HEAD]);
    assert_true(d.ops[STORE_OP_GET] > 3);
    arrow_batch_free(again);

    arrow_batch_free(ref);
    arrow_batch_free(b);
    core_buf_free(&file);
}

/* Between the probe and the small-file bound with the size unknown: probe, head, the rest. */
static void test_medium_file_unknown_size(void **state)
{
    fixture *f = *state;
    arrow_batch *b = make_batch(6000, 4);
    core_buf file = CORE_BUF_INIT;
    lance_file2_info info;
    put_file(f->s, "medium.lance", b, 64u << 10, &file, &info);
    assert_true(info.size > LANCE_FILE2_PROBE_BYTES);
    assert_true(info.size <= LANCE_FILE2_SMALL_FILE_BYTES);
    arrow_batch *ref = read_exact(f->s, "medium.lance", NULL, 0, 0, UINT64_MAX);
    assert_true(arrow_batch_equal(ref, b));

    store_counts a, d;
    store_counts_get(f->s, &a);
    lance_file2_reader *r;
    assert_og_ok(lance_file2_open(&r, f->s, "medium.lance", 0, NULL));
    arrow_batch *got;
    assert_og_ok(lance_file2_read(r, NULL, 0, 0, UINT64_MAX, &got));
    counts_since(f->s, &a, &d);
    assert_int_equal(d.ops[STORE_OP_GET], 2);
    assert_int_equal(d.ops[STORE_OP_HEAD], 1);
    assert_int_equal(d.bytes_read, info.size);
    assert_true(arrow_batch_equal(got, ref));
    arrow_batch_free(got);
    lance_file2_close(r);

    /* size known: one get */
    store_counts_get(f->s, &a);
    assert_og_ok(lance_file2_open(&r, f->s, "medium.lance", info.size, NULL));
    assert_og_ok(lance_file2_read(r, NULL, 0, 0, UINT64_MAX, &got));
    counts_since(f->s, &a, &d);
    assert_int_equal(d.total_ops, 1);
    assert_true(arrow_batch_equal(got, ref));
    arrow_batch_free(got);
    lance_file2_close(r);
    arrow_batch_free(ref);
    arrow_batch_free(b);
    core_buf_free(&file);
}

/* ---- large files --------------------------------------------------------------------------- */

static void test_large_file_projection(void **state)
{
    fixture *f = *state;
    enum { EXTRA = 8 };
    arrow_batch *b = make_batch(90000, EXTRA);
    core_buf file = CORE_BUF_INIT;
    lance_file2_info info;
    put_file(f->s, "large.lance", b, 128u << 10, &file, &info);
    assert_true(info.size > LANCE_FILE2_SMALL_FILE_BYTES);
    assert_true(info.pages > 2 * info.columns); /* multi-page columns */
    size_t nf = b->schema.n_fields;

    /* open: the tail window holds footer, metadata and global buffer 0 */
    store_counts a, d;
    store_counts_get(f->s, &a);
    lance_file2_reader *r;
    assert_og_ok(lance_file2_open(&r, f->s, "large.lance", info.size, NULL));
    counts_since(f->s, &a, &d);
    print_message("large file (%" PRIu64 " bytes, %u columns, %u pages): open %" PRIu64
                  " get, %" PRIu64 " bytes\n",
                  info.size, info.columns, info.pages, d.ops[STORE_OP_GET], d.bytes_read);
    assert_int_equal(d.total_ops, 1);
    assert_true(d.bytes_read <= LANCE_FILE2_TAIL_BYTES);

    /* one of N columns: one coalesced get, far fewer bytes than the file */
    size_t one = 6 + EXTRA / 2;
    store_counts_get(f->s, &a);
    arrow_batch *got;
    assert_og_ok(lance_file2_read(r, &one, 1, 0, UINT64_MAX, &got));
    counts_since(f->s, &a, &d);
    print_message("  project 1 of %zu fields: %" PRIu64 " get, %" PRIu64 " bytes\n", nf,
                  d.ops[STORE_OP_GET], d.bytes_read);
    assert_int_equal(d.ops[STORE_OP_GET], 1);
    assert_true(d.bytes_read < info.size / (nf / 2));
    arrow_batch *want = read_exact(f->s, "large.lance", &one, 1, 0, UINT64_MAX);
    assert_true(arrow_batch_equal(got, want));
    arrow_batch *src;
    assert_og_ok(arrow_batch_project(&src, b, &one, 1));
    assert_true(arrow_batch_equal(got, src));
    arrow_batch_free(src);
    arrow_batch_free(got);
    arrow_batch_free(want);

    /* nested columns (list items are columns of their own) */
    size_t nested[2] = {4, 5};
    store_counts_get(f->s, &a);
    assert_og_ok(lance_file2_read(r, nested, 2, 0, UINT64_MAX, &got));
    counts_since(f->s, &a, &d);
    print_message("  project list + struct: %" PRIu64 " get, %" PRIu64 " bytes\n",
                  d.ops[STORE_OP_GET], d.bytes_read);
    assert_int_equal(d.ops[STORE_OP_GET], 1);
    assert_true(d.bytes_read < info.size / 2);
    want = read_exact(f->s, "large.lance", nested, 2, 0, UINT64_MAX);
    assert_true(arrow_batch_equal(got, want));
    arrow_batch_free(got);
    arrow_batch_free(want);

    /* a row window: only the pages around it */
    store_counts_get(f->s, &a);
    assert_og_ok(lance_file2_read(r, nested, 2, 45000, 300, &got));
    counts_since(f->s, &a, &d);
    assert_true(d.ops[STORE_OP_GET] >= 1);
    assert_true(d.bytes_read < info.size / 8);
    want = read_exact(f->s, "large.lance", nested, 2, 45000, 300);
    assert_true(arrow_batch_equal(got, want));
    arrow_batch_free(got);
    arrow_batch_free(want);

    /* every column: one get per coalesced run (all columns are contiguous here) */
    store_counts_get(f->s, &a);
    assert_og_ok(lance_file2_read(r, NULL, 0, 0, UINT64_MAX, &got));
    counts_since(f->s, &a, &d);
    print_message("  all fields: %" PRIu64 " get, %" PRIu64 " bytes\n", d.ops[STORE_OP_GET],
                  d.bytes_read);
    assert_int_equal(d.ops[STORE_OP_GET], 1);
    assert_true(d.bytes_read < info.size);
    assert_true(arrow_batch_equal(got, b));
    arrow_batch_free(got);
    lance_file2_close(r);

    /* exact mode: one get per column's run of pages, and the same rows */
    store_counts_get(f->s, &a);
    arrow_batch *ex = read_exact(f->s, "large.lance", NULL, 0, 0, UINT64_MAX);
    counts_since(f->s, &a, &d);
    assert_true(d.ops[STORE_OP_GET] >= info.columns);
    assert_true(arrow_batch_equal(ex, b));
    arrow_batch_free(ex);

    /* a small budget: nothing is prefetched beyond it, the read fails typed */
    lance_file2_read_options tight = LANCE_FILE2_READ_OPTIONS_INIT;
    tight.max_bytes = 4096;
    assert_og_ok(lance_file2_open(&r, f->s, "large.lance", info.size, &tight));
    store_counts_get(f->s, &a);
    assert_og_error(lance_file2_read(r, &one, 1, 0, UINT64_MAX, &got), OG_E_RESOURCE_LIMIT);
    counts_since(f->s, &a, &d);
    assert_int_equal(d.bytes_read, 0);
    lance_file2_close(r);

    arrow_batch_free(b);
    core_buf_free(&file);
}

/* ---- a table scan ----------------------------------------------------------------------- */

static void test_scan_one_fragment(void **state)
{
    fixture *f = *state;
    arrow_batch *b = make_batch(500, 3);
    lance_dataset *ds, *ds2;
    assert_og_ok(lance_dataset_create(&ds, f->s, "t.lance", &b->schema, NULL));
    assert_og_ok(lance_dataset_append(&ds2, ds, &b, 1));
    lance_dataset_free(ds);
    lance_dataset_free(ds2);
    assert_og_ok(lance_dataset_open(&ds, f->s, "t.lance", 0, LANCE_ACCESS_READ));
    const Lance__Table__DataFile *df = ds->m->pb->fragments[0]->files[0];
    assert_int_equal(ds->m->pb->n_fragments, 1);
    assert_true(df->has_file_size_bytes); /* our writer records it */

    store_counts a, d;
    store_counts_get(f->s, &a);
    arrow_batch *got;
    assert_og_ok(lance_dataset_scan_all(&got, ds, NULL));
    counts_since(f->s, &a, &d);
    print_message("1-fragment scan: %" PRIu64 " ops (%" PRIu64 " get, %" PRIu64 " bytes; data "
                  "file %" PRIu64 " bytes)\n",
                  d.total_ops, d.ops[STORE_OP_GET], d.bytes_read, df->file_size_bytes);
    assert_int_equal(d.total_ops, 1);
    assert_int_equal(d.bytes_read, df->file_size_bytes);
    assert_true(arrow_batch_equal(got, b));
    arrow_batch_free(got);

    /* a projected scan of the same small file: still the one get */
    const char *cols[2] = {"pt", "e1"};
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.columns = cols;
    so.n_columns = 2;
    store_counts_get(f->s, &a);
    assert_og_ok(lance_dataset_scan_all(&got, ds, &so));
    counts_since(f->s, &a, &d);
    assert_int_equal(d.total_ops, 1);
    size_t idx[2] = {5, 7};
    arrow_batch *want;
    assert_og_ok(arrow_batch_project(&want, b, idx, 2));
    assert_true(arrow_batch_equal(got, want));
    arrow_batch_free(want);
    arrow_batch_free(got);
    lance_dataset_free(ds);
    arrow_batch_free(b);
}

/* ---- damage and faults --------------------------------------------------------------------- */

static void test_damaged_files(void **state)
{
    fixture *f = *state;
    arrow_batch *b = make_batch(300, 1);
    core_buf file = CORE_BUF_INIT;
    lance_file2_info info;
    put_file(f->s, "d.lance", b, 0, &file, &info);
    lance_file2_reader *r = NULL;
    /* recorded size larger or smaller than the object */
    assert_og_error(lance_file2_open(&r, f->s, "d.lance", info.size + 100, NULL), OG_E_CORRUPT);
    assert_og_error(lance_file2_open(&r, f->s, "d.lance", info.size - 1, NULL), OG_E_CORRUPT);
    /* truncated objects, size known or not */
    assert_og_ok(store_put(f->s, "t.lance", file.data, file.len - 7, 0));
    assert_og_error(lance_file2_open(&r, f->s, "t.lance", info.size, NULL), OG_E_CORRUPT);
    assert_og_error(lance_file2_open(&r, f->s, "t.lance", 0, NULL), OG_E_CORRUPT);
    assert_og_ok(store_put(f->s, "e.lance", "", 0, 0));
    assert_og_error(lance_file2_open(&r, f->s, "e.lance", 0, NULL), OG_E_CORRUPT);
    assert_og_error(lance_file2_open(&r, f->s, "e.lance", info.size, NULL), OG_E_CORRUPT);
    assert_og_error(lance_file2_open(&r, f->s, "missing.lance", 0, NULL), OG_E_NOT_FOUND);
    assert_og_error(lance_file2_open(&r, f->s, "missing.lance", 50, NULL), OG_E_NOT_FOUND);
    assert_null(r);
    core_buf_free(&file);

    /* a large file shorter than recorded: the tail get finds it */
    arrow_batch *big = make_batch(90000, 8);
    put_file(f->s, "big.lance", big, 0, &file, &info);
    assert_true(info.size > LANCE_FILE2_SMALL_FILE_BYTES);
    assert_og_ok(store_put(f->s, "bigt.lance", file.data, file.len - 100000, 0));
    assert_og_error(lance_file2_open(&r, f->s, "bigt.lance", info.size, NULL), OG_E_CORRUPT);
    /* the tail intact but the middle gone: the recorded size or the footer gives it away */
    core_buf cut = CORE_BUF_INIT;
    assert_og_ok(core_buf_append(&cut, file.data, 64));
    assert_og_ok(core_buf_append(&cut, file.data + file.len - (200u << 10), 200u << 10));
    assert_og_ok(store_put(f->s, "bigc.lance", cut.data, cut.len, 0));
    assert_og_error(lance_file2_open(&r, f->s, "bigc.lance", info.size, NULL), OG_E_CORRUPT);
    assert_og_error(lance_file2_open(&r, f->s, "bigc.lance", cut.len, NULL), OG_E_CORRUPT);
    assert_og_error(lance_file2_open(&r, f->s, "bigc.lance", 0, NULL), OG_E_CORRUPT);
    assert_null(r);
    core_buf_free(&cut);
    core_buf_free(&file);
    arrow_batch_free(big);
    arrow_batch_free(b);
}

/* Every get (and head) of an open and a read fails in turn: a storage error, nothing leaks,
 * or the read ran past the failing op and returns the right rows. */
static void fault_loop(store *fs, const char *key, uint64_t size, const arrow_batch *want,
                       uint64_t *ops_used)
{
    *ops_used = 0;
    for (uint64_t k = 1; k <= 12; k++) {
        store_fault_fail_nth(fs, k, STORE_OP_BIT(STORE_OP_GET) | STORE_OP_BIT(STORE_OP_HEAD),
                             STORE_FAULT_EIO);
        lance_file2_reader *r = NULL;
        arrow_batch *got = NULL;
        int rc = lance_file2_open(&r, fs, key, size, NULL);
        if (rc == 0) rc = lance_file2_read(r, NULL, 0, 0, UINT64_MAX, &got);
        store_fault_fail_nth(fs, 0, 0, STORE_FAULT_NONE);
        if (rc == 0) {
            assert_true(arrow_batch_equal(got, want));
            if (!*ops_used) *ops_used = k - 1;
        } else {
            assert_og_error(rc, OG_E_STORAGE);
            assert_int_equal(*ops_used, 0); /* no failure after the first success */
        }
        arrow_batch_free(got);
        lance_file2_close(r);
    }
}

static void test_store_faults(void **state)
{
    fixture *f = *state;
    store *fs;
    assert_og_ok(store_fault_open(&fs, f->s, 0));
    arrow_batch *b = make_batch(400, 2);
    core_buf file = CORE_BUF_INIT;
    lance_file2_info info;
    put_file(fs, "f.lance", b, 0, &file, &info);
    uint64_t used;
    fault_loop(fs, "f.lance", info.size, b, &used);
    assert_int_equal(used, 1);
    fault_loop(fs, "f.lance", 0, b, &used);
    assert_int_equal(used, 1);
    core_buf_free(&file);
    arrow_batch_free(b);

    b = make_batch(90000, 8);
    put_file(fs, "g.lance", b, 256u << 10, &file, &info);
    fault_loop(fs, "g.lance", info.size, b, &used);
    assert_int_equal(used, 2); /* tail, one coalesced run */
    fault_loop(fs, "g.lance", 0, b, &used);
    assert_int_equal(used, 4); /* probe, head, tail, run */
    core_buf_free(&file);
    arrow_batch_free(b);
    store_close(fs);
}

/* The n-th allocation of an open + read fails, for every n until one succeeds: a clean
 * out-of-memory error (ASan checks nothing leaks), then the right rows. */
static uint64_t alloc_loop(store *s, const char *key, uint64_t size, const size_t *cols, size_t n,
                           const arrow_batch *want)
{
    for (uint64_t k = 1;; k++) {
        assert_true(k < 100000);
        core_alloc_fail_at(k, 0);
        lance_file2_reader *r = NULL;
        arrow_batch *got = NULL;
        int rc = lance_file2_open(&r, s, key, size, NULL);
        if (rc == 0) rc = lance_file2_read(r, cols, n, 0, UINT64_MAX, &got);
        uint64_t injected = core_alloc_injected();
        core_alloc_fail_at(0, 0);
        lance_file2_close(r);
        if (rc == 0 && injected == 0) {
            assert_true(arrow_batch_equal(got, want));
            arrow_batch_free(got);
            return k - 1;
        }
        assert_int_not_equal(rc, 0);
        assert_og_error(rc, OG_E_NOMEM);
        arrow_batch_free(got);
    }
}

static void test_alloc_failures(void **state)
{
    fixture *f = *state;
    arrow_batch *b = make_batch(60, 1);
    core_buf file = CORE_BUF_INIT;
    lance_file2_info info;
    put_file(f->s, "a.lance", b, 0, &file, &info);
    assert_true(alloc_loop(f->s, "a.lance", info.size, NULL, 0, b) > 20);
    assert_true(alloc_loop(f->s, "a.lance", 0, NULL, 0, b) > 20);
    core_buf_free(&file);
    arrow_batch_free(b);

    b = make_batch(90000, 8);
    put_file(f->s, "big.lance", b, 256u << 10, &file, &info);
    size_t one = 8;
    arrow_batch *want;
    assert_og_ok(arrow_batch_project(&want, b, &one, 1));
    assert_true(alloc_loop(f->s, "big.lance", info.size, &one, 1, want) > 20);
    arrow_batch_free(want);
    core_buf_free(&file);
    arrow_batch_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_small_file_one_get, setup, teardown),
        cmocka_unit_test_setup_teardown(test_medium_file_unknown_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_file_projection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scan_one_fragment, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_store_faults, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alloc_failures, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
