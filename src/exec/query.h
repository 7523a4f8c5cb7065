/* The read-query executor: runs a checked IR read query (src/lang/ir.h) against a pinned graph
 * snapshot and returns the rows as Arrow batches, plus the per-graph-handle cache of table
 * columns, id dictionaries and adjacency (CSR both directions) the executor reads through.
 *
 * Semantics (docs/languages.md, omnigraph-surface.md §1.3): node scans push comparisons with
 * constants into the Lance scan while the table is cold and evaluate in memory once its
 * columns are cached; a key or id equality is a dictionary lookup. Traversals are a BFS per
 * source row over the CSR: each destination once per source, visited nodes not expanded
 * again, the source itself reported only through a self-loop edge; a traversal over an edge
 * whose endpoint types differ is at most one hop. Edge bindings give one row per edge. NULL
 * never satisfies a comparison. ORDER puts NULLs first ascending, last descending, then ties
 * on entity ids and output columns. A global aggregate over no rows gives one row (count 0,
 * sum 0, avg/min/max null). */
#ifndef OG_EXEC_QUERY_H
#define OG_EXEC_QUERY_H

#include "arrow/arrow.h"
#include "core/buf.h"
#include "core/json.h"
#include "graph/graph.h"
#include "lang/ir.h"
#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Cache --------------------------------------------------------------------------------- */

/* Tables (id dictionary, lazily loaded columns) keyed by (path, Lance branch, version) and
 * CSR adjacency keyed by the edge table's key plus its endpoint tables' keys. An entry is
 * never stale: a new table version is a new key, and inserting it evicts older versions of
 * the same (path, branch) together with the CSRs built on them. Safe to share between threads
 * (one mutex; entries are reference counted and immutable once published). */
typedef struct exec_cache exec_cache;

typedef struct exec_cache_stats {
    uint64_t table_loads; /* tables whose ids were read (misses) */
    uint64_t table_folds; /* newer versions that only appended rows, folded onto the cached one */
    uint64_t table_hits;
    uint64_t column_loads; /* property columns read into memory */
    uint64_t csr_builds;   /* adjacency built (misses) */
    uint64_t csr_hits;
    uint64_t csr_folds;    /* adjacency of a folded table, from its base's and the appended edges */
    uint64_t pushed_scans; /* node scans answered by a Lance scan with filter terms */
    uint64_t key_lookups;  /* node scans answered by the id dictionary */
    uint64_t subset_runs;  /* cold runs over subset tables found through key indexes */
    uint64_t offers;       /* table versions taken from this handle's own commits */
    size_t tables, csrs;   /* entries held now */
} exec_cache_stats;

int exec_cache_new(exec_cache **out);
/* Cold reads: a query anchored on keys whose tables the cache does not hold at their versions
 * runs over subset tables found through the key indexes (reading only what it reaches) for
 * the first n runs over those versions; later runs load the tables whole into the cache. An
 * edge table the cache holds at an earlier version is not cold: a newer version that only
 * appended rows is folded into the cached one. Default EXEC_COLD_RUNS_DEFAULT; 0 always
 * loads whole tables. */
#define EXEC_COLD_RUNS_DEFAULT 3
void exec_cache_set_cold_runs(exec_cache *c, unsigned n);
unsigned exec_cache_cold_runs(exec_cache *c);
void exec_cache_free(exec_cache *c);
void exec_cache_stats_get(exec_cache *c, exec_cache_stats *out);

/* A table version this handle has just committed, offered to the cache so that the next
 * query needs no read of it: when the cache holds the table at from_version, the new version
 * is derived from it in memory. `rewrite`: a Rewrite (the same rows; a compaction), whose
 * order the cache checks from the two manifests; otherwise the commit appended exactly the
 * rows id (and src/dst for edges), in order, as new fragments (checked the same way). Only
 * edge tables are derived (node rows number the adjacency). An offer that does not fit is
 * dropped; the version is then read when a query needs it. */
typedef struct exec_table_offer {
    const char *path, *branch; /* branch: Lance branch or NULL (main) */
    int kind;                  /* LANG_NODE / LANG_EDGE */
    uint64_t from_version, to_version;
    lance_dataset *ds; /* to_version (taken: NULL after the call) */
    bool rewrite;
    const arrow_array *id, *src, *dst;
} exec_table_offer;
void exec_cache_offer(exec_cache *c, exec_table_offer *o);

/* ---- Params -------------------------------------------------------------------------------- */

/* Values for a query's declared params, checked against their types. */
typedef struct exec_params exec_params;

/* From a JSON object (keys without '$'; obj may be NULL for "no params"). Every declared
 * non-nullable param must be present; unknown keys, wrong JSON kinds, out-of-range integers,
 * bad dates, wrong vector sizes are OG_E_BAD_REQUEST naming the param. Dates are ISO strings
 * or integer days, DateTimes ISO strings or integer milliseconds. */
int exec_params_from_json(exec_params **out, const lang_ir_query *q, const json_t *obj);
void exec_params_free(exec_params *p);
/* Fix now() for this run (milliseconds since the epoch); default: the wall clock at the start
 * of each run. */
void exec_params_set_now(exec_params *p, int64_t now_ms);

/* ---- Results ------------------------------------------------------------------------------- */

typedef struct exec_result exec_result;

/* Run read query q. params may be NULL when q declares none (required params then fail with
 * OG_E_BAD_REQUEST naming the first); cache may be NULL (a private one is used and dropped).
 * A mutation query is OG_E_BAD_REQUEST. */
int exec_query_run(exec_result **out, const lang_catalog *cat, const graph_snapshot *snap, store *s,
                   const lang_ir_query *q, const exec_params *params, exec_cache *cache);
void exec_result_free(exec_result *r);

/* Column names/types (the query's columns, in order) as an Arrow schema. */
const arrow_schema *exec_result_schema(const exec_result *r);
size_t exec_result_n_columns(const exec_result *r);
const char *exec_result_column_name(const exec_result *r, size_t col);
uint64_t exec_result_n_rows(const exec_result *r);
size_t exec_result_n_batches(const exec_result *r);
arrow_batch *exec_result_batch(const exec_result *r, size_t i);
/* Cell (row, col): the array holding it and the index in that array. OG_E_BAD_REQUEST out of
 * range. */
int exec_result_cell(const exec_result *r, uint64_t row, size_t col, const arrow_array **arr,
                     int64_t *idx);
/* Row as one JSON object {"col": value, ...} in the canonical JSON form (arrow_json.h). */
int exec_result_row_json(const exec_result *r, uint64_t row, core_buf *out);
/* Export as an Arrow C stream. The result keeps nothing: its batches move into the stream
 * (the result is empty afterwards, still to be freed). */
int exec_result_export(exec_result *r, struct ArrowArrayStream *out);

/* The Arrow type a column of language type t has (graph.h's table mapping). */
int exec_arrow_type(arrow_type *out, const lang_type *t);

#endif
