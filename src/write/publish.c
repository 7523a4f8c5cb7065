/* The graph-manifest publisher (RFC-022 §4.7): the single visibility point of a graph write.
 * Each attempt opens the branch's manifest at its latest version N, arbitrates the complete
 * read set against exactly N, and appends the delta as version N+1 with a put-if-absent of the
 * version file: a concurrent publisher that took N+1 makes this attempt re-read and re-arbitrate,
 * never publish against a state it did not check. */
#include "write/internal.h"

#include "core/error.h"
#include "core/failpoint.h"

int write_publish(write_graph *g, const char *branch, const write_read_set *rs,
                  const lance_dataset *base_hint, write_rows_fn rows_fn, void *arg,
                  uint64_t *published, lance_dataset **after_out)
{
    int rc = 0;
    for (unsigned attempt = 0; attempt < WRITE_MAX_PUBLISH_ATTEMPTS; attempt++) {
        lance_dataset *opened = NULL;
        const lance_dataset *m = NULL;
        graph_snapshot *cur = NULL;
        graph_rows *rows = NULL;
        arrow_batch *batch = NULL;
        lance_staged *st = NULL;
        if (attempt == 0 && base_hint) {
            /* The caller's base, revalidated as the latest under the gates: no re-read. If it
             * is stale after all, the exact commit below fails and the next attempt re-reads. */
            m = base_hint;
        } else {
            rc = graph_manifest_open(&opened, g->h->s, branch, 0, LANCE_ACCESS_WRITE);
            if (rc != 0) return rc;
            m = opened;
        }
        uint64_t base = lance_dataset_version(m);
        /* The state of a branch is a function of its manifest version: when the read set was
         * captured at exactly this version every member holds and no scan is needed. */
        if (!rs || base != rs->manifest_version) {
            rc = graph_snapshot_from_dataset(&cur, m, branch, 0);
            if (rc == 0 && rs) rc = write_rs_check(rs, cur);
        }
        if (rc == 0) rc = graph_rows_new(&rows);
        if (rc == 0) rc = rows_fn(arg, cur, base + 1, rows);
        if (rc == 0) rc = graph_rows_to_batch(rows, &batch);
        if (rc == 0) rc = OG_FAILPOINT("publish.before_commit");
        /* Every graph-manifest version is chained (graph/manifest.c): the first commit of
         * this build on a graph of an older one starts the chain. */
        lance_write_options wo = LANCE_WRITE_OPTIONS_INIT;
        wo.chain = true;
        if (rc == 0) rc = lance_stage_append(&st, m, &batch, 1, &wo);
        uint64_t v = 0;
        lance_dataset *after = NULL;
        if (rc == 0) rc = lance_staged_commit(st, &after, &v);
        if (rc == 0 && after_out) {
            *after_out = after;
            after = NULL;
        }
        lance_dataset_free(after);
        lance_staged_free(st);
        arrow_batch_free(batch);
        graph_rows_free(rows);
        graph_snapshot_free(cur);
        lance_dataset_free(opened);
        if (rc == 0) {
            *published = v;
            return 0;
        }
        if (rc != OG_E_CONFLICT) return rc;
        /* Someone committed version base+1 first: re-read and re-arbitrate. */
        write_stats d = {0};
        d.publish_retries = 1;
        write_stats_add(g, &d);
    }
    return core_err(OG_E_CONFLICT,
                    "graph manifest commit lost %d times in a row to concurrent commits",
                    WRITE_MAX_PUBLISH_ATTEMPTS);
}
