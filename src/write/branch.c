/* The graph-branch ref control protocol (RFC-022 §7): create, delete and list graph branches.
 * A graph branch is a native Lance branch of the graph manifest; creating or deleting one is one
 * conditional ref mutation (lance/branch.h: create-if-absent, delete-if-identity-matches), never a
 * graph commit. Each runs the recovery barrier, takes the branch-refs control gate (and, to
 * delete, the branch's own gate without waiting), re-checks what it depends on under them, and
 * then performs that one mutation, which is the visibility point. */
#include "write/internal.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/hmap.h"
#include "lance/version.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The control gate every branch create and delete of a root takes: the name checks against
 * the other branches (prefix-disjoint names) and the fork-source checks cannot race in this
 * process, nor, through the store lock, on this host. Tier SCHEMA (graph control), its own
 * name, so writes (which take "schema") never wait for it. */
static const write_gate_key REFS_GATE = {WRITE_GATE_SCHEMA, WRITE_BRANCH_REFS_GATE, NULL, false};

static bool is_main(const char *b)
{
    return !b || !*b || strcmp(b, "main") == 0;
}

int write_branch_name_check(const char *name)
{
    if (!name || !*name) return core_err(OG_E_BAD_REQUEST, "a branch name is required");
    if (strcmp(name, "main") == 0)
        return core_err(OG_E_BAD_REQUEST, "'main' is reserved: it is the graph's first branch");
    if (name[0] == '-')
        return core_err(OG_E_BAD_REQUEST,
                        "branch name '%s' starts with '-' (it would read as an option)", name);
    int rc = lance_branch_name_check(name);
    if (rc) return rc;
    /* segment rules beyond lance's: "." and names beginning with '_' (internal names) */
    for (const char *seg = name; seg;) {
        const char *end = strchr(seg, '/');
        size_t len = end ? (size_t)(end - seg) : strlen(seg);
        if (len == 1 && seg[0] == '.')
            return core_err(OG_E_BAD_REQUEST, "branch name '%s' has a '.' segment", name);
        if (seg[0] == '_')
            return core_err(OG_E_BAD_REQUEST,
                            "branch name '%s': segments beginning with '_' are reserved for "
                            "internal branches",
                            name);
        seg = end ? end + 1 : NULL;
    }
    return 0;
}

/* What a branch's ref says of it (the rest is zero). */
static void info_from_ref(const lance_branch *ref, write_branch_info *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", ref->name);
    snprintf(out->parent, sizeof out->parent, "%s", ref->parent[0] ? ref->parent : "main");
    snprintf(out->identity, sizeof out->identity, "%s", ref->identity);
    out->fork_version = ref->parent_version;
    out->created_at = ref->create_at;
}

static int fill_info(store *s, const lance_branch *ref, write_branch_info *out)
{
    info_from_ref(ref, out);
    graph_snapshot *snap = NULL;
    int rc =
        graph_snapshot_load(&snap, s, ref->parent[0] ? ref->parent : NULL, ref->parent_version, 0);
    if (rc == 0) snprintf(out->forked_from, sizeof out->forked_from, "%s", snap->head);
    graph_snapshot_free(snap);
    snap = NULL;
    if (rc == 0) rc = graph_snapshot_load(&snap, s, ref->name, 0, 0);
    if (rc == 0) {
        snprintf(out->head, sizeof out->head, "%s", snap->head);
        out->manifest_version = snap->manifest_version;
    }
    graph_snapshot_free(snap);
    return rc;
}

/* A fork point already read by this listing: the parent's head at that version. */
typedef struct fork_seen {
    const char *parent; /* the ref's ("" for main), alive as long as the listing */
    uint64_t version;
    char head[GRAPH_ID_LEN + 1];
} fork_seen;

static uint64_t fork_hash(const char *parent, uint64_t version)
{
    return core_hash64(parent, strlen(parent), version);
}

/* Whether branch ref has a version past its first (its fork point): a head of version
 * parent_version + 1 in its directory, under either manifest naming (a fork continues its
 * source's, whichever that is), never a discovery of its latest. */
static int wrote_since_fork(store *s, const lance_branch *ref, bool *wrote)
{
    *wrote = false;
    char dir[STORE_KEY_MAX];
    int rc = lance_branch_root(dir, GRAPH_MANIFEST_DIR, ref->name);
    static const lance_naming namings[] = {LANCE_NAMING_V2, LANCE_NAMING_V1};
    for (size_t i = 0; rc == 0 && !*wrote && i < 2; i++) {
        char file[LANCE_VERSION_NAME_CAP], key[STORE_KEY_MAX];
        store_meta meta;
        rc = lance_version_file_name(file, sizeof file, namings[i], ref->parent_version + 1);
        if (rc == 0) rc = lance_key(key, dir, LANCE_VERSIONS_DIR, file);
        if (rc == 0) rc = store_head(s, key, &meta);
        if (rc == 0) {
            *wrote = true;
        } else if (rc == OG_E_NOT_FOUND) {
            og_error_clear();
            rc = 0;
        }
    }
    return rc;
}

/* One listed branch: its fork point's head (read once per distinct fork point: branches forked
 * at one commit share it) and its own head, which is the fork point's until the branch writes.
 * Whether it wrote is a probe of its directory for the version after the fork point, so a
 * branch that never wrote costs its ref and that probe; one that wrote, its snapshot. */
static int list_info(store *s, const lance_branch *ref, core_hmap *seen, fork_seen *forks,
                     size_t *nforks, write_branch_info *out)
{
    info_from_ref(ref, out);
    uint64_t h = fork_hash(ref->parent, ref->parent_version);
    core_hmap_probe p = core_hmap_probe_of(seen, h);
    uint32_t e;
    const fork_seen *f = NULL;
    while (!f && core_hmap_next(seen, &p, &e))
        if (forks[e].version == ref->parent_version && strcmp(forks[e].parent, ref->parent) == 0)
            f = &forks[e];
    int rc = 0;
    if (!f) {
        graph_snapshot *snap = NULL;
        rc = graph_snapshot_load(&snap, s, ref->parent[0] ? ref->parent : NULL, ref->parent_version,
                                 0);
        if (rc == 0) {
            fork_seen *nf = &forks[*nforks];
            nf->parent = ref->parent;
            nf->version = ref->parent_version;
            memcpy(nf->head, snap->head, sizeof nf->head);
            rc = core_hmap_add_at(seen, &p, h, (uint32_t)*nforks);
            if (rc == 0) f = &forks[(*nforks)++];
        }
        graph_snapshot_free(snap);
        if (rc) return rc;
    }
    memcpy(out->forked_from, f->head, sizeof out->forked_from);
    bool wrote = false;
    if ((rc = wrote_since_fork(s, ref, &wrote)) != 0) return rc;
    if (!wrote) { /* at its first version, the fork point's copy */
        memcpy(out->head, f->head, sizeof out->head);
        out->manifest_version = ref->parent_version;
        return 0;
    }
    graph_snapshot *snap = NULL;
    rc = graph_snapshot_load(&snap, s, ref->name, 0, 0);
    if (rc == 0) {
        snprintf(out->head, sizeof out->head, "%s", snap->head);
        out->manifest_version = snap->manifest_version;
    }
    graph_snapshot_free(snap);
    return rc;
}

int write_branch_list(store *s, write_branch_info **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    lance_branch *refs = NULL;
    size_t nr = 0;
    int rc = lance_branch_list(s, GRAPH_MANIFEST_DIR, &refs, &nr);
    if (rc) return rc;
    write_branch_info *items = core_calloc(nr ? nr : 1, sizeof *items);
    fork_seen *forks = core_calloc(nr ? nr : 1, sizeof *forks);
    core_hmap seen = CORE_HMAP_INIT;
    if (!items || !forks) rc = core_err_nomem();
    size_t k = 0, nforks = 0;
    for (size_t i = 0; rc == 0 && i < nr; i++) {
        if (write_branch_name_check(refs[i].name) != 0) {
            og_error_clear(); /* an internal or foreign ref of the manifest: not a graph branch */
            continue;
        }
        rc = list_info(s, &refs[i], &seen, forks, &nforks, &items[k]);
        if (rc == OG_E_NOT_FOUND) { /* deleted since it was listed */
            og_error_clear();
            rc = 0;
            continue;
        }
        if (rc == 0) k++;
    }
    core_hmap_free(&seen);
    core_free(forks);
    lance_branch_list_free(refs);
    if (rc) {
        core_free(items);
        return rc;
    }
    *out = items;
    *n = k;
    return 0;
}

/* The refusal of a name beside branch `other`, one a '/' prefix of the other. */
static int not_disjoint(const char *name, const char *other)
{
    core_err(OG_E_EXISTS,
             "branch '%s' cannot exist beside branch '%s': one name may not be a '/' prefix of "
             "another",
             name, other);
    core_err_detail(CORE_ERR_KEY, other);
    return OG_E_EXISTS;
}

/* Refuse a name that is taken, that has a live branch (or main, always there) as a '/'
 * prefix, or that is one of a live branch's. Bounded by the name, never by the number of
 * branches: a point read of the ref of each proper prefix ("a", "a/b" for "a/b/c") and one
 * delimited listing of the name's directory (lance_branch_find_under); the name itself is
 * refused by the create-if-absent of its ref.
 * Run under the refs gate, which every create holds, so a racing create of a prefix or an
 * extension of the name on this host waits for this one to publish or fail. */
static int check_disjoint(store *s, const char *name)
{
    char pre[LANCE_BRANCH_NAME_MAX + 1];
    for (const char *sl = strchr(name, '/'); sl; sl = strchr(sl + 1, '/')) {
        size_t n = (size_t)(sl - name);
        memcpy(pre, name, n);
        pre[n] = '\0';
        if (strcmp(pre, "main") == 0) return not_disjoint(name, "main");
        lance_branch ref;
        int rc = lance_branch_get(s, GRAPH_MANIFEST_DIR, pre, &ref);
        if (rc == 0) return not_disjoint(name, pre);
        if (rc != OG_E_NOT_FOUND) return rc;
        og_error_clear();
    }
    int rc;
    if ((rc = lance_branch_find_under(s, GRAPH_MANIFEST_DIR, name, pre)) != 0) return rc;
    return pre[0] ? not_disjoint(name, pre) : 0;
}

/* Every branch head is under the accepted schema (main's head's): schema apply refuses while
 * other branches exist, so a branch could only leave it by starting at a commit made before an
 * apply, whose writes would then run under a schema the graph no longer accepts. Such a fork
 * point is refused; the old commit stays readable with --at. Under the refs gate, which an
 * apply holds exclusive, so the accepted schema cannot move meanwhile. */
static int check_fork_schema(write_graph *g, const char *src, uint64_t version,
                             const graph_head *hd)
{
    if (!src && hd) return 0; /* main's head itself */
    graph_snapshot *at = NULL;
    const graph_snapshot *fork = hd ? graph_head_snapshot(hd) : NULL;
    int rc = fork ? 0 : graph_snapshot_load(&at, g->h->s, src, version, 0);
    if (rc) return rc;
    if (!fork) fork = at;
    graph_head *mh = NULL;
    if ((rc = graph_handle_head(g->h, &mh)) == 0) {
        const graph_snapshot *m = graph_head_snapshot(mh);
        if (strcmp(fork->schema_identity, m->schema_identity) != 0) {
            rc = core_err(OG_E_PRECONDITION_FAILED,
                          "commit %s was made under schema %.12s, not the graph's schema "
                          "%.12s: a branch starts under the accepted schema (read the old "
                          "commit with --at instead)",
                          fork->head, fork->schema_identity, m->schema_identity);
            core_err_detail(CORE_ERR_MEMBER, "schema_identity");
            core_err_detail(CORE_ERR_EXPECTED, m->schema_identity);
            core_err_detail(CORE_ERR_ACTUAL, fork->schema_identity);
        }
        graph_head_release(mh);
    }
    graph_snapshot_free(at);
    return rc;
}

int write_branch_create(write_graph *g, const char *name, const char *from, const char *at,
                        write_branch_info *out)
{
    if (g->h->readonly) return core_err(OG_E_BAD_REQUEST, "the graph is open read-only");
    int rc = write_branch_name_check(name);
    if (rc) return rc;
    if (from && !is_main(from) && (rc = write_branch_name_check(from)) != 0) return rc;
    const char *src = is_main(from) ? NULL : from;
    size_t resolved = 0; /* the intents that can overlap the source branch */
    if ((rc = write_recover(g, src ? src : "main", &resolved)) != 0) return rc;
    write_gate_set *gate = NULL;
    if ((rc = write_gates_acquire(g->gates, &REFS_GATE, 1, g->gate_timeout_ms, &gate)) != 0)
        return rc;
    store *s = g->h->s;
    /* Under the gate: the source exists (and its version), the name is free and disjoint. The
     * source's head is the handle's cached one (checked to still be the latest: a probe, and
     * for a branch its ref's identity), whose manifest is forked as it is held: the gate keeps
     * cleanup (which takes it too) from removing that version meanwhile. */
    uint64_t version = 0;
    graph_head *hd = NULL;
    if (at && *at) {
        lance_branch src_ref;
        if (src && (rc = lance_branch_get(s, GRAPH_MANIFEST_DIR, src, &src_ref)) == OG_E_NOT_FOUND)
            rc = core_err(OG_E_NOT_FOUND, "branch '%s' does not exist", src);
        if (rc == 0) rc = graph_resolve_ref(s, src, at, &version);
    } else {
        rc = graph_handle_branch_head(g->h, src, &hd);
        lance_branch src_ref;
        if (rc == OG_E_NOT_FOUND && src &&
            lance_branch_get(s, GRAPH_MANIFEST_DIR, src, &src_ref) == OG_E_NOT_FOUND) {
            og_error_clear();
            rc = core_err(OG_E_NOT_FOUND, "branch '%s' does not exist", src);
        }
        if (rc == 0) version = graph_head_snapshot(hd)->manifest_version;
    }
    char fork_head[GRAPH_ID_LEN + 1] = ""; /* the source's head at version, when known */
    if (hd) memcpy(fork_head, graph_head_snapshot(hd)->head, sizeof fork_head);
    if (rc == 0) rc = check_fork_schema(g, src, version, hd);
    if (rc == 0) rc = check_disjoint(s, name);
    lance_branch ref;
    lance_dataset *fork_ds = NULL;
    if (rc == 0) {
        rc =
            lance_branch_create_ex(s, GRAPH_MANIFEST_DIR, name, src, version,
                                   hd ? graph_head_manifest(hd) : NULL, &ref, hd ? &fork_ds : NULL);
        if (rc == OG_E_EXISTS) { /* the name is taken (or a creator elsewhere just took it) */
            og_error_clear();
            rc = core_err(OG_E_EXISTS, "branch '%s' already exists", name);
            core_err_detail(CORE_ERR_KEY, name);
        }
    }
    /* The new branch's head, for its first write: the source's state at the fork point under
     * the branch's name and identity (nothing read back). Only a cache: on failure the first
     * write reads it. */
    if (rc == 0 && fork_ds) {
        graph_snapshot *fork_snap = NULL;
        graph_head *fork = NULL;
        if (graph_snapshot_fork(&fork_snap, graph_head_snapshot(hd), name, ref.identity) != 0) {
            lance_dataset_free(fork_ds);
            og_error_clear();
        } else if (graph_head_new(&fork, fork_ds, fork_snap) != 0) { /* it took both */
            og_error_clear();
        } else {
            graph_handle_install_branch(g->h, name, fork);
            graph_head_release(fork);
        }
    }
    graph_head_release(hd);
    write_gate_set_release(gate);
    if (rc == 0 && out && fork_head[0]) { /* all known: a fresh branch's head is its fork point */
        memset(out, 0, sizeof *out);
        snprintf(out->name, sizeof out->name, "%s", name);
        snprintf(out->parent, sizeof out->parent, "%s", src ? src : "main");
        snprintf(out->identity, sizeof out->identity, "%s", ref.identity);
        memcpy(out->forked_from, fork_head, sizeof out->forked_from);
        memcpy(out->head, fork_head, sizeof out->head);
        out->fork_version = out->manifest_version = version;
        out->created_at = ref.create_at;
    } else if (rc == 0 && out) {
        rc = fill_info(s, &ref, out);
        if (rc) { /* the branch stands; only the report failed */
            og_error_clear();
            memset(out, 0, sizeof *out);
            snprintf(out->name, sizeof out->name, "%s", name);
            snprintf(out->parent, sizeof out->parent, "%s", src ? src : "main");
            snprintf(out->identity, sizeof out->identity, "%s", ref.identity);
            out->fork_version = version;
            rc = 0;
        }
    }
    return rc;
}

/* The table forks named after the branch: its own files, reclaimed after its ref is gone.
 * Those its head pins (table_branch == name), and the orphans no head pins: a first touch
 * whose write did not publish (a crash after the fork; recovery leaves such a fork for the next
 * first touch to replace, and once the branch is gone there is none). A fork of that name
 * belongs to this graph branch alone, and no writer can be on it now: the branch gate was free
 * and the ref is gone. Best effort: leftovers are invisible (no graph branch names them) and a
 * later first-touch fork of the same name replaces them. */
static void reclaim_table_forks(store *s, const graph_snapshot *snap, const char *name)
{
    for (size_t i = 0; i < snap->n_tables; i++) {
        const graph_table *t = &snap->tables[i];
        bool pinned = t->table_branch && strcmp(t->table_branch, name) == 0;
        lance_branch ref;
        if (!pinned && lance_branch_get(s, t->path, name, &ref) != 0) {
            og_error_clear(); /* no fork of that name (or unreadable: left, see above) */
            continue;
        }
        if (lance_branch_delete(s, t->path, name, NULL) != 0)
            og_error_clear(); /* safe to leave: see above */
    }
}

/* write_branch_delete, and with expect_version (non-zero) also refused unless the branch's
 * head is still at that manifest version: no commit was made on it (write_branch_retract). */
static int branch_delete(write_graph *g, const char *name, const char *expect_identity,
                         uint64_t expect_version, write_branch_info *out)
{
    if (g->h->readonly) return core_err(OG_E_BAD_REQUEST, "the graph is open read-only");
    if (name && strcmp(name, "main") == 0)
        return core_err(OG_E_BAD_REQUEST, "branch 'main' cannot be deleted");
    int rc = write_branch_name_check(name);
    if (rc) return rc;
    store *s = g->h->s;
    size_t resolved = 0;
    if ((rc = write_recover(g, name, &resolved)) != 0) return rc;
    write_gate_set *refs = NULL, *mine = NULL;
    if ((rc = write_gates_acquire(g->gates, &REFS_GATE, 1, g->gate_timeout_ms, &refs)) != 0)
        return rc;
    /* The branch's own gate, without waiting: a write on it is under way. */
    write_gate_key bkey = {WRITE_GATE_BRANCH, name, NULL, false};
    rc = write_gates_acquire(g->gates, &bkey, 1, 0, &mine);
    if (rc == OG_E_CONFLICT || rc == OG_E_RESOURCE_LIMIT) {
        og_error_clear();
        rc = core_err(OG_E_CONFLICT,
                      "branch '%s' is being written (a writer holds its gate); retry once it "
                      "is done",
                      name);
    }
    lance_branch ref;
    if (rc == 0 && (rc = lance_branch_get(s, GRAPH_MANIFEST_DIR, name, &ref)) == OG_E_NOT_FOUND) {
        og_error_clear();
        rc = core_err(OG_E_NOT_FOUND, "branch '%s' does not exist", name);
    }
    if (rc == 0 && expect_identity && *expect_identity &&
        strcmp(ref.identity, expect_identity) != 0) {
        rc = core_err(OG_E_PRECONDITION_FAILED,
                      "branch '%s' was deleted and created again since it was read", name);
        core_err_detail(CORE_ERR_MEMBER, "branch_identity");
        core_err_detail(CORE_ERR_EXPECTED, expect_identity);
        core_err_detail(CORE_ERR_ACTUAL, ref.identity);
    }
    /* an interrupted write on this branch still to resolve (its owner may be alive) */
    write_pending *pend = NULL;
    size_t np = 0;
    if (rc == 0) rc = write_pending_list(s, false, &pend, &np);
    for (size_t i = 0; rc == 0 && i < np; i++) {
        if (pend[i].branch && strcmp(pend[i].branch, name) == 0) {
            rc = core_err(OG_E_RECOVERY_REQUIRED,
                          "branch '%s' has an unresolved write %s; resolve it first "
                          "(omnigraph recover show %s)",
                          name, pend[i].operation_id, pend[i].operation_id);
            core_err_detail(CORE_ERR_OPERATION_ID, pend[i].operation_id);
        }
    }
    write_pending_list_free(pend, np);
    /* The branch's head (the handle's cached one when it is still the latest of this
     * incarnation), for the table forks it names. */
    graph_head *hd = NULL;
    const graph_snapshot *snap = NULL;
    if (rc == 0) rc = graph_handle_branch_head(g->h, name, &hd);
    if (rc == 0) snap = graph_head_snapshot(hd);
    if (rc == 0 && strcmp(snap->branch_identity, ref.identity) != 0) {
        rc = core_err(OG_E_CONFLICT, "branch '%s' was deleted and created again meanwhile; retry",
                      name);
        core_err_detail(CORE_ERR_MEMBER, "branch_identity");
        core_err_detail(CORE_ERR_EXPECTED, ref.identity);
        core_err_detail(CORE_ERR_ACTUAL, snap->branch_identity);
    }
    if (rc == 0 && expect_version && snap->manifest_version != expect_version) {
        char e[32], a[32];
        snprintf(e, sizeof e, "%" PRIu64, expect_version);
        snprintf(a, sizeof a, "%" PRIu64, snap->manifest_version);
        rc = core_err(OG_E_PRECONDITION_FAILED,
                      "branch '%s' has commits of its own since it was created (manifest "
                      "version %s, not %s): it is in use",
                      name, a, e);
        core_err_detail(CORE_ERR_MEMBER, "branch_head");
        core_err_detail(CORE_ERR_EXPECTED, e);
        core_err_detail(CORE_ERR_ACTUAL, a);
    }
    if (rc == 0 && out) rc = fill_info(s, &ref, out);
    /* a branch forked from this one reads its history (its files, through base paths) */
    lance_branch *all = NULL;
    size_t na = 0;
    if (rc == 0) rc = lance_branch_list(s, GRAPH_MANIFEST_DIR, &all, &na);
    for (size_t i = 0; rc == 0 && i < na; i++) {
        if (strcmp(all[i].parent, name) != 0) continue;
        rc = core_err(OG_E_PRECONDITION_FAILED,
                      "branch '%s' cannot be deleted: branch '%s' was forked from it and reads "
                      "its history; delete '%s' first",
                      name, all[i].name, all[i].name);
        core_err_detail(CORE_ERR_KEY, all[i].name);
    }
    lance_branch_list_free(all);
    /* the visibility point: the ref goes if it is still the one checked */
    if (rc == 0) rc = lance_branch_delete(s, GRAPH_MANIFEST_DIR, name, ref.identity);
    if (rc == 0) {
        reclaim_table_forks(s, snap, name);
        graph_handle_forget(g->h, hd); /* its branch is gone */
    }
    graph_head_release(hd);
    write_gate_set_release(mine);
    write_gate_set_release(refs);
    return rc;
}

int write_branch_delete(write_graph *g, const char *name, const char *expect_identity,
                        write_branch_info *out)
{
    return branch_delete(g, name, expect_identity, 0, out);
}

int write_branch_retract(write_graph *g, const write_branch_info *created)
{
    if (!created->identity[0] || !created->manifest_version)
        return core_err(OG_E_BAD_REQUEST, "write_branch_retract: not a branch just created");
    return branch_delete(g, created->name, created->identity, created->manifest_version, NULL);
}

/* ---- graph branches without a ref ------------------------------------------------------------ */

static int refless_add(char ***names, size_t *n, const char *name)
{
    char **grown = core_realloc(*names, (*n + 1) * sizeof *grown);
    if (!grown) return core_err_nomem();
    *names = grown;
    if (!(grown[*n] = core_strdup(name))) return core_err_nomem();
    (*n)++;
    return 0;
}

/* dir: a folder under the graph manifest, "tree/..." (depth 0: "tree/" itself). */
static int refless_walk(store *s, const char *dir, int depth, char ***names, size_t *n)
{
    char prefix[STORE_KEY_MAX];
    int rc = lance_key(prefix, GRAPH_MANIFEST_DIR, dir, "");
    if (rc) return rc;
    store_list l;
    memset(&l, 0, sizeof l);
    rc = store_list_prefix(s, prefix, STORE_LIST_DELIMITED, &l);
    if (rc == OG_E_NOT_FOUND) {
        og_error_clear();
        return 0;
    }
    if (rc) return rc;
    store_list_sort(&l);
    const size_t np = strlen(prefix), nt = strlen(LANCE_TREE_DIR);
    bool versions = false;
    for (size_t i = 0; i < l.count; i++)
        if (l.items[i].is_prefix && !strcmp(l.items[i].key + np, LANCE_VERSIONS_DIR))
            versions = true;
    if (versions && depth > 0) {
        char name[STORE_KEY_MAX], key[STORE_KEY_MAX];
        snprintf(name, sizeof name, "%.*s", (int)(strlen(dir) - nt - 1), dir + nt);
        store_meta m;
        if (write_branch_name_check(name) != 0) {
            og_error_clear(); /* not a branch's folder */
        } else if ((rc = lance_branch_ref_key(key, GRAPH_MANIFEST_DIR, name)) == 0) {
            rc = store_head(s, key, &m);
            if (rc == OG_E_NOT_FOUND) {
                og_error_clear();
                rc = refless_add(names, n, name);
            }
        }
    } else if (depth < 8) {
        for (size_t i = 0; rc == 0 && i < l.count; i++) {
            const char *child = l.items[i].key + np; /* "seg/" */
            if (!l.items[i].is_prefix || (depth > 0 && child[0] == '_')) continue;
            char sub[STORE_KEY_MAX];
            snprintf(sub, sizeof sub, "%s%s", dir, child);
            rc = refless_walk(s, sub, depth + 1, names, n);
        }
    }
    store_list_free(&l);
    return rc;
}

int write_branch_refless(store *s, char ***names, size_t *n)
{
    *names = NULL;
    *n = 0;
    int rc = refless_walk(s, LANCE_TREE_DIR, 0, names, n);
    if (rc != 0) {
        for (size_t i = 0; i < *n; i++)
            core_free((*names)[i]);
        core_free(*names);
        *names = NULL;
        *n = 0;
    }
    return rc;
}
