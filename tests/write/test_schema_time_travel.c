/* Time travel across schema changes (issue 19 item 3) through the public API. One graph goes
 * through four schemas (S0; S1 adds a property and renames an edge property; S2 renames a
 * type and soft-drops a property; S3 hard-drops a property and drops a type), with writes
 * under each. A read at each commit must give exactly what was visible then, checked against
 * that commit's own schema: old names, the soft-dropped column while it was a property, the
 * hard-dropped one before the drop. A branch whose head is under an earlier schema (this build
 * refuses to make one; an older build's graph may hold one) reads under that schema. Against the
 * current schema, names of earlier ones fail with their codes and locations and say what became of
 * them (renamed to, dropped with the schema that had it). schema show and export at a commit follow
 * its schema too, and a warm handle's cache never mixes the tables of two schemas. */
#include "testutil.h"

#include "omnigraph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *S0 = "node Person {\n"
                        "    name: String @key\n"
                        "    age: I32?\n"
                        "    nick: String?\n"
                        "}\n"
                        "node Pet { name: String @key }\n"
                        "edge Knows: Person -> Person { since: I32? }\n"
                        "edge Follows: Person -> Person { w: I32? }\n";

static const char *S1 = "node Person {\n"
                        "    name: String @key\n"
                        "    age: I32?\n"
                        "    nick: String?\n"
                        "    email: String?\n"
                        "}\n"
                        "node Pet { name: String @key }\n"
                        "edge Knows: Person -> Person { since: I32? }\n"
                        "edge Follows: Person -> Person { weight: I32? @rename_from(\"w\") }\n";

static const char *S2 = "node Human @rename_from(\"Person\") {\n"
                        "    name: String @key\n"
                        "    age: I32?\n"
                        "    email: String?\n"
                        "}\n"
                        "node Pet { name: String @key }\n"
                        "edge Knows: Human -> Human { since: I32? }\n"
                        "edge Follows: Human -> Human { weight: I32? }\n";

static const char *S3 = "node Human {\n"
                        "    name: String @key\n"
                        "    email: String?\n"
                        "}\n"
                        "edge Knows: Human -> Human { since: I32? }\n"
                        "edge Follows: Human -> Human { weight: I32? }\n";

typedef struct world {
    char dir[512];
    og_graph *g;
    char c1[OG_ID_LEN + 1]; /* S0: Alice, Bob, Rex, Alice knows Bob */
    char c2[OG_ID_LEN + 1]; /* apply S1 */
    char c3[OG_ID_LEN + 1]; /* S1: Alice's email, Alice follows Bob */
    char c4[OG_ID_LEN + 1]; /* apply S2 (soft drop of nick) */
    char c5[OG_ID_LEN + 1]; /* S2: Carol */
    char c6[OG_ID_LEN + 1]; /* apply S3 (hard drop of age, Pet dropped) */
    char id0[OG_SCHEMA_ID_LEN + 1], id1[OG_SCHEMA_ID_LEN + 1], id2[OG_SCHEMA_ID_LEN + 1];
    char id3[OG_SCHEMA_ID_LEN + 1];
    int legacy; /* also branches "old" (at c1) and "mid" (at c5), as an older build made them */
} world;

static void load(og_graph *g, const char *jsonl, char out[OG_ID_LEN + 1])
{
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = OG_LOAD_MERGE;
    og_write_result *wr = NULL;
    if (og_graph_load(&wr, g, "data.jsonl", jsonl, strlen(jsonl), &lo) != 0)
        fail_msg("load failed: %s\n%s", og_error_last()->message, jsonl);
    snprintf(out, OG_ID_LEN + 1, "%s", og_write_result_commit_id(wr));
    og_write_result_free(wr);
}

static void apply(og_graph *g, const char *schema, int loss, char out[OG_ID_LEN + 1],
                  char from[OG_SCHEMA_ID_LEN + 1], char to[OG_SCHEMA_ID_LEN + 1])
{
    og_schema_apply_options ao = OG_SCHEMA_APPLY_OPTIONS_INIT;
    ao.allow_data_loss = loss;
    og_schema_apply_result *r = NULL;
    ao.source = schema;
    if (og_graph_schema_apply(&r, g, &ao) != 0)
        fail_msg("apply failed: %s\n%s", og_error_last()->message, schema);
    assert_int_equal(r->applied, 1);
    snprintf(out, OG_ID_LEN + 1, "%s", r->commit);
    if (from) snprintf(from, OG_SCHEMA_ID_LEN + 1, "%s", r->from_identity);
    snprintf(to, OG_SCHEMA_ID_LEN + 1, "%s", r->to_identity);
    og_schema_apply_result_free(r);
}

/* Branch refs set aside and put back, so that an apply runs while branches exist: a graph as a
 * build that let branches keep their schema across an apply left it. This build refuses both
 * (an apply while branches exist, a branch created --at a commit before an apply); reads of
 * such a branch must still follow its own schema. */
static void refs_aside(const world *w, int aside)
{
    char a[600], b[600];
    snprintf(a, sizeof a, "%s/__manifest.lance/_refs", w->dir);
    snprintf(b, sizeof b, "%s/__manifest.lance/_refs.aside", w->dir);
    if (aside)
        assert_int_equal(rename(a, b), 0);
    else
        assert_int_equal(rename(b, a), 0);
}

static void legacy_branch(world *w, const char *name)
{
    if (!w->legacy) return;
    assert_og_ok(og_graph_create_branch(NULL, w->g, name, NULL));
}

static void legacy_apply(world *w, const char *schema, int loss, char out[OG_ID_LEN + 1],
                         char from[OG_SCHEMA_ID_LEN + 1], char to[OG_SCHEMA_ID_LEN + 1])
{
    if (w->legacy) refs_aside(w, 1);
    apply(w->g, schema, loss, out, from, to);
    if (w->legacy) refs_aside(w, 0);
}

static void build_ex(world *w, int legacy)
{
    memset(w, 0, sizeof *w);
    w->legacy = legacy;
    test_sandbox_new(w->dir, sizeof w->dir, "schema-tt");
    og_init_options io = OG_INIT_OPTIONS_INIT;
    io.schema_source = S0;
    og_init_result *ir = NULL;
    assert_og_ok(og_root_init(&ir, w->dir, &io));
    og_init_result_free(ir);
    og_open_options oo = OG_OPEN_OPTIONS_INIT;
    assert_og_ok(og_graph_open(&w->g, w->dir, &oo));
    load(w->g,
         "{\"type\":\"Person\",\"data\":{\"name\":\"Alice\",\"age\":30,\"nick\":\"al\"}}\n"
         "{\"type\":\"Person\",\"data\":{\"name\":\"Bob\",\"age\":40,\"nick\":\"bo\"}}\n"
         "{\"type\":\"Pet\",\"data\":{\"name\":\"Rex\"}}\n"
         "{\"edge\":\"Knows\",\"from\":\"Alice\",\"to\":\"Bob\",\"data\":{\"since\":2020}}\n",
         w->c1);
    legacy_branch(w, "old");
    legacy_apply(w, S1, 0, w->c2, w->id0, w->id1);
    load(w->g,
         "{\"type\":\"Person\",\"data\":{\"name\":\"Alice\",\"age\":30,\"nick\":\"al\","
         "\"email\":\"a@x\"}}\n"
         "{\"edge\":\"Follows\",\"from\":\"Alice\",\"to\":\"Bob\",\"data\":{\"weight\":7}}\n",
         w->c3);
    legacy_apply(w, S2, 0, w->c4, NULL, w->id2);
    load(w->g, "{\"type\":\"Human\",\"data\":{\"name\":\"Carol\",\"age\":50,\"email\":\"c@x\"}}\n",
         w->c5);
    legacy_branch(w, "mid");
    legacy_apply(w, S3, 1, w->c6, NULL, w->id3);
}

static void build(world *w)
{
    build_ex(w, 0);
}

static void teardown_world(world *w)
{
    og_graph_close(w->g);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The rows of the one query in src on `branch` at `at` (NULL: the head), sorted, one per
 * line; NULL when the query fails (og_error_last() says why). */
static char *q_on(og_graph *g, const char *src, const char *branch, const char *at)
{
    og_query_options qo = OG_QUERY_OPTIONS_INIT;
    qo.source = src;
    qo.source_file = "tt.gq";
    qo.at = at;
    qo.branch = branch;
    og_result *r = NULL;
    if (og_graph_query(&r, g, &qo) != 0) return NULL;
    uint64_t rows = og_result_row_count(r);
    char **v = calloc(rows ? rows : 1, sizeof *v);
    size_t total = 1;
    for (uint64_t i = 0; i < rows; i++) {
        size_t len = 0;
        const char *j = og_result_row_json(r, i, &len);
        v[i] = strndup(j, len);
        total += len + 1;
    }
    qsort(v, rows, sizeof *v, cmp_str);
    char *out = calloc(1, total);
    for (uint64_t i = 0; i < rows; i++) {
        strcat(out, v[i]);
        strcat(out, "\n");
        free(v[i]);
    }
    free(v);
    og_result_free(r);
    return out;
}

static void rows_on(og_graph *g, const char *branch, const char *at, const char *src,
                    const char *want)
{
    char *got = q_on(g, src, branch, at);
    if (!got)
        fail_msg("query at %s failed: %s\n%s", at ? at : "head", og_error_last()->message, src);
    if (strcmp(got, want) != 0)
        fail_msg("rows at %s differ:\n%s--- expected:\n%s", at ? at : "head", got, want);
    free(got);
}

static void rows_at(og_graph *g, const char *at, const char *src, const char *want)
{
    rows_on(g, NULL, at, src, want);
}

/* The query fails OG_E_BAD_REQUEST with code `code` at line:col of tt.gq, its message holding
 * each of the needles (NULL-terminated). */
static void fails_at(og_graph *g, const char *branch, const char *at, const char *src,
                     const char *code, int line, int col, ...)
{
    char *got = q_on(g, src, branch, at);
    if (got) fail_msg("query should fail but returned:\n%s%s", got, src);
    const og_error *e = og_error_last();
    assert_int_equal(e->code, OG_E_BAD_REQUEST);
    if (strncmp(e->message, code, strlen(code)) != 0 || e->message[strlen(code)] != ':')
        fail_msg("error '%s' is not %s", e->message, code);
    assert_non_null(e->file);
    assert_string_equal(e->file, "tt.gq");
    assert_int_equal(e->line, line);
    assert_int_equal(e->column, col);
    va_list ap;
    va_start(ap, col);
    for (const char *n; (n = va_arg(ap, const char *)) != NULL;)
        if (!strstr(e->message, n)) fail_msg("error '%s' does not mention '%s'", e->message, n);
    va_end(ap);
}

static const char *P0 = "query p() { match { $p: Person } return { $p.name, $p.age, $p.nick } }";
static const char *P1 = "query p() { match { $p: Person } return { $p.name, $p.nick, $p.email } }";
static const char *H2 = "query h() { match { $h: Human } return { $h.name, $h.age, $h.email } }";
static const char *H3 = "query h() { match { $h: Human } return { $h.name, $h.email } }";
static const char *PETS = "query pets() { match { $x: Pet } return { $x.name } }";
static const char *KNOWS0 =
    "query k() { match { $a: Person  $a knows $b } return { $a.name, $b.name } }";
static const char *KNOWS3 =
    "query k() { match { $a: Human  $a knows $b } return { $a.name, $b.name } }";
static const char *FOLLOWS_W =
    "query f() { match { $a: Person  $a follows $b } return { $a.name, $b.name } }";

static void test_reads_follow_each_commit_schema(void **state)
{
    (void)state;
    world w;
    build(&w);
    og_graph *g = w.g;
    /* under S0, at the first commit */
    rows_at(g, w.c1, P0,
            "{\"p.name\":\"Alice\",\"p.age\":30,\"p.nick\":\"al\"}\n"
            "{\"p.name\":\"Bob\",\"p.age\":40,\"p.nick\":\"bo\"}\n");
    rows_at(g, w.c1, PETS, "{\"x.name\":\"Rex\"}\n");
    rows_at(g, w.c1, KNOWS0, "{\"a.name\":\"Alice\",\"b.name\":\"Bob\"}\n");
    /* S1 did not exist yet at c1: email is unknown there, not null */
    fails_at(g, NULL, w.c1, P1, "T2", 1, 61, "'Person' has no property 'email'",
             "property `Person.email` was added later (schema ", NULL);
    /* under S1: email added (null for Bob), the soft-dropped-later nick still a property */
    rows_at(g, w.c2, P1,
            "{\"p.name\":\"Alice\",\"p.nick\":\"al\",\"p.email\":null}\n"
            "{\"p.name\":\"Bob\",\"p.nick\":\"bo\",\"p.email\":null}\n");
    rows_at(g, w.c3, P1,
            "{\"p.name\":\"Alice\",\"p.nick\":\"al\",\"p.email\":\"a@x\"}\n"
            "{\"p.name\":\"Bob\",\"p.nick\":\"bo\",\"p.email\":null}\n");
    rows_at(g, w.c3, FOLLOWS_W, "{\"a.name\":\"Alice\",\"b.name\":\"Bob\"}\n");
    /* under S2: the type renamed (same table), nick hidden; Carol added */
    rows_at(g, w.c4, H2,
            "{\"h.name\":\"Alice\",\"h.age\":30,\"h.email\":\"a@x\"}\n"
            "{\"h.name\":\"Bob\",\"h.age\":40,\"h.email\":null}\n");
    rows_at(g, w.c5, H2,
            "{\"h.name\":\"Alice\",\"h.age\":30,\"h.email\":\"a@x\"}\n"
            "{\"h.name\":\"Bob\",\"h.age\":40,\"h.email\":null}\n"
            "{\"h.name\":\"Carol\",\"h.age\":50,\"h.email\":\"c@x\"}\n");
    rows_at(g, w.c5, PETS, "{\"x.name\":\"Rex\"}\n");
    /* at the head (S3) */
    rows_at(g, NULL, H3,
            "{\"h.name\":\"Alice\",\"h.email\":\"a@x\"}\n"
            "{\"h.name\":\"Bob\",\"h.email\":null}\n"
            "{\"h.name\":\"Carol\",\"h.email\":\"c@x\"}\n");
    rows_at(g, NULL, KNOWS3, "{\"a.name\":\"Alice\",\"b.name\":\"Bob\"}\n");
    /* and back: the hard drop removed age from the head, not from history */
    rows_at(g, w.c1, P0,
            "{\"p.name\":\"Alice\",\"p.age\":30,\"p.nick\":\"al\"}\n"
            "{\"p.name\":\"Bob\",\"p.age\":40,\"p.nick\":\"bo\"}\n");
    /* a manifest version works as well as a commit id */
    og_snapshot_info *si = NULL;
    assert_og_ok(og_graph_snapshot(
        &si, g, &(og_snapshot_options){.version = OG_SNAPSHOT_OPTIONS_VERSION, .at = w.c1}));
    char ver[32];
    snprintf(ver, sizeof ver, "%llu", (unsigned long long)si->manifest_version);
    assert_string_equal(si->schema_identity, w.id0);
    og_snapshot_info_free(si);
    rows_at(g, ver, PETS, "{\"x.name\":\"Rex\"}\n");
    /* a reopened handle (nothing cached) reads the same */
    og_graph_close(g);
    og_open_options oo = OG_OPEN_OPTIONS_INIT;
    assert_og_ok(og_graph_open(&w.g, w.dir, &oo));
    g = w.g;
    rows_at(g, w.c3, P1,
            "{\"p.name\":\"Alice\",\"p.nick\":\"al\",\"p.email\":\"a@x\"}\n"
            "{\"p.name\":\"Bob\",\"p.nick\":\"bo\",\"p.email\":null}\n");
    teardown_world(&w);
}

static void test_current_schema_names_history(void **state)
{
    (void)state;
    world w;
    build(&w);
    og_graph *g = w.g;
    char had0[64], had1[64];
    snprintf(had0, sizeof had0, "(schema %.12s had it)", w.id0);
    snprintf(had1, sizeof had1, "(schema %.12s had it)", w.id2);
    /* a renamed type: T1 at the type name */
    fails_at(g, NULL, NULL, "query p() {\n  match { $p: Person }\n  return { $p.name }\n}", "T1", 2,
             15, "unknown node type 'Person'", "node type `Person` was renamed to `Human`", NULL);
    /* a dropped type */
    fails_at(g, NULL, NULL, PETS, "T1", 1, 28, "node type `Pet` was dropped (schema ", NULL);
    /* a soft-dropped property (S0..S1 had it) and a hard-dropped one (S0..S2 had it) */
    const char *nick = "query h() { match { $h: Human } return { $h.nick } }";
    fails_at(g, NULL, NULL, nick, "T2", 1, 42, "'Human' has no property 'nick'",
             "property `Human.nick` was dropped (schema ", NULL);
    const char *age = "query h() { match { $h: Human { age: 30 } } return { $h.name } }";
    fails_at(g, NULL, NULL, age, "T2", 1, 33, "property `Human.age` was dropped (schema ", NULL);
    /* the schema quoted had the property: S0 and S1 had nick; S0, S1 and S2 had age */
    char *got = q_on(g, nick, NULL, NULL);
    assert_null(got);
    char s0[16], s1[16], s2[16];
    snprintf(s0, sizeof s0, "%.12s", w.id0);
    snprintf(s1, sizeof s1, "%.12s", w.id1);
    snprintf(s2, sizeof s2, "%.12s", w.id2);
    const char *m = og_error_last()->message;
    assert_true(strstr(m, s0) || strstr(m, s1));
    (void)had0;
    (void)had1;
    /* a renamed edge property, in a mutation (T11) */
    const char *upd = "query u() { insert Follows { from: \"Alice\", to: \"Carol\", w: 1 } }";
    og_mutate_options mo = OG_MUTATE_OPTIONS_INIT;
    mo.source = upd;
    mo.source_file = "tt.gq";
    og_write_result *wr = NULL;
    assert_og_error(og_graph_mutate(&wr, g, &mo), OG_E_BAD_REQUEST);
    assert_null(wr);
    assert_non_null(strstr(og_error_last()->message, "T11"));
    assert_non_null(
        strstr(og_error_last()->message, "property `Follows.w` was renamed to `weight`"));
    assert_int_equal(og_error_last()->line, 1);
    /* an unknown name no schema had: the plain error */
    fails_at(g, NULL, NULL, "query z() { match { $z: Zebra } return { $z.name } }", "T1", 1, 25,
             "unknown node type 'Zebra'", NULL);
    got = q_on(g, "query z() { match { $z: Zebra } return { $z.name } }", NULL, NULL);
    assert_null(strstr(og_error_last()->message, "`"));
    /* at a commit under an older schema, a name of the current one is placed too */
    fails_at(g, NULL, w.c1, H3, "T1", 1, 25, "node type `Human` is `Person` in this schema", NULL);
    teardown_world(&w);
}

static void test_branch_forked_before_apply(void **state)
{
    (void)state;
    world w;
    build(&w);
    og_graph *g = w.g;
    /* this build starts every branch under the accepted schema */
    og_branch_options bo = OG_BRANCH_OPTIONS_INIT;
    bo.at = w.c1;
    assert_og_error(og_graph_create_branch(NULL, g, "old", &bo), OG_E_PRECONDITION_FAILED);
    teardown_world(&w);
    /* branches an older build left under earlier schemas read under them */
    build_ex(&w, 1);
    g = w.g;
    /* the branch head is under S0: Person, Pet, nick and age */
    rows_on(g, "old", NULL, P0,
            "{\"p.name\":\"Alice\",\"p.age\":30,\"p.nick\":\"al\"}\n"
            "{\"p.name\":\"Bob\",\"p.age\":40,\"p.nick\":\"bo\"}\n");
    rows_on(g, "old", NULL, PETS, "{\"x.name\":\"Rex\"}\n");
    fails_at(g, "old", NULL, H3, "T1", 1, 25, "node type `Human` is `Person` in this schema", NULL);
    rows_on(g, "mid", NULL, H2,
            "{\"h.name\":\"Alice\",\"h.age\":30,\"h.email\":\"a@x\"}\n"
            "{\"h.name\":\"Bob\",\"h.age\":40,\"h.email\":null}\n"
            "{\"h.name\":\"Carol\",\"h.age\":50,\"h.email\":\"c@x\"}\n");
    /* main still reads under S3 */
    rows_at(g, NULL, H3,
            "{\"h.name\":\"Alice\",\"h.email\":\"a@x\"}\n"
            "{\"h.name\":\"Bob\",\"h.email\":null}\n"
            "{\"h.name\":\"Carol\",\"h.email\":\"c@x\"}\n");
    /* a write to it is refused typed (nothing writes under a schema other than the accepted
     * one), and the handle keeps the accepted schema: main still reads and writes */
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = OG_LOAD_MERGE;
    lo.branch = "old";
    const char *dave = "{\"type\":\"Human\",\"data\":{\"name\":\"Dave\"}}\n";
    og_write_result *wr = NULL;
    assert_og_error(og_graph_load(&wr, g, "d.jsonl", dave, strlen(dave), &lo),
                    OG_E_PRECONDITION_FAILED);
    assert_non_null(strstr(og_error_last()->message, "branch 'old' is under schema"));
    assert_og_error(og_graph_load(&wr, g, "d.jsonl", dave, strlen(dave), &lo),
                    OG_E_PRECONDITION_FAILED);
    rows_on(g, "old", NULL, PETS, "{\"x.name\":\"Rex\"}\n");
    lo.branch = NULL;
    char c7[OG_ID_LEN + 1];
    load(g, dave, c7);
    rows_at(g, NULL, H3,
            "{\"h.name\":\"Alice\",\"h.email\":\"a@x\"}\n"
            "{\"h.name\":\"Bob\",\"h.email\":null}\n"
            "{\"h.name\":\"Carol\",\"h.email\":\"c@x\"}\n"
            "{\"h.name\":\"Dave\",\"h.email\":null}\n");
    /* schema show on the branch is S0 */
    og_schema_info *si = NULL;
    assert_og_ok(og_graph_schema(
        &si, g, &(og_snapshot_options){.version = OG_SNAPSHOT_OPTIONS_VERSION, .branch = "old"}));
    assert_string_equal(si->identity, w.id0);
    assert_string_equal(si->source, S0);
    og_schema_info_free(si);
    teardown_world(&w);
}

static char *export_at(og_graph *g, const char *at)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    og_export_options eo = OG_EXPORT_OPTIONS_INIT;
    eo.at = at;
    og_export_result *r = NULL;
    assert_og_ok(og_graph_export(&r, f, g, &eo));
    og_export_result_free(r);
    fclose(f);
    return buf;
}

static void test_schema_show_and_export_at(void **state)
{
    (void)state;
    world w;
    build(&w);
    og_graph *g = w.g;
    const char *srcs[] = {S0, S1, S1, S2, S2, S3};
    const char *ids[] = {w.id0, w.id1, w.id1, w.id2, w.id2, w.id3};
    const char *at[] = {w.c1, w.c2, w.c3, w.c4, w.c5, w.c6};
    for (int i = 0; i < 6; i++) {
        og_schema_info *si = NULL;
        assert_og_ok(og_graph_schema(
            &si, g, &(og_snapshot_options){.version = OG_SNAPSHOT_OPTIONS_VERSION, .at = at[i]}));
        assert_string_equal(si->commit, at[i]);
        assert_string_equal(si->identity, ids[i]);
        assert_string_equal(si->source, srcs[i]);
        assert_non_null(strstr(si->catalog_json, i < 3 ? "\"Person\"" : "\"Human\""));
        og_schema_info_free(si);
    }
    /* export at c1 writes nick and age; at c5 (S2) the hidden nick column is not data */
    char *e1 = export_at(g, w.c1);
    assert_non_null(strstr(e1, "{\"type\":\"Person\",\"data\":{\"id\":\"Alice\",\"name\":\"Alice\","
                               "\"age\":30,\"nick\":\"al\"}}\n"));
    assert_non_null(strstr(e1, "{\"type\":\"Pet\","));
    free(e1);
    char *e5 = export_at(g, w.c5);
    assert_non_null(strstr(e5, "{\"type\":\"Human\",\"data\":{\"id\":\"Alice\",\"name\":\"Alice\","
                               "\"age\":30,\"email\":\"a@x\"}}\n"));
    assert_null(strstr(e5, "nick"));
    free(e5);
    char *e6 = export_at(g, NULL);
    assert_null(strstr(e6, "\"age\""));
    assert_null(strstr(e6, "\"Pet\""));
    assert_non_null(strstr(e6, "{\"edge\":\"Follows\","));
    assert_non_null(strstr(e6, "\"weight\":7"));
    free(e6);
    teardown_world(&w);
}

/* A warm handle that read an edge table at a commit before an apply renamed its property must
 * not fold the later version onto that one (the column names differ). */
static void test_cache_keeps_schemas_apart(void **state)
{
    (void)state;
    world w;
    build(&w);
    og_graph *g = w.g;
    const char *w0 = "query f() { match { $a: Person  $a $e:follows $b } return { $e.w } }";
    rows_at(g, w.c1, w0, "");
    rows_at(g, w.c3, "query f() { match { $a: Person  $a $e:follows $b } return { $e.weight } }",
            "{\"e.weight\":7}\n");
    rows_at(g, w.c1, w0, "");
    /* the head's version of the table, read after the old one was cached */
    rows_at(g, NULL, "query f() { match { $a: Human  $a $e:follows $b } return { $e.weight } }",
            "{\"e.weight\":7}\n");
    teardown_world(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_follow_each_commit_schema),
        cmocka_unit_test(test_current_schema_names_history),
        cmocka_unit_test(test_branch_forked_before_apply),
        cmocka_unit_test(test_schema_show_and_export_at),
        cmocka_unit_test(test_cache_keeps_schemas_apart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
