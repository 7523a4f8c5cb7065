/* ULID generation, formatting and parsing. Monotonic: a second id in the same millisecond
 * is the previous one plus one in its random part; on overflow we wait for the next ms. */
#include "core/ulid.h"
#include "core/clock.h"
#include "core/error.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>

static const char ENC[33] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static core_ulid g_last;
static uint64_t g_last_ms;
static int g_have_last;

static int fill_random(uint8_t *p, size_t n)
{
    while (n) {
        ssize_t r = getrandom(p, n, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            return core_err_storage(errno, NULL, "getrandom failed");
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static void set_time(core_ulid *u, uint64_t ms)
{
    for (int i = 0; i < 6; i++)
        u->b[i] = (uint8_t)(ms >> (8 * (5 - i)));
}

/* Increment the 80-bit random part; returns 1 on overflow. */
static int incr_random(core_ulid *u)
{
    for (int i = 15; i >= 6; i--) {
        if (++u->b[i] != 0) return 0;
    }
    return 1;
}

/* Mint with g_lock held: the next id at or after ms, recorded as the last one. */
static int mint_locked(core_ulid *out, uint64_t ms)
{
    ms &= 0xFFFFFFFFFFFFULL;
    int rc = 0;
    for (;;) {
        if (g_have_last && ms <= g_last_ms) {
            core_ulid next = g_last;
            if (!incr_random(&next)) {
                *out = next;
                break;
            }
            /* 2^80 ids in one millisecond: move to the next millisecond. */
            ms = g_last_ms + 1;
            continue;
        }
        set_time(out, ms);
        rc = fill_random(out->b + 6, 10);
        if (rc) break;
        g_last_ms = ms;
        break;
    }
    if (rc == 0) {
        g_last = *out;
        g_have_last = 1;
    }
    return rc;
}

int core_ulid_new_at(core_ulid *out, uint64_t ms)
{
    pthread_mutex_lock(&g_lock);
    int rc = mint_locked(out, ms);
    pthread_mutex_unlock(&g_lock);
    return rc;
}

/* Add n to the 80-bit random part; returns 1 on overflow (u is then unspecified). */
static int add_random(core_ulid *u, uint64_t n)
{
    for (int i = 15; i >= 6 && n; i--) {
        uint64_t v = (uint64_t)u->b[i] + (n & 0xFF);
        u->b[i] = (uint8_t)v;
        n = (n >> 8) + (v >> 8);
    }
    return n != 0;
}

int core_ulid_reserve(core_ulid *first, uint64_t n)
{
    if (n == 0) n = 1;
    uint64_t now = core_wall_ms();
    /* one critical section: no other mint can fall between the first id and the block's end */
    pthread_mutex_lock(&g_lock);
    int rc = mint_locked(first, now);
    if (rc) {
        pthread_mutex_unlock(&g_lock);
        return rc;
    }
    core_ulid last = *first;
    if (add_random(&last, n - 1)) {
        /* The block does not fit in this millisecond's random space: start the next one at
         * zero (ids stay increasing and unique). */
        uint64_t ms = g_last_ms + 1;
        memset(first->b, 0, sizeof first->b);
        set_time(first, ms);
        last = *first;
        (void)add_random(&last, n - 1);
        g_last_ms = ms;
    }
    if (core_ulid_cmp(&last, &g_last) > 0) g_last = last; /* later mints come after the block */
    pthread_mutex_unlock(&g_lock);
    return 0;
}

void core_ulid_step(core_ulid *u)
{
    (void)incr_random(u);
}

int core_ulid_new(core_ulid *out)
{
    return core_ulid_new_at(out, core_wall_ms());
}

void core_ulid_format(const core_ulid *u, char out[CORE_ULID_LEN + 1])
{
    /* 128 bits into 26 chars of 5 bits: the first char carries the top 3 bits. */
    int bit = -2; /* 26*5 = 130 bits: two leading zero bits */
    for (int i = 0; i < CORE_ULID_LEN; i++) {
        unsigned v = 0;
        for (int k = 0; k < 5; k++, bit++) {
            v <<= 1;
            if (bit >= 0) v |= (u->b[bit / 8] >> (7 - bit % 8)) & 1u;
        }
        out[i] = ENC[v];
    }
    out[CORE_ULID_LEN] = '\0';
}

static int decode_char(char c)
{
    if (c >= 'a' && c <= 'z') c = (char)(c - 'a' + 'A');
    const char *p = c ? strchr(ENC, c) : NULL;
    return p ? (int)(p - ENC) : -1;
}

int core_ulid_parse(core_ulid *out, const char *s)
{
    if (!s) return core_err(OG_E_BAD_REQUEST, "invalid ULID: missing");
    size_t n = strnlen(s, CORE_ULID_LEN + 1);
    if (n != CORE_ULID_LEN)
        return core_err(OG_E_BAD_REQUEST, "invalid ULID '%.40s': expected 26 characters, got %zu",
                        s, n);
    core_ulid u;
    memset(&u, 0, sizeof u);
    int bit = -2;
    for (size_t i = 0; i < CORE_ULID_LEN; i++) {
        int v = decode_char(s[i]);
        if (v < 0)
            return core_err(OG_E_BAD_REQUEST,
                            "invalid ULID '%s': character %zu ('%c') is not Crockford base32", s,
                            i + 1, s[i]);
        if (i == 0 && v > 7)
            return core_err(OG_E_BAD_REQUEST, "invalid ULID '%s': value exceeds 128 bits", s);
        for (int k = 4; k >= 0; k--, bit++) {
            if (bit >= 0 && ((v >> k) & 1)) u.b[bit / 8] |= (uint8_t)(1u << (7 - bit % 8));
        }
    }
    *out = u;
    return 0;
}

int core_ulid_valid(const char *s)
{
    if (!s || strnlen(s, CORE_ULID_LEN + 1) != CORE_ULID_LEN) return 0;
    for (size_t i = 0; i < CORE_ULID_LEN; i++) {
        int v = decode_char(s[i]);
        if (v < 0 || (i == 0 && v > 7)) return 0;
    }
    return 1;
}

uint64_t core_ulid_time_ms(const core_ulid *u)
{
    uint64_t ms = 0;
    for (int i = 0; i < 6; i++)
        ms = (ms << 8) | u->b[i];
    return ms;
}

int core_ulid_cmp(const core_ulid *a, const core_ulid *b)
{
    return memcmp(a->b, b->b, 16);
}
