/* Checksummed, chained manifest versions (manifest.h, "Chained versions"): the config entry
 * LANCE_CHAIN_KEY = "xxh3:<self>:<parent>" a chained table's every version carries, how a commit
 * writes it into the bytes it publishes, and what a decode learns about it. The policy (which
 * tables are chained, what a version without the entry means) is the caller's: the graph
 * manifest's is in src/graph/manifest.c. */
#include "lance/manifest.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/hash.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define PREFIX "xxh3:"
#define PREFIX_LEN 5
/* The value field of the map entry as protobuf writes it: tag 2 (length-delimited), length. */
#define VALUE_TAG 0x12

static atomic_bool writes_off;

#ifdef OG_TESTING
void lance_chain_set_writes(bool on)
{
    atomic_store(&writes_off, !on);
}
#endif

bool lance_chain_writes(void)
{
    return !atomic_load(&writes_off);
}

/* The self checksum of a file whose 16 self digits are at `off`: the digits themselves are left
 * out (the bytes after them seed the hash of the bytes before them), so the checksum can sit in
 * the bytes it covers. */
static uint64_t self_hash(const unsigned char *b, size_t len, size_t off)
{
    uint64_t tail = core_hash64(b + off + 16, len - off - 16, 0);
    return core_hash64(b, off, tail);
}

static int hex16(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    for (int i = 0; i < 16; i++) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else
            return -1;
        v = v << 4 | d;
    }
    *out = v;
    return 0;
}

/* The one place in b[from, to) where `needle` (n bytes) starts, or -1 when it is not there or
 * there more than once (then the entry cannot be told apart and the version does not verify). */
static long find_once(const unsigned char *b, size_t from, size_t to, const unsigned char *needle,
                      size_t n)
{
    long at = -1;
    for (size_t i = from; i + n <= to; i++) {
        if (b[i] != needle[0] || memcmp(b + i, needle, n) != 0) continue;
        if (at >= 0) return -1;
        at = (long)i;
    }
    return at;
}

void lance_chain_read(lance_manifest *m, const void *file, size_t len, uint64_t msg_off,
                      uint64_t msg_len)
{
    lance_chain *c = &m->chain;
    memset(c, 0, sizeof *c);
    const Lance__Table__Manifest *p = m->pb;
    const char *value = NULL;
    for (size_t i = 0; i < p->n_config; i++) {
        const Lance__Table__Manifest__ConfigEntry *e = p->config[i];
        if (e->key && strcmp(e->key, LANCE_CHAIN_KEY) == 0 && !value)
            value = e->value ? e->value : "";
        else
            c->n_other_config++;
    }
    if (!value) return;
    c->state = LANCE_CHAIN_MALFORMED;
    if (strlen(value) != LANCE_CHAIN_VALUE_LEN || memcmp(value, PREFIX, PREFIX_LEN) != 0 ||
        value[PREFIX_LEN + 16] != ':' || hex16(value + PREFIX_LEN, &c->recorded) ||
        hex16(value + PREFIX_LEN + 17, &c->parent))
        return;
    unsigned char needle[2 + LANCE_CHAIN_VALUE_LEN];
    needle[0] = VALUE_TAG;
    needle[1] = LANCE_CHAIN_VALUE_LEN;
    memcpy(needle + 2, value, LANCE_CHAIN_VALUE_LEN);
    long at = find_once(file, (size_t)msg_off, (size_t)(msg_off + msg_len), needle, sizeof needle);
    if (at < 0) return;
    c->actual = self_hash(file, len, (size_t)at + 2 + PREFIX_LEN);
    c->state = LANCE_CHAIN_PRESENT;
}

bool lance_chain_carried(const Lance__Table__Manifest *m)
{
    for (size_t i = 0; i < m->n_config; i++)
        if (m->config[i]->key && strcmp(m->config[i]->key, LANCE_CHAIN_KEY) == 0) return true;
    return false;
}

int lance_chain_attach(lance_chain_entry *ce, Lance__Table__Manifest *m, uint64_t parent)
{
    memset(ce, 0, sizeof *ce);
    ce->parent = parent;
    ce->cfg = core_malloc((m->n_config + 1) * sizeof *ce->cfg);
    if (!ce->cfg) return core_err_nomem();
    size_t k = 0;
    for (size_t i = 0; i < m->n_config; i++)
        if (!m->config[i]->key || strcmp(m->config[i]->key, LANCE_CHAIN_KEY) != 0)
            ce->cfg[k++] = m->config[i];
    Lance__Table__Manifest__ConfigEntry init = LANCE__TABLE__MANIFEST__CONFIG_ENTRY__INIT;
    ce->entry = init;
    /* The self digits are written as zeros here and replaced once the bytes exist. */
    snprintf(ce->value, sizeof ce->value, PREFIX "%016" PRIx64 ":%016" PRIx64, (uint64_t)0, parent);
    ce->entry.key = (char *)LANCE_CHAIN_KEY;
    ce->entry.value = ce->value;
    ce->cfg[k++] = &ce->entry;
    m->n_config = k;
    m->config = ce->cfg;
    /* What lance itself records for a table with config: writers that do not know config
     * must not write on top of it (they would drop it). */
    m->has_writer_feature_flags = 1;
    m->writer_feature_flags |= LANCE_FLAG_TABLE_CONFIG;
    return 0;
}

int lance_chain_seal(const lance_chain_entry *ce, unsigned char *file, size_t len, uint64_t *self)
{
    unsigned char needle[2 + LANCE_CHAIN_VALUE_LEN];
    needle[0] = VALUE_TAG;
    needle[1] = LANCE_CHAIN_VALUE_LEN;
    memcpy(needle + 2, ce->value, LANCE_CHAIN_VALUE_LEN);
    long at = find_once(file, 0, len, needle, sizeof needle);
    if (at < 0)
        return core_err(OG_E_INTERNAL, "the chain entry of a manifest being committed is not "
                                       "found exactly once in its bytes");
    size_t off = (size_t)at + 2 + PREFIX_LEN;
    uint64_t h = self_hash(file, len, off);
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, h);
    memcpy(file + off, hex, 16);
    if (self) *self = h;
    return 0;
}

void lance_chain_entry_clear(lance_chain_entry *ce)
{
    core_free(ce->cfg);
    ce->cfg = NULL;
}
