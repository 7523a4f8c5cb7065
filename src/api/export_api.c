/* The public export API (include/omnigraph.h, "Export and backup"): a snapshot of the graph
 * branch (the head, or the commit `at` names) written to a FILE as the load format. The formatting
 * is src/exec/export.c's; this layer resolves the snapshot and owns the result. */
#include "omnigraph.h"

#include "api/graph_internal.h"
#include "api/options.h"
#include "core/alloc.h"
#include "core/error.h"
#include "exec/export.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Writes to the caller's FILE; a short write is OG_E_STORAGE with its errno. */
static int file_sink(void *arg, const void *data, size_t len)
{
    FILE *f = arg;
    errno = 0;
    if (fwrite(data, 1, len, f) == len) return 0;
    return core_err_storage(errno ? errno : EIO, NULL, "writing the export failed");
}

int og_graph_export(og_export_result **out, FILE *f, og_graph *g, const og_export_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_graph_export: out is NULL");
    *out = NULL;
    if (!f || !g) return core_err(OG_E_BAD_REQUEST, "og_graph_export: missing argument");
    og_export_options def = OG_EXPORT_OPTIONS_INIT;
    if (!opt) opt = &def;
    int rc = api_options_check(opt->version, OG_EXPORT_OPTIONS_VERSION, "og_export_options");
    if (rc) return rc;
    if (opt->n_types && !opt->types)
        return core_err(OG_E_BAD_REQUEST, "og_export_options: n_types without types");
    graph_snapshot *snap = NULL;
    /* At main's head, the handle's cached state answers without a scan of the manifest. */
    rc = api_snapshot_at(&snap, g, opt->branch, opt->at && *opt->at ? opt->at : NULL, 0);
    if (rc) return rc;
    og_export_result *res = core_calloc(1, sizeof *res);
    if (!res) rc = core_err_nomem();
    exec_export_stats st;
    /* the properties of the schema the snapshot was written under (not hidden columns) */
    const lang_catalog *cat = NULL;
    if (!rc) rc = graph_handle_snapshot_catalog(g->h, snap, &cat);
    if (!rc) rc = exec_export_cat(g->h->s, snap, cat, opt->types, opt->n_types, file_sink, f, &st);
    if (!rc && fflush(f) != 0) rc = core_err_storage(errno, NULL, "writing the export failed");
    if (!rc) {
        snprintf(res->commit_id, sizeof res->commit_id, "%s", snap->head);
        res->manifest_version = snap->manifest_version;
        res->nodes = st.nodes;
        res->edges = st.edges;
        res->bytes = st.bytes;
        res->node_types = st.node_types;
        res->edge_types = st.edge_types;
    }
    graph_snapshot_free(snap);
    if (rc) {
        core_free(res);
        return rc;
    }
    *out = res;
    return 0;
}

void og_export_result_free(og_export_result *r)
{
    core_free(r);
}
