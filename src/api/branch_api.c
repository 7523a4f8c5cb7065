/* The graph-branch calls of the public API (include/omnigraph.h, "Graph branches"): create,
 * list and delete, a thin layer over the branch control protocol (src/write/branch.c). */
#include "omnigraph.h"

#include "api/graph_internal.h"
#include "api/options.h"
#include "core/alloc.h"
#include "core/error.h"

#include <stdio.h>
#include <string.h>

struct og_branch_list {
    og_branch_info *items;
    size_t n;
};

/* An og_branch_info whose strings live in one allocation after it (freed with it). */
static og_branch_info *info_new(const char *name, const char *parent)
{
    size_t nl = strlen(name) + 1, pl = parent ? strlen(parent) + 1 : 0;
    og_branch_info *b = core_calloc(1, sizeof *b + nl + pl);
    if (!b) return NULL;
    char *p = (char *)(b + 1);
    memcpy(p, name, nl);
    b->name = p;
    if (parent) {
        memcpy(p + nl, parent, pl);
        b->parent = p + nl;
    }
    return b;
}

static void info_fill(og_branch_info *b, const write_branch_info *w)
{
    snprintf(b->forked_from, sizeof b->forked_from, "%s", w->forked_from);
    snprintf(b->head, sizeof b->head, "%s", w->head);
    b->manifest_version = w->manifest_version;
    b->fork_version = w->fork_version;
    b->created_at_us = (int64_t)w->created_at * 1000000;
}

void og_branch_info_free(og_branch_info *b)
{
    core_free(b);
}

size_t og_branch_list_count(const og_branch_list *l)
{
    return l ? l->n : 0;
}

const og_branch_info *og_branch_list_get(const og_branch_list *l, size_t i)
{
    return l && i < l->n ? &l->items[i] : NULL;
}

void og_branch_list_free(og_branch_list *l)
{
    if (!l) return;
    for (size_t i = 0; i < l->n; i++) {
        core_free((char *)l->items[i].name);
        core_free((char *)l->items[i].parent);
    }
    core_free(l->items);
    core_free(l);
}

int og_graph_branches(og_branch_list **out, og_graph *g)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_graph_branches: out is NULL");
    *out = NULL;
    if (!g) return core_err(OG_E_BAD_REQUEST, "og_graph_branches: no graph");
    write_branch_info *w = NULL;
    size_t n = 0;
    int rc = write_branch_list(g->h->s, &w, &n);
    if (rc) return rc;
    graph_snapshot *main_snap = NULL;
    rc = graph_handle_head_snapshot(g->h, &main_snap);
    og_branch_list *l = rc == 0 ? core_calloc(1, sizeof *l) : NULL;
    if (rc == 0 && (!l || !(l->items = core_calloc(n + 1, sizeof *l->items))))
        rc = core_err_nomem();
    if (rc == 0) {
        og_branch_info *m = &l->items[l->n++];
        if (!(m->name = core_strdup("main"))) rc = core_err_nomem();
        snprintf(m->head, sizeof m->head, "%s", main_snap->head);
        m->manifest_version = main_snap->manifest_version;
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        og_branch_info *b = &l->items[l->n++];
        b->name = core_strdup(w[i].name);
        b->parent = core_strdup(w[i].parent);
        if (!b->name || !b->parent) rc = core_err_nomem();
        info_fill(b, &w[i]);
    }
    graph_snapshot_free(main_snap);
    core_free(w);
    if (rc) {
        og_branch_list_free(l);
        return rc;
    }
    *out = l;
    return 0;
}

static int writable(og_graph *g, const char *fn)
{
    if (!g) return core_err(OG_E_BAD_REQUEST, "%s: no graph", fn);
    if (!g->w) return core_err(OG_E_BAD_REQUEST, "%s: the graph is open read-only", fn);
    return 0;
}

int og_graph_create_branch(og_branch_info **out, og_graph *g, const char *name,
                           const og_branch_options *opt)
{
    if (out) *out = NULL;
    int rc = writable(g, "og_graph_create_branch");
    if (rc) return rc;
    if (opt &&
        (rc = api_options_check(opt->version, OG_BRANCH_OPTIONS_VERSION, "og_branch_options")) != 0)
        return rc;
    write_branch_info w;
    rc = write_branch_create(g->w, name, opt ? opt->from : NULL, opt ? opt->at : NULL, &w);
    if (rc || !out) return rc;
    og_branch_info *b = info_new(w.name, w.parent);
    if (!b)
        return core_err(OG_E_NOMEM, "branch '%s' was created; out of memory describing it", w.name);
    info_fill(b, &w);
    *out = b;
    return 0;
}

int og_graph_delete_branch(og_graph *g, const char *name)
{
    int rc = writable(g, "og_graph_delete_branch");
    if (rc) return rc;
    return write_branch_delete(g->w, name, NULL, NULL);
}
