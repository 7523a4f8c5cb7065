/* Recovery (RFC-022 §4.1, §5): resolve one armed intent whose owner is gone, by exact effect
 * identity — a table has moved because of this intent only if the transaction at the version
 * after its expected one carries the intent's pre-recorded uuid; "a newer version exists" is
 * never proof. Outcomes:
 *   - the intent's commit (or its rollback commit) is visible: finalize (audit, delete);
 *   - no table moved: discard the intent (audit, delete);
 *   - every table moved by exactly its own transaction and the branch head is still the one
 *     the intent was built on: roll forward (publish the delta with the original lineage);
 *   - some moved, some did not: roll back the moved ones with Restore (rollback plan persisted
 *     in the sidecar first, each restore with a pre-minted uuid) and publish a rollback commit
 *     so every pin equals its Lance HEAD;
 *   - anything else (foreign commits on a table, a head that moved past a live intent): fail
 *     typed recovery_required and touch nothing.
 * Recovery acts only under the intent's gates and its owner lock (proof the owner is gone). */
#include "write/internal.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/failpoint.h"
#include "core/log.h"
#include "lance/paths.h"
#include "lance/restore.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

typedef enum effect_state {
    EFFECT_NO_MOVEMENT = 1, /* HEAD == expected */
    EFFECT_OWN_AT_HEAD,     /* HEAD == expected + 1 and that version is our transaction */
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

static int classify_effect(store *s, const write_effect *e, uint64_t pin, classified *out)
{
    char root[STORE_KEY_MAX];
    lance_naming naming;
    int rc = table_root(root, e);
    if (rc == 0)
        rc = lance_version_latest(s, root, &out->head, &naming);
    if (rc != 0)
        return rc;
    if (pin != e->expected_version) {
        out->state = EFFECT_FOREIGN;
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
        if (rc != 0)
            return rc;
        out->state = v == out->head ? EFFECT_OWN_AT_HEAD : EFFECT_FOREIGN;
        return 0;
    }
    out->state = EFFECT_FOREIGN;
    return 0;
}

static bool commit_visible(const graph_snapshot *snap, const char *id)
{
    for (size_t i = 0; i < snap->n_commits; i++)
        if (strcmp(snap->commits[i].id, id) == 0)
            return true;
    return false;
}

static int outcomes_json(const write_intent *in, const uint64_t *from, const uint64_t *to,
                         core_buf *out)
{
    int rc = core_buf_append_str(out, "[");
    for (size_t i = 0; rc == 0 && i < in->n_effects; i++)
        rc = core_buf_printf(out, "%s{\"table_key\":\"%s\",\"from_version\":%" PRIu64
                             ",\"to_version\":%" PRIu64 "}",
                             i ? "," : "", in->effects[i].alias, from[i], to[i]);
    if (rc == 0)
        rc = core_buf_append_str(out, "]");
    if (rc == 0)
        rc = core_buf_append_byte(out, 0);
    return rc;
}

/* Audit, then delete the sidecar. */
static int finalize(write_graph *g, const write_intent *in, int kind, const char *commit_id,
                    const uint64_t *from, const uint64_t *to)
{
    core_buf oj = CORE_BUF_INIT;
    int rc = outcomes_json(in, from, to, &oj);
    if (rc == 0)
        rc = OG_FAILPOINT("recovery.pre_audit");
    if (rc == 0)
        rc = write_audit_record(g->h->s, in, kind, commit_id, (const char *)oj.data);
    core_buf_free(&oj);
    if (rc != 0)
        return rc;
    char key[STORE_KEY_MAX];
    write_sidecar_key(key, in->operation_id);
    if ((rc = OG_FAILPOINT("recovery.pre_sidecar_delete")) != 0)
        return rc;
    if ((rc = store_delete(g->h->s, key, 0)) != 0)
        return rc;
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
                      "resolves it",
                      in->operation_id, write_kind_name(in->kind), why);
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
    if (rc == 0)
        rc = write_rows_lineage(rows, in, in->commit_id, in->parent_commit_id, in->actor,
                                in->created_at_us, mver, in->kind == WRITE_KIND_OPTIMIZE);
    return rc;
}

static int count_at(store *s, const write_effect *e, uint64_t version, uint64_t *count)
{
    lance_dataset *ds = NULL;
    int rc = lance_branch_open(&ds, s, e->path, e->table_branch, version, NULL,
                               LANCE_ACCESS_READ);
    if (rc == 0)
        rc = lance_dataset_count_rows(ds, count);
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
                                WRITE_ACTOR_RECOVERY, in->started_at_us, mver, true);
    return rc;
}

static int new_uuid(char out[WRITE_UUID_CAP])
{
    char u[LANCE_UUID_LEN + 1];
    int rc = lance_uuid_new(u);
    if (rc == 0)
        snprintf(out, WRITE_UUID_CAP, "%s", u);
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
    if (rc == 0)
        rc = lance_version_latest(s, root, &head, &naming);
    if (rc != 0)
        return rc;
    if (head == plan->from + 1) {
        uint64_t v = 0;
        rc = lance_find_txn_version(s, root, plan->uuid, plan->from + 1, &v);
        if (rc == 0 && v == head) {
            *restored_version = head;
            return 0;
        }
        if (rc != 0 && rc != OG_E_NOT_FOUND)
            return rc;
        return core_err(OG_E_RECOVERY_REQUIRED, "table %s moved during its rollback", e->alias);
    }
    if (head != plan->from)
        return core_err(OG_E_RECOVERY_REQUIRED, "table %s moved during its rollback", e->alias);
    lance_dataset *ds = NULL, *after = NULL;
    rc = lance_branch_open(&ds, s, e->path, e->table_branch, head, NULL, LANCE_ACCESS_WRITE);
    if (rc == 0)
        rc = lance_restore(&after, ds, plan->to, plan->uuid);
    if (rc == 0)
        *restored_version = lance_dataset_version(after);
    lance_dataset_free(after);
    lance_dataset_free(ds);
    return rc;
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
        if (k && !(in->rollback = core_calloc(k, sizeof *in->rollback)))
            rc = core_err_nomem();
        for (size_t i = 0; rc == 0 && i < n; i++) {
            if (cl[i].state != EFFECT_OWN_AT_HEAD)
                continue;
            write_rollback *r = &in->rollback[in->n_rollback++];
            r->from = cl[i].head;
            r->to = in->effects[i].expected_version;
            rc = new_uuid(r->uuid);
            if (rc == 0 && !(r->alias = core_strdup(in->effects[i].alias)))
                rc = core_err_nomem();
        }
        if (rc == 0)
            rc = write_sidecar_put(g->h->s, in);
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        from[i] = to[i] = in->effects[i].expected_version;
        for (size_t k = 0; k < in->n_rollback; k++) {
            if (strcmp(in->rollback[k].alias, in->effects[i].alias) != 0)
                continue;
            rc = OG_FAILPOINT("recovery.pre_restore");
            if (rc == 0)
                rc = restore_one(g->h->s, &in->effects[i], &in->rollback[k], &vers[i]);
            if (rc == 0)
                rc = count_at(g->h->s, &in->effects[i], vers[i], &counts[i]);
            restored[i] = rc == 0;
            from[i] = in->rollback[k].from;
            to[i] = in->rollback[k].to;
        }
    }
    if (rc == 0)
        rc = OG_FAILPOINT("recovery.pre_rollback_publish");
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
    if (rc == 0)
        rc = finalize(g, in, WRITE_RECOVERY_ROLLED_BACK, in->rollback_commit_id, from, to);
    core_free(restored);
    core_free(vers);
    core_free(counts);
    core_free(from);
    core_free(to);
    return rc;
}

/* ---- one sidecar --------------------------------------------------------------------------- */

static int resolve(write_graph *g, write_intent *in)
{
    graph_snapshot *snap = NULL;
    int rc = graph_snapshot_load(&snap, g->h->s, in->branch, 0, GRAPH_SNAP_LINEAGE);
    if (rc != 0)
        return rc;
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
    /* Fixed outcomes first: the intent's own commit or its rollback commit is visible. */
    if (commit_visible(snap, in->commit_id)) {
        for (size_t i = 0; i < n; i++) {
            const graph_table *t = graph_snapshot_table(snap, in->effects[i].alias);
            to[i] = t ? t->version : to[i];
        }
        rc = finalize(g, in, WRITE_RECOVERY_ROLLED_FORWARD, in->commit_id, from, to);
        goto out;
    }
    if (commit_visible(snap, in->rollback_commit_id)) {
        for (size_t k = 0; k < in->n_rollback; k++)
            for (size_t i = 0; i < n; i++)
                if (strcmp(in->rollback[k].alias, in->effects[i].alias) == 0) {
                    from[i] = in->rollback[k].from;
                    to[i] = in->rollback[k].to;
                }
        rc = finalize(g, in, WRITE_RECOVERY_ROLLED_BACK, in->rollback_commit_id, from, to);
        goto out;
    }
    if (in->n_rollback) {
        /* A rollback was under way: finish it. */
        rc = roll_back(g, in, cl, snap);
        goto out;
    }
    size_t own = 0, none = 0;
    for (size_t i = 0; i < n; i++) {
        const graph_table *t = graph_snapshot_table(snap, in->effects[i].alias);
        uint64_t pin = t ? t->version : 0;
        if ((rc = classify_effect(g->h->s, &in->effects[i], pin, &cl[i])) != 0)
            goto out;
        if (cl[i].state == EFFECT_OWN_AT_HEAD)
            own++;
        else if (cl[i].state == EFFECT_NO_MOVEMENT)
            none++;
        else {
            char why[400];
            snprintf(why, sizeof why,
                     "table %s is at version %" PRIu64 " (published %" PRIu64
                     ", the intent expected %" PRIu64 ") by a transaction that is not the "
                     "intent's own",
                     in->effects[i].alias, cl[i].head, pin, in->effects[i].expected_version);
            rc = needs_operator(in, why);
            goto out;
        }
    }
    if (own == 0) {
        rc = finalize(g, in, WRITE_RECOVERY_DISCARDED, "", from, to);
        goto out;
    }
    bool head_same = strcmp(snap->head, in->rs.graph_head) == 0 &&
                     strcmp(snap->branch_identity, in->rs.branch_identity) == 0;
    if (own == n && head_same) {
        /* Every effect happened, exactly as planned: complete the write with its own lineage. */
        uint64_t *counts = core_calloc(n, sizeof *counts);
        if (!counts) {
            rc = core_err_nomem();
            goto out;
        }
        for (size_t i = 0; rc == 0 && i < n; i++) {
            to[i] = cl[i].head;
            rc = count_at(g->h->s, &in->effects[i], cl[i].head, &counts[i]);
        }
        forward_ctx f = {in, to, counts};
        memcpy(in->content_parent, snap->content_head, sizeof in->content_parent);
        uint64_t mver = 0;
        if (rc == 0)
            rc = OG_FAILPOINT("recovery.pre_forward_publish");
        if (rc == 0)
            rc = write_publish(g, in->branch, &in->rs, NULL, forward_rows, &f, &mver, NULL);
        core_free(counts);
        if (rc == OG_E_READ_SET_CONFLICT) {
            rc = needs_operator(in, "the branch moved past the intent's base while its effects "
                                    "were pending");
            goto out;
        }
        if (rc == 0)
            rc = finalize(g, in, WRITE_RECOVERY_ROLLED_FORWARD, in->commit_id, from, to);
        goto out;
    }
    if (!head_same) {
        rc = needs_operator(in, "the branch head moved since the intent was armed");
        goto out;
    }
    rc = roll_back(g, in, cl, snap);
out:
    core_free(from);
    core_free(to);
    core_free(cl);
    graph_snapshot_free(snap);
    return rc;
}

int write_recover_one(write_graph *g, const char *operation_id, bool *resolved)
{
    *resolved = false;
    char key[STORE_KEY_MAX], lock_name[STORE_KEY_MAX];
    write_sidecar_key(key, operation_id);
    core_buf body = CORE_BUF_INIT;
    int rc = store_get(g->h->s, key, 0, UINT64_MAX, &body);
    if (rc == OG_E_NOT_FOUND) /* listed, then finished by its owner: absence, not an error */
        return 0;
    if (rc != 0)
        return rc;
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
            return 0;
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
            return rc;
        }
        core_buf_free(&body);
        return rc;
    }
    core_buf_free(&body);
    write_gate_set *gates = NULL;
    store_lock *owner = NULL;
    if ((rc = write_intent_gates(g, &in, &gates)) != 0)
        goto out;
    write_intent_owner_lock(&in, lock_name);
    rc = store_lock_acquire(g->h->s, lock_name, 0, &owner);
    if (rc == OG_E_CONFLICT) {
        /* Held: by its owner still running, or by the writer that finished it and keeps the
         * lock for its next write. Only a sidecar that is still there is in progress. */
        store_meta meta;
        int h = store_head(g->h->s, key, &meta);
        if (h == OG_E_NOT_FOUND) {
            og_error_clear();
            rc = 0;
            goto out;
        }
    }
    if (rc == OG_E_CONFLICT) {
        rc = core_err(OG_E_RECOVERY_REQUIRED,
                      "write %s is still in progress in another process; retry when it ends",
                      operation_id);
        core_err_detail(CORE_ERR_OPERATION_ID, operation_id);
        goto out;
    }
    if (rc != 0)
        goto out;
    /* Re-read under the lock: the owner may have finished between our read and the lock. */
    rc = store_get(g->h->s, key, 0, UINT64_MAX, &body);
    if (rc == OG_E_NOT_FOUND) {
        rc = 0;
        goto out;
    }
    write_intent_clear(&in);
    if (rc == 0)
        rc = write_intent_from_json(&in, (const char *)body.data, body.len, key);
    core_buf_free(&body);
    if (rc == 0)
        rc = resolve(g, &in);
    if (rc == 0)
        *resolved = true;
out:
    core_buf_free(&body);
    store_lock_release_remove(owner);
    write_gate_set_release(gates);
    write_intent_clear(&in);
    return rc;
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
    default:
        return "unknown";
    }
}
