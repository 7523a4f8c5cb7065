/* Lance cleanup: choose the versions to keep, delete the other manifests, then the files no
 * kept manifest references (see cleanup.h for the rules and the crash/concurrency argument). */
#include "lance/cleanup.h"
#include "lance/keyindex.h"
#include "lance/branch.h"

#include "core/alloc.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/json.h"
#include "lance/deletion.h"
#include "lance/refs.h"
#include "lance/txn.h"
#include "lance/version.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a set of keys ------------------------------------------------------------------------ */

typedef struct keyset {
    char **v;
    size_t n, cap;
} keyset;

static void keyset_free(keyset *k)
{
    for (size_t i = 0; i < k->n; i++)
        core_free(k->v[i]);
    core_free(k->v);
    memset(k, 0, sizeof *k);
}

static int keyset_add(keyset *k, const char *key)
{
    if (k->n == k->cap) {
        size_t cap = k->cap ? 2 * k->cap : 64;
        char **v = core_realloc(k->v, cap * sizeof *v);
        if (!v) return core_err_nomem();
        k->v = v;
        k->cap = cap;
    }
    char *c = core_strdup(key);
    if (!c) return core_err_nomem();
    k->v[k->n++] = c;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void keyset_sort(keyset *k)
{
    if (k->n) qsort(k->v, k->n, sizeof *k->v, cmp_str);
}

static int keyset_has(const keyset *k, const char *key)
{
    return k->n && bsearch(&key, k->v, k->n, sizeof *k->v, cmp_str) != NULL;
}

static int keep_key(void *arg, const char *key)
{
    return keyset_add(arg, key);
}

/* Every file of this table that manifest m references (lance_manifest_files). Files under
 * another base path belong to another dataset and are never ours to delete: not collected. */
static int collect_refs(keyset *k, const char *root, const Lance__Table__Manifest *m)
{
    return lance_manifest_files(m, root, keep_key, k, NULL);
}

int lance_manifest_files(const Lance__Table__Manifest *m, const char *root,
                         int (*fn)(void *arg, const char *key), void *arg, size_t *foreign)
{
    char key[STORE_KEY_MAX], name[128];
    size_t other = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < m->n_fragments; i++) {
        const Lance__Table__DataFragment *f = m->fragments[i];
        for (size_t j = 0; rc == 0 && j < f->n_files; j++) {
            const Lance__Table__DataFile *df = f->files[j];
            if (!df->path) continue;
            if (df->has_base_id) {
                other++;
                continue;
            }
            rc = lance_key(key, root, "data/", df->path);
            if (rc == 0) rc = fn(arg, key);
        }
        const Lance__Table__DeletionFile *del = f->deletion_file;
        if (rc == 0 && del && del->has_base_id) other++;
        if (rc == 0 && del && !del->has_base_id) {
            rc = lance_deletion_file_name(
                name, sizeof name, f->id, del->read_version, del->id,
                del->file_type == LANCE__TABLE__DELETION_FILE__DELETION_FILE_TYPE__BITMAP);
            if (rc == 0) rc = lance_key(key, root, LANCE_DELETIONS_DIR, name);
            if (rc == 0) rc = fn(arg, key);
        }
    }
    if (rc == 0 && m->transaction_file && m->transaction_file[0]) {
        rc = lance_key(key, root, LANCE_TRANSACTIONS_DIR, m->transaction_file);
        if (rc == 0) rc = fn(arg, key);
    }
    /* this engine's key index segments (keyindex.h) */
    if (rc == 0) rc = lance_kix_files(m, root, fn, arg);
    if (foreign) *foreign = other;
    return rc;
}

/* ---- versions ----------------------------------------------------------------------------- */

typedef struct ver {
    uint64_t v;
    uint64_t size, mtime_ms;
    char *key;
    int keep;
} ver;

typedef struct verlist {
    ver *v;
    size_t n;
    lance_naming naming;
} verlist;

static void verlist_free(verlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        core_free(l->v[i].key);
    core_free(l->v);
    memset(l, 0, sizeof *l);
}

static int cmp_ver(const void *a, const void *b)
{
    uint64_t x = ((const ver *)a)->v, y = ((const ver *)b)->v;
    return x < y ? -1 : x > y;
}

/* One delimited listing of _versions/ with sizes and times (lance_versions_list drops them). */
static int list_versions(store *s, const char *root, verlist *out)
{
    memset(out, 0, sizeof *out);
    char prefix[STORE_KEY_MAX];
    int rc = lance_key(prefix, root, LANCE_VERSIONS_DIR, NULL);
    if (rc) return rc;
    store_list l = {0};
    rc = store_list_prefix(s, prefix, STORE_LIST_DELIMITED, &l);
    if (rc == OG_E_NOT_FOUND) {
        store_list_free(&l);
        og_error_clear(); /* reported below as "no versions" */
        rc = 0;
    }
    if (rc) {
        store_list_free(&l);
        return rc;
    }
    out->v = core_calloc(l.count ? l.count : 1, sizeof *out->v);
    if (!out->v) {
        store_list_free(&l);
        return core_err_nomem();
    }
    int v1 = 0, v2 = 0;
    for (size_t i = 0; i < l.count && rc == 0; i++) {
        uint64_t v;
        lance_naming nm;
        if (l.items[i].is_prefix || !lance_version_parse_name(l.items[i].key, &v, &nm)) continue;
        if (nm == LANCE_NAMING_V1)
            v1 = 1;
        else
            v2 = 1;
        ver *e = &out->v[out->n];
        e->v = v;
        e->size = l.items[i].size;
        e->mtime_ms = l.items[i].mtime_ms;
        e->key = core_strdup(l.items[i].key);
        if (!e->key)
            rc = core_err_nomem();
        else
            out->n++;
    }
    store_list_free(&l);
    if (rc == 0 && v1 && v2) {
        rc = core_err(OG_E_CORRUPT, "lance table '%s' mixes V1 and V2 manifest names", root);
        core_err_detail(CORE_ERR_OBJECT, prefix);
    }
    if (rc) {
        verlist_free(out);
        return rc;
    }
    out->naming = v1 ? LANCE_NAMING_V1 : LANCE_NAMING_V2;
    qsort(out->v, out->n, sizeof *out->v, cmp_ver);
    return 0;
}

/* Load manifest v's references into k. A manifest deleted meanwhile (by another cleanup) has
 * nothing to protect: *gone is set and 0 returned. Absence is confirmed by a second look
 * before it is believed: a read that wrongly says "not found" would otherwise let every file
 * of a kept version be deleted. */
static int load_refs(store *s, const char *root, lance_naming naming, uint64_t v, keyset *k,
                     int *gone)
{
    *gone = 0;
    lance_manifest *m = NULL;
    int rc = lance_version_load(s, root, v, naming, LANCE_ACCESS_INSPECT, &m);
    if (rc == OG_E_NOT_FOUND) {
        char name[64], key[STORE_KEY_MAX];
        store_meta meta;
        og_error_clear();
        rc = lance_version_file_name(name, sizeof name, naming, v);
        if (rc == 0) rc = lance_key(key, root, LANCE_VERSIONS_DIR, name);
        if (rc == 0) rc = store_head(s, key, &meta);
        if (rc == 0) /* it is there: read it again, and fail on what that read says */
            rc = lance_version_load(s, root, v, naming, LANCE_ACCESS_INSPECT, &m);
    }
    if (rc == OG_E_NOT_FOUND) {
        og_error_clear(); /* listed, then deleted: absence, not an error */
        *gone = 1;
        return 0;
    }
    if (rc) return rc;
    rc = collect_refs(k, root, m->pb);
    lance_manifest_free(m);
    return rc;
}

/* ---- branches (hook) ---------------------------------------------------------------------- */

/* Versions of this table (or branch) that branches forked from: a branch reads the files of
 * its fork point through its base path, so that version, and everything it references, stays.
 * Branch refs all live under the main table's root; `root` may be the main table or a branch
 * directory (<main>/tree/<name>), whose children are the branches with that parent; a branch
 * directory also keeps its own first version (see below). Branch
 * creation takes the retention lock we hold, so no fork point appears while we run. */
static int pinned_fork_versions(store *s, const char *root, uint64_t **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    char main_root[STORE_KEY_MAX];
    const char *parent = "";
    const char *t = strstr(root, "/" LANCE_TREE_DIR);
    if (strncmp(root, LANCE_TREE_DIR, sizeof LANCE_TREE_DIR - 1) == 0) {
        main_root[0] = '\0';
        parent = root + sizeof LANCE_TREE_DIR - 1;
    } else if (t) {
        size_t n = (size_t)(t - root);
        memcpy(main_root, root, n);
        main_root[n] = '\0';
        parent = t + 1 + sizeof LANCE_TREE_DIR - 1;
    } else {
        snprintf(main_root, sizeof main_root, "%s", root);
    }
    lance_branch *b = NULL;
    size_t nb = 0;
    int rc = lance_branch_list(s, main_root, &b, &nb);
    if (rc) return rc;
    uint64_t *v = core_calloc(nb ? nb : 1, sizeof *v);
    if (!v) {
        lance_branch_list_free(b);
        return core_err_nomem();
    }
    size_t k = 0;
    for (size_t i = 0; i < nb; i++) {
        if (strcmp(b[i].parent, parent) == 0) v[k++] = b[i].parent_version;
        /* Cleaning a branch directory keeps its first manifest: its Clone transaction carries
         * the identity that opening the branch checks (branch.h). */
        else if (*parent && strcmp(b[i].name, parent) == 0)
            v[k++] = b[i].parent_version;
    }
    lance_branch_list_free(b);
    *out = v;
    *n_out = k;
    return 0;
}

/* ---- files -------------------------------------------------------------------------------- */

typedef struct sweep {
    store *s;
    const keyset *keep, *superseded;
    uint64_t now_ms, window_ms;
    bool dry_run;
    lance_cleanup_report *r;
} sweep;

static int sweep_dir(sweep *w, const char *root, const char *dir, unsigned list_flags,
                     uint64_t *counter)
{
    char prefix[STORE_KEY_MAX];
    int rc = lance_key(prefix, root, dir, NULL);
    if (rc) return rc;
    store_list l = {0};
    rc = store_list_prefix(w->s, prefix, list_flags, &l);
    if (rc == OG_E_NOT_FOUND) {
        store_list_free(&l);
        og_error_clear(); /* no such directory: nothing to sweep */
        return 0;
    }
    for (size_t i = 0; rc == 0 && i < l.count; i++) {
        const store_entry *e = &l.items[i];
        if (e->is_prefix || keyset_has(w->keep, e->key)) continue;
        int old = e->mtime_ms <= w->now_ms && w->now_ms - e->mtime_ms > w->window_ms;
        if (!keyset_has(w->superseded, e->key) && !old) {
            w->r->files_spared_recent++;
            continue;
        }
        if (!w->dry_run) {
            rc = store_delete(w->s, e->key, 0);
            if (rc) {
                core_err_prefix("cleanup of lance table '%s'", root);
                break;
            }
        }
        (*counter)++;
        w->r->bytes_deleted += e->size;
    }
    store_list_free(&l);
    return rc;
}

/* The hint names a version that must exist and be the latest we know; rewrite it otherwise
 * (a newer hint is left alone: a concurrent commit wrote it). Readers start their search for
 * the latest version at the hint (version.c). */
static int fix_hint(store *s, const char *root, const verlist *now, lance_cleanup_report *r)
{
    if (now->n == 0) return 0;
    uint64_t latest = now->v[now->n - 1].v;
    char key[STORE_KEY_MAX];
    int rc = lance_key(key, root, LANCE_VERSIONS_DIR, LANCE_HINT_NAME);
    if (rc) return rc;
    core_buf b = CORE_BUF_INIT;
    int good = 0;
    rc = store_get(s, key, 0, STORE_ALL, &b);
    if (rc == 0) {
        json_t *j = NULL;
        uint64_t hv = 0;
        /* A damaged hint is simply rewritten: readers fall back to listing on one. */
        if (core_json_parse_stored(&j, (const char *)b.data, b.len, key) == 0 &&
            core_json_u64(j, "version", &hv, OG_E_CORRUPT, key) == 0) {
            good = hv >= latest;
        }
        json_decref(j);
    }
    core_buf_free(&b);
    og_error_clear(); /* a missing or damaged hint is repaired below, not reported */
    if (good) return 0;
    rc = lance_hint_write(s, root, latest);
    if (rc == 0) r->hint_rewritten = true;
    return rc;
}

/* ---- cleanup ------------------------------------------------------------------------------ */

int lance_cleanup(store *s, const char *root, const lance_cleanup_options *opt,
                  lance_cleanup_report *out)
{
    lance_cleanup_options def = LANCE_CLEANUP_OPTIONS_INIT;
    if (!opt) opt = &def;
    lance_cleanup_report rep;
    memset(&rep, 0, sizeof rep);
    if (out) memset(out, 0, sizeof *out);
    if (opt->version != 1)
        return core_err(OG_E_BAD_REQUEST, "lance_cleanup_options version %d is not 1",
                        opt->version);
    uint64_t now = opt->now_ms ? opt->now_ms : core_wall_ms();

    store_lock *lk = NULL;
    int rc = lance_retention_lock(s, root, &lk);
    if (rc) return rc;
    keyset keep = {0}, superseded = {0};
    verlist vl = {0}, after = {0};
    lance_tag *tags = NULL;
    size_t ntags = 0;

    uint64_t *pinned = NULL;
    size_t npinned = 0;
    rc = pinned_fork_versions(s, root, &pinned, &npinned);
    if (rc == 0) rc = list_versions(s, root, &vl);
    if (rc) goto out;
    if (vl.n == 0) {
        rc = core_err(OG_E_NOT_FOUND, "lance table '%s' has no versions", root);
        core_err_detail(CORE_ERR_OBJECT, root);
        goto out;
    }
    rep.latest_version = vl.v[vl.n - 1].v;
    rc = lance_tag_list(s, root, &tags, &ntags);
    if (rc) {
        core_err_prefix("cleanup of lance table '%s' (reading its tags)", root);
        goto out;
    }

    /* Choose. */
    for (size_t i = 0; i < vl.n; i++) {
        ver *e = &vl.v[i];
        int candidate = 1;
        if (opt->before_version && e->v >= opt->before_version) candidate = 0;
        if (opt->older_than_ms >= 0) {
            uint64_t age = (uint64_t)opt->older_than_ms;
            if (e->mtime_ms > now || now - e->mtime_ms <= age) candidate = 0;
        }
        if (e->v == rep.latest_version) candidate = 0;
        for (size_t t = 0; candidate && t < ntags; t++)
            if (!tags[t].branch[0] && tags[t].version == e->v) candidate = 0;
        for (size_t p = 0; candidate && p < npinned; p++)
            if (pinned[p] == e->v) candidate = 0; /* a branch's fork point */
        e->keep = !candidate;
    }
    /* Contiguous: nothing above the oldest version kept for a tag or a fork point either, so
     * the versions kept are one run up to the latest (no gap a version search could take for
     * the end, and no deleted version number a stale writer could commit again). */
    for (size_t i = 0; opt->contiguous && i < vl.n; i++)
        if (vl.v[i].keep) {
            for (size_t k = i; k < vl.n; k++)
                vl.v[k].keep = 1;
            break;
        }

    /* What the kept versions reference (a kept manifest that cannot be read stops the run
     * before anything is deleted), and what the doomed ones did. */
    for (size_t i = 0; rc == 0 && i < vl.n; i++) {
        int gone;
        rc = load_refs(s, root, vl.naming, vl.v[i].v, vl.v[i].keep ? &keep : &superseded, &gone);
        if (rc && !vl.v[i].keep) {
            /* A damaged old manifest is still deleted; its files fall to the age rule. */
            og_error_clear();
            rc = 0;
        }
    }
    if (rc) {
        core_err_prefix("cleanup of lance table '%s'", root);
        goto out;
    }

    /* The hint first names the latest version, so that no reader probing from it (version.c)
     * starts below a gap this run is about to make between a kept old version and the
     * latest. */
    if (!opt->dry_run) rc = fix_hint(s, root, &vl, &rep);
    if (rc) goto out;

    /* Delete the manifests, oldest first. */
    for (size_t i = 0; rc == 0 && i < vl.n; i++) {
        if (vl.v[i].keep) continue;
        if (!opt->dry_run) {
            rc = store_delete(s, vl.v[i].key, 0);
            if (rc) {
                core_err_prefix("cleanup of lance table '%s'", root);
                goto out;
            }
        }
        rep.versions_deleted++;
        rep.bytes_deleted += vl.v[i].size;
    }

    /* Versions committed while we ran reference files we must keep too. */
    rc = list_versions(s, root, &after);
    if (rc) goto out;
    for (size_t i = 0; rc == 0 && i < after.n; i++) {
        int known = 0;
        for (size_t j = 0; j < vl.n && !known; j++)
            known = vl.v[j].v == after.v[i].v;
        if (!known) {
            int gone;
            rc = load_refs(s, root, after.naming, after.v[i].v, &keep, &gone);
        }
    }
    if (rc) {
        core_err_prefix("cleanup of lance table '%s'", root);
        goto out;
    }
    rep.versions_retained = opt->dry_run ? after.n - rep.versions_deleted : after.n;
    keyset_sort(&keep);
    keyset_sort(&superseded);

    sweep w = {s, &keep, &superseded, now, opt->safety_window_ms, opt->dry_run, &rep};
    /* data/ may have subdirectories in other writers' layouts: list it whole. */
    rc = sweep_dir(&w, root, "data/", 0, &rep.data_files_deleted);
    if (rc == 0)
        rc = sweep_dir(&w, root, LANCE_DELETIONS_DIR, STORE_LIST_DELIMITED,
                       &rep.deletion_files_deleted);
    if (rc == 0)
        rc = sweep_dir(&w, root, LANCE_TRANSACTIONS_DIR, STORE_LIST_DELIMITED,
                       &rep.txn_files_deleted);
    if (rc == 0)
        rc = sweep_dir(&w, root, LANCE_KIX_DIR, STORE_LIST_DELIMITED, &rep.index_files_deleted);
    if (rc == 0 && !opt->dry_run) rc = fix_hint(s, root, &after, &rep);

out:
    store_lock_release(lk);
    core_free(pinned);
    keyset_free(&keep);
    keyset_free(&superseded);
    verlist_free(&vl);
    verlist_free(&after);
    lance_tag_list_free(tags);
    if (out) *out = rep;
    return rc;
}

int lance_manifest_files_of(const lance_manifest *m, const char *root,
                            int (*fn)(void *arg, const char *key), void *arg, size_t *foreign)
{
    return lance_manifest_files(m->pb, root, fn, arg, foreign);
}
