/* Graph benchmark, our side and SQLite's side of bench/run_graph.sh (issue 7 item 8): bulk
 * load of a random Person/Knows graph and the two-hop neighbourhood of random nodes on a warm
 * handle, with the input files the Kuzu peer (bench/graph_peer_kuzu.cjs) reads.
 *
 *   bench_graph DIR [--nodes N] [--edges E] [--queries Q] [--seed S] [--json FILE]
 *
 * Everything lives under DIR (one filesystem for every system):
 *   gen     (not timed) N Person nodes (name "p<i>" as the @key, age, city; every 7th city
 *           null) and E Knows edges with endpoints drawn by xorshift64 (seed S, default 42;
 *           parallel edges and self-loops happen as they fall), written as graph.jsonl for us,
 *           nodes.csv / edges.csv for the peers, and sources.txt: Q (default 1,000) random
 *           source node indices every system queries in the same order.
 *   load    ours: read graph.jsonl, exec_load (mode overwrite: parse in chunks, validation
 *           incl. referential integrity, Lance writes, durable graph commit; adapter LOAD),
 *           i.e. `omnigraph load --mode overwrite` without the process start. The graph is
 *           initialised (write_init) and opened before the clock starts.
 *           sqlite: WAL, synchronous=FULL, one transaction: parse the CSVs, prepared inserts
 *           into nodes(id INTEGER PRIMARY KEY, name, age, city) and edges(src, dst), then the
 *           indexes edges(src, dst) and edges(dst), COMMIT (indexes after the rows: the faster
 *           order, see perf-anchors.md 2.2); the WAL checkpoint is reported apart.
 *   hop2    after 20 untimed warm-up queries, Q queries, each timed alone:
 *           ours  `$a: Person { name: $n }  $a knows{1,2} $c` return count($c)  (<= 2 hops)
 *                 `... knows{2,2} ...` (exactly two hops, shortest distance 2)
 *                 each: params object from JSON + exec_query_run on the warm cache + read
 *                 the count; store operations over all timed queries are counted.
 *           sqlite the recursive CTE of depth <= 2 (COUNT DISTINCT, source excluded) and the
 *                 indexed self-join COUNT(DISTINCT e2.dst) (perf-anchors.md B4's anchor),
 *                 by integer node id.
 *           The semantics differ at the edges (our BFS never reports the source except
 *           through a self-loop and reports a node at its shortest distance only; the join
 *           counts every walk of length two), so average counts are printed for each.
 *
 * Prints a table on stdout; --json FILE writes the figures (ms / us) for run_graph.sh. */
#define _POSIX_C_SOURCE 200809L
#include "core/clock.h"
#include "core/json.h"
#include "exec/load.h"
#include "exec/query.h"
#include "exec/request.h"
#include "graph/graph.h"
#include "lang/ir.h"
#include "omnigraph.h"
#include "store/store.h"
#include "write/write.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define WARMUP 20

static const char SCHEMA[] = "node Person {\n"
                             "  name: String @key\n"
                             "  age: I32\n"
                             "  city: String?\n"
                             "}\n"
                             "edge Knows: Person -> Person\n";

static const char QUERIES[] = "query reach2($n: String) {\n"
                              "  match { $a: Person { name: $n }  $a knows{1,2} $c }\n"
                              "  return { count($c) as n }\n"
                              "}\n"
                              "query exact2($n: String) {\n"
                              "  match { $a: Person { name: $n }  $a knows{2,2} $c }\n"
                              "  return { count($c) as n }\n"
                              "}\n";

static const char *const CITIES[] = {"berlin", "lisbon", "osaka", "lima", "oslo", "quito"};

static void die(const char *what)
{
    fprintf(stderr, "bench_graph: %s: %s\n", what, og_error_last()->message);
    exit(1);
}

static void die_sql(sqlite3 *db, const char *what)
{
    fprintf(stderr, "bench_graph: sqlite %s: %s\n", what, db ? sqlite3_errmsg(db) : "?");
    exit(1);
}

static void die_io(const char *what, const char *path)
{
    fprintf(stderr, "bench_graph: %s %s: %s\n", what, path, strerror(errno));
    exit(1);
}

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz);
    if (!p) {
        fprintf(stderr, "bench_graph: out of memory\n");
        exit(1);
    }
    return p;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Percentile q (0..1) of n samples, nearest rank; sorts v. */
static double pct(double *v, size_t n, double q)
{
    qsort(v, n, sizeof *v, cmpd);
    size_t k = (size_t)(q * (double)n + 0.999999);
    if (k < 1) k = 1;
    if (k > n) k = n;
    return v[k - 1];
}

static double ms_since(uint64_t t0)
{
    return (double)(core_mono_ns() - t0) / 1e6;
}

/* CPU time of the process (every thread), ms: the figure that survives a loaded machine. */
static double cpu_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

typedef struct graph_data {
    size_t n, e, q;
    uint32_t *src, *dst; /* edges */
    uint32_t *sources;   /* query sources */
} graph_data;

static FILE *open_w(const char *dir, const char *name)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f) die_io("cannot create", p);
    return f;
}

static void close_w(FILE *f, const char *name)
{
    if (ferror(f) || fclose(f)) die_io("cannot write", name);
}

/* The node's nullable city: every 7th is null. */
static const char *city_of(size_t i)
{
    return i % 7 == 3 ? NULL : CITIES[i % (sizeof CITIES / sizeof *CITIES)];
}

static void generate(graph_data *g, const char *dir, uint64_t seed)
{
    g->src = xcalloc(g->e, sizeof *g->src);
    g->dst = xcalloc(g->e, sizeof *g->dst);
    g->sources = xcalloc(g->q, sizeof *g->sources);
    rng_state = seed ? seed : 42;
    for (size_t i = 0; i < g->e; i++) {
        g->src[i] = (uint32_t)(rnd() % g->n);
        g->dst[i] = (uint32_t)(rnd() % g->n);
    }
    for (size_t i = 0; i < g->q; i++)
        g->sources[i] = (uint32_t)(rnd() % g->n);

    FILE *j = open_w(dir, "graph.jsonl"), *nc = open_w(dir, "nodes.csv"),
         *ec = open_w(dir, "edges.csv"), *sc = open_w(dir, "sources.txt");
    for (size_t i = 0; i < g->n; i++) {
        const char *c = city_of(i);
        int age = 18 + (int)(i % 80);
        if (c)
            fprintf(
                j,
                "{\"type\":\"Person\",\"data\":{\"name\":\"p%zu\",\"age\":%d,\"city\":\"%s\"}}\n",
                i, age, c);
        else
            fprintf(j,
                    "{\"type\":\"Person\",\"data\":{\"name\":\"p%zu\",\"age\":%d,\"city\":null}}\n",
                    i, age);
        /* Kuzu/SQLite: an empty field is NULL. */
        fprintf(nc, "%zu,p%zu,%d,%s\n", i, i, age, c ? c : "");
    }
    for (size_t i = 0; i < g->e; i++) {
        fprintf(j, "{\"edge\":\"Knows\",\"from\":\"p%u\",\"to\":\"p%u\"}\n", g->src[i], g->dst[i]);
        fprintf(ec, "%u,%u\n", g->src[i], g->dst[i]);
    }
    for (size_t i = 0; i < g->q; i++)
        fprintf(sc, "%u\n", g->sources[i]);
    close_w(j, "graph.jsonl");
    close_w(nc, "nodes.csv");
    close_w(ec, "edges.csv");
    close_w(sc, "sources.txt");
}

static char *read_file(const char *dir, const char *name, size_t *len)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "rb");
    if (!f) die_io("cannot open", p);
    struct stat st;
    if (fstat(fileno(f), &st)) die_io("cannot stat", p);
    char *b = xcalloc((size_t)st.st_size + 1, 1);
    if (fread(b, 1, (size_t)st.st_size, f) != (size_t)st.st_size) die_io("cannot read", p);
    fclose(f);
    *len = (size_t)st.st_size;
    return b;
}

/* ---- ours ------------------------------------------------------------------------------------ */

typedef struct results {
    double load_ms, load_parse_ms, load_write_ms, load_cpu_ms, sq_load_cpu_ms;
    double sq_load_ms, sq_nodes_ms, sq_edges_ms, sq_index_ms, sq_commit_ms, sq_ckpt_ms;
    double first_query_ms;
    double reach_p50, reach_p99, reach_avg;    /* ours knows{1,2} */
    double exact_p50, exact_p99, exact_avg;    /* ours knows{2,2} */
    double sq_cte_p50, sq_cte_p99, sq_cte_avg; /* sqlite <= 2 hops */
    double sq_join_p50, sq_join_p99, sq_join_avg;
    store_counts query_ops; /* over all timed queries of ours */
    uint64_t db_bytes_ours;
} results;

static uint64_t count_of(const exec_result *r)
{
    const arrow_array *a = NULL;
    int64_t idx = 0;
    if (exec_result_n_rows(r) != 1 || exec_result_cell(r, 0, 0, &a, &idx)) die("reading the count");
    return (uint64_t)arrow_array_get_int(a, idx);
}

/* One query: params from JSON, run on the warm cache, read the count. */
static uint64_t run_one(const lang_catalog *cat, const graph_snapshot *snap, store *s,
                        const lang_ir_query *q, exec_cache *cache, uint32_t node)
{
    char name[32];
    snprintf(name, sizeof name, "p%u", node);
    json_t *pj = json_object();
    if (!pj || json_object_set_new(pj, "n", json_string(name))) die("params");
    exec_params *p = NULL;
    if (exec_params_from_json(&p, q, pj)) die("params");
    exec_result *r = NULL;
    if (exec_query_run(&r, cat, snap, s, q, p, cache)) die("query");
    uint64_t n = count_of(r);
    exec_result_free(r);
    exec_params_free(p);
    json_decref(pj);
    return n;
}

static void time_queries(const lang_catalog *cat, const graph_snapshot *snap, store *s,
                         const lang_ir_query *q, exec_cache *cache, const graph_data *g,
                         double *p50, double *p99, double *avg, store_counts *ops)
{
    double *v = xcalloc(g->q, sizeof *v);
    for (size_t i = 0; i < WARMUP && i < g->q; i++)
        run_one(cat, snap, s, q, cache, g->sources[i]);
    store_counts before, after, d;
    store_counts_get(s, &before);
    uint64_t total = 0;
    for (size_t i = 0; i < g->q; i++) {
        uint64_t t0 = core_mono_ns();
        total += run_one(cat, snap, s, q, cache, g->sources[i]);
        v[i] = (double)(core_mono_ns() - t0) / 1e3;
    }
    store_counts_get(s, &after);
    store_counts_diff(&after, &before, &d);
    for (size_t k = 0; k < STORE_OP_KIND_COUNT; k++)
        ops->ops[k] += d.ops[k];
    ops->total_ops += d.total_ops;
    ops->bytes_read += d.bytes_read;
    *avg = (double)total / (double)g->q;
    *p99 = pct(v, g->q, 0.99);
    *p50 = pct(v, g->q, 0.50);
    free(v);
}

/* The load's write phase began: every line is read (the parse time ends here). */
static void on_load_phase(void *arg, int phase, uint64_t done, uint64_t total, uint64_t lines)
{
    (void)done;
    (void)total;
    (void)lines;
    if (phase == EXEC_LOAD_PHASE_WRITE) *(uint64_t *)arg = core_mono_ns();
}

static void run_ours(const char *dir, const graph_data *g, results *res)
{
    char root[4096];
    snprintf(root, sizeof root, "%s/og", dir);
    store *s = NULL;
    if (store_local_open(&s, root)) die("store");
    write_init_result ir;
    if (write_init(s, SCHEMA, strlen(SCHEMA), "bench.pg", &ir)) die("init");
    store_close(s);
    s = NULL;
    if (store_local_open(&s, root)) die("store");
    write_graph *wg = NULL;
    write_open_options oo = WRITE_OPEN_OPTIONS_INIT;
    if (write_graph_open(&wg, s, root, &oo)) die("open");

    /* load: read + parse + validate + durable commit */
    double c0 = cpu_ms();
    uint64_t t0 = core_mono_ns();
    size_t len = 0;
    char *data = read_file(dir, "graph.jsonl", &len);
    /* the load request, as `omnigraph load` runs it (in chunks when the file is larger than
     * one); its parse phase ends where the write phase is announced */
    uint64_t t1 = 0;
    exec_load_request req = {data, len, "graph.jsonl", EXEC_LOAD_OVERWRITE, on_load_phase, &t1};
    exec_load_result lr;
    if (exec_load(&lr, wg, &req, NULL)) die("load");
    if (!t1) t1 = core_mono_ns();
    res->load_parse_ms = (double)(t1 - t0) / 1e6;
    res->load_write_ms = ms_since(t1);
    res->load_ms = ms_since(t0);
    res->load_cpu_ms = cpu_ms() - c0;
    free(data);
    if (!lr.write.committed || lr.stats.nodes != g->n || lr.stats.edges != g->e) {
        fprintf(stderr, "bench_graph: load committed=%d nodes=%llu edges=%llu\n",
                lr.write.committed, (unsigned long long)lr.stats.nodes,
                (unsigned long long)lr.stats.edges);
        exit(1);
    }

    /* warm handle: one snapshot, one compiled query set, one cache */
    graph_snapshot *snap = NULL;
    if (graph_snapshot_load(&snap, wg->h->s, NULL, 0, 0)) die("snapshot");
    lang_diags d;
    core_arena a;
    core_arena_init(&a, 0);
    lang_diags_init(&d, &a);
    lang_query_set *qs = NULL;
    if (lang_query_set_build(&qs, wg->h->catalog, QUERIES, strlen(QUERIES), "bench.gq", &d))
        die("queries");
    int qi_reach = lang_query_set_find(qs, "reach2"), qi_exact = lang_query_set_find(qs, "exact2");
    if (qi_reach < 0 || qi_exact < 0) die("query lookup");
    exec_cache *cache = NULL;
    if (exec_cache_new(&cache)) die("cache");
    uint64_t tq = core_mono_ns();
    run_one(wg->h->catalog, snap, wg->h->s, &qs->queries[qi_reach], cache, g->sources[0]);
    res->first_query_ms = ms_since(tq); /* cold: loads the id dictionary and builds the CSR */
    memset(&res->query_ops, 0, sizeof res->query_ops);
    time_queries(wg->h->catalog, snap, wg->h->s, &qs->queries[qi_reach], cache, g, &res->reach_p50,
                 &res->reach_p99, &res->reach_avg, &res->query_ops);
    time_queries(wg->h->catalog, snap, wg->h->s, &qs->queries[qi_exact], cache, g, &res->exact_p50,
                 &res->exact_p99, &res->exact_avg, &res->query_ops);
    exec_cache_free(cache);
    lang_query_set_free(qs);
    core_arena_free(&a);
    graph_snapshot_free(snap);
    write_graph_close(wg);
}

/* ---- sqlite ---------------------------------------------------------------------------------- */

static void sq_exec(sqlite3 *db, const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "bench_graph: sqlite %s: %s\n", sql, err ? err : "?");
        exit(1);
    }
}

static sqlite3_stmt *sq_prep(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) die_sql(db, sql);
    return st;
}

static void sq_step_done(sqlite3 *db, sqlite3_stmt *st)
{
    if (sqlite3_step(st) != SQLITE_DONE) die_sql(db, "step");
    sqlite3_reset(st);
}

/* Next CSV field of a line (no quoting in our files); *p moves past the separator. */
static const char *csv_field(const char **p, const char *end, size_t *len)
{
    const char *b = *p, *e = b;
    while (e < end && *e != ',' && *e != '\n')
        e++;
    *len = (size_t)(e - b);
    *p = e < end ? e + 1 : e;
    return b;
}

static void run_sqlite(const char *dir, const graph_data *g, results *res)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/sqlite.db", dir);
    sqlite3 *db = NULL;
    if (sqlite3_open(path, &db) != SQLITE_OK) die_sql(db, "open");
    sq_exec(db, "PRAGMA journal_mode=WAL");
    sq_exec(db, "PRAGMA synchronous=FULL");
    sq_exec(db,
            "CREATE TABLE nodes(id INTEGER PRIMARY KEY, name TEXT NOT NULL, age INT, city TEXT)");
    sq_exec(db, "CREATE TABLE edges(src INTEGER NOT NULL, dst INTEGER NOT NULL)");

    double c0 = cpu_ms();
    uint64_t t0 = core_mono_ns();
    sq_exec(db, "BEGIN");
    size_t len = 0;
    char *nodes = read_file(dir, "nodes.csv", &len);
    const char *p = nodes, *end = nodes + len;
    sqlite3_stmt *ins = sq_prep(db, "INSERT INTO nodes VALUES(?,?,?,?)");
    while (p < end) {
        size_t l0, l1, l2, l3;
        const char *f0 = csv_field(&p, end, &l0), *f1 = csv_field(&p, end, &l1);
        const char *f2 = csv_field(&p, end, &l2), *f3 = csv_field(&p, end, &l3);
        (void)l0;
        (void)l2;
        sqlite3_bind_int64(ins, 1, strtoll(f0, NULL, 10));
        sqlite3_bind_text(ins, 2, f1, (int)l1, SQLITE_STATIC);
        sqlite3_bind_int(ins, 3, (int)strtol(f2, NULL, 10));
        if (l3)
            sqlite3_bind_text(ins, 4, f3, (int)l3, SQLITE_STATIC);
        else
            sqlite3_bind_null(ins, 4);
        sq_step_done(db, ins);
    }
    sqlite3_finalize(ins);
    free(nodes);
    uint64_t t1 = core_mono_ns();
    char *edges = read_file(dir, "edges.csv", &len);
    p = edges;
    end = edges + len;
    ins = sq_prep(db, "INSERT INTO edges VALUES(?,?)");
    while (p < end) {
        char *e = NULL;
        long long s = strtoll(p, &e, 10);
        long long t = strtoll(e + 1, &e, 10);
        p = e + 1;
        sqlite3_bind_int64(ins, 1, s);
        sqlite3_bind_int64(ins, 2, t);
        sq_step_done(db, ins);
    }
    sqlite3_finalize(ins);
    free(edges);
    uint64_t t2 = core_mono_ns();
    sq_exec(db, "CREATE INDEX e_src ON edges(src, dst)");
    sq_exec(db, "CREATE INDEX e_dst ON edges(dst)");
    uint64_t t3 = core_mono_ns();
    sq_exec(db, "COMMIT");
    uint64_t t4 = core_mono_ns();
    res->sq_load_cpu_ms = cpu_ms() - c0;
    sq_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
    res->sq_ckpt_ms = ms_since(t4);
    res->sq_nodes_ms = (double)(t1 - t0) / 1e6;
    res->sq_edges_ms = (double)(t2 - t1) / 1e6;
    res->sq_index_ms = (double)(t3 - t2) / 1e6;
    res->sq_commit_ms = (double)(t4 - t3) / 1e6;
    res->sq_load_ms = (double)(t4 - t0) / 1e6;

    static const char *const SQL[2] = {
        /* <= 2 hops, distinct; the source counts when a walk returns to it (like Kuzu's
         * *1..2, unlike our rule): a handful of nodes in a random graph */
        "WITH RECURSIVE r(n, d) AS (SELECT ?1, 0 UNION SELECT e.dst, r.d + 1 FROM r "
        "JOIN edges e ON e.src = r.n WHERE r.d < 2) SELECT COUNT(DISTINCT n) FROM r WHERE d > 0",
        "SELECT COUNT(DISTINCT e2.dst) FROM edges e1 JOIN edges e2 ON e2.src = e1.dst "
        "WHERE e1.src = ?1",
    };
    double *p50s[2] = {&res->sq_cte_p50, &res->sq_join_p50},
           *p99s[2] = {&res->sq_cte_p99, &res->sq_join_p99},
           *avgs[2] = {&res->sq_cte_avg, &res->sq_join_avg};
    double *v = xcalloc(g->q, sizeof *v);
    for (int k = 0; k < 2; k++) {
        sqlite3_stmt *st = sq_prep(db, SQL[k]);
        uint64_t total = 0;
        for (size_t i = 0; i < g->q + WARMUP; i++) {
            uint32_t node = i < WARMUP ? g->sources[i % g->q] : g->sources[i - WARMUP];
            uint64_t q0 = core_mono_ns();
            sqlite3_bind_int64(st, 1, node);
            if (sqlite3_step(st) != SQLITE_ROW) die_sql(db, "query");
            int64_t n = sqlite3_column_int64(st, 0);
            sqlite3_reset(st);
            double us = (double)(core_mono_ns() - q0) / 1e3;
            if (i >= WARMUP) {
                v[i - WARMUP] = us;
                total += (uint64_t)n;
            }
        }
        sqlite3_finalize(st);
        *avgs[k] = (double)total / (double)g->q;
        *p99s[k] = pct(v, g->q, 0.99);
        *p50s[k] = pct(v, g->q, 0.50);
    }
    free(v);
    sqlite3_close(db);
}

/* ---- main ------------------------------------------------------------------------------------ */

static uint64_t du(const char *path)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "du -sb '%s' 2>/dev/null", path);
    FILE *f = popen(cmd, "r");
    unsigned long long b = 0;
    if (f) {
        if (fscanf(f, "%llu", &b) != 1) b = 0;
        pclose(f);
    }
    return b;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-') {
        /* DIR first: an option there (--help) would otherwise become a directory */
        fprintf(stderr, "usage: bench_graph DIR [--nodes N] [--edges E] [--queries Q] "
                        "[--seed S] [--json FILE]\n");
        return 2;
    }
    const char *dir = argv[1], *json_path = NULL;
    graph_data g = {100000, 500000, 1000, NULL, NULL, NULL};
    uint64_t seed = 42;
    for (int i = 2; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "bench_graph: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--nodes"))
            g.n = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--edges"))
            g.e = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--queries"))
            g.q = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--seed"))
            seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--json"))
            json_path = v;
        else {
            fprintf(stderr, "bench_graph: unknown option %s\n", a);
            return 2;
        }
    }
    if (g.n < 1 || g.q < 1) {
        fprintf(stderr, "bench_graph: --nodes and --queries must be >= 1\n");
        return 2;
    }
    if (mkdir(dir, 0755) && errno != EEXIST) die_io("cannot create", dir);

    uint64_t tg = core_mono_ns();
    generate(&g, dir, seed);
    printf("generated %zu nodes, %zu edges, %zu sources in %.0f ms (not timed)\n", g.n, g.e, g.q,
           ms_since(tg));
    results r;
    memset(&r, 0, sizeof r);
    run_ours(dir, &g, &r);
    char root[4096];
    snprintf(root, sizeof root, "%s/og", dir);
    r.db_bytes_ours = du(root);
    run_sqlite(dir, &g, &r);

    printf("load ours   (read+parse %.0f ms, validate+write+commit %.0f ms) TOTAL %.0f ms, cpu "
           "%.0f ms, "
           "%.1f MB on disk\n",
           r.load_parse_ms, r.load_write_ms, r.load_ms, r.load_cpu_ms,
           (double)r.db_bytes_ours / 1e6);
    printf("load sqlite (nodes %.0f, edges %.0f, index %.0f, commit %.0f ms) TOTAL %.0f ms, cpu "
           "%.0f ms "
           "(+ checkpoint %.0f ms)\n",
           r.sq_nodes_ms, r.sq_edges_ms, r.sq_index_ms, r.sq_commit_ms, r.sq_load_ms,
           r.sq_load_cpu_ms, r.sq_ckpt_ms);
    printf("ours first query (cold cache: ids + CSR) %.1f ms\n", r.first_query_ms);
    printf("%-44s %9s %9s %9s\n", "two-hop from a random node (us)", "p50", "p99", "avg count");
    printf("%-44s %9.1f %9.1f %9.1f\n", "ours knows{1,2} (<= 2 hops)", r.reach_p50, r.reach_p99,
           r.reach_avg);
    printf("%-44s %9.1f %9.1f %9.1f\n", "ours knows{2,2} (exactly 2)", r.exact_p50, r.exact_p99,
           r.exact_avg);
    printf("%-44s %9.1f %9.1f %9.1f\n", "sqlite recursive CTE <= 2", r.sq_cte_p50, r.sq_cte_p99,
           r.sq_cte_avg);
    printf("%-44s %9.1f %9.1f %9.1f\n", "sqlite join COUNT(DISTINCT e2.dst)", r.sq_join_p50,
           r.sq_join_p99, r.sq_join_avg);
    printf("ours store ops over %zu timed queries: %llu (bytes read %llu)\n", 2 * g.q,
           (unsigned long long)r.query_ops.total_ops, (unsigned long long)r.query_ops.bytes_read);

    if (json_path) {
        FILE *f = fopen(json_path, "w");
        if (!f) die_io("cannot create", json_path);
        fprintf(f,
                "{\"nodes\":%zu,\"edges\":%zu,\"queries\":%zu,"
                "\"ours_load_ms\":%.3f,\"ours_load_cpu_ms\":%.3f,\"sqlite_load_cpu_ms\":%.3f,"
                "\"ours_parse_ms\":%.3f,\"ours_write_ms\":%.3f,"
                "\"ours_bytes\":%llu,\"sqlite_load_ms\":%.3f,\"sqlite_ckpt_ms\":%.3f,"
                "\"ours_first_query_ms\":%.3f,"
                "\"ours_reach_p50_us\":%.3f,\"ours_reach_p99_us\":%.3f,\"ours_reach_avg\":%.3f,"
                "\"ours_exact_p50_us\":%.3f,\"ours_exact_p99_us\":%.3f,\"ours_exact_avg\":%.3f,"
                "\"sqlite_cte_p50_us\":%.3f,\"sqlite_cte_p99_us\":%.3f,\"sqlite_cte_avg\":%.3f,"
                "\"sqlite_join_p50_us\":%.3f,\"sqlite_join_p99_us\":%.3f,\"sqlite_join_avg\":%.3f,"
                "\"ours_query_store_ops\":%llu}\n",
                g.n, g.e, g.q, r.load_ms, r.load_cpu_ms, r.sq_load_cpu_ms, r.load_parse_ms,
                r.load_write_ms, (unsigned long long)r.db_bytes_ours, r.sq_load_ms, r.sq_ckpt_ms,
                r.first_query_ms, r.reach_p50, r.reach_p99, r.reach_avg, r.exact_p50, r.exact_p99,
                r.exact_avg, r.sq_cte_p50, r.sq_cte_p99, r.sq_cte_avg, r.sq_join_p50, r.sq_join_p99,
                r.sq_join_avg, (unsigned long long)r.query_ops.total_ops);
        if (fclose(f)) die_io("cannot write", json_path);
    }
    free(g.src);
    free(g.dst);
    free(g.sources);
    return 0;
}
