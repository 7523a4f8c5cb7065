/* Lance compaction: rewrite small fragments, and fragments with many deleted rows, into
 * larger fragments without deleted rows, committed as Rewrite transactions
 * (lance-format-subset.md §4.2, §5.3, §5.4).
 *
 * Planning, over the fragments of the snapshot in manifest order:
 *  - a fragment is a candidate when its visible rows are fewer than target_rows_per_fragment,
 *    or (materialize_deletions) when more than materialize_deletions_threshold of its
 *    physical rows are deleted;
 *  - runs of adjacent candidates form groups; a group is closed once it holds at least
 *    target_rows_per_fragment visible rows; a fragment covered by an index of the manifest's
 *    IndexSection is never a candidate (a Rewrite would invalidate the index's row
 *    addresses, and this engine writes no index section) and it ends the run; an index
 *    without a fragment bitmap (or one that cannot be decoded) is taken to cover every
 *    fragment;
 *  - a group of one fragment is rewritten only if it has deletions to materialize (above the
 *    threshold, or every row deleted).
 * Each group's visible rows are copied, in order, into new fragments of at most
 * target_rows_per_fragment rows (2.0 data files, written unsynced and made durable in one
 * batch before the manifest names them). Deleted rows are dropped. With
 * stable row ids every row keeps its row id (the new fragment's RowIdSequence holds the old
 * ids: a range when contiguous, else a range_with_bitmap (LSB-first) or an array) and its
 * created-at and last-updated-at versions (within version_runs_max). New fragments take ids after
 * max_fragment_id and stand where the group's first fragment stood; next_row_id is unchanged.
 *
 * Commits: each is a Rewrite{groups: [{old_fragments, new_fragments}]} with a fresh uuid,
 * at exactly (previous version) + 1 with zero retries: OG_E_CONFLICT if that version is taken
 * (nothing of that commit is published; the caller may re-open and retry). With
 * max_groups_per_commit = 0 all groups go into one commit; otherwise groups are committed in
 * chunks, one version each, and the report lists every version produced. Nothing to compact
 * produces no commit. Compacting again may merge the leftovers of the previous run (groups
 * end in a fragment below the target); it converges to zero commits.
 *
 * Branches: on a snapshot opened with lance_branch_open, inherited fragments are read through
 * their base paths and the new files go to the branch's directory; the commit first checks the
 * branch is still the incarnation the plan was built on (lance_branch_check_base).
 * Staged files of a failed attempt are referenced by nothing; cleanup reclaims them once they
 * are older than its safety window (so a compaction must finish within that window). */
#ifndef OG_LANCE_COMPACT_H
#define OG_LANCE_COMPACT_H

#include "lance/dataset.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LANCE_COMPACT_DEFAULT_TARGET_ROWS (1u << 20)
#define LANCE_COMPACT_MAX_COMMITS 16

typedef struct lance_compact_options {
    int version;                            /* 1 */
    uint64_t target_rows_per_fragment;      /* 0: LANCE_COMPACT_DEFAULT_TARGET_ROWS */
    bool materialize_deletions;             /* rewrite fragments with many deleted rows */
    double materialize_deletions_threshold; /* fraction of physical rows, in [0, 1] */
    /* Groups per commit (0: every group in one commit). At most LANCE_COMPACT_MAX_COMMITS
     * commits are made: the last one takes whatever groups remain. */
    size_t max_groups_per_commit;
    const char *uuid; /* identity of the first commit (NULL: random) */
    /* Size tiers (0: off). With T >= 2, a fragment's tier is floor(log_T(visible rows)), and
     * only runs of at least T adjacent fragments of one tier are merged (each run a group;
     * target_rows_per_fragment still bounds the new files). A row is then rewritten about
     * log_T(table rows) times over the table's life instead of on every run, and the table
     * keeps at most about (T - 1) fragments per tier. Fragments with deletions to
     * materialize are still rewritten alone. */
    unsigned tier_factor;
    /* A new fragment keeps its rows' created-at / last-updated-at versions as sequences of at
     * most this many runs; past it, it carries none (unknown). 0: always, exactly. */
    size_t version_runs_max;
    /* When the commit finds its version taken, rebase this many times (0: fail with
     * OG_E_CONFLICT): if every fragment the plan rewrites is still there, unchanged, in the
     * latest version (concurrent appends leave them alone), the same new files are committed
     * on top of it, with fresh fragment ids. Only with max_groups_per_commit 0 and not on a
     * branch. The new files are not written again. */
    unsigned rebase_attempts;
    /* Rows to drop or to set apart while merging (NULL: every row kept, in order). Called
     * once per scanned batch of a group's visible rows (every column of the table, in schema
     * order) with cls[0..num_rows) preset to LANCE_COMPACT_KEEP; it may set a row to
     * LANCE_COMPACT_DROP (not copied) or LANCE_COMPACT_APART (copied into separate new
     * fragments, placed before the group's other new fragments). A commit that drops rows is
     * an Update (removed: the groups' old fragments; new: their new ones), since a Rewrite
     * promises the same rows; one that only sets rows apart stays a Rewrite. A nonzero return
     * fails the compaction with that code. The caller decides which rows are redundant: a
     * rebase over appends commits the same result. */
    int (*classify)(void *arg, const arrow_batch *b, uint8_t *cls);
    void *classify_arg;
    /* With classify: record the ids of the fragments that hold only rows set apart in the
     * manifest's table_metadata under this key (lance_apart_fragments reads it), so that a
     * reader that does not want those rows skips the fragments without opening them. A commit
     * keeps the listed ids still in the manifest and adds its new fragments of set-apart rows.
     * Ids are never reused, so a writer that does not know the key (lancedb compacting the
     * table) can only make the list name fragments that are gone. NULL: no list. */
    const char *apart_key;
    /* Key indexes (keyindex.h) to declare on the table, "col[>payload];..." (NULL: keep the
     * table's own). Without tiers, a fragment of at least LANCE_KIX_MIN_ROWS live rows that
     * no segment of this declaration covers is rewritten, alone if need be, so that its new
     * fragment gets one: how an explicit optimize builds missing indexes. */
    const char *key_indexes;
} lance_compact_options;

enum { LANCE_COMPACT_DROP = 0, LANCE_COMPACT_KEEP = 1, LANCE_COMPACT_APART = 2 };

#define LANCE_COMPACT_OPTIONS_INIT                                                                 \
    {                                                                                              \
        1, 0, true, 0.1, 0, NULL, 0, 0, 0, NULL, NULL, NULL, NULL                                  \
    }

/* The fragment ids listed under key in ds's table_metadata that ds still has, ascending (*ids
 * NULL and *n 0 when none; free with core_free). A list that does not parse counts as
 * none. */
int lance_apart_fragments(const lance_dataset *ds, const char *key, uint64_t **ids, size_t *n);
/* The same from a manifest message (the list's text is untrusted: fuzzed). */
int lance_manifest_apart_fragments(const Lance__Table__Manifest *pb, const char *key,
                                   uint64_t **ids, size_t *n);

typedef struct lance_compact_report {
    uint64_t read_version; /* the snapshot compaction planned on */
    size_t n_commits;      /* versions produced (0: nothing to do) */
    uint64_t versions[LANCE_COMPACT_MAX_COMMITS];
    char uuids[LANCE_COMPACT_MAX_COMMITS][LANCE_UUID_LEN + 1];
    size_t groups; /* groups rewritten (planned, when a commit failed) */
    size_t fragments_before, fragments_after;
    size_t fragments_removed, fragments_added;
    size_t files_before, files_after; /* data files the manifest names */
    size_t files_written;
    uint64_t rows_before, rows_after; /* visible rows */
    uint64_t rows_rewritten;          /* visible rows copied into new fragments */
    uint64_t deleted_rows_dropped;    /* deleted rows materialized away */
    uint64_t rows_dropped;            /* visible rows the classifier dropped */
    size_t fragments_skipped_indexed; /* would have been candidates, but an index covers them */
} lance_compact_report;

/* Compact the table on top of snapshot ds (opt NULL: LANCE_COMPACT_OPTIONS_INIT).
 * *out (may be NULL) is the snapshot after the last commit (a copy of ds when nothing was
 * committed). rep (may be NULL) is filled also on failure: the commits already made stay
 * made and are listed (n_commits/versions are exact even when a later step failed; the row
 * and file counters then include work staged for the failed commit). Errors: OG_E_BAD_REQUEST
 * (options), OG_E_UNSUPPORTED (a table this engine cannot write), OG_E_CONFLICT (a version was
 * taken), store and read errors. */
int lance_compact(lance_dataset **out, const lance_dataset *ds, const lance_compact_options *opt,
                  lance_compact_report *rep);

/* A compaction planned and written, to be committed later (a caller that must hold a gate
 * around the commit alone). lance_compact_stage plans on ds and writes every new file (synced
 * with the commit); the plan keeps its own reference to the snapshot. max_groups_per_commit
 * must be 0. lance_compact_plan_commit makes the one commit at the snapshot's version + 1
 * (rebasing as opt->rebase_attempts allows; no groups: no commit and *out a copy of the
 * snapshot). Files of a plan freed uncommitted are orphans for cleanup's age rule. */
typedef struct lance_compact_plan lance_compact_plan;
int lance_compact_stage(lance_compact_plan **out, const lance_dataset *ds,
                        const lance_compact_options *opt);
size_t lance_compact_plan_groups(const lance_compact_plan *p);
int lance_compact_plan_commit(lance_compact_plan *p, lance_dataset **out,
                              lance_compact_report *rep);
/* Also make `key` durable with the plan's files, before its commit is linked (see
 * lance_staged_also_durable). Nothing to commit: nothing synced. */
int lance_compact_plan_also_durable(lance_compact_plan *p, const char *key);
void lance_compact_plan_free(lance_compact_plan *p);
/* Free a plan that was never committed and delete the files it wrote (best effort); once its
 * commit was attempted it only frees. NULL is a no-op. */
void lance_compact_plan_discard(lance_compact_plan *p);
/* Call fn with the key of every file the plan wrote, stopping at the first non-zero return. */
int lance_compact_plan_files(const lance_compact_plan *p, int (*fn)(void *arg, const char *key),
                             void *arg);

/* Whether lance_compact(ds, opt) would rewrite anything, from the manifest alone (and the
 * deletion files of fragments whose deleted-row count the manifest does not give). */
int lance_compact_due(const lance_dataset *ds, const lance_compact_options *opt, bool *due);

#endif
