/* Lance table versions: V1/V2 manifest names, listing, latest discovery, load, hint. */
#include "lance/version.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/json.h"
#include "lance/paths.h"

#include <jansson.h>
#include <stdatomic.h>

#include <inttypes.h>
#include <stdbool.h>
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
        if (nm == LANCE_NAMING_V1)
            seen_v1 = 1;
        else
            seen_v2 = 1;
        out->v[out->n++] = v;
    }
    store_list_free(&l);
    if (seen_v1 && seen_v2) {
        lance_version_list_free(out);
        core_err(OG_E_CORRUPT, "lance table '%s' mixes V1 and V2 manifest names in _versions/",
                 root);
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

/* ---- latest-version discovery ------------------------------------------------------------
 * A listing of _versions/ costs one entry per version ever kept, so it is only the fallback.
 * The hint names a version h that was published before the hint was written; versions are
 * made one after another (N+1 is created only over an existing N) and cleanup never removes
 * the latest, so every version from h to the latest exists. Probing h+1, h+2, h+4, ... until
 * a miss and then bisecting finds the latest in O(log(latest - h)) heads, and the hint is
 * rewritten often enough (txn.h) that this is a handful. A missing, unreadable or stale hint
 * (its version cleaned up, or never made: a foreign writer) falls back to the listing. */

static _Atomic uint64_t listing_fallbacks;

uint64_t lance_version_listings(void)
{
    return atomic_load(&listing_fallbacks);
}

/* The hint's version, or 0 when there is none or it cannot be read. */
static uint64_t hint_read(store *s, const char *root)
{
    char key[STORE_KEY_MAX];
    if (lance_key(key, root, LANCE_VERSIONS_DIR, LANCE_HINT_NAME) != 0) return 0;
    core_buf b = CORE_BUF_INIT;
    uint64_t v = 0;
    if (store_get(s, key, 0, 256, &b) == 0 && b.len < 256) {
        json_error_t je;
        json_t *o = core_json_loadb((const char *)b.data, b.len, 0, &je);
        json_t *jv = json_is_object(o) ? json_object_get(o, "version") : NULL;
        if (json_is_integer(jv) && json_integer_value(jv) > 0) v = (uint64_t)json_integer_value(jv);
        json_decref(o);
    }
    core_buf_free(&b);
    return v;
}

uint64_t lance_hint_read(store *s, const char *root)
{
    return hint_read(s, root);
}

/* 1 when version v exists under naming, 0 when not, or a negative error. */
static int version_exists(store *s, const char *root, lance_naming naming, uint64_t v)
{
    char name[LANCE_VERSION_NAME_CAP], key[STORE_KEY_MAX];
    int rc = lance_version_file_name(name, sizeof name, naming, v);
    if (!rc) rc = lance_key(key, root, LANCE_VERSIONS_DIR, name);
    if (rc) return rc;
    store_meta meta;
    rc = store_head(s, key, &meta);
    if (rc == OG_E_NOT_FOUND) return 0;
    return rc ? rc : 1;
}

/* What a probe found: the latest, a hole in the history above its start, or that it must start
 * again from a version cleanup kept. */
enum { PROBE_FOUND = 0, PROBE_RESTART = 1, PROBE_GAP = 2 };

/* From an existing version h (under naming), the latest: gallop forward, then bisect. Every
 * answer lo (present) with lo+1 missing is then checked for a version above the miss (one more
 * head): versions are made one after another and cleanup removes the oldest first, so a present
 * lo+2 means lo+1 was lost and lo is not the latest (PROBE_GAP, *v = lo + 1, the missing one),
 * unless lo+1 is there when looked at again (committers made both meanwhile: the search goes
 * on from it).
 * With `check`, or when a gap is seen, lo is looked at again: when it is gone by then, cleanup
 * deleted the versions the probe started from (a version that still exists after the probe saw
 * its successor missing was the latest; one that does not may sit below a deleted range), and
 * the caller must start again from a version cleanup kept, such as the hint it rewrote
 * (PROBE_RESTART). */
static int probe_from(store *s, const char *root, lance_naming naming, uint64_t h, unsigned flags,
                      uint64_t *v)
{
    uint64_t lo = h, hi = 0, step = 1; /* lo exists; hi (when non-zero) does not */
again:
    while (hi == 0) {
        uint64_t next = lo + step;
        if (next < lo) return core_err(OG_E_CORRUPT, "lance table '%s': version overflow", root);
        int e = version_exists(s, root, naming, next);
        if (e < 0) return e;
        if (e)
            lo = next, step *= 2;
        else
            hi = next;
    }
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        int e = version_exists(s, root, naming, mid);
        if (e < 0) return e;
        if (e)
            lo = mid;
        else
            hi = mid;
    }
    int above = 0;
    if ((flags & LANCE_LATEST_GAPS) && hi + 1 > hi) above = version_exists(s, root, naming, hi + 1);
    if (above < 0) return above;
    if (above) {
        /* hi was missing when looked at, hi+1 is there now: committers may have made both in
         * between (hi+1 is only ever made once hi exists). hi there now is no gap: the history
         * moved on, and the search goes on from it. */
        int e = version_exists(s, root, naming, hi);
        if (e < 0) return e;
        if (e) {
            lo = hi;
            hi = 0;
            step = 1;
            goto again;
        }
    }
    int e = (flags & LANCE_LATEST_CHECK) || above ? version_exists(s, root, naming, lo) : 1;
    if (e < 0) return e;
    if (!e) return PROBE_RESTART;
    *v = above ? hi : lo;
    return above ? PROBE_GAP : PROBE_FOUND;
}

/* A hole in the history: version `missing` is gone while the one after it exists. */
static int gap_error(const char *root, lance_naming naming, uint64_t missing)
{
    char name[LANCE_VERSION_NAME_CAP], key[STORE_KEY_MAX];
    if (lance_version_file_name(name, sizeof name, naming, missing) != 0 ||
        lance_key(key, root, LANCE_VERSIONS_DIR, name) != 0)
        key[0] = 0;
    core_err(OG_E_CORRUPT,
             "lance table '%s': version %" PRIu64 " (%s) is missing but version %" PRIu64
             " exists: a version file was lost, so the latest version cannot be trusted",
             root, missing, key, missing + 1);
    core_err_detail(CORE_ERR_OBJECT, key[0] ? key : root);
    return OG_E_CORRUPT;
}

/* Latest through the hint: 0 and *v set, 1 when the hint cannot be used, or an error (a gap
 * above the hint: OG_E_CORRUPT). *hint receives the last hint read (0: none). */
static int latest_from_hint(store *s, const char *root, uint64_t *v, lance_naming *naming,
                            uint64_t *hint)
{
    /* A hint read just before a cleanup rewrote it may name a version it then deleted: read it
     * again, a few times, before falling back to the listing. The same for a gap: cleanup
     * rewrites the hint to the latest before it deletes anything, so a hole is explained by a
     * cleanup when the hint now stands above it, and is damage when it does not. */
    uint64_t gap = 0;
    lance_naming gap_naming = LANCE_NAMING_UNKNOWN;
    *hint = 0;
    for (int tries = 0; tries < 3; tries++) {
        uint64_t h = hint_read(s, root);
        *hint = h;
        if (h == 0) return 1;
        if (gap && h <= gap) return gap_error(root, gap_naming, gap);
        gap = 0;
        static const lance_naming order[] = {LANCE_NAMING_V2, LANCE_NAMING_V1};
        int rc = 1;
        for (size_t i = 0; i < 2 && rc == 1; i++) {
            int e = version_exists(s, root, order[i], h);
            if (e < 0) return e;
            if (!e) continue;
            uint64_t found = 0;
            rc = probe_from(s, root, order[i], h, LANCE_LATEST_CHECK | LANCE_LATEST_GAPS, &found);
            if (rc == PROBE_FOUND) *v = found, *naming = order[i];
            if (rc == PROBE_GAP) gap = found, gap_naming = order[i];
            if (rc < 0 || rc == PROBE_FOUND) return rc;
        }
    }
    if (gap) return gap_error(root, gap_naming, gap);
    return 1;
}

/* A probe from a version the caller knew found a gap (version `gap` missing): a hole below the
 * hint is a cleanup's (it rewrites the hint to the latest before deleting), so the latest is
 * found again from the hint; one at or above the hint is damage. */
static int after_gap(store *s, const char *root, lance_naming naming, uint64_t gap, uint64_t *v)
{
    if (hint_read(s, root) > gap) {
        lance_naming nm;
        return lance_version_latest(s, root, v, &nm);
    }
    return gap_error(root, naming, gap);
}

int lance_version_latest_from_flags(store *s, const char *root, lance_naming naming, uint64_t known,
                                    unsigned flags, uint64_t *v)
{
    if (known == 0 || naming == LANCE_NAMING_UNKNOWN)
        return core_err(OG_E_BAD_REQUEST, "lance_version_latest_from: no known version");
    uint64_t found = 0;
    int rc = probe_from(s, root, naming, known, flags, &found);
    if (rc == PROBE_RESTART) { /* `known` was cleaned up since the caller saw it: from the hint */
        lance_naming nm;
        return lance_version_latest(s, root, v, &nm);
    }
    if (rc == PROBE_GAP) return after_gap(s, root, naming, found, v);
    if (rc == PROBE_FOUND) *v = found, og_error_clear(); /* the probe's misses are answers */
    return rc;
}

int lance_version_latest_from(store *s, const char *root, lance_naming naming, uint64_t known,
                              uint64_t *v)
{
    return lance_version_latest_from_flags(s, root, naming, known,
                                           LANCE_LATEST_CHECK | LANCE_LATEST_GAPS, v);
}

int lance_version_latest_from_unchecked(store *s, const char *root, lance_naming naming,
                                        uint64_t known, uint64_t *v)
{
    return lance_version_latest_from_flags(s, root, naming, known, 0, v);
}

int lance_version_latest(store *s, const char *root, uint64_t *v, lance_naming *naming)
{
    return lance_version_latest_above(s, root, 0, v, naming);
}

int lance_version_latest_above(store *s, const char *root, uint64_t floor, uint64_t *v,
                               lance_naming *naming)
{
    return lance_version_latest_owned(s, root, floor, false, v, naming);
}

int lance_version_latest_owned(store *s, const char *root, uint64_t floor, bool owned, uint64_t *v,
                               lance_naming *naming)
{
    uint64_t found = 0, hint = 0;
    lance_naming nm = LANCE_NAMING_UNKNOWN;
    int rc = latest_from_hint(s, root, &found, &nm, &hint);
    if (rc < 0) return rc;
    /* No usable hint: from the version known to exist, under either scheme (V2 first). */
    static const lance_naming order[] = {LANCE_NAMING_V2, LANCE_NAMING_V1};
    for (size_t i = 0; rc == 1 && floor && i < 2; i++) {
        rc = probe_from(s, root, order[i], floor, LANCE_LATEST_CHECK | LANCE_LATEST_GAPS, &found);
        if (rc < 0) return rc;
        if (rc == PROBE_GAP) return gap_error(root, order[i], found);
        if (rc == PROBE_FOUND) nm = order[i];
    }
    og_error_clear(); /* the misses of the probe are answers, not errors */
    if (rc == 1) {
        atomic_fetch_add(&listing_fallbacks, 1);
        lance_version_list l;
        rc = lance_versions_list(s, root, &l);
        if (rc) return rc;
        if (l.n) found = l.v[l.n - 1], nm = l.naming;
        lance_version_list_free(&l);
        /* This engine writes the hint only after its version exists, and cleanup never
         * deletes the latest: in a dataset only it writes, a hint above every stored version
         * names versions that were lost. (Lance tolerates a too-high hint from other writers.) */
        if (owned && found && hint > found) {
            char name[LANCE_VERSION_NAME_CAP], key[STORE_KEY_MAX];
            if (lance_version_file_name(name, sizeof name, nm, hint) != 0 ||
                lance_key(key, root, LANCE_VERSIONS_DIR, name) != 0)
                key[0] = 0;
            core_err(OG_E_CORRUPT,
                     "lance table '%s': its version hint names version %" PRIu64
                     " but the newest stored is %" PRIu64
                     ": the newest versions were lost, so the latest cannot be trusted",
                     root, hint, found);
            core_err_detail(CORE_ERR_OBJECT, key[0] ? key : root);
            return OG_E_CORRUPT;
        }
    }
    if (found == 0) {
        core_err(OG_E_NOT_FOUND, "lance table '%s' has no versions", root);
        core_err_detail(CORE_ERR_OBJECT, root);
        return OG_E_NOT_FOUND;
    }
    *v = found;
    if (naming) *naming = nm;
    return 0;
}

int lance_version_load(store *s, const char *root, uint64_t v, lance_naming naming,
                       lance_access access, lance_manifest **out)
{
    *out = NULL;
    int rc;
    if (naming == LANCE_NAMING_UNKNOWN) {
        /* One head per scheme instead of a listing: V2 (what this engine writes) first;
         * when neither exists the get below reports the version missing. */
        rc = version_exists(s, root, LANCE_NAMING_V2, v);
        if (rc == 0) rc = version_exists(s, root, LANCE_NAMING_V1, v) == 1 ? 2 : 0;
        if (rc < 0) return rc;
        naming = rc == 2 ? LANCE_NAMING_V1 : LANCE_NAMING_V2;
        og_error_clear();
    }
    char name[LANCE_VERSION_NAME_CAP], key[STORE_KEY_MAX];
    rc = lance_version_file_name(name, sizeof name, naming, v);
    if (!rc) rc = lance_key(key, root, LANCE_VERSIONS_DIR, name);
    if (rc) return rc;
    core_buf b = CORE_BUF_INIT;
    rc = store_get(s, key, 0, STORE_ALL, &b);
    if (rc == OG_E_NOT_FOUND) {
        core_buf_free(&b);
        core_err(OG_E_NOT_FOUND, "version %" PRIu64 " of lance table '%s' does not exist", v, root);
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

int lance_version_load_latest(store *s, const char *root, lance_access access, lance_manifest **out,
                              lance_naming *naming)
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
