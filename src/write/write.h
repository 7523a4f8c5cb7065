/* The unified graph-write protocol (RFC-022): every graph-visible write is one write_run of a
 * registered adapter, through stages
 *   A recovery barrier  B prepare (no gates)  C ordered gates  D revalidate or restart
 *   E durable recovery sidecar  F effects (staged Lance transactions, exact versions)
 *   G exactly one conditional graph-manifest commit  H finalize,
 * plus graph init (a claim-based control protocol) and the recovery classifier that resolves
 * interrupted writes by exact transaction identity.
 *
 * The writer (write_graph) of an open graph (graph_handle, src/graph/graph_handle.h: the store,
 * the accepted schema, the cached head) holds what only writes need: the gate manager shared by
 * every writer on the same root in this process, counters, owner locks, the maintenance worker
 * and the commit hook. Writers may be used by several threads; writes serialize on the gates. */
#ifndef OG_WRITE_WRITE_H
#define OG_WRITE_WRITE_H

#include "graph/graph.h"
#include "graph/graph_handle.h"
#include "graph/validate.h"
#include "write/gates.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- The closed adapter registry --------------------------------------------------------- */

typedef enum write_kind {
    WRITE_KIND_LOAD = 1,     /* JSONL bulk load (append / merge / overwrite) */
    WRITE_KIND_MUTATION = 2, /* a .gq mutation (insert / update / delete) */
    WRITE_KIND_OPTIMIZE = 3, /* compaction of data tables (content-preserving) */
    WRITE_KIND_MERGE = 4,    /* a three-way branch merge into the target branch */
    WRITE_KIND_SCHEMA = 5,   /* a schema apply (graph-global: main only, no other branch) */
    WRITE_KIND_COUNT_
} write_kind;

/* The adapter's name ("load", "mutation", "optimize", "merge", "schema_apply"); NULL for an
 * unregistered kind. */
const char *write_kind_name(int kind);
int write_kind_parse(const char *s);

/* Every graph-visible entry point and the adapter it runs (for the conformance test and
 * docs/conformance.md). */
typedef struct write_entry_point {
    const char *entry; /* public function or CLI verb */
    int kind;          /* write_kind */
} write_entry_point;
const write_entry_point *write_entry_points(size_t *n);

/* ---- Limits ------------------------------------------------------------------------------ */

#define WRITE_MAX_REPREPARE 32 /* full re-prepares after a pre-effect read-set mismatch */
#define WRITE_MAX_PUBLISH_ATTEMPTS 6
/* The default wait for gates another writer holds; past it a write fails with
 * OG_E_RESOURCE_LIMIT naming the holder (write_open_options.gate_timeout_ms overrides it). */
#define WRITE_GATE_TIMEOUT_MS 60000u
#define WRITE_ACTOR_RECOVERY "omnigraph:recovery"
#define WRITE_ACTOR_REPAIR "omnigraph:repair"
#define WRITE_SIDECAR_FORMAT 1
/* Automatic maintenance after a write (derived work after visibility, RFC-022 §4.8): a touched
 * table, or the graph manifest, is compacted when WRITE_TIER_FACTOR adjacent fragments of one
 * size tier have accumulated (lance_compact_options.tier_factor). Each row is then rewritten
 * about log_8(rows) times in its life, and a table keeps at most 7 fragments per tier. */
#define WRITE_TIER_FACTOR 8

/* ---- Writer ------------------------------------------------------------------------------ */

typedef struct write_stats {
    uint64_t writes;          /* write_run calls that published a commit */
    uint64_t noops;           /* write_run calls with nothing to commit */
    uint64_t reprepares;      /* restarts after a read-set mismatch before effects */
    uint64_t publish_retries; /* manifest CAS attempts lost to a concurrent commit */
    uint64_t recoveries;      /* sidecars resolved (any outcome) */
    uint64_t gate_wait_ns;    /* time spent acquiring gates */
    uint64_t gate_hold_ns;    /* time gates were held */
    uint64_t prepare_ns;      /* time in prepare (outside the gates) */
} write_stats;

/* A table version a write of this writer committed and published (the graph commit naming it
 * is visible), handed to write_graph.on_commit after the visibility point so that the
 * graph's read caches can take it without reading it back. */
typedef struct write_committed_table {
    const char *path, *table_branch; /* table_branch: NULL on main */
    int kind;                        /* LANG_NODE / LANG_EDGE */
    uint64_t from_version, to_version;
    lance_dataset **ds; /* to_version; the hook may take it (then sets *ds NULL) */
    bool rewrite;       /* a compaction (a Rewrite: the same rows) */
    /* otherwise, for a strict insert: the rows appended (as new fragments, in order); NULL
     * when the commit did something else (an upsert, a delete, an overwrite) */
    const arrow_array *id, *src, *dst;
} write_committed_table;
typedef void (*write_commit_hook)(void *arg, const write_committed_table *t);

typedef struct write_graph {
    graph_handle *h;             /* the graph written: store, schema, actor, cached head */
    write_gates *gates;          /* NULL when h is read-only */
    write_stats stats;           /* updated under an internal lock */
    void *lock_;                 /* internal */
    bool owns_handle_;           /* internal: write_graph_open made h (closed with the writer) */
    bool background_maintenance; /* automatic maintenance on the writer's worker thread */
    void *maint_;                /* internal: that worker's queue */
    void *owners_;               /* internal: owner locks held for reuse (coordinator.c) */
    /* Called once per table a write of this writer published, after the visibility point
     * (from the writing thread, or the maintenance worker): NULL for none. Set it before the
     * writer is shared. */
    write_commit_hook on_commit;
    void *on_commit_arg;
    /* How long a write waits for the gates another writer holds before it fails with
     * OG_E_RESOURCE_LIMIT naming the holder (write_open_options.gate_timeout_ms). */
    uint32_t gate_timeout_ms;
#ifdef OG_TESTING
    /* Test hooks (testing builds only: a release build has neither the members nor the calls,
     * WRITE_TEST_HOOK). NULL unless a test sets them. */
    /* Test hook: called after prepare, before the gates (to interleave a concurrent writer at
     * exactly the window the read set must cover). */
    void (*test_after_prepare)(void *arg);
    void *test_arg;
    /* Test hook: called with test_in_gates_arg once the write holds its gates and its sidecar
     * is written (to stall a writer inside the gates). */
    void (*test_in_gates)(void *arg);
    void *test_in_gates_arg;
    /* Test hook: called with test_before_arm_arg once the write holds its gates and its read
     * set revalidated, before its sidecar is written (a writer that does not share the gates
     * can then publish under it: the window the manifest CAS must arbitrate). */
    void (*test_before_arm)(void *arg);
    void *test_before_arm_arg;
    /* Test hook: called with test_in_prepare_arg by the merge adapter once it has captured the
     * source head and found the merge base, before it reads the source's tables (to land a
     * delete of the source in the middle of the prepare). */
    void (*test_in_prepare)(void *arg);
    void *test_in_prepare_arg;
#endif
} write_graph;

/* Call g's test hook `fn` with its argument `arg` when a test set it; nothing in a release
 * build. */
#ifdef OG_TESTING
#define WRITE_TEST_HOOK(g, fn, arg)                                                                \
    do {                                                                                           \
        if ((g)->fn) (g)->fn((g)->arg);                                                            \
    } while (0)
#else
#define WRITE_TEST_HOOK(g, fn, arg) ((void)0)
#endif

typedef struct write_open_options {
    int version;       /* 1 */
    bool readonly;     /* write_graph_open: open the graph read-only (graph_handle) */
    const char *actor; /* write_graph_open: the graph's actor (graph_handle) */
    /* Automatic maintenance (compacting tables and the graph manifest once they pass
     * a size tier is due, WRITE_TIER_FACTOR) runs on a worker thread of the writer after the
     * write that made it due has returned, instead of inside that write call. Closing the
     * writer finishes what is queued. The public API turns it on; off, it runs inline (the
     * deterministic order the crash and cost suites count). */
    bool background_maintenance;
    /* Attach without running the recovery barrier (recover list/show/resolve: the writer of a
     * graph a pending intent blocks). Its writes still run the barrier first. */
    bool defer_recovery;
    /* The longest wait for gates another writer holds (0: WRITE_GATE_TIMEOUT_MS). */
    uint32_t gate_timeout_ms;
} write_open_options;
#define WRITE_OPEN_OPTIONS_INIT                                                                    \
    {                                                                                              \
        1, false, NULL, false, false, 0                                                            \
    }

/* The writer of the open graph h, which must outlive it (opt: background_maintenance; the
 * graph's readonly and actor are h's). On a read-write h it opens the gates of h->root_id,
 * removes a stale init claim and runs recovery of every sidecar whose owner is gone, failing
 * with the first unresolvable one (OG_E_RECOVERY_REQUIRED / OG_E_CORRUPT naming it); on a
 * read-only h it writes nothing, and every write it is asked for fails. */
int write_graph_attach(write_graph **out, graph_handle *h, const write_open_options *opt);
/* The same on a graph it opens itself on store s (graph_handle_open with opt's readonly and
 * actor; root_id: the canonical root path the gates are shared by), closed with the writer.
 * Takes ownership of s (also on failure). */
int write_graph_open(write_graph **out, store *s, const char *root_id,
                     const write_open_options *opt);
void write_graph_close(write_graph *g);
/* Wait until the writer's queued automatic maintenance has run (no-op when inline). */
void write_maintenance_drain(write_graph *g);
void write_graph_stats(write_graph *g, write_stats *out);

/* ---- Init -------------------------------------------------------------------------------- */

typedef struct write_init_result {
    char commit_id[GRAPH_ID_LEN + 1]; /* the genesis commit */
    bool took_over;                   /* a crashed earlier init was found and replaced */
    size_t node_types, edge_types;
} write_init_result;

/* Create a graph at the (empty) root of store s from a .pg source. Two concurrent inits never
 * both succeed (OG_E_CONFLICT for the loser while the winner runs, OG_E_EXISTS once it is
 * done). A crash leaves either no graph (a later init takes over) or a complete one. */
int write_init(store *s, const char *schema_src, size_t len, const char *file,
               write_init_result *res);
/* The schema check write_init starts with, without a store: callers run it before they create
 * the root, so an invalid schema leaves nothing behind. 0, or OG_E_BAD_REQUEST located at the
 * first error (OG_E_NOMEM). */
int write_init_check(const char *schema_src, size_t len, const char *file);

/* ---- Writes ------------------------------------------------------------------------------ */

/* Called once for every table a committed write changed, after the commit is visible (so it
 * cannot fail the write), with the alias whole: the way to learn which tables a write changed
 * (the public API's results list them all through this). */
typedef void (*write_table_fn)(void *arg, const char *alias, uint64_t from_version,
                               uint64_t to_version, uint64_t row_count);

typedef struct write_options {
    int version;             /* 1 */
    const char *branch;      /* NULL or "main": main; else a graph branch (must exist) */
    const char *if_commit;   /* expected branch head (NULL: none): PRECONDITION_FAILED */
    unsigned max_reprepare;  /* 0: WRITE_MAX_REPREPARE */
    write_table_fn on_table; /* NULL: none */
    void *on_table_arg;
} write_options;
#define WRITE_OPTIONS_INIT                                                                         \
    {                                                                                              \
        1, NULL, NULL, 0, NULL, NULL                                                               \
    }

typedef struct write_result {
    bool committed; /* false: nothing to commit (no effect, no graph commit) */
    char commit_id[GRAPH_ID_LEN + 1];
    char operation_id[GRAPH_ID_LEN + 1];
    uint64_t manifest_version;
    unsigned reprepares;
    size_t n_tables; /* tables the commit changed (each reported to on_table) */
} write_result;

/* Apply a change set as one graph commit through the coordinator (adapter `kind`: LOAD or
 * MUTATION). The change set is the adapter's logical input; it is re-validated against a fresh
 * snapshot on every re-prepare. */
int write_changes(write_graph *g, int kind, const graph_change_set *cs, const write_options *opt,
                  write_result *res);

/* A change set that depends on the base it is computed against (a mutation's update/delete
 * predicates, cascades, read-your-writes): `build` is called in every prepare with the fresh
 * snapshot and fills *out (owned by the coordinator afterwards). An empty set commits nothing. */
/* The builder adds every committed table it reads (a `where`, a cascade) to *reads: they join
 * the read set even when the write ends up not touching them. */
typedef int (*write_build_fn)(void *arg, const lang_catalog *cat, const graph_snapshot *snap,
                              store *s, graph_change_set *out, graph_probes *reads);
int write_mutation(write_graph *g, write_build_fn build, void *arg, const write_options *opt,
                   write_result *res);

/* A change set too large to hold at once (a bulk load of a large file), given in chunks: each
 * prepare calls rewind, then next until *done, and every chunk's rows are checked on their own
 * (GRAPH_VALIDATE_ROWS) and staged at once as more data files of the one transaction per table;
 * only the columns the whole-set checks read (ids, endpoints, @unique columns) and the row
 * lines are kept across chunks, and the whole set is checked once at the end
 * (GRAPH_VALIDATE_SET). Still one graph commit; a failure anywhere discards every staged file.
 * Chunks hold INSERT, UPSERT or REPLACE changes (a type keeps one mode; an UPSERT's rows are
 * looked up in the pinned table chunk by chunk, and an id given twice, in one chunk or two, is
 * refused by the whole-set check as when read whole), on any branch: a type whose table the
 * branch has not forked yet (a first touch) is only checked in prepare, and apply, once the
 * sidecar is durable and the table forked, reads the stream again (rewind, next) to stage its
 * rows on the fork, so `next` must give the same rows on every read (ids minted alike). A
 * chunk's rows carry source lines counted from the start of the input; `file` names it in
 * errors. */
typedef struct write_change_stream {
    int (*rewind)(void *arg);
    int (*next)(void *arg, const lang_catalog *cat, graph_change_set *out, bool *done);
    void *arg;
} write_change_stream;
int write_changes_stream(write_graph *g, int kind, const write_change_stream *src,
                         const write_options *opt, write_result *res);
/* The memory the kept columns of a stream may hold before they go to sorted runs on disk
 * (core/sortrun.h; then checked by graph_validate_sorted, in memory that does not grow with the
 * rows). 0: OMNIGRAPH_LOAD_KEEP_BYTES, else 64 MiB. A catalog with @unique or @card keeps them
 * in memory whatever the budget. */
void write_stream_set_keep_bytes(size_t bytes);
/* The rows of a fragment a stream writes: a type's rows wait (up to 96 MiB of rows over every
 * type) until they fill whole fragments of this many, so a large load leaves fragments at the
 * compaction target that maintenance has no reason to merge. 0: 1 Mi rows
 * (LANCE_DEFAULT_MAX_ROWS_PER_FILE); tests lower it. Both setters exist only in a testing
 * build (OG_TESTING); a release build reads the environment variable and the defaults. */
void write_stream_set_fragment_rows(size_t rows);

/* Compact data tables as one graph commit through the coordinator (adapter OPTIMIZE). */
typedef struct write_optimize_options {
    int version;               /* 1 */
    size_t min_fragments;      /* only tables with at least this many fragments (0: 2) */
    const char *const *tables; /* only these aliases (NULL: all) */
    size_t n_tables;
    /* internal: derived work after another write. Only tables with a size tier due are
     * compacted, and only that tier (min_fragments is ignored); otherwise every small
     * fragment of a selected table is merged. */
    bool auto_maintenance;
    /* NULL or "main": main. On another graph branch only the tables forked on it are
     * compacted: an unforked table is the version of the branch it was forked from, which
     * that branch maintains. */
    const char *branch;
} write_optimize_options;
#define WRITE_OPTIMIZE_OPTIONS_INIT                                                                \
    {                                                                                              \
        1, 0, NULL, 0, false, NULL                                                                 \
    }

int write_optimize(write_graph *g, const write_optimize_options *opt, write_result *res);

/* Merge graph branch `source` (NULL or "main": main) into opt->branch (the target) as one graph
 * commit through the coordinator (adapter MERGE, src/write/adapter_merge.c; rules in
 * src/graph/merge.h and docs/merge.md). res->outcome says what happened: UP_TO_DATE commits
 * nothing; FAST_FORWARD and MERGED commit once on the target with the source head as the
 * merged parent. OG_E_MERGE_CONFLICTS when rows conflict or the merged result would break a
 * constraint: nothing is written and res->conflicts lists every conflict. opt->if_commit
 * applies to the target. */
#include "graph/merge.h"
typedef struct write_merge_result {
    int outcome;                        /* graph_merge_outcome (0 before it is known) */
    char base[GRAPH_ID_LEN + 1];        /* the merge base */
    char source_head[GRAPH_ID_LEN + 1]; /* the source head merged (the merged parent) */
    graph_conflicts conflicts;          /* OG_E_MERGE_CONFLICTS: all of them */
    graph_merge_stats stats;            /* rows read and changed by the classification */
    size_t types_changed;               /* types whose table the merge writes */
    write_result wr;                    /* the commit (wr.committed false: none) */
} write_merge_result;
void write_merge_result_clear(write_merge_result *r);
int write_merge(write_graph *g, const char *source, const write_options *opt,
                write_merge_result *res);

/* Make `to` the graph's accepted schema as one graph commit on main through the coordinator
 * (adapter SCHEMA, src/write/adapter_schema.c; rules in docs/languages.md "Schema apply").
 * `to`'s ids are inherited from the accepted catalog first (renames keep theirs). Nothing is
 * committed when it is the accepted schema already. OG_E_BAD_REQUEST for a change the plan
 * does not support, or existing data the new schema refuses (res->violations lists every
 * violation; nothing is written); OG_E_PRECONDITION_FAILED while another branch exists;
 * OG_E_CONFLICT when the schema moved since it was planned. allow_data_loss makes drops hard
 * (a dropped property's column leaves the table now). */
typedef struct write_schema_result {
    char from_identity[GRAPH_SCHEMA_HASH_LEN + 1], to_identity[GRAPH_SCHEMA_HASH_LEN + 1];
    size_t tables_rewritten, tables_created, tables_renamed, tables_dropped;
    uint64_t rows_rewritten;
    graph_conflicts violations; /* existing data the new schema refuses: all of it */
    write_result wr;            /* the commit (wr.committed false: none) */
} write_schema_result;
void write_schema_result_clear(write_schema_result *r);
int write_schema_apply(write_graph *g, lang_catalog *to, bool allow_data_loss,
                       const write_options *opt, write_schema_result *res);

/* Physical-only compaction of a branch's graph manifest (RFC-022 §8: no lineage): with
 * `automatic`, the size tiers that are due (nothing when none is); otherwise every small
 * fragment, when there are at least two. */
int write_compact_manifest(write_graph *g, const char *branch, bool automatic, bool *compacted);

/* Graph cleanup (src/write/cleanup.c): remove the versions and files no retained commit of
 * main needs. A commit is retained when it is among the newest `keep` (0: no count rule) or
 * younger than older_than_us (< 0: no age rule); at least one rule is required, and the head
 * is always retained. */
typedef void (*write_cleanup_progress_fn)(void *arg, const char *root, size_t done, size_t total);
typedef struct write_cleanup_options {
    int version; /* 1 */
    uint64_t keep;
    int64_t older_than_us;
    uint64_t orphan_grace_ms;           /* unreferenced files younger than this stay (a writer may
                                         * have staged them): LANCE_CLEANUP_DEFAULT_WINDOW_MS */
    bool dry_run;                       /* count, delete nothing */
    write_cleanup_progress_fn progress; /* after each table (and the manifest) */
    void *progress_arg;
} write_cleanup_options;
#define WRITE_CLEANUP_OPTIONS_INIT                                                                 \
    {                                                                                              \
        1, 0, -1, 3600u * 1000u, false, NULL, NULL                                                 \
    }

typedef struct write_cleanup_report {
    uint64_t commits_total, commits_retained;
    char oldest_retained[GRAPH_ID_LEN + 1]; /* the oldest commit still readable */
    uint64_t floor_manifest_version;        /* its manifest version */
    uint64_t versions_removed;              /* Lance versions, over the tables and the manifest */
    uint64_t files_removed;                 /* manifests, data, deletion and transaction files */
    uint64_t bytes_removed;
    uint64_t files_spared_recent; /* unreferenced but younger than the orphan grace */
    size_t tables, tables_total;  /* Lance datasets cleaned (the manifest included) */
    uint64_t temps_removed;       /* the store's temporaries of writers that are gone */
    uint64_t tables_removed;      /* whole datasets: dropped types no retained commit reads, and
                                   * tables no manifest row registers (counted in files/bytes) */
} write_cleanup_report;

int write_cleanup(write_graph *g, const write_cleanup_options *opt, write_cleanup_report *out);
/* What a cleanup of an older build (table versions deleted before the graph-manifest versions
 * naming them) killed part way left: *commits of main whose manifest version is stored but a
 * table version they pin is not (unreadable, below that cleanup's floor), and *floor, the
 * manifest version of the oldest commit above them that reads whole (0 when *commits is 0).
 * Reads only: one listing of the manifest's versions, then a snapshot and one head per table
 * for each such commit and the first whole one. */
int write_cleanup_unfinished(store *s, uint64_t *commits, uint64_t *floor);
/* Finish it: delete main's manifest versions below floor (as cleanup does, under the branch
 * gate; a branch's fork point and the versions above it stay). */
int write_cleanup_finish(write_graph *g, uint64_t floor, uint64_t *versions_removed);

/* ---- Graph branches (RFC-022 §7: control protocol, no graph commit) ---------------------- */

typedef struct write_branch_info {
    char name[LANCE_BRANCH_NAME_MAX + 1];
    char parent[LANCE_BRANCH_NAME_MAX + 1]; /* the branch it was forked from ("main") */
    uint64_t fork_version;                  /* the parent's manifest version at the fork */
    char forked_from[GRAPH_ID_LEN + 1];     /* the parent's head commit there */
    char head[GRAPH_ID_LEN + 1];            /* its head (the fork commit until it has its own) */
    uint64_t manifest_version;              /* its latest manifest version */
    uint64_t created_at;                    /* unix seconds (0 when unknown) */
    char identity[LANCE_BRANCH_IDENTITY_CAP];
} write_branch_info;

/* 0 if name may name a graph branch: lance's branch-name rules (lance_branch_name_check), and
 * not "main", not beginning with '-', no "." segment, no segment beginning with '_'
 * (reserved for internal branches). OG_E_BAD_REQUEST naming the rule otherwise. */
int write_branch_name_check(const char *name);
/* Graph branches with manifest versions but no ref (lost, or a delete interrupted after it
 * removed the ref: they look alike), by name; *names freed by the caller (each, then it). */
int write_branch_refless(store *s, char ***names, size_t *n);
/* Create graph branch `name` from branch `from` (NULL: main) at its head, or at commit `at` (a
 * commit id, a unique prefix, or a manifest version of `from`). One create-if-absent of the
 * manifest's branch ref, nothing copied, no commit made. OG_E_EXISTS when the name, or a name
 * it is a '/' prefix of (or that is one of it, main included), exists, the error's key naming
 * that branch (exactly one of racing creators wins, also of a name and its extension on one
 * host); its cost does not grow with the number of branches;
 * OG_E_NOT_FOUND for an unknown `from` or `at`; OG_E_BAD_REQUEST for a bad name. *out (may be
 * NULL) describes the new branch. */
int write_branch_create(write_graph *g, const char *name, const char *from, const char *at,
                        write_branch_info *out);
/* Delete graph branch `name` (never main) if its identity is still expect_identity (NULL or
 * "": whatever it is now; OG_E_PRECONDITION_FAILED otherwise). Refused with OG_E_CONFLICT while
 * a writer holds the branch's gate, OG_E_RECOVERY_REQUIRED while a write on it is unresolved,
 * OG_E_PRECONDITION_FAILED while a branch forked from it exists. *out (may be NULL) describes
 * what was deleted. Its table forks are reclaimed after the ref is gone (best effort). */
int write_branch_delete(write_graph *g, const char *name, const char *expect_identity,
                        write_branch_info *out);
/* Undo write_branch_create (`created` is what it reported) for a write that then failed: the
 * branch is deleted under write_branch_delete's rules, and only while it is still exactly as
 * created: the same identity (not deleted and created again) and no commit on it
 * (OG_E_PRECONDITION_FAILED otherwise). Another writer using it meanwhile (OG_E_CONFLICT while
 * it holds the branch's gate), an unresolved write on it, or a branch forked from it keeps it:
 * then it is in use, and stays. */
int write_branch_retract(write_graph *g, const write_branch_info *created);
/* Every graph branch other than main, sorted by name (free with core_free). Per branch: its ref
 * and one discovery of its latest manifest version; a snapshot only for a branch that wrote
 * (one that did not has its fork point's head) and once per distinct fork point. */
int write_branch_list(store *s, write_branch_info **out, size_t *n);

/* ---- Recovery ---------------------------------------------------------------------------- */

typedef enum write_recovery_kind {
    WRITE_RECOVERY_ROLLED_FORWARD = 1, /* the intent's commit is (now) visible */
    WRITE_RECOVERY_ROLLED_BACK, /* its table effects were restored and a rollback commit made */
    WRITE_RECOVERY_DISCARDED,   /* no effect had happened: the intent was dropped */
    WRITE_RECOVERY_RETIRED,     /* a sidecar of an intent the audit log already records
                                 * as resolved (a stale copy): deleted */
    WRITE_RECOVERY_DISCARDED_FORCED, /* dropped by an operator without proof (recover --force) */
    WRITE_RECOVERY_REPAIRED,         /* write_repair: a repair commit made above the damaged
                                      * versions, pinning every table at its Lance HEAD (the lost
                                      * commits' data rolled forward) */
    WRITE_RECOVERY_REPAIRED_FORCED,  /* write_repair --force: the tables restored to the newest
                                      * intact version, dropping acknowledged commits (the audit
                                      * row's outcomes name the table versions dropped) */
} write_recovery_kind;
const char *write_recovery_kind_name(int kind);

/* Resolve every sidecar that can overlap an operation on `branch` ("main" for main; NULL:
 * every sidecar, on every branch) whose owner is gone: the intents of writers on that branch,
 * and every intent that is not a branch-scoped data write or cannot be read
 * (write_sidecar_list_overlapping). 0 when none is left; OG_E_RECOVERY_REQUIRED (operation id
 * in the error) when one cannot be resolved now (a live owner, or a state only an operator may
 * resolve). *resolved counts sidecars resolved. */
int write_recover(write_graph *g, const char *branch, size_t *resolved);

/* ---- Repair (issues 16, 33) ---------------------------------------------------------------
 * Restore a writable state when the newest graph-manifest versions of main cannot be read
 * (damaged or missing) without dropping an acknowledged write. After recovery has resolved
 * every pending intent, a table whose Lance HEAD is ahead of what the newest intact version
 * publishes holds only what a lost version published (a writer's effects are covered by its
 * sidecar from before its first effect until after its publish). So repair rolls forward: the
 * unreadable version files above the newest intact one are moved to _repair/<operation id>/
 * (kept, outside every Lance dataset), and a repair commit on top of the intact version pins
 * every such table at its HEAD (each HEAD must open with the schema its pin has), through a
 * recovery intent written first, so a crash part way is finished by the next read-write
 * open's recovery (or a re-run). Audited as "repaired".
 * Where that cannot keep every acknowledged commit (a lost schema apply: the accepted schema
 * is newer than the intact version's; a table HEAD that does not open or changed its schema),
 * repair refuses (OG_E_PRECONDITION_FAILED naming the versions and tables at stake and the
 * remedies) unless forced: then, as before issue 33, every table ahead is restored to the
 * intact version's pin (a Lance Restore, a new version) and the repair commit publishes that.
 * Audited as "repaired_forced", with the table versions dropped. */
typedef struct write_repair_table {
    char *alias;
    uint64_t head;      /* its Lance HEAD */
    uint64_t published; /* what the intact version publishes */
    /* On a branch: a fork of a table the intact version still reads from its source, made by
     * a lost first-touch commit (forked at the pinned version, with commits of its own): a
     * forward repair pins the fork at its HEAD; a forced one leaves it unpinned. */
    bool fork;
} write_repair_table;
typedef struct write_repair_report {
    uint64_t latest;  /* the newest stored manifest version */
    uint64_t intact;  /* the newest one whose snapshot reads */
    uint64_t missing; /* a newer version the hint names that is gone (0: none seen) */
    uint64_t lost;    /* a version missing between the hint and the newest: a hole the search
                       * for the head stops at (0: none); confirm moves the hint above it */
    char **damaged;   /* files of the unreadable versions above intact */
    size_t n_damaged;
    write_repair_table *tables; /* tables ahead of intact */
    size_t n_tables;
    char why[512]; /* why the newest version cannot be read ("" when it can) */
    bool clean;    /* nothing to repair */
    bool repaired; /* confirm acted */
    char operation_id[GRAPH_ID_LEN + 1];
    char commit_id[GRAPH_ID_LEN + 1]; /* the repair commit */
    uint64_t manifest_version;        /* ... and its version */
    char moved_to[STORE_KEY_MAX];     /* where the damaged files went ("" none) */
    /* A cleanup killed part way by an older build (write_cleanup_unfinished): its unreadable
     * commits whose manifest versions are stored, and the versions a confirm removed. */
    uint64_t cleanup_unfinished, cleanup_versions_removed;
    /* Why rolling forward cannot keep every acknowledged commit ("" when it can: the tables
     * ahead are pinned at their HEADs). Non-empty: a confirm refuses unless forced. */
    char at_stake[1024];
    bool forced; /* the confirm was forced past at_stake: the tables were rolled back */
    /* Branch refs that did not read (lost or damaged) and are rebuilt from their branch's
     * first version (lance_branch_ref_rebuild): the ref files' keys. A confirm rebuilt them
     * (a damaged one kept under _repair/refs/ first). Graph-level refs only for the branch
     * named; table-level refs (a fork a graph branch pins) for every readable graph branch. */
    char **refs;
    size_t n_refs;
    /* Graph branches with manifest versions but no ref (write_branch_refless), found by a
     * repair of main: `repair --branch NAME` rebuilds one if it was not deleted on purpose. */
    char **refless;
    size_t n_refless;
} write_repair_report;
void write_repair_report_clear(write_repair_report *r);
/* Inspect (and with confirm, repair) graph branch `branch` (NULL: main). Pending intents are
 * resolved first (confirm) or reported (OG_E_RECOVERY_REQUIRED when recovery cannot resolve them).
 * OG_E_CORRUPT when no version is intact, or a table lost versions the intact one publishes
 * (nothing provable to restore). OG_E_PRECONDITION_FAILED when a confirm without force would drop
 * an acknowledged commit (rep->at_stake and the message say which). */
int write_repair(write_graph *g, const char *branch, bool confirm, bool force,
                 write_repair_report *rep);
/* The inspection alone, on a store (no handle: a dry run when the schema files do not read). */
int write_repair_inspect(store *s, const char *branch, write_repair_report *rep);

/* What the recovery classifier decides for one intent (the barrier acts on it; `recover show`
 * reports it). */
typedef enum write_plan_action {
    WRITE_PLAN_NONE = 0,         /* not classified (a damaged sidecar, or not asked) */
    WRITE_PLAN_FINALIZE_FORWARD, /* its commit is visible: audit and delete */
    WRITE_PLAN_FINALIZE_BACK,    /* its rollback commit is visible: audit and delete */
    WRITE_PLAN_RESUME_ROLLBACK,  /* a rollback was under way: finish it */
    WRITE_PLAN_DISCARD,          /* no effect happened: drop it */
    WRITE_PLAN_ROLL_FORWARD,     /* every effect happened: publish its commit */
    WRITE_PLAN_ROLL_BACK,        /* some effects happened: restore them, publish a rollback */
    WRITE_PLAN_RETIRE,           /* the audit log records it resolved already: delete */
    WRITE_PLAN_BLOCKED,          /* only an operator may resolve it (reason says why) */
} write_plan_action;
/* "finalize", "roll_forward", "roll_back", "discard", "retire", "blocked", "none". */
const char *write_plan_action_name(int action);

typedef enum write_pending_state {
    WRITE_PENDING_OWNER_GONE = 1, /* nobody holds its owner lock: recovery may act */
    WRITE_PENDING_LIVE,           /* its owner lock is held: a writer still runs */
    WRITE_PENDING_UNCHECKED,      /* not probed (a read-only handle takes no locks) */
    WRITE_PENDING_RESOLVED,       /* the audit log records it resolved: a stale copy */
    WRITE_PENDING_DAMAGED,        /* the file does not parse as a sidecar */
} write_pending_state;

/* One pending recovery intent (a sidecar under __recovery/). */
typedef struct write_pending {
    char operation_id[GRAPH_ID_LEN + 1];
    int kind;  /* write_kind; 0 when damaged */
    int state; /* write_pending_state */
    bool damaged;
    int64_t started_at_us; /* when damaged: the time in its ULID */
    int64_t owner_pid;     /* 0 when unknown (damaged, or an older writer) */
    char *branch;          /* NULL: main */
    char *actor;
    char *problem;       /* damaged / unsupported: what is wrong; else NULL */
    char audit_kind[24]; /* the audit log's outcome for it, "" when none */
    int action;          /* write_plan_action (write_pending_show only) */
    char *reason;        /* why that action (write_pending_show only) */
    size_t n_effects;
    char **tables; /* the aliases its effects name */
} write_pending;
void write_pending_clear(write_pending *p);
void write_pending_list_free(write_pending *l, size_t n);

/* Every sidecar of the root (oldest first), read but not classified. probe_locks: try each
 * owner lock (0 on a read-only store: state is then UNCHECKED). */
int write_pending_list(store *s, bool probe_locks, write_pending **out, size_t *n);
/* One sidecar, classified as the barrier would (OG_E_NOT_FOUND when there is none). */
int write_pending_show(store *s, bool probe_locks, const char *operation_id, write_pending *out);

/* Resolve one intent on an operator's request, under the gates and owner lock the barrier
 * takes. Without discard: exactly what the barrier does (roll forward, roll back, discard,
 * finalize, or retire a stale copy the audit log records). With discard: drop it, only when
 * proof holds that no effect of it exists (no commit or rollback of it visible, no table
 * version made by its transactions); without proof OG_E_PRECONDITION_FAILED unless force,
 * which drops it anyway, audited as discarded_forced. A live owner is OG_E_CONFLICT naming its
 * pid. *recovery_kind and commit_id tell what was done. */
typedef struct write_resolve_options {
    bool discard;
    bool force;
} write_resolve_options;
int write_recover_resolve(write_graph *g, const char *operation_id,
                          const write_resolve_options *opt, int *recovery_kind,
                          char commit_id[GRAPH_ID_LEN + 1]);

/* The audit log's resolution of operation_id (the first row that is not a retirement):
 * *found false when it has none. kind/commit_id may be NULL. */
int write_audit_find(store *s, const char *operation_id, bool *found, char kind[24],
                     char commit_id[GRAPH_ID_LEN + 1]);

/* The audit log: one row per resolved sidecar (and one per retired stale copy). */
typedef struct write_audit_row {
    char operation_id[GRAPH_ID_LEN + 1];
    char kind[24]; /* write_recovery_kind_name */
    char writer_kind[16];
    char commit_id[GRAPH_ID_LEN + 1]; /* the commit that made it visible or rolled it back, "" */
    int64_t created_at_us;
} write_audit_row;
int write_audit_list(store *s, write_audit_row **out, size_t *n);

#endif
