/* Fault-injecting wrapper around any store: the engine of the crash and fault tests.
 * It counts operations, keeps an op log, fails a chosen op with a chosen fault, and
 * simulates a crash after the k-th durable op. After a crash every op fails with
 * OG_E_STORAGE (kind crashed), as if the process were gone. In power-loss mode the crash
 * also undoes writes that were not yet durable (STORE_F_NOSYNC and not synced since): each
 * is either dropped (the old object, or none, comes back) or torn (a prefix remains). */
#include "store/store.h"
#include "core/alloc.h"
#include "core/error.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef struct volatile_write {
    char *key;
    int had_old;     /* an object existed before the first unsynced write */
    core_buf old;    /* its bytes */
    int present_new; /* the unsynced state: object present (put) or absent (delete) */
    size_t new_len;
} volatile_write;

typedef struct fault_store {
    store base;
    store *inner;
    int own_inner;
    pthread_mutex_t lock;
    uint64_t seq;
    /* fail-nth */
    uint64_t fail_countdown;
    unsigned fail_mask;
    store_fault_kind fail_kind;
    /* crash */
    uint64_t durable_done;
    uint64_t crash_at; /* absolute durable count; 0 = none */
    store_crash_mode crash_mode;
    int crashed;
    uint64_t rng;
    volatile_write *vol;
    size_t nvol, capvol;
    store_oplog_entry *log;
    size_t nlog, caplog;
    char *last_get; /* the key of the last successful get (a misdirected read returns it) */
} fault_store;

static fault_store *F(store *s)
{
    return (fault_store *)s;
}

static uint64_t rng_next(fault_store *fs)
{
    uint64_t x = fs->rng ? fs->rng : 0x9E3779B97F4A7C15ULL;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    fs->rng = x;
    return x;
}

static void log_op(fault_store *fs, store_op_kind kind, const char *key, int rc)
{
    if (fs->nlog == fs->caplog) {
        size_t cap = fs->caplog ? fs->caplog * 2 : 64;
        store_oplog_entry *p = core_realloc(fs->log, cap * sizeof *p);
        if (!p) return; /* the log is diagnostic; losing an entry under OOM is harmless */
        fs->log = p;
        fs->caplog = cap;
    }
    int durable = (STORE_OPS_DURABLE & STORE_OP_BIT(kind)) != 0;
    fs->log[fs->nlog++] =
        (store_oplog_entry){++fs->seq, kind, key ? core_strdup(key) : NULL, rc, durable};
}

static int crashed_err(void)
{
    core_err(OG_E_STORAGE, "store crashed (simulated): no further operations");
    core_err_set_storage_kind(OG_STORAGE_CRASHED, 0);
    return OG_E_STORAGE;
}

/* Should this op get the armed fault? Consumes the countdown. */
static store_fault_kind take_fault(fault_store *fs, store_op_kind kind)
{
    if (!fs->fail_countdown || !(fs->fail_mask & STORE_OP_BIT(kind))) return STORE_FAULT_NONE;
    if (--fs->fail_countdown) return STORE_FAULT_NONE;
    return fs->fail_kind;
}

static int fault_err(store_fault_kind k, const char *key)
{
    switch (k) {
    case STORE_FAULT_EIO:
        return core_err_storage(EIO, key, "injected I/O error on '%s'", key ? key : "");
    case STORE_FAULT_ENOSPC:
        return core_err_storage(ENOSPC, key, "injected no-space on '%s'", key ? key : "");
    case STORE_FAULT_NOT_FOUND:
        core_err(OG_E_NOT_FOUND, "object '%s' not found (injected: gone after listing)",
                 key ? key : "");
        if (key) core_err_detail(CORE_ERR_OBJECT, key);
        return OG_E_NOT_FOUND;
    default:
        return 0;
    }
}

static volatile_write *vol_find(fault_store *fs, const char *key)
{
    for (size_t i = 0; i < fs->nvol; i++)
        if (strcmp(fs->vol[i].key, key) == 0) return &fs->vol[i];
    return NULL;
}

/* Before an unsynced write of key: remember what a power loss would bring back. */
static int vol_note(fault_store *fs, const char *key)
{
    if (vol_find(fs, key)) return 0; /* the pre-image of the first unsynced write stands */
    if (fs->nvol == fs->capvol) {
        size_t cap = fs->capvol ? fs->capvol * 2 : 8;
        volatile_write *p = core_realloc(fs->vol, cap * sizeof *p);
        if (!p) return core_err_nomem();
        fs->vol = p;
        fs->capvol = cap;
    }
    volatile_write *v = &fs->vol[fs->nvol];
    memset(v, 0, sizeof *v);
    v->key = core_strdup(key);
    if (!v->key) return core_err_nomem();
    int rc = store_get(fs->inner, key, 0, STORE_ALL, &v->old);
    if (rc == 0) {
        v->had_old = 1;
    } else if (rc != OG_E_NOT_FOUND) {
        core_free(v->key);
        core_buf_free(&v->old);
        return rc;
    }
    fs->nvol++;
    return 0;
}

static void vol_drop(fault_store *fs, size_t i)
{
    core_free(fs->vol[i].key);
    core_buf_free(&fs->vol[i].old);
    fs->vol[i] = fs->vol[--fs->nvol];
}

static void vol_clear(fault_store *fs, const char *key)
{
    for (size_t i = 0; i < fs->nvol; i++) {
        if (strcmp(fs->vol[i].key, key) == 0) {
            vol_drop(fs, i);
            return;
        }
    }
}

/* Power loss: every unsynced write is dropped or torn, chosen by the seeded generator. */
static void apply_power_loss(fault_store *fs)
{
    while (fs->nvol) {
        volatile_write *v = &fs->vol[fs->nvol - 1];
        int tear = v->present_new && v->new_len > 0 && (rng_next(fs) & 1);
        /* Errors here cannot be reported to anyone: the simulated machine is off. The test's
         * reopen and invariant check then see whatever state resulted. */
        if (tear) {
            core_buf cur = CORE_BUF_INIT;
            if (store_get(fs->inner, v->key, 0, STORE_ALL, &cur) == 0 && cur.len > 0) {
                size_t keep = (size_t)(rng_next(fs) % cur.len);
                (void)store_put(fs->inner, v->key, cur.data, keep, 0);
            }
            core_buf_free(&cur);
        } else if (v->had_old) {
            (void)store_put(fs->inner, v->key, v->old.data, v->old.len, 0);
        } else {
            (void)store_delete(fs->inner, v->key, 0);
        }
        vol_drop(fs, fs->nvol - 1);
    }
}

static void do_crash(fault_store *fs, store_crash_mode mode)
{
    if (fs->crashed) return;
    if (mode == STORE_CRASH_POWER_LOSS) apply_power_loss(fs);
    fs->crashed = 1;
}

/* After a durable op completed (whatever its result): count it and crash if due. */
static void durable_done(fault_store *fs)
{
    fs->durable_done++;
    if (fs->crash_at && fs->durable_done >= fs->crash_at) do_crash(fs, fs->crash_mode);
}

static void sync_fsyncs(fault_store *fs)
{
    atomic_store(&fs->base.stats.fsyncs, atomic_load(&fs->inner->stats.fsyncs));
    atomic_store(&fs->base.stats.sync_rounds, atomic_load(&fs->inner->stats.sync_rounds));
}

static int fault_get(store *s, const char *key, uint64_t off, uint64_t len, core_buf *out)
{
    fault_store *fs = F(s);
    pthread_mutex_lock(&fs->lock);
    int rc;
    if (fs->crashed) {
        rc = crashed_err();
    } else {
        store_fault_kind k = take_fault(fs, STORE_OP_GET);
        if (k == STORE_FAULT_MISDIRECTED) {
            /* Another object's bytes come back: the one read last (or none at all). */
            const char *other =
                fs->last_get && strcmp(fs->last_get, key) != 0 ? fs->last_get : NULL;
            rc = other ? store_get(fs->inner, other, off, len, out) : 0;
            if (rc == OG_E_BAD_REQUEST || !other) {
                og_error_clear();
                core_buf_clear(out);
                rc = 0;
            }
        } else if (k == STORE_FAULT_TORN) {
            /* A read cut short: the first half of what was asked for. */
            rc = store_get(fs->inner, key, off, len, out);
            if (rc == 0) out->len /= 2;
        } else {
            rc = k == STORE_FAULT_NONE ? store_get(fs->inner, key, off, len, out)
                                       : fault_err(k, key);
            if (rc == 0) {
                char *copy = core_strdup(key);
                if (copy) { /* diagnostic state: under OOM the old key stays */
                    core_free(fs->last_get);
                    fs->last_get = copy;
                }
            }
        }
    }
    log_op(fs, STORE_OP_GET, key, rc);
    pthread_mutex_unlock(&fs->lock);
    return rc;
}

static int fault_head(store *s, const char *key, store_meta *out)
{
    fault_store *fs = F(s);
    pthread_mutex_lock(&fs->lock);
    int rc;
    if (fs->crashed) {
        rc = crashed_err();
    } else {
        store_fault_kind k = take_fault(fs, STORE_OP_HEAD);
        rc = k == STORE_FAULT_NONE ? store_head(fs->inner, key, out) : fault_err(k, key);
    }
    log_op(fs, STORE_OP_HEAD, key, rc);
    pthread_mutex_unlock(&fs->lock);
    return rc;
}

static int do_write(fault_store *fs, store_op_kind kind, const char *key, const void *data,
                    size_t len, unsigned flags)
{
    store_fault_kind k = take_fault(fs, kind);
    if (k == STORE_FAULT_EIO || k == STORE_FAULT_ENOSPC || k == STORE_FAULT_NOT_FOUND)
        return fault_err(k, key);
    if (k == STORE_FAULT_LOST) {
        if (kind == STORE_OP_PUT_IF_ABSENT) {
            /* Even a lost create must not claim a name someone else holds. */
            store_meta h;
            if (store_head(fs->inner, key, &h) == 0) {
                core_err(OG_E_EXISTS, "object '%s' already exists", key);
                return OG_E_EXISTS;
            }
        }
        return 0;
    }
    const char *target = key;
    char misdirected[STORE_KEY_MAX + 16];
    if (k == STORE_FAULT_MISDIRECTED) {
        snprintf(misdirected, sizeof misdirected, "%s.misdirected", key);
        target = misdirected;
    }
    if (k == STORE_FAULT_TORN) len = len / 2;
    if (flags & STORE_F_NOSYNC) {
        int rc = vol_note(fs, target);
        if (rc) return rc;
    } else {
        /* A durable write supersedes what an earlier unsynced one left to chance. */
        vol_clear(fs, target);
    }
    int rc = kind == STORE_OP_PUT ? store_put(fs->inner, target, data, len, flags)
                                  : store_put_if_absent(fs->inner, target, data, len, flags);
    if (flags & STORE_F_NOSYNC) {
        volatile_write *v = vol_find(fs, target);
        if (v) {
            if (rc == 0) {
                v->present_new = 1;
                v->new_len = len;
            } else if (!v->present_new && !v->had_old) {
                vol_clear(fs, target); /* nothing happened */
            }
        }
    }
    return rc;
}

static int fault_put_common(store *s, store_op_kind kind, const char *key, const void *data,
                            size_t len, unsigned flags)
{
    fault_store *fs = F(s);
    pthread_mutex_lock(&fs->lock);
    int rc;
    if (fs->crashed) {
        rc = crashed_err();
    } else {
        rc = do_write(fs, kind, key, data, len, flags);
        sync_fsyncs(fs);
        durable_done(fs);
    }
    log_op(fs, kind, key, rc);
    pthread_mutex_unlock(&fs->lock);
    return rc;
}

static int fault_put(store *s, const char *key, const void *data, size_t len, unsigned flags)
{
    return fault_put_common(s, STORE_OP_PUT, key, data, len, flags);
}

static int fault_put_if_absent(store *s, const char *key, const void *data, size_t len,
                               unsigned flags)
{
    return fault_put_common(s, STORE_OP_PUT_IF_ABSENT, key, data, len, flags);
}

static int fault_del(store *s, const char *key, unsigned flags)
{
    fault_store *fs = F(s);
    pthread_mutex_lock(&fs->lock);
    int rc;
    if (fs->crashed) {
        rc = crashed_err();
    } else {
        store_fault_kind k = take_fault(fs, STORE_OP_DELETE);
        if (k == STORE_FAULT_EIO || k == STORE_FAULT_ENOSPC || k == STORE_FAULT_NOT_FOUND) {
            rc = fault_err(k, key);
        } else if (k == STORE_FAULT_LOST) {
            rc = 0;
        } else {
            rc = 0;
            if (flags & STORE_F_NOSYNC)
                rc = vol_note(fs, key);
            else
                vol_clear(fs, key);
            if (rc == 0) rc = store_delete(fs->inner, key, flags);
            volatile_write *v = (flags & STORE_F_NOSYNC) ? vol_find(fs, key) : NULL;
            if (v && rc == 0) v->present_new = 0;
        }
        sync_fsyncs(fs);
        durable_done(fs);
    }
    log_op(fs, STORE_OP_DELETE, key, rc);
    pthread_mutex_unlock(&fs->lock);
    return rc;
}

static int fault_list(store *s, const char *prefix, unsigned flags, store_list *out)
{
    fault_store *fs = F(s);
    pthread_mutex_lock(&fs->lock);
    int rc;
    if (fs->crashed) {
        rc = crashed_err();
    } else {
        store_fault_kind k = take_fault(fs, STORE_OP_LIST);
        rc = k == STORE_FAULT_NONE ? store_list_prefix(fs->inner, prefix, flags, out)
                                   : fault_err(k, prefix);
    }
    log_op(fs, STORE_OP_LIST, prefix, rc);
    pthread_mutex_unlock(&fs->lock);
    return rc;
}

static int fault_sync(store *s, const char *const *keys, size_t n)
{
    fault_store *fs = F(s);
    pthread_mutex_lock(&fs->lock);
    int rc;
    if (fs->crashed) {
        rc = crashed_err();
    } else {
        store_fault_kind k = take_fault(fs, STORE_OP_SYNC);
        if (k == STORE_FAULT_EIO || k == STORE_FAULT_ENOSPC) {
            rc = fault_err(k, n ? keys[0] : NULL);
        } else if (k == STORE_FAULT_LOST) {
            rc = 0; /* acknowledged, but the writes stay volatile */
        } else {
            rc = store_sync(fs->inner, keys, n);
            if (rc == 0)
                for (size_t i = 0; i < n; i++)
                    vol_clear(fs, keys[i]);
        }
        sync_fsyncs(fs);
        durable_done(fs);
    }
    log_op(fs, STORE_OP_SYNC, n ? keys[0] : NULL, rc);
    pthread_mutex_unlock(&fs->lock);
    return rc;
}

/* The model of the fused publish is its definition: a sync step, then a put_if_absent step,
 * each a durable op with its own fault and crash point. A crash between them (after the
 * flush, before the link) leaves the synced files durable and key absent, which is what the
 * local backend guarantees at that point (its flushed temporary is invisible and
 * reclaimable); a crash after the second keeps key. The inner store's own fused op is
 * deliberately not called: it would hide the crash point in the middle. */
static int fault_sync_put_if_absent(store *s, const char *const *keys, size_t n, const char *key,
                                    const void *data, size_t len, unsigned flags)
{
    int rc = fault_sync(s, keys, n);
    return rc ? rc : fault_put_if_absent(s, key, data, len, flags);
}

static void fault_close(store *s)
{
    fault_store *fs = F(s);
    if (fs->own_inner) store_close(fs->inner);
    while (fs->nvol)
        vol_drop(fs, fs->nvol - 1);
    core_free(fs->vol);
    for (size_t i = 0; i < fs->nlog; i++)
        core_free(fs->log[i].key);
    core_free(fs->log);
    core_free(fs->last_get);
    pthread_mutex_destroy(&fs->lock);
    core_free(fs);
}

/* Locks pass straight through: they are liveness proofs, not store operations to fault. */
static int fault_lock(store *s, const char *name, uint32_t timeout_ms, void **handle)
{
    store_lock *l = NULL;
    int rc = store_lock_acquire(F(s)->inner, name, timeout_ms, &l);
    if (rc == 0) *handle = l;
    return rc;
}

/* Shared where the inner store has it (store_lock_acquire_shared falls back to exclusive). */
static int fault_lock_shared(store *s, const char *name, uint32_t timeout_ms, void **handle)
{
    store_lock *l = NULL;
    int rc = store_lock_acquire_shared(F(s)->inner, name, timeout_ms, &l);
    if (rc == 0) *handle = l;
    return rc;
}

static void fault_unlock(store *s, void *handle)
{
    (void)s;
    store_lock_release(handle);
}

static void fault_unlock_remove(store *s, void *handle)
{
    (void)s;
    store_lock_release_remove(handle);
}

static const store_ops FAULT_OPS = {
    .version = STORE_OPS_VERSION,
    .name = "fault",
    .get = fault_get,
    .head = fault_head,
    .put = fault_put,
    .put_if_absent = fault_put_if_absent,
    .del = fault_del,
    .list = fault_list,
    .sync = fault_sync,
    .close = fault_close,
    .lock = fault_lock,
    .unlock = fault_unlock,
};

/* The inner store's own temporaries are not objects: no op is counted or faulted, but a
 * crashed store does nothing. */
static int fault_reclaim(store *s, uint64_t *removed)
{
    *removed = 0;
    return store_fault_crashed(s) ? crashed_err() : store_reclaim(F(s)->inner, removed);
}

static const store_ops_ext FAULT_EXT = {
    .sync_put_if_absent = fault_sync_put_if_absent,
    .unlock_remove = fault_unlock_remove,
    .reclaim = fault_reclaim,
    .lock_shared = fault_lock_shared,
};

int store_fault_open(store **out, store *inner, int own_inner)
{
    fault_store *fs = core_calloc(1, sizeof *fs);
    if (!fs) return core_err_nomem();
    fs->base.ops = &FAULT_OPS;
    fs->base.ext = &FAULT_EXT;
    fs->inner = inner;
    fs->own_inner = own_inner;
    pthread_mutex_init(&fs->lock, NULL);
    *out = &fs->base;
    return 0;
}

void store_fault_fail_nth(store *s, uint64_t nth, unsigned op_mask, store_fault_kind kind)
{
    fault_store *fs = F(s);
    pthread_mutex_lock(&fs->lock);
    fs->fail_countdown = nth;
    fs->fail_mask = op_mask;
    fs->fail_kind = kind;
    pthread_mutex_unlock(&fs->lock);
}

void store_fault_crash_after(store *s, uint64_t k, store_crash_mode mode)
{
    fault_store *fs = F(s);
    pthread_mutex_lock(&fs->lock);
    fs->crash_at = k ? fs->durable_done + k : 0;
    fs->crash_mode = mode;
    pthread_mutex_unlock(&fs->lock);
}

void store_fault_crash_now(store *s, store_crash_mode mode)
{
    fault_store *fs = F(s);
    pthread_mutex_lock(&fs->lock);
    do_crash(fs, mode);
    pthread_mutex_unlock(&fs->lock);
}

int store_fault_crashed(store *s)
{
    fault_store *fs = F(s);
    pthread_mutex_lock(&fs->lock);
    int c = fs->crashed;
    pthread_mutex_unlock(&fs->lock);
    return c;
}

void store_fault_set_seed(store *s, uint64_t seed)
{
    F(s)->rng = seed ? seed : 1;
}

uint64_t store_fault_durable_ops(store *s)
{
    return F(s)->durable_done;
}

const store_oplog_entry *store_fault_log(store *s, size_t *n)
{
    *n = F(s)->nlog;
    return F(s)->log;
}

store *store_fault_inner(store *s)
{
    return F(s)->inner;
}
