/* Ordered gates: a process-wide registry of named reader/writer gates per graph root, plus
 * store locks taken in the same mode. */
#include "write/gates.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "core/error.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* One named in-process gate: a reader/writer gate (shared holders coexist, an exclusive holder
 * is alone). A waiting exclusive taker holds back new shared takers, so a steady stream of
 * shared holders cannot starve it; that is deadlock-free because every set is taken in the
 * total order and no thread asks again for a gate it holds. Entries live for the process (a
 * root has few gate names). */
typedef struct gate_entry {
    char *root;
    char *name;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned readers;         /* shared holders */
    unsigned writers_waiting; /* exclusive takers waiting */
    bool writer;              /* held exclusively */
    struct gate_entry *next;
} gate_entry;

static pthread_mutex_t g_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static gate_entry *g_registry;

#ifdef OG_TESTING
#define GATES_OFF(g) ((g)->off)
#else
#define GATES_OFF(g) 0 /* a release build always locks */
#endif

struct write_gates {
    store *s;
    char *root;
#ifdef OG_TESTING
    bool off; /* OG_TEST_GATES_OFF: sets are recorded, nothing is locked (tests only) */
#endif
    _Atomic uint64_t acquisitions, contended, timeouts, held_ns;
};

typedef struct held_gate {
    char *name;        /* canonical "tier:name[/table]" */
    bool shared;       /* held in shared mode */
    gate_entry *entry; /* in-process gate, held (NULL with the gates off) */
    store_lock *lock;  /* store lock, held (NULL with the gates off) */
} held_gate;

struct write_gate_set {
    write_gates *g;
    size_t n;
    held_gate *gates;
    uint64_t t0;
};

static gate_entry *registry_get(const char *root, const char *name)
{
    pthread_mutex_lock(&g_registry_lock);
    gate_entry *e = g_registry;
    while (e && (strcmp(e->root, root) != 0 || strcmp(e->name, name) != 0))
        e = e->next;
    if (!e) {
        e = core_calloc(1, sizeof *e);
        if (e) {
            e->root = core_strdup(root);
            e->name = core_strdup(name);
            if (!e->root || !e->name) {
                core_free(e->root);
                core_free(e->name);
                core_free(e);
                e = NULL;
            } else {
                pthread_mutex_init(&e->mu, NULL);
                pthread_condattr_t ca;
                pthread_condattr_init(&ca);
                pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
                pthread_cond_init(&e->cv, &ca);
                pthread_condattr_destroy(&ca);
                e->next = g_registry;
                g_registry = e;
            }
        }
    }
    pthread_mutex_unlock(&g_registry_lock);
    return e;
}

int write_gates_open(write_gates **out, store *s, const char *root_id)
{
    write_gates *g = core_calloc(1, sizeof *g);
    if (!g) return core_err_nomem();
    g->s = s;
    g->root = core_strdup(root_id ? root_id : "");
    if (!g->root) {
        core_free(g);
        return core_err_nomem();
    }
#ifdef OG_TESTING
    const char *off = getenv(WRITE_GATES_OFF_ENV);
    g->off = off && strcmp(off, "1") == 0;
#endif
    *out = g;
    return 0;
}

void write_gates_close(write_gates *g)
{
    if (!g) return;
    core_free(g->root);
    core_free(g);
}

/* The ordering is by (tier, name, table) with byte-wise string order, so
 * (physical_branch, table) pairs sort as tuples. */
static int key_cmp(const void *pa, const void *pb)
{
    const write_gate_key *a = pa, *b = pb;
    if (a->tier != b->tier) return a->tier < b->tier ? -1 : 1;
    int c = strcmp(a->name ? a->name : "", b->name ? b->name : "");
    if (c) return c;
    return strcmp(a->table ? a->table : "", b->table ? b->table : "");
}

static char *canonical_name(const write_gate_key *k)
{
    size_t n = strlen(k->name ? k->name : "") + strlen(k->table ? k->table : "") + 8;
    char *s = core_malloc(n);
    if (!s) return NULL;
    if (k->tier == WRITE_GATE_TABLE)
        snprintf(s, n, "%d:%s/%s", (int)k->tier, k->name ? k->name : "", k->table ? k->table : "");
    else
        snprintf(s, n, "%d:%s", (int)k->tier, k->name ? k->name : "");
    return s;
}

/* A store lock name derived from the canonical name: hex keeps any branch or table name a
 * valid key. */
static char *lock_name(const char *canonical)
{
    size_t n = strlen(canonical);
    char *s = core_malloc(2 * n + 16);
    if (!s) return NULL;
    size_t o = (size_t)sprintf(s, "gates/");
    for (size_t i = 0; i < n; i++)
        o += (size_t)sprintf(s + o, "%02x", (unsigned char)canonical[i]);
    return s;
}

static bool gate_free(const gate_entry *e, bool shared)
{
    return shared ? !e->writer && e->writers_waiting == 0 : !e->writer && e->readers == 0;
}

/* Take e in the mode asked, waiting at most timeout_ms. 0 or ETIMEDOUT. */
static int gate_lock(gate_entry *e, bool shared, uint32_t timeout_ms, int *waited)
{
    pthread_mutex_lock(&e->mu);
    if (!gate_free(e, shared)) {
        *waited = 1;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += timeout_ms / 1000;
        ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (!shared) e->writers_waiting++;
        int rc = 0;
        while (!gate_free(e, shared) && rc != ETIMEDOUT) {
            if (timeout_ms == STORE_LOCK_WAIT_FOREVER)
                pthread_cond_wait(&e->cv, &e->mu);
            else if (timeout_ms == 0)
                rc = ETIMEDOUT;
            else
                rc = pthread_cond_timedwait(&e->cv, &e->mu, &ts);
        }
        if (!shared) {
            e->writers_waiting--;
            /* shared takers held back by this wait may go now */
            if (rc == ETIMEDOUT) pthread_cond_broadcast(&e->cv);
        }
        if (rc == ETIMEDOUT && !gate_free(e, shared)) {
            pthread_mutex_unlock(&e->mu);
            return ETIMEDOUT;
        }
    }
    if (shared)
        e->readers++;
    else
        e->writer = true;
    pthread_mutex_unlock(&e->mu);
    return 0;
}

static void gate_unlock(gate_entry *e, bool shared)
{
    pthread_mutex_lock(&e->mu);
    if (shared)
        e->readers--;
    else
        e->writer = false;
    if (!e->writer && e->readers == 0) pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

int write_gate_set_covers(const write_gate_set *set, const write_gate_key *keys, size_t n)
{
    if (!set) return 0;
    for (size_t i = 0; i < n; i++) {
        char *name = canonical_name(&keys[i]);
        if (!name) return 0;
        size_t k = 0;
        while (k < set->n && strcmp(set->gates[k].name, name) != 0)
            k++;
        core_free(name);
        if (k == set->n) return 0;
        /* an exclusive hold covers a shared request; a shared hold never covers an exclusive */
        if (set->gates[k].shared && !keys[i].shared) return 0;
    }
    return 1;
}

void write_gate_set_release(write_gate_set *set)
{
    if (!set) return;
    /* Release in reverse order. */
    for (size_t i = set->n; i-- > 0;) {
        held_gate *h = &set->gates[i];
        store_lock_release(h->lock);
        if (h->entry) gate_unlock(h->entry, h->shared);
        core_free(h->name);
    }
    if (set->t0) atomic_fetch_add(&set->g->held_ns, core_mono_ns() - set->t0);
    core_free(set->gates);
    core_free(set);
}

/* The store lock of one gate, in its mode. A lock another process holds is waited for (and
 * the wait counted, as for the in-process gate). */
static int store_gate_lock(store *s, const char *lname, bool shared, uint32_t timeout_ms,
                           int *waited, store_lock **out)
{
    int rc =
        shared ? store_lock_acquire_shared(s, lname, 0, out) : store_lock_acquire(s, lname, 0, out);
    if (rc != OG_E_CONFLICT || timeout_ms == 0) return rc;
    og_error_clear();
    *waited = 1;
    return shared ? store_lock_acquire_shared(s, lname, timeout_ms, out)
                  : store_lock_acquire(s, lname, timeout_ms, out);
}

int write_gates_acquire(write_gates *g, const write_gate_key *keys, size_t n, uint32_t timeout_ms,
                        write_gate_set **out)
{
    *out = NULL;
    write_gate_key *sorted = core_calloc(n ? n : 1, sizeof *sorted);
    write_gate_set *set = core_calloc(1, sizeof *set);
    if (!sorted || !set) {
        core_free(sorted);
        core_free(set);
        return core_err_nomem();
    }
    set->g = g;
    set->gates = core_calloc(n ? n : 1, sizeof *set->gates);
    if (!set->gates) {
        core_free(sorted);
        core_free(set);
        return core_err_nomem();
    }
    for (size_t i = 0; i < n; i++) {
        if (keys[i].tier < WRITE_GATE_CLAIM || keys[i].tier > WRITE_GATE_TABLE || !keys[i].name) {
            core_free(sorted);
            write_gate_set_release(set);
            return core_err(OG_E_INTERNAL, "gate key %zu is malformed", i);
        }
        sorted[i] = keys[i];
    }
    qsort(sorted, n, sizeof *sorted, key_cmp);
    int rc = 0, waited = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (i > 0 && key_cmp(&sorted[i - 1], &sorted[i]) == 0) continue; /* merged below */
        /* One key asked for twice is taken once, exclusively if either asked so. */
        bool shared = sorted[i].shared;
        for (size_t k = i + 1; k < n && key_cmp(&sorted[i], &sorted[k]) == 0; k++)
            shared = shared && sorted[k].shared;
        held_gate *h = &set->gates[set->n];
        h->shared = shared;
        h->name = canonical_name(&sorted[i]);
        if (!h->name) {
            rc = core_err_nomem();
            break;
        }
        if (GATES_OFF(g)) { /* test-only: recorded, not locked */
            set->n++;
            continue;
        }
        char *lname = lock_name(h->name);
        h->entry = registry_get(g->root, h->name);
        if (!lname || !h->entry) {
            core_free(lname);
            core_free(h->name);
            h->entry = NULL;
            rc = core_err_nomem();
            break;
        }
        int mrc = gate_lock(h->entry, shared, timeout_ms, &waited);
        if (mrc != 0) {
            core_free(lname);
            if (mrc == ETIMEDOUT)
                rc = core_err(OG_E_RESOURCE_LIMIT,
                              "gate %s was held by another writer in this process (pid %lld) for "
                              "longer than the gate timeout (%u ms)",
                              h->name, (long long)getpid(), (unsigned)timeout_ms);
            else
                rc = core_err(OG_E_INTERNAL, "gate %s: locking it failed (%d)", h->name, mrc);
            core_err_detail(CORE_ERR_OBJECT, h->name);
            core_free(h->name);
            h->entry = NULL;
            break;
        }
        rc = store_gate_lock(g->s, lname, shared, timeout_ms, &waited, &h->lock);
        core_free(lname);
        if (rc) {
            gate_unlock(h->entry, shared);
            h->entry = NULL;
            if (rc == OG_E_CONFLICT) {
                rc = core_err(OG_E_RESOURCE_LIMIT,
                              "gate %s was held by another writer process for longer than the "
                              "gate timeout (%u ms)",
                              h->name, (unsigned)timeout_ms);
                core_err_detail(CORE_ERR_OBJECT, h->name);
            }
            core_free(h->name);
            break;
        }
        set->n++;
    }
    core_free(sorted);
    if (rc) {
        if (rc == OG_E_RESOURCE_LIMIT) atomic_fetch_add(&g->timeouts, 1);
        write_gate_set_release(set); /* sets no error: the one above stands */
        return rc;
    }
    atomic_fetch_add(&g->acquisitions, 1);
    if (waited) atomic_fetch_add(&g->contended, 1);
    set->t0 = core_mono_ns();
    *out = set;
    return 0;
}

size_t write_gate_set_count(const write_gate_set *set)
{
    return set ? set->n : 0;
}

const char *write_gate_set_name(const write_gate_set *set, size_t i)
{
    return set && i < set->n ? set->gates[i].name : NULL;
}

int write_gate_set_shared(const write_gate_set *set, size_t i)
{
    return set && i < set->n && set->gates[i].shared;
}

#ifdef OG_TESTING
int write_gates_off(const write_gates *g)
{
    return g && g->off;
}
#endif

void write_gates_stats(write_gates *g, write_gate_stats *out)
{
    out->acquisitions = atomic_load(&g->acquisitions);
    out->contended = atomic_load(&g->contended);
    out->timeouts = atomic_load(&g->timeouts);
    out->held_ns = atomic_load(&g->held_ns);
}
