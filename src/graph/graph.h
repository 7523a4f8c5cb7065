/* The graph layer: the layout of a graph root, the graph manifest (a Lance dataset whose rows
 * are the catalog of table versions, the commit lineage and the heads of graph branches),
 * snapshot reconstruction at a head or at any manifest version, lineage, the accepted schema
 * contract, and the Arrow shape of node and edge tables.
 *
 * This layer reads and describes graph state. It never decides when a write may happen: the
 * write protocol (src/write/) builds rows with graph_rows_* and commits them.
 *
 * The graph manifest is append-only: every row kind carries the manifest version (or table
 * version) it belongs to, and reconstruction reduces by maximum, so a graph commit is one
 * Lance Append (no deletion files, no rewritten rows). Visibility is arbitrated by committing
 * manifest version N+1 exactly (put-if-absent of the version file): of two publishers built on
 * version N, one wins and the other re-reads and re-arbitrates its read set. */
#ifndef OG_GRAPH_GRAPH_H
#define OG_GRAPH_GRAPH_H

#include "arrow/arrow.h"
#include "core/buf.h"
#include "core/ulid.h"
#include "lance/branch.h"
#include "lance/dataset.h"
#include "lang/catalog.h"
#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Root layout (keys relative to the graph root's store) ------------------------------- */

#define GRAPH_MANIFEST_DIR "__manifest.lance" /* the graph manifest dataset */
#define GRAPH_RECOVERY_DIR "__recovery"       /* recovery sidecars <ULID>.json */
#define GRAPH_AUDIT_DIR "_recoveries.lance"   /* recovery audit log (Lance dataset) */
#define GRAPH_SCHEMA_PG "_schema.pg"          /* accepted schema source */
#define GRAPH_SCHEMA_JSON "_schema.json"      /* its catalog (ids) and identity hash */
#define GRAPH_INIT_CLAIM "__init_claim.json"  /* transient init ownership */
/* Written durably first into a backup's destination and deleted once the copy verifies: a
 * destination that holds it and no graph-manifest version is an unfinished backup, not a graph
 * that lost its manifest (src/write/backup.c). */
#define GRAPH_BACKUP_CLAIM "__backup_claim.json"
#define GRAPH_NODES_DIR "nodes"
#define GRAPH_EDGES_DIR "edges"

/* The graph format this binary reads and writes (the "format" row of the manifest). A graph
 * with another value is refused with a message saying whether to upgrade the binary or rebuild
 * the graph. */
#define GRAPH_FORMAT_VERSION 1

#define GRAPH_SCHEMA_HASH_LEN 32 /* hex characters of a schema identity */
#define GRAPH_ID_LEN CORE_ULID_LEN

/* Path of a table dataset: "nodes/<sid:016x>-<inc:016x>.lance" (kind LANG_NODE) or edges/. */
int graph_table_path(char out[STORE_KEY_MAX], int kind, uint64_t sid, uint64_t inc);
/* "node:Person" / "edge:Knows". */
int graph_table_alias(char *out, size_t cap, int kind, const char *type_name);

/* ---- Node and edge tables ---------------------------------------------------------------- */

/* Reserved column names. Every node and edge table has "id" (Utf8, non-null, the unenforced
 * primary key); edges also "src" and "dst" (Utf8, non-null, node ids). Properties follow in
 * declaration order under their own names. */
#define GRAPH_COL_ID "id"
#define GRAPH_COL_SRC "src"
#define GRAPH_COL_DST "dst"

/* The Arrow schema of a type's table. Type mapping: String/enum -> Utf8, Bool -> Bool,
 * I32/I64/U32/U64/F32/F64 -> the same width, Date -> Date32 (days), DateTime -> Timestamp(ms,
 * no zone), Blob -> Binary, [T] -> List<T>, Vector(d) -> FixedSizeList<Float32, d>. A property
 * is nullable iff its type is. */
int graph_type_schema(arrow_schema *out, const lang_typedef *t);
/* The key indexes (lance/keyindex.h) a type's table keeps, into buf: nodes "id"; edges "id"
 * carrying "src", "src" carrying "dst" and "dst" carrying "src" (adjacency both ways); and
 * for each String or enum property under a one-column @unique or (btree) @index, "prop"
 * carrying "id" (at most LANCE_KIX_MAX_DECLS in all). */
#define GRAPH_KIX_DECL_MAX 1024
int graph_type_key_indexes(char *buf, size_t cap, const lang_typedef *t);
/* Options for creating a type's empty table (primary key "id", stable row ids on, the key
 * indexes of graph_type_key_indexes written into kix, which must outlive the options). */
int graph_type_create_options(lance_create_options *out, const lang_typedef *t,
                              char kix[GRAPH_KIX_DECL_MAX]);

/* ---- Accepted schema contract ------------------------------------------------------------ */

/* The identity of a catalog: the first GRAPH_SCHEMA_HASH_LEN hex digits of a hash over its
 * canonical JSON (lang_catalog_to_json), so two schemas that differ only in layout or comments
 * have the same identity. */
int graph_schema_identity(const lang_catalog *c, char out[GRAPH_SCHEMA_HASH_LEN + 1]);
/* Every schema a graph ever accepted is also kept by identity, immutable, under
 * _schemas/<identity>.pg and _schemas/<identity>.json (the same two files), so that a commit
 * made under an earlier schema reads under it, and the accepted pair at the root can be
 * rebuilt. The accepted schema is the one main's head records; the root pair mirrors it. */
#define GRAPH_SCHEMA_DIR "_schemas"
void graph_schema_version_keys(const char *identity, char pg[STORE_KEY_MAX],
                               char json[STORE_KEY_MAX]);
/* Write c's pair under its identity (durably; rewriting it writes the same bytes). */
int graph_schema_write_version(store *s, const lang_catalog *c);
/* Write c's pair at the root only (its pair under its identity is written already). */
int graph_schema_mirror(store *s, const lang_catalog *c);
/* Write c's pair under its identity, then _schema.pg (source) and _schema.json
 * ({"format":1,"identity":...,"catalog":{...}}) durably. */
int graph_schema_write(store *s, const lang_catalog *c);
/* The schema of that identity: its pair under _schemas/, or (a graph made before those were
 * kept) the root pair when it has that identity. OG_E_NOT_FOUND when neither has it,
 * OG_E_CORRUPT when the files are damaged or hold another identity. */
int graph_schema_read_identity(store *s, const char *identity, lang_catalog **out);
/* The identities kept under _schemas/ (sorted; caller frees *ids). */
int graph_schema_list(store *s, char (**ids)[GRAPH_SCHEMA_HASH_LEN + 1], size_t *n);
/* Read and check the accepted schema: parses _schema.pg, inherits ids from _schema.json and
 * verifies the identity. *identity receives it. OG_E_NOT_FOUND when there is none,
 * OG_E_CORRUPT (naming the file) when the two files disagree. */
int graph_schema_read(store *s, lang_catalog **out, char identity[GRAPH_SCHEMA_HASH_LEN + 1]);
/* Repair of the schema files against the identity the graph manifest records (`recorded`):
 * 0 with *damaged false when they read and agree with it; *damaged true when they do not but
 * _schema.pg rebuilds a catalog of exactly that identity (then, with `write`, both files are
 * rewritten from it); OG_E_CORRUPT when that cannot be proved (the source is missing or does
 * not match: it is recorded nowhere else), naming the file. */
int graph_schema_restore(store *s, const char *recorded, bool write, bool *damaged);

/* ---- Graph manifest rows ----------------------------------------------------------------- */

typedef enum graph_row_kind {
    GRAPH_ROW_FORMAT = 1,    /* object_id "format"; metadata {"format_version":N} */
    GRAPH_ROW_SCHEMA,        /* object_id "schema:<mver:020>"; metadata {"identity":...} */
    GRAPH_ROW_TABLE,         /* registration: object_id "table:<sid>:<inc>"; location = path */
    GRAPH_ROW_TABLE_VERSION, /* "table_version:<sid>:<inc>:<ver:020>" */
    GRAPH_ROW_TOMBSTONE,     /* "table_tombstone:<sid>:<inc>:<ver:020>" */
    GRAPH_ROW_COMMIT,        /* object_id = commit id (ULID) */
    GRAPH_ROW_HEAD,          /* "graph_head:<branch>:<mver:020>"; metadata {"head_commit_id"} */
} graph_row_kind;

/* object_type strings as stored, and back (0 for an unknown type, which readers skip). */
const char *graph_row_kind_name(int kind);
int graph_row_kind_parse(const char *s);

/* The manifest's Arrow schema: object_id Utf8 (PK), object_type Utf8, location Utf8?,
 * metadata Utf8? (JSON text), table_key Utf8, stable_table_id UInt64?,
 * table_incarnation_id UInt64?, table_version UInt64?, table_branch Utf8?, row_count UInt64?. */
int graph_manifest_schema(arrow_schema *out);

typedef struct graph_commit {
    char id[GRAPH_ID_LEN + 1];
    char parent[GRAPH_ID_LEN + 1];        /* "" for a root commit */
    char merged_parent[GRAPH_ID_LEN + 1]; /* "" unless a merge */
    char *actor;                          /* NULL when none */
    char *branch;                         /* NULL: main */
    int64_t created_at_us;
    uint64_t manifest_version; /* the manifest version this commit produced */
    bool maintenance;          /* changes no content (optimize, recovery rollback) */
} graph_commit;

/* Rows to append to the manifest in one commit. */
typedef struct graph_rows graph_rows;

int graph_rows_new(graph_rows **out);
void graph_rows_free(graph_rows *r);
size_t graph_rows_count(const graph_rows *r);
int graph_rows_add_format(graph_rows *r, int format_version);
int graph_rows_add_schema(graph_rows *r, const char *identity, uint64_t manifest_version);
int graph_rows_add_table(graph_rows *r, int kind, uint64_t sid, uint64_t inc, const char *alias);
/* A registration of an existing identity under a new alias (a type renamed by a schema apply)
 * from manifest version `manifest_version` on: object_id "table:<sid>:<inc>:<mver:020>",
 * table_version = mver. The registration of the greatest version at or below a snapshot's is
 * the one it uses. */
int graph_rows_add_table_at(graph_rows *r, int kind, uint64_t sid, uint64_t inc, const char *alias,
                            uint64_t manifest_version);
int graph_rows_add_version(graph_rows *r, uint64_t sid, uint64_t inc, const char *alias,
                           uint64_t table_version, const char *table_branch, uint64_t row_count);
/* The same recording the XXH3-64 of the table version's Lance manifest file (the
 * lance_manifest.file_xxh3 of the commit that made it; NULL: not known) in the row's metadata
 * ({"manifest_xxh3":"<16 hex>"}); graph_table_open checks it. */
int graph_rows_add_version_sum(graph_rows *r, uint64_t sid, uint64_t inc, const char *alias,
                               uint64_t table_version, const char *table_branch, uint64_t row_count,
                               const uint64_t *manifest_xxh3);
int graph_rows_add_tombstone(graph_rows *r, uint64_t sid, uint64_t inc, const char *alias,
                             uint64_t table_version);
int graph_rows_add_commit(graph_rows *r, const graph_commit *c);
/* content_commit_id: the branch's last content-changing commit when commit_id is a
 * maintenance commit (NULL or equal to commit_id otherwise); stored only when it differs. */
int graph_rows_add_head(graph_rows *r, const char *branch, const char *commit_id,
                        const char *content_commit_id, uint64_t manifest_version);
/* The rows as one batch in graph_manifest_schema. */
int graph_rows_to_batch(const graph_rows *r, arrow_batch **out);

/* ---- Manifest compaction ----------------------------------------------------------------- */

/* Merging the manifest's fragments (maintenance) may leave out rows no reduction can use any
 * more and gathers the commit rows apart (lance_compact_options.classify):
 *  - a table_version or table_tombstone row of an identity, a graph_head row of a branch, and
 *    a schema row, when a row of the same key with a greater version exists in the manifest
 *    version the rules were built from (the reduction keeps only the greatest);
 *  - graph_commit rows are all kept, set apart into fragments of their own, so that a
 *    snapshot without lineage reads their object_type column only (the scan filters them);
 *  - registrations, the format row and rows of unknown kinds are kept.
 * Versions before the merge still hold every row, so time travel is unchanged. */
/* The table_metadata key under which manifest compaction lists the fragments that hold only
 * commit rows (lance_compact_options.apart_key): a snapshot without lineage does not open
 * them at all. */
#define GRAPH_COMMIT_FRAGMENTS_KEY "omnigraph.commit_fragments"
/* A scan of the manifest's rows other than commits: the listed fragments of commit rows are
 * skipped, commit rows elsewhere filtered out (late materialized). graph_scan_no_commits sets
 * so's filter and skip list to point into f (which must outlive the scan);
 * graph_scan_no_commits_clear frees what it allocated. */
typedef struct graph_no_commits {
    lance_term term;
    lance_filter filter;
    uint64_t *skip;
    size_t n_skip;
} graph_no_commits;
int graph_scan_no_commits(lance_scan_options *so, graph_no_commits *f,
                          const lance_dataset *manifest);
void graph_scan_no_commits_clear(graph_no_commits *f);

typedef struct graph_compact_rules graph_compact_rules;
/* The rules for compacting on top of `manifest` (one scan of its rows other than commits). */
int graph_compact_rules_new(graph_compact_rules **out, const lance_dataset *manifest);
void graph_compact_rules_free(graph_compact_rules *r);
/* The lance_compact_options.classify callback (arg: the rules). */
int graph_compact_classify(void *arg, const arrow_batch *b, uint8_t *cls);

/* ---- Snapshots --------------------------------------------------------------------------- */

typedef struct graph_table {
    int kind;           /* LANG_NODE or LANG_EDGE */
    uint64_t sid, inc;  /* stable table identity and incarnation (both non-zero) */
    char *alias;        /* "node:Person" */
    char *type_name;    /* "Person" */
    char *path;         /* "nodes/<sid>-<inc>.lance" */
    uint64_t version;   /* published Lance version */
    char *table_branch; /* Lance branch holding that version; NULL = main */
    uint64_t row_count;
    bool has_manifest_xxh3; /* the version row records its Lance manifest file's checksum */
    uint64_t manifest_xxh3;
} graph_table;

typedef struct graph_snapshot {
    char *branch;                                    /* NULL: main */
    char branch_identity[LANCE_BRANCH_IDENTITY_CAP]; /* "" for main */
    uint64_t manifest_version;
    int format_version;
    char schema_identity[GRAPH_SCHEMA_HASH_LEN + 1];
    char head[GRAPH_ID_LEN + 1];         /* this branch's graph head ("" before its first commit) */
    char content_head[GRAPH_ID_LEN + 1]; /* its last commit that changed content: the head,
                                          * or the commit before a run of maintenance commits
                                          * (what --if-commit compares, docs/maintenance.md) */
    graph_table *tables;                 /* live tables, sorted by alias */
    size_t n_tables;
    graph_commit *commits; /* GRAPH_SNAP_LINEAGE only: newest first */
    size_t n_commits;
} graph_snapshot;

#define GRAPH_SNAP_LINEAGE 1u /* also decode every graph_commit row */

/* Reconstruct the snapshot of graph branch `branch` (NULL: main) at manifest version `version`
 * (0: latest). OG_E_NOT_FOUND when there is no graph (or no such branch/version);
 * OG_E_UNSUPPORTED when the format row names another GRAPH_FORMAT_VERSION (the message says
 * whether the graph is newer or older than this binary); OG_E_CORRUPT for rows that contradict
 * each other (two registrations of one identity, a version row without a registration, two
 * live tables with one alias). */
int graph_snapshot_load(graph_snapshot **out, store *s, const char *branch, uint64_t version,
                        unsigned flags);
/* What a manifest has ever registered, for cleanup's reclamation of the tables of dropped
 * types: the path of every table identity registered (live, dropped or never published),
 * sorted and distinct, and the manifest versions at which an accepted schema took effect
 * (ascending; a graph's set of tables changes only there). One scan of the rows other than
 * commits. */
typedef struct graph_registry {
    char **paths;
    size_t n_paths;
    uint64_t *schema_versions;
    size_t n_schema_versions;
} graph_registry;
int graph_registry_load(graph_registry *out, const lance_dataset *manifest);
void graph_registry_free(graph_registry *g);
bool graph_registry_has(const graph_registry *g, const char *path);
/* Damage at the top of the graph manifest's history (issue 16: damage-tolerant reads). */
typedef struct graph_manifest_damage {
    uint64_t latest;                 /* the newest version that exists */
    uint64_t intact;                 /* the newest version whose snapshot reads (0: none) */
    uint64_t hinted;                 /* the hint names this missing version above latest (0) */
    char damaged_key[STORE_KEY_MAX]; /* the file of the newest unreadable version ("" none) */
    char why[512];                   /* why it cannot be read */
} graph_manifest_damage;
/* Find the newest graph-manifest version of graph branch `branch` (NULL or "main": main) whose
 * snapshot reads, from the latest down (a full read per version tried: for damaged graphs, not
 * the read path). d->latest == d->intact and d->hinted == 0 when nothing is damaged. No version
 * at all: OG_E_NOT_FOUND for main (no graph), OG_E_CORRUPT for a branch. */
int graph_manifest_inspect(store *s, const char *branch, graph_manifest_damage *d);
/* graph_snapshot_load of main at the latest version for reads that may fall back (commit
 * list, resolving --at): when the newest version cannot be read, the newest intact one is
 * loaded instead and a warning names the damaged version; also warns when the hint names a
 * newer version that is missing. Never for the write path. */
int graph_snapshot_load_tolerant(graph_snapshot **out, store *s, unsigned flags);
/* The message of a failed read at the head of main (rc OG_E_CORRUPT, or OG_E_NOT_FOUND for a
 * file the manifest needs): rewritten as OG_E_CORRUPT naming the version and its file, and
 * the remedy. Returns the code to return. */
int graph_head_damaged(int rc, uint64_t version);
/* The message of a failed search for the head of main (OG_E_CORRUPT: a version lost below a
 * newer one, or named by the hint above every stored one): the remedy added. Returns rc. */
int graph_head_lost(int rc);
/* Whether the head read at snap (its manifest version named with `naming`) can be trusted: a
 * table of snap's branch at a Lance version after its pin, with no recovery sidecar pending and
 * the manifest still at snap's version, means a newer graph-manifest version was lost: typed
 * OG_E_CORRUPT naming it. *moved: the manifest moved on meanwhile (read the head again). One
 * head per table of the branch; the sidecar listing and a manifest probe only when a table is
 * ahead. */
int graph_head_check_tables(store *s, const graph_snapshot *snap, lance_naming naming, bool *moved);
/* The same from an already opened manifest dataset (the publisher's fresh view). */
int graph_snapshot_from_dataset(graph_snapshot **out, const lance_dataset *manifest,
                                const char *branch, unsigned flags);
void graph_snapshot_free(graph_snapshot *snap);
/* A deep copy of the snapshot's state (tables, head, identities); lineage is not copied. */
int graph_snapshot_copy(graph_snapshot **out, const graph_snapshot *in);
/* The snapshot of graph branch `branch` (ref identity `identity`) just forked from src at
 * src's manifest version, without reading it: the branch's manifest starts as src's (the same
 * rows), so it has src's tables and head (a branch before its first commit has the head it
 * was forked at; reduce() in snapshot.c) under the branch's name and identity. */
int graph_snapshot_fork(graph_snapshot **out, const graph_snapshot *src, const char *branch,
                        const char *identity);
/* The live table with this alias, or NULL. */
const graph_table *graph_snapshot_table(const graph_snapshot *snap, const char *alias);

/* Open a table at its pinned version (on its table_branch). */
int graph_table_open(lance_dataset **out, store *s, const graph_table *t, lance_access access);
/* OG_E_CORRUPT naming the file when ds (t's table opened at t->version) was decoded from a
 * Lance manifest file whose bytes do not match the checksum t's version row records; 0 when
 * they match or none is recorded. graph_table_open calls it; so must any other opener. */
int graph_table_check(const graph_table *t, const lance_dataset *ds);
/* ---- Chained manifest versions (docs/maintenance.md, "The manifest chain") ---------------
 * Every graph-manifest version this build writes records the checksum of its own file and of
 * its parent's (the lance config entry of lance/manifest.h, "chained versions"). */

/* May this opened graph-manifest version (main's or a branch's) be read or written on top
 * of? OG_E_CORRUPT naming its file and the remedy when its bytes do not match the checksum it
 * records, its chain entry is damaged, or it has no entry but carries what only a damaged entry
 * leaves (config or fields no build writes); 0 when it verifies, or when it is a version of an
 * older build (no entry at all: accepted unverified). Every open of the graph manifest for a
 * snapshot calls it (snapshot.c); nothing is read from a version before it passed. */
int graph_manifest_chain_check(const lance_dataset *ds);
/* The cached-head fast path: ds (version N+1, already checked) found on top of prev (the
 * cached version N of the same directory; any other version: 0). OG_E_CORRUPT when ds records
 * another parent than prev's file while prev is still what the store holds at N, or when prev
 * is chained and ds has no entry (a chain never returns to unchecksummed versions). When
 * version N on the store is no longer prev (history was rewritten by repair), 0: ds's own
 * checksum is what vouches for it. */
int graph_manifest_chain_follows(store *s, const lance_dataset *ds, const lance_manifest *prev);

/* Open the graph manifest of a branch at a version (0: latest). */
int graph_manifest_open(lance_dataset **out, store *s, const char *branch, uint64_t version,
                        lance_access access);
/* The same and the snapshot reconstructed from it (no lineage), a branch's ref read once. */
int graph_manifest_snapshot(lance_dataset **manifest, graph_snapshot **out, store *s,
                            const char *branch, uint64_t version, lance_access access);

/* ---- Lineage ----------------------------------------------------------------------------- */

/* Resolve a commit id (or a unique prefix of at least 4 characters) or a decimal manifest
 * version on this branch to its manifest version. OG_E_NOT_FOUND / OG_E_BAD_REQUEST (an
 * ambiguous prefix). */
int graph_resolve_ref(store *s, const char *branch, const char *ref, uint64_t *manifest_version);
/* The same against an already loaded snapshot (decoded with GRAPH_SNAP_LINEAGE). A ref of
 * decimal digits without a leading zero is a manifest version (1..snap->manifest_version);
 * anything else is a commit id or an id prefix (case-insensitive; ULIDs of this era begin
 * with "0"). */
int graph_lineage_resolve(const graph_snapshot *snap, const char *ref, uint64_t *manifest_version);
/* The commit with exactly this id in a lineage snapshot, or NULL. */
const graph_commit *graph_lineage_find(const graph_snapshot *snap, const char *id);

#endif
