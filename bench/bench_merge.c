/* Branch merge against a full reload (issue 18 item 5): is a merge's cost the change's or the
 * graph's?
 *
 *   bench_merge DIR [--nodes N] [--edges E] [--change PCT] [--seed S]
 *
 * On one graph under DIR (public API, one warm handle; every step durable):
 *   base    N Person nodes (default 15,000) and E Knows edges (42,000) with explicit edge ids,
 *           loaded on main in one overwrite (not timed against anything: printed);
 *   reload  on branch "reload", the whole graph loaded again in overwrite mode with PCT% (5) of
 *           the persons and of the edges changed (new ages / new `since`), the way a user who
 *           regenerates an export and loads it whole would: every row is rewritten;
 *   main    meanwhile main changes other rows (PCT/5 % of the persons, a keyed merge load);
 *   merge   `reload` merged into main: a three-way merge (both moved).
 * Reported: the wall time of the reload's load and of the merge and their ratio (the goal is
 * merge / reload <= 1.0), the store operations, bytes read and written of each, and the rows
 * the merge's classification read and the rows it changed. Then the content check: main after
 * the merge holds the reload's changed rows and main's own changes. */
#define _POSIX_C_SOURCE 200809L
#include "api/graph_internal.h"
#include "core/clock.h"
#include "omnigraph.h"
#include "store/store.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char SCHEMA[] = "node Person {\n"
                             "  name: String @key\n"
                             "  age: I32\n"
                             "  city: String?\n"
                             "}\n"
                             "edge Knows: Person -> Person { since: I32? }\n";

static void die(const char *what)
{
    fprintf(stderr, "bench_merge: %s: %s\n", what, og_error_last()->message);
    exit(1);
}

typedef struct text {
    char *p;
    size_t len, cap;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        t->cap = t->cap ? 2 * t->cap : 1 << 20;
        t->p = realloc(t->p, t->cap);
        if (!t->p) exit(1);
    }
}

static uint64_t rng;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

typedef struct measure {
    double ms;
    store_counts ops;
} measure;

static void start(og_graph *g, store_counts *c0, uint64_t *t0)
{
    store_counts_get(g->h->s, c0);
    *t0 = core_mono_ns();
}

static void stop(og_graph *g, const store_counts *c0, uint64_t t0, measure *m)
{
    m->ms = (double)(core_mono_ns() - t0) / 1e6;
    store_counts c1;
    store_counts_get(g->h->s, &c1);
    store_counts_diff(&c1, c0, &m->ops);
}

static void load(og_graph *g, const char *branch, int mode, const text *t)
{
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = mode;
    lo.branch = branch;
    og_write_result *wr = NULL;
    if (og_graph_load(&wr, g, "bench.jsonl", t->p, t->len, &lo)) die("load");
    og_write_result_free(wr);
}

/* The graph as JSONL: ages and since values from `gen`; rows i with changed(i) get other ones. */
static void graph_text(text *t, size_t nodes, size_t edges, unsigned pct, bool change)
{
    t->len = 0;
    for (size_t i = 0; i < nodes; i++) {
        bool c = change && i % 100 < pct;
        put(t, "{\"type\":\"Person\",\"data\":{\"name\":\"p%zu\",\"age\":%u,\"city\":\"c%zu\"}}\n",
            i, (unsigned)(i % 90) + (c ? 100u : 0u), i % 50);
    }
    uint64_t saved = rng;
    for (size_t i = 0; i < edges; i++) {
        bool c = change && i % 100 < pct;
        size_t a = (size_t)(next() % nodes), b = (size_t)(next() % nodes);
        put(t,
            "{\"edge\":\"Knows\",\"from\":\"p%zu\",\"to\":\"p%zu\",\"data\":{\"id\":\"k%zu\","
            "\"since\":%u}}\n",
            a, b, i, (unsigned)(i % 30) + (c ? 2000u : 1990u));
    }
    rng = saved; /* the same endpoints every time */
}

static void print_measure(const char *what, const measure *m)
{
    printf("%-28s %9.1f ms  %7llu store ops  %9.1f KiB read  %9.1f KiB written\n", what, m->ms,
           (unsigned long long)m->ops.total_ops, (double)m->ops.bytes_read / 1024.0,
           (double)m->ops.bytes_written / 1024.0);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr,
                "usage: bench_merge DIR [--nodes N] [--edges E] [--change PCT] [--seed S]\n");
        return 2;
    }
    size_t nodes = 15000, edges = 42000;
    unsigned pct = 5;
    rng = 42;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--nodes")) nodes = strtoul(argv[i + 1], NULL, 10);
        if (!strcmp(argv[i], "--edges")) edges = strtoul(argv[i + 1], NULL, 10);
        if (!strcmp(argv[i], "--change")) pct = (unsigned)strtoul(argv[i + 1], NULL, 10);
        if (!strcmp(argv[i], "--seed")) rng = strtoull(argv[i + 1], NULL, 10);
    }
    if (!rng) rng = 42;
    char root[4096];
    snprintf(root, sizeof root, "%s/merge.omni", argv[1]);
    og_init_options io = OG_INIT_OPTIONS_INIT;
    io.schema_source = SCHEMA;
    og_init_result *ir = NULL;
    if (og_root_init(&ir, root, &io)) die("init");
    og_init_result_free(ir);
    og_graph *g = NULL;
    og_open_options oo = OG_OPEN_OPTIONS_INIT;
    if (og_graph_open(&g, root, &oo)) die("open");

    text t = {0};
    measure base, reload, mainw, merge;
    store_counts c0;
    uint64_t t0;
    graph_text(&t, nodes, edges, pct, false);
    start(g, &c0, &t0);
    load(g, NULL, OG_LOAD_OVERWRITE, &t);
    stop(g, &c0, t0, &base);
    if (og_graph_create_branch(NULL, g, "reload", NULL)) die("branch");

    graph_text(&t, nodes, edges, pct, true);
    start(g, &c0, &t0);
    load(g, "reload", OG_LOAD_OVERWRITE, &t);
    stop(g, &c0, t0, &reload);

    /* main's own changes: other persons (the last ones of each hundred) get a new city */
    t.len = 0;
    unsigned main_pct = pct / 5 ? pct / 5 : 1;
    for (size_t i = 0; i < nodes; i++)
        if (i % 100 >= 100 - main_pct)
            put(&t,
                "{\"type\":\"Person\",\"data\":{\"name\":\"p%zu\",\"age\":%u,\"city\":\"m\"}}\n", i,
                (unsigned)(i % 90));
    start(g, &c0, &t0);
    load(g, NULL, OG_LOAD_MERGE, &t);
    stop(g, &c0, t0, &mainw);

    og_merge_result *r = NULL;
    start(g, &c0, &t0);
    int rc = og_graph_merge(
        &r, g, &(og_merge_options){.version = OG_MERGE_OPTIONS_VERSION, .source = "reload"});
    stop(g, &c0, t0, &merge);
    if (rc) die("merge");

    printf("graph: %zu persons, %zu edges; the reload changed %u%% of each, main %u%% of the "
           "persons\n",
           nodes, edges, pct, main_pct);
    print_measure("base load (main)", &base);
    print_measure("full reload (branch)", &reload);
    print_measure("main's own change", &mainw);
    print_measure("merge reload -> main", &merge);
    printf("merge outcome %s: %llu rows read by the classification, %llu rows changed, %zu "
           "types written\n",
           og_merge_outcome_name(r->outcome), (unsigned long long)r->rows_read,
           (unsigned long long)r->rows_changed, r->types_changed);
    printf("ratio merge / reload: time %.2f (goal <= 1.0), store ops %.2f, bytes written %.2f\n",
           merge.ms / reload.ms, (double)merge.ops.total_ops / (double)reload.ops.total_ops,
           (double)merge.ops.bytes_written / (double)(reload.ops.bytes_written + 1));
    og_merge_result_free(r);

    /* the content check: a changed person of the reload and one of main */
    og_query_options qo = OG_QUERY_OPTIONS_INIT;
    qo.source =
        "query p($n: String) { match { $p: Person { name: $n } } return { $p.age, $p.city } }";
    qo.params_json = "{\"n\":\"p0\"}";
    og_result *q = NULL;
    if (og_graph_query(&q, g, &qo)) die("query");
    og_value v;
    if (og_result_value(&v, q, 0, 0) || v.i != 100) {
        fprintf(stderr, "bench_merge: p0 should have the reload's age 100\n");
        return 1;
    }
    og_result_free(q);
    char params[64];
    snprintf(params, sizeof params, "{\"n\":\"p%u\"}", 99u);
    qo.params_json = params;
    if (og_graph_query(&q, g, &qo)) die("query");
    if (og_result_value(&v, q, 0, 1) || !v.str || strncmp(v.str, "m", v.len) != 0) {
        fprintf(stderr, "bench_merge: p99 should have main's city\n");
        return 1;
    }
    og_result_free(q);
    printf("content check: ok\n");
    og_graph_close(g);
    free(t.p);
    return 0;
}
