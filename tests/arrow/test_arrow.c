/* Arrow layer: builders and accessors for every type, C Data Interface export/import (with
 * offsets, nested types, streams, release callbacks), kernels (take, filter, compare, hash,
 * sort), errors, and allocation-failure sweeps. */
#include "testutil.h"

#include "arrow/arrow.h"
#include "arrow_fixture.h"
#include "core/alloc.h"

#include <math.h>
#include <string.h>

static arrow_array *int_array(const int64_t *v, const bool *valid, size_t n, arrow_type_id id)
{
    arrow_type t = arrow_type_simple(id);
    arrow_builder *b;
    assert_og_ok(arrow_builder_new(&b, &t));
    for (size_t i = 0; i < n; i++) {
        if (valid && !valid[i])
            assert_og_ok(arrow_builder_append_null(b));
        else if (id == ARROW_FLOAT64 || id == ARROW_FLOAT32)
            assert_og_ok(arrow_builder_append_double(b, (double)v[i]));
        else
            assert_og_ok(arrow_builder_append_int(b, v[i]));
    }
    arrow_array *a;
    assert_og_ok(arrow_builder_finish(b, &a));
    arrow_builder_free(b);
    return a;
}

static void test_builders_and_accessors(void **state)
{
    (void)state;
    arrow_batch *b;
    assert_og_ok(fx_batch(&b, 0, 100));
    assert_int_equal(b->num_rows, 100);
    assert_int_equal(b->n_columns, 18);
    for (size_t i = 0; i < b->n_columns; i++)
        assert_og_ok(arrow_array_validate(b->columns[i]));
    /* spot checks of values and nulls */
    const arrow_array *i32 = b->columns[2];
    assert_false(arrow_array_is_valid(i32, 2));
    assert_true(arrow_array_is_valid(i32, 3));
    assert_int_equal(arrow_array_get_int(i32, 3), -470);
    assert_int_equal(i32->null_count, 33);
    const arrow_array *u64 = b->columns[4];
    assert_true(arrow_array_get_uint(u64, 1) == UINT64_MAX - 1);
    const arrow_array *s = b->columns[7];
    size_t n;
    const uint8_t *p = arrow_array_get_bytes(s, 11, &n);
    assert_int_equal(n, strlen("str11-\xc3\xa9"));
    assert_memory_equal(p, "str11-\xc3\xa9", n);
    arrow_array_get_bytes(s, 10, &n);
    assert_int_equal(n, 0);
    assert_true(arrow_array_is_valid(s, 10));
    assert_false(arrow_array_is_valid(s, 12));
    const arrow_array *bl = b->columns[1];
    assert_true(arrow_array_get_bool(bl, 0));
    assert_false(arrow_array_get_bool(bl, 1));
    assert_false(arrow_array_is_valid(bl, 3));
    const arrow_array *lst = b->columns[14];
    int64_t st, en;
    arrow_array_list_range(lst, 5, &st, &en);
    assert_int_equal(en - st, 2);
    assert_false(arrow_array_is_valid(lst->children[0], st + 1)); /* r=5: item 1 null */
    assert_false(arrow_array_is_valid(lst, 3));
    const arrow_array *vec = b->columns[13];
    assert_int_equal(vec->children[0]->length, 400);
    assert_false(arrow_array_is_valid(vec, 5));
    assert_true(arrow_array_get_double(vec->children[0], 4 * 7 + 1) == 7.25);
    const arrow_array *an = b->columns[17];
    assert_int_equal(an->null_count, 100);
    char desc[96];
    arrow_type_describe(&vec->type, desc, sizeof desc);
    assert_string_equal(desc, "fixed_size_list<float32, 4>");
    arrow_batch_free(b);
}

static void test_builder_errors(void **state)
{
    (void)state;
    arrow_type t = arrow_type_simple(ARROW_INT32);
    arrow_builder *b;
    assert_og_ok(arrow_builder_new(&b, &t));
    assert_og_error(arrow_builder_append_str(b, "x"), OG_E_BAD_REQUEST);
    assert_og_error(arrow_builder_append_int(b, (int64_t)1 << 40), OG_E_BAD_REQUEST);
    assert_og_error(arrow_builder_append_double(b, 1.0), OG_E_BAD_REQUEST);
    assert_int_equal(arrow_builder_length(b), 0);
    arrow_builder_free(b);

    arrow_field item = fx_field("item", arrow_type_simple(ARROW_INT64), true);
    arrow_type lt;
    assert_og_ok(arrow_type_list(&lt, &item));
    assert_og_ok(arrow_builder_new(&b, &lt));
    assert_og_ok(arrow_builder_append_int(arrow_builder_child(b, 0), 1));
    assert_og_error(arrow_builder_append_list(b, 2), OG_E_BAD_REQUEST);
    assert_og_ok(arrow_builder_append_list(b, 1));
    arrow_builder_free(b);
    arrow_type_clear(&lt);

    assert_og_error(arrow_type_fixed_size_list(&lt, &item, 0), OG_E_BAD_REQUEST);

    /* batch with mismatched column type */
    arrow_schema s;
    arrow_schema_init(&s);
    arrow_field f = fx_field("x", arrow_type_simple(ARROW_INT64), false);
    assert_og_ok(arrow_schema_add(&s, &f));
    int64_t v[2] = {1, 2};
    bool valid[2] = {true, false};
    arrow_array *a = int_array(v, valid, 2, ARROW_INT32);
    arrow_batch *bt;
    assert_og_error(arrow_batch_new(&bt, &s, &a, 1), OG_E_BAD_REQUEST);
    arrow_array_free(a);
    a = int_array(v, valid, 2, ARROW_INT64);
    assert_og_error(arrow_batch_new(&bt, &s, &a, 1), OG_E_BAD_REQUEST); /* nulls, not nullable */
    arrow_array_free(a);
    arrow_schema_clear(&s);
}

static void test_cdata_roundtrip(void **state)
{
    (void)state;
    arrow_batch *b;
    assert_og_ok(fx_batch(&b, 0, 77));
    struct ArrowSchema cs;
    assert_og_ok(arrow_schema_export(&b->schema, &cs));
    assert_string_equal(cs.format, "+s");
    assert_int_equal(cs.n_children, 18);
    assert_string_equal(cs.children[0]->format, "l");
    assert_string_equal(cs.children[0]->name, "id");
    assert_int_equal(cs.children[0]->flags & ARROW_FLAG_NULLABLE, 0);
    assert_string_equal(cs.children[12]->format, "tsu:UTC");
    assert_string_equal(cs.children[11]->format, "tsm:");
    assert_string_equal(cs.children[13]->format, "+w:4");
    assert_string_equal(cs.children[14]->format, "+l");
    assert_string_equal(cs.children[14]->children[0]->format, "i");
    assert_string_equal(cs.children[16]->format, "+s");
    assert_string_equal(cs.children[9]->format, "tdD");
    struct ArrowArray ca;
    assert_og_ok(arrow_batch_export(b, &ca));
    assert_int_equal(ca.length, 77);
    assert_int_equal(ca.n_children, 18);
    assert_int_equal(ca.children[7]->n_buffers, 3);

    arrow_schema s2;
    assert_og_ok(arrow_schema_import(&s2, &cs));
    assert_null(cs.release);
    assert_true(arrow_schema_equal(&s2, &b->schema));
    arrow_batch *b2;
    assert_og_ok(arrow_batch_import(&b2, &s2, &ca));
    assert_null(ca.release);
    assert_true(arrow_batch_equal(b, b2));
    arrow_batch_free(b2);
    arrow_schema_clear(&s2);

    /* a consumer may move a child out and release the parent first (Arrow spec) */
    struct ArrowArray cm;
    assert_og_ok(arrow_batch_export(b, &cm));
    struct ArrowArray moved = *cm.children[14];
    cm.children[14]->release = NULL;
    cm.release(&cm);
    assert_null(cm.release);
    arrow_array *mv;
    assert_og_ok(arrow_array_import(&mv, &b->columns[14]->type, &moved));
    assert_true(arrow_array_equal(mv, b->columns[14]));
    arrow_array_free(mv);
    struct ArrowSchema sm;
    assert_og_ok(arrow_schema_export(&b->schema, &sm));
    struct ArrowSchema smoved = *sm.children[16];
    sm.children[16]->release = NULL;
    sm.release(&sm);
    arrow_field mf;
    assert_og_ok(arrow_field_import(&mf, &smoved));
    assert_true(arrow_type_equal(&mf.type, &b->schema.fields[16].type));
    assert_string_equal(mf.name, "st");
    arrow_field_clear(&mf);

    /* the export outlives the batch: it holds references */
    struct ArrowArray c3;
    assert_og_ok(arrow_array_export(b->columns[7], &c3));
    arrow_type st;
    assert_og_ok(arrow_type_copy(&st, &b->columns[7]->type));
    arrow_array *keep = arrow_array_ref(b->columns[7]);
    arrow_batch_free(b);
    /* consumer-side slicing: offset 3, length 10 */
    c3.offset = 3;
    c3.length = 10;
    c3.null_count = -1;
    arrow_array *sl;
    assert_og_ok(arrow_array_import(&sl, &st, &c3));
    assert_int_equal(sl->length, 10);
    for (int64_t i = 0; i < 10; i++)
        assert_int_equal(arrow_compare_rows(sl, i, keep, i + 3), 0);
    assert_int_equal(sl->null_count, 2); /* rows 7 and 12 are null */
    arrow_array_free(sl);
    arrow_array_free(keep);
    arrow_type_clear(&st);
}

static void test_cdata_nested_offsets(void **state)
{
    (void)state;
    arrow_batch *b;
    assert_og_ok(fx_batch(&b, 0, 40));
    int64_t idx[20];
    for (int i = 0; i < 20; i++)
        idx[i] = 5 + i;
    for (size_t c = 0; c < b->n_columns; c++) {
        struct ArrowArray ca;
        assert_og_ok(arrow_array_export(b->columns[c], &ca));
        ca.offset = 5;
        ca.length = 20;
        arrow_array *imp, *want;
        assert_og_ok(arrow_array_import(&imp, &b->columns[c]->type, &ca));
        assert_og_ok(arrow_take(&want, b->columns[c], idx, 20));
        assert_true(arrow_array_equal(imp, want));
        assert_og_ok(arrow_array_validate(imp));
        arrow_array_free(imp);
        arrow_array_free(want);
    }
    arrow_batch_free(b);
}

static void test_cdata_bad_input(void **state)
{
    (void)state;
    arrow_type t = arrow_type_simple(ARROW_UTF8);
    int64_t v[1] = {1};
    arrow_array *a = int_array(v, NULL, 1, ARROW_INT64);
    struct ArrowArray ca;
    assert_og_ok(arrow_array_export(a, &ca));
    arrow_array *got;
    assert_og_error(arrow_array_import(&got, &t, &ca), OG_E_BAD_REQUEST); /* 2 buffers, want 3 */
    assert_null(ca.release); /* released even on failure */
    assert_int_equal(atomic_load(&a->refs), 1);
    arrow_array_free(a);
    struct ArrowSchema cs;
    memset(&cs, 0, sizeof cs);
    cs.format = "+m";
    arrow_field f;
    assert_og_error(arrow_field_import(&f, &cs), OG_E_UNSUPPORTED);
    cs.format = "+w:0";
    assert_og_error(arrow_field_import(&f, &cs), OG_E_BAD_REQUEST);
}

static void test_stream(void **state)
{
    (void)state;
    arrow_batch **bs = core_calloc(3, sizeof *bs);
    for (int i = 0; i < 3; i++)
        assert_og_ok(fx_batch(&bs[i], i * 10, 10 + i));
    arrow_schema s;
    assert_og_ok(arrow_schema_copy(&s, &bs[0]->schema));
    struct ArrowArrayStream st;
    assert_og_ok(arrow_stream_export(&s, bs, 3, &st));
    struct ArrowSchema cs;
    assert_int_equal(st.get_schema(&st, &cs), 0);
    arrow_schema s2;
    assert_og_ok(arrow_schema_import(&s2, &cs));
    assert_true(arrow_schema_equal(&s, &s2));
    int64_t rows = 0;
    int batches = 0;
    for (;;) {
        struct ArrowArray ca;
        assert_int_equal(st.get_next(&st, &ca), 0);
        if (!ca.release) break;
        rows += ca.length;
        batches++;
        arrow_batch *got;
        assert_og_ok(arrow_batch_import(&got, &s2, &ca));
        arrow_batch *want;
        assert_og_ok(fx_batch(&want, (batches - 1) * 10, 10 + batches - 1));
        assert_true(arrow_batch_equal(got, want));
        arrow_batch_free(got);
        arrow_batch_free(want);
    }
    assert_int_equal(batches, 3);
    assert_int_equal(rows, 33);
    assert_null(st.get_last_error(&st));
    st.release(&st);
    assert_null(st.release);

    /* consumer side: import a whole stream */
    arrow_batch **bs2 = core_calloc(2, sizeof *bs2);
    assert_og_ok(fx_batch(&bs2[0], 0, 5));
    assert_og_ok(fx_batch(&bs2[1], 5, 7));
    assert_og_ok(arrow_stream_export(&s, bs2, 2, &st));
    arrow_schema s3;
    arrow_batch **got;
    size_t ng;
    assert_og_ok(arrow_stream_import(&s3, &got, &ng, &st));
    assert_null(st.release);
    assert_int_equal(ng, 2);
    assert_true(arrow_schema_equal(&s3, &s));
    arrow_batch *w12;
    assert_og_ok(fx_batch(&w12, 5, 7));
    assert_true(arrow_batch_equal(got[1], w12));
    arrow_batch_free(w12);
    for (size_t i = 0; i < ng; i++)
        arrow_batch_free(got[i]);
    core_free(got);
    arrow_schema_clear(&s3);
    arrow_schema_clear(&s);
    arrow_schema_clear(&s2);
}

static void test_take_filter(void **state)
{
    (void)state;
    arrow_batch *b;
    assert_og_ok(fx_batch(&b, 0, 50));
    int64_t idx[] = {49, 0, 3, 3, 14, 25};
    arrow_batch *t;
    assert_og_ok(arrow_batch_take(&t, b, idx, 6));
    assert_int_equal(t->num_rows, 6);
    for (size_t c = 0; c < b->n_columns; c++) {
        assert_og_ok(arrow_array_validate(t->columns[c]));
        for (int i = 0; i < 6; i++)
            assert_int_equal(arrow_compare_rows(t->columns[c], i, b->columns[c], idx[i]), 0);
    }
    arrow_batch_free(t);
    /* -1 gives null rows */
    int64_t idx2[] = {-1, 7};
    arrow_array *a;
    assert_og_ok(arrow_take(&a, b->columns[14], idx2, 2));
    assert_false(arrow_array_is_valid(a, 0));
    assert_int_equal(arrow_compare_rows(a, 1, b->columns[14], 7), 0);
    arrow_array_free(a);
    int64_t bad[] = {50};
    assert_og_error(arrow_take(&a, b->columns[0], bad, 1), OG_E_BAD_REQUEST);
    assert_og_error(arrow_batch_take(&t, b, idx2, 2), OG_E_BAD_REQUEST); /* id not nullable */

    /* filter by "i32 > 100" (nulls dropped) */
    arrow_scalar sc = {.kind = ARROW_INT64, .i = 100};
    arrow_array *mask;
    assert_og_ok(arrow_compare_scalar(&mask, b->columns[2], ARROW_CMP_GT, &sc));
    assert_int_equal(mask->null_count, b->columns[2]->null_count);
    arrow_batch *f;
    assert_og_ok(arrow_batch_filter(&f, b, mask));
    int64_t want = 0;
    for (int64_t r = 0; r < 50; r++)
        want += (r % 3 != 2) && (r * 10 - 500 > 100);
    assert_int_equal(f->num_rows, want);
    for (int64_t i = 0; i < f->num_rows; i++)
        assert_true(arrow_array_get_int(f->columns[2], i) > 100);
    arrow_batch_free(f);
    arrow_array_free(mask);
    assert_og_error(arrow_filter(&a, b->columns[0], b->columns[0]), OG_E_BAD_REQUEST);
    arrow_batch_free(b);
}

static void test_compare(void **state)
{
    (void)state;
    double dv[] = {1.0, -0.0, 0.0, NAN, -INFINITY, 2.5};
    arrow_type ft = arrow_type_simple(ARROW_FLOAT64);
    arrow_builder *bb;
    assert_og_ok(arrow_builder_new(&bb, &ft));
    for (int i = 0; i < 6; i++)
        assert_og_ok(arrow_builder_append_double(bb, dv[i]));
    assert_og_ok(arrow_builder_append_null(bb));
    arrow_array *fa;
    assert_og_ok(arrow_builder_finish(bb, &fa));
    arrow_builder_free(bb);
    assert_int_equal(arrow_compare_rows(fa, 1, fa, 2), 0); /* -0 == 0 */
    assert_true(arrow_compare_rows(fa, 3, fa, 5) > 0);     /* NaN after numbers */
    assert_int_equal(arrow_compare_rows(fa, 3, fa, 3), 0); /* NaN == NaN in total order */
    assert_true(arrow_compare_rows(fa, 6, fa, 4) < 0);     /* null first */
    assert_true(arrow_compare_rows(fa, 4, fa, 1) < 0);
    uint64_t h[7];
    arrow_hash_rows(fa, h, false);
    assert_true(h[1] == h[2]);
    assert_true(h[0] != h[5]);

    arrow_scalar s = {.kind = ARROW_FLOAT64, .d = 1.0};
    arrow_array *m;
    assert_og_ok(arrow_compare_scalar(&m, fa, ARROW_CMP_GE, &s));
    bool want[] = {true, false, false, true, false, true};
    for (int i = 0; i < 6; i++)
        assert_int_equal(arrow_array_get_bool(m, i), want[i]);
    assert_false(arrow_array_is_valid(m, 6));
    arrow_array_free(m);
    arrow_scalar bad = {.kind = ARROW_BINARY, .bytes = "x", .n_bytes = 1};
    assert_og_error(arrow_compare_scalar(&m, fa, ARROW_CMP_EQ, &bad), OG_E_BAD_REQUEST);

    /* unsigned vs negative scalar, strings */
    arrow_batch *b;
    assert_og_ok(fx_batch(&b, 0, 30));
    arrow_scalar neg = {.kind = ARROW_INT64, .i = -1};
    assert_og_ok(arrow_compare_scalar(&m, b->columns[4], ARROW_CMP_GT, &neg));
    for (int i = 0; i < 30; i++)
        assert_true(arrow_array_get_bool(m, i));
    arrow_array_free(m);
    arrow_scalar str = {.kind = ARROW_UTF8, .bytes = "str2", .n_bytes = 4};
    assert_og_ok(arrow_compare_scalar(&m, b->columns[7], ARROW_CMP_LT, &str));
    assert_true(arrow_array_get_bool(m, 1));  /* "str1-é" < "str2" */
    assert_false(arrow_array_get_bool(m, 3)); /* "str3-é" */
    assert_true(arrow_array_get_bool(m, 0));  /* "" */
    assert_false(arrow_array_is_valid(m, 2));
    arrow_array_free(m);
    /* elementwise: a column with itself */
    assert_og_ok(arrow_compare(&m, b->columns[14], ARROW_CMP_EQ, b->columns[14]));
    for (int i = 0; i < 30; i++)
        assert_int_equal(arrow_array_is_valid(m, i), arrow_array_is_valid(b->columns[14], i));
    arrow_array_free(m);
    assert_og_error(arrow_compare(&m, b->columns[0], ARROW_CMP_EQ, b->columns[2]),
                    OG_E_BAD_REQUEST);
    /* hash: combining columns; equal rows hash equal */
    uint64_t hh[30];
    arrow_hash_rows(b->columns[16], hh, false);
    arrow_hash_rows(b->columns[7], hh, true);
    int64_t two[] = {4, 4};
    arrow_batch *t;
    assert_og_ok(arrow_batch_take(&t, b, two, 2));
    uint64_t ht[2];
    arrow_hash_rows(t->columns[16], ht, false);
    arrow_hash_rows(t->columns[7], ht, true);
    assert_true(ht[0] == hh[4] && ht[1] == hh[4]);
    assert_true(hh[4] != hh[5]);
    arrow_batch_free(t);
    arrow_batch_free(b);
    arrow_array_free(fa);
}

static void test_sort(void **state)
{
    (void)state;
    int64_t k1[] = {3, 1, 2, 1, 0, 2, 9};
    bool v1[] = {true, true, true, true, false, true, false};
    int64_t k2[] = {0, 5, 1, 4, 0, 0, 0};
    arrow_array *a = int_array(k1, v1, 7, ARROW_INT32);
    arrow_array *b = int_array(k2, NULL, 7, ARROW_INT64);
    int64_t out[7];
    arrow_sort_key keys[2] = {{a, false, false}, {b, true, false}};
    assert_og_ok(arrow_sort_indices(out, keys, 2, 7));
    /* asc a (nulls last), then desc b: 1(b5)=1, 1(b4)=3, 2(b1)=2, 2(b0)=5, 3=0, null=4, null=6 */
    int64_t want[] = {1, 3, 2, 5, 0, 4, 6};
    assert_memory_equal(out, want, sizeof want);
    arrow_sort_key k3[1] = {{a, true, true}};
    assert_og_ok(arrow_sort_indices(out, k3, 1, 7));
    int64_t want2[] = {4, 6, 0, 2, 5, 1, 3}; /* nulls first, stable among equal keys */
    assert_memory_equal(out, want2, sizeof want2);
    assert_og_error(arrow_sort_indices(out, k3, 1, 6), OG_E_BAD_REQUEST);

    /* a larger sort agrees with pairwise compare */
    arrow_batch *fb;
    assert_og_ok(fx_batch(&fb, 0, 500));
    int64_t *idx = malloc(500 * sizeof *idx);
    arrow_sort_key ks[2] = {{fb->columns[7], false, true}, {fb->columns[0], true, true}};
    assert_og_ok(arrow_sort_indices(idx, ks, 2, 500));
    for (int i = 1; i < 500; i++) {
        int c = arrow_compare_rows(fb->columns[7], idx[i - 1], fb->columns[7], idx[i]);
        assert_true(c <= 0);
        if (c == 0) assert_true(idx[i - 1] > idx[i]);
    }
    free(idx);
    arrow_batch_free(fb);
    arrow_array_free(a);
    arrow_array_free(b);
}

static int key_memcmp(const uint8_t *d, const size_t *o, int64_t x, int64_t y)
{
    size_t lx = o[x + 1] - o[x], ly = o[y + 1] - o[y];
    int c = memcmp(d + o[x], d + o[y], lx < ly ? lx : ly);
    if (c) return c < 0 ? -1 : 1;
    return lx < ly ? -1 : (lx > ly ? 1 : 0);
}

static void test_sort_keys_encode(void **state)
{
    (void)state;
    arrow_batch *b;
    assert_og_ok(fx_batch(&b, 0, 400));
    /* every column alone, both directions and null placements, then a composite key */
    for (size_t c = 0; c < b->n_columns + 1; c++)
        for (int mode = 0; mode < 4; mode++) {
            arrow_sort_key keys[3];
            size_t nk = 1;
            if (c < b->n_columns) {
                keys[0] = (arrow_sort_key){b->columns[c], mode & 1, (mode & 2) != 0};
            } else {
                keys[0] = (arrow_sort_key){b->columns[16], mode & 1, true};
                keys[1] = (arrow_sort_key){b->columns[1], !(mode & 1), false};
                keys[2] = (arrow_sort_key){b->columns[6], mode & 1, (mode & 2) != 0};
                nk = 3;
            }
            uint8_t *data;
            size_t offs[401];
            assert_og_ok(arrow_sort_keys_encode(&data, offs, keys, nk, 400));
            int64_t idx[400];
            assert_og_ok(arrow_sort_indices(idx, keys, nk, 400));
            for (int i = 1; i < 400; i++)
                assert_true(key_memcmp(data, offs, idx[i - 1], idx[i]) <= 0);
            /* equal keys exactly when the rows compare equal on every key */
            for (int64_t x = 0; x < 400; x += 7)
                for (int64_t y = 0; y < 400; y += 3) {
                    bool same = true;
                    for (size_t k = 0; k < nk; k++)
                        same =
                            same && arrow_compare_rows(keys[k].column, x, keys[k].column, y) == 0;
                    assert_int_equal(key_memcmp(data, offs, x, y) == 0, same);
                }
            core_free(data);
        }
    arrow_batch_free(b);
}

static void test_concat_and_null(void **state)
{
    (void)state;
    arrow_batch *x, *y, *z, *e, *all;
    assert_og_ok(fx_batch(&x, 0, 21));
    assert_og_ok(fx_batch(&e, 21, 0));
    assert_og_ok(fx_batch(&y, 21, 14));
    assert_og_ok(fx_batch(&z, 35, 9));
    assert_og_ok(fx_batch(&all, 0, 44));
    for (size_t c = 0; c < x->n_columns; c++) {
        arrow_array *parts[4] = {x->columns[c], e->columns[c], y->columns[c], z->columns[c]};
        arrow_array *cat;
        assert_og_ok(arrow_array_concat(&cat, parts, 4));
        assert_og_ok(arrow_array_validate(cat));
        assert_true(arrow_array_equal(cat, all->columns[c]));
        arrow_array_free(cat);
        arrow_array *nul;
        assert_og_ok(arrow_array_new_null(&nul, &x->columns[c]->type, 5));
        assert_int_equal(nul->null_count, 5);
        assert_og_ok(arrow_array_validate(nul));
        arrow_builder *nb;
        arrow_array *built;
        assert_og_ok(arrow_builder_new(&nb, &x->columns[c]->type));
        assert_og_ok(arrow_builder_append_nulls(nb, 5));
        assert_og_ok(arrow_builder_finish(nb, &built));
        arrow_builder_free(nb);
        assert_true(arrow_array_equal(nul, built));
        arrow_array_free(built);
        arrow_array_free(nul);
    }
    arrow_batch_free(x);
    arrow_batch_free(y);
    arrow_batch_free(z);
    arrow_batch_free(e);
    arrow_batch_free(all);
}

/* Fail every allocation in turn: each failure ends in OG_E_NOMEM, and ASan sees no leak. */
static void test_alloc_failures(void **state)
{
    (void)state;
    int failures = 0;
    arrow_batch *src;
    assert_og_ok(fx_batch(&src, 0, 12));
    for (uint64_t n = 1; n < 100000; n++) {
        core_alloc_fail_at(n, 0);
        arrow_batch *b = NULL, *t = NULL, *b2 = NULL;
        arrow_array *cols[18] = {0};
        int rc = 0;
        /* builders (through concat), batch, export, take, import */
        for (size_t c = 0; c < src->n_columns && rc == 0; c++) {
            arrow_array *parts[2] = {src->columns[c], src->columns[c]};
            rc = arrow_array_concat(&cols[c], parts, 2);
        }
        if (rc == 0) rc = arrow_batch_new(&b, &src->schema, cols, src->n_columns);
        struct ArrowArray ca;
        memset(&ca, 0, sizeof ca);
        int64_t idx[] = {3, 1, 20};
        if (rc == 0) rc = arrow_batch_export(b, &ca);
        if (rc == 0) rc = arrow_batch_take(&t, b, idx, 3);
        if (rc == 0) rc = arrow_batch_import(&b2, &b->schema, &ca);
        if (ca.release) ca.release(&ca);
        uint64_t injected = core_alloc_injected();
        core_alloc_fail_at(0, 0);
        if (rc == 0) assert_true(arrow_batch_equal(b, b2));
        for (size_t c = 0; c < 18; c++)
            arrow_array_free(cols[c]);
        arrow_batch_free(b);
        arrow_batch_free(t);
        arrow_batch_free(b2);
        if (injected == 0) {
            assert_og_ok(rc);
            break;
        }
        assert_int_equal(rc, OG_E_NOMEM);
        failures++;
    }
    arrow_batch_free(src);
    assert_true(failures > 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builders_and_accessors),
        cmocka_unit_test(test_builder_errors),
        cmocka_unit_test(test_cdata_roundtrip),
        cmocka_unit_test(test_cdata_nested_offsets),
        cmocka_unit_test(test_cdata_bad_input),
        cmocka_unit_test(test_stream),
        cmocka_unit_test(test_take_filter),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_sort),
        cmocka_unit_test(test_sort_keys_encode),
        cmocka_unit_test(test_concat_and_null),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
