/* omnigraph: an embedded, versioned, branchable property-graph database on Lance datasets.
 *
 * This is the only public header. Its rules (docs/conventions.md, "The public API"):
 *  - Returns. Every fallible call returns int: OG_OK (0) on success, a negative og_code on
 *    failure, after which og_error_last() describes it for the calling thread. Out-parameters
 *    come first; on failure an out-pointer is set to NULL (the language checks alone also
 *    return their report with OG_E_BAD_REQUEST and OG_E_UNSUPPORTED, as they say).
 *  - Iteration. A cursor's _next() returns OG_OK when it moved to an item, OG_ITER_OVER (the
 *    one positive code, not a failure) once past the last, a negative og_code on failure:
 *        while ((rc = og_result_next(r)) == OG_OK) { ... }
 *        if (rc != OG_ITER_OVER) { ... og_error_last() ... }
 *    A list is read by index: X_count(), and an accessor that returns the i-th item or NULL.
 *  - Options. Structs whose first field is `version`; initialise them with their ..._INIT
 *    macro or og_..._options_init(). A call refuses a version it does not know
 *    (OG_E_BAD_REQUEST) and reads every older one. Where a call says so, NULL means defaults.
 *  - Results. The library allocates what it returns; the caller never sizes a struct the
 *    library fills (og_value and the Arrow structs are the exceptions), so result structs and
 *    the items of lists may gain fields at their end.
 *  - Releasing. What og_X_open() opens, og_X_close() closes (og_graph, og_table): handles that
 *    hold files, threads and caches. Everything else the library allocates is released with
 *    the _free() its call names. Both accept NULL.
 *  - Constants that enumerate are enums. Structs and parameters carry them as int, so the ABI
 *    does not depend on the size a compiler gives an enum; new values are appended.
 *  - Strings are UTF-8 and NUL-terminated unless a length comes with them.
 *  - Names. og_graph_X() takes an open og_graph (og_graph_open makes one from a root
 *    directory); og_root_X() takes a graph's root directory and opens it itself, for what must
 *    work where a handle cannot be had (og_root_init before there is a graph; verify, repair
 *    and recovery of a graph that does not open); og_table_X() takes an og_table;
 *    og_store_selfcheck a plain directory. The functions of a returned object are named after
 *    its type (og_result_next, og_merge_result_conflict).
 *  - Branches. A call that reads or writes a graph branch names it in its options' `branch`
 *    member (NULL or "main": main); a merge names its two in `source` and `into`, and the
 *    branch a new one forks from is `from` (og_branch_options, og_load_options);
 *    og_graph_create_branch and og_graph_delete_branch take the name they create or delete.
 *  - Source text (.pg, .gq) is passed in the options (source, source_len, source_file), as is
 *    every input but a call's subject (a handle, a root, an output, a name or a reference).
 *
 * Caveats (LMDB's word for what an embedder must know; each holds for every call):
 *  - Threads. An og_graph may be used by several threads at once: reads run in parallel and
 *    writes serialize inside it; several handles on one root, in one process or several,
 *    also serialize their writes (ordered gates, advisory locks, conditional commits). An
 *    og_table, an og_lang_report and every result struct or list are immutable once returned
 *    and may be read by several threads. An og_result is not: its row cursor and the scratch
 *    its value and JSON accessors write into are per result, so one thread at a time uses it
 *    (it may move between threads). The error state (og_error_last) is per thread. The log
 *    sink (og_set_log) is process-wide and may be called on any thread, including a handle's
 *    maintenance thread, several at once.
 *  - fork(). An og_graph owns a maintenance thread, open descriptors and advisory locks
 *    (flock, which a child shares), and the process's writer gates are in-process mutexes. In
 *    a child of fork(), neither use nor close a handle the parent opened (closing would wait
 *    for a thread the child does not have and could release locks the parent relies on), and
 *    do not open a graph the parent had open (a gate copied while held stays held). Fork
 *    before opening graphs, or exec in the child (the library's descriptors are close-on-
 *    exec).
 *  - Ownership. A pointer an accessor returns (a string, an og_table_change, an
 *    og_commit_info, ...) belongs to the object it came from and lives as long as it, except
 *    where a call says it lives in that object's scratch (valid until the next call on it).
 *    og_error_last()'s strings live until the thread's next failing call or og_error_clear().
 *    Options structs and the strings they point to are read during the call only.
 *  - What a result pins. An og_result holds its rows in memory (Arrow batches it shares with
 *    the handle's read cache by reference count): it stays valid after og_graph_close and
 *    does not keep the graph, its files or its versions, so og_graph_cleanup may remove the
 *    version it read. Write results, snapshot infos and commit lists are plain copies. An
 *    og_table keeps its directory's store and its version's manifest; its scans read data
 *    files when they run, and fail if a cleanup removed them meanwhile. Streams made from an
 *    og_table or an og_result own what they read and outlive both.
 *  - Durability. A write that returned OG_OK is durable: data, fsync, then an atomic publish.
 *    Keep graph roots on a local filesystem that og_store_selfcheck passes.
 */
#ifndef OMNIGRAPH_H
#define OMNIGRAPH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && !defined(OG_STATIC_ONLY)
#define OG_EXTERN __attribute__((visibility("default")))
#else
#define OG_EXTERN
#endif

/* ---- Version ------------------------------------------------------------------------------ */

#define OG_VERSION_MAJOR 0
#define OG_VERSION_MINOR 2
#define OG_VERSION_PATCH 0
#define OG_VERSION_STRING "0.2.0"
#define OG_VERSION_NUMBER (OG_VERSION_MAJOR * 10000 + OG_VERSION_MINOR * 100 + OG_VERSION_PATCH)

/* The library's version string ("MAJOR.MINOR.PATCH"); static storage, never NULL. */
OG_EXTERN const char *og_version(void);
/* The library's version as OG_VERSION_NUMBER computes it, to compare against the header. */
OG_EXTERN int og_version_number(void);

/* ---- Errors ------------------------------------------------------------------------------- */

/* Result codes. Stable: values never change meaning; new codes are only appended. Failures
 * are negative; OG_ITER_OVER is the one positive code and is not a failure. */
typedef enum og_code {
    OG_OK = 0,
    OG_ITER_OVER = 1,              /* a cursor is past its last item: not a failure */
    OG_E_STORAGE = -1,             /* the object store failed; see og_error.storage_kind */
    OG_E_NOT_FOUND = -2,           /* a named object, table, branch or version does not exist */
    OG_E_EXISTS = -3,              /* create-if-absent found the name taken */
    OG_E_BAD_REQUEST = -4,         /* invalid input; og_error.file/line/column locate it */
    OG_E_READ_SET_CONFLICT = -5,   /* a read-set member moved; member, expected, actual say how */
    OG_E_KEY_CONFLICT = -6,        /* a strict insert met an existing key; og_error.key names it */
    OG_E_MERGE_CONFLICTS = -7,     /* a branch merge found conflicting changes */
    OG_E_RECOVERY_REQUIRED = -8,   /* an interrupted write must be recovered; see operation_id */
    OG_E_PRECONDITION_FAILED = -9, /* a caller-supplied precondition (e.g. --if-commit) failed */
    OG_E_RESOURCE_LIMIT = -10,     /* a configured limit (size, retries, memory) was reached */
    OG_E_CORRUPT = -11,            /* stored bytes are damaged or not what they claim to be */
    OG_E_UNSUPPORTED = -12, /* valid but not supported by this build (e.g. a format version) */
    OG_E_CONFLICT = -13,    /* a concurrent commit took the version this one needed */
    OG_E_NOMEM = -14,       /* memory allocation failed */
    OG_E_INTERNAL = -15,    /* an internal invariant failed: a bug, please report it */
} og_code;

/* The kind of an OG_E_STORAGE failure. */
typedef enum og_storage_kind {
    OG_STORAGE_NONE = 0,
    OG_STORAGE_IO = 1,          /* EIO and other device errors */
    OG_STORAGE_NO_SPACE = 2,    /* ENOSPC / EDQUOT */
    OG_STORAGE_PERMISSION = 3,  /* EACCES / EPERM / EROFS */
    OG_STORAGE_CRASHED = 4,     /* the fault store simulated a crash: nothing further is done */
    OG_STORAGE_UNSUPPORTED = 5, /* the filesystem lacks a required feature (e.g. hard links) */
} og_storage_kind;

/* What went wrong on this thread most recently. Fields that do not apply are NULL/0.
 * All strings are owned by the library and stay valid until the thread's next failing call
 * or og_error_clear(). */
typedef struct og_error {
    int code;                 /* an og_code */
    const char *message;      /* human-readable, never NULL ("" when code is OG_OK) */
    int storage_kind;         /* an og_storage_kind, for OG_E_STORAGE */
    int sys_errno;            /* the errno behind a storage failure, or 0 */
    const char *object;       /* the object key, file or table involved */
    const char *operation_id; /* the write operation (ULID) involved */
    const char *member;       /* the read-set member that moved */
    const char *expected;     /* ... what the write expected of it */
    const char *actual;       /* ... and what it found */
    const char *key;          /* the conflicting key value */
    const char *file;         /* source location of a bad request: file name, */
    int line;                 /* 1-based line (0 if unknown) */
    int column;               /* 1-based column (0 if unknown) */
} og_error;

/* The calling thread's last error. Never NULL; code is OG_OK when nothing failed. */
OG_EXTERN const og_error *og_error_last(void);
/* Reset the calling thread's last error to OG_OK. */
OG_EXTERN void og_error_clear(void);
/* The stable snake_case name of a code ("read_set_conflict", ...); "unknown" otherwise. */
OG_EXTERN const char *og_code_name(int code);
/* The stable snake_case name of a storage kind ("io", "no_space", ...). */
OG_EXTERN const char *og_storage_kind_name(int kind);

/* ---- Messages ------------------------------------------------------------------------------ */
/* The library never writes to stdout or stderr on its own. Its warnings (work skipped that a
 * later call redoes, a file it could not remove) and notices (recoveries it performed) go to
 * the sink set here, process-wide, or nowhere when none is set; errors are always returned
 * and described by og_error_last(). The sink runs on the thread that produced the message,
 * possibly several at once, and must not call back into the library. */
typedef enum og_log_level {
    OG_LOG_ERROR = 0,
    OG_LOG_WARN = 1,
    OG_LOG_INFO = 2,
    OG_LOG_DEBUG = 3,
} og_log_level;
/* level is an og_log_level. */
typedef void (*og_log_fn)(void *arg, int level, const char *message);
/* Send messages of level <= max_level to fn (NULL: drop every message, the default). */
OG_EXTERN void og_set_log(og_log_fn fn, void *arg, int max_level);
/* "error", "warn", "info", "debug" ("unknown" otherwise). */
OG_EXTERN const char *og_log_level_name(int level);

/* ---- Store self-check --------------------------------------------------------------------- */

/* Options for og_store_selfcheck(). Initialise with OG_SELFCHECK_OPTIONS_INIT. */
#define OG_SELFCHECK_OPTIONS_VERSION 1
typedef struct og_selfcheck_options {
    int version;     /* OG_SELFCHECK_OPTIONS_VERSION */
    unsigned rounds; /* number of put / put_if_absent / get rounds; 0 means 16 */
} og_selfcheck_options;
#define OG_SELFCHECK_OPTIONS_INIT                                                                  \
    {                                                                                              \
        OG_SELFCHECK_OPTIONS_VERSION, 0                                                            \
    }
/* The same defaults for `version` (OG_SELFCHECK_OPTIONS_VERSION), as a function; every
 * og_..._options_init() below works alike: OG_E_BAD_REQUEST for NULL or an unknown version. */
OG_EXTERN int og_selfcheck_options_init(og_selfcheck_options *opts, int version);

/* What og_store_selfcheck measured. Allocated by the library: og_selfcheck_result_free. */
typedef struct og_selfcheck_result {
    unsigned rounds;             /* rounds completed */
    uint64_t store_ops;          /* object-store operations performed */
    uint64_t fsyncs;             /* fsync/fdatasync calls performed */
    double put_us_p50;           /* median latency of a durable put, microseconds */
    double put_if_absent_us_p50; /* median latency of a durable put_if_absent */
} og_selfcheck_result;

/* Exercise a durable local object store rooted at `dir` (created if missing): atomic puts,
 * create-if-absent races against itself, reads back and listing, then removes what it wrote
 * (opts NULL: the defaults). Fails with OG_E_STORAGE when the filesystem cannot give the
 * guarantees the engine needs (for example when it has no hard links). On success the caller
 * frees *out with og_selfcheck_result_free; on failure *out is NULL. */
OG_EXTERN int og_store_selfcheck(og_selfcheck_result **out, const char *dir,
                                 const og_selfcheck_options *opts);
OG_EXTERN void og_selfcheck_result_free(og_selfcheck_result *r);

/* ---- Schema and query language ---------------------------------------------------------- */
/* Check .pg schemas and .gq queries without a graph: diagnostics, lint and the schema-diff
 * plan. Codes and rules: docs/languages.md. */

typedef enum og_diag_severity {
    OG_DIAG_ERROR = 0,
    OG_DIAG_WARNING = 1,
} og_diag_severity;

/* One diagnostic. Strings are owned by the report. */
typedef struct og_diagnostic {
    const char *code; /* stable: "S007", "Q000", "T5", "L201", ... */
    int severity;     /* an og_diag_severity */
    const char *message;
    const char *file; /* the file name the caller passed */
    int line;         /* 1-based */
    int column;       /* 1-based, in bytes */
} og_diagnostic;

/* The outcome of a check, lint or plan: diagnostics plus a text and a JSON rendering. */
typedef struct og_lang_report og_lang_report;

/* Options for og_schema_check(). Initialise with OG_SCHEMA_CHECK_OPTIONS_INIT and set source. */
#define OG_SCHEMA_CHECK_OPTIONS_VERSION 1
typedef struct og_schema_check_options {
    int version;             /* OG_SCHEMA_CHECK_OPTIONS_VERSION */
    const char *source;      /* the .pg text (NULL: empty) */
    size_t source_len;       /* bytes of source (0: strlen(source)) */
    const char *source_file; /* names it in diagnostics (NULL: "<schema>") */
} og_schema_check_options;
#define OG_SCHEMA_CHECK_OPTIONS_INIT                                                               \
    {                                                                                              \
        OG_SCHEMA_CHECK_OPTIONS_VERSION, NULL, 0, NULL                                             \
    }
OG_EXTERN int og_schema_check_options_init(og_schema_check_options *opts, int version);

/* Check the .pg source opt gives. Returns 0 when valid, OG_E_BAD_REQUEST when it has errors
 * (og_error_last() locates the first), or another negative code (then *out is NULL; so for a
 * NULL opt, a NULL source with a length, or an unknown options version). On 0 and
 * OG_E_BAD_REQUEST, *out is a report the caller frees with og_lang_report_free(). */
OG_EXTERN int og_schema_check(og_lang_report **out, const og_schema_check_options *opt);

/* Options for og_query_lint(). Initialise with OG_QUERY_LINT_OPTIONS_INIT and set both
 * sources. */
#define OG_QUERY_LINT_OPTIONS_VERSION 1
typedef struct og_query_lint_options {
    int version;               /* OG_QUERY_LINT_OPTIONS_VERSION */
    const char *schema_source; /* the .pg text (NULL: empty) */
    size_t schema_source_len;  /* bytes of schema_source (0: strlen(schema_source)) */
    const char *schema_file;   /* names it in diagnostics (NULL: "<schema>") */
    const char *source;        /* the .gq text (NULL: empty) */
    size_t source_len;         /* bytes of source (0: strlen(source)) */
    const char *source_file;   /* names it in diagnostics (NULL: "<query>") */
} og_query_lint_options;
#define OG_QUERY_LINT_OPTIONS_INIT                                                                 \
    {                                                                                              \
        OG_QUERY_LINT_OPTIONS_VERSION, NULL, 0, NULL, NULL, 0, NULL                                \
    }
OG_EXTERN int og_query_lint_options_init(og_query_lint_options *opts, int version);

/* Type-check and lint the .gq source against the .pg schema (og_graph_lint does it against
 * an open graph's). Same return convention as og_schema_check; warnings alone do not fail. The
 * JSON gives each query's status, result columns with their kinds, and the types it reads
 * and writes. */
OG_EXTERN int og_query_lint(og_lang_report **out, const og_query_lint_options *opt);

/* Options for og_schema_plan(). Initialise with OG_SCHEMA_PLAN_OPTIONS_INIT, then set both
 * sources. */
#define OG_SCHEMA_PLAN_OPTIONS_VERSION 1
typedef struct og_schema_plan_options {
    int version;             /* OG_SCHEMA_PLAN_OPTIONS_VERSION */
    const char *from_source; /* the accepted schema's .pg text (required) */
    size_t from_source_len;  /* bytes of from_source (0: strlen(from_source)) */
    const char *from_file;   /* names it in diagnostics (NULL: "<from>") */
    const char *to_source;   /* the desired schema's .pg text (required) */
    size_t to_source_len;    /* bytes of to_source (0: strlen(to_source)) */
    const char *to_file;     /* NULL: "<to>" */
    int allow_data_loss;     /* nonzero: drops delete data; zero: drops are soft */
} og_schema_plan_options;
#define OG_SCHEMA_PLAN_OPTIONS_INIT                                                                \
    {                                                                                              \
        OG_SCHEMA_PLAN_OPTIONS_VERSION, NULL, 0, NULL, NULL, 0, NULL, 0                            \
    }
OG_EXTERN int og_schema_plan_options_init(og_schema_plan_options *opts, int version);

/* Plan the steps from the accepted schema `from` to the desired schema `to` (planning only).
 * Returns 0 when every step is supported, OG_E_UNSUPPORTED when some change is not (the
 * report lists it as unsupported_change with a code and reason), OG_E_BAD_REQUEST when either
 * schema has errors; in those three cases *out is a report to free. Other failures (no
 * options, a missing source, an unknown options version) leave *out NULL. */
OG_EXTERN int og_schema_plan(og_lang_report **out, const og_schema_plan_options *opt);

OG_EXTERN size_t og_lang_report_diagnostic_count(const og_lang_report *r);
/* The i-th diagnostic (sorted by file, line, column), or NULL when out of range. */
OG_EXTERN const og_diagnostic *og_lang_report_diagnostic(const og_lang_report *r, size_t i);
OG_EXTERN size_t og_lang_report_error_count(const og_lang_report *r);
/* A summary for people (never NULL; diagnostics are not included). */
OG_EXTERN const char *og_lang_report_text(const og_lang_report *r);
/* The whole report as one JSON object (never NULL). */
OG_EXTERN const char *og_lang_report_json(const og_lang_report *r);
OG_EXTERN void og_lang_report_free(og_lang_report *r);

/* ---- Lance tables --------------------------------------------------------------------------- */
/* Read-only access to one Lance dataset (a directory holding _versions/, data/, ...), whether
 * this library or lancedb/pylance wrote it: its schema, history, storage statistics and rows.
 * Rows come out as an Arrow C stream, or as the canonical JSON lines (tests/interop/README.md,
 * "The canonical dump"). Data storage version 2.0 is read; other versions open for metadata
 * (schema, versions, stats) but a scan fails with OG_E_UNSUPPORTED ("unsupported data storage
 * version 2.1"). */

/* The Arrow C Data Interface and C Stream Interface, exactly as the Arrow specification defines
 * them (the guards let other Arrow headers coexist). */
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

struct ArrowSchema {
    /* Array type description */
    const char *format;
    const char *name;
    const char *metadata;
    int64_t flags;
    int64_t n_children;
    struct ArrowSchema **children;
    struct ArrowSchema *dictionary;

    /* Release callback */
    void (*release)(struct ArrowSchema *);
    /* Opaque producer-specific data */
    void *private_data;
};

struct ArrowArray {
    /* Array data description */
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void **buffers;
    struct ArrowArray **children;
    struct ArrowArray *dictionary;

    /* Release callback */
    void (*release)(struct ArrowArray *);
    /* Opaque producer-specific data */
    void *private_data;
};

#endif /* ARROW_C_DATA_INTERFACE */

#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE

struct ArrowArrayStream {
    /* Callbacks providing stream functionality */
    int (*get_schema)(struct ArrowArrayStream *, struct ArrowSchema *out);
    int (*get_next)(struct ArrowArrayStream *, struct ArrowArray *out);
    const char *(*get_last_error)(struct ArrowArrayStream *);

    /* Release callback */
    void (*release)(struct ArrowArrayStream *);
    /* Opaque producer-specific data */
    void *private_data;
};

#endif /* ARROW_C_STREAM_INTERFACE */

/* A snapshot of one version of a table. Immutable; may be read by several threads at once.
 * Streams made from it keep it alive, so it may be closed while they are still in use. */
typedef struct og_table og_table;

/* Open the table in directory `dir` at `version` (0: the latest). Errors: OG_E_NOT_FOUND when
 * dir is not a directory, holds no versions, or lacks that version; OG_E_CORRUPT for a damaged
 * manifest; OG_E_UNSUPPORTED for manifest features this build cannot interpret, or a dir
 * written as a URI ("s3://..."); OG_E_STORAGE.
 * On success the caller owns *out (og_table_close); on failure *out is NULL. */
OG_EXTERN int og_table_open(og_table **out, const char *dir, uint64_t version);
OG_EXTERN void og_table_close(og_table *t);
/* The version this snapshot is. */
OG_EXTERN uint64_t og_table_version(const og_table *t);

/* The table's columns as an Arrow schema: a struct ("+s") whose children are the top-level
 * fields. The caller owns *out and calls out->release(out). */
OG_EXTERN int og_table_schema(struct ArrowSchema *out, const og_table *t);
/* The forms og_table_write_schema writes. */
typedef enum og_output_format {
    OG_OUTPUT_TEXT = 0, /* for people */
    OG_OUTPUT_JSON = 1, /* one JSON document */
} og_output_format;

/* Write the schema to f in `format` (an og_output_format): OG_OUTPUT_JSON gives one line
 *   {"fields":[{"name":..,"type":..,"nullable":..,"children":[..]},..]}
 * with Lance logical type strings ("int64", "string", "timestamp:us:UTC",
 * "fixed_size_list:float:4", "list", "struct"; children for list and struct only);
 * OG_OUTPUT_TEXT an indented text listing. Another value is OG_E_BAD_REQUEST. */
OG_EXTERN int og_table_write_schema(FILE *f, const og_table *t, int format);

/* Storage facts of the snapshot. Allocated by the library: og_table_info_free. */
typedef struct og_table_info {
    uint64_t version;
    uint64_t columns; /* top-level fields */
    uint64_t fragments;
    uint64_t data_files;
    uint64_t data_bytes;    /* sum of the data file sizes the manifest records */
    uint64_t physical_rows; /* rows stored, deleted ones included */
    uint64_t rows;          /* rows visible (physical minus deleted) */
    uint64_t deleted_rows;
    uint64_t deletion_files;        /* = deletion_files_arrow + deletion_files_bitmap */
    uint64_t deletion_files_arrow;  /* .arrow (Arrow IPC) deletion files */
    uint64_t deletion_files_bitmap; /* .bin (roaring bitmap) deletion files */
    char data_storage_version[16];  /* "2.0", "2.1", ..., or "" for a legacy table */
    char naming[4];                 /* manifest naming: "v1" ({v}.manifest) or "v2" */
    uint64_t reader_flags;          /* feature flags of the manifest */
    uint64_t writer_flags;
    int stable_row_ids;   /* 1 when rows carry stable row ids (flag 2) */
    int64_t timestamp_ns; /* commit time, nanoseconds since the epoch (UTC) */
} og_table_info;

/* The storage facts of t; the caller frees *out with og_table_info_free (NULL on failure).
 * Counting deleted rows may read deletion files that do not record their count. */
OG_EXTERN int og_table_stats(og_table_info **out, const og_table *t);
OG_EXTERN void og_table_info_free(og_table_info *info);

/* One entry of a table's history. Owned by its list. */
typedef struct og_table_version_info {
    uint64_t version;
    int64_t timestamp_ns; /* commit time, nanoseconds since the epoch (UTC) */
    uint64_t fragments;
    uint64_t physical_rows;
} og_table_version_info;

/* A table's history: og_table_version_list_get gives the i-th entry (NULL out of range). */
typedef struct og_table_version_list og_table_version_list;
OG_EXTERN size_t og_table_version_list_count(const og_table_version_list *l);
OG_EXTERN const og_table_version_info *og_table_version_list_get(const og_table_version_list *l,
                                                                 size_t i);
OG_EXTERN void og_table_version_list_free(og_table_version_list *l);

/* Every version of the table t belongs to (not just those up to t's version), ascending. The
 * caller frees *out with og_table_version_list_free (NULL on failure). */
OG_EXTERN int og_table_versions(og_table_version_list **out, const og_table *t);

/* Which rows and columns a scan or a dump returns. Initialise with OG_SCAN_OPTIONS_INIT. */
#define OG_SCAN_OPTIONS_VERSION 1
typedef struct og_scan_options {
    int version;                /* OG_SCAN_OPTIONS_VERSION */
    const char *const *columns; /* top-level columns in output order (NULL: all, schema order) */
    size_t n_columns;
    int64_t limit; /* at most this many rows (< 0: all) */
} og_scan_options;
#define OG_SCAN_OPTIONS_INIT                                                                       \
    {                                                                                              \
        OG_SCAN_OPTIONS_VERSION, NULL, 0, -1                                                       \
    }
OG_EXTERN int og_scan_options_init(og_scan_options *opts, int version);

/* Stream the rows (deleted rows left out) as Arrow record batches: each array the stream gives
 * is a struct array of the selected columns. The caller owns *out and calls out->release(out).
 * Errors here: OG_E_BAD_REQUEST for an unknown or repeated column, OG_E_UNSUPPORTED for a data
 * storage version this build cannot read. get_next returns an errno value (EIO, ENOMEM) on a
 * failure and get_last_error describes it; og_error_last() has the typed error too. */
OG_EXTERN int og_table_scan(struct ArrowArrayStream *out, const og_table *t,
                            const og_scan_options *opts);

/* Write the rows to f as the canonical JSON lines (one object per row, keys in output order),
 * sorted as the canonical dump is: by the "id" column as an exact integer when it is selected
 * and an integer (null first), then by the bytes of the line; otherwise by the bytes of the
 * line. The limit applies before sorting (the first rows of the scan). Sorting holds every
 * line in memory. *rows (may be NULL) receives the number of lines. A string that is not valid
 * UTF-8 fails with OG_E_CORRUPT; a write error on f with OG_E_STORAGE. Output already written
 * stays written on failure. */
OG_EXTERN int og_table_write_json(uint64_t *rows, FILE *f, const og_table *t,
                                  const og_scan_options *opts);
/* The same rows, in scan order, as an aligned text table for people: a header with the
 * column names, then one line per row whose cells are the canonical JSON values, cut to 40
 * bytes ("..." marks a cut). */
OG_EXTERN int og_table_write_text(uint64_t *rows, FILE *f, const og_table *t,
                                  const og_scan_options *opts);

/* ======================================================================================= */
/* ---- Graphs --------------------------------------------------------------------------- */
/* A graph lives in a root directory: its graph manifest, one Lance table per node and edge
 * type, the accepted schema and the recovery files. Every write is one graph commit made
 * through the write coordinator (RFC-022); reads see one snapshot of the graph manifest.
 * Commit ids are ULIDs (OG_ID_LEN characters). CLI: docs/cli.md. */

#define OG_ID_LEN 26        /* characters of a commit or operation id (a ULID) */
#define OG_SCHEMA_ID_LEN 32 /* hex characters of a schema identity */

/* An open graph. May be used by several threads at once; writes serialize inside. */
typedef struct og_graph og_graph;

/* Options for og_root_init(). Initialise with OG_INIT_OPTIONS_INIT and set schema_source. */
#define OG_INIT_OPTIONS_VERSION 1
typedef struct og_init_options {
    int version;               /* OG_INIT_OPTIONS_VERSION */
    const char *schema_source; /* the .pg text (required) */
    size_t schema_source_len;  /* bytes of schema_source (0: strlen(schema_source)) */
    const char *schema_file;   /* names it in diagnostics (NULL: "schema.pg") */
} og_init_options;
#define OG_INIT_OPTIONS_INIT                                                                       \
    {                                                                                              \
        OG_INIT_OPTIONS_VERSION, NULL, 0, NULL                                                     \
    }
OG_EXTERN int og_init_options_init(og_init_options *opts, int version);

/* What og_root_init made. Allocated by the library: og_init_result_free. */
typedef struct og_init_result {
    char commit_id[OG_ID_LEN + 1]; /* the genesis commit */
    int took_over;                 /* 1: an interrupted earlier init was found and replaced */
    size_t node_types, edge_types; /* tables created */
} og_init_result;

/* Create a graph in root_dir (created when missing) from the schema opt gives. Errors:
 * OG_E_BAD_REQUEST for an invalid schema (og_error_last() locates it; nothing is created,
 * not even root_dir), OG_E_EXISTS when a graph is already there ("already exists"),
 * OG_E_CONFLICT while another init of the same root runs, OG_E_UNSUPPORTED for a root written as a
 * URI ("s3://...": no such backend yet), OG_E_STORAGE. A crash leaves no graph or a complete one; a
 * later init takes an interrupted one over (took_over). On success the caller frees *out with
 * og_init_result_free; on failure *out is NULL. */
OG_EXTERN int og_root_init(og_init_result **out, const char *root_dir, const og_init_options *opt);
OG_EXTERN void og_init_result_free(og_init_result *r);

/* Options for og_graph_open(). Initialise with OG_OPEN_OPTIONS_INIT. */
#define OG_OPEN_OPTIONS_VERSION 2
typedef struct og_open_options {
    int version;       /* OG_OPEN_OPTIONS_VERSION */
    int read_only;     /* nonzero: write nothing, ever (no recovery; writes fail) */
    const char *actor; /* recorded in the lineage of this handle's commits (NULL: none) */
    /* Version 2. The longest a write waits for the gates another writer holds (a writer
     * stalled inside them) before it fails with OG_E_RESOURCE_LIMIT naming the holder: its
     * operation id (og_error.operation_id) and pid when its recovery intent tells them.
     * 0: the environment variable OG_GATE_TIMEOUT_MS when set (a positive decimal), else
     * 60000. */
    unsigned gate_timeout_ms;
} og_open_options;
#define OG_OPEN_OPTIONS_INIT                                                                       \
    {                                                                                              \
        OG_OPEN_OPTIONS_VERSION, 0, NULL, 0                                                        \
    }
OG_EXTERN int og_open_options_init(og_open_options *opts, int version);

/* Open the graph in root_dir (opt NULL: read-write, no actor). A read-write open first
 * resolves interrupted writes whose owner is gone, and fails with OG_E_RECOVERY_REQUIRED
 * (og_error.operation_id) when one cannot be resolved now. OG_E_NOT_FOUND when there is no
 * graph; OG_E_UNSUPPORTED for a graph format this build does not serve, or a root written as
 * a URI ("s3://bucket/g", any "scheme://": no such backend yet). The caller owns *out
 * (og_graph_close); on failure *out is NULL. */
OG_EXTERN int og_graph_open(og_graph **out, const char *root_dir, const og_open_options *opt);
OG_EXTERN void og_graph_close(og_graph *g);

/* Load modes (the reference system's `load --mode`). */
typedef enum og_load_mode {
    OG_LOAD_APPEND = 1,    /* strict insert: an existing id fails with OG_E_KEY_CONFLICT */
    OG_LOAD_MERGE = 2,     /* upsert by id */
    OG_LOAD_OVERWRITE = 3, /* replace the whole content of each type present in the data */
} og_load_mode;
/* "append" / "merge" / "overwrite" (NULL for another value), and back (0 when unknown). */
OG_EXTERN const char *og_load_mode_name(int mode);
OG_EXTERN int og_load_mode_parse(const char *name);

typedef enum og_load_phase {
    OG_LOAD_PHASE_PARSE = 1, /* reading and checking lines: bytes_done of bytes_total */
    OG_LOAD_PHASE_WRITE = 2, /* every line parsed; the graph commit is being made */
} og_load_phase;
/* Progress of a load (phase: an og_load_phase), called on the loading thread every few
 * thousand lines and once when the write phase starts. */
typedef void (*og_load_progress_fn)(void *arg, int phase, uint64_t bytes_done, uint64_t bytes_total,
                                    uint64_t lines);

/* Options for og_graph_load(). Initialise with OG_LOAD_OPTIONS_INIT and set mode. */
#define OG_LOAD_OPTIONS_VERSION 2
typedef struct og_load_options {
    int version;                  /* OG_LOAD_OPTIONS_VERSION */
    int mode;                     /* an og_load_mode; required (0 fails with OG_E_BAD_REQUEST) */
    const char *branch;           /* NULL or "main": main; else a graph branch, which must exist
                                   * (OG_E_NOT_FOUND; og_graph_create_branch makes one) unless
                                   * `from` is set */
    og_load_progress_fn progress; /* NULL: none */
    void *progress_arg;
    /* Version 2. NULL: none. With `branch` (not main): a missing branch is created from this
     * branch's head for the load, and kept only if the load succeeds: a refused load deletes it
     * again, unless another writer has used it meanwhile (then it stays, with a warning). */
    const char *from;
} og_load_options;
#define OG_LOAD_OPTIONS_INIT                                                                       \
    {                                                                                              \
        OG_LOAD_OPTIONS_VERSION, 0, NULL, NULL, NULL, NULL                                         \
    }
OG_EXTERN int og_load_options_init(og_load_options *opts, int version);

/* ---- Write results ---- */
/* What a graph write did: the commit it made, every table it changed, and counts that depend
 * on the kind of write. og_graph_load and og_graph_mutate return one (and so will the writes
 * to come). Immutable once returned; the caller frees it with og_write_result_free. */
typedef struct og_write_result og_write_result;

/* One table a write changed. Owned by its write result. */
typedef struct og_table_change {
    const char *alias;     /* "node:Person", "edge:Knows" */
    uint64_t from_version; /* Lance version before the write */
    uint64_t to_version;   /* ... and the version the commit pins */
    uint64_t row_count;    /* rows at to_version */
} og_table_change;

/* The counts og_write_result_count reports. A count that does not apply to the kind of write
 * is 0. New counts are appended. */
typedef enum og_write_count {
    OG_WRITE_LINES = 1,          /* load: lines read, blank ones included */
    OG_WRITE_NODES = 2,          /* load: node rows in the data */
    OG_WRITE_EDGES = 3,          /* load: edge rows in the data */
    OG_WRITE_NODE_TYPES = 4,     /* load: node types present in the data */
    OG_WRITE_EDGE_TYPES = 5,     /* load: edge types present in the data */
    OG_WRITE_NODES_INSERTED = 6, /* mutate */
    OG_WRITE_NODES_UPDATED = 7,  /* mutate */
    OG_WRITE_NODES_DELETED = 8,  /* mutate */
    OG_WRITE_EDGES_INSERTED = 9, /* mutate */
    OG_WRITE_EDGES_UPDATED = 10, /* mutate */
    OG_WRITE_EDGES_DELETED = 11, /* mutate; includes cascades */
    OG_WRITE_REPREPARES = 12,    /* restarts after a concurrent writer moved a read */
    OG_WRITE_NEW_BRANCH = 13,    /* load with `from`: 1 when it created the branch */
} og_write_count;

/* The commit the write made, "" when it had nothing to commit. */
OG_EXTERN const char *og_write_result_commit_id(const og_write_result *r);
/* The write's operation id (its recovery record names it), "" when nothing was committed. */
OG_EXTERN const char *og_write_result_operation_id(const og_write_result *r);
/* The graph-manifest version the commit produced (0: none). */
OG_EXTERN uint64_t og_write_result_manifest_version(const og_write_result *r);
/* The query a mutation ran ("" for other writes). */
OG_EXTERN const char *og_write_result_query_name(const og_write_result *r);
/* Count `what` (an og_write_count); 0 when it does not apply or is unknown. */
OG_EXTERN uint64_t og_write_result_count(const og_write_result *r, int what);
/* The tables the commit changed, every one of them: og_write_result_table gives the i-th, or
 * NULL out of range. */
OG_EXTERN size_t og_write_result_table_count(const og_write_result *r);
OG_EXTERN const og_table_change *og_write_result_table(const og_write_result *r, size_t i);
OG_EXTERN void og_write_result_free(og_write_result *r);

/* Load JSONL (`len` bytes; data_file_name names it in errors) into the graph as ONE graph
 * commit. Line shapes, value forms and validation: docs/cli.md "load". A bad line fails with
 * OG_E_BAD_REQUEST (or OG_E_KEY_CONFLICT) whose og_error.file/line locate it, and nothing is
 * written. OG_E_CONFLICT / OG_E_READ_SET_CONFLICT when concurrent writers kept winning;
 * OG_E_RECOVERY_REQUIRED when an interrupted write blocks this one; OG_E_BAD_REQUEST on a
 * read-only handle. On success *out is what the load did (its counts: OG_WRITE_LINES to
 * OG_WRITE_EDGE_TYPES, OG_WRITE_REPREPARES, OG_WRITE_NEW_BRANCH), to free with
 * og_write_result_free; on failure it is NULL, and a branch made for it (`from`) is gone. */
OG_EXTERN int og_graph_load(og_write_result **out, og_graph *g, const char *data_file_name,
                            const char *data, size_t len, const og_load_options *opt);

/* What a graph table holds. */
typedef enum og_table_kind {
    OG_KIND_NODE = 1,
    OG_KIND_EDGE = 2,
} og_table_kind;

/* One live table of a snapshot. Strings are owned by the snapshot info. */
typedef struct og_snapshot_table {
    const char *alias;     /* "node:Person" */
    const char *type_name; /* "Person" */
    int kind;              /* an og_table_kind */
    uint64_t version;      /* the Lance version the snapshot pins */
    uint64_t row_count;
    const char *path; /* the table's directory relative to the root */
    /* The Lance branch of that table the pinned version is on: NULL for main's own, else the
     * graph branch that forked the table on its first write (its own, or the one it was
     * created from). */
    const char *table_branch;
} og_snapshot_table;

/* One graph snapshot. Allocated by the library: og_snapshot_info_free. */
typedef struct og_snapshot_info {
    const char *branch; /* "main" */
    uint64_t manifest_version;
    int format_version;              /* the graph format */
    char head_commit[OG_ID_LEN + 1]; /* the branch head at this manifest version */
    char schema_identity[OG_SCHEMA_ID_LEN + 1];
} og_snapshot_info;

/* The live tables of the snapshot, sorted by alias: og_snapshot_info_table gives the i-th, or
 * NULL out of range. */
OG_EXTERN size_t og_snapshot_info_table_count(const og_snapshot_info *s);
OG_EXTERN const og_snapshot_table *og_snapshot_info_table(const og_snapshot_info *s, size_t i);

/* Which snapshot og_graph_snapshot() and og_graph_schema() describe. Initialise with
 * OG_SNAPSHOT_OPTIONS_INIT (or pass NULL: the head of main). */
#define OG_SNAPSHOT_OPTIONS_VERSION 1
typedef struct og_snapshot_options {
    int version;        /* OG_SNAPSHOT_OPTIONS_VERSION */
    const char *branch; /* NULL or "main": main; else a graph branch (OG_E_NOT_FOUND if none) */
    const char *at;     /* NULL: the branch's head; else a commit id, a unique id prefix (at
                         * least 4 characters) or a decimal graph-manifest version of that
                         * branch */
} og_snapshot_options;
#define OG_SNAPSHOT_OPTIONS_INIT                                                                   \
    {                                                                                              \
        OG_SNAPSHOT_OPTIONS_VERSION, NULL, NULL                                                    \
    }
OG_EXTERN int og_snapshot_options_init(og_snapshot_options *opts, int version);

/* The snapshot of opt->branch at opt->at (opt NULL: main's head). OG_E_NOT_FOUND for an
 * unknown branch or reference, OG_E_BAD_REQUEST for an ambiguous or too short one. The caller
 * frees *out with og_snapshot_info_free. */
OG_EXTERN int og_graph_snapshot(og_snapshot_info **out, og_graph *g,
                                const og_snapshot_options *opt);
OG_EXTERN void og_snapshot_info_free(og_snapshot_info *s);

/* The accepted schema a commit of a branch was made under (CLI: `omnigraph schema show`).
 * Allocated by the library: og_schema_info_free. */
typedef struct og_schema_info {
    const char *branch;                  /* "main" */
    char commit[OG_ID_LEN + 1];          /* the commit asked about (the head for a NULL at) */
    char identity[OG_SCHEMA_ID_LEN + 1]; /* the schema identity that commit names */
    const char *source;                  /* the .pg text as it was accepted */
    size_t source_len;
    const char *catalog_json; /* the catalog with its stable ids: {"types":[{"name","kind","id",
                               * "properties":[{"name","type","id",...}],...}]} */
} og_schema_info;
/* The schema of the snapshot opt names, as og_graph_snapshot reads it (opt NULL: main's head).
 * OG_E_NOT_FOUND for an unknown branch or commit, or a commit made under a schema the graph no
 * longer keeps. The caller frees *out with og_schema_info_free. */
OG_EXTERN int og_graph_schema(og_schema_info **out, og_graph *g, const og_snapshot_options *opt);
OG_EXTERN void og_schema_info_free(og_schema_info *s);

/* Options for og_graph_schema_apply(). Initialise with OG_SCHEMA_APPLY_OPTIONS_INIT and set
 * source. */
#define OG_SCHEMA_APPLY_OPTIONS_VERSION 1
typedef struct og_schema_apply_options {
    int version;             /* OG_SCHEMA_APPLY_OPTIONS_VERSION */
    const char *source;      /* the .pg text of the new schema (required) */
    size_t source_len;       /* bytes of source (0: strlen(source)) */
    const char *source_file; /* names the source in diagnostics (NULL: "schema.pg") */
    int allow_data_loss;     /* nonzero: drops are hard (a dropped property's values leave the
                              * table now) instead of soft (kept, hidden) */
    const char *if_commit;   /* NULL, or the commit main's head must be
                              * (OG_E_PRECONDITION_FAILED otherwise) */
} og_schema_apply_options;
#define OG_SCHEMA_APPLY_OPTIONS_INIT                                                               \
    {                                                                                              \
        OG_SCHEMA_APPLY_OPTIONS_VERSION, NULL, 0, NULL, 0, NULL                                    \
    }
OG_EXTERN int og_schema_apply_options_init(og_schema_apply_options *opts, int version);

/* What og_graph_schema_apply did. Allocated by the library: og_schema_apply_result_free. */
typedef struct og_schema_apply_result {
    int applied;                              /* 0: the schema was the accepted one already */
    char commit[OG_ID_LEN + 1];               /* the commit on main ("" when none) */
    uint64_t manifest_version;                /* its manifest version */
    char from_identity[OG_SCHEMA_ID_LEN + 1]; /* the schema before */
    char to_identity[OG_SCHEMA_ID_LEN + 1];   /* and after */
    const char *plan_json; /* the steps applied: {"supported":true,"steps":[...]} as
                            * `schema plan --json` prints them */
    size_t tables_rewritten, tables_created, tables_renamed, tables_dropped;
    uint64_t rows_rewritten;
} og_schema_apply_result;
/* The existing data the new schema refuses (OG_E_BAD_REQUEST), all of it:
 * og_schema_apply_result_violation gives the i-th, or NULL out of range. An og_merge_conflict
 * ("Branch merge" below) whose kind is unique_violation, cardinality_violation,
 * value_constraint_violation or orphan_edge. */
typedef struct og_merge_conflict og_merge_conflict;
OG_EXTERN size_t og_schema_apply_result_violation_count(const og_schema_apply_result *r);
OG_EXTERN const og_merge_conflict *og_schema_apply_result_violation(const og_schema_apply_result *r,
                                                                    size_t i);
OG_EXTERN void og_schema_apply_result_free(og_schema_apply_result *r);

/* Make the .pg source opt->source the graph's accepted schema (CLI: `omnigraph schema apply`;
 * docs/languages.md "Schema apply"): one commit on main that migrates the tables (new types get
 * tables, new properties are null in existing rows, renames keep stable ids and tables, dropped
 * types leave the graph; commits made before stay readable under their schema). Errors:
 * OG_E_BAD_REQUEST for an invalid source (located), a change `schema plan` calls unsupported,
 * or existing data that breaks the new schema (then *out is set and lists every violation,
 * and nothing was changed); OG_E_PRECONDITION_FAILED while another branch exists (merge and
 * delete it first); OG_E_CONFLICT when the schema changed since the handle read it. *out is
 * set on success and on violations, NULL otherwise. */
OG_EXTERN int og_graph_schema_apply(og_schema_apply_result **out, og_graph *g,
                                    const og_schema_apply_options *opt);

/* One graph commit. Owned by the list that holds it, or (og_graph_commit_show) by itself. */
typedef struct og_commit_info {
    char id[OG_ID_LEN + 1];
    char parent[OG_ID_LEN + 1];        /* "" for the genesis commit */
    char merged_parent[OG_ID_LEN + 1]; /* "" unless a merge */
    const char *actor;                 /* NULL when none was recorded */
    const char *branch;                /* "main" */
    int64_t created_at_us;             /* microseconds since the epoch (UTC) */
    uint64_t manifest_version;         /* the manifest version the commit produced */
} og_commit_info;

/* A list of commits: og_commit_list_get gives the i-th (NULL out of range). */
typedef struct og_commit_list og_commit_list;
OG_EXTERN size_t og_commit_list_count(const og_commit_list *l);
OG_EXTERN const og_commit_info *og_commit_list_get(const og_commit_list *l, size_t i);
OG_EXTERN void og_commit_list_free(og_commit_list *l);

/* Which lineage og_graph_commits() and og_graph_commit_show() read. Initialise with
 * OG_COMMIT_OPTIONS_INIT (or pass NULL: main's). */
#define OG_COMMIT_OPTIONS_VERSION 1
typedef struct og_commit_options {
    int version;        /* OG_COMMIT_OPTIONS_VERSION */
    const char *branch; /* NULL or "main": main; else a graph branch (OG_E_NOT_FOUND if none) */
} og_commit_options;
#define OG_COMMIT_OPTIONS_INIT                                                                     \
    {                                                                                              \
        OG_COMMIT_OPTIONS_VERSION, NULL                                                            \
    }
OG_EXTERN int og_commit_options_init(og_commit_options *opts, int version);

/* Every commit of opt->branch (opt NULL: main), newest first: its own and those of the
 * branches it was forked from, up to its fork point. The caller frees *out with
 * og_commit_list_free (NULL on failure). */
OG_EXTERN int og_graph_commits(og_commit_list **out, og_graph *g, const og_commit_options *opt);
/* The commit a reference names (an id, a unique prefix or a manifest version), freed with
 * og_commit_info_free. Errors as og_graph_snapshot's. Prefixes and versions are resolved in
 * opt->branch's lineage (opt NULL: main's); on main, a full id main's lineage lacks is looked
 * for on every other branch (ids are unique). */
OG_EXTERN int og_graph_commit_show(og_commit_info **out, og_graph *g, const char *ref,
                                   const og_commit_options *opt);
/* Frees a commit og_graph_commit_show returned (never one a list holds). */
OG_EXTERN void og_commit_info_free(og_commit_info *c);

/* Counters of this handle since it was opened. Allocated by the library:
 * og_graph_stats_free. */
typedef struct og_graph_stats {
    uint64_t writes;          /* writes that published a graph commit */
    uint64_t noops;           /* writes with nothing to commit */
    uint64_t reprepares;      /* restarts after a read-set mismatch before any effect */
    uint64_t publish_retries; /* graph-manifest commits lost to a concurrent writer */
    uint64_t recoveries;      /* interrupted writes resolved */
} og_graph_stats;
OG_EXTERN int og_graph_stats_get(og_graph_stats **out, og_graph *g);
OG_EXTERN void og_graph_stats_free(og_graph_stats *s);

/* ---- Maintenance -------------------------------------------------------------------------- */
/* docs/maintenance.md. Writes already compact what they touch on a worker of the handle; these
 * are the explicit forms (CLI: `omnigraph optimize`, `omnigraph cleanup`). */

/* Options for og_graph_optimize(). Initialise with OG_OPTIMIZE_OPTIONS_INIT. */
#define OG_OPTIMIZE_OPTIONS_VERSION 1
typedef struct og_optimize_options {
    int version;        /* OG_OPTIMIZE_OPTIONS_VERSION */
    const char *branch; /* NULL or "main": main; else a graph branch, whose own forks (the
                         * tables written on it) and manifest are compacted */
} og_optimize_options;
#define OG_OPTIMIZE_OPTIONS_INIT                                                                   \
    {                                                                                              \
        OG_OPTIMIZE_OPTIONS_VERSION, NULL                                                          \
    }
OG_EXTERN int og_optimize_options_init(og_optimize_options *opts, int version);

/* What og_graph_optimize did. Allocated by the library: og_optimize_result_free. */
typedef struct og_optimize_result {
    char commit_id[OG_ID_LEN + 1]; /* the maintenance commit ("" when no table needed it) */
    uint64_t manifest_version;     /* the manifest version after optimize */
    size_t tables_compacted;       /* data tables rewritten (in that one commit) */
    uint64_t fragments_before, fragments_after; /* over every data table */
    uint64_t manifest_fragments_before, manifest_fragments_after;
} og_optimize_result;

/* Compact every data table with more than one fragment (its small fragments and deleted rows
 * are rewritten into full ones) as ONE maintenance commit through the write protocol, then
 * compact the graph manifest. Content is unchanged: queries return the same rows, and
 * `--if-commit` with the last content commit still holds. Errors as og_graph_load's. opt
 * NULL: the defaults. On success the caller frees *out with og_optimize_result_free; on
 * failure it is NULL. */
OG_EXTERN int og_graph_optimize(og_optimize_result **out, og_graph *g,
                                const og_optimize_options *opt);
OG_EXTERN void og_optimize_result_free(og_optimize_result *r);

/* Progress of a cleanup: called after each Lance dataset (table, then the manifest). */
typedef void (*og_cleanup_progress_fn)(void *arg, const char *dataset, size_t done, size_t total);

/* Options for og_graph_cleanup(). Initialise with OG_CLEANUP_OPTIONS_INIT, then give at least
 * one retention rule. A commit of main stays readable (`--at`) when it is among the newest
 * `keep` or younger than `older_than_us`; the head always stays. */
#define OG_CLEANUP_OPTIONS_VERSION 1
typedef struct og_cleanup_options {
    int version;                     /* OG_CLEANUP_OPTIONS_VERSION */
    uint64_t keep;                   /* 0: no count rule */
    int64_t older_than_us;           /* < 0: no age rule */
    int dry_run;                     /* nonzero: count what would go, delete nothing */
    uint64_t orphan_grace_ms;        /* files no version names are removed once older than
                                      * this (0: one hour): a writer may have staged them */
    og_cleanup_progress_fn progress; /* NULL: none */
    void *progress_arg;
} og_cleanup_options;
#define OG_CLEANUP_OPTIONS_INIT                                                                    \
    {                                                                                              \
        OG_CLEANUP_OPTIONS_VERSION, 0, -1, 0, 0, NULL, NULL                                        \
    }
OG_EXTERN int og_cleanup_options_init(og_cleanup_options *opts, int version);

/* What og_graph_cleanup removed. Allocated by the library: og_cleanup_result_free. */
typedef struct og_cleanup_result {
    uint64_t commits_total;    /* commits of main (all still listed by og_graph_commits) */
    uint64_t commits_retained; /* ... of which still readable */
    char oldest_retained[OG_ID_LEN + 1];
    uint64_t versions_removed; /* Lance versions, over the tables and the manifest */
    uint64_t files_removed;    /* version manifests, data, deletion, transaction files */
    uint64_t bytes_removed;
    uint64_t files_spared_recent; /* unreferenced files younger than the orphan grace */
    size_t datasets;              /* Lance datasets cleaned (tables and the manifest) */
    uint64_t tables_removed;      /* whole tables removed (counted in files and bytes too): of
                                   * types dropped before the oldest retained commit, and
                                   * directories no commit registers (a schema apply that
                                   * failed), once older than the orphan grace */
} og_cleanup_result;

/* Remove the versions and files that no retained commit needs (and files of attempts that
 * never committed, once older than the grace). Safe while other handles and processes write
 * and read: they only add versions above what is kept. Reading an expired commit afterwards
 * fails with OG_E_NOT_FOUND saying cleanup removed it. OG_E_BAD_REQUEST without a rule or on a
 * read-only handle; OG_E_RECOVERY_REQUIRED when an interrupted write must be resolved first.
 * On success the caller frees *out with og_cleanup_result_free; on failure it is NULL. */
OG_EXTERN int og_graph_cleanup(og_cleanup_result **out, og_graph *g, const og_cleanup_options *opt);
OG_EXTERN void og_cleanup_result_free(og_cleanup_result *r);

/* ---- Recovery ------------------------------------------------------------------------------ */
/* A write that was interrupted (a crash, a killed process, a storage error after its first
 * effect) leaves a recovery intent, a file under ROOT/__recovery/. The next write, read-write
 * open, optimize or cleanup resolves it first (rolls it forward or back, or discards it) and
 * records the outcome in the audit log ROOT/_recoveries.lance; when it cannot decide safely it
 * fails with OG_E_RECOVERY_REQUIRED naming the intent. These calls show and resolve intents by
 * hand (CLI: `omnigraph recover`, docs/cli.md). They open the root themselves (og_root_*),
 * read-write but without the recovery barrier a read-write og_graph_open runs, so they work on
 * a graph that a pending intent blocks. */

typedef enum og_intent_state {
    OG_INTENT_PENDING = 1, /* its writer is gone: the next write or og_root_recover_resolve acts */
    OG_INTENT_LIVE = 2,    /* its writer still runs (holds the intent's lock): left alone */
    OG_INTENT_UNCHECKED = 3, /* listed read-only (og_recover_options.read_only): no lock taken */
    OG_INTENT_RESOLVED = 4,  /* the audit log records it resolved: a stale copy, retired by the
                              * next write */
    OG_INTENT_DAMAGED = 5,   /* the file cannot be read as an intent (og_intent_info.problem) */
} og_intent_state;

/* What resolving an intent does (the recovery barrier's classifier decides). */
typedef enum og_recover_action {
    OG_RECOVER_NONE = 0,         /* not classified (lists) */
    OG_RECOVER_FINALIZE = 1,     /* its commit or its rollback is visible: record and delete */
    OG_RECOVER_ROLL_FORWARD = 2, /* every effect happened: publish its commit */
    OG_RECOVER_ROLL_BACK = 3,    /* some effects happened: restore those tables, publish that */
    OG_RECOVER_DISCARD = 4,      /* no effect happened: delete it */
    OG_RECOVER_RETIRE = 5,       /* a stale copy of a resolved intent: delete it */
    OG_RECOVER_BLOCKED = 6,      /* not safely decidable: an operator must choose (reason) */
} og_recover_action;

/* What a resolution did; the audit log records the same word. */
typedef enum og_recover_outcome {
    OG_RECOVERED_ROLLED_FORWARD = 1,
    OG_RECOVERED_ROLLED_BACK = 2,
    OG_RECOVERED_DISCARDED = 3,
    OG_RECOVERED_RETIRED = 4,
    OG_RECOVERED_DISCARDED_FORCED = 5, /* discarded without proof (og_recover_options.force) */
    OG_RECOVERED_REPAIRED = 6, /* an interrupted og_root_repair, completed (its repair commit) */
    OG_RECOVERED_REPAIRED_FORCED = 7, /* ... one forced past acknowledged commits (dropped) */
} og_recover_outcome;

/* "pending", "live", "unchecked", "resolved", "damaged"; "unknown" otherwise. */
OG_EXTERN const char *og_intent_state_name(int state);
/* "none", "finalize", "roll_forward", "roll_back", "discard", "retire", "blocked". */
OG_EXTERN const char *og_recover_action_name(int action);
/* "rolled_forward", "rolled_back", "discarded", "retired", "discarded_forced", "repaired",
 * "repaired_forced". */
OG_EXTERN const char *og_recover_outcome_name(int outcome);

/* One recovery intent. Strings are owned by it (or by the list that holds it). */
typedef struct og_intent_info {
    char operation_id[OG_ID_LEN + 1];
    const char *file;        /* "__recovery/<operation id>.json", relative to the root */
    const char *writer_kind; /* "load", "mutation", "optimize"; NULL when damaged */
    int state;               /* an og_intent_state */
    int damaged;             /* 1 when the file cannot be read as an intent */
    int64_t started_at_us;   /* when its write began (damaged: the time in its id) */
    int64_t owner_pid;       /* the process that wrote it, 0 when unknown */
    const char *branch;      /* "main" */
    const char *actor;       /* NULL when none was given */
    const char *problem;     /* damaged: what is wrong with the file; else NULL */
    const char *resolved_as; /* OG_INTENT_RESOLVED: the audit log's outcome; else NULL */
    size_t tables;           /* how many tables its effects name */
    int action;              /* og_root_recover_show: an og_recover_action; OG_RECOVER_NONE in
                              * lists */
    const char *reason;      /* og_root_recover_show: why that action; NULL in lists */
} og_intent_info;

/* A list of intents, oldest first: og_intent_list_get gives the i-th (NULL out of range). */
typedef struct og_intent_list og_intent_list;
OG_EXTERN size_t og_intent_list_count(const og_intent_list *l);
OG_EXTERN const og_intent_info *og_intent_list_get(const og_intent_list *l, size_t i);
OG_EXTERN void og_intent_list_free(og_intent_list *l);
OG_EXTERN void og_intent_info_free(og_intent_info *i);

/* Options for the og_root_recover_* calls: og_root_recover_resolve reads discard and force,
 * og_root_recover_list read_only, og_root_recover_show none. Initialise with
 * OG_RECOVER_OPTIONS_INIT. */
#define OG_RECOVER_OPTIONS_VERSION 1
typedef struct og_recover_options {
    int version;   /* OG_RECOVER_OPTIONS_VERSION */
    int discard;   /* nonzero: delete the intent instead of rolling it forward or back; only
                    * with proof that no effect of it exists (no commit or rollback of it is
                    * visible and no table holds a version its transactions made), otherwise
                    * OG_E_PRECONDITION_FAILED */
    int force;     /* with discard: delete it without that proof (audited as
                    * discarded_forced); the only way to clear a damaged intent */
    int read_only; /* og_root_recover_list: open the root read-only and probe no locks, so a
                    * reader writes nothing (a pending or live intent is OG_INTENT_UNCHECKED) */
} og_recover_options;
#define OG_RECOVER_OPTIONS_INIT                                                                    \
    {                                                                                              \
        OG_RECOVER_OPTIONS_VERSION, 0, 0, 0                                                        \
    }
OG_EXTERN int og_recover_options_init(og_recover_options *opts, int version);

/* What og_root_recover_resolve did. Allocated by the library: og_recover_result_free. */
typedef struct og_recover_result {
    char operation_id[OG_ID_LEN + 1];
    int outcome;                   /* an og_recover_outcome */
    char commit_id[OG_ID_LEN + 1]; /* the commit that completed or rolled it back, else "" */
} og_recover_result;
OG_EXTERN void og_recover_result_free(og_recover_result *r);

/* The intents of the graph in root_dir, with their state (opt may be NULL; with
 * opt->read_only, states as a read-only look sees them). The one way to list intents.
 * OG_E_NOT_FOUND when there is no graph. The caller frees *out with og_intent_list_free. */
OG_EXTERN int og_root_recover_list(og_intent_list **out, const char *root_dir,
                                   const og_recover_options *opt);
/* One intent, classified as the recovery barrier would (action, reason). OG_E_NOT_FOUND when
 * it is not pending. The caller frees *out with og_intent_info_free. */
OG_EXTERN int og_root_recover_show(og_intent_info **out, const char *root_dir,
                                   const char *operation_id, const og_recover_options *opt);
/* Resolve one intent under the same gates and locks the recovery barrier takes, so it never
 * races a live writer: as the barrier would (roll forward, roll back, discard, finalize, or
 * retire a stale copy), or by discarding it (opt->discard; see og_recover_options). Every
 * resolution is recorded in the audit log. Errors: OG_E_NOT_FOUND (not pending),
 * OG_E_CONFLICT when its writer still runs (the message names its pid),
 * OG_E_RECOVERY_REQUIRED when the classifier cannot decide (the message says why; a damaged
 * intent needs discard and force), OG_E_PRECONDITION_FAILED for a discard without proof. The
 * caller frees *out with og_recover_result_free. */
OG_EXTERN int og_root_recover_resolve(og_recover_result **out, const char *root_dir,
                                      const char *operation_id, const og_recover_options *opt);

/* ---- Repair ------------------------------------------------------------------------------ */
/* When the newest graph-manifest versions cannot be read (a damaged or deleted version file,
 * a file one of them needs gone), reads name the damage and fall back for commits before it,
 * and writes fail OG_E_CORRUPT. og_root_repair (CLI: `omnigraph repair`, docs/cli.md and
 * docs/maintenance.md "Repairing a graph") restores a writable state without dropping an
 * acknowledged write: the unreadable version files above the newest intact version are moved
 * to ROOT/_repair/<operation id>/, and a repair commit (actor "omnigraph:repair") is made on
 * top of the intact version that pins every table whose Lance HEAD is ahead of it at that
 * HEAD: the data the lost versions published (no sidecar was pending, so nothing else can
 * have put it there) is rolled forward and stays readable at the head. Only the lost versions'
 * commit records (ids, messages) are gone: reading --at them is. Audited as "repaired" in
 * _recoveries.lance. Where rolling forward cannot keep every acknowledged commit (a lost
 * schema apply, a table HEAD that does not open or changed its columns), a confirm fails
 * OG_E_PRECONDITION_FAILED naming the versions and tables at stake and the remedies (restore
 * from a backup, or force); with opt->force every table ahead is restored to what the intact
 * version publishes instead (a new table version: the newer ones stay in the table's history
 * until cleanup), dropping those commits; audited as "repaired_forced". A damaged or missing
 * _schema.json is rewritten from _schema.pg when that source rebuilds exactly the schema
 * identity the manifest records; a missing or altered _schema.pg cannot be restored (the
 * source is recorded nowhere else): OG_E_CORRUPT naming it. */
#define OG_REPAIR_OPTIONS_VERSION 2
typedef struct og_repair_options {
    int version; /* OG_REPAIR_OPTIONS_VERSION */
    int confirm; /* nonzero: act; 0: a dry run that reports what it would do and writes nothing */
    /* Version 2: */
    int force;          /* nonzero: where rolling forward cannot keep every acknowledged commit,
                         * roll the tables back to the intact version anyway (audited) */
    const char *branch; /* the graph branch whose manifest to repair (NULL or "main": main) */
} og_repair_options;
#define OG_REPAIR_OPTIONS_INIT                                                                     \
    {                                                                                              \
        OG_REPAIR_OPTIONS_VERSION, 0, 0, NULL                                                      \
    }
OG_EXTERN int og_repair_options_init(og_repair_options *opts, int version);

/* One table ahead of the newest intact version. */
typedef struct og_repair_table {
    const char *alias;  /* "node:Person" */
    uint64_t head;      /* its Lance HEAD (the repair commit pins it there: rolled forward) */
    uint64_t published; /* the version the intact manifest version publishes (restored to it
                         * only when forced) */
} og_repair_table;

/* What og_root_repair found and did. Allocated by the library: og_repair_result_free. */
typedef struct og_repair_result {
    int clean;                /* 1: nothing to repair */
    int repaired;             /* 1: opt->confirm acted */
    uint64_t latest_version;  /* the newest stored graph-manifest version */
    uint64_t intact_version;  /* the newest one that reads */
    uint64_t missing_version; /* a newer version the version hint names that is gone, or 0 */
    const char *damage;       /* why the newest version cannot be read ("" when it can) */
    const char *moved_to;     /* where the damaged files went ("" when none were moved) */
    char operation_id[OG_ID_LEN + 1]; /* the repair's (audit log), "" for a dry run */
    char commit_id[OG_ID_LEN + 1];    /* the repair commit, "" for a dry run */
    uint64_t manifest_version;        /* ... and its manifest version */
    int schema_damaged;          /* 1: _schema.json/_schema.pg did not read as the schema the graph
                                  * records; _schema.pg rebuilds it exactly (proved by its identity),
                                  * and a confirm rewrote both files from it */
    uint64_t cleanup_unfinished; /* commits a cleanup killed part way by an older build
                                  * left unreadable (a table version they pin is gone)
                                  * while their graph-manifest versions are stored */
    uint64_t cleanup_versions_removed; /* those manifest versions a confirm removed */
    uint64_t lost_version; /* a version missing below newer intact ones (a lost file), or 0:
                            * reads at the head stop there (OG_E_CORRUPT); the newer versions
                            * hold every commit, only reading --at it is gone, and a confirm
                            * moves the version hint above the hole */
    const char *at_stake;  /* "" when the tables ahead are rolled forward (every acknowledged
                            * commit's data kept); otherwise why they cannot be: a confirm
                            * refuses unless forced */
    int forced;            /* 1: a forced confirm rolled the tables back (commits dropped) */
    const char *branch;    /* the graph branch repaired ("main" for main) */
} og_repair_result;
/* Its lists, each read by index (the accessor gives NULL out of range):
 *  - damaged: the unreadable version files;
 *  - table: the tables ahead of the intact version;
 *  - ref: the branch ref files that did not read (lost or damaged), rebuilt by a confirm from
 *    their branch's first version (the fork its create wrote); a damaged one is kept under
 *    ROOT/_repair/refs/. A graph branch's own ref only when opt->branch names it; the refs of
 *    the table forks every readable graph branch pins always;
 *  - refless: the graph branches with manifest versions but no ref (found by a repair of
 *    main; lost, or a delete interrupted after removing it: only the operator knows which).
 *    A repair with opt->branch naming one rebuilds its ref. */
OG_EXTERN size_t og_repair_result_damaged_count(const og_repair_result *r);
OG_EXTERN const char *og_repair_result_damaged(const og_repair_result *r, size_t i);
OG_EXTERN size_t og_repair_result_table_count(const og_repair_result *r);
OG_EXTERN const og_repair_table *og_repair_result_table(const og_repair_result *r, size_t i);
OG_EXTERN size_t og_repair_result_ref_count(const og_repair_result *r);
OG_EXTERN const char *og_repair_result_ref(const og_repair_result *r, size_t i);
OG_EXTERN size_t og_repair_result_refless_count(const og_repair_result *r);
OG_EXTERN const char *og_repair_result_refless(const og_repair_result *r, size_t i);
OG_EXTERN void og_repair_result_free(og_repair_result *r);

/* Inspect the graph in root_dir and, with opt->confirm, repair it (opt NULL: a dry run).
 * Pending interrupted writes are resolved first by recovery when confirming (a dry run fails
 * OG_E_RECOVERY_REQUIRED instead, as does a confirm whose recovery cannot resolve one).
 * OG_E_CORRUPT when no version is intact or a table lost versions the intact one publishes:
 * nothing provable to restore (the message says what). OG_E_PRECONDITION_FAILED when a
 * confirm without force would drop an acknowledged commit (see above). OG_E_NOT_FOUND when
 * there is no graph (or no such branch).
 * The caller frees *out with og_repair_result_free. */
OG_EXTERN int og_root_repair(og_repair_result **out, const char *root_dir,
                             const og_repair_options *opt);

/* ---- Graph queries and mutations -------------------------------------------------------- */
/* Run .gq queries against a graph (docs/languages.md; CLI: `omnigraph query` / `mutate`,
 * docs/cli.md). A read runs on one pinned snapshot: the head, or any earlier commit (`at`).
 * A mutation is one graph commit through the write coordinator. The handle caches table
 * columns and adjacency per table version, so a warm handle answers repeated reads without
 * re-reading storage; the cache is never stale (a new table version is a new entry). */

/* Options for og_graph_query(). Initialise with OG_QUERY_OPTIONS_INIT and set source. */
#define OG_QUERY_OPTIONS_VERSION 1
typedef struct og_query_options {
    int version;             /* OG_QUERY_OPTIONS_VERSION */
    const char *source;      /* .gq text holding one or more queries (required) */
    size_t source_len;       /* bytes of source (0: strlen(source)) */
    const char *source_file; /* names the source in diagnostics (NULL: "<query>") */
    const char *name;        /* the query to run; NULL when the source holds exactly one */
    const char *params_json; /* a JSON object of param values, keys without '$' (NULL: {}) */
    const char *at;          /* NULL: the head; else a commit id, a unique id prefix (4+
                              * characters) or a decimal graph-manifest version (of branch) */
    const char *branch; /* NULL or "main": main; else a graph branch (OG_E_NOT_FOUND if none) */
    int64_t now_ms;     /* nonzero: the value of now() in ms since the epoch (0: clock) */
} og_query_options;
#define OG_QUERY_OPTIONS_INIT                                                                      \
    {                                                                                              \
        OG_QUERY_OPTIONS_VERSION, NULL, 0, NULL, NULL, NULL, NULL, NULL, 0                         \
    }
OG_EXTERN int og_query_options_init(og_query_options *opts, int version);

/* The rows of a read query, held in memory as Arrow record batches (see the Caveats: it
 * outlives the handle). Not for concurrent use: the row cursor and the JSON scratch are per
 * result. */
typedef struct og_result og_result;

/* Run a read query. A .gq error (parse or type) fails with OG_E_BAD_REQUEST whose message
 * starts with the diagnostic code ("T5: ...") and whose og_error.file/line/column locate it;
 * an unknown or missing query name, a mutation query, bad params (named in the message) are
 * OG_E_BAD_REQUEST too; an unknown `at` is OG_E_NOT_FOUND. The caller frees *out with
 * og_result_free; on failure *out is NULL. */
OG_EXTERN int og_graph_query(og_result **out, og_graph *g, const og_query_options *opt);
OG_EXTERN void og_result_free(og_result *r);

/* Options for og_graph_lint(). Initialise with OG_LINT_OPTIONS_INIT and set source. */
#define OG_LINT_OPTIONS_VERSION 1
typedef struct og_lint_options {
    int version;             /* OG_LINT_OPTIONS_VERSION */
    const char *source;      /* .gq text holding one or more queries (required) */
    size_t source_len;       /* bytes of source (0: strlen(source)) */
    const char *source_file; /* names the source in diagnostics (NULL: "<query>") */
    const char *branch;      /* NULL or "main": main; else a graph branch */
    const char *at;          /* NULL: the branch's head; else a commit id, a unique id prefix or
                              * a decimal graph-manifest version of that branch */
} og_lint_options;
#define OG_LINT_OPTIONS_INIT                                                                       \
    {                                                                                              \
        OG_LINT_OPTIONS_VERSION, NULL, 0, NULL, NULL, NULL                                         \
    }
OG_EXTERN int og_lint_options_init(og_lint_options *opts, int version);

/* Type-check and lint the .gq source against the schema of an open graph at one point of its
 * history (CLI: `omnigraph lint --store ROOT`): the schema the commit `at` of `branch` was
 * made under (the head's: the accepted schema), as og_graph_query would check it there. A
 * type or property name that schema lacks but another schema of the graph had is worded with
 * what became of it, under its usual code and location: "T1: unknown node type 'Person':
 * node type `Person` was renamed to `Human`", "T2: 'Human' has no property 'nick': property
 * `Human.nick` was dropped (schema 0123456789ab had it)", and at an earlier commit, names of
 * the accepted schema ("node type `Human` is `Person` in this schema", "... was added later
 * (schema ... has it)"). Same return convention as og_query_lint (every diagnostic is in the
 * report); OG_E_NOT_FOUND for an unknown branch or `at`, or a commit made under a schema the
 * graph does not keep (then *out is NULL). Works on a read-only handle; writes nothing. */
OG_EXTERN int og_graph_lint(og_lang_report **out, og_graph *g, const og_lint_options *opt);

/* The head commit of the snapshot the query read ("" for a graph without commits), and that
 * snapshot's graph-manifest version. Static for the life of the result. */
OG_EXTERN const char *og_result_graph_commit_id(const og_result *r);
OG_EXTERN uint64_t og_result_manifest_version(const og_result *r);
/* The name of the query that ran. */
OG_EXTERN const char *og_result_query_name(const og_result *r);

OG_EXTERN size_t og_result_column_count(const og_result *r);
/* Column i's name ("p.name", an alias, "count(f)"), or NULL out of range. */
OG_EXTERN const char *og_result_column_name(const og_result *r, size_t i);
OG_EXTERN uint64_t og_result_row_count(const og_result *r);
/* The rows arrive in record batches (up to 65,536 rows each); batch b holds rows
 * [first, first + rows). Lets a consumer work batch by batch. */
OG_EXTERN size_t og_result_batch_count(const og_result *r);
OG_EXTERN int og_result_batch_rows(uint64_t *first, uint64_t *rows, const og_result *r, size_t b);

/* The type of one value. */
typedef enum og_value_type {
    OG_VALUE_NULL = 0,
    OG_VALUE_BOOL = 1,     /* b */
    OG_VALUE_INT = 2,      /* i: I32, I64 */
    OG_VALUE_UINT = 3,     /* u: U32, U64 (and counts) */
    OG_VALUE_FLOAT = 4,    /* f: F32, F64 (and averages) */
    OG_VALUE_STRING = 5,   /* str/len: UTF-8, NOT NUL-terminated (ids, strings, enums) */
    OG_VALUE_DATE = 6,     /* i: days since 1970-01-01; str/len: "YYYY-MM-DD" */
    OG_VALUE_DATETIME = 7, /* i: ms since the epoch (UTC); str/len: ISO "...Z" */
    OG_VALUE_JSON = 8,     /* lists, vectors, blobs: str/len is its canonical JSON text */
} og_value_type;

/* One cell. str points into the result (OG_VALUE_STRING, valid as long as the result) or
 * into the result's scratch (DATE, DATETIME, JSON: valid until the next og_result_get,
 * og_result_value or og_result_row_json call on it). */
typedef struct og_value {
    int type; /* an og_value_type */
    int b;
    int64_t i;
    uint64_t u;
    double f;
    const char *str;
    size_t len;
} og_value;

/* The cell at (row, col). OG_E_BAD_REQUEST out of range. */
OG_EXTERN int og_result_value(og_value *out, og_result *r, uint64_t row, size_t col);
/* A row cursor, read the way every cursor of this API is:
 *     int rc;
 *     while ((rc = og_result_next(r)) == OG_OK) { ... og_result_get(&v, r, col) ... }
 *     if (rc != OG_ITER_OVER) ... a failure: og_error_last() ...
 * og_result_next moves to the next row (the first on the first call) and returns OG_OK, or
 * OG_ITER_OVER once past the last row (and on every call after), or a negative og_code
 * (OG_E_BAD_REQUEST for a NULL result). og_result_get reads column col of the current row
 * (OG_E_BAD_REQUEST before the first og_result_next or after the end); og_result_rewind
 * starts over. */
OG_EXTERN int og_result_next(og_result *r);
OG_EXTERN int og_result_get(og_value *out, og_result *r, size_t col);
OG_EXTERN void og_result_rewind(og_result *r);
/* Row `row` as one JSON object {"column": value, ...} in column order, values in the
 * canonical JSON form (`lance cat --json`'s). Returns the text (NUL-terminated, *len bytes
 * when len is not NULL) in the result's scratch, or NULL on failure (og_error_last()). */
OG_EXTERN const char *og_result_row_json(og_result *r, uint64_t row, size_t *len);
/* Cell (row, col) as canonical JSON text, like og_result_row_json. */
OG_EXTERN const char *og_result_cell_json(og_result *r, uint64_t row, size_t col, size_t *len);

/* Move the rows into an Arrow C stream: each array it gives is a struct array of the
 * columns. The result keeps its schema, column names and commit id but holds no rows
 * afterwards (row count 0). The caller owns *out and calls out->release(out). */
OG_EXTERN int og_result_export_stream(struct ArrowArrayStream *out, og_result *r);

/* Options for og_graph_mutate(). Initialise with OG_MUTATE_OPTIONS_INIT and set source. */
#define OG_MUTATE_OPTIONS_VERSION 1
typedef struct og_mutate_options {
    int version;        /* OG_MUTATE_OPTIONS_VERSION */
    const char *source; /* .gq text (required); see og_query_options */
    size_t source_len;
    const char *source_file;
    const char *name;
    const char *params_json;
    const char *branch;    /* NULL or "main": main; else a graph branch, which must exist */
    const char *if_commit; /* NULL, or the commit id the branch head must be: otherwise
                            * OG_E_PRECONDITION_FAILED (expected/actual set) and nothing
                            * is written */
    int64_t now_ms;        /* nonzero: the value of now() */
} og_mutate_options;
#define OG_MUTATE_OPTIONS_INIT                                                                     \
    {                                                                                              \
        OG_MUTATE_OPTIONS_VERSION, NULL, 0, NULL, NULL, NULL, NULL, NULL, 0                        \
    }
OG_EXTERN int og_mutate_options_init(og_mutate_options *opts, int version);

/* Run a mutation query (insert / update / delete statements) as ONE graph commit. Errors as
 * og_graph_query's for the source and params; a read query is OG_E_BAD_REQUEST;
 * OG_E_PRECONDITION_FAILED for a lost if_commit; OG_E_KEY_CONFLICT, OG_E_READ_SET_CONFLICT,
 * OG_E_CONFLICT, OG_E_RECOVERY_REQUIRED as for loads; OG_E_BAD_REQUEST on a read-only
 * handle. Nothing is written on any failure. On success *out is what the mutation did (the
 * query's name; counts OG_WRITE_NODES_INSERTED to OG_WRITE_EDGES_DELETED, OG_WRITE_REPREPARES;
 * no commit when its statements matched no row and inserted none), to free with
 * og_write_result_free; on failure NULL. */
OG_EXTERN int og_graph_mutate(og_write_result **out, og_graph *g, const og_mutate_options *opt);

/* ---- Export and backup -------------------------------------------------------------------- */
/* Two ways to keep a graph elsewhere (docs/maintenance.md, "Backups"; CLI: `omnigraph export`,
 * `omnigraph backup`, docs/cli.md): an export writes the rows as the load format, from which
 * `og_graph_load` into a fresh graph with the same schema rebuilds them, ids included; a
 * backup copies the graph root as of one commit, while writers run, into a directory that is
 * itself a graph. */

/* Options for og_graph_export(). Initialise with OG_EXPORT_OPTIONS_INIT. */
#define OG_EXPORT_OPTIONS_VERSION 1
typedef struct og_export_options {
    int version;              /* OG_EXPORT_OPTIONS_VERSION */
    const char *at;           /* NULL: the head; else a commit id, a unique id prefix or a
                               * decimal graph-manifest version */
    const char *branch;       /* NULL or "main": main; else a graph branch (`at` is then a
                               * commit of that branch's lineage) */
    const char *const *types; /* the node and edge types to export (NULL: every one) */
    size_t n_types;
} og_export_options;
#define OG_EXPORT_OPTIONS_INIT                                                                     \
    {                                                                                              \
        OG_EXPORT_OPTIONS_VERSION, NULL, NULL, NULL, 0                                             \
    }
OG_EXTERN int og_export_options_init(og_export_options *opts, int version);

/* What og_graph_export wrote. Allocated by the library: og_export_result_free. */
typedef struct og_export_result {
    char commit_id[OG_ID_LEN + 1]; /* the commit exported */
    uint64_t manifest_version;     /* its graph-manifest version */
    uint64_t nodes, edges;         /* lines written of each kind */
    uint64_t bytes;                /* bytes written */
    size_t node_types, edge_types; /* types exported (empty ones included) */
} og_export_result;

/* Write the graph at `at` to f as JSONL in the load line shapes: every node type, then every
 * edge type, each in name order with its rows sorted by id; every row carries its id as
 * data.id and every property (null as null); values in forms og_graph_load reads back
 * exactly. Loading the output with OG_LOAD_OVERWRITE (or into an empty graph with any mode)
 * gives the same rows. OG_E_NOT_FOUND for an unknown `at` or type; OG_E_UNSUPPORTED for a
 * value the load format cannot carry (a U64 above 2^63-1, a NaN, a Blob that is not UTF-8
 * text; the message names the row), and then f holds the lines written before it; OG_E_STORAGE
 * when writing to f fails. One table's rows are held in memory at a time. On success the
 * caller frees *out with og_export_result_free; on failure it is NULL. */
OG_EXTERN int og_graph_export(og_export_result **out, FILE *f, og_graph *g,
                              const og_export_options *opt);
OG_EXTERN void og_export_result_free(og_export_result *r);

/* Options for og_graph_backup(). Initialise with OG_BACKUP_OPTIONS_INIT. */
#define OG_BACKUP_OPTIONS_VERSION 1
typedef struct og_backup_options {
    int version;        /* OG_BACKUP_OPTIONS_VERSION */
    const char *branch; /* NULL or "main" (other branches: OG_E_UNSUPPORTED for now) */
    unsigned attempts;  /* pins tried when a concurrent cleanup deletes files of the
                         * pinned commit mid-copy (0: 5) */
} og_backup_options;
#define OG_BACKUP_OPTIONS_INIT                                                                     \
    {                                                                                              \
        OG_BACKUP_OPTIONS_VERSION, NULL, 0                                                         \
    }
OG_EXTERN int og_backup_options_init(og_backup_options *opts, int version);

/* What og_graph_backup copied. Allocated by the library: og_backup_result_free. */
typedef struct og_backup_result {
    char commit_id[OG_ID_LEN + 1]; /* the commit the copy holds: the head it pinned */
    uint64_t manifest_version;     /* its graph-manifest version */
    size_t tables;                 /* data tables copied */
    uint64_t rows;                 /* rows over those tables, counted in the copy */
    uint64_t files;                /* files written to the copy */
    uint64_t bytes;                /* bytes written to the copy */
    unsigned attempts;             /* pins it took (1 unless files vanished mid-copy) */
} og_backup_result;

/* Copy the head of main into dest_dir (made if missing; an existing one must be empty, else
 * OG_E_EXISTS; inside the graph's root: OG_E_BAD_REQUEST). Safe while other handles and
 * processes write, optimize and clean up: the copy holds exactly one commit, the head when
 * the copy pinned it, and only that commit is readable in it (`commit list` still lists the
 * whole lineage). Recovery sidecars are never copied. Every file is fsynced, and the copy's
 * graph manifest is written last: an interrupted backup leaves a directory without a graph
 * (og_graph_open: OG_E_NOT_FOUND), to remove before trying again. Before returning, the copy
 * is opened and checked: the same commit, schema identity, tables, versions and row counts
 * (OG_E_CORRUPT if not). Works on a read-only handle. On success the caller frees *out with
 * og_backup_result_free; on failure it is NULL. */
OG_EXTERN int og_graph_backup(og_backup_result **out, og_graph *g, const char *dest_dir,
                              const og_backup_options *opt);
OG_EXTERN void og_backup_result_free(og_backup_result *r);

/* ---- Graph branches ------------------------------------------------------------------------
 * A graph branch is a named line of commits forked from another branch at one of its commits
 * (docs/cli.md, "Branches"). Creating and deleting one is a conditional change of a ref: no
 * table is copied and no commit is made on any branch. "main" always exists and cannot be
 * deleted. Loads, mutations, queries, snapshots and commit lists take a branch; the first
 * write of a table on a branch forks that table lazily (a native Lance branch of its dataset),
 * covered by the write's recovery intent like any other effect. */

/* One graph branch. Owned by the list that holds it, or by itself (og_branch_info_free). */
typedef struct og_branch_info {
    const char *name;
    const char *parent;              /* the branch it was forked from; NULL for main */
    char forked_from[OG_ID_LEN + 1]; /* the parent's commit it was forked at ("" for main) */
    char head[OG_ID_LEN + 1];        /* its head commit (the fork commit until its own first) */
    uint64_t manifest_version;       /* its latest graph-manifest version */
    uint64_t fork_version;           /* the parent's graph-manifest version at the fork (0: main) */
    int64_t created_at_us;           /* when it was created (0 for main, or when unknown) */
} og_branch_info;
OG_EXTERN void og_branch_info_free(og_branch_info *b);

typedef struct og_branch_list og_branch_list;
OG_EXTERN size_t og_branch_list_count(const og_branch_list *l);
OG_EXTERN const og_branch_info *og_branch_list_get(const og_branch_list *l, size_t i);
OG_EXTERN void og_branch_list_free(og_branch_list *l);

/* Every branch, main first, then the others by name. The caller frees *out with
 * og_branch_list_free (NULL on failure). Works on a read-only handle. */
OG_EXTERN int og_graph_branches(og_branch_list **out, og_graph *g);

/* Options for og_graph_create_branch(). Initialise with OG_BRANCH_OPTIONS_INIT. */
#define OG_BRANCH_OPTIONS_VERSION 1
typedef struct og_branch_options {
    int version;      /* OG_BRANCH_OPTIONS_VERSION */
    const char *from; /* the branch to fork (NULL: main) */
    const char *at;   /* NULL: its head; else a commit id, a unique id prefix or a decimal
                       * graph-manifest version of `from` */
} og_branch_options;
#define OG_BRANCH_OPTIONS_INIT                                                                     \
    {                                                                                              \
        OG_BRANCH_OPTIONS_VERSION, NULL, NULL                                                      \
    }
OG_EXTERN int og_branch_options_init(og_branch_options *opts, int version);

/* Create branch `name` (opt NULL: from main's head). Names are '/'-separated segments of ASCII
 * letters, digits, '.', '-' and '_' (at most 200 bytes; not "main", no leading '-', no "." or
 * ".." segment, no segment beginning with '_'): OG_E_BAD_REQUEST otherwise. OG_E_EXISTS when the
 * name is taken, or one of it and an existing name is a '/' prefix of the other ("a" and "a/b"
 * cannot both exist); of creators racing for one name exactly one succeeds. OG_E_NOT_FOUND for
 * an unknown `from` or `at`; OG_E_PRECONDITION_FAILED when `at` was made under another schema
 * than the accepted one (before an og_graph_schema_apply: branches start under the accepted
 * schema). On success *out (may be NULL) describes the branch, freed with
 * og_branch_info_free. */
OG_EXTERN int og_graph_create_branch(og_branch_info **out, og_graph *g, const char *name,
                                     const og_branch_options *opt);
/* Delete branch `name`. OG_E_BAD_REQUEST for "main"; OG_E_NOT_FOUND when it does not exist;
 * OG_E_CONFLICT while a write on it runs; OG_E_RECOVERY_REQUIRED while an interrupted write on it
 * is unresolved (og_error.operation_id); OG_E_PRECONDITION_FAILED while a branch forked from it
 * exists (it reads this one's history: delete it first). Commits of the branch stay readable
 * from branches that contain them. */
OG_EXTERN int og_graph_delete_branch(og_graph *g, const char *name);

/* ---- Branch merge ----------------------------------------------------------------------------
 * Merge one branch into another as a graph write (docs/merge.md): the merge base is the best
 * common ancestor of the two heads in the commit DAG (merged parents followed); each type whose
 * table moved on the source since the base is merged row by row (a row changed on one side is
 * taken from it; the same change on both sides is kept; different changes to one row are
 * conflicts), and the merged result is validated as a load would be. The outcome is
 * "already_up_to_date" (nothing written), "fast_forward" (the target had not moved: it takes the
 * source's content) or "merged" (both had moved); the last two make one commit on the target
 * whose merged parent is the source head. On conflicts nothing is written. */
typedef enum og_merge_outcome {
    OG_MERGE_UP_TO_DATE = 1,
    OG_MERGE_FAST_FORWARD = 2,
    OG_MERGE_MERGED = 3,
} og_merge_outcome;
/* "already_up_to_date", "fast_forward", "merged"; NULL for another value. */
OG_EXTERN const char *og_merge_outcome_name(int outcome);

/* One conflict. Strings are owned by the merge result. */
typedef struct og_merge_conflict {
    const char *kind;    /* divergent_insert, divergent_update, delete_vs_update (rows changed
                          * apart on both sides); orphan_edge, unique_violation,
                          * cardinality_violation, value_constraint_violation (the merged
                          * result breaks a constraint) */
    const char *type;    /* the node or edge type */
    const char *id;      /* the row id; NULL when a validation conflict has none */
    const char *message; /* one line */
} og_merge_conflict;

/* Options for og_graph_merge(). Initialise with OG_MERGE_OPTIONS_INIT. */
#define OG_MERGE_OPTIONS_VERSION 1
typedef struct og_merge_options {
    int version;           /* OG_MERGE_OPTIONS_VERSION */
    const char *source;    /* the branch to merge (required) */
    const char *into;      /* the target branch (NULL or "main": main) */
    const char *if_commit; /* NULL, or the commit the target's head must be
                            * (OG_E_PRECONDITION_FAILED otherwise) */
    int delete_branch;     /* nonzero: delete the source once it is merged (not for main; not
                            * after a conflict) */
} og_merge_options;
#define OG_MERGE_OPTIONS_INIT                                                                      \
    {                                                                                              \
        OG_MERGE_OPTIONS_VERSION, NULL, NULL, NULL, 0                                              \
    }
OG_EXTERN int og_merge_options_init(og_merge_options *opts, int version);

/* What a merge did (or the conflicts that stopped it). Immutable; og_merge_result_free. */
typedef struct og_merge_result {
    int outcome;                     /* og_merge_outcome (0 when it failed before deciding) */
    const char *source, *target;     /* branch names */
    char commit[OG_ID_LEN + 1];      /* the commit made on the target ("" when none) */
    char base[OG_ID_LEN + 1];        /* the merge base */
    char source_head[OG_ID_LEN + 1]; /* the source head merged */
    size_t types_changed;            /* types whose table on the target the merge changed */
    uint64_t rows_changed;           /* rows it upserted or deleted on the target */
    uint64_t rows_read;              /* rows the classification read */
    int source_deleted;              /* delete_branch: the source was deleted */
} og_merge_result;
/* On OG_E_MERGE_CONFLICTS, every conflict found (none otherwise): og_merge_result_conflict
 * gives the i-th, or NULL out of range. */
OG_EXTERN size_t og_merge_result_conflict_count(const og_merge_result *r);
OG_EXTERN const og_merge_conflict *og_merge_result_conflict(const og_merge_result *r, size_t i);
OG_EXTERN void og_merge_result_free(og_merge_result *r);

/* Merge branch opt->source into opt->into (NULL or "main": main). *out (required) describes the
 * outcome; on OG_E_MERGE_CONFLICTS it is also set, holding every conflict; on other failures it
 * is NULL. OG_E_NOT_FOUND names an unknown branch; OG_E_BAD_REQUEST without opt or
 * opt->source, or for a branch merged into itself; OG_E_CONFLICT when the histories have no single
 * merge base (docs/merge.md, "criss-cross") or the two sides have different schemas. */
OG_EXTERN int og_graph_merge(og_merge_result **out, og_graph *g, const og_merge_options *opt);
/* ---- Verification -------------------------------------------------------------------------- */
/* Check a graph root without writing to it (CLI: `omnigraph verify`, docs/maintenance.md
 * "Verifying a graph"): every retained graph-manifest version reconstructs, the head's lineage
 * names only parents that exist, every table version a retained commit pins exists and is at
 * or below its Lance HEAD (above it only with a pending recovery intent naming the table),
 * every file those versions reference exists with its recorded size, table manifests and
 * deletion files match their recorded checksums, recovery intents parse, the audit log opens, and
 * the schema files exist and carry the identity the head names. With deep, every data file is also
 * read whole, compared with the checksum our writers record (files lancedb or older builds wrote
 * have none: counted as unchecked, never as damage) and every page of it decoded. Problems are
 * reported, not raised: the call returns 0 whenever it could look at the root. */
#define OG_VERIFY_OPTIONS_VERSION 1
typedef struct og_verify_options {
    int version; /* OG_VERIFY_OPTIONS_VERSION */
    int deep;    /* nonzero: read and decode every data file (cost: every byte of the graph) */
    /* Called now and then with a line saying what is being checked (NULL: none). */
    void (*progress)(void *arg, const char *what);
    void *progress_arg;
} og_verify_options;
#define OG_VERIFY_OPTIONS_INIT                                                                     \
    {                                                                                              \
        OG_VERIFY_OPTIONS_VERSION, 0, NULL, NULL                                                   \
    }
OG_EXTERN int og_verify_options_init(og_verify_options *opts, int version);

/* One problem found. kind is a word (docs/cli.md lists them: "file_missing", "file_size",
 * "checksum", "page_decode", "deletion_file", "table_version_missing", "table_ahead",
 * "manifest_version_unreadable", "lineage_parent_missing", "sidecar_damaged", "audit_log",
 * "schema_missing", "schema_damaged", "schema_mismatch", ...); object names the file or object
 * (relative to the root; a table version as "path@version"); remedy says what fixes it. */
typedef struct og_verify_problem {
    const char *kind;
    const char *object;
    const char *message;
    const char *remedy;
} og_verify_problem;

/* What og_root_verify found and checked. Allocated by the library: og_verify_report_free. */
typedef struct og_verify_report {
    uint64_t manifest_versions; /* graph-manifest versions reconstructed */
    uint64_t tables;            /* tables the head pins */
    uint64_t table_versions;    /* distinct Lance versions checked (tables, graph manifest, audit
                                 * log) */
    uint64_t files;             /* distinct files checked */
    uint64_t bytes;             /* their bytes */
    uint64_t checksummed;       /* data files, deletion files and table manifests with a
                                 * recorded checksum */
    uint64_t unchecked;         /* those without one (lancedb's, older builds', recovery's) */
    uint64_t rows;              /* rows decoded (deep) */
    uint64_t sidecars;          /* recovery intents found under __recovery/ */
    uint64_t branches;          /* graph branches other than main, checked at their heads */
} og_verify_report;
/* The problems found (0: the graph verified clean): og_verify_report_problem gives the i-th,
 * or NULL out of range. */
OG_EXTERN size_t og_verify_report_problem_count(const og_verify_report *r);
OG_EXTERN const og_verify_problem *og_verify_report_problem(const og_verify_report *r, size_t i);

/* Verify the graph in root_dir (opened read-only here, so a graph that does not open still
 * verifies; opt NULL: the defaults). Errors: OG_E_NOT_FOUND when root_dir holds no graph
 * manifest, OG_E_UNSUPPORTED for a URI root, OG_E_STORAGE, OG_E_NOMEM. On success the caller
 * frees *out with og_verify_report_free; on failure it is NULL. */
OG_EXTERN int og_root_verify(og_verify_report **out, const char *root_dir,
                             const og_verify_options *opt);
OG_EXTERN void og_verify_report_free(og_verify_report *r);

#ifdef __cplusplus
}
#endif
#endif /* OMNIGRAPH_H */
