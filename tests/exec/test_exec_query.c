/* The read-query executor over a small hand-built graph: people, companies, knows/worksAt
 * edges with parallel edges, a self-loop and nulls. Each case is a .gq query with exact
 * expected rows (canonical JSON, one per line); also params checking and cache invalidation. */
#include "testutil.h"

#include "core/alloc.h"
#include "core/json.h"
#include "exec/query.h"
#include "graph/graph.h"
#include "lance/dataset.h"

#include <pthread.h>
#include <string.h>

static const char SCHEMA[] = "node Person {\n"
                             "  name: String @key\n"
                             "  age: I32?\n"
                             "  nick: String?\n"
                             "  tags: [String]?\n"
                             "  score: F64?\n"
                             "  born: Date?\n"
                             "  seen: DateTime?\n"
                             "}\n"
                             "node Company { name: String @key  size: U32? }\n"
                             "edge Knows: Person -> Person { since: I32?  weight: F64? }\n"
                             "edge WorksAt: Person -> Company { role: String? }\n";

/* Rows as JSON objects keyed by column name; dates and datetimes as ISO strings. */
static const char PERSONS[] =
    "[{\"id\":\"alice\",\"name\":\"alice\",\"age\":30,\"nick\":\"al\",\"tags\":[\"a\",\"b\"],"
    "\"score\":1.5,\"born\":\"1994-05-01\",\"seen\":\"2024-01-01T10:00:00Z\"},"
    "{\"id\":\"bob\",\"name\":\"bob\",\"age\":25,\"tags\":[\"b\"],\"born\":\"1999-01-01\","
    "\"seen\":\"2030-01-01T00:00:00Z\"},"
    "{\"id\":\"carol\",\"name\":\"carol\",\"age\":35,\"nick\":\"caz\",\"score\":2.5},"
    "{\"id\":\"dave\",\"name\":\"dave\",\"nick\":\"d\",\"tags\":[],\"score\":0.5,"
    "\"born\":\"1980-12-31\"},"
    "{\"id\":\"erin\",\"name\":\"erin\",\"age\":40,\"nick\":\"e\",\"tags\":[\"c\",\"a\"],"
    "\"score\":3.0,\"born\":\"1984-02-29\"},"
    "{\"id\":\"frank\",\"name\":\"frank\",\"age\":25}]";
static const char COMPANIES[] =
    "[{\"id\":\"acme\",\"name\":\"acme\",\"size\":100},{\"id\":\"globex\",\"name\":\"globex\"},"
    "{\"id\":\"initech\",\"name\":\"initech\",\"size\":5}]";
static const char KNOWS[] =
    "[{\"id\":\"k1\",\"src\":\"alice\",\"dst\":\"bob\",\"since\":2010,\"weight\":1.0},"
    "{\"id\":\"k2\",\"src\":\"bob\",\"dst\":\"carol\",\"since\":2012},"
    "{\"id\":\"k3\",\"src\":\"carol\",\"dst\":\"alice\",\"since\":2014,\"weight\":0.5},"
    "{\"id\":\"k4\",\"src\":\"alice\",\"dst\":\"carol\",\"since\":2015,\"weight\":2.0},"
    "{\"id\":\"k5\",\"src\":\"carol\",\"dst\":\"dave\"},"
    "{\"id\":\"k6\",\"src\":\"dave\",\"dst\":\"dave\",\"since\":2020},"
    "{\"id\":\"k7\",\"src\":\"alice\",\"dst\":\"bob\",\"since\":2018,\"weight\":3.0},"
    "{\"id\":\"k8\",\"src\":\"erin\",\"dst\":\"alice\",\"since\":2019,\"weight\":1.0}]";
static const char WORKS[] = "[{\"id\":\"w1\",\"src\":\"alice\",\"dst\":\"acme\",\"role\":\"eng\"},"
                            "{\"id\":\"w2\",\"src\":\"bob\",\"dst\":\"acme\",\"role\":\"ops\"},"
                            "{\"id\":\"w3\",\"src\":\"carol\",\"dst\":\"globex\"},"
                            "{\"id\":\"w4\",\"src\":\"erin\",\"dst\":\"acme\",\"role\":\"ceo\"},"
                            "{\"id\":\"w5\",\"src\":\"erin\",\"dst\":\"acme\",\"role\":\"eng\"}]";

/* 2025-01-01T00:00:00Z */
#define FIXED_NOW_MS 1735689600000LL

typedef struct fixture {
    char dir[256];
    store *s;
    lang_catalog *cat;
    graph_snapshot snap;
    graph_table tables[4];
} fixture;

static void append_json_value(arrow_builder *b, const arrow_type *t, const json_t *v)
{
    if (!v || json_is_null(v)) {
        assert_og_ok(arrow_builder_append_null(b));
        return;
    }
    int64_t x;
    switch (t->id) {
    case ARROW_UTF8:
        assert_og_ok(arrow_builder_append_str(b, json_string_value(v)));
        break;
    case ARROW_INT32:
    case ARROW_INT64:
        assert_og_ok(arrow_builder_append_int(b, json_integer_value(v)));
        break;
    case ARROW_UINT32:
    case ARROW_UINT64:
        assert_og_ok(arrow_builder_append_uint(b, (uint64_t)json_integer_value(v)));
        break;
    case ARROW_FLOAT32:
    case ARROW_FLOAT64:
        assert_og_ok(arrow_builder_append_double(b, json_number_value(v)));
        break;
    case ARROW_BOOL:
        assert_og_ok(arrow_builder_append_bool(b, json_is_true(v)));
        break;
    case ARROW_DATE32:
        assert_int_equal(lang_parse_date(json_string_value(v), &x), 0);
        assert_og_ok(arrow_builder_append_int(b, x));
        break;
    case ARROW_TIMESTAMP:
        assert_int_equal(lang_parse_datetime(json_string_value(v), &x), 0);
        assert_og_ok(arrow_builder_append_int(b, x));
        break;
    case ARROW_LIST: {
        arrow_builder *cb = arrow_builder_child(b, 0);
        for (size_t i = 0; i < json_array_size(v); i++)
            append_json_value(cb, &t->children[0].type, json_array_get(v, i));
        assert_og_ok(arrow_builder_append_list(b, (int64_t)json_array_size(v)));
        break;
    }
    default:
        fail_msg("fixture: unsupported column type %d", t->id);
    }
}

static arrow_batch *batch_from_json(const arrow_schema *sc, const char *rows)
{
    json_t *arr = NULL;
    assert_og_ok(core_json_parse(&arr, rows, strlen(rows), "fixture"));
    arrow_builder **bs = calloc(sc->n_fields, sizeof *bs);
    arrow_array **cols = calloc(sc->n_fields, sizeof *cols);
    for (size_t c = 0; c < sc->n_fields; c++)
        assert_og_ok(arrow_builder_new(&bs[c], &sc->fields[c].type));
    for (size_t r = 0; r < json_array_size(arr); r++) {
        json_t *o = json_array_get(arr, r);
        for (size_t c = 0; c < sc->n_fields; c++)
            append_json_value(bs[c], &sc->fields[c].type, json_object_get(o, sc->fields[c].name));
    }
    for (size_t c = 0; c < sc->n_fields; c++) {
        assert_og_ok(arrow_builder_finish(bs[c], &cols[c]));
        arrow_builder_free(bs[c]);
    }
    arrow_batch *b = NULL;
    assert_og_ok(arrow_batch_new(&b, sc, cols, sc->n_fields));
    for (size_t c = 0; c < sc->n_fields; c++)
        arrow_array_free(cols[c]);
    free(bs);
    free(cols);
    json_decref(arr);
    return b;
}

/* Create the table of `type` at `path` with these rows (version 2). */
static void make_table(fixture *f, graph_table *gt, int kind, const char *type, const char *path,
                       const char *rows)
{
    int ti = lang_catalog_find(f->cat, type, kind);
    assert_true(ti >= 0);
    arrow_schema sc;
    assert_og_ok(graph_type_schema(&sc, &f->cat->types[ti]));
    lance_create_options opt;
    char kix[GRAPH_KIX_DECL_MAX];
    assert_og_ok(graph_type_create_options(&opt, &f->cat->types[ti], kix));
    lance_dataset *ds = NULL, *ds2 = NULL;
    assert_og_ok(lance_dataset_create(&ds, f->s, path, &sc, &opt));
    arrow_batch *b = batch_from_json(&sc, rows);
    assert_og_ok(lance_dataset_append(&ds2, ds, &b, 1));
    memset(gt, 0, sizeof *gt);
    gt->kind = kind;
    gt->sid = (uint64_t)ti + 1;
    gt->inc = 1;
    char alias[64];
    snprintf(alias, sizeof alias, "%s:%s", kind == LANG_EDGE ? "edge" : "node", type);
    gt->alias = strdup(alias);
    gt->type_name = strdup(type);
    gt->path = strdup(path);
    gt->version = lance_dataset_version(ds2);
    gt->row_count = (uint64_t)b->num_rows;
    arrow_batch_free(b);
    lance_dataset_free(ds);
    lance_dataset_free(ds2);
    arrow_schema_clear(&sc);
}

static fixture *fx_open(void)
{
    fixture *f = calloc(1, sizeof *f);
    f->s = test_sandbox_store(f->dir, sizeof f->dir, "exec");
    core_arena a;
    core_arena_init(&a, 0);
    lang_diags d;
    lang_diags_init(&d, &a);
    assert_og_ok(lang_catalog_build(&f->cat, SCHEMA, strlen(SCHEMA), "t.pg", &d));
    core_arena_free(&a);
    /* Sorted by alias, as a loaded snapshot is. */
    make_table(f, &f->tables[0], LANG_EDGE, "Knows", "edges/knows.lance", KNOWS);
    make_table(f, &f->tables[1], LANG_EDGE, "WorksAt", "edges/works.lance", WORKS);
    make_table(f, &f->tables[2], LANG_NODE, "Company", "nodes/company.lance", COMPANIES);
    make_table(f, &f->tables[3], LANG_NODE, "Person", "nodes/person.lance", PERSONS);
    f->snap.tables = f->tables;
    f->snap.n_tables = 4;
    f->snap.manifest_version = 1;
    return f;
}

static void fx_close(fixture *f)
{
    for (size_t i = 0; i < 4; i++) {
        free(f->tables[i].alias);
        free(f->tables[i].type_name);
        free(f->tables[i].path);
    }
    lang_catalog_free(f->cat);
    test_sandbox_store_done(f->dir, f->s);
    free(f);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lines of text, sorted when `sort` (queries without an order clause). */
static char *normalise(const char *text, int sort)
{
    char *copy = strdup(text);
    char *lines[256];
    size_t n = 0;
    for (char *save = NULL, *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        assert_true(n < 256);
        lines[n++] = l;
    }
    if (sort) qsort(lines, n, sizeof *lines, cmp_str);
    core_buf b = CORE_BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        core_buf_append_str(&b, lines[i]);
        core_buf_append_byte(&b, '\n');
    }
    char *out = strdup(core_buf_cstr(&b));
    core_buf_free(&b);
    free(copy);
    return out;
}

/* Run the one query in `gq` with `params` (JSON text or NULL); returns the rows as text. */
static int run_query(fixture *f, exec_cache *cache, const char *gq, const char *params,
                     char **rows_out, exec_result **res_out)
{
    core_arena a;
    core_arena_init(&a, 0);
    lang_diags d;
    lang_diags_init(&d, &a);
    lang_query_set *qs = NULL;
    int rc = lang_query_set_build(&qs, f->cat, gq, strlen(gq), "t.gq", &d);
    if (rc) fail_msg("query does not check: %s\n%s", og_error_last()->message, gq);
    assert_int_equal(qs->n_queries, 1);
    json_t *pj = NULL;
    if (params) assert_og_ok(core_json_parse(&pj, params, strlen(params), "params"));
    exec_params *p = NULL;
    rc = exec_params_from_json(&p, &qs->queries[0], pj);
    exec_result *r = NULL;
    if (!rc) {
        exec_params_set_now(p, FIXED_NOW_MS);
        rc = exec_query_run(&r, f->cat, &f->snap, f->s, &qs->queries[0], p, cache);
    }
    if (!rc && rows_out) {
        core_buf b = CORE_BUF_INIT;
        for (uint64_t i = 0; i < exec_result_n_rows(r); i++) {
            assert_og_ok(exec_result_row_json(r, i, &b));
            core_buf_append_byte(&b, '\n');
        }
        *rows_out = strdup(core_buf_cstr(&b));
        core_buf_free(&b);
    }
    if (res_out && !rc)
        *res_out = r;
    else
        exec_result_free(r);
    exec_params_free(p);
    json_decref(pj);
    lang_query_set_free(qs);
    core_arena_free(&a);
    return rc;
}

static uint64_t g_fail_nth, g_injected;

/* As run_query, but only exec_params_from_json and exec_query_run run under allocation
 * failure injection (the caller arms it; compilation happens before, unarmed). */
static int run_query_quiet(fixture *f, exec_cache *cache, const char *gq, const char *params,
                           char **rows_out)
{
    core_arena a;
    core_arena_init(&a, 0);
    lang_diags d;
    lang_diags_init(&d, &a);
    lang_query_set *qs = NULL;
    json_t *pj = NULL;
    assert_og_ok(lang_query_set_build(&qs, f->cat, gq, strlen(gq), "t.gq", &d));
    if (params) assert_og_ok(core_json_parse(&pj, params, strlen(params), "params"));
    core_alloc_fail_at(g_fail_nth, 0);
    exec_params *p = NULL;
    int rc = exec_params_from_json(&p, &qs->queries[0], pj);
    exec_result *r = NULL;
    if (!rc) {
        exec_params_set_now(p, FIXED_NOW_MS);
        rc = exec_query_run(&r, f->cat, &f->snap, f->s, &qs->queries[0], p, cache);
    }
    g_injected = core_alloc_injected();
    core_alloc_fail_at(0, 0);
    if (rc) assert_int_equal(rc, OG_E_NOMEM);
    if (!rc) {
        core_buf b = CORE_BUF_INIT;
        for (uint64_t i = 0; i < exec_result_n_rows(r); i++) {
            assert_og_ok(exec_result_row_json(r, i, &b));
            core_buf_append_byte(&b, '\n');
        }
        *rows_out = strdup(core_buf_cstr(&b));
        core_buf_free(&b);
    }
    exec_result_free(r);
    exec_params_free(p);
    json_decref(pj);
    lang_query_set_free(qs);
    core_arena_free(&a);
    return rc;
}

static void expect_rows(fixture *f, exec_cache *cache, const char *gq, const char *params,
                        const char *want)
{
    char *got = NULL;
    int rc = run_query(f, cache, gq, params, &got, NULL);
    if (rc) fail_msg("query failed: %s\n%s", og_error_last()->message, gq);
    int sort = strstr(gq, "order {") == NULL;
    char *g = normalise(got, sort), *w = normalise(want, sort);
    if (strcmp(g, w)) fail_msg("query:\n%s\nwant:\n%sgot:\n%s", gq, w, g);
    free(g);
    free(w);
    free(got);
}

typedef struct qcase {
    const char *gq, *params, *want;
} qcase;

#define P1(n) "{\"p.name\":\"" n "\"}\n"

static const qcase CASES[] = {
    /* scans, projections, aliases, bare variables */
    {"query q() { match { $p: Person } return { $p.name } order { $p.name } }", NULL,
     P1("alice") P1("bob") P1("carol") P1("dave") P1("erin") P1("frank")},
    {"query q($n: String) { match { $p: Person { name: $n } } return { $p.name, $p.age } }",
     "{\"n\":\"carol\"}", "{\"p.name\":\"carol\",\"p.age\":35}\n"},
    {"query q($n: String) { match { $p: Person { name: $n } } return { $p.name } }",
     "{\"n\":\"zed\"}", ""},
    {"query q() { match { $p: Person { name: \"alice\" } } return { $p.name as who, $p.age as "
     "years } }",
     NULL, "{\"who\":\"alice\",\"years\":30}\n"},
    {"query q() { match { $p: Person { name: \"alice\" } } return { $p } }", NULL,
     "{\"p\":\"alice\"}\n"},
    {"query q($i: String) { match { $p: Person  $p.id = $i } return { $p.name } }",
     "{\"i\":\"erin\"}", P1("erin")},
    {"query q() { match { $p: Person { name: \"alice\" } } return { $p.tags, $p.born, $p.seen, "
     "$p.score } }",
     NULL,
     "{\"p.tags\":[\"a\",\"b\"],\"p.born\":\"1994-05-01\",\"p.seen\":\"2024-01-01T10:00:00.000Z\","
     "\"p.score\":1.5}\n"},
    {"query q() { match { $p: Person { name: \"frank\" }  $c: Company } return { $p.name, $c.name "
     "} order { $c.name } }",
     NULL,
     "{\"p.name\":\"frank\",\"c.name\":\"acme\"}\n{\"p.name\":\"frank\",\"c.name\":\"globex\"}\n"
     "{\"p.name\":\"frank\",\"c.name\":\"initech\"}\n"},
    /* comparisons (nulls never match) */
    {"query q() { match { $p: Person  $p.age > 28 } return { $p.name } }", NULL,
     P1("alice") P1("carol") P1("erin")},
    {"query q() { match { $p: Person  $p.age != 25 } return { $p.name } }", NULL,
     P1("alice") P1("carol") P1("erin")},
    {"query q() { match { $p: Person  $p.age <= 25 } return { $p.name } }", NULL,
     P1("bob") P1("frank")},
    {"query q() { match { $p: Person  $p.age >= 35 } return { $p.name } }", NULL,
     P1("carol") P1("erin")},
    {"query q() { match { $p: Person  $p.age < 30 } return { $p.name } }", NULL,
     P1("bob") P1("frank")},
    {"query q() { match { $p: Person { age: 25 } } return { $p.name } }", NULL,
     P1("bob") P1("frank")},
    {"query q() { match { $p: Person  $p.nick != \"al\" } return { $p.name } }", NULL,
     P1("carol") P1("dave") P1("erin")},
    {"query q() { match { $p: Person  $p.score > 1 } return { $p.name } }", NULL,
     P1("alice") P1("carol") P1("erin")},
    {"query q() { match { $p: Person  $p.born >= date(\"1990-01-01\") } return { $p.name } }", NULL,
     P1("alice") P1("bob")},
    {"query q() { match { $p: Person  $p.seen < now() } return { $p.name, now() as t } }", NULL,
     "{\"p.name\":\"alice\",\"t\":\"2025-01-01T00:00:00.000Z\"}\n"},
    {"query q() { match { $c: Company  $c.size >= 5 } return { $c.name } }", NULL,
     "{\"c.name\":\"acme\"}\n{\"c.name\":\"initech\"}\n"},
    {"query q($a: I64) { match { $p: Person  $p.age < $a } return { $p.name } }", "{\"a\":30}",
     P1("bob") P1("frank")},
    {"query q($n: String) { match { $p: Person  $n = $p.name } return { $p.age } }",
     "{\"n\":\"bob\"}", "{\"p.age\":25}\n"},
    {"query q($n: String?) { match { $p: Person { name: $n } } return { $p.name } }", "{}", ""},
    {"query q($d: Date) { match { $p: Person  $p.born < $d } return { $p.name } }",
     "{\"d\":\"1990-01-01\"}", P1("dave") P1("erin")},
    /* contains / starts_with */
    {"query q() { match { $p: Person  $p.name contains \"a\" } return { $p.name } }", NULL,
     P1("alice") P1("carol") P1("dave") P1("frank")},
    {"query q() { match { $p: Person  $p.tags contains \"a\" } return { $p.name } }", NULL,
     P1("alice") P1("erin")},
    {"query q($t: String) { match { $p: Person  $p.tags contains $t } return { $p.name } }",
     "{\"t\":\"b\"}", P1("alice") P1("bob")},
    {"query q() { match { $p: Person  $p.name starts_with \"c\" } return { $p.name } }", NULL,
     P1("carol")},
    {"query q() { match { $p: Person  $p.nick starts_with \"c\" } return { $p.name } }", NULL,
     P1("carol")},
    /* traversal: one hop, parallel edges collapse, reverse direction */
    {"query q() { match { $p: Person { name: \"alice\" }  $p knows $f } return { $f.name } }", NULL,
     "{\"f.name\":\"bob\"}\n{\"f.name\":\"carol\"}\n"},
    {"query q() { match { $f: Person { name: \"alice\" }  $p knows $f } return { $p.name } }", NULL,
     P1("carol") P1("erin")},
    {"query q() { match { $p: Person { name: \"erin\" }  $p worksAt $c } return { $c.name } }",
     NULL, "{\"c.name\":\"acme\"}\n"},
    {"query q() { match { $c: Company { name: \"acme\" }  $p worksAt $c } return { $p.name } }",
     NULL, P1("alice") P1("bob") P1("erin")},
    {"query q() { match { $p: Person { name: \"frank\" }  $p knows $f } return { $f.name } }", NULL,
     ""},
    /* hop bounds, visited nodes, the self-loop rule */
    {"query q() { match { $p: Person { name: \"alice\" }  $p knows{2,2} $f } return { $f.name } }",
     NULL, "{\"f.name\":\"dave\"}\n"},
    {"query q() { match { $p: Person { name: \"alice\" }  $p knows{1,3} $f } return { $f.name } }",
     NULL, "{\"f.name\":\"bob\"}\n{\"f.name\":\"carol\"}\n{\"f.name\":\"dave\"}\n"},
    {"query q() { match { $p: Person { name: \"dave\" }  $p knows{1,3} $f } return { $f.name } }",
     NULL, "{\"f.name\":\"dave\"}\n"},
    {"query q() { match { $p: Person { name: \"carol\" }  $p knows{1,2} $f } return { $f.name } }",
     NULL, "{\"f.name\":\"alice\"}\n{\"f.name\":\"bob\"}\n{\"f.name\":\"dave\"}\n"},
    {"query q() { match { $p: Person { name: \"bob\" }  $p knows{3,3} $f } return { $f.name } }",
     NULL, "{\"f.name\":\"dave\"}\n"},
    /* undirected */
    {"query q() { match { $p: Person { name: \"alice\" }  $p <knows> $f } return { $f.name } }",
     NULL, "{\"f.name\":\"bob\"}\n{\"f.name\":\"carol\"}\n{\"f.name\":\"erin\"}\n"},
    {"query q() { match { $p: Person { name: \"dave\" }  $p <knows>{1,2} $f } return { $f.name } }",
     NULL,
     "{\"f.name\":\"alice\"}\n{\"f.name\":\"bob\"}\n{\"f.name\":\"carol\"}\n{\"f.name\":\"dave\"}"
     "\n"},
    {"query q() { match { $a: Person  $a <knows> $b } return { count($b) as n } }", NULL,
     "{\"n\":11}\n"},
    /* edge bindings: one row per edge, parallel edges distinct, self-loop once undirected */
    {"query q() { match { $a: Person { name: \"alice\" }  $a $k:knows $b } return { $b.name, "
     "$k.since } order { $k.since } }",
     NULL,
     "{\"b.name\":\"bob\",\"k.since\":2010}\n{\"b.name\":\"carol\",\"k.since\":2015}\n"
     "{\"b.name\":\"bob\",\"k.since\":2018}\n"},
    {"query q() { match { $a: Person  $a $k:knows $b  $k.since > 2012 } return { $a.name, $b.name "
     "as b, $k.since } order { $k.since desc } }",
     NULL,
     "{\"a.name\":\"dave\",\"b\":\"dave\",\"k.since\":2020}\n"
     "{\"a.name\":\"erin\",\"b\":\"alice\",\"k.since\":2019}\n"
     "{\"a.name\":\"alice\",\"b\":\"bob\",\"k.since\":2018}\n"
     "{\"a.name\":\"alice\",\"b\":\"carol\",\"k.since\":2015}\n"
     "{\"a.name\":\"carol\",\"b\":\"alice\",\"k.since\":2014}\n"},
    {"query q() { match { $a: Person { name: \"dave\" }  $a $k:<knows> $b } return { $b.name } }",
     NULL, "{\"b.name\":\"carol\"}\n{\"b.name\":\"dave\"}\n"},
    {"query q() { match { $p: Person { name: \"erin\" }  $p $w:worksAt $c } return { $c.name, "
     "$w.role } order { $w.role } }",
     NULL, "{\"c.name\":\"acme\",\"w.role\":\"ceo\"}\n{\"c.name\":\"acme\",\"w.role\":\"eng\"}\n"},
    {"query q() { match { $a: Person  $a $k:knows $b } return { $a.name, count($b) as n } }", NULL,
     "{\"a.name\":\"alice\",\"n\":3}\n{\"a.name\":\"bob\",\"n\":1}\n{\"a.name\":\"carol\",\"n\":2}"
     "\n"
     "{\"a.name\":\"dave\",\"n\":1}\n{\"a.name\":\"erin\",\"n\":1}\n"},
    /* chains, bound destinations, variable inequality */
    {"query q() { match { $a: Person  $a knows $b  $b worksAt $c } return { $a.name, $c.name as "
     "company } order { $a.name, $c.name } }",
     NULL,
     "{\"a.name\":\"alice\",\"company\":\"acme\"}\n{\"a.name\":\"alice\",\"company\":\"globex\"}\n"
     "{\"a.name\":\"bob\",\"company\":\"globex\"}\n{\"a.name\":\"carol\",\"company\":\"acme\"}\n"
     "{\"a.name\":\"erin\",\"company\":\"acme\"}\n"},
    {"query q() { match { $a: Person  $b: Person  $a knows $b  $b knows $a } return { $a.name, "
     "$b.name as b } order { $a.name } }",
     NULL,
     "{\"a.name\":\"alice\",\"b\":\"carol\"}\n{\"a.name\":\"carol\",\"b\":\"alice\"}\n"
     "{\"a.name\":\"dave\",\"b\":\"dave\"}\n"},
    {"query q() { match { $a: Person { name: \"alice\" }  $a knows $b  $b knows $c  $a != $c } "
     "return { $c.name } }",
     NULL, "{\"c.name\":\"carol\"}\n{\"c.name\":\"dave\"}\n"},
    {"query q() { match { $p: Person  $p knows $p } return { $p.name } }", NULL, P1("dave")},
    /* not { } */
    {"query q() { match { $p: Person  not { $p worksAt $_ } } return { $p.name } }", NULL,
     P1("dave") P1("frank")},
    {"query q() { match { $p: Person  not { $p knows $f  $f.age > 30 } } return { $p.name } }",
     NULL, P1("carol") P1("dave") P1("erin") P1("frank")},
    {"query q() { match { $p: Person  not { $_ knows $p } } return { $p.name } }", NULL,
     P1("erin") P1("frank")},
    {"query q() { match { $p: Person  not { $p knows $f  not { $f worksAt $_ } } } return { "
     "$p.name } }",
     NULL, P1("alice") P1("bob") P1("erin") P1("frank")},
    {"query q() { match { $c: Company  not { $_ worksAt $c } } return { $c.name } }", NULL,
     "{\"c.name\":\"initech\"}\n"},
    /* aggregates */
    {"query q() { match { $p: Person  $p knows $f } return { $p.name  count($f) as friends } order "
     "{ friends desc } }",
     NULL,
     "{\"p.name\":\"alice\",\"friends\":2}\n{\"p.name\":\"carol\",\"friends\":2}\n"
     "{\"p.name\":\"bob\",\"friends\":1}\n{\"p.name\":\"dave\",\"friends\":1}\n"
     "{\"p.name\":\"erin\",\"friends\":1}\n"},
    {"query q() { match { $p: Person } return { count($p) as n, sum($p.age) as s, avg($p.score) as "
     "m, min($p.age) as lo, max($p.name) as hi } }",
     NULL, "{\"n\":6,\"s\":155,\"m\":1.875,\"lo\":25,\"hi\":\"frank\"}\n"},
    {"query q() { match { $p: Person { name: \"zed\" } } return { count($p) as n, sum($p.age) as "
     "s, avg($p.age) as a, max($p.age) as m } }",
     NULL, "{\"n\":0,\"s\":0,\"a\":null,\"m\":null}\n"},
    {"query q() { match { $p: Person  $p worksAt $c } return { $c.name, count($p) as n, "
     "avg($p.age) as a } order { $c.name } }",
     NULL,
     "{\"c.name\":\"acme\",\"n\":3,\"a\":31.666666666666668}\n{\"c.name\":\"globex\",\"n\":1,\"a\":"
     "35}\n"},
    {"query q() { match { $p: Person  $p worksAt $c } return { $c.name, min($p.name) as first, "
     "max($p.age) as oldest } }",
     NULL,
     "{\"c.name\":\"acme\",\"first\":\"alice\",\"oldest\":40}\n"
     "{\"c.name\":\"globex\",\"first\":\"carol\",\"oldest\":35}\n"},
    {"query q() { match { $a: Person  $a $k:knows $b } return { sum($k.weight) as w, count($b) as "
     "n } }",
     NULL, "{\"w\":7.5,\"n\":8}\n"},
    {"query q() { match { $p: Person } return { $p.age, count($p) as n } order { n desc } limit 2 "
     "}",
     NULL, "{\"p.age\":25,\"n\":2}\n{\"p.age\":null,\"n\":1}\n"},
    /* order (nulls first asc, last desc, id tie-break) and limit */
    {"query q() { match { $p: Person } return { $p.name, $p.age } order { $p.age desc } }", NULL,
     "{\"p.name\":\"erin\",\"p.age\":40}\n{\"p.name\":\"carol\",\"p.age\":35}\n"
     "{\"p.name\":\"alice\",\"p.age\":30}\n{\"p.name\":\"bob\",\"p.age\":25}\n"
     "{\"p.name\":\"frank\",\"p.age\":25}\n{\"p.name\":\"dave\",\"p.age\":null}\n"},
    {"query q() { match { $p: Person } return { $p.name, $p.age } order { $p.age } }", NULL,
     "{\"p.name\":\"dave\",\"p.age\":null}\n{\"p.name\":\"bob\",\"p.age\":25}\n"
     "{\"p.name\":\"frank\",\"p.age\":25}\n{\"p.name\":\"alice\",\"p.age\":30}\n"
     "{\"p.name\":\"carol\",\"p.age\":35}\n{\"p.name\":\"erin\",\"p.age\":40}\n"},
    {"query q() { match { $p: Person } return { $p.name } order { $p.name } limit 2 }", NULL,
     P1("alice") P1("bob")},
    {"query q() { match { $p: Person } return { $p.name } order { $p.born desc } limit 3 }", NULL,
     P1("bob") P1("alice") P1("erin")},
    {"query q() { match { $p: Person } return { $p.age as a } order { a desc } limit 1 }", NULL,
     "{\"a\":40}\n"},
    {"query q() { match { $p: Person } return { $p.name } limit 0 }", NULL, ""},
    /* more: cross-slot filters, grouping by entity, mixed orders, dates, params */
    {"query q() { match { $a: Person  $a knows $b  $b.age > $a.age } return { $a.name, $b.name as "
     "b } }",
     NULL, "{\"a.name\":\"alice\",\"b\":\"carol\"}\n{\"a.name\":\"bob\",\"b\":\"carol\"}\n"},
    {"query q() { match { $p: Person  $p worksAt $c } return { $c, count($p) as n } }", NULL,
     "{\"c\":\"acme\",\"n\":3}\n{\"c\":\"globex\",\"n\":1}\n"},
    {"query q() { match { $p: Person } return { $p.name } order { $p.age desc, $p.name desc } }",
     NULL, P1("erin") P1("carol") P1("alice") P1("frank") P1("bob") P1("dave")},
    {"query q() { match { $p: Person  $p worksAt $c } return { $c.name, count($p) as n } order { n "
     "} }",
     NULL, "{\"c.name\":\"globex\",\"n\":1}\n{\"c.name\":\"acme\",\"n\":3}\n"},
    {"query q() { match { $p: Person  $p worksAt $c } return { $c.name, count($p) as n } order { n "
     "desc } limit 1 }",
     NULL, "{\"c.name\":\"acme\",\"n\":3}\n"},
    {"query q() { match { $p: Person } return { max($p.born) as b, min($p.seen) as s } }", NULL,
     "{\"b\":\"1999-01-01\",\"s\":\"2024-01-01T10:00:00.000Z\"}\n"},
    {"query q() { match { $p: Person  $p worksAt $c } return { $c.name, sum($p.age) as s } }", NULL,
     "{\"c.name\":\"acme\",\"s\":95}\n{\"c.name\":\"globex\",\"s\":35}\n"},
    {"query q() { match { $a: Person  $a $k:knows $b } return { avg($k.since) as a } }", NULL,
     "{\"a\":2015.4285714285713}\n"},
    {"query q() { match { $c: Company } return { sum($c.size) as s, count($c) as n, avg($c.size) "
     "as a } }",
     NULL, "{\"s\":105,\"n\":3,\"a\":52.5}\n"},
    {"query q() { match { $p: Person  $p.name contains \"\" } return { count($p) as n } }", NULL,
     "{\"n\":6}\n"},
    {"query q() { match { $p: Person  $p.name starts_with \"alice\" } return { $p.name } }", NULL,
     P1("alice")},
    {"query q() { match { $p: Person  $p.tags contains \"z\" } return { $p.name } }", NULL, ""},
    {"query q() { match { $p: Person { name: \"erin\" }  $p knows{2,3} $f } return { $f.name } }",
     NULL, "{\"f.name\":\"bob\"}\n{\"f.name\":\"carol\"}\n{\"f.name\":\"dave\"}\n"},
    {"query q() { match { $f: Person { name: \"dave\" }  $p knows{1,2} $f } return { $p.name } }",
     NULL, P1("alice") P1("bob") P1("carol") P1("dave")},
    {"query q() { match { $p: Person { name: \"bob\" }  $p worksAt $c  $q worksAt $c  $q != $p } "
     "return { $q.name } }",
     NULL, "{\"q.name\":\"alice\"}\n{\"q.name\":\"erin\"}\n"},
    {"query q() { match { $a: Person  $a $k:knows $b  $k.weight >= 1 } return { count($b) as n } }",
     NULL, "{\"n\":4}\n"},
    {"query q() { match { $p: Person { seen: now() } } return { $p.name } }", NULL, ""},
    {"query q($t: DateTime) { match { $p: Person  $p.seen > $t } return { $p.name } }",
     "{\"t\":\"2025-06-01T00:00:00Z\"}", P1("bob")},
    {"query q($t: DateTime) { match { $p: Person  $p.seen = $t } return { $p.name } }",
     "{\"t\":1704103200000}", P1("alice")},
    {"query q($s: U64) { match { $c: Company  $c.size < $s } return { $c.name } }", "{\"s\":50}",
     "{\"c.name\":\"initech\"}\n"},
    {"query q($a: I32?) { match { $p: Person  $p.age = $a } return { $p.name } }", "{\"a\":null}",
     ""},
    {"query q($x: F64) { match { $p: Person  $p.score >= $x } return { $p.name } order { $p.score "
     "desc } }",
     "{\"x\":1.5}", P1("erin") P1("carol") P1("alice")},
    {"query q() { match { $p: Person  not { $p knows $f  $f: Person { name: \"bob\" } } } return { "
     "$p.name } }",
     NULL, P1("bob") P1("carol") P1("dave") P1("erin") P1("frank")},
    {"query q() { match { $p: Person  $p knows{1,2} $f  $f.age > 30 } return { $p.name, count($f) "
     "as n } }",
     NULL,
     "{\"p.name\":\"alice\",\"n\":1}\n{\"p.name\":\"bob\",\"n\":1}\n{\"p.name\":\"erin\",\"n\":1}"
     "\n"},
    /* more semantics: range filters, != over nulls, reverse and two-step patterns, ordering
     * with nulls and ties, edge-property aggregates, an isolated node, an integer param */
    {"query q() { match { $p: Person  $p.age > 25  $p.age < 40 } return { $p.name } }", NULL,
     P1("alice") P1("carol")},
    {"query q() { match { $p: Person  $p.age >= 25  $p.age <= 25 } return { $p.name } }", NULL,
     P1("bob") P1("frank")},
    {"query q() { match { $p: Person  $p.age != 25 } return { $p.name } }", NULL,
     P1("alice") P1("carol") P1("erin")},
    {"query q() { match { $c: Person { name: \"carol\" }  $p knows $c } return { $p.name } }", NULL,
     P1("alice") P1("bob")},
    {"query q() { match { $c: Company  $c.size > 10 } return { $c.name } }", NULL,
     "{\"c.name\":\"acme\"}\n"},
    {"query q() { match { $p: Person } return { $p.name, $p.age } order { $p.age desc } limit 3 }",
     NULL,
     "{\"p.name\":\"erin\",\"p.age\":40}\n{\"p.name\":\"carol\",\"p.age\":35}\n"
     "{\"p.name\":\"alice\",\"p.age\":30}\n"},
    {"query q() { match { $p: Person } return { $p.name } order { $p.age asc } limit 2 }", NULL,
     P1("dave") P1("bob")},
    {"query q() { match { $a: Person { name: \"carol\" }  $a knows $b  $b worksAt $c } return { "
     "$b.name, $c.name } }",
     NULL, "{\"b.name\":\"alice\",\"c.name\":\"acme\"}\n"},
    {"query q() { match { $c: Company { name: \"acme\" }  $p worksAt $c  not { $_ knows $p } } "
     "return { $p.name } }",
     NULL, P1("erin")},
    {"query q() { match { $a: Person { name: \"alice\" }  $a $k:knows $b } return { min($k.since) "
     "as first, max($k.since) as last, count($b) as n } }",
     NULL, "{\"first\":2010,\"last\":2018,\"n\":3}\n"},
    {"query q() { match { $p: Person { name: \"frank\" }  $p <knows>{1,2} $f } return { $f.name } "
     "}",
     NULL, ""},
    {"query q($a: I32) { match { $p: Person  $p.age >= $a } return { $p.name } }", "{\"a\":35}",
     P1("carol") P1("erin")},
};

static void test_semantics(void **state)
{
    (void)state;
    fixture *f = fx_open();
    exec_cache *cache = NULL;
    assert_og_ok(exec_cache_new(&cache));
    size_t n = sizeof CASES / sizeof CASES[0];
    assert_true(n >= 60);
    for (size_t i = 0; i < n; i++)
        expect_rows(f, cache, CASES[i].gq, CASES[i].params, CASES[i].want);
    /* The same cases without a shared cache give the same answers. */
    for (size_t i = 0; i < n; i++)
        expect_rows(f, NULL, CASES[i].gq, CASES[i].params, CASES[i].want);
    exec_cache_free(cache);
    fx_close(f);
}

static void test_result_accessors(void **state)
{
    (void)state;
    fixture *f = fx_open();
    exec_result *r = NULL;
    assert_og_ok(run_query(
        f, NULL,
        "query q() { match { $p: Person } return { $p.name as n, $p.age } order { $p.name } }",
        NULL, NULL, &r));
    assert_int_equal(exec_result_n_columns(r), 2);
    assert_string_equal(exec_result_column_name(r, 0), "n");
    assert_string_equal(exec_result_column_name(r, 1), "p.age");
    assert_int_equal(exec_result_schema(r)->fields[1].type.id, ARROW_INT32);
    assert_int_equal(exec_result_n_rows(r), 6);
    const arrow_array *a;
    int64_t i;
    assert_og_ok(exec_result_cell(r, 3, 0, &a, &i));
    size_t len;
    const uint8_t *p = arrow_array_get_bytes(a, i, &len);
    assert_int_equal(len, 4);
    assert_memory_equal(p, "dave", 4);
    assert_og_ok(exec_result_cell(r, 3, 1, &a, &i));
    assert_false(arrow_array_is_valid(a, i));
    assert_og_error(exec_result_cell(r, 6, 0, &a, &i), OG_E_BAD_REQUEST);
    struct ArrowArrayStream st;
    assert_og_ok(exec_result_export(r, &st));
    struct ArrowArray arr;
    assert_int_equal(st.get_next(&st, &arr), 0);
    assert_int_equal(arr.length, 6);
    arr.release(&arr);
    st.release(&st);
    exec_result_free(r);
    fx_close(f);
}

static void expect_param_error(fixture *f, const char *gq, const char *params, const char *name)
{
    int rc = run_query(f, NULL, gq, params, NULL, NULL);
    assert_og_error(rc, OG_E_BAD_REQUEST);
    if (!strstr(og_error_last()->message, name))
        fail_msg("error '%s' does not name param %s", og_error_last()->message, name);
}

static void test_bad_params(void **state)
{
    (void)state;
    fixture *f = fx_open();
    const char *q = "query q($name: String, $age: I32, $d: Date?) { match { $p: Person { name: "
                    "$name }  $p.age > $age } return { $p.name } }";
    expect_param_error(f, q, "{\"age\":3}", "name");
    expect_param_error(f, q, "{\"name\":5,\"age\":3}", "name");
    expect_param_error(f, q, "{\"name\":\"a\",\"age\":3000000000}", "age");
    expect_param_error(f, q, "{\"name\":\"a\",\"age\":\"x\"}", "age");
    expect_param_error(f, q, "{\"name\":\"a\",\"age\":1,\"nmae\":\"x\"}", "nmae");
    expect_param_error(f, q, "{\"name\":\"a\",\"age\":1,\"d\":\"2020-13-45\"}", "d");
    expect_param_error(f, q, "{\"name\":null,\"age\":1}", "name");
    /* A list param with a wrong element, and no params object at all. */
    expect_param_error(
        f, "query q($t: [String]) { match { $p: Person  $p.name = \"x\" } return { $p.name } }",
        "{\"t\":[\"a\",1]}", "t");
    core_arena a;
    core_arena_init(&a, 0);
    lang_diags d;
    lang_diags_init(&d, &a);
    lang_query_set *qs = NULL;
    assert_og_ok(lang_query_set_build(&qs, f->cat, q, strlen(q), "t.gq", &d));
    exec_result *r = NULL;
    assert_og_error(exec_query_run(&r, f->cat, &f->snap, f->s, &qs->queries[0], NULL, NULL),
                    OG_E_BAD_REQUEST);
    assert_non_null(strstr(og_error_last()->message, "name"));
    lang_query_set_free(qs);
    core_arena_free(&a);
    /* Optional params may be left out; a good set runs. */
    char *rows = NULL;
    assert_og_ok(run_query(f, NULL, q, "{\"name\":\"carol\",\"age\":30}", &rows, NULL));
    assert_string_equal(rows, "{\"p.name\":\"carol\"}\n");
    free(rows);
    fx_close(f);
}

static void append_rows(fixture *f, graph_table *gt, const char *rows)
{
    int ti = lang_catalog_find(f->cat, gt->type_name, gt->kind);
    arrow_schema sc;
    assert_og_ok(graph_type_schema(&sc, &f->cat->types[ti]));
    lance_dataset *ds = NULL, *ds2 = NULL;
    assert_og_ok(lance_dataset_open(&ds, f->s, gt->path, gt->version, LANCE_ACCESS_WRITE));
    arrow_batch *b = batch_from_json(&sc, rows);
    assert_og_ok(lance_dataset_append(&ds2, ds, &b, 1));
    gt->version = lance_dataset_version(ds2);
    arrow_batch_free(b);
    lance_dataset_free(ds);
    lance_dataset_free(ds2);
    arrow_schema_clear(&sc);
}

static void test_cache_invalidation(void **state)
{
    (void)state;
    fixture *f = fx_open();
    exec_cache *c = NULL;
    assert_og_ok(exec_cache_new(&c));
    exec_cache_set_cold_runs(c, 0); /* whole tables from the first run (subset runs: below) */
    exec_cache_stats st;
    const char *q =
        "query q() { match { $p: Person { name: \"frank\" }  $p knows $f } return { $f.name } }";
    expect_rows(f, c, q, NULL, "");
    exec_cache_stats_get(c, &st);
    assert_int_equal(st.csr_builds, 1);
    assert_int_equal(st.table_loads, 2); /* Knows, Person */
    /* A warm run touches no storage at all. */
    store_counts before, after, diff;
    store_counts_get(f->s, &before);
    expect_rows(f, c, q, NULL, "");
    store_counts_get(f->s, &after);
    store_counts_diff(&after, &before, &diff);
    assert_int_equal(diff.total_ops, 0);
    exec_cache_stats_get(c, &st);
    assert_int_equal(st.csr_builds, 1);
    assert_int_equal(st.csr_hits, 1);
    assert_int_equal(st.table_loads, 2);
    /* A new version of the edge table that only appended an edge: the cached table and its
     * adjacency are folded (shared, plus the appended edge), not rebuilt. */
    uint64_t old_version = f->tables[0].version;
    append_rows(f, &f->tables[0], "[{\"id\":\"k9\",\"src\":\"frank\",\"dst\":\"erin\"}]");
    assert_true(f->tables[0].version > old_version);
    expect_rows(f, c, q, NULL, "{\"f.name\":\"erin\"}\n");
    exec_cache_stats_get(c, &st);
    assert_int_equal(st.csr_builds, 1);
    assert_int_equal(st.csr_folds, 1);
    assert_int_equal(st.table_loads, 2);
    assert_int_equal(st.table_folds, 1);
    assert_int_equal(st.csrs, 2); /* the base's adjacency stays under the folded one */
    expect_rows(f, c, q, NULL, "{\"f.name\":\"erin\"}\n");
    exec_cache_stats_get(c, &st);
    assert_int_equal(st.csr_builds, 1);
    assert_int_equal(st.csr_folds, 1);
    /* The old snapshot still answers as it did (time travel reads its own version). */
    uint64_t new_version = f->tables[0].version;
    f->tables[0].version = old_version;
    expect_rows(f, c, q, NULL, "");
    f->tables[0].version = new_version;
    /* A node table version change rebuilds too (the CSR is in node-row space). */
    append_rows(f, &f->tables[3], "[{\"id\":\"gina\",\"name\":\"gina\",\"age\":22}]");
    expect_rows(f, c, "query q() { match { $p: Person  $p.age < 25 } return { $p.name } }", NULL,
                P1("gina"));
    exec_cache_stats_get(c, &st);
    uint64_t builds = st.csr_builds;
    expect_rows(f, c, q, NULL, "{\"f.name\":\"erin\"}\n");
    exec_cache_stats_get(c, &st);
    assert_int_equal(st.csr_builds, builds + 1);
    exec_cache_free(c);
    fx_close(f);
}

static void test_pushdown_and_key_lookup(void **state)
{
    (void)state;
    fixture *f = fx_open();
    exec_cache *c = NULL;
    assert_og_ok(exec_cache_new(&c));
    exec_cache_stats st;
    const char *q = "query q() { match { $p: Person  $p.age > 28  $p.name contains \"a\" } return "
                    "{ $p.name } }";
    expect_rows(f, c, q, NULL, P1("alice") P1("carol"));
    exec_cache_stats_get(c, &st);
    assert_int_equal(st.pushed_scans, 1);
    /* Once the column is in memory the comparison runs there, with the same answer. */
    expect_rows(f, c,
                "query q() { match { $p: Person } return { $p.age } order { $p.age } limit 1 }",
                NULL, "{\"p.age\":null}\n");
    expect_rows(f, c, q, NULL, P1("alice") P1("carol"));
    exec_cache_stats_get(c, &st);
    assert_int_equal(st.pushed_scans, 1);
    /* Key equality is a dictionary lookup, with or without other predicates. */
    expect_rows(f, c,
                "query q() { match { $p: Person { name: \"erin\", age: 40 } } return { $p.name } }",
                NULL, P1("erin"));
    expect_rows(f, c,
                "query q() { match { $p: Person { name: \"erin\", age: 41 } } return { $p.name } }",
                NULL, "");
    exec_cache_stats_get(c, &st);
    assert_int_equal(st.key_lookups, 2);
    exec_cache_free(c);
    fx_close(f);
}

static void test_missing_table_and_mutation(void **state)
{
    (void)state;
    fixture *f = fx_open();
    /* A type without a table in the snapshot reads as empty. */
    f->snap.n_tables = 3; /* drop node:Person */
    expect_rows(f, NULL, "query q() { match { $p: Person } return { count($p) as n } }", NULL,
                "{\"n\":0}\n");
    expect_rows(f, NULL, "query q() { match { $c: Company  $p worksAt $c } return { $c.name } }",
                NULL, "");
    f->snap.n_tables = 4;
    int rc = run_query(f, NULL, "query q($n: String) { insert Company { name: $n } }",
                       "{\"n\":\"x\"}", NULL, NULL);
    assert_og_error(rc, OG_E_BAD_REQUEST);
    fx_close(f);
}

/* Several threads share one cold cache: every answer is right and the cache ends up with one
 * entry per table and per adjacency. */
typedef struct thread_arg {
    fixture *f;
    exec_cache *c;
    size_t first;
    int failures;
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *a = p;
    size_t n = sizeof CASES / sizeof CASES[0];
    for (size_t k = 0; k < n; k++) {
        const qcase *qc = &CASES[(a->first + k) % n];
        char *got = NULL;
        if (run_query(a->f, a->c, qc->gq, qc->params, &got, NULL)) {
            a->failures++;
            continue;
        }
        int sort = strstr(qc->gq, "order {") == NULL;
        char *g = normalise(got, sort), *w = normalise(qc->want, sort);
        if (strcmp(g, w)) a->failures++;
        free(g);
        free(w);
        free(got);
    }
    return NULL;
}

static void test_shared_cache_threads(void **state)
{
    (void)state;
    fixture *f = fx_open();
    exec_cache *c = NULL;
    assert_og_ok(exec_cache_new(&c));
    pthread_t th[4];
    thread_arg args[4];
    for (size_t i = 0; i < 4; i++) {
        args[i] = (thread_arg){f, c, i * 7, 0};
        assert_int_equal(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
    }
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(args[i].failures, 0);
    }
    exec_cache_stats st;
    exec_cache_stats_get(c, &st);
    assert_int_equal(st.tables, 4);
    assert_int_equal(st.csrs, 2);
    exec_cache_free(c);
    fx_close(f);
}

/* Every allocation failure ends in a clean OG_E_NOMEM (no crash, no leak under ASan). */
static void test_alloc_failures(void **state)
{
    (void)state;
    fixture *f = fx_open();
    static const size_t picks[] = {17, 36, 42, 45, 52, 57, 62};
    for (size_t k = 0; k < sizeof picks / sizeof picks[0]; k++) {
        const qcase *qc = &CASES[picks[k]];
        int done = 0;
        for (uint64_t nth = 1; !done && nth < 100000; nth++) {
            exec_cache *c = NULL;
            assert_og_ok(exec_cache_new(&c));
            g_fail_nth = nth;
            char *got = NULL;
            int rc = run_query_quiet(f, c, qc->gq, qc->params, &got);
            int injected = g_injected > 0;
            if (rc == 0) {
                int sort = strstr(qc->gq, "order {") == NULL;
                char *g = normalise(got, sort), *w = normalise(qc->want, sort);
                assert_string_equal(g, w);
                free(g);
                free(w);
                free(got);
                done = !injected;
            } else if (!injected) {
                fail_msg("query failed without an injected failure: %s", og_error_last()->message);
            }
            exec_cache_free(c);
        }
        assert_true(done);
    }
    fx_close(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_semantics),
        cmocka_unit_test(test_result_accessors),
        cmocka_unit_test(test_bad_params),
        cmocka_unit_test(test_cache_invalidation),
        cmocka_unit_test(test_pushdown_and_key_lookup),
        cmocka_unit_test(test_missing_table_and_mutation),
        cmocka_unit_test(test_shared_cache_threads),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
