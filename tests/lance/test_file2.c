/* Lance data file format 2.0: round trips of every type with nulls, multi-page columns,
 * projection that fetches only the projected columns' bytes (counted by the store), row
 * ranges, the Arrow <-> Lance field mapping, dictionary-encoded strings, files written by an
 * independent writer (lance-probe mini_writer.py) and decoded by lfile.py, and damaged input
 * (truncation, wrong magic, offsets beyond the file, overflowing lengths, mutations). */
#include "testutil.h"

#include "../arrow/arrow_fixture.h"
#include "core/alloc.h"
#include "lance/file2.h"
#include "lance/proto/encodings.pb-c.h"
#include "lance/proto/file2.pb-c.h"
#include "store/store.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The lance-probe scripts, when OG_LANCE_PROBE_DIR names their folder (tests/CMakeLists.txt);
 * the cross-checks with them are skipped otherwise. */
static const char *probe_dir(void);
static int access_probe(const char *name);
static const char *probe_dir(void)
{
    const char *d = getenv("OG_LANCE_PROBE_DIR");
    return d && *d ? d : NULL;
}
#define PROBE_DIR probe_dir()
static int access_probe(const char *name)
{
    if (!PROBE_DIR) return 0;
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", PROBE_DIR, name);
    return access(p, R_OK) == 0;
}

typedef struct fixture {
    char dir[256];
    store *s;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->s = test_sandbox_store(f->dir, sizeof f->dir, "file2");
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

static void write_bytes(const arrow_batch *const *bs, size_t n, size_t page_bytes, core_buf *out,
                        lance_file2_info *info)
{
    lance_file2_options o = LANCE_FILE2_OPTIONS_INIT;
    o.page_bytes = page_bytes;
    lance_file2_writer *w;
    assert_og_ok(lance_file2_writer_new(&w, &bs[0]->schema, &o));
    for (size_t i = 0; i < n; i++)
        assert_og_ok(lance_file2_writer_write(w, bs[i]));
    assert_og_ok(lance_file2_writer_finish_bytes(w, out, info));
    lance_file2_writer_free(w);
}

static arrow_batch *read_all(const core_buf *b)
{
    lance_file2_reader *r;
    assert_og_ok(lance_file2_open_bytes(&r, b->data, b->len, "mem.lance", NULL));
    arrow_batch *out;
    assert_og_ok(lance_file2_read(r, NULL, 0, 0, UINT64_MAX, &out));
    lance_file2_close(r);
    return out;
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* ---- round trips -------------------------------------------------------------------------- */

static void test_roundtrip_all_types(void **state)
{
    fixture *f = *state;
    arrow_batch *b;
    assert_og_ok(fx_batch(&b, 0, 300));
    lance_file2_writer *w;
    assert_og_ok(lance_file2_writer_new(&w, &b->schema, NULL));
    assert_og_ok(lance_file2_writer_write(w, b));
    lance_file2_info info;
    assert_og_ok(lance_file2_writer_finish(w, f->s, "data/x.lance", &info));
    lance_file2_writer_free(w);
    assert_int_equal(info.rows, 300);
    /* 18 top-level fields; lst, lst_s add an item field each, st adds two children */
    assert_int_equal(info.columns, 22);
    /* footer: version 0.3 and magic; page buffers aligned (checked while decoding below) */
    core_buf raw = CORE_BUF_INIT;
    assert_og_ok(store_get(f->s, "data/x.lance", 0, STORE_ALL, &raw));
    assert_int_equal(raw.len, info.size);
    assert_memory_equal(raw.data + raw.len - 4, "LANC", 4);
    assert_int_equal(raw.data[raw.len - 8], 0);
    assert_int_equal(raw.data[raw.len - 6], 3);

    lance_file2_reader *r;
    assert_og_ok(lance_file2_open(&r, f->s, "data/x.lance", 0, NULL));
    assert_int_equal(lance_file2_num_rows(r), 300);
    assert_true(arrow_schema_equal(lance_file2_schema(r), &b->schema));
    size_t nid;
    const int32_t *ids = lance_file2_field_ids(r, &nid);
    assert_int_equal(nid, 22);
    for (size_t i = 0; i < nid; i++)
        assert_int_equal(ids[i], (int32_t)i);
    arrow_batch *got;
    assert_og_ok(lance_file2_read(r, NULL, 0, 0, UINT64_MAX, &got));
    assert_true(arrow_batch_equal(got, b));
    arrow_batch_free(got);
    /* row range [17, 17+50) equals take of the same rows */
    assert_og_ok(lance_file2_read(r, NULL, 0, 17, 50, &got));
    int64_t idx[50];
    for (int i = 0; i < 50; i++)
        idx[i] = 17 + i;
    arrow_batch *want;
    assert_og_ok(arrow_batch_take(&want, b, idx, 50));
    assert_true(arrow_batch_equal(got, want));
    arrow_batch_free(got);
    arrow_batch_free(want);
    assert_og_error(lance_file2_read(r, NULL, 0, 301, 1, &got), OG_E_BAD_REQUEST);
    size_t bad = 99;
    assert_og_error(lance_file2_read(r, &bad, 1, 0, UINT64_MAX, &got), OG_E_BAD_REQUEST);
    lance_file2_close(r);
    core_buf_free(&raw);
    arrow_batch_free(b);
}

static void test_field_ids_option(void **state)
{
    (void)state;
    arrow_batch *b;
    assert_og_ok(fx_batch(&b, 0, 10));
    int32_t ids[22];
    for (int i = 0; i < 22; i++)
        ids[i] = 1000 - 3 * i;
    lance_file2_options o = LANCE_FILE2_OPTIONS_INIT;
    o.field_ids = ids;
    o.n_field_ids = 22;
    lance_file2_writer *w;
    assert_og_ok(lance_file2_writer_new(&w, &b->schema, &o));
    assert_og_ok(lance_file2_writer_write(w, b));
    core_buf out = CORE_BUF_INIT;
    assert_og_ok(lance_file2_writer_finish_bytes(w, &out, NULL));
    assert_og_error(lance_file2_writer_write(w, b), OG_E_BAD_REQUEST); /* spent */
    lance_file2_writer_free(w);
    lance_file2_reader *r;
    assert_og_ok(lance_file2_open_bytes(&r, out.data, out.len, "ids.lance", NULL));
    size_t n;
    const int32_t *got = lance_file2_field_ids(r, &n);
    assert_int_equal(n, 22);
    assert_memory_equal(got, ids, sizeof ids);
    lance_file2_close(r);
    o.n_field_ids = 21;
    assert_og_error(lance_file2_writer_new(&w, &b->schema, &o), OG_E_BAD_REQUEST);
    o.n_field_ids = 22;
    ids[5] = ids[9];
    assert_og_error(lance_file2_writer_new(&w, &b->schema, &o), OG_E_BAD_REQUEST);
    ids[5] = -1;
    assert_og_error(lance_file2_writer_new(&w, &b->schema, &o), OG_E_BAD_REQUEST);
    /* a batch of another schema is refused */
    assert_og_ok(lance_file2_writer_new(&w, &b->schema, NULL));
    size_t two[2] = {0, 1};
    arrow_batch *p2;
    assert_og_ok(arrow_batch_project(&p2, b, two, 2));
    assert_og_error(lance_file2_writer_write(w, p2), OG_E_BAD_REQUEST);
    arrow_batch_free(p2);
    lance_file2_writer_free(w);
    core_buf_free(&out);
    arrow_batch_free(b);
}

static void test_empty_and_tiny(void **state)
{
    (void)state;
    for (int64_t rows = 0; rows <= 9; rows++) {
        arrow_batch *b;
        assert_og_ok(fx_batch(&b, 100, rows));
        core_buf out = CORE_BUF_INIT;
        lance_file2_info info;
        const arrow_batch *bs[1] = {b};
        write_bytes(bs, 1, 0, &out, &info);
        arrow_batch *got = read_all(&out);
        assert_true(arrow_batch_equal(got, b));
        arrow_batch_free(got);
        arrow_batch_free(b);
        core_buf_free(&out);
    }
}

static void test_large_and_other_types(void **state)
{
    (void)state;
    /* large utf8/binary, second/nanosecond timestamps, list<float64>, fsl<int64, 2> */
    arrow_schema s;
    arrow_schema_init(&s);
    arrow_field f = fx_field("ls", arrow_type_simple(ARROW_LARGE_UTF8), true);
    assert_og_ok(arrow_schema_add(&s, &f));
    f = fx_field("lb", arrow_type_simple(ARROW_LARGE_BINARY), false);
    assert_og_ok(arrow_schema_add(&s, &f));
    arrow_type t;
    assert_og_ok(arrow_type_timestamp(&t, ARROW_UNIT_SECOND, "Europe/Paris"));
    f = fx_field("ts_s", t, true);
    assert_og_ok(arrow_schema_add(&s, &f));
    arrow_type_clear(&t);
    assert_og_ok(arrow_type_timestamp(&t, ARROW_UNIT_NANO, NULL));
    f = fx_field("ts_ns", t, true);
    assert_og_ok(arrow_schema_add(&s, &f));
    arrow_type_clear(&t);
    arrow_field item = fx_field("item", arrow_type_simple(ARROW_FLOAT64), true);
    assert_og_ok(arrow_type_list(&t, &item));
    f = fx_field("ld", t, true);
    assert_og_ok(arrow_schema_add(&s, &f));
    arrow_type_clear(&t);
    item = fx_field("item", arrow_type_simple(ARROW_INT64), true);
    assert_og_ok(arrow_type_fixed_size_list(&t, &item, 2));
    f = fx_field("v2", t, false);
    assert_og_ok(arrow_schema_add(&s, &f));
    arrow_type_clear(&t);
    arrow_builder *b[6];
    arrow_array *a[6];
    for (int k = 0; k < 6; k++)
        assert_og_ok(arrow_builder_new(&b[k], &s.fields[k].type));
    char buf[64];
    for (int i = 0; i < 257; i++) {
        snprintf(buf, sizeof buf, "large-%d", i * 31);
        assert_og_ok(i % 4 == 1 ? arrow_builder_append_null(b[0])
                                : arrow_builder_append_str(b[0], buf));
        assert_og_ok(arrow_builder_append_bytes(b[1], buf, (size_t)(i % 7)));
        assert_og_ok(i % 5 == 0 ? arrow_builder_append_null(b[2])
                                : arrow_builder_append_int(b[2], 1700000000 + i));
        assert_og_ok(arrow_builder_append_int(b[3], (int64_t)1700000000123456789 + i));
        if (i % 6 == 2) {
            assert_og_ok(arrow_builder_append_null(b[4]));
        } else {
            for (int k = 0; k < i % 4; k++)
                assert_og_ok(
                    arrow_builder_append_double(arrow_builder_child(b[4], 0), i / 8.0 + k));
            assert_og_ok(arrow_builder_append_list(b[4], i % 4));
        }
        assert_og_ok(arrow_builder_append_int(arrow_builder_child(b[5], 0), -i));
        assert_og_ok(arrow_builder_append_int(arrow_builder_child(b[5], 0), INT64_MAX - i));
        assert_og_ok(arrow_builder_append_valid(b[5]));
    }
    for (int k = 0; k < 6; k++) {
        assert_og_ok(arrow_builder_finish(b[k], &a[k]));
        arrow_builder_free(b[k]);
    }
    arrow_batch *bt;
    assert_og_ok(arrow_batch_new(&bt, &s, a, 6));
    core_buf out = CORE_BUF_INIT;
    lance_file2_info info;
    const arrow_batch *bs[1] = {bt};
    write_bytes(bs, 1, 200, &out, &info);
    arrow_batch *got = read_all(&out);
    assert_true(arrow_batch_equal(got, bt));
    Lance__File__Field **lf;
    size_t n;
    assert_og_ok(lance_fields_from_arrow(&lf, &n, &s, NULL, 0));
    assert_string_equal(lf[0]->logical_type, "large_string");
    assert_string_equal(lf[1]->logical_type, "large_binary");
    assert_string_equal(lf[2]->logical_type, "timestamp:s:Europe/Paris");
    assert_string_equal(lf[3]->logical_type, "timestamp:ns:-");
    assert_string_equal(lf[6]->logical_type, "fixed_size_list:int64:2");
    lance_fields_free(lf, n);
    arrow_batch_free(got);
    arrow_batch_free(bt);
    for (int k = 0; k < 6; k++)
        arrow_array_free(a[k]);
    arrow_schema_clear(&s);
    core_buf_free(&out);
}

/* Many small writes are gathered: one page per column while their rows fit a page (a page
 * per write made merged files carry a page per source fragment), and the content is the same. */
static void test_small_writes_gathered(void **state)
{
    (void)state;
    enum { N = 40 };
    arrow_batch *b[N], *all;
    for (int i = 0; i < N; i++)
        assert_og_ok(fx_batch(&b[i], i, 1));
    assert_og_ok(fx_batch(&all, 0, N));
    core_buf out = CORE_BUF_INIT;
    lance_file2_info info;
    write_bytes((const arrow_batch *const *)b, N, 0, &out, &info);
    assert_int_equal(info.rows, N);
    assert_int_equal(info.pages, info.columns);
    arrow_batch *got = read_all(&out);
    assert_true(arrow_batch_equal(got, all));
    arrow_batch_free(got);
    /* with a small page bound, the gathered rows are cut into pages as one write would be */
    core_buf out2 = CORE_BUF_INIT;
    lance_file2_info info2;
    write_bytes((const arrow_batch *const *)b, N, 256, &out2, &info2);
    assert_true(info2.pages > info.columns && info2.pages < (uint32_t)N * info.columns);
    got = read_all(&out2);
    assert_true(arrow_batch_equal(got, all));
    arrow_batch_free(got);
    for (int i = 0; i < N; i++)
        arrow_batch_free(b[i]);
    arrow_batch_free(all);
    core_buf_free(&out);
    core_buf_free(&out2);
}

static void test_multi_page(void **state)
{
    (void)state;
    arrow_batch *b[3], *all;
    assert_og_ok(fx_batch(&b[0], 0, 500));
    assert_og_ok(fx_batch(&b[1], 500, 1300));
    assert_og_ok(fx_batch(&b[2], 1800, 1));
    assert_og_ok(fx_batch(&all, 0, 1801));
    core_buf out = CORE_BUF_INIT;
    lance_file2_info info;
    write_bytes((const arrow_batch *const *)b, 3, 256, &out, &info);
    assert_int_equal(info.rows, 1801);
    assert_true(info.pages > 22 * 6);
    /* every page buffer starts on a 64-byte boundary, and no page exceeds the bound by much */
    const uint8_t *e = out.data + out.len - 40;
    uint64_t cmo = le64(e + 8);
    uint32_t ncol = (uint32_t)(e[28] | e[29] << 8);
    size_t max_pages = 0;
    for (uint32_t c = 0; c < ncol; c++) {
        uint64_t pos = le64(out.data + cmo + 16 * c), len = le64(out.data + cmo + 16 * c + 8);
        Lance__File__V2__ColumnMetadata *cm =
            lance__file__v2__column_metadata__unpack(NULL, (size_t)len, out.data + pos);
        assert_non_null(cm);
        assert_non_null(cm->encoding);
        if (cm->n_pages > max_pages) max_pages = cm->n_pages;
        for (size_t p = 0; p < cm->n_pages; p++)
            for (size_t k = 0; k < cm->pages[p]->n_buffer_offsets; k++) {
                assert_int_equal(cm->pages[p]->buffer_offsets[k] % 64, 0);
                assert_true(cm->pages[p]->buffer_sizes[k] <= 256 + 64);
            }
        lance__file__v2__column_metadata__free_unpacked(cm, NULL);
    }
    assert_true(max_pages >= 20);
    arrow_batch *got = read_all(&out);
    assert_true(arrow_batch_equal(got, all));
    arrow_batch_free(got);
    /* row windows that start, end and cross page boundaries equal a take of the same rows */
    lance_file2_reader *r;
    assert_og_ok(lance_file2_open_bytes(&r, out.data, out.len, "mp.lance", NULL));
    uint64_t x = 12345;
    for (int k = 0; k < 60; k++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t lo = (x >> 33) % 1802, cnt = (x >> 13) % (k < 30 ? 40 : 700);
        if (k == 0) lo = 0, cnt = 1801;
        if (k == 1) lo = 1800, cnt = 5;
        if (k == 2) lo = 1801, cnt = 0;
        arrow_batch *win;
        assert_og_ok(lance_file2_read(r, NULL, 0, lo, cnt, &win));
        uint64_t n = lo + cnt > 1801 ? 1801 - lo : cnt;
        assert_int_equal(win->num_rows, n);
        int64_t *idx = malloc((n + 1) * sizeof *idx);
        for (uint64_t i = 0; i < n; i++)
            idx[i] = (int64_t)(lo + i);
        arrow_batch *want;
        assert_og_ok(arrow_batch_take(&want, all, idx, n));
        if (!arrow_batch_equal(win, want))
            fail_msg("window [%llu, +%llu) differs", (unsigned long long)lo, (unsigned long long)n);
        arrow_batch_free(want);
        arrow_batch_free(win);
        free(idx);
    }
    lance_file2_close(r);
    for (int i = 0; i < 3; i++)
        arrow_batch_free(b[i]);
    arrow_batch_free(all);
    core_buf_free(&out);
}

/* Bytes a projected read of column c must fetch: its page buffers, coalesced over alignment
 * padding (computed here from the metadata, independently of the reader). */
static uint64_t column_bytes(const core_buf *file, uint32_t c, uint64_t *segments)
{
    const uint8_t *e = file->data + file->len - 40;
    uint64_t cmo = le64(e + 8);
    uint64_t pos = le64(file->data + cmo + 16 * c), len = le64(file->data + cmo + 16 * c + 8);
    Lance__File__V2__ColumnMetadata *cm =
        lance__file__v2__column_metadata__unpack(NULL, (size_t)len, file->data + pos);
    assert_non_null(cm);
    uint64_t total = 0, last_end = 0;
    *segments = 0;
    for (size_t p = 0; p < cm->n_pages; p++)
        for (size_t k = 0; k < cm->pages[p]->n_buffer_offsets; k++) {
            uint64_t o = cm->pages[p]->buffer_offsets[k], s = cm->pages[p]->buffer_sizes[k];
            if (*segments && o < last_end + 64) {
                total += o + s - last_end;
            } else {
                total += s;
                (*segments)++;
            }
            last_end = o + s;
        }
    lance__file__v2__column_metadata__free_unpacked(cm, NULL);
    return total;
}

static void test_projection_reads_only_projected_bytes(void **state)
{
    fixture *f = *state;
    arrow_batch *b;
    assert_og_ok(fx_batch(&b, 0, 5000));
    core_buf file = CORE_BUF_INIT;
    lance_file2_info info;
    const arrow_batch *bs[1] = {b};
    write_bytes(bs, 1, 4096, &file, &info);
    assert_og_ok(store_put(f->s, "p.lance", file.data, file.len, 0));
    const uint8_t *e = file.data + file.len - 40;
    uint64_t gb0 = le64(file.data + le64(e + 16));

    store_counts c0, c1, c2, d;
    store_counts_get(f->s, &c0);
    lance_file2_reader *r;
    /* exact ranged reads (the default coalesces; tests/lance/test_file2_io.c covers that) */
    lance_file2_read_options exact = {1, 0, LANCE_FILE2_READ_EXACT, 0, 0, NULL, 0};
    assert_og_ok(lance_file2_open(&r, f->s, "p.lance", info.size, &exact));
    store_counts_get(f->s, &c1);
    store_counts_diff(&c1, &c0, &d);
    /* open: the footer, the metadata tables, global buffer 0: no page bytes */
    assert_int_equal(d.ops[STORE_OP_GET], 3);
    assert_int_equal(d.ops[STORE_OP_HEAD], 0);
    assert_int_equal(d.bytes_read, info.size - gb0);

    /* project top-level field 7 ("s", column 7) and field 14 ("lst": columns 14 and 15) */
    size_t cols[2] = {7, 14};
    arrow_batch *got;
    assert_og_ok(lance_file2_read(r, cols, 2, 0, UINT64_MAX, &got));
    store_counts_get(f->s, &c2);
    store_counts_diff(&c2, &c1, &d);
    uint64_t s7, s14, s15;
    uint64_t s7_bytes = column_bytes(&file, 7, &s7);
    uint64_t want = s7_bytes + column_bytes(&file, 14, &s14) + column_bytes(&file, 15, &s15);
    assert_int_equal(d.bytes_read, want);
    assert_int_equal(d.ops[STORE_OP_GET], s7 + s14 + s15);
    assert_true(want < (info.size - (info.size - gb0)) / 3);
    size_t idx[2] = {7, 14};
    arrow_batch *exp;
    assert_og_ok(arrow_batch_project(&exp, b, idx, 2));
    assert_true(arrow_batch_equal(got, exp));
    arrow_batch_free(got);
    arrow_batch_free(exp);

    /* a scan of all columns reads every page byte once */
    assert_og_ok(lance_file2_read(r, NULL, 0, 0, UINT64_MAX, &got));
    store_counts c3;
    store_counts_get(f->s, &c3);
    store_counts_diff(&c3, &c2, &d);
    uint64_t all = 0, segs;
    for (uint32_t c = 0; c < info.columns; c++)
        all += column_bytes(&file, c, &segs);
    assert_int_equal(d.bytes_read, all);
    arrow_batch_free(got);

    /* a row window fetches only the pages it overlaps */
    size_t scol = 7;
    store_counts_get(f->s, &c2);
    assert_og_ok(lance_file2_read(r, &scol, 1, 2500, 10, &got));
    store_counts_get(f->s, &c3);
    store_counts_diff(&c3, &c2, &d);
    assert_true(d.bytes_read > 0);
    assert_true(d.bytes_read * 4 < s7_bytes);
    int64_t widx[10];
    for (int i = 0; i < 10; i++)
        widx[i] = 2500 + i;
    arrow_array *wexp;
    assert_og_ok(arrow_take(&wexp, b->columns[7], widx, 10));
    assert_true(arrow_array_equal(got->columns[0], wexp));
    arrow_array_free(wexp);
    arrow_batch_free(got);
    lance_file2_close(r);
    core_buf_free(&file);
    arrow_batch_free(b);
}

static void test_store_faults(void **state)
{
    fixture *f = *state;
    store *fs;
    assert_og_ok(store_fault_open(&fs, f->s, 0));
    arrow_batch *b;
    assert_og_ok(fx_batch(&b, 0, 100));
    lance_file2_writer *w;
    assert_og_ok(lance_file2_writer_new(&w, &b->schema, NULL));
    assert_og_ok(lance_file2_writer_write(w, b));
    store_fault_fail_nth(fs, 1, STORE_OP_BIT(STORE_OP_PUT), STORE_FAULT_EIO);
    assert_og_error(lance_file2_writer_finish(w, fs, "f.lance", NULL), OG_E_STORAGE);
    lance_file2_writer_free(w);
    assert_og_ok(lance_file2_writer_new(&w, &b->schema, NULL));
    assert_og_ok(lance_file2_writer_write(w, b));
    assert_og_ok(lance_file2_writer_finish(w, fs, "f.lance", NULL));
    lance_file2_writer_free(w);
    /* every get of open and of a read fails in turn: a storage error, nothing leaks */
    for (uint64_t k = 1; k <= 40; k++) {
        store_fault_fail_nth(fs, k, STORE_OP_BIT(STORE_OP_GET) | STORE_OP_BIT(STORE_OP_HEAD),
                             STORE_FAULT_EIO);
        lance_file2_reader *r = NULL;
        arrow_batch *got = NULL;
        lance_file2_read_options exact = {1,    0, LANCE_FILE2_READ_EXACT, 0, 0,
                                          NULL, 0}; /* many gets */
        int rc = lance_file2_open(&r, fs, "f.lance", 0, &exact);
        if (rc == 0) rc = lance_file2_read(r, NULL, 0, 0, UINT64_MAX, &got);
        store_fault_fail_nth(fs, 0, 0, STORE_FAULT_NONE);
        if (rc == 0) {
            assert_true(arrow_batch_equal(got, b));
            assert_true(k > 20); /* ran out of gets to fail */
        } else {
            assert_og_error(rc, OG_E_STORAGE);
        }
        arrow_batch_free(got);
        lance_file2_close(r);
    }
    /* a recorded size larger or smaller than the object */
    store_meta m;
    assert_og_ok(store_head(fs, "f.lance", &m));
    lance_file2_reader *r0;
    assert_og_error(lance_file2_open(&r0, fs, "f.lance", m.size + 100, NULL), OG_E_CORRUPT);
    assert_og_error(lance_file2_open(&r0, fs, "f.lance", m.size - 1, NULL), OG_E_CORRUPT);
    /* the file vanished between listing and reading */
    lance_file2_reader *r;
    assert_og_error(lance_file2_open(&r, fs, "missing.lance", 0, NULL), OG_E_NOT_FOUND);
    arrow_batch_free(b);
    store_close(fs);
}

static void test_field_mapping(void **state)
{
    (void)state;
    arrow_schema s;
    fx_schema(&s);
    Lance__File__Field **lf;
    size_t n;
    int32_t ids[22];
    for (int i = 0; i < 22; i++)
        ids[i] = 100 + i * 2;
    assert_og_ok(lance_fields_from_arrow(&lf, &n, &s, ids, 22));
    assert_int_equal(n, 22);
    static const char *const want[] = {"int64",
                                       "bool",
                                       "int32",
                                       "uint32",
                                       "uint64",
                                       "float",
                                       "double",
                                       "string",
                                       "binary",
                                       "date32:day",
                                       "date64:ms",
                                       "timestamp:ms:-",
                                       "timestamp:us:UTC",
                                       "fixed_size_list:float:4",
                                       "list",
                                       "int32",
                                       "list",
                                       "string",
                                       "struct",
                                       "int64",
                                       "string",
                                       "int64"};
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(lf[i]->logical_type, want[i]);
        assert_int_equal(lf[i]->id, ids[i]);
    }
    assert_int_equal(lf[0]->parent_id, -1);
    assert_int_equal(lf[15]->parent_id, ids[14]);
    assert_string_equal(lf[15]->name, "item");
    assert_int_equal(lf[19]->parent_id, ids[18]);
    assert_int_equal(lf[20]->parent_id, ids[18]);
    assert_int_equal(lf[21]->parent_id, -1);
    assert_false(lf[0]->nullable);
    assert_true(lf[1]->nullable);
    arrow_schema back;
    int32_t got_ids[22];
    assert_og_ok(lance_arrow_from_fields(&back, lf, n, got_ids, "t"));
    assert_true(arrow_schema_equal(&back, &s));
    assert_memory_equal(got_ids, ids, sizeof ids);
    arrow_schema_clear(&back);
    Lance__File__Field **lf2;
    size_t n2;
    assert_og_error(lance_fields_from_arrow(&lf2, &n2, &s, ids, 3), OG_E_BAD_REQUEST);
    /* malformed trees and unknown types */
    Lance__File__Field **bad = lf;
    int32_t saved = bad[15]->parent_id;
    bad[15]->parent_id = 12345;
    assert_og_error(lance_arrow_from_fields(&back, bad, 22, NULL, "t"), OG_E_CORRUPT);
    bad[15]->parent_id = saved;
    char *saved_lt = bad[2]->logical_type;
    bad[2]->logical_type = (char *)"int8";
    assert_og_error(lance_arrow_from_fields(&back, bad, 22, NULL, "t"), OG_E_UNSUPPORTED);
    assert_non_null(strstr(og_error_last()->message, "i32"));
    bad[2]->logical_type = (char *)"fixed_size_list:float:x";
    assert_og_error(lance_arrow_from_fields(&back, bad, 22, NULL, "t"), OG_E_CORRUPT);
    bad[2]->logical_type = saved_lt;
    bad[3]->id = bad[4]->id;
    assert_og_error(lance_arrow_from_fields(&back, bad, 22, NULL, "t"), OG_E_CORRUPT);
    lance_fields_free(lf, n);
    /* a type with no logical type in this engine */
    char buf[64];
    arrow_type na = arrow_type_simple(ARROW_TYPE_COUNT);
    assert_og_error(lance_logical_type(&na, buf, sizeof buf), OG_E_UNSUPPORTED);
    arrow_schema_clear(&s);
}

static void test_struct_nulls_unsupported(void **state)
{
    (void)state;
    arrow_field kids[1] = {fx_field("a", arrow_type_simple(ARROW_INT32), true)};
    arrow_type st;
    assert_og_ok(arrow_type_struct(&st, kids, 1));
    arrow_schema s;
    arrow_schema_init(&s);
    arrow_field f = fx_field("st", st, true);
    assert_og_ok(arrow_schema_add(&s, &f));
    arrow_builder *b;
    assert_og_ok(arrow_builder_new(&b, &st));
    assert_og_ok(arrow_builder_append_null(b));
    arrow_array *a;
    assert_og_ok(arrow_builder_finish(b, &a));
    arrow_batch *bt;
    assert_og_ok(arrow_batch_new(&bt, &s, &a, 1));
    lance_file2_writer *w;
    assert_og_ok(lance_file2_writer_new(&w, &s, NULL));
    assert_og_error(lance_file2_writer_write(w, bt), OG_E_UNSUPPORTED);
    assert_non_null(strstr(og_error_last()->message, "st"));
    lance_file2_writer_free(w);
    arrow_batch_free(bt);
    arrow_array_free(a);
    arrow_builder_free(b);
    arrow_schema_clear(&s);
    arrow_type_clear(&st);
}

/* ---- a hand-built file: dictionary strings, and page-level damage ------------------------ */

typedef struct tpage {
    const void *bufs[4];
    size_t sizes[4];
    size_t n_buf;
    uint64_t length;
    uint8_t enc[4096];
    size_t enc_len;
} tpage;

static size_t pack_ae(const Lance__Encodings__ArrayEncoding *ae, uint8_t *out)
{
    size_t n = lance__encodings__array_encoding__get_packed_size(ae);
    assert_true(n <= 4096);
    return lance__encodings__array_encoding__pack(ae, out);
}

/* One string column "s" (nullable), the given pages. */
static void build_file(core_buf *out, const tpage *pages, size_t np, uint64_t rows)
{
    core_buf_clear(out);
    uint64_t offs[16][4];
    for (size_t p = 0; p < np; p++)
        for (size_t k = 0; k < pages[p].n_buf; k++) {
            while (out->len % 64)
                core_buf_append_byte(out, 0);
            offs[p][k] = out->len;
            core_buf_append(out, pages[p].bufs[k], pages[p].sizes[k]);
        }
    while (out->len % 64)
        core_buf_append_byte(out, 0);
    Lance__File__Field fld = LANCE__FILE__FIELD__INIT, *fp = &fld;
    fld.name = (char *)"s";
    fld.logical_type = (char *)"string";
    fld.parent_id = -1;
    fld.nullable = 1;
    Lance__File__Schema sch = LANCE__FILE__SCHEMA__INIT;
    sch.n_fields = 1;
    sch.fields = &fp;
    Lance__File__FileDescriptor fd = LANCE__FILE__FILE_DESCRIPTOR__INIT;
    fd.schema = &sch;
    fd.length = rows;
    uint64_t gb0 = out->len;
    size_t n = lance__file__file_descriptor__get_packed_size(&fd);
    core_buf_reserve(out, n);
    out->len += lance__file__file_descriptor__pack(&fd, out->data + out->len);
    uint64_t gb0_len = out->len - gb0;
    Lance__File__V2__ColumnMetadata cm = LANCE__FILE__V2__COLUMN_METADATA__INIT;
    Lance__File__V2__ColumnMetadata__Page pg[16], *pp[16];
    Lance__File__V2__Encoding enc[16];
    Lance__File__V2__DirectEncoding dir[16];
    static uint8_t anyb[16][4200];
    uint64_t sizes[16][4];
    for (size_t p = 0; p < np; p++) {
        Lance__File__V2__AnyMessage any = LANCE__FILE__V2__ANY_MESSAGE__INIT;
        any.type_url = (char *)"/lance.encodings.ArrayEncoding";
        any.value.data = (uint8_t *)pages[p].enc;
        any.value.len = pages[p].enc_len;
        lance__file__v2__direct_encoding__init(&dir[p]);
        dir[p].encoding.len = lance__file__v2__any_message__pack(&any, anyb[p]);
        dir[p].encoding.data = anyb[p];
        lance__file__v2__encoding__init(&enc[p]);
        enc[p].location_case = LANCE__FILE__V2__ENCODING__LOCATION_DIRECT;
        enc[p].direct = &dir[p];
        lance__file__v2__column_metadata__page__init(&pg[p]);
        for (size_t k = 0; k < pages[p].n_buf; k++)
            sizes[p][k] = pages[p].sizes[k];
        pg[p].n_buffer_offsets = pg[p].n_buffer_sizes = pages[p].n_buf;
        pg[p].buffer_offsets = offs[p];
        pg[p].buffer_sizes = sizes[p];
        pg[p].length = pages[p].length;
        pg[p].encoding = &enc[p];
        pp[p] = &pg[p];
    }
    cm.n_pages = np;
    cm.pages = pp;
    uint64_t cm_pos = out->len;
    n = lance__file__v2__column_metadata__get_packed_size(&cm);
    core_buf_reserve(out, n);
    out->len += lance__file__v2__column_metadata__pack(&cm, out->data + out->len);
    uint64_t cm_len = out->len - cm_pos;
    uint64_t cmo = out->len;
    core_buf_append_u64le(out, cm_pos);
    core_buf_append_u64le(out, cm_len);
    uint64_t gbo = out->len;
    core_buf_append_u64le(out, gb0);
    core_buf_append_u64le(out, gb0_len);
    core_buf_append_u64le(out, cm_pos);
    core_buf_append_u64le(out, cmo);
    core_buf_append_u64le(out, gbo);
    core_buf_append_u32le(out, 1);
    core_buf_append_u32le(out, 1);
    core_buf_append_u16le(out, 0);
    core_buf_append_u16le(out, 3);
    core_buf_append(out, "LANC", 4);
}

/* dictionary{indices: nullable{no_nulls{flat{8, buf0}}}, items: binary{offsets buf1, bytes buf2}}
 */
static void dict_page(tpage *p, const uint8_t *idx, size_t n, uint32_t n_items, unsigned idx_bits)
{
    static const uint64_t item_offs[3] = {3, 8, 10};
    static const char item_bytes[] = "redgreenxy";
    memset(p, 0, sizeof *p);
    p->bufs[0] = idx;
    p->sizes[0] = n * (idx_bits / 8);
    p->bufs[1] = item_offs;
    p->sizes[1] = sizeof item_offs;
    p->bufs[2] = item_bytes;
    p->sizes[2] = 10;
    p->n_buf = 3;
    p->length = n;
    Lance__Encodings__Buffer b0 = LANCE__ENCODINGS__BUFFER__INIT, b1 = b0, b2 = b0;
    b1.buffer_index = 1;
    b2.buffer_index = 2;
    Lance__Encodings__Flat fi = LANCE__ENCODINGS__FLAT__INIT, fo = fi, fb = fi;
    fi.bits_per_value = idx_bits;
    fi.buffer = &b0;
    fo.bits_per_value = 64;
    fo.buffer = &b1;
    fb.bits_per_value = 8;
    fb.buffer = &b2;
    Lance__Encodings__ArrayEncoding aefi = LANCE__ENCODINGS__ARRAY_ENCODING__INIT, aefo = aefi,
                                    aefb = aefi, aenn = aefi, aebin = aefi, ae = aefi;
    aefi.array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FLAT;
    aefi.flat = &fi;
    aefo.array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FLAT;
    aefo.flat = &fo;
    aefb.array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FLAT;
    aefb.flat = &fb;
    Lance__Encodings__Nullable__NoNull nn = LANCE__ENCODINGS__NULLABLE__NO_NULL__INIT;
    nn.values = &aefi;
    Lance__Encodings__Nullable nl = LANCE__ENCODINGS__NULLABLE__INIT;
    nl.nullability_case = LANCE__ENCODINGS__NULLABLE__NULLABILITY_NO_NULLS;
    nl.no_nulls = &nn;
    aenn.array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_NULLABLE;
    aenn.nullable = &nl;
    Lance__Encodings__Binary bin = LANCE__ENCODINGS__BINARY__INIT;
    bin.indices = &aefo;
    bin.bytes = &aefb;
    bin.null_adjustment = 11;
    aebin.array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_BINARY;
    aebin.binary = &bin;
    Lance__Encodings__Dictionary d = LANCE__ENCODINGS__DICTIONARY__INIT;
    d.indices = &aenn;
    d.items = &aebin;
    d.num_dictionary_items = n_items;
    ae.array_encoding_case = LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_DICTIONARY;
    ae.dictionary = &d;
    p->enc_len = pack_ae(&ae, p->enc);
}

static void test_dictionary_strings(void **state)
{
    (void)state;
    /* 1-based indices, 0 = null; two pages with 8- and 16-bit indices */
    static const uint8_t idx1[] = {1, 2, 0, 3, 1};
    static const uint16_t idx2[] = {3, 3, 0};
    tpage p[2];
    dict_page(&p[0], idx1, 5, 3, 8);
    dict_page(&p[1], (const uint8_t *)idx2, 3, 3, 16);
    core_buf file = CORE_BUF_INIT;
    build_file(&file, p, 2, 8);
    lance_file2_reader *r;
    assert_og_ok(lance_file2_open_bytes(&r, file.data, file.len, "dict.lance", NULL));
    arrow_batch *got;
    assert_og_ok(lance_file2_read(r, NULL, 0, 0, UINT64_MAX, &got));
    const arrow_array *s = got->columns[0];
    static const char *const want[] = {"red", "green", NULL, "xy", "red", "xy", "xy", NULL};
    assert_int_equal(s->length, 8);
    for (int i = 0; i < 8; i++) {
        if (!want[i]) {
            assert_false(arrow_array_is_valid(s, i));
            continue;
        }
        size_t n;
        const uint8_t *v = arrow_array_get_bytes(s, i, &n);
        assert_int_equal(n, strlen(want[i]));
        assert_memory_equal(v, want[i], n);
    }
    arrow_batch_free(got);
    lance_file2_close(r);

    /* index beyond the dictionary */
    static const uint8_t bad_idx[] = {1, 4};
    dict_page(&p[0], bad_idx, 2, 3, 8);
    build_file(&file, p, 1, 2);
    assert_og_ok(lance_file2_open_bytes(&r, file.data, file.len, "dict.lance", NULL));
    assert_og_error(lance_file2_read(r, NULL, 0, 0, UINT64_MAX, &got), OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, "dict.lance"));
    lance_file2_close(r);
    /* dictionary claims more items than its offsets hold */
    dict_page(&p[0], idx1, 5, 300, 8);
    build_file(&file, p, 1, 5);
    assert_og_ok(lance_file2_open_bytes(&r, file.data, file.len, "dict.lance", NULL));
    assert_og_error(lance_file2_read(r, NULL, 0, 0, UINT64_MAX, &got), OG_E_CORRUPT);
    lance_file2_close(r);
    /* page rows disagree with the file's length */
    dict_page(&p[0], idx1, 5, 3, 8);
    build_file(&file, p, 1, 6);
    assert_og_ok(lance_file2_open_bytes(&r, file.data, file.len, "dict.lance", NULL));
    assert_og_error(lance_file2_read(r, NULL, 0, 0, UINT64_MAX, &got), OG_E_CORRUPT);
    lance_file2_close(r);
    /* an encoding this reader does not know (ArrayEncoding field 8, fsst) is unsupported */
    p[0].enc[0] = (8 << 3) | 2;
    p[0].enc[1] = 0;
    p[0].enc_len = 2;
    build_file(&file, p, 1, 5);
    assert_og_ok(lance_file2_open_bytes(&r, file.data, file.len, "dict.lance", NULL));
    assert_og_error(lance_file2_read(r, NULL, 0, 0, UINT64_MAX, &got), OG_E_UNSUPPORTED);
    lance_file2_close(r);
    /* a deeply nested encoding is refused before protobuf-c recurses into it */
    uint8_t deep[4096], tmp[4096];
    size_t len = 0;
    deep[len++] = 0x0a; /* flat{} */
    deep[len++] = 0;
    for (int i = 0; i < 300; i++) {
        /* ArrayEncoding{nullable(2){no_nulls(1){values(1): deep}}} */
        size_t k = 0;
        uint8_t inner[8];
        size_t ni = 0;
        assert_true(len < 128 * 128);
        size_t l1 = len, l2, l3;
        tmp[k++] = 0x0a;
        if (l1 < 128)
            tmp[k++] = (uint8_t)l1;
        else {
            tmp[k++] = (uint8_t)(l1 | 0x80);
            tmp[k++] = (uint8_t)(l1 >> 7);
        }
        l2 = k + len;
        (void)inner;
        (void)ni;
        uint8_t hdr[8];
        size_t h = 0;
        hdr[h++] = 0x12;
        l3 = l2 + 1 + (l2 + 1 >= 128 ? 1 : 0) + 1;
        (void)l3;
        /* nullable: tag 0x12, len(no_nulls msg); no_nulls msg = tag 0x0a, len(values), values */
        size_t nn_len = k + len;                              /* values field inside NoNull */
        size_t nl_body = 1 + (nn_len < 128 ? 1 : 2) + nn_len; /* NoNull field inside Nullable */
        hdr[0] = 0x12;
        h = 1;
        if (nl_body < 128)
            hdr[h++] = (uint8_t)nl_body;
        else {
            hdr[h++] = (uint8_t)(nl_body | 0x80);
            hdr[h++] = (uint8_t)(nl_body >> 7);
        }
        hdr[h++] = 0x0a;
        if (nn_len < 128)
            hdr[h++] = (uint8_t)nn_len;
        else {
            hdr[h++] = (uint8_t)(nn_len | 0x80);
            hdr[h++] = (uint8_t)(nn_len >> 7);
        }
        if (h + k + len > sizeof deep) break;
        memmove(deep + h + k, deep, len);
        memcpy(deep + h, tmp, k);
        memcpy(deep, hdr, h);
        len += h + k;
    }
    assert_true(len <= sizeof p[0].enc);
    memcpy(p[0].enc, deep, len);
    p[0].enc_len = len;
    build_file(&file, p, 1, 5);
    assert_og_ok(lance_file2_open_bytes(&r, file.data, file.len, "dict.lance", NULL));
    assert_og_error(lance_file2_read(r, NULL, 0, 0, UINT64_MAX, &got), OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, "deep"));
    lance_file2_close(r);
    core_buf_free(&file);
}

/* ---- damaged files ------------------------------------------------------------------------ */

static void sample_file(core_buf *file, int64_t rows, size_t page_bytes)
{
    arrow_batch *b;
    assert_og_ok(fx_batch(&b, 0, rows));
    lance_file2_info info;
    const arrow_batch *bs[1] = {b};
    write_bytes(bs, 1, page_bytes, file, &info);
    arrow_batch_free(b);
}

/* Open and read everything; return the first error (or 0). */
static int try_read(const uint8_t *p, size_t n)
{
    lance_file2_reader *r;
    lance_file2_read_options o = LANCE_FILE2_READ_OPTIONS_INIT;
    o.max_bytes = 64u << 20;
    int rc = lance_file2_open_bytes(&r, p, n, "bad.lance", &o);
    if (rc) return rc;
    arrow_batch *b = NULL;
    rc = lance_file2_read(r, NULL, 0, 0, UINT64_MAX, &b);
    if (rc == 0)
        for (size_t i = 0; i < b->n_columns; i++)
            assert_og_ok(arrow_array_validate(b->columns[i]));
    arrow_batch_free(b);
    lance_file2_close(r);
    return rc;
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void test_corrupt_footer(void **state)
{
    (void)state;
    core_buf f = CORE_BUF_INIT;
    sample_file(&f, 40, 0);
    assert_og_ok(try_read(f.data, f.len));
    uint8_t *copy = malloc(f.len);
    uint8_t *foot = copy + f.len - 40;
#define RESET() memcpy(copy, f.data, f.len)
    /* every truncation is refused as corrupt */
    for (size_t n = 0; n < f.len; n += (n < 64 ? 1 : 7)) {
        int rc = try_read(f.data, n);
        if (rc != OG_E_CORRUPT) fail_msg("truncated to %zu: %s", n, og_code_name(rc));
        assert_non_null(strstr(og_error_last()->message, "bad.lance"));
    }
    RESET();
    memcpy(foot + 36, "LANX", 4);
    assert_og_error(try_read(copy, f.len), OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, "magic"));
    RESET();
    foot[32] = 2;
    foot[34] = 1; /* 2.1 */
    assert_og_error(try_read(copy, f.len), OG_E_UNSUPPORTED);
    assert_non_null(strstr(og_error_last()->message, "2.1"));
    RESET();
    put64(foot + 8, f.len + 100); /* cmo beyond the file */
    assert_og_error(try_read(copy, f.len), OG_E_CORRUPT);
    RESET();
    put64(foot + 16, UINT64_MAX - 8); /* gbo overflowing */
    assert_og_error(try_read(copy, f.len), OG_E_CORRUPT);
    RESET();
    put64(foot, UINT64_MAX); /* column metadata start beyond */
    assert_og_error(try_read(copy, f.len), OG_E_CORRUPT);
    RESET();
    foot[28] = 0xff;
    foot[29] = 0xff;
    foot[30] = 0xff;
    foot[31] = 0x7f; /* columns: 2^31 */
    assert_og_error(try_read(copy, f.len), OG_E_CORRUPT);
    RESET();
    foot[24] = 0; /* no global buffers */
    assert_og_error(try_read(copy, f.len), OG_E_CORRUPT);
    RESET();
    uint64_t gbo = le64(foot + 16);
    put64(copy + gbo + 8, UINT64_MAX); /* global buffer length overflows */
    assert_og_error(try_read(copy, f.len), OG_E_CORRUPT);
    RESET();
    put64(copy + gbo, f.len - 41); /* global buffer 0 is garbage */
    put64(copy + gbo + 8, 1);
    int rc = try_read(copy, f.len);
    assert_true(rc == OG_E_CORRUPT);
    RESET();
    uint64_t cmo = le64(foot + 8);
    put64(copy + cmo + 16 * 3 + 8, UINT64_MAX - 2); /* column 3 metadata length overflows */
    assert_og_error(try_read(copy, f.len), OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, "column 3"));
    RESET();
    put64(copy + cmo + 16 * 3, le64(copy + cmo + 16 * 3) + 1); /* misaligned metadata */
    rc = try_read(copy, f.len);
    assert_true(rc == OG_E_CORRUPT || rc == OG_E_UNSUPPORTED);
#undef RESET
    free(copy);
    core_buf_free(&f);
}

/* Rebuild a written file with one page's metadata altered. */
typedef void (*page_mut)(Lance__File__V2__ColumnMetadata__Page *pg, uint64_t file_len);

static void mutate_page(const core_buf *f, uint32_t col, page_mut m, core_buf *out)
{
    const uint8_t *e = f->data + f->len - 40;
    uint64_t cm_start = le64(e), cmo = le64(e + 8), gbo = le64(e + 16);
    uint32_t ncol = (uint32_t)(e[28] | e[29] << 8);
    core_buf_clear(out);
    core_buf_append(out, f->data, cm_start);
    uint64_t *pos = calloc(ncol, 16);
    for (uint32_t c = 0; c < ncol; c++) {
        uint64_t p = le64(f->data + cmo + 16 * c), l = le64(f->data + cmo + 16 * c + 8);
        Lance__File__V2__ColumnMetadata *cm =
            lance__file__v2__column_metadata__unpack(NULL, (size_t)l, f->data + p);
        assert_non_null(cm);
        if (c == col && cm->n_pages) m(cm->pages[0], f->len);
        pos[2 * c] = out->len;
        size_t n = lance__file__v2__column_metadata__get_packed_size(cm);
        core_buf_reserve(out, n);
        out->len += lance__file__v2__column_metadata__pack(cm, out->data + out->len);
        pos[2 * c + 1] = out->len - pos[2 * c];
        lance__file__v2__column_metadata__free_unpacked(cm, NULL);
    }
    uint64_t ncmo = out->len;
    for (uint32_t c = 0; c < ncol; c++) {
        core_buf_append_u64le(out, pos[2 * c]);
        core_buf_append_u64le(out, pos[2 * c + 1]);
    }
    uint64_t ngbo = out->len;
    core_buf_append(out, f->data + gbo, 16);
    core_buf_append_u64le(out, cm_start);
    core_buf_append_u64le(out, ncmo);
    core_buf_append_u64le(out, ngbo);
    core_buf_append(out, e + 24, 16);
    free(pos);
}

static void m_offset_beyond(Lance__File__V2__ColumnMetadata__Page *pg, uint64_t n)
{
    pg->buffer_offsets[0] = n + 64;
}
static void m_size_overflow(Lance__File__V2__ColumnMetadata__Page *pg, uint64_t n)
{
    (void)n;
    pg->buffer_sizes[0] = UINT64_MAX - 3; /* offset + size wraps around */
}
static void m_size_short(Lance__File__V2__ColumnMetadata__Page *pg, uint64_t n)
{
    (void)n;
    pg->buffer_sizes[pg->n_buffer_sizes - 1] /= 2;
}
static void m_length_huge(Lance__File__V2__ColumnMetadata__Page *pg, uint64_t n)
{
    (void)n;
    pg->length = (uint64_t)1 << 62;
}
static void m_length_more(Lance__File__V2__ColumnMetadata__Page *pg, uint64_t n)
{
    (void)n;
    pg->length += 1;
}
static void m_count_mismatch(Lance__File__V2__ColumnMetadata__Page *pg, uint64_t n)
{
    (void)n;
    pg->n_buffer_sizes = 0;
}
static void m_bad_encoding(Lance__File__V2__ColumnMetadata__Page *pg, uint64_t n)
{
    (void)n;
    if (pg->encoding && pg->encoding->direct && pg->encoding->direct->encoding.len > 3)
        pg->encoding->direct->encoding.len -= 3; /* cut the Any message short */
}
static void m_other_url(Lance__File__V2__ColumnMetadata__Page *pg, uint64_t n)
{
    (void)n;
    static uint8_t any[] = {0x0a, 28,  '/', 'l', 'a', 'n', 'c', 'e', '.', 'e',
                            'n',  'c', 'o', 'd', 'i', 'n', 'g', 's', '2', '1',
                            '.',  'P', 'a', 'g', 'e', 'L', 'a', 'y', 'o', 'u'};
    /* the message was unpacked with the default allocator: replace the bytes with malloc'd ones */
    free(pg->encoding->direct->encoding.data);
    pg->encoding->direct->encoding.data = malloc(sizeof any);
    memcpy(pg->encoding->direct->encoding.data, any, sizeof any);
    pg->encoding->direct->encoding.len = sizeof any;
}

static void test_corrupt_pages(void **state)
{
    (void)state;
    core_buf f = CORE_BUF_INIT, g = CORE_BUF_INIT;
    sample_file(&f, 200, 0);
    /* identity rebuild still reads */
    mutate_page(&f, 0, m_length_more, &g);
    static const struct {
        page_mut m;
        int code;
        const char *msg;
    } cases[] = {{m_offset_beyond, OG_E_CORRUPT, "beyond the file"},
                 {m_size_overflow, OG_E_CORRUPT, "beyond the file"},
                 {m_size_short, OG_E_CORRUPT, "column"},
                 {m_length_huge, OG_E_CORRUPT, "rows"},
                 {m_length_more, OG_E_CORRUPT, "rows"},
                 {m_count_mismatch, OG_E_CORRUPT, "sizes"},
                 {m_bad_encoding, OG_E_CORRUPT, "protobuf"},
                 {m_other_url, OG_E_UNSUPPORTED, "encodings21"}};
    /* columns: 0 id, 2 i32 (some nulls), 7 s (binary), 13 vec, 14 lst, 15 lst.item, 16 lst_s */
    uint32_t cols[] = {0, 2, 7, 13, 14, 15, 16, 18};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
            if (cases[k].m == m_size_short && cols[c] == 18) continue; /* struct page: no buffers */
            if (cases[k].m == m_offset_beyond && cols[c] == 18) continue;
            if (cases[k].m == m_size_overflow && cols[c] == 18) continue;
            if (cases[k].m == m_count_mismatch && cols[c] == 18) continue;
            mutate_page(&f, cols[c], cases[k].m, &g);
            int rc = try_read(g.data, g.len);
            if (rc != cases[k].code)
                fail_msg("case %zu column %u: want %s got %s (%s)", k, cols[c],
                         og_code_name(cases[k].code), og_code_name(rc), og_error_last()->message);
            if (!strstr(og_error_last()->message, cases[k].msg))
                fail_msg("case %zu column %u: message '%s' lacks '%s'", k, cols[c],
                         og_error_last()->message, cases[k].msg);
        }
    core_buf_free(&f);
    core_buf_free(&g);
}

/* Deterministic mutations anywhere in small files: typed errors or valid data, never a crash. */
static void test_corrupt_mutations(void **state)
{
    (void)state;
    core_buf f = CORE_BUF_INIT;
    sample_file(&f, 30, 128);
    uint8_t *copy = malloc(f.len);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int errors = 0;
    for (int iter = 0; iter < 4000; iter++) {
        memcpy(copy, f.data, f.len);
        int flips = 1 + iter % 4;
        for (int k = 0; k < flips; k++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            /* bias toward the metadata tail, where most structure lives */
            size_t pos =
                (iter % 2) ? (size_t)(x % f.len) : f.len - 1 - (size_t)((x >> 20) % 600 % f.len);
            copy[pos] ^= (uint8_t)(1u << ((x >> 40) % 8));
            if (iter % 5 == 0) copy[pos] = (uint8_t)(x >> 48);
        }
        int rc = try_read(copy, f.len);
        if (rc) {
            errors++;
            if (rc != OG_E_CORRUPT && rc != OG_E_UNSUPPORTED && rc != OG_E_RESOURCE_LIMIT)
                fail_msg("iteration %d: unexpected %s: %s", iter, og_code_name(rc),
                         og_error_last()->message);
        }
    }
    assert_true(errors > 1000);
    free(copy);
    core_buf_free(&f);
}

static void test_alloc_failures(void **state)
{
    (void)state;
    core_buf f = CORE_BUF_INIT;
    sample_file(&f, 25, 64);
    arrow_batch *src;
    assert_og_ok(fx_batch(&src, 0, 25));
    int failures = 0;
    for (uint64_t n = 1; n < 200000; n++) {
        core_alloc_fail_at(n, 0);
        core_buf g = CORE_BUF_INIT;
        lance_file2_writer *w = NULL;
        lance_file2_options o = LANCE_FILE2_OPTIONS_INIT;
        o.page_bytes = 64;
        int rc = lance_file2_writer_new(&w, &src->schema, &o);
        if (rc == 0) rc = lance_file2_writer_write(w, src);
        if (rc == 0) rc = lance_file2_writer_finish_bytes(w, &g, NULL);
        lance_file2_writer_free(w);
        lance_file2_reader *r = NULL;
        arrow_batch *b = NULL;
        if (rc == 0) rc = lance_file2_open_bytes(&r, f.data, f.len, "x", NULL);
        if (rc == 0) rc = lance_file2_read(r, NULL, 0, 0, UINT64_MAX, &b);
        uint64_t injected = core_alloc_injected();
        core_alloc_fail_at(0, 0);
        if (rc == 0) {
            assert_true(arrow_batch_equal(b, src));
            assert_int_equal(g.len, f.len);
            assert_memory_equal(g.data, f.data, f.len);
        }
        arrow_batch_free(b);
        lance_file2_close(r);
        core_buf_free(&g);
        if (injected == 0) {
            assert_og_ok(rc);
            break;
        }
        if (rc != OG_E_NOMEM) fail_msg("allocation %" PRIu64 ": %s", n, og_error_last()->message);
        failures++;
    }
    assert_true(failures > 200);
    arrow_batch_free(src);
    core_buf_free(&f);
}

/* ---- cross-checks with the lance-probe scripts (independent Python implementations) ------ */

static bool have_python(void)
{
    return system("python3 -c 'import struct' >/dev/null 2>&1") == 0 && access_probe("lfile.py");
}

static void test_lfile_py_decodes_our_file(void **state)
{
    fixture *f = *state;
    if (!have_python()) skip();
    arrow_batch *b;
    assert_og_ok(fx_batch(&b, 0, 64));
    lance_file2_writer *w;
    assert_og_ok(lance_file2_writer_new(&w, &b->schema, NULL));
    assert_og_ok(lance_file2_writer_write(w, b));
    lance_file2_info info;
    assert_og_ok(lance_file2_writer_finish(w, f->s, "ours.lance", &info));
    lance_file2_writer_free(w);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "python3 %s/lfile.py %s/ours.lance -v 2>&1", PROBE_DIR, f->dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    core_buf out = CORE_BUF_INIT;
    char line[4096];
    while (fgets(line, sizeof line, p))
        core_buf_append_str(&out, line);
    int st = pclose(p);
    const char *o = core_buf_cstr(&out);
    if (st != 0) fail_msg("lfile.py failed: %s", o);
    char want[128];
    snprintf(want, sizeof want, "size=%" PRIu64 " ", info.size);
    assert_non_null(strstr(o, want));
    assert_non_null(strstr(o, "num_columns=22 version=0.3 magic=b'LANC'"));
    assert_non_null(strstr(o, "num_global_buffers=1"));
    assert_non_null(strstr(o, "== column 21 @"));
    assert_non_null(strstr(o, "fixed_size_list:float:4"));
    assert_non_null(strstr(o, "timestamp:us:UTC"));
    assert_null(strstr(o, "Traceback"));
    core_buf_free(&out);
    arrow_batch_free(b);
}

static void test_read_mini_writer_file(void **state)
{
    fixture *f = *state;
    if (!have_python()) skip();
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "cd %s && python3 %s/mini_writer.py %s/t.lance create >/dev/null 2>&1", f->dir,
             PROBE_DIR, f->dir);
    assert_int_equal(system(cmd), 0);
    char ddir[512];
    snprintf(ddir, sizeof ddir, "%s/t.lance/data", f->dir);
    DIR *d = opendir(ddir);
    assert_non_null(d);
    struct dirent *de;
    char key[600] = "";
    while ((de = readdir(d)))
        if (strstr(de->d_name, ".lance")) snprintf(key, sizeof key, "t.lance/data/%s", de->d_name);
    closedir(d);
    assert_true(key[0] != '\0');
    lance_file2_reader *r;
    assert_og_ok(lance_file2_open(&r, f->s, key, 0, NULL));
    assert_int_equal(lance_file2_num_rows(r), 5);
    arrow_batch *b;
    assert_og_ok(lance_file2_read(r, NULL, 0, 0, UINT64_MAX, &b));
    assert_int_equal(b->n_columns, 7);
    for (int64_t i = 0; i < 5; i++) {
        assert_int_equal(arrow_array_get_int(b->columns[0], i), i);
        if (i % 3 == 2) {
            assert_false(arrow_array_is_valid(b->columns[1], i));
        } else {
            char s[16];
            snprintf(s, sizeof s, "str%d", (int)i);
            size_t n;
            const uint8_t *p = arrow_array_get_bytes(b->columns[1], i, &n);
            assert_int_equal(n, strlen(s));
            assert_memory_equal(p, s, n);
        }
        assert_true(arrow_array_get_double(b->columns[2], i) == (double)i * 1.5);
        assert_int_equal(arrow_array_get_bool(b->columns[3], i), i % 2 == 0);
        if (i % 4 == 3)
            assert_false(arrow_array_is_valid(b->columns[4], i));
        else
            assert_int_equal(arrow_array_get_int(b->columns[4], i), i * 10);
        const arrow_array *l = b->columns[5];
        if (i % 5 == 4) {
            assert_false(arrow_array_is_valid(l, i));
        } else {
            int64_t s, e;
            arrow_array_list_range(l, i, &s, &e);
            assert_int_equal(e - s, i % 3);
            for (int64_t k = s; k < e; k++)
                assert_int_equal(arrow_array_get_int(l->children[0], k), i + (k - s));
        }
        const arrow_array *v = b->columns[6];
        for (int k = 0; k < 4; k++)
            assert_true(arrow_array_get_double(v->children[0], i * 4 + k) == (double)i + k * 0.25);
    }
    arrow_batch_free(b);
    lance_file2_close(r);
}

/* Tool mode, not a test: with OG_FILE2_WRITE_CORPUS=dir, write the fuzz seeds (small files of
 * every type) and exit. */
static void write_corpus(const char *dir)
{
    static const struct {
        int64_t rows;
        size_t page;
    } seeds[] = {{3, 0}, {12, 64}, {1, 0}, {0, 0}};
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        core_buf f = CORE_BUF_INIT;
        sample_file(&f, seeds[i].rows, seeds[i].page);
        char path[512];
        snprintf(path, sizeof path, "%s/seed-%zu.lance", dir, i);
        test_write_file(path, f.data, f.len);
        core_buf_free(&f);
    }
    tpage p[1];
    static const uint8_t idx1[] = {1, 2, 0, 3, 1};
    dict_page(&p[0], idx1, 5, 3, 8);
    core_buf f = CORE_BUF_INIT;
    build_file(&f, p, 1, 5);
    char path[512];
    snprintf(path, sizeof path, "%s/seed-dict.lance", dir);
    test_write_file(path, f.data, f.len);
    core_buf_free(&f);
}

int main(void)
{
    if (getenv("OG_FILE2_WRITE_CORPUS")) {
        write_corpus(getenv("OG_FILE2_WRITE_CORPUS"));
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_roundtrip_all_types, setup, teardown),
        cmocka_unit_test(test_field_ids_option),
        cmocka_unit_test(test_empty_and_tiny),
        cmocka_unit_test(test_large_and_other_types),
        cmocka_unit_test(test_small_writes_gathered),
        cmocka_unit_test(test_multi_page),
        cmocka_unit_test_setup_teardown(test_projection_reads_only_projected_bytes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_store_faults, setup, teardown),
        cmocka_unit_test(test_field_mapping),
        cmocka_unit_test(test_struct_nulls_unsupported),
        cmocka_unit_test(test_dictionary_strings),
        cmocka_unit_test(test_corrupt_footer),
        cmocka_unit_test(test_corrupt_pages),
        cmocka_unit_test(test_corrupt_mutations),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test_setup_teardown(test_lfile_py_decodes_our_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_mini_writer_file, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
