/* The coordinator of RFC-022 §4: write_run's stages A–H for every registered adapter, the
 * closed adapter registry, and the writer of an open graph (gates, owner locks, counters, the
 * maintenance worker). */
#include "write/internal.h"

#include "core/alloc.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/failpoint.h"
#include "core/log.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ---- registry ------------------------------------------------------------------------------ */

/* The adapter of a kind: how to prepare its effects, apply them, and describe the delta. */
typedef struct write_adapter {
    int kind;
    const char *name;
    int (*prepare)(write_graph *g, const void *input, const graph_snapshot *snap, write_intent *in);
    int (*apply)(write_graph *g, write_intent *in);
    write_rows_fn rows;
    /* Under the gates, after the read set revalidated: the members the snapshot of the written
     * branch cannot show (a merge's source branch). 0 when they hold, 1 to start again from
     * prepare, or an error. NULL: none. */
    int (*recheck)(write_graph *g, const void *input, const write_intent *in);
} write_adapter;

/* adapter_changes.c */
int write_changes_prepare(write_graph *g, const void *input, const graph_snapshot *snap,
                          write_intent *in);
int write_changes_apply(write_graph *g, write_intent *in);
int write_changes_rows(void *arg, const graph_snapshot *cur, uint64_t mver, graph_rows *rows);
/* adapter_optimize.c */
int write_optimize_prepare(write_graph *g, const void *input, const graph_snapshot *snap,
                           write_intent *in);
int write_optimize_apply(write_graph *g, write_intent *in);
int write_optimize_rows(void *arg, const graph_snapshot *cur, uint64_t mver, graph_rows *rows);
/* adapter_merge.c */
int write_merge_prepare(write_graph *g, const void *input, const graph_snapshot *snap,
                        write_intent *in);
int write_merge_recheck(write_graph *g, const void *input, const write_intent *in);
/* adapter_schema.c */
int write_schema_prepare(write_graph *g, const void *input, const graph_snapshot *snap,
                         write_intent *in);
int write_schema_rows(void *arg, const graph_snapshot *cur, uint64_t mver, graph_rows *rows);
int write_schema_recheck(write_graph *g, const void *input, const write_intent *in);

static const write_adapter ADAPTERS[] = {
    {WRITE_KIND_LOAD, "load", write_changes_prepare, write_changes_apply, write_changes_rows, NULL},
    {WRITE_KIND_MUTATION, "mutation", write_changes_prepare, write_changes_apply,
     write_changes_rows, NULL},
    {WRITE_KIND_OPTIMIZE, "optimize", write_optimize_prepare, write_optimize_apply,
     write_optimize_rows, NULL},
    /* a merge's effects are a load's (deltas staged per table, first touches included) */
    {WRITE_KIND_MERGE, "merge", write_merge_prepare, write_changes_apply, write_changes_rows,
     write_merge_recheck},
    /* a schema apply's effects are staged overwrites (rewritten tables), committed like a load's */
    {WRITE_KIND_SCHEMA, "schema_apply", write_schema_prepare, write_changes_apply,
     write_schema_rows, write_schema_recheck},
};

static const write_adapter *adapter_of(int kind)
{
    for (size_t i = 0; i < sizeof ADAPTERS / sizeof ADAPTERS[0]; i++)
        if (ADAPTERS[i].kind == kind) return &ADAPTERS[i];
    return NULL;
}

const char *write_kind_name(int kind)
{
    const write_adapter *a = adapter_of(kind);
    return a ? a->name : NULL;
}

int write_kind_parse(const char *s)
{
    for (size_t i = 0; s && i < sizeof ADAPTERS / sizeof ADAPTERS[0]; i++)
        if (strcmp(ADAPTERS[i].name, s) == 0) return ADAPTERS[i].kind;
    return 0;
}

/* Every graph-visible entry point. init is not listed: it creates the graph (its own claim
 * protocol, write_init) rather than changing one. */
static const write_entry_point ENTRY_POINTS[] = {
    {"exec_load (og_graph_load / omnigraph load)", WRITE_KIND_LOAD},
    {"exec_mutate (og_graph_mutate / omnigraph mutate)", WRITE_KIND_MUTATION},
    {"write_optimize", WRITE_KIND_OPTIMIZE},
    {"automatic maintenance after a write (write_run, stage H)", WRITE_KIND_OPTIMIZE},
    {"write_merge (og_graph_merge / omnigraph branch merge)", WRITE_KIND_MERGE},
    {"write_schema_apply (og_graph_schema_apply / omnigraph schema apply)", WRITE_KIND_SCHEMA},
};

const write_entry_point *write_entry_points(size_t *n)
{
    *n = sizeof ENTRY_POINTS / sizeof ENTRY_POINTS[0];
    return ENTRY_POINTS;
}

/* ---- writer -------------------------------------------------------------------------------- */

static int base_acquire(write_graph *g, const char *branch, graph_head **out);

void write_stats_add(write_graph *g, const write_stats *d)
{
    pthread_mutex_lock((pthread_mutex_t *)g->lock_);
    g->stats.writes += d->writes;
    g->stats.noops += d->noops;
    g->stats.reprepares += d->reprepares;
    g->stats.publish_retries += d->publish_retries;
    g->stats.recoveries += d->recoveries;
    g->stats.gate_wait_ns += d->gate_wait_ns;
    g->stats.gate_hold_ns += d->gate_hold_ns;
    g->stats.prepare_ns += d->prepare_ns;
    pthread_mutex_unlock((pthread_mutex_t *)g->lock_);
}

void write_graph_stats(write_graph *g, write_stats *out)
{
    pthread_mutex_lock((pthread_mutex_t *)g->lock_);
    *out = g->stats;
    pthread_mutex_unlock((pthread_mutex_t *)g->lock_);
}

static void maint_stop(write_graph *g);

/* ---- owner locks ----------------------------------------------------------------------------
 * A write holds an advisory lock while its sidecar exists, so that recovery can tell a live
 * owner from a dead one; the sidecar names it. Creating and removing a lock file per write
 * costs two inode operations, and ext4 makes every allocation scan past inodes freed in the
 * last minutes, so a writer keeps the locks of writes that finished cleanly (still held, and
 * named by no sidecar any more) and gives them to its next writes. A write that leaves its
 * sidecar behind releases and removes its lock, so recovery sees its owner gone. */
typedef struct owner_pool {
    char prefix[40];    /* "owner-<ULID>-" unique to this writer */
    uint64_t next;      /* names handed out */
    store_lock **locks; /* free, held */
    char (*names)[WRITE_OWNER_LOCK_CAP];
    size_t n, cap;
} owner_pool;

static int owner_take(write_graph *g, char name[WRITE_OWNER_LOCK_CAP], store_lock **out)
{
    pthread_mutex_lock((pthread_mutex_t *)g->lock_);
    owner_pool *p = g->owners_;
    if (p && p->n) {
        p->n--;
        *out = p->locks[p->n];
        memcpy(name, p->names[p->n], WRITE_OWNER_LOCK_CAP);
        pthread_mutex_unlock((pthread_mutex_t *)g->lock_);
        return 0;
    }
    int rc = 0;
    if (!p) {
        core_ulid u;
        char id[GRAPH_ID_LEN + 1];
        if (!(p = core_calloc(1, sizeof *p)) || (rc = core_ulid_new(&u)) != 0) {
            core_free(p);
            pthread_mutex_unlock((pthread_mutex_t *)g->lock_);
            return rc ? rc : core_err_nomem();
        }
        core_ulid_format(&u, id);
        snprintf(p->prefix, sizeof p->prefix, "owner-%s-", id);
        g->owners_ = p;
    }
    snprintf(name, WRITE_OWNER_LOCK_CAP, "%s%llu", p->prefix, (unsigned long long)p->next++);
    pthread_mutex_unlock((pthread_mutex_t *)g->lock_);
    return store_lock_acquire(g->h->s, name, 0, out);
}

/* A write whose sidecar is gone gives its lock back (still held: nothing names it). */
static void owner_return(write_graph *g, const char *name, store_lock *l)
{
    pthread_mutex_lock((pthread_mutex_t *)g->lock_);
    owner_pool *p = g->owners_;
    if (p && p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 4;
        store_lock **nl = core_realloc(p->locks, cap * sizeof *nl);
        if (nl) p->locks = nl;
        char(*nn)[WRITE_OWNER_LOCK_CAP] = nl ? core_realloc(p->names, cap * sizeof *nn) : NULL;
        if (nn) {
            p->names = nn;
            p->cap = cap;
        }
    }
    if (p && p->n < p->cap) {
        p->locks[p->n] = l;
        snprintf(p->names[p->n], WRITE_OWNER_LOCK_CAP, "%s", name);
        p->n++;
        l = NULL;
    }
    pthread_mutex_unlock((pthread_mutex_t *)g->lock_);
    store_lock_release_remove(l); /* could not keep it */
}

static void owners_close(write_graph *g)
{
    owner_pool *p = g->owners_;
    if (!p) return;
    for (size_t i = 0; i < p->n; i++)
        store_lock_release_remove(p->locks[i]);
    core_free(p->locks);
    core_free(p->names);
    core_free(p);
    g->owners_ = NULL;
}

void write_graph_close(write_graph *g)
{
    if (!g) return;
    maint_stop(g); /* finishes queued maintenance: the writer's state is still whole */
    owners_close(g);
    write_gates_close(g->gates);
    if (g->owns_handle_) graph_handle_close(g->h);
    if (g->lock_) {
        pthread_mutex_destroy((pthread_mutex_t *)g->lock_);
        core_free(g->lock_);
    }
    core_free(g);
}

/* A leftover init or backup claim beside a complete graph is stale: the init or backup
 * finished (its last step, deleting the claim, did not). */
static void drop_stale_claim(write_graph *g)
{
    static const char *const claims[] = {GRAPH_INIT_CLAIM, GRAPH_BACKUP_CLAIM};
    for (size_t i = 0; i < sizeof claims / sizeof claims[0]; i++) {
        store_meta meta;
        if (store_head(g->h->s, claims[i], &meta) == 0 && store_delete(g->h->s, claims[i], 0) != 0)
            core_log(CORE_LOG_WARN, "could not remove the stale %s (harmless)", claims[i]);
    }
}

int write_graph_attach(write_graph **out, graph_handle *h, const write_open_options *opt)
{
    *out = NULL;
    write_open_options def = WRITE_OPEN_OPTIONS_INIT;
    if (!opt) opt = &def;
    write_graph *g = core_calloc(1, sizeof *g);
    pthread_mutex_t *mu = core_malloc(sizeof *mu);
    if (!g || !mu) {
        core_free(g);
        core_free(mu);
        return core_err_nomem();
    }
    pthread_mutex_init(mu, NULL);
    g->lock_ = mu;
    g->h = h;
    g->background_maintenance = opt->background_maintenance && !h->readonly;
    g->gate_timeout_ms = opt->gate_timeout_ms ? opt->gate_timeout_ms : WRITE_GATE_TIMEOUT_MS;
    int rc = 0;
    if (!h->readonly) {
        if ((rc = write_gates_open(&g->gates, h->s, h->root_id)) != 0) goto fail;
        drop_stale_claim(g);
        size_t resolved = 0;
        if (!opt->defer_recovery && (rc = write_recover(g, NULL, &resolved)) != 0) goto fail;
    }
    *out = g;
    return 0;
fail:
    write_graph_close(g);
    return rc;
}

int write_graph_open(write_graph **out, store *s, const char *root_id,
                     const write_open_options *opt)
{
    *out = NULL;
    write_open_options def = WRITE_OPEN_OPTIONS_INIT;
    if (!opt) opt = &def;
    graph_open_options go = GRAPH_OPEN_OPTIONS_INIT;
    go.readonly = opt->readonly;
    go.actor = opt->actor;
    graph_handle *h = NULL;
    int rc = graph_handle_open(&h, s, root_id, &go); /* takes s */
    if (rc == 0) rc = write_graph_attach(out, h, opt);
    if (rc != 0) {
        graph_handle_close(h);
        return rc;
    }
    (*out)->owns_handle_ = true;
    return 0;
}

/* ---- gates --------------------------------------------------------------------------------- */

/* The gate keys of an intent (caller frees *keys; the strings are the intent's). Every kind
 * registered today (load, mutation, optimize) changes data, not the schema: it takes the
 * graph/schema-control key shared, so data writes on different branches do not wait for each
 * other; a graph-global change (a schema apply) would take it exclusive. The branch and table
 * keys are exclusive. */
static int intent_gate_keys(const write_intent *in, write_gate_key **keys, size_t *n)
{
    bool global = in->kind == WRITE_KIND_SCHEMA; /* graph-global: exclusive, refs held too */
    size_t k = global ? 3 : 2;
    *n = k + in->n_effects;
    if (!(*keys = core_calloc(*n, sizeof **keys))) return core_err_nomem();
    const char *branch = in->branch ? in->branch : "main";
    (*keys)[0] = (write_gate_key){WRITE_GATE_SCHEMA, "schema", NULL, !global};
    (*keys)[1] = (write_gate_key){WRITE_GATE_BRANCH, branch, NULL, false};
    if (global)
        (*keys)[2] = (write_gate_key){WRITE_GATE_SCHEMA, WRITE_BRANCH_REFS_GATE, NULL, false};
    for (size_t i = 0; i < in->n_effects; i++) {
        const char *pb = in->effects[i].table_branch ? in->effects[i].table_branch : "main";
        (*keys)[k + i] = (write_gate_key){WRITE_GATE_TABLE, pb, in->effects[i].alias, false};
    }
    return 0;
}

/* Whether the gates a restarted write kept cover this intent's. */
static bool gates_cover(const write_gate_set *held, const write_intent *in)
{
    write_gate_key *keys = NULL;
    size_t n = 0;
    if (!held || intent_gate_keys(in, &keys, &n) != 0) {
        og_error_clear();
        return false;
    }
    bool ok = write_gate_set_covers(held, keys, n) != 0;
    core_free(keys);
    return ok;
}

/* A gate wait that timed out: name the holder where a live intent tells it (its operation id
 * and pid); a holder that has not armed its intent yet is only "another writer". */
static void gate_holder_explain(write_graph *g)
{
    char saved[700], obj[STORE_KEY_MAX];
    snprintf(saved, sizeof saved, "%s", og_error_last()->message);
    snprintf(obj, sizeof obj, "%s", og_error_last()->object ? og_error_last()->object : "");
    write_pending *l = NULL;
    size_t n = 0;
    const write_pending *live = NULL;
    if (write_pending_list(g->h->s, true, &l, &n) == 0)
        for (size_t i = 0; i < n && !live; i++)
            if (l[i].state == WRITE_PENDING_LIVE) live = &l[i];
    if (live) {
        int64_t age_ms = (write_now_us() - live->started_at_us) / 1000;
        core_err(OG_E_RESOURCE_LIMIT,
                 "%s: it is held by operation %s (a %s, pid %lld, running for %lld ms); if that "
                 "process is stuck, stop it and the next write recovers its intent (`omnigraph "
                 "recover show %s`)",
                 saved, live->operation_id, write_kind_name(live->kind), (long long)live->owner_pid,
                 (long long)age_ms, live->operation_id);
        core_err_detail(CORE_ERR_OPERATION_ID, live->operation_id);
    } else {
        core_err(OG_E_RESOURCE_LIMIT,
                 "%s: no recovery intent names the holder yet (it has not armed one), so its "
                 "pid is not known",
                 saved);
    }
    if (obj[0]) core_err_detail(CORE_ERR_OBJECT, obj);
    write_pending_list_free(l, n);
}

int write_gates_take(write_graph *g, const write_gate_key *keys, size_t n, write_gate_set **out)
{
    int rc = write_gates_acquire(g->gates, keys, n, g->gate_timeout_ms, out);
    if (rc == OG_E_RESOURCE_LIMIT) gate_holder_explain(g);
    return rc;
}

int write_intent_gates(write_graph *g, const write_intent *in, write_gate_set **out)
{
    size_t n = 0;
    write_gate_key *keys = NULL;
    int rc0 = intent_gate_keys(in, &keys, &n);
    if (rc0 != 0) return rc0;
    uint64_t t0 = core_mono_ns();
    int rc = write_gates_take(g, keys, n, out);
    write_stats d = {0};
    d.gate_wait_ns = core_mono_ns() - t0;
    write_stats_add(g, &d);
    core_free(keys);
    return rc;
}

/* ---- stage A: the recovery barrier ---------------------------------------------------------- */

int write_recover(write_graph *g, const char *branch, size_t *resolved)
{
    *resolved = 0;
    if (g->h->readonly) return 0;
    /* Only the intents that can overlap an operation on this branch (RFC-022 §4.1): a write
     * on one branch neither waits for nor fails on a live writer of another branch. */
    char(*ids)[GRAPH_ID_LEN + 1] = NULL;
    size_t n = 0;
    int rc = write_sidecar_list_overlapping(g->h->s, branch, &ids, &n);
    /* An intent that cannot be resolved yet (recovery_required: a live owner, or a table
     * another intent moved and has not published) does not stop the others: resolving an
     * older one may be what unblocks it, so the pass repeats while it makes progress. The
     * first refusal of the last pass is the answer. Any other error stops at once. */
    bool *left = n ? core_calloc(n, sizeof *left) : NULL;
    core_err_saved *refused = n ? core_malloc(sizeof *refused) : NULL;
    if (n && (!left || !refused)) rc = core_err_nomem();
    for (size_t i = 0; rc == 0 && i < n; i++)
        left[i] = true;
    bool blocked = false;
    for (bool progress = true; rc == 0 && progress;) {
        progress = blocked = false;
        for (size_t i = 0; rc == 0 && i < n; i++) {
            if (!left[i]) continue;
            bool done = false;
            rc = write_recover_one(g, ids[i], &done);
            if (rc == OG_E_RECOVERY_REQUIRED) {
                if (!blocked) core_err_save(refused);
                blocked = true;
                rc = 0;
                continue;
            }
            if (rc != 0) break;
            left[i] = false;
            progress = true;
            if (done) (*resolved)++;
        }
    }
    core_free(left);
    core_free(ids);
    if (*resolved) {
        /* A writer whose intent was just resolved is gone (its owner lock was free): the
         * store's temporaries it left (a write cut off mid-file) go now, not at cleanup. */
        uint64_t temps = 0;
        if (store_reclaim(g->h->s, &temps) != 0) {
            core_log(CORE_LOG_WARN, "recovery: temporaries stay for cleanup: %s",
                     og_error_last()->message);
            og_error_clear();
        } else if (temps) {
            core_log(CORE_LOG_INFO, "recovery: removed %llu abandoned temporaries",
                     (unsigned long long)temps);
        }
    }
    if (rc == 0 && blocked) rc = core_err_restore(refused);
    core_free(refused);
    return rc;
}

/* ---- the coordinator ------------------------------------------------------------------------ */

static int new_id(char out[GRAPH_ID_LEN + 1])
{
    core_ulid u;
    int rc = core_ulid_new(&u);
    if (rc == 0) core_ulid_format(&u, out);
    return rc;
}

/* ---- the base ------------------------------------------------------------------------------
 * A write prepares on the head of its branch: for main the graph handle's cached head
 * (graph_handle_head), which a successful write replaces with its own delta folded in, so the
 * next write (or read) whose barrier finds main still at that version needs one probe instead
 * of a re-read of the manifest. */

/* The latest version of the dataset at root, probing on from version `known` (0: none) named
 * with `naming`, which this handle opened, or by discovery from the hint when there is none.
 * Never a listing of the versions on this path. `checked`: look at the answer again, in case
 * cleanup deleted `known` since this handle saw it (lance_version_latest_from); the answers
 * that are re-checked under the gates, or that start from a pinned table version, skip it. */
static int latest_after(write_graph *g, const char *root, lance_naming naming, uint64_t known,
                        bool checked, uint64_t *v)
{
    if (known && checked) return lance_version_latest_from(g->h->s, root, naming, known, v);
    if (known) return lance_version_latest_from_unchecked(g->h->s, root, naming, known, v);
    return lance_version_latest(g->h->s, root, v, &naming);
}

/* A prepare that found a file of its base missing: was the base stale (cleanup removed what
 * it names after newer versions replaced it)? Then the cached head is dropped and the write
 * prepares again on the latest. */
static bool base_was_stale(write_graph *g, const graph_head *wb)
{
    const lance_dataset *m = graph_head_manifest(wb);
    uint64_t latest = 0;
    /* the caller's error is the answer when the base was not stale: kept across the probe */
    core_err_saved *why = core_malloc(sizeof *why);
    if (!why) return false;
    core_err_save(why);
    int rc = lance_version_latest_from(g->h->s, GRAPH_MANIFEST_DIR, m->naming,
                                       lance_dataset_version(m), &latest);
    core_err_restore(why);
    core_free(why);
    if (rc != 0) return false;
    if (latest == lance_dataset_version(m)) return false;
    graph_handle_forget(g->h, wb);
    return true;
}

static int base_acquire(write_graph *g, const char *branch, graph_head **out)
{
    if (!branch) return graph_handle_head_ex(g->h, GRAPH_HEAD_PREGATE, out);
    int rc = graph_handle_branch_head_ex(g->h, branch, GRAPH_HEAD_PREGATE, out);
    lance_branch ref;
    if (rc == OG_E_NOT_FOUND &&
        lance_branch_get(g->h->s, GRAPH_MANIFEST_DIR, branch, &ref) == OG_E_NOT_FOUND) {
        og_error_clear();
        rc = core_err(OG_E_NOT_FOUND, "branch '%s' does not exist", branch);
        core_err_detail(CORE_ERR_KEY, branch);
    }
    return rc;
}

/* A branch whose head is under another schema than the handle's accepted one: either an
 * apply moved the graph on (main's head has the branch's schema: `now` stays it) or the branch
 * started before an apply (made by a version that allowed that): refused typed, since its
 * writes would run under a schema the graph no longer accepts. */
static int branch_schema_check(write_graph *g, const char *branch, const graph_snapshot *snap,
                               const char *accepted, char now[GRAPH_SCHEMA_HASH_LEN + 1])
{
    graph_head *mh = NULL;
    int rc = graph_handle_head(g->h, &mh);
    if (rc) return rc;
    const char *main_schema = graph_head_snapshot(mh)->schema_identity;
    if (strcmp(main_schema, snap->schema_identity) != 0) {
        if (strcmp(main_schema, accepted) == 0)
            rc = core_err(OG_E_PRECONDITION_FAILED,
                          "branch '%s' is under schema %.12s, not the graph's schema %.12s: "
                          "its writes are refused (create it again from main)",
                          branch, snap->schema_identity, accepted);
        else
            snprintf(now, GRAPH_SCHEMA_HASH_LEN + 1, "%s", main_schema);
    }
    graph_head_release(mh);
    return rc;
}

/* The base after this write's own commit: the old state plus the intent's delta (table
 * versions and row counts, the new head), at manifest version mver. */
static void base_advance(write_graph *g, const graph_head *old, const write_intent *in,
                         uint64_t mver, lance_dataset *after)
{
    graph_snapshot *snap = NULL;
    graph_head *b = NULL;
    if (in->schema_target[0]) {
        /* A schema apply changes the registry (tables created, renamed, dropped) and the
         * schema: the commit's state is reduced from the manifest it wrote, not patched. */
        int rc = after ? graph_snapshot_from_dataset(&snap, after, in->branch, 0) : OG_E_NOT_FOUND;
        if (rc == 0 && graph_head_new(&b, after, snap) == 0) {
            graph_handle_install_branch(g->h, in->branch, b);
            graph_head_release(b);
        } else if (rc != 0) {
            og_error_clear();
            lance_dataset_free(after);
        }
        return;
    }
    if (graph_snapshot_copy(&snap, graph_head_snapshot(old)) != 0) {
        lance_dataset_free(after);
        return; /* only a cache: the next write re-reads */
    }
    snap->manifest_version = mver;
    memcpy(snap->head, in->commit_id, sizeof snap->head);
    if (in->kind != WRITE_KIND_OPTIMIZE)
        memcpy(snap->content_head, in->commit_id, sizeof snap->content_head);
    for (size_t i = 0; i < in->n_effects; i++) {
        const write_effect *e = &in->effects[i];
        graph_table *t = (graph_table *)graph_snapshot_table(snap, e->alias);
        if (t && e->achieved_version && e->achieved_version != e->expected_version) {
            t->version = e->achieved_version;
            t->row_count = e->row_count;
            if (e->fork) { /* now pinned on the branch's own fork */
                char *tb = core_strdup(e->table_branch);
                if (!tb) {
                    graph_snapshot_free(snap);
                    lance_dataset_free(after);
                    return;
                }
                core_free(t->table_branch);
                t->table_branch = tb;
            }
            const uint64_t *sum = write_effect_manifest_sum(e, e->achieved_version);
            t->has_manifest_xxh3 = sum != NULL; /* as write_rows_versions recorded it */
            t->manifest_xxh3 = sum ? *sum : 0;
        }
    }
    if (graph_head_new(&b, after, snap) != 0) /* takes after and snap */
        return;
    graph_handle_install_branch(g->h, in->branch, b);
    graph_head_release(b);
}

/* 1 when a sidecar that can overlap a write on `branch` (NULL: main) is on the store, 0 when
 * none is, or a negative error. */
static int overlapping_sidecars(write_graph *g, const char *branch)
{
    char(*ids)[GRAPH_ID_LEN + 1] = NULL;
    size_t n = 0;
    int rc = write_sidecar_list_overlapping(g->h->s, branch ? branch : "main", &ids, &n);
    core_free(ids);
    return rc != 0 ? rc : n != 0;
}

/* Stage D: fresh authority state under the gates. 0 = the read set holds; 1 = restart. When
 * the manifest moved without breaking the read set (a maintenance commit, or the manifest's
 * own compaction), *fresh is the manifest at the version checked, for the publish to build on
 * (the base's version is taken: a commit on it would lose and write its rows again). */
static int revalidate_inner(write_graph *g, const write_intent *in, const char *branch,
                            lance_dataset **fresh_ds)
{
    *fresh_ds = NULL;
    uint64_t latest = 0;
    char root[STORE_KEY_MAX];
    const lance_dataset *base_ds = in->base ? graph_head_manifest(in->base) : NULL;
    const lance_dataset *known =
        base_ds && lance_dataset_version(base_ds) == in->rs.manifest_version ? base_ds : NULL;
    int rc = 0;
    if (branch) { /* the branch is still the incarnation the write was prepared on */
        lance_branch ref;
        rc = lance_branch_get(g->h->s, GRAPH_MANIFEST_DIR, branch, &ref);
        if (rc == OG_E_NOT_FOUND) {
            og_error_clear();
            return core_err(OG_E_NOT_FOUND, "branch '%s' was deleted while this write ran", branch);
        }
        if (rc != 0) return rc;
        if (strcmp(ref.identity, in->rs.branch_identity) != 0) return 1;
    }
    rc = lance_branch_root(root, GRAPH_MANIFEST_DIR, branch);
    if (rc == 0)
        rc = latest_after(g, root, known ? known->naming : LANCE_NAMING_UNKNOWN,
                          known ? in->rs.manifest_version : 0, true, &latest);
    if (rc != 0) return rc;
    if (latest != in->rs.manifest_version) {
        graph_snapshot *fresh = NULL;
        lance_dataset *ds = NULL;
        rc = graph_manifest_snapshot(&ds, &fresh, g->h->s, branch, latest, LANCE_ACCESS_WRITE);
        if (rc == 0) rc = write_rs_check(&in->rs, fresh);
        graph_snapshot_free(fresh);
        if (rc != 0) lance_dataset_free(ds);
        if (rc == OG_E_READ_SET_CONFLICT) return 1;
        if (rc != 0) return rc;
        *fresh_ds = ds; /* the caller's on success only (revalidate frees it otherwise) */
    }
    /* An overlapping intent armed by someone else since our barrier (and not finished: we
     * hold the gates it would hold, so a writer outside them) must be recovered first. */
    if ((rc = overlapping_sidecars(g, branch)) != 0) return rc < 0 ? rc : 1;
    /* Every written table's Lance HEAD must still be its published version. A first-touch
     * effect forks from a version of its source branch, which never changes; a fork already
     * there under its name is an orphan the effect replaces (adapter_changes.c). */
    for (size_t i = 0; i < in->n_effects; i++) {
        const write_effect *e = &in->effects[i];
        if (e->fork) continue;
        uint64_t head = 0;
        lance_staged_info si = {0};
        if (e->staged) lance_staged_get_info(e->staged, &si);
        uint64_t pinned = si.read_version == e->expected_version ? si.read_version : 0;
        if ((rc = lance_branch_root(root, e->path, e->table_branch)) != 0 ||
            (rc = latest_after(g, root, si.naming, pinned, false, &head)) != 0)
            return rc;
        if (head != e->expected_version) {
            /* A writer that did not see ours (processes without shared gates) may have armed
             * its intent after our look and moved the table since, or even published and
             * finished: its intent, or the manifest it moved, is there now. Then this is a
             * race: start again (the barrier resolves, or waits for, that intent). */
            if ((rc = overlapping_sidecars(g, branch)) != 0) return rc < 0 ? rc : 1;
            uint64_t now = 0;
            if ((rc = lance_branch_root(root, GRAPH_MANIFEST_DIR, branch)) != 0 ||
                (rc = latest_after(g, root, known ? known->naming : LANCE_NAMING_UNKNOWN,
                                   known ? latest : 0, true, &now)) != 0)
                return rc;
            if (now != latest) return 1;
            /* Not a race (a race would have left an intent): the graph manifest lost the
             * version that published it, or a writer outside the protocol moved the table.
             * Retrying cannot help; repair can. */
            uint64_t hint = lance_hint_read(g->h->s, GRAPH_MANIFEST_DIR);
            char lost[160] = "";
            if (hint > in->rs.manifest_version)
                snprintf(lost, sizeof lost,
                         "; graph-manifest version %" PRIu64
                         " (named by the version hint) is missing",
                         hint);
            rc = core_err(OG_E_CORRUPT,
                          "table %s is at Lance version %" PRIu64
                          " but the graph publishes %" PRIu64 " (manifest version %" PRIu64
                          ") and no recovery intent covers the difference%s: the newest "
                          "graph-manifest version was lost, or a writer outside this protocol "
                          "changed the table. Writes stay refused until `omnigraph repair` "
                          "restores the published state",
                          e->alias, head, e->expected_version, in->rs.manifest_version, lost);
            core_err_detail(CORE_ERR_OBJECT, e->path);
            return rc;
        }
    }
    return 0;
}

static int revalidate(write_graph *g, const write_intent *in, const char *branch,
                      lance_dataset **fresh_ds)
{
    int rc = revalidate_inner(g, in, branch, fresh_ds);
    if (rc != 0) {
        lance_dataset_free(*fresh_ds);
        *fresh_ds = NULL;
    }
    return rc;
}

/* After an effect or publish failure the sidecar stays. Try to resolve it at once (we are its
 * owner and have let go of it); report what the caller must know. 1: recovery completed the
 * write (it is committed under its own id, at manifest version *mver). */
static int after_effect_failure(write_graph *g, const write_intent *in, int cause, uint64_t *mver)
{
    char saved[1024];
    snprintf(saved, sizeof saved, "%s", og_error_last()->message);
    bool done = false;
    int rr = write_recover_one(g, in->operation_id, &done);
    if (rr == 0 && done) {
        /* Recovery either completed the write (every effect had landed: the commit is now
         * visible with this write's own id) or undid it. */
        graph_snapshot *snap = NULL;
        bool visible = false;
        if (graph_snapshot_load(&snap, g->h->s, in->branch, 0, GRAPH_SNAP_LINEAGE) == 0)
            for (size_t i = 0; i < snap->n_commits && !visible; i++)
                if ((visible = strcmp(snap->commits[i].id, in->commit_id) == 0))
                    *mver = snap->commits[i].manifest_version;
        graph_snapshot_free(snap);
        if (visible) return 1;
        int rc =
            core_err(cause, "%s (the write was undone by recovery; the graph is unchanged)", saved);
        core_err_detail(CORE_ERR_OPERATION_ID, in->operation_id);
        return rc;
    }
    int rc = core_err(OG_E_RECOVERY_REQUIRED,
                      "write %s failed after its first effect (%s); its recovery intent is kept "
                      "and the next write or read-write open resolves it",
                      in->operation_id, saved);
    core_err_detail(CORE_ERR_OPERATION_ID, in->operation_id);
    return rc;
}

/* Derived work after visibility (stage H): keep fragment counts bounded so the cost of a
 * write stays flat in history depth, on every branch (a branch compacts its own forks and its
 * own manifest). Failures are logged, never returned: the write is done. */
static void maintain_now(write_graph *g, const char *branch, const char *const *tables, size_t n,
                         bool manifest_due)
{
    if (n) {
        write_optimize_options oo = WRITE_OPTIMIZE_OPTIONS_INIT;
        oo.tables = tables;
        oo.n_tables = n;
        oo.auto_maintenance = true;
        oo.branch = branch;
        write_result r;
        if (write_optimize(g, &oo, &r) != 0)
            core_log(CORE_LOG_WARN, "automatic optimize of branch %s skipped: %s",
                     branch ? branch : "main", og_error_last()->message);
    }
    bool compacted = false;
    if (manifest_due && write_compact_manifest(g, branch, true, &compacted) != 0)
        core_log(CORE_LOG_WARN, "automatic manifest compaction of branch %s skipped: %s",
                 branch ? branch : "main", og_error_last()->message);
}

/* ---- the maintenance worker ----------------------------------------------------------------
 * One thread per writer, started on first need. Requests coalesce: per branch, a set of
 * table aliases due for optimize and whether the manifest is. The worker takes the whole set,
 * runs it through the coordinator (gates, recovery barrier, its own commit) like any writer,
 * one branch at a time, and goes back to sleep; a user write that arrives meanwhile simply
 * queues behind the gates it needs. Closing the writer runs what is queued, so a one-shot CLI
 * process still keeps its graph maintained. A branch deleted meanwhile fails its maintenance
 * typed (logged), like any write on it. */
typedef struct maint_item {
    char *branch; /* NULL: main */
    char *alias;  /* NULL: the branch's graph manifest */
} maint_item;

typedef struct maint_queue {
    pthread_mutex_t mu;
    pthread_cond_t work, idle;
    pthread_t thread;
    bool started, stop, busy;
    maint_item *items;
    size_t n, cap;
} maint_queue;

static bool maint_pending(const maint_queue *q)
{
    return q->n > 0;
}

static bool same_opt(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static void maint_items_free(maint_item *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        core_free(items[i].branch);
        core_free(items[i].alias);
    }
    core_free(items);
}

/* Run a batch: for each branch in first-queued order, its tables and its manifest. */
static void maint_run(write_graph *g, const maint_item *items, size_t n)
{
    const char **tables = n ? core_malloc(n * sizeof *tables) : NULL;
    if (n && !tables) {
        core_log(CORE_LOG_WARN, "maintenance skipped: out of memory");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = same_opt(items[k].branch, items[i].branch);
        if (seen) continue;
        size_t nt = 0;
        bool manifest_due = false;
        for (size_t k = i; k < n; k++) {
            if (!same_opt(items[k].branch, items[i].branch)) continue;
            if (items[k].alias)
                tables[nt++] = items[k].alias;
            else
                manifest_due = true;
        }
        maintain_now(g, items[i].branch, tables, nt, manifest_due);
    }
    core_free(tables);
}

static void *maint_worker(void *arg)
{
    write_graph *g = arg;
    maint_queue *q = g->maint_;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->stop && !maint_pending(q))
            pthread_cond_wait(&q->work, &q->mu);
        if (!maint_pending(q)) break; /* stopping, and nothing is left */
        maint_item *items = q->items;
        size_t n = q->n;
        q->items = NULL;
        q->n = q->cap = 0;
        q->busy = true;
        pthread_mutex_unlock(&q->mu);
        maint_run(g, items, n);
        maint_items_free(items, n);
        pthread_mutex_lock(&q->mu);
        q->busy = false;
        pthread_cond_broadcast(&q->idle);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* Add (branch, alias) to the queue unless it is there (q->mu held). */
static int maint_add(maint_queue *q, const char *branch, const char *alias)
{
    for (size_t k = 0; k < q->n; k++)
        if (same_opt(q->items[k].branch, branch) && same_opt(q->items[k].alias, alias)) return 0;
    if (q->n == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 8;
        maint_item *t = core_realloc(q->items, cap * sizeof *t);
        if (!t) return core_err_nomem();
        q->items = t;
        q->cap = cap;
    }
    maint_item it = {NULL, NULL};
    if ((branch && !(it.branch = core_strdup(branch))) ||
        (alias && !(it.alias = core_strdup(alias)))) {
        core_free(it.branch);
        return core_err_nomem();
    }
    q->items[q->n++] = it;
    return 0;
}

/* Queue the work; 0, or an error when it could not be queued (the caller runs it inline). */
static int maint_enqueue(write_graph *g, const char *branch, const char *const *tables, size_t n,
                         bool manifest_due)
{
    pthread_mutex_lock((pthread_mutex_t *)g->lock_);
    if (!g->maint_) {
        maint_queue *nq = core_calloc(1, sizeof *nq);
        if (nq) {
            pthread_mutex_init(&nq->mu, NULL);
            pthread_cond_init(&nq->work, NULL);
            pthread_cond_init(&nq->idle, NULL);
            g->maint_ = nq;
        }
    }
    maint_queue *q = g->maint_;
    pthread_mutex_unlock((pthread_mutex_t *)g->lock_);
    if (!q) return core_err_nomem();
    int rc = 0;
    pthread_mutex_lock(&q->mu);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = maint_add(q, branch, tables[i]);
    if (rc == 0 && manifest_due) rc = maint_add(q, branch, NULL);
    if (rc == 0 && !q->started) {
        if (pthread_create(&q->thread, NULL, maint_worker, g) != 0)
            rc = core_err(OG_E_INTERNAL, "could not start the maintenance worker");
        else
            q->started = true;
    }
    if (rc == 0) pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->mu);
    return rc;
}

void write_maintenance_drain(write_graph *g)
{
    pthread_mutex_lock((pthread_mutex_t *)g->lock_);
    maint_queue *q = g->maint_;
    pthread_mutex_unlock((pthread_mutex_t *)g->lock_);
    if (!q) return;
    pthread_mutex_lock(&q->mu);
    while (q->started && (q->busy || maint_pending(q)))
        pthread_cond_wait(&q->idle, &q->mu);
    pthread_mutex_unlock(&q->mu);
}

static void maint_stop(write_graph *g)
{
    maint_queue *q = g->maint_;
    if (!q) return;
    pthread_mutex_lock(&q->mu);
    q->stop = true;
    bool started = q->started;
    pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->mu);
    if (started) pthread_join(q->thread, NULL);
    maint_items_free(q->items, q->n);
    pthread_cond_destroy(&q->work);
    pthread_cond_destroy(&q->idle);
    pthread_mutex_destroy(&q->mu);
    core_free(q);
    g->maint_ = NULL;
}

/* What this write made due, run now or handed to the worker. */
/* Hand the tables this write published to the writer's hook (after the visibility point:
 * they are the graph's now). */
static void announce(write_graph *g, write_intent *in)
{
    if (!g->on_commit || in->branch) return;
    for (size_t i = 0; i < in->n_effects; i++) {
        write_effect *e = &in->effects[i];
        if (!e->after || e->achieved_version <= e->expected_version) continue;
        write_committed_table t = {
            .path = e->path,
            .table_branch = e->table_branch,
            .kind = e->kind,
            .from_version = e->expected_version,
            .to_version = e->achieved_version,
            .ds = &e->after,
            .rewrite = in->kind == WRITE_KIND_OPTIMIZE,
            .id = in->kind == WRITE_KIND_OPTIMIZE ? NULL : e->app_id,
            .src = in->kind == WRITE_KIND_OPTIMIZE ? NULL : e->app_src,
            .dst = in->kind == WRITE_KIND_OPTIMIZE ? NULL : e->app_dst,
        };
        g->on_commit(g->on_commit_arg, &t);
    }
}

static void maintain(write_graph *g, const char *branch, const write_intent *in, bool tables_too,
                     bool manifest_due)
{
    size_t n = 0;
    for (size_t i = 0; tables_too && i < in->n_effects; i++)
        n += in->effects[i].compact_due;
    if (n == 0 && !manifest_due) return;
    const char **tables = n ? core_malloc(n * sizeof *tables) : NULL;
    if (n && !tables) {
        /* derived work: the next write that finds it due tries again */
        core_log(CORE_LOG_WARN, "maintenance skipped: out of memory");
        return;
    }
    n = 0;
    for (size_t i = 0; tables_too && i < in->n_effects; i++)
        if (in->effects[i].compact_due) tables[n++] = in->effects[i].alias;
    if (!g->background_maintenance || maint_enqueue(g, branch, tables, n, manifest_due) != 0)
        maintain_now(g, branch, tables, n, manifest_due);
    core_free(tables);
}

/* One table the committed write changed: counted in res and told to opt->on_table. */
static void report_table(write_result *res, const write_options *opt, const char *alias,
                         uint64_t from_version, uint64_t to_version, uint64_t row_count)
{
    res->n_tables++;
    if (opt->on_table) opt->on_table(opt->on_table_arg, alias, from_version, to_version, row_count);
}

/* A write recovery completed for us (rolled forward at manifest version mver): report its
 * tables as that commit pins them, like a write that published itself. The commit is already
 * visible, so a failure to read it back is logged, not returned. */
static void report_recovered(write_graph *g, const write_intent *in, uint64_t mver,
                             const write_options *opt, write_result *res)
{
    res->manifest_version = mver;
    graph_snapshot *snap = NULL;
    if (graph_snapshot_load(&snap, g->h->s, in->branch, mver, 0) != 0) {
        core_log(CORE_LOG_WARN,
                 "write %s was completed by recovery, but its tables could not "
                 "be read back: %s",
                 in->operation_id, og_error_last()->message);
        return;
    }
    for (size_t i = 0; i < in->n_effects; i++) {
        const graph_table *t = graph_snapshot_table(snap, in->effects[i].alias);
        if (t)
            report_table(res, opt, t->alias, in->effects[i].expected_version, t->version,
                         t->row_count);
    }
    graph_snapshot_free(snap);
}

static void note_restart(write_graph *g, write_result *res)
{
    write_stats d = {0};
    d.reprepares = 1;
    write_stats_add(g, &d);
    res->reprepares++;
}

/* Attempts of one write. A write that had to restart after the gates (another writer
 * published under it) keeps its gates in *held and prepares again under them, so a busy
 * branch does not make it lose again and again: it waited its turn once. */
static int write_run_attempts(write_graph *g, const write_adapter *ad, const void *input,
                              const write_options *opt, write_result *res, write_gate_set **held)
{
    const char *branch = opt->branch && strcmp(opt->branch, "main") != 0 ? opt->branch : NULL;
    unsigned max_re = opt->max_reprepare ? opt->max_reprepare : WRITE_MAX_REPREPARE;
    memset(res, 0, sizeof *res);
    int rc = 0;
    /* The branch incarnation the write was asked of: a restart that finds the name deleted and
     * created again fails typed instead of writing into the new branch. */
    char first_identity[LANCE_BRANCH_IDENTITY_CAP] = "";
    for (unsigned attempt = 0;; attempt++) {
        /* A: recovery barrier — resolve, or fail typed; never "schedule and continue". With
         * gates kept from the last attempt, no writer of this host can arm an intent, and one
         * that is there already (it would need our gates to be resolved) makes us let go. */
        size_t resolved = 0;
        if (*held && overlapping_sidecars(g, branch) != 0) {
            og_error_clear(); /* the barrier below lists again, and reports */
            write_gate_set_release(*held);
            *held = NULL;
        }
        if (!*held && (rc = write_recover(g, branch ? branch : "main", &resolved)) != 0) return rc;

        /* B: prepare without gates, against a base captured after the barrier. */
        uint64_t t0 = core_mono_ns();
        const graph_snapshot *snap = NULL;
        write_intent in;
        memset(&in, 0, sizeof in);
        graph_head *wb = NULL;
        if ((rc = base_acquire(g, branch, &wb)) != 0) return rc;
        snap = graph_head_snapshot(wb); /* borrowed from the immutable base */
        in.base = wb;
        if (attempt == 0) {
            memcpy(first_identity, snap->branch_identity, sizeof first_identity);
        } else if (strcmp(first_identity, snap->branch_identity) != 0) {
            rc = core_err(OG_E_READ_SET_CONFLICT,
                          "branch '%s' was deleted and created again while this write ran",
                          branch ? branch : "main");
            core_err_detail(CORE_ERR_MEMBER, "branch_identity");
            core_err_detail(CORE_ERR_EXPECTED, first_identity);
            core_err_detail(CORE_ERR_ACTUAL, snap->branch_identity);
            graph_head_release(wb);
            return rc;
        }
        char accepted[GRAPH_SCHEMA_HASH_LEN + 1];
        graph_handle_accepted(g->h, accepted);
        if (strcmp(snap->schema_identity, accepted) != 0) {
            /* A schema apply committed since this request was prepared under the accepted
             * schema: the handle takes the new one, and the request, made under the old,
             * fails typed (never a write under a stale schema); made again, it runs under
             * the new one. */
            char now[GRAPH_SCHEMA_HASH_LEN + 1];
            snprintf(now, sizeof now, "%s", snap->schema_identity);
            if (branch && (rc = branch_schema_check(g, branch, snap, accepted, now)) != 0) {
                graph_head_release(wb);
                return rc;
            }
            graph_head_release(wb);
            if (graph_handle_accept_schema(g->h, now) != 0) og_error_clear();
            rc = core_err(OG_E_CONFLICT,
                          "the graph's schema changed (from %s to %s) after this request was "
                          "prepared; run it again",
                          accepted, now);
            core_err_detail(CORE_ERR_MEMBER, "schema_identity");
            core_err_detail(CORE_ERR_EXPECTED, accepted);
            core_err_detail(CORE_ERR_ACTUAL, now);
            return rc;
        }
        /* The precondition names content: a maintenance commit since (which changed no
         * content) does not break it, so the head or the last content commit both match. */
        if (opt->if_commit && strcmp(opt->if_commit, snap->head) != 0 &&
            strcmp(opt->if_commit, snap->content_head) != 0) {
            rc = core_err(OG_E_PRECONDITION_FAILED, "branch %s is at commit %s, not %s",
                          branch ? branch : "main", snap->head[0] ? snap->head : "(none)",
                          opt->if_commit);
            core_err_detail(CORE_ERR_EXPECTED, opt->if_commit);
            core_err_detail(CORE_ERR_ACTUAL, snap->head);
            graph_head_release(wb);
            return rc;
        }
        in.format = WRITE_SIDECAR_FORMAT;
        in.kind = ad->kind;
        if (branch && !(in.branch = core_strdup(branch))) {
            graph_head_release(wb);
            return core_err_nomem();
        }
        in.started_at_us = write_now_us();
        in.created_at_us = in.started_at_us;
        write_rs_capture(&in.rs, snap);
        memcpy(in.parent_commit_id, snap->head, sizeof in.parent_commit_id);
        memcpy(in.content_parent, snap->content_head, sizeof in.content_parent);
        if ((rc = new_id(in.operation_id)) != 0 || (rc = new_id(in.commit_id)) != 0 ||
            (rc = new_id(in.rollback_commit_id)) != 0 ||
            (g->h->actor && !(in.actor = core_strdup(g->h->actor)))) {
            if (rc == 0) rc = core_err_nomem();
            graph_head_release(wb);
            write_intent_clear(&in);
            return rc;
        }
        rc = ad->prepare(g, input, snap, &in);
        write_stats d = {0};
        d.prepare_ns = core_mono_ns() - t0;
        write_stats_add(g, &d);
        if (rc == OG_E_NOT_FOUND && !branch && attempt + 1 < max_re && base_was_stale(g, wb)) {
            /* prepared on a base cleanup had since removed files of: start again */
            og_error_clear();
            graph_head_release(wb);
            write_intent_clear(&in);
            note_restart(g, res);
            continue;
        }
        if (rc != 0) {
            graph_head_release(wb);
            write_intent_clear(&in);
            return rc;
        }
        memcpy(res->operation_id, in.operation_id, sizeof res->operation_id);
        if (in.n_effects == 0 && !in.publish_always) {
            /* Nothing to change: no effect, no graph commit. */
            graph_head_release(wb);
            write_intent_clear(&in);
            memset(&d, 0, sizeof d);
            d.noops = 1;
            write_stats_add(g, &d);
            return 0;
        }

        WRITE_TEST_HOOK(g, test_after_prepare, test_arg);

        /* C: the complete gate set in the total order (or the kept one, if it covers it). */
        write_gate_set *gates = NULL;
        if (*held && gates_cover(*held, &in)) {
            gates = *held;
        } else {
            write_gate_set_release(*held);
            if ((rc = write_intent_gates(g, &in, &gates)) != 0) {
                *held = NULL;
                graph_head_release(wb);
                write_intent_clear(&in);
                return rc;
            }
        }
        *held = NULL;
        uint64_t held0 = core_mono_ns();

        /* D: revalidate the complete read set, or discard everything and start again. */
        lance_dataset *fresh_base = NULL;
        rc = OG_FAILPOINT("write.pre_revalidate");
        if (rc == 0) rc = revalidate(g, &in, branch, &fresh_base);
        if (rc == 0 && ad->recheck && (rc = ad->recheck(g, input, &in)) != 0) {
            lance_dataset_free(fresh_base);
            fresh_base = NULL;
        }
        if (rc == 1) {
            /* The cached base may be one cleanup removed (the pre-gate probe does not look
             * twice): the next attempt captures the latest afresh. The gates are kept for it. */
            graph_handle_forget(g->h, wb);
            *held = gates;
            graph_head_release(wb);
            write_intent_clear(&in);
            note_restart(g, res);
            if (attempt + 1 >= max_re)
                return core_err(OG_E_READ_SET_CONFLICT,
                                "the graph kept changing under this write: %u attempt%s", max_re,
                                max_re == 1 ? "" : "s");
            continue;
        }
        if (rc != 0) {
            write_gate_set_release(gates);
            graph_head_release(wb);
            write_intent_clear(&in);
            return rc;
        }

        WRITE_TEST_HOOK(g, test_before_arm, test_before_arm_arg);

        /* E: arm recovery — the sidecar is durable before the first physical effect, and its
         * lock proves to recovery that its owner is alive. */
        char key[STORE_KEY_MAX];
        write_sidecar_key(key, in.operation_id);
        store_lock *owner = NULL;
        rc = owner_take(g, in.owner_lock, &owner);
        if (rc == 0) rc = OG_FAILPOINT("write.pre_sidecar");
        /* Written unsynced: the first effect's commit makes it durable in its own batch of
         * syncs, before it links anything (one sync round fewer per write). Unless that effect
         * is a first-touch fork, whose first durable step (the fork) has no batch to carry it:
         * then written durably at once (one store operation instead of a put and a sync). */
        in.owner_pid = (int64_t)getpid();
        if (rc == 0)
            rc = in.n_effects && in.effects[0].fork ? write_sidecar_put(g->h->s, &in)
                                                    : write_sidecar_put_unsynced(g->h->s, &in);
        if (rc != 0) {
            /* No effect happened; a sidecar that did land is discarded by the next barrier. */
            lance_dataset_free(fresh_base);
            store_lock_release_remove(owner);
            write_gate_set_release(gates);
            graph_head_release(wb);
            write_intent_clear(&in);
            return rc;
        }

        /* F: effects, each at exactly its expected version + 1. */
        rc = OG_FAILPOINT("write.post_sidecar");
        if (rc == 0) WRITE_TEST_HOOK(g, test_in_gates, test_in_gates_arg);
        if (rc == 0) rc = ad->apply(g, &in);
        /* An apply that committed nothing did not carry the sidecar: durable before publish. */
        if (rc == 0) rc = write_sidecar_sync(g->h->s, &in);
        if (rc == 0) rc = OG_FAILPOINT("write.pre_publish");

        /* G: exactly one conditional graph-manifest commit. */
        uint64_t mver = 0;
        lance_dataset *after = NULL;
        if (rc == 0)
            rc = write_publish(g, branch, &in.rs, fresh_base ? fresh_base : graph_head_manifest(wb),
                               ad->rows, &in, &mver, &after);
        lance_dataset_free(fresh_base);
        fresh_base = NULL;
        bool mdue = after && after->m && write_compact_due(after);
        if (rc == 0)
            base_advance(g, wb, &in, mver, after); /* takes after */
        else
            lance_dataset_free(after);
        graph_head_release(wb);
        wb = NULL;
        if (rc != 0) {
            store_lock_release_remove(owner);
            write_gate_set_release(gates);
            uint64_t recovered_at = 0;
            rc = after_effect_failure(g, &in, rc, &recovered_at);
            if (rc != 1) {
                write_intent_clear(&in);
                return rc;
            }
            /* Completed by recovery: report it as committed, with its version and tables. */
            res->committed = true;
            memcpy(res->commit_id, in.commit_id, sizeof res->commit_id);
            report_recovered(g, &in, recovered_at, opt, res);
            write_intent_clear(&in);
            return 0;
        }

        /* H: finalize. The commit is durable and visible; a failure to delete the sidecar is
         * harmless (the next barrier proves the intent published and removes it). For the same
         * reason the delete is not synced: a sidecar a power loss brings back names a visible
         * commit, which recovery completes (no sync round after the visibility point). */
        /* A schema apply's root mirror is rewritten while its sidecar still stands and its
         * gates are held: a crash before the mirror is whole leaves the intent, whose recovery
         * finds the commit visible and mirrors it then; and no later apply's mirror can be
         * overwritten by this one's. */
        if (in.schema_target[0]) write_schema_promote(g, in.schema_target);
        bool finalized = OG_FAILPOINT("write.post_publish") == 0;
        if (finalized && store_delete(g->h->s, key, STORE_F_NOSYNC | STORE_F_RECYCLE) != 0) {
            finalized = false;
            core_log(CORE_LOG_WARN, "could not delete sidecar %s: %s (next write finalizes it)",
                     key, og_error_last()->message);
        }
        if (finalized)
            owner_return(g, in.owner_lock, owner);
        else
            store_lock_release_remove(owner); /* the sidecar names it: show recovery it ended */
        write_gate_set_release(gates);
        res->committed = true;
        memcpy(res->commit_id, in.commit_id, sizeof res->commit_id);
        res->manifest_version = mver;
        for (size_t i = 0; i < in.n_effects; i++)
            report_table(res, opt, in.effects[i].alias, in.effects[i].expected_version,
                         in.effects[i].achieved_version, in.effects[i].row_count);
        memset(&d, 0, sizeof d);
        d.writes = 1;
        d.gate_hold_ns = core_mono_ns() - held0;
        write_stats_add(g, &d);
        announce(g, &in);
        maintain(g, branch, &in, ad->kind != WRITE_KIND_OPTIMIZE, mdue);
        write_intent_clear(&in);
        return 0;
    }
}

static int write_run(write_graph *g, const write_adapter *ad, const void *input,
                     const write_options *opt, write_result *res)
{
    write_gate_set *held = NULL;
    int rc = write_run_attempts(g, ad, input, opt, res, &held);
    write_gate_set_release(held);
    return rc;
}

int write_run_kind(write_graph *g, int kind, const void *input, const write_options *opt,
                   write_result *res)
{
    const write_adapter *ad = adapter_of(kind);
    if (!ad) return core_err(OG_E_INTERNAL, "no adapter for write kind %d", kind);
    return write_run(g, ad, input, opt, res);
}

int write_changes(write_graph *g, int kind, const graph_change_set *cs, const write_options *opt,
                  write_result *res)
{
    write_options def = WRITE_OPTIONS_INIT;
    if (!opt) opt = &def;
    if (g->h->readonly) return core_err(OG_E_BAD_REQUEST, "the graph is open read-only");
    if (kind != WRITE_KIND_LOAD && kind != WRITE_KIND_MUTATION)
        return core_err(OG_E_BAD_REQUEST, "write kind %d does not take a change set", kind);
    write_changes_input ci = {cs, NULL, NULL, NULL};
    return write_run(g, adapter_of(kind), &ci, opt, res);
}

int write_changes_stream(write_graph *g, int kind, const write_change_stream *src,
                         const write_options *opt, write_result *res)
{
    write_options def = WRITE_OPTIONS_INIT;
    if (!opt) opt = &def;
    if (g->h->readonly) return core_err(OG_E_BAD_REQUEST, "the graph is open read-only");
    if (kind != WRITE_KIND_LOAD)
        return core_err(OG_E_BAD_REQUEST, "write kind %d does not take a change stream", kind);
    write_changes_input ci = {NULL, NULL, NULL, src};
    return write_run(g, adapter_of(kind), &ci, opt, res);
}

int write_mutation(write_graph *g, write_build_fn build, void *arg, const write_options *opt,
                   write_result *res)
{
    write_options def = WRITE_OPTIONS_INIT;
    if (!opt) opt = &def;
    if (g->h->readonly) return core_err(OG_E_BAD_REQUEST, "the graph is open read-only");
    write_changes_input ci = {NULL, build, arg, NULL};
    return write_run(g, adapter_of(WRITE_KIND_MUTATION), &ci, opt, res);
}

int write_optimize(write_graph *g, const write_optimize_options *opt, write_result *res)
{
    write_optimize_options def = WRITE_OPTIMIZE_OPTIONS_INIT;
    if (!opt) opt = &def;
    if (g->h->readonly) return core_err(OG_E_BAD_REQUEST, "the graph is open read-only");
    write_options wo = WRITE_OPTIONS_INIT;
    /* Inline maintenance yields to user writes: one attempt, no re-prepare storm. On the
     * background worker it must not starve behind a steady stream of writes: it re-prepares
     * like any writer. */
    wo.max_reprepare = opt->auto_maintenance && !g->background_maintenance ? 1 : 0;
    wo.branch = opt->branch;
    return write_run(g, adapter_of(WRITE_KIND_OPTIMIZE), opt, &wo, res);
}
