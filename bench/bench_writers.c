/* Issue 13 item 7(c): concurrent writers. Keyed single-node graph writes (og_graph_mutate,
 * one commit each, distinct keys) by 1 writer, by 4 writer processes (a handle each), and by 4
 * threads sharing one handle, each on a fresh graph in DIR. Prints, per configuration, the
 * aggregate commits per second and each writer's p50/p99 latency, with the ratios to the single
 * writer. A write that loses arbitration too often (OG_E_CONFLICT / READ_SET_CONFLICT) is
 * retried and counted. No peer: the comparison is the engine alone against itself. */
#include "omnigraph.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXW 4

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct writer {
    og_graph *g;
    const char *root;
    int id, n;
    double p50, p99;
    int retries, failed;
    uint64_t reprepares; /* restarts inside og_graph_mutate (its own handle only) */
} writer;

static void *run_writer(void *arg)
{
    writer *w = arg;
    og_graph *own = NULL;
    og_graph *g = w->g;
    if (!g) {
        if (og_graph_open(&own, w->root, NULL) != 0) {
            w->failed = w->n;
            return NULL;
        }
        g = own;
    }
    double *lat = malloc(sizeof *lat * (size_t)w->n);
    static const char q[] = "query add($n: String) { insert Person { name: $n } }";
    for (int i = 0; i < w->n; i++) {
        char p[64];
        snprintf(p, sizeof p, "{\"n\":\"w%d-%d\"}", w->id, i);
        og_mutate_options m = OG_MUTATE_OPTIONS_INIT;
        m.source = q;
        m.params_json = p;
        og_write_result *r = NULL;
        double t = now_ms();
        int rc;
        for (int tries = 0;; tries++) {
            rc = og_graph_mutate(&r, g, &m);
            if ((rc != OG_E_CONFLICT && rc != OG_E_READ_SET_CONFLICT) || tries == 20) break;
            w->retries++;
        }
        lat[i] = now_ms() - t;
        og_write_result_free(r);
        if (rc != 0) {
            fprintf(stderr, "bench_writers: writer %d: %s\n", w->id, og_error_last()->message);
            w->failed++;
        }
    }
    qsort(lat, (size_t)w->n, sizeof *lat, cmp_double);
    w->p50 = lat[w->n / 2];
    w->p99 = lat[w->n * 99 / 100];
    free(lat);
    og_graph_stats *st = NULL;
    if (own && og_graph_stats_get(&st, own) == 0) w->reprepares = st->reprepares;
    og_graph_stats_free(st);
    og_graph_close(own);
    return NULL;
}

static int make_graph(const char *root)
{
    static const char schema[] = "node Person {\n    name: String @key\n}\n";
    og_init_options io = OG_INIT_OPTIONS_INIT;
    io.schema_source = schema;
    io.schema_file = "bench.pg";
    og_init_result *ir = NULL;
    if (og_root_init(&ir, root, &io) != 0) {
        fprintf(stderr, "bench_writers: init %s: %s\n", root, og_error_last()->message);
        return -1;
    }
    og_init_result_free(ir);
    return 0;
}

/* mode 0: one writer; 1: processes; 2: threads on one handle. Fills w[0..k). */
static double run(const char *dir, int mode, int k, int n, writer *w)
{
    char root[1024];
    snprintf(root, sizeof root, "%s/mode%d", dir, mode);
    if (make_graph(root) != 0) exit(1);
    og_graph *shared = NULL;
    if (mode == 2 && og_graph_open(&shared, root, NULL) != 0) exit(1);
    for (int i = 0; i < k; i++)
        w[i] = (writer){shared, root, i, n, 0, 0, 0, 0, 0};
    double t0 = now_ms();
    if (mode == 1) {
        int fds[MAXW][2];
        pid_t pids[MAXW];
        for (int i = 0; i < k; i++) {
            if (pipe(fds[i]) != 0) exit(1);
            if ((pids[i] = fork()) == 0) {
                run_writer(&w[i]);
                ssize_t wr = write(fds[i][1], &w[i], sizeof w[i]);
                _exit(wr == (ssize_t)sizeof w[i] ? 0 : 1);
            }
        }
        for (int i = 0; i < k; i++) {
            ssize_t rd = read(fds[i][0], &w[i], sizeof w[i]);
            if (rd != (ssize_t)sizeof w[i]) w[i].failed = n;
            waitpid(pids[i], NULL, 0);
            close(fds[i][0]);
            close(fds[i][1]);
        }
    } else {
        pthread_t th[MAXW];
        for (int i = 0; i < k; i++)
            pthread_create(&th[i], NULL, run_writer, &w[i]);
        for (int i = 0; i < k; i++)
            pthread_join(th[i], NULL);
    }
    double secs = (now_ms() - t0) / 1e3;
    og_graph_stats *st = NULL;
    if (shared && og_graph_stats_get(&st, shared) == 0) w[0].reprepares = st->reprepares;
    og_graph_stats_free(st);
    og_graph_close(shared);
    return secs;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_writers DIR [WRITES per writer (200)]\n");
        return 2;
    }
    int n = argc > 2 ? atoi(argv[2]) : 200;
    if (n < 10) return 2;
    static const char *names[] = {"1 writer", "4 processes", "4 threads, 1 handle"};
    static const int ks[] = {1, MAXW, MAXW};
    double single_rate = 0, single_p50 = 0;
    printf("%-22s %10s %9s %12s %12s %8s %7s %10s\n", "writers", "commits/s", "vs 1",
           "worst p50 ms", "worst p99 ms", "p99/p50", "retries", "reprepares");
    for (int mode = 0; mode < 3; mode++) {
        writer w[MAXW];
        double secs = run(argv[1], mode, ks[mode], n, w);
        int done = 0, retries = 0;
        uint64_t reprepares = 0;
        double p50 = 0, p99 = 0;
        for (int i = 0; i < ks[mode]; i++) {
            done += w[i].n - w[i].failed;
            retries += w[i].retries;
            reprepares += w[i].reprepares;
            if (w[i].p50 > p50) p50 = w[i].p50;
            if (w[i].p99 > p99) p99 = w[i].p99;
        }
        double rate = done / secs;
        if (mode == 0) single_rate = rate, single_p50 = p50;
        printf("%-22s %10.1f %8.2fx %12.2f %12.2f %8.1f %7d %10llu\n", names[mode], rate,
               rate / single_rate, p50, p99, p99 / (p50 > 0 ? p50 : single_p50), retries,
               (unsigned long long)reprepares);
    }
    return 0;
}
