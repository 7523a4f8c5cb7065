/* xxHash wrapper; the library is Debian's libxxhash. */
#include "core/hash.h"

#include <string.h>
#include <xxhash.h>

uint64_t core_hash64(const void *p, size_t n, uint64_t seed)
{
    return XXH3_64bits_withSeed(p, n, seed);
}

uint64_t core_hash_str(const char *s)
{
    return XXH3_64bits(s, strlen(s));
}

core_hasher *core_hasher_new(uint64_t seed)
{
    XXH64_state_t *st = XXH64_createState();
    if (st) XXH64_reset(st, seed);
    return (core_hasher *)st;
}

void core_hasher_update(core_hasher *h, const void *p, size_t n)
{
    XXH64_update((XXH64_state_t *)h, p, n);
}

uint64_t core_hasher_digest(const core_hasher *h)
{
    return XXH64_digest((const XXH64_state_t *)h);
}

void core_hasher_free(core_hasher *h)
{
    if (h) XXH64_freeState((XXH64_state_t *)h);
}
