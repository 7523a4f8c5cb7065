/* Tests of the validator on DELTA changes (a merge's delta: upserts and deletions of one type
 * in one change) and of graph_validate_all, which reports every violation as a conflict:
 * kinds, types, ids, and messages equal to the first-error mode's. Committed tables are built
 * by hand in a temporary local store, as in test_graph_validate. */
#include "testutil.h"

#include "core/alloc.h"
#include "exec/load.h"
#include "graph/merge.h"
#include "graph/validate.h"

#include <string.h>

static const char *SCHEMA =
    "node Person {\n"
    "    name: String @key\n"
    "    age: I32?\n"
    "    email: String? @unique\n"
    "    status: enum(active, inactive)?\n"
    "    @range(age, 0..150)\n"
    "}\n"
    "node Company { name: String @key }\n"
    "node Acct { name: String @key  org: String  num: I32  @unique(org, num) }\n"
    "edge Knows: Person -> Person\n"
    "edge WorksAt: Person -> Company @card(0..1)\n"
    "edge Owns: Person -> Company @card(1..2)\n";

typedef struct fx {
    char dir[256];
    store *s;
    core_arena arena;
    lang_diags diags;
    lang_catalog *cat;
    graph_snapshot snap;
    graph_change_set cs;
    graph_probes probes;
    graph_validate_stats st;
    graph_conflicts conflicts;
} fx;

static int cmp_table(const void *a, const void *b)
{
    return strcmp(((const graph_table *)a)->alias, ((const graph_table *)b)->alias);
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    test_sandbox_new(f->dir, sizeof f->dir, "validate-delta");
    if (store_local_open(&f->s, f->dir)) fail_msg("store: %s", og_error_last()->message);
    core_arena_init(&f->arena, 4096);
    lang_diags_init(&f->diags, &f->arena);
    if (lang_catalog_build(&f->cat, SCHEMA, strlen(SCHEMA), "t.pg", &f->diags))
        fail_msg("schema: %s", og_error_last()->message);
    f->snap.tables = calloc(f->cat->n_types, sizeof *f->snap.tables);
    for (size_t i = 0; i < f->cat->n_types; i++) {
        const lang_typedef *t = &f->cat->types[i];
        graph_table *gt = &f->snap.tables[f->snap.n_tables++];
        char path[STORE_KEY_MAX], alias[256];
        assert_og_ok(graph_table_path(path, t->kind, 100 + i, 7));
        assert_og_ok(graph_table_alias(alias, sizeof alias, t->kind, t->name));
        gt->kind = t->kind;
        gt->sid = 100 + i;
        gt->inc = 7;
        gt->alias = strdup(alias);
        gt->type_name = strdup(t->name);
        gt->path = strdup(path);
        arrow_schema sch;
        lance_create_options o;
        assert_og_ok(graph_type_schema(&sch, t));
        char kix[GRAPH_KIX_DECL_MAX];
        assert_og_ok(graph_type_create_options(&o, t, kix));
        lance_dataset *ds = NULL;
        assert_og_ok(lance_dataset_create(&ds, f->s, path, &sch, &o));
        gt->version = lance_dataset_version(ds);
        lance_dataset_free(ds);
        arrow_schema_clear(&sch);
    }
    qsort(f->snap.tables, f->snap.n_tables, sizeof *f->snap.tables, cmp_table);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    for (size_t i = 0; i < f->snap.n_tables; i++) {
        free(f->snap.tables[i].alias);
        free(f->snap.tables[i].type_name);
        free(f->snap.tables[i].path);
    }
    free(f->snap.tables);
    graph_change_set_clear(&f->cs);
    graph_probes_clear(&f->probes);
    graph_conflicts_clear(&f->conflicts);
    lang_catalog_free(f->cat);
    core_arena_free(&f->arena);
    test_sandbox_store_done(f->dir, f->s);
    free(f);
    return 0;
}

static graph_table *table_of(fx *f, int ti)
{
    const lang_typedef *t = &f->cat->types[ti];
    for (size_t i = 0; i < f->snap.n_tables; i++)
        if (!strcmp(f->snap.tables[i].type_name, t->name)) return &f->snap.tables[i];
    fail_msg("no table for %s", t->name);
    return NULL;
}

/* Append the JSONL rows to the committed tables and move the snapshot's pins. */
static void commit(fx *f, const char *jsonl)
{
    graph_change_set cs;
    assert_og_ok(exec_load_parse(&cs, f->cat, jsonl, strlen(jsonl), "seed", EXEC_LOAD_MERGE, NULL,
                                 NULL, NULL));
    for (size_t i = 0; i < cs.n; i++) {
        graph_table *gt = table_of(f, cs.changes[i].type_index);
        lance_dataset *ds = NULL, *out = NULL;
        assert_og_ok(lance_dataset_open(&ds, f->s, gt->path, gt->version, LANCE_ACCESS_WRITE));
        assert_og_ok(lance_dataset_append(&out, ds, &cs.changes[i].rows, 1));
        gt->version = lance_dataset_version(out);
        lance_dataset_free(ds);
        lance_dataset_free(out);
    }
    graph_change_set_clear(&cs);
}

/* The change set becomes the JSONL rows (may be ""), each type's as a DELTA's upserts. */
static void delta(fx *f, const char *jsonl)
{
    graph_change_set_clear(&f->cs);
    assert_og_ok(exec_load_parse(&f->cs, f->cat, jsonl, strlen(jsonl), "in.jsonl", EXEC_LOAD_MERGE,
                                 NULL, NULL, NULL));
    for (size_t i = 0; i < f->cs.n; i++)
        f->cs.changes[i].mode = GRAPH_CHANGE_DELTA;
}

/* One more id the DELTA of type `name` deletes (the change is added, in type order, when the
 * set has none for the type). */
static void del(fx *f, const char *name, int kind, const char *id)
{
    int ti = lang_catalog_find(f->cat, name, kind);
    assert_true(ti >= 0);
    size_t at = 0;
    while (at < f->cs.n && f->cs.changes[at].type_index < ti)
        at++;
    if (at == f->cs.n || f->cs.changes[at].type_index != ti) {
        graph_change *c = core_realloc(f->cs.changes, (f->cs.n + 1) * sizeof *c);
        assert_non_null(c);
        memmove(c + at + 1, c + at, (f->cs.n - at) * sizeof *c);
        memset(&c[at], 0, sizeof *c);
        c[at].type_index = ti;
        c[at].mode = GRAPH_CHANGE_DELTA;
        f->cs.changes = c;
        f->cs.n++;
    }
    graph_change *c = &f->cs.changes[at];
    c->delete_ids = core_realloc(c->delete_ids, (c->n_delete_ids + 1) * sizeof *c->delete_ids);
    assert_non_null(c->delete_ids);
    c->delete_ids[c->n_delete_ids++] = core_strdup(id);
}

static int validate_cs(fx *f)
{
    graph_probes_clear(&f->probes);
    return graph_validate(f->cat, &f->snap, f->s, &f->cs, &f->probes, &f->st);
}

static int validate_all(fx *f)
{
    graph_probes_clear(&f->probes);
    graph_conflicts_clear(&f->conflicts);
    return graph_validate_all(f->cat, &f->snap, f->s, &f->cs, &f->probes, &f->st, NULL, NULL,
                              &f->conflicts);
}

static void assert_err(int rc, int code, int line, const char *frag)
{
    assert_og_error(rc, code);
    const og_error *e = og_error_last();
    if (!strstr(e->message, frag)) fail_msg("message '%s' lacks '%s'", e->message, frag);
    assert_int_equal(e->line, line);
}

/* Conflict i is of this kind, type and id (NULL: none), its message holding frag. */
static void assert_conflict(fx *f, size_t i, int kind, const char *type, const char *id,
                            const char *frag)
{
    if (i >= f->conflicts.n) fail_msg("conflict %zu missing (%zu in all)", i, f->conflicts.n);
    const graph_conflict *c = &f->conflicts.items[i];
    if (c->kind != kind)
        fail_msg("conflict %zu is %s, not %s: %s", i, graph_conflict_kind_name(c->kind),
                 graph_conflict_kind_name(kind), c->message);
    assert_string_equal(c->type, type);
    if (id) {
        assert_non_null(c->id);
        assert_string_equal(c->id, id);
    } else {
        assert_null(c->id);
    }
    if (!strstr(c->message, frag)) fail_msg("conflict %zu '%s' lacks '%s'", i, c->message, frag);
}

#define P(name, extra) "{\"type\":\"Person\",\"data\":{\"name\":\"" name "\"" extra "}}\n"
#define C(name) "{\"type\":\"Company\",\"data\":{\"name\":\"" name "\"}}\n"
#define E(type, from, to, id)                                                                      \
    "{\"edge\":\"" type "\",\"from\":\"" from "\",\"to\":\"" to "\","                              \
    "\"data\":{\"id\":\"" id "\"}}\n"
#define A(n, o, k)                                                                                 \
    "{\"type\":\"Acct\",\"data\":{\"name\":\"" n "\",\"org\":\"" o "\",\"num\":" k "}}\n"

/* Deleting a node through a DELTA: its committed edges dangle unless the change set deletes
 * or re-points them; a DELTA edge to it is an orphan. */
static void test_delta_dangling(void **state)
{
    fx *f = *state;
    commit(f, P("alice", "") P("bob", "") E("Knows", "alice", "bob", "k1"));
    delta(f, P("carol", ""));
    del(f, "Person", LANG_NODE, "bob");
    assert_err(validate_cs(f), OG_E_BAD_REQUEST, 0,
               "removing Person \"bob\" would leave Knows edge k1 dangling");
    /* the edge deleted in the same change set */
    del(f, "Knows", LANG_EDGE, "k1");
    assert_og_ok(validate_cs(f));
    /* or re-pointed at carol, whom the same change set upserts */
    delta(f, P("carol", "") E("Knows", "alice", "carol", "k1"));
    del(f, "Person", LANG_NODE, "bob");
    assert_og_ok(validate_cs(f));
    /* a DELTA edge to the deleted node */
    delta(f, E("Knows", "alice", "bob", "k2"));
    del(f, "Person", LANG_NODE, "bob");
    del(f, "Knows", LANG_EDGE, "k1");
    assert_err(validate_cs(f), OG_E_BAD_REQUEST, 1,
               "Knows: dst \"bob\" is not an existing Person node (deleted by this change) "
               "(edge id \"k2\")");
    /* an edge-only DELTA whose endpoints are committed */
    delta(f, E("Knows", "bob", "alice", "k2"));
    del(f, "Knows", LANG_EDGE, "k1");
    assert_og_ok(validate_cs(f));
    /* deleting a node nothing points at */
    delta(f, "");
    del(f, "Person", LANG_NODE, "alice");
    assert_err(validate_cs(f), OG_E_BAD_REQUEST, 0, "removing Person \"alice\" would leave");
    delta(f, "");
    del(f, "Person", LANG_NODE, "zed"); /* not committed: nothing to do */
    assert_og_ok(validate_cs(f));
}

/* @unique against committed rows that the same DELTA deletes or replaces, through the key
 * index (one text column) and through a read of the table (two columns). */
static void test_delta_unique(void **state)
{
    fx *f = *state;
    commit(f, P("alice", ",\"email\":\"a@x\"") A("a1", "acme", "1"));
    delta(f, P("bob", ",\"email\":\"a@x\""));
    assert_err(validate_cs(f), OG_E_KEY_CONFLICT, 1,
               "Person: @unique(email) violated: value \"a@x\" is already used by id \"alice\"");
    del(f, "Person", LANG_NODE, "alice");
    assert_og_ok(validate_cs(f));
    assert_int_equal(f->st.tables_scanned, 0); /* asked through the email index */
    /* alice keeps her email while bob takes another */
    delta(f, P("alice", ",\"email\":\"a@x\"") P("bob", ",\"email\":\"b@x\""));
    assert_og_ok(validate_cs(f));
    delta(f, A("a2", "acme", "1"));
    assert_err(validate_cs(f), OG_E_KEY_CONFLICT, 1, "@unique(org, num) violated");
    del(f, "Acct", LANG_NODE, "a1");
    assert_og_ok(validate_cs(f));
    /* two DELTA rows with one value */
    delta(f, P("x", ",\"email\":\"q@x\"") P("y", ",\"email\":\"q@x\""));
    assert_err(validate_cs(f), OG_E_KEY_CONFLICT, 2, "is given twice in the input");
}

/* @card through DELTA edges: committed edges per source, minus the deleted and replaced ones,
 * plus the upserted ones. */
static void test_delta_card(void **state)
{
    fx *f = *state;
    commit(f, P("alice", "") P("bob", "") C("acme") C("globex") C("initech")
                  E("Owns", "alice", "acme", "o1") E("Owns", "bob", "acme", "o2")
                      E("Owns", "bob", "globex", "o3") E("WorksAt", "alice", "acme", "w1"));
    delta(f, "");
    del(f, "Owns", LANG_EDGE, "o1");
    assert_err(validate_cs(f), OG_E_BAD_REQUEST, 0,
               "Owns: source node \"alice\" would have 0 Owns edges, outside @card(1..2)");
    delta(f, E("Owns", "alice", "globex", "o4"));
    del(f, "Owns", LANG_EDGE, "o1");
    assert_og_ok(validate_cs(f));
    delta(f, E("Owns", "bob", "initech", "o4"));
    assert_err(validate_cs(f), OG_E_BAD_REQUEST, 1, "\"bob\" would have 3 Owns edges");
    del(f, "Owns", LANG_EDGE, "o2");
    assert_og_ok(validate_cs(f));
    /* o1 moves from alice to bob: bob has 3 (named first: he has a row), alice 0 */
    delta(f, E("Owns", "bob", "initech", "o1"));
    assert_err(validate_cs(f), OG_E_BAD_REQUEST, 1, "\"bob\" would have 3 Owns edges");
    assert_og_ok(validate_all(f));
    assert_int_equal(f->conflicts.n, 2);
    assert_conflict(f, 0, GRAPH_CONFLICT_CARDINALITY_VIOLATION, "Owns", NULL,
                    "line 1: Owns: source node \"bob\" would have 3 Owns edges");
    assert_conflict(f, 1, GRAPH_CONFLICT_CARDINALITY_VIOLATION, "Owns", NULL,
                    "source node \"alice\" would have 0 Owns edges");
    /* re-sending o1 as it is changes no count */
    delta(f, E("Owns", "alice", "acme", "o1"));
    assert_og_ok(validate_cs(f));
    /* WorksAt @card(0..1): a second edge only with the first deleted */
    delta(f, E("WorksAt", "alice", "globex", "w2"));
    assert_err(validate_cs(f), OG_E_BAD_REQUEST, 1, "\"alice\" would have 2 WorksAt edges");
    del(f, "WorksAt", LANG_EDGE, "w1");
    assert_og_ok(validate_cs(f));
}

/* Value constraints on DELTA rows; a DELTA without rows; a malformed DELTA. */
static void test_delta_values(void **state)
{
    fx *f = *state;
    delta(f, P("a", ",\"age\":3") P("b", ",\"age\":151"));
    assert_err(validate_cs(f), OG_E_BAD_REQUEST, 2,
               "Person.age: 151 is outside @range(0..150) (id \"b\")");
    delta(f, P("a", ",\"status\":\"active\""));
    assert_og_ok(validate_cs(f));
    assert_int_equal(f->st.rows_checked, 1);
    /* the loader refuses a bad enum value; a row built in code reaches the validator */
    {
        arrow_builder *b;
        arrow_array *a;
        arrow_array_free(f->cs.changes[0].rows->columns[4]);
        assert_og_ok(arrow_builder_new(&b, &f->cs.changes[0].rows->schema.fields[4].type));
        assert_og_ok(arrow_builder_append_str(b, "retired"));
        assert_og_ok(arrow_builder_finish(b, &a));
        arrow_builder_free(b);
        f->cs.changes[0].rows->columns[4] = a;
    }
    assert_err(validate_cs(f), OG_E_BAD_REQUEST, 1,
               "Person.status: \"retired\" is not a value of the enum (id \"a\")");
    /* deletions only, of ids never committed: nothing to read but the edge indexes */
    delta(f, "");
    del(f, "Company", LANG_NODE, "nope");
    assert_og_ok(validate_cs(f));
    assert_int_equal(f->st.rows_checked, 0);
    /* an empty DELTA (no rows at all) */
    graph_change_set_clear(&f->cs);
    f->cs.changes = core_calloc(1, sizeof *f->cs.changes);
    f->cs.n = 1;
    f->cs.changes[0].type_index = lang_catalog_find(f->cat, "Person", LANG_NODE);
    f->cs.changes[0].mode = GRAPH_CHANGE_DELTA;
    assert_og_ok(validate_cs(f));
    assert_int_equal(f->probes.n, 0);
    /* one id both upserted and deleted: malformed, in either mode */
    delta(f, P("a", ""));
    del(f, "Person", LANG_NODE, "a");
    assert_err(validate_cs(f), OG_E_BAD_REQUEST, 0,
               "Person: id \"a\" is both upserted and deleted by one change");
    assert_og_error(validate_all(f), OG_E_BAD_REQUEST);
    assert_int_equal(f->conflicts.n, 0);
}

/* Every violation of a change set, of every kind, in one call; the first is the one the
 * first-error mode reports, with the same text. */
static void test_validate_all(void **state)
{
    fx *f = *state;
    commit(f, P("alice", ",\"email\":\"a@x\"") P("bob", "") P("carol", "") C("acme") C("globex")
                  E("Knows", "alice", "bob", "k1") E("Owns", "alice", "acme", "o1")
                      E("Owns", "carol", "acme", "o2") E("Owns", "carol", "globex", "o3"));
    delta(f, P("x", ",\"age\":200,\"status\":\"active\"") P("y", ",\"email\":\"a@x\"")
                 E("Knows", "alice", "ghost", "k2") E("Knows", "ghost", "ghost2", "k3")
                     P("z", ",\"age\":-4"));
    del(f, "Person", LANG_NODE, "bob");
    del(f, "Owns", LANG_EDGE, "o1");
    int rc = validate_cs(f);
    assert_og_error(rc, OG_E_BAD_REQUEST);
    char first[1024];
    snprintf(first, sizeof first, "%s", og_error_last()->message);
    assert_og_ok(validate_all(f));
    assert_int_equal(f->conflicts.n, 7);
    assert_string_equal(f->conflicts.items[0].message, first);
    assert_conflict(f, 0, GRAPH_CONFLICT_VALUE_CONSTRAINT_VIOLATION, "Person", "x",
                    "line 1: Person.age: 200 is outside @range(0..150) (id \"x\")");
    assert_conflict(f, 1, GRAPH_CONFLICT_VALUE_CONSTRAINT_VIOLATION, "Person", "z",
                    "line 5: Person.age: -4 is outside @range(0..150) (id \"z\")");
    assert_conflict(f, 2, GRAPH_CONFLICT_UNIQUE_VIOLATION, "Person", "y",
                    "line 2: Person: @unique(email) violated: value \"a@x\" is already used by "
                    "id \"alice\"");
    /* k3 has neither endpoint: one conflict (src side first) */
    assert_conflict(f, 3, GRAPH_CONFLICT_ORPHAN_EDGE, "Knows", "k3",
                    "line 4: Knows: src \"ghost\" is not an existing Person node");
    assert_conflict(f, 4, GRAPH_CONFLICT_ORPHAN_EDGE, "Knows", "k2",
                    "line 3: Knows: dst \"ghost\" is not an existing Person node");
    assert_conflict(f, 5, GRAPH_CONFLICT_ORPHAN_EDGE, "Knows", "k1",
                    "removing Person \"bob\" would leave Knows edge k1 dangling");
    assert_conflict(f, 6, GRAPH_CONFLICT_CARDINALITY_VIOLATION, "Owns", NULL,
                    "Owns: source node \"alice\" would have 0 Owns edges");
    for (size_t i = 0; i < f->conflicts.n; i++)
        assert_non_null(graph_conflict_kind_name(f->conflicts.items[i].kind));
    /* nothing wrong: no conflict */
    delta(f, P("x", ",\"age\":20"));
    assert_og_ok(validate_all(f));
    assert_int_equal(f->conflicts.n, 0);
    /* the other modes collect too: two duplicate ids and an existing id in an append */
    graph_change_set_clear(&f->cs);
    const char *in = P("alice", "") P("n1", "") P("n1", "") P("n2", "") P("n2", "");
    assert_og_ok(exec_load_parse(&f->cs, f->cat, in, strlen(in), "in.jsonl", EXEC_LOAD_APPEND, NULL,
                                 NULL, NULL));
    assert_og_error(validate_cs(f), OG_E_KEY_CONFLICT);
    snprintf(first, sizeof first, "%s", og_error_last()->message);
    assert_og_ok(validate_all(f));
    assert_int_equal(f->conflicts.n, 3);
    assert_string_equal(f->conflicts.items[0].message, first);
    assert_conflict(f, 0, GRAPH_CONFLICT_UNIQUE_VIOLATION, "Person", "n1",
                    "line 3: Person: id \"n1\" appears twice in the input (lines 2 and 3)");
    assert_conflict(f, 1, GRAPH_CONFLICT_UNIQUE_VIOLATION, "Person", "n2", "(lines 4 and 5)");
    assert_conflict(f, 2, GRAPH_CONFLICT_UNIQUE_VIOLATION, "Person", "alice",
                    "line 1: Person: id \"alice\" already exists");
    /* a node REPLACE leaving two committed edges dangling: one conflict each */
    graph_change_set_clear(&f->cs);
    in = P("alice", "") P("carol", "");
    assert_og_ok(exec_load_parse(&f->cs, f->cat, in, strlen(in), "in.jsonl", EXEC_LOAD_OVERWRITE,
                                 NULL, NULL, NULL));
    assert_og_ok(validate_all(f));
    assert_int_equal(f->conflicts.n, 1);
    assert_conflict(f, 0, GRAPH_CONFLICT_ORPHAN_EDGE, "Knows", "k1",
                    "removing Person \"bob\" would leave Knows edge k1 dangling");
    assert_og_error(
        graph_validate_all(f->cat, &f->snap, f->s, &f->cs, NULL, NULL, NULL, NULL, NULL),
        OG_E_BAD_REQUEST);
}

/* Deleting two nodes that one committed edge joins: one orphan edge, one conflict. */
static void test_validate_all_edge_once(void **state)
{
    fx *f = *state;
    commit(f, P("alice", "") P("bob", "") P("carol", "") E("Knows", "alice", "bob", "k1")
                  E("Knows", "carol", "carol", "k2"));
    delta(f, "");
    del(f, "Person", LANG_NODE, "alice");
    del(f, "Person", LANG_NODE, "bob");
    del(f, "Person", LANG_NODE, "carol");
    del(f, "Person", LANG_NODE, "bob"); /* named twice */
    assert_og_ok(validate_all(f));
    assert_int_equal(f->conflicts.n, 2);
    assert_conflict(f, 0, GRAPH_CONFLICT_ORPHAN_EDGE, "Knows", "k1",
                    "removing Person \"alice\" would leave Knows edge k1 dangling");
    assert_conflict(f, 1, GRAPH_CONFLICT_ORPHAN_EDGE, "Knows", "k2",
                    "removing Person \"carol\" would leave Knows edge k2 dangling");
    assert_err(validate_cs(f), OG_E_BAD_REQUEST, 0, "\"alice\" would leave Knows edge k1");
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_delta_dangling), T(test_delta_unique), T(test_delta_card),
        T(test_delta_values),   T(test_validate_all), T(test_validate_all_edge_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
