/* The og_graph handle shared by the public API's files (graph_api.c: open/close/load/lineage;
 * query_api.c: reads; mutate_api.c: mutations; maint_api.c: maintenance), and the
 * og_write_result the writes fill (write_result.c). Not part of the public contract. */
#ifndef OG_API_GRAPH_INTERNAL_H
#define OG_API_GRAPH_INTERNAL_H

#include "exec/request.h"
#include "graph/graph_handle.h"
#include "write/write.h"

/* Conflicts (graph/merge.h) as the public og_merge_conflict, each string copied: merges'
 * conflicts and schema apply's violations. *items is freed with api_conflicts_free. */
struct graph_conflicts;
int api_conflicts_copy(const struct graph_conflicts *in, og_merge_conflict **items, size_t *n);
void api_conflicts_free(og_merge_conflict *items, size_t n);

struct og_graph {
    graph_handle *h;   /* the open graph: store, schema, actor, cached head (every request) */
    write_graph *w;    /* its writer; NULL on a read-only handle (nothing to write with) */
    exec_cache *cache; /* tables and adjacency per table version, shared by every read */
};

/* og_graph_open, optionally without the recovery barrier of a read-write open (the handle's
 * writes still cross it): for the recover calls, which must open a graph that a pending
 * intent blocks. */
int api_graph_open(og_graph **out, const char *root_dir, const og_open_options *opt,
                   bool defer_recovery);

/* A branch argument of the public API: "" and "main" become NULL (main); another name must
 * be an existing graph branch, else OG_E_NOT_FOUND naming it. */
int api_branch_arg(og_graph *g, const char **branch);
/* The snapshot of `branch` (NULL: main) at `at` (NULL: its head; else a commit id, a unique id
 * prefix or a manifest version of that branch's lineage), with the lineage when flags has
 * GRAPH_SNAP_LINEAGE. */
int api_snapshot_at(graph_snapshot **out, og_graph *g, const char *branch, const char *at,
                    unsigned flags);

/* ---- write results ---- */

#define API_WRITE_COUNTS (OG_WRITE_NEW_BRANCH + 1) /* counts[] is indexed by og_write_count */

struct og_write_result {
    char commit_id[OG_ID_LEN + 1]; /* "" when nothing was committed */
    char operation_id[OG_ID_LEN + 1];
    uint64_t manifest_version;
    char *query_name; /* never NULL after api_write_result_new */
    uint64_t counts[API_WRITE_COUNTS];
    og_table_change *tables; /* aliases owned here */
    size_t n_tables, cap;
    bool lost_table; /* api_write_result_on_table could not record one */
};

/* An empty result, made before the write so that a committed write cannot fail for want of
 * one. */
int api_write_result_new(og_write_result **out);
/* Set wo->on_table so the write's tables are recorded in r. */
void api_write_result_collect(og_write_result *r, write_options *wo);
/* Copy the commit of wr into r. OG_E_NOMEM (naming the commit, which stands) when a table
 * could not be recorded. */
int api_write_result_finish(og_write_result *r, const write_result *wr);

#endif
