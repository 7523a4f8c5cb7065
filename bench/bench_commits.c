/* Single-row commit benchmark, our side of bench/run_commits.sh (issue 4 item 8).
 *
 *   bench_commits DIR [--commits N] [--depth D] [--frags-depth D2] [--window W]
 *                     [--stable-row-ids 0|1] [--no-depth] [--no-commits] [--json FILE]
 *
 * --stable-row-ids (default 1, our tables' default): the tables track stable row ids, so each
 * fragment carries a row-id sequence and created/updated version metadata. run_commits.sh gives
 * lancedb the same setting.
 *
 * All files go under DIR (same filesystem for every system measured):
 *   commits  N (default 1,000) sequential single-row durable commits on a fresh Lance table
 *            (2.0 files): each is a full lance_stage_append + lance_staged_commit, and the
 *            snapshot the commit returns is the base of the next one (no re-open, no re-read).
 *            Latency p50/p99, and per commit the store operations by kind, fsyncs and bytes
 *            written (store_counts around each commit).
 *   sqlite   N single-row INSERT transactions (autocommit, prepared statement) into a WAL
 *            database with synchronous=FULL, in DIR too, alternating one for one with ours (so
 *            both see the same disk and machine load). Latency p50/p99.
 *   floor    F: p50 of 200 x (4 KiB pwrite in place + fdatasync) in DIR, the disk's floor.
 *   depth    commit latency and per-commit store operations at history depth 10 and at depth
 *            D (default 10,000): one table is grown to version 10, another to version D, then
 *            W (default 100) single-row commits alternate between them (so both see the same
 *            machine load). Two kinds of table:
 *              hist   history only: the versions are built as append/delete pairs, so the
 *                     table keeps few fragments while its version count grows;
 *              frags  history and fragments: single-row appends (one fragment each, as a
 *                     lancedb table after D `add`s), so the manifest grows with the depth;
 *                     grown to D2 (--frags-depth, default D).
 *            Store operation counts must be equal at both depths (no listing or reading of the
 *            versions per commit); the time to build the deep history is printed.
 *
 * Prints tables on stdout; --json FILE also writes one JSON object with the figures
 * (microseconds) for run_commits.sh. The row is (id int64, name utf8, age int32), like the peer's
 * in bench/commits_peer.cjs; building the one-row batch is not timed on either side. */
#define _POSIX_C_SOURCE 200809L
#include "arrow/arrow.h"
#include "core/clock.h"
#include "lance/dataset.h"
#include "omnigraph.h"
#include "store/store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void die(const char *what)
{
    fprintf(stderr, "bench_commits: %s: %s\n", what, og_error_last()->message);
    exit(1);
}

static void die_sql(sqlite3 *db, const char *what)
{
    fprintf(stderr, "bench_commits: sqlite %s: %s\n", what, db ? sqlite3_errmsg(db) : "?");
    exit(1);
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

static double *alloc_d(size_t n)
{
    double *v = calloc(n ? n : 1, sizeof *v);
    if (!v) {
        fprintf(stderr, "bench_commits: out of memory\n");
        exit(1);
    }
    return v;
}

/* ---- rows --------------------------------------------------------------------------------- */

static void row_schema(arrow_schema *s)
{
    arrow_schema_init(s);
    arrow_field f[3] = {{(char *)"id", false, arrow_type_simple(ARROW_INT64)},
                        {(char *)"name", false, arrow_type_simple(ARROW_UTF8)},
                        {(char *)"age", false, arrow_type_simple(ARROW_INT32)}};
    for (int k = 0; k < 3; k++)
        if (arrow_schema_add(s, &f[k])) die("schema");
}

static arrow_batch *one_row(int64_t id)
{
    arrow_schema s;
    row_schema(&s);
    arrow_builder *b[3];
    arrow_array *a[3];
    for (int k = 0; k < 3; k++)
        if (arrow_builder_new(&b[k], &s.fields[k].type)) die("builder");
    char name[32];
    snprintf(name, sizeof name, "n%lld", (long long)id);
    if (arrow_builder_append_int(b[0], id) || arrow_builder_append_str(b[1], name) ||
        arrow_builder_append_int(b[2], 30))
        die("append value");
    for (int k = 0; k < 3; k++) {
        if (arrow_builder_finish(b[k], &a[k])) die("finish");
        arrow_builder_free(b[k]);
    }
    arrow_batch *out;
    if (arrow_batch_new(&out, &s, a, 3)) die("batch");
    for (int k = 0; k < 3; k++)
        arrow_array_free(a[k]);
    arrow_schema_clear(&s);
    return out;
}

/* ---- our commits -------------------------------------------------------------------------- */

/* Per-commit figures over a series of commits. */
typedef struct series {
    double *lat_us;
    size_t n, cap;
    store_counts sum;
    uint64_t op_min[STORE_OP_KIND_COUNT], op_max[STORE_OP_KIND_COUNT];
    uint64_t fsync_min, fsync_max;
} series;

static void series_init(series *s, size_t cap)
{
    memset(s, 0, sizeof *s);
    s->lat_us = alloc_d(cap);
    s->cap = cap;
    for (int k = 0; k < STORE_OP_KIND_COUNT; k++)
        s->op_min[k] = UINT64_MAX;
    s->fsync_min = UINT64_MAX;
}

static void series_add(series *s, double us, const store_counts *d)
{
    if (s->n < s->cap) s->lat_us[s->n++] = us;
    for (int k = 0; k < STORE_OP_KIND_COUNT; k++) {
        s->sum.ops[k] += d->ops[k];
        if (d->ops[k] < s->op_min[k]) s->op_min[k] = d->ops[k];
        if (d->ops[k] > s->op_max[k]) s->op_max[k] = d->ops[k];
    }
    s->sum.total_ops += d->total_ops;
    s->sum.durable_ops += d->durable_ops;
    s->sum.fsyncs += d->fsyncs;
    s->sum.bytes_written += d->bytes_written;
    s->sum.bytes_read += d->bytes_read;
    if (d->fsyncs < s->fsync_min) s->fsync_min = d->fsyncs;
    if (d->fsyncs > s->fsync_max) s->fsync_max = d->fsyncs;
}

static double per(const series *s, uint64_t total)
{
    return s->n ? (double)total / (double)s->n : 0;
}

/* One durable single-row append on *ds; *ds becomes the returned snapshot. Timed into ser
 * when ser is not NULL. */
static void commit_append(store *st, lance_dataset **ds, int64_t id, series *ser)
{
    arrow_batch *b = one_row(id); /* not timed */
    store_counts c0, c1, d;
    store_counts_get(st, &c0);
    uint64_t t0 = core_mono_ns();
    lance_staged *sg = NULL;
    lance_dataset *next = NULL;
    if (lance_stage_append(&sg, *ds, &b, 1, NULL)) die("stage append");
    if (lance_staged_commit(sg, &next, NULL)) die("commit append");
    lance_staged_free(sg);
    uint64_t t1 = core_mono_ns();
    store_counts_get(st, &c1);
    arrow_batch_free(b);
    lance_dataset_free(*ds);
    *ds = next;
    if (ser) {
        store_counts_diff(&c1, &c0, &d);
        series_add(ser, (double)(t1 - t0) / 1e3, &d);
    }
}

/* Delete the rows with id >= from (one commit). */
static void commit_delete_from(lance_dataset **ds, int64_t from)
{
    arrow_scalar v;
    memset(&v, 0, sizeof v);
    v.kind = ARROW_INT64;
    v.i = from;
    lance_term t = {"id", ARROW_CMP_GE, v};
    lance_filter f = {&t, 1};
    lance_dataset *next = NULL;
    if (lance_dataset_delete(&next, *ds, &f)) die("delete");
    lance_dataset_free(*ds);
    *ds = next;
}

static bool g_stable_row_ids = true; /* --stable-row-ids */

static lance_dataset *new_table(store *st, const char *root)
{
    arrow_schema s;
    row_schema(&s);
    lance_dataset *ds;
    lance_create_options co = LANCE_CREATE_OPTIONS_INIT;
    co.stable_row_ids = g_stable_row_ids;
    if (lance_dataset_create(&ds, st, root, &s, &co)) die("create");
    arrow_schema_clear(&s);
    return ds;
}

/* ---- SQLite ------------------------------------------------------------------------------- */

static void sql_exec(sqlite3 *db, const char *q)
{
    char *err = NULL;
    if (sqlite3_exec(db, q, NULL, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "bench_commits: sqlite '%s': %s\n", q, err ? err : "?");
        exit(1);
    }
}

typedef struct sqlite_bench {
    sqlite3 *db;
    sqlite3_stmt *ins;
    size_t n;
} sqlite_bench;

static void sqlite_bench_open(sqlite_bench *sb, const char *path)
{
    memset(sb, 0, sizeof *sb);
    if (sqlite3_open(path, &sb->db) != SQLITE_OK) die_sql(sb->db, "open");
    sql_exec(sb->db, "PRAGMA journal_mode=WAL");
    sql_exec(sb->db, "PRAGMA synchronous=FULL");
    sql_exec(sb->db,
             "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT NOT NULL, age INTEGER NOT NULL)");
    if (sqlite3_prepare_v2(sb->db, "INSERT INTO t(id, name, age) VALUES (?, ?, ?)", -1, &sb->ins,
                           NULL) != SQLITE_OK)
        die_sql(sb->db, "prepare");
}

/* One autocommit single-row INSERT; returns its latency in microseconds. */
static double sqlite_bench_commit(sqlite_bench *sb)
{
    char name[32];
    size_t i = sb->n++;
    snprintf(name, sizeof name, "n%zu", i);
    uint64_t t0 = core_mono_ns();
    sqlite3_bind_int64(sb->ins, 1, (sqlite3_int64)i);
    sqlite3_bind_text(sb->ins, 2, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(sb->ins, 3, 30);
    if (sqlite3_step(sb->ins) != SQLITE_DONE) die_sql(sb->db, "insert");
    sqlite3_reset(sb->ins);
    return (double)(core_mono_ns() - t0) / 1e3;
}

/* Check every row is there, and close. */
static void sqlite_bench_close(sqlite_bench *sb)
{
    sqlite3_stmt *cnt = NULL;
    if (sqlite3_prepare_v2(sb->db, "SELECT count(*) FROM t", -1, &cnt, NULL) != SQLITE_OK ||
        sqlite3_step(cnt) != SQLITE_ROW || (size_t)sqlite3_column_int64(cnt, 0) != sb->n)
        die_sql(sb->db, "count");
    sqlite3_finalize(cnt);
    sqlite3_finalize(sb->ins);
    sqlite3_close(sb->db);
}

/* ---- the disk's floor --------------------------------------------------------------------- */

static double fsync_floor_us(const char *dir, int n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/fsync-floor.dat", dir);
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (fd < 0) {
        perror("bench_commits: floor file");
        exit(1);
    }
    char page[4096];
    memset(page, 'x', sizeof page);
    if (pwrite(fd, page, sizeof page, 0) != (ssize_t)sizeof page || fsync(fd)) {
        perror("bench_commits: floor write");
        exit(1);
    }
    double *v = alloc_d((size_t)n);
    for (int i = 0; i < n; i++) {
        page[0] = (char)i;
        uint64_t t0 = core_mono_ns();
        if (pwrite(fd, page, sizeof page, 0) != (ssize_t)sizeof page || fdatasync(fd)) {
            perror("bench_commits: floor fdatasync");
            exit(1);
        }
        v[i] = (double)(core_mono_ns() - t0) / 1e3;
    }
    close(fd);
    unlink(path);
    double p50 = pct(v, (size_t)n, 0.5);
    free(v);
    return p50;
}

/* ---- depth -------------------------------------------------------------------------------- */

typedef struct depth_result {
    series lo, hi;
    double build_s; /* time to grow the deep table's history to depth D */
    uint64_t frags_lo, frags_hi;
} depth_result;

static uint64_t n_frags(const lance_dataset *ds)
{
    return (uint64_t)ds->m->pb->n_fragments;
}

/* Grow *ds to `target` versions: with append/delete pairs (hist) or single-row appends. */
static void grow(store *st, lance_dataset **ds, bool hist, uint64_t target, int64_t *id)
{
    while (lance_dataset_version(*ds) < target) {
        int64_t x = (*id)++;
        commit_append(st, ds, x, NULL);
        if (hist && lance_dataset_version(*ds) < target) commit_delete_from(ds, x);
    }
}

/* Two tables of the same kind, one grown to `lo` versions and one to `hi`; then the window's
 * commits alternate between them (shallow, deep, shallow, ...), so both depths see the same
 * machine load. */
static void depth_run(store *st, const char *name, bool hist, uint64_t lo, uint64_t hi,
                      size_t window, depth_result *r)
{
    char root[64];
    snprintf(root, sizeof root, "depth-%s-lo.lance", name);
    lance_dataset *shallow = new_table(st, root); /* version 1 */
    snprintf(root, sizeof root, "depth-%s-hi.lance", name);
    lance_dataset *deep = new_table(st, root);
    int64_t id = 1000000;
    series_init(&r->lo, window);
    series_init(&r->hi, window);
    grow(st, &shallow, hist, lo, &id);
    uint64_t t0 = core_mono_ns();
    grow(st, &deep, hist, hi, &id);
    r->build_s = (double)(core_mono_ns() - t0) / 1e9;
    r->frags_lo = n_frags(shallow);
    r->frags_hi = n_frags(deep);
    for (size_t i = 0; i < window; i++) {
        commit_append(st, &shallow, id++, &r->lo);
        commit_append(st, &deep, id++, &r->hi);
    }
    lance_dataset_free(shallow);
    lance_dataset_free(deep);
}

/* ---- report ------------------------------------------------------------------------------- */

static const store_op_kind shown[] = {STORE_OP_LIST, STORE_OP_GET,           STORE_OP_HEAD,
                                      STORE_OP_PUT,  STORE_OP_PUT_IF_ABSENT, STORE_OP_DELETE,
                                      STORE_OP_SYNC};
#define N_SHOWN (sizeof shown / sizeof shown[0])

static void print_ops(const char *label, const series *s)
{
    printf("  %-28s", label);
    for (size_t k = 0; k < N_SHOWN; k++) {
        store_op_kind o = shown[k];
        if (s->op_min[o] == s->op_max[o])
            printf(" %s %llu", store_op_name(o), (unsigned long long)s->op_min[o]);
        else
            printf(" %s %llu..%llu", store_op_name(o), (unsigned long long)s->op_min[o],
                   (unsigned long long)s->op_max[o]);
    }
    printf(" | fsync %.2f, %.0f B written, %.0f B read\n", per(s, s->sum.fsyncs),
           per(s, s->sum.bytes_written), per(s, s->sum.bytes_read));
}

static bool ops_equal(const series *a, const series *b)
{
    for (size_t k = 0; k < N_SHOWN; k++) {
        store_op_kind o = shown[k];
        if (a->op_min[o] != b->op_min[o] || a->op_max[o] != b->op_max[o]) return false;
    }
    return a->fsync_min == b->fsync_min && a->fsync_max == b->fsync_max;
}

static void json_ops(FILE *f, const char *key, const series *s)
{
    fprintf(f, "\"%s\":{", key);
    for (size_t k = 0; k < N_SHOWN; k++)
        fprintf(f, "%s\"%s\":%.3f", k ? "," : "", store_op_name(shown[k]),
                per(s, s->sum.ops[shown[k]]));
    fprintf(f, ",\"fsync\":%.3f,\"bytes_written\":%.0f,\"bytes_read\":%.0f}", per(s, s->sum.fsyncs),
            per(s, s->sum.bytes_written), per(s, s->sum.bytes_read));
}

int main(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-') {
        /* DIR first: an option there (--help, say) is not taken for a directory to write. */
        fprintf(stderr, "usage: bench_commits DIR [--commits N] [--depth N] [--window N] "
                        "[--frags-depth N] [--stable-row-ids 0|1] [--no-depth] [--no-commits] "
                        "[--json FILE]\n");
        return argc >= 2 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
    }
    const char *dir = argv[1], *json = NULL;
    size_t n = 1000, window = 100;
    uint64_t depth = 10000, frags_depth = 0;
    bool do_depth = true, do_commits = true;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--no-depth") == 0 || strcmp(argv[i], "--no-commits") == 0) {
            if (argv[i][5] == 'd')
                do_depth = false;
            else
                do_commits = false;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "bench_commits: %s needs a value\n", argv[i]);
            return 2;
        }
        const char *v = argv[++i];
        long long x = atoll(v);
        if (strcmp(argv[i - 1], "--json") == 0)
            json = v;
        else if (strcmp(argv[i - 1], "--stable-row-ids") == 0 &&
                 (!strcmp(v, "0") || !strcmp(v, "1")))
            g_stable_row_ids = v[0] == '1';
        else if (x < 1) {
            fprintf(stderr, "bench_commits: %s needs a positive integer\n", argv[i - 1]);
            return 2;
        } else if (strcmp(argv[i - 1], "--commits") == 0)
            n = (size_t)x;
        else if (strcmp(argv[i - 1], "--depth") == 0)
            depth = (uint64_t)x;
        else if (strcmp(argv[i - 1], "--frags-depth") == 0)
            frags_depth = (uint64_t)x;
        else if (strcmp(argv[i - 1], "--window") == 0)
            window = (size_t)x;
        else {
            fprintf(stderr, "bench_commits: unknown option %s\n", argv[i - 1]);
            return 2;
        }
    }
    const uint64_t lo = 10;
    if (frags_depth == 0) frags_depth = depth;
    if (depth <= lo) depth = lo + 1;
    if (frags_depth <= lo) frags_depth = lo + 1;
    const uint64_t depths[2] = {depth, frags_depth};

    store *st;
    char path[4096];
    snprintf(path, sizeof path, "%s/ours", dir);
    if (store_local_open(&st, path)) die("open store");

    double floor_us = fsync_floor_us(dir, 200);
    double o50 = 0, o99 = 0, o_mean = 0, s50 = 0, s99 = 0;
    series ours;
    series_init(&ours, n);
    if (do_commits) {
        /* Our N sequential durable single-row commits and SQLite's (WAL, synchronous=FULL),
         * alternating one and one, so both see the same disk and machine load. */
        lance_dataset *ds = new_table(st, "commits.lance");
        double *sq = alloc_d(n);
        sqlite_bench sb;
        snprintf(path, sizeof path, "%s/sqlite.db", dir);
        sqlite_bench_open(&sb, path);
        for (size_t i = 0; i < n; i++) {
            commit_append(st, &ds, (int64_t)i, &ours);
            sq[i] = sqlite_bench_commit(&sb);
        }
        sqlite_bench_close(&sb);
        uint64_t rows = 0;
        if (lance_dataset_count_rows(ds, &rows) || rows != n || lance_dataset_version(ds) != n + 1)
            die("commit count check");
        lance_dataset_free(ds);
        for (size_t i = 0; i < n; i++)
            o_mean += ours.lat_us[i];
        o_mean /= (double)n;
        o50 = pct(ours.lat_us, n, 0.5);
        o99 = pct(ours.lat_us, n, 0.99);

        s50 = pct(sq, n, 0.5);
        s99 = pct(sq, n, 0.99);
        free(sq);

        printf("single-row durable commits, %zu sequential (F = fdatasync floor %.0f us)\n", n,
               floor_us);
        printf("  %-34s %10s %10s %10s %8s\n", "system", "p50 us", "p99 us", "mean us", "p50/F");
        printf("  %-34s %10.0f %10.0f %10.0f %8.1f\n", "omnigraph (stage+commit, durable)", o50,
               o99, o_mean, o50 / floor_us);
        printf("  %-34s %10.0f %10.0f %10s %8.1f\n", "sqlite WAL synchronous=FULL", s50, s99, "-",
               s50 / floor_us);
        printf("  ours/sqlite p50 %.2fx  p99 %.2fx (goal <= 3x)\n", o50 / s50, o99 / s99);
        print_ops("omnigraph store ops/commit:", &ours);
    }

    /* (c) history depth */
    depth_result dr[2];
    const char *names[2] = {"hist", "frags"};
    if (do_depth) {
        printf("history depth: %zu single-row commits on a table at version %llu alternating "
               "with %zu on one at version D\n",
               window, (unsigned long long)lo, window);
        printf("  %-6s %-7s %9s %10s %10s %10s\n", "table", "depth", "fragments", "p50 us",
               "p99 us", "build s");
        for (int t = 0; t < 2; t++) {
            depth_run(st, names[t], t == 0, lo, depths[t], window, &dr[t]);
            double l50 = pct(dr[t].lo.lat_us, window, 0.5),
                   l99 = pct(dr[t].lo.lat_us, window, 0.99);
            double h50 = pct(dr[t].hi.lat_us, window, 0.5),
                   h99 = pct(dr[t].hi.lat_us, window, 0.99);
            printf("  %-6s %-7llu %9llu %10.0f %10.0f %10s\n", names[t], (unsigned long long)lo,
                   (unsigned long long)dr[t].frags_lo, l50, l99, "-");
            printf("  %-6s %-7llu %9llu %10.0f %10.0f %10.1f\n", names[t],
                   (unsigned long long)depths[t], (unsigned long long)dr[t].frags_hi, h50, h99,
                   dr[t].build_s);
            printf("  %-6s latency p50 depth %llu / depth %llu = %.2fx\n", names[t],
                   (unsigned long long)depths[t], (unsigned long long)lo, h50 / l50);
            char lab[64];
            snprintf(lab, sizeof lab, "%s ops/commit @%llu:", names[t], (unsigned long long)lo);
            print_ops(lab, &dr[t].lo);
            snprintf(lab, sizeof lab, "%s ops/commit @%llu:", names[t],
                     (unsigned long long)depths[t]);
            print_ops(lab, &dr[t].hi);
            printf("  %-6s store op counts per commit %s across depth\n", names[t],
                   ops_equal(&dr[t].lo, &dr[t].hi) ? "IDENTICAL (flat)" : "DIFFER (not flat)");
            /* pct() sorted the samples; medians stay valid for the JSON below */
        }
    }

    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            perror("bench_commits: json");
            return 1;
        }
        fprintf(f, "{\"floor_us\":%.1f", floor_us);
        if (do_commits) {
            fprintf(f,
                    ",\"commits\":%zu,\"ours_p50_us\":%.1f,\"ours_p99_us\":%.1f,"
                    "\"ours_mean_us\":%.1f,\"sqlite_p50_us\":%.1f,\"sqlite_p99_us\":%.1f,",
                    n, o50, o99, o_mean, s50, s99);
            json_ops(f, "ours_per_commit", &ours);
        }
        if (do_depth) {
            fprintf(f, ",\"depth_lo\":%llu,\"window\":%zu", (unsigned long long)lo, window);
            for (int t = 0; t < 2; t++) {
                fprintf(f,
                        ",\"%s\":{\"p50_lo_us\":%.1f,\"p50_hi_us\":%.1f,\"p99_lo_us\":%.1f,"
                        "\"p99_hi_us\":%.1f,\"build_s\":%.2f,\"ops_flat\":%s,\"depth_hi\":%llu,"
                        "\"frags_lo\":%llu,\"frags_hi\":%llu,",
                        names[t], pct(dr[t].lo.lat_us, window, 0.5),
                        pct(dr[t].hi.lat_us, window, 0.5), pct(dr[t].lo.lat_us, window, 0.99),
                        pct(dr[t].hi.lat_us, window, 0.99), dr[t].build_s,
                        ops_equal(&dr[t].lo, &dr[t].hi) ? "true" : "false",
                        (unsigned long long)depths[t], (unsigned long long)dr[t].frags_lo,
                        (unsigned long long)dr[t].frags_hi);
                json_ops(f, "ops_lo", &dr[t].lo);
                fputc(',', f);
                json_ops(f, "ops_hi", &dr[t].hi);
                fputc('}', f);
            }
        }
        fprintf(f, "}\n");
        fclose(f);
    }
    if (do_depth)
        for (int t = 0; t < 2; t++) {
            free(dr[t].lo.lat_us);
            free(dr[t].hi.lat_us);
        }
    free(ours.lat_us);
    store_close(st);
    return 0;
}
