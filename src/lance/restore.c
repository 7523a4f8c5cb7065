/* Lance Restore: the old version's manifest, renumbered and committed at read_version + 1. */
#include "lance/restore.h"

#include "core/error.h"
#include "lance/refs.h"
#include "lance/txn.h"

#include <inttypes.h>

void lance_restore_manifest(lance_manifest_next *next, const Lance__Table__Manifest *head,
                            const Lance__Table__Manifest *old)
{
    lance_manifest_next_init(next, old, head->version + 1);
    /* Never hand out a fragment id or a row id twice: the versions after the old one may have
     * used ids beyond what its manifest recorded. */
    if (head->has_max_fragment_id &&
        (!next->pb.has_max_fragment_id || head->max_fragment_id > next->pb.max_fragment_id)) {
        next->pb.has_max_fragment_id = 1;
        next->pb.max_fragment_id = head->max_fragment_id;
    }
    if (head->next_row_id > next->pb.next_row_id) {
        next->pb.has_next_row_id = 1;
        next->pb.next_row_id = head->next_row_id;
    }
    lance_manifest_update_flags(&next->pb);
}

int lance_restore(lance_dataset **out, const lance_dataset *ds, uint64_t version, const char *uuid)
{
    if (out) *out = NULL;
    const Lance__Table__Manifest *head = ds->m->pb;
    uint64_t R = head->version;
    if (version == 0 || version > R)
        return core_err(OG_E_BAD_REQUEST,
                        "lance table '%s': cannot restore version %" PRIu64
                        " on top of version %" PRIu64,
                        ds->root, version, R);
    /* The retention lock keeps a cleanup on this host from deleting the old version (and
     * its files) between our read of it and our commit referencing them. */
    store_lock *lk = NULL;
    int rc = lance_retention_lock(ds->s, ds->root, &lk);
    if (rc) return rc;
    lance_manifest *old = NULL;
    rc = lance_version_load(ds->s, ds->root, version, ds->naming, LANCE_ACCESS_WRITE, &old);
    if (rc) {
        store_lock_release(lk);
        return rc;
    }

    lance_manifest_next next;
    lance_restore_manifest(&next, head, old->pb);

    Lance__Table__Transaction txn = LANCE__TABLE__TRANSACTION__INIT;
    Lance__Table__Transaction__Restore rs = LANCE__TABLE__TRANSACTION__RESTORE__INIT;
    txn.has_read_version = 1;
    txn.read_version = R;
    txn.uuid = (char *)uuid;
    rs.has_version = 1;
    rs.version = version;
    txn.operation_case = LANCE__TABLE__TRANSACTION__OPERATION_RESTORE;
    txn.restore = &rs;
    lance_commit_info ci;
    /* On top of the head (a chained table's restored version names the head as its parent). */
    rc = lance_commit_pending_on(ds->s, ds->root, ds->naming, &next.pb, NULL, ds->m, &txn,
                                 old->index, old->index_len, 0, NULL, 0, &ci);
    store_lock_release(lk);
    lance_manifest_free(old);
    if (rc) return rc;
    if (out) rc = lance_dataset_open(out, ds->s, ds->root, ci.version, LANCE_ACCESS_WRITE);
    return rc;
}
