/* Native Lance branches (lance-format-subset.md §1, §4.4): a branch `feat/x` of the table at
 * root lives under root/tree/feat/x/ with its own _versions/, _transactions/, _deletions/ and
 * data/, and is named by the ref file root/_refs/branches/feat%2Fx.json.
 *
 * Fork. Creating a branch from (source branch, version P) writes the branch's first manifest
 * as lance does: version P (the source's number), a Clone transaction (is_shallow, ref_name =
 * source branch or none, ref_version P, ref_path, branch_name), branch = the name, base_paths =
 * the source's plus {id: max+1 (0 when none), name: source branch, is_dataset_root: true,
 * path: the source dataset's directory}, every inherited data and deletion file without a
 * base_id given that id, feature flag 16. Commits on the branch continue from P (P+1, ...)
 * under tree/<name>/, new data under tree/<name>/data/.
 *
 * Base paths. lancedb writes the source directory as an absolute filesystem path. When the
 * store is a local directory (store_local_root, also through a fault store) we write the
 * absolute path too, so lancedb reads our branches; our reader maps an absolute path back to
 * a key relative to the store root when it lies inside it and refuses one outside it
 * (OG_E_UNSUPPORTED). On a store without a local root the path is written as the store key
 * (relative), which only this engine understands.
 *
 * Identity (ABA). Every branch we create gets a random identity (a uuid) recorded in its ref
 * as the extra fields "ogIdentity" and "ogLineage" (the chain of forks from main down to this
 * branch: branch, parentBranch, parentVersion, identity), which lance ignores; the same uuid
 * is the uuid of the branch's Clone transaction, so a reader can check that the tree/<name>/
 * directory belongs to the ref it read. Deleting and re-creating a name (even at the same
 * version) gives a new identity. A ref written by another engine (no ogIdentity) has as
 * identity "h" + a hash of its stored bytes.
 *
 * Conditional mutations, beyond lance:
 *  - create is create-if-absent: the ref is published with store_put_if_absent, so of two
 *    creators of one name, in any processes on any backend, exactly one succeeds and the
 *    other gets OG_E_EXISTS;
 *  - delete is delete-if-identity-matches: under the store advisory lock named after the ref
 *    key, the ref is re-read, its identity compared (OG_E_PRECONDITION_FAILED on mismatch),
 *    and deleted; then the branch's own files are removed. The store has no conditional
 *    delete, so this is exact among processes on one host (the local backend's locks are
 *    flock(2)); across hosts on a backend without real locks (S3) a delete racing a
 *    delete+recreate between the compare and the delete can be lost (best effort until the
 *    backend offers a conditional delete). Create takes the same lock, so it can clear files
 *    left by a crashed create or delete of the name (a "zombie" directory: files without a
 *    ref are invisible) knowing no live creator of that name is writing them.
 *  - a branch that other branches were forked from cannot be deleted
 *    (OG_E_PRECONDITION_FAILED): they read its files through their base paths. Creating a
 *    branch from a branch holds both names' locks (in byte order), so this check cannot race.
 *
 * Crash safety: create writes the manifest first and the ref last; delete removes
 * the ref first. After a crash at any point the branch is either fully there or invisible.
 * So a ref always has a version in its directory: a create that finds no version under the
 * name has nothing to clear and no ref to refuse before its own conditional publish of the
 * ref, and looks at the ref only when it finds files there. A create writes no version hint:
 * opening a branch at its latest starts from the hint when its commits wrote one, else from
 * the first version its ref names.
 *
 * Commits on a branch: before publishing version V on top of base version V-1, the commit
 * re-reads the branch directory's manifest of V-1 and checks it is the one the write was built
 * on (same transaction: its inline bytes, which carry its uuid, or its file name), so a writer
 * that staged on a branch that was deleted and
 * re-created meanwhile fails with OG_E_CONFLICT instead of publishing into the new
 * incarnation (lance_branch_check_base). The check and the put_if_absent of V are two steps:
 * a delete + re-create + commit of V-1 landing exactly between them is not detected (narrow,
 * documented). Commits on main are unchanged (no extra read). */
#ifndef OG_LANCE_BRANCH_H
#define OG_LANCE_BRANCH_H

#include "lance/dataset.h"
#include "store/store.h"

#include <stddef.h>
#include <stdint.h>

#define LANCE_TREE_DIR "tree/"
#define LANCE_BRANCH_NAME_MAX 200
#define LANCE_BRANCH_IDENTITY_CAP 40
#define LANCE_BRANCH_MAX_DEPTH 64 /* forks of forks followed at most */

typedef struct lance_branch {
    char name[LANCE_BRANCH_NAME_MAX + 1];
    char parent[LANCE_BRANCH_NAME_MAX + 1]; /* "" when forked from main (parentBranch null) */
    uint64_t parent_version;                /* the fork point: the branch's first version */
    uint64_t create_at;                     /* unix seconds, as stored (0 when absent) */
    uint64_t manifest_size;
    char identity[LANCE_BRANCH_IDENTITY_CAP];        /* ogIdentity, or "h<hash>" (foreign) */
    char parent_identity[LANCE_BRANCH_IDENTITY_CAP]; /* "" for main or unknown */
    int foreign;                                     /* no ogIdentity: written by lance */
} lance_branch;

/* 0 if name is a valid branch name (lance's rules): non-empty, at most
 * LANCE_BRANCH_NAME_MAX bytes, '/'-separated non-empty segments of ASCII letters, digits,
 * '.', '-', '_'; no leading or trailing '/', no "..", not ending in ".lock". Otherwise
 * OG_E_BAD_REQUEST naming the rule. */
int lance_branch_name_check(const char *name);

/* The directory (key prefix) of a branch: root/tree/<name>; root itself for NULL or "". */
int lance_branch_root(char out[STORE_KEY_MAX], const char *root, const char *branch);

/* Fork: create branch `name` from version `version` (0: the latest) of branch `from` (NULL
 * or "": main). OG_E_EXISTS if the name is taken; OG_E_NOT_FOUND if `from` or the version
 * does not exist; OG_E_UNSUPPORTED if the source's base path lies outside the store.
 * *out (may be NULL) receives the ref as stored. */
int lance_branch_create(store *s, const char *root, const char *name, const char *from,
                        uint64_t version, lance_branch *out);
/* The same, forking `source` when it is given: a snapshot of `from` at `version` (0: the
 * version source is at) in `from`'s own directory, which the caller already holds. The caller
 * guarantees cleanup keeps that version while this runs (it is pinned, or cleanup is excluded
 * by the caller's gates); a source that is not such a snapshot is ignored and the version is
 * opened here. *out_ds (may be NULL) receives the new branch at its first version, decoded
 * from the bytes written (NULL if that failed: the branch still stands). */
int lance_branch_create_ex(store *s, const char *root, const char *name, const char *from,
                           uint64_t version, const lance_dataset *source, lance_branch *out,
                           lance_dataset **out_ds);

/* Read one ref. OG_E_NOT_FOUND if absent, OG_E_CORRUPT if damaged. */
int lance_branch_get(store *s, const char *root, const char *name, lance_branch *out);

/* A branch nested under `name` (named "name/..."), into out: "" when there is none. Costs
 * one delimited listing of the name's own directory tree/<name>/ when nothing lives there,
 * whatever the number of branches: a branch below has its first version in tree/<name>/...
 * before its ref is published, and loses its ref before its files (create and delete above).
 * Only when files are there are the refs listed by name prefix, to tell a live branch from
 * the leftovers of a crashed create or delete, which name no branch. */
int lance_branch_find_under(store *s, const char *root, const char *name,
                            char out[LANCE_BRANCH_NAME_MAX + 1]);

/* Every branch, sorted by name. A damaged ref fails the listing with OG_E_CORRUPT (as lance
 * does); a ref deleted between listing and reading is skipped. */
int lance_branch_list(store *s, const char *root, lance_branch **out, size_t *n);
void lance_branch_list_free(lance_branch *b);

/* Rebuild the ref of branch `name` of the table at root from its directory (a ref lost or
 * damaged, its files intact): the branch's first version is the fork its create wrote, whose
 * Clone transaction's uuid is the branch identity and which names the source branch and
 * version; the lineage is the source ref's plus this fork, as the create recorded it. *out
 * receives the ref. With `write` the ref file is stored (replacing a damaged one: the caller
 * keeps a copy first). OG_E_NOT_FOUND when the directory holds no version; OG_E_CORRUPT when
 * its first version is not such a fork (nothing proves what the ref said). */
int lance_branch_ref_rebuild(store *s, const char *root, const char *name, bool write,
                             lance_branch *out);
/* The key of branch `name`'s ref file under root. */
int lance_branch_ref_key(char out[STORE_KEY_MAX], const char *root, const char *name);

/* Delete branch `name` if its identity is still `identity` (NULL: whatever it is now), then
 * its own files (best effort once the ref is gone: leftovers are invisible and cleared by the
 * next create of the name; nested branches' directories are left alone). OG_E_NOT_FOUND if absent;
 * OG_E_PRECONDITION_FAILED (expected/actual identity) if it was replaced since the caller read it,
 * or if other branches were forked from it. */
int lance_branch_delete(store *s, const char *root, const char *name, const char *identity);

/* Open branch `branch` (NULL or "": main) at `version` (0: its latest). Versions below the
 * fork point are the parent's (followed up the chain of forks) and open for READ or INSPECT
 * only (OG_E_BAD_REQUEST for WRITE). `identity` (may be NULL) is the incarnation the caller
 * expects: OG_E_PRECONDITION_FAILED if the ref now has another. OG_E_CONFLICT if the
 * branch's directory belongs to another incarnation than its ref (replaced while opening:
 * retry). The dataset's root is the directory of the version; commits on it go to the branch. */
int lance_branch_open(lance_dataset **out, store *s, const char *root, const char *branch,
                      uint64_t version, const char *identity, lance_access access);

/* The same for a branch whose ref the caller has just read (lance_branch_get): no second read
 * of it. */
int lance_branch_open_ref(lance_dataset **out, store *s, const char *root, const lance_branch *ref,
                          uint64_t version, lance_access access);

/* For a commit on a branch directory `dir` built on manifest `base` (base->branch set):
 * OG_E_CONFLICT unless dir's manifest of base's version is still that manifest. */
int lance_branch_check_base(store *s, const char *dir, lance_naming naming,
                            const lance_manifest *base);

#endif
