/* The C side of the interop checks (a)-(d): build Arrow batches from lance_tool's `schema` and
 * canonical `expect` lines (so the C writer gets exactly the generator's values), write tables
 * with the C dataset layer, and change tables lancedb made. Failures fail the cmocka test. */
#ifndef OG_INTEROP_C_H
#define OG_INTEROP_C_H

#include "arrow/arrow.h"

#include <stdbool.h>
#include <stdint.h>

/* {"fields":[{"name","type","nullable","children"?}]} (lance_tool schema) to an Arrow schema. */
void ic_schema_from_json(arrow_schema *out, const char *json);

/* Canonical JSON lines (one object per row, keys in schema order) to one batch of `s`; only
 * rows whose "id" (the first column) is >= min_id are kept. */
arrow_batch *ic_batch_from_lines(const arrow_schema *s, const char *text, int64_t min_id);

/* Create the table at directory `dir` (a new NAME.lance) with the schema (version 1, empty)
 * and append the batch (version 2). */
void ic_create_table(const char *dir, const arrow_schema *s, arrow_batch *b, bool v1_names,
                     bool stable_row_ids);

/* Append canonical lines (id >= min_id) to the latest version of the table at dir, using the
 * table's own schema. Returns the new version. */
uint64_t ic_append_lines(const char *dir, const char *text, int64_t min_id);

/* Delete the rows with lo <= id < hi. Returns the new version. */
uint64_t ic_delete_id_range(const char *dir, int64_t lo, int64_t hi);

#endif
