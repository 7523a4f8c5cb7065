/* Internals shared by the executor's files: cached tables (ids, dictionary, columns), cached
 * CSR adjacency, and checked param values. Not part of any other layer's contract. */
#ifndef OG_EXEC_INTERNAL_H
#define OG_EXEC_INTERNAL_H

#include "exec/query.h"

#include "core/hmap.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>

/* One node or edge table at one version. Everything but `cols` is immutable after build;
 * `cols` fill in lazily under `mu` and a loaded column never changes. */
typedef struct exec_table {
    _Atomic long refs;
    char *path, *branch; /* branch: Lance branch or NULL (main) */
    uint64_t version;
    int kind;
    int64_t n_rows;
    arrow_array *id;        /* Utf8 ids in scan order */
    arrow_array *src, *dst; /* edges: Utf8 endpoint ids */
    core_hmap dict;         /* id -> row (of the ids it indexes; see below) */
    lance_dataset *ds;      /* kept open to load columns */
    uint64_t *addrs;        /* a subset table (exec_subset.c): its rows' addresses; NULL: every
                               row of the table */
    /* A folded edge table (exec_cache.c): a newer version of `base` that only appended
     * fragments. Rows [0, n_base) are base's, the rest the appended rows: d_id/d_src/d_dst
     * (and their addresses d_addrs); dict indexes those only. id/src/dst stay NULL until
     * exec_table_ids / exec_table_ends concatenate them (rarely needed). */
    struct exec_table *base;
    int64_t n_base;
    arrow_array *d_id, *d_src, *d_dst;
    uint64_t *d_addrs;
    /* Tables of one lineage hold rows of which each one's are a prefix of the next's (a
     * fold that only appended after the table it folded onto keeps its lineage; a load, a
     * re-root or a fold onto the root alone starts a new one). */
    uint64_t lineage;
    pthread_mutex_t mu;
    size_t n_cols;
    char **col_names;
    arrow_array **cols;
} exec_table;

/* An appended edge of a folded adjacency: its node, the other end, its edge row. */
typedef struct exec_dedge {
    uint32_t node, nbr, edge;
} exec_dedge;

/* Adjacency of one edge table between its endpoint tables, in node-row space. Edges whose
 * endpoint is missing from the node table are left out. Neighbour lists keep edge-row order.
 * A folded adjacency (over a folded edge table) borrows its base's arrays and adds the
 * appended edges, sorted by node then edge row: a node's base neighbours come first. */
typedef struct exec_csr {
    _Atomic long refs;
    exec_table *edges, *from, *to;
    uint32_t *out_off, *out_nbr, *out_edge; /* by from-row: to-rows */
    uint32_t *in_off, *in_nbr, *in_edge;    /* by to-row: from-rows */
    struct exec_csr *base;                  /* folded: the arrays above are base's */
    exec_dedge *d_out, *d_in;               /* folded: appended edges by from-row / to-row */
    size_t n_d;
} exec_csr;

/* The appended neighbours of `node` in d[0..n) (sorted by node): *first and the count. */
size_t exec_dedge_range(const exec_dedge *d, size_t n, uint32_t node, size_t *first);
/* Every row's id of t (a folded table's concatenated on first use). Borrowed. */
const arrow_array *exec_table_ids(exec_table *t);

int exec_cache_table(exec_table **out, exec_cache *c, store *s, const graph_table *t);
/* Is table t at its version in the cache? At any version (a warm handle: a newer version of
 * an edge table that only appended rows is folded onto the cached one)? */
bool exec_cache_holds(exec_cache *c, const graph_table *t);
bool exec_cache_holds_any(exec_cache *c, const graph_table *t);
/* Count one more cold (subset) run over t at its version; returns the count so far. */
unsigned exec_cache_note_cold(exec_cache *c, const graph_table *t);
/* A subset table over some rows of gt's table (never cached): takes ds and addrs, references
 * id/src/dst (n_rows = id's length; rows in scan order). */
int exec_table_new_subset(exec_table **out, int kind, const graph_table *gt, lance_dataset *ds,
                          arrow_array *id, arrow_array *src, arrow_array *dst, uint64_t *addrs);
/* Subset tables for a query anchored on keys (exec_subset.c): *out[type] per catalog type
 * whose table the query uses (NULL elsewhere; free each with exec_table_release and the
 * array with core_free). *out NULL (and 0) when the query needs whole tables. */
int exec_subset_build(exec_table ***out, const lang_catalog *cat, const graph_snapshot *snap,
                      store *s, const lang_ir_query *q, const exec_params *p);
void exec_table_release(exec_table *t);
/* Row of id (n bytes), or -1. */
int64_t exec_table_find(const exec_table *t, const void *id, size_t n);
/* The column `name` (all rows, scan order), loading it on first use. Borrowed: lives as long
 * as the table. */
int exec_table_column(const arrow_array **out, exec_cache *c, exec_table *t, const char *name);
/* Is the column already in memory? */
int exec_table_has_column(exec_table *t, const char *name);

int exec_cache_csr(exec_csr **out, exec_cache *c, exec_table *edges, exec_table *from,
                   exec_table *to);
void exec_csr_release(exec_csr *g);

/* BFS scratch: epoch-stamped visited/seen marks (never cleared: a new epoch per source) and
 * frontier buffers, for node tables of up to `cap` rows. Pooled in the cache so a warm query
 * allocates nothing proportional to the graph; each run takes its own (thread-safe). */
typedef struct exec_scratch {
    uint32_t *visited, *seen;
    uint32_t epoch;
    uint32_t *frontier, *next, *found;
    size_t cap;
} exec_scratch;

int exec_scratch_get(exec_scratch **out, exec_cache *c, size_t n_nodes);
void exec_scratch_put(exec_cache *c, exec_scratch *s);

/* Counters bumped by the executor. */
void exec_cache_count_pushed(exec_cache *c);
void exec_cache_count_key_lookup(exec_cache *c);
void exec_cache_count_subset(exec_cache *c);

/* Does `cell op rhs` hold, with the read executor's semantics (NULL never satisfies; contains
 * is list membership or substring; starts_with)? For mutation `where` over rows the mutation
 * stages itself (src/exec/mutate.c). */
int exec_pred_holds_cell(int op, const arrow_array *a, int64_t i, const lang_value *rhs);

struct exec_params {
    core_arena arena;
    size_t n;
    lang_value *vals; /* per declared param, LANG_V_NULL when absent */
    int has_now;
    int64_t now_ms;
};

#endif
