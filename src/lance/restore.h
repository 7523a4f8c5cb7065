/* Lance Restore: commit a new version whose content equals an older version's
 * (lance-format-subset.md §6, Transaction.restore). */
#ifndef OG_LANCE_RESTORE_H
#define OG_LANCE_RESTORE_H

#include "lance/dataset.h"

/* Commit version R+1 (R = lance_dataset_version(ds), exactly; zero retries) whose fragments,
 * fields, index section, flags, config and metadata are those of `version` (1 <= version <= R),
 * recorded as a Restore{version} transaction with identity uuid (NULL: a new random one).
 * max_fragment_id and next_row_id never go backwards: the larger of the old version's and
 * R's are kept, so ids handed out after the restore are never reused.
 * *out (may be NULL) is the new snapshot. OG_E_CONFLICT if version R+1 is taken;
 * OG_E_NOT_FOUND if `version` does not exist (or was cleaned up); OG_E_BAD_REQUEST if it is
 * 0 or newer than R. Runs under the table's retention lock (refs.h). */
int lance_restore(lance_dataset **out, const lance_dataset *ds, uint64_t version, const char *uuid);

/* The manifest part of a restore, for a staged form in write.c: initialise *next as the
 * manifest of version head->version + 1 with old's content (fragments, fields, flags, config,
 * metadata; carry old's index section bytes when committing) and ids that never go
 * backwards. *next borrows from old (see lance_manifest_next_init). */
void lance_restore_manifest(lance_manifest_next *next, const Lance__Table__Manifest *head,
                            const Lance__Table__Manifest *old);

#endif
