/* Stable row ids: RowIdSequence round trips for every segment kind and array width, exact
 * bytes of the common range form, LSB-first bitmaps, version sequences, next_row_id
 * bookkeeping, and corrupt sequences. */
#include "testutil.h"

#include "core/alloc.h"
#include "lance/manifest.h"
#include "lance/proto/rowids.pb-c.h"
#include "lance/rowids.h"

#include <stdlib.h>
#include <string.h>

static uint64_t *expand(const lance_rowid_seq *s, size_t *n)
{
    uint64_t *ids = NULL;
    assert_og_ok(lance_rowid_seq_expand(s, &ids, n));
    assert_int_equal(*n, lance_rowid_seq_len(s));
    return ids;
}

static void round_trip(const lance_rowid_seq *in, const uint64_t *want, size_t nwant)
{
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(lance_rowid_seq_encode(&b, in));
    lance_rowid_seq out;
    assert_og_ok(lance_rowid_seq_decode(&out, b.data, b.len, "seq"));
    assert_int_equal(out.n, in->n);
    for (size_t i = 0; i < in->n; i++)
        assert_int_equal(out.segs[i].kind, in->segs[i].kind);
    size_t n;
    uint64_t *ids = expand(&out, &n);
    assert_int_equal(n, nwant);
    for (size_t i = 0; i < n; i++)
        if (ids[i] != want[i])
            fail_msg("id %zu: %llu != %llu", i, (unsigned long long)ids[i],
                     (unsigned long long)want[i]);
    core_free(ids);
    lance_rowid_seq_free(&out);
    core_buf_free(&b);
}

static void test_range_bytes(void **state)
{
    (void)state;
    core_buf b = CORE_BUF_INIT;
    uint64_t next = 100;
    assert_og_ok(lance_rowids_assign(&b, &next, 5));
    assert_int_equal(next, 105);
    /* RowIdSequence{segments: [U64Segment{range: {start 100, end 105}}]} */
    static const unsigned char want[] = {0x0a, 0x06, 0x0a, 0x04, 0x08, 0x64, 0x10, 0x69};
    assert_int_equal(b.len, sizeof want);
    assert_memory_equal(b.data, want, sizeof want);
    /* Starting at 0: start is the proto3 default and not written. */
    next = 0;
    assert_og_ok(lance_rowids_assign(&b, &next, 3));
    static const unsigned char want0[] = {0x0a, 0x04, 0x0a, 0x02, 0x10, 0x03};
    assert_int_equal(b.len, sizeof want0);
    assert_memory_equal(b.data, want0, sizeof want0);
    assert_int_equal(next, 3);
    next = UINT64_MAX - 1;
    assert_og_error(lance_rowids_assign(&b, &next, 2), OG_E_RESOURCE_LIMIT);
    assert_true(next == UINT64_MAX - 1);
    core_buf_free(&b);
}

static void test_segment_kinds(void **state)
{
    (void)state;
    /* range + range with holes + bitmap + sorted arrays (u16, u32, u64) + unsorted array. */
    uint64_t holes[] = {12, 15};
    uint8_t bitmap[] = {0x05, 0x80}; /* LSB-first: offsets 0, 2, 15 */
    uint64_t s16[] = {1000, 1001, 60000};
    uint64_t s32[] = {7, 70000, 4000000000ull};
    uint64_t s64[] = {3, (uint64_t)1 << 40};
    uint64_t arr[] = {900, 5, 77, 6};
    lance_segment segs[] = {
        {.kind = LANCE_SEG_RANGE, .start = 0, .end = 3},
        {.kind = LANCE_SEG_RANGE_HOLES, .start = 10, .end = 16, .values = holes, .n_values = 2},
        {.kind = LANCE_SEG_RANGE_BITMAP, .start = 20, .end = 36, .bitmap = bitmap, .bitmap_len = 2},
        {.kind = LANCE_SEG_SORTED_ARRAY, .values = s16, .n_values = 3},
        {.kind = LANCE_SEG_SORTED_ARRAY, .values = s32, .n_values = 3},
        {.kind = LANCE_SEG_SORTED_ARRAY, .values = s64, .n_values = 2},
        {.kind = LANCE_SEG_ARRAY, .values = arr, .n_values = 4},
    };
    lance_rowid_seq seq = {segs, 7};
    uint64_t want[] = {0,     1,
                       2,     10,
                       11,    13,
                       14,    20,
                       22,    35,
                       1000,  1001,
                       60000, 7,
                       70000, 4000000000ull,
                       3,     (uint64_t)1 << 40,
                       900,   5,
                       77,    6};
    round_trip(&seq, want, sizeof want / sizeof *want);

    /* The array widths chosen: u16 offsets from the minimum, u32, then u64 values. */
    core_buf b = CORE_BUF_INIT;
    for (int k = 3; k <= 5; k++) {
        lance_rowid_seq one = {&segs[k], 1};
        assert_og_ok(lance_rowid_seq_encode(&b, &one));
        ProtobufCMessage *m = NULL;
        assert_og_ok(lance_pb_unpack(&m, &lance__table__row_id_sequence__descriptor, b.data, b.len,
                                     "seq", "seq"));
        Lance__Table__RowIdSequence *p = (Lance__Table__RowIdSequence *)m;
        const Lance__Table__EncodedU64Array *a = p->segments[0]->sorted_array;
        if (k == 3) {
            assert_int_equal(a->array_case, LANCE__TABLE__ENCODED_U64_ARRAY__ARRAY_U16_ARRAY);
            assert_int_equal(a->u16_array->base_value, 1000);
            assert_int_equal(a->u16_array->offsets.len, 6);
            assert_int_equal(a->u16_array->offsets.data[2], 1); /* 1001 - 1000 */
        } else if (k == 4) {
            assert_int_equal(a->array_case, LANCE__TABLE__ENCODED_U64_ARRAY__ARRAY_U32_ARRAY);
            assert_int_equal(a->u32_array->base_value, 7);
            assert_int_equal(a->u32_array->offsets.len, 12);
        } else {
            assert_int_equal(a->array_case, LANCE__TABLE__ENCODED_U64_ARRAY__ARRAY_U64_ARRAY);
            assert_int_equal(a->u64_array->values.len, 16);
            assert_int_equal(a->u64_array->values.data[0], 3);
        }
        lance_pb_free(m);
    }
    /* An empty sequence. */
    lance_rowid_seq none = {NULL, 0};
    round_trip(&none, NULL, 0);
    core_buf_free(&b);
}

static void expect_seq_corrupt(const lance_segment *s, const char *needle)
{
    lance_rowid_seq seq = {(lance_segment *)s, 1};
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(lance_rowid_seq_encode(&b, &seq));
    lance_rowid_seq out = {(lance_segment *)0x1, 7};
    assert_og_error(lance_rowid_seq_decode(&out, b.data, b.len, "frag 3 row ids"), OG_E_CORRUPT);
    assert_null(out.segs);
    assert_int_equal(out.n, 0);
    if (!strstr(og_error_last()->message, needle))
        fail_msg("'%s' not in '%s'", needle, og_error_last()->message);
    assert_non_null(strstr(og_error_last()->message, "frag 3 row ids"));
    core_buf_free(&b);
}

static void test_corrupt_sequences(void **state)
{
    (void)state;
    lance_segment r = {.kind = LANCE_SEG_RANGE, .start = 9, .end = 3};
    expect_seq_corrupt(&r, "after its end");
    r.start = 0;
    r.end = UINT64_MAX;
    expect_seq_corrupt(&r, "implausibly long");
    uint64_t hole_out[] = {2, 50};
    lance_segment h = {
        .kind = LANCE_SEG_RANGE_HOLES, .start = 0, .end = 10, .values = hole_out, .n_values = 2};
    expect_seq_corrupt(&h, "outside");
    uint64_t unsorted[] = {5, 4};
    lance_segment s = {.kind = LANCE_SEG_SORTED_ARRAY, .values = unsorted, .n_values = 2};
    expect_seq_corrupt(&s, "not increasing");
    uint8_t bm[1] = {0xff};
    lance_segment bmp = {
        .kind = LANCE_SEG_RANGE_BITMAP, .start = 0, .end = 9, .bitmap = bm, .bitmap_len = 1};
    expect_seq_corrupt(&bmp, "too short");

    /* Raw bytes: an odd-length u16 array, a segment with nothing set, protobuf garbage. */
    static const unsigned char odd[] = {0x0a, 0x07, 0x22, 0x05, 0x0a, 0x03, 0x12, 0x01, 0x00};
    static const unsigned char empty_seg[] = {0x0a, 0x00};
    static const unsigned char junk[] = {0x0a, 0x09, 0x01};
    const unsigned char *raws[] = {odd, empty_seg, junk};
    size_t lens[] = {sizeof odd, sizeof empty_seg, sizeof junk};
    for (int i = 0; i < 3; i++) {
        lance_rowid_seq out;
        assert_og_error(lance_rowid_seq_decode(&out, raws[i], lens[i], "raw"), OG_E_CORRUPT);
    }
    /* The sum of segments is bounded before anything is expanded. */
    lance_segment big[2] = {{.kind = LANCE_SEG_RANGE, .start = 0, .end = LANCE_ROWIDS_MAX_ROWS},
                            {.kind = LANCE_SEG_RANGE, .start = 0, .end = 1}};
    lance_rowid_seq two = {big, 2};
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(lance_rowid_seq_encode(&b, &two));
    lance_rowid_seq out;
    assert_og_error(lance_rowid_seq_decode(&out, b.data, b.len, "big"), OG_E_CORRUPT);
    /* Random flips never crash. */
    uint64_t holes[] = {12, 15};
    uint8_t bitmap[] = {0x05, 0x80};
    lance_segment segs[] = {
        {.kind = LANCE_SEG_RANGE_HOLES, .start = 10, .end = 16, .values = holes, .n_values = 2},
        {.kind = LANCE_SEG_RANGE_BITMAP, .start = 20, .end = 36, .bitmap = bitmap, .bitmap_len = 2},
        {.kind = LANCE_SEG_ARRAY, .values = holes, .n_values = 2}};
    lance_rowid_seq seq = {segs, 3};
    assert_og_ok(lance_rowid_seq_encode(&b, &seq));
    unsigned char *c = malloc(b.len);
    srand(9);
    for (int k = 0; k < 3000; k++) {
        memcpy(c, b.data, b.len);
        c[(size_t)rand() % b.len] ^= (unsigned char)(1 + rand() % 255);
        int rc = lance_rowid_seq_decode(&out, c, b.len, "flip");
        assert_true(rc == 0 || rc == OG_E_CORRUPT);
        if (rc == 0 && lance_rowid_seq_len(&out) < 100000) {
            uint64_t *ids = NULL;
            size_t n = 0;
            assert_og_ok(lance_rowid_seq_expand(&out, &ids, &n));
            core_free(ids);
        }
        lance_rowid_seq_free(&out);
    }
    free(c);
    core_buf_free(&b);
}

static void test_version_sequences(void **state)
{
    (void)state;
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(lance_version_seq_uniform(&b, 4, 7));
    /* {runs: [{span: {range: {end 4}}, version 7}]} */
    static const unsigned char want[] = {0x0a, 0x08, 0x0a, 0x04, 0x0a,
                                         0x02, 0x10, 0x04, 0x10, 0x07};
    assert_int_equal(b.len, sizeof want);
    assert_memory_equal(b.data, want, sizeof want);
    lance_version_seq s;
    assert_og_ok(lance_version_seq_decode(&s, b.data, b.len, "created"));
    uint64_t *v = NULL;
    assert_og_ok(lance_version_seq_expand(&s, 4, &v));
    for (int i = 0; i < 4; i++)
        assert_int_equal(v[i], 7);
    core_free(v);
    /* The runs must cover the fragment's rows exactly. */
    assert_og_error(lance_version_seq_expand(&s, 5, &v), OG_E_CORRUPT);
    lance_version_seq_free(&s);

    /* Several runs (after an update rewrote rows 2..3 at version 9). */
    lance_version_run runs[] = {
        {.span = {.kind = LANCE_SEG_RANGE, .start = 0, .end = 2}, .version = 3},
        {.span = {.kind = LANCE_SEG_RANGE, .start = 2, .end = 4}, .version = 9},
        {.span = {.kind = LANCE_SEG_RANGE, .start = 4, .end = 5}, .version = 3}};
    lance_version_seq in = {runs, 3};
    assert_og_ok(lance_version_seq_encode(&b, &in));
    assert_og_ok(lance_version_seq_decode(&s, b.data, b.len, "updated"));
    assert_int_equal(s.n, 3);
    assert_og_ok(lance_version_seq_expand(&s, 5, &v));
    uint64_t exp[] = {3, 3, 9, 9, 3};
    assert_memory_equal(v, exp, sizeof exp);
    core_free(v);
    lance_version_seq_free(&s);
    /* A run without a span. */
    static const unsigned char nospan[] = {0x0a, 0x02, 0x10, 0x01};
    assert_og_error(lance_version_seq_decode(&s, nospan, sizeof nospan, "bad"), OG_E_CORRUPT);
    core_buf_free(&b);
}

static void test_alloc_failures(void **state)
{
    (void)state;
    uint64_t holes[] = {12, 15};
    lance_segment segs[] = {
        {.kind = LANCE_SEG_RANGE, .start = 0, .end = 3},
        {.kind = LANCE_SEG_RANGE_HOLES, .start = 10, .end = 16, .values = holes, .n_values = 2}};
    lance_rowid_seq seq = {segs, 2};
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(lance_rowid_seq_encode(&b, &seq));
    for (uint64_t k = 1;; k++) {
        lance_rowid_seq out;
        core_alloc_fail_at(k, 0);
        int rc = lance_rowid_seq_decode(&out, b.data, b.len, "a");
        uint64_t inj = core_alloc_injected();
        core_alloc_fail_at(0, 0);
        if (!inj) {
            assert_og_ok(rc);
            lance_rowid_seq_free(&out);
            break;
        }
        assert_og_error(rc, OG_E_NOMEM);
    }
    core_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_range_bytes),       cmocka_unit_test(test_segment_kinds),
        cmocka_unit_test(test_corrupt_sequences), cmocka_unit_test(test_version_sequences),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
