/* Native Lance branches: fork (create), read, list, delete-if-identity-matches, and the
 * resolution of files that live under another base path (see branch.h). */
#include "lance/branch.h"
#include "lance/version.h"

#include "core/alloc.h"
#include "core/arena.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/json.h"
#include "lance/refs.h"
#include "lance/txn.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- names ---------------------------------------------------------------------------------- */

static const char lock_suffix[] = ".lock";

int lance_branch_name_check(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    const char *why = NULL;
    if (n == 0)
        why = "is empty";
    else if (n > LANCE_BRANCH_NAME_MAX)
        why = "is too long";
    else if (name[0] == '/' || name[n - 1] == '/')
        why = "may not start or end with '/'";
    else if (strstr(name, "//"))
        why = "may not contain empty segments";
    else if (strstr(name, ".."))
        why = "may not contain '..'";
    else if (n >= sizeof lock_suffix - 1 &&
             strcmp(name + n - (sizeof lock_suffix - 1), lock_suffix) == 0)
        why = "may not end with '.lock'";
    for (size_t i = 0; !why && i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_' || c == '/'))
            why = "may only contain letters, digits, '.', '-', '_' and '/'";
        /* A segment starting with '.' could collide with the store's own names. */
        else if (c == '.' && (i == 0 || name[i - 1] == '/'))
            why = "may not have a segment starting with '.'";
    }
    if (!why) return 0;
    core_err(OG_E_BAD_REQUEST, "invalid branch name '%.*s': a branch name %s",
             (int)(n > 80 ? 80 : n), name ? name : "", why);
    core_err_detail(CORE_ERR_KEY, name ? name : "");
    return OG_E_BAD_REQUEST;
}

/* root/_refs/branches/<name with '/' as %2F>.json */
static int ref_key(char out[STORE_KEY_MAX], const char *root, const char *name)
{
    char file[LANCE_BRANCH_NAME_MAX * 3 + 8];
    size_t k = 0;
    for (const char *p = name; *p; p++) {
        if (*p == '/') {
            memcpy(file + k, "%2F", 3);
            k += 3;
        } else {
            file[k++] = *p;
        }
    }
    memcpy(file + k, ".json", 6);
    return lance_key(out, root, LANCE_REFS_BRANCHES_DIR, file);
}

/* Decode a ref file name (without ".json"): 0 and the name, or -1 if it is no branch of ours
 * to read (an escape other than %2F). */
static int unescape_name(const char *file, size_t len, char out[LANCE_BRANCH_NAME_MAX + 1])
{
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        if (k == LANCE_BRANCH_NAME_MAX) return -1;
        if (file[i] == '%') {
            if (i + 2 < len && file[i + 1] == '2' && (file[i + 2] == 'F' || file[i + 2] == 'f')) {
                out[k++] = '/';
                i += 2;
                continue;
            }
            return -1;
        }
        out[k++] = file[i];
    }
    out[k] = '\0';
    return 0;
}

int lance_branch_root(char out[STORE_KEY_MAX], const char *root, const char *branch)
{
    if (!branch || !*branch) {
        size_t n = strlen(root);
        if (n >= STORE_KEY_MAX) return core_err(OG_E_BAD_REQUEST, "table root is too long");
        memcpy(out, root, n + 1);
        return 0;
    }
    char key[STORE_KEY_MAX];
    int rc = lance_key(key, root, LANCE_TREE_DIR, branch);
    if (rc) return rc;
    memcpy(out, key, strlen(key) + 1);
    return 0;
}

/* ---- base paths ----------------------------------------------------------------------------- */

/* The base path to record for the dataset directory `dir` (a key prefix). */
static int base_path_for(store *s, const char *dir, core_arena *a, char **out)
{
    const char *lr = lance_store_dir(s);
    core_buf b = CORE_BUF_INIT;
    int rc;
    if (lr) {
        char rroot[PATH_MAX];
        const char *r = realpath(lr, rroot) ? rroot : lr;
        size_t n = strlen(r);
        while (n > 1 && r[n - 1] == '/')
            n--;
        rc = core_buf_printf(&b, "%.*s%s%s", (int)n, r, dir[0] ? "/" : "", dir);
    } else {
        rc = core_buf_printf(&b, "%s", dir);
    }
    if (rc == 0) {
        *out = core_arena_strdup(a, (const char *)b.data);
        if (!*out) rc = core_err_nomem();
    }
    core_buf_free(&b);
    return rc;
}

/* ---- refs ------------------------------------------------------------------------------------ */

static int copy_str(char *dst, size_t cap, const char *src, const char *what, const char *key)
{
    size_t n = strlen(src);
    if (n >= cap) {
        core_err(OG_E_CORRUPT, "branch file %s: %s is too long", key, what);
        core_err_detail(CORE_ERR_OBJECT, key);
        return OG_E_CORRUPT;
    }
    memcpy(dst, src, n + 1);
    return 0;
}

/* Parse stored ref bytes (b->name already set). *jout (may be NULL) receives the JSON. */
static int ref_parse(lance_branch *b, const void *data, size_t len, const char *key, json_t **jout)
{
    if (jout) *jout = NULL;
    json_t *j = NULL;
    int rc = core_json_parse_stored(&j, data, len, key);
    if (rc) return rc;
    if (!json_is_object(j)) {
        rc = core_err(OG_E_CORRUPT, "branch file %s is not a JSON object", key);
        goto out;
    }
    rc = core_json_u64(j, "parentVersion", &b->parent_version, OG_E_CORRUPT, key);
    if (!rc) rc = core_json_u64(j, "manifestSize", &b->manifest_size, OG_E_CORRUPT, key);
    if (rc) goto out;
    if (b->parent_version == 0) {
        rc = core_err(OG_E_CORRUPT, "branch file %s names version 0", key);
        goto out;
    }
    json_t *v = json_object_get(j, "createAt");
    b->create_at =
        v && json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
    b->parent[0] = '\0';
    v = json_object_get(j, "parentBranch");
    if (v && json_is_string(v)) {
        rc = copy_str(b->parent, sizeof b->parent, json_string_value(v), "parentBranch", key);
        if (!rc && lance_branch_name_check(b->parent) != 0) {
            og_error_clear();
            rc = core_err(OG_E_CORRUPT, "branch file %s names an invalid parent branch", key);
        }
        if (rc) goto out;
    } else if (v && !json_is_null(v)) {
        rc = core_err(OG_E_CORRUPT,
                      "branch file %s: \"parentBranch\" is neither null nor a "
                      "string",
                      key);
        goto out;
    }
    b->parent_identity[0] = '\0';
    v = json_object_get(j, "ogIdentity");
    if (v && json_is_string(v)) {
        b->foreign = 0;
        rc = copy_str(b->identity, sizeof b->identity, json_string_value(v), "ogIdentity", key);
        if (rc) goto out;
        json_t *lin = json_object_get(j, "ogLineage");
        size_t n = lin && json_is_array(lin) ? json_array_size(lin) : 0;
        if (n >= 2) {
            json_t *pid = json_object_get(json_array_get(lin, n - 2), "identity");
            if (pid && json_is_string(pid))
                rc = copy_str(b->parent_identity, sizeof b->parent_identity, json_string_value(pid),
                              "parent identity", key);
        }
    } else {
        b->foreign = 1;
        snprintf(b->identity, sizeof b->identity, "h%016" PRIx64, core_hash64(data, len, 0));
    }
out:
    if (rc) {
        core_err_detail(CORE_ERR_OBJECT, key);
        json_decref(j);
    } else if (jout) {
        *jout = j;
    } else {
        json_decref(j);
    }
    return rc;
}

static int ref_read(store *s, const char *root, const char *name, lance_branch *out, json_t **j)
{
    char key[STORE_KEY_MAX];
    int rc = ref_key(key, root, name);
    if (rc) return rc;
    core_buf b = CORE_BUF_INIT;
    rc = store_get(s, key, 0, STORE_ALL, &b);
    if (rc == OG_E_NOT_FOUND) {
        core_buf_free(&b);
        core_err(OG_E_NOT_FOUND, "lance table '%s' has no branch '%s'", root, name);
        core_err_detail(CORE_ERR_OBJECT, key);
        core_err_detail(CORE_ERR_KEY, name);
        return OG_E_NOT_FOUND;
    }
    if (rc == 0) {
        memset(out, 0, sizeof *out);
        snprintf(out->name, sizeof out->name, "%s", name);
        rc = ref_parse(out, b.data, b.len, key, j);
    }
    core_buf_free(&b);
    return rc;
}

int lance_branch_get(store *s, const char *root, const char *name, lance_branch *out)
{
    int rc = lance_branch_name_check(name);
    if (rc) return rc;
    return ref_read(s, root, name, out, NULL);
}

void lance_branch_list_free(lance_branch *b)
{
    core_free(b);
}

/* A ref file's name is the branch's with '/' as %2F; one that is no valid branch name was not
 * written as a branch. */
static int branch_name_of(const char *file, size_t len, char *name, size_t cap)
{
    if (cap < LANCE_BRANCH_NAME_MAX + 1 || unescape_name(file, len, name) != 0) return -1;
    if (lance_branch_name_check(name) == 0) return 0;
    og_error_clear();
    return -1;
}

static int ref_read_any(store *s, const char *root, const char *name, void *out)
{
    return ref_read(s, root, name, out, NULL);
}

int lance_branch_list(store *s, const char *root, lance_branch **out, size_t *n)
{
    void *all = NULL;
    int rc = lance_refs_list(s, root, LANCE_REFS_BRANCHES_DIR, sizeof **out, branch_name_of,
                             ref_read_any, &all, n);
    *out = all;
    return rc;
}

int lance_branch_find_under(store *s, const char *root, const char *name,
                            char out[LANCE_BRANCH_NAME_MAX + 1])
{
    out[0] = '\0';
    int rc = lance_branch_name_check(name);
    if (rc) return rc;
    char dir[STORE_KEY_MAX], prefix[STORE_KEY_MAX];
    rc = lance_branch_root(dir, root, name);
    if (rc == 0) rc = lance_key(prefix, dir, "", NULL);
    store_list l = {0};
    if (rc == 0) rc = store_list_prefix(s, prefix, STORE_LIST_DELIMITED, &l);
    if (rc == OG_E_NOT_FOUND) {
        og_error_clear();
        rc = 0;
    }
    bool files = l.count > 0;
    store_list_free(&l);
    if (rc || !files) return rc;
    /* Files below: the refs whose key starts with the name's and an escaped '/' (lance writes
     * %2F; %2f is read too, as unescape_name does). */
    char key[STORE_KEY_MAX];
    rc = ref_key(key, root, name);
    if (rc) return rc;
    size_t kl = strlen(key) - 5; /* without ".json" */
    static const char *const slash[] = {"%2F", "%2f"};
    for (size_t v = 0; rc == 0 && !out[0] && v < 2; v++) {
        if (kl + 4 > sizeof prefix) return core_err(OG_E_BAD_REQUEST, "branch name is too long");
        memcpy(prefix, key, kl);
        memcpy(prefix + kl, slash[v], 4);
        store_list refs = {0};
        rc = store_list_prefix(s, prefix, 0, &refs);
        if (rc == OG_E_NOT_FOUND) {
            og_error_clear();
            rc = 0;
        }
        const char *file0 = strrchr(prefix, '/') + 1; /* the ref file names start here */
        size_t off = (size_t)(file0 - prefix);
        for (size_t i = 0; rc == 0 && !out[0] && i < refs.count; i++) {
            const char *file = refs.items[i].key + off;
            size_t fl = strlen(file);
            if (refs.items[i].is_prefix || fl <= 5 || strcmp(file + fl - 5, ".json") != 0) continue;
            char below[LANCE_BRANCH_NAME_MAX + 1];
            if (branch_name_of(file, fl - 5, below, sizeof below) == 0)
                memcpy(out, below, strlen(below) + 1);
        }
        store_list_free(&refs);
    }
    return rc;
}

/* ---- open ------------------------------------------------------------------------------------ */

/* Does the directory of branch b belong to this ref? Its first manifest (version
 * parent_version, named like `have`) must have been made by the Clone transaction whose uuid
 * is the identity. */
static int check_incarnation(store *s, const char *root, const char *dir, const lance_branch *b,
                             const lance_manifest *have, lance_naming naming)
{
    if (b->foreign) return 0; /* no identity recorded in the directory to compare */
    lance_manifest *m = NULL;
    int rc = 0;
    if (!have || have->pb->version != b->parent_version)
        rc = lance_version_load(s, dir, b->parent_version, naming, LANCE_ACCESS_INSPECT, &m);
    Lance__Table__Transaction *t = NULL;
    if (rc == 0) rc = lance_txn_load(s, dir, m ? m : have, &t);
    int same = rc == 0 && t->operation_case == LANCE__TABLE__TRANSACTION__OPERATION_CLONE &&
               t->uuid && strcmp(t->uuid, b->identity) == 0;
    lance_pb_free(t);
    lance_manifest_free(m);
    if (rc && rc != OG_E_NOT_FOUND) return rc;
    if (rc == OG_E_NOT_FOUND) {
        /* The first version is gone. A branch deleted (or replaced) meanwhile has no ref of
         * this identity any more; while the ref still names it, its first version was lost. */
        lance_branch now;
        int r2 = lance_branch_get(s, root, b->name, &now);
        if (r2 == 0 && strcmp(now.identity, b->identity) == 0) {
            char name[LANCE_VERSION_NAME_CAP], key[STORE_KEY_MAX];
            if (lance_version_file_name(name, sizeof name, naming, b->parent_version) != 0 ||
                lance_key(key, dir, LANCE_VERSIONS_DIR, name) != 0)
                snprintf(key, sizeof key, "%s", dir);
            core_err(OG_E_CORRUPT,
                     "branch '%s': its first version %" PRIu64
                     " (%s) is missing while its ref names it: a version file was lost",
                     b->name, b->parent_version, key);
            core_err_detail(CORE_ERR_OBJECT, key);
            core_err_detail(CORE_ERR_KEY, b->name);
            return OG_E_CORRUPT;
        }
        if (r2 != 0 && r2 != OG_E_NOT_FOUND) return r2;
    }
    if (!same) {
        og_error_clear();
        core_err(OG_E_CONFLICT,
                 "branch '%s' was replaced while it was being read (its directory "
                 "'%s' does not belong to identity %s); open it again",
                 b->name, dir, b->identity);
        core_err_detail(CORE_ERR_OBJECT, dir);
        core_err_detail(CORE_ERR_KEY, b->name);
        return OG_E_CONFLICT;
    }
    return 0;
}

static int open_at(lance_dataset **out, store *s, const char *root, const char *branch,
                   uint64_t version, const char *identity, lance_access access, int depth);

/* Open the branch whose ref b the caller read. */
static int open_ref(lance_dataset **out, store *s, const char *root, const lance_branch *b,
                    uint64_t version, lance_access access, int depth)
{
    *out = NULL;
    const char *branch = b->name;
    if (version != 0 && version < b->parent_version) {
        if (access == LANCE_ACCESS_WRITE) {
            core_err(OG_E_BAD_REQUEST,
                     "branch '%s' starts at version %" PRIu64 "; version %" PRIu64
                     " is its parent's and cannot be written on the branch",
                     branch, b->parent_version, version);
            core_err_detail(CORE_ERR_KEY, branch);
            return OG_E_BAD_REQUEST;
        }
        return open_at(out, s, root, b->parent, version, NULL, access, depth + 1);
    }
    char dir[STORE_KEY_MAX];
    int rc = lance_branch_root(dir, root, branch);
    if (rc) return rc;
    if (version == 0) {
        /* The latest: from the hint, or else probing on from the branch's first version, which
         * the ref names (a fresh branch has no hint of its own: lance_branch_create). */
        lance_naming nm = LANCE_NAMING_UNKNOWN;
        lance_manifest *m = NULL;
        rc = lance_version_latest_above(s, dir, b->parent_version, &version, &nm);
        if (rc == 0) rc = lance_version_load(s, dir, version, nm, access, &m);
        if (rc == 0) rc = lance_dataset_from_manifest(out, s, dir, nm, m);
    } else {
        rc = lance_dataset_open(out, s, dir, version, access);
    }
    if (rc == OG_E_NOT_FOUND) {
        core_err_prefix("branch '%s'", branch);
        return rc;
    }
    if (rc == 0) rc = check_incarnation(s, root, dir, b, (*out)->m, (*out)->naming);
    if (rc) {
        lance_dataset_free(*out);
        *out = NULL;
    }
    return rc;
}

static int open_at(lance_dataset **out, store *s, const char *root, const char *branch,
                   uint64_t version, const char *identity, lance_access access, int depth)
{
    *out = NULL;
    if (!branch || !*branch) return lance_dataset_open(out, s, root, version, access);
    if (depth > LANCE_BRANCH_MAX_DEPTH)
        return core_err(OG_E_CORRUPT,
                        "lance table '%s': branch '%s' is forked more than %d "
                        "levels deep (a cycle?)",
                        root, branch, LANCE_BRANCH_MAX_DEPTH);
    lance_branch b;
    int rc = lance_branch_get(s, root, branch, &b);
    if (rc) return rc;
    if (identity && strcmp(identity, b.identity) != 0) {
        core_err(OG_E_PRECONDITION_FAILED,
                 "branch '%s' of lance table '%s' changed: identity "
                 "%s, expected %s",
                 branch, root, b.identity, identity);
        core_err_detail(CORE_ERR_KEY, branch);
        core_err_detail(CORE_ERR_EXPECTED, identity);
        core_err_detail(CORE_ERR_ACTUAL, b.identity);
        return OG_E_PRECONDITION_FAILED;
    }
    return open_ref(out, s, root, &b, version, access, depth);
}

int lance_branch_open(lance_dataset **out, store *s, const char *root, const char *branch,
                      uint64_t version, const char *identity, lance_access access)
{
    return open_at(out, s, root, branch, version, identity, access, 0);
}

int lance_branch_open_ref(lance_dataset **out, store *s, const char *root, const lance_branch *ref,
                          uint64_t version, lance_access access)
{
    return open_ref(out, s, root, ref, version, access, 0);
}

static int same_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

int lance_branch_check_base(store *s, const char *dir, lance_naming naming,
                            const lance_manifest *base)
{
    const Lance__Table__Manifest *bp = base->pb;
    lance_manifest *m = NULL;
    int rc = lance_version_load(s, dir, bp->version, naming, LANCE_ACCESS_INSPECT, &m);
    if (rc && rc != OG_E_NOT_FOUND) return rc;
    /* A version's identity is its transaction (which carries a uuid): inline, or the file. */
    int same = rc == 0 && same_str(m->pb->transaction_file, bp->transaction_file) &&
               same_str(m->pb->branch, bp->branch) && m->txn_len == base->txn_len &&
               (!m->txn_len || memcmp(m->txn, base->txn, m->txn_len) == 0);
    if (same && !base->txn_len && (!bp->transaction_file || !bp->transaction_file[0])) {
        /* No transaction to tell versions apart: compare their timestamps. */
        const Lance__Table__Timestamp *x = m->pb->timestamp, *y = bp->timestamp;
        same = (!x && !y) || (x && y && x->seconds == y->seconds && x->nanos == y->nanos);
    }
    lance_manifest_free(m);
    if (!same) {
        og_error_clear();
        core_err(OG_E_CONFLICT,
                 "branch '%s' was deleted or re-created since this write read "
                 "version %" PRIu64 "; re-open the branch and stage again",
                 bp->branch ? bp->branch : "", bp->version);
        core_err_detail(CORE_ERR_OBJECT, dir);
        return OG_E_CONFLICT;
    }
    return 0;
}

/* ---- create -----------------------------------------------------------------------------------
 */

/* Remove the files of branch directory dir that belong to the branch itself (not the
 * directories of branches nested under it): the immediate children of its _versions/,
 * _transactions/, _deletions/ and data/, and everything under _indices/. */
/* _versions/ goes last: while any file of a branch directory is left, one of its versions is
 * (a create writes its first version before anything else), so a look at _versions/ alone
 * tells whether there is anything to clear (branch_has_files). */
static int clear_branch_files(store *s, const char *dir)
{
    static const char *const subs[] = {"_transactions/", "_deletions/", "data/", "_indices/",
                                       LANCE_VERSIONS_DIR};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof subs / sizeof subs[0]; i++) {
        char prefix[STORE_KEY_MAX];
        rc = lance_key(prefix, dir, subs[i], NULL);
        if (rc) break;
        store_list l = {0};
        int deep = strcmp(subs[i], "_indices/") == 0;
        rc = store_list_prefix(s, prefix, deep ? 0 : STORE_LIST_DELIMITED, &l);
        if (rc == OG_E_NOT_FOUND) {
            og_error_clear();
            rc = 0;
        }
        for (size_t k = 0; rc == 0 && k < l.count; k++)
            if (!l.items[k].is_prefix) rc = store_delete(s, l.items[k].key, 0);
        store_list_free(&l);
    }
    return rc;
}

/* Whether the branch directory dir holds any version (and so possibly other files). */
static int branch_has_files(store *s, const char *dir, bool *any)
{
    char prefix[STORE_KEY_MAX];
    *any = false;
    int rc = lance_key(prefix, dir, LANCE_VERSIONS_DIR, NULL);
    store_list l = {0};
    if (rc == 0) rc = store_list_prefix(s, prefix, STORE_LIST_DELIMITED, &l);
    if (rc == OG_E_NOT_FOUND) {
        og_error_clear();
        rc = 0;
    }
    *any = l.count > 0;
    store_list_free(&l);
    return rc;
}

/* Take the locks of ref keys a and b (b may be NULL) in byte order. */
static int lock_pair(store *s, const char *a, const char *b, store_lock **la, store_lock **lb)
{
    *la = *lb = NULL;
    const char *first = a, *second = b;
    if (b && strcmp(b, a) < 0) first = b, second = a;
    store_lock *l1 = NULL, *l2 = NULL;
    int rc = store_lock_acquire(s, first, STORE_LOCK_WAIT_FOREVER, &l1);
    if (rc == 0 && second) rc = store_lock_acquire(s, second, STORE_LOCK_WAIT_FOREVER, &l2);
    if (rc) {
        if (l1) store_lock_release(l1);
        return rc;
    }
    *la = l1;
    *lb = l2;
    return 0;
}

/* Give index metadata without a base id the new base id (IndexSection bytes in, out). */
static int rebase_indices(const void *in, size_t len, uint32_t base_id, core_buf *out,
                          const char *object)
{
    ProtobufCMessage *msg = NULL;
    int rc = lance_pb_unpack(&msg, &lance__table__index_section__descriptor, in, len,
                             "index section", object);
    if (rc) return rc;
    Lance__Table__IndexSection *sec = (Lance__Table__IndexSection *)msg;
    for (size_t i = 0; i < sec->n_indices; i++) {
        if (!sec->indices[i]->has_base_id) {
            sec->indices[i]->has_base_id = 1;
            sec->indices[i]->base_id = base_id;
        }
    }
    rc = lance_pb_pack(out, msg);
    lance_pb_free(msg);
    return rc;
}

/* The lineage to record for a new branch: the parent's (or a one-element stand-in for a
 * foreign parent) plus this fork. */
static int build_lineage(json_t **out, const char *name, const char *from, uint64_t version,
                         const char *identity, const lance_branch *pb, json_t *pj)
{
    json_t *lin = NULL;
    json_t *plin = pj ? json_object_get(pj, "ogLineage") : NULL;
    if (plin && json_is_array(plin)) {
        lin = json_deep_copy(plin);
    } else {
        lin = json_array();
        if (lin && pb) {
            json_t *e =
                json_pack("{s:s, s:o, s:I, s:s}", "branch", pb->name, "parentBranch",
                          pb->parent[0] ? json_string(pb->parent) : json_null(), "parentVersion",
                          (json_int_t)pb->parent_version, "identity", pb->identity);
            if (!e || json_array_append_new(lin, e) != 0) {
                json_decref(lin);
                lin = NULL;
            }
        }
    }
    json_t *e = lin ? json_pack("{s:s, s:o, s:I, s:s}", "branch", name, "parentBranch",
                                from ? json_string(from) : json_null(), "parentVersion",
                                (json_int_t)version, "identity", identity)
                    : NULL;
    if (!e || json_array_append_new(lin, e) != 0) {
        json_decref(lin);
        return core_err_nomem();
    }
    *out = lin;
    return 0;
}

/* Write the branch's first manifest: the source manifest shallow-cloned (see branch.h). */
static int write_fork_manifest(store *s, const char *dir, const char *name,
                               const lance_dataset *src, const char *identity, core_arena *a,
                               unsigned flags, lance_commit_info *info)
{
    const Lance__Table__Manifest *sp = src->m->pb;
    uint64_t P = sp->version;
    uint32_t new_id = 0;
    for (size_t i = 0; i < sp->n_base_paths; i++)
        if (sp->base_paths[i]->id + 1 > new_id) new_id = sp->base_paths[i]->id + 1;
    char *path = NULL;
    int rc = base_path_for(s, src->root, a, &path);
    if (rc) return rc;

    lance_manifest_next next;
    lance_manifest_next_init(&next, sp, P);
    Lance__Table__DataFragment **frags =
        core_arena_alloc(a, (sp->n_fragments ? sp->n_fragments : 1) * sizeof *frags);
    Lance__Table__BasePath **bases = core_arena_alloc(a, (sp->n_base_paths + 1) * sizeof *bases);
    Lance__Table__BasePath *nb = core_arena_alloc(a, sizeof *nb);
    char *bname = core_arena_strdup(a, name);
    if (!frags || !bases || !nb || !bname) return core_err_nomem();
    for (size_t i = 0; i < sp->n_fragments; i++) {
        const Lance__Table__DataFragment *f = sp->fragments[i];
        Lance__Table__DataFragment *c = core_arena_alloc(a, sizeof *c);
        Lance__Table__DataFile **files =
            core_arena_alloc(a, (f->n_files ? f->n_files : 1) * sizeof *files);
        if (!c || !files) return core_err_nomem();
        *c = *f;
        for (size_t k = 0; k < f->n_files; k++) {
            Lance__Table__DataFile *df = core_arena_alloc(a, sizeof *df);
            if (!df) return core_err_nomem();
            *df = *f->files[k];
            if (!df->has_base_id) {
                df->has_base_id = 1;
                df->base_id = new_id;
            }
            files[k] = df;
        }
        c->files = files;
        if (f->deletion_file) {
            Lance__Table__DeletionFile *del = core_arena_alloc(a, sizeof *del);
            if (!del) return core_err_nomem();
            *del = *f->deletion_file;
            if (!del->has_base_id) {
                del->has_base_id = 1;
                del->base_id = new_id;
            }
            c->deletion_file = del;
        }
        frags[i] = c;
    }
    next.pb.fragments = frags;
    if (sp->n_base_paths) memcpy(bases, sp->base_paths, sp->n_base_paths * sizeof *bases);
    lance__table__base_path__init(nb);
    nb->has_id = 1;
    nb->id = new_id;
    nb->name = sp->branch; /* the source branch (NULL: main) */
    nb->has_is_dataset_root = 1;
    nb->is_dataset_root = 1;
    nb->path = path;
    bases[sp->n_base_paths] = nb;
    next.pb.n_base_paths = sp->n_base_paths + 1;
    next.pb.base_paths = bases;
    next.pb.branch = bname;
    next.pb.has_reader_feature_flags = next.pb.has_writer_feature_flags = 1;
    next.pb.reader_feature_flags |= LANCE_FLAG_BASE_PATHS;
    next.pb.writer_feature_flags |= LANCE_FLAG_BASE_PATHS;
    lance_manifest_update_flags(&next.pb);

    Lance__Table__Transaction txn = LANCE__TABLE__TRANSACTION__INIT;
    Lance__Table__Transaction__Clone cl = LANCE__TABLE__TRANSACTION__CLONE__INIT;
    txn.has_read_version = 1;
    txn.read_version = P;
    txn.uuid = (char *)identity;
    cl.has_is_shallow = 1;
    cl.is_shallow = 1;
    cl.ref_name = sp->branch;
    cl.has_ref_version = 1;
    cl.ref_version = P;
    cl.ref_path = path;
    cl.branch_name = bname;
    txn.operation_case = LANCE__TABLE__TRANSACTION__OPERATION_CLONE;
    txn.clone = &cl;

    core_buf idx = CORE_BUF_INIT;
    if (src->m->index && src->m->index_len)
        rc = rebase_indices(src->m->index, src->m->index_len, new_id, &idx, src->root);
    if (rc == 0)
        rc = lance_commit_pending_on(s, dir, src->naming, &next.pb, NULL, src->m, &txn,
                                     idx.len ? idx.data : NULL, idx.len, flags, NULL, 0, info);
    core_buf_free(&idx);
    return rc;
}

int lance_branch_create(store *s, const char *root, const char *name, const char *from,
                        uint64_t version, lance_branch *out)
{
    return lance_branch_create_ex(s, root, name, from, version, NULL, out, NULL);
}

/* The new branch at its first version, from the manifest bytes its create wrote. */
static int fork_dataset(lance_dataset **out, store *s, const char *dir, lance_naming naming,
                        const lance_commit_info *info)
{
    lance_manifest *m = NULL;
    int rc =
        lance_manifest_decode(&m, info->manifest_bytes, info->manifest_len, info->manifest_key);
    if (rc == 0) rc = lance_dataset_from_manifest(out, s, dir, naming, m);
    return rc;
}

int lance_branch_create_ex(store *s, const char *root, const char *name, const char *from,
                           uint64_t version, const lance_dataset *source, lance_branch *out,
                           lance_dataset **out_ds)
{
    if (out_ds) *out_ds = NULL;
    int rc = lance_branch_name_check(name);
    if (rc) return rc;
    if (from && !*from) from = NULL;
    if (from) {
        rc = lance_branch_name_check(from);
        if (rc) return rc;
        if (strcmp(from, name) == 0)
            return core_err(OG_E_BAD_REQUEST, "branch '%s' cannot be forked from itself", name);
    }
    char key[STORE_KEY_MAX], pkey[STORE_KEY_MAX], dir[STORE_KEY_MAX], sdir[STORE_KEY_MAX];
    rc = ref_key(key, root, name);
    if (rc == 0 && from) rc = ref_key(pkey, root, from);
    if (rc == 0) rc = lance_branch_root(dir, root, name);
    if (rc == 0) rc = lance_branch_root(sdir, root, from);
    if (rc) return rc;
    /* A source snapshot is taken only if it is what opening `from` at its version would give
     * (a version of `from` in its own directory); otherwise the source is opened below. */
    if (source &&
        (strcmp(source->root, sdir) != 0 || (version && version != lance_dataset_version(source)) ||
         strcmp(source->m->pb->branch ? source->m->pb->branch : "", from ? from : "")))
        source = NULL;

    /* Our name's lock (so no other creator or deleter of it on this host is running), the
     * parent's (so it cannot be deleted while we fork from it), then the table's retention
     * lock (so cleanup cannot remove the source version under us). */
    store_lock *lk = NULL, *plk = NULL, *rlk = NULL;
    rc = lock_pair(s, key, from ? pkey : NULL, &lk, &plk);
    if (rc) return rc;
    rc = lance_retention_lock(s, root, &rlk);

    /* Files under the name: a live branch's, or leftovers of a crashed create or delete of the
     * name (no ref names them). A ref is written after its branch's first version and removed
     * before its files, so a branch whose directory holds no version has no ref either: only
     * when there are files is the ref looked at (and the publish of the ref below is
     * conditional anyway). */
    bool leftovers = false;
    if (rc == 0) rc = branch_has_files(s, dir, &leftovers);
    store_meta meta;
    if (rc == 0 && leftovers) {
        int h = store_head(s, key, &meta);
        if (h == 0) {
            core_err(OG_E_EXISTS, "lance table '%s' already has a branch '%s'", root, name);
            core_err_detail(CORE_ERR_OBJECT, key);
            core_err_detail(CORE_ERR_KEY, name);
            rc = OG_E_EXISTS;
        } else if (h != OG_E_NOT_FOUND) {
            rc = h;
        } else {
            og_error_clear();
        }
    }
    lance_branch parent;
    json_t *pj = NULL;
    if (rc == 0 && from) {
        rc = ref_read(s, root, from, &parent, &pj);
        if (rc == OG_E_NOT_FOUND) core_err_prefix("cannot fork branch '%s'", name);
    }
    /* The source: the caller's snapshot (it holds that version: cleanup keeps it while the
     * caller runs, see branch.h), or opened here under the retention lock. */
    lance_dataset *opened = NULL;
    const lance_dataset *src = source;
    if (rc == 0) {
        if (!src) {
            rc = open_at(&opened, s, root, from, version, NULL, LANCE_ACCESS_INSPECT, 0);
            src = opened;
        }
        if (rc == 0) rc = lance_manifest_check(src->m->pb, LANCE_ACCESS_WRITE, src->root);
        if (rc) core_err_prefix("cannot fork branch '%s'", name);
    }
    char identity[LANCE_UUID_LEN + 1];
    if (rc == 0) rc = lance_uuid_new(identity);
    core_arena a;
    core_arena_init(&a, 4096);
    if (rc == 0 && leftovers) rc = clear_branch_files(s, dir);
    /* No hint is written: a reader finds a branch's latest from its ref (the first version) when
     * the directory has no hint yet (lance_branch_open), and its commits write hints as on
     * main (txn.h). */
    lance_commit_info info;
    memset(&info, 0, sizeof info);
    bool forked = false;
    if (rc == 0) {
        rc = write_fork_manifest(s, dir, name, src, identity, &a,
                                 out_ds ? LANCE_COMMIT_KEEP_BYTES : 0, &info);
        forked = rc == 0;
        if (rc == OG_E_CONFLICT) {
            core_err(OG_E_EXISTS, "branch '%s' of lance table '%s' was created concurrently", name,
                     root);
            core_err_detail(CORE_ERR_KEY, name);
            rc = OG_E_EXISTS;
        }
    }
    json_t *lin = NULL, *ref = NULL;
    core_buf b = CORE_BUF_INIT;
    uint64_t P = src ? lance_dataset_version(src) : 0;
    if (rc == 0) rc = build_lineage(&lin, name, from, P, identity, from ? &parent : NULL, pj);
    if (rc == 0) {
        /* lance's fields (camelCase), then ours, which lance ignores. */
        ref = json_pack("{s:o, s:I, s:I, s:I, s:{}, s:s, s:o}", "parentBranch",
                        from ? json_string(from) : json_null(), "parentVersion", (json_int_t)P,
                        "createAt", (json_int_t)time(NULL), "manifestSize",
                        (json_int_t)src->m->file_size, "metadata", "ogIdentity", identity,
                        "ogLineage", lin);
        lin = NULL; /* stolen by "o" */
        if (!ref) rc = core_err_nomem();
    }
    if (rc == 0) rc = core_json_dump(ref, &b);
    if (rc == 0) {
        rc = store_put_if_absent(s, key, b.data, b.len, 0);
        if (rc == OG_E_EXISTS) {
            /* A ref without a version of its own (written by another engine, or by a creator
             * elsewhere that raced us): the version we wrote is not ours to leave there. */
            if (forked && store_delete(s, info.manifest_key, 0) != 0)
                og_error_clear(); /* invisible without our ref; cleared with the name's files */
            core_err(OG_E_EXISTS, "lance table '%s' already has a branch '%s'", root, name);
            core_err_detail(CORE_ERR_OBJECT, key);
            core_err_detail(CORE_ERR_KEY, name);
        }
    }
    if (rc == 0 && out) {
        memset(out, 0, sizeof *out);
        snprintf(out->name, sizeof out->name, "%s", name);
        rc = ref_parse(out, b.data, b.len, key, NULL);
    }
    /* The branch stands once its ref does: a failure to hand back its snapshot is the
     * caller's to recover from by opening it. */
    if (rc == 0 && out_ds && fork_dataset(out_ds, s, dir, src->naming, &info) != 0) {
        og_error_clear();
        *out_ds = NULL;
    }
    core_free(info.manifest_bytes);
    core_buf_free(&b);
    json_decref(ref);
    json_decref(lin);
    json_decref(pj);
    lance_dataset_free(opened);
    core_arena_free(&a);
    if (rlk) store_lock_release(rlk);
    if (plk) store_lock_release(plk);
    if (lk) store_lock_release(lk);
    return rc;
}

/* ---- delete -----------------------------------------------------------------------------------
 */

int lance_branch_delete(store *s, const char *root, const char *name, const char *identity)
{
    int rc = lance_branch_name_check(name);
    if (rc) return rc;
    char key[STORE_KEY_MAX], dir[STORE_KEY_MAX];
    rc = ref_key(key, root, name);
    if (rc == 0) rc = lance_branch_root(dir, root, name);
    if (rc) return rc;
    /* Every creator and deleter of this name (and every creator forking from it) on this
     * host holds this lock, and nobody replaces an existing ref, so between our re-read and
     * our delete the ref cannot change. */
    store_lock *lk = NULL;
    rc = store_lock_acquire(s, key, STORE_LOCK_WAIT_FOREVER, &lk);
    if (rc) return rc;
    lance_branch b;
    rc = ref_read(s, root, name, &b, NULL);
    if (rc == 0 && identity && strcmp(identity, b.identity) != 0) {
        core_err(OG_E_PRECONDITION_FAILED,
                 "branch '%s' of lance table '%s' changed: identity %s, expected %s", name, root,
                 b.identity, identity);
        core_err_detail(CORE_ERR_OBJECT, key);
        core_err_detail(CORE_ERR_KEY, name);
        core_err_detail(CORE_ERR_EXPECTED, identity);
        core_err_detail(CORE_ERR_ACTUAL, b.identity);
        rc = OG_E_PRECONDITION_FAILED;
    }
    if (rc == 0) {
        lance_branch *all = NULL;
        size_t n = 0;
        rc = lance_branch_list(s, root, &all, &n);
        for (size_t i = 0; rc == 0 && i < n; i++) {
            if (strcmp(all[i].parent, name) != 0) continue;
            core_err(OG_E_PRECONDITION_FAILED,
                     "branch '%s' of lance table '%s' cannot be "
                     "deleted: branch '%s' was forked from it and reads its files",
                     name, root, all[i].name);
            core_err_detail(CORE_ERR_KEY, name);
            rc = OG_E_PRECONDITION_FAILED;
        }
        lance_branch_list_free(all);
    }
    /* The ref goes first: from then on the branch is gone and its files are unreferenced. */
    if (rc == 0) rc = store_delete(s, key, 0);
    /* Removing the files is housekeeping: the branch is already gone. Files a failure (or a
     * crash) leaves are invisible and are cleared when the name is created again. */
    if (rc == 0 && clear_branch_files(s, dir) != 0) og_error_clear();
    store_lock_release(lk);
    return rc;
}

/* ---- rebuilding a lost ref ------------------------------------------------------------------ */

int lance_branch_ref_key(char out[STORE_KEY_MAX], const char *root, const char *name)
{
    int rc = lance_branch_name_check(name);
    return rc ? rc : ref_key(out, root, name);
}

int lance_branch_ref_rebuild(store *s, const char *root, const char *name, bool write,
                             lance_branch *out)
{
    int rc = lance_branch_name_check(name);
    if (rc) return rc;
    char key[STORE_KEY_MAX], dir[STORE_KEY_MAX];
    if ((rc = ref_key(key, root, name)) != 0 || (rc = lance_branch_root(dir, root, name)) != 0)
        return rc;
    lance_version_list l;
    if ((rc = lance_versions_list(s, dir, &l)) != 0) return rc;
    if (l.n == 0) {
        lance_version_list_free(&l);
        core_err(OG_E_NOT_FOUND, "lance table '%s' has no files of a branch '%s'", root, name);
        core_err_detail(CORE_ERR_OBJECT, dir);
        return OG_E_NOT_FOUND;
    }
    uint64_t first = l.v[0];
    lance_naming naming = l.naming;
    lance_version_list_free(&l);
    lance_manifest *m = NULL;
    Lance__Table__Transaction *t = NULL;
    rc = lance_version_load(s, dir, first, naming, LANCE_ACCESS_INSPECT, &m);
    if (rc == 0) rc = lance_txn_load(s, dir, m, &t);
    if (rc == 0 && (t->operation_case != LANCE__TABLE__TRANSACTION__OPERATION_CLONE || !t->clone ||
                    !t->uuid || !*t->uuid || strlen(t->uuid) >= LANCE_BRANCH_IDENTITY_CAP ||
                    !t->clone->has_ref_version || t->clone->ref_version != first ||
                    (t->clone->branch_name && strcmp(t->clone->branch_name, name) != 0))) {
        rc = core_err(OG_E_CORRUPT,
                      "branch '%s' of lance table '%s': its first version %" PRIu64
                      " is not the fork its create wrote, so what its ref said cannot be proved",
                      name, root, first);
        core_err_detail(CORE_ERR_OBJECT, dir);
    }
    char from[LANCE_BRANCH_NAME_MAX + 1] = "", identity[LANCE_BRANCH_IDENTITY_CAP] = "";
    if (rc == 0 && t->clone->ref_name && *t->clone->ref_name) {
        if (strlen(t->clone->ref_name) >= sizeof from ||
            lance_branch_name_check(t->clone->ref_name) != 0) {
            og_error_clear();
            rc = core_err(OG_E_CORRUPT,
                          "branch '%s' of lance table '%s': its fork names an invalid "
                          "source branch",
                          name, root);
        } else {
            snprintf(from, sizeof from, "%s", t->clone->ref_name);
        }
    }
    if (rc == 0) snprintf(identity, sizeof identity, "%s", t->uuid);
    lance_pb_free(t);
    lance_manifest_free(m);
    if (rc) return rc;
    /* The source's ref (its lineage is the start of ours) and the size of the source version's
     * manifest (lance's manifestSize); the fork's own file time stands for createAt. */
    lance_branch parent;
    json_t *pj = NULL;
    bool have_parent = false;
    if (from[0]) {
        if (ref_read(s, root, from, &parent, &pj) == 0)
            have_parent = true;
        else
            og_error_clear(); /* a lineage of this fork alone */
    }
    char sdir[STORE_KEY_MAX], fname[LANCE_VERSION_NAME_CAP], skey[STORE_KEY_MAX];
    store_meta meta;
    uint64_t msize = 0, created = 0;
    if (lance_branch_root(sdir, root, from[0] ? from : NULL) == 0 &&
        lance_version_file_name(fname, sizeof fname, naming, first) == 0 &&
        lance_key(skey, sdir, LANCE_VERSIONS_DIR, fname) == 0 && store_head(s, skey, &meta) == 0)
        msize = meta.size;
    og_error_clear();
    if (lance_key(skey, dir, LANCE_VERSIONS_DIR, fname) == 0 && store_head(s, skey, &meta) == 0)
        created = meta.mtime_ms / 1000;
    og_error_clear();
    json_t *lin = NULL, *ref = NULL;
    core_buf b = CORE_BUF_INIT;
    rc = build_lineage(&lin, name, from[0] ? from : NULL, first, identity,
                       have_parent ? &parent : NULL, pj);
    if (rc == 0) {
        ref = json_pack("{s:o, s:I, s:I, s:I, s:{}, s:s, s:o}", "parentBranch",
                        from[0] ? json_string(from) : json_null(), "parentVersion",
                        (json_int_t)first, "createAt",
                        (json_int_t)(created ? created : (uint64_t)time(NULL)), "manifestSize",
                        (json_int_t)msize, "metadata", "ogIdentity", identity, "ogLineage", lin);
        lin = NULL; /* stolen by "o" */
        if (!ref) rc = core_err_nomem();
    }
    if (rc == 0) rc = core_json_dump(ref, &b);
    if (rc == 0 && write) rc = store_put(s, key, b.data, b.len, 0);
    if (rc == 0 && out) {
        memset(out, 0, sizeof *out);
        snprintf(out->name, sizeof out->name, "%s", name);
        rc = ref_parse(out, b.data, b.len, key, NULL);
    }
    core_buf_free(&b);
    json_decref(ref);
    json_decref(lin);
    json_decref(pj);
    return rc;
}
