/* .gq mutations end to end on a local graph: keyed upsert, generated-id inserts, edge inserts
 * by node id, update/delete with where, cascade deletes, several statements as one commit
 * with read-your-writes, no-op = no commit, --if-commit, validation failures with zero
 * effect, and a re-prepare that recomputes the plan after a concurrent write. The graph is
 * read back through the read executor at the latest snapshot. The request entries
 * (exec_load, exec_mutate, exec_query: request.h) run here on the same graph. */
#include "testutil.h"

#include "core/alloc.h"
#include "core/json.h"
#include "exec/load.h"
#include "exec/mutate.h"
#include "exec/request.h"

#include <string.h>

static const char SCHEMA[] = "node Person {\n"
                             "  name: String @key\n"
                             "  age: I32?\n"
                             "  email: String? @unique\n"
                             "  status: enum(active, inactive)?\n"
                             "}\n"
                             "node Tag { label: String  n: I64? }\n"
                             "node Company { name: String @key }\n"
                             "edge Knows: Person -> Person { since: I32? }\n"
                             "edge WorksAt: Person -> Company { role: String? }\n"
                             "edge Tagged: Person -> Tag\n";

typedef struct fixture {
    char dir[256];
    write_graph *g;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    test_sandbox_new(f->dir, sizeof f->dir, "mutate");
    store *s = NULL;
    assert_og_ok(store_local_open(&s, f->dir));
    write_init_result ir;
    assert_og_ok(write_init(s, SCHEMA, strlen(SCHEMA), "s.pg", &ir));
    store_close(s);
    s = NULL;
    assert_og_ok(store_local_open(&s, f->dir));
    assert_og_ok(write_graph_open(&f->g, s, f->dir, NULL));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    write_graph_close(f->g);
    test_sandbox_done(f->dir);
    free(f);
    return 0;
}

/* Run the one mutation in gq with params (JSON text or NULL). */
static int mutate(write_graph *g, const char *gq, const char *params, const write_options *opt,
                  exec_mutate_result *res)
{
    core_arena a;
    core_arena_init(&a, 0);
    lang_diags d;
    lang_diags_init(&d, &a);
    lang_query_set *qs = NULL;
    int rc = lang_query_set_build(&qs, g->h->catalog, gq, strlen(gq), "t.gq", &d);
    if (rc) fail_msg("mutation does not check: %s\n%s", og_error_last()->message, gq);
    assert_int_equal(qs->n_queries, 1);
    assert_true(qs->queries[0].is_mutation);
    json_t *pj = NULL;
    if (params) assert_og_ok(core_json_parse(&pj, params, strlen(params), "params"));
    exec_params *p = NULL;
    assert_og_ok(exec_params_from_json(&p, &qs->queries[0], pj));
    exec_mutate_result local;
    rc = exec_mutate_run(res ? res : &local, g, &qs->queries[0], p, opt);
    exec_params_free(p);
    json_decref(pj);
    lang_query_set_free(qs);
    core_arena_free(&a);
    return rc;
}

/* Rows of read query gq at the latest snapshot, one canonical JSON object per line. */
static char *rows(write_graph *g, const char *gq)
{
    core_arena a;
    core_arena_init(&a, 0);
    lang_diags d;
    lang_diags_init(&d, &a);
    lang_query_set *qs = NULL;
    if (lang_query_set_build(&qs, g->h->catalog, gq, strlen(gq), "r.gq", &d))
        fail_msg("query does not check: %s\n%s", og_error_last()->message, gq);
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, g->h->s, NULL, 0, 0));
    exec_result *r = NULL;
    assert_og_ok(exec_query_run(&r, g->h->catalog, snap, g->h->s, &qs->queries[0], NULL, NULL));
    core_buf b = CORE_BUF_INIT;
    for (uint64_t i = 0; i < exec_result_n_rows(r); i++) {
        assert_og_ok(exec_result_row_json(r, i, &b));
        core_buf_append_byte(&b, '\n');
    }
    char *out = strdup(b.data ? core_buf_cstr(&b) : "");
    core_buf_free(&b);
    exec_result_free(r);
    graph_snapshot_free(snap);
    lang_query_set_free(qs);
    core_arena_free(&a);
    return out;
}

static void assert_rows(write_graph *g, const char *gq, const char *want)
{
    char *got = rows(g, gq);
    if (strcmp(got, want)) fail_msg("rows of\n%s\ngot:\n%s\nwant:\n%s", gq, got, want);
    free(got);
}

static uint64_t mver(write_graph *g)
{
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, g->h->s, NULL, 0, 0));
    uint64_t v = snap->manifest_version;
    graph_snapshot_free(snap);
    return v;
}

static uint64_t row_count(write_graph *g, const char *alias)
{
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, g->h->s, NULL, 0, 0));
    const graph_table *t = graph_snapshot_table(snap, alias);
    assert_non_null(t);
    uint64_t n = t->row_count;
    graph_snapshot_free(snap);
    return n;
}

static void head_of(write_graph *g, char out[GRAPH_ID_LEN + 1])
{
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, g->h->s, NULL, 0, 0));
    memcpy(out, snap->head, GRAPH_ID_LEN + 1);
    graph_snapshot_free(snap);
}

static void load(write_graph *g, const char *text)
{
    graph_change_set cs;
    memset(&cs, 0, sizeof cs);
    assert_og_ok(exec_load_parse(&cs, g->h->catalog, text, strlen(text), "d.jsonl",
                                 EXEC_LOAD_APPEND, NULL, NULL, NULL));
    write_result r;
    assert_og_ok(write_changes(g, WRITE_KIND_LOAD, &cs, NULL, &r));
    graph_change_set_clear(&cs);
}

static const char PEOPLE[] =
    "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":30}}\n"
    "{\"type\":\"Person\",\"data\":{\"name\":\"bob\",\"age\":40}}\n"
    "{\"type\":\"Person\",\"data\":{\"name\":\"cat\",\"age\":50,\"status\":\"active\"}}\n"
    "{\"type\":\"Person\",\"data\":{\"name\":\"dan\"}}\n"
    "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n"
    "{\"edge\":\"Knows\",\"from\":\"ann\",\"to\":\"bob\",\"data\":{\"since\":1}}\n"
    "{\"edge\":\"Knows\",\"from\":\"bob\",\"to\":\"cat\",\"data\":{\"since\":2}}\n"
    "{\"edge\":\"Knows\",\"from\":\"cat\",\"to\":\"ann\",\"data\":{\"since\":3}}\n"
    "{\"edge\":\"WorksAt\",\"from\":\"bob\",\"to\":\"acme\"}\n"
    "{\"edge\":\"WorksAt\",\"from\":\"ann\",\"to\":\"acme\"}\n";

static const char Q_PEOPLE[] =
    "query q() { match { $p: Person } return { $p.name as n, $p.age as a, $p.status as s } "
    "order { n } }";

/* ---- inserts -------------------------------------------------------------------------------- */

static void test_insert_keyed_upserts(void **state)
{
    fixture *f = *state;
    const char *gq = "query i($n: String, $a: I32) { insert Person { name: $n, age: $a } }";
    exec_mutate_result r;
    uint64_t v0 = mver(f->g);
    assert_og_ok(mutate(f->g, gq, "{\"n\":\"ann\",\"a\":30}", NULL, &r));
    assert_true(r.write.committed);
    assert_int_equal(r.nodes_inserted, 1);
    assert_int_equal(r.write.manifest_version, v0 + 1);
    assert_og_ok(mutate(f->g, gq, "{\"n\":\"ann\",\"a\":31}", NULL, &r));
    assert_true(r.write.committed);
    assert_int_equal(row_count(f->g, "node:Person"), 1);
    assert_rows(f->g, "query q() { match { $p: Person } return { $p.id as id, $p.age as a } }",
                "{\"id\":\"ann\",\"a\":31}\n");
    assert_int_equal(mver(f->g), v0 + 2);
    /* an upsert of the committed row, then an update that sees the pending version of it */
    assert_og_ok(mutate(f->g,
                        "query m() { insert Person { name: \"ann\", age: 5 } "
                        "update Person set { age: 6 } where age = 5 }",
                        NULL, NULL, &r));
    assert_int_equal(r.nodes_inserted, 1);
    assert_int_equal(r.nodes_updated, 1);
    assert_int_equal(row_count(f->g, "node:Person"), 1);
    assert_rows(f->g, "query q() { match { $p: Person } return { $p.id as id, $p.age as a } }",
                "{\"id\":\"ann\",\"a\":6}\n");
}

static void test_insert_generated_ids(void **state)
{
    fixture *f = *state;
    const char *gq = "query i($l: String) { insert Tag { label: $l } }";
    exec_mutate_result r1, r2;
    assert_og_ok(mutate(f->g, gq, "{\"l\":\"x\"}", NULL, &r1));
    assert_og_ok(mutate(f->g, gq, "{\"l\":\"x\"}", NULL, &r2));
    assert_true(r1.write.committed && r2.write.committed);
    assert_int_equal(row_count(f->g, "node:Tag"), 2);
    char *got = rows(f->g, "query q() { match { $t: Tag } return { $t.id as id, $t.label as l } }");
    /* two distinct 26-character ULIDs */
    json_t *a = NULL, *b = NULL;
    char *nl = strchr(got, '\n');
    assert_non_null(nl);
    assert_og_ok(core_json_parse(&a, got, (size_t)(nl - got), "r"));
    assert_og_ok(core_json_parse(&b, nl + 1, strlen(nl + 1) - 1, "r"));
    const char *ia = json_string_value(json_object_get(a, "id"));
    const char *ib = json_string_value(json_object_get(b, "id"));
    assert_int_equal(strlen(ia), CORE_ULID_LEN);
    assert_int_equal(strlen(ib), CORE_ULID_LEN);
    assert_string_not_equal(ia, ib);
    assert_string_equal(json_string_value(json_object_get(a, "l")), "x");
    json_decref(a);
    json_decref(b);
    free(got);
}

static void test_insert_edges_by_node_id(void **state)
{
    fixture *f = *state;
    load(f->g, PEOPLE);
    exec_mutate_result r;
    assert_og_ok(mutate(f->g,
                        "query i($a: String, $b: String) { insert Knows { from: $a, to: $b, "
                        "since: 9 } insert WorksAt { from: $b, to: \"acme\", role: \"dev\" } }",
                        "{\"a\":\"dan\",\"b\":\"ann\"}", NULL, &r));
    assert_true(r.write.committed);
    assert_int_equal(r.edges_inserted, 2);
    assert_int_equal(r.nodes_inserted, 0);
    assert_int_equal(row_count(f->g, "edge:Knows"), 4);
    assert_rows(f->g,
                "query q() { match { $a: Person  $a knows $b } return { $a.name as a, $b.name as "
                "b } order { a, b } }",
                "{\"a\":\"ann\",\"b\":\"bob\"}\n{\"a\":\"bob\",\"b\":\"cat\"}\n"
                "{\"a\":\"cat\",\"b\":\"ann\"}\n{\"a\":\"dan\",\"b\":\"ann\"}\n");
    /* parallel edges are allowed: the same insert again is a second edge */
    assert_og_ok(
        mutate(f->g, "query i() { insert Knows { from: \"dan\", to: \"ann\" } }", NULL, NULL, &r));
    assert_int_equal(row_count(f->g, "edge:Knows"), 5);
    /* an endpoint that does not exist: typed error, nothing written */
    uint64_t v = mver(f->g);
    int rc = mutate(f->g, "query i() { insert Knows { from: \"dan\", to: \"nobody\" } }", NULL,
                    NULL, &r);
    assert_og_error(rc, OG_E_BAD_REQUEST);
    assert_non_null(strstr(og_error_last()->message, "nobody"));
    assert_int_equal(mver(f->g), v);
}

/* ---- update / delete ------------------------------------------------------------------------ */

static void test_update_where(void **state)
{
    fixture *f = *state;
    load(f->g, PEOPLE);
    load(f->g, "{\"type\":\"Tag\",\"data\":{\"label\":\"t1\",\"n\":1}}\n"
               "{\"type\":\"Tag\",\"data\":{\"label\":\"t2\",\"n\":2}}\n");
    char *tags_before = rows(f->g, "query q() { match { $t: Tag } return { $t.id as id, "
                                   "$t.label as l } order { l } }");
    exec_mutate_result r;
    uint64_t v0 = mver(f->g);
    assert_og_ok(mutate(f->g,
                        "query u($x: I32) { update Person set { status: \"inactive\", age: 99 } "
                        "where age > $x }",
                        "{\"x\":35}", NULL, &r));
    assert_true(r.write.committed);
    assert_int_equal(r.nodes_updated, 2);
    assert_int_equal(r.write.manifest_version, v0 + 1);
    assert_int_equal(row_count(f->g, "node:Person"), 4);
    assert_rows(f->g, Q_PEOPLE,
                "{\"n\":\"ann\",\"a\":30,\"s\":null}\n"
                "{\"n\":\"bob\",\"a\":99,\"s\":\"inactive\"}\n"
                "{\"n\":\"cat\",\"a\":99,\"s\":\"inactive\"}\n"
                "{\"n\":\"dan\",\"a\":null,\"s\":null}\n");
    /* edges untouched */
    assert_int_equal(row_count(f->g, "edge:Knows"), 3);
    /* generated ids are kept by an update; other rows untouched */
    assert_og_ok(
        mutate(f->g, "query u() { update Tag set { n: 7 } where label = \"t2\" }", NULL, NULL, &r));
    assert_int_equal(r.nodes_updated, 1);
    char *tags_after = rows(f->g, "query q() { match { $t: Tag } return { $t.id as id, $t.label "
                                  "as l } order { l } }");
    assert_string_equal(tags_before, tags_after);
    assert_rows(f->g,
                "query q() { match { $t: Tag } return { $t.label as l, $t.n as n } "
                "order { l } }",
                "{\"l\":\"t1\",\"n\":1}\n{\"l\":\"t2\",\"n\":7}\n");
    assert_int_equal(row_count(f->g, "node:Tag"), 2);
    free(tags_before);
    free(tags_after);
    /* != over strings */
    assert_og_ok(mutate(f->g, "query u() { update Tag set { n: 0 } where label != \"zz\" }", NULL,
                        NULL, &r));
    assert_int_equal(r.nodes_updated, 2);
}

static void test_delete_cascade(void **state)
{
    fixture *f = *state;
    load(f->g, PEOPLE);
    exec_mutate_result r;
    uint64_t v0 = mver(f->g);
    assert_og_ok(mutate(f->g, "query d($n: String) { delete Person where name = $n }",
                        "{\"n\":\"bob\"}", NULL, &r));
    assert_true(r.write.committed);
    assert_int_equal(r.write.manifest_version, v0 + 1);
    assert_int_equal(r.nodes_deleted, 1);
    assert_int_equal(r.edges_deleted, 3); /* ann->bob, bob->cat, bob worksAt acme */
    assert_int_equal(row_count(f->g, "node:Person"), 3);
    assert_int_equal(row_count(f->g, "edge:Knows"), 1);
    assert_int_equal(row_count(f->g, "edge:WorksAt"), 1);
    assert_rows(f->g,
                "query q() { match { $a: Person  $a knows $b } return { $a.name as a, $b.name as "
                "b } }",
                "{\"a\":\"cat\",\"b\":\"ann\"}\n");
    assert_rows(f->g, "query q() { match { $a: Person  $a worksAt $c } return { $a.name as a } }",
                "{\"a\":\"ann\"}\n");
    /* edge delete by endpoint */
    assert_og_ok(mutate(f->g, "query d() { delete Knows where from = \"cat\" }", NULL, NULL, &r));
    assert_int_equal(r.edges_deleted, 1);
    assert_int_equal(r.nodes_deleted, 0);
    assert_int_equal(row_count(f->g, "edge:Knows"), 0);
    /* delete where age is null never matches (NULL never satisfies a comparison) */
    assert_og_ok(mutate(f->g, "query d() { delete Person where age < 1000 }", NULL, NULL, &r));
    assert_int_equal(r.nodes_deleted, 2); /* ann, cat; dan has no age */
    assert_int_equal(r.edges_deleted, 1); /* ann worksAt acme */
    assert_rows(f->g, Q_PEOPLE, "{\"n\":\"dan\",\"a\":null,\"s\":null}\n");
}

static void test_multi_statement_read_your_writes(void **state)
{
    fixture *f = *state;
    load(f->g, PEOPLE);
    exec_mutate_result r;
    uint64_t v0 = mver(f->g);
    /* the update sees the pending insert (eve) and the earlier update (ann's age) */
    assert_og_ok(mutate(f->g,
                        "query m() { insert Person { name: \"eve\", age: 60 } "
                        "update Person set { age: 70 } where name = \"ann\" "
                        "update Person set { status: \"active\" } where age > 55 "
                        "insert Knows { from: \"eve\", to: \"ann\" } }",
                        NULL, NULL, &r));
    assert_true(r.write.committed);
    assert_int_equal(r.write.manifest_version, v0 + 1); /* one commit */
    assert_int_equal(r.nodes_inserted, 1);
    assert_int_equal(r.nodes_updated, 3); /* ann, then eve and ann */
    assert_int_equal(r.edges_inserted, 1);
    assert_rows(f->g, Q_PEOPLE,
                "{\"n\":\"ann\",\"a\":70,\"s\":\"active\"}\n"
                "{\"n\":\"bob\",\"a\":40,\"s\":null}\n"
                "{\"n\":\"cat\",\"a\":50,\"s\":\"active\"}\n"
                "{\"n\":\"dan\",\"a\":null,\"s\":null}\n"
                "{\"n\":\"eve\",\"a\":60,\"s\":\"active\"}\n");
    assert_int_equal(row_count(f->g, "edge:Knows"), 4);
    /* several deletes: the second sees the first's removals (cascade included) */
    v0 = mver(f->g);
    assert_og_ok(mutate(f->g,
                        "query d($n: String) { delete Knows where to = $n  delete Person where "
                        "name = $n  delete Person where age > 65 }",
                        "{\"n\":\"bob\"}", NULL, &r));
    assert_int_equal(r.write.manifest_version, v0 + 1);
    assert_int_equal(r.nodes_deleted, 2); /* bob, ann (70) */
    /* ann->bob; then bob->cat, bob@acme; then cat->ann, eve->ann, ann@acme */
    assert_int_equal(r.edges_deleted, 1 + 2 + 3);
    assert_int_equal(row_count(f->g, "edge:Knows"), 0);
    assert_int_equal(row_count(f->g, "edge:WorksAt"), 0);
    assert_rows(f->g, Q_PEOPLE,
                "{\"n\":\"cat\",\"a\":50,\"s\":\"active\"}\n"
                "{\"n\":\"dan\",\"a\":null,\"s\":null}\n"
                "{\"n\":\"eve\",\"a\":60,\"s\":\"active\"}\n");
}

static void test_noop_no_commit(void **state)
{
    fixture *f = *state;
    load(f->g, PEOPLE);
    uint64_t v0 = mver(f->g);
    char h0[GRAPH_ID_LEN + 1];
    head_of(f->g, h0);
    exec_mutate_result r;
    assert_og_ok(mutate(f->g, "query u() { update Person set { age: 1 } where age > 1000 }", NULL,
                        NULL, &r));
    assert_false(r.write.committed);
    assert_int_equal(r.nodes_updated, 0);
    assert_og_ok(mutate(f->g, "query d() { delete Person where name = \"zed\" }", NULL, NULL, &r));
    assert_false(r.write.committed);
    assert_int_equal(r.nodes_deleted + r.edges_deleted, 0);
    assert_int_equal(mver(f->g), v0);
    char h1[GRAPH_ID_LEN + 1];
    head_of(f->g, h1);
    assert_string_equal(h0, h1);
}

static void test_if_commit(void **state)
{
    fixture *f = *state;
    load(f->g, PEOPLE);
    char head[GRAPH_ID_LEN + 1];
    head_of(f->g, head);
    uint64_t v0 = mver(f->g);
    write_options wo = WRITE_OPTIONS_INIT;
    wo.if_commit = "01ARZ3NDEKTSV4RRFFQ69G5FAV"; /* not the head */
    exec_mutate_result r;
    int rc = mutate(f->g, "query u() { update Person set { age: 1 } where name = \"ann\" }", NULL,
                    &wo, &r);
    assert_og_error(rc, OG_E_PRECONDITION_FAILED);
    assert_false(r.write.committed);
    assert_int_equal(mver(f->g), v0);
    assert_rows(f->g, "query q() { match { $p: Person { name: \"ann\" } } return { $p.age as a } }",
                "{\"a\":30}\n");
    /* the right head: the write goes through */
    wo.if_commit = head;
    assert_og_ok(mutate(f->g, "query u() { update Person set { age: 1 } where name = \"ann\" }",
                        NULL, &wo, &r));
    assert_true(r.write.committed);
    assert_int_equal(mver(f->g), v0 + 1);
    /* ... and the same precondition again is stale now */
    rc = mutate(f->g, "query u() { update Person set { age: 2 } where name = \"ann\" }", NULL, &wo,
                &r);
    assert_og_error(rc, OG_E_PRECONDITION_FAILED);
    assert_int_equal(mver(f->g), v0 + 1);
}

static void test_validation_failures(void **state)
{
    fixture *f = *state;
    load(f->g, "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"email\":\"a@x\"}}\n");
    uint64_t v0 = mver(f->g);
    exec_mutate_result r;
    /* @unique: a second person with the same email */
    int rc = mutate(f->g,
                    "query i() { insert Person { name: \"bob\", email: \"a@x\" } "
                    "insert Company { name: \"acme\" } }",
                    NULL, NULL, &r);
    assert_og_error(rc, OG_E_KEY_CONFLICT);
    assert_int_equal(mver(f->g), v0);
    assert_int_equal(row_count(f->g, "node:Person"), 1);
    assert_int_equal(row_count(f->g, "node:Company"), 0);
    /* two inserts of one mutation with one email: the error names the statements' lines (it
     * said "lines 0 and 0") and is located at the second */
    rc = mutate(f->g,
                "query i() {\n"
                "  insert Person { name: \"cy\", email: \"c@x\" }\n"
                "  insert Person { name: \"di\", email: \"c@x\" }\n"
                "}\n",
                NULL, NULL, &r);
    assert_og_error(rc, OG_E_KEY_CONFLICT);
    assert_non_null(
        strstr(og_error_last()->message, "is given twice in the input (lines 2 and 3)"));
    assert_string_equal(og_error_last()->file, "t.gq");
    assert_int_equal(og_error_last()->line, 3);
    assert_int_equal(mver(f->g), v0);
    /* @unique by update: two rows end with one email */
    load(f->g, "{\"type\":\"Person\",\"data\":{\"name\":\"bob\"}}\n");
    v0 = mver(f->g);
    rc = mutate(f->g, "query u() { update Person set { email: \"a@x\" } where name = \"bob\" }",
                NULL, NULL, &r);
    assert_og_error(rc, OG_E_KEY_CONFLICT);
    assert_int_equal(mver(f->g), v0);
    /* a value outside the enum (given as a String param) */
    rc = mutate(f->g,
                "query u($s: String) { update Person set { status: $s } where name = \"ann\" }",
                "{\"s\":\"bogus\"}", NULL, &r);
    assert_og_error(rc, OG_E_BAD_REQUEST);
    assert_non_null(strstr(og_error_last()->message, "bogus"));
    assert_int_equal(mver(f->g), v0);
    assert_rows(f->g, Q_PEOPLE,
                "{\"n\":\"ann\",\"a\":null,\"s\":null}\n{\"n\":\"bob\",\"a\":null,\"s\":null}\n");
}

/* ---- re-prepare ----------------------------------------------------------------------------- */

typedef struct race_arg {
    write_graph *other;
    int calls;
} race_arg;

/* Between prepare and gates: another writer adds a person the update's where matches. */
static void land_concurrent(void *arg)
{
    race_arg *a = arg;
    if (a->calls++) return;
    load(a->other, "{\"type\":\"Person\",\"data\":{\"name\":\"zoe\",\"age\":80}}\n");
}

static void test_reprepare_recomputes(void **state)
{
    fixture *f = *state;
    load(f->g, PEOPLE);
    store *s = NULL;
    assert_og_ok(store_local_open(&s, f->dir));
    write_graph *other = NULL;
    assert_og_ok(write_graph_open(&other, s, f->dir, NULL));
    race_arg ra = {other, 0};
    f->g->test_after_prepare = land_concurrent;
    f->g->test_arg = &ra;
    uint64_t v0 = mver(f->g);
    exec_mutate_result r;
    assert_og_ok(mutate(f->g,
                        "query u() { update Person set { status: \"inactive\" } where age > 30 }",
                        NULL, NULL, &r));
    f->g->test_after_prepare = NULL;
    assert_true(r.write.committed);
    assert_true(r.write.reprepares >= 1);
    assert_int_equal(ra.calls, 2);
    /* the plan was recomputed on the new base: zoe (inserted meanwhile) is updated too */
    assert_int_equal(r.nodes_updated, 3);
    assert_int_equal(r.write.manifest_version, v0 + 2);
    assert_rows(f->g, Q_PEOPLE,
                "{\"n\":\"ann\",\"a\":30,\"s\":null}\n"
                "{\"n\":\"bob\",\"a\":40,\"s\":\"inactive\"}\n"
                "{\"n\":\"cat\",\"a\":50,\"s\":\"inactive\"}\n"
                "{\"n\":\"dan\",\"a\":null,\"s\":null}\n"
                "{\"n\":\"zoe\",\"a\":80,\"s\":\"inactive\"}\n");
    write_graph_close(other);
}

/* A table a statement only read (its update matched nothing) must still arbitrate: a
 * concurrent change to it forces a re-prepare, which then sees the new row. (Today the branch
 * head member already catches any concurrent commit; the builder also reports the table as a
 * read-set member by name, which is what a narrowed read set will rely on.) */
static void land_tag(void *arg)
{
    race_arg *a = arg;
    if (a->calls++) return;
    load(a->other, "{\"type\":\"Tag\",\"data\":{\"label\":\"x\"}}\n");
}

static void test_read_only_table_arbitrates(void **state)
{
    fixture *f = *state;
    load(f->g, PEOPLE);
    store *s = NULL;
    assert_og_ok(store_local_open(&s, f->dir));
    write_graph *other = NULL;
    assert_og_ok(write_graph_open(&other, s, f->dir, NULL));
    race_arg ra = {other, 0};
    f->g->test_after_prepare = land_tag;
    f->g->test_arg = &ra;
    exec_mutate_result r;
    /* the Tag update matches nothing on the first base; the Person insert writes */
    assert_og_ok(mutate(f->g,
                        "query q() { insert Person { name: \"eve\" } "
                        "update Tag set { n: 7 } where label = \"x\" }",
                        NULL, NULL, &r));
    f->g->test_after_prepare = NULL;
    assert_true(r.write.committed);
    assert_int_equal(r.write.reprepares, 1);
    assert_int_equal(ra.calls, 2);
    assert_int_equal(r.nodes_updated, 1); /* the recomputed plan saw the new tag */
    write_graph_close(other);
}

static void test_refusals(void **state)
{
    fixture *f = *state;
    core_arena a;
    core_arena_init(&a, 0);
    lang_diags d;
    lang_diags_init(&d, &a);
    lang_query_set *qs = NULL;
    const char *gq = "query q() { match { $p: Person } return { $p.name } }";
    assert_og_ok(lang_query_set_build(&qs, f->g->h->catalog, gq, strlen(gq), "t.gq", &d));
    exec_mutate_result r;
    assert_og_error(exec_mutate_run(&r, f->g, &qs->queries[0], NULL, NULL), OG_E_BAD_REQUEST);
    lang_query_set_free(qs);
    /* a required param missing */
    gq = "query i($n: String) { insert Person { name: $n } }";
    assert_og_ok(lang_query_set_build(&qs, f->g->h->catalog, gq, strlen(gq), "t.gq", &d));
    assert_og_error(exec_mutate_run(&r, f->g, &qs->queries[0], NULL, NULL), OG_E_BAD_REQUEST);
    lang_query_set_free(qs);
    core_arena_free(&a);
    assert_int_equal(row_count(f->g, "node:Person"), 0);
}

static void on_phase(void *arg, int phase, uint64_t done, uint64_t total, uint64_t lines)
{
    int *writes = arg;
    if (phase == EXEC_LOAD_PHASE_WRITE) {
        assert_int_equal(done, total);
        assert_int_equal(lines, 2);
        (*writes)++;
    }
}

/* The three request entries: a load and a named mutation through the writer, then reads
 * through its graph handle at the head and at the load's commit. */
static void test_request_entries(void **state)
{
    fixture *f = *state;
    const char *data = "{\"type\":\"Person\",\"data\":{\"name\":\"ada\",\"age\":36}}\n"
                       "{\"type\":\"Person\",\"data\":{\"name\":\"bob\",\"age\":20}}\n";
    int writes = 0;
    exec_load_request lq = {data, strlen(data), NULL, EXEC_LOAD_MERGE, on_phase, &writes};
    exec_load_result lr;
    assert_og_ok(exec_load(&lr, f->g, &lq, NULL));
    assert_true(lr.write.committed);
    assert_int_equal(lr.stats.nodes, 2);
    assert_int_equal(writes, 1);

    const char *gq = "query ages() { match { $p: Person } return { $p.name, $p.age } "
                     "order { $p.name asc } }\n"
                     "query older($n: String) { update Person set { age: 50 } where name = $n }\n";
    exec_gq_request req = {gq, 0, "r.gq", "older", "{\"n\": \"ada\"}", 0};
    exec_mutate_result mr;
    assert_og_ok(exec_mutate(&mr, f->g, &req, NULL));
    assert_true(mr.write.committed);
    assert_int_equal(mr.nodes_updated, 1);
    assert_string_equal(mr.query_name, "older");
    exec_mutate_result_clear(&mr);
    assert_null(mr.query_name);

    req.name = "ages";
    req.params_json = NULL;
    exec_read rd;
    assert_og_ok(exec_query(&rd, f->g->h, &req, NULL, NULL, NULL));
    assert_string_equal(rd.query_name, "ages");
    assert_string_equal(rd.commit_id, mr.write.commit_id);
    assert_int_equal(rd.manifest_version, mr.write.manifest_version);
    core_buf b = {0};
    assert_og_ok(exec_result_row_json(rd.rows, 0, &b));
    assert_string_equal(core_buf_cstr(&b), "{\"p.name\":\"ada\",\"p.age\":50}");
    exec_read_clear(&rd);
    /* At the load's commit: the age before the update. */
    assert_og_ok(exec_query(&rd, f->g->h, &req, NULL, lr.write.commit_id, NULL));
    assert_int_equal(rd.manifest_version, lr.write.manifest_version);
    core_buf_clear(&b);
    assert_og_ok(exec_result_row_json(rd.rows, 0, &b));
    assert_string_equal(core_buf_cstr(&b), "{\"p.name\":\"ada\",\"p.age\":36}");
    exec_read_clear(&rd);
    core_buf_free(&b);

    /* Each entry takes only its own kind of query; a failure leaves nothing behind. */
    assert_og_error(exec_mutate(&mr, f->g, &req, NULL), OG_E_BAD_REQUEST);
    assert_null(mr.query_name);
    req.name = "older";
    assert_og_error(exec_query(&rd, f->g->h, &req, NULL, NULL, NULL), OG_E_BAD_REQUEST);
    assert_null(rd.rows);
    assert_null(rd.query_name);
    req.name = NULL; /* two queries: one must be named */
    assert_og_error(exec_query(&rd, f->g->h, &req, NULL, NULL, NULL), OG_E_BAD_REQUEST);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_insert_keyed_upserts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_insert_generated_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_insert_edges_by_node_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_update_where, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_cascade, setup, teardown),
        cmocka_unit_test_setup_teardown(test_multi_statement_read_your_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_noop_no_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_if_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_validation_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reprepare_recomputes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_only_table_arbitrates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_request_entries, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
