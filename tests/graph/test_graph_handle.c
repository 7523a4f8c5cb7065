/* The open-graph handle (src/graph/graph_handle.h): opening needs a graph and reads its
 * accepted schema; the head of main is cached while main stays at its version, read afresh
 * once another handle moved it, and taken without a read from a writer that installs the head
 * its own commit produced. Graphs are made and written through the write layer. */
#include "testutil.h"

#include "exec/load.h"
#include "graph/graph_handle.h"
#include "write/write.h"

#include <string.h>

static const char *SCHEMA = "node Person { name: String @key  age: I32? }\n";

typedef struct fixture {
    char dir[256];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    test_sandbox_new(f->dir, sizeof f->dir, "graph-handle");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    test_sandbox_done(f->dir);
    free(f);
    return 0;
}

static void init_graph(const char *dir)
{
    store *s = NULL;
    assert_og_ok(store_local_open(&s, dir));
    write_init_result ir;
    assert_og_ok(write_init(s, SCHEMA, strlen(SCHEMA), "t.pg", &ir));
    store_close(s);
}

static int open_handle(graph_handle **h, const char *dir, bool readonly)
{
    store *s = NULL;
    int rc = readonly ? store_local_open_readonly(&s, dir) : store_local_open(&s, dir);
    graph_open_options o = GRAPH_OPEN_OPTIONS_INIT;
    o.readonly = readonly;
    o.actor = "tester";
    return rc ? rc : graph_handle_open(h, s, dir, &o);
}

/* One load of a line through writer w. */
static void load_line(write_graph *w, const char *line, write_result *res)
{
    graph_change_set cs;
    memset(&cs, 0, sizeof cs);
    exec_load_stats st;
    assert_og_ok(exec_load_parse(&cs, w->h->catalog, line, strlen(line), "d.jsonl", EXEC_LOAD_MERGE,
                                 &st, NULL, NULL));
    assert_og_ok(write_changes(w, WRITE_KIND_LOAD, &cs, NULL, res));
    graph_change_set_clear(&cs);
    assert_true(res->committed);
}

static void test_open_needs_a_graph(void **state)
{
    fixture *f = *state;
    graph_handle *h = NULL;
    assert_og_error(open_handle(&h, f->dir, false), OG_E_NOT_FOUND);
    assert_null(h);
    assert_non_null(strstr(og_error_last()->message, "omnigraph init"));
    /* An init that did not finish is named as such. */
    store *s = NULL;
    assert_og_ok(store_local_open(&s, f->dir));
    assert_og_ok(store_put(s, GRAPH_INIT_CLAIM, "{}", 2, 0));
    store_close(s);
    assert_og_error(open_handle(&h, f->dir, true), OG_E_NOT_FOUND);
    assert_non_null(strstr(og_error_last()->message, "did not finish"));
}

static void test_open_reads_the_schema(void **state)
{
    fixture *f = *state;
    init_graph(f->dir);
    graph_handle *h = NULL;
    assert_og_ok(open_handle(&h, f->dir, true));
    assert_true(h->readonly);
    assert_string_equal(h->actor, "tester");
    assert_string_equal(h->root_id, f->dir);
    assert_non_null(h->catalog);
    assert_int_equal(h->catalog->n_types, 1);
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_handle_head_snapshot(h, &snap));
    assert_string_equal(snap->schema_identity, h->schema_identity);
    assert_int_equal(snap->n_tables, 1);
    graph_snapshot_free(snap);
    graph_handle_close(h);
}

static void test_head_cached_until_main_moves(void **state)
{
    fixture *f = *state;
    init_graph(f->dir);
    graph_handle *h = NULL;
    assert_og_ok(open_handle(&h, f->dir, true));
    graph_head *a = NULL, *b = NULL, *c = NULL;
    assert_og_ok(graph_handle_head(h, &a));
    assert_og_ok(graph_handle_head(h, &b));
    assert_ptr_equal(a, b); /* main did not move: the cached head */

    /* Another handle commits: the next head is read afresh, and the old one stays whole. */
    write_graph *w = NULL;
    store *s = NULL;
    assert_og_ok(store_local_open(&s, f->dir));
    assert_og_ok(write_graph_open(&w, s, f->dir, NULL));
    write_result r;
    load_line(w, "{\"type\":\"Person\",\"data\":{\"name\":\"ada\"}}\n", &r);
    write_graph_close(w);
    assert_og_ok(graph_handle_head(h, &c));
    assert_ptr_not_equal(c, a);
    assert_int_equal(graph_head_snapshot(c)->manifest_version, r.manifest_version);
    assert_string_equal(graph_head_snapshot(c)->head, r.commit_id);
    assert_true(graph_head_snapshot(a)->manifest_version < r.manifest_version);
    assert_int_equal(graph_head_snapshot(a)->tables[0].row_count, 0);

    /* A forgotten head is not handed out again. */
    graph_handle_forget(h, c);
    graph_head *d = NULL;
    assert_og_ok(graph_handle_head(h, &d));
    assert_ptr_not_equal(d, c);
    assert_int_equal(graph_head_snapshot(d)->manifest_version, r.manifest_version);
    graph_head_release(a);
    graph_head_release(b);
    graph_head_release(c);
    graph_head_release(d);
    graph_handle_close(h);
}

static void test_writer_installs_its_head(void **state)
{
    fixture *f = *state;
    init_graph(f->dir);
    graph_handle *h = NULL;
    assert_og_ok(open_handle(&h, f->dir, false));
    write_graph *w = NULL;
    assert_og_ok(write_graph_attach(&w, h, NULL));
    assert_ptr_equal(w->h, h);
    write_result r;
    load_line(w, "{\"type\":\"Person\",\"data\":{\"name\":\"ada\",\"age\":36}}\n", &r);
    /* The head of the writer's own commit is the handle's: no read of the manifest. */
    store_counts before, after;
    store_counts_get(h->s, &before);
    graph_head *hd = NULL;
    assert_og_ok(graph_handle_head(h, &hd));
    store_counts_get(h->s, &after);
    assert_int_equal(after.bytes_read - before.bytes_read, 0);
    const graph_snapshot *snap = graph_head_snapshot(hd);
    assert_int_equal(snap->manifest_version, r.manifest_version);
    assert_string_equal(snap->head, r.commit_id);
    assert_int_equal(snap->tables[0].row_count, 1);
    /* Its tables open once, shared by every holder of the head. */
    const lance_dataset *t1 = NULL, *t2 = NULL;
    assert_og_ok(graph_head_table(hd, &snap->tables[0], &t1));
    assert_og_ok(graph_head_table(hd, &snap->tables[0], &t2));
    assert_ptr_equal(t1, t2);
    assert_int_equal(lance_dataset_version(t1), snap->tables[0].version);
    graph_head_release(hd);
    write_graph_close(w);
    assert_int_equal(h->catalog->n_types, 1); /* the handle outlives its writer */
    graph_handle_close(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open_needs_a_graph, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_reads_the_schema, setup, teardown),
        cmocka_unit_test_setup_teardown(test_head_cached_until_main_moves, setup, teardown),
        cmocka_unit_test_setup_teardown(test_writer_installs_its_head, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
