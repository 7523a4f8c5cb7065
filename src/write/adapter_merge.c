/* The branch-merge adapter (RFC-022 §6.2): merge a source branch into the target branch the
 * write runs on, as one graph commit with the source head as its merged parent.
 *
 * Prepare (no gates, against the coordinator's fresh base of the target): capture the source
 * head, find the merge base in the commit DAG (graph_merge_base over the lineages of both
 * branches, and of any other branch a merged parent leads to), classify every type whose table
 * moved on the source since the base (graph_merge_table: a delta onto the target, or row
 * conflicts), then validate the merged result with the validator loads and mutations use,
 * collecting every violation. Any conflict: nothing is armed or written and the caller gets
 * them all. Otherwise the deltas become the effects of a load (write_changes_prepare_set:
 * one staged transaction per table, first-touch forks on a branch target), published by the
 * changes adapter's rows with the merged parent in the lineage.
 *
 * The read set is the target's (the coordinator arbitrates its head, so a target that moved
 * after prepare restarts the merge from a fresh classification, never a patched one) plus
 * every target table the classification or validation read; the source's identity and head
 * are rechecked under the gates (write_merge_recheck). */
#include "write/internal.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/hmap.h"
#include "graph/merge.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The adapter's entry points (registered in coordinator.c). */
int write_merge_prepare(write_graph *g, const void *input, const graph_snapshot *snap,
                        write_intent *in);
int write_merge_recheck(write_graph *g, const void *input, const write_intent *in);

typedef struct merge_input {
    const char *source; /* NULL: main */
    write_merge_result *res;
    /* what the last prepare merged (rechecked under the gates) */
    char src_identity[LANCE_BRANCH_IDENTITY_CAP];
    char src_head[GRAPH_ID_LEN + 1];
} merge_input;

static const char *name_of(const char *branch)
{
    return branch ? branch : "main";
}

/* ---- Commit lookup over the lineages of branches --------------------------------------------
 * The lineages of the source and target first; a commit neither has (the merged parent of an
 * earlier merge, made on a third branch) is looked for on every other branch once. */

typedef struct commit_index {
    store *s;
    core_bmap ix; /* id -> (lineage << 32 | commit) */
    graph_snapshot **lin;
    size_t nl;
    bool others_loaded;
    const char *skip[2]; /* branches loaded first (NULL: main) */
} commit_index;

static int index_add(commit_index *ci, graph_snapshot *snap)
{
    graph_snapshot **l = core_realloc(ci->lin, (ci->nl + 1) * sizeof *l);
    if (!l) {
        graph_snapshot_free(snap);
        return core_err_nomem();
    }
    ci->lin = l;
    size_t li = ci->nl++;
    l[li] = snap;
    for (size_t i = 0; i < snap->n_commits; i++) {
        core_bmap_entry *e;
        int fresh;
        const char *id = snap->commits[i].id;
        int rc = core_bmap_put(&ci->ix, id, strlen(id), &e, &fresh);
        if (rc) return rc;
        if (fresh) e->val = (int64_t)((uint64_t)li << 32 | (uint64_t)i);
    }
    return 0;
}

static int index_load(commit_index *ci, const char *branch, uint64_t version)
{
    graph_snapshot *snap = NULL;
    int rc = graph_snapshot_load(&snap, ci->s, branch, version, GRAPH_SNAP_LINEAGE);
    return rc ? rc : index_add(ci, snap);
}

static const graph_commit *index_find(const commit_index *ci, const char *id)
{
    core_bmap_entry *e = core_bmap_find(&ci->ix, id, strlen(id));
    if (!e) return NULL;
    uint64_t v = (uint64_t)e->val;
    return &ci->lin[v >> 32]->commits[v & 0xffffffffu];
}

static bool same_name(const char *a, const char *b)
{
    return strcmp(name_of(a), name_of(b)) == 0;
}

/* Load the lineage of every branch not loaded yet (main included). A branch deleted meanwhile
 * is skipped: its commits are gone with it. */
static int index_load_others(commit_index *ci)
{
    ci->others_loaded = true;
    int rc = 0;
    if (!same_name(ci->skip[0], NULL) && !same_name(ci->skip[1], NULL))
        rc = index_load(ci, NULL, 0);
    lance_branch *all = NULL;
    size_t n = 0;
    if (rc == 0) rc = lance_branch_list(ci->s, GRAPH_MANIFEST_DIR, &all, &n);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (same_name(ci->skip[0], all[i].name) || same_name(ci->skip[1], all[i].name)) continue;
        rc = index_load(ci, all[i].name, 0);
        if (rc == OG_E_NOT_FOUND) {
            og_error_clear();
            rc = 0;
        }
    }
    lance_branch_list_free(all);
    return rc;
}

static int index_lookup(void *arg, const char *id, const graph_commit **out)
{
    commit_index *ci = arg;
    *out = index_find(ci, id);
    if (*out || ci->others_loaded) return 0;
    int rc = index_load_others(ci);
    if (rc == 0) *out = index_find(ci, id);
    return rc;
}

static void index_free(commit_index *ci)
{
    for (size_t i = 0; i < ci->nl; i++)
        graph_snapshot_free(ci->lin[i]);
    core_free(ci->lin);
    core_bmap_free(&ci->ix);
}

/* Whether every commit on the first-parent path from `head` down to `base` (excluded) is a
 * maintenance commit that merged nothing. A path that leaves the known commits is not. */
static bool only_maintenance(const commit_index *ci, const char *head, const char *base)
{
    for (const char *id = head; strcmp(id, base) != 0;) {
        const graph_commit *c = index_find(ci, id);
        if (!c || !c->maintenance || c->merged_parent[0] || !c->parent[0]) return false;
        id = c->parent;
    }
    return true;
}

/* ---- The base state ------------------------------------------------------------------------ */

/* The graph state at base commit bc: the manifest of the branch it was made on at the version
 * it produced; failing that (cleanup removed that version of main, or the branch is gone), the
 * same version of the source or the target when it is that commit (a branch's versions up to
 * its fork point are its parent's). */
static int load_base(store *s, const graph_commit *bc, const char *src, const char *tgt,
                     graph_snapshot **out)
{
    const char *tries[3] = {bc->branch, src, tgt};
    for (int i = 0; i < 3; i++) {
        if (i > 0 && same_name(tries[i], bc->branch)) continue;
        graph_snapshot *snap = NULL;
        int rc = graph_snapshot_load(&snap, s, tries[i], bc->manifest_version, 0);
        if (rc == 0 && strcmp(snap->head, bc->id) == 0) {
            *out = snap;
            return 0;
        }
        graph_snapshot_free(snap);
        if (rc != 0 && rc != OG_E_NOT_FOUND) return rc;
        og_error_clear();
    }
    int rc = core_err(OG_E_NOT_FOUND,
                      "the merge base %s (manifest version %" PRIu64 " of branch '%s') can no "
                      "longer be read: its branch was deleted or cleanup removed that version",
                      bc->id, bc->manifest_version, name_of(bc->branch));
    core_err_detail(CORE_ERR_OBJECT, bc->id);
    return rc;
}

/* ---- Prepare ------------------------------------------------------------------------------- */

static bool same_pin(const graph_table *a, const graph_table *b)
{
    const char *x = a->table_branch ? a->table_branch : "";
    const char *y = b->table_branch ? b->table_branch : "";
    return a->version == b->version && strcmp(x, y) == 0;
}

/* The table of a type in the three states, checked to be one incarnation in all three (a type
 * dropped and added again, or on one side only, cannot be merged row by row). 1: nothing to
 * do (it did not move on the source since the base, or both sides hold the same version). */
static int type_tables(const lang_typedef *td, const char *alias, const graph_snapshot *b,
                       const graph_snapshot *src, const graph_snapshot *tgt, const graph_table **tb,
                       const graph_table **ts, const graph_table **tt)
{
    *tb = graph_snapshot_table(b, alias);
    *ts = graph_snapshot_table(src, alias);
    *tt = graph_snapshot_table(tgt, alias);
    if (!*tb && !*ts && !*tt) return 1;
    if (!*tb || !*ts || !*tt || (*tb)->sid != (*ts)->sid || (*tb)->sid != (*tt)->sid ||
        (*tb)->inc != (*ts)->inc || (*tb)->inc != (*tt)->inc) {
        int rc = core_err(OG_E_CONFLICT,
                          "type %s is not the same table at the merge base, on the source and "
                          "on the target (it was dropped and added again, or exists on one "
                          "side only): it cannot be merged",
                          td->name);
        core_err_detail(CORE_ERR_OBJECT, alias);
        return rc;
    }
    if (same_pin(*ts, *tt) || same_pin(*tb, *ts)) return 1;
    return 0;
}

static void change_free(graph_change *c)
{
    arrow_batch_free(c->rows);
    core_free(c->lines);
    for (size_t k = 0; k < c->n_delete_ids; k++)
        core_free(c->delete_ids[k]);
    core_free(c->delete_ids);
    memset(c, 0, sizeof *c);
}

static int summarize(const graph_conflicts *c, const char *source, const char *target)
{
    char first[600] = "";
    size_t off = 0;
    for (size_t i = 0; i < c->n && i < 3; i++) {
        int w = snprintf(first + off, sizeof first - off, "%s%s: %s", i ? "; " : "",
                         graph_conflict_kind_name(c->items[i].kind), c->items[i].message);
        if (w < 0 || (size_t)w >= sizeof first - off) break;
        off += (size_t)w;
    }
    char more[32] = "";
    if (c->n > 3) snprintf(more, sizeof more, " (+%zu more)", c->n - 3);
    return core_err(OG_E_MERGE_CONFLICTS, "merging %s into %s: %zu conflict%s: %s%s",
                    name_of(source), name_of(target), c->n, c->n == 1 ? "" : "s", first, more);
}

static int classify(write_graph *g, merge_input *mi, const graph_snapshot *b,
                    const graph_snapshot *src, const graph_snapshot *tgt, write_intent *in,
                    graph_change_set *cs)
{
    const lang_catalog *cat = g->h->catalog;
    write_merge_result *res = mi->res;
    int rc = 0;
    if (cat->n_types && !(cs->changes = core_calloc(cat->n_types, sizeof *cs->changes)))
        return core_err_nomem();
    for (size_t ti = 0; rc == 0 && ti < cat->n_types; ti++) {
        const lang_typedef *td = &cat->types[ti];
        char alias[256];
        const graph_table *tb, *ts, *tt;
        if ((rc = graph_table_alias(alias, sizeof alias, td->kind, td->name)) != 0) break;
        rc = type_tables(td, alias, b, src, tgt, &tb, &ts, &tt);
        if (rc == 1) {
            rc = 0;
            continue;
        }
        if (rc != 0) break;
        /* the target's table decided the classification: a read-set member */
        if ((rc = write_rs_add_table(&in->rs, tt->alias, tt->version, false)) != 0) break;
        lance_dataset *db = NULL, *ds = NULL;
        const lance_dataset *dt = NULL;
        rc = graph_table_open(&db, g->h->s, tb, LANCE_ACCESS_READ);
        if (rc == 0) rc = graph_table_open(&ds, g->h->s, ts, LANCE_ACCESS_READ);
        if (rc == 0) rc = graph_head_table(in->base, tt, &dt);
        graph_change *ch = &cs->changes[cs->n];
        bool changed = false;
        if (rc == 0)
            rc = graph_merge_table(cat, (int)ti, db, ds, dt, ch, &changed, &res->conflicts,
                                   &res->stats);
        lance_dataset_free(db);
        lance_dataset_free(ds);
        if (rc == 0 && changed) {
            cs->n++;
            res->types_changed++;
        } else {
            change_free(ch);
        }
    }
    return rc;
}

static int merge_prepare(write_graph *g, merge_input *mi, const graph_snapshot *snap,
                         write_intent *in)
{
    write_merge_result *res = mi->res;
    store *s = g->h->s;
    graph_conflicts_clear(&res->conflicts);
    memset(&res->stats, 0, sizeof res->stats);
    res->outcome = 0;
    res->types_changed = 0;
    res->base[0] = res->source_head[0] = 0;

    /* The source head, as it is now (rechecked under the gates). */
    graph_head *sh = NULL;
    int rc = graph_handle_branch_head(g->h, mi->source, &sh);
    if (rc == OG_E_NOT_FOUND) {
        og_error_clear();
        rc = core_err(OG_E_NOT_FOUND, "no branch '%s' to merge", name_of(mi->source));
        core_err_detail(CORE_ERR_OBJECT, name_of(mi->source));
        return rc;
    }
    if (rc != 0) return rc;
    const graph_snapshot *src = graph_head_snapshot(sh);
    memcpy(mi->src_identity, src->branch_identity, sizeof mi->src_identity);
    memcpy(mi->src_head, src->head, sizeof mi->src_head);
    memcpy(res->source_head, src->head, sizeof res->source_head);
    if (strcmp(src->schema_identity, snap->schema_identity) != 0) {
        rc = core_err(OG_E_CONFLICT,
                      "branch '%s' and branch '%s' have different schemas: apply the same "
                      "schema to both before merging",
                      name_of(mi->source), name_of(in->branch));
        graph_head_release(sh);
        return rc;
    }

    /* The merge base over both lineages (and others a merged parent leads to). */
    commit_index ci = {.s = s, .skip = {mi->source, in->branch}};
    graph_merge_base_result mb;
    rc = index_load(&ci, mi->source, src->manifest_version);
    if (rc == 0) rc = index_load(&ci, in->branch, snap->manifest_version);
    if (rc == 0) rc = graph_merge_base(src->head, snap->head, index_lookup, &ci, &mb);
    /* Maintenance commits change no content: a side whose commits since the base are all
     * maintenance has not moved (automatic compaction on the target does not turn a
     * fast-forward into a three-way merge, nor on the source make a merge of nothing). */
    if (rc == 0 && mb.outcome != GRAPH_MERGE_UP_TO_DATE &&
        only_maintenance(&ci, src->head, mb.base))
        mb.outcome = GRAPH_MERGE_UP_TO_DATE;
    else if (rc == 0 && mb.outcome == GRAPH_MERGE_MERGED &&
             only_maintenance(&ci, snap->head, mb.base))
        mb.outcome = GRAPH_MERGE_FAST_FORWARD;
    graph_snapshot *base = NULL;
    if (rc == 0) {
        res->outcome = mb.outcome;
        memcpy(res->base, mb.base, sizeof res->base);
    }
    if (rc == 0 && mb.outcome != GRAPH_MERGE_UP_TO_DATE) {
        const graph_commit *bc = index_find(&ci, mb.base);
        if (!bc) {
            rc = core_err(OG_E_NOT_FOUND,
                          "the merge base %s can no longer be read: the branch it was made on "
                          "was deleted",
                          mb.base);
            core_err_detail(CORE_ERR_OBJECT, mb.base);
        } else if (mb.outcome == GRAPH_MERGE_FAST_FORWARD) {
            rc = graph_snapshot_copy(&base, snap); /* the base is the target head itself */
        } else {
            rc = load_base(s, bc, mi->source, in->branch, &base);
        }
    }
    index_free(&ci);
    if (rc != 0 || mb.outcome == GRAPH_MERGE_UP_TO_DATE) {
        graph_head_release(sh);
        return rc; /* up to date: no effect, no commit */
    }

    WRITE_TEST_HOOK(g, test_in_prepare, test_in_prepare_arg);
    graph_change_set *cs = core_calloc(1, sizeof *cs);
    rc = cs ? classify(g, mi, base, src, snap, in, cs) : core_err_nomem();
    graph_snapshot_free(base);
    graph_head_release(sh);
    /* The merged result, validated whole: every violation is a conflict too. */
    graph_probes probes;
    memset(&probes, 0, sizeof probes);
    if (rc == 0 && cs->n) {
        graph_validate_stats vs;
        rc = graph_validate_all(g->h->catalog, snap, s, cs, &probes, &vs, graph_head_table,
                                in->base, &res->conflicts);
        for (size_t i = 0; rc == 0 && i < probes.n; i++) {
            const graph_table *t = graph_snapshot_table(snap, probes.aliases[i]);
            if (t) rc = write_rs_add_table(&in->rs, t->alias, t->version, false);
        }
        graph_probes_clear(&probes);
    }
    if (rc == 0 && res->conflicts.n) rc = summarize(&res->conflicts, mi->source, in->branch);
    if (rc == 0) rc = write_changes_prepare_set(g, cs, snap, in, false);
    if (rc != 0) {
        if (cs) graph_change_set_clear(cs);
        core_free(cs);
        return rc;
    }
    in->owned_changes = cs; /* first-touch effects stage from it in apply */
    memcpy(in->merged_parent_commit_id, src->head, sizeof in->merged_parent_commit_id);
    in->publish_always = true; /* the merge is recorded even when no table changes */
    return 0;
}

/* A prepare that failed after it captured the source head, while it read the source's history,
 * the merge base or the source's tables: when the source was deleted meanwhile (its table
 * forks are reclaimed after its ref goes, so a read of them fails with some file not found),
 * or deleted and created again, that is the cause, and the merge fails typed naming the
 * source, as the recheck under the gates does. Otherwise the failure stands as it was. */
static int source_failure(write_graph *g, const merge_input *mi, int rc)
{
    if (rc == 0 || rc == OG_E_MERGE_CONFLICTS || rc == OG_E_NOMEM || !mi->source ||
        !mi->src_head[0])
        return rc;
    core_err_saved *saved = core_malloc(sizeof *saved);
    if (!saved) return rc;
    core_err_save(saved);
    graph_head *sh = NULL;
    int hr = graph_handle_branch_head(g->h, mi->source, &sh);
    bool gone = hr == OG_E_NOT_FOUND;
    bool again = hr == 0 && strcmp(graph_head_snapshot(sh)->branch_identity, mi->src_identity) != 0;
    graph_head_release(sh);
    if (!gone && !again) {
        rc = core_err_restore(saved);
        core_free(saved);
        return rc;
    }
    og_error_clear();
    rc = core_err(OG_E_NOT_FOUND, "branch '%s' was deleted%s while it was being merged (%s)",
                  mi->source, again ? " and created again" : "", saved->message);
    core_err_detail(CORE_ERR_OBJECT, mi->source);
    core_free(saved);
    return rc;
}

int write_merge_prepare(write_graph *g, const void *input, const graph_snapshot *snap,
                        write_intent *in)
{
    merge_input *mi = (merge_input *)input; /* ours: write_merge made it */
    mi->src_head[0] = '\0';
    return source_failure(g, mi, merge_prepare(g, mi, snap, in));
}

/* The source is still the incarnation and head the merge classified (its identity and head
 * are read-set members the target's snapshot cannot show): 1 to classify again if it moved. */
int write_merge_recheck(write_graph *g, const void *input, const write_intent *in)
{
    (void)in;
    const merge_input *mi = input;
    graph_head *sh = NULL;
    int rc = graph_handle_branch_head(g->h, mi->source, &sh);
    if (rc == OG_E_NOT_FOUND) {
        og_error_clear();
        rc = core_err(OG_E_NOT_FOUND, "branch '%s' was deleted while it was being merged",
                      name_of(mi->source));
        core_err_detail(CORE_ERR_OBJECT, name_of(mi->source));
        return rc;
    }
    if (rc != 0) return rc;
    const graph_snapshot *src = graph_head_snapshot(sh);
    bool same =
        strcmp(src->branch_identity, mi->src_identity) == 0 && strcmp(src->head, mi->src_head) == 0;
    graph_head_release(sh);
    return same ? 0 : 1;
}

void write_merge_result_clear(write_merge_result *r)
{
    graph_conflicts_clear(&r->conflicts);
    memset(r, 0, sizeof *r);
}

int write_merge(write_graph *g, const char *source, const write_options *opt,
                write_merge_result *res)
{
    memset(res, 0, sizeof *res);
    write_options def = WRITE_OPTIONS_INIT;
    if (!opt) opt = &def;
    if (g->h->readonly) return core_err(OG_E_BAD_REQUEST, "the graph is open read-only");
    if (source && strcmp(source, "main") == 0) source = NULL;
    const char *target = opt->branch && strcmp(opt->branch, "main") != 0 ? opt->branch : NULL;
    if (same_name(source, target))
        return core_err(OG_E_BAD_REQUEST, "cannot merge branch '%s' into itself", name_of(source));
    merge_input mi = {.source = source, .res = res};
    return write_run_kind(g, WRITE_KIND_MERGE, &mi, opt, &res->wr);
}
