/* The warm side of bench/run_change.sh (issue 14 item 7): on one open handle, a query timed
 * warm (the same table versions as the previous run, back to back) against the same query
 * right after a one-edge insert (new versions of the edge table: the handle's caches see a
 * new table), and against the same query after the handle sat idle as long as a write takes
 * (no write: what a pause alone costs the next query on this machine — cold CPU caches and a
 * core woken from idle — the floor for the query after a write).
 *
 *   bench_warm ROOT QUERIES.gq QUERY PARAMS_JSON MUTATION PARAMS_JSON [N]
 *
 * Prints {"warm_us_p50":..,"after_write_us_p50":..,"after_idle_us_p50":..,"write_us_p50":..}
 * (N rounds, default 20; 5 untimed warm-up queries first). Uses the public API only. */
#define _POSIX_C_SOURCE 200809L
#include "omnigraph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = '\0';
    fclose(f);
    return s;
}

static void die(const char *what)
{
    fprintf(stderr, "bench_warm: %s: %s\n", what, og_error_last()->message);
    exit(1);
}

static double query(og_graph *g, const og_query_options *qo)
{
    double t0 = now_us();
    og_result *r = NULL;
    if (og_graph_query(&r, g, qo) != 0) die("query");
    double t = now_us() - t0;
    og_result_free(r);
    return t;
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: bench_warm ROOT QUERIES.gq QUERY PARAMS MUTATION PARAMS [N]\n");
        return 2;
    }
    int n = argc > 7 ? atoi(argv[7]) : 20;
    if (n < 1) n = 1;
    char *src = slurp(argv[2]);
    if (!src) {
        perror(argv[2]);
        return 1;
    }
    og_graph *g = NULL;
    if (og_graph_open(&g, argv[1], NULL) != 0) die("open");
    og_query_options qo = OG_QUERY_OPTIONS_INIT;
    qo.source = src;
    qo.name = argv[3];
    qo.params_json = argv[4];
    og_mutate_options mo = OG_MUTATE_OPTIONS_INIT;
    mo.source = src;
    mo.name = argv[5];
    mo.params_json = argv[6];
    double *warm = calloc((size_t)n, sizeof *warm), *after = calloc((size_t)n, sizeof *after),
           *wr = calloc((size_t)n, sizeof *wr), *idle = calloc((size_t)n, sizeof *idle);
    if (!warm || !after || !wr || !idle) return 1;
    for (int i = 0; i < 5; i++)
        query(g, &qo);
    for (int i = 0; i < n; i++)
        warm[i] = query(g, &qo);
    for (int i = 0; i < n; i++) {
        og_write_result *mr = NULL;
        double t0 = now_us();
        if (og_graph_mutate(&mr, g, &mo) != 0) die("mutate");
        wr[i] = now_us() - t0;
        og_write_result_free(mr);
        after[i] = query(g, &qo);
    }
    qsort(warm, (size_t)n, sizeof *warm, cmp_d);
    qsort(after, (size_t)n, sizeof *after, cmp_d);
    qsort(wr, (size_t)n, sizeof *wr, cmp_d);
    /* idle as long as the median write, then the query (the handle's tables are current) */
    for (int i = 0; i < n; i++) {
        struct timespec ts = {(time_t)(wr[n / 2] / 1e6),
                              (long)((long long)wr[n / 2] % 1000000) * 1000};
        nanosleep(&ts, NULL);
        idle[i] = query(g, &qo);
    }
    qsort(idle, (size_t)n, sizeof *idle, cmp_d);
    printf("{\"warm_us_p50\":%.1f,\"after_write_us_p50\":%.1f,\"after_idle_us_p50\":%.1f,"
           "\"write_us_p50\":%.1f}\n",
           warm[n / 2], after[n / 2], idle[n / 2], wr[n / 2]);
    og_graph_close(g);
    free(warm);
    free(after);
    free(wr);
    free(idle);
    free(src);
    return 0;
}
