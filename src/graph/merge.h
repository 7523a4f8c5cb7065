/* Three-way merge of graph branches, the graph-layer half (RFC-022 §6.2; the reference's rules
 * are restated in docs/merge.md): the merge base in the commit DAG, the per-type and per-row
 * classification of base / source / target states into a delta onto the target, and the
 * conflicts a merge reports. The write layer (src/write/adapter_merge.c) runs it inside the
 * coordinator; nothing here writes.
 *
 * A conflict list owns its entries; every conflict names its kind (the snake_case names of
 * graph_conflict_kind_name), the type, the row id where there is one, and a message. */
#ifndef OG_GRAPH_MERGE_H
#define OG_GRAPH_MERGE_H

#include "graph/graph.h"
#include "core/error.h"
#include "graph/validate.h"

#include <stdbool.h>
#include <stddef.h>

/* ---- Conflicts ----------------------------------------------------------------------------- */

typedef enum graph_conflict_kind {
    /* row classification (base B, source S, target T of one id): */
    GRAPH_CONFLICT_DIVERGENT_INSERT = 1, /* B has no row; S and T inserted different rows */
    GRAPH_CONFLICT_DIVERGENT_UPDATE,     /* B, S and T all have it; S and T changed it apart */
    GRAPH_CONFLICT_DELETE_VS_UPDATE,     /* one side deleted what the other changed */
    /* validation of the merged result (the validator loads and mutations use): */
    GRAPH_CONFLICT_ORPHAN_EDGE,                /* an edge endpoint that is not there */
    GRAPH_CONFLICT_UNIQUE_VIOLATION,           /* @unique (or an id) held twice */
    GRAPH_CONFLICT_CARDINALITY_VIOLATION,      /* @card */
    GRAPH_CONFLICT_VALUE_CONSTRAINT_VIOLATION, /* type, enum, @range, @check */
    GRAPH_CONFLICT_KIND_COUNT_
} graph_conflict_kind;

/* "divergent_insert", ...; NULL for another value. And back (0 when unknown). */
const char *graph_conflict_kind_name(int kind);
int graph_conflict_kind_parse(const char *name);

typedef struct graph_conflict {
    int kind;      /* graph_conflict_kind */
    char *type;    /* the type's name */
    char *id;      /* the row id, NULL when there is none (some validation kinds) */
    char *message; /* one line, names the type, id and property where they are known */
} graph_conflict;

typedef struct graph_conflicts {
    graph_conflict *items;
    size_t n, cap;
} graph_conflicts;

/* Append a conflict (copies the strings; id may be NULL). OG_E_NOMEM only. */
int graph_conflicts_add(graph_conflicts *c, int kind, const char *type, const char *id,
                        const char *fmt, ...) CORE_PRINTF(5, 6);
void graph_conflicts_clear(graph_conflicts *c);

/* ---- Commit level -------------------------------------------------------------------------- */

typedef enum graph_merge_outcome {
    GRAPH_MERGE_UP_TO_DATE = 1, /* the source head is the target head or one of its ancestors */
    GRAPH_MERGE_FAST_FORWARD,   /* the target head is an ancestor of the source head */
    GRAPH_MERGE_MERGED,         /* both moved since the base: a three-way merge */
} graph_merge_outcome;

/* "already_up_to_date", "fast_forward", "merged"; NULL for another value. */
const char *graph_merge_outcome_name(int outcome);

/* How the merge base finds a commit: *out = the commit with this id, or NULL when it is not
 * known (its row is on no branch that still exists). Nonzero on an I/O error. */
typedef int (*graph_commit_lookup_fn)(void *arg, const char *id, const graph_commit **out);

typedef struct graph_merge_base_result {
    int outcome;                 /* graph_merge_outcome */
    char base[GRAPH_ID_LEN + 1]; /* the best common ancestor */
    size_t visited;              /* commits looked up (cost accounting) */
} graph_merge_base_result;

/* The merge base of two heads in the commit DAG, following parents and merged parents: the
 * common ancestor that no other common ancestor descends from. More than one such commit (a
 * criss-cross history) is refused with OG_E_CONFLICT naming them (docs/merge.md says why);
 * no common ancestor at all is OG_E_CONFLICT too (unrelated histories). A commit the lookup
 * does not know ends its path (its ancestors are not followed). */
int graph_merge_base(const char *src_head, const char *tgt_head, graph_commit_lookup_fn lookup,
                     void *arg, graph_merge_base_result *out);

/* ---- Type and row level -------------------------------------------------------------------- */

typedef struct graph_merge_stats {
    uint64_t rows_read;        /* rows decoded from the three states (whole or ids only) */
    uint64_t fragments_read;   /* fragments whose rows were read */
    uint64_t fragments_shared; /* fragments skipped: the same physical rows on both sides */
    uint64_t rows_changed;     /* rows the delta upserts or deletes */
} graph_merge_stats;

/* Three-way merge of type `type_index`'s table. base, src, tgt: the table at the merge base,
 * on the source and on the target, each opened at its pinned version (NULL: the type has no
 * table in that state, which reads as no rows). For every id in base ∪ src ∪ tgt, "changed"
 * means the whole row differs from base's (an absent row is a value):
 *   source unchanged            -> the target's row (or absence) stays;
 *   source changed, target not  -> the source's row is taken (or the target's deleted);
 *   both changed to equal rows  -> the target's row stays;
 *   both changed apart          -> a conflict: divergent_insert (no base row),
 *                                  delete_vs_update (one side has no row), divergent_update.
 * *delta receives what the target must do (mode GRAPH_CHANGE_DELTA: rows to upsert, in
 * graph_type_schema with the source's values, and ids to delete; type_index set); *changed
 * says whether it does anything. Row conflicts are appended to *conflicts (the delta then
 * leaves those ids as the target has them). Work follows the change: fragments that are the
 * same physical rows in two states (one Lance lineage, the same data file) are compared
 * through their deletion vectors, not read; the other fragments of base and source are read
 * once, whole rows, and the rows they hold alike (a reload rewriting unchanged rows) are no
 * candidates. Memory: while the source's diff is read, the rows of its unshared fragments are
 * held (both sides); after it, only the candidates'. */
int graph_merge_table(const lang_catalog *cat, int type_index, const lance_dataset *base,
                      const lance_dataset *src, const lance_dataset *tgt, graph_change *delta,
                      bool *changed, graph_conflicts *conflicts, graph_merge_stats *stats);

/* graph_merge_table with flags. GRAPH_MERGE_FULL_READ: match no fragments, read every row of
 * every state (the path tables of different lineages take anyway); it exists so tests can
 * prove the fragment-sharing path computes the same delta. Both add their counts to *stats
 * (may be NULL), so one merge can sum them over its types. */
#define GRAPH_MERGE_FULL_READ 1u
int graph_merge_table_ex(const lang_catalog *cat, int type_index, const lance_dataset *base,
                         const lance_dataset *src, const lance_dataset *tgt, graph_change *delta,
                         bool *changed, graph_conflicts *conflicts, graph_merge_stats *stats,
                         unsigned flags);

#endif
