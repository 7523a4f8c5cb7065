/* og_store_selfcheck(): a short end-to-end exercise of the durable local store, used by
 * `omnigraph selfcheck` and `make demo` to show the machine gives the guarantees we need. */
#include "omnigraph.h"
#include "api/options.h"
#include "core/alloc.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/ulid.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n ? v[n / 2] : 0.0;
}

/* The check itself, into *out (zeroed by the caller). */
static int selfcheck(og_selfcheck_result *out, const char *dir, const og_selfcheck_options *opts)
{
    unsigned rounds = opts->rounds ? opts->rounds : 16;
    if (rounds > 100000) return core_err(OG_E_RESOURCE_LIMIT, "at most 100000 rounds");

    store *s = NULL;
    int rc = store_local_open(&s, dir);
    if (rc) return rc;

    core_ulid id;
    char run[CORE_ULID_LEN + 1];
    rc = core_ulid_new(&id);
    if (rc) goto done;
    core_ulid_format(&id, run);

    double *put_us = core_calloc(rounds, sizeof *put_us);
    double *pia_us = core_calloc(rounds, sizeof *pia_us);
    core_buf got = CORE_BUF_INIT;
    if (!put_us || !pia_us) {
        rc = core_err_nomem();
        goto free_samples;
    }
    char key[128], payload[256];
    for (unsigned i = 0; i < rounds && rc == 0; i++) {
        snprintf(key, sizeof key, "_selfcheck/%s/put-%u", run, i);
        int n = snprintf(payload, sizeof payload, "selfcheck %s round %u", run, i);
        uint64_t t0 = core_mono_ns();
        rc = store_put(s, key, payload, (size_t)n, 0);
        put_us[i] = (double)(core_mono_ns() - t0) / 1000.0;
        if (rc) break;
        rc = store_get(s, key, 0, STORE_ALL, &got);
        if (rc == 0 && (got.len != (size_t)n || memcmp(got.data, payload, got.len) != 0))
            rc = core_err(OG_E_CORRUPT, "selfcheck: '%s' read back different bytes", key);
        if (rc) break;

        snprintf(key, sizeof key, "_selfcheck/%s/pia-%u", run, i);
        t0 = core_mono_ns();
        rc = store_put_if_absent(s, key, payload, (size_t)n, 0);
        pia_us[i] = (double)(core_mono_ns() - t0) / 1000.0;
        if (rc) break;
        rc = store_put_if_absent(s, key, "other", 5, 0);
        if (rc != OG_E_EXISTS) {
            rc = core_err(OG_E_INTERNAL, "selfcheck: second create of '%s' did not report exists",
                          key);
            break;
        }
        rc = store_get(s, key, 0, STORE_ALL, &got);
        if (rc == 0 && (got.len != (size_t)n || memcmp(got.data, payload, got.len) != 0))
            rc = core_err(OG_E_CORRUPT, "selfcheck: create-if-absent replaced '%s'", key);
        out->rounds = i + 1;
    }
    if (rc == 0) {
        store_list l;
        char prefix[64];
        snprintf(prefix, sizeof prefix, "_selfcheck/%s/", run);
        rc = store_list_prefix(s, prefix, 0, &l);
        if (rc == 0 && l.count != 2u * rounds)
            rc = core_err(OG_E_INTERNAL, "selfcheck: listed %zu objects, wrote %u", l.count,
                          2 * rounds);
        for (size_t i = 0; rc == 0 && i < l.count; i++)
            rc = store_delete(s, l.items[i].key, 0);
        store_list_free(&l);
    }
    store_counts c;
    store_counts_get(s, &c);
    out->store_ops = c.total_ops;
    out->fsyncs = c.fsyncs;
    out->put_us_p50 = median(put_us, out->rounds);
    out->put_if_absent_us_p50 = median(pia_us, out->rounds);
free_samples:
    core_buf_free(&got);
    core_free(put_us);
    core_free(pia_us);
done:
    store_close(s);
    if (rc == 0) og_error_clear();
    return rc;
}

int og_store_selfcheck(og_selfcheck_result **out, const char *dir, const og_selfcheck_options *opts)
{
    if (out) *out = NULL;
    og_selfcheck_options def = OG_SELFCHECK_OPTIONS_INIT;
    if (!opts) opts = &def;
    int vrc =
        api_options_check(opts->version, OG_SELFCHECK_OPTIONS_VERSION, "og_selfcheck_options");
    if (vrc) return vrc;
    if (!out || !dir) return core_err(OG_E_BAD_REQUEST, "og_store_selfcheck: missing argument");
    og_selfcheck_result *r = core_calloc(1, sizeof *r);
    if (!r) return core_err_nomem();
    int rc = selfcheck(r, dir, opts);
    if (rc) {
        core_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

void og_selfcheck_result_free(og_selfcheck_result *r)
{
    core_free(r);
}
