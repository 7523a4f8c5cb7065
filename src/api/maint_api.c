/* The public maintenance API (include/omnigraph.h, "Maintenance"): explicit optimize (the
 * optimize adapter, then the manifest's compaction under the §8 maintenance protocol) and
 * cleanup (src/write/cleanup.c). docs/maintenance.md says when to use them. */
#include "omnigraph.h"

#include "api/graph_internal.h"
#include "api/options.h"
#include "core/alloc.h"
#include "core/error.h"

#include <stdio.h>
#include <string.h>

/* Fragments over every data table of the branch's head (NULL: main), and of its graph
 * manifest. */
static int count_fragments(og_graph *g, const char *branch, uint64_t *tables, uint64_t *manifest)
{
    *tables = *manifest = 0;
    graph_snapshot *snap = NULL;
    int rc = graph_snapshot_load(&snap, g->h->s, branch, 0, 0);
    for (size_t i = 0; rc == 0 && i < snap->n_tables; i++) {
        lance_dataset *ds = NULL;
        rc = graph_table_open(&ds, g->h->s, &snap->tables[i], LANCE_ACCESS_READ);
        if (rc == 0) *tables += lance_dataset_fragment_count(ds);
        lance_dataset_free(ds);
    }
    lance_dataset *m = NULL;
    if (rc == 0) rc = graph_manifest_open(&m, g->h->s, branch, 0, LANCE_ACCESS_READ);
    if (rc == 0) *manifest = lance_dataset_fragment_count(m);
    lance_dataset_free(m);
    graph_snapshot_free(snap);
    return rc;
}

/* Optimize into *out (zeroed by the caller). */
static int optimize(og_optimize_result *out, og_graph *g, const og_optimize_options *opt)
{
    og_optimize_options def = OG_OPTIMIZE_OPTIONS_INIT;
    if (!opt) opt = &def;
    if (!g) return core_err(OG_E_BAD_REQUEST, "og_graph_optimize: missing argument");
    int vrc = api_options_check(opt->version, OG_OPTIMIZE_OPTIONS_VERSION, "og_optimize_options");
    if (vrc) return vrc;
    if (!g->w) return core_err(OG_E_BAD_REQUEST, "the graph is open read-only");
    const char *branch = opt->branch;
    int rc = api_branch_arg(g, &branch);
    if (rc == 0)
        rc = count_fragments(g, branch, &out->fragments_before, &out->manifest_fragments_before);
    write_optimize_options oo = WRITE_OPTIMIZE_OPTIONS_INIT;
    oo.branch = branch;
    write_result wr;
    memset(&wr, 0, sizeof wr);
    if (rc == 0) rc = write_optimize(g->w, &oo, &wr);
    bool compacted = false;
    if (rc == 0) rc = write_compact_manifest(g->w, branch, false, &compacted);
    if (rc == 0)
        rc = count_fragments(g, branch, &out->fragments_after, &out->manifest_fragments_after);
    if (rc != 0) return rc;
    if (wr.committed) {
        snprintf(out->commit_id, sizeof out->commit_id, "%s", wr.commit_id);
        out->tables_compacted = wr.n_tables;
    }
    lance_dataset *m = NULL;
    rc = graph_manifest_open(&m, g->h->s, branch, 0, LANCE_ACCESS_READ);
    if (rc == 0) out->manifest_version = lance_dataset_version(m);
    lance_dataset_free(m);
    return rc;
}

int og_graph_optimize(og_optimize_result **out, og_graph *g, const og_optimize_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_graph_optimize: out is NULL");
    *out = NULL;
    og_optimize_result *r = core_calloc(1, sizeof *r);
    if (!r) return core_err_nomem();
    int rc = optimize(r, g, opt);
    if (rc) {
        core_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

void og_optimize_result_free(og_optimize_result *r)
{
    core_free(r);
}

typedef struct progress_relay {
    og_cleanup_progress_fn fn;
    void *arg;
} progress_relay;

static void relay(void *arg, const char *root, size_t done, size_t total)
{
    const progress_relay *p = arg;
    p->fn(p->arg, root, done, total);
}

int og_graph_cleanup(og_cleanup_result **out, og_graph *g, const og_cleanup_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_graph_cleanup: out is NULL");
    *out = NULL;
    if (!g || !opt) return core_err(OG_E_BAD_REQUEST, "og_graph_cleanup: missing argument");
    int vrc = api_options_check(opt->version, OG_CLEANUP_OPTIONS_VERSION, "og_cleanup_options");
    if (vrc) return vrc;
    write_cleanup_options co = WRITE_CLEANUP_OPTIONS_INIT;
    co.keep = opt->keep;
    co.older_than_us = opt->older_than_us;
    co.dry_run = opt->dry_run != 0;
    if (opt->orphan_grace_ms) co.orphan_grace_ms = opt->orphan_grace_ms;
    progress_relay pr = {opt->progress, opt->progress_arg};
    if (opt->progress) {
        co.progress = relay;
        co.progress_arg = &pr;
    }
    /* What write_cleanup says of a read-only graph, which has no writer to ask. */
    if (!g->w) return core_err(OG_E_BAD_REQUEST, "the graph is open read-only");
    og_cleanup_result *res = core_calloc(1, sizeof *res);
    if (!res) return core_err_nomem();
    write_cleanup_report r;
    int rc = write_cleanup(g->w, &co, &r);
    if (rc != 0) {
        core_free(res);
        return rc;
    }
    res->commits_total = r.commits_total;
    res->commits_retained = r.commits_retained;
    snprintf(res->oldest_retained, sizeof res->oldest_retained, "%s", r.oldest_retained);
    res->versions_removed = r.versions_removed;
    res->files_removed = r.files_removed;
    res->bytes_removed = r.bytes_removed;
    res->files_spared_recent = r.files_spared_recent;
    res->datasets = r.tables;
    res->tables_removed = r.tables_removed;
    *out = res;
    return 0;
}

void og_cleanup_result_free(og_cleanup_result *r)
{
    core_free(r);
}
