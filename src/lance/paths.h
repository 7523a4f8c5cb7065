/* Names inside a Lance table: object keys under the table root, random identifiers (UUIDs,
 * data file names, deletion file ids) and the deletion file path scheme
 * (lance-format-subset.md §1, §4.1), and the store keys of base paths (files of another
 * dataset directory: branch.h). A table root is a store key prefix ("" or "a/t.lance"). */
#ifndef OG_LANCE_PATHS_H
#define OG_LANCE_PATHS_H

#include "store/store.h"

#include <stddef.h>
#include <stdint.h>

#define LANCE_UUID_LEN 36           /* hyphenated text form */
#define LANCE_DATA_FILE_NAME_LEN 56 /* 24 binary + 26 hex + ".lance" */

/* Fill p with n bytes from the system random source (OG_E_STORAGE if it fails). */
int lance_random_bytes(void *p, size_t n);
/* A random (version 4) UUID in hyphenated lower-case text, out has LANCE_UUID_LEN + 1 bytes. */
int lance_uuid_new(char out[LANCE_UUID_LEN + 1]);
/* Format 16 bytes as a hyphenated UUID. */
void lance_uuid_format(const uint8_t b[16], char out[LANCE_UUID_LEN + 1]);
/* A new data file name: 16 random bytes, the first 3 as 24 binary digits, the last 13 as 26
 * hex digits, then ".lance" (relative to data/). */
int lance_data_file_name(char out[LANCE_DATA_FILE_NAME_LEN + 1]);
/* The same from given bytes (for tests and reproducible names). */
void lance_data_file_name_from(const uint8_t b[16], char out[LANCE_DATA_FILE_NAME_LEN + 1]);

/* key = root + "/" + a [+ b] (root "" gives a [+ b]). OG_E_BAD_REQUEST if too long. */
int lance_key(char out[STORE_KEY_MAX], const char *root, const char *a, const char *b);

/* Deletion files: "{frag}-{read_version}-{id}.bin" or ".arrow" (file name in _deletions/). */
int lance_deletion_file_name(char *out, size_t cap, uint64_t frag_id, uint64_t read_version,
                             uint64_t id, int bitmap);

/* The local directory a store keeps its keys under, looking through fault-injection
 * wrappers; NULL for a store without one. */
const char *lance_store_dir(store *s);

/* The store key prefix a base path names (its `path`, absolute or a store key).
 * OG_E_UNSUPPORTED if it lies outside the store or the store has no local root. */
int lance_base_path_key(store *s, const char *path, char out[STORE_KEY_MAX]);

#endif
