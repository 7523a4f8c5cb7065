/* bench_branches (issue 33 item 8): grows a graph to N branches through the public API and
 * times branch create (per window of creates) and branch list on a warm handle. Used by
 * run_branches.sh, which also times the CLI at two sizes. Wall-clock figures for people only. */
#include "omnigraph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_branches DIR N [WINDOW (1000)]\n"
                        "  creates branches b000000.. until the graph at DIR (made if missing)\n"
                        "  has N, printing the mean create time per WINDOW, then times a list\n");
        return 2;
    }
    const char *root = argv[1];
    long n = atol(argv[2]), w = argc > 3 ? atol(argv[3]) : 1000;
    if (n < 0 || w < 1) return 2;
    struct stat st;
    if (stat(root, &st) != 0) {
        static const char schema[] = "node Person {\n    name: String @key\n}\n";
        og_init_options io = OG_INIT_OPTIONS_INIT;
        io.schema_source = schema;
        io.schema_file = "bench.pg";
        og_init_result *ir = NULL;
        if (og_root_init(&ir, root, &io) != 0) {
            fprintf(stderr, "bench_branches: %s\n", og_error_last()->message);
            return 1;
        }
        og_init_result_free(ir);
    }
    og_graph *g = NULL;
    if (og_graph_open(&g, root, NULL) != 0) {
        fprintf(stderr, "bench_branches: %s\n", og_error_last()->message);
        return 1;
    }
    og_branch_list *l = NULL;
    double t0 = now_ms();
    if (og_graph_branches(&l, g) != 0) {
        fprintf(stderr, "bench_branches: %s\n", og_error_last()->message);
        return 1;
    }
    long have = (long)og_branch_list_count(l) - 1; /* main is listed too */
    og_branch_list_free(l);
    printf("start: %ld branches, list %.1f ms\n", have, now_ms() - t0);
    double wstart = now_ms();
    long in_window = 0;
    for (long i = have; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "b%06ld", i);
        if (og_graph_create_branch(NULL, g, name, NULL) != 0) {
            fprintf(stderr, "bench_branches: create %s: %s\n", name, og_error_last()->message);
            return 1;
        }
        if (++in_window == w || i + 1 == n) {
            double t = now_ms();
            printf("branches %7ld: create mean %.3f ms over the last %ld\n", i + 1,
                   (t - wstart) / (double)in_window, in_window);
            fflush(stdout);
            wstart = t;
            in_window = 0;
        }
    }
    t0 = now_ms();
    if (og_graph_branches(&l, g) != 0) {
        fprintf(stderr, "bench_branches: %s\n", og_error_last()->message);
        return 1;
    }
    printf("end: %zu branches listed (main included) in %.1f ms (warm handle)\n",
           og_branch_list_count(l), now_ms() - t0);
    og_branch_list_free(l);
    og_graph_close(g);
    return 0;
}
