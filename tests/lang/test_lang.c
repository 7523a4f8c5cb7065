/* src/lang unit tests: lexer positions, catalog contents and stable ids, key-derived ids,
 * IR lowering (compared as text dumps), the schema diff, the thread error on bad
 * input, the og_code every entry point returns, allocation failures, and inputs built to
 * exhaust the parsers. */
#include "testutil.h"

#include "core/alloc.h"
#include "lang/catalog.h"
#include "lang/ir.h"
#include "lang/lint.h"
#include "lang/schema_diff.h"

#include <jansson.h>
#include <string.h>

static const char BASE[] =
    "interface Named { name: String }\n"
    "node Person implements Named {\n"
    "    age: I32?\n"
    "    email: String? @unique\n"
    "    status: enum(inactive, active)?\n"
    "    emb: Vector(3)? @embed(\"name\") @index\n"
    "    photo: Blob?\n"
    "    @key(name)\n"
    "    @range(age, 0..200)\n"
    "    @check(email, \"^[^@]+@[^@]+$\")\n"
    "}\n"
    "node Company @description(\"a firm\") @team(\"x\") { name: String @key  size: U32? }\n"
    "node Pair { a: String  b: I64  c: Bool?  @key(b, a) }\n"
    "edge Knows: Person -> Person { since: Date? }\n"
    "edge WorksAt: Person -> Company @card(0..1) { role: String? }\n";

typedef struct fixture {
    core_arena arena;
    lang_diags diags;
    lang_catalog *cat;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    core_arena_init(&f->arena, 4096);
    lang_diags_init(&f->diags, &f->arena);
    int rc = lang_catalog_build(&f->cat, BASE, strlen(BASE), "base.pg", &f->diags);
    if (rc) fail_msg("base schema: %s", og_error_last()->message);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    lang_catalog_free(f->cat);
    core_arena_free(&f->arena);
    free(f);
    return 0;
}

static void test_lexer_positions(void **state)
{
    (void)state;
    core_arena a;
    core_arena_init(&a, 1024);
    lang_diags d;
    lang_diags_init(&d, &a);
    lang_tok *t;
    size_t n;
    const char *src = "node A {\n  /* c\n */ x: \"a\\nb\" 1.5 1..2 $v -> <= }";
    assert_int_equal(lang_lex(&t, &n, src, strlen(src), "f", "S000", &a, &d), 0);
    assert_int_equal(t[0].kind, TK_IDENT);
    assert_int_equal(t[1].kind, TK_TYPENAME);
    assert_int_equal(t[3].kind, TK_IDENT); /* x after the block comment */
    assert_int_equal(t[3].line, 3);
    assert_int_equal(t[3].col, 5);
    assert_int_equal(t[5].kind, TK_STRING);
    assert_string_equal(t[5].str, "a\nb");
    assert_int_equal(t[6].kind, TK_FLOAT);
    assert_int_equal(t[7].kind, TK_INT);
    assert_int_equal(t[8].kind, TK_DOTDOT);
    assert_int_equal(t[9].kind, TK_INT);
    assert_int_equal(t[10].kind, TK_VAR);
    assert_int_equal(t[10].len, 1);
    assert_int_equal(t[11].kind, TK_ARROW);
    assert_int_equal(t[12].kind, TK_LE);
    assert_int_equal(t[n - 1].kind, TK_EOF);
    /* an error names its place */
    const char *bad = "node A {\n  x: I32 ^ }";
    assert_og_error(lang_lex(&t, &n, bad, strlen(bad), "f", "S000", &a, &d), OG_E_BAD_REQUEST);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.items[0].line, 2);
    assert_int_equal(d.items[0].col, 10);
    assert_string_equal(d.items[0].code, "S000");
    assert_int_equal(t[n - 1].kind, TK_EOF);
    core_arena_free(&a);
}

static void test_catalog(void **state)
{
    fixture *f = *state;
    const lang_catalog *c = f->cat;
    assert_int_equal(c->n_types, 5);
    int p = lang_catalog_find(c, "Person", LANG_NODE);
    assert_int_equal(p, 0);
    const lang_typedef *pt = &c->types[p];
    /* the interface property is expanded into the node */
    int name = lang_type_find_prop(pt, "name");
    assert_true(name >= 0);
    assert_string_equal(pt->props[name].from_interface, "Named");
    assert_int_equal(pt->n_key, 1);
    assert_int_equal(pt->key[0], name);
    assert_true(pt->props[name].is_key);
    /* enum values are kept sorted */
    int st = lang_type_find_prop(pt, "status");
    assert_string_equal(pt->props[st].type.enum_vals[0], "active");
    assert_string_equal(pt->props[st].embed_source ? "x" : "none", "none");
    int emb = lang_type_find_prop(pt, "emb");
    assert_string_equal(pt->props[emb].embed_source, "name");
    /* constraints: key, unique(email), index(emb: vector), range, check */
    int kinds[6] = {0};
    for (size_t i = 0; i < pt->n_cons; i++) {
        kinds[pt->cons[i].kind]++;
        if (pt->cons[i].kind == LANG_CON_INDEX)
            assert_int_equal(pt->cons[i].index_kind, LANG_INDEX_VECTOR);
        if (pt->cons[i].kind == LANG_CON_RANGE) {
            assert_true(pt->cons[i].has_lo && pt->cons[i].has_hi);
            assert_int_equal(pt->cons[i].hi.u, 200);
        }
    }
    assert_int_equal(kinds[LANG_CON_KEY], 1);
    assert_int_equal(kinds[LANG_CON_UNIQUE], 1);
    assert_int_equal(kinds[LANG_CON_INDEX], 1);
    assert_int_equal(kinds[LANG_CON_RANGE], 1);
    assert_int_equal(kinds[LANG_CON_CHECK], 1);
    /* edges: endpoints, default and declared cardinality, lookup ignoring case */
    int k = lang_catalog_find_edge_ci(c, "knows");
    assert_true(k >= 0);
    assert_int_equal(c->types[k].from, p);
    assert_int_equal(c->types[k].card_min, 0);
    assert_int_equal(c->types[k].card_max, -1);
    int w = lang_catalog_find_edge_ci(c, "WORKSAT");
    assert_int_equal(c->types[w].card_max, 1);
    assert_int_equal(lang_catalog_find_edge_ci(c, "Person"), -1);
    /* metadata and custom annotations are kept */
    int co = lang_catalog_find(c, "Company", 0);
    assert_string_equal(c->types[co].description, "a firm");
    assert_int_equal(c->types[co].n_anns, 2);
    assert_string_equal(c->types[co].anns[1].name, "team");
    /* stable ids: nonzero, distinct, and derived from names (same text, same ids) */
    for (size_t i = 0; i < c->n_types; i++) {
        assert_true(c->types[i].id != 0);
        for (size_t j = 0; j < i; j++)
            assert_true(c->types[i].id != c->types[j].id);
    }
    lang_catalog *again = NULL;
    assert_og_ok(lang_catalog_build(&again, BASE, strlen(BASE), "b", &f->diags));
    assert_true(again->types[p].id == pt->id);
    assert_true(again->types[p].props[name].id == pt->props[name].id);
    lang_catalog_free(again);
    /* composite key ordered by the properties' stable ids */
    const lang_typedef *pair = &c->types[lang_catalog_find(c, "Pair", 0)];
    assert_int_equal(pair->n_key, 2);
    assert_true(pair->props[pair->key[0]].id < pair->props[pair->key[1]].id);
    core_buf j = CORE_BUF_INIT;
    assert_og_ok(lang_catalog_to_json(c, &j));
    assert_non_null(strstr(core_buf_cstr(&j), "\"name\":\"WorksAt\""));
    assert_non_null(strstr(core_buf_cstr(&j), "\"pattern\":\"^[^@]+@[^@]+$\""));
    core_buf_free(&j);
}

static void expect_key(const lang_typedef *t, const lang_value *v, const char *want)
{
    char *id = NULL;
    int rc = lang_key_id(&id, t, v);
    if (rc) fail_msg("key id for %s: %s", want, og_error_last()->message);
    assert_string_equal(id, want);
    core_free(id);
}

static void test_key_ids(void **state)
{
    (void)state;
    lang_prop props[2];
    memset(props, 0, sizeof props);
    int key[2] = {0, 1};
    lang_typedef t;
    memset(&t, 0, sizeof t);
    t.name = "T";
    t.props = props;
    t.n_props = 2;
    t.key = key;
    t.n_key = 1;
    lang_value v[2];
    memset(v, 0, sizeof v);
#define ONE(sc, setup, want)                                                                       \
    do {                                                                                           \
        memset(v, 0, sizeof v);                                                                    \
        props[0].type.scalar = (sc);                                                               \
        setup;                                                                                     \
        expect_key(&t, v, want);                                                                   \
    } while (0)
    ONE(LANG_S_STRING, (v[0].kind = LANG_V_STRING, v[0].s = "alice"), "alice");
    ONE(LANG_S_I64, (v[0].kind = LANG_V_INT, v[0].u = 42, v[0].neg = 1), "-42");
    ONE(LANG_S_U64, (v[0].kind = LANG_V_INT, v[0].u = 18446744073709551615ULL),
        "18446744073709551615");
    ONE(LANG_S_BOOL, (v[0].kind = LANG_V_BOOL, v[0].u = 1), "true");
    ONE(LANG_S_DATE, (v[0].kind = LANG_V_DATE, v[0].s = "2020-01-01"), "18262");
    ONE(LANG_S_DATE, (v[0].kind = LANG_V_DATE, v[0].s = "1969-12-31"), "-1");
    ONE(LANG_S_DATETIME, (v[0].kind = LANG_V_DATETIME, v[0].s = "1970-01-01T00:00:01.5Z"), "1500");
    ONE(LANG_S_DATETIME, (v[0].kind = LANG_V_DATETIME, v[0].s = "1970-01-01T01:00:00+01:00"), "0");
    ONE(LANG_S_F64, (v[0].kind = LANG_V_FLOAT, v[0].f = 0.1), "0.1");
    ONE(LANG_S_F64, (v[0].kind = LANG_V_FLOAT, v[0].f = 1.5), "1.5");
    ONE(LANG_S_F64, (v[0].kind = LANG_V_FLOAT, v[0].f = 1e20), "100000000000000000000");
    ONE(LANG_S_F64, (v[0].kind = LANG_V_FLOAT, v[0].f = 1.25e-7), "0.000000125");
    ONE(LANG_S_F64, (v[0].kind = LANG_V_FLOAT, v[0].f = -0.0), "0");
    ONE(LANG_S_F64, (v[0].kind = LANG_V_FLOAT, v[0].f = -2.0), "-2");
    ONE(LANG_S_F32, (v[0].kind = LANG_V_FLOAT, v[0].f = (double)0.1f), "0.1");
    ONE(LANG_S_F64, (v[0].kind = LANG_V_FLOAT, v[0].f = (double)0.1f), "0.10000000149011612");
    /* composite: a JSON array of the canonical strings, in key order */
    t.n_key = 2;
    props[0].type.scalar = LANG_S_STRING;
    props[1].type.scalar = LANG_S_I32;
    v[0].kind = LANG_V_STRING;
    v[0].s = "a\"b";
    v[1].kind = LANG_V_INT;
    v[1].u = 7;
    expect_key(&t, v, "[\"a\\\"b\",\"7\"]");
    /* refusals */
    char *id = NULL;
    t.n_key = 1;
    props[0].type.scalar = LANG_S_F64;
    v[0].kind = LANG_V_FLOAT;
    v[0].f = 0.0 / 0.0;
    assert_og_error(lang_key_id(&id, &t, v), OG_E_BAD_REQUEST);
    assert_null(id);
    v[0].kind = LANG_V_NULL;
    assert_og_error(lang_key_id(&id, &t, v), OG_E_BAD_REQUEST);
    props[0].type.scalar = LANG_S_I32;
    v[0].kind = LANG_V_STRING;
    v[0].s = "x";
    assert_og_error(lang_key_id(&id, &t, v), OG_E_BAD_REQUEST);
    props[0].type.scalar = LANG_S_DATE;
    v[0].kind = LANG_V_DATE;
    v[0].s = "2021-02-29";
    assert_og_error(lang_key_id(&id, &t, v), OG_E_BAD_REQUEST);
    t.n_key = 0;
    assert_og_error(lang_key_id(&id, &t, v), OG_E_BAD_REQUEST);
}

/* Build q against the fixture's schema and compare the IR dump of all queries. */
static void expect_ir(fixture *f, const char *q, const char *want)
{
    lang_query_set *qs = NULL;
    int rc = lang_query_set_build(&qs, f->cat, q, strlen(q), "q.gq", &f->diags);
    if (rc) fail_msg("query: %s", og_error_last()->message);
    core_buf b = CORE_BUF_INIT;
    for (size_t i = 0; i < qs->n_queries; i++)
        lang_ir_dump(qs, &qs->queries[i], &b);
    if (strcmp(core_buf_cstr(&b), want))
        fail_msg("IR differs:\n%s\nwanted:\n%s", core_buf_cstr(&b), want);
    core_buf_free(&b);
    lang_query_set_free(qs);
}

static void test_lowering(void **state)
{
    fixture *f = *state;
    /* the binding's map is pushed into the scan; the traversal expands from it */
    expect_ir(f,
              "query q($n: String) { match { $p: Person { name: $n }  $p knows $f  $f.age > 30 } "
              "return { $f.name } }",
              "query q\n  slot s0 $p: Person\n  slot s1 $f: Person\n"
              "  node_scan s0:Person where s0.name = $n\n  expand s0 -out:Knows{1,1}-> s1\n"
              "  filter where s1.age > 30\n  project s1.name as f.name\n");
    /* a traversal whose target is bound expands backwards; order breaks ties by slot ids */
    expect_ir(f,
              "query q() { match { $c: Company { name: \"acme\" }  $p worksAt $c } "
              "return { $p.name } order { $p.age desc } limit 5 }",
              "query q\n  slot s0 $c: Company\n  slot s1 $p: Person\n"
              "  node_scan s0:Company where s0.name = \"acme\"\n  expand s0 -in:WorksAt{1,1}-> s1\n"
              "  order s1.age desc tie s0.id s1.id\n  limit 5\n  project s1.name as p.name\n");
    /* filters on the scanned variable alone are pushed down; hop bounds; undirected */
    expect_ir(f,
              "query q() { match { $a: Person  $a.age >= 18  $a <knows>{1,3} $b } return { $b } }",
              "query q\n  slot s0 $a: Person\n  slot s1 $b: Person\n"
              "  node_scan s0:Person where s0.age >= 18\n  expand s0 -both:Knows{1,3}-> s1\n"
              "  project s1.id as b\n");
    /* not {} is an anti-join; aggregates group by the other columns */
    expect_ir(f,
              "query q() { match { $p: Person  not { $p worksAt $_ } } "
              "return { $p.status, count($p) as n } order { n desc } }",
              "query q\n  slot s0 $p: Person\n  slot s1 $_: Company\n  node_scan s0:Person\n"
              "  anti_join\n    expand s0 -out:WorksAt{1,1}-> s1\n"
              "  aggregate s0.status as p.status, count(s0.id) as n\n  order col1 desc tie col0\n");
    /* both ends bound: a semi-join expand; edge bindings */
    expect_ir(f,
              "query q() { match { $a: Person  $b: Person  $a $k:knows $b  $b knows $a } "
              "return { $k.since } }",
              "query q\n  slot s0 $a: Person\n  slot s1 $b: Person\n  slot s2 $k: Knows\n"
              "  node_scan s0:Person\n  expand s0 -out:Knows{1,1}-> s1 edge s2\n"
              "  expand s1 -out:Knows{1,1}-> s0 (bound)\n  project s2.since as k.since\n");
    /* a not {} body may restate an outer binding: its map becomes a filter inside */
    expect_ir(f, "query q() { match { $p: Person  not { $p: Person { age: 3 } } } return { $p } }",
              "query q\n  slot s0 $p: Person\n  node_scan s0:Person\n  anti_join\n"
              "    filter where s0.age = 3\n  project s0.id as p\n");
    /* slots of an anti-join do not break ties in the outer order */
    expect_ir(
        f,
        "query q() { match { $p: Person  not { $p knows $f } } return { $p.name } order { $p.name "
        "} }",
        "query q\n  slot s0 $p: Person\n  slot s1 $f: Person\n  node_scan s0:Person\n  anti_join\n"
        "    expand s0 -out:Knows{1,1}-> s1\n  order s0.name asc tie s0.id\n  project s0.name as "
        "p.name\n");
    /* a filter on parameters alone runs before any scan */
    expect_ir(f, "query q($a: I64) { match { $a > 3  $p: Person } return { $p.name } }",
              "query q\n  slot s0 $p: Person\n  filter where $a > 3\n  node_scan s0:Person\n"
              "  project s0.name as p.name\n");
    /* mutations: keyed insert upserts, literals are typed, dates become days */
    expect_ir(f,
              "query m($n: String) { insert Person { name: $n, age: 3 } "
              "insert Knows { from: $n, to: \"bob\", since: date(\"1970-01-02\") } }",
              "query m\n  insert_node Person (upsert by key) name=$n age=3\n"
              "  insert_edge Knows from=$n to=\"bob\" since=date(1)\n");
    expect_ir(f, "query m($n: String) { update Person set { age: 4 } where name = $n }",
              "query m\n  update Person age=4 where name = $n\n");
    expect_ir(f, "query m($n: String) { delete Knows where to = $n }",
              "query m\n  delete Knows where to = $n\n");
}

static void test_read_write_sets(void **state)
{
    fixture *f = *state;
    const char *q = "query a($n: String) { delete Person where name = $n }\n"
                    "query b() { match { $p: Person  $p worksAt $c } return { $c.name } }\n";
    lang_query_set *qs = NULL;
    assert_og_ok(lang_query_set_build(&qs, f->cat, q, strlen(q), "q.gq", &f->diags));
    const lang_catalog *c = f->cat;
    /* deleting a node also deletes its incident edges */
    const lang_ir_query *a = &qs->queries[0];
    assert_int_equal(a->n_writes, 3);
    for (size_t i = 0; i < a->n_writes; i++) {
        const char *n = c->types[a->writes[i]].name;
        assert_true(!strcmp(n, "Person") || !strcmp(n, "Knows") || !strcmp(n, "WorksAt"));
    }
    const lang_ir_query *b = &qs->queries[1];
    assert_int_equal(b->n_writes, 0);
    assert_int_equal(b->n_reads, 3);
    assert_int_equal(b->n_columns, 1);
    assert_string_equal(b->columns[0].name, "c.name");
    lang_query_set_free(qs);
}

static void test_thread_error_located(void **state)
{
    fixture *f = *state;
    const char *q = "query a() {\n  match { $p: Persn } return { $p } }";
    lang_query_set *qs = NULL;
    assert_og_error(lang_query_set_build(&qs, f->cat, q, strlen(q), "x.gq", &f->diags),
                    OG_E_BAD_REQUEST);
    assert_non_null(qs); /* kept for per-query status */
    assert_int_equal(qs->n_queries, 1);
    assert_int_equal(qs->status[0], 1);
    const og_error *e = og_error_last();
    assert_string_equal(e->file, "x.gq");
    assert_int_equal(e->line, 2);
    assert_int_equal(e->column, 15);
    assert_non_null(strstr(e->message, "T1"));
    lang_query_set_free(qs);
}

static int diff_has(const lang_schema_diff *p, const char *kind, const char *entity)
{
    for (size_t i = 0; i < p->n_steps; i++)
        if (!strcmp(p->steps[i].kind, kind) && !strcmp(p->steps[i].entity, entity))
            return (int)i + 1;
    return 0;
}

static lang_catalog *build(fixture *f, const char *src)
{
    lang_catalog *c = NULL;
    int rc = lang_catalog_build(&c, src, strlen(src), "s.pg", &f->diags);
    if (rc) fail_msg("schema: %s", og_error_last()->message);
    return c;
}

static void test_schema_diff(void **state)
{
    fixture *f = *state;
    lang_catalog *a = build(f, "node Person { name: String @key  age: I32?  s: enum(a, b)? }\n"
                               "node Old { x: String }\nedge Knows: Person -> Person\n");
    lang_catalog *b =
        build(f, "node Human @rename_from(\"Person\") @description(\"d\") {\n"
                 "  name: String @key  years: I32? @rename_from(\"age\")  s: enum(a, b, c)?\n"
                 "  email: String? @unique }\n"
                 "node New { y: String? }\nedge Knows: Human -> Human @card(0..5)\n");
    lang_schema_diff *p = NULL;
    assert_og_ok(lang_schema_diff_build(&p, a, b, 0));
    assert_true(p->supported);
    int add = diff_has(p, "add_type", "New"), ren = diff_has(p, "rename_type", "Person");
    assert_true(add && ren && add < ren);
    assert_true(diff_has(p, "rename_property", "Human.age"));
    assert_true(diff_has(p, "add_property", "Human.email"));
    assert_true(diff_has(p, "extend_enum", "Human.s"));
    assert_true(diff_has(p, "add_constraint", "Human")); /* unique(email) */
    assert_true(diff_has(p, "add_constraint", "Knows")); /* card */
    assert_true(diff_has(p, "update_type_metadata", "Human"));
    int drop = diff_has(p, "drop_type", "Old");
    assert_true(drop && !p->steps[drop - 1].data_loss);
    core_buf j = CORE_BUF_INIT;
    assert_og_ok(lang_schema_diff_to_json(p, &j));
    assert_non_null(strstr(core_buf_cstr(&j), "\"supported\":true"));
    core_buf_free(&j);
    lang_schema_diff_free(p);
    /* ids follow the rename when inherited */
    lang_catalog_inherit(b, a);
    assert_true(b->types[lang_catalog_find(b, "Human", 0)].id ==
                a->types[lang_catalog_find(a, "Person", 0)].id);
    assert_true(b->types[lang_catalog_find(b, "New", 0)].id !=
                a->types[lang_catalog_find(a, "Old", 0)].id);
    lang_catalog_free(b);
    /* a property re-added under a renamed property's old name gets a fresh id */
    {
        lang_catalog *v2 =
            build(f, "node Person { name: String @key  years: I32? @rename_from(\"age\") }\n");
        lang_catalog_inherit(v2, a);
        lang_catalog *v3 = build(f, "node Person { name: String @key  years: I32?  age: I32? }\n");
        lang_catalog_inherit(v3, v2);
        const lang_typedef *t3 = &v3->types[0];
        uint64_t years = t3->props[lang_type_find_prop(t3, "years")].id;
        uint64_t age = t3->props[lang_type_find_prop(t3, "age")].id;
        assert_true(years == a->types[0].props[lang_type_find_prop(&a->types[0], "age")].id);
        assert_true(age != years);
        /* the same with every allocation failing: inheriting needs none, so nothing is skipped */
        lang_catalog *v3b = build(f, "node Person { name: String @key  years: I32?  age: I32? }\n");
        core_alloc_fail_at(1, 1);
        lang_catalog_inherit(v3b, v2);
        core_alloc_fail_at(0, 0);
        for (size_t k = 0; k < t3->n_props; k++)
            assert_true(v3b->types[0].props[k].id == t3->props[k].id);
        lang_catalog_free(v3b);
        lang_catalog_free(v3);
        lang_catalog_free(v2);
    }
    /* unsupported changes carry a code */
    b = build(f, "node Person { name: String @key  age: I64  s: enum(a)?  req: String }\n"
                 "node Old { x: String }\nedge Knows: Person -> Old\n");
    assert_og_ok(lang_schema_diff_build(&p, a, b, 1));
    assert_false(p->supported);
    const char *want[] = {"M101", "M106", "M102", "M103", "M107"};
    for (size_t w = 0; w < 5; w++) {
        int found = 0;
        for (size_t i = 0; i < p->n_steps; i++)
            found |= p->steps[i].code && !strcmp(p->steps[i].code, want[w]);
        if (!found) fail_msg("missing %s", want[w]);
    }
    lang_schema_diff_free(p);
    lang_catalog_free(b);
    /* identical schemas: nothing to do */
    assert_og_ok(lang_schema_diff_build(&p, a, a, 0));
    assert_true(p->supported);
    assert_int_equal(p->n_steps, 0);
    lang_schema_diff_free(p);
    lang_catalog_free(a);
}

/* Bad input through each entry point of the layer is OG_E_BAD_REQUEST located at its first
 * diagnostic, never -1 (which is OG_E_STORAGE's value). */
static void expect_bad_request(int rc, const lang_diags *d, size_t first, int line, int col)
{
    assert_og_error(rc, OG_E_BAD_REQUEST);
    assert_true(d->n > first);
    assert_int_equal(og_error_last()->line, line);
    assert_int_equal(og_error_last()->column, col);
}

static void test_bad_input_codes(void **state)
{
    fixture *f = *state;
    core_arena a;
    core_arena_init(&a, 1024);
    lang_diags d;
    lang_diags_init(&d, &a);
    lang_tok *t;
    size_t n, first;
    pg_schema pg;
    gq_file gq;
    /* lexical errors, directly and through both parsers */
    const char *lexbad = "node A {\n  x: I32 ^ }";
    first = d.n;
    expect_bad_request(lang_lex(&t, &n, lexbad, strlen(lexbad), "f", "S000", &a, &d), &d, first, 2,
                       10);
    first = d.n;
    expect_bad_request(pg_parse(&pg, lexbad, strlen(lexbad), "f.pg", &a, &d), &d, first, 2, 10);
    first = d.n;
    expect_bad_request(gq_parse(&gq, "query q() {\n #", 15, "f.gq", &a, &d), &d, first, 2, 2);
    /* a string must be UTF-8, or a mutation would store text nothing can read back as JSON
     * (it was copied as it was); good UTF-8 of every length passes */
    const char *notutf8[] = {"x = \"ab\xff\"",           "x = \"\xc3(\"",
                             "x = \"\xed\xa0\x80\"",     "x = \"\xe0\x80\xaf\"",
                             "x = \"\xf4\x90\x80\x80\"", "x = \"\xe2\x82\""};
    for (size_t i = 0; i < sizeof notutf8 / sizeof notutf8[0]; i++) {
        first = d.n;
        expect_bad_request(lang_lex(&t, &n, notutf8[i], strlen(notutf8[i]), "f", "Q000", &a, &d),
                           &d, first, 1, i == 0 ? 8 : 6);
        assert_non_null(strstr(d.items[first].message, "not valid UTF-8"));
    }
    const char *utf8 = "x = \"\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80\"";
    assert_og_ok(lang_lex(&t, &n, utf8, strlen(utf8), "f", "Q000", &a, &d));
    assert_string_equal(t[2].str, "\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80");
    /* a leading byte order mark is named */
    first = d.n;
    expect_bad_request(lang_lex(&t, &n, "\xef\xbb\xbfnode A {}", 13, "f", "S000", &a, &d), &d,
                       first, 1, 1);
    assert_non_null(strstr(d.items[first].message, "UTF-8 byte order mark"));
    /* syntax errors */
    const char *pgbad = "node A {\n  x I32 }";
    first = d.n;
    expect_bad_request(pg_parse(&pg, pgbad, strlen(pgbad), "f.pg", &a, &d), &d, first, 2, 5);
    const char *gqbad = "query q() {\n  match }";
    first = d.n;
    expect_bad_request(gq_parse(&gq, gqbad, strlen(gqbad), "f.gq", &a, &d), &d, first, 2, 9);
    /* schema and query errors through the builders */
    const char *schema = "node A { x: I32 }\nedge E: A -> B";
    lang_catalog *c = NULL;
    first = d.n;
    expect_bad_request(lang_catalog_build(&c, schema, strlen(schema), "s.pg", &d), &d, first, 2,
                       14);
    assert_null(c);
    const char *q = "query q() {\n  match { $p: Person  $p.nope = 1 } return { $p } }";
    lang_query_set *qs = NULL;
    first = d.n;
    expect_bad_request(lang_query_set_build(&qs, f->cat, q, strlen(q), "q.gq", &d), &d, first, 2,
                       23);
    lang_query_set_free(qs);
    qs = NULL;
    first = d.n;
    expect_bad_request(lang_query_set_build(&qs, f->cat, gqbad, strlen(gqbad), "q.gq", &d), &d,
                       first, 2, 9);
    lang_query_set_free(qs);
    /* the calendar parsers are probes: a code, but the caller reports */
    int64_t x;
    og_error_clear();
    assert_int_equal(lang_parse_date("2021-02-29", &x), OG_E_BAD_REQUEST);
    assert_int_equal(lang_parse_date("2021-2-28", &x), OG_E_BAD_REQUEST);
    assert_int_equal(lang_parse_datetime("2021-01-01T24:00:00Z", &x), OG_E_BAD_REQUEST);
    assert_int_equal(lang_parse_datetime(NULL, &x), OG_E_BAD_REQUEST);
    assert_int_equal(og_error_last()->code, OG_OK);
    assert_int_equal(lang_parse_date("2020-02-29", &x), 0);
    assert_int_equal(lang_parse_datetime("1970-01-01T00:00:01.5Z", &x), 0);
    assert_int_equal(x, 1500);
    core_arena_free(&a);
}

/* Running out of memory in the lexer or a parser is OG_E_NOMEM, not a bad request. */
static void test_parser_alloc_failures(void **state)
{
    (void)state;
    const char *src = "node A { x: String @key  y: [I32]? }\nedge E: A -> A";
    const char *q = "query q($v: String) { match { $a: A { x: $v }  $a e $b } return { $b.x } }";
    int saw_ok = 0;
    for (uint64_t k = 1; k < 1000 && !saw_ok; k++) {
        core_arena a;
        core_arena_init(&a, 64);
        lang_diags d;
        lang_diags_init(&d, &a);
        pg_schema pg;
        gq_file gq;
        core_alloc_fail_at(k, 0);
        int rc = pg_parse(&pg, src, strlen(src), "a.pg", &a, &d);
        if (rc == 0) rc = gq_parse(&gq, q, strlen(q), "a.gq", &a, &d);
        int injected = core_alloc_injected() > 0;
        core_alloc_fail_at(0, 0);
        if (rc == 0)
            saw_ok = 1;
        else if (injected)
            assert_og_error(rc, OG_E_NOMEM);
        else
            fail_msg("unexpected failure %d: %s", rc, og_error_last()->message);
        core_arena_free(&a);
    }
    assert_true(saw_ok);
}

/* The text reports return the buffer's error instead of a cut-short success. */
static void test_report_alloc_failures(void **state)
{
    fixture *f = *state;
    const char *q = "query q() { match { $p: Person  $p knows $f } return { $p.name, $f.age } }\n"
                    "query m($n: String) { insert Person { name: $n } }";
    lang_query_set *qs = NULL;
    assert_og_ok(lang_query_set_build(&qs, f->cat, q, strlen(q), "q.gq", &f->diags));
    lang_catalog *to = build(f, "node Person { name: String @key  age: I64  nick: String? }\n");
    lang_schema_diff *p = NULL;
    assert_og_ok(lang_schema_diff_build(&p, f->cat, to, 0));
    assert_true(p->n_steps > 3);
    core_buf want_lint = CORE_BUF_INIT, want_diff = CORE_BUF_INIT;
    assert_og_ok(lang_lint_report_text(qs, &want_lint));
    assert_og_ok(lang_schema_diff_to_text(p, &want_diff));
    int saw_ok = 0;
    for (uint64_t k = 1; k < 100 && !saw_ok; k++) {
        core_buf lint = CORE_BUF_INIT, diff = CORE_BUF_INIT;
        core_alloc_fail_at(k, 0);
        int rc = lang_lint_report_text(qs, &lint);
        if (rc == 0) rc = lang_schema_diff_to_text(p, &diff);
        int injected = core_alloc_injected() > 0;
        core_alloc_fail_at(0, 0);
        if (rc == 0) {
            /* success means the whole text */
            assert_string_equal(core_buf_cstr(&lint), core_buf_cstr(&want_lint));
            assert_string_equal(core_buf_cstr(&diff), core_buf_cstr(&want_diff));
            saw_ok = 1;
        } else if (injected) {
            assert_og_error(rc, OG_E_NOMEM);
        } else {
            fail_msg("unexpected failure %d: %s", rc, og_error_last()->message);
        }
        core_buf_free(&lint);
        core_buf_free(&diff);
    }
    assert_true(saw_ok);
    core_buf_free(&want_lint);
    core_buf_free(&want_diff);
    lang_schema_diff_free(p);
    lang_catalog_free(to);
    lang_query_set_free(qs);
}

/* Fail each allocation in turn: every failure ends in OG_E_NOMEM, never a crash or leak. */
static void test_alloc_failures(void **state)
{
    (void)state;
    const char *q = "query q($n: String) { match { $p: Person { name: $n }  $p knows $f  not { $f "
                    "worksAt $_ } } "
                    "return { $f.name, count($p) as c } order { c desc } limit 3 }\n"
                    "query m($n: String) { insert Person { name: $n } }";
    int saw_ok = 0;
    for (uint64_t n = 1; n < 5000 && !saw_ok; n++) {
        core_arena a;
        core_arena_init(&a, 256);
        lang_diags d;
        lang_diags_init(&d, &a);
        core_alloc_fail_at(n, 0);
        lang_catalog *c = NULL;
        lang_query_set *qs = NULL;
        int rc = lang_catalog_build(&c, BASE, strlen(BASE), "b.pg", &d);
        if (rc == 0) rc = lang_query_set_build(&qs, c, q, strlen(q), "q.gq", &d);
        int injected = core_alloc_injected() > 0;
        core_alloc_fail_at(0, 0);
        if (rc == 0)
            saw_ok = 1;
        else if (injected)
            assert_int_equal(rc, OG_E_NOMEM);
        else
            fail_msg("unexpected failure %d: %s", rc, og_error_last()->message);
        lang_query_set_free(qs);
        lang_catalog_free(c);
        core_arena_free(&a);
    }
    assert_true(saw_ok);
}

/* jansson allocates through these in the tests below, so core_alloc_fail_at reaches it. */
static void *json_alloc_hook(size_t n)
{
    return core_malloc(n);
}

/* The catalog's JSON (whose hash is the schema identity) and the schema diff, built with each
 * allocation failing in turn (jansson's included): OG_E_NOMEM, or the full result; never a
 * cut-short text that would pass for a whole one. */
static void test_json_diff_alloc_failures(void **state)
{
    fixture *f = *state;
    lang_catalog *to =
        build(f, "node Person { name: String @key  years: I32? @rename_from(\"age\") "
                 "  email: String?  nick: String?  @range(years, 1..99) }\n"
                 "node Firm @rename_from(\"Company\") @note(1) { name: String @key }\n"
                 "node Extra { v: Vector(2)? }\n"
                 "edge WorksAt: Person -> Firm { role: String? }\n");
    core_buf want_cat = CORE_BUF_INIT, want_text = CORE_BUF_INIT, want_json = CORE_BUF_INIT;
    assert_og_ok(lang_catalog_to_json(f->cat, &want_cat));
    lang_schema_diff *p = NULL;
    assert_og_ok(lang_schema_diff_build(&p, f->cat, to, 1));
    assert_og_ok(lang_schema_diff_to_text(p, &want_text));
    assert_og_ok(lang_schema_diff_to_json(p, &want_json));
    lang_schema_diff_free(p);
    json_set_alloc_funcs(json_alloc_hook, core_free);
    int saw_ok = 0;
    for (uint64_t k = 1; k < 20000 && !saw_ok; k++) {
        core_buf cat = CORE_BUF_INIT, text = CORE_BUF_INIT, js = CORE_BUF_INIT;
        lang_schema_diff *d = NULL;
        core_alloc_fail_at(k, 0);
        int rc = lang_catalog_to_json(f->cat, &cat);
        if (rc == 0) rc = lang_schema_diff_build(&d, f->cat, to, 1);
        if (rc == 0) rc = lang_schema_diff_to_text(d, &text);
        if (rc == 0) rc = lang_schema_diff_to_json(d, &js);
        int injected = core_alloc_injected() > 0;
        core_alloc_fail_at(0, 0);
        if (rc == 0) {
            if (cat.len != want_cat.len || memcmp(cat.data, want_cat.data, cat.len))
                fail_msg("allocation %llu failed, and the catalog JSON came out different",
                         (unsigned long long)k);
            assert_string_equal(core_buf_cstr(&text), core_buf_cstr(&want_text));
            assert_string_equal(core_buf_cstr(&js), core_buf_cstr(&want_json));
            saw_ok = !injected;
        } else if (injected) {
            assert_og_error(rc, OG_E_NOMEM);
        } else {
            fail_msg("unexpected failure %d: %s", rc, og_error_last()->message);
        }
        lang_schema_diff_free(d);
        core_buf_free(&cat);
        core_buf_free(&text);
        core_buf_free(&js);
    }
    json_set_alloc_funcs(malloc, free);
    assert_true(saw_ok);
    core_buf_free(&want_cat);
    core_buf_free(&want_text);
    core_buf_free(&want_json);
    lang_catalog_free(to);
}

/* A @rename_from that two types (or properties) of the desired schema could both take: the
 * old name is still declared beside the rename, or two renames name it. Planned against a
 * schema that has the old name, it would give both one stable id (one table, one column):
 * an unsupported change, M108. Against one without the old name it is no rename at all. */
static void test_ambiguous_rename(void **state)
{
    fixture *f = *state;
    static const char *const cases[][2] = {
        {"node Company { name: String @key }\n"
         "node Firm @rename_from(\"Company\") { name: String @key }\n",
         "Firm"},
        {"node Firm @rename_from(\"Company\") { name: String @key }\n"
         "node Corp @rename_from(\"Company\") { name: String @key }\n",
         "Corp"},
        {"node Company { name: String @key  size: U32?  big: U32? @rename_from(\"size\") }\n",
         "Company.big"},
        {"node Company { name: String @key  a: U32? @rename_from(\"size\")"
         "  b: U32? @rename_from(\"size\") }\n",
         "Company.b"},
    };
    const char *rest = "node Person { name: String @key }\nnode Pair { a: String  b: I64  "
                       "@key(b, a) }\n";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char src[1024];
        snprintf(src, sizeof src, "%s%s", cases[i][0], rest);
        lang_catalog *to = build(f, src);
        lang_schema_diff *p = NULL;
        assert_og_ok(lang_schema_diff_build(&p, f->cat, to, 0));
        assert_false(p->supported);
        int u = diff_has(p, "unsupported_change", cases[i][1]);
        if (!u) fail_msg("case %zu: no unsupported_change for %s", i, cases[i][1]);
        assert_string_equal(p->steps[u - 1].code, "M108");
        lang_schema_diff_free(p);
        /* the ids stay distinct all the same */
        lang_catalog_inherit(to, f->cat);
        for (size_t a = 0; a < to->n_types; a++) {
            for (size_t b = 0; b < a; b++)
                assert_true(to->types[a].id != to->types[b].id);
            const lang_typedef *t = &to->types[a];
            for (size_t x = 0; x < t->n_props; x++)
                for (size_t y = 0; y < x; y++)
                    assert_true(t->props[x].id != t->props[y].id);
        }
        lang_catalog_free(to);
    }
    /* an edge onto the ambiguous type is not onto the old one: its endpoints change */
    {
        lang_catalog *to = build(f, "node Person { name: String @key }\n"
                                    "node Company { name: String @key }\n"
                                    "node Firm @rename_from(\"Company\") { name: String @key }\n"
                                    "edge WorksAt: Person -> Firm { role: String? }\n");
        lang_schema_diff *p = NULL;
        assert_og_ok(lang_schema_diff_build(&p, f->cat, to, 0));
        int u = diff_has(p, "unsupported_change", "WorksAt");
        assert_true(u > 0);
        assert_string_equal(p->steps[u - 1].code, "M103");
        lang_schema_diff_free(p);
        lang_catalog_free(to);
    }
    /* without the old name in the accepted schema the same files are fine */
    lang_catalog *from = build(f, "node Person { name: String @key }\n");
    lang_catalog *to = build(f, "node Person { name: String @key }\n"
                                "node Firm @rename_from(\"Company\") { name: String @key }\n"
                                "node Company { name: String @key }\n");
    lang_schema_diff *p = NULL;
    assert_og_ok(lang_schema_diff_build(&p, from, to, 0));
    assert_true(p->supported);
    lang_schema_diff_free(p);
    lang_catalog_free(to);
    lang_catalog_free(from);
}

/* Inputs made to exhaust the parsers end in a located error, quickly. */
static void test_hostile_inputs(void **state)
{
    fixture *f = *state;
    size_t n = 200000;
    char *s = malloc(n + 64);
    /* deep brackets */
    strcpy(s, "query q() { match { $p: Person  $p.age = ");
    size_t k = strlen(s);
    for (size_t i = 0; i < n; i++)
        s[k + i] = '[';
    s[k + n] = '\0';
    lang_query_set *qs = NULL;
    assert_og_error(lang_query_set_build(&qs, f->cat, s, strlen(s), "deep.gq", &f->diags),
                    OG_E_BAD_REQUEST);
    assert_non_null(strstr(og_error_last()->message, "nesting"));
    lang_query_set_free(qs);
    /* many nested not {} */
    strcpy(s, "query q() { match { $p: Person ");
    k = strlen(s);
    for (size_t i = 0; i + 6 < n; i += 6)
        memcpy(s + k + i, "not { ", 6);
    s[k + n - n % 6] = '\0';
    assert_og_error(lang_query_set_build(&qs, f->cat, s, strlen(s), "deep.gq", &f->diags),
                    OG_E_BAD_REQUEST);
    lang_query_set_free(qs);
    /* a NUL byte and invalid UTF-8 outside strings */
    const char bin[] = "node A { a: String }\n\0\xff";
    lang_catalog *c = NULL;
    assert_og_error(lang_catalog_build(&c, bin, sizeof bin - 1, "bin.pg", &f->diags),
                    OG_E_BAD_REQUEST);
    assert_int_equal(og_error_last()->line, 2);
    assert_null(c);
    /* list lengths and the source size are capped, with a located error */
    core_buf lim = CORE_BUF_INIT;
    core_buf_append_str(&lim, "query q(");
    for (int i = 0; i < LANG_MAX_ITEMS + 1; i++)
        core_buf_printf(&lim, "%s$p%d: I32", i ? ", " : "", i);
    core_buf_append_str(&lim, ") { match { $x: Person } return { $x } }");
    assert_og_error(
        lang_query_set_build(&qs, f->cat, core_buf_cstr(&lim), lim.len, "lim.gq", &f->diags),
        OG_E_BAD_REQUEST);
    assert_non_null(strstr(og_error_last()->message, "more than 1024 entries"));
    lang_query_set_free(qs);
    core_buf_clear(&lim);
    while (lim.len <= LANG_MAX_SOURCE)
        core_buf_append_str(&lim, "// padding padding padding padding\n");
    assert_og_error(lang_catalog_build(&c, core_buf_cstr(&lim), lim.len, "huge.pg", &f->diags),
                    OG_E_BAD_REQUEST);
    assert_non_null(strstr(og_error_last()->message, "limit"));
    core_buf_free(&lim);
    /* a huge but flat schema is fine */
    core_buf b = CORE_BUF_INIT;
    for (int i = 0; i < 2000; i++)
        core_buf_printf(&b, "node N%d { a: String @key b: I32? }\n", i);
    assert_og_ok(lang_catalog_build(&c, core_buf_cstr(&b), b.len, "big.pg", &f->diags));
    assert_int_equal(c->n_types, 2000);
    lang_catalog_free(c);
    core_buf_free(&b);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lexer_positions),
        cmocka_unit_test_setup_teardown(test_catalog, setup, teardown),
        cmocka_unit_test(test_key_ids),
        cmocka_unit_test_setup_teardown(test_lowering, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_write_sets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_thread_error_located, setup, teardown),
        cmocka_unit_test_setup_teardown(test_schema_diff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_input_codes, setup, teardown),
        cmocka_unit_test(test_parser_alloc_failures),
        cmocka_unit_test_setup_teardown(test_report_alloc_failures, setup, teardown),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test_setup_teardown(test_json_diff_alloc_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ambiguous_rename, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile_inputs, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
