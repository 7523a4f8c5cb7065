/* Issue 13 item 7(b), first part: the cost of one keyed single-node graph write as history
 * grows, through the public API on a warm handle. Creates a graph in DIR, then makes N writes
 * (one `insert Person` each, a commit each) and prints, for every window of W writes, the
 * latency p50/p99, the process CPU per write, the bytes the process wrote per write
 * (/proc/self/io wchar) and the graph's bytes on disk per write so far (allocated blocks, and
 * apparent sizes, and files). At the end: the disk after `cleanup --keep 100`, and the live data
 * alone (optimize, then cleanup keeping only the head). No peer here: the comparison is the
 * same engine at two depths (bench/README.md).
 * OG_BENCH_UPDATE=1: every write updates the one node person-0 instead (and the SQLite peer its
 * one row), so history grows while the data does not: what grows then grows with history. */
#include "omnigraph.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#ifdef OG_BENCH_SQLITE
#include <sqlite3.h>
#endif

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static double cpu_ms(void)
{
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1e3 +
           (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e3;
}

static long long written_bytes(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    char line[256];
    long long v = 0;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "wchar:", 6) == 0) v = atoll(line + 6);
    if (f) fclose(f);
    return v;
}

static long long disk_total, disk_apparent, disk_files;
static int add_size(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)path, (void)ftw;
    if (flag == FTW_F) {
        disk_total += (long long)st->st_blocks * 512;
        disk_apparent += (long long)st->st_size;
        disk_files++;
    }
    return 0;
}

static void measure_disk(const char *root)
{
    disk_total = disk_apparent = disk_files = 0;
    nftw(root, add_size, 32, FTW_PHYS);
}

#ifdef OG_BENCH_SQLITE
/* The peer of item 7(a): one durable single-row INSERT per write (WAL, synchronous=FULL, a
 * keyed table like ours), in a file next to the graph, alternating one for one with our writes
 * so both see the same disk. */
static sqlite3 *peer;
static sqlite3_stmt *peer_ins, *peer_upd;

static void peer_open(const char *root)
{
    char path[1024];
    snprintf(path, sizeof path, "%s.sqlite", root);
    remove(path);
    char *err = NULL;
    if (sqlite3_open(path, &peer) != SQLITE_OK ||
        sqlite3_exec(peer,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; "
                     "CREATE TABLE person(name TEXT PRIMARY KEY, age INTEGER)",
                     NULL, NULL, &err) != SQLITE_OK ||
        sqlite3_prepare_v2(peer, "INSERT INTO person(name, age) VALUES (?, ?)", -1, &peer_ins,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(peer, "UPDATE person SET age = ? WHERE name = 'person-0'", -1, &peer_upd,
                           NULL) != SQLITE_OK) {
        fprintf(stderr, "bench_history: sqlite: %s\n", err ? err : sqlite3_errmsg(peer));
        exit(1);
    }
}

static double peer_write(int i, int update)
{
    if (update) {
        double t = now_ms();
        sqlite3_bind_int(peer_upd, 1, i % 90);
        if (sqlite3_step(peer_upd) != SQLITE_DONE) {
            fprintf(stderr, "bench_history: sqlite update: %s\n", sqlite3_errmsg(peer));
            exit(1);
        }
        sqlite3_reset(peer_upd);
        return now_ms() - t;
    }
    char name[32];
    snprintf(name, sizeof name, "person-%d", i);
    double t = now_ms();
    sqlite3_bind_text(peer_ins, 1, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(peer_ins, 2, i % 90);
    if (sqlite3_step(peer_ins) != SQLITE_DONE) {
        fprintf(stderr, "bench_history: sqlite insert: %s\n", sqlite3_errmsg(peer));
        exit(1);
    }
    sqlite3_reset(peer_ins);
    return now_ms() - t;
}
#endif

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_history DIR [N (1000)] [W (200)]\n");
        return 2;
    }
    const char *root = argv[1];
    int n = argc > 2 ? atoi(argv[2]) : 1000, w = argc > 3 ? atoi(argv[3]) : 200;
    if (n < 1 || w < 2) return 2;
    static const char schema[] = "node Person {\n    name: String @key\n    age: I32?\n}\n";
    og_init_options io = OG_INIT_OPTIONS_INIT;
    io.schema_source = schema;
    io.schema_file = "bench.pg";
    og_init_result *ir = NULL;
    og_graph *g = NULL;
    if (og_root_init(&ir, root, &io) != 0 || og_graph_open(&g, root, NULL) != 0) {
        fprintf(stderr, "bench_history: %s\n", og_error_last()->message);
        return 1;
    }
    og_init_result_free(ir);
    static const char q_add[] =
        "query add($n: String, $a: I32) { insert Person { name: $n, age: $a } }";
    static const char q_up[] =
        "query up($n: String, $a: I32) { update Person set { age: $a } where name = $n }";
    const int update = getenv("OG_BENCH_UPDATE") != NULL;
    const char *q = update ? q_up : q_add;
    if (update) { /* the one node every write updates */
        og_mutate_options m0 = OG_MUTATE_OPTIONS_INIT;
        m0.source = q_add;
        m0.params_json = "{\"n\":\"person-0\",\"a\":0}";
        og_write_result *r0 = NULL;
        if (og_graph_mutate(&r0, g, &m0) != 0) {
            fprintf(stderr, "bench_history: %s\n", og_error_last()->message);
            return 1;
        }
        og_write_result_free(r0);
    }
    double *lat = malloc(sizeof *lat * (size_t)w);
#ifdef OG_BENCH_SQLITE
    double *plat = malloc(sizeof *plat * (size_t)w);
    peer_open(root);
    if (update) peer_write(0, 0);
    printf("peer: sqlite %s, one %s per write (WAL, synchronous=FULL), alternating\n",
           sqlite3_libversion(), update ? "UPDATE of one row" : "INSERT");
#endif
    double c0 = cpu_ms(), pcpu = 0;
    long long b0 = written_bytes();
    printf("%8s %9s %9s %12s %15s %13s %13s %11s %10s %10s %7s\n", "depth", "p50 ms", "p99 ms",
           "cpu ms/write", "written B/write", "disk B/write", "bytes B/write", "files/write",
           "sqlite p50", "sqlite p99", "ratio");
    for (int i = 1; i <= n; i++) {
        char p[96];
        snprintf(p, sizeof p, "{\"n\":\"person-%d\",\"a\":%d}", update ? 0 : i, i % 90);
        og_mutate_options m = OG_MUTATE_OPTIONS_INIT;
        m.source = q;
        m.params_json = p;
        og_write_result *mr = NULL;
        double t = now_ms();
        if (og_graph_mutate(&mr, g, &m) != 0) {
            fprintf(stderr, "bench_history: write %d: %s\n", i, og_error_last()->message);
            return 1;
        }
        lat[(i - 1) % w] = now_ms() - t;
        og_write_result_free(mr);
        double p50 = 0, p99 = 0;
#ifdef OG_BENCH_SQLITE
        /* the peer's write, kept out of our CPU and bytes figures */
        double pc = cpu_ms();
        long long pb = written_bytes();
        plat[(i - 1) % w] = peer_write(i, update);
        pcpu += cpu_ms() - pc;
        b0 += written_bytes() - pb;
#endif
        if (i % w == 0) {
            double cpu = (cpu_ms() - c0 - pcpu) / w;
            long long wb = (written_bytes() - b0) / w;
            qsort(lat, (size_t)w, sizeof *lat, cmp_double);
#ifdef OG_BENCH_SQLITE
            qsort(plat, (size_t)w, sizeof *plat, cmp_double);
            p50 = plat[w / 2];
            p99 = plat[w * 99 / 100];
#endif
            measure_disk(root); /* outside the measured window */
            printf("%8d %9.2f %9.2f %12.2f %15lld %13lld %13lld %11.2f %10.2f %10.2f %7.1f\n", i,
                   lat[w / 2], lat[w * 99 / 100], cpu, wb, disk_total / i, disk_apparent / i,
                   (double)disk_files / i, p50, p99, p50 > 0 ? lat[w / 2] / p50 : 0.0);
            pcpu = 0;
            fflush(stdout);
            c0 = cpu_ms();
            b0 = written_bytes();
        }
    }
    free(lat);
#ifdef OG_BENCH_SQLITE
    free(plat);
    sqlite3_finalize(peer_ins);
    sqlite3_finalize(peer_upd);
    sqlite3_close(peer);
#endif
    og_graph_close(g);                 /* finishes queued maintenance */
    if (getenv("OG_BENCH_NO_CLEANUP")) /* keep the full history for inspection */
        return 0;

    /* What retention costs: cleanup keeping the newest 100 commits, then (optimize and keep
     * 1) the live data alone. Nothing else writes now, so orphans need no grace. */
    if (og_graph_open(&g, root, NULL) != 0) {
        fprintf(stderr, "bench_history: reopen: %s\n", og_error_last()->message);
        return 1;
    }
    og_cleanup_options co = OG_CLEANUP_OPTIONS_INIT;
    co.keep = 100;
    co.orphan_grace_ms = 1;
    og_cleanup_result *cr = NULL;
    og_optimize_result *orr = NULL;
    measure_disk(root);
    printf("full history:      %lld bytes on disk (%lld apparent) in %lld files\n", disk_total,
           disk_apparent, disk_files);
    if (og_graph_cleanup(&cr, g, &co) != 0) {
        fprintf(stderr, "bench_history: cleanup: %s\n", og_error_last()->message);
        return 1;
    }
    og_cleanup_result_free(cr);
    measure_disk(root);
    printf("after cleanup 100: %lld bytes on disk (%lld apparent) in %lld files\n", disk_total,
           disk_apparent, disk_files);
    co.keep = 1;
    if (og_graph_optimize(&orr, g, NULL) != 0 || og_graph_cleanup(&cr, g, &co) != 0) {
        fprintf(stderr, "bench_history: optimize: %s\n", og_error_last()->message);
        return 1;
    }
    og_optimize_result_free(orr);
    og_cleanup_result_free(cr);
    measure_disk(root);
    printf("live (optimize, cleanup 1): %lld bytes on disk (%lld apparent) in %lld files\n",
           disk_total, disk_apparent, disk_files);
    og_graph_close(g);
    return 0;
}
