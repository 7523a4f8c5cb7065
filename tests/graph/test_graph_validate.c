/* Tests of graph_validate against hand-built snapshots: each constraint passing and failing
 * (code, message, line), the probes each kind of change records, and the scans it makes. */
#include "testutil.h"

#include "core/alloc.h"
#include "exec/load.h"
#include "graph/validate.h"

#include <string.h>

static const char *SCHEMA =
    "node Person {\n"
    "    name: String @key\n"
    "    age: I32?\n"
    "    email: String? @unique\n"
    "    status: enum(active, inactive)?\n"
    "    @range(age, 0..150)\n"
    "    @check(email, \"^[^@]+@[^@]+$\")\n"
    "}\n"
    "node Company { name: String @key  size: U32? }\n"
    "node Code { c: String  @check(c, \"[A-Z]{3}\") }\n"
    "node Acct { name: String @key  org: String  num: I32  @unique(org, num) }\n"
    "node Thing { label: String  w: U64?  @range(w, 10..20) }\n"
    "edge Knows: Person -> Person { since: Date? }\n"
    "edge WorksAt: Person -> Company @card(0..1) { role: String? }\n"
    "edge Owns: Person -> Company @card(1..2)\n"
    "edge Likes: Person -> Company { @unique(src, dst) }\n";

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
} fx;

static int cmp_table(const void *a, const void *b)
{
    return strcmp(((const graph_table *)a)->alias, ((const graph_table *)b)->alias);
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    test_sandbox_new(f->dir, sizeof f->dir, "validate");
    if (store_local_open(&f->s, f->dir)) fail_msg("store: %s", og_error_last()->message);
    core_arena_init(&f->arena, 4096);
    lang_diags_init(&f->diags, &f->arena);
    if (lang_catalog_build(&f->cat, SCHEMA, strlen(SCHEMA), "t.pg", &f->diags))
        fail_msg("schema: %s", og_error_last()->message);
    /* One empty table per type, registered in a snapshot by hand. */
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
        assert_true(lance_dataset_stable_row_ids(ds));
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
        gt->row_count += (uint64_t)cs.changes[i].rows->num_rows;
        lance_dataset_free(ds);
        lance_dataset_free(out);
    }
    graph_change_set_clear(&cs);
}

static int validate(fx *f, const char *jsonl, exec_load_mode mode)
{
    graph_change_set_clear(&f->cs);
    graph_probes_clear(&f->probes);
    assert_og_ok(
        exec_load_parse(&f->cs, f->cat, jsonl, strlen(jsonl), "in.jsonl", mode, NULL, NULL, NULL));
    return graph_validate(f->cat, &f->snap, f->s, &f->cs, &f->probes, &f->st);
}

static int validate_cs(fx *f)
{
    graph_probes_clear(&f->probes);
    return graph_validate(f->cat, &f->snap, f->s, &f->cs, &f->probes, &f->st);
}

/* The probes are exactly the aliases given (NULL-terminated, sorted). */
static void assert_probes(fx *f, ...)
{
    va_list ap;
    va_start(ap, f);
    size_t n = 0;
    const char *a;
    while ((a = va_arg(ap, const char *))) {
        if (n >= f->probes.n) fail_msg("probe %s missing (only %zu probes)", a, f->probes.n);
        assert_string_equal(f->probes.aliases[n], a);
        n++;
    }
    va_end(ap);
    if (n != f->probes.n)
        fail_msg("%zu probes, expected %zu (first extra %s)", f->probes.n, n, f->probes.aliases[n]);
}

static void assert_err(int rc, int code, int line, const char *frag)
{
    assert_og_error(rc, code);
    const og_error *e = og_error_last();
    if (!strstr(e->message, frag)) fail_msg("message '%s' lacks '%s'", e->message, frag);
    assert_int_equal(e->line, line);
    if (line) {
        assert_non_null(e->file);
        assert_string_equal(e->file, "in.jsonl");
    }
}

#define P(name, extra) "{\"type\":\"Person\",\"data\":{\"name\":\"" name "\"" extra "}}\n"

static void test_range(void **state)
{
    fx *f = *state;
    assert_og_ok(validate(f, P("a", ",\"age\":0") P("b", ",\"age\":150"), EXEC_LOAD_MERGE));
    assert_int_equal(f->st.rows_checked, 2);
    assert_err(validate(f, P("a", ",\"age\":3") P("b", ",\"age\":151"), EXEC_LOAD_MERGE),
               OG_E_BAD_REQUEST, 2, "Person.age: 151 is outside @range(0..150) (id \"b\")");
    assert_err(validate(f, P("a", ",\"age\":-1"), EXEC_LOAD_MERGE), OG_E_BAD_REQUEST, 1,
               "-1 is outside @range(0..150)");
    assert_int_equal(f->probes.n, 0); /* nothing read to decide a value constraint */
    assert_int_equal(f->st.tables_scanned, 0);
    /* unsigned column */
    assert_og_ok(
        validate(f, "{\"type\":\"Thing\",\"data\":{\"label\":\"x\",\"w\":20}}\n", EXEC_LOAD_MERGE));
    assert_err(
        validate(f, "{\"type\":\"Thing\",\"data\":{\"label\":\"x\",\"w\":9}}\n", EXEC_LOAD_MERGE),
        OG_E_BAD_REQUEST, 1, "Thing.w: 9 is outside @range(10..20)");
}

static void test_check(void **state)
{
    fx *f = *state;
    assert_og_ok(validate(f, P("a", ",\"email\":\"a@b\""), EXEC_LOAD_MERGE));
    assert_err(
        validate(f, P("a", ",\"email\":\"a@b\"") P("b", ",\"email\":\"nope\""), EXEC_LOAD_MERGE),
        OG_E_BAD_REQUEST, 2, "Person.email: \"nope\" does not match @check");
    /* @check is a full match even without anchors */
    assert_og_ok(validate(f, "{\"type\":\"Code\",\"data\":{\"c\":\"ABC\"}}\n", EXEC_LOAD_APPEND));
    assert_err(validate(f,
                        "{\"type\":\"Code\",\"data\":{\"c\":\"ABC\"}}\n"
                        "{\"type\":\"Code\",\"data\":{\"c\":\"ABCD\"}}\n",
                        EXEC_LOAD_MERGE),
               OG_E_BAD_REQUEST, 2, "Code.c: \"ABCD\" does not match @check(\"[A-Z]{3}\")");
    assert_err(validate(f, "{\"type\":\"Code\",\"data\":{\"c\":\"xABC\"}}\n", EXEC_LOAD_MERGE),
               OG_E_BAD_REQUEST, 1, "does not match");
}

static void test_duplicate_ids(void **state)
{
    fx *f = *state;
    assert_err(validate(f, P("a", "") P("b", "") "\n" P("a", ",\"age\":3"), EXEC_LOAD_MERGE),
               OG_E_KEY_CONFLICT, 4, "Person: id \"a\" appears twice in the input (lines 1 and 4)");
    assert_string_equal(og_error_last()->key, "a");
    assert_err(validate(f,
                        "{\"type\":\"Thing\",\"data\":{\"label\":\"x\",\"id\":\"t1\"}}\n"
                        "{\"type\":\"Thing\",\"data\":{\"label\":\"y\",\"id\":\"t1\"}}\n",
                        EXEC_LOAD_OVERWRITE),
               OG_E_KEY_CONFLICT, 2, "lines 1 and 2");
    assert_int_equal(f->probes.n, 0);
}

static void test_insert_conflict(void **state)
{
    fx *f = *state;
    commit(f, P("alice", ",\"age\":30"));
    /* append of an existing id: key conflict, the table was read */
    assert_err(validate(f, P("bob", "") P("alice", ""), EXEC_LOAD_APPEND), OG_E_KEY_CONFLICT, 2,
               "Person: id \"alice\" already exists");
    assert_string_equal(og_error_last()->key, "alice");
    assert_probes(f, "node:Person", NULL);
    assert_int_equal(f->st.tables_scanned, 1);
    /* a fresh id in append mode: the table is still read to prove absence */
    assert_og_ok(validate(f, P("bob", ""), EXEC_LOAD_APPEND));
    assert_probes(f, "node:Person", NULL);
    assert_int_equal(f->st.tables_scanned, 1);
    /* merge of the same id needs no read at all (no @unique value given) */
    assert_og_ok(validate(f, P("alice", ",\"age\":31"), EXEC_LOAD_MERGE));
    assert_probes(f, NULL);
    assert_int_equal(f->st.tables_scanned, 0);
    /* overwrite removes committed rows: every edge table touching Person is read for edges
     * that would dangle */
    assert_og_ok(validate(f, P("alice", ""), EXEC_LOAD_OVERWRITE));
    assert_probes(f, "edge:Knows", "edge:Likes", "edge:Owns", "edge:WorksAt", NULL);
}

static void test_unique(void **state)
{
    fx *f = *state;
    commit(f, P("alice", ",\"email\":\"a@x\"") P("carol", ",\"email\":\"c@x\""));
    assert_err(validate(f, P("bob", ",\"email\":\"a@x\""), EXEC_LOAD_MERGE), OG_E_KEY_CONFLICT, 1,
               "Person: @unique(email) violated: value \"a@x\" is already used by id \"alice\"");
    assert_probes(f, "node:Person", NULL);
    /* asked through the Person table's email index (email>id), not read whole */
    assert_int_equal(f->st.tables_scanned, 0);
    assert_int_equal(f->st.index_lookups, 1);
    /* alice keeps her own email: her committed row is replaced, so no collision */
    assert_og_ok(validate(f, P("alice", ",\"email\":\"a@x\""), EXEC_LOAD_MERGE));
    assert_probes(f, "node:Person", NULL);
    /* swapping emails between two upserted rows is fine */
    assert_og_ok(validate(f, P("alice", ",\"email\":\"c@x\"") P("carol", ",\"email\":\"a@x\""),
                          EXEC_LOAD_MERGE));
    /* two input rows with one value */
    assert_err(
        validate(f, P("x", ",\"email\":\"q@x\"") P("y", ",\"email\":\"q@x\""), EXEC_LOAD_MERGE),
        OG_E_KEY_CONFLICT, 2, "value \"q@x\" is given twice in the input (lines 1 and 2)");
    /* overwrite: committed rows do not count for @unique and are not read (only the incident
     * edge tables are, for dangling edges) */
    assert_og_ok(validate(f, P("bob", ",\"email\":\"a@x\""), EXEC_LOAD_OVERWRITE));
    assert_probes(f, "edge:Knows", "edge:Likes", "edge:Owns", "edge:WorksAt", NULL);
    assert_int_equal(f->st.tables_scanned, 4);
    /* nulls never collide */
    assert_og_ok(validate(f, P("n1", "") P("n2", ""), EXEC_LOAD_MERGE));
    assert_probes(f, NULL);
}

static void test_unique_composite(void **state)
{
    fx *f = *state;
#define A(n, o, k)                                                                                 \
    "{\"type\":\"Acct\",\"data\":{\"name\":\"" n "\",\"org\":\"" o "\",\"num\":" k "}}\n"
    commit(f, A("a1", "acme", "1"));
    assert_og_ok(validate(f, A("a2", "acme", "2") A("a3", "other", "1"), EXEC_LOAD_APPEND));
    assert_probes(f, "node:Acct", NULL);
    assert_err(validate(f, A("a2", "acme", "2") A("a3", "acme", "1"), EXEC_LOAD_APPEND),
               OG_E_KEY_CONFLICT, 2, "@unique(org, num) violated");
    assert_non_null(strstr(og_error_last()->message, "already used by id \"a1\""));
    assert_err(validate(f, A("a2", "z", "2") A("a3", "z", "2"), EXEC_LOAD_APPEND),
               OG_E_KEY_CONFLICT, 2, "given twice");
#undef A
}

#define K(from, to) "{\"edge\":\"Knows\",\"from\":\"" from "\",\"to\":\"" to "\"}\n"
#define W(from, to, id)                                                                            \
    "{\"edge\":\"WorksAt\",\"from\":\"" from "\",\"to\":\"" to "\",\"data\":{\"id\":\"" id "\"}}"  \
    "\n"
#define C(name) "{\"type\":\"Company\",\"data\":{\"name\":\"" name "\"}}\n"

static void test_endpoints(void **state)
{
    fx *f = *state;
    commit(f, P("alice", "") P("bob", "") C("acme"));
    /* append: the edge table is read for id conflicts, the endpoint table for existence */
    assert_og_ok(validate(f, K("alice", "bob"), EXEC_LOAD_APPEND));
    assert_probes(f, "edge:Knows", "node:Person", NULL);
    assert_int_equal(f->st.tables_scanned, 2);
    assert_err(validate(f, K("alice", "bob") K("alice", "zed"), EXEC_LOAD_APPEND), OG_E_BAD_REQUEST,
               2, "Knows: dst \"zed\" is not an existing Person node");
    assert_probes(f, "edge:Knows", "node:Person", NULL);
    /* merge: Knows has no @card, so its own table is not read */
    assert_og_ok(validate(f, K("alice", "bob"), EXEC_LOAD_MERGE));
    assert_probes(f, "node:Person", NULL);
    assert_int_equal(f->st.tables_scanned, 1);
    assert_err(validate(f, K("ghost", "bob"), EXEC_LOAD_MERGE), OG_E_BAD_REQUEST, 1,
               "Knows: src \"ghost\" is not an existing Person node");
    /* endpoints that the change itself inserts need no read */
    assert_og_ok(validate(f, P("x", "") P("y", "") K("x", "y"), EXEC_LOAD_APPEND));
    assert_probes(f, "edge:Knows", "node:Person", NULL); /* the append id checks only */
    assert_og_ok(validate(f, P("x", "") P("y", "") K("x", "y"), EXEC_LOAD_MERGE));
    assert_probes(f, NULL);
    assert_int_equal(f->st.tables_scanned, 0);
    /* an edge whose endpoint types differ: WorksAt reads both node tables and (card) itself */
    assert_og_ok(validate(f, W("alice", "acme", "w1"), EXEC_LOAD_APPEND));
    assert_probes(f, "edge:WorksAt", "node:Company", "node:Person", NULL);
    /* WorksAt ids (append), Person, Company read whole (small tables), card through the src
     * index */
    assert_int_equal(f->st.tables_scanned, 3);
    assert_int_equal(f->st.index_lookups, 1);
    assert_err(validate(f, W("alice", "bob", "w1"), EXEC_LOAD_MERGE), OG_E_BAD_REQUEST, 1,
               "WorksAt: dst \"bob\" is not an existing Company node");
    /* overwrite of Person drops committed people: an edge to one of them is an orphan */
    assert_err(validate(f, P("x", "") K("x", "alice"), EXEC_LOAD_OVERWRITE), OG_E_BAD_REQUEST, 2,
               "dst \"alice\" is not an existing Person node (its table is replaced");
    assert_probes(f, NULL);
}

static void test_endpoint_deleted(void **state)
{
    fx *f = *state;
    commit(f, P("alice", "") P("bob", ""));
    assert_og_ok(validate(f, K("alice", "bob"), EXEC_LOAD_MERGE));
    /* add a DELETE of bob to the change set by hand */
    graph_change *nc = calloc(f->cs.n + 1, sizeof *nc);
    int pt = lang_catalog_find(f->cat, "Person", LANG_NODE);
    nc[0].type_index = pt;
    nc[0].mode = GRAPH_CHANGE_DELETE;
    nc[0].delete_ids = core_malloc(sizeof(char *));
    nc[0].delete_ids[0] = core_strdup("bob");
    nc[0].n_delete_ids = 1;
    memcpy(nc + 1, f->cs.changes, f->cs.n * sizeof *nc);
    core_free(f->cs.changes);
    f->cs.changes = core_malloc((f->cs.n + 1) * sizeof *nc);
    memcpy(f->cs.changes, nc, (f->cs.n + 1) * sizeof *nc);
    free(nc);
    f->cs.n++;
    assert_err(validate_cs(f), OG_E_BAD_REQUEST, 1,
               "dst \"bob\" is not an existing Person node (deleted by this change)");
    assert_probes(f, "node:Person", NULL); /* alice was looked up in the committed table */
}

static void test_card_max(void **state)
{
    fx *f = *state;
    commit(f, P("alice", "") P("bob", "") C("acme") C("globex") W("alice", "acme", "w1"));
    assert_err(validate(f, W("alice", "globex", "w2"), EXEC_LOAD_MERGE), OG_E_BAD_REQUEST, 1,
               "WorksAt: source node \"alice\" would have 2 WorksAt edges, outside @card(0..1)");
    assert_probes(f, "edge:WorksAt", "node:Company", "node:Person", NULL);
    /* replacing alice's only edge keeps her at one */
    assert_og_ok(validate(f, W("alice", "globex", "w1"), EXEC_LOAD_MERGE));
    assert_og_ok(validate(f, W("bob", "globex", "w2"), EXEC_LOAD_APPEND));
    /* two new edges for bob in one input */
    assert_err(validate(f, W("bob", "globex", "w2") W("bob", "acme", "w3"), EXEC_LOAD_MERGE),
               OG_E_BAD_REQUEST, 1, "\"bob\" would have 2");
    /* overwrite: the committed edge of alice is gone, and the table is not read for @card */
    assert_og_ok(validate(f, W("alice", "globex", "w9"), EXEC_LOAD_OVERWRITE));
    assert_probes(f, "node:Company", "node:Person", NULL);
}

static void test_card_min(void **state)
{
    fx *f = *state;
#define O(from, to, id)                                                                            \
    "{\"edge\":\"Owns\",\"from\":\"" from "\",\"to\":\"" to "\",\"data\":{\"id\":\"" id "\"}}\n"
    commit(f, P("alice", "") P("bob", "") C("acme") C("globex") C("initech")
                  O("alice", "acme", "o1") O("bob", "acme", "o2") O("bob", "globex", "o3"));
    assert_og_ok(validate(f, O("carol", "acme", "o4") P("carol", ""), EXEC_LOAD_MERGE));
    assert_err(validate(f, O("bob", "initech", "o4"), EXEC_LOAD_MERGE), OG_E_BAD_REQUEST, 1,
               "\"bob\" would have 3 Owns edges, outside @card(1..2)");
    /* deleting alice's only edge leaves her below the minimum */
    graph_change_set_clear(&f->cs);
    f->cs.changes = core_calloc(1, sizeof *f->cs.changes);
    f->cs.n = 1;
    graph_change *c = &f->cs.changes[0];
    c->type_index = lang_catalog_find(f->cat, "Owns", LANG_EDGE);
    c->mode = GRAPH_CHANGE_DELETE;
    c->delete_ids = core_malloc(sizeof(char *));
    c->delete_ids[0] = core_strdup("o1");
    c->n_delete_ids = 1;
    assert_err(validate_cs(f), OG_E_BAD_REQUEST, 0, "\"alice\" would have 0 Owns edges");
    assert_probes(f, "edge:Owns", NULL);
    /* deleting one of bob's two is fine */
    core_free(c->delete_ids[0]);
    c->delete_ids[0] = core_strdup("o3");
    assert_og_ok(validate_cs(f));
    assert_probes(f, "edge:Owns", NULL);
    /* a table that holds one id on three rows (another tool wrote it): deleting that id looks
     * at every row holding it (more sources than deleted ids) */
    commit(f, P("carol", "") P("dave", "") O("carol", "acme", "dup") O("dave", "acme", "dup")
                  O("alice", "globex", "dup"));
    core_free(c->delete_ids[0]);
    c->delete_ids[0] = core_strdup("dup");
    assert_err(validate_cs(f), OG_E_BAD_REQUEST, 0, "would have 0 Owns edges");
#undef O
}

static void test_unique_edge_pair(void **state)
{
    fx *f = *state;
#define L(from, to, id)                                                                            \
    "{\"edge\":\"Likes\",\"from\":\"" from "\",\"to\":\"" to "\",\"data\":{\"id\":\"" id "\"}}\n"
    commit(f, P("alice", "") P("bob", "") C("acme") L("alice", "acme", "l1"));
    assert_og_ok(validate(f, L("bob", "acme", "l2") L("alice", "globex", "l3") C("globex"),
                          EXEC_LOAD_MERGE));
    assert_probes(f, "edge:Likes", "node:Company", "node:Person", NULL);
    assert_err(validate(f, L("bob", "acme", "l2") L("alice", "acme", "l3"), EXEC_LOAD_MERGE),
               OG_E_KEY_CONFLICT, 2, "Likes: @unique(src, dst) violated");
    assert_non_null(strstr(og_error_last()->message, "already used by id \"l1\""));
    /* re-sending l1 itself (upsert) is no violation */
    assert_og_ok(validate(f, L("alice", "acme", "l1"), EXEC_LOAD_MERGE));
    /* increasing edge ids skip the input id map until a check needs it; ids out of order
     * still build it, and a repeated id is still found either way */
    assert_og_ok(validate(f, L("bob", "acme", "l9") L("alice", "globex", "l4") C("globex"),
                          EXEC_LOAD_MERGE));
    assert_err(
        validate(f, L("bob", "acme", "l2") L("alice", "globex", "l2") C("globex"), EXEC_LOAD_MERGE),
        OG_E_KEY_CONFLICT, 2, "Likes: id \"l2\" appears twice in the input");
    assert_err(validate(f,
                        L("bob", "acme", "l2") L("alice", "globex", "l0") L("bob", "globex", "l2")
                            C("globex"),
                        EXEC_LOAD_MERGE),
               OG_E_KEY_CONFLICT, 3, "appears twice in the input");
#undef L
}

static void test_bad_rows(void **state)
{
    fx *f = *state;
    /* rows built by hand (not through the loader): enum and non-null are still checked */
    int ti = lang_catalog_find(f->cat, "Person", LANG_NODE);
    const lang_typedef *t = &f->cat->types[ti];
    arrow_schema sch;
    assert_og_ok(graph_type_schema(&sch, t));
    assert_int_equal(sch.n_fields, 5);
    assert_string_equal(sch.fields[0].name, "id");
    assert_false(sch.fields[0].nullable);
    assert_string_equal(sch.fields[4].name, "status");
    assert_true(sch.fields[4].nullable);
    arrow_array *cols[5];
    for (size_t i = 0; i < 5; i++) {
        arrow_builder *b;
        assert_og_ok(arrow_builder_new(&b, &sch.fields[i].type));
        if (i == 0 || i == 1)
            assert_og_ok(arrow_builder_append_str(b, "zed"));
        else if (i == 4)
            assert_og_ok(arrow_builder_append_str(b, "retired"));
        else
            assert_og_ok(arrow_builder_append_null(b));
        assert_og_ok(arrow_builder_finish(b, &cols[i]));
        arrow_builder_free(b);
    }
    f->cs.changes = core_calloc(1, sizeof *f->cs.changes);
    f->cs.n = 1;
    f->cs.changes[0].type_index = ti;
    f->cs.changes[0].mode = GRAPH_CHANGE_UPSERT;
    assert_og_ok(arrow_batch_new(&f->cs.changes[0].rows, &sch, cols, 5));
    for (size_t i = 0; i < 5; i++)
        arrow_array_free(cols[i]);
    arrow_schema_clear(&sch);
    f->cs.file = NULL;
    assert_err(validate_cs(f), OG_E_BAD_REQUEST, 0,
               "Person.status: \"retired\" is not a value of the enum (id \"zed\")");
}

static void test_probes_api(void **state)
{
    (void)state;
    graph_probes p = {0};
    assert_og_ok(graph_probes_add(&p, "node:B"));
    assert_og_ok(graph_probes_add(&p, "edge:A"));
    assert_og_ok(graph_probes_add(&p, "node:B"));
    assert_og_ok(graph_probes_add(&p, "node:A"));
    assert_int_equal(p.n, 3);
    assert_string_equal(p.aliases[0], "edge:A");
    assert_string_equal(p.aliases[1], "node:A");
    assert_string_equal(p.aliases[2], "node:B");
    graph_probes_clear(&p);
    assert_int_equal(p.n, 0);
    char path[STORE_KEY_MAX], alias[64];
    assert_og_ok(graph_table_path(path, LANG_EDGE, 0x1234, 2));
    assert_string_equal(path, "edges/0000000000001234-0000000000000002.lance");
    assert_og_ok(graph_table_alias(alias, sizeof alias, LANG_NODE, "Person"));
    assert_string_equal(alias, "node:Person");
    assert_og_error(graph_table_alias(alias, 6, LANG_NODE, "Person"), OG_E_BAD_REQUEST);
}

/* The options a type's table is created with: primary key, stable row ids, key indexes
 * (adjacency for edges, and a String @unique property carrying the id). */
static void test_create_options(void **state)
{
    fx *f = *state;
    lance_create_options o;
    char kix[GRAPH_KIX_DECL_MAX];
    assert_og_ok(graph_type_create_options(
        &o, &f->cat->types[lang_catalog_find(f->cat, "Knows", LANG_EDGE)], kix));
    assert_true(o.stable_row_ids);
    assert_string_equal(o.key_indexes, "id>src;src>dst;dst>src");
    assert_int_equal(o.n_primary_key, 1);
    assert_string_equal(o.primary_key[0], "id");
    assert_og_ok(graph_type_create_options(
        &o, &f->cat->types[lang_catalog_find(f->cat, "Person", LANG_NODE)], kix));
    assert_string_equal(o.key_indexes, "id;email>id");
    /* a two-column @unique is not indexed (no single value to look up) */
    assert_og_ok(graph_type_create_options(
        &o, &f->cat->types[lang_catalog_find(f->cat, "Acct", LANG_NODE)], kix));
    assert_string_equal(o.key_indexes, "id");
}

static void test_probe_on_failed_read(void **state)
{
    fx *f = *state;
    /* pin Person at a version that does not exist: the read fails, the probe is recorded */
    int ti = lang_catalog_find(f->cat, "Person", LANG_NODE);
    table_of(f, ti)->version = 99;
    int rc = validate(f, P("a", ""), EXEC_LOAD_APPEND);
    assert_true(rc < 0);
    assert_probes(f, "node:Person", NULL);
}

/* Bulk checks hash and look up ids in batches: results and the line named must not depend on
 * where a row falls in a batch, whichever map (input, committed) answers. */
static void test_bulk_batches(void **state)
{
    fx *f = *state;
    core_buf b = CORE_BUF_INIT;
    /* 200 people, the 150th line repeats person 37 (line 38) */
    for (int i = 0; i < 200; i++)
        core_buf_printf(&b, "{\"type\":\"Person\",\"data\":{\"name\":\"p%d\"}}\n",
                        i == 149 ? 37 : i);
    assert_err(validate(f, core_buf_cstr(&b), EXEC_LOAD_MERGE), OG_E_KEY_CONFLICT, 150,
               "Person: id \"p37\" appears twice in the input (lines 38 and 150)");
    /* 200 people and 300 edges among them: every endpoint is in the input, nothing is read */
    core_buf_clear(&b);
    for (int i = 0; i < 200; i++)
        core_buf_printf(&b, "{\"type\":\"Person\",\"data\":{\"name\":\"p%d\"}}\n", i);
    for (int i = 0; i < 300; i++)
        core_buf_printf(&b, "{\"edge\":\"Knows\",\"from\":\"p%d\",\"to\":\"p%d\"}\n", i % 200,
                        (i * 7 + 3) % 200);
    assert_og_ok(validate(f, core_buf_cstr(&b), EXEC_LOAD_MERGE));
    assert_probes(f, NULL);
    assert_int_equal(f->st.tables_scanned, 0);
    assert_int_equal(f->st.rows_checked, 500);
    /* the same with one unknown dst at edge row 173 (line 374) */
    core_buf_clear(&b);
    for (int i = 0; i < 200; i++)
        core_buf_printf(&b, "{\"type\":\"Person\",\"data\":{\"name\":\"p%d\"}}\n", i);
    for (int i = 0; i < 300; i++)
        core_buf_printf(&b, "{\"edge\":\"Knows\",\"from\":\"p%d\",\"to\":\"%s%d\"}\n", i % 200,
                        i == 173 ? "q" : "p", (i * 7 + 3) % 200);
    assert_err(validate(f, core_buf_cstr(&b), EXEC_LOAD_MERGE), OG_E_BAD_REQUEST, 374,
               "Knows: dst \"q14\" is not an existing Person node");
    /* endpoints answered by the committed table only: 100 committed people, 70 edges, one
     * unknown src at edge row 33 */
    core_buf_clear(&b);
    for (int i = 0; i < 100; i++)
        core_buf_printf(&b, "{\"type\":\"Person\",\"data\":{\"name\":\"c%d\"}}\n", i);
    commit(f, core_buf_cstr(&b));
    core_buf_clear(&b);
    for (int i = 0; i < 70; i++)
        core_buf_printf(&b, "{\"edge\":\"Knows\",\"from\":\"%s%d\",\"to\":\"c%d\"}\n",
                        i == 33 ? "x" : "c", i, 99 - i);
    assert_err(validate(f, core_buf_cstr(&b), EXEC_LOAD_MERGE), OG_E_BAD_REQUEST, 34,
               "Knows: src \"x33\" is not an existing Person node");
    assert_probes(f, "node:Person", NULL);
    assert_int_equal(f->st.tables_scanned, 1);
    core_buf_clear(&b);
    for (int i = 0; i < 70; i++)
        core_buf_printf(&b, "{\"edge\":\"Knows\",\"from\":\"c%d\",\"to\":\"c%d\"}\n", i, 99 - i);
    assert_og_ok(validate(f, core_buf_cstr(&b), EXEC_LOAD_MERGE));
    assert_probes(f, "node:Person", NULL);
    assert_int_equal(f->st.tables_scanned, 1);
    /* append of 100 ids against 100 committed ones: the 61st collides */
    core_buf_clear(&b);
    for (int i = 0; i < 100; i++)
        core_buf_printf(&b, "{\"type\":\"Person\",\"data\":{\"name\":\"%s%d\"}}\n",
                        i == 60 ? "c" : "n", i);
    assert_err(validate(f, core_buf_cstr(&b), EXEC_LOAD_APPEND), OG_E_KEY_CONFLICT, 61,
               "Person: id \"c60\" already exists");
    core_buf_free(&b);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_range),
        T(test_check),
        T(test_duplicate_ids),
        T(test_insert_conflict),
        T(test_unique),
        T(test_unique_composite),
        T(test_endpoints),
        T(test_endpoint_deleted),
        T(test_card_max),
        T(test_card_min),
        T(test_unique_edge_pair),
        T(test_bad_rows),
        T(test_create_options),
        cmocka_unit_test(test_probes_api),
        T(test_probe_on_failed_read),
        T(test_bulk_batches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
