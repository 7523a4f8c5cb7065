/* Local POSIX backend. Durable by default: each write goes to a hidden temporary in the
 * target's directory, is fdatasync'ed, published with rename(2) (put) or link(2)
 * (put_if_absent), and the directory is fsync'ed. A writer holds flock(2) on its temporary
 * while it lives, so store_local_reclaim_temps() removes only temporaries whose writer is
 * gone. All paths are resolved relative to an O_DIRECTORY handle on the root. */
#include "store/store.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/failpoint.h"

#include <dirent.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct local_store {
    store base;
    char *root;
    int root_fd;
    int readonly;
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

/* Write data to a fresh locked temporary beside key. On success *fd_out holds the lock
 * and tmp names it; the caller publishes it, then closes fd. */
static int write_tmp(local_store *ls, const char *key, const void *data, size_t len,
                     unsigned flags, char *tmp, size_t tmpcap, int *fd_out)
{
    char dir[STORE_KEY_MAX + 1];
    parent_of(key, dir, sizeof dir);
    int made_dirs = 0;
    for (int attempt = 0; attempt < 16; attempt++) {
        uint32_t r = 0;
        if (getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r) r = (uint32_t)attempt;
        snprintf(tmp, tmpcap, "%s%s" STORE_LOCAL_TMP_PREFIX "%ld-%llu-%08x", dir, *dir ? "/" : "",
                 (long)getpid(), (unsigned long long)atomic_fetch_add(&g_tmp_seq, 1), r);
        int fd = openat(ls->root_fd, tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0) {
            if (errno == ENOENT && !made_dirs) {
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
            unlinkat(ls->root_fd, tmp, 0);
            return core_err_storage(e, key, "locking temporary for '%s'", key);
        }
        if (st.st_nlink == 0) {
            /* A reclaimer removed it between our create and our lock: take another name. */
            close(fd);
            continue;
        }
        int rc = 0;
        if (write_all(fd, data, len) != 0)
            rc = core_err_storage(errno, key, "writing '%s'", key);
        if (rc == 0) rc = OG_FAILPOINT("store.local.after_tmp_write");
        if (rc == 0 && !(flags & STORE_F_NOSYNC)) {
            if (fdatasync(fd) != 0) rc = core_err_storage(errno, key, "fdatasync of '%s'", key);
            count_fsync(ls);
        }
        if (rc == 0) rc = OG_FAILPOINT("store.local.after_tmp_sync");
        if (rc) {
            unlinkat(ls->root_fd, tmp, 0);
            close(fd);
            return rc;
        }
        *fd_out = fd;
        return 0;
    }
    return core_err(OG_E_STORAGE, "could not create a temporary for '%s'", key);
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
    int rc = write_tmp(ls, key, data, len, flags, tmp, sizeof tmp, &fd);
    if (rc) return rc;
    if (renameat(ls->root_fd, tmp, ls->root_fd, key) != 0) {
        rc = core_err_storage(errno, key, "publishing '%s'", key);
        unlinkat(ls->root_fd, tmp, 0);
        close(fd);
        return rc;
    }
    close(fd);
    rc = OG_FAILPOINT("store.local.after_publish");
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
    if (fstatat(ls->root_fd, key, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        core_err(OG_E_EXISTS, "object '%s' already exists", key);
        core_err_detail(CORE_ERR_OBJECT, key);
        return OG_E_EXISTS;
    }
    int rc = write_tmp(ls, key, data, len, flags, tmp, sizeof tmp, &fd);
    if (rc) return rc;
    if (linkat(ls->root_fd, tmp, ls->root_fd, key, 0) != 0) {
        int e = errno;
        unlinkat(ls->root_fd, tmp, 0);
        close(fd);
        if (e == EEXIST) {
            core_err(OG_E_EXISTS, "object '%s' already exists", key);
            core_err_detail(CORE_ERR_OBJECT, key);
            return OG_E_EXISTS;
        }
        return core_err_storage(e, key, "publishing '%s'", key);
    }
    /* The temporary's name goes; the object stays under its key. A crash before this unlink
     * leaves a temporary that the reclaimer removes once our lock is gone. */
    rc = OG_FAILPOINT("store.local.after_publish");
    if (rc == 0 && unlinkat(ls->root_fd, tmp, 0) != 0)
        rc = core_err_storage(errno, key, "removing temporary of '%s'", key);
    close(fd);
    if (rc == 0 && !(flags & STORE_F_NOSYNC)) {
        char dir[STORE_KEY_MAX + 1];
        parent_of(key, dir, sizeof dir);
        rc = fsync_dir(ls, dir);
    }
    return rc;
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
        rc = core_err(OG_E_BAD_REQUEST, "read of '%s' at offset %llu is beyond its size %llu",
                      key, (unsigned long long)off, (unsigned long long)st.st_size);
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
    snprintf(out->token, sizeof out->token, "%llx-%llx.%09ld-%llx",
             (unsigned long long)st.st_ino, (unsigned long long)st.st_mtim.tv_sec,
             (long)st.st_mtim.tv_nsec, (unsigned long long)st.st_size);
    return 0;
}

static int local_del(store *s, const char *key, unsigned flags)
{
    local_store *ls = L(s);
    if (ls->readonly) return refuse_readonly(ls, key);
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

/* One object or directory to flush; flushes run on their own threads so the device sees them
 * together (the filesystem can then make one journal commit of them). */
typedef struct sync_job {
    int fd;
    int is_dir;
    int err;
    pthread_t th;
    int started;
} sync_job;

static void *sync_one(void *p)
{
    sync_job *j = p;
    if ((j->is_dir ? fsync(j->fd) : fdatasync(j->fd)) != 0) j->err = errno;
    return NULL;
}

/* Flush every job's fd, concurrently when there are several; then close them. Returns the
 * index of the first failed job, or -1. */
static long run_sync_jobs(local_store *ls, sync_job *jobs, size_t n)
{
    /* The caller's thread takes the first flush itself: one thread fewer to spawn. */
    for (size_t i = 1; i < n; i++) {
        jobs[i].started = pthread_create(&jobs[i].th, NULL, sync_one, &jobs[i]) == 0;
        if (!jobs[i].started) sync_one(&jobs[i]);
    }
    if (n) sync_one(&jobs[0]);
    long bad = -1;
    for (size_t i = 0; i < n; i++) {
        if (jobs[i].started) pthread_join(jobs[i].th, NULL);
        count_fsync(ls);
        close(jobs[i].fd);
        if (jobs[i].err && bad < 0) bad = (long)i;
    }
    return bad;
}

static int local_sync(store *s, const char *const *keys, size_t n)
{
    local_store *ls = L(s);
    if (ls->readonly) return n ? refuse_readonly(ls, keys[0]) : 0;
    if (n == 0) return 0;
    sync_job *jobs = core_calloc(n, sizeof *jobs);
    size_t *owner = core_calloc(n, sizeof *owner); /* key index behind each job */
    if (!jobs || !owner) {
        core_free(jobs);
        core_free(owner);
        return core_err_nomem();
    }
    int rc = 0;
    size_t nj = 0;
    for (size_t i = 0; i < n; i++) {
        int fd = openat(ls->root_fd, keys[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            if (errno == ENOENT) continue; /* deleted: the directory sync below persists that */
            rc = core_err_storage(errno, keys[i], "opening '%s' to sync it", keys[i]);
            break;
        }
        jobs[nj] = (sync_job){fd, 0, 0, 0, 0};
        owner[nj++] = i;
    }
    long bad = rc ? -1 : run_sync_jobs(ls, jobs, nj);
    if (rc) {
        for (size_t i = 0; i < nj; i++) close(jobs[i].fd);
    } else if (bad >= 0) {
        rc = core_err_storage(jobs[bad].err, keys[owner[bad]], "fdatasync '%s'", keys[owner[bad]]);
    }
    /* Then each distinct parent directory once. */
    nj = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char dir[STORE_KEY_MAX + 1], other[STORE_KEY_MAX + 1];
        parent_of(keys[i], dir, sizeof dir);
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) {
            parent_of(keys[j], other, sizeof other);
            seen = strcmp(dir, other) == 0;
        }
        if (seen) continue;
        int fd = openat(ls->root_fd, *dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
            rc = core_err_storage(errno, dir, "opening directory '%s' to sync it", dir);
            break;
        }
        jobs[nj] = (sync_job){fd, 1, 0, 0, 0};
        owner[nj++] = i;
    }
    bad = rc ? -1 : run_sync_jobs(ls, jobs, nj);
    if (rc) {
        for (size_t i = 0; i < nj; i++) close(jobs[i].fd);
    } else if (bad >= 0) {
        rc = core_err_storage(jobs[bad].err, keys[owner[bad]], "fsync of the directory of '%s'",
                              keys[owner[bad]]);
    }
    core_free(jobs);
    core_free(owner);
    return rc;
}

#define LOCK_DIR STORE_RESERVED_PREFIX "locks"

/* Lock files live flat in LOCK_DIR, the name escaped ('%' -> %25, '/' -> %2F). They are never
 * deleted: removing a lock file while another process waits on it would split the lock. */
static int local_lock(store *s, const char *name, uint32_t timeout_ms, void **handle)
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
    int fd = openat(ls->root_fd, path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 && errno == ENOENT) {
        if (mkdirat(ls->root_fd, LOCK_DIR, 0755) != 0 && errno != EEXIST)
            return core_err_storage(errno, name, "creating the lock directory");
        fd = openat(ls->root_fd, path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    }
    if (fd < 0) return core_err_storage(errno, name, "opening lock '%s'", name);
    uint64_t waited_us = 0, step_us = 100;
    for (;;) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) break;
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
        if (step_us < 10000) step_us *= 2;
    }
    *handle = (void *)(intptr_t)(fd + 1);
    return 0;
}

static void local_unlock(store *s, void *handle)
{
    (void)s;
    int fd = (int)(intptr_t)handle - 1;
    if (fd >= 0) close(fd); /* closing the descriptor releases the flock */
}

static void local_close(store *s)
{
    local_store *ls = L(s);
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
    char a[96], b[112];
    snprintf(a, sizeof a, STORE_LOCAL_TMP_PREFIX "probe-%ld-%llu-%08x", (long)getpid(),
             (unsigned long long)atomic_fetch_add(&probe_seq, 1), r);
    snprintf(b, sizeof b, "%s-link", a);
    int fd = openat(ls->root_fd, a, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) return core_err_storage(errno, ls->root, "store root '%s' is not writable", ls->root);
    close(fd);
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
    return rc;
}

static int local_open(store **out, const char *root, int readonly)
{
    *out = NULL;
    int rc = readonly ? 0 : make_root(root);
    if (rc) return rc;
    local_store *ls = core_calloc(1, sizeof *ls);
    if (!ls) return core_err_nomem();
    ls->base.ops = &LOCAL_OPS;
    ls->root_fd = -1;
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

static int reclaim_dir(local_store *ls, int dfd, uint64_t *removed)
{
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
