/* Lance table versions: V1/V2 manifest names, listing, latest discovery, load, hint. */
#include "lance/version.h"

#include "core/alloc.h"
#include "core/error.h"
#include "lance/paths.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define V2_DIGITS 20

int lance_version_file_name(char *out, size_t cap, lance_naming naming, uint64_t v)
{
    if (v == 0) return core_err(OG_E_BAD_REQUEST, "lance versions start at 1");
    int n;
    if (naming == LANCE_NAMING_V1)
        n = snprintf(out, cap, "%" PRIu64 ".manifest", v);
    else
        n = snprintf(out, cap, "%020" PRIu64 ".manifest", UINT64_MAX - v);
    if (n < 0 || (size_t)n >= cap)
        return core_err(OG_E_INTERNAL, "version name buffer of %zu bytes is too small", cap);
    return 0;
}

int lance_version_parse_name(const char *name, uint64_t *v, lance_naming *naming)
{
    const char *slash = strrchr(name, '/');
    if (slash) name = slash + 1;
    static const char suffix[] = ".manifest";
    size_t len = strlen(name), sl = sizeof suffix - 1;
    if (len <= sl || strcmp(name + len - sl, suffix) != 0) return 0;
    size_t digits = len - sl;
    if (digits > V2_DIGITS) return 0;
    uint64_t x = 0;
    for (size_t i = 0; i < digits; i++) {
        if (name[i] < '0' || name[i] > '9') return 0; /* also skips "d..." detached names */
        unsigned d = (unsigned)(name[i] - '0');
        if (x > (UINT64_MAX - d) / 10) return 0;
        x = x * 10 + d;
    }
    if (digits == V2_DIGITS) {
        if (x == UINT64_MAX) return 0; /* would be version 0 */
        *v = UINT64_MAX - x;
        *naming = LANCE_NAMING_V2;
    } else {
        if (x == 0) return 0;
        *v = x;
        *naming = LANCE_NAMING_V1;
    }
    return 1;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int lance_versions_list(store *s, const char *root, lance_version_list *out)
{
    memset(out, 0, sizeof *out);
    char prefix[STORE_KEY_MAX];
    int rc = lance_key(prefix, root, LANCE_VERSIONS_DIR, NULL);
    if (rc) return rc;
    store_list l = {0};
    rc = store_list_prefix(s, prefix, STORE_LIST_DELIMITED, &l);
    if (rc == OG_E_NOT_FOUND) {
        store_list_free(&l);
        return 0; /* no _versions/ yet: an empty table, reported as n = 0 */
    }
    if (rc) {
        store_list_free(&l);
        core_err_prefix("listing the versions of lance table '%s'", root);
        return rc;
    }
    if (l.count) {
        out->v = core_malloc(l.count * sizeof *out->v);
        if (!out->v) {
            store_list_free(&l);
            return core_err_nomem();
        }
    }
    int seen_v1 = 0, seen_v2 = 0;
    for (size_t i = 0; i < l.count; i++) {
        uint64_t v;
        lance_naming nm;
        if (l.items[i].is_prefix) continue;
        if (!lance_version_parse_name(l.items[i].key, &v, &nm)) continue;
        if (nm == LANCE_NAMING_V1) seen_v1 = 1;
        else seen_v2 = 1;
        out->v[out->n++] = v;
    }
    store_list_free(&l);
    if (seen_v1 && seen_v2) {
        lance_version_list_free(out);
        core_err(OG_E_CORRUPT,
                 "lance table '%s' mixes V1 and V2 manifest names in _versions/", root);
        core_err_detail(CORE_ERR_OBJECT, prefix);
        return OG_E_CORRUPT;
    }
    out->naming = seen_v1 ? LANCE_NAMING_V1 : seen_v2 ? LANCE_NAMING_V2 : LANCE_NAMING_UNKNOWN;
    if (out->n) qsort(out->v, out->n, sizeof *out->v, cmp_u64);
    return 0;
}

void lance_version_list_free(lance_version_list *l)
{
    if (!l) return;
    core_free(l->v);
    memset(l, 0, sizeof *l);
}

int lance_version_latest(store *s, const char *root, uint64_t *v, lance_naming *naming)
{
    lance_version_list l;
    int rc = lance_versions_list(s, root, &l);
    if (rc) return rc;
    if (l.n == 0) {
        lance_version_list_free(&l);
        core_err(OG_E_NOT_FOUND, "lance table '%s' has no versions", root);
        core_err_detail(CORE_ERR_OBJECT, root);
        return OG_E_NOT_FOUND;
    }
    *v = l.v[l.n - 1];
    if (naming) *naming = l.naming;
    lance_version_list_free(&l);
    return 0;
}

int lance_version_load(store *s, const char *root, uint64_t v, lance_naming naming,
                       lance_access access, lance_manifest **out)
{
    *out = NULL;
    int rc;
    if (naming == LANCE_NAMING_UNKNOWN) {
        lance_version_list l;
        rc = lance_versions_list(s, root, &l);
        if (rc) return rc;
        naming = l.naming == LANCE_NAMING_UNKNOWN ? LANCE_NAMING_V2 : l.naming;
        lance_version_list_free(&l);
    }
    char name[LANCE_VERSION_NAME_CAP], key[STORE_KEY_MAX];
    rc = lance_version_file_name(name, sizeof name, naming, v);
    if (!rc) rc = lance_key(key, root, LANCE_VERSIONS_DIR, name);
    if (rc) return rc;
    core_buf b = CORE_BUF_INIT;
    rc = store_get(s, key, 0, STORE_ALL, &b);
    if (rc == OG_E_NOT_FOUND) {
        core_buf_free(&b);
        core_err(OG_E_NOT_FOUND, "version %" PRIu64 " of lance table '%s' does not exist", v,
                 root);
        core_err_detail(CORE_ERR_OBJECT, key);
        return OG_E_NOT_FOUND;
    }
    if (rc) {
        core_buf_free(&b);
        return rc;
    }
    lance_manifest *m = NULL;
    rc = lance_manifest_decode(&m, b.data, b.len, key);
    core_buf_free(&b);
    if (rc) return rc;
    if (m->pb->version != v) {
        core_err(OG_E_CORRUPT, "corrupt lance manifest %s: it claims version %" PRIu64, key,
                 m->pb->version);
        core_err_detail(CORE_ERR_OBJECT, key);
        lance_manifest_free(m);
        return OG_E_CORRUPT;
    }
    rc = lance_manifest_check(m->pb, access, key);
    if (rc) {
        lance_manifest_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

int lance_version_load_latest(store *s, const char *root, lance_access access,
                              lance_manifest **out, lance_naming *naming)
{
    *out = NULL;
    uint64_t v;
    lance_naming nm;
    int rc = lance_version_latest(s, root, &v, &nm);
    if (rc) return rc;
    rc = lance_version_load(s, root, v, nm, access, out);
    if (!rc && naming) *naming = nm;
    return rc;
}

int lance_hint_write(store *s, const char *root, uint64_t v)
{
    char key[STORE_KEY_MAX], body[48];
    int rc = lance_key(key, root, LANCE_VERSIONS_DIR, LANCE_HINT_NAME);
    if (rc) return rc;
    int n = snprintf(body, sizeof body, "{\"version\":%" PRIu64 "}", v);
    /* No fsync: nothing depends on the hint (see lance_commit). */
    return store_put(s, key, body, (size_t)n, STORE_F_NOSYNC);
}
