/* Differential tests of the read-query executor against SQLite (issue 7 item 7): seeded random
 * graphs (parallel edges, self-loops, null properties) are loaded into a graph through
 * write_init + write_changes and into an in-memory SQLite database, and every query below is
 * answered both ways; the row multisets must agree exactly (floats within 1e-9 relative).
 *
 * Traversal semantics are modelled in SQL, not assumed: src/exec/query.c's BFS reports, for a
 * source s and hop bounds [min, max], every node n != s whose shortest distance d(s, n) lies in
 * [min, max] (a visited node is neither reported again nor expanded again), plus every node n
 * with a self-loop edge for which d(s, n) + 1 lies in [min, max] (the self-loop is seen when n
 * is expanded; this includes n = s at distance 0). A traversal `$c edge $a` with $a bound first
 * runs backwards from $a; `<edge>` uses both directions. The SQL side computes shortest
 * distances with a bounded recursive CTE and applies exactly those two rules. */
#include "testutil.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "exec/load.h"
#include "exec/query.h"
#include "graph/graph.h"
#include "lang/ir.h"
#include "store/store.h"
#include "write/write.h"

#include <math.h>
#include <sqlite3.h>
#include <string.h>

static const char SCHEMA[] = "node Person {\n"
                             "  name: String @key\n"
                             "  age: I32?\n"
                             "  score: F64?\n"
                             "  team: String?\n"
                             "}\n"
                             "edge Knows: Person -> Person { w: I64? }\n"
                             "edge Likes: Person -> Person\n";

static const char *const TEAMS[] = {"red", "blue", "green"};

#define N_SEEDS 6
static const uint64_t SEEDS[N_SEEDS] = {1, 7, 42, 1234, 99991, 0x5eedULL};

/* ---- random graph ------------------------------------------------------------------------- */

typedef struct person {
    char name[24];
    int has_age, has_score, team; /* team: -1 null */
    int age;
    double score;
} person;

typedef struct edge {
    int src, dst;
    int has_w;
    long long w;
} edge;

typedef struct rgraph {
    person *p;
    size_t n;
    edge *knows, *likes;
    size_t n_knows, n_likes;
    size_t self_loops, parallel;
} rgraph;

static uint64_t rs_;
static uint64_t rnd(void)
{
    rs_ ^= rs_ << 13;
    rs_ ^= rs_ >> 7;
    rs_ ^= rs_ << 17;
    return rs_;
}

static void gen_edges(edge *e, size_t m, size_t n, int with_w, rgraph *g)
{
    for (size_t i = 0; i < m; i++) {
        uint64_t r = rnd() % 100;
        if (i > 0 && r < 8) { /* a parallel copy of the previous edge */
            e[i] = e[i - 1];
            g->parallel++;
        } else {
            e[i].src = (int)(rnd() % n);
            e[i].dst = r < 12 ? e[i].src : (int)(rnd() % n); /* ~4%: a self-loop */
        }
        if (e[i].src == e[i].dst) g->self_loops++;
        e[i].has_w = with_w && rnd() % 10 >= 3;
        e[i].w = (long long)(rnd() % 2001) - 1000;
    }
}

static void gen_graph(rgraph *g, uint64_t seed)
{
    memset(g, 0, sizeof *g);
    rs_ = seed * 0x9e3779b97f4a7c15ULL + 1;
    g->n = 100 + (size_t)(rnd() % 201); /* 100..300 */
    g->n_knows = g->n + (size_t)(rnd() % (g->n * 3 / 2 + 1));
    g->n_likes = g->n / 2 + (size_t)(rnd() % g->n);
    g->p = calloc(g->n, sizeof *g->p);
    g->knows = calloc(g->n_knows, sizeof *g->knows);
    g->likes = calloc(g->n_likes, sizeof *g->likes);
    assert_non_null(g->p);
    assert_non_null(g->knows);
    assert_non_null(g->likes);
    for (size_t i = 0; i < g->n; i++) {
        person *p = &g->p[i];
        snprintf(p->name, sizeof p->name, "n%03zu", i);
        p->has_age = rnd() % 100 >= 15;
        p->age = (int)(rnd() % 91);
        p->has_score = rnd() % 100 >= 20;
        p->score = (double)(rnd() % 1000000) / 977.0 + 0.25; /* positive: no cancellation */
        p->team = rnd() % 10 == 0 ? -1 : (int)(rnd() % 3);
    }
    gen_edges(g->knows, g->n_knows, g->n, 1, g);
    gen_edges(g->likes, g->n_likes, g->n, 0, g);
}

static void free_graph(rgraph *g)
{
    free(g->p);
    free(g->knows);
    free(g->likes);
}

static char *graph_jsonl(const rgraph *g, size_t *len)
{
    core_buf b = CORE_BUF_INIT;
    for (size_t i = 0; i < g->n; i++) {
        const person *p = &g->p[i];
        char line[256];
        int k =
            snprintf(line, sizeof line, "{\"type\":\"Person\",\"data\":{\"name\":\"%s\"", p->name);
        if (p->has_age)
            k += snprintf(line + k, sizeof line - (size_t)k, ",\"age\":%d", p->age);
        else
            k += snprintf(line + k, sizeof line - (size_t)k, ",\"age\":null");
        if (p->has_score)
            k += snprintf(line + k, sizeof line - (size_t)k, ",\"score\":%.17g", p->score);
        if (p->team >= 0)
            k += snprintf(line + k, sizeof line - (size_t)k, ",\"team\":\"%s\"", TEAMS[p->team]);
        snprintf(line + k, sizeof line - (size_t)k, "}}\n");
        core_buf_append_str(&b, line);
    }
    for (int t = 0; t < 2; t++) {
        const edge *e = t ? g->likes : g->knows;
        size_t m = t ? g->n_likes : g->n_knows;
        for (size_t i = 0; i < m; i++) {
            char line[256];
            int k = snprintf(line, sizeof line, "{\"edge\":\"%s\",\"from\":\"%s\",\"to\":\"%s\"",
                             t ? "Likes" : "Knows", g->p[e[i].src].name, g->p[e[i].dst].name);
            if (!t && e[i].has_w)
                k += snprintf(line + k, sizeof line - (size_t)k, ",\"data\":{\"w\":%lld}", e[i].w);
            snprintf(line + k, sizeof line - (size_t)k, "}\n");
            core_buf_append_str(&b, line);
        }
    }
    *len = b.len;
    char *out = strdup(core_buf_cstr(&b));
    core_buf_free(&b);
    return out;
}

/* ---- both engines ------------------------------------------------------------------------- */

typedef struct fixture {
    char dir[256];
    write_graph *wg;
    graph_snapshot *snap;
    exec_cache *cache;
    sqlite3 *db;
    rgraph g;
    size_t queries, rows; /* compared so far */
} fixture;

static void sql_exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) fail_msg("sqlite: %s\n%s", err, sql);
}

static void load_sqlite(fixture *f)
{
    assert_int_equal(sqlite3_open(":memory:", &f->db), SQLITE_OK);
    sql_exec(f->db, "CREATE TABLE person(id TEXT PRIMARY KEY, age INT, score REAL, team TEXT);"
                    "CREATE TABLE knows(src TEXT NOT NULL, dst TEXT NOT NULL, w INT);"
                    "CREATE TABLE likes(src TEXT NOT NULL, dst TEXT NOT NULL);"
                    "CREATE INDEX k_src ON knows(src); CREATE INDEX k_dst ON knows(dst);"
                    "CREATE INDEX l_src ON likes(src);"
                    /* the adjacency the three traversal directions walk */
                    "CREATE VIEW adj_out AS SELECT src, dst FROM knows;"
                    "CREATE VIEW adj_in AS SELECT dst AS src, src AS dst FROM knows;"
                    "CREATE VIEW adj_both AS SELECT src, dst FROM knows UNION ALL "
                    "SELECT dst, src FROM knows;"
                    "CREATE VIEW loops AS SELECT DISTINCT src AS id FROM knows WHERE src = dst;");
    sqlite3_stmt *pi = NULL, *ki = NULL, *li = NULL;
    assert_int_equal(sqlite3_prepare_v2(f->db, "INSERT INTO person VALUES(?,?,?,?)", -1, &pi, NULL),
                     0);
    assert_int_equal(sqlite3_prepare_v2(f->db, "INSERT INTO knows VALUES(?,?,?)", -1, &ki, NULL),
                     0);
    assert_int_equal(sqlite3_prepare_v2(f->db, "INSERT INTO likes VALUES(?,?)", -1, &li, NULL), 0);
    for (size_t i = 0; i < f->g.n; i++) {
        const person *p = &f->g.p[i];
        sqlite3_bind_text(pi, 1, p->name, -1, SQLITE_STATIC);
        if (p->has_age)
            sqlite3_bind_int(pi, 2, p->age);
        else
            sqlite3_bind_null(pi, 2);
        if (p->has_score)
            sqlite3_bind_double(pi, 3, p->score);
        else
            sqlite3_bind_null(pi, 3);
        if (p->team >= 0)
            sqlite3_bind_text(pi, 4, TEAMS[p->team], -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(pi, 4);
        assert_int_equal(sqlite3_step(pi), SQLITE_DONE);
        sqlite3_reset(pi);
    }
    for (size_t i = 0; i < f->g.n_knows; i++) {
        const edge *e = &f->g.knows[i];
        sqlite3_bind_text(ki, 1, f->g.p[e->src].name, -1, SQLITE_STATIC);
        sqlite3_bind_text(ki, 2, f->g.p[e->dst].name, -1, SQLITE_STATIC);
        if (e->has_w)
            sqlite3_bind_int64(ki, 3, e->w);
        else
            sqlite3_bind_null(ki, 3);
        assert_int_equal(sqlite3_step(ki), SQLITE_DONE);
        sqlite3_reset(ki);
    }
    for (size_t i = 0; i < f->g.n_likes; i++) {
        const edge *e = &f->g.likes[i];
        sqlite3_bind_text(li, 1, f->g.p[e->src].name, -1, SQLITE_STATIC);
        sqlite3_bind_text(li, 2, f->g.p[e->dst].name, -1, SQLITE_STATIC);
        assert_int_equal(sqlite3_step(li), SQLITE_DONE);
        sqlite3_reset(li);
    }
    sqlite3_finalize(pi);
    sqlite3_finalize(ki);
    sqlite3_finalize(li);
}

static void load_ours(fixture *f)
{
    test_sandbox_new(f->dir, sizeof f->dir, "diff");
    store *s = NULL;
    assert_og_ok(store_local_open(&s, f->dir));
    write_init_result ir;
    assert_og_ok(write_init(s, SCHEMA, strlen(SCHEMA), "diff.pg", &ir));
    store_close(s);
    s = NULL;
    assert_og_ok(store_local_open(&s, f->dir));
    write_open_options oo = WRITE_OPEN_OPTIONS_INIT;
    assert_og_ok(write_graph_open(&f->wg, s, f->dir, &oo));
    size_t len = 0;
    char *data = graph_jsonl(&f->g, &len);
    graph_change_set cs;
    memset(&cs, 0, sizeof cs);
    exec_load_stats st;
    memset(&st, 0, sizeof st);
    assert_og_ok(exec_load_parse(&cs, f->wg->h->catalog, data, len, "diff.jsonl", EXEC_LOAD_APPEND,
                                 &st, NULL, NULL));
    assert_int_equal(st.nodes, f->g.n);
    assert_int_equal(st.edges, f->g.n_knows + f->g.n_likes);
    cs.file = "diff.jsonl";
    write_options wo = WRITE_OPTIONS_INIT;
    write_result wr;
    memset(&wr, 0, sizeof wr);
    assert_og_ok(write_changes(f->wg, WRITE_KIND_LOAD, &cs, &wo, &wr));
    assert_true(wr.committed);
    graph_change_set_clear(&cs);
    free(data);
    assert_og_ok(graph_snapshot_load(&f->snap, f->wg->h->s, NULL, 0, 0));
    assert_og_ok(exec_cache_new(&f->cache));
}

static fixture *fx_open(uint64_t seed)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    gen_graph(&f->g, seed);
    /* The generator must produce the shapes the rules are about. */
    assert_true(f->g.self_loops > 0);
    assert_true(f->g.parallel > 0);
    load_sqlite(f);
    load_ours(f);
    return f;
}

static void fx_close(fixture *f)
{
    exec_cache_free(f->cache);
    graph_snapshot_free(f->snap);
    write_graph_close(f->wg);
    sqlite3_close(f->db);
    test_sandbox_done(f->dir);
    free_graph(&f->g);
    free(f);
}

/* ---- rows --------------------------------------------------------------------------------- */

enum { V_NULL, V_INT, V_DBL, V_STR };

typedef struct val {
    int k;
    int64_t i;
    double d;
    char *s;
} val;

typedef struct rowset {
    val *v;
    size_t n, w, cap;
} rowset;

static val *rs_next(rowset *r)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->v = realloc(r->v, r->cap * r->w * sizeof *r->v);
        assert_non_null(r->v);
    }
    val *row = &r->v[r->n++ * r->w];
    memset(row, 0, r->w * sizeof *row);
    return row;
}

static void rs_free(rowset *r)
{
    for (size_t i = 0; i < r->n * r->w; i++)
        free(r->v[i].s);
    free(r->v);
}

static int val_cmp(const val *a, const val *b)
{
    if (a->k != b->k) return a->k - b->k;
    switch (a->k) {
    case V_INT:
        return (a->i > b->i) - (a->i < b->i);
    case V_DBL:
        return (a->d > b->d) - (a->d < b->d);
    case V_STR:
        return strcmp(a->s, b->s);
    default:
        return 0;
    }
}

static size_t g_sort_w;
static int row_cmp(const void *pa, const void *pb)
{
    const val *a = pa, *b = pb;
    /* Exact columns first, so float noise cannot reorder rows that differ elsewhere. */
    for (int pass = 0; pass < 2; pass++)
        for (size_t c = 0; c < g_sort_w; c++) {
            if ((a[c].k == V_DBL || b[c].k == V_DBL) != pass) continue;
            int r = val_cmp(&a[c], &b[c]);
            if (r) return r;
        }
    return 0;
}

static void rs_sort(rowset *r)
{
    /* qsort needs rows as fixed-size elements: w values each. */
    g_sort_w = r->w;
    if (r->n > 1) qsort(r->v, r->n, r->w * sizeof *r->v, row_cmp);
}

static void val_text(core_buf *b, const val *v)
{
    char t[64];
    switch (v->k) {
    case V_NULL:
        core_buf_append_str(b, "null");
        break;
    case V_INT:
        snprintf(t, sizeof t, "%lld", (long long)v->i);
        core_buf_append_str(b, t);
        break;
    case V_DBL:
        snprintf(t, sizeof t, "%.17g", v->d);
        core_buf_append_str(b, t);
        break;
    default:
        core_buf_append_str(b, "\"");
        core_buf_append_str(b, v->s);
        core_buf_append_str(b, "\"");
    }
}

static char *row_text(const rowset *r, size_t i)
{
    core_buf b = CORE_BUF_INIT;
    for (size_t c = 0; c < r->w; c++) {
        if (c) core_buf_append_str(&b, ", ");
        val_text(&b, &r->v[i * r->w + c]);
    }
    char *s = strdup(core_buf_cstr(&b));
    core_buf_free(&b);
    return s;
}

static int val_agree(const val *a, const val *b)
{
    if (a->k != b->k) return 0;
    if (a->k != V_DBL) return val_cmp(a, b) == 0;
    if (a->d == b->d) return 1;
    double scale = fmax(fabs(a->d), fabs(b->d));
    return fabs(a->d - b->d) <= 1e-9 * scale;
}

static void rows_from_ours(fixture *f, const char *gq, rowset *out)
{
    core_arena a;
    core_arena_init(&a, 0);
    lang_diags d;
    lang_diags_init(&d, &a);
    lang_query_set *qs = NULL;
    if (lang_query_set_build(&qs, f->wg->h->catalog, gq, strlen(gq), "diff.gq", &d))
        fail_msg("query does not check: %s\n%s", og_error_last()->message, gq);
    assert_int_equal(qs->n_queries, 1);
    exec_params *p = NULL;
    assert_og_ok(exec_params_from_json(&p, &qs->queries[0], NULL));
    exec_result *r = NULL;
    if (exec_query_run(&r, f->wg->h->catalog, f->snap, f->wg->h->s, &qs->queries[0], p, f->cache))
        fail_msg("query failed: %s\n%s", og_error_last()->message, gq);
    out->w = exec_result_n_columns(r);
    for (uint64_t i = 0; i < exec_result_n_rows(r); i++) {
        val *row = rs_next(out);
        for (size_t c = 0; c < out->w; c++) {
            const arrow_array *arr = NULL;
            int64_t idx = 0;
            assert_og_ok(exec_result_cell(r, i, c, &arr, &idx));
            val *v = &row[c];
            if (!arrow_array_is_valid(arr, idx)) {
                v->k = V_NULL;
                continue;
            }
            switch (arr->type.id) {
            case ARROW_INT32:
            case ARROW_INT64:
                v->k = V_INT;
                v->i = arrow_array_get_int(arr, idx);
                break;
            case ARROW_UINT32:
            case ARROW_UINT64:
                v->k = V_INT;
                v->i = (int64_t)arrow_array_get_uint(arr, idx);
                break;
            case ARROW_FLOAT32:
            case ARROW_FLOAT64:
                v->k = V_DBL;
                v->d = arrow_array_get_double(arr, idx);
                break;
            case ARROW_UTF8:
            case ARROW_LARGE_UTF8: {
                size_t n = 0;
                const uint8_t *s = arrow_array_get_bytes(arr, idx, &n);
                v->k = V_STR;
                v->s = strndup((const char *)s, n);
                break;
            }
            default:
                fail_msg("column %zu has an unexpected type %d\n%s", c, arr->type.id, gq);
            }
        }
    }
    exec_result_free(r);
    exec_params_free(p);
    lang_query_set_free(qs);
    core_arena_free(&a);
}

static void rows_from_sql(fixture *f, const char *sql, rowset *out)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(f->db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("sqlite: %s\n%s", sqlite3_errmsg(f->db), sql);
    out->w = (size_t)sqlite3_column_count(st);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        val *row = rs_next(out);
        for (size_t c = 0; c < out->w; c++) {
            val *v = &row[c];
            switch (sqlite3_column_type(st, (int)c)) {
            case SQLITE_NULL:
                v->k = V_NULL;
                break;
            case SQLITE_INTEGER:
                v->k = V_INT;
                v->i = sqlite3_column_int64(st, (int)c);
                break;
            case SQLITE_FLOAT:
                v->k = V_DBL;
                v->d = sqlite3_column_double(st, (int)c);
                break;
            default:
                v->k = V_STR;
                v->s = strdup((const char *)sqlite3_column_text(st, (int)c));
            }
        }
    }
    if (rc != SQLITE_DONE) fail_msg("sqlite: %s\n%s", sqlite3_errmsg(f->db), sql);
    sqlite3_finalize(st);
}

/* Answer gq with our executor and sql with SQLite; the row multisets must agree. Returns the
 * number of rows (so callers can require non-trivial cases). */
static size_t compare(fixture *f, const char *gq, const char *sql)
{
    rowset a = {0}, b = {0};
    rows_from_ours(f, gq, &a);
    rows_from_sql(f, sql, &b);
    if (a.w != b.w) fail_msg("column counts differ: ours %zu, sqlite %zu\n%s", a.w, b.w, gq);
    rs_sort(&a);
    rs_sort(&b);
    size_t n = a.n < b.n ? a.n : b.n;
    for (size_t i = 0; i < n; i++)
        for (size_t c = 0; c < a.w; c++)
            if (!val_agree(&a.v[i * a.w + c], &b.v[i * b.w + c])) {
                char *x = row_text(&a, i), *y = row_text(&b, i);
                fail_msg(
                    "row %zu (sorted) differs: ours [%s], sqlite [%s]; %zu vs %zu rows\n%s\n%s", i,
                    x, y, a.n, b.n, gq, sql);
            }
    if (a.n != b.n) {
        char *x = row_text(a.n > b.n ? &a : &b, n);
        fail_msg("%s has %zu extra row(s), first [%s]; ours %zu, sqlite %zu\n%s\n%s",
                 a.n > b.n ? "ours" : "sqlite", (a.n > b.n ? a.n : b.n) - n, x, a.n, b.n, gq, sql);
    }
    f->queries++;
    f->rows += a.n;
    rs_free(&a);
    rs_free(&b);
    return n;
}

/* ---- traversal model in SQL --------------------------------------------------------------- */

/* A CTE `rep(s, n)`: the pairs the executor's BFS reports from every source s over adjacency
 * view `adj` with hop bounds [lo, hi] (the rules in the header comment). */
static void rep_cte(char *out, size_t cap, const char *adj, unsigned lo, unsigned hi)
{
    snprintf(
        out, cap,
        "WITH RECURSIVE r(s, n, d) AS (SELECT id, id, 0 FROM person UNION "
        "SELECT r.s, x.dst, r.d + 1 FROM r JOIN %s x ON x.src = r.n WHERE r.d < %u), "
        "dist(s, n, d) AS (SELECT s, n, MIN(d) FROM r GROUP BY s, n), "
        "rep(s, n) AS (SELECT s, n FROM dist WHERE n <> s AND d BETWEEN %u AND %u UNION "
        "SELECT s, n FROM dist WHERE d + 1 BETWEEN %u AND %u AND n IN (SELECT id FROM loops)) ",
        adj, hi, lo, hi, lo, hi);
}

typedef struct dir_form {
    const char *adj;
    const char *pattern; /* printf: the traversal between $a (bound first) and $c, with bounds */
} dir_form;

static const dir_form DIRS[] = {
    {"adj_out", "$a knows{%u,%u} $c"},
    {"adj_in", "$c knows{%u,%u} $a"},
    {"adj_both", "$a <knows>{%u,%u} $c"},
};

static const unsigned BOUNDS[][2] = {{1, 1}, {1, 2}, {2, 2}, {1, 3}, {2, 3}, {3, 3}};

static void check_traversals(fixture *f)
{
    char gq[1024], sql[4096], cte[2048], pat[128];
    for (size_t d = 0; d < sizeof DIRS / sizeof *DIRS; d++)
        for (size_t b = 0; b < sizeof BOUNDS / sizeof *BOUNDS; b++) {
            unsigned lo = BOUNDS[b][0], hi = BOUNDS[b][1];
            snprintf(pat, sizeof pat, DIRS[d].pattern, lo, hi);
            rep_cte(cte, sizeof cte, DIRS[d].adj, lo, hi);
            /* the reported pairs */
            snprintf(gq, sizeof gq,
                     "query q() { match { $a: Person  %s } return { $a.name, $c.name } }", pat);
            snprintf(sql, sizeof sql, "%s SELECT s, n FROM rep", cte);
            assert_true(compare(f, gq, sql) > 0);
            /* distinct destinations per source */
            snprintf(gq, sizeof gq,
                     "query q() { match { $a: Person  %s } return { $a.name, count($c) as n } }",
                     pat);
            snprintf(sql, sizeof sql, "%s SELECT s, COUNT(*) FROM rep GROUP BY s", cte);
            compare(f, gq, sql);
            /* both ends bound first (the destination-bound path), with filters over nulls */
            snprintf(
                gq, sizeof gq,
                "query q() { match { $a: Person  $a.age < 30  $c: Person  $c.team = \"red\"  %s } "
                "return { $a.name, $c.name } }",
                pat);
            snprintf(sql, sizeof sql,
                     "%s SELECT s, n FROM rep JOIN person a ON a.id = s JOIN person c ON c.id = n "
                     "WHERE a.age < 30 AND c.team = 'red'",
                     cte);
            compare(f, gq, sql);
            /* grouped by a property of the destination */
            snprintf(gq, sizeof gq,
                     "query q() { match { $a: Person  %s } return { $c.team, count($a) as n, "
                     "avg($a.age) as av, max($a.score) as mx } }",
                     pat);
            snprintf(sql, sizeof sql,
                     "%s SELECT c.team, COUNT(*), AVG(a.age), MAX(a.score) FROM rep "
                     "JOIN person a ON a.id = s JOIN person c ON c.id = n GROUP BY c.team",
                     cte);
            compare(f, gq, sql);
        }
}

/* ---- not { } ------------------------------------------------------------------------------ */

static void check_anti_joins(fixture *f)
{
    char cte[2048], sql[4096];
    assert_true(
        compare(
            f, "query q() { match { $a: Person  not { $a knows $b } } return { $a.name } }",
            "SELECT id FROM person p WHERE NOT EXISTS (SELECT 1 FROM knows k WHERE k.src = p.id)") >
        0);
    compare(f, "query q() { match { $a: Person  not { $b knows $a } } return { $a.name } }",
            "SELECT id FROM person p WHERE NOT EXISTS (SELECT 1 FROM knows k WHERE k.dst = p.id)");
    /* one-hop pairs (each destination once per source) without the reverse edge */
    assert_true(compare(f,
                        "query q() { match { $a: Person  $a knows $b  not { $b knows $a } } "
                        "return { $a.name, $b.name } }",
                        "SELECT DISTINCT src, dst FROM knows k WHERE NOT EXISTS "
                        "(SELECT 1 FROM knows r WHERE r.src = k.dst AND r.dst = k.src)") > 0);
    /* a filter inside the anti-join: a null age never satisfies it */
    compare(
        f,
        "query q() { match { $a: Person  not { $a likes $x  $x.age > 40 } } return { $a.name } }",
        "SELECT id FROM person p WHERE NOT EXISTS (SELECT 1 FROM likes l JOIN person x "
        "ON x.id = l.dst WHERE l.src = p.id AND x.age > 40)");
    /* a filter on the outer variable alone: null team is kept */
    compare(
        f,
        "query q() { match { $a: Person  not { $a.team = \"red\" } } return { $a.name, $a.team } }",
        "SELECT id, team FROM person WHERE NOT (team IS NOT NULL AND team = 'red')");
    /* two-hop reach minus the liked */
    rep_cte(cte, sizeof cte, "adj_out", 1, 2);
    snprintf(sql, sizeof sql,
             "%s SELECT s, n FROM rep WHERE NOT EXISTS "
             "(SELECT 1 FROM likes l WHERE l.src = rep.s AND l.dst = rep.n)",
             cte);
    assert_true(compare(f,
                        "query q() { match { $a: Person  $a knows{1,2} $c  not { $a likes $c } } "
                        "return { $a.name, $c.name } }",
                        sql) > 0);
    /* anti-join combined with an aggregate */
    compare(f,
            "query q() { match { $a: Person  not { $a likes $b } } "
            "return { $a.team, count($a) as n, sum($a.age) as s } }",
            "SELECT team, COUNT(*), COALESCE(SUM(age), 0) FROM person p WHERE NOT EXISTS "
            "(SELECT 1 FROM likes l WHERE l.src = p.id) GROUP BY team");
}

/* ---- aggregates --------------------------------------------------------------------------- */

static void check_aggregates(fixture *f)
{
    /* sum over no non-null values is 0 (not NULL), avg/min/max NULL, count counts non-nulls */
    assert_true(
        compare(
            f,
            "query q() { match { $a: Person } return { $a.team, count($a) as n, count($a.age) as "
            "na, "
            "sum($a.age) as s, sum($a.score) as fs, avg($a.score) as av, min($a.age) as mi, "
            "max($a.score) as mx, min($a.name) as first } }",
            "SELECT team, COUNT(*), COUNT(age), COALESCE(SUM(age), 0), COALESCE(SUM(score), 0.0), "
            "AVG(score), MIN(age), MAX(score), MIN(id) FROM person GROUP BY team") > 0);
    /* per source over one hop: each destination once (parallel edges collapse) */
    assert_true(
        compare(f,
                "query q() { match { $a: Person  $a knows $b } return { $a.name, count($b) as n, "
                "sum($b.age) as s, avg($b.score) as av, min($b.score) as mi, max($b.age) as mx } }",
                "SELECT k.src, COUNT(*), COALESCE(SUM(b.age), 0), AVG(b.score), MIN(b.score), "
                "MAX(b.age) "
                "FROM (SELECT DISTINCT src, dst FROM knows) k JOIN person b ON b.id = k.dst GROUP "
                "BY k.src") > 0);
    /* edge bindings: one row per edge, parallel edges distinct, self-loops once */
    assert_true(
        compare(
            f,
            "query q() { match { $a: Person  $a $e:knows $b } return { $a.name, count($b) as n, "
            "count($e.w) as nw, sum($e.w) as s, avg($e.w) as av, min($e.w) as mi, max($e.w) as mx "
            "} }",
            "SELECT src, COUNT(*), COUNT(w), COALESCE(SUM(w), 0), AVG(w), MIN(w), MAX(w) FROM "
            "knows "
            "GROUP BY src") > 0);
    compare(f,
            "query q() { match { $a: Person  $a $e:knows $b } return { $a.name, $b.name, $e.w } }",
            "SELECT src, dst, w FROM knows");
    /* global aggregates, over some rows and over none */
    compare(f,
            "query q() { match { $a: Person  $a.age > 50 } return { count($a) as n, sum($a.score) "
            "as s, "
            "avg($a.age) as av, min($a.name) as lo, max($a.name) as hi } }",
            "SELECT COUNT(*), COALESCE(SUM(score), 0.0), AVG(age), MIN(id), MAX(id) FROM person "
            "WHERE age > 50");
    compare(f,
            "query q() { match { $a: Person  $a.age > 1000 } return { count($a) as n, sum($a.age) "
            "as s, "
            "avg($a.score) as av, max($a.score) as mx } }",
            "SELECT COUNT(*), COALESCE(SUM(age), 0), AVG(score), MAX(score) FROM person WHERE age "
            "> 1000");
    /* two group keys across a different edge type */
    assert_true(
        compare(f,
                "query q() { match { $a: Person  $a likes $b } return { $a.team, $b.team, "
                "count($b) as n, "
                "max($b.name) as hi, sum($b.score) as s } }",
                "SELECT a.team, b.team, COUNT(*), MAX(b.id), COALESCE(SUM(b.score), 0.0) FROM "
                "(SELECT DISTINCT src, dst FROM likes) l JOIN person a ON a.id = l.src "
                "JOIN person b ON b.id = l.dst GROUP BY a.team, b.team") > 0);
}

/* ---- driver ------------------------------------------------------------------------------- */

static size_t g_total_queries, g_total_rows;

static void run_seed(uint64_t seed, void (*check)(fixture *))
{
    fixture *f = fx_open(seed);
    check(f);
    print_message("seed %llu: %zu nodes, %zu knows (self-loops and parallel copies over both edge "
                  "types: %zu, %zu), "
                  "%zu likes: %zu queries, %zu rows compared\n",
                  (unsigned long long)seed, f->g.n, f->g.n_knows, f->g.self_loops, f->g.parallel,
                  f->g.n_likes, f->queries, f->rows);
    g_total_queries += f->queries;
    g_total_rows += f->rows;
    fx_close(f);
}

static void test_traversals(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_SEEDS; i++)
        run_seed(SEEDS[i], check_traversals);
}

static void test_anti_joins(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_SEEDS; i++)
        run_seed(SEEDS[i], check_anti_joins);
}

static void test_aggregates(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_SEEDS; i++)
        run_seed(SEEDS[i], check_aggregates);
}

/* The harness itself must be able to fail: a deliberately wrong model is caught. */
static void test_harness_detects_differences(void **state)
{
    (void)state;
    fixture *f = fx_open(SEEDS[0]);
    rowset a = {0}, b = {0};
    rows_from_ours(f, "query q() { match { $a: Person  $a knows $b } return { $a.name, $b.name } }",
                   &a);
    /* walks instead of distinct destinations: differs whenever a parallel edge exists */
    rows_from_sql(f, "SELECT src, dst FROM knows", &b);
    assert_true(a.n < b.n);
    rs_free(&a);
    rs_free(&b);
    val x = {V_DBL, 0, 1.0, NULL}, y = {V_DBL, 0, 1.0 + 1e-8, NULL},
        z = {V_DBL, 0, 1.0 + 1e-12, NULL};
    assert_false(val_agree(&x, &y));
    assert_true(val_agree(&x, &z));
    fx_close(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_traversals),
        cmocka_unit_test(test_anti_joins),
        cmocka_unit_test(test_aggregates),
        cmocka_unit_test(test_harness_detects_differences),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    print_message("differential: %zu queries, %zu rows compared over %d seeds\n", g_total_queries,
                  g_total_rows, N_SEEDS);
    return rc;
}
