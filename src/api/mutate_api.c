/* The public mutation API (include/omnigraph.h, og_graph_mutate): a checked .gq mutation and
 * its params handed to the mutation adapter (src/exec/mutate.h), which makes one graph commit
 * through the write coordinator. Its own file so that programs that never mutate do not link
 * the mutation executor. */
#include "omnigraph.h"

#include "api/graph_internal.h"
#include "api/options.h"
#include "core/alloc.h"
#include "core/error.h"
#include "exec/mutate.h"

#include <stdio.h>
#include <string.h>

int og_graph_mutate(og_write_result **out, og_graph *g, const og_mutate_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_graph_mutate: out is NULL");
    *out = NULL;
    if (!g || !opt) return core_err(OG_E_BAD_REQUEST, "og_graph_mutate: missing argument");
    int vrc = api_options_check(opt->version, OG_MUTATE_OPTIONS_VERSION, "og_mutate_options");
    if (vrc) return vrc;
    if (opt->branch && *opt->branch && strcmp(opt->branch, "main") != 0)
        return core_err(OG_E_UNSUPPORTED, "mutating branch '%s': only main is supported by this "
                        "build", opt->branch);
    /* Refuse before checking: a read-only handle would only fail after all the work. */
    if (!g->w) return core_err(OG_E_BAD_REQUEST, "the graph is open read-only");
    if (opt->if_commit && strlen(opt->if_commit) != OG_ID_LEN)
        return core_err(OG_E_BAD_REQUEST, "--if-commit needs a full commit id (%d characters), "
                        "not '%s'", OG_ID_LEN, opt->if_commit);
    api_prepared p;
    int rc = api_prepare(&p, g, opt->source, opt->source_len, opt->source_file, opt->name,
                         opt->params_json, opt->now_ms, 1);
    if (rc) return rc;
    og_write_result *res = NULL;
    rc = api_write_result_new(&res);
    if (!rc && p.q->name) {
        core_free(res->query_name);
        res->query_name = core_strdup(p.q->name);
        if (!res->query_name) rc = core_err_nomem();
    }
    if (rc) {
        og_write_result_free(res);
        api_prepared_clear(&p);
        return rc;
    }
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = NULL; /* main */
    wo.if_commit = opt->if_commit;
    api_write_result_collect(res, &wo);
    exec_mutate_result mr;
    memset(&mr, 0, sizeof mr);
    rc = exec_mutate_run(&mr, g->w, p.q, p.params, &wo);
    api_prepared_clear(&p);
    if (!rc) {
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
