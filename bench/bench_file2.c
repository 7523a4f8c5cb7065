/* Lance data file 2.0 throughput of the C writer and reader (the file layer only; the dataset
 * commit on top is measured by the dataset benchmark). Tables follow the formulas of
 * bench/lance_peer.cjs so the figures line up with lancedb's:
 *   write  100k rows x 6 columns (int64, float64, utf8, bool, int32, float32), durable put
 *   scan4  1M rows x 4 columns (int64, float64, utf8, int32): open + read all
 *   scan1  the same file, projected to the float64 column
 * Usage: bench_file2 DIR [--runs N] [--scan-rows N] [--append-rows N]
 * Prints a table and one JSON line of medians (ms). */
#include "arrow/arrow.h"
#include "core/clock.h"
#include "lance/file2.h"
#include "omnigraph.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what)
{
    fprintf(stderr, "bench_file2: %s: %s\n", what, og_error_last()->message);
    exit(1);
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmpd);
    return v[n / 2];
}

static void add_field(arrow_schema *s, const char *name, arrow_type_id id)
{
    arrow_field f = {(char *)name, false, arrow_type_simple(id)};
    if (arrow_schema_add(s, &f)) die("schema");
}

static arrow_batch *append_table(int64_t n)
{
    arrow_schema s;
    arrow_schema_init(&s);
    add_field(&s, "id", ARROW_INT64);
    add_field(&s, "f64", ARROW_FLOAT64);
    add_field(&s, "s", ARROW_UTF8);
    add_field(&s, "b", ARROW_BOOL);
    add_field(&s, "i32", ARROW_INT32);
    add_field(&s, "f32", ARROW_FLOAT32);
    arrow_builder *b[6];
    arrow_array *a[6];
    for (int k = 0; k < 6; k++)
        if (arrow_builder_new(&b[k], &s.fields[k].type) || arrow_builder_reserve(b[k], n))
            die("builder");
    char buf[32];
    for (int64_t i = 0; i < n; i++) {
        snprintf(buf, sizeof buf, "row-%lld", (long long)i);
        if (arrow_builder_append_int(b[0], i) ||
            arrow_builder_append_double(b[1], (double)i * 0.5) ||
            arrow_builder_append_str(b[2], buf) || arrow_builder_append_bool(b[3], i % 3 == 0) ||
            arrow_builder_append_int(b[4], i % 1000 - 500) ||
            arrow_builder_append_double(b[5], (double)(i % 100) * 0.25))
            die("append");
    }
    for (int k = 0; k < 6; k++) {
        if (arrow_builder_finish(b[k], &a[k])) die("finish");
        arrow_builder_free(b[k]);
    }
    arrow_batch *out;
    if (arrow_batch_new(&out, &s, a, 6)) die("batch");
    for (int k = 0; k < 6; k++)
        arrow_array_free(a[k]);
    arrow_schema_clear(&s);
    return out;
}

static arrow_batch *scan_table(int64_t n)
{
    arrow_schema s;
    arrow_schema_init(&s);
    add_field(&s, "id", ARROW_INT64);
    add_field(&s, "f64", ARROW_FLOAT64);
    add_field(&s, "s", ARROW_UTF8);
    add_field(&s, "i32", ARROW_INT32);
    arrow_builder *b[4];
    arrow_array *a[4];
    for (int k = 0; k < 4; k++)
        if (arrow_builder_new(&b[k], &s.fields[k].type) || arrow_builder_reserve(b[k], n))
            die("builder");
    char buf[32];
    for (int64_t i = 0; i < n; i++) {
        snprintf(buf, sizeof buf, "s%lld", (long long)(i % 100000));
        if (arrow_builder_append_int(b[0], i) ||
            arrow_builder_append_double(b[1], (double)i * 0.25) ||
            arrow_builder_append_str(b[2], buf) || arrow_builder_append_int(b[3], i % 7919))
            die("append");
    }
    for (int k = 0; k < 4; k++) {
        if (arrow_builder_finish(b[k], &a[k])) die("finish");
        arrow_builder_free(b[k]);
    }
    arrow_batch *out;
    if (arrow_batch_new(&out, &s, a, 4)) die("batch");
    for (int k = 0; k < 4; k++)
        arrow_array_free(a[k]);
    arrow_schema_clear(&s);
    return out;
}

static void write_file(store *s, const char *key, const arrow_batch *b)
{
    lance_file2_writer *w;
    if (lance_file2_writer_new(&w, &b->schema, NULL) || lance_file2_writer_write(w, b) ||
        lance_file2_writer_finish(w, s, key, NULL))
        die("write");
    lance_file2_writer_free(w);
}

static int64_t scan(store *s, const char *key, const size_t *cols, size_t n)
{
    lance_file2_reader *r = NULL;
    arrow_batch *b = NULL;
    if (lance_file2_open(&r, s, key, 0, NULL) || lance_file2_read(r, cols, n, 0, UINT64_MAX, &b))
        die("scan");
    int64_t rows = b->num_rows;
    arrow_batch_free(b);
    lance_file2_close(r);
    return rows;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/tmp/og-bench-file2";
    int runs = 5;
    int64_t scan_rows = 1000000, append_rows = 100000;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--runs") == 0) runs = atoi(argv[i + 1]);
        if (strcmp(argv[i], "--scan-rows") == 0) scan_rows = atoll(argv[i + 1]);
        if (strcmp(argv[i], "--append-rows") == 0) append_rows = atoll(argv[i + 1]);
    }
    if (runs < 1) runs = 1;
    store *s;
    if (store_local_open(&s, dir)) die("open store");
    arrow_batch *ab = append_table(append_rows);
    arrow_batch *sb = scan_table(scan_rows);
    write_file(s, "scan.lance", sb);
    arrow_batch_free(sb);

    double *tw = calloc((size_t)runs, sizeof *tw), *t4 = calloc((size_t)runs, sizeof *t4),
           *t1 = calloc((size_t)runs, sizeof *t1);
    size_t one = 1;
    for (int r = -1; r < runs; r++) { /* r = -1: warm-up */
        char key[64];
        snprintf(key, sizeof key, "w%d.lance", r + 1);
        uint64_t t0 = core_mono_ns();
        write_file(s, key, ab);
        uint64_t ta = core_mono_ns();
        if (scan(s, "scan.lance", NULL, 0) != scan_rows) die("scan rows");
        uint64_t tb = core_mono_ns();
        if (scan(s, "scan.lance", &one, 1) != scan_rows) die("scan rows");
        uint64_t tc = core_mono_ns();
        store_delete(s, key, 0);
        if (r < 0) continue;
        tw[r] = (double)(ta - t0) / 1e6;
        t4[r] = (double)(tb - ta) / 1e6;
        t1[r] = (double)(tc - tb) / 1e6;
    }
    double mw = median(tw, runs), m4 = median(t4, runs), m1 = median(t1, runs);
    printf("%-40s %10s\n", "benchmark (file layer, medians)", "ms");
    printf("%-40s %10.1f\n", "write 100k rows x 6 cols (durable put)", mw);
    printf("%-40s %10.1f\n", "scan 1M rows x 4 cols", m4);
    printf("%-40s %10.1f\n", "projected scan 1M rows x 1 col", m1);
    printf("{\"write_100k_6col_ms\":%.2f,\"scan_1m_4col_ms\":%.2f,\"scan_1m_1col_ms\":%.2f,"
           "\"runs\":%d}\n",
           mw, m4, m1, runs);
    store_delete(s, "scan.lance", 0);
    free(tw);
    free(t4);
    free(t1);
    arrow_batch_free(ab);
    store_close(s);
    return 0;
}
