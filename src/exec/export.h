/* The load format out of a graph: the rows of one snapshot's tables as the JSONL lines the
 * loader (load.h) reads back, so that loading an export into a fresh graph with the same
 * schema gives the same rows, ids included.
 *
 * Lines: every node table first, then every edge table, each in type-name order and its rows
 * sorted by id (byte order). A node is {"type":"T","data":{"id":..., props...}}, an edge
 * {"edge":"E","from":"<src>","to":"<dst>","data":{"id":..., props...}}; every property is
 * written, null as null. Value forms are those the loader reads exactly: integers in full,
 * floats as the shortest decimal that reads back to the same value (always with a '.' or an
 * exponent), Date and DateTime as ISO strings (integers where ISO cannot say it: years
 * outside 0000-9999), enums and Blobs as strings, lists and vectors as arrays.
 *
 * A value the loader cannot read back stops the export with OG_E_UNSUPPORTED naming the type,
 * the id and the property (what the sink took before stays taken): a U64 above 2^63-1, a
 * float that is NaN or infinite, a Blob or String that is not UTF-8 text or holds a NUL byte,
 * a null list item. Loads never store such values; a mutation can store the first (a U64
 * literal above 2^63-1), other writers of the tables any of them. */
#ifndef OG_EXEC_EXPORT_H
#define OG_EXEC_EXPORT_H

#include "graph/graph.h"

#include <stddef.h>
#include <stdint.h>

/* Receives the output in pieces (a few hundred KiB at most each): 0, or a negative og_code
 * that stops the export (and is returned by it). */
typedef int (*exec_export_sink)(void *arg, const void *data, size_t len);

typedef struct exec_export_stats {
    uint64_t nodes, edges;         /* lines written of each kind */
    uint64_t bytes;                /* bytes handed to the sink */
    size_t node_types, edge_types; /* tables exported (empty ones included) */
} exec_export_stats;

/* Write the live tables of snap (types NULL or n_types 0: every one; otherwise only the types
 * named, each of which must be a live node or edge type of snap, else OG_E_NOT_FOUND) to sink.
 * One table's rows are held in memory at a time. *st (may be NULL) receives the counts, also
 * of what was written before a failure. */
int exec_export(store *s, const graph_snapshot *snap, const char *const *types, size_t n_types,
                exec_export_sink sink, void *arg, exec_export_stats *st);
/* The same writing only the columns that are properties of the table's type in `cat` (the
 * schema snap was written under; NULL: every column): a column a soft drop hides is left out
 * at commits after the drop and written at commits before it. */
int exec_export_cat(store *s, const graph_snapshot *snap, const lang_catalog *cat,
                    const char *const *types, size_t n_types, exec_export_sink sink, void *arg,
                    exec_export_stats *st);

#endif
