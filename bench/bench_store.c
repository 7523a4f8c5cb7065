/* Store latency against the disk's own floor, in one run on one directory:
 *   raw:   pwrite 256 B in place + fdatasync (the cheapest durable write possible)
 *   put:   durable atomic replace (tmp + fdatasync + rename + fsync(dir))
 *   pia:   durable create-if-absent (tmp + fdatasync + link + unlink + fsync(dir))
 * Prints p50/p99 in microseconds, fsyncs per op, and the ratios to raw. */
#include "core/clock.h"
#include "store/store.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void stats(double *v, int n, double *p50, double *p99)
{
    qsort(v, (size_t)n, sizeof *v, cmpd);
    *p50 = v[n / 2];
    *p99 = v[(n * 99) / 100];
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/tmp/og-bench-store";
    int n = argc > 2 ? atoi(argv[2]) : 300;
    if (n < 10) n = 10;
    store *s;
    if (store_local_open(&s, dir) != 0) {
        fprintf(stderr, "cannot open %s\n", dir);
        return 1;
    }
    char payload[256];
    memset(payload, 'x', sizeof payload);
    double *t = calloc((size_t)n, sizeof *t);

    /* raw floor */
    char raw[1024];
    snprintf(raw, sizeof raw, "%s/raw-fdatasync.bin", dir);
    int fd = open(raw, O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (fd < 0 || pwrite(fd, payload, sizeof payload, 0) != (ssize_t)sizeof payload) return 1;
    fdatasync(fd);
    for (int i = 0; i < n; i++) {
        uint64_t t0 = core_mono_ns();
        if (pwrite(fd, payload, sizeof payload, 0) != (ssize_t)sizeof payload) return 1;
        fdatasync(fd);
        t[i] = (double)(core_mono_ns() - t0) / 1000.0;
    }
    close(fd);
    unlink(raw);
    double raw50, raw99;
    stats(t, n, &raw50, &raw99);

    store_put(s, "bench/warm", payload, sizeof payload, 0);
    store_counts a, b, d;
    store_counts_get(s, &a);
    for (int i = 0; i < n; i++) {
        uint64_t t0 = core_mono_ns();
        store_put(s, "bench/put", payload, sizeof payload, 0);
        t[i] = (double)(core_mono_ns() - t0) / 1000.0;
    }
    store_counts_get(s, &b);
    store_counts_diff(&b, &a, &d);
    double put50, put99, put_fs = (double)d.fsyncs / n;
    stats(t, n, &put50, &put99);

    a = b;
    for (int i = 0; i < n; i++) {
        char key[64];
        snprintf(key, sizeof key, "bench/pia-%06d", i);
        uint64_t t0 = core_mono_ns();
        store_put_if_absent(s, key, payload, sizeof payload, 0);
        t[i] = (double)(core_mono_ns() - t0) / 1000.0;
    }
    store_counts_get(s, &b);
    store_counts_diff(&b, &a, &d);
    double pia50, pia99, pia_fs = (double)d.fsyncs / n;
    stats(t, n, &pia50, &pia99);

    printf("store latency, %d ops each, 256-byte objects, dir %s\n", n, dir);
    printf("%-34s %9s %9s %8s %9s\n", "operation", "p50 us", "p99 us", "fsyncs", "p50/raw");
    printf("%-34s %9.0f %9.0f %8.1f %9.2f\n", "raw pwrite+fdatasync (floor)", raw50, raw99, 1.0,
           1.0);
    printf("%-34s %9.0f %9.0f %8.1f %9.2f\n", "durable put (replace)", put50, put99, put_fs,
           put50 / raw50);
    printf("%-34s %9.0f %9.0f %8.1f %9.2f\n", "durable put_if_absent (create)", pia50, pia99,
           pia_fs, pia50 / raw50);

    store_list l;
    if (store_list_prefix(s, "bench/", 0, &l) == 0) {
        for (size_t i = 0; i < l.count; i++)
            store_delete(s, l.items[i].key, STORE_F_NOSYNC);
        store_list_free(&l);
    }
    store_close(s);
    free(t);
    return 0;
}
