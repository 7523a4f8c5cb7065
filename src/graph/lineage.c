/* Lineage: resolving a user's commit reference (id, unique id prefix, or manifest version)
 * against the commit rows of a branch's manifest. */
#include "graph/graph.h"
#include "core/error.h"

#include <ctype.h>
#include <inttypes.h>
#include <string.h>
#include <strings.h>

#define REF_PREFIX_MIN 4

const graph_commit *graph_lineage_find(const graph_snapshot *snap, const char *id)
{
    if (!snap || !id) return NULL;
    for (size_t i = 0; i < snap->n_commits; i++)
        if (strcmp(snap->commits[i].id, id) == 0) return &snap->commits[i];
    return NULL;
}

static int not_found(const graph_snapshot *snap, const char *ref)
{
    core_err(OG_E_NOT_FOUND, "no commit '%s' on graph branch '%s' (manifest version %" PRIu64 ")",
             ref, snap->branch ? snap->branch : "main", snap->manifest_version);
    core_err_detail(CORE_ERR_OBJECT, ref);
    return OG_E_NOT_FOUND;
}

int graph_lineage_resolve(const graph_snapshot *snap, const char *ref, uint64_t *manifest_version)
{
    if (!ref || !*ref) return core_err(OG_E_BAD_REQUEST, "an empty commit reference");
    size_t len = strlen(ref);
    bool digits = true;
    for (size_t i = 0; i < len; i++)
        digits &= isdigit((unsigned char)ref[i]) != 0;
    if (digits && ref[0] != '0') {
        if (len > 20) return not_found(snap, ref);
        uint64_t v = 0;
        for (size_t i = 0; i < len; i++) {
            unsigned d = (unsigned)(ref[i] - '0');
            if (v > (UINT64_MAX - d) / 10) return not_found(snap, ref);
            v = v * 10 + d;
        }
        if (v > snap->manifest_version) return not_found(snap, ref);
        *manifest_version = v;
        return 0;
    }
    if (digits && len < REF_PREFIX_MIN && strspn(ref, "0") == len) {
        /* "0" is no id prefix (too short) but plainly meant as a version, which never exists. */
        core_err(OG_E_BAD_REQUEST,
                 "manifest version %s does not exist: versions start at 1 (the "
                 "genesis commit)",
                 ref);
        core_err_detail(CORE_ERR_OBJECT, ref);
        return OG_E_BAD_REQUEST;
    }
    if (len < REF_PREFIX_MIN)
        return core_err(OG_E_BAD_REQUEST,
                        "commit reference '%s' is too short: give at least %d "
                        "characters of the id, or a manifest version",
                        ref, REF_PREFIX_MIN);
    if (len > GRAPH_ID_LEN) return not_found(snap, ref);
    const graph_commit *hit = NULL;
    for (size_t i = 0; i < snap->n_commits; i++) {
        const graph_commit *c = &snap->commits[i];
        if (strncasecmp(c->id, ref, len) != 0) continue;
        if (len == GRAPH_ID_LEN) {
            hit = c; /* a full id: the same commit may appear once only anyway */
            break;
        }
        if (hit && strcmp(hit->id, c->id) != 0) {
            core_err(OG_E_BAD_REQUEST, "commit prefix '%s' is ambiguous: it matches %s and %s", ref,
                     hit->id, c->id);
            core_err_detail(CORE_ERR_OBJECT, ref);
            return OG_E_BAD_REQUEST;
        }
        hit = c;
    }
    if (!hit) return not_found(snap, ref);
    *manifest_version = hit->manifest_version;
    return 0;
}

int graph_resolve_ref(store *s, const char *branch, const char *ref, uint64_t *manifest_version)
{
    graph_snapshot *snap = NULL;
    /* A read: on main it may fall back past a damaged newest version (with a warning). */
    int rc = branch && *branch && strcmp(branch, "main") != 0
                 ? graph_snapshot_load(&snap, s, branch, 0, GRAPH_SNAP_LINEAGE)
                 : graph_snapshot_load_tolerant(&snap, s, GRAPH_SNAP_LINEAGE);
    if (rc == 0) rc = graph_lineage_resolve(snap, ref, manifest_version);
    graph_snapshot_free(snap);
    return rc;
}
