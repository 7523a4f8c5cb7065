/* The executable IR of checked .gq queries: the contract between src/lang (which produces it)
 * and src/exec (which runs it). Everything is resolved: type and property references are
 * catalog indexes plus stable ids, variables are slots, values are typed.
 *
 * Read queries are one pipeline of operators over rows of slot bindings:
 *
 *   NODE_SCAN  -> for each input row, each node of one type (cross product), after the
 *                 pushed-down predicates `slot.prop op value` (values are constants, params
 *                 or now()); the first op of a pipeline starts from one empty row
 *   EXPAND     -> follow edges of one type from src_slot, `direction` relative to the edge's
 *                 declared From->To; hops in [min_hops, max_hops]; each destination reported
 *                 once per source (visited nodes are not expanded again); if dst_bound, keep
 *                 the row only when the already-bound dst is reached (semi-join); edge_slot
 *                 (>= 0 only with 1..1 hops) binds each traversed edge, one row per edge
 *   FILTER     -> keep rows where every predicate holds (conjunction)
 *   ANTI_JOIN  -> keep rows for which the correlated sub-pipeline yields no row; the sub
 *                 pipeline sees the outer row's slots as already bound
 *   ORDER      -> sort by keys (NULLs first ascending, last descending), then by the ids of
 *                 the tie_slots ascending, then by the output columns: a total order
 *   LIMIT      -> keep the first `count` rows
 *   PROJECT    -> compute the output columns (the query's `columns`)
 *   AGGREGATE  -> group by the non-aggregate columns and compute the aggregate ones; output
 *                 rows are the query's `columns`; an ORDER after it refers to COLUMN exprs
 *
 * A read pipeline is: scans/expands/filters/anti-joins, then either
 *   ORDER? LIMIT? PROJECT            (no aggregates; ORDER keys are over slots)
 * or
 *   AGGREGATE ORDER? LIMIT?          (ORDER keys are COLUMN exprs; tie-break by key columns)
 *
 * Mutation queries are a list of INSERT_NODE / INSERT_EDGE / UPDATE / DELETE ops executed as
 * one atomic change (one commit). A query never mixes deletes with inserts/updates. Their
 * values are LITERAL, PARAM or NOW exprs; the where predicate's lhs is a PROP with slot -1
 * (a property of the op's own type), an ID, or EDGE_SRC/EDGE_DST for edges. An INSERT_NODE of
 * a keyed type upserts by the key-derived id (lang_key_id); other inserts are strict and get
 * a new ULID. Deleting a node also deletes its incident edges (they are in `writes`).
 */
#ifndef OG_LANG_IR_H
#define OG_LANG_IR_H

#include "lang/catalog.h"

typedef enum lang_ir_expr_kind {
    LANG_IR_X_LITERAL = 1, /* lit: already coerced (ints range-checked, dates as days/ms) */
    LANG_IR_X_PARAM,       /* param: index into lang_ir_query.params */
    LANG_IR_X_NOW,         /* the query's single now() timestamp, DateTime ms */
    LANG_IR_X_ID,          /* the entity id (String) of slot */
    LANG_IR_X_PROP,        /* property `prop` (index in the slot's type; prop_id stable) */
    LANG_IR_X_EDGE_SRC,    /* edge delete predicates: the edge's from node id */
    LANG_IR_X_EDGE_DST,    /* ... its to node id */
    LANG_IR_X_COLUMN,      /* output column `column` (after AGGREGATE) */
    LANG_IR_X_NEAREST,     /* cosine distance of args[0] (a Vector PROP) to args[1] */
    LANG_IR_X_CALL,        /* fn(args): bm25, rrf, search, fuzzy, match_text (Bool or score) */
} lang_ir_expr_kind;

typedef struct lang_ir_expr {
    int kind;
    lang_type type; /* result type; LANG_S_NONE scalar for a literal null */
    int slot;
    int prop;
    uint64_t prop_id;
    int param;
    int column;
    lang_value lit;
    const char *fn;
    struct lang_ir_expr *args;
    size_t n_args;
} lang_ir_expr;

/* lhs op rhs with op a gq_op (=, !=, <, >, <=, >=, contains, starts_with). A CALL expr as
 * lhs with op 0 is a boolean predicate (search, fuzzy, match_text). */
typedef struct lang_ir_pred {
    lang_ir_expr lhs;
    int op;
    lang_ir_expr rhs;
} lang_ir_pred;

typedef enum lang_ir_slot_kind { LANG_IR_SLOT_NODE = 1, LANG_IR_SLOT_EDGE } lang_ir_slot_kind;

typedef struct lang_ir_slot {
    const char *name; /* without '$'; "_" for anonymous */
    int kind;         /* lang_ir_slot_kind */
    int type;         /* catalog type index */
    uint64_t type_id;
} lang_ir_slot;

typedef enum lang_ir_dir { LANG_IR_OUT = 1, LANG_IR_IN, LANG_IR_BOTH } lang_ir_dir;

typedef enum lang_ir_agg {
    LANG_IR_AGG_NONE = 0,
    LANG_IR_COUNT,
    LANG_IR_SUM,
    LANG_IR_AVG,
    LANG_IR_MIN,
    LANG_IR_MAX
} lang_ir_agg;

typedef struct lang_ir_column {
    const char *name; /* alias, or "var.prop", or "var", or "count(var)" */
    int agg;          /* lang_ir_agg */
    lang_ir_expr expr;
    lang_type type; /* the output type (count: U64 not null; avg: F64) */
} lang_ir_column;

typedef struct lang_ir_sort_key {
    lang_ir_expr expr;
    int desc;
} lang_ir_sort_key;

typedef struct lang_ir_assign {
    int prop; /* index in the op's type */
    uint64_t prop_id;
    lang_ir_expr value;
} lang_ir_assign;

typedef enum lang_ir_op_kind {
    LANG_IR_NODE_SCAN = 1,
    LANG_IR_EXPAND,
    LANG_IR_FILTER,
    LANG_IR_ANTI_JOIN,
    LANG_IR_ORDER,
    LANG_IR_LIMIT,
    LANG_IR_PROJECT,
    LANG_IR_AGGREGATE,
    LANG_IR_INSERT_NODE,
    LANG_IR_INSERT_EDGE,
    LANG_IR_UPDATE,
    LANG_IR_DELETE,
} lang_ir_op_kind;

typedef struct lang_ir_pipeline {
    struct lang_ir_op *ops;
    size_t n_ops;
} lang_ir_pipeline;

typedef struct lang_ir_op {
    int kind;
    /* NODE_SCAN: slot, type, preds (each lhs is a PROP of slot) */
    /* EXPAND: src_slot, dst_slot, edge_slot (-1 none), type (edge), direction, hops */
    int slot, type;
    uint64_t type_id;
    int src_slot, dst_slot, edge_slot;
    int direction;
    uint32_t min_hops, max_hops;
    int dst_bound;
    /* NODE_SCAN, FILTER; UPDATE/DELETE (exactly one predicate: the where) */
    lang_ir_pred *preds;
    size_t n_preds;
    /* ANTI_JOIN */
    lang_ir_pipeline sub;
    /* ORDER */
    lang_ir_sort_key *keys;
    size_t n_keys;
    int *tie_slots; /* ORDER over slots: ids of these slots break ties, in order */
    size_t n_tie_slots;
    int *tie_columns; /* ORDER after AGGREGATE: these columns break ties, in order */
    size_t n_tie_columns;
    /* LIMIT */
    uint64_t count;
    /* PROJECT / AGGREGATE: the query's columns are the output (see lang_ir_query) */
    /* INSERT_NODE, INSERT_EDGE, UPDATE: assignments; INSERT_EDGE: from/to node ids */
    lang_ir_assign *assigns;
    size_t n_assigns;
    lang_ir_expr *from, *to; /* INSERT_EDGE only; NULL otherwise */
    int upsert;              /* INSERT_NODE of a keyed type: upsert by the key-derived id */
    lang_pos pos;            /* INSERT_*, UPDATE, DELETE: the statement's place in the source */
} lang_ir_op;

typedef struct lang_ir_param {
    const char *name; /* without '$' */
    lang_type type;
} lang_ir_param;

typedef struct lang_ir_query {
    const char *name;
    const char *description, *instruction;
    const char *file; /* the source's name, as the query set has it (borrowed) */
    lang_pos pos;
    int is_mutation;
    lang_ir_param *params;
    size_t n_params;
    lang_ir_slot *slots;
    size_t n_slots;
    lang_ir_pipeline pipeline;
    lang_ir_column *columns; /* reads: the result columns */
    size_t n_columns;
    int *reads; /* catalog type indexes read (sorted, unique) */
    size_t n_reads;
    int *writes; /* catalog type indexes written (sorted, unique) */
    size_t n_writes;
    int uses_now;
} lang_ir_query;

/* A checked .gq file. Owns its arena; borrows the catalog, which must outlive it. */
typedef struct lang_query_set {
    core_arena arena;
    const lang_catalog *catalog;
    const char *file;
    gq_file ast;
    lang_ir_query *queries; /* one per query; a query with errors has status set */
    int *status;            /* per query: 0 ok, 1 has errors */
    size_t n_queries;
} lang_query_set;

/* Parse, type-check (T1..T24, Q000, Q001) and lower a .gq source against `cat`. Returns 0 if
 * every query checked; OG_E_BAD_REQUEST if any error (thread error = first diagnostic); in
 * both cases *out holds what was produced (parse failures give an empty set), so callers can
 * report per-query status. OG_E_NOMEM when memory ran out (*out may be NULL). Free with
 * lang_query_set_free. */
int lang_query_set_build(lang_query_set **out, const lang_catalog *cat, const char *src, size_t len,
                         const char *file, lang_diags *diags);
/* The same, wording errors about unknown type and property names with what became of them in
 * the other schema versions of `hist` (lang/history.h; NULL: none), e.g. "T1: unknown node
 * type 'Person': node type `Person` was renamed to `Human`". */
struct lang_history;
int lang_query_set_build_ex(lang_query_set **out, const lang_catalog *cat,
                            const struct lang_history *hist, const char *src, size_t len,
                            const char *file, lang_diags *diags);
void lang_query_set_free(lang_query_set *qs);
/* Index of the query named `name`, or -1. */
int lang_query_set_find(const lang_query_set *qs, const char *name);

/* Human names for the IR, used by dumps and tests. */
const char *lang_ir_op_name(int kind);
/* The IR of one query as indented text (stable; tests compare against it). */
int lang_ir_dump(const lang_query_set *qs, const lang_ir_query *q, core_buf *out);

#endif
