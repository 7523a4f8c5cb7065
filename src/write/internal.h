/* Shared internals of the write layer: the read set, effects, the recovery sidecar (the
 * durable form of an armed intent), the manifest publisher and the audit log. */
#ifndef OG_WRITE_INTERNAL_H
#define OG_WRITE_INTERNAL_H

#include "lance/compact.h"
#include "write/write.h"

#include <jansson.h>

#define WRITE_UUID_CAP 64

/* The graph-control gate (tier WRITE_GATE_SCHEMA) that graph-branch create and delete take
 * (branch.c), and cleanup while it decides and removes what branches might read (cleanup.c). */
#define WRITE_BRANCH_REFS_GATE "branch_refs"

/* ---- Read set ------------------------------------------------------------------------------
 * Explicit named members, so arbitration can narrow later without a redesign. Today every
 * graph commit on a branch moves graph_head, so the head member alone arbitrates every probed
 * table on the branch (RFC-022 §10 step 2); the table members are still compared by name. */
typedef struct write_rs_table {
    char *alias;
    uint64_t version;
    bool written;
} write_rs_table;

typedef struct write_read_set {
    uint64_t manifest_version;                       /* base manifest version */
    char branch_identity[LANCE_BRANCH_IDENTITY_CAP]; /* "" for main */
    char graph_head[GRAPH_ID_LEN + 1];
    char schema_identity[GRAPH_SCHEMA_HASH_LEN + 1];
    write_rs_table *tables; /* sorted by alias */
    size_t n_tables;
} write_read_set;

void write_rs_clear(write_read_set *rs);
int write_rs_add_table(write_read_set *rs, const char *alias, uint64_t version, bool written);
/* Capture the branch-wide members from a snapshot. */
void write_rs_capture(write_read_set *rs, const graph_snapshot *snap);
/* 0 if every member of rs holds in snap, else OG_E_READ_SET_CONFLICT naming the first member
 * that moved (member, expected, actual in the thread error). */
int write_rs_check(const write_read_set *rs, const graph_snapshot *snap);

/* ---- Effects ------------------------------------------------------------------------------ */

typedef struct write_effect {
    char *alias;
    int kind; /* LANG_NODE / LANG_EDGE */
    uint64_t sid, inc;
    char *path;
    char *table_branch;        /* NULL: main */
    uint64_t expected_version; /* the manifest pin = Lance HEAD before the effect */
    char uuid[WRITE_UUID_CAP]; /* the staged transaction's identity */
    /* A first-touch fork (RFC-022 §3 invariant 2, §5 "first-touch ref"): the graph branch
     * table_branch pins this table on another Lance branch (fork_from, NULL: main) at
     * expected_version, so apply first creates the table's native branch table_branch there,
     * then stages the change on it (with the pre-minted uuid) and commits at expected + 1. */
    bool fork;
    char *fork_from;
    const struct graph_change *change; /* fork: the change to stage in apply (not in sidecars;
                                        * owned by the input or write_intent.owned_changes);
                                        * NULL: the rows come from write_intent.stream */
    lance_staged *staged;              /* the writer's staged transaction (not in sidecars) */
    lance_dataset *base;               /* the snapshot it was staged on (outlives staged) */
    uint64_t achieved_version;         /* after the commit (0 before) */
    uint64_t row_count;                /* rows at achieved_version */
    bool compact_due; /* a size tier is due at achieved_version (maintenance trigger) */
    bool tiered;      /* optimize: compact only the due tiers (not in sidecars) */
    struct lance_compact_plan *compaction; /* optimize: merged files written in prepare,
                                            * committed by apply (not in sidecars) */
    /* For write_graph.on_commit (not in sidecars): the table at achieved_version, and for a
     * strict insert the appended rows' id/src/dst (references). */
    lance_dataset *after;
    arrow_array *app_id, *app_src, *app_dst;
    /* The files the effect's transaction wrote (data, deletion, key index), as recorded in the
     * sidecar: recovery deletes them when it rolls the intent back or discards it. Taken from
     * `staged`/`compaction` while the writer holds them. */
    char **files;
    size_t n_files;
} write_effect;

/* Frees the effect. A staged transaction or compaction still held (never committed) is
 * discarded with the files it wrote: nothing can name them any more. */
void write_effect_clear(write_effect *e);
/* The checksum of the Lance manifest of version v that this effect's commit made, when the
 * effect holds it (e->after at v); NULL otherwise (a recovery publishes without one: that
 * version is then unchecked). What the graph manifest records (graph_rows_add_version_sum). */
const uint64_t *write_effect_manifest_sum(const write_effect *e, uint64_t v);
/* Delete the files recorded for an effect that recovery rolled back or discarded (best effort,
 * never one the table's latest version names); *n counts those deleted. */
int write_effect_delete_files(store *s, const write_effect *e, size_t *n);

/* The size-tiered compaction options of automatic maintenance (WRITE_TIER_FACTOR). */
void write_tiered_compact_options(lance_compact_options *co);
/* Whether automatic maintenance has a tier of ds to compact (errors count as not due). */
bool write_compact_due(const lance_dataset *ds);

/* A planned rollback of one table: restore `to` as a new version at from+1, with identity uuid. */
typedef struct write_rollback {
    char *alias;
    uint64_t from, to;
    char uuid[WRITE_UUID_CAP];
} write_rollback;

/* ---- Sidecar (the armed intent) ------------------------------------------------------------ */

#define WRITE_OWNER_LOCK_CAP 64

/* A schema apply's change to the table registry (persisted in its sidecar, so recovery can
 * publish exactly the commit the writer would have). */
typedef enum write_schema_op {
    WRITE_SCHEMA_CREATE = 1, /* a new table (a new type, or a new incarnation of a re-added one),
                              * created empty at version 1 before the sidecar, registered here */
    WRITE_SCHEMA_RENAME,     /* an existing table registered under a new alias (a renamed type) */
    WRITE_SCHEMA_DROP,       /* a tombstone at `version` (a dropped type) */
} write_schema_op;
typedef struct write_schema_table {
    int op;   /* write_schema_op */
    int kind; /* LANG_NODE / LANG_EDGE */
    uint64_t sid, inc;
    uint64_t version; /* DROP: the version tombstoned (the last pinned) */
    char *alias;      /* the alias it has after the apply (DROP: the one it had) */
} write_schema_table;

typedef struct write_intent {
    int format; /* WRITE_SIDECAR_FORMAT */
    char operation_id[GRAPH_ID_LEN + 1];
    int kind; /* write_kind */
    char *actor;
    int64_t started_at_us;
    char *branch; /* NULL: main */
    write_read_set rs;
    char commit_id[GRAPH_ID_LEN + 1]; /* lineage of the intended commit */
    char parent_commit_id[GRAPH_ID_LEN + 1];
    char merged_parent_commit_id[GRAPH_ID_LEN + 1]; /* a merge: the source head ("" otherwise) */
    /* Publish a commit even when no effect changes a table (a merge whose result equals the
     * target's content still records the merge; not persisted: with no effect there is
     * nothing for recovery to finish). */
    bool publish_always;
    char content_parent[GRAPH_ID_LEN + 1]; /* the base's content head (not persisted: recovery
                                            * takes it from the snapshot it checked) */
    int64_t created_at_us;
    char rollback_commit_id[GRAPH_ID_LEN + 1];
    write_effect *effects;
    size_t n_effects;
    write_rollback *rollback; /* persisted before the first restore */
    size_t n_rollback;
    graph_head *base; /* the base prepare ran on (not persisted, borrowed) */
    /* The advisory lock its owner holds while it runs ("" in sidecars of older writers: then
     * "sidecar-<operation id>"). A writer reuses its owner locks from write to write. */
    char owner_lock[WRITE_OWNER_LOCK_CAP];
    /* The process that wrote the sidecar (0: unknown, an older writer), so that an operator
     * told "still running" knows which. */
    int64_t owner_pid;
    /* The sidecar was written but is not durable yet (not persisted): the first effect that
     * commits makes it durable in its own batch of syncs, before it links its manifest
     * (write_intent_carry_sidecar), so arming recovery costs no sync round of its own. */
    bool sidecar_unsynced;
    /* Changes a mutation computed in prepare that first-touch effects stage in apply (not
     * persisted; NULL when none). */
    struct graph_change_set *owned_changes;
    /* A load in chunks with first-touch effects (their `change` NULL): apply forks their
     * tables, then reads the stream again to stage their rows on the forks (borrowed from the
     * input; not persisted). */
    const struct write_change_stream *stream;
    /* A schema apply: the schema identity its commit publishes ("" otherwise) and its table
     * registry changes. */
    char schema_target[GRAPH_SCHEMA_HASH_LEN + 1];
    write_schema_table *schema_tables;
    size_t n_schema_tables;
    /* An intent of write_repair (persisted as "repair"): WRITE_REPAIR_FORWARD pins each
     * effect's table at effect.expected_version (its HEAD when repair inspected it: the data a
     * lost manifest version published) in a commit on top of rs; WRITE_REPAIR_FORCED restores
     * them through its rollback plan (dropping acknowledged commits on an operator's word). */
    int repair_mode;
} write_intent;

enum { WRITE_REPAIR_NONE = 0, WRITE_REPAIR_FORWARD, WRITE_REPAIR_FORCED };

void write_intent_clear(write_intent *in);
/* The sidecar key of an operation: "__recovery/<id>.json". */
void write_sidecar_key(char out[STORE_KEY_MAX], const char *operation_id);
/* The advisory lock its owner holds for its whole life (its owner_lock, or the name older
 * writers used). */
void write_intent_owner_lock(const write_intent *in, char out[STORE_KEY_MAX]);
int write_intent_to_json(const write_intent *in, core_buf *out);
/* Parse a sidecar body; `key` names it in errors. OG_E_CORRUPT for damage (naming the file and
 * the remedy), OG_E_UNSUPPORTED for a newer format. */
int write_intent_from_json(write_intent *out, const char *body, size_t len, const char *key);
/* Whether a sidecar body that does not parse is what a power loss leaves of an unsynced one:
 * empty, zeros, or a JSON document cut short (possibly followed by zeros). Such a sidecar
 * never became durable, so its write never reached its first effect (the first table commit
 * syncs it before it links anything): recovery discards it. Other damage is not a tear. */
bool write_sidecar_torn(const char *body, size_t len);
/* Whether a sidecar body is a JSON object whose operation_id is a string other than
 * operation_id (the bytes of another write's sidecar under this name). */
bool write_sidecar_names_other(const char *body, size_t len, const char *operation_id);
/* Durable whole-object write of the sidecar. */
int write_sidecar_put(store *s, const write_intent *in);
/* The same written but not synced (STORE_F_NOSYNC): in->sidecar_unsynced is set, and the
 * sidecar must be made durable before the first effect (write_intent_carry_sidecar, or
 * write_sidecar_sync). */
int write_sidecar_put_unsynced(store *s, write_intent *in);
/* Make an unsynced sidecar durable now (nothing when it is already). */
int write_sidecar_sync(store *s, write_intent *in);
/* Hand the unsynced sidecar to the commit of an effect (a staged Lance commit or a staged
 * compaction: exactly one is non-NULL), which syncs it with its own files before it links.
 * The caller clears in->sidecar_unsynced once that commit has been made. */
int write_intent_carry_sidecar(const write_intent *in, lance_staged *st, lance_compact_plan *plan);
/* Sidecar operation ids on the store, sorted (ULID order = age). Files that are not
 * "<ULID>.json" are skipped (not ours). */
int write_sidecar_list(store *s, char (**ids)[GRAPH_ID_LEN + 1], size_t *n);
/* Those of them that can overlap an operation on graph branch `scope` (RFC-022 §4.1): with
 * scope NULL, every one; otherwise the intents of a writer on that branch ("main" for main),
 * or with an effect on a table of that physical branch, and every intent this cannot be told
 * of: one that does not parse (recovery decides what it is), or of a kind that is not a
 * branch-scoped data write (load, mutation, optimize). A sidecar gone by the time it is read
 * (its write finished) is left out. */
int write_sidecar_list_overlapping(store *s, const char *scope, char (**ids)[GRAPH_ID_LEN + 1],
                                   size_t *n);
/* Whether a sidecar other than operation `self`'s has an effect on table `path` on physical
 * branch `table_branch` (a fork it made or will make there is not an orphan). A sidecar that
 * does not parse counts (it cannot be told); one gone by the time it is read does not. */
int write_sidecar_fork_claimed(store *s, const char *self, const char *path,
                               const char *table_branch, bool *claimed);

/* ---- Publisher ----------------------------------------------------------------------------- */

/* Build the rows of one publish attempt for manifest version `mver` on top of `cur`. */
typedef int (*write_rows_fn)(void *arg, const graph_snapshot *cur, uint64_t mver, graph_rows *rows);

/* Commit one new manifest version on `branch` carrying the rows rows_fn builds, as a CAS: the
 * read set (NULL: none) is arbitrated against the exact manifest version the commit is built
 * on, and the commit happens at exactly that version + 1. A lost race re-reads and re-arbitrates
 * (at most WRITE_MAX_PUBLISH_ATTEMPTS). base_hint (may be NULL) is the manifest the caller
 * already holds at the version it revalidated, used by the first attempt. *published receives
 * the new version, *after_out (may be NULL) the manifest dataset at it. */
int write_publish(write_graph *g, const char *branch, const write_read_set *rs,
                  const lance_dataset *base_hint, write_rows_fn rows_fn, void *arg,
                  uint64_t *published, lance_dataset **after_out);

/* ---- Audit --------------------------------------------------------------------------------- */

/* Append one audit row unless one for operation_id exists already (exactly one per recovery). */
int write_audit_record(store *s, const write_intent *in, int recovery_kind, const char *commit_id,
                       const char *outcomes_json);

/* The input of the mutation/load adapter: a fixed change set, or a builder run per prepare. */
typedef struct write_changes_input {
    const graph_change_set *fixed;
    write_build_fn build;
    void *arg;
    const write_change_stream *stream; /* set: the changes come in chunks (the others NULL) */
} write_changes_input;

/* Delta rows shared by the adapters and recovery: one table_version row per effect (its
 * achieved version and row count, or versions[i]/counts[i]; only where which[i] when given;
 * skipping effects that did not move when asked), and the lineage (commit + branch head). */
int write_rows_versions(graph_rows *rows, const write_intent *in, const uint64_t *versions,
                        const uint64_t *counts, const bool *which, bool skip_unmoved);
/* The commit row and the branch head. A maintenance commit (optimize, a recovery rollback)
 * is marked, and its head carries in->content_parent forward as the branch's last
 * content-changing commit; any other commit is its own content head. */
int write_rows_lineage(graph_rows *rows, const write_intent *in, const char *id, const char *parent,
                       const char *actor, int64_t created_at_us, uint64_t mver, bool maintenance);

/* A schema apply's rows beyond its table versions and lineage: the registrations, renames and
 * tombstones of in->schema_tables and the schema row of in->schema_target (nothing for other
 * kinds). Shared by the adapter and recovery's roll-forward. */
int write_rows_schema(graph_rows *rows, const write_intent *in, uint64_t mver);
/* After a schema apply's commit is visible (by its writer or a recovery): the root pair
 * rewritten to mirror it and the handle's accepted schema moved to it (best effort: a failure
 * is logged; the next open repairs the pair). */
void write_schema_promote(write_graph *g, const char *identity);

/* The mutation/load adapter's preparation of a change set against snap (adapter_changes.c):
 * validation (skipped with validate false: the caller has validated it), read-set members,
 * and one effect per changed table, staged now or (a first touch) in apply. First-touch
 * effects point into cs, which must then outlive the intent (write_intent.owned_changes). */
int write_changes_prepare_set(write_graph *g, const graph_change_set *cs,
                              const graph_snapshot *snap, write_intent *in, bool validate);

/* Run the adapter registered for `kind` through the coordinator (its input is the adapter's
 * own: the write layer's entry points build it). */
int write_run_kind(write_graph *g, int kind, const void *input, const write_options *opt,
                   write_result *res);

/* ---- Helpers ------------------------------------------------------------------------------- */

int64_t write_now_us(void);
void write_stats_add(write_graph *g, const write_stats *delta);
/* The gate keys of an intent: schema, branch, then every effect's (branch, alias). */
int write_intent_gates(write_graph *g, const write_intent *in, write_gate_set **out);

/* write_gates_acquire with the writer's gate timeout; a timeout is OG_E_RESOURCE_LIMIT naming
 * the holder (operation id, pid) when a live intent tells it. */
int write_gates_take(write_graph *g, const write_gate_key *keys, size_t n, write_gate_set **out);
/* Resolve one sidecar (gates taken inside). */
int write_recover_one(write_graph *g, const char *operation_id, bool *resolved);

#endif
