/* The public mutation API (include/omnigraph.h, og_graph_mutate): a checked .gq mutation and
 * its params handed to the mutation adapter (src/exec/mutate.h), which makes one graph commit
 * through the write coordinator. Its own file so that programs that never mutate do not link
 * the mutation executor. */
#include "omnigraph.h"

#include "api/graph_internal.h"
#include "api/options.h"
#include "core/error.h"
#include "exec/mutate.h"

#include <stdio.h>
#include <string.h>

int og_graph_mutate(og_mutate_result *out, og_graph *g, const og_mutate_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_graph_mutate: out is NULL");
    memset(out, 0, sizeof *out);
    if (!g || !opt) return core_err(OG_E_BAD_REQUEST, "og_graph_mutate: missing argument");
    int vrc = api_options_check(opt->version, OG_MUTATE_OPTIONS_VERSION, "og_mutate_options");
    if (vrc) return vrc;
    if (opt->branch && *opt->branch && strcmp(opt->branch, "main") != 0)
        return core_err(OG_E_UNSUPPORTED, "mutating branch '%s': only main is supported by this "
                        "build", opt->branch);
    /* Refuse before checking: a read-only handle would only fail after all the work. */
    if (g->w->readonly) return core_err(OG_E_BAD_REQUEST, "the graph is open read-only");
    if (opt->if_commit && strlen(opt->if_commit) != OG_ID_LEN)
        return core_err(OG_E_BAD_REQUEST, "--if-commit needs a full commit id (%d characters), "
                        "not '%s'", OG_ID_LEN, opt->if_commit);
    api_prepared p;
    int rc = api_prepare(&p, g, opt->source, opt->source_len, opt->source_file, opt->name,
                         opt->params_json, opt->now_ms, 1);
    if (rc) return rc;
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = NULL; /* main */
    wo.if_commit = opt->if_commit;
    exec_mutate_result mr;
    memset(&mr, 0, sizeof mr);
    snprintf(out->query, sizeof out->query, "%s", p.q->name ? p.q->name : "");
    rc = exec_mutate_run(&mr, g->w, p.q, p.params, &wo);
    api_prepared_clear(&p);
    if (rc) return rc;
    if (mr.write.committed) {
        memcpy(out->commit_id, mr.write.commit_id, sizeof out->commit_id);
        memcpy(out->operation_id, mr.write.operation_id, sizeof out->operation_id);
        out->manifest_version = mr.write.manifest_version;
    }
    out->nodes_inserted = mr.nodes_inserted;
    out->nodes_updated = mr.nodes_updated;
    out->nodes_deleted = mr.nodes_deleted;
    out->edges_inserted = mr.edges_inserted;
    out->edges_updated = mr.edges_updated;
    out->edges_deleted = mr.edges_deleted;
    out->reprepares = mr.write.reprepares;
    out->n_tables = mr.write.n_tables < OG_LOAD_MAX_TABLES ? mr.write.n_tables : OG_LOAD_MAX_TABLES;
    for (size_t i = 0; i < out->n_tables; i++) {
        og_table_change *t = &out->tables[i];
        snprintf(t->alias, sizeof t->alias, "%s", mr.write.tables[i].alias);
        t->from_version = mr.write.tables[i].from_version;
        t->to_version = mr.write.tables[i].to_version;
        t->row_count = mr.write.tables[i].row_count;
    }
    return 0;
}
