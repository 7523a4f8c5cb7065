/* omnigraph: an embedded, versioned, branchable property-graph database on Lance datasets.
 *
 * This is the only public header. Conventions (see docs/conventions.md):
 *  - every fallible call returns int: 0 on success, a negative OG_E... code on failure;
 *    out-parameters come first;
 *  - after a failure, og_error_last() describes it for the calling thread;
 *  - options structs carry a `version` field; initialise them with their ..._INIT macro;
 *  - every returned allocation names its free function, and every _free() accepts NULL.
 *
 * Caveats: the error state is per thread; a call made on another thread does not change it.
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
#define OG_VERSION_MINOR 1
#define OG_VERSION_PATCH 0
#define OG_VERSION_STRING "0.1.0"
#define OG_VERSION_NUMBER (OG_VERSION_MAJOR * 10000 + OG_VERSION_MINOR * 100 + OG_VERSION_PATCH)

/* The library's version string ("MAJOR.MINOR.PATCH"); static storage, never NULL. */
OG_EXTERN const char *og_version(void);
/* The library's version as OG_VERSION_NUMBER computes it, to compare against the header. */
OG_EXTERN int og_version_number(void);

/* ---- Errors ------------------------------------------------------------------------------- */

/* Error codes. Stable: values never change meaning; new codes are only appended. */
typedef enum og_code {
    OG_OK = 0,
    OG_E_STORAGE = -1,            /* the object store failed; see og_error.storage_kind */
    OG_E_NOT_FOUND = -2,          /* a named object, table, branch or version does not exist */
    OG_E_EXISTS = -3,             /* create-if-absent found the name taken */
    OG_E_BAD_REQUEST = -4,        /* invalid input; og_error.file/line/column locate it */
    OG_E_READ_SET_CONFLICT = -5,  /* a read-set member moved; member, expected, actual say how */
    OG_E_KEY_CONFLICT = -6,       /* a strict insert met an existing key; og_error.key names it */
    OG_E_MERGE_CONFLICTS = -7,    /* a branch merge found conflicting changes */
    OG_E_RECOVERY_REQUIRED = -8,  /* an interrupted write must be recovered; see operation_id */
    OG_E_PRECONDITION_FAILED = -9,/* a caller-supplied precondition (e.g. --if-commit) failed */
    OG_E_RESOURCE_LIMIT = -10,    /* a configured limit (size, retries, memory) was reached */
    OG_E_CORRUPT = -11,           /* stored bytes are damaged or not what they claim to be */
    OG_E_UNSUPPORTED = -12,       /* valid but not supported by this build (e.g. a format version) */
    OG_E_CONFLICT = -13,          /* a concurrent commit took the version this one needed */
    OG_E_NOMEM = -14,             /* memory allocation failed */
    OG_E_INTERNAL = -15,          /* an internal invariant failed: a bug, please report it */
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

/* ---- Store self-check --------------------------------------------------------------------- */

/* Options for og_store_selfcheck(). Initialise with OG_SELFCHECK_OPTIONS_INIT. */
#define OG_SELFCHECK_OPTIONS_VERSION 1
typedef struct og_selfcheck_options {
    int version;        /* OG_SELFCHECK_OPTIONS_VERSION */
    unsigned rounds;    /* number of put / put_if_absent / get rounds; 0 means 16 */
} og_selfcheck_options;
#define OG_SELFCHECK_OPTIONS_INIT {OG_SELFCHECK_OPTIONS_VERSION, 0}

typedef struct og_selfcheck_result {
    unsigned rounds;         /* rounds completed */
    uint64_t store_ops;      /* object-store operations performed */
    uint64_t fsyncs;         /* fsync/fdatasync calls performed */
    double put_us_p50;       /* median latency of a durable put, microseconds */
    double put_if_absent_us_p50; /* median latency of a durable put_if_absent */
} og_selfcheck_result;

/* Exercise a durable local object store rooted at `dir` (created if missing): atomic puts,
 * create-if-absent races against itself, reads back and listing, then removes what it wrote.
 * Fills *out. Fails with OG_E_STORAGE when the filesystem cannot give the guarantees the
 * engine needs (for example when it has no hard links). */
OG_EXTERN int og_store_selfcheck(og_selfcheck_result *out, const char *dir,
                                 const og_selfcheck_options *opts);

/* ---- Schema and query language ---------------------------------------------------------- */
/* Check .pg schemas and .gq queries without a graph: diagnostics, lint and the schema-diff
 * plan. Codes and rules: docs/languages.md. */

#define OG_DIAG_ERROR 0
#define OG_DIAG_WARNING 1

/* One diagnostic. Strings are owned by the report. */
typedef struct og_diagnostic {
    const char *code;    /* stable: "S007", "Q000", "T5", "L201", ... */
    int severity;        /* OG_DIAG_ERROR or OG_DIAG_WARNING */
    const char *message;
    const char *file;    /* the file name the caller passed */
    int line;            /* 1-based */
    int column;          /* 1-based, in bytes */
} og_diagnostic;

/* The outcome of a check, lint or plan: diagnostics plus a text and a JSON rendering. */
typedef struct og_lang_report og_lang_report;

/* Check the .pg source `src` (len bytes; `file` names it in diagnostics).
 * Returns 0 when valid, OG_E_BAD_REQUEST when it has errors (og_error_last() locates the
 * first), or another negative code (then *out is NULL). On 0 and OG_E_BAD_REQUEST, *out is a
 * report the caller frees with og_lang_report_free(). */
OG_EXTERN int og_schema_check(og_lang_report **out, const char *file, const char *src, size_t len);

/* Type-check and lint the .gq source against the .pg schema. Same return convention as
 * og_schema_check; warnings alone do not fail. The JSON gives each query's status, result
 * columns with their kinds, and the types it reads and writes. */
OG_EXTERN int og_query_lint(og_lang_report **out, const char *schema_file, const char *schema_src,
                            size_t schema_len, const char *query_file, const char *query_src,
                            size_t query_len);

/* Plan the steps from the accepted schema `from` to the desired schema `to` (planning only).
 * Returns 0 when every step is supported, OG_E_UNSUPPORTED when some change is not (the
 * report lists it as unsupported_change with a code and reason), OG_E_BAD_REQUEST when either
 * schema has errors; in those three cases *out is a report to free. Drops are soft unless
 * allow_data_loss is nonzero. */
OG_EXTERN int og_schema_plan(og_lang_report **out, const char *from_file, const char *from_src,
                             size_t from_len, const char *to_file, const char *to_src,
                             size_t to_len, int allow_data_loss);

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
 * Streams made from it keep it alive, so it may be freed while they are still in use. */
typedef struct og_table og_table;

/* Open the table in directory `dir` at `version` (0: the latest). Errors: OG_E_NOT_FOUND when
 * dir is not a directory, holds no versions, or lacks that version; OG_E_CORRUPT for a damaged
 * manifest; OG_E_UNSUPPORTED for manifest features this build cannot interpret; OG_E_STORAGE.
 * On success the caller owns *out (og_table_free); on failure *out is NULL. */
OG_EXTERN int og_table_open(og_table **out, const char *dir, uint64_t version);
OG_EXTERN void og_table_free(og_table *t);
/* The version this snapshot is. */
OG_EXTERN uint64_t og_table_version(const og_table *t);

/* The table's columns as an Arrow schema: a struct ("+s") whose children are the top-level
 * fields. The caller owns *out and calls out->release(out). */
OG_EXTERN int og_table_schema(struct ArrowSchema *out, const og_table *t);
/* Write the schema to f: json nonzero gives one line
 *   {"fields":[{"name":..,"type":..,"nullable":..,"children":[..]},..]}
 * with Lance logical type strings ("int64", "string", "timestamp:us:UTC",
 * "fixed_size_list:float:4", "list", "struct"; children for list and struct only); json zero
 * gives an indented text listing. */
OG_EXTERN int og_table_write_schema(FILE *f, const og_table *t, int json);

/* Storage facts of the snapshot. */
typedef struct og_table_info {
    uint64_t version;
    uint64_t columns;             /* top-level fields */
    uint64_t fragments;
    uint64_t data_files;
    uint64_t data_bytes;          /* sum of the data file sizes the manifest records */
    uint64_t physical_rows;       /* rows stored, deleted ones included */
    uint64_t rows;                /* rows visible (physical minus deleted) */
    uint64_t deleted_rows;
    uint64_t deletion_files;      /* = deletion_files_arrow + deletion_files_bitmap */
    uint64_t deletion_files_arrow;  /* .arrow (Arrow IPC) deletion files */
    uint64_t deletion_files_bitmap; /* .bin (roaring bitmap) deletion files */
    char data_storage_version[16];  /* "2.0", "2.1", ..., or "" for a legacy table */
    char naming[4];               /* manifest naming: "v1" ({v}.manifest) or "v2" */
    uint64_t reader_flags;        /* feature flags of the manifest */
    uint64_t writer_flags;
    int stable_row_ids;           /* 1 when rows carry stable row ids (flag 2) */
    int64_t timestamp_ns;         /* commit time, nanoseconds since the epoch (UTC) */
} og_table_info;

/* Fill *out. Counting deleted rows may read deletion files that do not record their count. */
OG_EXTERN int og_table_stats(og_table_info *out, const og_table *t);

/* One entry of a table's history. */
typedef struct og_table_version_info {
    uint64_t version;
    int64_t timestamp_ns;         /* commit time, nanoseconds since the epoch (UTC) */
    uint64_t fragments;
    uint64_t physical_rows;
} og_table_version_info;

/* Every version of the table t belongs to (not just those up to t's version), ascending. The
 * caller frees *out with og_table_versions_free; *n is the count. */
OG_EXTERN int og_table_versions(og_table_version_info **out, size_t *n, const og_table *t);
OG_EXTERN void og_table_versions_free(og_table_version_info *v);

/* Which rows and columns a scan or a dump returns. Initialise with OG_SCAN_OPTIONS_INIT. */
#define OG_SCAN_OPTIONS_VERSION 1
typedef struct og_scan_options {
    int version;                  /* OG_SCAN_OPTIONS_VERSION */
    const char *const *columns;   /* top-level columns in output order (NULL: all, schema order) */
    size_t n_columns;
    int64_t limit;                /* at most this many rows (< 0: all) */
} og_scan_options;
#define OG_SCAN_OPTIONS_INIT {OG_SCAN_OPTIONS_VERSION, NULL, 0, -1}

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

#ifdef __cplusplus
}
#endif
#endif /* OMNIGRAPH_H */
