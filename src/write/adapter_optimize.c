/* The optimize adapter (RFC-022 §6.4) and automatic maintenance. Compacting a data table
 * advances the version graph reads select through the manifest, so it is a graph-visible write:
 * one Lance Rewrite commit per selected table, at exactly its pin + 1 with a pre-minted uuid
 * (recovery proves it by identity like any other effect), then one manifest commit with an
 * actorless lineage commit. Compacting the graph manifest itself is physical-only maintenance
 * (§8): content-equal, no lineage, racing publishers simply re-arbitrate.
 *
 * Both run automatically after a write when a table it touched (or the manifest) has a size
 * tier due (WRITE_TIER_FACTOR adjacent fragments of one tier), which keeps the cost of a write
 * flat in history depth without manual maintenance, and rewrites each row O(log rows) times. */
#include "write/internal.h"

#include "lance/keyindex.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/failpoint.h"
#include "core/log.h"
#include "lance/compact.h"
#include "lance/paths.h"
#include "lance/rowids.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int write_optimize_prepare(write_graph *g, const void *input, const graph_snapshot *snap,
                           write_intent *in);
int write_optimize_apply(write_graph *g, write_intent *in);
int write_optimize_rows(void *arg, const graph_snapshot *cur, uint64_t mver, graph_rows *rows);

void write_tiered_compact_options(lance_compact_options *co)
{
    lance_compact_options def = LANCE_COMPACT_OPTIONS_INIT;
    *co = def;
    co->tier_factor = WRITE_TIER_FACTOR;
    co->version_runs_max = LANCE_VERSION_RUNS_MAX;
    /* Deleted rows go when their fragment's tier is merged; rewriting a fragment only to drop
     * them would make every update or delete due for maintenance of its own. */
    co->materialize_deletions = false;
}

bool write_compact_due(const lance_dataset *ds)
{
    lance_compact_options co;
    write_tiered_compact_options(&co);
    bool due = false;
    if (lance_compact_due(ds, &co, &due) != 0) {
        og_error_clear();
        return false;
    }
    return due;
}

/* The compaction options of an optimize effect: one exact commit with the effect's
 * identity, tiered for automatic maintenance. kix: the type's key index declaration. */
static void compact_options(const write_effect *e, const char *kix, lance_compact_options *co)
{
    lance_compact_options def = LANCE_COMPACT_OPTIONS_INIT;
    *co = def;
    if (e->tiered)
        write_tiered_compact_options(co);
    else /* an explicit optimize also builds the key indexes a table lacks */
        co->key_indexes = kix;
    co->version_runs_max = LANCE_VERSION_RUNS_MAX;
    co->uuid = e->uuid;
    co->max_groups_per_commit = 0; /* one commit: one exact effect */
}

int write_optimize_prepare(write_graph *g, const void *input, const graph_snapshot *snap,
                           write_intent *in)
{
    const write_optimize_options *opt = input;
    size_t min = opt->min_fragments ? opt->min_fragments : 2;
    if (snap->n_tables && !(in->effects = core_calloc(snap->n_tables, sizeof *in->effects)))
        return core_err_nomem();
    for (size_t i = 0; i < snap->n_tables; i++) {
        const graph_table *t = &snap->tables[i];
        bool wanted = opt->n_tables == 0;
        for (size_t k = 0; k < opt->n_tables && !wanted; k++)
            wanted = strcmp(opt->tables[k], t->alias) == 0;
        /* on a branch, only its own forks (see write_optimize_options.branch) */
        if (in->branch && (!t->table_branch || strcmp(t->table_branch, in->branch) != 0))
            wanted = false;
        if (!wanted) continue;
        /* the declaration the type's schema asks for (NULL: a table of no catalog type) */
        char kix[GRAPH_KIX_DECL_MAX];
        int ti = t->type_name ? lang_catalog_find(g->h->catalog, t->type_name, t->kind) : -1;
        const char *decl =
            ti >= 0 && graph_type_key_indexes(kix, sizeof kix, &g->h->catalog->types[ti]) == 0
                ? kix
                : NULL;
        lance_dataset *ds = NULL;
        int rc = graph_table_open(&ds, g->h->s, t, LANCE_ACCESS_WRITE);
        if (rc != 0) return rc;
        bool due = opt->auto_maintenance ? write_compact_due(ds)
                                         : lance_dataset_fragment_count(ds) >= min ||
                                               (decl && lance_kix_missing(ds, decl));
        if (!due) {
            lance_dataset_free(ds);
            continue;
        }
        write_effect *e = &in->effects[in->n_effects];
        e->tiered = opt->auto_maintenance;
        e->kind = t->kind;
        e->sid = t->sid;
        e->inc = t->inc;
        e->expected_version = t->version;
        char u[LANCE_UUID_LEN + 1];
        if ((rc = lance_uuid_new(u)) == 0) snprintf(e->uuid, sizeof e->uuid, "%s", u);
        in->n_effects++;
        /* The merge is read and written here, before the gates: writers of the table wait
         * only for its commit (apply). A table that moves meanwhile restarts this write, whose
         * next attempt runs under the gates it kept. */
        lance_compact_options co;
        compact_options(e, decl, &co);
        if (rc == 0) rc = lance_compact_stage(&e->compaction, ds, &co);
        lance_dataset_free(ds);
        if (rc != 0) return rc;
        if (!(e->alias = core_strdup(t->alias)) || !(e->path = core_strdup(t->path)) ||
            (t->table_branch && !(e->table_branch = core_strdup(t->table_branch))))
            return core_err_nomem();
        if ((rc = write_rs_add_table(&in->rs, t->alias, t->version, true)) != 0) return rc;
    }
    return 0;
}

int write_optimize_apply(write_graph *g, write_intent *in)
{
    (void)g;
    for (size_t i = 0; i < in->n_effects; i++) {
        write_effect *e = &in->effects[i];
        lance_dataset *after = NULL;
        lance_compact_report rep;
        memset(&rep, 0, sizeof rep);
        /* staged in prepare on exactly expected_version (the pin the gates confirmed) */
        int rc = e->compaction
                     ? write_intent_carry_sidecar(in, NULL, e->compaction)
                     : core_err(OG_E_INTERNAL, "optimize of %s has no staged merge", e->alias);
        if (rc == 0) rc = lance_compact_plan_commit(e->compaction, &after, &rep);
        if (rc == 0 && rep.n_commits)
            in->sidecar_unsynced = false; /* durable with the merged files */
        if (rc == 0 && rep.n_commits > 1)
            rc = core_err(OG_E_INTERNAL, "compaction of %s made %zu commits, planned one", e->alias,
                          rep.n_commits);
        if (rc == 0 && rep.n_commits == 1 && rep.versions[0] != e->expected_version + 1)
            rc = core_err(OG_E_INTERNAL, "compaction of %s committed version %" PRIu64, e->alias,
                          rep.versions[0]);
        if (rc == 0) {
            e->achieved_version = rep.n_commits ? rep.versions[0] : e->expected_version;
            rc = lance_dataset_count_rows(after, &e->row_count);
        }
        lance_dataset_free(e->after);
        e->after = rep.n_commits ? after : NULL;
        if (!rep.n_commits) lance_dataset_free(after);
        if (rc != 0) return rc;
        if ((rc = OG_FAILPOINT("write.post_table_effect")) != 0) return rc;
    }
    return 0;
}

int write_optimize_rows(void *arg, const graph_snapshot *cur, uint64_t mver, graph_rows *rows)
{
    (void)cur;
    const write_intent *in = arg;
    /* an actorless lineage commit: maintenance, not a user's change */
    int rc = write_rows_versions(rows, in, NULL, NULL, NULL, true);
    if (rc == 0)
        rc = write_rows_lineage(rows, in, in->commit_id, in->parent_commit_id, NULL,
                                in->created_at_us, mver, true);
    return rc;
}

/* Physical-only maintenance of the graph manifest: one Rewrite of its small fragments. A lost
 * race with a publisher is fine (it will be compacted next time). */
int write_compact_manifest(write_graph *g, const char *branch, bool automatic, bool *compacted)
{
    *compacted = false;
    /* The maintenance protocol (RFC-022 §8): the recovery barrier first, then the branch gate,
     * so no publisher of this handle's process (or, through the store lock, of another on
     * this host) is mid-commit while the manifest's fragments are rewritten. Measured: with
     * the gate held around the commit alone, publishers and the merge kept taking versions
     * from each other, and writes cost twice the CPU. A publisher of another host can still
     * take the version: the commit then rebases over its append (which leaves the merged
     * fragments alone), and gives up if a merge or cleanup changed them. */
    size_t resolved = 0;
    int rc = write_recover(g, branch ? branch : "main", &resolved);
    if (rc != 0) return rc;
    write_gate_key key = {WRITE_GATE_BRANCH, branch ? branch : "main", NULL, false};
    write_gate_set *gate = NULL;
    if ((rc = write_gates_take(g, &key, 1, &gate)) != 0) return rc;
    lance_dataset *m = NULL, *after = NULL;
    bool only_ours = false; /* every version from m's to after's is one of this compaction's */
    rc = graph_manifest_open(&m, g->h->s, branch, 0, LANCE_ACCESS_WRITE);
    if (rc != 0) {
        write_gate_set_release(gate);
        return rc;
    }
    /* Explicitly: whenever there is more than the two fragments a merge leaves (the commit
     * rows, and the rest). */
    if (automatic ? write_compact_due(m) : lance_dataset_fragment_count(m) >= 3) {
        lance_compact_report rep;
        memset(&rep, 0, sizeof rep);
        lance_compact_options co = LANCE_COMPACT_OPTIONS_INIT;
        if (automatic) write_tiered_compact_options(&co);
        co.rebase_attempts = branch ? 0 : 4;
        /* Superseded rows go and commit rows gather apart (graph.h, "Manifest compaction"):
         * a snapshot then reads about one row per table and branch, not one per commit. */
        graph_compact_rules *rules = NULL;
        rc = graph_compact_rules_new(&rules, m);
        co.classify = graph_compact_classify;
        co.classify_arg = rules;
        co.apart_key = GRAPH_COMMIT_FRAGMENTS_KEY;
        if (rc == 0) rc = lance_compact(&after, m, &co, &rep);
        graph_compact_rules_free(rules);
        if (rc == OG_E_CONFLICT) rc = 0;
        *compacted = rc == 0 && rep.n_commits > 0;
        only_ours = *compacted && after &&
                    lance_dataset_version(after) == lance_dataset_version(m) + rep.n_commits;
        for (size_t i = 0; only_ours && i < rep.n_commits; i++)
            only_ours = rep.versions[i] == lance_dataset_version(m) + 1 + i;
    }
    /* The graph state did not change, only how the manifest stores it: the handle's head
     * moves to the new version as it is, so the next write or branch create on main does not
     * read the manifest again. Not when the commit was rebased over another writer's. */
    if (only_ours && !branch) {
        graph_handle_install_unchanged(g->h, lance_dataset_version(m), after);
        after = NULL;
    }
    lance_dataset_free(after);
    lance_dataset_free(m);
    write_gate_set_release(gate);
    return rc;
}
