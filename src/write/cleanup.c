/* Graph cleanup (RFC-022 §8, maintenance): remove the Lance versions and files that no
 * retained graph commit needs, in every table and in the graph manifest.
 *
 * Retention is decided on commits, then mapped to versions:
 *  - a commit of main stays readable (`--at`) when it is among the newest `keep` or younger
 *    than `older_than_us` (each rule only when given; the head always stays);
 *  - the oldest retained commit's manifest version is the manifest's floor, and the table
 *    versions its snapshot pins are each table's floor. Versions only grow along main (a
 *    rollback is a new version), so every retained commit pins versions at or above the
 *    floors, and every version at or above them stays;
 *  - lance_cleanup then deletes the versions below each floor and the files only they named,
 *    plus files no version names that are older than the orphan grace (attempts that staged
 *    files and never committed): the graph manifest's first, then each table's, then the
 *    tables of dropped types. Every commit that can still be read (its manifest version
 *    stored) pins table versions at or above the floors at every step, so a crash anywhere
 *    leaves a graph that verifies clean and the next cleanup finishes the job.
 * Order and races: the recovery barrier runs first, so no interrupted write still needs an
 * old version to roll back to. Writers that publish meanwhile only add versions above the
 * floors; readers of a retained commit read versions at or above them. A table's floor is at
 * most its pinned version, which a writer holding the table's gate commits on top of, so
 * table commits never land among deleted versions; the manifest is cleaned under the branch
 * gate (below), and version discovery re-checks the version it found (version.c), so a
 * publisher whose cached base was deleted cannot recreate a deleted version number. A reader of an
 * expired commit may fail mid-read: that commit is the one the caller asked to forget. The commit
 * rows stay in the lineage (commit list still shows them); reading one of them fails typed
 * (graph_snapshot_load says the version was removed). */
#include "write/internal.h"

#include "core/alloc.h"
#include "core/clock.h"
#include "core/error.h"
#include "lance/cleanup.h"
#include "lance/paths.h"
#include "lance/version.h"

#include <stdio.h>
#include <string.h>

static void add_report(write_cleanup_report *out, const lance_cleanup_report *r)
{
    out->versions_removed += r->versions_deleted;
    out->files_removed += r->versions_deleted + r->data_files_deleted + r->deletion_files_deleted +
                          r->txn_files_deleted;
    out->bytes_removed += r->bytes_deleted;
    out->files_spared_recent += r->files_spared_recent;
}

static bool has_path(const graph_snapshot *snap, const char *path)
{
    for (size_t i = 0; i < snap->n_tables; i++)
        if (strcmp(snap->tables[i].path, path) == 0) return true;
    return false;
}

/* The versions of main's tables that graph branches read: each branch's snapshot at its fork
 * point and at its head pins versions of tables it has not forked (table_branch NULL), and a
 * commit in between pins nothing older (a branch only moves a table by forking it). */
typedef struct branch_pin {
    char *path;
    uint64_t version;
} branch_pin;

static void pins_free(branch_pin *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        core_free(p[i].path);
    core_free(p);
}

static int pins_add_snapshot(branch_pin **p, size_t *n, size_t *cap, const graph_snapshot *snap)
{
    for (size_t i = 0; i < snap->n_tables; i++) {
        const graph_table *t = &snap->tables[i];
        if (t->table_branch) continue;
        if (*n == *cap) {
            size_t nc = *cap ? *cap * 2 : 16;
            branch_pin *np = core_realloc(*p, nc * sizeof *np);
            if (!np) return core_err_nomem();
            *p = np;
            *cap = nc;
        }
        if (!((*p)[*n].path = core_strdup(t->path))) return core_err_nomem();
        (*p)[(*n)++].version = t->version;
    }
    return 0;
}

static int branch_pins(store *s, branch_pin **out, size_t *n, uint64_t *oldest_fork)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    lance_branch *refs = NULL;
    size_t nr = 0;
    int rc = lance_branch_list(s, GRAPH_MANIFEST_DIR, &refs, &nr);
    for (size_t i = 0; rc == 0 && i < nr; i++) {
        /* Lance cleanup keeps main's manifest versions from a fork point up (contiguous) */
        if (!refs[i].parent[0] && refs[i].parent_version < *oldest_fork)
            *oldest_fork = refs[i].parent_version;
        for (int at_fork = 1; rc == 0 && at_fork >= 0; at_fork--) {
            graph_snapshot *snap = NULL;
            rc = graph_snapshot_load(&snap, s, refs[i].name, at_fork ? refs[i].parent_version : 0,
                                     0);
            if (rc == 0) rc = pins_add_snapshot(out, n, &cap, snap);
            graph_snapshot_free(snap);
        }
    }
    lance_branch_list_free(refs);
    if (rc) {
        pins_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

static uint64_t pinned_floor(const branch_pin *p, size_t n, const char *path, uint64_t floor)
{
    for (size_t i = 0; i < n; i++)
        if (p[i].version < floor && strcmp(p[i].path, path) == 0) floor = p[i].version;
    return floor;
}

static int clean_one(write_graph *g, const char *root, uint64_t floor,
                     const write_cleanup_options *opt, write_cleanup_report *out)
{
    lance_cleanup_options co = LANCE_CLEANUP_OPTIONS_INIT;
    co.before_version = floor;
    co.older_than_ms = -1; /* retention was decided on commits */
    co.safety_window_ms = opt->orphan_grace_ms;
    co.dry_run = opt->dry_run;
    co.contiguous = true; /* a version kept for a tag below the floor must not leave a gap */
    lance_cleanup_report r;
    memset(&r, 0, sizeof r);
    int rc = lance_cleanup(g->h->s, root, &co, &r);
    if (rc == 0) {
        add_report(out, &r);
        out->tables++;
        if (opt->progress) opt->progress(opt->progress_arg, root, out->tables, out->tables_total);
    }
    return rc;
}

/* ---- the tables of dropped types ----------------------------------------------------------
 * A schema apply that drops a type leaves its table behind: the commits made before the drop
 * read it. Once no retained commit can (the table is live in none of the floor's snapshot,
 * the snapshots at the schema changes after the floor and the head: a graph's set of tables
 * changes only at those) and no graph branch pins it, its whole dataset goes. So does a table
 * directory that no manifest row registers (an apply that created a new type's table and
 * failed or crashed before its commit), once everything in it is older than the orphan grace.
 * An apply creates its new tables in its prepare, before it takes its gates, so the branch-refs
 * gate held here does not exclude that: the orphan grace does (an apply whose prepare and
 * commit are further apart than the grace could have them removed under it; not guarded). A
 * crash part way leaves a partly removed dataset that nothing reads; the next cleanup
 * finishes it. */

static bool snap_has(const graph_snapshot *const *snaps, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (snaps[i] && has_path(snaps[i], path)) return true;
    return false;
}

static bool pinned(const branch_pin *p, size_t n, const char *path)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(p[i].path, path) == 0) return true;
    return false;
}

/* Remove every object under prefix (a dataset's directory, ending in '/'), unless the newest
 * is younger than the orphan grace when `grace` is set: then *spared is set and nothing is
 * removed. */
static int remove_dataset(store *s, const char *prefix, bool grace,
                          const write_cleanup_options *opt, write_cleanup_report *out, bool *spared)
{
    store_list l = {0};
    int rc = store_list_prefix(s, prefix, 0, &l);
    uint64_t newest = 0, bytes = 0;
    for (size_t i = 0; rc == 0 && i < l.count; i++) {
        if (l.items[i].mtime_ms > newest) newest = l.items[i].mtime_ms;
        bytes += l.items[i].size;
    }
    if (rc == 0 && l.count == 0) { /* nothing left (a local store keeps empty directories) */
        store_list_free(&l);
        return 0;
    }
    *spared = rc == 0 && grace && core_wall_ms() < newest + opt->orphan_grace_ms;
    for (size_t i = 0; rc == 0 && !*spared && !opt->dry_run && i < l.count; i++)
        rc = store_delete(s, l.items[i].key, 0);
    if (rc == 0 && !*spared) {
        out->tables_removed++;
        out->files_removed += l.count;
        out->bytes_removed += bytes;
    }
    if (rc == 0 && *spared) out->files_spared_recent += l.count;
    store_list_free(&l);
    return rc;
}

static int reclaim_tables(write_graph *g, const graph_snapshot *head,
                          const graph_snapshot *floor_snap, uint64_t kept_from,
                          const branch_pin *pins, size_t npins, const write_cleanup_options *opt,
                          write_cleanup_report *out)
{
    store *s = g->h->s;
    lance_dataset *m = NULL;
    graph_registry reg;
    memset(&reg, 0, sizeof reg);
    int rc =
        lance_dataset_open(&m, s, GRAPH_MANIFEST_DIR, head->manifest_version, LANCE_ACCESS_READ);
    if (rc == 0) rc = graph_registry_load(&reg, m);
    lance_dataset_free(m);
    /* the retained sets of tables: head, floor, and at each schema change after the oldest
     * manifest version kept (kept_from: the floor, or a branch's fork point below it, above
     * which the manifest keeps every version) */
    size_t nsnaps = 2;
    graph_snapshot **snaps = core_calloc(reg.n_schema_versions + 2, sizeof *snaps);
    if (rc == 0 && !snaps) rc = core_err_nomem();
    if (snaps) {
        snaps[0] = (graph_snapshot *)head;
        snaps[1] = (graph_snapshot *)floor_snap;
    }
    for (size_t i = 0; rc == 0 && i < reg.n_schema_versions; i++) {
        uint64_t v = reg.schema_versions[i];
        if (v <= kept_from || v >= head->manifest_version) continue;
        rc = graph_snapshot_load(&snaps[nsnaps], s, NULL, v, 0);
        if (rc == 0) nsnaps++;
    }
    static const char *const dirs[] = {GRAPH_NODES_DIR "/", GRAPH_EDGES_DIR "/"};
    for (size_t d = 0; rc == 0 && d < 2; d++) {
        store_list l = {0};
        rc = store_list_prefix(s, dirs[d], STORE_LIST_DELIMITED, &l);
        for (size_t i = 0; rc == 0 && i < l.count; i++) {
            if (!l.items[i].is_prefix) continue;
            char path[STORE_KEY_MAX];
            size_t n = strlen(l.items[i].key);
            if (n < 2 || n >= sizeof path) continue;
            memcpy(path, l.items[i].key, n - 1); /* without the trailing '/' */
            path[n - 1] = 0;
            if (snap_has((const graph_snapshot *const *)snaps, nsnaps, path) ||
                pinned(pins, npins, path))
                continue;
            bool spared = false;
            rc = remove_dataset(s, l.items[i].key, !graph_registry_has(&reg, path), opt, out,
                                &spared);
        }
        store_list_free(&l);
    }
    for (size_t i = 2; i < nsnaps; i++)
        graph_snapshot_free(snaps[i]);
    core_free(snaps);
    graph_registry_free(&reg);
    return rc;
}

/* *whole: every table version snap pins is stored. One head per table (two for a table with
 * V1 names), whatever the history's depth: table versions only grow along main and Lance
 * cleanup keeps them one run up to the latest, so when the oldest readable commit's pins are
 * there, every later commit's are too. */
static int pins_stored(store *s, const graph_snapshot *snap, bool *whole)
{
    *whole = true;
    for (size_t i = 0; *whole && i < snap->n_tables; i++) {
        const graph_table *t = &snap->tables[i];
        if (t->table_branch && *t->table_branch) continue; /* main's snapshots fork nothing */
        int rc = OG_E_NOT_FOUND;
        for (int nm = 0; rc == OG_E_NOT_FOUND && nm < 2; nm++) {
            char name[LANCE_VERSION_NAME_CAP], key[STORE_KEY_MAX];
            store_meta meta;
            og_error_clear();
            rc = lance_version_file_name(name, sizeof name, nm ? LANCE_NAMING_V1 : LANCE_NAMING_V2,
                                         t->version);
            if (rc == 0) rc = lance_key(key, t->path, LANCE_VERSIONS_DIR, name);
            if (rc == 0) rc = store_head(s, key, &meta);
        }
        if (rc == OG_E_NOT_FOUND) {
            og_error_clear();
            *whole = false;
        } else if (rc) {
            return rc;
        }
    }
    return 0;
}

int write_cleanup(write_graph *g, const write_cleanup_options *opt, write_cleanup_report *out)
{
    memset(out, 0, sizeof *out);
    if (!opt || opt->version != 1)
        return core_err(OG_E_BAD_REQUEST, "write_cleanup_options version is not 1");
    if (g->h->readonly) return core_err(OG_E_BAD_REQUEST, "the graph is open read-only");
    if (opt->keep == 0 && opt->older_than_us < 0)
        return core_err(OG_E_BAD_REQUEST,
                        "cleanup needs a retention rule: keep the newest N commits, or the "
                        "commits younger than a duration, or both");
    size_t resolved = 0;
    int rc = write_recover(g, NULL, &resolved);
    if (rc != 0) return rc;
    /* Temporaries of writers that died between writes (no intent names them). */
    uint64_t temps = 0;
    if (!opt->dry_run && (rc = store_reclaim(g->h->s, &temps)) != 0) return rc;
    out->temps_removed = temps;
    graph_snapshot *head = NULL, *floor_snap = NULL;
    if ((rc = graph_snapshot_load(&head, g->h->s, NULL, 0, GRAPH_SNAP_LINEAGE)) != 0) return rc;
    /* commits are newest first; a commit expires when it breaks every rule given */
    int64_t now = (int64_t)core_wall_us();
    out->commits_total = head->n_commits;
    bool *keep = core_calloc(head->n_commits ? head->n_commits : 1, sizeof *keep);
    if (!keep) {
        graph_snapshot_free(head);
        return core_err_nomem();
    }
    for (size_t i = 0; i < head->n_commits; i++) {
        const graph_commit *c = &head->commits[i];
        bool by_count = opt->keep > 0 && i < opt->keep;
        bool by_age = opt->older_than_us >= 0 && now - c->created_at_us < opt->older_than_us;
        keep[i] = i == 0 || by_count || by_age;
    }
    /* The floor: the oldest retained commit that can still be read. An earlier cleanup may have
     * removed older ones, which then stay unreadable whatever the rules say: their manifest
     * version is gone, or (a cleanup of an older build, which deleted table versions first,
     * killed part way) a table version they pin is. The latter are left below the floor, so
     * this run removes their manifest versions and the graph verifies clean again. */
    uint64_t floor_mver = head->manifest_version;
    for (size_t k = head->n_commits; rc == 0 && k-- > 0;) {
        if (!keep[k]) continue;
        const graph_commit *c = &head->commits[k];
        if (!floor_snap && c->manifest_version < head->manifest_version) {
            rc = graph_snapshot_load(&floor_snap, g->h->s, NULL, c->manifest_version, 0);
            bool whole = false;
            if (rc == 0) rc = pins_stored(g->h->s, floor_snap, &whole);
            if (rc == OG_E_NOT_FOUND || (rc == 0 && !whole)) {
                og_error_clear();
                graph_snapshot_free(floor_snap);
                floor_snap = NULL;
                rc = 0;
                continue;
            }
        }
        if (c->manifest_version < floor_mver) floor_mver = c->manifest_version;
        if (!out->oldest_retained[0] || c->manifest_version <= floor_mver)
            snprintf(out->oldest_retained, sizeof out->oldest_retained, "%s", c->id);
        out->commits_retained++;
    }
    core_free(keep);
    out->floor_manifest_version = floor_mver;
    if (rc == 0 && !floor_snap) rc = graph_snapshot_load(&floor_snap, g->h->s, NULL, floor_mver, 0);
    /* the tables to clean: those of the head and of the floor (a table dropped since the floor
     * still serves the commits in between) */
    out->tables_total = 1 + head->n_tables;
    for (size_t i = 0; rc == 0 && i < floor_snap->n_tables; i++)
        out->tables_total += !has_path(head, floor_snap->tables[i].path);
    /* graph branches read main's tables at the versions they pin; the branch-refs gate keeps
     * a branch from being created (in this process, or on this host) while this runs */
    branch_pin *pins = NULL;
    size_t npins = 0;
    uint64_t kept_from = floor_mver;
    write_gate_key refs_key = {WRITE_GATE_SCHEMA, WRITE_BRANCH_REFS_GATE, NULL, false};
    write_gate_set *refs = NULL;
    if (rc == 0) rc = write_gates_acquire(g->gates, &refs_key, 1, g->gate_timeout_ms, &refs);
    if (rc == 0) rc = branch_pins(g->h->s, &pins, &npins, &kept_from);
    /* The manifest first: once its versions below the floor are gone, no commit that can
     * still be read pins a table version below a table's floor, so the table versions and
     * files deleted next are ones nothing names, and a crash at any point leaves a graph that
     * verifies clean (what is left is unreferenced files the next cleanup removes). Deleting
     * table versions first left, until the manifest's turn, stored commits whose table
     * versions were gone (issue 33, F3). Under the branch gate, so no publisher is between
     * finding the latest version and committing the next one while versions below it
     * disappear (a publisher that starts later finds its cached base gone and starts from the
     * hint: lance_version_latest_from). */
    if (rc == 0) {
        write_gate_key key = {WRITE_GATE_BRANCH, "main", NULL, false};
        write_gate_set *gate = NULL;
        rc = write_gates_take(g, &key, 1, &gate);
        if (rc == 0) rc = clean_one(g, GRAPH_MANIFEST_DIR, floor_mver, opt, out);
        write_gate_set_release(gate);
    }
    for (size_t i = 0; rc == 0 && i < head->n_tables; i++) {
        const graph_table *t = &head->tables[i];
        const graph_table *f = graph_snapshot_table(floor_snap, t->alias);
        /* a table the floor does not know was created later: all its versions are needed */
        uint64_t floor = f && strcmp(f->path, t->path) == 0 ? f->version : 1;
        rc = clean_one(g, t->path, pinned_floor(pins, npins, t->path, floor), opt, out);
    }
    for (size_t i = 0; rc == 0 && i < floor_snap->n_tables; i++) {
        const graph_table *f = &floor_snap->tables[i];
        if (!has_path(head, f->path))
            rc = clean_one(g, f->path, pinned_floor(pins, npins, f->path, f->version), opt, out);
    }
    if (rc == 0) rc = reclaim_tables(g, head, floor_snap, kept_from, pins, npins, opt, out);
    pins_free(pins, npins);
    write_gate_set_release(refs);
    graph_snapshot_free(floor_snap);
    graph_snapshot_free(head);
    return rc;
}

/* ---- a cleanup killed part way by an older build (repair) ---------------------------------
 * That build deleted table versions before the graph-manifest versions naming them: killed in
 * between, it left commits whose manifest version is stored but a pinned table version is
 * not. They are below where that cleanup put the floor, hence unreadable and outside its
 * retention: finishing it means deleting their manifest versions, as it would have. */

int write_cleanup_unfinished(store *s, uint64_t *commits, uint64_t *floor)
{
    *commits = 0;
    *floor = 0;
    graph_snapshot *head = NULL;
    lance_version_list vl = {0};
    int rc = graph_snapshot_load(&head, s, NULL, 0, GRAPH_SNAP_LINEAGE);
    /* one listing for the oldest stored version: the commits below it are gone already, and
     * loading each would cost per removed commit */
    if (rc == 0) rc = lance_versions_list(s, GRAPH_MANIFEST_DIR, &vl);
    uint64_t oldest = rc == 0 && vl.n ? vl.v[0] : 0;
    for (size_t k = rc == 0 ? head->n_commits : 0; rc == 0 && k-- > 1;) {
        const graph_commit *c = &head->commits[k];
        if (c->manifest_version < oldest || c->manifest_version >= head->manifest_version) continue;
        graph_snapshot *snap = NULL;
        bool whole = false;
        rc = graph_snapshot_load(&snap, s, NULL, c->manifest_version, 0);
        if (rc == 0) rc = pins_stored(s, snap, &whole);
        graph_snapshot_free(snap);
        if (rc == OG_E_NOT_FOUND) { /* deleted meanwhile */
            og_error_clear();
            rc = 0;
            continue;
        }
        if (rc == 0 && whole) {
            *floor = c->manifest_version;
            break;
        }
        if (rc == 0) (*commits)++;
    }
    if (rc == 0 && *commits && !*floor) *floor = head->manifest_version;
    if (rc == 0 && !*commits) *floor = 0;
    lance_version_list_free(&vl);
    graph_snapshot_free(head);
    return rc;
}

int write_cleanup_finish(write_graph *g, uint64_t floor, uint64_t *versions_removed)
{
    *versions_removed = 0;
    write_cleanup_options opt = WRITE_CLEANUP_OPTIONS_INIT;
    write_cleanup_report out;
    memset(&out, 0, sizeof out);
    write_gate_key key = {WRITE_GATE_BRANCH, "main", NULL, false};
    write_gate_set *gate = NULL;
    int rc = write_gates_take(g, &key, 1, &gate); /* as cleanup does: see write_cleanup */
    if (rc == 0) rc = clean_one(g, GRAPH_MANIFEST_DIR, floor, &opt, &out);
    write_gate_set_release(gate);
    *versions_removed = out.versions_removed;
    return rc;
}
