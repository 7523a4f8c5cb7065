/* Lance dataset benchmark, our side of bench/run_lance.sh (issue 3 item 7). The tables follow
 * the formulas of bench/lance_peer.cjs, on data storage version 2.0 datasets whose commits are
 * durable (every data file, transaction file and manifest is fsynced; the manifest is published
 * with put_if_absent):
 *   append  lance_dataset_append of 100k rows x 6 columns (int64, float64, utf8, bool, int32,
 *           float32) onto a fresh 1-row table (one per run, made untimed)
 *   scan4   full scan of 1M rows x 4 columns (int64, float64, utf8, int32) into Arrow batches
 *   scan1   projected scan of the float64 column
 * Each is repeated --runs times after one untimed warm-up; scans run warm (page cache).
 * Usage: bench_lance DIR [--runs N] [--scan-rows N] [--append-rows N]
 * Prints ONE JSON line with the medians (ms) under the keys run_lance.sh reads. */
#include "arrow/arrow.h"
#include "core/clock.h"
#include "lance/dataset.h"
#include "omnigraph.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what)
{
    fprintf(stderr, "bench_lance: %s: %s\n", what, og_error_last()->message);
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
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void add_field(arrow_schema *s, const char *name, arrow_type_id id)
{
    arrow_field f = {(char *)name, false, arrow_type_simple(id)};
    if (arrow_schema_add(s, &f)) die("schema");
}

/* The append table's rows first .. first+n-1. */
static arrow_batch *append_rows(int64_t first, int64_t n)
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
    for (int64_t j = 0; j < n; j++) {
        int64_t i = first + j;
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

static arrow_batch *scan_rows_batch(int64_t n)
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

/* A new table at root with these rows (version 1 empty, version 2 the rows). */
static lance_dataset *make_table(store *s, const char *root, arrow_batch *b)
{
    lance_dataset *ds, *d2;
    if (lance_dataset_create(&ds, s, root, &b->schema, NULL)) die("create");
    if (lance_dataset_append(&d2, ds, &b, 1)) die("append");
    lance_dataset_free(ds);
    return d2;
}

/* Scan into Arrow batches (kept until the scan ends, as a consumer would hold them). */
static int64_t scan(const lance_dataset *ds, const char *const *cols, size_t n)
{
    lance_scan_options o = LANCE_SCAN_OPTIONS_INIT;
    o.columns = cols;
    o.n_columns = n;
    lance_scanner *sc;
    if (lance_scanner_open(&sc, ds, &o)) die("scanner");
    arrow_batch *held[4096];
    size_t nb = 0;
    int64_t rows = 0;
    for (;;) {
        arrow_batch *b = NULL;
        if (lance_scanner_next(sc, &b)) die("scan");
        if (!b) break;
        rows += b->num_rows;
        if (nb < sizeof held / sizeof held[0])
            held[nb++] = b;
        else
            arrow_batch_free(b);
    }
    for (size_t i = 0; i < nb; i++)
        arrow_batch_free(held[i]);
    lance_scanner_free(sc);
    return rows;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_lance DIR [--runs N] [--scan-rows N] [--append-rows N]\n");
        return 2;
    }
    const char *dir = argv[1];
    int runs = 5;
    int64_t scan_n = 1000000, append_n = 100000;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--runs") == 0)
            runs = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--scan-rows") == 0)
            scan_n = atoll(argv[i + 1]);
        else if (strcmp(argv[i], "--append-rows") == 0)
            append_n = atoll(argv[i + 1]);
        else {
            fprintf(stderr, "bench_lance: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (runs < 1) runs = 1;
    store *s;
    if (store_local_open(&s, dir)) die("open store");

    /* append: a fresh 1-row table per run (untimed), then the timed durable append */
    arrow_batch *one = append_rows(0, 1), *ab = append_rows(1, append_n);
    double *ta = calloc((size_t)runs, sizeof *ta), *t4 = calloc((size_t)runs, sizeof *t4),
           *t1 = calloc((size_t)runs, sizeof *t1);
    if (!ta || !t4 || !t1) die("memory");
    for (int r = -1; r < runs; r++) { /* r = -1: warm-up */
        char root[64];
        snprintf(root, sizeof root, "append%d.lance", r + 1);
        lance_dataset *ds = make_table(s, root, one), *d2;
        uint64_t t0 = core_mono_ns();
        if (lance_dataset_append(&d2, ds, &ab, 1)) die("timed append");
        uint64_t t1ns = core_mono_ns();
        uint64_t count;
        if (lance_dataset_count_rows(d2, &count) || count != (uint64_t)append_n + 1)
            die("append count");
        lance_dataset_free(d2);
        lance_dataset_free(ds);
        if (r >= 0) ta[r] = (double)(t1ns - t0) / 1e6;
    }
    arrow_batch_free(one);
    arrow_batch_free(ab);

    arrow_batch *sb = scan_rows_batch(scan_n);
    lance_dataset *sds = make_table(s, "scan.lance", sb);
    arrow_batch_free(sb);
    const char *all4[] = {"id", "f64", "s", "i32"}, *f64[] = {"f64"};
    for (int r = -1; r < runs; r++) {
        uint64_t t0 = core_mono_ns();
        if (scan(sds, all4, 4) != scan_n) die("scan4 rows");
        uint64_t t1ns = core_mono_ns();
        if (scan(sds, f64, 1) != scan_n) die("scan1 rows");
        uint64_t t2ns = core_mono_ns();
        if (r >= 0) {
            t4[r] = (double)(t1ns - t0) / 1e6;
            t1[r] = (double)(t2ns - t1ns) / 1e6;
        }
    }
    lance_dataset_free(sds);
    double ma = median(ta, runs), m4 = median(t4, runs), m1 = median(t1, runs);
    printf("{\"engine\":\"omnigraph\",\"data_storage_version\":\"2.0\",\"durable_commit\":true,"
           "\"runs\":%d,\"append_rows\":%lld,\"scan_rows\":%lld,\"append_100k_6col_ms\":%.2f,"
           "\"scan_1m_4col_ms\":%.2f,\"scan_1m_1col_ms\":%.2f}\n",
           runs, (long long)append_n, (long long)scan_n, ma, m4, m1);
    free(ta);
    free(t4);
    free(t1);
    store_close(s);
    return 0;
}
