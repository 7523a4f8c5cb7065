/* lancedb opens every table of a loaded graph: each node and edge dataset and the graph
 * manifest, reading the row counts the manifest publishes (and the manifest's own rows). */
#include "testutil.h"

#include "exec/load.h"
#include "write/internal.h"

#include <string.h>

static char g_src[512];

static int group_setup(void **state)
{
    (void)state;
    return test_interop_setup(g_src, sizeof g_src);
}

static uint64_t lancedb_count(const char *dir, const char *name)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "node '%s/lance_tool.cjs' count '%s' '%s'", g_src, dir, name);
    int st = 0;
    char *out = test_capture(cmd, &st);
    if (st != 0)
        fail_msg("lancedb could not count %s/%s: %s", dir, name, out);
    const char *c = strstr(out, "\"count\":");
    if (!c)
        fail_msg("unexpected lance_tool output: %s", out);
    uint64_t n = strtoull(c + 8, NULL, 10);
    free(out);
    return n;
}

static void test_lancedb_reads_loaded_graph(void **state)
{
    (void)state;
    char dir[256];
    test_mkdtemp(dir, sizeof dir, "write-interop");
    const char *schema = "node Person { name: String @key  age: I32?  tags: [String]? }\n"
                         "node Company { name: String @key  founded: Date? }\n"
                         "edge WorksAt: Person -> Company { since: DateTime? }\n"
                         "edge Knows: Person -> Person\n";
    store *s = NULL;
    assert_og_ok(store_local_open(&s, dir));
    write_init_result ir;
    assert_og_ok(write_init(s, schema, strlen(schema), "s.pg", &ir));
    write_graph *g = NULL;
    assert_og_ok(write_graph_open(&g, s, dir, NULL));
    const char *data =
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":31,\"tags\":[\"a\",\"b\"]}}\n"
        "{\"type\":\"Person\",\"data\":{\"name\":\"bob\"}}\n"
        "{\"type\":\"Company\",\"data\":{\"name\":\"acme\",\"founded\":\"1999-01-02\"}}\n"
        "{\"edge\":\"WorksAt\",\"from\":\"ann\",\"to\":\"acme\",\"data\":{\"since\":"
        "\"2020-01-01T10:00:00Z\"}}\n"
        "{\"edge\":\"Knows\",\"from\":\"ann\",\"to\":\"bob\"}\n"
        "{\"edge\":\"Knows\",\"from\":\"bob\",\"to\":\"ann\"}\n";
    graph_change_set cs;
    memset(&cs, 0, sizeof cs);
    exec_load_stats st;
    assert_og_ok(exec_load_parse(&cs, g->catalog, data, strlen(data), "d.jsonl",
                                 EXEC_LOAD_APPEND, &st, NULL, NULL));
    write_result r;
    assert_og_ok(write_changes(g, WRITE_KIND_LOAD, &cs, NULL, &r));
    graph_change_set_clear(&cs);
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, g->s, NULL, 0, 0));
    assert_int_equal(snap->n_tables, 4);
    for (size_t i = 0; i < snap->n_tables; i++) {
        const graph_table *t = &snap->tables[i];
        char parent[600], name[256];
        const char *slash = strrchr(t->path, '/');
        snprintf(parent, sizeof parent, "%s/%.*s", dir, (int)(slash - t->path), t->path);
        snprintf(name, sizeof name, "%.*s", (int)(strlen(slash + 1) - strlen(".lance")), slash + 1);
        assert_int_equal(lancedb_count(parent, name), t->row_count);
    }
    /* the manifest: genesis rows + this commit's rows, all readable */
    uint64_t rows = lancedb_count(dir, "__manifest");
    assert_true(rows >= 4 * 2 + 2 + 2 + 4);
    graph_snapshot_free(snap);
    write_graph_close(g);
    test_rmrf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lancedb_reads_loaded_graph),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
