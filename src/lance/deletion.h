/* Lance deletion files: the deleted row offsets of one fragment (lance-format-subset.md §4.1).
 *  - `.bin`: a portable 32-bit roaring bitmap. We write it (array and bitmap containers only,
 *    cookie 12346) and read every portable form, including run containers.
 *  - `.arrow`: lancedb's Arrow IPC file with one non-nullable UInt32 `row_id` column, buffers
 *    optionally ZSTD-compressed (i64 uncompressed-length prefix, -1 = raw). Read only.
 * Every reader checks every offset and length: damaged bytes give OG_E_CORRUPT naming the
 * object, never a crash. Bitmaps are CRoaring's roaring_bitmap_t, owned by the caller
 * (free with roaring_bitmap_free, which in CRoaring 0.2 must not be given NULL). */
#ifndef OG_LANCE_DELETION_H
#define OG_LANCE_DELETION_H

#include "core/buf.h"
#include "lance/proto/table.pb-c.h"
#include "store/store.h"

#include <roaring/roaring.h>
#include <stddef.h>
#include <stdint.h>

#define LANCE_DELETIONS_DIR "_deletions/"
/* A sanity bound for .arrow deletion files (lancedb uses .bin above 5000 rows). */
#define LANCE_DELETION_ARROW_MAX_ROWS (1u << 24)

/* Portable serialization without run containers, replacing out's contents. */
int lance_deletion_bin_encode(core_buf *out, const roaring_bitmap_t *rows);
int lance_deletion_bin_decode(roaring_bitmap_t **out, const void *data, size_t len,
                              const char *object);
int lance_deletion_arrow_decode(roaring_bitmap_t **out, const void *data, size_t len,
                                const char *object);

/* Read the deletion file `df` of fragment frag_id under root. A base_id (files of another
 * dataset, used by shallow clones) is OG_E_UNSUPPORTED for now. When df records a checksum
 * (og_xxh3, set by lance_deletion_write) the bytes read must match it, else OG_E_CORRUPT
 * naming the file. */
int lance_deletion_load(store *s, const char *root, uint64_t frag_id,
                        const Lance__Table__DeletionFile *df, roaring_bitmap_t **out);

/* Write rows as `_deletions/{frag}-{read_version}-{random id}.bin` (durably) and fill *df
 * (file_type BITMAP, read_version, id, num_deleted_rows, og_xxh3; no base_id). */
int lance_deletion_write(store *s, const char *root, uint64_t frag_id, uint64_t read_version,
                         const roaring_bitmap_t *rows, Lance__Table__DeletionFile *df);

#endif
