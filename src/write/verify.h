/* Verify a graph root: check, without writing anything, every invariant the write protocol
 * promises, and report each violation with the object it concerns and the command that fixes
 * it (docs/maintenance.md, "Verifying a graph").
 *
 * Checked always:
 *  - every retained graph-manifest version reconstructs to a snapshot, and the newest one's
 *    lineage names only parents that exist;
 *  - every table version any retained snapshot pins exists, decodes, matches the manifest
 *    checksum its table_version row records, and lies at or below its Lance HEAD; a HEAD above the
 *    head snapshot's pin must be explained, after it was read, by a sidecar naming the table or
 *    a head that now pins that version (the writers' rule: a write in flight is no problem);
 *  - every file those versions (and the graph manifest's and audit log's retained versions)
 *    reference exists, with the size the manifest records where it records one; deletion
 *    files are read whole, parsed and checked against their recorded checksum;
 *  - sidecars under __recovery/ parse; the audit log opens and its rows are counted;
 *  - _schema.pg and _schema.json exist, agree, and carry the schema identity the head names;
 *    every identity a retained commit or branch head names is kept under _schemas/ and hashes
 *    to itself;
 *  - graph-branch refs and table fork refs read, a manifest branch directory without a ref is
 *    reported, every fork a branch head pins has its ref;
 *  - key index segments each checked version lists open and match its fragments.
 * Every remedy is safe to follow as written (none drops an acknowledged commit).
 * With deep: every data file is read whole, checked against the checksum its DataFile records
 * (og_xxh3; files without one are counted unchecked), every page of every column decoded, and
 * every key index entry compared with the table's keys.
 */
#ifndef OG_WRITE_VERIFY_H
#define OG_WRITE_VERIFY_H

#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct write_verify_problem {
    char *kind;    /* a word: "file_missing", "checksum", ... (docs/cli.md lists them) */
    char *object;  /* the file or object, relative to the root */
    char *message; /* what is wrong */
    char *remedy;  /* what fixes it */
} write_verify_problem;

typedef struct write_verify_report {
    write_verify_problem *problems;
    size_t n_problems, cap;
    uint64_t manifest_versions; /* graph-manifest versions reconstructed */
    uint64_t tables;            /* tables pinned at the head */
    uint64_t table_versions;    /* distinct (table, version) pairs checked */
    uint64_t files;             /* distinct files checked (manifests included) */
    uint64_t bytes;             /* their bytes (stat sizes; read with deep) */
    uint64_t checksummed;       /* data files, deletion files and table manifests checked
                                 * against a recorded checksum */
    uint64_t unchecked;         /* those without one (written by lancedb, an older build, or
                                 * published by recovery) */
    uint64_t rows;              /* rows decoded (deep) */
    uint64_t sidecars;          /* recovery sidecars found */
    uint64_t branches;          /* graph branches other than main checked at their heads */
} write_verify_report;

typedef struct write_verify_options {
    bool deep;
    /* Called now and then with a line saying what is being checked (may be NULL). */
    void (*progress)(void *arg, const char *what);
    void *progress_arg;
} write_verify_options;

/* Verify the graph on s. Returns 0 when the check ran (out lists what it found; no problems
 * means clean), OG_E_NOT_FOUND when s holds no graph manifest at all, OG_E_NOMEM. Free out
 * with write_verify_report_clear. */
int write_verify(store *s, const write_verify_options *opt, write_verify_report *out);
void write_verify_report_clear(write_verify_report *r);

#endif
