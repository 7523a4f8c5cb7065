/* JSONL bulk load input: parse a file of node and edge lines into a graph change set, one
 * change per type present, rows in the table's Arrow schema with ids derived (keyed nodes),
 * checked (data.id of a keyed node must equal the derived id) or minted (ULIDs).
 *
 * Line shapes: {"type":"T","data":{...}} and {"edge":"E","from":"<id>","to":"<id>","data":{...}}.
 * Blank lines are skipped; any other top-level member, a duplicate member, data.src/data.dst on
 * an edge, or a property the type does not declare is an error naming the line. Value forms:
 * Date as an ISO date string or integer days, DateTime as an ISO string or integer ms, lists
 * and vectors as JSON arrays, enums as strings. */
#ifndef OG_EXEC_LOAD_H
#define OG_EXEC_LOAD_H

#include "graph/validate.h"

typedef enum exec_load_mode {
    EXEC_LOAD_APPEND = 1,    /* strict insert of every row (key_conflict on an existing id) */
    EXEC_LOAD_MERGE = 2,     /* upsert by id */
    EXEC_LOAD_OVERWRITE = 3, /* replace the whole content of each type present in the file */
} exec_load_mode;

/* "append" / "merge" / "overwrite" -> mode, or OG_E_BAD_REQUEST. */
int exec_load_mode_parse(const char *s, exec_load_mode *out);
const char *exec_load_mode_name(exec_load_mode m);

typedef struct exec_load_stats {
    uint64_t lines;        /* lines read, including blank ones */
    uint64_t nodes, edges; /* rows parsed */
    size_t node_types, edge_types;
} exec_load_stats;

/* Progress callback: called every few thousand lines with the bytes consumed so far. */
typedef void (*exec_load_progress_fn)(void *arg, uint64_t bytes_done, uint64_t bytes_total,
                                      uint64_t lines);

/* Parse `len` bytes of JSONL (`file` names it in errors) into *out (changes of mode INSERT,
 * UPSERT or REPLACE per `mode`). On error *out is empty and the thread error is
 * OG_E_BAD_REQUEST at file:line naming the reason. */
int exec_load_parse(graph_change_set *out, const lang_catalog *cat, const char *data, size_t len,
                    const char *file, exec_load_mode mode, exec_load_stats *stats,
                    exec_load_progress_fn progress, void *progress_arg);

/* Inputs of at least `bytes` (default 8 MiB; 0 restores it) are parsed by two threads, one per
 * half; the result, errors included, is the same as one thread's. Tests lower it to cover the
 * split on small inputs. Testing builds only (OG_TESTING), as exec_load_set_chunk_bytes. */
void exec_load_set_split_min(size_t bytes);

/* The load request (exec_load) reads an append or an overwrite on main in chunks of about this
 * many bytes (cut after a newline), staging each before reading the next, so memory follows the
 * chunk, not the file (docs/cli.md "load"). 0 restores the default: the environment variable
 * OMNIGRAPH_LOAD_CHUNK_BYTES when set to a positive number, else 16 MiB. Tests lower it to
 * cover several chunks on small inputs; the setter exists only in a testing build. */
void exec_load_set_chunk_bytes(size_t bytes);

#endif
