/* The public backup API (include/omnigraph.h, "Export and backup"): checks the destination
 * (a directory that is empty or missing, outside the graph's root), opens a durable local
 * store on it and runs the copy and its verification (src/write/backup.c). */
#include "omnigraph.h"

#include "api/graph_internal.h"
#include "api/options.h"
#include "core/alloc.h"
#include "core/error.h"
#include "store/store.h"
#include "write/backup.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* 0 when dir does not exist or is an empty directory; OG_E_EXISTS otherwise. */
static int check_empty(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (errno == ENOENT) return 0;
        return core_err_storage(errno, dir, "cannot use '%s' as the backup's directory", dir);
    }
    int nonempty = 1;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(dir);
        if (!d) return core_err_storage(errno, dir, "cannot read directory '%s'", dir);
        nonempty = 0;
        struct dirent *e;
        while (!nonempty && (e = readdir(d)) != NULL)
            nonempty = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
        closedir(d);
    }
    if (!nonempty) return 0;
    core_err(OG_E_EXISTS, "'%s' is not an empty directory: a backup goes into a new or empty one",
             dir);
    core_err_detail(CORE_ERR_OBJECT, dir);
    return OG_E_EXISTS;
}

/* The canonical path dir will have: its own when it exists, else its parent's (which must
 * exist) with its last segment. */
static int canonical_target(const char *dir, char out[PATH_MAX])
{
    char buf[PATH_MAX];
    if (realpath(dir, buf)) {
        snprintf(out, PATH_MAX, "%s", buf);
        return 0;
    }
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (n >= PATH_MAX) return core_err(OG_E_BAD_REQUEST, "the backup's path is too long");
    char copy[PATH_MAX];
    memcpy(copy, dir, n);
    copy[n] = '\0';
    char *slash = strrchr(copy, '/');
    const char *base = slash ? slash + 1 : copy;
    const char *parent = slash ? (slash == copy ? "/" : copy) : ".";
    if (slash) *slash = '\0';
    /* A parent that does not exist yet cannot be inside the root either: mkdir -p makes it. */
    if (!realpath(parent, buf)) {
        out[0] = '\0';
        return 0;
    }
    if (snprintf(out, PATH_MAX, "%s/%s", strcmp(buf, "/") ? buf : "", base) >= PATH_MAX)
        return core_err(OG_E_BAD_REQUEST, "the backup's path is too long");
    return 0;
}

int og_graph_backup(og_backup_result **out, og_graph *g, const char *dest_dir,
                    const og_backup_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_graph_backup: out is NULL");
    *out = NULL;
    if (!g || !dest_dir || !*dest_dir)
        return core_err(OG_E_BAD_REQUEST, "og_graph_backup: missing argument");
    og_backup_options def = OG_BACKUP_OPTIONS_INIT;
    if (!opt) opt = &def;
    int rc = api_options_check(opt->version, OG_BACKUP_OPTIONS_VERSION, "og_backup_options");
    if (rc) return rc;
    /* The hook for graph branches: copy the branch's pins (and its manifest branch). */
    if (opt->branch && *opt->branch && strcmp(opt->branch, "main") != 0)
        return core_err(OG_E_UNSUPPORTED,
                        "backing up branch '%s': only main is supported by "
                        "this build",
                        opt->branch);
    char target[PATH_MAX];
    if ((rc = canonical_target(dest_dir, target))) return rc;
    size_t rl = strlen(g->h->root_id);
    if (target[0] && !strncmp(target, g->h->root_id, rl) && (!target[rl] || target[rl] == '/')) {
        core_err(OG_E_BAD_REQUEST, "'%s' is inside the graph's root: a backup goes elsewhere",
                 dest_dir);
        core_err_detail(CORE_ERR_OBJECT, dest_dir);
        return OG_E_BAD_REQUEST;
    }
    if ((rc = check_empty(dest_dir))) return rc;
    og_backup_result *res = core_calloc(1, sizeof *res);
    if (!res) return core_err_nomem();
    store *dst = NULL;
    rc = store_local_open(&dst, dest_dir);
    if (rc) {
        core_err_prefix("opening the backup's directory '%s'", dest_dir);
        core_free(res);
        return rc;
    }
    write_backup_options bo = WRITE_BACKUP_OPTIONS_INIT;
    bo.attempts = opt->attempts;
    write_backup_report rep;
    rc = write_backup(g->h->s, dst, &bo, &rep);
    store_close(dst);
    if (rc) {
        core_free(res);
        return rc;
    }
    snprintf(res->commit_id, sizeof res->commit_id, "%s", rep.commit_id);
    res->manifest_version = rep.manifest_version;
    res->tables = rep.tables;
    res->rows = rep.rows;
    res->files = rep.files;
    res->bytes = rep.bytes;
    res->attempts = rep.attempts;
    *out = res;
    return 0;
}

void og_backup_result_free(og_backup_result *r)
{
    core_free(r);
}
