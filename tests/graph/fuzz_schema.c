/* libFuzzer target for the readers of the accepted-schema pair: _schema.pg (the source) and
 * _schema.json (its catalog with the stable ids, and the identity), the copies kept under
 * _schemas/<identity>.pg/.json, and the restore that rebuilds the root pair from them. Those
 * are files read back from storage: any bytes must read or fail typed (corrupt, unsupported,
 * not found, out of memory), never crash or leak, and what reads must be what it claims.
 *
 * Input: one flag byte, then up to four parts separated by NUL bytes: the root _schema.pg,
 * the root _schema.json, and optionally a kept pair's .pg and .json. A part that is absent is
 * a missing file. Flags:
 *   0x01  when no kept pair is given, keep a copy of the root pair under the identity
 *   0x02  restore writes the rebuilt pair (else it only checks)
 *   0x04  restore against the identity the root pair reads as (when it reads), not the one
 *         the json text names
 *   0x08  the root _schema.pg is missing even when given
 *   0x10  ask read_identity for an identity that is not 32 hex digits
 *   0x20  the plans between the root and the kept schema allow data loss
 * The files live in a small in-memory store. */
#include "graph/graph.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/error.h"
#include "lang/schema_diff.h"
#include "store/store.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- an in-memory store ---------------------------------------------------------------------- */

#define MEM_MAX 16

typedef struct mem_obj {
    char *key;
    uint8_t *data;
    size_t len;
} mem_obj;

typedef struct mem_store {
    store base;
    mem_obj objs[MEM_MAX];
    size_t n;
} mem_store;

static mem_obj *mem_find(store *s, const char *key)
{
    mem_store *m = (mem_store *)s;
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->objs[i].key, key)) return &m->objs[i];
    return NULL;
}

static int mem_get(store *s, const char *key, uint64_t off, uint64_t len, core_buf *out)
{
    mem_obj *o = mem_find(s, key);
    if (!o) return core_err(OG_E_NOT_FOUND, "no object %s", key);
    if (off > o->len) return core_err(OG_E_BAD_REQUEST, "offset past the end of %s", key);
    size_t n = o->len - (size_t)off;
    if (len < n) n = (size_t)len;
    return core_buf_append(out, o->data + off, n);
}

static int mem_head(store *s, const char *key, store_meta *out)
{
    mem_obj *o = mem_find(s, key);
    if (!o) return core_err(OG_E_NOT_FOUND, "no object %s", key);
    memset(out, 0, sizeof *out);
    out->size = o->len;
    return 0;
}

static int mem_put(store *s, const char *key, const void *data, size_t len, unsigned flags)
{
    (void)flags;
    mem_store *m = (mem_store *)s;
    mem_obj *o = mem_find(s, key);
    uint8_t *copy = core_malloc(len ? len : 1);
    if (!copy) return core_err_nomem();
    if (len) memcpy(copy, data, len);
    if (!o) {
        if (m->n == MEM_MAX) {
            core_free(copy);
            return core_err(OG_E_RESOURCE_LIMIT, "the memory store is full");
        }
        o = &m->objs[m->n];
        if (!(o->key = core_strdup(key))) {
            core_free(copy);
            return core_err_nomem();
        }
        m->n++;
    } else {
        core_free(o->data);
    }
    o->data = copy;
    o->len = len;
    return 0;
}

static int mem_put_if_absent(store *s, const char *key, const void *data, size_t len,
                             unsigned flags)
{
    if (mem_find(s, key)) return core_err(OG_E_EXISTS, "%s exists", key);
    return mem_put(s, key, data, len, flags);
}

static int mem_del(store *s, const char *key, unsigned flags)
{
    (void)flags;
    mem_store *m = (mem_store *)s;
    mem_obj *o = mem_find(s, key);
    if (!o) return core_err(OG_E_NOT_FOUND, "no object %s", key);
    core_free(o->key);
    core_free(o->data);
    *o = m->objs[--m->n];
    return 0;
}

static int mem_list(store *s, const char *prefix, unsigned flags, store_list *out)
{
    (void)flags;
    mem_store *m = (mem_store *)s;
    size_t pl = strlen(prefix);
    for (size_t i = 0; i < m->n; i++)
        if (!strncmp(m->objs[i].key, prefix, pl)) {
            int rc = store_list_push(out, m->objs[i].key, m->objs[i].len, 0, 0);
            if (rc) return rc;
        }
    return 0;
}

static void mem_close(store *s)
{
    mem_store *m = (mem_store *)s;
    for (size_t i = 0; i < m->n; i++) {
        core_free(m->objs[i].key);
        core_free(m->objs[i].data);
    }
    core_free(m);
}

static const store_ops MEM_OPS = {
    .version = STORE_OPS_VERSION,
    .name = "fuzz-memory",
    .get = mem_get,
    .head = mem_head,
    .put = mem_put,
    .put_if_absent = mem_put_if_absent,
    .del = mem_del,
    .list = mem_list,
    .close = mem_close,
};

static store *mem_open(void)
{
    mem_store *m = core_calloc(1, sizeof *m);
    if (!m) abort();
    m->base.ops = &MEM_OPS;
    return &m->base;
}

static void put(store *s, const char *key, const uint8_t *d, size_t n)
{
    if (store_put(s, key, d, n, 0) != 0) abort();
}

/* ---- checks ------------------------------------------------------------------------------------
 */

/* The only ways a read of stored schema files may fail. */
static void typed(int rc)
{
    if (rc != 0 && rc != OG_E_CORRUPT && rc != OG_E_UNSUPPORTED && rc != OG_E_NOT_FOUND &&
        rc != OG_E_NOMEM)
        abort();
    if (rc != 0 && og_error_last()->code != rc) abort();
}

/* The identity a .json text names: the 32 characters after "identity":" (any bytes). */
static void named_identity(const uint8_t *js, size_t n, char out[GRAPH_SCHEMA_HASH_LEN + 1])
{
    static const char pat[] = "\"identity\":\"";
    memset(out, '0', GRAPH_SCHEMA_HASH_LEN);
    out[GRAPH_SCHEMA_HASH_LEN] = 0;
    for (size_t i = 0; js && i + sizeof pat - 1 + GRAPH_SCHEMA_HASH_LEN <= n; i++)
        if (!memcmp(js + i, pat, sizeof pat - 1)) {
            const uint8_t *id = js + i + sizeof pat - 1;
            for (size_t k = 0; k < GRAPH_SCHEMA_HASH_LEN; k++)
                out[k] = strchr("0123456789abcdef", id[k]) && id[k] ? (char)id[k] : '0';
            return;
        }
}

/* A catalog that read must be what it claims: its identity is the one returned, and written
 * to a fresh store it reads back as the same schema. */
static void round_trip(const lang_catalog *c, const char *identity)
{
    char again[GRAPH_SCHEMA_HASH_LEN + 1];
    int rc = graph_schema_identity(c, again);
    if (rc == OG_E_NOMEM) return;
    if (rc != 0 || strcmp(again, identity) != 0) abort();
    store *t = mem_open();
    rc = graph_schema_write(t, c);
    if (rc != 0 && rc != OG_E_NOMEM) abort();
    if (rc == 0) {
        lang_catalog *back = NULL;
        rc = graph_schema_read(t, &back, again);
        if (rc == 0 && strcmp(again, identity) != 0) abort();
        if (rc != 0 && rc != OG_E_NOMEM) abort();
        lang_catalog *kept = NULL;
        rc = graph_schema_read_identity(t, identity, &kept);
        if (rc != 0 && rc != OG_E_NOMEM) abort();
        lang_catalog_free(kept);
        lang_catalog_free(back);
    }
    store_close(t);
}

/* The plan between two schemas that read: never fails but for memory, and is supported
 * exactly when it lists no unsupported change. */
static void plan(const lang_catalog *a, const lang_catalog *b, int loss)
{
    lang_schema_diff *d = NULL;
    int rc = lang_schema_diff_build(&d, a, b, loss);
    if (rc == OG_E_NOMEM) return;
    if (rc != 0 || !d) abort();
    int unsupported = 0;
    for (size_t i = 0; i < d->n_steps; i++)
        unsupported |= !strcmp(d->steps[i].kind, "unsupported_change");
    if (unsupported == d->supported) abort();
    core_buf t = CORE_BUF_INIT;
    rc = lang_schema_diff_to_text(d, &t);
    if (rc == 0) rc = lang_schema_diff_to_json(d, &t);
    if (rc != 0 && rc != OG_E_NOMEM) abort();
    core_buf_free(&t);
    lang_schema_diff_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    unsigned flags = data[0];
    const uint8_t *part[4] = {NULL, NULL, NULL, NULL};
    size_t plen[4] = {0, 0, 0, 0};
    size_t np = 0, at = 1;
    while (np < 4 && at <= size) {
        const uint8_t *z = at < size ? memchr(data + at, 0, size - at) : NULL;
        size_t end = z ? (size_t)(z - data) : size;
        part[np] = data + at;
        plen[np++] = end - at;
        if (!z) break;
        at = end + 1;
    }
    store *s = mem_open();
    if (np > 0 && !(flags & 0x08)) put(s, GRAPH_SCHEMA_PG, part[0], plen[0]);
    if (np > 1) put(s, GRAPH_SCHEMA_JSON, part[1], plen[1]);
    char named[GRAPH_SCHEMA_HASH_LEN + 1];
    named_identity(np > 3 ? part[3] : part[1], np > 3 ? plen[3] : plen[1], named);
    char kpg[STORE_KEY_MAX], kjs[STORE_KEY_MAX];
    graph_schema_version_keys(named, kpg, kjs);
    if (np > 3) {
        put(s, kpg, part[2], plen[2]);
        put(s, kjs, part[3], plen[3]);
    } else if ((flags & 0x01) && np > 1) {
        put(s, kpg, part[0], plen[0]);
        put(s, kjs, part[1], plen[1]);
    }

    /* the root pair */
    lang_catalog *c = NULL;
    char id[GRAPH_SCHEMA_HASH_LEN + 1] = "";
    og_error_clear();
    int rc = graph_schema_read(s, &c, id);
    typed(rc);
    if ((rc == 0) != (c != NULL)) abort();
    if (rc == 0) round_trip(c, id);
    lang_catalog *root = c;
    c = NULL;

    /* the identities kept, and each read by identity */
    char(*ids)[GRAPH_SCHEMA_HASH_LEN + 1] = NULL;
    size_t n_ids = 0;
    rc = graph_schema_list(s, &ids, &n_ids);
    if (rc != 0 && rc != OG_E_NOMEM) abort();
    for (size_t i = 0; i < n_ids; i++) {
        lang_catalog *k = NULL;
        og_error_clear();
        rc = graph_schema_read_identity(s, ids[i], &k);
        typed(rc);
        if (rc == 0) round_trip(k, ids[i]);
        lang_catalog_free(k);
    }
    core_free(ids);

    /* the identity the json names (kept or not), or one that is not an identity */
    const char *ask = (flags & 0x10) ? "not-an-identity" : named;
    og_error_clear();
    rc = graph_schema_read_identity(s, ask, &c);
    if (flags & 0x10) {
        if (rc != OG_E_BAD_REQUEST || c) abort();
    } else {
        typed(rc);
        if (rc == 0) round_trip(c, named);
    }
    if (root && c) { /* two schemas that read: plans both ways */
        plan(root, c, flags & 0x20);
        plan(c, root, flags & 0x20);
    }
    lang_catalog_free(c);
    lang_catalog_free(root);
    c = NULL;

    /* restore against a recorded identity */
    const char *recorded = (flags & 0x04) && id[0] ? id : named;
    bool write = (flags & 0x02) != 0, damaged = false;
    og_error_clear();
    rc = graph_schema_restore(s, recorded, write, &damaged);
    typed(rc);
    if (rc == 0 && (write || !damaged)) {
        /* the root pair now reads as the recorded schema */
        char now[GRAPH_SCHEMA_HASH_LEN + 1];
        rc = graph_schema_read(s, &c, now);
        if (rc != 0 && rc != OG_E_NOMEM) abort();
        if (rc == 0 && strcmp(now, recorded) != 0) abort();
        lang_catalog_free(c);
    }
    store_close(s);
    og_error_clear();
    return 0;
}
