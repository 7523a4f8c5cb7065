/* Lance transactions and the durable commit primitive.
 *
 * A commit of version N+1 on top of read version R (lance-format-subset.md §2.7, §5.1):
 *   1. only with LANCE_COMMIT_TXN_FILE: write `_transactions/{R}-{uuid}.txn` (the raw
 *      Transaction message), durably. Lance reads a version's transaction from the manifest's
 *      inline transaction section first (checked: lancedb rebases its writes over commits that
 *      carry only the inline copy, tests/interop/test_interop_race.c), so by default that
 *      copy is the only one and a commit creates one object fewer;
 *   2. publish `_versions/<name of N+1>` (with the transaction inline) with
 *      store_put_if_absent: exactly one writer wins a version; the loser gets OG_E_CONFLICT
 *      naming the version (rebase and retry are the caller's, in a later layer);
 *   3. rewrite `_versions/latest_version_hint.json` (best effort: it is only a hint) for the
 *      first LANCE_HINT_FIRST versions and every LANCE_HINT_EVERY-th after: readers list
 *      _versions/ anyway (lance finds the latest with a stale hint too), and a rewrite costs
 *      a file creation and an inode deletion, about 0.5 ms on this project's test machine
 *      (against ~2 ms for a whole single-row durable commit).
 * Only src/store/store.h is used, so any backend with put_if_absent works. */
#ifndef OG_LANCE_TXN_H
#define OG_LANCE_TXN_H

#include "lance/manifest.h"
#include "lance/paths.h"
#include "lance/version.h"
#include "store/store.h"

#define LANCE_TRANSACTIONS_DIR "_transactions/"
#define LANCE_TXN_NAME_CAP 64
#define LANCE_HINT_FIRST 8
#define LANCE_HINT_EVERY 64

/* "{read_version}-{uuid}.txn". */
int lance_txn_file_name(char *out, size_t cap, uint64_t read_version, const char *uuid);

/* Commit flags. A commit records its transaction inside the manifest file (the transaction
 * section, which lance reads before any .txn file): one new object per commit instead of two,
 * and a reader proves "version v is transaction u" from the manifest alone. */
#define LANCE_COMMIT_KEEP_BYTES                                                                    \
    0x2u /* hand the published manifest file's bytes back in                                       \
            info->manifest_bytes (the caller frees them) */
#define LANCE_COMMIT_TXN_FILE                                                                      \
    0x1u /* also write _transactions/{R}-{uuid}.txn and name it in                                 \
            the manifest, as lance itself does */
#define LANCE_COMMIT_CHAIN                                                                         \
    0x4u /* write the chain entry (manifest.h, "chained versions") even                            \
            when the base has none: starts the chain of a table */

typedef struct lance_commit_info {
    uint64_t version;                  /* the version published */
    char txn_file[LANCE_TXN_NAME_CAP]; /* relative to _transactions/ ("" unless
                                          LANCE_COMMIT_TXN_FILE) */
    char uuid[LANCE_UUID_LEN + 1];     /* the transaction's uuid */
    char manifest_key[STORE_KEY_MAX];  /* the manifest's key */
    int hint_written;                  /* 1 if the hint was rewritten (see below) */
    unsigned char *manifest_bytes;     /* LANCE_COMMIT_KEEP_BYTES: the manifest file */
    size_t manifest_len;
} lance_commit_info;

/* Commit `next` (its version field names the version to create, >= 1) with transaction txn
 * (its read_version is R; its uuid is generated here when empty). index/index_len are the
 * IndexSection bytes to carry (NULL if none). Neither input is modified: the uuid and
 * transaction_file are set on shallow copies. Errors: OG_E_CONFLICT if the version already
 * exists; store errors otherwise (after a failure the manifest was not published; a written
 * .txn file may remain, which is harmless: nothing refers to it). */
int lance_commit(store *s, const char *root, lance_naming naming,
                 const Lance__Table__Manifest *next, const Lance__Table__Transaction *txn,
                 const void *index, size_t index_len, unsigned flags, lance_commit_info *info);

/* As lance_commit, with objects written earlier with STORE_F_NOSYNC (the operation's data
 * files) that must be durable before the manifest names them: a .txn file (if asked for) is then
 * written unsynced as well, and one store_sync_put_if_absent() makes all of them durable and
 * then publishes the manifest. On the local store that is two rounds of flushes: the files,
 * their directories and the manifest's temporary, then the link and _versions/' sync; a crash
 * before the link leaves no manifest (the files stay reclaimable), after it the version is
 * durable. */
int lance_commit_pending(store *s, const char *root, lance_naming naming,
                         const Lance__Table__Manifest *next, const Lance__Table__Transaction *txn,
                         const void *index, size_t index_len, unsigned flags,
                         const char *const *pending, size_t n_pending, lance_commit_info *info);
/* As lance_commit_pending, for a `next` built on the decoded manifest `base`: the fragments it
 * borrows from base unchanged are copied from base's bytes (lance_manifest_encode_on). The
 * version is committed on top of `parent` (NULL: base), whose file checksum a chained
 * version records (manifest.h, "chained versions"). */
int lance_commit_pending_on(store *s, const char *root, lance_naming naming,
                            const Lance__Table__Manifest *next, const lance_manifest *base,
                            const lance_manifest *parent, const Lance__Table__Transaction *txn,
                            const void *index, size_t index_len, unsigned flags,
                            const char *const *pending, size_t n_pending, lance_commit_info *info);

/* Decode a Transaction message (owned: free with lance_pb_free). */
int lance_txn_decode(Lance__Table__Transaction **out, const void *data, size_t len,
                     const char *object);
/* The transaction that created manifest m: the inline copy first, then the .txn file.
 * OG_E_NOT_FOUND if it has neither. */
int lance_txn_load(store *s, const char *root, const lance_manifest *m,
                   Lance__Table__Transaction **out);
/* The uuid of the transaction that created m (lance_txn_load), a copy the caller frees with
 * core_free; *out NULL when the transaction records none. OG_E_NOT_FOUND if m has no
 * transaction. */
int lance_txn_load_uuid(store *s, const char *root, const lance_manifest *m, char **out);

#endif
