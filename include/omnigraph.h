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

#ifdef __cplusplus
}
#endif
#endif /* OMNIGRAPH_H */
