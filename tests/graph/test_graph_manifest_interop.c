/* lancedb reads a graph manifest this engine wrote: version 1 made by
 * lance_dataset_create_rows, version 2 by a Lance append, both opened and dumped by lancedb
 * (tests/interop/lance_tool.cjs) with the rows, their types and versions as we wrote them. */
#include "testutil.h"
#include "interop.h"

#include "core/ulid.h"
#include "graph/graph.h"

#include <jansson.h>
#include <stdarg.h>
#include <string.h>
#include <sys/wait.h>

/* Run lance_tool.cjs and return its stdout (malloc'd); fail unless it exits 0. */
static char *lance_tool(const char *fmt, ...)
{
    char args[2048], cmd[3072];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < sizeof args);
    snprintf(cmd, sizeof cmd, "node '%s/lance_tool.cjs' %s", test_interop_dir(), args);
    int st = 0;
    char *out = test_capture(cmd, &st);
    if (st != 0) fail_msg("lance_tool %s: exit status %d", args, st);
    return out;
}

static uint64_t json_u64(const json_t *v)
{
    if (json_is_integer(v)) return (uint64_t)json_integer_value(v);
    if (json_is_string(v)) return strtoull(json_string_value(v), NULL, 10);
    fail_msg("not a number");
    return 0;
}

static void mkid(char out[GRAPH_ID_LEN + 1])
{
    core_ulid u;
    assert_og_ok(core_ulid_new(&u));
    core_ulid_format(&u, out);
}

static void add_commit(graph_rows *r, const char *id, const char *parent, uint64_t mv)
{
    graph_commit c;
    memset(&c, 0, sizeof c);
    snprintf(c.id, sizeof c.id, "%s", id);
    snprintf(c.parent, sizeof c.parent, "%s", parent ? parent : "");
    c.created_at_us = (int64_t)mv * 1000;
    c.manifest_version = mv;
    assert_og_ok(graph_rows_add_commit(r, &c));
    assert_og_ok(graph_rows_add_head(r, NULL, id, NULL, mv));
}

/* The dump's rows as (object_id, object_type, table_version) checks. */
static size_t check_dump(const char *dir, uint64_t version, const char *c1, const char *c2)
{
    char *text = lance_tool("dump '%s' __manifest --version %llu --columns "
                            "object_id,object_type,table_version,table_key",
                            dir, (unsigned long long)version);
    size_t rows = 0, seen_c1 = 0, seen_c2 = 0, seen_person = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        json_error_t e;
        json_t *o = json_loads(line, 0, &e);
        if (!o) fail_msg("bad dump line: %s", line);
        const char *id = json_string_value(json_object_get(o, "object_id"));
        const char *type = json_string_value(json_object_get(o, "object_type"));
        assert_non_null(id);
        assert_non_null(type);
        assert_int_not_equal(graph_row_kind_parse(type), 0);
        if (strcmp(id, c1) == 0) {
            seen_c1++;
            assert_string_equal(type, "graph_commit");
            assert_int_equal(json_u64(json_object_get(o, "table_version")), 1);
        }
        if (c2 && strcmp(id, c2) == 0) {
            seen_c2++;
            assert_int_equal(json_u64(json_object_get(o, "table_version")), 2);
        }
        if (strncmp(id, "table_version:", 14) == 0 &&
            strcmp(json_string_value(json_object_get(o, "table_key")), "node:Person") == 0)
            seen_person++;
        rows++;
        json_decref(o);
    }
    free(text);
    assert_int_equal(seen_c1, 1);
    assert_int_equal(seen_c2, c2 ? 1 : 0);
    assert_int_equal(seen_person, c2 ? 2 : 1);
    return rows;
}

static void test_lancedb_reads_manifest(void **state)
{
    (void)state;
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "graph-manifest-interop");
    store *s = NULL;
    assert_og_ok(store_local_open(&s, dir));
    char c1[GRAPH_ID_LEN + 1], c2[GRAPH_ID_LEN + 1];
    mkid(c1);
    mkid(c2);

    graph_rows *r = NULL;
    assert_og_ok(graph_rows_new(&r));
    assert_og_ok(graph_rows_add_format(r, GRAPH_FORMAT_VERSION));
    assert_og_ok(graph_rows_add_schema(r, "0123456789abcdef0123456789abcdef", 1));
    assert_og_ok(graph_rows_add_table(r, LANG_NODE, 1, 1, "node:Person"));
    assert_og_ok(graph_rows_add_table(r, LANG_EDGE, 2, 1, "edge:Knows"));
    assert_og_ok(graph_rows_add_version(r, 1, 1, "node:Person", 1, NULL, 0));
    assert_og_ok(graph_rows_add_version(r, 2, 1, "edge:Knows", 1, NULL, 0));
    add_commit(r, c1, NULL, 1);
    size_t n1 = graph_rows_count(r);
    arrow_schema schema;
    arrow_batch *b = NULL;
    assert_og_ok(graph_manifest_schema(&schema));
    assert_og_ok(graph_rows_to_batch(r, &b));
    graph_rows_free(r);
    static const char *const pk[] = {"object_id"};
    lance_create_options o = LANCE_CREATE_OPTIONS_INIT;
    o.primary_key = pk;
    o.n_primary_key = 1;
    lance_dataset *ds = NULL, *ds2 = NULL;
    assert_og_ok(lance_dataset_create_rows(&ds, s, GRAPH_MANIFEST_DIR, &schema, &b, 1, &o, NULL));
    arrow_batch_free(b);
    arrow_schema_clear(&schema);

    assert_og_ok(graph_rows_new(&r));
    assert_og_ok(graph_rows_add_version(r, 1, 1, "node:Person", 2, NULL, 5));
    add_commit(r, c2, c1, 2);
    size_t n2 = graph_rows_count(r);
    assert_og_ok(graph_rows_to_batch(r, &b));
    graph_rows_free(r);
    assert_og_ok(lance_dataset_append(&ds2, ds, &b, 1));
    arrow_batch_free(b);
    lance_dataset_free(ds);
    lance_dataset_free(ds2);

    char *cnt = lance_tool("count '%s' __manifest", dir);
    json_t *j = json_loads(cnt, 0, NULL);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "count")), n1 + n2);
    json_decref(j);
    free(cnt);
    assert_int_equal(check_dump(dir, 1, c1, NULL), n1);
    assert_int_equal(check_dump(dir, 2, c1, c2), n1 + n2);

    /* And we read back what lancedb read. */
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, s, NULL, 0, GRAPH_SNAP_LINEAGE));
    assert_string_equal(snap->head, c2);
    assert_int_equal(graph_snapshot_table(snap, "node:Person")->version, 2);
    assert_int_equal(snap->n_commits, 2);
    graph_snapshot_free(snap);
    test_sandbox_store_done(dir, s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lancedb_reads_manifest),
    };
    return cmocka_run_group_tests(tests, test_interop_group_setup, NULL);
}
