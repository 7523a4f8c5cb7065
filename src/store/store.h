/* The object-store interface every layer above writes through. Operations are the ones a
 * local disk and an S3-compatible store can both honour: no rename, no directories.
 *
 * Contract for every backend (tests/store/test_store_contract.c checks it):
 *  - keys are relative paths of '/'-separated non-empty segments; store_key_check() refuses
 *    anything else before a backend sees it;
 *  - put replaces atomically and put_if_absent creates atomically: a reader sees the old
 *    object, no object, or the whole new object, never a part;
 *  - unless STORE_F_NOSYNC is given, a write is durable when the call returns;
 *  - put_if_absent on an existing key returns OG_E_EXISTS and changes nothing;
 *  - delete of a missing key succeeds (it is idempotent, as on S3);
 *  - list returns keys in byte order; an object listed may be gone when read (NOT_FOUND). */
#ifndef OG_STORE_STORE_H
#define OG_STORE_STORE_H

#include "core/buf.h"
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define STORE_OPS_VERSION 1
#define STORE_KEY_MAX 1024
#define STORE_ALL UINT64_MAX

/* Write flags. */
#define STORE_F_NOSYNC 0x1u /* not durable until store_sync() names the key (unsafe alone) */
/* Delete only: the backend may keep the object's storage for a later write in the same
 * directory (the local store renames it to a locked temporary instead of freeing its inode:
 * on ext4 without a journal every file created scans past the inodes freed in about the
 * last minute). A reader that opened the object before the delete may then see its bytes change:
 * use it only for objects whose readers re-check that the key still exists when what they
 * read does not make sense. */
#define STORE_F_RECYCLE 0x2u

/* List flags. */
#define STORE_LIST_DELIMITED 0x1u /* immediate children only; sub-prefixes end with '/' */

typedef enum store_op_kind {
    STORE_OP_GET = 0,
    STORE_OP_HEAD,
    STORE_OP_PUT,
    STORE_OP_PUT_IF_ABSENT,
    STORE_OP_DELETE,
    STORE_OP_LIST,
    STORE_OP_SYNC,
    STORE_OP_KIND_COUNT
} store_op_kind;

#define STORE_OP_BIT(k) (1u << (k))
#define STORE_OPS_DURABLE                                                                          \
    (STORE_OP_BIT(STORE_OP_PUT) | STORE_OP_BIT(STORE_OP_PUT_IF_ABSENT) |                           \
     STORE_OP_BIT(STORE_OP_DELETE) | STORE_OP_BIT(STORE_OP_SYNC))
#define STORE_OPS_ALL ((1u << STORE_OP_KIND_COUNT) - 1)

const char *store_op_name(store_op_kind k);

typedef struct store_meta {
    uint64_t size;
    uint64_t mtime_ms; /* when the object was last written (ms since the epoch) */
    char token[64];    /* changes whenever the object is replaced */
} store_meta;

typedef struct store_entry {
    char *key;
    uint64_t size;
    uint64_t mtime_ms; /* last written, ms since the epoch (0 for a common prefix) */
    int is_prefix;     /* a common prefix (delimited listing), key ends with '/' */
} store_entry;

typedef struct store_list {
    store_entry *items;
    size_t count;
    size_t cap;
} store_list;

void store_list_free(store_list *l);
int store_list_push(store_list *l, const char *key, uint64_t size, uint64_t mtime_ms,
                    int is_prefix);
void store_list_sort(store_list *l);

/* Counters, maintained by the dispatch functions (ops) and the backends (fsyncs, bytes). */
typedef struct store_stats {
    _Atomic uint64_t ops[STORE_OP_KIND_COUNT];
    _Atomic uint64_t fsyncs;
    /* Sequential waits on the device: an fsync alone, or a batch of fsyncs run in parallel,
     * counts once (the latency a caller pays is about one device flush per round). */
    _Atomic uint64_t sync_rounds;
    _Atomic uint64_t bytes_written;
    _Atomic uint64_t bytes_read;
} store_stats;

typedef struct store_counts {
    uint64_t ops[STORE_OP_KIND_COUNT];
    uint64_t total_ops;
    uint64_t durable_ops; /* put + put_if_absent + delete + sync */
    uint64_t fsyncs;
    uint64_t sync_rounds;
    uint64_t bytes_written;
    uint64_t bytes_read;
} store_counts;

typedef struct store store;

/* A backend. Every op is mandatory except sync (NULL: every write is durable on return,
 * or the backend has no notion of durability, as on S3). */
typedef struct store_ops {
    int version; /* STORE_OPS_VERSION */
    const char *name;
    int (*get)(store *s, const char *key, uint64_t off, uint64_t len, core_buf *out);
    int (*head)(store *s, const char *key, store_meta *out);
    int (*put)(store *s, const char *key, const void *data, size_t len, unsigned flags);
    int (*put_if_absent)(store *s, const char *key, const void *data, size_t len, unsigned flags);
    int (*del)(store *s, const char *key, unsigned flags);
    int (*list)(store *s, const char *prefix, unsigned flags, store_list *out);
    int (*sync)(store *s, const char *const *keys, size_t n);
    void (*close)(store *s);
    /* Optional advisory locks (NULL: the backend has none; store_lock_acquire() then hands out a
     * lock that excludes nobody, and store_lock_is_real() says so). lock returns OG_E_CONFLICT when
     * the lock is held and timeout_ms passes. */
    int (*lock)(store *s, const char *name, uint32_t timeout_ms, void **handle);
    void (*unlock)(store *s, void *handle);
} store_ops;

/* Optional operations added after store_ops version 1, in their own table so that backends
 * written against version 1 (positional initializers included) stay valid. Each entry may
 * be NULL: the dispatch function then composes the op from the mandatory ones. */
typedef struct store_ops_ext {
    /* A backend implements it to overlap writing and flushing the new object with the sync,
     * so a commit pays one round of flushes before its publish instead of two. */
    int (*sync_put_if_absent)(store *s, const char *const *keys, size_t n, const char *key,
                              const void *data, size_t len, unsigned flags);
    /* Release a lock and remove what backs it (NULL: unlock only). A lock taken once per
     * operation (a sidecar's liveness lock) would otherwise leave one file per operation. */
    void (*unlock_remove)(store *s, void *handle);
    /* Remove the backend's own temporaries abandoned by writers that are gone (NULL: it leaves
     * none). *removed counts them. */
    int (*reclaim)(store *s, uint64_t *removed);
    /* Take lock `name` in shared mode: shared holders coexist, and exclude (and are excluded
     * by) an exclusive holder of the same name taken with ops->lock. Released with
     * ops->unlock. NULL: the backend has only exclusive locks, and store_lock_acquire_shared()
     * takes an exclusive one instead (it excludes more, never less). */
    int (*lock_shared)(store *s, const char *name, uint32_t timeout_ms, void **handle);
} store_ops_ext;

/* Every backend embeds this first (zero-initialised: ext NULL means no optional ops). */
struct store {
    const store_ops *ops;
    store_stats stats;
    const store_ops_ext *ext;
};

/* 0 if key is a valid object key, else OG_E_BAD_REQUEST naming the key and the rule. */
int store_key_check(const char *key);
/* A listing prefix: "" or a key prefix (may end in '/' or in a partial segment). */
int store_prefix_check(const char *prefix);

/* Names whose segments start with this are the store's own (temporaries, lock files): they are
 * never valid keys and never listed. */
#define STORE_RESERVED_PREFIX ".og-"

/* ---- Advisory locks --------------------------------------------------------------------
 * An exclusive lock named like a key, held until store_lock_release(). On the local backend it is
 * an flock(2) on a lock file, so it excludes other processes on this host and other handles in this
 * process, and it is released by the kernel if the holder dies: holding it proves liveness, and
 * taking it proves the previous holder is gone. Locks are an optimisation and a liveness proof,
 * never the source of cross-process correctness (docs/conformance.md, §3 invariant 7).
 * A lock may also be taken shared (store_lock_acquire_shared: flock LOCK_SH on the local
 * backend): shared holders of a name coexist; an exclusive holder excludes them and they
 * exclude it. A backend without shared locks gives an exclusive one instead. */
typedef struct store_lock store_lock;
#define STORE_LOCK_WAIT_FOREVER UINT32_MAX
/* timeout_ms 0 tries once. OG_E_CONFLICT (with the name as object) if still held after it. */
int store_lock_acquire(store *s, const char *name, uint32_t timeout_ms, store_lock **out);
/* The same in shared mode (exclusive on a backend without shared locks). */
int store_lock_acquire_shared(store *s, const char *name, uint32_t timeout_ms, store_lock **out);
void store_lock_release(store_lock *l);
/* Release, and remove the lock's backing file: for names used once (per operation), which no
 * one will take again after the holder is done. A waiter that opened the old file retries on
 * the new one, so removal never splits the lock. A shared lock is only released (other shared
 * holders may still hold the file: removing it would let an exclusive taker lock a new file
 * beside them). */
void store_lock_release_remove(store_lock *l);
/* 0 when the backend has no locks and this lock excludes nobody. */
int store_lock_is_real(const store_lock *l);
/* 1 when the lock is held in shared mode (0: exclusive, or not real). */
int store_lock_is_shared(const store_lock *l);

/* Dispatch: validate, count, call the backend. */
/* Read [off, off+len) (len STORE_ALL: to the end) into out, replacing its contents.
 * Reading past the end returns the bytes that exist; off beyond the size is OG_E_BAD_REQUEST. */
int store_get(store *s, const char *key, uint64_t off, uint64_t len, core_buf *out);
int store_head(store *s, const char *key, store_meta *out);
int store_put(store *s, const char *key, const void *data, size_t len, unsigned flags);
int store_put_if_absent(store *s, const char *key, const void *data, size_t len, unsigned flags);
int store_delete(store *s, const char *key, unsigned flags);
int store_list_prefix(store *s, const char *prefix, unsigned flags, store_list *out);
/* Make earlier STORE_F_NOSYNC writes of these keys durable. */
int store_sync(store *s, const char *const *keys, size_t n);
/* store_sync(keys) followed by store_put_if_absent(key): the publish of a commit whose files
 * were written unsynced. `key` becomes visible only once every one of `keys` is durable, so
 * no crash can leave key published over a lost file; the backend may write and flush key's
 * bytes under a hidden name while the others are flushed (the local store does: one round
 * of flushes, then link and one directory sync). Counted as one sync and one put_if_absent.
 * Returns 0 (keys durable; key created, durable unless STORE_F_NOSYNC), OG_E_EXISTS (key
 * was taken: nothing of it changed; keys were still synced unless another error is
 * returned), or the sync's or the write's error (key not created). */
int store_sync_put_if_absent(store *s, const char *const *keys, size_t n, const char *key,
                             const void *data, size_t len, unsigned flags);
void store_close(store *s);
/* Remove the store's own temporaries whose writer is gone (the local store's `.og-tmp-*` of a
 * dead process: their lock is free), anywhere under the root. It walks the whole tree, so it
 * belongs where a dead writer was just proven (recovery resolved its intent) and in cleanup,
 * never on a write's path. 0 and *removed 0 for a backend without temporaries. */
int store_reclaim(store *s, uint64_t *removed);

void store_counts_get(store *s, store_counts *out);
/* b - a, field by field. */
void store_counts_diff(const store_counts *b, const store_counts *a, store_counts *out);

/* ---- Backends --------------------------------------------------------------------------- */

/* Local POSIX directory. Creates root if missing; probes that the filesystem has hard links.
 * A root written as a URI ("s3://bucket/g", any "scheme://...") is refused: see
 * store_local_check_root. */
int store_local_open(store **out, const char *root);
/* Read-only: writes nothing, ever (no root creation, no probe, no temporaries); every write,
 * delete or lock fails with OG_E_STORAGE (kind permission). The root must exist. */
int store_local_open_readonly(store **out, const char *root);
const char *store_local_root(store *s);
/* 0 when root can name a local directory; OG_E_UNSUPPORTED (object: root) when it is a URI
 * with a scheme ("s3://", "gs://", "http://", any "scheme://"): no backend for those exists
 * yet, and taking one for a path would make a local directory named "s3:". */
int store_local_check_root(const char *root);
/* Remove temporaries abandoned by dead writers (their lock is free). A temporary created by
 * name is unlocked from its create to its lock, under a newborn's name: one younger than a
 * minute (by mtime) is spared, an older one's creator died before its lock. *removed counts
 * them. */
int store_local_reclaim_temps(store *s, uint64_t *removed);
/* 1 when a local store's pooled temporaries for unsynced writes are unnamed files
 * (O_TMPFILE) linked straight under their key (probed at open: needs O_TMPFILE and
 * /proc/self/fd), else 0. Writes flushed before they are linked always use named ones. */
int store_local_unnamed_temps(store *s);
/* Name prefix of the hidden temporaries (never listed, never a valid key segment). */
#define STORE_LOCAL_TMP_PREFIX ".og-tmp-"

/* Fault injection, wrapping any store (see store_fault.c). */
typedef enum store_fault_kind {
    STORE_FAULT_NONE = 0,
    STORE_FAULT_EIO,         /* the op fails with an I/O error, changing nothing */
    STORE_FAULT_ENOSPC,      /* the op fails with no-space, changing nothing */
    STORE_FAULT_NOT_FOUND,   /* a read finds the object gone (listed, then deleted) */
    STORE_FAULT_TORN,        /* a write succeeds but stores only a prefix of the bytes; a get
                              * returns only the first half of what it asked for */
    STORE_FAULT_LOST,        /* a write is acknowledged but never happens */
    STORE_FAULT_MISDIRECTED, /* a write lands under another key (key + ".misdirected"); a get
                              * returns the bytes of the object read before (none if none) */
} store_fault_kind;

typedef enum store_crash_mode {
    STORE_CRASH_PROCESS = 0, /* everything completed stays */
    STORE_CRASH_POWER_LOSS,  /* writes not yet durable (NOSYNC, unsynced) are dropped or torn */
} store_crash_mode;

typedef struct store_oplog_entry {
    uint64_t seq;
    store_op_kind kind;
    char *key; /* first key of the op (prefix for list); NULL for sync of none */
    int rc;
    int durable; /* counted as a durable op */
} store_oplog_entry;

/* Wrap inner. With own_inner, closing the fault store closes inner too. */
int store_fault_open(store **out, store *inner, int own_inner);
/* Fail the nth op (1-based, counted from now) whose kind is in op_mask with `kind`. */
void store_fault_fail_nth(store *s, uint64_t nth, unsigned op_mask, store_fault_kind kind);
/* Crash right after the k-th durable op from now completes (k >= 1); 0 disarms. */
void store_fault_crash_after(store *s, uint64_t k, store_crash_mode mode);
/* Crash now (applies the mode's effects on what is not yet durable). */
void store_fault_crash_now(store *s, store_crash_mode mode);
int store_fault_crashed(store *s);
/* Seed for the choices power loss makes (drop vs tear, tear length). */
void store_fault_set_seed(store *s, uint64_t seed);
/* Durable ops performed since open. */
uint64_t store_fault_durable_ops(store *s);
/* The op log (owned by the store, valid until the next op). */
const store_oplog_entry *store_fault_log(store *s, size_t *n);
store *store_fault_inner(store *s);

#endif
