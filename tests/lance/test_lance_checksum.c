/* End-to-end checksums of the files this engine writes (issue 16): every data file and
 * deletion file records the XXH3-64 of its bytes in its manifest record (og_xxh3), the record
 * survives the manifest's encoding, and a reader that holds the whole file checks it: a
 * flipped byte is OG_E_CORRUPT naming the file, never rows. A record without a checksum (a
 * file lancedb or an older build wrote) is read unchecked. A data file read in ranges (over
 * 4 MiB) also records a checksum per block, and every ranged read checks the blocks it
 * touches (issue 33, F6). */
#include "testutil.h"
#include "dataset_fixture.h"

#include "core/buf.h"
#include "core/hash.h"
#include "lance/deletion.h"
#include "lance/file2.h"
#include "lance/paths.h"

#include <string.h>

typedef struct fixture {
    char dir[256];
    store *s;
    arrow_schema schema;
    lance_dataset *ds;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->s = test_sandbox_store(f->dir, sizeof f->dir, "checksum");
    fx_schema(&f->schema);
    assert_og_ok(lance_dataset_create(&f->ds, f->s, "t.lance", &f->schema, NULL));
    arrow_batch *b = fx_batch(&f->schema, 0, 50);
    lance_dataset *nd = NULL;
    assert_og_ok(lance_dataset_append(&nd, f->ds, &b, 1));
    arrow_batch_free(b);
    lance_dataset_free(f->ds);
    f->ds = nd;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    lance_dataset_free(f->ds);
    arrow_schema_clear(&f->schema);
    test_sandbox_store_done(f->dir, f->s);
    free(f);
    return 0;
}

static const Lance__Table__DataFile *first_file(const lance_dataset *ds, char key[STORE_KEY_MAX])
{
    assert_true(ds->m->pb->n_fragments >= 1);
    const Lance__Table__DataFile *df = ds->m->pb->fragments[0]->files[0];
    assert_og_ok(lance_key(key, ds->root, "data/", df->path));
    return df;
}

static void flip(store *s, const char *key, size_t at)
{
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(store_get(s, key, 0, STORE_ALL, &b));
    assert_true(at < b.len);
    b.data[at] ^= 0x20;
    assert_og_ok(store_put(s, key, b.data, b.len, 0));
    core_buf_free(&b);
}

/* The writer's info, the manifest's record (after reopening: encoded and decoded) and the
 * stored bytes agree on the checksum. */
static void test_data_file_records_checksum(void **state)
{
    fixture *f = *state;
    lance_dataset *re = NULL;
    assert_og_ok(lance_dataset_open(&re, f->s, "t.lance", 0, LANCE_ACCESS_READ));
    char key[STORE_KEY_MAX];
    const Lance__Table__DataFile *df = first_file(re, key);
    assert_true(df->has_og_xxh3);
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(store_get(f->s, key, 0, STORE_ALL, &b));
    assert_int_equal(df->og_xxh3, core_hash64(b.data, b.len, 0));
    assert_int_equal(df->file_size_bytes, b.len);
    core_buf_free(&b);
    lance_dataset_free(re);

    /* finish_bytes reports the hash of exactly the bytes it returns */
    lance_file2_writer *w = NULL;
    assert_og_ok(lance_file2_writer_new(&w, &f->schema, NULL));
    arrow_batch *batch = fx_batch(&f->schema, 0, 10);
    assert_og_ok(lance_file2_writer_write(w, batch));
    arrow_batch_free(batch);
    lance_file2_info info;
    assert_og_ok(lance_file2_writer_finish_bytes(w, &b, &info));
    lance_file2_writer_free(w);
    assert_int_equal(info.xxh3, core_hash64(b.data, b.len, 0));
    assert_int_equal(info.size, b.len);
    core_buf_free(&b);
}

/* A flipped byte in a small data file: a scan fails OG_E_CORRUPT naming the file; the same
 * bytes opened without the checksum (a record that has none) are not refused for it. */
static void test_flipped_data_file(void **state)
{
    fixture *f = *state;
    char key[STORE_KEY_MAX];
    const Lance__Table__DataFile *df = first_file(f->ds, key);
    uint64_t recorded = df->og_xxh3;
    flip(f->s, key, 2); /* inside the first column's page data */
    arrow_batch *b = NULL;
    assert_og_error(lance_dataset_scan_all(&b, f->ds, NULL), OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, key));
    assert_non_null(strstr(og_error_last()->message, "checksum"));
    assert_null(b);

    lance_file2_read_options ro = LANCE_FILE2_READ_OPTIONS_INIT;
    Lance__Table__DataFile none = LANCE__TABLE__DATA_FILE__INIT;
    lance_file2_expect(&ro, &none); /* no checksum recorded: nothing asked */
    assert_int_equal(ro.flags & LANCE_FILE2_READ_CHECKSUM, 0);
    lance_file2_reader *r = NULL;
    assert_og_ok(lance_file2_open(&r, f->s, key, 0, &ro));
    lance_file2_close(r);
    lance_file2_expect(&ro, df);
    assert_int_equal(ro.flags & LANCE_FILE2_READ_CHECKSUM, LANCE_FILE2_READ_CHECKSUM);
    assert_int_equal(ro.xxh3, recorded);
    assert_og_error(lance_file2_open(&r, f->s, key, 0, &ro), OG_E_CORRUPT);
    assert_null(r);
}

/* A deletion file records its checksum; a damaged one is refused naming it, by the checksum
 * even where the damaged bytes would still parse. */
static void test_deletion_file_checksum(void **state)
{
    fixture *f = *state;
    lance_term t = {"id", ARROW_CMP_LT, {.kind = ARROW_INT64, .i = 5}};
    lance_filter filt = {&t, 1};
    lance_dataset *nd = NULL;
    assert_og_ok(lance_dataset_delete(&nd, f->ds, &filt));
    const Lance__Table__DataFragment *fr = nd->m->pb->fragments[0];
    const Lance__Table__DeletionFile *del = fr->deletion_file;
    assert_non_null(del);
    assert_true(del->has_og_xxh3);
    char name[96], key[STORE_KEY_MAX];
    assert_og_ok(
        lance_deletion_file_name(name, sizeof name, fr->id, del->read_version, del->id, 1));
    assert_og_ok(lance_key(key, "t.lance", "_deletions/", name));
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(store_get(f->s, key, 0, STORE_ALL, &b));
    assert_int_equal(del->og_xxh3, core_hash64(b.data, b.len, 0));
    roaring_bitmap_t *rows = NULL;
    assert_og_ok(lance_dataset_deletion_load(nd, fr->id, del, &rows));
    assert_int_equal(roaring_bitmap_get_cardinality(rows), 5);
    roaring_bitmap_free(rows);
    /* the last byte belongs to a container's values: still a valid bitmap, different rows */
    flip(f->s, key, b.len - 1);
    core_buf_free(&b);
    assert_og_error(lance_dataset_deletion_load(nd, fr->id, del, &rows), OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, key));
    assert_non_null(strstr(og_error_last()->message, "checksum"));
    assert_null(rows);
    lance_dataset_free(nd);
}

/* ---- a file read in ranges: per-block checksums (issue 33, F6) ------------------------- */

/* fx_schema rows whose names are 120 bytes long: 50000 rows make a file of about 7 MiB, laid
 * out column after column (id, then name, then score), larger than
 * LANCE_FILE2_SMALL_FILE_BYTES, so it is read in ranges and never whole. */
static arrow_batch *big_batch(const arrow_schema *s, int64_t n)
{
    arrow_builder *b[3];
    for (int c = 0; c < 3; c++)
        assert_og_ok(arrow_builder_new(&b[c], &s->fields[c].type));
    for (int64_t i = 0; i < n; i++) {
        char name[128];
        snprintf(name, sizeof name, "%0120lld", (long long)i);
        assert_og_ok(arrow_builder_append_int(b[0], i));
        assert_og_ok(arrow_builder_append_str(b[1], name));
        assert_og_ok(arrow_builder_append_double(b[2], (double)i * 0.5));
    }
    arrow_array *cols[3];
    for (int c = 0; c < 3; c++) {
        assert_og_ok(arrow_builder_finish(b[c], &cols[c]));
        arrow_builder_free(b[c]);
    }
    arrow_batch *out = NULL;
    assert_og_ok(arrow_batch_new(&out, s, cols, 3));
    for (int c = 0; c < 3; c++)
        arrow_array_free(cols[c]);
    return out;
}

#define BIG_ROWS 50000

static int setup_big(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->s = test_sandbox_store(f->dir, sizeof f->dir, "checksum-big");
    fx_schema(&f->schema);
    assert_og_ok(lance_dataset_create(&f->ds, f->s, "t.lance", &f->schema, NULL));
    arrow_batch *b = big_batch(&f->schema, BIG_ROWS);
    lance_dataset *nd = NULL;
    assert_og_ok(lance_dataset_append(&nd, f->ds, &b, 1));
    arrow_batch_free(b);
    lance_dataset_free(f->ds);
    f->ds = nd;
    *state = f;
    return 0;
}

/* Scan the columns named (NULL: all): 0 and the sums of id and score, or the error. */
static int scan_sums(const lance_dataset *ds, const char *const *cols, size_t n, int64_t *ids,
                     double *scores)
{
    lance_scan_options o = LANCE_SCAN_OPTIONS_INIT;
    o.columns = cols;
    o.n_columns = n;
    arrow_batch *b = NULL;
    int rc = lance_dataset_scan_all(&b, ds, &o);
    if (rc) return rc;
    *ids = 0;
    *scores = 0;
    assert_int_equal(b->num_rows, BIG_ROWS);
    for (size_t c = 0; c < b->schema.n_fields; c++)
        for (int64_t i = 0; i < b->num_rows; i++) {
            if (strcmp(b->schema.fields[c].name, "id") == 0)
                *ids += arrow_array_get_int(b->columns[c], i);
            if (strcmp(b->schema.fields[c].name, "score") == 0)
                *scores += arrow_array_get_double(b->columns[c], i);
        }
    arrow_batch_free(b);
    return 0;
}

/* The record lists one checksum per block of the stored bytes, the last block partial. */
static void test_big_file_records_blocks(void **state)
{
    fixture *f = *state;
    lance_dataset *re = NULL;
    assert_og_ok(lance_dataset_open(&re, f->s, "t.lance", 0, LANCE_ACCESS_READ));
    char key[STORE_KEY_MAX];
    const Lance__Table__DataFile *df = first_file(re, key);
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(store_get(f->s, key, 0, STORE_ALL, &b));
    assert_true(b.len > LANCE_FILE2_SMALL_FILE_BYTES);
    assert_int_not_equal(b.len % LANCE_FILE2_BLOCK_BYTES, 0);
    assert_true(df->has_og_block_bytes);
    assert_int_equal(df->og_block_bytes, LANCE_FILE2_BLOCK_BYTES);
    size_t nb = (b.len + LANCE_FILE2_BLOCK_BYTES - 1) / LANCE_FILE2_BLOCK_BYTES;
    assert_int_equal(df->n_og_block_xxh3, nb);
    for (size_t i = 0; i < nb; i++) {
        size_t at = i * LANCE_FILE2_BLOCK_BYTES, n = b.len - at;
        if (n > LANCE_FILE2_BLOCK_BYTES) n = LANCE_FILE2_BLOCK_BYTES;
        assert_int_equal(df->og_block_xxh3[i], core_hash64(b.data + at, n, 0));
    }
    core_buf_free(&b);
    lance_dataset_free(re);

    /* a small file records none: it is read whole and checked by og_xxh3 */
    lance_file2_writer *w = NULL;
    assert_og_ok(lance_file2_writer_new(&w, &f->schema, NULL));
    arrow_batch *batch = fx_batch(&f->schema, 0, 10);
    assert_og_ok(lance_file2_writer_write(w, batch));
    arrow_batch_free(batch);
    lance_file2_info info;
    assert_og_ok(lance_file2_writer_finish_bytes(w, &b, &info));
    lance_file2_writer_free(w);
    assert_int_equal(info.n_blocks, 0);
    assert_null(info.block_xxh3);
    core_buf_free(&b);
}

/* One flipped bit at several places of a 7 MiB file: a query that reads the damaged bytes
 * fails OG_E_CORRUPT naming the file and the block; one that does not answers correctly. */
static void test_big_file_flipped_bits(void **state)
{
    fixture *f = *state;
    char key[STORE_KEY_MAX];
    const Lance__Table__DataFile *df = first_file(f->ds, key);
    const uint64_t size = df->file_size_bytes;
    const int64_t want_ids = (int64_t)BIG_ROWS * (BIG_ROWS - 1) / 2;
    const double want_scores = (double)want_ids * 0.5;
    const char *const id_score[] = {"id", "score"}, *const score[] = {"score"};
    int64_t ids;
    double scores;
    assert_og_ok(scan_sums(f->ds, NULL, 0, &ids, &scores));
    assert_int_equal(ids, want_ids);

    /* first block, in the id column's values (row 1's id: a bit flip there is a valid value) */
    flip(f->s, key, 8 + 1);
    assert_og_error(scan_sums(f->ds, id_score, 2, &ids, &scores), OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, key));
    assert_non_null(strstr(og_error_last()->message, "checksum mismatch in block 0 "));
    assert_og_ok(scan_sums(f->ds, score, 1, &ids, &scores)); /* another column: unharmed */
    assert_true(scores == want_scores);
    flip(f->s, key, 8 + 1);

    /* a middle block, inside the name column: only a query reading names sees it */
    uint64_t mid = size / 2;
    flip(f->s, key, (size_t)mid);
    assert_og_ok(scan_sums(f->ds, id_score, 2, &ids, &scores));
    assert_int_equal(ids, want_ids);
    assert_true(scores == want_scores);
    assert_og_error(scan_sums(f->ds, NULL, 0, &ids, &scores), OG_E_CORRUPT);
    char block[64];
    snprintf(block, sizeof block, "block %llu ",
             (unsigned long long)(mid / LANCE_FILE2_BLOCK_BYTES));
    assert_non_null(strstr(og_error_last()->message, key));
    assert_non_null(strstr(og_error_last()->message, block));
    flip(f->s, key, (size_t)mid);

    /* the last, partial block (metadata and footer): every open reads it */
    uint64_t last = size - 100;
    flip(f->s, key, (size_t)last);
    assert_og_error(scan_sums(f->ds, score, 1, &ids, &scores), OG_E_CORRUPT);
    snprintf(block, sizeof block, "block %llu ",
             (unsigned long long)(last / LANCE_FILE2_BLOCK_BYTES));
    assert_non_null(strstr(og_error_last()->message, block));
    flip(f->s, key, (size_t)last);

    /* the score column, in the block before the last */
    uint64_t sc = (size / LANCE_FILE2_BLOCK_BYTES - 1) * LANCE_FILE2_BLOCK_BYTES + 17;
    flip(f->s, key, (size_t)sc);
    assert_og_error(scan_sums(f->ds, score, 1, &ids, &scores), OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, key));
    flip(f->s, key, (size_t)sc);

    /* undamaged again: the whole table reads */
    assert_og_ok(scan_sums(f->ds, NULL, 0, &ids, &scores));
    assert_int_equal(ids, want_ids);
}

/* Block checks cost no store op: a read with the list makes exactly the gets a read without
 * it makes (only widened to block boundaries). A record without the list (lancedb, older
 * builds) reads as before: a damaged id is a wrong value, not an error. A list that does not
 * cover the file is refused at open. */
static void test_big_file_read_cost(void **state)
{
    fixture *f = *state;
    char key[STORE_KEY_MAX];
    const Lance__Table__DataFile *df = first_file(f->ds, key);
    lance_file2_read_options with = LANCE_FILE2_READ_OPTIONS_INIT;
    lance_file2_read_options without = LANCE_FILE2_READ_OPTIONS_INIT;
    lance_file2_expect(&with, df);
    assert_int_equal(with.n_blocks, df->n_og_block_xxh3);
    uint64_t gets[2], bytes[2];
    const size_t cols[] = {0, 2};
    for (int k = 0; k < 2; k++) {
        store_counts a, b, d;
        store_counts_get(f->s, &a);
        lance_file2_reader *r = NULL;
        assert_og_ok(lance_file2_open(&r, f->s, key, df->file_size_bytes, k ? &with : &without));
        arrow_batch *out = NULL;
        assert_og_ok(lance_file2_read(r, cols, 2, 0, UINT64_MAX, &out));
        assert_int_equal(arrow_array_get_int(out->columns[0], 1), 1);
        arrow_batch_free(out);
        lance_file2_close(r);
        store_counts_get(f->s, &b);
        store_counts_diff(&b, &a, &d);
        gets[k] = d.ops[STORE_OP_GET];
        bytes[k] = d.bytes_read;
    }
    assert_int_equal(gets[0], gets[1]);
    assert_true(bytes[1] >= bytes[0]);
    /* at most two partial blocks more per get */
    assert_true(bytes[1] - bytes[0] <= gets[1] * 2 * (uint64_t)LANCE_FILE2_BLOCK_BYTES);
    print_message("read of id+score: %llu gets, %llu bytes without blocks, %llu with\n",
                  (unsigned long long)gets[1], (unsigned long long)bytes[0],
                  (unsigned long long)bytes[1]);

    /* no list: row 1's id damaged reads as a wrong value (what F6 was) */
    flip(f->s, key, 8 + 1);
    lance_file2_reader *r = NULL;
    assert_og_ok(lance_file2_open(&r, f->s, key, df->file_size_bytes, &without));
    arrow_batch *out = NULL;
    assert_og_ok(lance_file2_read(r, cols, 2, 0, 2, &out));
    assert_int_not_equal(arrow_array_get_int(out->columns[0], 1), 1);
    arrow_batch_free(out);
    lance_file2_close(r);
    assert_og_ok(lance_file2_open(&r, f->s, key, df->file_size_bytes, &with));
    assert_og_error(lance_file2_read(r, cols, 2, 0, 2, &out), OG_E_CORRUPT);
    assert_null(out);
    lance_file2_close(r);
    flip(f->s, key, 8 + 1);

    /* a list that does not fit the file */
    lance_file2_read_options bad = with;
    bad.n_blocks--;
    assert_og_error(lance_file2_open(&r, f->s, key, df->file_size_bytes, &bad), OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, "do not cover"));
    bad = with;
    bad.block_bytes = 1;
    assert_og_error(lance_file2_open(&r, f->s, key, df->file_size_bytes, &bad), OG_E_CORRUPT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_data_file_records_checksum, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flipped_data_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deletion_file_checksum, setup, teardown),
        cmocka_unit_test_setup_teardown(test_big_file_records_blocks, setup_big, teardown),
        cmocka_unit_test_setup_teardown(test_big_file_flipped_bits, setup_big, teardown),
        cmocka_unit_test_setup_teardown(test_big_file_read_cost, setup_big, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
