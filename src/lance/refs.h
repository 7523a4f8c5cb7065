/* Lance refs. The listing of a refs directory, shared by tags and branches (branch.h), and
 * tags: `_refs/tags/<name>.json` in the camelCase form lancedb reads and writes
 * (lance-format-subset.md §4.4): {"branch":null,"version":N,"createdAt":"<RFC3339>",
 * "updatedAt":"<RFC3339>","manifestSize":<bytes of that version's manifest>,"metadata":{}}.
 *
 * Beyond lance, ref mutations are conditional:
 *  - create is create-if-absent (store_put_if_absent): of two writers creating one name, in any
 *    processes, exactly one succeeds and the other gets OG_E_EXISTS;
 *  - delete is delete-if-identity-matches. A tag's identity is a hash of its stored bytes,
 *    which include createdAt at nanosecond resolution, so deleting a tag and creating it again
 *    (even at the same version) gives a new identity, and a delete holding the old identity
 *    fails with OG_E_PRECONDITION_FAILED (ABA is detected). The store has no conditional
 *    delete, so the check-then-delete runs under the store's advisory lock named after the
 *    tag key: every deleter on this host serializes on it. Across hosts on a backend without
 *    real locks (S3) the compare and the delete are two steps and a racing delete+recreate
 *    between them can be lost; that is best effort until the backend offers a conditional
 *    delete. Create stays exact everywhere (put_if_absent).
 *
 * Retention lock: tag create, restore and cleanup also take the table's retention lock, so
 * cleanup on this host never deletes a version that a tag being created or a restore being
 * committed is about to reference (see cleanup.h). */
#ifndef OG_LANCE_REFS_H
#define OG_LANCE_REFS_H

#include "lance/dataset.h"
#include "store/store.h"

#include <stddef.h>
#include <stdint.h>

#define LANCE_REFS_TAGS_DIR "_refs/tags/"
#define LANCE_REFS_BRANCHES_DIR "_refs/branches/"
#define LANCE_TAG_NAME_MAX 200 /* bytes; the key limit leaves room for any table root */
#define LANCE_TAG_TIME_CAP 64
#define LANCE_TAG_IDENTITY_LEN 16 /* hex digits */

typedef struct lance_tag {
    char name[LANCE_TAG_NAME_MAX + 1];
    uint64_t version;
    char branch[LANCE_TAG_NAME_MAX + 1]; /* "" when the tag is on the main branch (null) */
    char created_at[LANCE_TAG_TIME_CAP]; /* as stored; "" when absent (lance's minimal form) */
    char updated_at[LANCE_TAG_TIME_CAP];
    uint64_t manifest_size;
    char identity[LANCE_TAG_IDENTITY_LEN + 1]; /* hash of the stored bytes, hex */
} lance_tag;

/* The refs of one kind: every `<file>.json` directly under root/<dir> (dir is
 * LANCE_REFS_TAGS_DIR or LANCE_REFS_BRANCHES_DIR), sorted by ref name (byte order), read into
 * an array of *n elements of `size` bytes each (free with core_free; NULL when none).
 * name_of turns a file name without ".json" (len bytes, not terminated) into the ref name
 * (a string of at most cap - 1 bytes); nonzero means no ref of ours, skipped as lance skips
 * it. read_ref reads ref `name` into one element: OG_E_NOT_FOUND from it (deleted since it was
 * listed) skips the ref, any other error fails the listing (a damaged ref fails it with
 * OG_E_CORRUPT, as lance does). A missing directory is no refs. */
typedef int (*lance_ref_name_fn)(const char *file, size_t len, char *name, size_t cap);
typedef int (*lance_ref_read_fn)(store *s, const char *root, const char *name, void *out);
int lance_refs_list(store *s, const char *root, const char *dir, size_t size,
                    lance_ref_name_fn name_of, lance_ref_read_fn read_ref, void **out, size_t *n);

/* 0 if name is a valid tag name: non-empty, at most LANCE_TAG_NAME_MAX bytes of ASCII
 * letters, digits, '.', '-', '_'; not starting or ending with '.', no "..", not ending with
 * ".lock". Otherwise OG_E_BAD_REQUEST naming the rule. */
int lance_tag_name_check(const char *name);

/* Create tag `name` at `version` of the table at root. The version must exist (its manifest
 * size is recorded): OG_E_NOT_FOUND otherwise. OG_E_EXISTS if the name is taken.
 * *out (may be NULL) receives the tag as stored, identity included. */
int lance_tag_create(store *s, const char *root, const char *name, uint64_t version,
                     lance_tag *out);

/* Read one tag. OG_E_NOT_FOUND if absent, OG_E_CORRUPT if its file is damaged. */
int lance_tag_get(store *s, const char *root, const char *name, lance_tag *out);

/* Every tag, sorted by name (byte order). A damaged tag file fails the listing with
 * OG_E_CORRUPT naming it (as lance does); a tag deleted between listing and reading is
 * skipped. Free with lance_tag_list_free. */
int lance_tag_list(store *s, const char *root, lance_tag **out, size_t *n);
void lance_tag_list_free(lance_tag *tags);

/* Delete tag `name` if its identity is still `identity` (NULL: whatever it is now).
 * OG_E_NOT_FOUND if absent; OG_E_PRECONDITION_FAILED (expected/actual identity in the error)
 * if it was replaced since the caller read it. */
int lance_tag_delete(store *s, const char *root, const char *name, const char *identity);

/* Open the version a tag names. OG_E_UNSUPPORTED for a tag on another branch (branches are
 * not implemented yet). */
int lance_tag_checkout(lance_dataset **out, store *s, const char *root, const char *name,
                       lance_access access);

/* The table's retention lock (see above). Held briefly by tag create and restore, and for the
 * whole run by cleanup. */
int lance_retention_lock(store *s, const char *root, store_lock **out);

#endif
