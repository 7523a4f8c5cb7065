/* The three requests the public API makes of an open graph, one entry each: a read query
 * (exec_query, on the graph handle), a JSONL load (exec_load) and a .gq mutation (exec_mutate),
 * both on the graph's writer, which references its handle. src/api checks the caller's
 * options, calls one entry and fills its public result; what lies between (checking a .gq
 * source against the accepted schema, choosing the snapshot, parsing the load) is here, and
 * every write is one write_run of the coordinator (write_changes, write_mutation). Each entry
 * is defined beside its executor (query.c, load.c, mutate.c), so that a program links the
 * executors of the requests it makes and no others. */
#ifndef OG_EXEC_REQUEST_H
#define OG_EXEC_REQUEST_H

#include "exec/load.h"
#include "exec/mutate.h"
#include "exec/query.h"
#include "graph/graph_handle.h"
#include "write/write.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- .gq sources (query and mutate) -------------------------------------------------------- */

/* A .gq source and which of its queries to run with what params. */
typedef struct exec_gq_request {
    const char *source;      /* required */
    size_t len;              /* 0: strlen(source) */
    const char *file;        /* names the source in errors (NULL or "": "<query>") */
    const char *name;        /* the query to run (NULL or "": the source's only one) */
    const char *params_json; /* a JSON object of its params (NULL or "": none) */
    int64_t now_ms;          /* nonzero: now() of the run (default: the wall clock) */
} exec_gq_request;

/* A .gq source checked against a catalog, with one query chosen and its params. */
typedef struct exec_prepared {
    lang_query_set *qs;
    const lang_ir_query *q;
    exec_params *params;
} exec_prepared;

/* Build the query set of req against cat, choose the query, require a mutation or a read
 * (`mutation`), and check its params. On failure p is empty and the thread error says why (a
 * .gq error is located at its file:line:column). Shared by exec_query and exec_mutate
 * (request.c). */
int exec_prepare(exec_prepared *p, const lang_catalog *cat, const exec_gq_request *req,
                 bool mutation);
/* The same for a source run on graph h, cat one of h's catalogs: when the chosen query has
 * errors, unknown type and property names are worded with what became of them in the graph's
 * other schema versions (graph_handle_history, lang_query_set_build_ex). */
int exec_prepare_in(exec_prepared *p, graph_handle *h, const lang_catalog *cat,
                    const exec_gq_request *req, bool mutation);
void exec_prepared_clear(exec_prepared *p);

/* ---- Query (query.c) ----------------------------------------------------------------------- */

/* What a read returned, and the snapshot it read. */
typedef struct exec_read {
    exec_result *rows;
    char *query_name;                 /* the query run ("" when it has no name) */
    char commit_id[GRAPH_ID_LEN + 1]; /* the head commit of the snapshot read */
    uint64_t manifest_version;        /* the manifest version of that snapshot */
} exec_read;
void exec_read_clear(exec_read *r);

/* Run the read query req names against graph branch `branch` of h (NULL or "main": main) at
 * `at` (NULL or "": the branch's head, for main from the handle's cached head; otherwise a
 * commit id, an id prefix or a manifest version of that branch), through cache (NULL: a
 * private one). OG_E_NOT_FOUND names an unknown branch. The query is checked against the
 * schema the snapshot was written under (graph_handle_snapshot_catalog): a commit made before
 * a schema apply reads under its own schema, its tables as it registered them. On failure
 * *out is empty. */
int exec_query(exec_read *out, graph_handle *h, const exec_gq_request *req, const char *branch,
               const char *at, exec_cache *cache);

/* ---- Load (load.c) ------------------------------------------------------------------------- */

/* Phases of a load, for its progress callback (the public og_load_phase values). */
typedef enum exec_load_phase {
    EXEC_LOAD_PHASE_PARSE = 1, /* reading and checking lines: bytes_done of bytes_total */
    EXEC_LOAD_PHASE_WRITE = 2, /* every line parsed; the graph commit is being made */
} exec_load_phase;
typedef void (*exec_load_phase_fn)(void *arg, int phase, uint64_t bytes_done, uint64_t bytes_total,
                                   uint64_t lines);

typedef struct exec_load_request {
    const char *data; /* JSONL (NULL only with len 0) */
    size_t len;
    const char *file; /* names the data in errors (NULL or "": "<data>") */
    exec_load_mode mode;
    exec_load_phase_fn progress; /* NULL: none; every few thousand lines, then once to write */
    void *progress_arg;
} exec_load_request;

typedef struct exec_load_result {
    write_result write;    /* the commit (write.committed false: nothing to commit) */
    exec_load_stats stats; /* what was parsed */
} exec_load_result;

/* Parse req against the graph's schema and write it as one graph commit of the load adapter
 * through w: an append or an overwrite on main as a change stream read in chunks
 * (write_changes_stream; exec_load_set_chunk_bytes), anything else as one change set
 * (write_changes). opt: the write's options
 * (branch, on_table; NULL: defaults). */
int exec_load(exec_load_result *out, write_graph *w, const exec_load_request *req,
              const write_options *opt);

/* ---- Mutate (mutate.c) --------------------------------------------------------------------- */

/* Check the mutation req names against the graph's schema and run it as one graph commit of
 * the mutation adapter through w (exec_mutate_run). opt: branch, if_commit, on_table. On
 * success out->query_name is the mutation's name ("" when it has none; allocated before the
 * write, so a committed write never fails for want of it), freed by exec_mutate_result_clear. */
int exec_mutate(exec_mutate_result *out, write_graph *w, const exec_gq_request *req,
                const write_options *opt);

#endif
