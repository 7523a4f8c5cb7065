/* Lance transactions: .txn files and the put_if_absent commit of the next manifest. */
#include "lance/txn.h"
#include "core/alloc.h"

#include "core/error.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int lance_txn_file_name(char *out, size_t cap, uint64_t read_version, const char *uuid)
{
    int n = snprintf(out, cap, "%" PRIu64 "-%s.txn", read_version, uuid);
    if (n < 0 || (size_t)n >= cap)
        return core_err(OG_E_BAD_REQUEST, "transaction file name is longer than %zu bytes", cap);
    return 0;
}

int lance_commit(store *s, const char *root, lance_naming naming,
                 const Lance__Table__Manifest *next, const Lance__Table__Transaction *txn,
                 const void *index, size_t index_len, unsigned flags, lance_commit_info *info)
{
    return lance_commit_pending(s, root, naming, next, txn, index, index_len, flags, NULL, 0, info);
}

int lance_commit_pending(store *s, const char *root, lance_naming naming,
                         const Lance__Table__Manifest *next, const Lance__Table__Transaction *txn,
                         const void *index, size_t index_len, unsigned flags,
                         const char *const *pending, size_t n_pending, lance_commit_info *info)
{
    return lance_commit_pending_on(s, root, naming, next, NULL, NULL, txn, index, index_len, flags,
                                   pending, n_pending, info);
}

int lance_commit_pending_on(store *s, const char *root, lance_naming naming,
                            const Lance__Table__Manifest *next, const lance_manifest *base,
                            const lance_manifest *parent, const Lance__Table__Transaction *txn,
                            const void *index, size_t index_len, unsigned flags,
                            const char *const *pending, size_t n_pending, lance_commit_info *info)
{
    memset(info, 0, sizeof *info);
    if (naming != LANCE_NAMING_V1) naming = LANCE_NAMING_V2;
    uint64_t v = next->version;
    if (v == 0) return core_err(OG_E_BAD_REQUEST, "a lance commit needs a version >= 1");
    info->version = v;

    Lance__Table__Transaction t = *txn;
    if (txn->uuid && txn->uuid[0]) {
        snprintf(info->uuid, sizeof info->uuid, "%s", txn->uuid);
    } else {
        int rc = lance_uuid_new(info->uuid);
        if (rc) return rc;
    }
    t.uuid = info->uuid;
    t.has_read_version = 1;
    const int txn_file = (flags & LANCE_COMMIT_TXN_FILE) != 0;
    int rc = 0;
    if (txn_file)
        rc = lance_txn_file_name(info->txn_file, sizeof info->txn_file, t.read_version, info->uuid);
    if (rc) return rc;

    core_buf tb = CORE_BUF_INIT, mb = CORE_BUF_INIT;
    lance_chain_entry ce = {0};
    /* A chained table's versions all carry the entry (the next manifest inherits it from its
     * base); LANCE_COMMIT_CHAIN starts the chain on a table whose versions have none yet. */
    const bool chain =
        lance_chain_writes() && ((flags & LANCE_COMMIT_CHAIN) || lance_chain_carried(next));
    if (!parent) parent = base;
    char key[STORE_KEY_MAX], name[LANCE_VERSION_NAME_CAP];
    const char **keys = NULL; /* pending files (+ the .txn file), synced before the publish */
    size_t n_keys = n_pending;
    rc = lance_pb_pack(&tb, &t.base);
    if (rc) goto out;
    if (txn_file) {
        rc = lance_key(key, root, LANCE_TRANSACTIONS_DIR, info->txn_file);
        if (rc) goto out;
        /* With pending files the .txn file is written unsynced and made durable with them, in
         * the publish below; alone it is written durably, and the manifest follows. */
        rc = store_put(s, key, tb.data, tb.len, n_pending ? STORE_F_NOSYNC : 0);
        if (rc) {
            core_err_prefix("writing transaction file of lance version %" PRIu64, v);
            goto out;
        }
    }
    if (n_pending) {
        keys = core_malloc((n_pending + 1) * sizeof *keys);
        if (!keys) {
            rc = core_err_nomem();
            goto out;
        }
        memcpy(keys, pending, n_pending * sizeof *keys);
        if (txn_file) keys[n_keys++] = key;
    }

    Lance__Table__Manifest m = *next;
    m.transaction_file = txn_file ? info->txn_file : NULL;
    if (chain && (rc = lance_chain_attach(
                      &ce, &m, parent && parent->pb->version ? parent->file_xxh3 : 0)) != 0)
        goto out;
    rc = lance_manifest_encode_on(&mb, &m, base, tb.data, tb.len, index, index_len);
    /* The self checksum goes into the bytes before anything of them is stored. */
    if (rc == 0 && chain) rc = lance_chain_seal(&ce, mb.data, mb.len, NULL);
    if (rc) goto out;
    rc = lance_version_file_name(name, sizeof name, naming, v);
    if (!rc) rc = lance_key(info->manifest_key, root, LANCE_VERSIONS_DIR, name);
    if (rc) goto out;
    /* Everything the manifest names becomes durable before the manifest is linked into
     * place; the store writes and flushes the manifest's bytes in the same round. */
    rc = n_pending
             ? store_sync_put_if_absent(s, keys, n_keys, info->manifest_key, mb.data, mb.len, 0)
             : store_put_if_absent(s, info->manifest_key, mb.data, mb.len, 0);
    if (rc == OG_E_EXISTS) {
        core_err(OG_E_CONFLICT,
                 "lance table '%s': version %" PRIu64 " was committed by another writer", root, v);
        core_err_detail(CORE_ERR_OBJECT, info->manifest_key);
        char vs[24];
        snprintf(vs, sizeof vs, "%" PRIu64, v);
        core_err_detail(CORE_ERR_MEMBER, vs);
        rc = OG_E_CONFLICT;
        goto out;
    }
    if (rc) {
        core_err_prefix("making durable and publishing lance version %" PRIu64, v);
        goto out;
    }
    /* The hint is only a hint (readers list _versions/), so failing to rewrite it must not
     * fail a commit that is already published and durable; for the same reason it is written
     * without an fsync: a lost or stale hint after power loss is harmless. */
    if (v <= LANCE_HINT_FIRST || v % LANCE_HINT_EVERY == 0)
        info->hint_written = lance_hint_write(s, root, v) == 0;
    og_error_clear();
    if (flags & LANCE_COMMIT_KEEP_BYTES) {
        size_t len;
        info->manifest_bytes = core_buf_detach(&mb, &len);
        info->manifest_len = len;
    }
out:
    lance_chain_entry_clear(&ce);
    core_free(keys);
    core_buf_free(&tb);
    core_buf_free(&mb);
    return rc;
}

int lance_txn_decode(Lance__Table__Transaction **out, const void *data, size_t len,
                     const char *object)
{
    ProtobufCMessage *m = NULL;
    int rc = lance_pb_unpack(&m, &lance__table__transaction__descriptor, data, len, "transaction",
                             object);
    *out = (Lance__Table__Transaction *)m;
    return rc;
}

int lance_txn_load(store *s, const char *root, const lance_manifest *m,
                   Lance__Table__Transaction **out)
{
    *out = NULL;
    if (m->txn) return lance_txn_decode(out, m->txn, m->txn_len, "inline transaction");
    const char *tf = m->pb->transaction_file;
    if (!tf || !tf[0]) {
        core_err(OG_E_NOT_FOUND, "lance table '%s' version %" PRIu64 " has no transaction", root,
                 m->pb->version);
        return OG_E_NOT_FOUND;
    }
    char key[STORE_KEY_MAX];
    int rc = lance_key(key, root, LANCE_TRANSACTIONS_DIR, tf);
    if (rc) return rc;
    if (strstr(tf, "..") || strchr(tf, '/')) {
        core_err(OG_E_CORRUPT, "lance manifest names an invalid transaction file '%s'", tf);
        core_err_detail(CORE_ERR_OBJECT, key);
        return OG_E_CORRUPT;
    }
    core_buf b = CORE_BUF_INIT;
    rc = store_get(s, key, 0, STORE_ALL, &b);
    if (!rc) rc = lance_txn_decode(out, b.data, b.len, key);
    core_buf_free(&b);
    return rc;
}

int lance_txn_load_uuid(store *s, const char *root, const lance_manifest *m, char **out)
{
    *out = NULL;
    Lance__Table__Transaction *t = NULL;
    int rc = lance_txn_load(s, root, m, &t);
    if (rc == 0 && t->uuid && !(*out = core_strdup(t->uuid))) rc = core_err_nomem();
    lance_pb_free(t);
    return rc;
}
