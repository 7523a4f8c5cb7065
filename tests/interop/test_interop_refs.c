/* Interop of tags, restore and cleanup with lancedb (tests/interop/refs_tool.cjs):
 *  - lancedb lists and checks out the tags we write, deletes one, writes its own on our table;
 *  - we read, list and check out the tags lancedb writes;
 *  - lancedb reads our table after a restore and after cleanup (versions, tags, rows). */
#include "../lance/refs_fixture.h"
#include "interop.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* `node refs_tool.cjs ARGS`, its one-line JSON answer (the test fails otherwise). */
#define refs_tool(...) test_interop_tool("refs_tool.cjs", __VA_ARGS__)

typedef struct fixture {
    char dir[256];
    store *s;
    arrow_schema schema;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->s = test_sandbox_store(f->dir, sizeof f->dir, "interop-refs");
    fx_schema(&f->schema);
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

/* The ids lancedb sees at a tag or version, as a sum and a count (and its version). */
static void lancedb_checkout(fixture *f, const char *ref, int64_t *version, int64_t *count,
                             int64_t *sum)
{
    json_t *j = refs_tool("checkout '%s' t '%s'", f->dir, ref);
    *version = test_json_int(j, "version");
    *count = test_json_int(j, "count");
    json_t *ids = json_object_get(j, "ids");
    assert_true(json_is_array(ids));
    assert_int_equal(json_array_size(ids), *count);
    *sum = 0;
    for (size_t i = 0; i < json_array_size(ids); i++)
        *sum += (int64_t)json_integer_value(json_array_get(ids, i));
    json_decref(j);
}

static void our_ids(fixture *f, uint64_t v, int64_t *count, int64_t *sum)
{
    lance_dataset *ds = NULL;
    assert_og_ok(lance_dataset_open(&ds, f->s, RF_ROOT, v, LANCE_ACCESS_READ));
    fx_ids(ds, sum, count);
    lance_dataset_free(ds);
}

static void expect_same(fixture *f, const char *ref, uint64_t v)
{
    int64_t lv, lc, ls, oc, os;
    lancedb_checkout(f, ref, &lv, &lc, &ls);
    our_ids(f, v, &oc, &os);
    assert_int_equal(lv, v);
    assert_int_equal(lc, oc);
    assert_int_equal(ls, os);
}

/* We tag; lancedb lists, checks out, deletes and adds tags; we see its changes. */
static void test_our_tags_in_lancedb(void **state)
{
    fixture *f = *state;
    assert_og_ok(rf_build(f->s, &f->schema, RF_VERSIONS));
    lance_tag t2;
    assert_og_ok(lance_tag_create(f->s, RF_ROOT, "v2", 2, &t2));
    assert_og_ok(lance_tag_create(f->s, RF_ROOT, "after-delete_4", 4, NULL));
    assert_og_ok(lance_tag_create(f->s, RF_ROOT, "rel.6", 6, NULL));

    json_t *j = refs_tool("tags '%s' t", f->dir);
    json_t *tags = json_object_get(j, "tags");
    assert_int_equal(json_array_size(tags), 3);
    const char *names[3] = {"after-delete_4", "rel.6", "v2"};
    uint64_t versions[3] = {4, 6, 2};
    for (size_t i = 0; i < 3; i++) {
        json_t *e = json_array_get(tags, i);
        assert_string_equal(json_string_value(json_object_get(e, "name")), names[i]);
        assert_int_equal(test_json_int(e, "version"), versions[i]);
        lance_tag ours;
        assert_og_ok(lance_tag_get(f->s, RF_ROOT, names[i], &ours));
        assert_int_equal(test_json_int(e, "manifestSize"), ours.manifest_size);
    }
    json_decref(j);
    for (size_t i = 0; i < 3; i++)
        expect_same(f, names[i], versions[i]);
    int64_t lv, lc, ls;
    lancedb_checkout(f, "v2", &lv, &lc, &ls);
    assert_int_equal(lc, 10);
    assert_int_equal(ls, 45);

    /* lancedb refuses to create a name we hold, deletes ours and tags our table itself. */
    char cmd[1024];
    int n = snprintf(cmd, sizeof cmd, "node '%s/refs_tool.cjs' create '%s' t v2 3 2>/dev/null",
                     test_interop_dir(), f->dir);
    assert_true(n > 0 && (size_t)n < sizeof cmd);
    int st = system(cmd);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 1);
    json_decref(refs_tool("delete '%s' t v2", f->dir));
    json_decref(refs_tool("create '%s' t from-lancedb 5", f->dir));
    lance_tag t;
    assert_og_error(lance_tag_get(f->s, RF_ROOT, "v2", &t), OG_E_NOT_FOUND);
    assert_og_ok(lance_tag_get(f->s, RF_ROOT, "from-lancedb", &t));
    assert_int_equal(t.version, 5);
    assert_true(t.created_at[0] != '\0');
    lance_dataset *ds = NULL;
    assert_og_ok(lance_tag_checkout(&ds, f->s, RF_ROOT, "from-lancedb", LANCE_ACCESS_READ));
    assert_int_equal(lance_dataset_version(ds), 5);
    lance_dataset_free(ds);
    /* Our conditional delete works on lancedb's tag (identity from our read). */
    assert_og_ok(lance_tag_delete(f->s, RF_ROOT, "from-lancedb", t.identity));
    j = refs_tool("tags '%s' t", f->dir);
    assert_int_equal(json_array_size(json_object_get(j, "tags")), 2);
    json_decref(j);
}

/* lancedb makes a table and tags it; we list, read and check out its tags. */
static void test_lancedb_tags_in_c(void **state)
{
    fixture *f = *state;
    json_decref(refs_tool("make '%s' t", f->dir));
    lance_tag *tags = NULL;
    size_t n = 0;
    assert_og_ok(lance_tag_list(f->s, RF_ROOT, &tags, &n));
    assert_int_equal(n, 2);
    assert_string_equal(tags[0].name, "first");
    assert_string_equal(tags[1].name, "second");
    assert_int_equal(tags[0].version, 1);
    assert_int_equal(tags[1].version, 2);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(tags[i].branch, "");
        assert_true(tags[i].created_at[0] != '\0');
        lance_manifest *m = NULL;
        assert_og_ok(lance_version_load(f->s, RF_ROOT, tags[i].version, LANCE_NAMING_UNKNOWN,
                                        LANCE_ACCESS_INSPECT, &m));
        assert_int_equal(tags[i].manifest_size, m->file_size);
        lance_manifest_free(m);
        lance_dataset *ds = NULL;
        assert_og_ok(lance_tag_checkout(&ds, f->s, RF_ROOT, tags[i].name, LANCE_ACCESS_READ));
        uint64_t rows = 0;
        assert_og_ok(lance_dataset_count_rows(ds, &rows));
        assert_int_equal(rows, 10 * (i + 1));
        lance_dataset_free(ds);
    }
    /* A tag lancedb made cannot be created again by us; a stale identity cannot delete it. */
    assert_og_error(lance_tag_create(f->s, RF_ROOT, "first", 2, NULL), OG_E_EXISTS);
    assert_og_error(lance_tag_delete(f->s, RF_ROOT, "second", tags[0].identity),
                    OG_E_PRECONDITION_FAILED);
    lance_tag_list_free(tags);
}

/* lancedb reads our table after a restore and after cleanup. */
static void test_restore_and_cleanup_in_lancedb(void **state)
{
    fixture *f = *state;
    assert_og_ok(rf_build(f->s, &f->schema, RF_VERSIONS));
    assert_og_ok(lance_tag_create(f->s, RF_ROOT, "keep4", 4, NULL));
    lance_dataset *head = NULL, *nd = NULL;
    assert_og_ok(lance_dataset_open(&head, f->s, RF_ROOT, 0, LANCE_ACCESS_WRITE));
    assert_og_ok(lance_restore(&nd, head, 5, NULL));
    lance_dataset_free(head);
    lance_dataset_free(nd);
    expect_same(f, "8", 8);
    int64_t c5, s5, c8, s8;
    our_ids(f, 5, &c5, &s5);
    our_ids(f, 8, &c8, &s8);
    assert_int_equal(c8, c5);
    assert_int_equal(s8, s5);

    lance_cleanup_options o = LANCE_CLEANUP_OPTIONS_INIT;
    o.older_than_ms = -1;
    o.before_version = 8;
    lance_cleanup_report r;
    assert_og_ok(lance_cleanup(f->s, RF_ROOT, &o, &r));
    assert_int_equal(r.versions_deleted, 6);
    json_t *j = refs_tool("versions '%s' t", f->dir);
    json_t *vs = json_object_get(j, "versions");
    assert_int_equal(json_array_size(vs), 2);
    assert_int_equal(json_integer_value(json_array_get(vs, 0)), 4);
    assert_int_equal(json_integer_value(json_array_get(vs, 1)), 8);
    assert_int_equal(test_json_int(json_object_get(j, "latest"), "version"), 8);
    assert_int_equal(test_json_int(json_object_get(j, "latest"), "count"), c8);
    json_decref(j);
    expect_same(f, "keep4", 4);
    expect_same(f, "8", 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_our_tags_in_lancedb, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lancedb_tags_in_c, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restore_and_cleanup_in_lancedb, setup, teardown),
    };
    return cmocka_run_group_tests(tests, test_interop_group_setup, NULL);
}
