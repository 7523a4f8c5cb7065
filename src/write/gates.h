/* Ordered writer gates (RFC-022 §4.3). A write acquires its whole gate set in one total order:
 *   1. global operation claims, 2. the graph/schema-control key, 3. the target branch key,
 *   4. (physical_branch, table) keys, sorted.
 * Each gate is an in-process reader/writer gate shared by every writer on the same graph root
 * in this process, and then an advisory store lock taken in the same mode (flock LOCK_SH or
 * LOCK_EX on the local backend; exclusive on a backend without shared locks), so writer
 * processes on one host are ordered too. Everyone takes gates in the same order, so there is
 * no deadlock within or across processes. Gates reduce avoidable races; they are never the
 * source of correctness, which comes from conditional commits and recovery (RFC-022 §9).
 *
 * Modes. A key is taken exclusive unless it says shared. Shared holders of a key coexist; an
 * exclusive holder is alone. Which keys are shared:
 *   - the graph/schema-control key "schema" (tier 1): SHARED for every data writer (load,
 *     mutation, optimize) and for recovery acting on their intents, so writes on different
 *     branches never wait for each other; EXCLUSIVE for a graph-global change (a future
 *     schema apply), which then waits out, and holds back, every data writer;
 *   - the branch-refs control key "branch_refs" (tier 1): exclusive (branch create, delete,
 *     cleanup);
 *   - branch keys (tier 2) and (physical branch, table) keys (tier 4): exclusive.
 * An exclusive waiter holds back new shared takers of its key in this process (no starvation).
 *
 * Test-only (a testing build, OG_TESTING; a release build never reads it): with the environment
 * variable OG_TEST_GATES_OFF=1 when a gate manager is opened,
 * its sets are recorded (names, modes, covers, stats) but nothing is locked, in the process or
 * on the store. Tests use it to show that correctness does not depend on the gates (RFC-022
 * §3.7, §9: the manifest CAS, Lance commits and recovery arbitrate). Never set it otherwise. */
#ifndef OG_WRITE_GATES_H
#define OG_WRITE_GATES_H

#include "store/store.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum write_gate_tier {
    WRITE_GATE_CLAIM = 0,
    WRITE_GATE_SCHEMA = 1,
    WRITE_GATE_BRANCH = 2,
    WRITE_GATE_TABLE = 3,
} write_gate_tier;

typedef struct write_gate_key {
    write_gate_tier tier;
    const char *name;  /* claim key, "schema", branch name, or the physical branch */
    const char *table; /* WRITE_GATE_TABLE only: the table key */
    bool shared;       /* take it shared (default, false: exclusive) */
} write_gate_key;

/* The test-only switch (see above). */
#define WRITE_GATES_OFF_ENV "OG_TEST_GATES_OFF"

/* The gate manager of one graph root in this process. Handles opened on the same root_id
 * share their in-process gates. */
typedef struct write_gates write_gates;
typedef struct write_gate_set write_gate_set;

typedef struct write_gate_stats {
    uint64_t acquisitions; /* gate sets acquired */
    uint64_t contended;    /* sets that had to wait for at least one gate (in this process or
                            * for another process's store lock) */
    uint64_t timeouts;     /* sets that gave up (OG_E_RESOURCE_LIMIT) */
    uint64_t held_ns;      /* total time sets were held */
} write_gate_stats;

int write_gates_open(write_gates **out, store *s, const char *root_id);
void write_gates_close(write_gates *g);

/* Acquire every key (duplicates are fine: taken once, exclusive if any asks so) in the total
 * order, each in its mode. On timeout, nothing is held and OG_E_RESOURCE_LIMIT names the gate
 * (and the timeout). timeout_ms applies to each gate. */
int write_gates_acquire(write_gates *g, const write_gate_key *keys, size_t n, uint32_t timeout_ms,
                        write_gate_set **out);
void write_gate_set_release(write_gate_set *set);
/* Whether the set holds every one of keys (a superset is as good: the order was kept), each in
 * a mode at least as strong: an exclusive hold covers a shared request, not the reverse. */
int write_gate_set_covers(const write_gate_set *set, const write_gate_key *keys, size_t n);
/* The order in which the set was taken, as "tier:name[/table]" strings (for tests/logs). */
size_t write_gate_set_count(const write_gate_set *set);
const char *write_gate_set_name(const write_gate_set *set, size_t i);
/* 1 when the set holds its i-th gate shared. */
int write_gate_set_shared(const write_gate_set *set, size_t i);
/* 1 when this manager was opened with the test-only OG_TEST_GATES_OFF=1 (testing builds only). */
int write_gates_off(const write_gates *g);

void write_gates_stats(write_gates *g, write_gate_stats *out);

#endif
