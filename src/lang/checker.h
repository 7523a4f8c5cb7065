/* Internal to the .gq type checker (check.c) and the lowering (lower.c). The checker resolves
 * every name against the catalog and types every expression (T1..T24, Q001); for a query
 * without errors it hands over a lang_checked_query: slots, parameters and result columns
 * already in the lang_ir_query, and the match clauses, order keys and mutations resolved and
 * typed but not yet arranged. The lowering turns that into the IR pipeline (operator order,
 * pushed-down predicates, anti-joins) and fills the read and write sets; it reports nothing. */
#ifndef OG_LANG_CHECKER_H
#define OG_LANG_CHECKER_H

#include "lang/ir.h"

struct lang_checked_block;

/* One clause of a match block, resolved and typed. */
typedef struct lang_checked_clause {
    int kind;      /* gq_clause_kind */
    int src_slot;  /* BIND: the variable's slot; TRAV: the source's */
    int dst_slot;  /* TRAV: the destination's slot */
    int edge_slot; /* TRAV: the edge variable's slot, or -1 */
    int edge_type; /* TRAV: catalog index of the edge type */
    int undirected;
    uint64_t min_hops; /* TRAV: as written (1..1 without bounds) */
    int64_t max_hops;
    lang_ir_pred *preds; /* BIND: the property map, as equalities on src_slot */
    size_t n_preds;
    lang_ir_pred *pred; /* FILTER, CALL: the predicate */
    int *uses;          /* FILTER, CALL: the slots the predicate reads */
    size_t n_uses;
    const struct lang_checked_block *body; /* NOT: the checked body */
} lang_checked_clause;

/* A match block: the query's, or a not {} body. Its clauses declare the slots
 * [first_slot, own_end); its not {} bodies (nested ones included) declare [own_end, end_slot). */
typedef struct lang_checked_block {
    lang_checked_clause *clauses; /* one per clause, in source order */
    size_t n;
    size_t first_slot, own_end, end_slot;
} lang_checked_block;

/* What follows the match of a read; the result columns are lang_ir_query.columns. */
typedef struct lang_checked_return {
    lang_ir_sort_key *keys; /* order keys: over slots, or COLUMN exprs when has_agg */
    size_t n_keys;
    int has_agg; /* some column aggregates */
    int has_limit;
    uint64_t limit;
} lang_checked_return;

/* One insert, update or delete. */
typedef struct lang_checked_mut {
    int kind;     /* gq_mut_kind */
    int type;     /* catalog index of the node or edge type */
    lang_pos pos; /* the statement's first token */
    lang_ir_assign *assigns;
    size_t n_assigns;
    lang_ir_expr *from, *to; /* inserting an edge: its endpoints */
    lang_ir_pred *where;     /* update, delete: the one predicate */
} lang_checked_mut;

typedef struct lang_checked_query {
    lang_checked_block match; /* reads */
    lang_checked_return ret;  /* reads */
    lang_checked_mut *muts;   /* mutations, in source order */
    size_t n_muts;
} lang_checked_query;

/* Build ir->pipeline, ir->reads and ir->writes of a query that checked without errors (its
 * slots, parameters and columns are the checker's). Allocates in `a`; 0, or OG_E_NOMEM. */
int lang_lower_query(core_arena *a, const lang_catalog *cat, const lang_checked_query *cq,
                     lang_ir_query *ir);

#endif
