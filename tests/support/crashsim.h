/* Crash enumeration (SQLite's crash test made exhaustive): run an operation once on the fault
 * store to count its durable store operations N; then for every k in 1..N and each crash mode
 * (process crash, power loss), rebuild the starting state, rerun the operation crashing right
 * after durable op k (a power loss twice, with two seeds for what it drops or tears), reopen
 * the directory with a plain local store and call the caller's
 * invariant check. The uncrashed run is checked too (k = 0). */
#ifndef OG_CRASHSIM_H
#define OG_CRASHSIM_H

#include "store/store.h"
#include <stdint.h>

typedef struct crashsim_point {
    uint64_t k;            /* crash after this durable op; 0 for the uncrashed run */
    uint64_t n;            /* durable ops of the uncrashed run */
    store_crash_mode mode; /* which crash */
    int op_rc;             /* what the operation returned */
    int crashed;           /* the crash happened before the operation returned */
    const char *root;      /* the directory under test */
} crashsim_point;

typedef struct crashsim_case {
    const char *name;
    void *ctx;
    /* Build the starting state on a plain store (optional). */
    int (*setup)(store *s, void *ctx);
    /* The operation under test, on the fault store. */
    int (*op)(store *s, void *ctx);
    /* Check invariants on the reopened store; return 0 if they hold, non-zero if not. */
    int (*check)(store *s, void *ctx, const crashsim_point *pt);
} crashsim_case;

typedef struct crashsim_report {
    uint64_t n;          /* durable ops of the operation */
    uint64_t runs;       /* crash runs performed (3 * n: a process crash, two power losses) */
    uint64_t violations; /* runs whose check failed */
    char first[256];     /* the first failing point, described */
} crashsim_report;

/* Run the enumeration and report; the caller asserts on violations. */
void crashsim_run(const crashsim_case *c, crashsim_report *out);

#endif
