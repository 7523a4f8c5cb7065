/* The open graph: what every request on one graph root needs, read or write. The handle
 * holds the root's store, whether it was opened read-only, the root's identity, the accepted
 * schema and its identity, the actor recorded in lineage, and the cached head of main (the
 * graph manifest at its latest version and the snapshot reconstructed from it), so that a read
 * at the head costs a probe or two of the version search instead of a scan of the manifest.
 *
 * The handle never writes. The write protocol (src/write/) keeps its own state in a writer
 * that references a handle, and installs the head its own commit produced (graph_handle_install)
 * so that the next read or write needs no read back. A handle may be used by several threads. */
#ifndef OG_GRAPH_GRAPH_HANDLE_H
#define OG_GRAPH_GRAPH_HANDLE_H

#include "graph/graph.h"
#include "lang/history.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- Heads ----------------------------------------------------------------------------------
 * The state of a graph branch at one manifest version: the manifest dataset and the snapshot
 * reconstructed from it (tables, head, identities; no lineage). Immutable once made, reference
 * counted, so a reader or a writer keeps the one it acquired while the handle moves on. The
 * tables of its snapshot are opened on first use (graph_head_table) and kept with it. */
typedef struct graph_head graph_head;

/* A head from a manifest dataset and its snapshot, both taken (also on failure). */
int graph_head_new(graph_head **out, lance_dataset *manifest, graph_snapshot *snap);
/* The head of `branch` (NULL: main) at its latest manifest version, read afresh (no cache). */
int graph_head_load(graph_head **out, store *s, const char *branch);
/* One more reference; released with graph_head_release. */
graph_head *graph_head_retain(graph_head *hd);
void graph_head_release(graph_head *hd);
const graph_snapshot *graph_head_snapshot(const graph_head *hd);
const lance_dataset *graph_head_manifest(const graph_head *hd);
/* A table of the head's snapshot (t points into it) opened at its pin for writing, shared by
 * everyone holding the head (borrowed: valid while the head is held). Its signature is the
 * validator's table source (graph_validate_ex). */
int graph_head_table(void *hd, const graph_table *t, const lance_dataset **out);

/* ---- The handle ------------------------------------------------------------------------------ */

typedef struct graph_handle {
    store *s;
    bool readonly;         /* opened read-only: nothing on the root is ever written */
    char *root_id;         /* canonical root identity (writers share gates by it) */
    lang_catalog *catalog; /* the accepted schema */
    char schema_identity[GRAPH_SCHEMA_HASH_LEN + 1];
    char *actor;       /* recorded in lineage (NULL: none) */
    void *lock_;       /* internal: guards head_ and branches_ */
    graph_head *head_; /* internal: the last head of main seen */
    void *branches_;   /* internal: the last heads of other branches seen (graph_handle.c) */
    void *schemas_;    /* internal: other schemas read by identity, kept until close */
} graph_handle;

typedef struct graph_open_options {
    int version; /* 1 */
    bool readonly;
    const char *actor;
} graph_open_options;
#define GRAPH_OPEN_OPTIONS_INIT                                                                    \
    {                                                                                              \
        1, false, NULL                                                                             \
    }

/* Open the graph on store s (the graph root): it must exist and be of this binary's format
 * (OG_E_NOT_FOUND says whether an init was started and did not finish), and its accepted
 * schema is read. root_id identifies the root (a canonical path; NULL: ""). The handle takes
 * ownership of s (also on failure). Nothing is written, whatever the options. */
int graph_handle_open(graph_handle **out, store *s, const char *root_id,
                      const graph_open_options *opt);
void graph_handle_close(graph_handle *h);
/* Why root s holds no graph, given that its graph manifest holds no version: the typed error
 * every command reports. An init or a backup that did not finish (its claim is there):
 * OG_E_NOT_FOUND naming what to run again; schema files without a manifest: OG_E_CORRUPT (a
 * graph that lost its manifest); otherwise OG_E_NOT_FOUND (run init). */
int graph_root_absent_error(store *s);
/* For readers that do not open the graph (verify): graph_root_absent_error() when the root is
 * an init or a backup that did not finish, else 0 (two HEADs when neither claim is there). */
int graph_root_check_unfinished(store *s);

/* The head of main at its latest manifest version: the cached one while it is still the
 * latest (a head or two of the version search), else a fresh read that becomes the cached
 * one. Release it with graph_head_release. */
int graph_handle_head(graph_handle *h, graph_head **out);
/* The same with flags: GRAPH_HEAD_PREGATE for a write's base taken before its gates, which
 * re-checks the version under them (no look for a lost version above the cached one). A head
 * read afresh is checked against its tables (graph_head_check_tables) in either case. */
#define GRAPH_HEAD_PREGATE 1u
int graph_handle_head_ex(graph_handle *h, unsigned flags, graph_head **out);
/* A copy of that head's snapshot (caller frees). */
int graph_handle_head_snapshot(graph_handle *h, graph_snapshot **out);
/* Make hd (a head of main) the cached head; the handle takes a reference of its own. */
void graph_handle_install(graph_handle *h, graph_head *hd);
/* Main's manifest moved from version `from` to manifest's version by a commit that changes no
 * graph state (manifest compaction: physical only): if the cached head of main is at `from`,
 * the same state is cached at the new version, with this manifest. Takes manifest. */
void graph_handle_install_unchanged(graph_handle *h, uint64_t from, lance_dataset *manifest);
/* The same for graph branch `branch` (NULL: main, as above): the handle keeps the last head of
 * a few branches (GRAPH_HANDLE_BRANCH_HEADS, the least recently used goes). A cached head is
 * taken when its branch is still the same incarnation (its ref's identity) at the same version.
 * OG_E_NOT_FOUND when the branch has no manifest. */
#define GRAPH_HANDLE_BRANCH_HEADS 8
int graph_handle_branch_head(graph_handle *h, const char *branch, graph_head **out);
/* The same with graph_handle_head_ex's flags. */
int graph_handle_branch_head_ex(graph_handle *h, const char *branch, unsigned flags,
                                graph_head **out);
void graph_handle_install_branch(graph_handle *h, const char *branch, graph_head *hd);
/* The catalog of schema `identity`: the accepted one, or one an earlier commit was made under
 * (graph_schema_read_identity), read once and kept until the handle closes (borrowed: valid
 * while the handle is open). A schema apply makes a new one accepted with
 * graph_handle_accept_schema; catalogs are never freed before close, so a thread still
 * running under the old one is safe. */
int graph_handle_catalog(graph_handle *h, const char *identity, const lang_catalog **out);
/* The catalog snapshot `snap` was written under (its schema identity; the accepted one when
 * it records none), as graph_handle_catalog: a read at an earlier commit checks its query
 * against this, not the accepted schema. OG_E_NOT_FOUND names the identity when the graph
 * does not keep that schema. */
int graph_handle_snapshot_catalog(graph_handle *h, const graph_snapshot *snap,
                                  const lang_catalog **out);
/* The other schema versions the graph keeps, seen from `cat` (a catalog of this handle): when
 * cat is the accepted schema, every other kept one, all earlier; otherwise the accepted one,
 * later. For the wording of unknown names (lang/history.h); a version that cannot be read is
 * left out. *out is one allocation (core_free; the catalogs are the handle's), NULL when none. */
int graph_handle_history(graph_handle *h, const lang_catalog *cat, lang_schema_version **out,
                         size_t *n);
/* The accepted catalog and its identity, read together (the pointers stay valid). */
const lang_catalog *graph_handle_accepted(graph_handle *h,
                                          char identity[GRAPH_SCHEMA_HASH_LEN + 1]);
/* Make schema `identity` the handle's accepted one (its catalog read as graph_handle_catalog). */
int graph_handle_accept_schema(graph_handle *h, const char *identity);
/* Drop the cached head (of main or a branch) if it is still hd (a head found stale: cleanup
 * removed what it names, or its branch was replaced). */
void graph_handle_forget(graph_handle *h, const graph_head *hd);

#endif
