/* Crash enumeration driver. */
#include "crashsim.h"
#include "testutil.h"

#include <stdio.h>
#include <string.h>

static const char *mode_name(store_crash_mode m)
{
    return m == STORE_CRASH_POWER_LOSS ? "power loss" : "process crash";
}

/* One run; returns the check's verdict (0 = invariants hold). */
static int one_run(const crashsim_case *c, uint64_t k, uint64_t n, store_crash_mode mode,
                   uint64_t seed, uint64_t *durable_out)
{
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "crash");
    store *local = NULL, *fs = NULL;
    assert_og_ok(store_local_open(&local, dir));
    if (c->setup) assert_og_ok(c->setup(local, c->ctx));
    assert_og_ok(store_fault_open(&fs, local, 1));
    store_fault_set_seed(fs, seed);
    if (k) store_fault_crash_after(fs, k, mode);
    int rc = c->op(fs, c->ctx);
    int crashed = store_fault_crashed(fs);
    if (k && !crashed) store_fault_crash_now(fs, mode);
    if (durable_out) *durable_out = store_fault_durable_ops(fs);
    store_close(fs);

    store *re = NULL;
    assert_og_ok(store_local_open(&re, dir));
    crashsim_point pt = {k, n, mode, rc, crashed, dir};
    int verdict = c->check(re, c->ctx, &pt);
    store_close(re);
    /* One sandbox per crash point: under the keep-temp switch only those whose check failed
     * stay (all of them would be thousands of directories). */
    if (verdict != 0 && test_keep_tmp())
        fprintf(stderr, "OG_KEEP_TMP: kept %s (%s: the check failed after durable op %llu, %s)\n",
                dir, c->name, (unsigned long long)k, mode_name(mode));
    else
        test_rmrf(dir);
    return verdict;
}

void crashsim_run(const crashsim_case *c, crashsim_report *out)
{
    memset(out, 0, sizeof *out);
    uint64_t n = 0;
    if (one_run(c, 0, 0, STORE_CRASH_PROCESS, 1, &n) != 0) {
        out->violations++;
        snprintf(out->first, sizeof out->first, "%s: invariant failed without a crash", c->name);
    }
    out->n = n;
    for (uint64_t k = 1; k <= n; k++) {
        /* A process crash, then a power loss twice: each unsynced write is dropped or torn
         * as the seed decides, and two seeds make each point see both for most writes. */
        for (int m = 0; m < 3; m++) {
            store_crash_mode mode = m ? STORE_CRASH_POWER_LOSS : STORE_CRASH_PROCESS;
            uint64_t seed = m == 2 ? k * 7919 + 13 : k * 2 + (uint64_t)mode + 1;
            out->runs++;
            if (one_run(c, k, n, mode, seed, NULL) != 0 && out->violations++ == 0)
                snprintf(out->first, sizeof out->first,
                         "%s: invariant failed after a %s (seed %llu) at durable op %llu of %llu",
                         c->name, mode_name(mode), (unsigned long long)seed, (unsigned long long)k,
                         (unsigned long long)n);
        }
    }
}
