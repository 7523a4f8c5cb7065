/* .gq mutations: insert / update / delete statements of one query become one graph change set,
 * computed against the base snapshot the coordinator hands to every prepare (so a re-prepare
 * recomputes predicates, cascades and read-your-writes instead of patching), and committed as
 * one graph commit through the mutation adapter (write_mutation).
 *
 * Semantics: an insert of a keyed node type upserts by its key-derived id; an insert of a
 * generated-id type (or an edge) is a strict insert of a new ULID; `update T set ... where`
 * rewrites the matching rows keeping their ids; `delete T where` deletes the matching rows and,
 * for node types, every edge incident to them (cascade); statements run in order and each
 * sees the pending effects of the earlier ones (read-your-writes); a query mixes insert/update
 * with delete never (the checker's rule). Zero matched rows and nothing inserted commit
 * nothing. */
#ifndef OG_EXEC_MUTATE_H
#define OG_EXEC_MUTATE_H

#include "exec/query.h"
#include "write/write.h"

typedef struct exec_mutate_result {
    write_result write; /* commit id, manifest version, per-table versions */
    uint64_t nodes_inserted, nodes_updated, nodes_deleted;
    uint64_t edges_inserted, edges_updated, edges_deleted; /* deleted includes cascades */
    char *query_name; /* exec_mutate (request.h) only: the mutation run; else NULL */
} exec_mutate_result;
/* Free what the result holds (its query_name). */
void exec_mutate_result_clear(exec_mutate_result *r);

/* Run mutation query q with params through the coordinator on g. opt: branch, if_commit
 * (OG_E_PRECONDITION_FAILED with zero effect when the head moved). */
int exec_mutate_run(exec_mutate_result *out, write_graph *g, const lang_ir_query *q,
                    const exec_params *params, const write_options *opt);

/* Tests only (defined in a testing build, OG_TESTING): 0 makes update/delete read whole tables
 * instead of the rows their key selects (and cascades read whole edge tables), to compare both
 * (default 1). */
void exec_mutate_set_partial_loads(int on);

#endif
