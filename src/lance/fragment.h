/* The manifest records of the fragments this engine writes: one data file of format 2.0 each,
 * described the same way by a staged write and by compaction. Everything is allocated in the
 * caller's arena and lives as long as it. */
#ifndef OG_LANCE_FRAGMENT_H
#define OG_LANCE_FRAGMENT_H

#include "core/arena.h"
#include "core/buf.h"
#include "lance/file2.h"
#include "lance/proto/table.pb-c.h"

#include <stddef.h>
#include <stdint.h>

/* The DataFile of `name` (relative to data/), a file of format 2.0 holding the fields
 * field_ids[0..n) as its columns 0..n-1, `size` bytes long, whose bytes hash to `xxh3`
 * (lance_file2_info.xxh3; recorded in og_xxh3, which Lance readers ignore). */
int lance_data_file_new(Lance__Table__DataFile **out, core_arena *a, const char *name,
                        const int32_t *field_ids, size_t n, uint64_t size, uint64_t xxh3);

/* Record in df the block checksums info carries (lance_file2_info.block_xxh3, blocks of
 * LANCE_FILE2_BLOCK_BYTES; nothing when it has none), copied into the arena. */
int lance_data_file_blocks(Lance__Table__DataFile *df, core_arena *a, const lance_file2_info *info);

/* Fragment `id` of `rows` rows held in `file` alone; no deletion file, row ids or versions
 * yet (the caller sets those it has). */
int lance_fragment_new(Lance__Table__DataFragment **out, core_arena *a, uint64_t id,
                       Lance__Table__DataFile *file, uint64_t rows);

/* The bytes of buf, copied into the arena, as an inline sequence field. */
int lance_fragment_bytes(core_arena *a, const core_buf *buf, ProtobufCBinaryData *out);

/* Per-row versions v[0..n) as an inline version sequence (runs of equal values). */
int lance_fragment_versions(core_arena *a, const uint64_t *v, uint64_t n, ProtobufCBinaryData *out);

#endif
