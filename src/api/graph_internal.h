/* The og_graph handle shared by the public API's files (graph_api.c: open/close/load/lineage;
 * query_api.c: reads; mutate_api.c: mutations) and the query preparation they share. Not part
 * of the public contract. */
#ifndef OG_API_GRAPH_INTERNAL_H
#define OG_API_GRAPH_INTERNAL_H

#include "exec/query.h"
#include "lang/ir.h"
#include "write/write.h"

struct og_graph {
    write_graph *w;
    exec_cache *cache; /* tables and adjacency per table version, shared by every read */
};

/* A .gq source checked against the handle's schema, with one query chosen and its params. */
typedef struct api_prepared {
    lang_query_set *qs;
    const lang_ir_query *q;
    exec_params *params;
} api_prepared;

/* Build the query set from source (len 0: strlen), choose `name` (NULL: the only query),
 * require a mutation or a read (`mutation`), and check params_json (NULL: none) against its
 * declared params; now_ms nonzero fixes now(). On failure p is empty and the thread error
 * says why (a .gq error is located at its file:line:column). */
int api_prepare(api_prepared *p, og_graph *g, const char *source, size_t len, const char *file,
                const char *name, const char *params_json, int64_t now_ms, int mutation);
void api_prepared_clear(api_prepared *p);

#endif
