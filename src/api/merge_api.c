/* og_graph_merge (include/omnigraph.h, "Branch merge"): a thin layer over the merge adapter
 * (src/write/adapter_merge.c) that copies its outcome and conflicts into a result the caller
 * owns, and deletes the source afterwards when asked. */
#include "omnigraph.h"

#include "api/graph_internal.h"
#include "api/options.h"
#include "core/alloc.h"
#include "core/error.h"
#include "write/write.h"

#include <stdio.h>
#include <string.h>

const char *og_merge_outcome_name(int outcome)
{
    return graph_merge_outcome_name(outcome);
}

/* The result and its strings: conflicts' strings are copied one by one (freed with it). */
typedef struct merge_result_box {
    og_merge_result r;
    og_merge_conflict *items;
    size_t n;
    char *source, *target;
} merge_result_box;

void api_conflicts_free(og_merge_conflict *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        core_free((char *)items[i].kind);
        core_free((char *)items[i].type);
        core_free((char *)items[i].id);
        core_free((char *)items[i].message);
    }
    core_free(items);
}

int api_conflicts_copy(const graph_conflicts *in, og_merge_conflict **items, size_t *n)
{
    *items = NULL;
    *n = 0;
    if (!in->n) return 0;
    og_merge_conflict *v = core_calloc(in->n, sizeof *v);
    if (!v) return core_err_nomem();
    for (size_t i = 0; i < in->n; i++) {
        const graph_conflict *c = &in->items[i];
        og_merge_conflict *o = &v[i];
        o->kind = core_strdup(graph_conflict_kind_name(c->kind));
        o->type = core_strdup(c->type);
        o->id = c->id ? core_strdup(c->id) : NULL;
        o->message = core_strdup(c->message);
        if (!o->kind || !o->type || (c->id && !o->id) || !o->message) {
            api_conflicts_free(v, i + 1);
            return core_err_nomem();
        }
    }
    *items = v;
    *n = in->n;
    return 0;
}

void og_merge_result_free(og_merge_result *r)
{
    if (!r) return;
    merge_result_box *b = (merge_result_box *)r;
    api_conflicts_free(b->items, b->n);
    core_free(b->source);
    core_free(b->target);
    core_free(b);
}

size_t og_merge_result_conflict_count(const og_merge_result *r)
{
    return r ? ((const merge_result_box *)r)->n : 0;
}

const og_merge_conflict *og_merge_result_conflict(const og_merge_result *r, size_t i)
{
    return r && i < ((const merge_result_box *)r)->n ? &((const merge_result_box *)r)->items[i]
                                                     : NULL;
}

static merge_result_box *box_new(const char *source, const char *target,
                                 const write_merge_result *w)
{
    merge_result_box *b = core_calloc(1, sizeof *b);
    if (!b) return NULL;
    b->source = core_strdup(source);
    b->target = core_strdup(target);
    if (!b->source || !b->target || api_conflicts_copy(&w->conflicts, &b->items, &b->n) != 0)
        goto fail;
    og_merge_result *r = &b->r;
    r->outcome = w->outcome;
    r->source = b->source;
    r->target = b->target;
    if (w->wr.committed) snprintf(r->commit, sizeof r->commit, "%s", w->wr.commit_id);
    snprintf(r->base, sizeof r->base, "%s", w->base);
    snprintf(r->source_head, sizeof r->source_head, "%s", w->source_head);
    r->types_changed = w->types_changed;
    r->rows_changed = w->stats.rows_changed;
    r->rows_read = w->stats.rows_read;
    return b;
fail:
    og_merge_result_free(&b->r);
    return NULL;
}

int og_graph_merge(og_merge_result **out, og_graph *g, const og_merge_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_graph_merge: out is NULL");
    *out = NULL;
    if (!g) return core_err(OG_E_BAD_REQUEST, "og_graph_merge: no graph");
    if (!g->w) return core_err(OG_E_BAD_REQUEST, "og_graph_merge: the graph is open read-only");
    if (!opt)
        return core_err(OG_E_BAD_REQUEST,
                        "og_graph_merge: no options (opt->source names the branch to merge)");
    int rc = api_options_check(opt->version, OG_MERGE_OPTIONS_VERSION, "og_merge_options");
    if (rc) return rc;
    const char *source = opt->source;
    if (!source || !*source) return core_err(OG_E_BAD_REQUEST, "og_graph_merge: no source branch");
    const char *into = opt->into && *opt->into ? opt->into : "main";
    if (opt->delete_branch && strcmp(source, "main") == 0)
        return core_err(OG_E_BAD_REQUEST, "og_graph_merge: main cannot be deleted");
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = into;
    wo.if_commit = opt->if_commit;
    write_merge_result w;
    rc = write_merge(g->w, source, &wo, &w);
    if (rc == 0 || rc == OG_E_MERGE_CONFLICTS) {
        merge_result_box *b = box_new(source, into, &w);
        if (!b) {
            write_merge_result_clear(&w);
            return core_err(OG_E_NOMEM, rc == 0 ? "the merge was done; out of memory describing it"
                                                : "out of memory describing the merge's conflicts");
        }
        if (rc == 0 && opt->delete_branch) {
            /* After the merge is visible: a failed delete leaves a merged branch, said so. */
            int drc = write_branch_delete(g->w, source, NULL, NULL);
            if (drc != 0) {
                core_err(drc, "merged %s into %s, but deleting %s failed: %s", source, into, source,
                         og_error_last()->message);
                og_merge_result_free(&b->r);
                write_merge_result_clear(&w);
                return drc;
            }
            b->r.source_deleted = 1;
        }
        *out = &b->r;
    }
    write_merge_result_clear(&w);
    return rc;
}
