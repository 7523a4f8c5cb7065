/* Hashing: xxHash64 / XXH3 for content checks and hash tables. */
#ifndef OG_CORE_HASH_H
#define OG_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

uint64_t core_hash64(const void *p, size_t n, uint64_t seed); /* XXH3 64-bit */
uint64_t core_hash_str(const char *s);
/* Streaming XXH64 for large contents. */
typedef struct core_hasher core_hasher;
core_hasher *core_hasher_new(uint64_t seed);
void core_hasher_update(core_hasher *h, const void *p, size_t n);
uint64_t core_hasher_digest(const core_hasher *h);
void core_hasher_free(core_hasher *h);

#endif
