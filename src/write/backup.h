/* Online backup: a copy of a graph root, taken while writers run, that is itself a graph
 * holding exactly one commit of the source (the head of main when the copy pinned it).
 *
 * The copy is self-consistent because it copies one pinned snapshot, never "the directory":
 *  1. pin the head: the graph-manifest version M and the Lance version every live table's
 *     row pins at M;
 *  2. per table, the files its pinned version references (data, deletion, transaction, key
 *     index segments, Lance indexes) and then that version's manifest; the recovery audit log
 *     likewise at its latest version;
 *  3. the accepted schema files, checked to be the identity M names;
 *  4. the graph manifest's files, and last its version M manifest: the copy's commit point.
 * Sources only ever add immutable files next to what a pin references, so a concurrent writer
 * cannot change what is being copied. Recovery sidecars, lock files and temporaries are never
 * copied: an unpublished write is not part of M (its effects lie above the pinned versions),
 * and the copy's tables end at the versions M pins, so it has nothing to recover. A cleanup
 * that deletes the pinned versions (the head moved on and retention let them go) while the
 * copy runs makes a read fail with OG_E_NOT_FOUND: the backup then pins the new head and
 * starts over, reusing the immutable files it already copied and deleting those it no longer
 * needs before its commit point.
 *
 * Every file is written unsynced and synced in one batch per dataset before that dataset's
 * manifest is written durably, so when the call returns the copy survives power loss; a copy
 * interrupted before its commit point holds no graph (opening it fails with OG_E_NOT_FOUND).
 * Each copied dataset gets a latest-version hint naming its one version.
 *
 * The copy keeps one version of each table: `commit list` on it lists every commit of the
 * source's lineage, but only the head can be read (as after `cleanup --keep 1`).
 * Graph branches: only main is copied (branches do not exist yet; a table pinned on a Lance
 * branch, or a file under another base path, is OG_E_UNSUPPORTED). */
#ifndef OG_WRITE_BACKUP_H
#define OG_WRITE_BACKUP_H

#include "graph/graph.h"
#include "store/store.h"

#include <stddef.h>
#include <stdint.h>

typedef struct write_backup_options {
    int version;       /* 1 */
    unsigned attempts; /* pins tried when files vanish mid-copy (0: 5) */
#ifdef OG_TESTING
    /* Test hook (testing builds only): called after an attempt that files vanished from,
     * before the next pin (to move the head in between). NULL unless a test sets it. */
    void (*test_between_attempts)(void *arg, unsigned attempt);
    void *test_arg;
#endif
} write_backup_options;
#define WRITE_BACKUP_OPTIONS_INIT                                                                  \
    {                                                                                              \
        .version = 1, .attempts = 0                                                                \
    }

typedef struct write_backup_report {
    char commit_id[GRAPH_ID_LEN + 1]; /* the commit the copy holds */
    uint64_t manifest_version;        /* its graph-manifest version */
    char schema_identity[GRAPH_SCHEMA_HASH_LEN + 1];
    size_t tables;     /* data tables copied */
    uint64_t rows;     /* rows over those tables, as verified */
    uint64_t files;    /* objects written to the copy */
    uint64_t bytes;    /* bytes written to the copy */
    unsigned attempts; /* pins it took (1 unless files vanished) */
} write_backup_report;

/* Copy the graph on src into dst (a store on an empty root; the caller checks emptiness),
 * then verify the copy: its snapshot is M with the same head, schema identity and tables, and
 * every table opens at its pinned version with the row count M records. Errors: the store's;
 * OG_E_NOT_FOUND when files kept vanishing after every attempt (or the source has no graph);
 * OG_E_UNSUPPORTED for what the copy cannot carry yet (see above); OG_E_CORRUPT when the copy
 * does not verify. *out is filled on success. */
int write_backup(store *src, store *dst, const write_backup_options *opt, write_backup_report *out);

#endif
