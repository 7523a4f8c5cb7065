/* Dispatch for the object-store interface: key validation, counters, and list helpers shared
 * by all backends. */
#include "store/store.h"
#include "core/alloc.h"
#include "core/error.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const char *store_op_name(store_op_kind k)
{
    static const char *names[STORE_OP_KIND_COUNT] = {"get",    "head", "put", "put_if_absent",
                                                     "delete", "list", "sync"};
    return (unsigned)k < STORE_OP_KIND_COUNT ? names[k] : "?";
}

static int bad_key(const char *key, const char *why)
{
    core_err(OG_E_BAD_REQUEST, "invalid object key '%.200s': %s", key ? key : "(null)", why);
    if (key) core_err_detail(CORE_ERR_OBJECT, key);
    return OG_E_BAD_REQUEST;
}

/* Checks shared by keys and prefixes; `partial_last` allows an empty or partial last segment. */
static int check_segments(const char *key, int partial_last)
{
    size_t n = strnlen(key, STORE_KEY_MAX + 1);
    if (n > STORE_KEY_MAX) return bad_key(key, "longer than 1024 bytes");
    if (key[0] == '/') return bad_key(key, "absolute paths are not keys");
    const char *seg = key;
    for (;;) {
        const char *slash = strchr(seg, '/');
        size_t len = slash ? (size_t)(slash - seg) : strlen(seg);
        int last = slash == NULL;
        if (len == 0 && !(last && partial_last)) return bad_key(key, "empty path segment");
        if ((len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.')) {
            if (!(last && partial_last))
                return bad_key(key, "'.' and '..' segments escape the root");
        }
        if (len >= sizeof STORE_RESERVED_PREFIX - 1 &&
            memcmp(seg, STORE_RESERVED_PREFIX, sizeof STORE_RESERVED_PREFIX - 1) == 0)
            return bad_key(key, "segments starting with '" STORE_RESERVED_PREFIX "' are reserved");
        for (size_t i = 0; i < len; i++)
            if ((unsigned char)seg[i] < 0x20 || seg[i] == 0x7f)
                return bad_key(key, "control characters are not allowed");
        if (last) break;
        seg = slash + 1;
    }
    return 0;
}

int store_key_check(const char *key)
{
    if (!key) return bad_key(NULL, "missing");
    if (!*key) return bad_key(key, "empty");
    return check_segments(key, 0);
}

int store_prefix_check(const char *prefix)
{
    if (!prefix) return bad_key(NULL, "missing prefix");
    if (!*prefix) return 0;
    return check_segments(prefix, 1);
}

static void count(store *s, store_op_kind k)
{
    atomic_fetch_add_explicit(&s->stats.ops[k], 1, memory_order_relaxed);
}

int store_get(store *s, const char *key, uint64_t off, uint64_t len, core_buf *out)
{
    int rc = store_key_check(key);
    if (rc) return rc;
    count(s, STORE_OP_GET);
    core_buf_clear(out);
    rc = s->ops->get(s, key, off, len, out);
    if (rc == 0) atomic_fetch_add_explicit(&s->stats.bytes_read, out->len, memory_order_relaxed);
    return rc;
}

int store_head(store *s, const char *key, store_meta *out)
{
    int rc = store_key_check(key);
    if (rc) return rc;
    count(s, STORE_OP_HEAD);
    return s->ops->head(s, key, out);
}

int store_put(store *s, const char *key, const void *data, size_t len, unsigned flags)
{
    int rc = store_key_check(key);
    if (rc) return rc;
    count(s, STORE_OP_PUT);
    rc = s->ops->put(s, key, data, len, flags);
    if (rc == 0) atomic_fetch_add_explicit(&s->stats.bytes_written, len, memory_order_relaxed);
    return rc;
}

int store_put_if_absent(store *s, const char *key, const void *data, size_t len, unsigned flags)
{
    int rc = store_key_check(key);
    if (rc) return rc;
    count(s, STORE_OP_PUT_IF_ABSENT);
    rc = s->ops->put_if_absent(s, key, data, len, flags);
    if (rc == 0) atomic_fetch_add_explicit(&s->stats.bytes_written, len, memory_order_relaxed);
    return rc;
}

int store_delete(store *s, const char *key, unsigned flags)
{
    int rc = store_key_check(key);
    if (rc) return rc;
    count(s, STORE_OP_DELETE);
    return s->ops->del(s, key, flags);
}

int store_list_prefix(store *s, const char *prefix, unsigned flags, store_list *out)
{
    int rc = store_prefix_check(prefix);
    if (rc) return rc;
    count(s, STORE_OP_LIST);
    memset(out, 0, sizeof *out);
    rc = s->ops->list(s, prefix, flags, out);
    if (rc) store_list_free(out);
    return rc;
}

int store_sync(store *s, const char *const *keys, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int rc = store_key_check(keys[i]);
        if (rc) return rc;
    }
    count(s, STORE_OP_SYNC);
    return s->ops->sync ? s->ops->sync(s, keys, n) : 0;
}

int store_sync_put_if_absent(store *s, const char *const *keys, size_t n, const char *key,
                             const void *data, size_t len, unsigned flags)
{
    if (!s->ext || !s->ext->sync_put_if_absent) {
        int rc = store_sync(s, keys, n);
        return rc ? rc : store_put_if_absent(s, key, data, len, flags);
    }
    for (size_t i = 0; i < n; i++) {
        int rc = store_key_check(keys[i]);
        if (rc) return rc;
    }
    int rc = store_key_check(key);
    if (rc) return rc;
    count(s, STORE_OP_SYNC);
    count(s, STORE_OP_PUT_IF_ABSENT);
    rc = s->ext->sync_put_if_absent(s, keys, n, key, data, len, flags);
    if (rc == 0) atomic_fetch_add_explicit(&s->stats.bytes_written, len, memory_order_relaxed);
    return rc;
}

int store_reclaim(store *s, uint64_t *removed)
{
    *removed = 0;
    return s->ext && s->ext->reclaim ? s->ext->reclaim(s, removed) : 0;
}

void store_close(store *s)
{
    if (s) s->ops->close(s);
}

void store_counts_get(store *s, store_counts *out)
{
    memset(out, 0, sizeof *out);
    for (int k = 0; k < STORE_OP_KIND_COUNT; k++) {
        out->ops[k] = atomic_load(&s->stats.ops[k]);
        out->total_ops += out->ops[k];
        if (STORE_OPS_DURABLE & STORE_OP_BIT(k)) out->durable_ops += out->ops[k];
    }
    out->fsyncs = atomic_load(&s->stats.fsyncs);
    out->sync_rounds = atomic_load(&s->stats.sync_rounds);
    out->bytes_written = atomic_load(&s->stats.bytes_written);
    out->bytes_read = atomic_load(&s->stats.bytes_read);
}

void store_counts_diff(const store_counts *b, const store_counts *a, store_counts *out)
{
    for (int k = 0; k < STORE_OP_KIND_COUNT; k++)
        out->ops[k] = b->ops[k] - a->ops[k];
    out->total_ops = b->total_ops - a->total_ops;
    out->durable_ops = b->durable_ops - a->durable_ops;
    out->fsyncs = b->fsyncs - a->fsyncs;
    out->sync_rounds = b->sync_rounds - a->sync_rounds;
    out->bytes_written = b->bytes_written - a->bytes_written;
    out->bytes_read = b->bytes_read - a->bytes_read;
}

void store_list_free(store_list *l)
{
    if (!l) return;
    for (size_t i = 0; i < l->count; i++)
        core_free(l->items[i].key);
    core_free(l->items);
    memset(l, 0, sizeof *l);
}

int store_list_push(store_list *l, const char *key, uint64_t size, uint64_t mtime_ms, int is_prefix)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        store_entry *p = core_realloc(l->items, cap * sizeof *p);
        if (!p) return core_err_nomem();
        l->items = p;
        l->cap = cap;
    }
    char *k = core_strdup(key);
    if (!k) return core_err_nomem();
    l->items[l->count++] = (store_entry){k, size, mtime_ms, is_prefix};
    return 0;
}

static int entry_cmp(const void *a, const void *b)
{
    return strcmp(((const store_entry *)a)->key, ((const store_entry *)b)->key);
}

void store_list_sort(store_list *l)
{
    if (l->count > 1) qsort(l->items, l->count, sizeof *l->items, entry_cmp);
}

struct store_lock {
    store *s;
    void *handle;
    int real;
    int shared;
};

static int lock_acquire(store *s, const char *name, bool shared, uint32_t timeout_ms,
                        store_lock **out)
{
    *out = NULL;
    int rc = store_key_check(name);
    if (rc) return rc;
    store_lock *l = core_calloc(1, sizeof *l);
    if (!l) return core_err_nomem();
    l->s = s;
    /* Shared where the backend has it; exclusive otherwise (it excludes more, never less). */
    shared = shared && s->ext && s->ext->lock_shared;
    if (s->ops->lock) {
        rc = shared ? s->ext->lock_shared(s, name, timeout_ms, &l->handle)
                    : s->ops->lock(s, name, timeout_ms, &l->handle);
        if (rc) {
            core_free(l);
            return rc;
        }
        l->real = 1;
        l->shared = shared;
    }
    *out = l;
    return 0;
}

int store_lock_acquire(store *s, const char *name, uint32_t timeout_ms, store_lock **out)
{
    return lock_acquire(s, name, false, timeout_ms, out);
}

int store_lock_acquire_shared(store *s, const char *name, uint32_t timeout_ms, store_lock **out)
{
    return lock_acquire(s, name, true, timeout_ms, out);
}

void store_lock_release(store_lock *l)
{
    if (!l) return;
    if (l->real) l->s->ops->unlock(l->s, l->handle);
    core_free(l);
}

void store_lock_release_remove(store_lock *l)
{
    if (!l) return;
    if (l->real && !l->shared && l->s->ext && l->s->ext->unlock_remove)
        l->s->ext->unlock_remove(l->s, l->handle);
    else if (l->real)
        l->s->ops->unlock(l->s, l->handle);
    core_free(l);
}

int store_lock_is_real(const store_lock *l)
{
    return l && l->real;
}

int store_lock_is_shared(const store_lock *l)
{
    return l && l->real && l->shared;
}
