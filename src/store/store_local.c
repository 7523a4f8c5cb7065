/* Local POSIX backend. Durable by default: each write goes to a hidden temporary in the
 * target's directory, is fdatasync'ed, published with rename(2) (put) or link(2)
 * (put_if_absent), and the directory is fsync'ed. A writer holds flock(2) on its temporary
 * while it lives, so store_local_reclaim_temps() removes only temporaries whose writer is
 * gone. A temporary made by name is unlocked from its create to its lock: it is born under a
 * newborn's name, which the reclaimer spares while it is young, and renamed to a temporary's
 * name once locked. All paths are resolved relative to an O_DIRECTORY handle on the root. For
 * commits: batched flushes run on persistent worker threads, sync_put_if_absent flushes the new
 * object with the batch (two flush rounds per commit), and directories commits publish into
 * keep a few pre-created temporaries ready (file creation is slow on some filesystems).
 * Where the filesystem allows it (O_TMPFILE, and linkat of /proc/self/fd/N, probed at open)
 * the temporaries of unsynced writes (STORE_F_NOSYNC: a commit's data files) have no name at
 * all: the object is linked straight under its key, which leaves one directory entry to
 * change instead of three, and nothing to reclaim. A write that is flushed before it is
 * linked (every durable put, and the new object of sync_put_if_absent) keeps a named
 * temporary: an unnamed inode flushed with no link would be on disk with a link count of 0,
 * and on a filesystem without a journal only a later writeback of the inode, which no fsync
 * of the directory forces, would record the link. */
#include "store/store.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/failpoint.h"

#include <ctype.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct sync_job sync_job;
typedef struct sync_batch sync_batch;

/* Creating a file is the slowest step of a small write on some filesystems (ext4 without a
 * journal scans past recently deleted inodes, 0.3 to 2 ms here), so directories that commits
 * publish into get a few empty, locked temporaries created ahead by a background thread. */
#define TMP_POOL_DIRS 8
#define TMP_POOL_PER_DIR 2
/* Deleted objects kept as temporaries for the next write in their directory
 * (STORE_F_RECYCLE). */
#define TMP_BIN 4

typedef struct tmp_ready {
    int fd;                        /* open for writing; flock held when it has a name */
    char name[STORE_KEY_MAX + 64]; /* "" for an unnamed (O_TMPFILE) temporary */
} tmp_ready;

typedef struct tmp_dir {
    char dir[STORE_KEY_MAX + 1]; /* "" is the root */
    int used;
    uint64_t gen;      /* changes when the slot is given to another directory */
    uint64_t last_use; /* for replacing the least recently used directory */
    tmp_ready ready[TMP_POOL_PER_DIR];
    size_t n_ready;
    int named; /* keep named temporaries (some write here is flushed before it is linked) */
} tmp_dir;

/* Flushes of one batch run on a few long-lived worker threads (started on the first batch
 * that has more than one flush) plus the calling thread, so the device sees them together
 * and a batch costs no thread creation. */
#define SYNC_WORKERS_MAX 6

typedef struct local_store {
    store base;
    char *root;
    int root_fd;
    int readonly;
    pthread_mutex_t pool_mu;
    pthread_cond_t pool_work; /* a batch was queued, or stop */
    sync_batch *queue;        /* batches with jobs not yet handed out, oldest first */
    pthread_t workers[SYNC_WORKERS_MAX];
    size_t n_workers;
    _Atomic pid_t workers_pid; /* the process that started them (a forked child has none) */
    int pool_stop;
    /* Pre-created temporaries (see "temporary pool" below). */
    pthread_mutex_t tmp_mu;
    pthread_cond_t tmp_cv; /* a directory wants temporaries, or stop */
    tmp_dir tdirs[TMP_POOL_DIRS];
    /* Directories wanted once: a directory gets pooled temporaries from its second want on,
     * so a one-shot process (a CLI write) creates no temporaries it will not use (and frees
     * none at exit). */
    char (*once)[STORE_KEY_MAX + 1];
    size_t n_once, next_once;
    uint64_t tmp_tick;
    pthread_t creator;
    _Atomic pid_t creator_pid; /* 0: not started; the pool is used only by this process */
    int tmp_stop;
    int unnamed_ok; /* O_TMPFILE files can be linked under a name (probed at open) */
    /* Recycled objects (under tmp_mu): named, locked temporaries, emptied. */
    struct {
        int fd;
        char name[STORE_KEY_MAX + 64];
    } bin[TMP_BIN];
    size_t n_bin;
    pid_t bin_pid; /* the process they belong to (a forked child must not use them) */
} local_store;

/* Process-wide, so temporaries of different handles in one process never share a name. */
static _Atomic uint64_t g_tmp_seq;

static local_store *L(store *s)
{
    return (local_store *)s;
}

static void count_fsync(local_store *ls)
{
    atomic_fetch_add_explicit(&ls->base.stats.fsyncs, 1, memory_order_relaxed);
}

static void count_round(local_store *ls)
{
    atomic_fetch_add_explicit(&ls->base.stats.sync_rounds, 1, memory_order_relaxed);
}

/* The directory part of key ("" for a key at the root), copied into dir. */
static void parent_of(const char *key, char *dir, size_t cap)
{
    const char *slash = strrchr(key, '/');
    size_t n = slash ? (size_t)(slash - key) : 0;
    if (n >= cap) n = cap - 1;
    memcpy(dir, key, n);
    dir[n] = '\0';
}

static int fsync_dir(local_store *ls, const char *dir)
{
    int fd = openat(ls->root_fd, *dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return core_err_storage(errno, dir, "opening directory '%s' to sync it", dir);
    int rc = 0;
    if (fsync(fd) != 0) rc = core_err_storage(errno, dir, "fsync of directory '%s'", dir);
    count_fsync(ls);
    count_round(ls);
    close(fd);
    return rc;
}

/* Create every missing directory of `dir` (relative to the root), syncing each new one's
 * parent so the new entry survives power loss. */
static int mkdir_parents(local_store *ls, const char *dir)
{
    char path[STORE_KEY_MAX + 1];
    size_t n = strlen(dir);
    if (n == 0) return 0;
    memcpy(path, dir, n + 1);
    for (size_t i = 0; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0') continue;
        char saved = path[i];
        path[i] = '\0';
        if (mkdirat(ls->root_fd, path, 0755) == 0) {
            char parent[STORE_KEY_MAX + 1];
            parent_of(path, parent, sizeof parent);
            int rc = fsync_dir(ls, parent);
            if (rc) return rc;
        } else if (errno != EEXIST) {
            return core_err_storage(errno, path, "creating directory '%s'", path);
        }
        path[i] = saved;
    }
    return 0;
}

static int write_all(int fd, const void *data, size_t len)
{
    const unsigned char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Threads this store started belong to process `owner` (0: none started). A forked child
 * inherits the handle but not the threads, and maybe a mutex one of them held: it must
 * touch neither the pools nor their locks. */
static int forked_from(pid_t owner)
{
    return owner != 0 && owner != getpid();
}

/* A temporary created by name exists, unlocked, between its create and its lock, and looks
 * then like a dead writer's to a reclaimer. So it is created under a newborn's name, which a
 * reclaimer leaves alone while it is younger than NEWBORN_GRACE_S (by mtime), and gets a
 * temporary's name only once it is locked. An unlocked newborn older than that is one whose
 * creator died before it could lock it. The window is a few system calls; the grace is long
 * so that a creator stalled by the scheduler keeps its file too. */
#define NEWBORN_TAG "new-"
#define NEWBORN_GRACE_S 60

/* A name for a new temporary in dir (a newborn's when newborn). */
static void tmp_name_as(char *tmp, size_t cap, const char *dir, uint32_t salt, int newborn)
{
    uint32_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r) r = salt;
    snprintf(tmp, cap, "%s%s" STORE_LOCAL_TMP_PREFIX "%s%ld-%llu-%08x", dir, *dir ? "/" : "",
             newborn ? NEWBORN_TAG : "", (long)getpid(),
             (unsigned long long)atomic_fetch_add(&g_tmp_seq, 1), r);
}

static void tmp_name(char *tmp, size_t cap, const char *dir, uint32_t salt)
{
    tmp_name_as(tmp, cap, dir, salt, 0);
}

/* A fresh, empty temporary in dir that is locked before it has a name: made unnamed
 * (O_TMPFILE), locked, then linked in under a temporary's name, so a reclaimer never sees it
 * unlocked. 0 with *fd_out and tmp set; -1 where O_TMPFILE or /proc is unavailable (or dir is
 * missing), and the caller creates it by name instead. Sets no error. */
static int create_locked_unnamed(local_store *ls, const char *dir, char *tmp, size_t tmpcap,
                                 int *fd_out)
{
    /* Tests take the by-name path where the filesystem has the unnamed one. */
    if (OG_FAILPOINT("store.local.no_unnamed_temps") != 0) {
        og_error_clear();
        return -1;
    }
    int fd = openat(ls->root_fd, *dir ? dir : ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    if (flock(fd, LOCK_EX) == 0) {
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        for (int attempt = 0; attempt < 4; attempt++) {
            tmp_name(tmp, tmpcap, dir, (uint32_t)attempt);
            if (linkat(AT_FDCWD, proc, ls->root_fd, tmp, AT_SYMLINK_FOLLOW) == 0) {
                *fd_out = fd;
                return 0;
            }
            if (errno != EEXIST) break;
        }
    }
    close(fd);
    return -1;
}

/* Create a fresh, empty, locked temporary in dir (creating missing directories when
 * make_dirs). 0 with *fd_out and tmp set, or an error (key names the object it is for). */
static int create_tmp(local_store *ls, const char *dir, const char *key, int make_dirs, char *tmp,
                      size_t tmpcap, int *fd_out)
{
    if (create_locked_unnamed(ls, dir, tmp, tmpcap, fd_out) == 0) return 0;
    /* By name: created under a newborn's name (a reclaimer spares it while it is young),
     * locked, then named as a temporary, so that its writer's death leaves an unlocked
     * temporary that is reclaimed at once. */
    int made_dirs = 0;
    char born[STORE_KEY_MAX + 64];
    for (int attempt = 0; attempt < 16; attempt++) {
        tmp_name_as(born, sizeof born, dir, (uint32_t)attempt, 1);
        int fd = openat(ls->root_fd, born, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0) {
            if (errno == ENOENT && make_dirs && !made_dirs) {
                int rc = mkdir_parents(ls, dir);
                if (rc) return rc;
                made_dirs = 1;
                continue;
            }
            if (errno == EEXIST) continue;
            return core_err_storage(errno, key, "creating temporary for '%s'", key);
        }
        struct stat st;
        if (flock(fd, LOCK_EX) != 0 || fstat(fd, &st) != 0) {
            int e = errno;
            close(fd);
            unlinkat(ls->root_fd, born, 0);
            return core_err_storage(e, key, "locking temporary for '%s'", key);
        }
        if (st.st_nlink == 0) {
            /* Only a creator stalled past the grace loses its newborn: take another name. */
            close(fd);
            continue;
        }
        tmp_name(tmp, tmpcap, dir, (uint32_t)attempt);
        if (renameat(ls->root_fd, born, ls->root_fd, tmp) != 0) {
            int e = errno;
            unlinkat(ls->root_fd, born, 0);
            close(fd);
            return core_err_storage(e, key, "naming temporary for '%s'", key);
        }
        *fd_out = fd;
        return 0;
    }
    return core_err(OG_E_STORAGE, "could not create a temporary for '%s'", key);
}

static int tmp_pool_take(local_store *ls, const char *dir, int need_named, char *tmp, size_t tmpcap,
                         int *fd);

/* Remove a temporary's name, if it has one (an unnamed one goes with its last fd). */
static void tmp_unlink(local_store *ls, const char *tmp)
{
    if (tmp[0]) unlinkat(ls->root_fd, tmp, 0);
}

/* link(2) the temporary (named tmp, or unnamed and open as fd) under key; errno on failure. */
static int tmp_link(local_store *ls, const char *tmp, int fd, const char *key)
{
    if (tmp[0]) return linkat(ls->root_fd, tmp, ls->root_fd, key, 0);
    char proc[40];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, proc, ls->root_fd, key, AT_SYMLINK_FOLLOW);
}

/* Write data to a fresh temporary beside key (a pooled one when the directory has one ready;
 * unnamed, tmp = "", only when !need_named). On success *fd_out is open (and holds the lock
 * of a named one) and tmp names it; the caller publishes it, then closes fd. */
static int write_tmp(local_store *ls, const char *key, const void *data, size_t len, unsigned flags,
                     int need_named, char *tmp, size_t tmpcap, int *fd_out)
{
    char dir[STORE_KEY_MAX + 1];
    parent_of(key, dir, sizeof dir);
    int fd = -1;
    if (!tmp_pool_take(ls, dir, need_named, tmp, tmpcap, &fd)) {
        int rc = create_tmp(ls, dir, key, 1, tmp, tmpcap, &fd);
        if (rc) return rc;
    }
    int rc = 0;
    if (write_all(fd, data, len) != 0) rc = core_err_storage(errno, key, "writing '%s'", key);
    if (rc == 0) rc = OG_FAILPOINT("store.local.after_tmp_write");
    if (rc == 0 && !(flags & STORE_F_NOSYNC)) {
        if (fdatasync(fd) != 0) rc = core_err_storage(errno, key, "fdatasync of '%s'", key);
        count_fsync(ls);
        count_round(ls);
    }
    if (rc == 0) rc = OG_FAILPOINT("store.local.after_tmp_sync");
    if (rc) {
        tmp_unlink(ls, tmp);
        close(fd);
        return rc;
    }
    *fd_out = fd;
    return 0;
}

/* ---- temporary pool ------------------------------------------------------------------------
 * A pooled temporary in a directory that only unsynced writes use is an unnamed O_TMPFILE
 * file (where unnamed_ok), linked straight under its key when published; if the process dies
 * it was never visible. Otherwise (and in a directory marked named, see the header) it is
 * exactly what write_tmp would create in the same directory (same name form, flock held from
 * before it had a name), only made earlier, so publishing from it has the same crash
 * behaviour (rename or link within one directory); if the process dies those are unlocked and
 * store_local_reclaim_temps() removes them. Close removes them all. A forked child never uses
 * its parent's pool (the descriptors and locks are shared). */

static void tmp_release(local_store *ls, tmp_dir *d)
{
    for (size_t i = 0; i < d->n_ready; i++) {
        tmp_unlink(ls, d->ready[i].name);
        close(d->ready[i].fd);
    }
    d->n_ready = 0;
}

/* Under tmp_mu: the slot of dir, or NULL. */
static tmp_dir *tmp_find(local_store *ls, const char *dir)
{
    for (size_t i = 0; i < TMP_POOL_DIRS; i++)
        if (ls->tdirs[i].used && strcmp(ls->tdirs[i].dir, dir) == 0) return &ls->tdirs[i];
    return NULL;
}

/* Under tmp_mu: a recycled temporary of dir, if the bin holds one. */
static int bin_take(local_store *ls, const char *dir, char *tmp, size_t tmpcap, int *fd)
{
    if (ls->bin_pid != getpid()) return 0;
    size_t dl = strlen(dir);
    for (size_t i = 0; i < ls->n_bin; i++) {
        const char *n = ls->bin[i].name;
        const char *slash = strrchr(n, '/');
        size_t nl = slash ? (size_t)(slash - n) : 0;
        if (nl != dl || memcmp(n, dir, dl) != 0 || strlen(n) >= tmpcap) continue;
        memcpy(tmp, n, strlen(n) + 1);
        *fd = ls->bin[i].fd;
        ls->bin[i] = ls->bin[--ls->n_bin];
        return 1;
    }
    return 0;
}

static int tmp_pool_take(local_store *ls, const char *dir, int need_named, char *tmp, size_t tmpcap,
                         int *fd)
{
    pthread_mutex_lock(&ls->tmp_mu);
    int recycled = bin_take(ls, dir, tmp, tmpcap, fd);
    pthread_mutex_unlock(&ls->tmp_mu);
    if (recycled) return 1;
    if (ls->creator_pid != getpid()) return 0; /* no pool yet, or a forked child */
    pthread_mutex_lock(&ls->tmp_mu);
    tmp_dir *d = tmp_find(ls, dir);
    int got = 0;
    if (d && d->n_ready && strlen(d->ready[d->n_ready - 1].name) < tmpcap &&
        (d->ready[d->n_ready - 1].name[0] || !need_named)) {
        tmp_ready *r = &d->ready[--d->n_ready];
        memcpy(tmp, r->name, strlen(r->name) + 1);
        *fd = r->fd;
        d->last_use = ++ls->tmp_tick;
        pthread_cond_signal(&ls->tmp_cv); /* refill */
        got = 1;
    }
    pthread_mutex_unlock(&ls->tmp_mu);
    return got;
}

/* For the pool: an unnamed (O_TMPFILE) temporary where the directory may hold unnamed ones
 * (O_TMPFILE allocates it without holding the directory's lock, so a writer renaming into the
 * directory meanwhile does not wait for the allocation), else a named, locked one. */
static int create_pooled_tmp(local_store *ls, const char *dir, int named, char *tmp, size_t tmpcap,
                             int *fd_out)
{
    if (ls->unnamed_ok && !named) {
        int fd = openat(ls->root_fd, *dir ? dir : ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
        if (fd >= 0) {
            tmp[0] = '\0';
            *fd_out = fd;
            return 0;
        }
    }
    return create_tmp(ls, dir, dir, 0, tmp, tmpcap, fd_out);
}

static void *tmp_creator(void *p)
{
    local_store *ls = p;
    pthread_mutex_lock(&ls->tmp_mu);
    while (!ls->tmp_stop) {
        tmp_dir *d = NULL;
        for (size_t i = 0; i < TMP_POOL_DIRS && !d; i++)
            if (ls->tdirs[i].used && ls->tdirs[i].n_ready < TMP_POOL_PER_DIR) d = &ls->tdirs[i];
        if (!d) {
            pthread_cond_wait(&ls->tmp_cv, &ls->tmp_mu);
            continue;
        }
        char dir[STORE_KEY_MAX + 1], name[STORE_KEY_MAX + 64];
        memcpy(dir, d->dir, sizeof dir);
        uint64_t gen = d->gen;
        int named = d->named;
        pthread_mutex_unlock(&ls->tmp_mu);
        int fd = -1;
        int rc = create_pooled_tmp(ls, dir, named, name, sizeof name, &fd);
        og_error_clear(); /* the pool is an optimisation: its failures are nobody's error */
        pthread_mutex_lock(&ls->tmp_mu);
        if (rc) {
            /* The directory is gone or unwritable: stop feeding it (writers create their own). */
            if (d->gen == gen) {
                tmp_release(ls, d);
                d->used = 0;
            }
            continue;
        }
        if (d->gen == gen && d->used && d->n_ready < TMP_POOL_PER_DIR && !ls->tmp_stop) {
            tmp_ready *r = &d->ready[d->n_ready++];
            r->fd = fd;
            memcpy(r->name, name, sizeof r->name);
        } else {
            tmp_unlink(ls, name);
            close(fd);
        }
    }
    pthread_mutex_unlock(&ls->tmp_mu);
    return NULL;
}

/* Directory dir is one commits publish into: keep temporaries ready there, named ones when
 * some write there is flushed before it is linked (named is sticky: it serves every write). */
static void tmp_pool_want(local_store *ls, const char *dir, int named)
{
    if (forked_from(ls->creator_pid)) return;
    pthread_mutex_lock(&ls->tmp_mu);
    if (ls->creator_pid == 0 && !ls->tmp_stop) {
        if (pthread_create(&ls->creator, NULL, tmp_creator, ls) == 0) ls->creator_pid = getpid();
    }
    if (ls->creator_pid != getpid()) {
        pthread_mutex_unlock(&ls->tmp_mu);
        return;
    }
    tmp_dir *d = tmp_find(ls, dir);
    if (!d) {
        bool again = false;
        for (size_t i = 0; i < ls->n_once && !again; i++)
            again = strcmp(ls->once[i], dir) == 0;
        if (!again) {
            if (!ls->once) ls->once = core_calloc(TMP_POOL_DIRS, sizeof *ls->once);
            if (ls->once) {
                snprintf(ls->once[ls->next_once], sizeof ls->once[0], "%s", dir);
                ls->next_once = (ls->next_once + 1) % TMP_POOL_DIRS;
                if (ls->n_once < TMP_POOL_DIRS) ls->n_once++;
            }
            pthread_mutex_unlock(&ls->tmp_mu);
            return;
        }
        d = &ls->tdirs[0];
        for (size_t i = 0; i < TMP_POOL_DIRS; i++) {
            tmp_dir *c = &ls->tdirs[i];
            if (!c->used) {
                d = c;
                break;
            }
            if (c->last_use < d->last_use) d = c;
        }
        tmp_release(ls, d);
        snprintf(d->dir, sizeof d->dir, "%s", dir);
        d->used = 1;
        d->named = named;
        d->gen++;
        pthread_cond_signal(&ls->tmp_cv);
    } else if (named && !d->named) {
        tmp_release(ls, d); /* unnamed ones cannot serve it */
        d->named = 1;
        d->gen++;
        pthread_cond_signal(&ls->tmp_cv);
    }
    d->last_use = ++ls->tmp_tick;
    pthread_mutex_unlock(&ls->tmp_mu);
}

static void tmp_pool_close(local_store *ls)
{
    /* Recycled temporaries belong to the process that recycled them (a forked child may
     * have its own). */
    pthread_mutex_lock(&ls->tmp_mu);
    if (ls->bin_pid == getpid()) {
        for (size_t i = 0; i < ls->n_bin; i++) {
            tmp_unlink(ls, ls->bin[i].name);
            close(ls->bin[i].fd);
        }
        ls->n_bin = 0;
    }
    core_free(ls->once);
    ls->once = NULL;
    ls->n_once = 0;
    pthread_mutex_unlock(&ls->tmp_mu);
    if (forked_from(ls->creator_pid)) return; /* the parent's temporaries are the parent's */
    pthread_mutex_lock(&ls->tmp_mu);
    ls->tmp_stop = 1;
    pthread_cond_broadcast(&ls->tmp_cv);
    pthread_mutex_unlock(&ls->tmp_mu);
    if (ls->creator_pid) {
        pthread_join(ls->creator, NULL);
        for (size_t i = 0; i < TMP_POOL_DIRS; i++)
            tmp_release(ls, &ls->tdirs[i]);
    }

    pthread_cond_destroy(&ls->tmp_cv);
    pthread_mutex_destroy(&ls->tmp_mu);
}

static int refuse_readonly(local_store *ls, const char *key)
{
    core_err(OG_E_STORAGE, "'%s' was opened read-only; cannot write '%s'", ls->root, key);
    core_err_set_storage_kind(OG_STORAGE_PERMISSION, 0);
    core_err_detail(CORE_ERR_OBJECT, key);
    return OG_E_STORAGE;
}

static int local_put(store *s, const char *key, const void *data, size_t len, unsigned flags)
{
    local_store *ls = L(s);
    if (ls->readonly) return refuse_readonly(ls, key);
    char tmp[STORE_KEY_MAX + 64];
    int fd = -1;
    /* Unsynced, it is linked before anything flushes it: it may be unnamed. */
    int rc = write_tmp(ls, key, data, len, flags, !(flags & STORE_F_NOSYNC), tmp, sizeof tmp, &fd);
    if (rc) return rc;
    if (!tmp[0]) {
        /* Unnamed: linked straight under key when it is free (link cannot replace); to replace
         * an object it gets a temporary name first and is renamed over the old one. */
        if (tmp_link(ls, tmp, fd, key) == 0) goto published;
        int e = errno;
        if (e != EEXIST) {
            close(fd);
            return core_err_storage(e, key, "publishing '%s'", key);
        }
        char dir[STORE_KEY_MAX + 1], named[STORE_KEY_MAX + 64];
        parent_of(key, dir, sizeof dir);
        /* Locked before it has a name, as every named temporary is: a reclaimer takes an
         * unlocked one for a dead writer's and removes it. */
        if (flock(fd, LOCK_EX) != 0) {
            rc = core_err_storage(errno, key, "locking the temporary of '%s'", key);
            close(fd);
            return rc;
        }
        for (int attempt = 0;; attempt++) {
            tmp_name(named, sizeof named, dir, (uint32_t)attempt);
            if (tmp_link(ls, tmp, fd, named) == 0) break;
            if (errno != EEXIST || attempt == 15) {
                rc = core_err_storage(errno, key, "naming the temporary of '%s'", key);
                close(fd);
                return rc;
            }
        }
        memcpy(tmp, named, strlen(named) + 1);
    }
    if (renameat(ls->root_fd, tmp, ls->root_fd, key) != 0) {
        rc = core_err_storage(errno, key, "publishing '%s'", key);
        unlinkat(ls->root_fd, tmp, 0);
        close(fd);
        return rc;
    }
published:
    close(fd);
    rc = OG_FAILPOINT("store.local.after_publish");
    if (rc == 0 && !(flags & STORE_F_NOSYNC)) {
        char dir[STORE_KEY_MAX + 1];
        parent_of(key, dir, sizeof dir);
        rc = fsync_dir(ls, dir);
    }
    return rc;
}

static int exists_err(const char *key)
{
    core_err(OG_E_EXISTS, "object '%s' already exists", key);
    core_err_detail(CORE_ERR_OBJECT, key);
    return OG_E_EXISTS;
}

/* The second half of put_if_absent: link the written (and, unless NOSYNC, flushed)
 * temporary under key, drop the temporary's name (if it has one), sync the directory.
 * Consumes fd. */
static int publish_link(local_store *ls, const char *key, const char *tmp, int fd, unsigned flags)
{
    if (tmp_link(ls, tmp, fd, key) != 0) {
        int e = errno;
        tmp_unlink(ls, tmp);
        close(fd);
        if (e == EEXIST) return exists_err(key);
        return core_err_storage(e, key, "publishing '%s'", key);
    }
    /* The temporary's name goes; the object stays under its key. A crash before this unlink
     * leaves a temporary that the reclaimer removes once our lock is gone. */
    int rc = OG_FAILPOINT("store.local.after_publish");
    if (rc == 0 && tmp[0] && unlinkat(ls->root_fd, tmp, 0) != 0)
        rc = core_err_storage(errno, key, "removing temporary of '%s'", key);
    close(fd);
    if (rc == 0 && !(flags & STORE_F_NOSYNC)) {
        char dir[STORE_KEY_MAX + 1];
        parent_of(key, dir, sizeof dir);
        rc = fsync_dir(ls, dir);
    }
    return rc;
}

static int local_put_if_absent(store *s, const char *key, const void *data, size_t len,
                               unsigned flags)
{
    local_store *ls = L(s);
    if (ls->readonly) return refuse_readonly(ls, key);
    char tmp[STORE_KEY_MAX + 64];
    int fd = -1;
    /* A cheap early answer for a name already taken spares the loser of a commit race its
     * write and fdatasync; link(2) below still decides every race. */
    struct stat st;
    if (fstatat(ls->root_fd, key, &st, AT_SYMLINK_NOFOLLOW) == 0) return exists_err(key);
    int rc = write_tmp(ls, key, data, len, flags, !(flags & STORE_F_NOSYNC), tmp, sizeof tmp, &fd);
    if (rc) return rc;
    return publish_link(ls, key, tmp, fd, flags);
}

static uint64_t mtime_ms_of(const struct stat *st)
{
    return (uint64_t)st->st_mtim.tv_sec * 1000u + (uint64_t)st->st_mtim.tv_nsec / 1000000u;
}

static int not_found(const char *key)
{
    core_err(OG_E_NOT_FOUND, "object '%s' not found", key);
    core_err_detail(CORE_ERR_OBJECT, key);
    return OG_E_NOT_FOUND;
}

static int local_get(store *s, const char *key, uint64_t off, uint64_t len, core_buf *out)
{
    local_store *ls = L(s);
    int fd = openat(ls->root_fd, key, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) return not_found(key);
        return core_err_storage(errno, key, "opening '%s'", key);
    }
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0) {
        rc = core_err_storage(errno, key, "stat of '%s'", key);
    } else if (!S_ISREG(st.st_mode)) {
        rc = not_found(key);
    } else if (off > (uint64_t)st.st_size) {
        rc = core_err(OG_E_BAD_REQUEST, "read of '%s' at offset %llu is beyond its size %llu", key,
                      (unsigned long long)off, (unsigned long long)st.st_size);
    } else {
        uint64_t avail = (uint64_t)st.st_size - off;
        uint64_t want = len < avail ? len : avail;
        if (want > SIZE_MAX / 2) {
            rc = core_err(OG_E_RESOURCE_LIMIT, "read of '%s' is too large", key);
        } else {
            rc = core_buf_reserve(out, (size_t)want);
        }
        uint64_t done = 0;
        while (rc == 0 && done < want) {
            ssize_t r = pread(fd, out->data + done, (size_t)(want - done), (off_t)(off + done));
            if (r < 0) {
                if (errno == EINTR) continue;
                rc = core_err_storage(errno, key, "reading '%s'", key);
            } else if (r == 0) {
                break; /* shrank under us: it was replaced; return what we read */
            } else {
                done += (uint64_t)r;
            }
        }
        if (rc == 0) {
            out->len = (size_t)done;
            out->data[done] = '\0';
        }
    }
    close(fd);
    return rc;
}

static int local_head(store *s, const char *key, store_meta *out)
{
    local_store *ls = L(s);
    struct stat st;
    if (fstatat(ls->root_fd, key, &st, 0) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) return not_found(key);
        return core_err_storage(errno, key, "stat of '%s'", key);
    }
    if (!S_ISREG(st.st_mode)) return not_found(key);
    out->size = (uint64_t)st.st_size;
    out->mtime_ms = mtime_ms_of(&st);
    snprintf(out->token, sizeof out->token, "%llx-%llx.%09ld-%llx", (unsigned long long)st.st_ino,
             (unsigned long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec,
             (unsigned long long)st.st_size);
    return 0;
}

/* Delete key by renaming it to a temporary kept for the next write in its directory. 1 when
 * done (the key is gone), 0 when the caller should unlink instead (bin full, a forked
 * child, or any step failed: nothing changed then). */
static int recycle(local_store *ls, const char *key)
{
    pthread_mutex_lock(&ls->tmp_mu);
    if (ls->bin_pid && ls->bin_pid != getpid()) {
        pthread_mutex_unlock(&ls->tmp_mu);
        return 0; /* a forked child: the bin's descriptors and locks are the parent's */
    }
    ls->bin_pid = getpid();
    int room = ls->n_bin < TMP_BIN && !ls->tmp_stop;
    pthread_mutex_unlock(&ls->tmp_mu);
    if (!room) return 0;
    int fd = openat(ls->root_fd, key, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return 0;
    struct stat st;
    char dir[STORE_KEY_MAX + 1], tmp[STORE_KEY_MAX + 64];
    parent_of(key, dir, sizeof dir);
    tmp_name(tmp, sizeof tmp, dir, 0);
    /* Locked before it has a temporary's name, as every named temporary is (a reclaimer
     * removes only unlocked ones); a regular file only. */
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_nlink != 1 || renameat(ls->root_fd, key, ls->root_fd, tmp) != 0) {
        close(fd);
        return 0;
    }
    if (ftruncate(fd, 0) != 0) {
        unlinkat(ls->root_fd, tmp, 0);
        close(fd);
        return 1;
    }
    pthread_mutex_lock(&ls->tmp_mu);
    if (ls->n_bin < TMP_BIN && !ls->tmp_stop) {
        ls->bin[ls->n_bin].fd = fd;
        memcpy(ls->bin[ls->n_bin].name, tmp, strlen(tmp) + 1);
        ls->n_bin++;
        fd = -1;
    }
    pthread_mutex_unlock(&ls->tmp_mu);
    if (fd >= 0) {
        unlinkat(ls->root_fd, tmp, 0);
        close(fd);
    }
    return 1;
}

static int local_del(store *s, const char *key, unsigned flags)
{
    local_store *ls = L(s);
    if (ls->readonly) return refuse_readonly(ls, key);
    if ((flags & STORE_F_RECYCLE) && recycle(ls, key)) {
        if (flags & STORE_F_NOSYNC) return 0;
        char dir[STORE_KEY_MAX + 1];
        parent_of(key, dir, sizeof dir);
        return fsync_dir(ls, dir);
    }
    if (unlinkat(ls->root_fd, key, 0) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) return 0;
        if (errno == EISDIR) return not_found(key);
        return core_err_storage(errno, key, "deleting '%s'", key);
    }
    if (flags & STORE_F_NOSYNC) return 0;
    char dir[STORE_KEY_MAX + 1];
    parent_of(key, dir, sizeof dir);
    return fsync_dir(ls, dir);
}

static int is_tmp_name(const char *name)
{
    return strncmp(name, STORE_LOCAL_TMP_PREFIX, sizeof STORE_LOCAL_TMP_PREFIX - 1) == 0;
}

/* Temporaries, lock files and anything else of ours: never listed. */
static int is_reserved_name(const char *name)
{
    return strncmp(name, STORE_RESERVED_PREFIX, sizeof STORE_RESERVED_PREFIX - 1) == 0;
}

/* Does the directory (an open fd, consumed) hold any object, at any depth? */
static int dir_has_object(int dfd)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return 0;
    }
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || is_reserved_name(e->d_name))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (S_ISREG(st.st_mode)) {
            found = 1;
        } else if (S_ISDIR(st.st_mode)) {
            int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (sub >= 0) found = dir_has_object(sub);
        }
    }
    closedir(d);
    return found;
}

/* List entries of directory `dir` (a key prefix ending in '/' or "") whose names start with
 * `name_prefix`; recurse into subdirectories unless delimited. */
static int list_dir(local_store *ls, const char *dir, const char *name_prefix, unsigned flags,
                    store_list *out)
{
    int dfd = openat(ls->root_fd, *dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) return 0;
        return core_err_storage(errno, dir, "listing '%s'", dir);
    }
    DIR *d = fdopendir(dfd);
    if (!d) {
        int e = errno;
        close(dfd);
        return core_err_storage(e, dir, "listing '%s'", dir);
    }
    size_t plen = strlen(name_prefix);
    int rc = 0;
    struct dirent *e;
    char key[STORE_KEY_MAX + 2];
    while (rc == 0 && (e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (!strcmp(name, ".") || !strcmp(name, "..") || is_reserved_name(name)) continue;
        if (strncmp(name, name_prefix, plen) != 0) continue;
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT) continue; /* deleted while we listed */
            rc = core_err_storage(errno, dir, "stat during listing of '%s'", dir);
            break;
        }
        int n = snprintf(key, sizeof key, "%s%s%s", dir, name, S_ISDIR(st.st_mode) ? "/" : "");
        if (n < 0 || (size_t)n >= sizeof key) continue; /* cannot be a valid key */
        if (S_ISREG(st.st_mode)) {
            rc = store_list_push(out, key, (uint64_t)st.st_size, mtime_ms_of(&st), 0);
        } else if (S_ISDIR(st.st_mode)) {
            if (flags & STORE_LIST_DELIMITED) {
                int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (sub >= 0 && dir_has_object(sub)) rc = store_list_push(out, key, 0, 0, 1);
            } else {
                rc = list_dir(ls, key, "", flags, out);
            }
        }
    }
    closedir(d);
    return rc;
}

static int local_list(store *s, const char *prefix, unsigned flags, store_list *out)
{
    char dir[STORE_KEY_MAX + 2];
    const char *slash = strrchr(prefix, '/');
    size_t dn = slash ? (size_t)(slash - prefix) + 1 : 0;
    memcpy(dir, prefix, dn);
    dir[dn] = '\0';
    int rc = list_dir(L(s), dir, prefix + dn, flags, out);
    if (rc == 0) store_list_sort(out);
    return rc;
}

/* One object or directory to flush. */
struct sync_job {
    int fd;
    int is_dir;
    int keep_open; /* the caller closes fd (a temporary it still publishes) */
    int err;
    size_t owner; /* the key behind the job, for the error message */
};

struct sync_batch {
    sync_job *jobs;
    size_t n, next;      /* next: first job not handed out (under pool_mu) */
    _Atomic size_t left; /* jobs not finished */
    sem_t finished;      /* posted by a worker that finishes the batch's last job */
    sync_batch *qnext;
};

static void sync_one(sync_job *j)
{
    if ((j->is_dir ? fsync(j->fd) : fdatasync(j->fd)) != 0) j->err = errno;
}

/* Under pool_mu: hand out b's next job; a batch leaves the queue with its last job. */
static sync_job *take_job(local_store *ls, sync_batch *b)
{
    sync_job *j = &b->jobs[b->next++];
    if (b->next == b->n) {
        for (sync_batch **pp = &ls->queue; *pp; pp = &(*pp)->qnext) {
            if (*pp == b) {
                *pp = b->qnext;
                break;
            }
        }
    }
    return j;
}

static void *sync_worker(void *p)
{
    local_store *ls = p;
    pthread_mutex_lock(&ls->pool_mu);
    for (;;) {
        while (!ls->pool_stop && !ls->queue)
            pthread_cond_wait(&ls->pool_work, &ls->pool_mu);
        if (!ls->queue) break; /* stopping, and nothing left to do */
        sync_batch *b = ls->queue;
        sync_job *j = take_job(ls, b);
        pthread_mutex_unlock(&ls->pool_mu);
        sync_one(j);
        /* b may be gone as soon as its owner sees the last job done: not touched after. */
        if (atomic_fetch_sub(&b->left, 1) == 1) sem_post(&b->finished);
        pthread_mutex_lock(&ls->pool_mu);
    }
    pthread_mutex_unlock(&ls->pool_mu);
    return NULL;
}

/* Under pool_mu: have up to `want` workers. A worker that cannot be started is no error:
 * the calling thread runs whatever no worker takes. */
static void grow_workers(local_store *ls, size_t want)
{
    if (want > SYNC_WORKERS_MAX) want = SYNC_WORKERS_MAX;
    while (ls->n_workers < want) {
        if (pthread_create(&ls->workers[ls->n_workers], NULL, sync_worker, ls) != 0) break;
        ls->workers_pid = getpid();
        ls->n_workers++;
    }
}

/* Flush every job's fd concurrently (the calling thread takes part), then close those not
 * kept open. Returns the index of the first failed job, or -1. */
static long run_sync_jobs(local_store *ls, sync_job *jobs, size_t n)
{
    if (n == 1 || (n > 1 && forked_from(ls->workers_pid))) {
        for (size_t i = 0; i < n; i++)
            sync_one(&jobs[i]);
    } else if (n > 1) {
        sync_batch b = {.jobs = jobs, .n = n};
        atomic_init(&b.left, n);
        sem_init(&b.finished, 0, 0);
        int finished_last = 0;
        pthread_mutex_lock(&ls->pool_mu);
        grow_workers(ls, n - 1);
        sync_batch **tail = &ls->queue;
        while (*tail)
            tail = &(*tail)->qnext;
        *tail = &b;
        /* Wake only as many workers as there are jobs for them. */
        for (size_t i = 1; i < n && i <= ls->n_workers; i++)
            pthread_cond_signal(&ls->pool_work);
        while (b.next < b.n) {
            sync_job *j = take_job(ls, &b);
            pthread_mutex_unlock(&ls->pool_mu);
            sync_one(j);
            finished_last = atomic_fetch_sub(&b.left, 1) == 1;
            pthread_mutex_lock(&ls->pool_mu);
        }
        pthread_mutex_unlock(&ls->pool_mu);
        if (!finished_last)
            while (sem_wait(&b.finished) != 0) {
            }
        sem_destroy(&b.finished);
    }
    long bad = -1;
    if (n) count_round(ls);
    for (size_t i = 0; i < n; i++) {
        count_fsync(ls);
        if (!jobs[i].keep_open) close(jobs[i].fd);
        if (jobs[i].err && bad < 0) bad = (long)i;
    }
    return bad;
}

static void close_jobs(sync_job *jobs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!jobs[i].keep_open) close(jobs[i].fd);
}

/* Jobs for keys (files deleted since their write are skipped: the directory sync persists
 * the deletion) and for each distinct parent directory once. jobs has room for 2n. The
 * directories are flushed in the same round as the files: each flush makes durable what it
 * names (the entries already renamed or linked into place), whatever the order. */
static int add_key_jobs(local_store *ls, const char *const *keys, size_t n, sync_job *jobs,
                        size_t *nj)
{
    for (size_t i = 0; i < n; i++) {
        int fd = openat(ls->root_fd, keys[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            if (errno == ENOENT) continue;
            return core_err_storage(errno, keys[i], "opening '%s' to sync it", keys[i]);
        }
        jobs[(*nj)++] = (sync_job){fd, 0, 0, 0, i};
    }
    for (size_t i = 0; i < n; i++) {
        char dir[STORE_KEY_MAX + 1], other[STORE_KEY_MAX + 1];
        parent_of(keys[i], dir, sizeof dir);
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) {
            parent_of(keys[j], other, sizeof other);
            seen = strcmp(dir, other) == 0;
        }
        if (seen) continue;
        int fd = openat(ls->root_fd, *dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) return core_err_storage(errno, dir, "opening directory '%s' to sync it", dir);
        jobs[(*nj)++] = (sync_job){fd, 1, 0, 0, i};
    }
    return 0;
}

/* The error of failed job `bad` (keys may be NULL for the one extra job of a new object). */
static int job_error(const sync_job *j, const char *const *keys, const char *extra_key)
{
    const char *key = j->owner == SIZE_MAX ? extra_key : keys[j->owner];
    if (j->is_dir) return core_err_storage(j->err, key, "fsync of the directory of '%s'", key);
    return core_err_storage(j->err, key, "fdatasync '%s'", key);
}

static int local_sync(store *s, const char *const *keys, size_t n)
{
    local_store *ls = L(s);
    if (ls->readonly) return n ? refuse_readonly(ls, keys[0]) : 0;
    if (n == 0) return 0;
    sync_job *jobs = core_calloc(2 * n, sizeof *jobs);
    if (!jobs) return core_err_nomem();
    size_t nj = 0;
    int rc = add_key_jobs(ls, keys, n, jobs, &nj);
    if (rc) {
        close_jobs(jobs, nj);
    } else {
        long bad = run_sync_jobs(ls, jobs, nj);
        if (bad >= 0) rc = job_error(&jobs[bad], keys, NULL);
    }
    core_free(jobs);
    return rc;
}

/* Two flush rounds where sync + put_if_absent take four: the new object is written to its
 * temporary first and flushed together with keys and their directories; only then is it
 * linked under key (so it can never be visible over a file that is not durable), and its
 * directory synced. */
static int local_sync_put_if_absent(store *s, const char *const *keys, size_t n, const char *key,
                                    const void *data, size_t len, unsigned flags)
{
    local_store *ls = L(s);
    if (ls->readonly) return refuse_readonly(ls, key);
    struct stat st;
    if (fstatat(ls->root_fd, key, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        int rc = local_sync(s, keys, n);
        return rc ? rc : exists_err(key);
    }
    char tmp[STORE_KEY_MAX + 64];
    int fd = -1;
    /* Flushed with the batch before it is linked, unless NOSYNC: then it must have a name. */
    const int flushed = !(flags & STORE_F_NOSYNC);
    int rc = write_tmp(ls, key, data, len, flags | STORE_F_NOSYNC, flushed, tmp, sizeof tmp, &fd);
    if (rc) return rc;
    /* Commits come back to these directories: have temporaries ready there next time. */
    char dir[STORE_KEY_MAX + 1];
    parent_of(key, dir, sizeof dir);
    tmp_pool_want(ls, dir, flushed);
    /* The last key first: a commit's .txn file (if any) comes after its data files. Keys are
     * written unsynced (linked before this flush), so their directories may go unnamed. */
    for (size_t i = n, wanted = 0; i-- > 0 && wanted < TMP_POOL_DIRS - 1;) {
        char other[STORE_KEY_MAX + 1];
        parent_of(keys[i], dir, sizeof dir);
        int seen = 0;
        for (size_t j = i + 1; j < n && !seen; j++) {
            parent_of(keys[j], other, sizeof other);
            seen = strcmp(dir, other) == 0;
        }
        if (seen) continue;
        tmp_pool_want(ls, dir, 0);
        wanted++;
    }
    sync_job *jobs = core_calloc(2 * n + 1, sizeof *jobs);
    size_t nj = 0;
    if (!jobs) rc = core_err_nomem();
    if (rc == 0) rc = add_key_jobs(ls, keys, n, jobs, &nj);
    if (rc == 0) {
        if (!(flags & STORE_F_NOSYNC)) jobs[nj++] = (sync_job){fd, 0, 1, 0, SIZE_MAX};
        long bad = run_sync_jobs(ls, jobs, nj);
        if (bad >= 0) rc = job_error(&jobs[bad], keys, key);
    } else if (jobs) {
        close_jobs(jobs, nj);
    }
    core_free(jobs);
    if (rc == 0) rc = OG_FAILPOINT("store.local.after_batch_sync");
    if (rc) {
        tmp_unlink(ls, tmp);
        close(fd);
        return rc;
    }
    return publish_link(ls, key, tmp, fd, flags);
}

#define LOCK_DIR STORE_RESERVED_PREFIX "locks"

/* Lock files live flat in LOCK_DIR, the name escaped ('%' -> %25, '/' -> %2F). A holder may
 * remove its lock file while it holds the lock (local_unlock_remove); so whoever gets the
 * flock checks that the name still leads to the file it locked, and starts over on the current
 * file if not. Two processes therefore never hold "the same" lock on two different files.
 * Only an exclusive holder removes the file (store_lock_release_remove never removes a shared
 * lock's), so no shared holder is left on a file a later taker does not see. */
typedef struct local_lock_handle {
    int fd;
    char path[];
} local_lock_handle;

/* op: LOCK_EX or LOCK_SH. */
static int local_flock(store *s, const char *name, int op, uint32_t timeout_ms, void **handle)
{
    local_store *ls = L(s);
    if (ls->readonly) return refuse_readonly(ls, name);
    char path[3 * STORE_KEY_MAX + 32];
    size_t n = (size_t)snprintf(path, sizeof path, LOCK_DIR "/");
    for (const char *p = name; *p && n + 4 < sizeof path; p++) {
        if (*p == '/' || *p == '%')
            n += (size_t)snprintf(path + n, sizeof path - n, "%%%02X", (unsigned char)*p);
        else
            path[n++] = *p;
    }
    path[n] = '\0';
    uint64_t waited_us = 0, step_us = 100;
    int fd = -1;
    for (;;) {
        if (fd < 0) {
            fd = openat(ls->root_fd, path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
            if (fd < 0 && errno == ENOENT) {
                if (mkdirat(ls->root_fd, LOCK_DIR, 0755) != 0 && errno != EEXIST)
                    return core_err_storage(errno, name, "creating the lock directory");
                fd = openat(ls->root_fd, path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
            }
            if (fd < 0) return core_err_storage(errno, name, "opening lock '%s'", name);
        }
        if (flock(fd, op | LOCK_NB) == 0) {
            struct stat held, named;
            if (fstat(fd, &held) != 0) {
                int e = errno;
                close(fd);
                return core_err_storage(e, name, "checking lock '%s'", name);
            }
            if (fstatat(ls->root_fd, path, &named, 0) == 0 && named.st_ino == held.st_ino &&
                named.st_dev == held.st_dev)
                break;
            close(fd); /* removed (and maybe recreated) by its last holder: take the new one */
            fd = -1;
            continue;
        }
        if (errno != EWOULDBLOCK && errno != EINTR) {
            int e = errno;
            close(fd);
            return core_err_storage(e, name, "locking '%s'", name);
        }
        if (timeout_ms != STORE_LOCK_WAIT_FOREVER && waited_us >= (uint64_t)timeout_ms * 1000) {
            close(fd);
            core_err(OG_E_CONFLICT, "lock '%s' is held by another writer", name);
            core_err_detail(CORE_ERR_OBJECT, name);
            return OG_E_CONFLICT;
        }
        usleep((useconds_t)step_us);
        waited_us += step_us;
        if (step_us < 250) step_us *= 2; /* short: a waiter that sleeps long misses its turns */
    }
    local_lock_handle *h = core_malloc(sizeof *h + strlen(path) + 1);
    if (!h) {
        close(fd);
        return core_err_nomem();
    }
    h->fd = fd;
    memcpy(h->path, path, strlen(path) + 1);
    *handle = h;
    return 0;
}

static int local_lock(store *s, const char *name, uint32_t timeout_ms, void **handle)
{
    return local_flock(s, name, LOCK_EX, timeout_ms, handle);
}

/* A shared lock on the same file: any number of shared holders (threads with their own
 * descriptor, or processes) coexist; an exclusive holder excludes them all. */
static int local_lock_shared(store *s, const char *name, uint32_t timeout_ms, void **handle)
{
    return local_flock(s, name, LOCK_SH, timeout_ms, handle);
}

static void local_unlock(store *s, void *handle)
{
    (void)s;
    local_lock_handle *h = handle;
    if (!h) return;
    close(h->fd); /* closing the descriptor releases the flock */
    core_free(h);
}

static void local_unlock_remove(store *s, void *handle)
{
    local_lock_handle *h = handle;
    if (!h) return;
    /* Still holding the flock: a waiter that gets it next finds the name gone and retries. */
    (void)unlinkat(L(s)->root_fd, h->path, 0);
    local_unlock(s, h);
}

static void local_close(store *s)
{
    local_store *ls = L(s);
    tmp_pool_close(ls);
    if (!forked_from(ls->workers_pid)) {
        pthread_mutex_lock(&ls->pool_mu);
        ls->pool_stop = 1;
        pthread_cond_broadcast(&ls->pool_work);
        pthread_mutex_unlock(&ls->pool_mu);
        for (size_t i = 0; i < ls->n_workers; i++)
            pthread_join(ls->workers[i], NULL);
        pthread_cond_destroy(&ls->pool_work);
        pthread_mutex_destroy(&ls->pool_mu);
    }
    if (ls->root_fd >= 0) close(ls->root_fd);
    core_free(ls->root);
    core_free(ls);
}

static const store_ops LOCAL_OPS = {
    .version = STORE_OPS_VERSION,
    .name = "local",
    .get = local_get,
    .head = local_head,
    .put = local_put,
    .put_if_absent = local_put_if_absent,
    .del = local_del,
    .list = local_list,
    .sync = local_sync,
    .close = local_close,
    .lock = local_lock,
    .unlock = local_unlock,
};

static int local_reclaim(store *s, uint64_t *removed)
{
    *removed = 0;
    return L(s)->readonly ? 0 : store_local_reclaim_temps(s, removed);
}

static const store_ops_ext LOCAL_EXT = {
    .sync_put_if_absent = local_sync_put_if_absent,
    .unlock_remove = local_unlock_remove,
    .reclaim = local_reclaim,
    .lock_shared = local_lock_shared,
};

/* mkdir -p for the root path itself (absolute or relative to the cwd). */
static int make_root(const char *root)
{
    char path[4096];
    size_t n = strlen(root);
    if (n == 0 || n >= sizeof path) return core_err(OG_E_BAD_REQUEST, "bad store root '%s'", root);
    memcpy(path, root, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0') continue;
        char saved = path[i];
        path[i] = '\0';
        if (mkdir(path, 0755) == 0) {
            /* Persist the new entry in its parent. */
            char *slash = strrchr(path, '/');
            char parent[4096];
            if (slash && slash != path) {
                memcpy(parent, path, (size_t)(slash - path));
                parent[slash - path] = '\0';
            } else {
                snprintf(parent, sizeof parent, "%s", slash ? "/" : ".");
            }
            int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (pfd >= 0) {
                /* Best effort: the root's own durability is settled by the probe's fsync. */
                (void)fsync(pfd);
                close(pfd);
            }
        } else if (errno != EEXIST) {
            return core_err_storage(errno, path, "creating store root '%s'", path);
        }
        path[i] = saved;
    }
    return 0;
}

/* Prove the filesystem has hard links, which put_if_absent needs. */
static int probe_links(local_store *ls)
{
    /* Unique per open: several threads of one process may open the same root at once. */
    static _Atomic uint64_t probe_seq;
    uint32_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r) r = 0;
    char a[STORE_KEY_MAX + 64], b[STORE_KEY_MAX + 80];
    int fd = -1;
    /* Locked as every temporary is while its writer lives, or a reclaimer of dead writers'
     * temporaries (another handle's cleanup) may remove it before the link: the open would
     * then fail, saying the filesystem has no hard links. Locked before it has a name where
     * the filesystem allows; else created by name and locked, retried when a reclaimer took
     * it in between. */
    if (create_locked_unnamed(ls, "", a, sizeof a, &fd) != 0) fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 16; attempt++) {
        /* a newborn's name: a reclaimer spares it while it is young (see create_tmp) */
        snprintf(a, sizeof a, STORE_LOCAL_TMP_PREFIX NEWBORN_TAG "probe-%ld-%llu-%08x",
                 (long)getpid(), (unsigned long long)atomic_fetch_add(&probe_seq, 1), r);
        fd = openat(ls->root_fd, a, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0)
            return core_err_storage(errno, ls->root, "store root '%s' is not writable", ls->root);
        struct stat st;
        if (flock(fd, LOCK_EX) != 0 || fstat(fd, &st) != 0) {
            int e = errno;
            close(fd);
            unlinkat(ls->root_fd, a, 0);
            return core_err_storage(e, ls->root, "locking a temporary in store root '%s'",
                                    ls->root);
        }
        if (st.st_nlink == 0) { /* a reclaimer removed it between our create and our lock */
            close(fd);
            fd = -1;
        }
    }
    if (fd < 0) return core_err(OG_E_STORAGE, "could not create a temporary in '%s'", ls->root);
    snprintf(b, sizeof b, "%s-link", a);
    int rc = 0;
    if (linkat(ls->root_fd, a, ls->root_fd, b, 0) != 0) {
        int e = errno;
        rc = core_err_storage(e, ls->root,
                              "the filesystem of '%s' does not support hard links, which "
                              "atomic create-if-absent needs; use a local POSIX filesystem",
                              ls->root);
        core_err_set_storage_kind(OG_STORAGE_UNSUPPORTED, e);
    }
    unlinkat(ls->root_fd, b, 0);
    unlinkat(ls->root_fd, a, 0);
    close(fd); /* releases the lock, once no name leads to it */
    if (rc) return rc;
    /* Can an unnamed file be linked under a name? (O_TMPFILE and /proc are not everywhere.) */
    fd = openat(ls->root_fd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
    if (fd >= 0) {
        ls->unnamed_ok = tmp_link(ls, "", fd, b) == 0;
        if (ls->unnamed_ok) unlinkat(ls->root_fd, b, 0);
        close(fd);
    }
    return 0;
}

int store_local_check_root(const char *root)
{
    /* RFC 3986: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), then "://". */
    size_t n = 0;
    if (root && ((root[0] >= 'a' && root[0] <= 'z') || (root[0] >= 'A' && root[0] <= 'Z')))
        for (n = 1; root[n] && (isalnum((unsigned char)root[n]) || strchr("+-.", root[n])); n++)
            ;
    if (!n || strncmp(root + n, "://", 3) != 0) return 0;
    core_err(OG_E_UNSUPPORTED,
             "'%s': this build has no storage backend for %.*s:// URIs yet; "
             "give a local directory",
             root, (int)n, root);
    core_err_detail(CORE_ERR_OBJECT, root);
    return OG_E_UNSUPPORTED;
}

static int local_open(store **out, const char *root, int readonly)
{
    *out = NULL;
    int rc = store_local_check_root(root);
    if (rc) return rc;
    rc = readonly ? 0 : make_root(root);
    if (rc) return rc;
    local_store *ls = core_calloc(1, sizeof *ls);
    if (!ls) return core_err_nomem();
    ls->base.ops = &LOCAL_OPS;
    ls->base.ext = &LOCAL_EXT;
    ls->root_fd = -1;
    pthread_mutex_init(&ls->pool_mu, NULL);
    pthread_cond_init(&ls->pool_work, NULL);
    pthread_mutex_init(&ls->tmp_mu, NULL);
    pthread_cond_init(&ls->tmp_cv, NULL);
    ls->root = core_strdup(root);
    if (!ls->root) {
        local_close(&ls->base);
        return core_err_nomem();
    }
    ls->root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (ls->root_fd < 0) {
        rc = core_err_storage(errno, root, "opening store root '%s'", root);
        local_close(&ls->base);
        return rc;
    }
    ls->readonly = readonly;
    rc = readonly ? 0 : probe_links(ls);
    if (rc) {
        local_close(&ls->base);
        return rc;
    }
    *out = &ls->base;
    return 0;
}

int store_local_open(store **out, const char *root)
{
    return local_open(out, root, 0);
}

int store_local_open_readonly(store **out, const char *root)
{
    return local_open(out, root, 1);
}

const char *store_local_root(store *s)
{
    return s->ops == &LOCAL_OPS ? L(s)->root : NULL;
}

int store_local_unnamed_temps(store *s)
{
    return s->ops == &LOCAL_OPS && L(s)->unnamed_ok;
}

/* A temporary under a newborn's name whose mtime is less than NEWBORN_GRACE_S before now (or
 * after it: a clock set back): its creator may be between its create and its lock. */
static int is_young_newborn(const char *name, const struct stat *st, const struct timespec *now)
{
    if (strncmp(name + sizeof STORE_LOCAL_TMP_PREFIX - 1, NEWBORN_TAG, sizeof NEWBORN_TAG - 1))
        return 0;
    return st->st_mtim.tv_sec > now->tv_sec - NEWBORN_GRACE_S;
}

static int reclaim_dir(local_store *ls, int dfd, uint64_t *removed)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return 0;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (!strcmp(name, ".") || !strcmp(name, "..")) continue;
        struct stat st;
        if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            int sub = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (sub >= 0) reclaim_dir(ls, sub, removed);
            continue;
        }
        if (!is_tmp_name(name)) continue;
        if (is_young_newborn(name, &st, &now)) continue; /* maybe not locked yet: spared */
        int fd = openat(dirfd(d), name, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        /* A free lock proves the writer is gone; a held one means it is still writing. */
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            if (unlinkat(dirfd(d), name, 0) == 0) (*removed)++;
        }
        close(fd);
    }
    closedir(d);
    return 0;
}

int store_local_reclaim_temps(store *s, uint64_t *removed)
{
    if (s->ops != &LOCAL_OPS)
        return core_err(OG_E_UNSUPPORTED, "reclaiming temporaries needs the local store");
    *removed = 0;
    int dfd = openat(L(s)->root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return core_err_storage(errno, L(s)->root, "opening store root");
    return reclaim_dir(L(s), dfd, removed);
}
