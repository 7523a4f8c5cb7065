/* ULIDs: 48-bit millisecond timestamp + 80 random bits, 26 Crockford base32 characters.
 * Lexicographic order of the text equals numeric order; ids minted in one process are
 * strictly increasing, also within one millisecond. */
#ifndef OG_CORE_ULID_H
#define OG_CORE_ULID_H

#include <stdint.h>

#define CORE_ULID_LEN 26

typedef struct core_ulid {
    uint8_t b[16]; /* big-endian: bytes 0..5 time, 6..15 randomness */
} core_ulid;

/* Mint a new ULID. Fails only if the system random source fails (OG_E_STORAGE). */
int core_ulid_new(core_ulid *out);
/* Mint with an explicit time (ms since the epoch), still monotonic within the process. */
int core_ulid_new_at(core_ulid *out, uint64_t ms);
/* Reserve n consecutive ids (n >= 1): *first is the lowest, the others follow it by
 * core_ulid_step, and every id minted later in the process is greater than all of them. A
 * bulk load takes one block per parsing thread, so its ids are increasing in file order
 * however the threads interleave, at one lock per block instead of one per id. */
int core_ulid_reserve(core_ulid *first, uint64_t n);
/* The next id of a reserved block (the random part plus one). */
void core_ulid_step(core_ulid *u);
/* Format into out (CORE_ULID_LEN + 1 bytes, NUL-terminated, upper case). */
void core_ulid_format(const core_ulid *u, char out[CORE_ULID_LEN + 1]);
/* Parse 26 characters (case-insensitive); anything else is OG_E_BAD_REQUEST. */
int core_ulid_parse(core_ulid *out, const char *s);
/* True if s is a well-formed ULID string. */
int core_ulid_valid(const char *s);
uint64_t core_ulid_time_ms(const core_ulid *u);
int core_ulid_cmp(const core_ulid *a, const core_ulid *b);

#endif
