/* Lance cleanup: delete old versions and the files no retained version references.
 *
 * A version is retained when it is the latest, when a tag names it, or when it does not meet
 * the cutoff (see lance_cleanup_options). Every other version's manifest is deleted. Then the
 * data files (data/), deletion files (_deletions/), transaction files (_transactions/) and
 * this engine's key index segments (_ogkix/, keyindex.h)
 * that no retained manifest references are deleted when either
 *  - a deleted manifest referenced them (they were committed, then superseded), or
 *  - they are older than the safety window (staged by an attempt that never committed, or
 *    left by an earlier interrupted cleanup). Younger unreferenced files may belong to a
 *    writer that has staged but not yet committed, so they are spared.
 *
 * Crash safety: manifests are deleted first (oldest first), files only after every deleted
 * manifest is gone, so a crash at any point leaves every remaining version complete; running
 * cleanup again finishes the job (it is idempotent: a second run deletes nothing).
 * Concurrency: the whole run holds the table's retention lock (refs.h), so tag creation and
 * restore on this host cannot race it; versions committed while it runs are re-listed and
 * their files kept. Across hosts without real locks, a restore or tag of a version being
 * deleted is best effort, as in lance.
 * Not touched: _indices/ (index files are not interpreted here), _refs/, tree/.
 * Branches: a branch reads its fork point's files through a base path, so the version every
 * branch forked from (of this table, or of this branch when root is a branch directory
 * <main>/tree/<name>) is retained with everything it references. A branch's own later files
 * live under its directory, which cleaning the parent never touches. */
#ifndef OG_LANCE_CLEANUP_H
#define OG_LANCE_CLEANUP_H

#include "lance/manifest.h"
#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lance_cleanup_options {
    int version; /* 1 */
    /* Cutoff. A version can be deleted only if it meets every criterion given:
     * before_version: its number is below this (0: no version criterion);
     * older_than_ms: its manifest was written more than this long before now (< 0: no age
     * criterion). With neither, every version not retained otherwise is deleted. */
    uint64_t before_version;
    int64_t older_than_ms;
    uint64_t safety_window_ms; /* unreferenced, never-committed files younger than this stay */
    uint64_t now_ms;           /* "now" in ms since the epoch (0: the wall clock) */
    bool dry_run;              /* count what would be deleted, delete nothing */
    /* Keep every version above the oldest one kept (for a tag, a fork point or the cutoff):
     * the graph engine's version searches rely on the kept versions being one run. */
    bool contiguous;
} lance_cleanup_options;

#define LANCE_CLEANUP_DEFAULT_AGE_MS (14ll * 24 * 3600 * 1000)
#define LANCE_CLEANUP_DEFAULT_WINDOW_MS (3600ull * 1000)
#define LANCE_CLEANUP_OPTIONS_INIT                                                                 \
    {                                                                                              \
        1, 0, LANCE_CLEANUP_DEFAULT_AGE_MS, LANCE_CLEANUP_DEFAULT_WINDOW_MS, 0, false, false       \
    }

typedef struct lance_cleanup_report {
    uint64_t latest_version;    /* the latest version when cleanup listed them */
    uint64_t versions_retained; /* manifests kept (including any committed meanwhile) */
    uint64_t versions_deleted;
    uint64_t data_files_deleted;
    uint64_t deletion_files_deleted;
    uint64_t txn_files_deleted;
    uint64_t index_files_deleted; /* this engine's key index segments (keyindex.h) */
    uint64_t bytes_deleted;       /* manifests and files */
    uint64_t files_spared_recent; /* unreferenced but inside the safety window */
    bool hint_rewritten;          /* the hint named a missing or older version */
} lance_cleanup_report;

/* Clean up the table at root. opt NULL: LANCE_CLEANUP_OPTIONS_INIT. *out may be NULL.
 * Errors: OG_E_NOT_FOUND (no versions), OG_E_UNSUPPORTED (branches present), OG_E_CORRUPT
 * (a retained manifest or a tag cannot be read: nothing more is deleted), store errors. */
int lance_cleanup(store *s, const char *root, const lance_cleanup_options *opt,
                  lance_cleanup_report *out);

/* Every file of the table at root that manifest m references: its data files, deletion files,
 * transaction file and this engine's key index segments (not the manifest itself, nor Lance
 * indexes under _indices/), fn called once per key (a failing fn stops the walk and its code
 * is returned). Files under another base path (base_id) belong to another dataset directory:
 * they are not passed to fn, and *foreign (may be NULL) counts them. */
int lance_manifest_files(const Lance__Table__Manifest *m, const char *root,
                         int (*fn)(void *arg, const char *key), void *arg, size_t *foreign);
/* lance_manifest_files of a decoded manifest. */
int lance_manifest_files_of(const lance_manifest *m, const char *root,
                            int (*fn)(void *arg, const char *key), void *arg, size_t *foreign);

#endif
