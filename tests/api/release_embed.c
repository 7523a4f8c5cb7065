/* A program embedding the release library (libomnigraph.so, linked like a user's program) for
 * tests/api/check_release.sh. It prints nothing: the library must not write to stdout or
 * stderr either, so the script runs it with both redirected to files and asserts they stay
 * empty. It passes every failpoint the write path has and walks error paths; the exit status
 * says which step went wrong (0: all as expected).
 * Usage: release_embed DIR   (DIR: an empty scratch directory) */
#include <omnigraph.h>

#include <stdio.h>
#include <string.h>

static const char SCHEMA[] = "node Person { name: String @key  age: I32? }\n"
                             "edge Knows: Person -> Person\n";
static const char DATA[] = "{\"type\":\"Person\",\"data\":{\"name\":\"Ada\",\"age\":36}}\n"
                           "{\"type\":\"Person\",\"data\":{\"name\":\"Grace\"}}\n"
                           "{\"edge\":\"Knows\",\"from\":\"Ada\",\"to\":\"Grace\"}\n";
static const char QUERIES[] = "query friends($name: String) {\n"
                              "    match { $p: Person { name: $name }  $p knows $f }\n"
                              "    return { $f.name }\n"
                              "}\n"
                              "query birthday($name: String, $age: I32) {\n"
                              "    update Person set { age: $age } where name = $name\n"
                              "}\n";

int main(int argc, char **argv)
{
    if (argc != 2) return 2;
    char graph[512], missing[512], bad[512], copy[512];
    snprintf(graph, sizeof graph, "%s/g", argv[1]);
    snprintf(missing, sizeof missing, "%s/no-such-graph", argv[1]);
    snprintf(bad, sizeof bad, "%s/bad", argv[1]);
    snprintf(copy, sizeof copy, "%s/backup", argv[1]);

    /* The happy path, through init.*, write.*, publish.*, store.local.* and backup.step. */
    og_init_options io = OG_INIT_OPTIONS_INIT;
    io.schema_source = SCHEMA;
    og_init_result *init = NULL;
    if (og_root_init(&init, graph, &io) != 0) return 10;
    og_init_result_free(init);
    og_graph *g = NULL;
    if (og_graph_open(&g, graph, NULL) != 0) return 11;
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = OG_LOAD_OVERWRITE;
    og_write_result *w = NULL;
    if (og_graph_load(&w, g, "data.jsonl", DATA, strlen(DATA), &lo) != 0) return 12;
    og_write_result_free(w);
    og_mutate_options mo = OG_MUTATE_OPTIONS_INIT;
    mo.source = QUERIES;
    mo.name = "birthday";
    mo.params_json = "{\"name\": \"Grace\", \"age\": 46}";
    w = NULL;
    if (og_graph_mutate(&w, g, &mo) != 0) return 13;
    og_write_result_free(w);
    og_query_options q = OG_QUERY_OPTIONS_INIT;
    q.source = QUERIES;
    q.name = "friends";
    q.params_json = "{\"name\": \"Ada\"}";
    og_result *r = NULL;
    if (og_graph_query(&r, g, &q) != 0) return 14;
    if (og_result_row_count(r) != 1) return 15;
    og_result_free(r);
    og_backup_result *b = NULL;
    if (og_graph_backup(&b, g, copy, NULL) != 0) return 16;
    og_backup_result_free(b);

    /* Error paths: each fails with a typed error, and says nothing. */
    r = NULL;
    q.source = "query q() { match { $p: Persn } return { $p.name } }";
    q.name = NULL;
    q.params_json = NULL;
    if (og_graph_query(&r, g, &q) == 0) return 20;
    og_result_free(r);
    w = NULL;
    if (og_graph_load(&w, g, "bad.jsonl", "{\"type\":", 8, &lo) == 0) return 21;
    og_write_result_free(w);
    og_graph_close(g);
    og_graph *m = NULL;
    if (og_graph_open(&m, missing, NULL) == 0) return 22;
    if (og_error_last()->code == OG_OK) return 23;
    io.schema_source = "node {";
    init = NULL;
    if (og_root_init(&init, bad, &io) == 0) return 24;
    og_init_result_free(init);
    return 0;
}
