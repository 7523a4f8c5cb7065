/* The public mutation API (include/omnigraph.h, og_graph_mutate): a mutate request handed to
 * the executor (exec_mutate, src/exec/request.h: the .gq mutation checked against the graph's
 * schema, then one graph commit of the mutation adapter through the write coordinator). Its own
 * file so that programs that never mutate do not link the mutation executor. */
#include "omnigraph.h"

#include "api/graph_internal.h"
#include "api/options.h"
#include "core/alloc.h"
#include "core/error.h"

#include <stdio.h>
#include <string.h>

int og_graph_mutate(og_write_result **out, og_graph *g, const og_mutate_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_graph_mutate: out is NULL");
    *out = NULL;
    if (!g || !opt) return core_err(OG_E_BAD_REQUEST, "og_graph_mutate: missing argument");
    int vrc = api_options_check(opt->version, OG_MUTATE_OPTIONS_VERSION, "og_mutate_options");
    if (vrc) return vrc;
    /* Refuse before checking: a read-only handle would only fail after all the work. */
    if (!g->w) return core_err(OG_E_BAD_REQUEST, "the graph is open read-only");
    if (opt->if_commit && strlen(opt->if_commit) != OG_ID_LEN)
        return core_err(OG_E_BAD_REQUEST,
                        "--if-commit needs a full commit id (%d characters), "
                        "not '%s'",
                        OG_ID_LEN, opt->if_commit);
    og_write_result *res = NULL;
    int rc = api_write_result_new(&res);
    if (rc) return rc;
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = opt->branch && *opt->branch ? opt->branch : NULL;
    wo.if_commit = opt->if_commit;
    api_write_result_collect(res, &wo);
    exec_gq_request req = {opt->source, opt->source_len,  opt->source_file,
                           opt->name,   opt->params_json, opt->now_ms};
    exec_mutate_result mr;
    rc = exec_mutate(&mr, g->w, &req, &wo);
    if (!rc) {
        core_free(res->query_name);
        res->query_name = mr.query_name; /* taken */
        mr.query_name = NULL;
        res->counts[OG_WRITE_NODES_INSERTED] = mr.nodes_inserted;
        res->counts[OG_WRITE_NODES_UPDATED] = mr.nodes_updated;
        res->counts[OG_WRITE_NODES_DELETED] = mr.nodes_deleted;
        res->counts[OG_WRITE_EDGES_INSERTED] = mr.edges_inserted;
        res->counts[OG_WRITE_EDGES_UPDATED] = mr.edges_updated;
        res->counts[OG_WRITE_EDGES_DELETED] = mr.edges_deleted;
        rc = api_write_result_finish(res, &mr.write);
    }
    if (rc) {
        og_write_result_free(res);
        return rc;
    }
    *out = res;
    return 0;
}
