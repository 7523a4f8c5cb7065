/* Lance datasets: a table root in an object store, read at a version and written by staged
 * operations committed as new versions.
 *
 * A dataset handle is an immutable snapshot: the manifest of one version plus the Arrow
 * schema of its fields. Writes are two steps (the shape the write protocol needs, RFC-022
 * §4.2): stage an operation against a snapshot (data and deletion files are written, nothing
 * becomes visible, HEAD does not move), then commit the staged operation. A commit in this
 * module happens exactly at read_version + 1 with zero retries: if that version is taken the
 * commit fails with OG_E_CONFLICT and the staged files are left reclaimable. (Rebase onto a
 * newer version under Lance's conflict rules is issue 4's.)
 *
 * Row addresses are (fragment id << 32) | row offset in the fragment. With stable row ids
 * (flag 2, on by default for tables we create) every row also has a row id that survives
 * updates and compaction.
 *
 * Ownership: lance_dataset_free / lance_staged_free / lance_scanner_free; every batch a
 * scanner returns is the caller's (arrow_batch_free). A dataset handle may be read by several
 * threads; scanners and staged operations are single-threaded. */
#ifndef OG_LANCE_DATASET_H
#define OG_LANCE_DATASET_H

#include "arrow/arrow.h"
#include "lance/deletion.h"
#include "lance/manifest.h"
#include "lance/paths.h"
#include "lance/version.h"
#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LANCE_ROW_ADDR(frag, off) (((uint64_t)(frag) << 32) | (uint64_t)(uint32_t)(off))
#define LANCE_ROW_ADDR_FRAG(a) ((uint64_t)(a) >> 32)
#define LANCE_ROW_ADDR_OFF(a) ((uint32_t)((a)&0xffffffffu))

/* Default bound on rows per data file (lance's own default is 1,048,576). */
#define LANCE_DEFAULT_MAX_ROWS_PER_FILE (1u << 20)

typedef struct lance_dataset {
    store *s;
    char *root;          /* table root key prefix ("" or "a/t.lance") */
    lance_naming naming; /* manifest naming scheme to continue with */
    lance_manifest *m;   /* the snapshot's manifest */
    arrow_schema schema; /* its fields as Arrow (top level) */
    int32_t *field_ids;  /* pre-order Lance field ids of schema */
    size_t n_field_ids;
} lance_dataset;

typedef struct lance_create_options {
    int version;         /* 1 */
    bool stable_row_ids; /* flag 2 (default true) */
    bool v1_names;       /* V1 manifest names (default false: V2) */
    /* Top-level field names marked as the unenforced primary key, in key order. */
    const char *const *primary_key;
    size_t n_primary_key;
    /* Field metadata: metadata[i] applies to the top-level field named meta_field[i]. */
    const char *const *meta_field;
    const char *const *meta_key;
    const char *const *meta_value;
    size_t n_meta;
    /* Key indexes this engine maintains on the table (keyindex.h): "col[>payload];..." or
     * NULL for none. */
    const char *key_indexes;
    /* Chained versions from version 1 on (manifest.h, "chained versions"); only
     * lance_dataset_create_rows. */
    bool chain;
} lance_create_options;

#define LANCE_CREATE_OPTIONS_INIT                                                                  \
    {                                                                                              \
        1, true, false, NULL, 0, NULL, NULL, NULL, 0, NULL, false                                  \
    }

/* Create version 1 of an empty table (no fragments) with this schema. OG_E_EXISTS if the
 * root already has versions. */
int lance_dataset_create(lance_dataset **out, store *s, const char *root,
                         const arrow_schema *schema, const lance_create_options *opt);
/* 0 if root has no version yet; OG_E_EXISTS naming it if it has one. */
int lance_dataset_check_absent(store *s, const char *root);
/* Open version `version` (0: the latest) for reading or writing on top of. */
int lance_dataset_open(lance_dataset **out, store *s, const char *root, uint64_t version,
                       lance_access access);
void lance_dataset_free(lance_dataset *ds);
/* A snapshot around an already decoded manifest (takes ownership of m, also on failure). */
int lance_dataset_from_manifest(lance_dataset **out, store *s, const char *root,
                                lance_naming naming, lance_manifest *m);

uint64_t lance_dataset_version(const lance_dataset *ds);
/* Rows visible at this version (physical rows minus deleted rows; a deletion file that does
 * not record its count is read). */
int lance_dataset_count_rows(const lance_dataset *ds, uint64_t *out);
/* Index of the top-level field called name, or OG_E_BAD_REQUEST naming it. */
int lance_dataset_column(const lance_dataset *ds, const char *name, size_t *idx);
bool lance_dataset_stable_row_ids(const lance_dataset *ds);

/* The dataset directory holding a file of ds: ds->root, or the base path base_id names in
 * ds's manifest (OG_E_CORRUPT if there is none; OG_E_UNSUPPORTED for a base path that is not
 * a dataset root or lies outside the store). */
int lance_dataset_file_root(const lance_dataset *ds, int has_base_id, uint32_t base_id,
                            char out[STORE_KEY_MAX]);
/* lance_deletion_load for a deletion file of ds, resolving its base_id. */
int lance_dataset_deletion_load(const lance_dataset *ds, uint64_t frag_id,
                                const Lance__Table__DeletionFile *df, roaring_bitmap_t **out);

/* ---- Fragments, as the layers above read them ----------------------------------------------- */
/* Outside src/lance nothing reads the protobuf messages of a manifest: what the graph, exec,
 * write and api layers need of a snapshot's fragments comes through these (enforced by
 * tests/conventions/check_layers.sh). */

typedef struct lance_fragment_info {
    uint64_t id;
    uint64_t physical_rows; /* rows of its data files, deleted ones included */
    size_t n_files;         /* data files */
    bool deletions;         /* it has a deletion file, which the next three describe */
    uint64_t deletion_id;
    uint64_t deletion_read_version;
    uint64_t deleted_rows; /* as the deletion file's record says (0: not recorded) */
} lance_fragment_info;

/* Fragments of ds's snapshot. */
size_t lance_dataset_fragment_count(const lance_dataset *ds);
/* Fragment i (< lance_dataset_fragment_count) of ds's snapshot, in manifest (scan) order. */
void lance_dataset_fragment_info(const lance_dataset *ds, size_t i, lance_fragment_info *out);
/* Whether a and b describe one fragment unchanged: the same id and rows, and the same deletion
 * file or none. */
bool lance_fragment_info_same(const lance_fragment_info *a, const lance_fragment_info *b);
/* The store keys of a snapshot's files, for comparing fragments by physical identity: each
 * base path is resolved once (resolving one may cost a realpath) and kept while it lives. */
typedef struct lance_file_keys lance_file_keys;
int lance_file_keys_new(lance_file_keys **out, const lance_dataset *ds);
void lance_file_keys_free(lance_file_keys *k);
/* Append the store keys of fragment i's data files to out, each with its NUL, in order: the
 * fragment's physical identity (two fragments with equal keys hold the same rows at the same
 * offsets). */
int lance_file_keys_fragment(lance_file_keys *k, size_t i, core_buf *out);
/* The store key of fragment i's deletion file, or "" when it has none: equal keys are the same
 * deleted rows. */
int lance_file_keys_deletion(lance_file_keys *k, size_t i, char key[STORE_KEY_MAX]);
/* Fragment i's deleted rows (*out NULL when it has no deletion file). */
int lance_dataset_fragment_deletions(const lance_dataset *ds, size_t i, roaring_bitmap_t **out);

/* Data file j (< n_files) of fragment i, for checking it: where it is and what our writers
 * recorded of it. block_xxh3 points into ds's manifest (valid while ds lives). */
typedef struct lance_data_file_info {
    char key[STORE_KEY_MAX];
    uint64_t size; /* recorded size in bytes (0: not recorded) */
    bool has_xxh3; /* a checksum of the whole file (og_xxh3) */
    uint64_t xxh3;
    uint64_t block_bytes; /* block checksums (og_block_*): 0 or none when absent */
    size_t n_block_xxh3;
    const uint64_t *block_xxh3;
} lance_data_file_info;
int lance_dataset_data_file(const lance_dataset *ds, size_t i, size_t j, lance_data_file_info *out);
/* Whether fragment i's deletion file records a checksum of its bytes (false with none). */
bool lance_dataset_deletion_checksummed(const lance_dataset *ds, size_t i);
/* Base paths the manifest lists, and the directory of base path i (< count) when it is a
 * dataset root (lance_dataset_file_root's errors otherwise). */
size_t lance_dataset_base_path_count(const lance_dataset *ds);
int lance_dataset_base_dir(const lance_dataset *ds, size_t i, char dir[STORE_KEY_MAX]);
/* Each Lance index ds's version lists (its IndexSection): fn with the key prefix its files
 * lie under ("<root>/_indices/<uuid>/"); one under another base path is not passed and
 * *foreign (may be NULL) counts it. OG_E_CORRUPT for an index without a 16-byte uuid. */
int lance_dataset_indices(const lance_dataset *ds, int (*fn)(void *arg, const char *prefix),
                          void *arg, size_t *foreign);
/* Whether some fragment keeps its row ids or row versions in external files (which this
 * engine neither writes nor copies). */
bool lance_dataset_external_sequences(const lance_dataset *ds);
/* The value of table metadata entry `key` of ds's version ("" when absent). */
const char *lance_dataset_table_meta(const lance_dataset *ds, const char *key);

/* ---- Filters ------------------------------------------------------------------------------ */

/* A conjunction of `column op value` terms over top-level scalar columns (n = 0: every row).
 * A null value in the column never matches. */
typedef struct lance_term {
    const char *column;
    arrow_cmp_op op;
    arrow_scalar value;
} lance_term;

typedef struct lance_filter {
    const lance_term *terms;
    size_t n;
} lance_filter;

/* ---- Scans -------------------------------------------------------------------------------- */

typedef struct lance_scan_options {
    int version;                /* 1 */
    const char *const *columns; /* top-level columns to return (NULL: all, in schema order) */
    size_t n_columns;
    const lance_filter *filter;     /* NULL: no filter */
    int64_t limit;                  /* < 0: no limit */
    bool with_row_addr;             /* append a UInt64 column "_rowaddr" */
    bool with_row_id;               /* append a UInt64 column "_rowid" (stable row ids only) */
    size_t batch_rows;              /* rows per batch at most (0: one batch per data file read) */
    const uint64_t *skip_fragments; /* fragment ids not to read, ascending (NULL: none) */
    size_t n_skip_fragments;
} lance_scan_options;

#define LANCE_SCAN_OPTIONS_INIT                                                                    \
    {                                                                                              \
        1, NULL, 0, NULL, -1, false, false, 0, NULL, 0                                             \
    }

typedef struct lance_scanner lance_scanner;

int lance_scanner_open(lance_scanner **out, const lance_dataset *ds, const lance_scan_options *opt);
/* The next non-empty batch, or *out = NULL at the end. */
int lance_scanner_next(lance_scanner *sc, arrow_batch **out);
/* The schema of the batches this scanner returns. */
const arrow_schema *lance_scanner_schema(const lance_scanner *sc);
void lance_scanner_free(lance_scanner *sc);

/* Convenience: the whole scan as one batch (may be empty, never NULL on success). */
int lance_dataset_scan_all(arrow_batch **out, const lance_dataset *ds,
                           const lance_scan_options *opt);

/* ---- Staged writes ------------------------------------------------------------------------ */

/* Rows of every fragment of ds, deleted ones included (no deletion file is read). */
uint64_t lance_dataset_physical_rows(const lance_dataset *ds);
/* Where the row at addr comes in a scan of ds: its fragment's index in the manifest << 32 |
 * its offset (UINT64_MAX when ds has no such fragment). Ordering rows by it is scan order. */
uint64_t lance_dataset_scan_pos(const lance_dataset *ds, uint64_t addr);

/* The values of one column at these row addresses (any order, repeats allowed), in that
 * order: per fragment, one reader of its data file and only the pages around the rows wanted
 * (exact ranged reads); a fragment from which many rows are wanted is read whole. OG_E_NOT_FOUND
 * for an address the snapshot does not have. Deleted rows are not checked: the caller's addresses
 * come from live rows. */
int lance_dataset_take_column(arrow_array **out, const lance_dataset *ds, const char *column,
                              const uint64_t *addrs, size_t n);

typedef struct lance_write_options {
    int version;                /* 1 */
    uint64_t max_rows_per_file; /* 0: LANCE_DEFAULT_MAX_ROWS_PER_FILE */
    const char *uuid;           /* the transaction identity (NULL: a new random uuid) */
    bool txn_file;              /* also write the transaction as a _transactions/ file, as
                                   lance does; by default it is only inside the manifest,
                                   where lance reads it first (one object fewer per commit) */
    bool chain;                 /* the version records its and its parent's checksums
                                   (manifest.h, "chained versions"), even when the base
                                   does not: starts the chain */
} lance_write_options;

#define LANCE_WRITE_OPTIONS_INIT                                                                   \
    {                                                                                              \
        1, 0, NULL, false, false                                                                   \
    }

typedef enum lance_merge_mode {
    LANCE_MERGE_UPSERT = 0,      /* matched rows are replaced, others inserted */
    LANCE_MERGE_INSERT_ONLY = 1, /* any match fails with OG_E_KEY_CONFLICT naming the key */
} lance_merge_mode;

typedef struct lance_staged lance_staged;

/* Append rows (batches must have the dataset's schema). */
int lance_stage_append(lance_staged **out, const lance_dataset *ds, arrow_batch *const *b, size_t n,
                       const lance_write_options *opt);
/* Replace the whole content (and schema) with these rows. */
int lance_stage_overwrite(lance_staged **out, const lance_dataset *ds, const arrow_schema *schema,
                          arrow_batch *const *b, size_t n, const lance_write_options *opt);
/* Add rows to a stage made by lance_stage_append or lance_stage_overwrite (batches in the
 * schema it writes): more data files of the same transaction, so rows given in chunks need
 * not all be in memory at once (a bulk load). On error the stage is unusable: discard it. */
int lance_stage_add_rows(lance_staged *st, arrow_batch *const *b, size_t n);
/* Delete the rows matching the filter / at these row addresses. */
int lance_stage_delete(lance_staged **out, const lance_dataset *ds, const lance_filter *filter,
                       const lance_write_options *opt);
int lance_stage_delete_rows(lance_staged **out, const lance_dataset *ds, const uint64_t *addrs,
                            size_t n, const lance_write_options *opt);
/* Set columns of the rows matching the filter: set_columns[i] = values[i] (a scalar of the
 * column's type; is_null sets null). Rows are rewritten into a new fragment, keeping their
 * row ids. */
int lance_stage_update(lance_staged **out, const lance_dataset *ds, const lance_filter *filter,
                       const char *const *set_columns, const arrow_scalar *values, size_t n_set,
                       const lance_write_options *opt);
/* Merge rows keyed on a top-level column (non-null, unique within the input). */
int lance_stage_merge_insert(lance_staged **out, const lance_dataset *ds, const char *key_column,
                             arrow_batch *const *b, size_t n, lance_merge_mode mode,
                             const lance_write_options *opt);
/* The same merge that, in the same transaction, also deletes every row whose key (a text key
 * column) is one of delete_keys[0..n_delete_keys) (a key no row holds deletes nothing; a key
 * both in the input and among them is OG_E_BAD_REQUEST). One Update, as merge-insert's: the
 * touched fragments' deletion vectors take the replaced and the deleted rows together, the
 * input rows go to new fragments. No input rows and no row to delete: a no-op stage. */
int lance_stage_merge_insert_ex(lance_staged **out, const lance_dataset *ds, const char *key_column,
                                arrow_batch *const *b, size_t n, lance_merge_mode mode,
                                const char *const *delete_keys, size_t n_delete_keys,
                                const lance_write_options *opt);

/* An upsert given in chunks (a bulk load in merge mode), keyed on a text column: each batch
 * added is looked up in the read version (through the key index) on its own, its rows whose
 * key a row holds replace that row (new fragments keeping its row id and creation version)
 * and the others are appended, so only one batch is in memory at a time; the replaced rows
 * become one deletion file per fragment at lance_stage_upsert_finish, which must come before
 * the commit. A key given twice is not refused (its later rows are appended): the caller
 * checks the whole input before it commits. The stage is an Append until a row is replaced,
 * then an Update, as lance_stage_merge_insert's. On error the stage is unusable: discard it. */
int lance_stage_upsert(lance_staged **out, const lance_dataset *ds, const char *key_column,
                       const lance_write_options *opt);
int lance_stage_upsert_add(lance_staged *st, arrow_batch *const *b, size_t n);
int lance_stage_upsert_finish(lance_staged *st);

/* What a staged operation will do, for callers that plan (the write path's Effects). */
typedef struct lance_staged_info {
    const char *uuid; /* transaction identity */
    uint64_t read_version;
    lance_naming naming;   /* the read version's manifest naming */
    uint64_t rows_added;   /* rows in new fragments */
    uint64_t rows_deleted; /* rows newly deleted from existing fragments */
    size_t files_written;  /* data + deletion files staged */
    bool noop;             /* nothing to commit (e.g. a delete that matched nothing) */
} lance_staged_info;

void lance_staged_get_info(const lance_staged *st, lance_staged_info *out);

typedef enum lance_commit_mode {
    LANCE_COMMIT_EXACT = 0,  /* exactly read_version + 1, zero retries */
    LANCE_COMMIT_REBASE = 1, /* on a lost race, check every transaction since the read version
                                against Lance's conflict rules and, where compatible, rebuild
                                on the latest version and try again */
} lance_commit_mode;

typedef struct lance_commit_options {
    int version; /* 1 */
    lance_commit_mode mode;
    unsigned max_attempts; /* REBASE: attempts in all (0: 20) */
} lance_commit_options;

#define LANCE_COMMIT_OPTIONS_INIT                                                                  \
    {                                                                                              \
        1, LANCE_COMMIT_EXACT, 0                                                                   \
    }

typedef struct lance_commit_result {
    uint64_t version;      /* the version created (or the read version for a no-op) */
    unsigned attempts;     /* commit attempts made */
    unsigned rebased_over; /* versions committed by others that this one was rebased over */
} lance_commit_result;

/* Commit under the options. OG_E_CONFLICT when the version is taken (EXACT), when a
 * concurrent transaction is incompatible or overlapping (REBASE: the message says whether
 * re-staging on the new version can succeed; expected/actual name the read version and the
 * conflicting one), or when attempts run out. Nothing is published on failure. */
int lance_staged_commit_ex(lance_staged *st, const lance_commit_options *opt,
                           lance_dataset **out_ds, lance_commit_result *res);

/* The version created by the transaction with this uuid, searching from version `from`
 * (0: 1) to the latest: a caller proves "version v is transaction u" by identity, never by
 * version arithmetic. OG_E_NOT_FOUND if no such version exists. */
int lance_find_txn_version(store *s, const char *root, const char *uuid, uint64_t from,
                           uint64_t *version);

/* Also make `key` (an object written with STORE_F_NOSYNC) durable in the commit's batch of
 * syncs, before the manifest is linked: a caller's own record that must be durable before
 * the commit is visible costs no round of its own. A no-op stage commits (and syncs)
 * nothing. */
int lance_staged_also_durable(lance_staged *st, const char *key);

/* Commit at exactly read_version + 1. On success *out_ds (optional) is the new snapshot and
 * *version (optional) its number. A no-op stage commits nothing and returns the read version.
 * OG_E_CONFLICT if that version already exists (nothing was published). */
int lance_staged_commit(lance_staged *st, lance_dataset **out_ds, uint64_t *version);
/* Forget a staged operation. Files it wrote stay until cleanup reclaims them: nothing refers
 * to them, so they are invisible. */
void lance_staged_free(lance_staged *st);
/* Forget a staged operation that was never committed and delete the files it wrote (best
 * effort: what stays is an orphan for cleanup). Once a commit of it was attempted its files
 * may be named by a version, so then it only frees. NULL is a no-op. */
void lance_staged_discard(lance_staged *st);
/* Call fn with the key of every file the stage wrote (data, deletion, key index segments),
 * stopping at the first non-zero return, which is returned. */
int lance_staged_files(const lance_staged *st, int (*fn)(void *arg, const char *key), void *arg);

/* One-call helpers: stage + commit, returning the new snapshot. */
int lance_dataset_append(lance_dataset **out, const lance_dataset *ds, arrow_batch *const *b,
                         size_t n);
int lance_dataset_delete(lance_dataset **out, const lance_dataset *ds, const lance_filter *filter);

/* ---- Create with rows (create.c) ---------------------------------------------------------- */

/* Create version 1 of a new table already holding the rows of b[0..n) (batches in `schema`),
 * in one commit: the version-1 manifest is published with put-if-absent, so OG_E_EXISTS if
 * the table already has a version (also when a concurrent creator won). The transaction's
 * uuid is `uuid` (NULL: a new one), so a creator that crashed can find its version with
 * lance_find_txn_version. With no rows this is lance_dataset_create (uuid not recorded). */
int lance_dataset_create_rows(lance_dataset **out, store *s, const char *root,
                              const arrow_schema *schema, arrow_batch *const *b, size_t n,
                              const lance_create_options *opt, const char *uuid);

#endif
