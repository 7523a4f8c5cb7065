/* End-to-end checksums of the files this engine writes (issue 16): every data file and
 * deletion file records the XXH3-64 of its bytes in its manifest record (og_xxh3), the record
 * survives the manifest's encoding, and a reader that holds the whole file checks it: a
 * flipped byte is OG_E_CORRUPT naming the file, never rows. A record without a checksum (a
 * file lancedb or an older build wrote) is read unchecked. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_data_file_records_checksum, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flipped_data_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deletion_file_checksum, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
