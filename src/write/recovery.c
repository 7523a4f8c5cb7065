/* Recovery (RFC-022 §4.1, §5): resolve one armed intent whose owner is gone, by exact effect
 * identity — a table has moved because of this intent only if the transaction at the version
 * after its expected one carries the intent's pre-recorded uuid; "a newer version exists" is
 * never proof. Outcomes:
 *   - the intent's commit (or its rollback commit) is visible: finalize (audit, delete);
 *   - no table moved by its transaction: discard the intent (audit, delete). That includes a
 *     table the branch now publishes past the intent's expected version when the version after
 *     the expected one is another transaction's (a writer that did not see the intent won);
 *   - every table moved by exactly its own transaction and the branch head is still the one
 *     the intent was built on: roll forward (publish the delta with the original lineage);
 *   - some moved, some did not, or all did but the head moved on (another write published
 *     first): roll back the moved ones with Restore (rollback plan persisted in the sidecar
 *     first, each restore with a pre-minted uuid) and publish a rollback commit so every pin
 *     equals its Lance HEAD;
 *   - anything else (an unpublished foreign commit on a table, a branch deleted and created
 *     again): fail typed recovery_required and touch nothing.
 * Recovery acts only under the intent's gates and its owner lock (proof the owner is gone). */
#include "write/internal.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/failpoint.h"
#include "core/log.h"
#include "core/ulid.h"
#include "lance/branch.h"
#include "lance/cleanup.h"
#include "lance/manifest.h"
#include "lance/paths.h"
#include "lance/restore.h"
#include "lance/txn.h"
#include "lance/version.h"
#include "lang/catalog.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef enum effect_state {
    EFFECT_NO_MOVEMENT = 1, /* HEAD == expected */
    EFFECT_OWN_AT_HEAD,     /* HEAD == expected + 1 and that version is our transaction */
    EFFECT_NOT_OURS,        /* the branch publishes the table past expected, and version
                             * expected + 1 (the only one our transaction could have made) is
                             * another transaction's: ours never happened */
    EFFECT_FOREIGN,         /* anything else */
} effect_state;

typedef struct classified {
    int state;
    uint64_t head;
} classified;

static int table_root(char out[STORE_KEY_MAX], const write_effect *e)
{
    return lance_branch_root(out, e->path, e->table_branch);
}

/* Whether version v of the table at root was made by a transaction other than `uuid` (one
 * without a recorded transaction is not ours either). *other stays false when v is ours or is
 * gone (cleaned up: then which transaction made it cannot be told). */
static int version_is_other(store *s, const char *root, lance_naming naming, uint64_t v,
                            const char *uuid, bool *other)
{
    *other = false;
    lance_manifest *m = NULL;
    char *made_by = NULL;
    int rc = lance_version_load(s, root, v, naming, LANCE_ACCESS_READ, &m);
    if (rc == OG_E_NOT_FOUND) {
        og_error_clear();
        return 0;
    }
    if (rc == 0) rc = lance_txn_load_uuid(s, root, m, &made_by);
    if (rc == OG_E_NOT_FOUND) {
        og_error_clear();
        *other = true;
        rc = 0;
    } else if (rc == 0) {
        *other = !made_by || strcmp(made_by, uuid) != 0;
    }
    core_free(made_by);
    lance_manifest_free(m);
    return rc;
}

/* pin: the table's version in the branch's current snapshot. same_incarnation: that snapshot
 * is of the branch incarnation the intent was armed on (only then does a pin that moved past
 * the intent's expected version say anything about it). */
static int classify_raw(store *s, const write_effect *e, uint64_t pin, bool same_incarnation,
                        classified *out)
{
    char root[STORE_KEY_MAX];
    lance_naming naming;
    int rc = table_root(root, e);
    if (rc == 0) rc = lance_version_latest(s, root, &out->head, &naming);
    if (rc == OG_E_NOT_FOUND && e->fork) { /* a first touch that never forked */
        og_error_clear();
        out->head = e->expected_version;
        out->state = pin == e->expected_version ? EFFECT_NO_MOVEMENT
                     : same_incarnation         ? EFFECT_NOT_OURS
                                                : EFFECT_FOREIGN;
        return 0;
    }
    if (rc != 0) return rc;
    if (pin != e->expected_version) {
        /* Another writer published the table past the version this intent expected (writers
         * that did not see each other's intents: processes without shared gates). Our
         * transaction commits at exactly expected + 1 or nowhere, so another's there proves
         * ours never happened. */
        bool other = false;
        if (same_incarnation && pin > e->expected_version && out->head > e->expected_version &&
            (rc = version_is_other(s, root, naming, e->expected_version + 1, e->uuid, &other)) != 0)
            return rc;
        out->state = other ? EFFECT_NOT_OURS : EFFECT_FOREIGN;
        return 0;
    }
    if (out->head == e->expected_version) {
        out->state = EFFECT_NO_MOVEMENT;
        return 0;
    }
    if (out->head == e->expected_version + 1) {
        uint64_t v = 0;
        rc = lance_find_txn_version(s, root, e->uuid, e->expected_version + 1, &v);
        if (rc == OG_E_NOT_FOUND) {
            out->state = EFFECT_FOREIGN;
            return 0;
        }
        if (rc != 0) return rc;
        out->state = v == out->head ? EFFECT_OWN_AT_HEAD : EFFECT_FOREIGN;
        return 0;
    }
    out->state = EFFECT_FOREIGN;
    return 0;
}

static int classify_effect(store *s, const write_effect *e, uint64_t pin, bool same_incarnation,
                           classified *out)
{
    int rc = classify_raw(s, e, pin, same_incarnation, out);
    /* A fork the graph branch does not pin is invisible: unless it holds this intent's own
     * commit, nothing of the intent happened there (it is an orphan the next first touch
     * replaces) and nothing in it needs restoring. */
    if (rc == 0 && e->fork && pin == e->expected_version && out->state == EFFECT_FOREIGN) {
        out->state = EFFECT_NO_MOVEMENT;
        out->head = e->expected_version;
    }
    return rc;
}

static bool commit_visible(const graph_snapshot *snap, const char *id)
{
    for (size_t i = 0; i < snap->n_commits; i++)
        if (strcmp(snap->commits[i].id, id) == 0) return true;
    return false;
}

static int outcomes_json(const write_intent *in, const uint64_t *from, const uint64_t *to,
                         core_buf *out)
{
    int rc = core_buf_append_str(out, "[");
    for (size_t i = 0; rc == 0 && i < in->n_effects; i++)
        rc = core_buf_printf(
            out, "%s{\"table_key\":\"%s\",\"from_version\":%" PRIu64 ",\"to_version\":%" PRIu64 "}",
            i ? "," : "", in->effects[i].alias, from ? from[i] : in->effects[i].expected_version,
            to ? to[i] : in->effects[i].expected_version);
    if (rc == 0) rc = core_buf_append_str(out, "]");
    if (rc == 0) rc = core_buf_append_byte(out, 0);
    return rc;
}

/* Audit, then delete the sidecar. */
static int finalize(write_graph *g, const write_intent *in, int kind, const char *commit_id,
                    const uint64_t *from, const uint64_t *to)
{
    core_buf oj = CORE_BUF_INIT;
    int rc = outcomes_json(in, from, to, &oj);
    if (rc == 0) rc = OG_FAILPOINT("recovery.pre_audit");
    if (rc == 0) rc = write_audit_record(g->h->s, in, kind, commit_id, (const char *)oj.data);
    core_buf_free(&oj);
    if (rc != 0) return rc;
    char key[STORE_KEY_MAX];
    write_sidecar_key(key, in->operation_id);
    if ((rc = OG_FAILPOINT("recovery.pre_sidecar_delete")) != 0) return rc;
    if ((rc = store_delete(g->h->s, key, 0)) != 0) return rc;
    write_stats d = {0};
    d.recoveries = 1;
    write_stats_add(g, &d);
    core_log(CORE_LOG_INFO, "recovery: %s %s (%s)", write_recovery_kind_name(kind),
             in->operation_id, write_kind_name(in->kind));
    return 0;
}

static int needs_operator(const write_intent *in, const char *why)
{
    int rc = core_err(OG_E_RECOVERY_REQUIRED,
                      "interrupted write %s (%s) cannot be resolved automatically: %s. Nothing "
                      "was changed; writes to this branch stay blocked until an operator "
                      "resolves it: `omnigraph recover show %s`, then `omnigraph recover "
                      "resolve %s`",
                      in->operation_id, write_kind_name(in->kind), why, in->operation_id,
                      in->operation_id);
    core_err_detail(CORE_ERR_OPERATION_ID, in->operation_id);
    return rc;
}

/* ---- roll forward -------------------------------------------------------------------------- */

typedef struct forward_ctx {
    const write_intent *in;
    const uint64_t *versions;
    const uint64_t *counts;
} forward_ctx;

static int forward_rows(void *arg, const graph_snapshot *cur, uint64_t mver, graph_rows *rows)
{
    (void)cur;
    const forward_ctx *f = arg;
    const write_intent *in = f->in;
    int rc = write_rows_versions(rows, in, f->versions, f->counts, NULL, false);
    if (rc == 0) rc = write_rows_schema(rows, in, mver);
    if (rc == 0)
        rc = write_rows_lineage(rows, in, in->commit_id, in->parent_commit_id, in->actor,
                                in->created_at_us, mver, in->kind == WRITE_KIND_OPTIMIZE);
    return rc;
}

/* An intent written by write_repair (its actor says so). */
static bool is_repair(const write_intent *in)
{
    return in->actor && strcmp(in->actor, WRITE_ACTOR_REPAIR) == 0;
}

/* How a finished repair intent is audited: forced past acknowledged commits, or not. */
static int repair_kind(const write_intent *in)
{
    return in->repair_mode == WRITE_REPAIR_FORCED ? WRITE_RECOVERY_REPAIRED_FORCED
                                                  : WRITE_RECOVERY_REPAIRED;
}

/* A forward repair's commit: each effect's table pinned at effect.expected_version (the HEAD
 * repair found ahead of the intact pin), on top of the intact head, as a content commit (it
 * carries what the lost versions published). */
typedef struct repair_fwd_ctx {
    const write_intent *in;
    const uint64_t *counts;
    const uint64_t *sums;
} repair_fwd_ctx;

static int repair_fwd_rows(void *arg, const graph_snapshot *cur, uint64_t mver, graph_rows *rows)
{
    (void)cur;
    const repair_fwd_ctx *f = arg;
    const write_intent *in = f->in;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < in->n_effects; i++) {
        const write_effect *e = &in->effects[i];
        rc = graph_rows_add_version_sum(rows, e->sid, e->inc, e->alias, e->expected_version,
                                        e->table_branch, f->counts[i], &f->sums[i]);
    }
    if (rc == 0)
        rc = write_rows_lineage(rows, in, in->commit_id, in->parent_commit_id, WRITE_ACTOR_REPAIR,
                                in->created_at_us, mver, false);
    return rc;
}

/* Open table e at version v (its rows counted, its manifest's checksum taken). */
static int repair_fwd_table(store *s, const write_effect *e, uint64_t v, uint64_t *count,
                            uint64_t *sum)
{
    lance_dataset *ds = NULL;
    int rc = lance_branch_open(&ds, s, e->path, e->table_branch, v, NULL, LANCE_ACCESS_READ);
    if (rc == 0) rc = lance_dataset_count_rows(ds, count);
    if (rc == 0) *sum = ds->m->file_xxh3;
    lance_dataset_free(ds);
    return rc;
}

static int repair_fwd_publish(write_graph *g, write_intent *in, const graph_snapshot *snap,
                              uint64_t *mver)
{
    size_t n = in->n_effects;
    uint64_t *counts = core_calloc(n ? n : 1, sizeof *counts);
    uint64_t *sums = core_calloc(n ? n : 1, sizeof *sums);
    int rc = counts && sums ? 0 : core_err_nomem();
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = repair_fwd_table(g->h->s, &in->effects[i], in->effects[i].expected_version, &counts[i],
                              &sums[i]);
    memcpy(in->content_parent, snap->content_head, sizeof in->content_parent);
    repair_fwd_ctx f = {in, counts, sums};
    if (rc == 0) rc = OG_FAILPOINT("repair.pre_forward_publish");
    if (rc == 0) rc = write_publish(g, in->branch, &in->rs, NULL, repair_fwd_rows, &f, mver, NULL);
    core_free(counts);
    core_free(sums);
    return rc;
}

static int count_at(store *s, const write_effect *e, uint64_t version, uint64_t *count)
{
    lance_dataset *ds = NULL;
    int rc = lance_branch_open(&ds, s, e->path, e->table_branch, version, NULL, LANCE_ACCESS_READ);
    if (rc == 0) rc = lance_dataset_count_rows(ds, count);
    lance_dataset_free(ds);
    return rc;
}

/* ---- roll back ----------------------------------------------------------------------------- */

typedef struct back_ctx {
    const write_intent *in;
    const bool *restored;
    const uint64_t *versions; /* restored versions */
    const uint64_t *counts;
    char parent[GRAPH_ID_LEN + 1];
} back_ctx;

static int back_rows(void *arg, const graph_snapshot *cur, uint64_t mver, graph_rows *rows)
{
    (void)cur;
    const back_ctx *b = arg;
    const write_intent *in = b->in;
    int rc = write_rows_versions(rows, in, b->versions, b->counts, b->restored, false);
    if (rc == 0)
        rc = write_rows_lineage(rows, in, in->rollback_commit_id, b->parent,
                                is_repair(in) ? WRITE_ACTOR_REPAIR : WRITE_ACTOR_RECOVERY,
                                in->started_at_us, mver, true);
    return rc;
}

static int new_uuid(char out[WRITE_UUID_CAP])
{
    char u[LANCE_UUID_LEN + 1];
    int rc = lance_uuid_new(u);
    if (rc == 0) snprintf(out, WRITE_UUID_CAP, "%s", u);
    return rc;
}

/* Restore table i from `from` to its expected version as version from+1 with the planned uuid,
 * unless that restore is already there. */
static int restore_one(store *s, const write_effect *e, const write_rollback *plan,
                       uint64_t *restored_version)
{
    char root[STORE_KEY_MAX];
    lance_naming naming;
    uint64_t head = 0;
    int rc = table_root(root, e);
    if (rc == 0) rc = lance_version_latest(s, root, &head, &naming);
    if (rc != 0) return rc;
    if (head == plan->from + 1) {
        uint64_t v = 0;
        rc = lance_find_txn_version(s, root, plan->uuid, plan->from + 1, &v);
        if (rc == 0 && v == head) {
            *restored_version = head;
            return 0;
        }
        if (rc != 0 && rc != OG_E_NOT_FOUND) return rc;
        return core_err(OG_E_RECOVERY_REQUIRED, "table %s moved during its rollback", e->alias);
    }
    if (head != plan->from)
        return core_err(OG_E_RECOVERY_REQUIRED, "table %s moved during its rollback", e->alias);
    lance_dataset *ds = NULL, *after = NULL;
    rc = lance_branch_open(&ds, s, e->path, e->table_branch, head, NULL, LANCE_ACCESS_WRITE);
    if (rc == 0) rc = lance_restore(&after, ds, plan->to, plan->uuid);
    if (rc == 0) *restored_version = lance_dataset_version(after);
    lance_dataset_free(after);
    lance_dataset_free(ds);
    return rc;
}

/* ---- files of undone effects ------------------------------------------------------------ */

typedef struct name_set {
    char **v;
    size_t n, cap;
} name_set;

static int name_add(void *arg, const char *key)
{
    name_set *ns = arg;
    if (ns->n == ns->cap) {
        size_t cap = ns->cap ? ns->cap * 2 : 16;
        char **p = core_realloc(ns->v, cap * sizeof *p);
        if (!p) return core_err_nomem();
        ns->v = p;
        ns->cap = cap;
    }
    if (!(ns->v[ns->n] = core_strdup(key))) return core_err_nomem();
    ns->n++;
    return 0;
}

static void name_set_free(name_set *ns)
{
    for (size_t i = 0; i < ns->n; i++)
        core_free(ns->v[i]);
    core_free(ns->v);
}

int write_effect_delete_files(store *s, const write_effect *e, size_t *n)
{
    *n = 0;
    if (!e->n_files) return 0;
    /* What the table's latest version names stays, whatever the sidecar says: after a rollback
     * that is the restored version, so only the undone transaction's files go. */
    char root[STORE_KEY_MAX];
    lance_manifest *m = NULL;
    name_set live = {NULL, 0, 0};
    int rc = table_root(root, e);
    if (rc == 0) rc = lance_version_load_latest(s, root, LANCE_ACCESS_READ, &m, NULL);
    if (rc == 0) rc = lance_manifest_files_of(m, root, name_add, &live, NULL);
    lance_manifest_free(m);
    for (size_t i = 0; rc == 0 && i < e->n_files; i++) {
        bool named = false;
        for (size_t k = 0; k < live.n && !named; k++)
            named = strcmp(live.v[k], e->files[i]) == 0;
        if (named) continue;
        rc = store_delete(s, e->files[i], STORE_F_NOSYNC);
        *n += rc == 0;
    }
    name_set_free(&live);
    return rc;
}

/* Delete the files of every effect of an intent that recovery undid (rolled back or
 * discarded): no visible version names them. Best effort: a failure is logged and the files
 * stay for cleanup's orphan rule; the resolution itself does not depend on it. */
static void delete_undone_files(write_graph *g, const write_intent *in)
{
    size_t total = 0;
    for (size_t i = 0; i < in->n_effects; i++) {
        size_t n = 0;
        if (write_effect_delete_files(g->h->s, &in->effects[i], &n) != 0) {
            core_log(CORE_LOG_WARN, "recovery: files of %s's effect on %s stay for cleanup: %s",
                     in->operation_id, in->effects[i].alias, og_error_last()->message);
            og_error_clear();
        }
        total += n;
    }
    if (total)
        core_log(CORE_LOG_INFO, "recovery: deleted %zu files of undone write %s", total,
                 in->operation_id);
}

static int roll_back(write_graph *g, write_intent *in, const classified *cl,
                     const graph_snapshot *snap)
{
    size_t n = in->n_effects;
    bool *restored = core_calloc(n ? n : 1, sizeof *restored);
    uint64_t *vers = core_calloc(n ? n : 1, sizeof *vers);
    uint64_t *counts = core_calloc(n ? n : 1, sizeof *counts);
    uint64_t *from = core_calloc(n ? n : 1, sizeof *from);
    uint64_t *to = core_calloc(n ? n : 1, sizeof *to);
    int rc = (!restored || !vers || !counts || !from || !to) ? core_err_nomem() : 0;
    /* The plan is durable before the first restore, so a crash mid-rollback resumes it. */
    if (rc == 0 && in->n_rollback == 0) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            k += cl[i].state == EFFECT_OWN_AT_HEAD;
        if (k && !(in->rollback = core_calloc(k, sizeof *in->rollback))) rc = core_err_nomem();
        for (size_t i = 0; rc == 0 && i < n; i++) {
            if (cl[i].state != EFFECT_OWN_AT_HEAD) continue;
            write_rollback *r = &in->rollback[in->n_rollback++];
            r->from = cl[i].head;
            r->to = in->effects[i].expected_version;
            rc = new_uuid(r->uuid);
            if (rc == 0 && !(r->alias = core_strdup(in->effects[i].alias))) rc = core_err_nomem();
        }
        if (rc == 0) rc = write_sidecar_put(g->h->s, in);
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        from[i] = to[i] = in->effects[i].expected_version;
        for (size_t k = 0; k < in->n_rollback; k++) {
            if (strcmp(in->rollback[k].alias, in->effects[i].alias) != 0) continue;
            rc = OG_FAILPOINT("recovery.pre_restore");
            if (rc == 0) rc = restore_one(g->h->s, &in->effects[i], &in->rollback[k], &vers[i]);
            if (rc == 0) rc = count_at(g->h->s, &in->effects[i], vers[i], &counts[i]);
            restored[i] = rc == 0;
            from[i] = in->rollback[k].from;
            to[i] = in->rollback[k].to;
        }
    }
    if (rc == 0) rc = OG_FAILPOINT("recovery.pre_rollback_publish");
    if (rc == 0) {
        /* Publish the restored HEADs so every pin equals its Lance HEAD again, with the fixed
         * rollback commit id, against the state recovery just checked. */
        back_ctx b = {in, restored, vers, counts, {0}};
        memcpy(b.parent, snap->head, sizeof b.parent);
        memcpy(in->content_parent, snap->content_head, sizeof in->content_parent);
        write_read_set rs;
        memset(&rs, 0, sizeof rs);
        write_rs_capture(&rs, snap);
        uint64_t mver = 0;
        rc = write_publish(g, in->branch, &rs, NULL, back_rows, &b, &mver, NULL);
        write_rs_clear(&rs);
    }
    if (rc == 0) delete_undone_files(g, in);
    if (rc == 0)
        rc = finalize(g, in, is_repair(in) ? repair_kind(in) : WRITE_RECOVERY_ROLLED_BACK,
                      in->rollback_commit_id, from, to);
    core_free(restored);
    core_free(vers);
    core_free(counts);
    core_free(from);
    core_free(to);
    return rc;
}

/* ---- one sidecar --------------------------------------------------------------------------- */

/* What the classifier decides for one intent against the snapshot of its branch, without acting.
 * cl receives each effect's state (for roll back). The barrier, `recover show` and `recover
 * resolve` all decide through this one function. */
static int plan_intent(store *s, const write_intent *in, const graph_snapshot *snap, classified *cl,
                       int *action, char *why, size_t why_cap)
{
    why[0] = 0;
    /* Fixed outcomes first: the intent's own commit or its rollback commit is visible. */
    if (commit_visible(snap, in->commit_id)) {
        *action = WRITE_PLAN_FINALIZE_FORWARD;
        snprintf(why, why_cap, "its commit %s is visible", in->commit_id);
        return 0;
    }
    if (commit_visible(snap, in->rollback_commit_id)) {
        *action = WRITE_PLAN_FINALIZE_BACK;
        snprintf(why, why_cap, "its rollback commit %s is visible", in->rollback_commit_id);
        return 0;
    }
    if (in->n_rollback) {
        *action = WRITE_PLAN_RESUME_ROLLBACK;
        snprintf(why, why_cap, "a rollback of it was under way");
        return 0;
    }
    if (in->repair_mode == WRITE_REPAIR_FORWARD) {
        /* A forward repair changes no table: it only commits. Finish it while the graph is as
         * it found it (the same head, each table still at the HEAD it pins); otherwise nothing
         * of it happened and it is dropped (a re-run of repair inspects afresh). */
        bool same = strcmp(snap->branch_identity, in->rs.branch_identity) == 0 &&
                    strcmp(snap->head, in->rs.graph_head) == 0 &&
                    snap->manifest_version == in->rs.manifest_version;
        for (size_t i = 0; same && i < in->n_effects; i++) {
            char root[STORE_KEY_MAX];
            lance_naming naming;
            uint64_t head = 0;
            int rc = table_root(root, &in->effects[i]);
            if (rc == 0) rc = lance_version_latest(s, root, &head, &naming);
            if (rc != 0) return rc;
            same = head == in->effects[i].expected_version;
        }
        *action = same ? WRITE_PLAN_ROLL_FORWARD : WRITE_PLAN_DISCARD;
        snprintf(why, why_cap, "%s",
                 same ? "a repair that pins the tables ahead of the intact version at their "
                        "HEADs; the graph is as it found it"
                      : "a repair whose commit was not made, and the graph changed since: "
                        "`omnigraph repair` inspects it again");
        return 0;
    }
    size_t n = in->n_effects, own = 0, not_ours = 0;
    bool same_incarnation = strcmp(snap->branch_identity, in->rs.branch_identity) == 0;
    for (size_t i = 0; i < n; i++) {
        const graph_table *t = graph_snapshot_table(snap, in->effects[i].alias);
        uint64_t pin = t ? t->version : 0;
        int rc = classify_effect(s, &in->effects[i], pin, same_incarnation, &cl[i]);
        if (rc != 0) return rc;
        if (cl[i].state == EFFECT_OWN_AT_HEAD) {
            own++;
        } else if (cl[i].state == EFFECT_NOT_OURS) {
            not_ours++;
        } else if (cl[i].state != EFFECT_NO_MOVEMENT) {
            *action = WRITE_PLAN_BLOCKED;
            snprintf(why, why_cap,
                     "table %s is at version %" PRIu64 " (published %" PRIu64
                     ", the intent expected %" PRIu64 ") by a transaction that is not the "
                     "intent's own",
                     in->effects[i].alias, cl[i].head, pin, in->effects[i].expected_version);
            return 0;
        }
    }
    if (own == 0) {
        *action = WRITE_PLAN_DISCARD;
        if (not_ours)
            snprintf(why, why_cap,
                     "none of its %zu table effects happened (%zu of its tables were "
                     "published past it by other writes)",
                     n, not_ours);
        else
            snprintf(why, why_cap, "none of its %zu table effects happened", n);
        return 0;
    }
    bool head_same = same_incarnation && strcmp(snap->head, in->rs.graph_head) == 0;
    if (own == n && head_same) {
        *action = WRITE_PLAN_ROLL_FORWARD;
        snprintf(why, why_cap,
                 "all %zu table effects happened and the branch head is still "
                 "its base",
                 n);
    } else if (!same_incarnation) {
        *action = WRITE_PLAN_BLOCKED;
        snprintf(why, why_cap,
                 "the branch was deleted and created again since the intent was "
                 "armed");
    } else if (own == n) {
        /* Every effect happened, but another write published on the branch meanwhile (one
         * that did not see this intent: processes without shared gates). The read set is
         * broken, so the write cannot complete; each of its tables is still pinned at the
         * version it expected, so restoring them undoes it (RFC-022 §9: manifest contention
         * after effects is resolved through the intent, never by rebasing the plan). */
        *action = WRITE_PLAN_ROLL_BACK;
        snprintf(why, why_cap,
                 "all %zu table effects happened, but the branch head moved past its base "
                 "(another write published first)",
                 n);
    } else {
        *action = WRITE_PLAN_ROLL_BACK;
        snprintf(why, why_cap, "%zu of its %zu table effects happened", own, n);
    }
    return 0;
}

static int retire_if_resolved(write_graph *g, const char *operation_id, int kind, const char *actor,
                              bool *retired);

/* A schema apply whose commit is (now) visible: mirror it at the root, and this handle takes
 * it as the accepted schema; before the sidecar goes, so that a crash before the mirror is
 * whole leaves the intent to do it again. */
static void promote_if_schema(write_graph *g, const write_intent *in)
{
    if (in->schema_target[0]) write_schema_promote(g, in->schema_target);
}

static int resolve(write_graph *g, write_intent *in)
{
    graph_snapshot *snap = NULL;
    int rc = graph_snapshot_load(&snap, g->h->s, in->branch, 0, GRAPH_SNAP_LINEAGE);
    if (rc != 0) return rc;
    size_t n = in->n_effects;
    uint64_t *from = core_calloc(n ? n : 1, sizeof *from);
    uint64_t *to = core_calloc(n ? n : 1, sizeof *to);
    classified *cl = core_calloc(n ? n : 1, sizeof *cl);
    if (!from || !to || !cl) {
        rc = core_err_nomem();
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        from[i] = to[i] = in->effects[i].expected_version;
    int action = 0;
    char why[400];
    if ((rc = plan_intent(g->h->s, in, snap, cl, &action, why, sizeof why)) != 0) goto out;
    switch (action) {
    case WRITE_PLAN_FINALIZE_FORWARD:
        for (size_t i = 0; i < n; i++) {
            const graph_table *t = graph_snapshot_table(snap, in->effects[i].alias);
            to[i] = t ? t->version : to[i];
        }
        promote_if_schema(g, in);
        rc = finalize(g, in, is_repair(in) ? repair_kind(in) : WRITE_RECOVERY_ROLLED_FORWARD,
                      in->commit_id, from, to);
        break;
    case WRITE_PLAN_FINALIZE_BACK:
        for (size_t k = 0; k < in->n_rollback; k++)
            for (size_t i = 0; i < n; i++)
                if (strcmp(in->rollback[k].alias, in->effects[i].alias) == 0) {
                    from[i] = in->rollback[k].from;
                    to[i] = in->rollback[k].to;
                }
        delete_undone_files(g, in);
        rc = finalize(g, in, is_repair(in) ? repair_kind(in) : WRITE_RECOVERY_ROLLED_BACK,
                      in->rollback_commit_id, from, to);
        break;
    case WRITE_PLAN_RESUME_ROLLBACK: /* a rollback was under way: finish it */
    case WRITE_PLAN_ROLL_BACK:
        rc = roll_back(g, in, cl, snap);
        break;
    case WRITE_PLAN_DISCARD: {
        /* Discarded on the word of other writes' versions: a stale copy of an intent resolved
         * before (the audit log records it) is retired as such instead. */
        bool moved = false, retired = false;
        for (size_t i = 0; i < n; i++)
            moved |= cl[i].state == EFFECT_NOT_OURS;
        if (moved &&
            ((rc = retire_if_resolved(g, in->operation_id, in->kind, in->actor, &retired)) != 0 ||
             retired))
            break;
        delete_undone_files(g, in);
        rc = finalize(g, in, WRITE_RECOVERY_DISCARDED, "", from, to);
        break;
    }
    case WRITE_PLAN_ROLL_FORWARD:
        if (in->repair_mode == WRITE_REPAIR_FORWARD) {
            /* An interrupted forward repair whose graph is as it found it: make its commit. */
            uint64_t mver = 0;
            for (size_t i = 0; i < n; i++)
                from[i] = to[i] = in->effects[i].expected_version;
            rc = repair_fwd_publish(g, in, snap, &mver);
            if (rc == 0) rc = finalize(g, in, WRITE_RECOVERY_REPAIRED, in->commit_id, from, to);
            break;
        }
        {
            /* Every effect happened, exactly as planned: complete the write with its own lineage.
             */
            uint64_t *counts = core_calloc(n, sizeof *counts);
            if (!counts) {
                rc = core_err_nomem();
                break;
            }
            for (size_t i = 0; rc == 0 && i < n; i++) {
                to[i] = cl[i].head;
                rc = count_at(g->h->s, &in->effects[i], cl[i].head, &counts[i]);
            }
            forward_ctx f = {in, to, counts};
            memcpy(in->content_parent, snap->content_head, sizeof in->content_parent);
            uint64_t mver = 0;
            if (rc == 0) rc = OG_FAILPOINT("recovery.pre_forward_publish");
            if (rc == 0)
                rc = write_publish(g, in->branch, &in->rs, NULL, forward_rows, &f, &mver, NULL);
            core_free(counts);
            if (rc == OG_E_READ_SET_CONFLICT) {
                rc = needs_operator(in, "the branch moved past the intent's base while its effects "
                                        "were pending");
                break;
            }
            if (rc == 0) promote_if_schema(g, in);
            if (rc == 0)
                rc = finalize(g, in, WRITE_RECOVERY_ROLLED_FORWARD, in->commit_id, from, to);
            break;
        }
    default:
        rc = needs_operator(in, why);
        break;
    }
out:
    core_free(from);
    core_free(to);
    core_free(cl);
    graph_snapshot_free(snap);
    return rc;
}

/* ---- stale and damaged sidecars ---------------------------------------------------------- */

/* A sidecar of an intent the audit log already records as resolved is a stale copy (a delete
 * that did not last, a restored backup): it is deleted and the retirement audited. The caller
 * holds the gates. *retired stays false (nothing done) when the audit log does not record it. */
static int retire_if_resolved(write_graph *g, const char *operation_id, int kind, const char *actor,
                              bool *retired)
{
    *retired = false;
    bool found = false;
    char k[24] = "";
    int rc = write_audit_find(g->h->s, operation_id, &found, k, NULL);
    if (rc != 0 || !found) return rc;
    og_error_clear(); /* the refusal that led here is answered */
    write_intent bare;
    memset(&bare, 0, sizeof bare);
    memcpy(bare.operation_id, operation_id, sizeof bare.operation_id);
    bare.kind = kind;
    bare.actor = (char *)actor; /* only read */
    core_log(CORE_LOG_WARN,
             "recovery: sidecar %s names an operation the audit log records as %s: a stale "
             "copy, retired",
             operation_id, k);
    rc = finalize(g, &bare, WRITE_RECOVERY_RETIRED, NULL, NULL, NULL);
    *retired = rc == 0;
    return rc;
}

/* What a sidecar that cannot be read is acted on under: its writer's branch is not known, so
 * the schema-control key exclusive (which waits out, and holds back, every data writer of this
 * process and host, whose intents take it shared) and then main's branch key. */
static int root_gates(write_graph *g, write_gate_set **out)
{
    const write_gate_key keys[] = {{WRITE_GATE_SCHEMA, "schema", NULL, false},
                                   {WRITE_GATE_BRANCH, "main", NULL, false}};
    return write_gates_take(g, keys, 2, out);
}

/* Discard an intent on an operator's word alone (recover resolve --discard --force). */
static int discard_forced(write_graph *g, const char *operation_id, int kind, const char *actor)
{
    write_intent bare;
    memset(&bare, 0, sizeof bare);
    memcpy(bare.operation_id, operation_id, sizeof bare.operation_id);
    bare.kind = kind;
    bare.actor = (char *)actor; /* only read */
    core_log(CORE_LOG_WARN, "recovery: %s discarded by an operator without proof (--force)",
             operation_id);
    return finalize(g, &bare, WRITE_RECOVERY_DISCARDED_FORCED, NULL, NULL, NULL);
}

/* A sidecar that does not parse (the parser's error is the thread's): retired when the audit
 * log records its operation, discarded when an operator forces it, else recovery_required
 * naming the file and the command that resolves it. Under the root gates. */
static int damaged_sidecar(write_graph *g, const char *operation_id, const char *key,
                           const write_resolve_options *op, bool *resolved, int *done_kind)
{
    char saved[600];
    snprintf(saved, sizeof saved, "%s", og_error_last()->message);
    write_gate_set *gates = NULL;
    int rc = root_gates(g, &gates);
    bool retired = false;
    if (rc == 0) rc = retire_if_resolved(g, operation_id, 0, NULL, &retired);
    if (rc == 0 && retired) {
        *resolved = true;
        *done_kind = WRITE_RECOVERY_RETIRED;
    } else if (rc == 0 && op && op->discard && op->force) {
        rc = discard_forced(g, operation_id, 0, NULL);
        *resolved = rc == 0;
        *done_kind = WRITE_RECOVERY_DISCARDED_FORCED;
    } else if (rc == 0) {
        rc = core_err(OG_E_RECOVERY_REQUIRED,
                      "%s. Recovery cannot classify it, so writes stay blocked. Inspect it with "
                      "`omnigraph recover show %s`; if no write was in flight, `omnigraph "
                      "recover resolve %s --discard --confirm --force` deletes it (audited)",
                      saved, operation_id, operation_id);
        core_err_detail(CORE_ERR_OPERATION_ID, operation_id);
        core_err_detail(CORE_ERR_OBJECT, key);
    }
    write_gate_set_release(gates);
    return rc;
}

/* ---- discard proof --------------------------------------------------------------------------- */

/* Proof that no effect of the intent exists: neither its commit nor its rollback commit is
 * visible, and no table has a version its transactions made (its effects commit at exactly
 * expected + 1, its planned restores at from + 1; a table whose version there was removed
 * cannot be proved). *why names what breaks the proof. */
static int discard_proof(store *s, const write_intent *in, const graph_snapshot *snap, bool *proved,
                         char *why, size_t cap)
{
    *proved = false;
    if (commit_visible(snap, in->commit_id)) {
        snprintf(why, cap, "its commit %s is visible", in->commit_id);
        return 0;
    }
    if (commit_visible(snap, in->rollback_commit_id)) {
        snprintf(why, cap, "its rollback commit %s is visible", in->rollback_commit_id);
        return 0;
    }
    for (size_t i = 0; i < in->n_effects + in->n_rollback; i++) {
        const write_effect *e = NULL;
        const char *uuid;
        uint64_t at;
        if (i < in->n_effects) {
            e = &in->effects[i];
            uuid = e->uuid;
            at = e->expected_version + 1;
        } else {
            const write_rollback *r = &in->rollback[i - in->n_effects];
            for (size_t k = 0; k < in->n_effects && !e; k++)
                if (strcmp(in->effects[k].alias, r->alias) == 0) e = &in->effects[k];
            if (!e) {
                snprintf(why, cap, "its rollback plan names table %s, which it has no effect on",
                         r->alias);
                return 0;
            }
            uuid = r->uuid;
            at = r->from + 1;
        }
        char root[STORE_KEY_MAX];
        lance_naming naming;
        uint64_t head = 0, v = 0;
        int rc = table_root(root, e);
        if (rc == 0) rc = lance_version_latest(s, root, &head, &naming);
        if (rc == OG_E_NOT_FOUND && e->fork) { /* never forked: nothing made there */
            og_error_clear();
            continue;
        }
        if (rc != 0) return rc;
        if (head < at) continue; /* the version it would have made does not exist */
        rc = lance_find_txn_version(s, root, uuid, at, &v);
        if (rc == 0) {
            snprintf(why, cap, "version %" PRIu64 " of table %s was made by its transaction", v,
                     e->alias);
            return 0;
        }
        if (rc != OG_E_NOT_FOUND) return rc;
        og_error_clear();
        lance_manifest *m = NULL;
        rc = lance_version_load(s, root, at, naming, LANCE_ACCESS_READ, &m);
        lance_manifest_free(m);
        if (rc == OG_E_NOT_FOUND) {
            og_error_clear();
            snprintf(why, cap,
                     "version %" PRIu64 " of table %s was removed, so which "
                     "transaction made it cannot be checked",
                     at, e->alias);
            return 0;
        }
        if (rc != 0) return rc;
    }
    *proved = true;
    return 0;
}

/* ---- one sidecar, under its gates and owner lock --------------------------------------------- */

static int live_owner(const write_intent *in, bool barrier)
{
    char pid[48] = "";
    if (in->owner_pid > 0) snprintf(pid, sizeof pid, " (pid %lld)", (long long)in->owner_pid);
    int rc = barrier ? core_err(OG_E_RECOVERY_REQUIRED,
                                "write %s is still in progress in another process%s; retry "
                                "when it ends",
                                in->operation_id, pid)
                     : core_err(OG_E_CONFLICT,
                                "write %s is still running in another process%s: its recovery "
                                "intent is not touched; retry when that process has ended",
                                in->operation_id, pid);
    core_err_detail(CORE_ERR_OPERATION_ID, in->operation_id);
    return rc;
}

/* An operator's discard: retire a resolved one, drop a proved one, force the rest. */
static int discard_by_operator(write_graph *g, write_intent *in, const write_resolve_options *op,
                               int *done_kind)
{
    bool retired = false;
    int rc = retire_if_resolved(g, in->operation_id, in->kind, in->actor, &retired);
    if (rc != 0 || retired) {
        *done_kind = WRITE_RECOVERY_RETIRED;
        return rc;
    }
    graph_snapshot *snap = NULL;
    if ((rc = graph_snapshot_load(&snap, g->h->s, in->branch, 0, GRAPH_SNAP_LINEAGE)) != 0)
        return rc;
    bool proved = false;
    char why[400] = "";
    rc = discard_proof(g->h->s, in, snap, &proved, why, sizeof why);
    graph_snapshot_free(snap);
    if (rc != 0) return rc;
    if (proved) {
        *done_kind = WRITE_RECOVERY_DISCARDED;
        return finalize(g, in, WRITE_RECOVERY_DISCARDED, NULL, NULL, NULL);
    }
    if (op->force) {
        *done_kind = WRITE_RECOVERY_DISCARDED_FORCED;
        return discard_forced(g, in->operation_id, in->kind, in->actor);
    }
    rc = core_err(OG_E_PRECONDITION_FAILED,
                  "write %s cannot be discarded: %s. Resolve it without --discard (recovery "
                  "rolls it forward or back), or add --force to discard it anyway (audited)",
                  in->operation_id, why);
    core_err_detail(CORE_ERR_OPERATION_ID, in->operation_id);
    return rc;
}

/* The barrier (op NULL) or an operator (op) acting on one sidecar. */
static int recover_one(write_graph *g, const char *operation_id, const write_resolve_options *op,
                       bool *resolved, int *done_kind)
{
    *resolved = false;
    *done_kind = 0;
    char key[STORE_KEY_MAX], lock_name[STORE_KEY_MAX];
    write_sidecar_key(key, operation_id);
    core_buf body = CORE_BUF_INIT;
    int rc = store_get(g->h->s, key, 0, UINT64_MAX, &body);
    if (rc == OG_E_NOT_FOUND) { /* listed, then finished by its owner: absence, not an error */
        if (!op) return 0;
        rc = core_err(OG_E_NOT_FOUND, "no pending recovery intent %s (no %s)", operation_id, key);
        core_err_detail(CORE_ERR_OPERATION_ID, operation_id);
        return rc;
    }
    if (rc != 0) return rc;
    write_intent in;
    rc = write_intent_from_json(&in, (const char *)body.data, body.len, key);
    bool other_op =
        rc != 0 && write_sidecar_names_other((const char *)body.data, body.len, operation_id);
    if (rc != 0) {
        /* Its owner may have finished and recycled the file while we read it (the store
         * then hands its storage to the owner's next write, STORE_F_RECYCLE): what we read
         * only counts if the sidecar is still there. */
        store_meta meta;
        if (store_head(g->h->s, key, &meta) == OG_E_NOT_FOUND) {
            og_error_clear();
            write_intent_clear(&in);
            core_buf_free(&body);
            return op ? recover_one(g, operation_id, op, resolved, done_kind) : 0;
        }
        write_intent_clear(&in);
        /* Still there. Cut short by a power loss before it was ever synced, or (on a
         * filesystem that does not keep the order of renames) the recycled file of a finished
         * write that came back holding the next write's bytes: either way no effect of this
         * operation can exist (a sidecar is durable before its first effect, and a recycled
         * one belonged to a write that had published). Discard it. */
        if (other_op || write_sidecar_torn((const char *)body.data, body.len)) {
            core_buf_free(&body);
            og_error_clear();
            core_log(CORE_LOG_WARN, "recovery: sidecar %s %s: discarded", key,
                     other_op ? "holds another operation (a recycled file)"
                              : "was cut short by a power loss before it was synced (its write "
                                "never reached an effect)");
            /* Audited like any discard (no writer kind, no tables), then deleted. */
            write_intent torn;
            memset(&torn, 0, sizeof torn);
            memcpy(torn.operation_id, operation_id, sizeof torn.operation_id);
            rc = finalize(g, &torn, WRITE_RECOVERY_DISCARDED, NULL, NULL, NULL);
            *resolved = rc == 0;
            *done_kind = WRITE_RECOVERY_DISCARDED;
            return rc;
        }
        core_buf_free(&body);
        if (rc == OG_E_CORRUPT || (rc == OG_E_UNSUPPORTED && op && op->discard && op->force))
            return damaged_sidecar(g, operation_id, key, op, resolved, done_kind);
        return rc;
    }
    core_buf_free(&body);
    write_gate_set *gates = NULL;
    store_lock *owner = NULL;
    if ((rc = write_intent_gates(g, &in, &gates)) != 0) goto out;
    write_intent_owner_lock(&in, lock_name);
    rc = store_lock_acquire(g->h->s, lock_name, 0, &owner);
    if (rc == OG_E_CONFLICT) {
        /* Held: by its owner still running, or by the writer that finished it and keeps the
         * lock for its next write. Only a sidecar that is still there is in progress. */
        store_meta meta;
        int h = store_head(g->h->s, key, &meta);
        if (h == OG_E_NOT_FOUND) {
            og_error_clear();
            rc = op ? core_err(OG_E_NOT_FOUND, "recovery intent %s was resolved meanwhile",
                               operation_id)
                    : 0;
            goto out;
        }
    }
    if (rc == OG_E_CONFLICT) {
        rc = live_owner(&in, op == NULL);
        goto out;
    }
    if (rc != 0) goto out;
    /* Re-read under the lock: the owner may have finished between our read and the lock. */
    rc = store_get(g->h->s, key, 0, UINT64_MAX, &body);
    if (rc == OG_E_NOT_FOUND) {
        if (op) {
            rc =
                core_err(OG_E_NOT_FOUND, "recovery intent %s was resolved meanwhile", operation_id);
        } else {
            og_error_clear();
            rc = 0;
        }
        goto out;
    }
    write_intent_clear(&in);
    if (rc == 0) rc = write_intent_from_json(&in, (const char *)body.data, body.len, key);
    core_buf_free(&body);
    if (rc == 0 && op && op->discard) {
        rc = discard_by_operator(g, &in, op, done_kind);
    } else if (rc == 0) {
        rc = resolve(g, &in);
        if (rc == OG_E_RECOVERY_REQUIRED) {
            /* Blocked, unless the audit log already records it resolved (a stale copy). The
             * lookup clears the thread's error when there is no audit log yet: keep ours. */
            core_err_saved blocked;
            core_err_save(&blocked);
            bool retired = false;
            int rr = retire_if_resolved(g, in.operation_id, in.kind, in.actor, &retired);
            if (rr != 0 || retired) {
                rc = rr;
                *done_kind = WRITE_RECOVERY_RETIRED;
            } else {
                core_err_restore(&blocked);
            }
        }
    }
    if (rc == 0) *resolved = true;
out:
    core_buf_free(&body);
    store_lock_release_remove(owner);
    write_gate_set_release(gates);
    write_intent_clear(&in);
    return rc;
}

int write_recover_one(write_graph *g, const char *operation_id, bool *resolved)
{
    int kind = 0;
    return recover_one(g, operation_id, NULL, resolved, &kind);
}

int write_recover_resolve(write_graph *g, const char *operation_id,
                          const write_resolve_options *opt, int *recovery_kind,
                          char commit_id[GRAPH_ID_LEN + 1])
{
    *recovery_kind = 0;
    commit_id[0] = 0;
    write_resolve_options def = {false, false};
    if (!opt) opt = &def;
    if (g->h->readonly || !g->gates)
        return core_err(OG_E_BAD_REQUEST, "resolving a recovery intent needs a read-write "
                                          "handle");
    if (!core_ulid_valid(operation_id))
        return core_err(OG_E_BAD_REQUEST, "'%s' is not an operation id (a 26-character ULID)",
                        operation_id);
    bool resolved = false;
    int kind = 0;
    int rc = recover_one(g, operation_id, opt, &resolved, &kind);
    if (rc != 0) return rc;
    /* What the classifier did is what the audit log now says. */
    bool found = false;
    char k[24] = "";
    rc = write_audit_find(g->h->s, operation_id, &found, k, commit_id);
    if (rc != 0) return rc;
    if (kind == WRITE_RECOVERY_RETIRED || !found) {
        *recovery_kind = kind ? kind : WRITE_RECOVERY_DISCARDED;
        return 0;
    }
    for (int i = WRITE_RECOVERY_ROLLED_FORWARD; i <= WRITE_RECOVERY_REPAIRED_FORCED; i++)
        if (strcmp(k, write_recovery_kind_name(i)) == 0) *recovery_kind = i;
    return 0;
}

/* ---- inspecting pending intents ------------------------------------------------------------- */

void write_pending_clear(write_pending *p)
{
    core_free(p->branch);
    core_free(p->actor);
    core_free(p->problem);
    core_free(p->reason);
    for (size_t i = 0; i < p->n_effects; i++)
        core_free(p->tables[i]);
    core_free(p->tables);
    memset(p, 0, sizeof *p);
}

void write_pending_list_free(write_pending *l, size_t n)
{
    for (size_t i = 0; l && i < n; i++)
        write_pending_clear(&l[i]);
    core_free(l);
}

static char *dup_or_null(const char *s)
{
    return s ? core_strdup(s) : NULL;
}

/* Read one sidecar into *p; *in (may be NULL) receives the parsed intent when it parses.
 * OG_E_NOT_FOUND when the file is gone. */
static int pending_read(store *s, bool probe_locks, const char *operation_id, write_pending *p,
                        write_intent *in_out)
{
    memset(p, 0, sizeof *p);
    memcpy(p->operation_id, operation_id, GRAPH_ID_LEN);
    char key[STORE_KEY_MAX];
    write_sidecar_key(key, operation_id);
    core_buf body = CORE_BUF_INIT;
    int rc = store_get(s, key, 0, UINT64_MAX, &body);
    if (rc != 0) return rc;
    write_intent in;
    rc = write_intent_from_json(&in, (const char *)body.data, body.len, key);
    core_buf_free(&body);
    if (rc == OG_E_CORRUPT || rc == OG_E_UNSUPPORTED) {
        p->damaged = true;
        p->state = WRITE_PENDING_DAMAGED;
        core_ulid u;
        if (core_ulid_parse(&u, operation_id) == 0)
            p->started_at_us = (int64_t)core_ulid_time_ms(&u) * 1000;
        if (!(p->problem = core_strdup(og_error_last()->message))) return core_err_nomem();
        og_error_clear();
    } else if (rc != 0) {
        return rc;
    } else {
        p->kind = in.kind;
        p->started_at_us = in.started_at_us;
        p->owner_pid = in.owner_pid;
        p->state = WRITE_PENDING_UNCHECKED;
        p->n_effects = in.n_effects;
        if ((in.branch && !(p->branch = core_strdup(in.branch))) ||
            (in.actor && !(p->actor = dup_or_null(in.actor))) ||
            (in.n_effects && !(p->tables = core_calloc(in.n_effects, sizeof *p->tables)))) {
            write_intent_clear(&in);
            return core_err_nomem();
        }
        for (size_t i = 0; i < in.n_effects; i++)
            if (!(p->tables[i] = core_strdup(in.effects[i].alias))) {
                write_intent_clear(&in);
                return core_err_nomem();
            }
        if (probe_locks) {
            char lock_name[STORE_KEY_MAX];
            write_intent_owner_lock(&in, lock_name);
            store_lock *l = NULL;
            rc = store_lock_acquire(s, lock_name, 0, &l);
            if (rc == 0 && store_lock_is_real(l)) {
                p->state = WRITE_PENDING_OWNER_GONE;
            } else if (rc == OG_E_CONFLICT) {
                og_error_clear();
                p->state = WRITE_PENDING_LIVE;
                rc = 0;
            }
            store_lock_release_remove(l);
            if (rc != 0) {
                write_intent_clear(&in);
                return rc;
            }
        }
        if (in_out)
            *in_out = in;
        else
            write_intent_clear(&in);
    }
    bool found = false;
    rc = write_audit_find(s, operation_id, &found, p->audit_kind, NULL);
    if (rc == 0 && found) p->state = WRITE_PENDING_RESOLVED;
    if (rc != 0 && in_out && !p->damaged) write_intent_clear(in_out);
    return rc;
}

int write_pending_list(store *s, bool probe_locks, write_pending **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    char(*ids)[GRAPH_ID_LEN + 1] = NULL;
    size_t k = 0;
    int rc = write_sidecar_list(s, &ids, &k);
    if (rc != 0) return rc;
    write_pending *l = k ? core_calloc(k, sizeof *l) : NULL;
    if (k && !l) {
        core_free(ids);
        return core_err_nomem();
    }
    size_t m = 0;
    for (size_t i = 0; rc == 0 && i < k; i++) {
        rc = pending_read(s, probe_locks, ids[i], &l[m], NULL);
        if (rc == OG_E_NOT_FOUND) { /* finished since it was listed */
            og_error_clear();
            write_pending_clear(&l[m]);
            rc = 0;
            continue;
        }
        m++;
    }
    core_free(ids);
    if (rc != 0) {
        write_pending_list_free(l, m + 1);
        return rc;
    }
    *out = l;
    *n = m;
    return 0;
}

int write_pending_show(store *s, bool probe_locks, const char *operation_id, write_pending *out)
{
    memset(out, 0, sizeof *out);
    if (!core_ulid_valid(operation_id))
        return core_err(OG_E_BAD_REQUEST, "'%s' is not an operation id (a 26-character ULID)",
                        operation_id);
    write_intent in;
    memset(&in, 0, sizeof in);
    int rc = pending_read(s, probe_locks, operation_id, out, &in);
    if (rc == OG_E_NOT_FOUND) {
        write_pending_clear(out);
        char key[STORE_KEY_MAX];
        write_sidecar_key(key, operation_id);
        rc = core_err(OG_E_NOT_FOUND, "no pending recovery intent %s (no %s)", operation_id, key);
        core_err_detail(CORE_ERR_OPERATION_ID, operation_id);
        return rc;
    }
    if (rc != 0) {
        write_pending_clear(out);
        return rc;
    }
    char why[400] = "";
    if (out->state == WRITE_PENDING_RESOLVED) {
        out->action = WRITE_PLAN_RETIRE;
        snprintf(why, sizeof why, "the audit log records it as %s: this file is a stale copy",
                 out->audit_kind);
    } else if (out->damaged) {
        out->action = WRITE_PLAN_BLOCKED;
        snprintf(why, sizeof why,
                 "the file cannot be read as a recovery intent, so nothing "
                 "can be proved about its effects");
    } else {
        graph_snapshot *snap = NULL;
        classified *cl = core_calloc(in.n_effects ? in.n_effects : 1, sizeof *cl);
        rc =
            cl ? graph_snapshot_load(&snap, s, in.branch, 0, GRAPH_SNAP_LINEAGE) : core_err_nomem();
        if (rc == 0) rc = plan_intent(s, &in, snap, cl, &out->action, why, sizeof why);
        graph_snapshot_free(snap);
        core_free(cl);
    }
    write_intent_clear(&in);
    if (rc == 0 && !(out->reason = core_strdup(why))) rc = core_err_nomem();
    if (rc != 0) write_pending_clear(out);
    return rc;
}

const char *write_plan_action_name(int action)
{
    switch (action) {
    case WRITE_PLAN_FINALIZE_FORWARD:
    case WRITE_PLAN_FINALIZE_BACK:
        return "finalize";
    case WRITE_PLAN_ROLL_FORWARD:
        return "roll_forward";
    case WRITE_PLAN_RESUME_ROLLBACK:
    case WRITE_PLAN_ROLL_BACK:
        return "roll_back";
    case WRITE_PLAN_DISCARD:
        return "discard";
    case WRITE_PLAN_RETIRE:
        return "retire";
    case WRITE_PLAN_BLOCKED:
        return "blocked";
    default:
        return "none";
    }
}

const char *write_recovery_kind_name(int kind)
{
    switch (kind) {
    case WRITE_RECOVERY_ROLLED_FORWARD:
        return "rolled_forward";
    case WRITE_RECOVERY_ROLLED_BACK:
        return "rolled_back";
    case WRITE_RECOVERY_DISCARDED:
        return "discarded";
    case WRITE_RECOVERY_RETIRED:
        return "retired";
    case WRITE_RECOVERY_DISCARDED_FORCED:
        return "discarded_forced";
    case WRITE_RECOVERY_REPAIRED:
        return "repaired";
    case WRITE_RECOVERY_REPAIRED_FORCED:
        return "repaired_forced";
    default:
        return "unknown";
    }
}

/* ---- repair -------------------------------------------------------------------------------- */

void write_repair_report_clear(write_repair_report *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n_damaged; i++)
        core_free(r->damaged[i]);
    core_free(r->damaged);
    for (size_t i = 0; i < r->n_tables; i++)
        core_free(r->tables[i].alias);
    core_free(r->tables);
    for (size_t i = 0; i < r->n_refless; i++)
        core_free(r->refless[i]);
    core_free(r->refless);
    for (size_t i = 0; i < r->n_refs; i++)
        core_free(r->refs[i]);
    core_free(r->refs);
    memset(r, 0, sizeof *r);
}

static int repair_new_id(char out[GRAPH_ID_LEN + 1])
{
    core_ulid u;
    int rc = core_ulid_new(&u);
    if (rc == 0) core_ulid_format(&u, out);
    return rc;
}

static void stake_add(write_repair_report *rep, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void stake_add(write_repair_report *rep, const char *fmt, ...)
{
    size_t n = strlen(rep->at_stake);
    if (n + 3 >= sizeof rep->at_stake) return;
    if (n) n += (size_t)snprintf(rep->at_stake + n, sizeof rep->at_stake - n, "; ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rep->at_stake + n, sizeof rep->at_stake - n, fmt, ap);
    va_end(ap);
}

static bool same_fields(const lance_dataset *a, const lance_dataset *b)
{
    if (a->schema.n_fields != b->schema.n_fields || a->n_field_ids != b->n_field_ids ||
        memcmp(a->field_ids, b->field_ids, a->n_field_ids * sizeof *a->field_ids) != 0)
        return false;
    for (size_t i = 0; i < a->schema.n_fields; i++)
        if (strcmp(a->schema.fields[i].name, b->schema.fields[i].name) != 0 ||
            !arrow_type_equal(&a->schema.fields[i].type, &b->schema.fields[i].type))
            return false;
    return true;
}

/* Whether table t can be pinned at its HEAD: that version opens and has the fields of the
 * version the intact manifest pins (a data write never changes them; a schema apply does, and
 * then the lost version also changed the catalog, which the intact one does not know). */
static int forward_check_table(store *s, const graph_table *t, uint64_t head,
                               write_repair_report *rep)
{
    lance_dataset *at_head = NULL, *pinned = NULL;
    int rc =
        lance_branch_open(&at_head, s, t->path, t->table_branch, head, NULL, LANCE_ACCESS_READ);
    if (rc == OG_E_CORRUPT || rc == OG_E_NOT_FOUND) {
        stake_add(rep, "table %s's HEAD (Lance version %llu) does not open: %s", t->alias,
                  (unsigned long long)head, og_error_last()->message);
        og_error_clear();
        return 0;
    }
    if (rc == 0)
        rc = lance_branch_open(&pinned, s, t->path, t->table_branch, t->version, NULL,
                               LANCE_ACCESS_READ);
    if (rc == 0 && !same_fields(at_head, pinned))
        stake_add(rep,
                  "table %s changed its columns between Lance version %llu (pinned) and its HEAD "
                  "%llu: a schema apply's commit was lost",
                  t->alias, (unsigned long long)t->version, (unsigned long long)head);
    lance_dataset_free(at_head);
    lance_dataset_free(pinned);
    return rc;
}

/* A table branch `branch` reads from its source in the intact version: a fork of it for this
 * branch, made at exactly the pinned version of the source (what a first touch does) and with
 * commits of its own, holds what a lost first-touch commit published. */
static int lost_first_touch(store *s, const char *branch, const graph_table *t,
                            write_repair_report *rep)
{
    lance_branch fr;
    int rc = lance_branch_get(s, t->path, branch, &fr);
    if (rc == OG_E_NOT_FOUND || rc == OG_E_CORRUPT) {
        og_error_clear(); /* no fork (or one repair_refs could not rebuild: verify names it) */
        return 0;
    }
    if (rc != 0) return rc;
    const char *src = t->table_branch ? t->table_branch : "";
    if (strcmp(fr.parent, src) != 0 || fr.parent_version != t->version) return 0;
    char froot[STORE_KEY_MAX];
    uint64_t head = 0;
    lance_naming naming;
    rc = lance_branch_root(froot, t->path, branch);
    if (rc == 0) rc = lance_version_latest(s, froot, &head, &naming);
    if (rc != 0 || head <= fr.parent_version) return rc;
    write_repair_table *rt = &rep->tables[rep->n_tables];
    if (!(rt->alias = core_strdup(t->alias))) return core_err_nomem();
    rt->head = head;
    rt->published = t->version;
    rt->fork = true;
    rep->n_tables++;
    /* its HEAD must open with the columns of the version it was forked from */
    lance_dataset *at_head = NULL, *pinned = NULL;
    rc = lance_branch_open(&at_head, s, t->path, branch, head, NULL, LANCE_ACCESS_READ);
    if (rc == OG_E_CORRUPT || rc == OG_E_NOT_FOUND) {
        stake_add(rep, "the fork of table %s (Lance version %llu) does not open: %s", t->alias,
                  (unsigned long long)head, og_error_last()->message);
        og_error_clear();
        return 0;
    }
    if (rc == 0)
        rc = lance_branch_open(&pinned, s, t->path, t->table_branch, t->version, NULL,
                               LANCE_ACCESS_READ);
    if (rc == 0 && !same_fields(at_head, pinned))
        stake_add(rep, "the fork of table %s changed its columns: a schema apply's commit was lost",
                  t->alias);
    lance_dataset_free(at_head);
    lance_dataset_free(pinned);
    return rc;
}

/* What is damaged: the versions above the newest intact one, and the tables ahead of it; and
 * whether pinning those tables at their HEADs keeps every acknowledged commit (rep->at_stake
 * says why not). */
static int repair_inspect(store *s, const char *branch, write_repair_report *rep,
                          graph_snapshot **snap_out)
{
    *snap_out = NULL;
    memset(rep, 0, sizeof *rep);
    char root[STORE_KEY_MAX];
    int rc = lance_branch_root(root, GRAPH_MANIFEST_DIR, branch);
    if (rc != 0) return rc;
    graph_manifest_damage d;
    if ((rc = graph_manifest_inspect(s, branch, &d)) != 0) return rc;
    rep->latest = d.latest;
    rep->intact = d.intact;
    rep->missing = d.hinted;
    snprintf(rep->why, sizeof rep->why, "%s", d.why);
    if (d.intact == 0) {
        core_err(OG_E_CORRUPT,
                 "no graph-manifest version%s%s can be read (the newest, %llu: %s): there is no "
                 "intact state to restore; restore the graph from a backup",
                 branch ? " of branch " : "", branch ? branch : "", (unsigned long long)d.latest,
                 d.why);
        core_err_detail(CORE_ERR_OBJECT, d.damaged_key[0] ? d.damaged_key : root);
        return OG_E_CORRUPT;
    }
    lance_version_list l;
    if ((rc = lance_versions_list(s, root, &l)) != 0) return rc;
    /* A hole at or above the hint (cleanup makes them only below it): the search for the head
     * stops there. Every version is a whole state, so the newer ones hold every commit the
     * lost one had: only reading at the lost version is gone, and moving the hint above the
     * hole restores the head. */
    uint64_t hint = lance_hint_read(s, root);
    for (size_t i = 0; i + 1 < l.n; i++)
        if (l.v[i + 1] > l.v[i] + 1 && l.v[i + 1] - 1 >= hint && l.v[i + 1] <= d.intact)
            rep->lost = l.v[i + 1] - 1;
    for (size_t i = 0; rc == 0 && i < l.n; i++) {
        if (l.v[i] <= d.intact) continue;
        char name[LANCE_VERSION_NAME_CAP], key[STORE_KEY_MAX];
        rc = lance_version_file_name(name, sizeof name, l.naming, l.v[i]);
        if (rc == 0) rc = lance_key(key, root, LANCE_VERSIONS_DIR, name);
        char **grown = rc ? NULL : core_realloc(rep->damaged, (rep->n_damaged + 1) * sizeof *grown);
        if (rc == 0 && !grown) rc = core_err_nomem();
        if (rc == 0) {
            rep->damaged = grown;
            if (!(rep->damaged[rep->n_damaged] = core_strdup(key)))
                rc = core_err_nomem();
            else
                rep->n_damaged++;
        }
    }
    lance_version_list_free(&l);
    if (rc != 0) return rc;
    graph_snapshot *snap = NULL;
    if ((rc = graph_snapshot_load(&snap, s, branch, d.intact, GRAPH_SNAP_LINEAGE)) != 0) return rc;
    if (snap->n_tables && !(rep->tables = core_calloc(snap->n_tables, sizeof *rep->tables)))
        rc = core_err_nomem();
    for (size_t i = 0; rc == 0 && i < snap->n_tables; i++) {
        const graph_table *t = &snap->tables[i];
        /* Only the branch's own tables: one it has not forked is its source's, which moves on
         * legitimately (and is repaired as the source's). */
        bool own =
            branch ? t->table_branch && strcmp(t->table_branch, branch) == 0 : !t->table_branch;
        if (!own) {
            if (branch) rc = lost_first_touch(s, branch, t, rep);
            continue;
        }
        char troot[STORE_KEY_MAX];
        uint64_t head = 0;
        lance_naming naming;
        rc = lance_branch_root(troot, t->path, t->table_branch);
        if (rc == 0) rc = lance_version_latest(s, troot, &head, &naming);
        if (rc != 0) break;
        if (head < t->version) {
            rc = core_err(OG_E_CORRUPT,
                          "table %s is at Lance version %llu, below the version %llu the newest "
                          "intact graph-manifest version (%llu) publishes: its history lost "
                          "versions; repair cannot restore them (restore from a backup)",
                          t->alias, (unsigned long long)head, (unsigned long long)t->version,
                          (unsigned long long)d.intact);
            core_err_detail(CORE_ERR_OBJECT, t->path);
            break;
        }
        if (head == t->version) continue;
        write_repair_table *rt = &rep->tables[rep->n_tables];
        if (!(rt->alias = core_strdup(t->alias))) {
            rc = core_err_nomem();
            break;
        }
        rt->head = head;
        rt->published = t->version;
        rep->n_tables++;
        rc = forward_check_table(s, t, head, rep);
    }
    /* A schema apply is committed on main, then mirrored at the root: an accepted schema other
     * than the one the intact version records was published by a version that is lost (its
     * catalog, registrations and schema row are not in any table). */
    if (rc == 0 && !branch && (rep->n_damaged || rep->missing || rep->n_tables)) {
        lang_catalog *cat = NULL;
        char id[GRAPH_SCHEMA_HASH_LEN + 1] = "";
        int src = graph_schema_read(s, &cat, id);
        lang_catalog_free(cat);
        if (src == 0 && strcmp(id, snap->schema_identity) != 0)
            stake_add(rep,
                      "the accepted schema (_schema.json, identity %s) is not the one the intact "
                      "version records (%s): a schema apply's commit was lost",
                      id, snap->schema_identity);
        else if (src != 0)
            og_error_clear(); /* damaged schema files: the schema repair reports them */
    }
    if (rc != 0) {
        graph_snapshot_free(snap);
        return rc;
    }
    rep->clean = rep->n_damaged == 0 && rep->n_tables == 0 && rep->missing == 0 && rep->lost == 0;
    *snap_out = snap;
    return 0;
}

/* ---- branch refs -------------------------------------------------------------------------- */

typedef struct ref_fixes {
    char **keys;
    size_t n;
} ref_fixes;

static void ref_fixes_free(ref_fixes *f)
{
    for (size_t i = 0; i < f->n; i++)
        core_free(f->keys[i]);
    core_free(f->keys);
    memset(f, 0, sizeof *f);
}

/* The ref of branch `name` of the table at root does not read: rebuild it (prove it can be,
 * and with confirm store it, keeping a damaged one under _repair/refs/ first). */
static int ref_fix(store *s, const char *root, const char *name, bool confirm, ref_fixes *f)
{
    char key[STORE_KEY_MAX];
    int rc = lance_branch_ref_key(key, root, name);
    lance_branch out;
    if (rc == 0) rc = lance_branch_ref_rebuild(s, root, name, false, &out);
    if (rc != 0) return rc;
    if (confirm) {
        core_buf b = CORE_BUF_INIT;
        int g = store_get(s, key, 0, STORE_ALL, &b);
        if (g == 0) {
            char kept[STORE_KEY_MAX];
            int n = snprintf(kept, sizeof kept, "_repair/refs/%s", key);
            g = n > 0 && (size_t)n < sizeof kept
                    ? store_put(s, kept, b.data, b.len, 0)
                    : core_err(OG_E_INTERNAL, "repair: key of %s too long", key);
        } else if (g == OG_E_NOT_FOUND) {
            og_error_clear();
            g = 0;
        }
        core_buf_free(&b);
        if (g != 0) return g;
        if ((rc = lance_branch_ref_rebuild(s, root, name, true, &out)) != 0) return rc;
        core_log(CORE_LOG_WARN,
                 "repair: rebuilt the ref %s of branch %s (identity %s, forked at "
                 "version %llu)",
                 key, name, out.identity, (unsigned long long)out.parent_version);
    }
    char **grown = core_realloc(f->keys, (f->n + 1) * sizeof *grown);
    if (!grown) return core_err_nomem();
    f->keys = grown;
    if (!(f->keys[f->n] = core_strdup(key))) return core_err_nomem();
    f->n++;
    return 0;
}

/* The table-level refs of graph branch `name`: every fork its newest readable manifest version
 * pins must have a ref that reads. */
static int repair_fork_refs(store *s, const char *name, bool confirm, ref_fixes *f)
{
    char root[STORE_KEY_MAX];
    uint64_t latest = 0;
    lance_naming naming;
    graph_snapshot *snap = NULL;
    int rc = lance_branch_root(root, GRAPH_MANIFEST_DIR, name);
    if (rc == 0) rc = lance_version_latest(s, root, &latest, &naming);
    if (rc == 0) rc = graph_snapshot_load(&snap, s, name, latest, 0);
    if (rc == OG_E_CORRUPT || rc == OG_E_NOT_FOUND) {
        og_error_clear(); /* the branch's manifest repair reports it */
        return 0;
    }
    for (size_t i = 0; rc == 0 && i < snap->n_tables; i++) {
        const graph_table *t = &snap->tables[i];
        if (!t->table_branch || strcmp(t->table_branch, name) != 0) continue;
        lance_branch r;
        int g = lance_branch_get(s, t->path, name, &r);
        if (g == 0) continue;
        if (g != OG_E_NOT_FOUND && g != OG_E_CORRUPT) {
            rc = g;
            break;
        }
        og_error_clear();
        rc = ref_fix(s, t->path, name, confirm, f);
    }
    graph_snapshot_free(snap);
    return rc;
}

/* Refs first: every later step reads through them. The graph-level ref only of a branch the
 * operator names (a branch directory without a ref is also what an interrupted delete leaves,
 * which repair cannot tell from a lost ref); table-level refs of every readable graph branch. */
static int repair_refs(store *s, const char *branch, bool confirm, ref_fixes *f)
{
    int rc = 0;
    if (branch) {
        lance_branch ref;
        rc = lance_branch_get(s, GRAPH_MANIFEST_DIR, branch, &ref);
        if (rc == OG_E_NOT_FOUND || rc == OG_E_CORRUPT) {
            og_error_clear();
            rc = ref_fix(s, GRAPH_MANIFEST_DIR, branch, confirm, f);
            if (rc == OG_E_NOT_FOUND) {
                og_error_clear();
                rc = core_err(OG_E_NOT_FOUND,
                              "branch '%s' does not exist (no ref, and no manifest versions of "
                              "it to rebuild one from)",
                              branch);
            }
        }
        return rc ? rc : repair_fork_refs(s, branch, confirm, f);
    }
    lance_branch *all = NULL;
    size_t n = 0;
    rc = lance_branch_list(s, GRAPH_MANIFEST_DIR, &all, &n);
    if (rc == OG_E_CORRUPT) { /* a damaged graph-level ref: `repair --branch NAME` */
        og_error_clear();
        return 0;
    }
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (write_branch_name_check(all[i].name) == 0)
            rc = repair_fork_refs(s, all[i].name, confirm, f);
        else
            og_error_clear(); /* an internal or foreign ref of the manifest */
    lance_branch_list_free(all);
    return rc;
}

/* The versions a damaged top held, for messages: "version 5" or "versions 5 to 7". */
static void stake_versions(const write_repair_report *rep, char *out, size_t cap)
{
    uint64_t top = rep->missing > rep->latest ? rep->missing : rep->latest;
    if (top <= rep->intact + 1)
        snprintf(out, cap, "version %llu", (unsigned long long)(rep->intact + 1));
    else
        snprintf(out, cap, "versions %llu to %llu", (unsigned long long)(rep->intact + 1),
                 (unsigned long long)top);
}

/* The refusal: what would be dropped, and the two remedies. */
static int repair_refuse(const char *branch, const write_repair_report *rep)
{
    char vs[80], tabs[600] = "";
    stake_versions(rep, vs, sizeof vs);
    size_t n = 0;
    for (size_t i = 0; i < rep->n_tables && n + 2 < sizeof tabs; i++)
        n += (size_t)snprintf(tabs + n, sizeof tabs - n, "%s%s (HEAD %llu, pinned %llu)",
                              i ? ", " : "", rep->tables[i].alias,
                              (unsigned long long)rep->tables[i].head,
                              (unsigned long long)rep->tables[i].published);
    int rc = core_err(OG_E_PRECONDITION_FAILED,
                      "repair refused: the commits of graph-manifest %s%s%s cannot be rolled "
                      "forward (%s), and restoring the newest intact version (%llu) would drop "
                      "them, acknowledged%s%s. Restore the graph (or the lost version files) from "
                      "a backup taken after them; or `omnigraph repair --confirm --force` drops "
                      "them (every table ahead restored to the intact version's pin; audited as "
                      "repaired_forced)",
                      vs, branch ? " of branch " : "", branch ? branch : "", rep->at_stake,
                      (unsigned long long)rep->intact, n ? ": their data is in " : "", tabs);
    core_err_detail(CORE_ERR_OBJECT,
                    rep->n_damaged ? rep->damaged[rep->n_damaged - 1] : GRAPH_MANIFEST_DIR);
    return rc;
}

/* The repair intent. Forward: one effect per table ahead, whose expected_version is the HEAD
 * its commit pins. Forced: one effect (with its rollback plan) per table ahead. */
static int repair_intent(write_intent *in, const char *branch, int mode,
                         const write_repair_report *rep, const graph_snapshot *snap,
                         classified **cl_out)
{
    *cl_out = NULL;
    memset(in, 0, sizeof *in);
    in->format = WRITE_SIDECAR_FORMAT;
    in->kind = WRITE_KIND_OPTIMIZE; /* content-wise a maintenance commit (no writer of its own) */
    in->repair_mode = mode;
    in->started_at_us = write_now_us();
    in->created_at_us = in->started_at_us;
    in->owner_pid = (int64_t)getpid();
    int rc = repair_new_id(in->operation_id);
    if (rc == 0) rc = repair_new_id(in->commit_id);
    if (rc == 0) rc = repair_new_id(in->rollback_commit_id);
    if (rc == 0 && !(in->actor = core_strdup(WRITE_ACTOR_REPAIR))) rc = core_err_nomem();
    if (rc == 0 && branch && !(in->branch = core_strdup(branch))) rc = core_err_nomem();
    if (rc != 0) return rc;
    memcpy(in->parent_commit_id, snap->head, sizeof in->parent_commit_id);
    write_rs_capture(&in->rs, snap);
    size_t n = rep->n_tables;
    classified *cl = core_calloc(n ? n : 1, sizeof *cl);
    if (!cl || (n && !(in->effects = core_calloc(n, sizeof *in->effects))) ||
        (n && mode == WRITE_REPAIR_FORCED &&
         !(in->rollback = core_calloc(n, sizeof *in->rollback)))) {
        core_free(cl);
        return core_err_nomem();
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const graph_table *t = graph_snapshot_table(snap, rep->tables[i].alias);
        /* A lost first touch's fork: pinned forward; forced, it is simply left unpinned. */
        if (rep->tables[i].fork && mode == WRITE_REPAIR_FORCED) continue;
        const char *tb = rep->tables[i].fork ? branch : t->table_branch;
        write_effect *e = &in->effects[in->n_effects];
        classified *c = &cl[in->n_effects++];
        e->kind = t->kind;
        e->sid = t->sid;
        e->inc = t->inc;
        e->expected_version = mode == WRITE_REPAIR_FORWARD ? rep->tables[i].head : t->version;
        if (!(e->alias = core_strdup(t->alias)) || !(e->path = core_strdup(t->path)) ||
            (tb && !(e->table_branch = core_strdup(tb)))) {
            rc = core_err_nomem();
            break;
        }
        if ((rc = new_uuid(e->uuid)) != 0) break;
        c->state = EFFECT_OWN_AT_HEAD;
        c->head = rep->tables[i].head;
        if (mode != WRITE_REPAIR_FORCED) continue;
        write_rollback *r = &in->rollback[in->n_rollback++];
        r->from = rep->tables[i].head;
        r->to = t->version;
        if (!(r->alias = core_strdup(t->alias))) rc = core_err_nomem();
        if (rc == 0) rc = new_uuid(r->uuid);
    }
    if (rc != 0) {
        core_free(cl);
        return rc;
    }
    *cl_out = cl;
    return 0;
}

/* Move each damaged version file to _repair/<operation id>/<its key>: copied durably, then
 * deleted. A file already moved (a re-run after a crash) is skipped. */
static int repair_move_aside(store *s, const write_repair_report *rep, const char *operation_id,
                             char moved_to[STORE_KEY_MAX])
{
    snprintf(moved_to, STORE_KEY_MAX, "_repair/%s", operation_id);
    for (size_t i = 0; i < rep->n_damaged; i++) {
        char dst[STORE_KEY_MAX];
        int n = snprintf(dst, sizeof dst, "%s/%s", moved_to, rep->damaged[i]);
        if (n < 0 || (size_t)n >= sizeof dst)
            return core_err(OG_E_INTERNAL, "repair: key of %s too long", rep->damaged[i]);
        core_buf b = CORE_BUF_INIT;
        int rc = store_get(s, rep->damaged[i], 0, STORE_ALL, &b);
        if (rc == OG_E_NOT_FOUND) {
            core_buf_free(&b);
            og_error_clear();
            continue;
        }
        if (rc == 0) rc = store_put(s, dst, b.data, b.len, 0);
        core_buf_free(&b);
        if (rc == 0) rc = store_delete(s, rep->damaged[i], 0);
        if (rc != 0) return rc;
    }
    return 0;
}

static int repair_body(write_graph *g, const char *branch, bool confirm, bool force,
                       write_repair_report *rep);

/* One audit row for the refs a repair rebuilt (the outcomes name each ref file). */
static int repair_audit_refs(store *s, const ref_fixes *f)
{
    write_intent bare;
    memset(&bare, 0, sizeof bare);
    int rc = repair_new_id(bare.operation_id);
    bare.kind = WRITE_KIND_OPTIMIZE;
    bare.actor = (char *)WRITE_ACTOR_REPAIR; /* only read */
    core_buf oj = CORE_BUF_INIT;
    if (rc == 0) rc = core_buf_append_str(&oj, "[");
    for (size_t i = 0; rc == 0 && i < f->n; i++)
        rc = core_buf_printf(&oj, "%s{\"ref\":\"%s\",\"rebuilt\":true}", i ? "," : "", f->keys[i]);
    if (rc == 0) rc = core_buf_append_str(&oj, "]");
    if (rc == 0) rc = core_buf_append_byte(&oj, 0);
    if (rc == 0)
        rc = write_audit_record(s, &bare, WRITE_RECOVERY_REPAIRED, "", (const char *)oj.data);
    core_buf_free(&oj);
    return rc;
}

int write_repair(write_graph *g, const char *branch, bool confirm, bool force,
                 write_repair_report *rep)
{
    memset(rep, 0, sizeof *rep);
    if (g->h->readonly) return core_err(OG_E_BAD_REQUEST, "repair needs a read-write handle");
    if (branch && !*branch) branch = NULL;
    store *s = g->h->s;
    ref_fixes refs = {NULL, 0};
    int rc = repair_refs(s, branch, confirm, &refs);
    if (rc == 0 && refs.n && confirm) rc = repair_audit_refs(s, &refs);
    if (rc != 0) {
        ref_fixes_free(&refs);
        return rc;
    }
    /* A dry run that found the branch's own ref lost cannot read the branch until the ref is
     * rebuilt: it reports the ref alone. */
    char gkey[STORE_KEY_MAX] = "";
    if (branch) rc = lance_branch_ref_key(gkey, GRAPH_MANIFEST_DIR, branch);
    bool own_ref = false;
    for (size_t i = 0; rc == 0 && branch && !confirm && i < refs.n; i++)
        own_ref |= strcmp(refs.keys[i], gkey) == 0;
    if (rc == 0 && !own_ref) rc = repair_body(g, branch, confirm, force, rep);
    if (rc == 0 && refs.n) {
        rep->refs = refs.keys;
        rep->n_refs = refs.n;
        refs.keys = NULL;
        refs.n = 0;
        rep->clean = false;
        rep->repaired = rep->repaired || confirm;
    }
    ref_fixes_free(&refs);
    /* A graph branch whose ref is gone is invisible, and only the operator knows whether it
     * was deleted on purpose: repair of main names them, `--branch NAME` rebuilds one. */
    if (rc == 0 && !branch) {
        rc = write_branch_refless(s, &rep->refless, &rep->n_refless);
        if (rc == 0 && rep->n_refless) rep->clean = false;
    }
    return rc;
}

static int repair_body(write_graph *g, const char *branch, bool confirm, bool force,
                       write_repair_report *rep)
{
    store *s = g->h->s;
    /* Interrupted writes first: recovery resolves them (a crashed repair's intent included),
     * or says which one needs an operator. */
    char(*ids)[GRAPH_ID_LEN + 1] = NULL;
    size_t n_ids = 0;
    int rc = write_sidecar_list(s, &ids, &n_ids);
    core_free(ids);
    if (rc != 0) return rc;
    if (n_ids) {
        if (!confirm) {
            rc = core_err(OG_E_RECOVERY_REQUIRED,
                          "%zu interrupted write(s) are pending: `omnigraph repair --confirm` "
                          "resolves them first, or see them with `omnigraph recover list`",
                          n_ids);
            return rc;
        }
        size_t resolved = 0;
        if ((rc = write_recover(g, NULL, &resolved)) != 0) {
            char saved[700];
            snprintf(saved, sizeof saved, "%s", og_error_last()->message);
            core_err(rc,
                     "repair resolves pending interrupted writes first, and one could not be: "
                     "%s (`omnigraph recover list` shows them)",
                     saved);
            return rc;
        }
    }
    graph_snapshot *snap = NULL;
    if ((rc = repair_inspect(s, branch, rep, &snap)) != 0) return rc;
    char root[STORE_KEY_MAX];
    if ((rc = lance_branch_root(root, GRAPH_MANIFEST_DIR, branch)) != 0) {
        graph_snapshot_free(snap);
        return rc;
    }
    /* With the top of history sound, what a cleanup killed part way by an older build left:
     * commits outside its retention that no longer read; finishing it removes their manifest
     * versions (with the top damaged, the head is repaired first and a re-run does this). */
    if (rep->clean) {
        uint64_t floor = 0;
        if (!branch) rc = write_cleanup_unfinished(s, &rep->cleanup_unfinished, &floor);
        if (rc == 0 && rep->cleanup_unfinished) {
            rep->clean = false;
            if (confirm) rc = write_cleanup_finish(g, floor, &rep->cleanup_versions_removed);
            rep->repaired = rc == 0 && confirm;
        }
        graph_snapshot_free(snap);
        return rc;
    }
    if (!confirm) {
        graph_snapshot_free(snap);
        return 0;
    }
    if (rep->n_damaged == 0 && rep->n_tables == 0 && rep->missing == 0) {
        /* Only a hole below the newest intact version: nothing to restore, no commit to make;
         * the hint (not durable state, rewritten by later commits and cleanups) is pointed at
         * the newest, so the search never starts below the hole again. */
        graph_snapshot_free(snap);
        rc = lance_hint_write(s, root, rep->intact);
        rep->repaired = rc == 0;
        return rc;
    }
    /* Roll forward, unless that cannot keep every acknowledged commit: then only an operator's
     * --force rolls the tables back (dropping those commits, audited as such). */
    if (rep->at_stake[0] && !force) {
        rc = repair_refuse(branch, rep);
        graph_snapshot_free(snap);
        return rc;
    }
    int mode = rep->at_stake[0] ? WRITE_REPAIR_FORCED : WRITE_REPAIR_FORWARD;
    write_intent in;
    classified *cl = NULL;
    write_gate_set *gates = NULL;
    store_lock *owner = NULL;
    rc = repair_intent(&in, branch, mode, rep, snap, &cl);
    if (rc == 0) rc = write_intent_gates(g, &in, &gates);
    /* Under the gates: nothing moved since the inspection (a writer that got in between made
     * the state differ; run again). */
    if (rc == 0) {
        write_repair_report again;
        graph_snapshot *snap2 = NULL;
        rc = repair_inspect(s, branch, &again, &snap2);
        if (rc == 0 && (again.latest != rep->latest || again.intact != rep->intact ||
                        again.n_tables != rep->n_tables || again.n_damaged != rep->n_damaged ||
                        strcmp(again.at_stake, rep->at_stake) != 0))
            rc = core_err(OG_E_CONFLICT, "the graph changed while repair inspected it; run "
                                         "`omnigraph repair` again");
        for (size_t i = 0; rc == 0 && i < rep->n_tables; i++)
            if (again.tables[i].head != rep->tables[i].head)
                rc = core_err(OG_E_CONFLICT, "the graph changed while repair inspected it; run "
                                             "`omnigraph repair` again");
        write_repair_report_clear(&again);
        graph_snapshot_free(snap2);
    }
    char lock_name[STORE_KEY_MAX];
    if (rc == 0) {
        write_intent_owner_lock(&in, lock_name);
        rc = store_lock_acquire(s, lock_name, 0, &owner);
    }
    if (rc == 0) rc = repair_move_aside(s, rep, in.operation_id, rep->moved_to);
    if (rc == 0 && rep->n_damaged == 0) rep->moved_to[0] = 0;
    /* Discovery must not start from a version that is gone. */
    if (rc == 0 && (rep->lost || lance_hint_read(s, root) > rep->intact))
        rc = lance_hint_write(s, root, rep->intact);
    if (rc == 0) rc = write_sidecar_put(s, &in);
    uint64_t mver = 0;
    if (rc == 0 && mode == WRITE_REPAIR_FORWARD) {
        size_t n = in.n_effects;
        uint64_t *from = core_calloc(n ? n : 1, sizeof *from);
        uint64_t *to = core_calloc(n ? n : 1, sizeof *to);
        rc = from && to ? 0 : core_err_nomem();
        for (size_t i = 0; rc == 0 && i < n; i++) { /* forward: effects are the tables, in order */
            from[i] = rep->tables[i].published;
            to[i] = rep->tables[i].head;
        }
        if (rc == 0) rc = repair_fwd_publish(g, &in, snap, &mver);
        if (rc == 0) rc = finalize(g, &in, WRITE_RECOVERY_REPAIRED, in.commit_id, from, to);
        core_free(from);
        core_free(to);
        if (rc == 0) memcpy(rep->commit_id, in.commit_id, sizeof rep->commit_id);
    } else if (rc == 0) {
        rc = roll_back(g, &in, cl, snap);
        graph_snapshot *after = NULL;
        if (rc == 0) rc = graph_snapshot_load(&after, s, branch, 0, GRAPH_SNAP_LINEAGE);
        for (size_t i = 0; rc == 0 && i < after->n_commits; i++)
            if (strcmp(after->commits[i].id, in.rollback_commit_id) == 0)
                mver = after->commits[i].manifest_version;
        graph_snapshot_free(after);
        if (rc == 0) memcpy(rep->commit_id, in.rollback_commit_id, sizeof rep->commit_id);
        rep->forced = rc == 0;
    }
    if (rc == 0) {
        rep->manifest_version = mver;
        memcpy(rep->operation_id, in.operation_id, sizeof rep->operation_id);
        rep->repaired = true;
    }
    if (owner) store_lock_release_remove(owner);
    write_gate_set_release(gates);
    core_free(cl);
    write_intent_clear(&in);
    graph_snapshot_free(snap);
    return rc;
}

int write_repair_inspect(store *s, const char *branch, write_repair_report *rep)
{
    if (branch && !*branch) branch = NULL;
    graph_snapshot *snap = NULL;
    int rc = repair_inspect(s, branch, rep, &snap);
    graph_snapshot_free(snap);
    uint64_t floor = 0;
    if (rc == 0 && rep->clean && !branch)
        rc = write_cleanup_unfinished(s, &rep->cleanup_unfinished, &floor);
    if (rc == 0 && rep->cleanup_unfinished) rep->clean = false;
    if (rc == 0 && !branch) {
        rc = write_branch_refless(s, &rep->refless, &rep->n_refless);
        if (rc == 0 && rep->n_refless) rep->clean = false;
    }
    return rc;
}
