/* Schema apply (issue 19, RFC-022 §6.3) through the public API: the truth table of step kinds
 * on a populated graph. Each cell starts from the same graph (Person, Company, City, WorksAt
 * with rows), applies one changed schema, and checks the outcome (applied, refused and how),
 * the rows read back under the new names, stable ids across renames, soft and hard drops,
 * incarnations of a re-added type, that a refused apply changes nothing (same commit count,
 * same schema identity, same rows), and that writes work under the new schema afterwards. */
#include "testutil.h"

#include "graph/graph.h"
#include "lance/branch.h"
#include "omnigraph.h"
#include "store/store.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

static const char *BASE = "node Person {\n"
                          "    name: String @key\n"
                          "    age: I32?\n"
                          "    nick: String?\n"
                          "    level: enum(low, high)?\n"
                          "}\n"
                          "node Company { name: String @key }\n"
                          "node City { name: String @key }\n"
                          "edge WorksAt: Person -> Company { since: I32? }\n";

static const char *SEED =
    "{\"type\":\"Person\",\"data\":{\"name\":\"Alice\",\"age\":30,\"nick\":\"al\",\"level\":"
    "\"low\"}}\n"
    "{\"type\":\"Person\",\"data\":{\"name\":\"Bob\",\"age\":30,\"nick\":\"bo\"}}\n"
    "{\"type\":\"Person\",\"data\":{\"name\":\"Carol\",\"age\":50}}\n"
    "{\"type\":\"Company\",\"data\":{\"name\":\"Acme\"}}\n"
    "{\"type\":\"City\",\"data\":{\"name\":\"Oslo\"}}\n"
    "{\"edge\":\"WorksAt\",\"from\":\"Alice\",\"to\":\"Acme\",\"data\":{\"since\":2020}}\n"
    "{\"edge\":\"WorksAt\",\"from\":\"Bob\",\"to\":\"Acme\"}\n";

static og_graph *new_graph(char *dir, size_t cap)
{
    test_sandbox_new(dir, cap, "schema-apply");
    og_init_options io = OG_INIT_OPTIONS_INIT;
    io.schema_source = BASE;
    og_init_result *ir = NULL;
    assert_og_ok(og_root_init(&ir, dir, &io));
    og_init_result_free(ir);
    og_graph *g = NULL;
    og_open_options oo = OG_OPEN_OPTIONS_INIT;
    assert_og_ok(og_graph_open(&g, dir, &oo));
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = OG_LOAD_APPEND;
    og_write_result *wr = NULL;
    assert_og_ok(og_graph_load(&wr, g, "seed.jsonl", SEED, strlen(SEED), &lo));
    og_write_result_free(wr);
    return g;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The rows of the one query in src (at commit `at`, NULL: the head), sorted, one per line; NULL
 * when the query fails (og_error_last() says why). */
static char *q_at(og_graph *g, const char *src, const char *at)
{
    char name[64];
    const char *p = strstr(src, "query ") + 6;
    size_t n = strcspn(p, "(");
    snprintf(name, sizeof name, "%.*s", (int)n, p);
    og_query_options qo = OG_QUERY_OPTIONS_INIT;
    qo.source = src;
    qo.name = name;
    qo.at = at;
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

static char *q(og_graph *g, const char *src)
{
    return q_at(g, src, NULL);
}

static void assert_rows(og_graph *g, const char *src, const char *want)
{
    char *got = q(g, src);
    if (!got) fail_msg("query failed: %s\n%s", og_error_last()->message, src);
    if (strcmp(got, want) != 0) fail_msg("rows differ:\n%s--- expected:\n%s", got, want);
    free(got);
}

static void assert_query_fails(og_graph *g, const char *src, const char *needle)
{
    char *got = q(g, src);
    if (got) fail_msg("query should fail but returned:\n%s", got);
    assert_int_equal(og_error_last()->code, OG_E_BAD_REQUEST);
    if (needle && !strstr(og_error_last()->message, needle))
        fail_msg("error '%s' does not mention '%s'", og_error_last()->message, needle);
}

static size_t commits(og_graph *g)
{
    og_commit_list *l = NULL;
    assert_og_ok(og_graph_commits(&l, g, NULL));
    size_t n = og_commit_list_count(l);
    og_commit_list_free(l);
    return n;
}

static char *identity(og_graph *g)
{
    og_schema_info *si = NULL;
    assert_og_ok(og_graph_schema(&si, g, NULL));
    char *id = strdup(si->identity);
    og_schema_info_free(si);
    return id;
}

static int apply(og_graph *g, const char *schema, int loss, og_schema_apply_result **out)
{
    og_schema_apply_options ao = OG_SCHEMA_APPLY_OPTIONS_INIT;
    ao.allow_data_loss = loss;
    *out = NULL;
    ao.source = schema;
    return og_graph_schema_apply(out, g, &ao);
}

static void apply_ok(og_graph *g, const char *schema, int loss, og_schema_apply_result **out)
{
    if (apply(g, schema, loss, out) != 0)
        fail_msg("apply failed: %s\n%s", og_error_last()->message, schema);
    assert_non_null(*out);
    assert_int_equal((*out)->applied, 1);
}

static void load_ok(og_graph *g, const char *jsonl)
{
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = OG_LOAD_MERGE;
    og_write_result *wr = NULL;
    if (og_graph_load(&wr, g, "more.jsonl", jsonl, strlen(jsonl), &lo) != 0)
        fail_msg("load failed: %s\n%s", og_error_last()->message, jsonl);
    og_write_result_free(wr);
}

/* A graph reopened from disk sees the same (the root pair and the kept pair agree). */
static og_graph *reopen(og_graph *g, const char *dir)
{
    og_graph_close(g);
    og_open_options oo = OG_OPEN_OPTIONS_INIT;
    assert_og_ok(og_graph_open(&g, dir, &oo));
    return g;
}

static const char *PERSONS = "query p() { match { $p: Person } return { $p.name, $p.age } }\n";
static const char *PERSONS_ROWS = "{\"p.name\":\"Alice\",\"p.age\":30}\n"
                                  "{\"p.name\":\"Bob\",\"p.age\":30}\n"
                                  "{\"p.name\":\"Carol\",\"p.age\":50}\n";

/* ---- additive steps -------------------------------------------------------------------------- */

static void test_add_type_and_property(void **state)
{
    (void)state;
    char dir[512];
    og_graph *g = new_graph(dir, sizeof dir);
    size_t c0 = commits(g);
    char *next = NULL;
    assert_true(asprintf(&next,
                         "%s\nnode Project { title: String @key }\n"
                         "edge Owns: Company -> Project\n",
                         BASE) > 0);
    /* a new property: existing rows read null */
    char *with_email = strdup(next);
    char *at = strstr(with_email, "    nick: String?\n");
    assert_non_null(at);
    char *next2 = NULL;
    assert_true(
        asprintf(&next2, "%.*s    email: String?\n%s", (int)(at - with_email), with_email, at) > 0);
    og_schema_apply_result *r = NULL;
    apply_ok(g, next2, 0, &r);
    assert_int_equal(r->tables_created, 2);
    assert_int_equal(r->tables_rewritten, 1); /* Person gains a column */
    assert_int_equal(r->rows_rewritten, 3);
    assert_int_equal(r->tables_dropped, 0);
    assert_non_null(strstr(r->plan_json, "add_type"));
    assert_non_null(strstr(r->plan_json, "add_property"));
    og_schema_apply_result_free(r);
    assert_int_equal(commits(g), c0 + 1);
    assert_rows(g, PERSONS, PERSONS_ROWS);
    assert_rows(g, "query e() { match { $p: Person } return { $p.name, $p.email } }\n",
                "{\"p.name\":\"Alice\",\"p.email\":null}\n"
                "{\"p.name\":\"Bob\",\"p.email\":null}\n"
                "{\"p.name\":\"Carol\",\"p.email\":null}\n");
    load_ok(g, "{\"type\":\"Project\",\"data\":{\"title\":\"X\"}}\n"
               "{\"edge\":\"Owns\",\"from\":\"Acme\",\"to\":\"X\"}\n"
               "{\"type\":\"Person\",\"data\":{\"name\":\"Dan\",\"email\":\"d@x\"}}\n");
    assert_rows(g, "query o() { match { $c: Company  $c owns $p } return { $c.name, $p.title } }\n",
                "{\"c.name\":\"Acme\",\"p.title\":\"X\"}\n");
    g = reopen(g, dir);
    assert_rows(g, "query e() { match { $p: Person { name: \"Dan\" } } return { $p.email } }\n",
                "{\"p.email\":\"d@x\"}\n");
    /* applying the same schema again does nothing */
    assert_int_equal(apply(g, next2, 0, &r), 0);
    assert_int_equal(r->applied, 0);
    og_schema_apply_result_free(r);
    assert_int_equal(commits(g), c0 + 2);
    free(next);
    free(next2);
    free(with_email);
    og_graph_close(g);
    test_sandbox_done(dir);
}

/* Replace the first occurrence of `from` in BASE by `to`. */
static char *edit(const char *base, const char *from, const char *to)
{
    const char *at = strstr(base, from);
    if (!at) fail_msg("'%s' not in the schema", from);
    char *out = NULL;
    if (asprintf(&out, "%.*s%s%s", (int)(at - base), base, to, at + strlen(from)) < 0) abort();
    return out;
}

static void test_extend_enum_and_constraint(void **state)
{
    (void)state;
    char dir[512];
    og_graph *g = new_graph(dir, sizeof dir);
    char *s1 = edit(BASE, "enum(low, high)", "enum(low, high, top)");
    og_schema_apply_result *r = NULL;
    apply_ok(g, s1, 0, &r);
    assert_int_equal(r->tables_rewritten, 0); /* the column is a string either way */
    og_schema_apply_result_free(r);
    load_ok(g, "{\"type\":\"Person\",\"data\":{\"name\":\"Eve\",\"level\":\"top\"}}\n");
    /* a constraint the data meets */
    char *s2 = edit(s1, "    level:", "    @range(age, 0..200)\n    level:");
    apply_ok(g, s2, 0, &r);
    og_schema_apply_result_free(r);
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = OG_LOAD_MERGE;
    og_write_result *wr = NULL;
    const char *bad = "{\"type\":\"Person\",\"data\":{\"name\":\"Old\",\"age\":300}}\n";
    assert_og_error(og_graph_load(&wr, g, "bad.jsonl", bad, strlen(bad), &lo), OG_E_BAD_REQUEST);
    free(s1);
    free(s2);
    og_graph_close(g);
    test_sandbox_done(dir);
}

/* ---- refusals: nothing changes -------------------------------------------------------------- */

static void assert_unchanged(og_graph *g, size_t c0, const char *id0)
{
    assert_int_equal(commits(g), c0);
    char *id = identity(g);
    assert_string_equal(id, id0);
    free(id);
    assert_rows(g, PERSONS, PERSONS_ROWS);
}

static void test_constraint_violations(void **state)
{
    (void)state;
    char dir[512];
    og_graph *g = new_graph(dir, sizeof dir);
    size_t c0 = commits(g);
    char *id0 = identity(g);
    /* Alice and Bob share age 30; Carol's 50 is out of range */
    char *s = edit(BASE, "age: I32?", "age: I32? @unique\n    @range(age, 0..40)");
    og_schema_apply_result *r = NULL;
    assert_og_error(apply(g, s, 0, &r), OG_E_BAD_REQUEST);
    assert_non_null(r);
    assert_true(og_schema_apply_result_violation_count(r) >= 2);
    bool uniq = false, range = false;
    for (size_t i = 0; i < og_schema_apply_result_violation_count(r); i++) {
        const og_merge_conflict *v = og_schema_apply_result_violation(r, i);
        assert_string_equal(v->type, "Person");
        if (!strcmp(v->kind, "unique_violation")) uniq = true;
        if (!strcmp(v->kind, "value_constraint_violation")) {
            range = true;
            assert_non_null(strstr(v->message, "age"));
            assert_non_null(v->id);
        }
    }
    assert_true(uniq);
    assert_true(range);
    assert_int_equal(r->applied, 0);
    og_schema_apply_result_free(r);
    assert_unchanged(g, c0, id0);
    free(s);

    /* unsupported: a property's type changes */
    s = edit(BASE, "age: I32?", "age: String?");
    assert_og_error(apply(g, s, 0, &r), OG_E_BAD_REQUEST);
    assert_null(r);
    assert_non_null(strstr(og_error_last()->message, "M101"));
    assert_unchanged(g, c0, id0);
    free(s);

    /* an invalid source is located */
    assert_og_error(apply(g, "node Person { name: String @key", 0, &r), OG_E_BAD_REQUEST);
    assert_unchanged(g, c0, id0);

    /* another branch exists */
    assert_og_ok(og_graph_create_branch(NULL, g, "dev", NULL));
    s = edit(BASE, "nick: String?", "nick: String?\n    email: String?");
    assert_og_error(apply(g, s, 0, &r), OG_E_PRECONDITION_FAILED);
    assert_non_null(strstr(og_error_last()->message, "dev"));
    assert_unchanged(g, c0, id0);
    assert_og_ok(og_graph_delete_branch(g, "dev"));
    apply_ok(g, s, 0, &r);
    og_schema_apply_result_free(r);
    free(s);
    free(id0);
    og_graph_close(g);
    test_sandbox_done(dir);
}

/* ---- renames --------------------------------------------------------------------------------- */

/* The stable id of type (or "Type.prop") in the accepted catalog's JSON. */
static char *stable_id(og_graph *g, const char *type, const char *prop)
{
    og_schema_info *si = NULL;
    assert_og_ok(og_graph_schema(&si, g, NULL));
    char key[128];
    snprintf(key, sizeof key, "\"name\":\"%s\"", type);
    const char *t = strstr(si->catalog_json, key);
    assert_non_null(t);
    if (prop) {
        snprintf(key, sizeof key, "\"name\":\"%s\"", prop);
        t = strstr(t, key);
        assert_non_null(t);
    }
    /* the "id" nearest to the name, either side within its object */
    const char *obj = t;
    while (obj > si->catalog_json && *obj != '{')
        obj--;
    const char *id = strstr(obj, "\"id\":\"");
    assert_non_null(id);
    char *out = strndup(id + 6, 16);
    og_schema_info_free(si);
    return out;
}

static void test_renames_keep_ids(void **state)
{
    (void)state;
    char dir[512];
    og_graph *g = new_graph(dir, sizeof dir);
    char *pid = stable_id(g, "Person", NULL);
    char *aid = stable_id(g, "Person", "age");
    char *s1 = edit(BASE, "node Person {", "node Human @rename_from(\"Person\") {");
    char *s2 = edit(s1, "edge WorksAt: Person ->", "edge WorksAt: Human ->");
    char *s3 = edit(s2, "age: I32?", "years: I32? @rename_from(\"age\")");
    og_schema_apply_result *r = NULL;
    apply_ok(g, s3, 0, &r);
    assert_int_equal(r->tables_renamed, 1);
    assert_int_equal(r->tables_rewritten, 1); /* the column's name changes */
    assert_int_equal(r->tables_created, 0);
    og_schema_apply_result_free(r);
    char *hid = stable_id(g, "Human", NULL);
    char *yid = stable_id(g, "Human", "years");
    assert_string_equal(hid, pid);
    assert_string_equal(yid, aid);
    const char *HUMANS = "query h() { match { $h: Human } return { $h.name, $h.years } }\n";
    const char *HUMANS_ROWS = "{\"h.name\":\"Alice\",\"h.years\":30}\n"
                              "{\"h.name\":\"Bob\",\"h.years\":30}\n"
                              "{\"h.name\":\"Carol\",\"h.years\":50}\n";
    assert_rows(g, HUMANS, HUMANS_ROWS);
    assert_rows(g, "query w() { match { $h: Human  $h worksAt $c } return { $h.name, $c.name } }\n",
                "{\"h.name\":\"Alice\",\"c.name\":\"Acme\"}\n"
                "{\"h.name\":\"Bob\",\"c.name\":\"Acme\"}\n");
    assert_query_fails(g, PERSONS, "Person");
    load_ok(g, "{\"type\":\"Human\",\"data\":{\"name\":\"Zed\",\"years\":9}}\n");
    g = reopen(g, dir);
    assert_rows(g, "query h() { match { $h: Human { name: \"Zed\" } } return { $h.years } }\n",
                "{\"h.years\":9}\n");
    free(pid);
    free(aid);
    free(hid);
    free(yid);
    free(s1);
    free(s2);
    free(s3);
    og_graph_close(g);
    test_sandbox_done(dir);
}

/* ---- drops ----------------------------------------------------------------------------------- */

static void test_drops_soft_and_hard(void **state)
{
    (void)state;
    char dir[512];
    og_graph *g = new_graph(dir, sizeof dir);
    /* soft: nick leaves the schema, its column stays in the table (not rewritten) */
    char *s1 = edit(BASE, "    nick: String?\n", "");
    char *s2 = edit(s1, "node City { name: String @key }\n", "");
    og_schema_apply_result *r = NULL;
    apply_ok(g, s2, 0, &r);
    assert_int_equal(r->tables_rewritten, 0);
    assert_int_equal(r->tables_dropped, 1);
    assert_non_null(strstr(r->plan_json, "drop_property"));
    assert_non_null(strstr(r->plan_json, "drop_type"));
    og_schema_apply_result_free(r);
    assert_query_fails(g, "query n() { match { $p: Person } return { $p.nick } }\n", "nick");
    assert_query_fails(g, "query c() { match { $c: City } return { $c.name } }\n", "City");
    assert_rows(g, PERSONS, PERSONS_ROWS);
    /* writes fill the hidden column */
    load_ok(g, "{\"type\":\"Person\",\"data\":{\"name\":\"Dan\",\"age\":1}}\n");
    og_mutate_options mo = OG_MUTATE_OPTIONS_INIT;
    mo.source = "query up($n: String) { update Person set { age: 99 } where name = $n }\n";
    mo.name = "up";
    mo.params_json = "{\"n\":\"Alice\"}";
    og_write_result *wr = NULL;
    assert_og_ok(og_graph_mutate(&wr, g, &mo));
    og_write_result_free(wr);
    /* re-adding City makes a new, empty incarnation */
    og_graph *g2 = reopen(g, dir);
    g = g2;
    char *s3 = NULL;
    assert_true(asprintf(&s3, "%snode City { name: String @key }\n", s2) > 0);
    apply_ok(g, s3, 0, &r);
    assert_int_equal(r->tables_created, 1);
    og_schema_apply_result_free(r);
    assert_rows(g, "query c() { match { $c: City } return { $c.name } }\n", "");
    /* hard: the hidden nick column leaves the table now */
    char *s4 = edit(s3, "    age: I32?\n", "");
    apply_ok(g, s4, 1, &r);
    assert_int_equal(r->tables_rewritten, 1);
    og_schema_apply_result_free(r);
    assert_rows(g, "query p() { match { $p: Person } return { $p.name } }\n",
                "{\"p.name\":\"Alice\"}\n{\"p.name\":\"Bob\"}\n{\"p.name\":\"Carol\"}\n"
                "{\"p.name\":\"Dan\"}\n");
    /* re-adding nick after the hard drop: a new property, null in every row */
    char *s5 = edit(s4, "    level:", "    nick: String?\n    level:");
    apply_ok(g, s5, 0, &r);
    og_schema_apply_result_free(r);
    assert_rows(g, "query n() { match { $p: Person { name: \"Alice\" } } return { $p.nick } }\n",
                "{\"p.nick\":null}\n");
    free(s1);
    free(s2);
    free(s3);
    free(s4);
    free(s5);
    og_graph_close(g);
    test_sandbox_done(dir);
}

/* ---- a handle opened before the apply -------------------------------------------------------- */

static void test_stale_handle_write_fails_typed(void **state)
{
    (void)state;
    char dir[512];
    og_graph *g = new_graph(dir, sizeof dir);
    og_graph *other = NULL;
    og_open_options oo = OG_OPEN_OPTIONS_INIT;
    assert_og_ok(og_graph_open(&other, dir, &oo));
    char *s = edit(BASE, "nick: String?", "nick: String?\n    email: String?");
    og_schema_apply_result *r = NULL;
    apply_ok(g, s, 0, &r);
    og_schema_apply_result_free(r);
    /* the other handle's request was made under the old schema: refused typed, once */
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = OG_LOAD_MERGE;
    og_write_result *wr = NULL;
    const char *row = "{\"type\":\"Person\",\"data\":{\"name\":\"Eve\",\"age\":5}}\n";
    assert_og_error(og_graph_load(&wr, other, "x.jsonl", row, strlen(row), &lo), OG_E_CONFLICT);
    assert_non_null(strstr(og_error_last()->message, "schema changed"));
    const char *row2 = "{\"type\":\"Person\",\"data\":{\"name\":\"Eve\",\"email\":\"e@x\"}}\n";
    assert_og_ok(og_graph_load(&wr, other, "x.jsonl", row2, strlen(row2), &lo));
    og_write_result_free(wr);
    assert_rows(g, "query e() { match { $p: Person { name: \"Eve\" } } return { $p.email } }\n",
                "{\"p.email\":\"e@x\"}\n");
    free(s);
    og_graph_close(other);
    og_graph_close(g);
    test_sandbox_done(dir);
}

/* Branches stay under the accepted schema: one cannot start at a commit made before an apply
 * (the old commit is read with --at instead), and a branch that did (made by hand below, as a
 * version that allowed it would have) is refused for writes, typed, and refused for merges. */
static void test_branch_at_old_schema(void **state)
{
    (void)state;
    char dir[512];
    og_graph *g = new_graph(dir, sizeof dir);
    og_commit_list *l = NULL;
    assert_og_ok(og_graph_commits(&l, g, NULL));
    char old_head[64];
    snprintf(old_head, sizeof old_head, "%s", og_commit_list_get(l, 0)->id);
    uint64_t old_version = og_commit_list_get(l, 0)->manifest_version;
    og_commit_list_free(l);
    char *s = edit(BASE, "nick: String?", "nick: String?\n    email: String?");
    og_schema_apply_result *r = NULL;
    apply_ok(g, s, 0, &r);
    og_schema_apply_result_free(r);

    og_branch_options bo = OG_BRANCH_OPTIONS_INIT;
    bo.at = old_head;
    assert_og_error(og_graph_create_branch(NULL, g, "old", &bo), OG_E_PRECONDITION_FAILED);
    assert_non_null(strstr(og_error_last()->message, "a branch starts under the accepted schema"));
    og_branch_list *bl = NULL;
    assert_og_ok(og_graph_branches(&bl, g));
    assert_int_equal(og_branch_list_count(bl), 1); /* main only */
    og_branch_list_free(bl);
    /* at the head (the apply's commit) it may */
    assert_og_ok(og_graph_create_branch(NULL, g, "new", NULL));

    /* a branch forked at the old commit underneath the API */
    store *st = NULL;
    assert_int_equal(store_local_open(&st, dir), 0);
    lance_branch ref;
    assert_int_equal(lance_branch_create(st, GRAPH_MANIFEST_DIR, "legacy", NULL, old_version, &ref),
                     0);
    store_close(st);
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = OG_LOAD_APPEND;
    lo.branch = "legacy";
    og_write_result *wr = NULL;
    const char *row = "{\"type\":\"Person\",\"data\":{\"name\":\"Eve\",\"age\":5}}\n";
    for (int i = 0; i < 2; i++) { /* refused every time, not "run it again" */
        assert_og_error(og_graph_load(&wr, g, "x.jsonl", row, strlen(row), &lo),
                        OG_E_PRECONDITION_FAILED);
        assert_non_null(strstr(og_error_last()->message, "branch 'legacy' is under schema"));
    }
    /* main and the handle still take the new schema */
    lo.branch = NULL;
    const char *row2 = "{\"type\":\"Person\",\"data\":{\"name\":\"Eve\",\"email\":\"e@x\"}}\n";
    assert_og_ok(og_graph_load(&wr, g, "x.jsonl", row2, strlen(row2), &lo));
    og_write_result_free(wr);
    og_merge_options mo = OG_MERGE_OPTIONS_INIT;
    mo.source = "legacy";
    og_merge_result *mr = NULL;
    assert_og_error(og_graph_merge(&mr, g, &mo), OG_E_CONFLICT);
    assert_null(mr);
    assert_non_null(strstr(og_error_last()->message, "different schemas"));
    free(s);
    og_graph_close(g);
    test_sandbox_done(dir);
}

/* ---- cleanup of dropped tables ----------------------------------------------------------------
 */

/* The regular files under path, counted. */
static size_t count_files(const char *path)
{
    DIR *d = opendir(path);
    if (!d) return 1; /* a file */
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        n += count_files(p);
    }
    closedir(d);
    return n;
}

/* The dataset directories under root/sub ("nodes") that hold any file (a local store leaves
 * empty directories behind), counted. */
static size_t count_dirs(const char *root, const char *sub)
{
    char p[700];
    snprintf(p, sizeof p, "%s/%s", root, sub);
    DIR *d = opendir(p);
    assert_non_null(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char q[1024];
        snprintf(q, sizeof q, "%s/%s", p, e->d_name);
        n += count_files(q) > 0;
    }
    closedir(d);
    return n;
}

static og_cleanup_result *cleanup(og_graph *g, uint64_t keep, int dry_run)
{
    og_cleanup_options co = OG_CLEANUP_OPTIONS_INIT;
    co.keep = keep;
    co.dry_run = dry_run;
    og_cleanup_result *r = NULL;
    assert_og_ok(og_graph_cleanup(&r, g, &co));
    return r;
}

/* A dropped type's table stays while a retained commit reads it and goes with the last one; a
 * table directory no commit registers (an apply that failed) goes once past the grace. */
static void test_cleanup_dropped_tables(void **state)
{
    (void)state;
    char dir[512];
    og_graph *g = new_graph(dir, sizeof dir);
    char *s = edit(BASE, "node City { name: String @key }\n", "");
    og_schema_apply_result *r = NULL;
    og_commit_list *l = NULL;
    assert_og_ok(og_graph_commits(&l, g, NULL));
    assert_int_equal(og_commit_list_count(l), 2);
    char before[64];
    snprintf(before, sizeof before, "%s", og_commit_list_get(l, 0)->id);
    og_commit_list_free(l);
    apply_ok(g, s, 0, &r);
    og_schema_apply_result_free(r);
    assert_int_equal(count_dirs(dir, "nodes"), 3);
    /* the commit before the drop is retained: City's table stays, readable there */
    og_cleanup_result *c = cleanup(g, 3, 0);
    assert_int_equal(c->tables_removed, 0);
    og_cleanup_result_free(c);
    assert_int_equal(count_dirs(dir, "nodes"), 3);
    char *got = q_at(g, "query c() { match { $c: City } return { $c.name } }\n", before);
    assert_non_null(got);
    assert_string_equal(got, "{\"c.name\":\"Oslo\"}\n");
    free(got);
    og_verify_options vo = OG_VERIFY_OPTIONS_INIT;
    og_verify_report *vr = NULL;
    assert_og_ok(og_root_verify(&vr, dir, &vo));
    assert_int_equal(og_verify_report_problem_count(vr), 0);
    og_verify_report_free(vr);
    /* two commits later, keeping one: no retained commit reads it; a dry run only counts */
    load_ok(g, "{\"type\":\"Person\",\"data\":{\"name\":\"Dan\",\"age\":1}}\n");
    load_ok(g, "{\"type\":\"Person\",\"data\":{\"name\":\"Eve\",\"age\":2}}\n");
    c = cleanup(g, 1, 1);
    assert_int_equal(c->tables_removed, 1);
    og_cleanup_result_free(c);
    assert_int_equal(count_dirs(dir, "nodes"), 3);
    c = cleanup(g, 1, 0);
    assert_int_equal(c->tables_removed, 1);
    assert_true(c->files_removed > 0);
    og_cleanup_result_free(c);
    assert_int_equal(count_dirs(dir, "nodes"), 2);
    assert_int_equal(count_dirs(dir, "edges"), 1);
    c = cleanup(g, 1, 0); /* once gone, nothing more to count */
    assert_int_equal(c->tables_removed, 0);
    og_cleanup_result_free(c);
    assert_rows(g, PERSONS,
                "{\"p.name\":\"Alice\",\"p.age\":30}\n{\"p.name\":\"Bob\",\"p.age\":30}\n"
                "{\"p.name\":\"Carol\",\"p.age\":50}\n{\"p.name\":\"Dan\",\"p.age\":1}\n"
                "{\"p.name\":\"Eve\",\"p.age\":2}\n");

    /* an unregistered table directory: spared while recent, removed once past the grace */
    char p[700];
    snprintf(p, sizeof p, "%s/nodes/00000000000000ff-0000000000000001.lance", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/nodes/00000000000000ff-0000000000000001.lance/_versions", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(p, sizeof p, "%s/nodes/00000000000000ff-0000000000000001.lance/_versions/1.manifest",
             dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("x", f);
    fclose(f);
    c = cleanup(g, 1, 0);
    assert_int_equal(c->tables_removed, 0);
    assert_true(c->files_spared_recent >= 1);
    og_cleanup_result_free(c);
    assert_int_equal(count_dirs(dir, "nodes"), 3);
    struct utimbuf old = {time(NULL) - 7200, time(NULL) - 7200};
    assert_int_equal(utime(p, &old), 0);
    c = cleanup(g, 1, 0);
    assert_int_equal(c->tables_removed, 1);
    og_cleanup_result_free(c);
    snprintf(p, sizeof p, "%s/nodes/00000000000000ff-0000000000000001.lance/_versions/1.manifest",
             dir);
    assert_int_equal(access(p, F_OK), -1);
    og_graph_close(g);
    assert_og_ok(og_root_verify(&vr, dir, &vo));
    assert_int_equal(og_verify_report_problem_count(vr), 0);
    og_verify_report_free(vr);
    free(s);
    test_sandbox_done(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_type_and_property),
        cmocka_unit_test(test_extend_enum_and_constraint),
        cmocka_unit_test(test_constraint_violations),
        cmocka_unit_test(test_renames_keep_ids),
        cmocka_unit_test(test_drops_soft_and_hard),
        cmocka_unit_test(test_stale_handle_write_fails_typed),
        cmocka_unit_test(test_branch_at_old_schema),
        cmocka_unit_test(test_cleanup_dropped_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
