/* Lance refs: the listing of a refs directory (tags and branches); tags: create-if-absent,
 * read, list, delete-if-identity-matches, checkout; and the table's retention lock shared
 * with restore and cleanup. */
#include "lance/refs.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char lock_suffix[] = ".lock";

int lance_tag_name_check(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    const char *why = NULL;
    if (n == 0)
        why = "is empty";
    else if (n > LANCE_TAG_NAME_MAX)
        why = "is too long";
    else if (name[0] == '.' || name[n - 1] == '.')
        why = "may not start or end with '.'";
    else if (strstr(name, ".."))
        why = "may not contain '..'";
    else if (n >= sizeof lock_suffix - 1 &&
             strcmp(name + n - (sizeof lock_suffix - 1), lock_suffix) == 0)
        why = "may not end with '.lock'";
    for (size_t i = 0; !why && i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_'))
            why = "may only contain letters, digits, '.', '-' and '_'";
    }
    if (!why) return 0;
    core_err(OG_E_BAD_REQUEST, "invalid tag name '%.*s': a tag name %s", (int)(n > 80 ? 80 : n),
             name ? name : "", why);
    core_err_detail(CORE_ERR_KEY, name ? name : "");
    return OG_E_BAD_REQUEST;
}

static int tag_key(char out[STORE_KEY_MAX], const char *root, const char *name)
{
    char file[LANCE_TAG_NAME_MAX + 8];
    snprintf(file, sizeof file, "%s.json", name);
    return lance_key(out, root, LANCE_REFS_TAGS_DIR, file);
}

int lance_retention_lock(store *s, const char *root, store_lock **out)
{
    char key[STORE_KEY_MAX];
    int rc = lance_key(key, root, LANCE_VERSIONS_DIR, "og-retention");
    if (rc) return rc;
    return store_lock_acquire(s, key, STORE_LOCK_WAIT_FOREVER, out);
}

/* Parse stored tag bytes into *t (name already set). */
static int tag_parse(lance_tag *t, const void *data, size_t len, const char *key)
{
    json_t *j = NULL;
    int rc = core_json_parse_stored(&j, data, len, key);
    if (rc) return rc;
    if (!json_is_object(j)) {
        rc = core_err(OG_E_CORRUPT, "tag file %s is not a JSON object", key);
        goto out;
    }
    rc = core_json_u64(j, "version", &t->version, OG_E_CORRUPT, key);
    if (!rc) rc = core_json_u64(j, "manifestSize", &t->manifest_size, OG_E_CORRUPT, key);
    if (rc) goto out;
    if (t->version == 0) {
        rc = core_err(OG_E_CORRUPT, "tag file %s names version 0", key);
        goto out;
    }
    t->branch[0] = '\0';
    json_t *b = json_object_get(j, "branch");
    if (b && json_is_string(b)) {
        if (json_string_length(b) > LANCE_TAG_NAME_MAX) {
            rc = core_err(OG_E_CORRUPT, "tag file %s names a branch longer than %d bytes", key,
                          LANCE_TAG_NAME_MAX);
            goto out;
        }
        snprintf(t->branch, sizeof t->branch, "%s", json_string_value(b));
    } else if (b && !json_is_null(b)) {
        rc = core_err(OG_E_CORRUPT, "tag file %s: \"branch\" is neither null nor a string", key);
        goto out;
    }
    const char *names[2] = {"createdAt", "updatedAt"};
    char *dst[2] = {t->created_at, t->updated_at};
    for (int i = 0; i < 2; i++) {
        json_t *v = json_object_get(j, names[i]);
        dst[i][0] = '\0';
        /* Only kept for display and identity; any string (or none) is accepted, as lance
         * accepts the minimal form without them. */
        if (v && json_is_string(v))
            snprintf(dst[i], LANCE_TAG_TIME_CAP, "%s", json_string_value(v));
    }
    snprintf(t->identity, sizeof t->identity, "%016" PRIx64, core_hash64(data, len, 0));
out:
    if (rc) core_err_detail(CORE_ERR_OBJECT, key);
    json_decref(j);
    return rc;
}

static int tag_read(store *s, const char *root, const char *name, lance_tag *out)
{
    char key[STORE_KEY_MAX];
    int rc = tag_key(key, root, name);
    if (rc) return rc;
    core_buf b = CORE_BUF_INIT;
    rc = store_get(s, key, 0, STORE_ALL, &b);
    if (rc == OG_E_NOT_FOUND) {
        core_buf_free(&b);
        core_err(OG_E_NOT_FOUND, "lance table '%s' has no tag '%s'", root, name);
        core_err_detail(CORE_ERR_OBJECT, key);
        return OG_E_NOT_FOUND;
    }
    if (rc == 0) {
        memset(out, 0, sizeof *out);
        snprintf(out->name, sizeof out->name, "%s", name);
        rc = tag_parse(out, b.data, b.len, key);
    }
    core_buf_free(&b);
    return rc;
}

int lance_tag_get(store *s, const char *root, const char *name, lance_tag *out)
{
    int rc = lance_tag_name_check(name);
    if (rc) return rc;
    return tag_read(s, root, name, out);
}

/* RFC 3339 UTC with nanoseconds, as lance writes it. */
static void now_rfc3339(char out[LANCE_TAG_TIME_CAP])
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char base[40];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, LANCE_TAG_TIME_CAP, "%s.%09ldZ", base, (long)ts.tv_nsec);
}

int lance_tag_create(store *s, const char *root, const char *name, uint64_t version, lance_tag *out)
{
    int rc = lance_tag_name_check(name);
    if (rc) return rc;
    if (version == 0)
        return core_err(OG_E_BAD_REQUEST, "tag '%s': lance versions start at 1", name);
    char key[STORE_KEY_MAX];
    rc = tag_key(key, root, name);
    if (rc) return rc;

    /* Under the retention lock, so a cleanup on this host cannot delete the version between
     * our check and the tag becoming visible. */
    store_lock *lk = NULL;
    rc = lance_retention_lock(s, root, &lk);
    if (rc) return rc;
    lance_manifest *m = NULL;
    rc = lance_version_load(s, root, version, LANCE_NAMING_UNKNOWN, LANCE_ACCESS_INSPECT, &m);
    if (rc) {
        if (rc == OG_E_NOT_FOUND)
            core_err_prefix("cannot create tag '%s' on lance table '%s'", name, root);
        store_lock_release(lk);
        return rc;
    }
    char when[LANCE_TAG_TIME_CAP];
    now_rfc3339(when);
    core_buf b = CORE_BUF_INIT;
    rc = core_buf_printf(&b,
                         "{\"branch\":null,\"version\":%" PRIu64
                         ",\"createdAt\":\"%s\",\"updatedAt\":\"%s\",\"manifestSize\":%" PRIu64
                         ",\"metadata\":{}}",
                         version, when, when, m->file_size);
    lance_manifest_free(m);
    if (rc == 0) rc = store_put_if_absent(s, key, b.data, b.len, 0);
    store_lock_release(lk);
    if (rc == OG_E_EXISTS) {
        core_err(OG_E_EXISTS, "lance table '%s' already has a tag '%s'", root, name);
        core_err_detail(CORE_ERR_OBJECT, key);
        core_err_detail(CORE_ERR_KEY, name);
    } else if (rc == 0 && out) {
        memset(out, 0, sizeof *out);
        snprintf(out->name, sizeof out->name, "%s", name);
        rc = tag_parse(out, b.data, b.len, key);
    }
    core_buf_free(&b);
    return rc;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int lance_refs_list(store *s, const char *root, const char *dir, size_t size,
                    lance_ref_name_fn name_of, lance_ref_read_fn read_ref, void **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    char prefix[STORE_KEY_MAX];
    int rc = lance_key(prefix, root, dir, NULL);
    if (rc) return rc;
    store_list l = {0};
    rc = store_list_prefix(s, prefix, STORE_LIST_DELIMITED, &l);
    if (rc == OG_E_NOT_FOUND) {
        store_list_free(&l);
        og_error_clear(); /* no such directory yet: no refs */
        return 0;
    }
    if (rc) {
        store_list_free(&l);
        return rc;
    }
    /* The names first, sorted, so the refs are read in the order they are returned. */
    char **names = core_calloc(l.count ? l.count : 1, sizeof *names);
    size_t nn = 0, plen = strlen(prefix);
    if (!names) rc = core_err_nomem();
    for (size_t i = 0; rc == 0 && i < l.count; i++) {
        if (l.items[i].is_prefix) continue;
        const char *file = l.items[i].key + plen;
        size_t fl = strlen(file);
        if (fl <= 5 || strcmp(file + fl - 5, ".json") != 0) continue; /* not a ref file */
        char name[STORE_KEY_MAX];
        if (name_of(file, fl - 5, name, sizeof name) != 0) continue;
        if (!(names[nn] = core_strdup(name)))
            rc = core_err_nomem();
        else
            nn++;
    }
    store_list_free(&l);
    if (rc == 0) qsort(names, nn, sizeof *names, cmp_name);
    unsigned char *refs = NULL;
    if (rc == 0 && nn && !(refs = core_calloc(nn, size))) rc = core_err_nomem();
    size_t k = 0;
    for (size_t i = 0; rc == 0 && i < nn; i++) {
        rc = read_ref(s, root, names[i], refs + k * size);
        if (rc == OG_E_NOT_FOUND) {
            og_error_clear(); /* deleted since it was listed: absence, not an error */
            rc = 0;
            continue;
        }
        if (rc == 0) k++;
    }
    for (size_t i = 0; i < nn; i++)
        core_free(names[i]);
    core_free(names);
    if (rc) {
        core_free(refs);
        return rc;
    }
    *out = refs;
    *n = k;
    return 0;
}

void lance_tag_list_free(lance_tag *tags)
{
    core_free(tags);
}

/* A tag file's name is the tag's; one that is no valid tag name was not written as a tag. */
static int tag_name_of(const char *file, size_t len, char *name, size_t cap)
{
    if (len > LANCE_TAG_NAME_MAX || len >= cap) return -1;
    memcpy(name, file, len);
    name[len] = '\0';
    if (lance_tag_name_check(name) == 0) return 0;
    og_error_clear();
    return -1;
}

static int tag_read_any(store *s, const char *root, const char *name, void *out)
{
    return tag_read(s, root, name, out);
}

int lance_tag_list(store *s, const char *root, lance_tag **out, size_t *n)
{
    void *tags = NULL;
    int rc = lance_refs_list(s, root, LANCE_REFS_TAGS_DIR, sizeof **out, tag_name_of, tag_read_any,
                             &tags, n);
    *out = tags;
    return rc;
}

int lance_tag_delete(store *s, const char *root, const char *name, const char *identity)
{
    int rc = lance_tag_name_check(name);
    if (rc) return rc;
    char key[STORE_KEY_MAX];
    rc = tag_key(key, root, name);
    if (rc) return rc;
    /* Every deleter on this host takes this lock, and creators cannot replace an existing
     * tag, so between our re-read and our delete the tag cannot change. */
    store_lock *lk = NULL;
    rc = store_lock_acquire(s, key, STORE_LOCK_WAIT_FOREVER, &lk);
    if (rc) return rc;
    lance_tag t;
    rc = tag_read(s, root, name, &t);
    if (rc == 0 && identity && strcmp(identity, t.identity) != 0) {
        core_err(OG_E_PRECONDITION_FAILED,
                 "tag '%s' of lance table '%s' changed: identity %s, expected %s", name, root,
                 t.identity, identity);
        core_err_detail(CORE_ERR_OBJECT, key);
        core_err_detail(CORE_ERR_KEY, name);
        core_err_detail(CORE_ERR_EXPECTED, identity);
        core_err_detail(CORE_ERR_ACTUAL, t.identity);
        rc = OG_E_PRECONDITION_FAILED;
    }
    if (rc == 0) rc = store_delete(s, key, 0);
    store_lock_release(lk);
    return rc;
}

int lance_tag_checkout(lance_dataset **out, store *s, const char *root, const char *name,
                       lance_access access)
{
    *out = NULL;
    lance_tag t;
    int rc = lance_tag_get(s, root, name, &t);
    if (rc) return rc;
    if (t.branch[0]) {
        core_err(OG_E_UNSUPPORTED,
                 "tag '%s' of lance table '%s' is on branch '%s'; branches are not supported yet",
                 name, root, t.branch);
        core_err_detail(CORE_ERR_KEY, name);
        return OG_E_UNSUPPORTED;
    }
    rc = lance_dataset_open(out, s, root, t.version, access);
    if (rc) core_err_prefix("checking out tag '%s'", name);
    return rc;
}
