/* The open graph (graph_handle.h): the store, the accepted schema, the actor, and the cached
 * head of main that reads at the head and the writer's prepares start from. */
#include "graph/graph_handle.h"

#include "core/alloc.h"
#include "core/error.h"
#include "lance/version.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* ---- heads ------------------------------------------------------------------------------- */

struct graph_head {
    atomic_int refs;
    lance_dataset *ds; /* the manifest at snap->manifest_version */
    graph_snapshot *snap;
    pthread_mutex_t mu;     /* guards tables */
    lance_dataset **tables; /* per snap->tables[i]: opened at its pin on first use */
};

int graph_head_new(graph_head **out, lance_dataset *manifest, graph_snapshot *snap)
{
    *out = NULL;
    graph_head *hd = core_calloc(1, sizeof *hd);
    if (!hd) {
        lance_dataset_free(manifest);
        graph_snapshot_free(snap);
        return core_err_nomem();
    }
    atomic_init(&hd->refs, 1);
    pthread_mutex_init(&hd->mu, NULL);
    hd->ds = manifest;
    hd->snap = snap;
    *out = hd;
    return 0;
}

int graph_head_load(graph_head **out, store *s, const char *branch)
{
    *out = NULL;
    lance_dataset *ds = NULL;
    graph_snapshot *snap = NULL;
    int rc = graph_manifest_snapshot(&ds, &snap, s, branch, 0, LANCE_ACCESS_WRITE);
    if (rc != 0) return rc;
    return graph_head_new(out, ds, snap);
}

graph_head *graph_head_retain(graph_head *hd)
{
    if (hd) atomic_fetch_add(&hd->refs, 1);
    return hd;
}

void graph_head_release(graph_head *hd)
{
    if (hd && atomic_fetch_sub(&hd->refs, 1) == 1) {
        for (size_t i = 0; hd->tables && hd->snap && i < hd->snap->n_tables; i++)
            lance_dataset_free(hd->tables[i]);
        core_free(hd->tables);
        pthread_mutex_destroy(&hd->mu);
        lance_dataset_free(hd->ds);
        graph_snapshot_free(hd->snap);
        core_free(hd);
    }
}

const graph_snapshot *graph_head_snapshot(const graph_head *hd)
{
    return hd->snap;
}

const lance_dataset *graph_head_manifest(const graph_head *hd)
{
    return hd->ds;
}

int graph_head_table(void *arg, const graph_table *t, const lance_dataset **out)
{
    graph_head *hd = arg;
    size_t i = (size_t)(t - hd->snap->tables);
    if (t < hd->snap->tables || i >= hd->snap->n_tables)
        return core_err(OG_E_INTERNAL, "table %s is not of this head", t->alias);
    pthread_mutex_lock(&hd->mu);
    int rc = 0;
    if (!hd->tables && !(hd->tables = core_calloc(hd->snap->n_tables, sizeof *hd->tables)))
        rc = core_err_nomem();
    if (rc == 0 && !hd->tables[i])
        rc = graph_table_open(&hd->tables[i], hd->ds->s, t, LANCE_ACCESS_WRITE);
    if (rc == 0) *out = hd->tables[i];
    pthread_mutex_unlock(&hd->mu);
    return rc;
}

/* ---- the handle's cached head -------------------------------------------------------------
 * The state at a manifest version is immutable, so the handle keeps the last head of main it
 * saw, and a request that finds main still at that version takes it with a probe or two of
 * the version search instead of re-reading the manifest. Only main is cached. */

static pthread_mutex_t *lock_of(graph_handle *h)
{
    return (pthread_mutex_t *)h->lock_;
}

void graph_handle_install(graph_handle *h, graph_head *hd)
{
    pthread_mutex_lock(lock_of(h));
    graph_head *old = h->head_;
    h->head_ = graph_head_retain(hd);
    pthread_mutex_unlock(lock_of(h));
    graph_head_release(old);
}

void graph_handle_install_unchanged(graph_handle *h, uint64_t from, lance_dataset *manifest)
{
    pthread_mutex_lock(lock_of(h));
    graph_head *c = graph_head_retain(h->head_);
    pthread_mutex_unlock(lock_of(h));
    graph_snapshot *snap = NULL;
    graph_head *hd = NULL;
    if (!c || c->snap->manifest_version != from || graph_snapshot_copy(&snap, c->snap) != 0) {
        og_error_clear(); /* only a cache: the next read at the head reads it */
        lance_dataset_free(manifest);
    } else {
        snap->manifest_version = lance_dataset_version(manifest);
        if (graph_head_new(&hd, manifest, snap) == 0) /* takes both */
            graph_handle_install(h, hd);
        else
            og_error_clear();
        graph_head_release(hd);
    }
    graph_head_release(c);
}

/* The cached heads of branches other than main, most recently used first. */
typedef struct branch_slot {
    char *name;
    graph_head *hd;
} branch_slot;

static branch_slot *slots_of(graph_handle *h)
{
    return (branch_slot *)h->branches_;
}

void graph_handle_forget(graph_handle *h, const graph_head *hd)
{
    graph_head *old = NULL, *old_b = NULL;
    pthread_mutex_lock(lock_of(h));
    if (h->head_ == hd) {
        old = h->head_;
        h->head_ = NULL;
    }
    branch_slot *sl = slots_of(h);
    for (size_t i = 0; sl && i < GRAPH_HANDLE_BRANCH_HEADS; i++) {
        if (sl[i].hd != hd || !hd) continue;
        old_b = sl[i].hd;
        sl[i].hd = NULL;
    }
    pthread_mutex_unlock(lock_of(h));
    graph_head_release(old);
    graph_head_release(old_b);
}

void graph_handle_install_branch(graph_handle *h, const char *branch, graph_head *hd)
{
    if (!branch) {
        graph_handle_install(h, hd);
        return;
    }
    char *name = core_strdup(branch);
    if (!name) return; /* only a cache */
    graph_head *old = NULL;
    char *old_name = NULL;
    pthread_mutex_lock(lock_of(h));
    branch_slot *sl = slots_of(h);
    if (!sl && (sl = core_calloc(GRAPH_HANDLE_BRANCH_HEADS, sizeof *sl)) != NULL) h->branches_ = sl;
    if (sl) {
        /* the branch's slot, else the last (least recently used); then move it to the front */
        size_t i = 0;
        while (i + 1 < GRAPH_HANDLE_BRANCH_HEADS && !(sl[i].name && !strcmp(sl[i].name, branch)))
            i++;
        old = sl[i].hd;
        old_name = sl[i].name;
        memmove(sl + 1, sl, i * sizeof *sl);
        sl[0].name = name;
        sl[0].hd = graph_head_retain(hd);
        name = NULL;
    }
    pthread_mutex_unlock(lock_of(h));
    core_free(name);
    core_free(old_name);
    graph_head_release(old);
}

/* A head read afresh is checked before it is served (graph_head_check_tables): a lost newer
 * manifest version would otherwise make it a silently stale head. A writer's own commits are
 * installed without the check: it made them. A manifest that moved meanwhile is read again. */
static int head_load_checked(graph_head **out, store *s, const char *branch)
{
    *out = NULL;
    for (int tries = 0;; tries++) {
        graph_head *hd = NULL;
        int rc = graph_head_load(&hd, s, branch);
        if (rc) return rc;
        bool moved = false;
        rc = graph_head_check_tables(s, hd->snap, hd->ds->naming, &moved);
        if (rc == 0 && (!moved || tries == 4)) {
            *out = hd;
            return 0;
        }
        graph_head_release(hd);
        if (rc) return rc;
    }
}

int graph_handle_branch_head(graph_handle *h, const char *branch, graph_head **out)
{
    return graph_handle_branch_head_ex(h, branch, 0, out);
}

int graph_handle_branch_head_ex(graph_handle *h, const char *branch, unsigned flags,
                                graph_head **out)
{
    if (!branch) return graph_handle_head_ex(h, flags, out);
    *out = NULL;
    graph_head *c = NULL;
    pthread_mutex_lock(lock_of(h));
    branch_slot *sl = slots_of(h);
    for (size_t i = 0; sl && i < GRAPH_HANDLE_BRANCH_HEADS; i++)
        if (sl[i].name && !strcmp(sl[i].name, branch)) c = graph_head_retain(sl[i].hd);
    pthread_mutex_unlock(lock_of(h));
    if (c) {
        char root[STORE_KEY_MAX];
        uint64_t latest = 0;
        int rc = lance_branch_root(root, GRAPH_MANIFEST_DIR, branch);
        /* the same incarnation (a branch deleted and created again may reach the version) */
        lance_branch ref;
        if (rc == 0) rc = lance_branch_get(h->s, GRAPH_MANIFEST_DIR, branch, &ref);
        if (rc == 0)
            rc = lance_version_latest_from_flags(
                h->s, root, c->ds->naming, lance_dataset_version(c->ds),
                flags & GRAPH_HEAD_PREGATE ? 0 : LANCE_LATEST_GAPS, &latest);
        if (rc == OG_E_CORRUPT) {
            graph_head_release(c);
            return graph_head_lost(rc); /* a lost version below a newer one: never stale */
        }
        if (rc == 0 && latest == c->snap->manifest_version &&
            strcmp(ref.identity, c->snap->branch_identity) == 0) {
            *out = c;
            return 0;
        }
        og_error_clear(); /* read afresh below */
    }
    /* the cached version, for the chain check of the one found on top of it */
    lance_manifest *prev = c ? lance_manifest_share(c->ds->m) : NULL;
    graph_head_release(c);
    graph_head *hd = NULL;
    int rc = head_load_checked(&hd, h->s, branch);
    if (rc == 0 && (rc = graph_manifest_chain_follows(h->s, hd->ds, prev)) != 0)
        graph_head_release(hd);
    lance_manifest_free(prev);
    if (rc) return rc;
    graph_handle_install_branch(h, branch, hd);
    *out = hd;
    return 0;
}

int graph_handle_head(graph_handle *h, graph_head **out)
{
    return graph_handle_head_ex(h, 0, out);
}

int graph_handle_head_ex(graph_handle *h, unsigned flags, graph_head **out)
{
    *out = NULL;
    pthread_mutex_lock(lock_of(h));
    graph_head *c = graph_head_retain(h->head_);
    pthread_mutex_unlock(lock_of(h));
    /* Probing on from the cached version, without looking at it again: a write re-checks its
     * base under the gates, and a read at a version cleanup has just removed fails typed. A
     * read also heads the version after the first missing one, so a version lost below newer
     * ones is an error, not a stale head; a write's pre-gate look need not (its look under the
     * gates does). */
    uint64_t latest = 0;
    lance_naming naming = LANCE_NAMING_UNKNOWN;
    unsigned look = flags & GRAPH_HEAD_PREGATE ? 0 : LANCE_LATEST_GAPS;
    int rc = c ? lance_version_latest_from_flags(h->s, GRAPH_MANIFEST_DIR, c->ds->naming,
                                                 lance_dataset_version(c->ds), look, &latest)
               : lance_version_latest_owned(h->s, GRAPH_MANIFEST_DIR, 0, true, &latest, &naming);
    if (rc == 0 && c && c->snap->manifest_version == latest) {
        *out = c;
        return 0;
    }
    /* the cached version, for the chain check of the one found on top of it */
    lance_manifest *prev = c ? lance_manifest_share(c->ds->m) : NULL;
    graph_head_release(c);
    if (rc != 0) lance_manifest_free(prev);
    if (rc == OG_E_NOT_FOUND)
        return core_err(OG_E_NOT_FOUND, "no graph here (no %s)", GRAPH_MANIFEST_DIR);
    if (rc == OG_E_CORRUPT) return graph_head_lost(rc);
    if (rc != 0) return rc;
    lance_dataset *ds = NULL;
    graph_snapshot *snap = NULL;
    graph_head *hd = NULL;
    rc = lance_dataset_open(&ds, h->s, GRAPH_MANIFEST_DIR, latest, LANCE_ACCESS_WRITE);
    if (rc == 0) rc = graph_manifest_chain_follows(h->s, ds, prev);
    lance_manifest_free(prev);
    if (rc == 0) rc = graph_snapshot_from_dataset(&snap, ds, NULL, 0);
    if (rc != 0) {
        graph_snapshot_free(snap);
        lance_dataset_free(ds);
        /* The newest version exists but cannot be read (its file, or a file it needs, is
         * damaged or gone): typed corrupt naming it and the remedy, never "no graph". */
        return graph_head_damaged(rc, latest);
    }
    if ((rc = graph_head_new(&hd, ds, snap)) != 0) return rc;
    bool moved = false;
    rc = graph_head_check_tables(h->s, hd->snap, hd->ds->naming, &moved);
    if (rc == 0 && moved) { /* a writer published meanwhile: its head, checked the same way */
        graph_head_release(hd);
        rc = head_load_checked(&hd, h->s, NULL);
    }
    if (rc != 0) {
        graph_head_release(hd);
        return rc;
    }
    graph_handle_install(h, hd);
    *out = hd;
    return 0;
}

int graph_handle_head_snapshot(graph_handle *h, graph_snapshot **out)
{
    *out = NULL;
    graph_head *hd = NULL;
    int rc = graph_handle_head(h, &hd);
    if (rc == 0) rc = graph_snapshot_copy(out, hd->snap);
    graph_head_release(hd);
    return rc;
}

/* ---- schemas by identity ---------------------------------------------------------------- */

typedef struct schema_slot {
    struct schema_slot *next;
    char identity[GRAPH_SCHEMA_HASH_LEN + 1];
    lang_catalog *catalog;
} schema_slot;

/* Under the handle's lock. */
static const lang_catalog *schema_find(graph_handle *h, const char *identity)
{
    if (strcmp(identity, h->schema_identity) == 0) return h->catalog;
    for (schema_slot *sl = h->schemas_; sl; sl = sl->next)
        if (strcmp(sl->identity, identity) == 0) return sl->catalog;
    return NULL;
}

int graph_handle_catalog(graph_handle *h, const char *identity, const lang_catalog **out)
{
    *out = NULL;
    pthread_mutex_lock(lock_of(h));
    const lang_catalog *c = schema_find(h, identity);
    pthread_mutex_unlock(lock_of(h));
    if (c) {
        *out = c;
        return 0;
    }
    lang_catalog *read = NULL;
    int rc = graph_schema_read_identity(h->s, identity, &read);
    if (rc) return rc;
    schema_slot *sl = core_calloc(1, sizeof *sl);
    if (!sl) {
        lang_catalog_free(read);
        return core_err_nomem();
    }
    pthread_mutex_lock(lock_of(h));
    if ((c = schema_find(h, identity)) != NULL) { /* another thread read it meanwhile */
        core_free(sl);
        lang_catalog_free(read);
    } else {
        snprintf(sl->identity, sizeof sl->identity, "%s", identity);
        sl->catalog = read;
        sl->next = h->schemas_;
        h->schemas_ = sl;
        c = read;
    }
    pthread_mutex_unlock(lock_of(h));
    *out = c;
    return 0;
}

int graph_handle_snapshot_catalog(graph_handle *h, const graph_snapshot *snap,
                                  const lang_catalog **out)
{
    *out = NULL;
    if (!snap->schema_identity[0]) {
        *out = graph_handle_accepted(h, NULL);
        return 0;
    }
    int rc = graph_handle_catalog(h, snap->schema_identity, out);
    if (rc == OG_E_NOT_FOUND) {
        og_error_clear();
        rc = core_err(OG_E_NOT_FOUND,
                      "manifest version %llu was written under schema %s, which this graph "
                      "does not keep (no %s/%s.pg)",
                      (unsigned long long)snap->manifest_version, snap->schema_identity,
                      GRAPH_SCHEMA_DIR, snap->schema_identity);
        core_err_detail(CORE_ERR_OBJECT, snap->schema_identity);
    }
    return rc;
}

int graph_handle_history(graph_handle *h, const lang_catalog *cat, lang_schema_version **out,
                         size_t *n)
{
    *out = NULL;
    *n = 0;
    char accepted_id[GRAPH_SCHEMA_HASH_LEN + 1];
    const lang_catalog *accepted = graph_handle_accepted(h, accepted_id);
    char(*ids)[GRAPH_SCHEMA_HASH_LEN + 1] = NULL;
    size_t n_ids = 0;
    if (cat != accepted) {
        ids = core_malloc(sizeof *ids);
        if (!ids) return core_err_nomem();
        memcpy(ids[0], accepted_id, sizeof ids[0]);
        n_ids = 1;
    } else {
        int rc = graph_schema_list(h->s, &ids, &n_ids);
        if (rc) return rc;
    }
    /* the versions, then their identities' text, in one block */
    size_t cap = n_ids ? n_ids : 1;
    lang_schema_version *v = core_calloc(1, cap * (sizeof *v + GRAPH_SCHEMA_HASH_LEN + 1));
    if (!v) {
        core_free(ids);
        return core_err_nomem();
    }
    char *text = (char *)(v + cap);
    size_t k = 0;
    for (size_t i = 0; i < n_ids; i++) {
        const lang_catalog *c = NULL;
        if (graph_handle_catalog(h, ids[i], &c) != 0) {
            og_error_clear(); /* only a hint: a schema that does not read gives none */
            continue;
        }
        if (c == cat) continue;
        char *id = text + k * (GRAPH_SCHEMA_HASH_LEN + 1);
        memcpy(id, ids[i], GRAPH_SCHEMA_HASH_LEN + 1);
        v[k].cat = c;
        v[k].identity = id;
        v[k].newer = cat != accepted;
        k++;
    }
    core_free(ids);
    if (!k) {
        core_free(v);
        v = NULL;
    }
    *out = v;
    *n = k;
    return 0;
}

const lang_catalog *graph_handle_accepted(graph_handle *h, char identity[GRAPH_SCHEMA_HASH_LEN + 1])
{
    pthread_mutex_lock(lock_of(h));
    const lang_catalog *c = h->catalog;
    if (identity) memcpy(identity, h->schema_identity, GRAPH_SCHEMA_HASH_LEN + 1);
    pthread_mutex_unlock(lock_of(h));
    return c;
}

int graph_handle_accept_schema(graph_handle *h, const char *identity)
{
    const lang_catalog *c = NULL;
    int rc = graph_handle_catalog(h, identity, &c);
    if (rc) return rc;
    schema_slot *keep = core_calloc(1, sizeof *keep);
    if (!keep) return core_err_nomem();
    pthread_mutex_lock(lock_of(h));
    if (strcmp(identity, h->schema_identity) == 0) {
        pthread_mutex_unlock(lock_of(h));
        core_free(keep);
        return 0;
    }
    /* The accepted catalog joins the kept ones; the new one leaves them (it is h->catalog
     * now). Neither is freed before close. */
    schema_slot **pp = (schema_slot **)&h->schemas_;
    while (*pp && (*pp)->catalog != c)
        pp = &(*pp)->next;
    schema_slot *was = *pp;
    *pp = was->next;
    snprintf(keep->identity, sizeof keep->identity, "%s", h->schema_identity);
    keep->catalog = h->catalog;
    keep->next = h->schemas_;
    h->schemas_ = keep;
    __atomic_store_n(&h->catalog, was->catalog, __ATOMIC_RELEASE);
    snprintf(h->schema_identity, sizeof h->schema_identity, "%s", identity);
    pthread_mutex_unlock(lock_of(h));
    core_free(was);
    return 0;
}

/* ---- open / close ------------------------------------------------------------------------ */

void graph_handle_close(graph_handle *h)
{
    if (!h) return;
    graph_head_release(h->head_);
    branch_slot *sl = slots_of(h);
    for (size_t i = 0; sl && i < GRAPH_HANDLE_BRANCH_HEADS; i++) {
        graph_head_release(sl[i].hd);
        core_free(sl[i].name);
    }
    core_free(sl);
    for (schema_slot *k = h->schemas_, *next; k; k = next) {
        next = k->next;
        lang_catalog_free(k->catalog);
        core_free(k);
    }
    lang_catalog_free(h->catalog);
    store_close(h->s);
    core_free(h->root_id);
    core_free(h->actor);
    if (h->lock_) {
        pthread_mutex_destroy(lock_of(h));
        core_free(h->lock_);
    }
    core_free(h);
}

int graph_root_absent_error(store *s)
{
    store_meta meta;
    if (store_head(s, GRAPH_INIT_CLAIM, &meta) == 0)
        return core_err(OG_E_NOT_FOUND, "no graph here: an init was started but did not finish; "
                                        "run `omnigraph init` again to take it over");
    if (store_head(s, GRAPH_BACKUP_CLAIM, &meta) == 0) {
        /* Checked before the schema files: an unfinished backup has copied them already. */
        core_err(OG_E_NOT_FOUND,
                 "no graph here: a backup into this directory was interrupted before its "
                 "commit point (%s holds no version); remove the directory and run "
                 "`omnigraph backup` again",
                 GRAPH_MANIFEST_DIR);
        core_err_detail(CORE_ERR_OBJECT, GRAPH_BACKUP_CLAIM);
        return OG_E_NOT_FOUND;
    }
    og_error_clear(); /* absent claims: not errors */
    if (store_head(s, GRAPH_SCHEMA_PG, &meta) == 0 ||
        store_head(s, GRAPH_SCHEMA_JSON, &meta) == 0) {
        /* A graph root (its schema files are there) without a readable manifest: damage, not
         * an empty directory. */
        core_err(OG_E_CORRUPT,
                 "the graph here has lost its manifest: %s/%s holds no version. "
                 "`omnigraph verify` lists the damage; restore the graph from a backup",
                 GRAPH_MANIFEST_DIR, LANCE_VERSIONS_DIR);
        core_err_detail(CORE_ERR_OBJECT, GRAPH_MANIFEST_DIR);
        return OG_E_CORRUPT;
    }
    return core_err(OG_E_NOT_FOUND, "no graph here (no %s): run `omnigraph init` first",
                    GRAPH_MANIFEST_DIR);
}

int graph_root_check_unfinished(store *s)
{
    store_meta meta;
    if (store_head(s, GRAPH_INIT_CLAIM, &meta) != 0 &&
        store_head(s, GRAPH_BACKUP_CLAIM, &meta) != 0) {
        og_error_clear(); /* neither claim: nothing unfinished */
        return 0;
    }
    uint64_t latest = 0;
    lance_naming naming = LANCE_NAMING_UNKNOWN;
    int rc = lance_version_latest(s, GRAPH_MANIFEST_DIR, &latest, &naming);
    if (rc == OG_E_NOT_FOUND) return graph_root_absent_error(s);
    /* A version is there: the claim is stale (its init or backup finished); a failure to read
     * the versions is for the caller's own checks to report. */
    og_error_clear();
    return 0;
}

int graph_handle_open(graph_handle **out, store *s, const char *root_id,
                      const graph_open_options *opt)
{
    *out = NULL;
    graph_open_options def = GRAPH_OPEN_OPTIONS_INIT;
    if (!opt) opt = &def;
    graph_handle *h = core_calloc(1, sizeof *h);
    pthread_mutex_t *mu = core_malloc(sizeof *mu);
    if (!h || !mu) {
        core_free(h);
        core_free(mu);
        store_close(s);
        return core_err_nomem();
    }
    pthread_mutex_init(mu, NULL);
    h->lock_ = mu;
    h->s = s;
    h->readonly = opt->readonly;
    int rc = 0;
    if (!(h->root_id = core_strdup(root_id ? root_id : "")) ||
        (opt->actor && !(h->actor = core_strdup(opt->actor)))) {
        rc = core_err_nomem();
        goto fail;
    }
    /* The graph must exist and be of our format before anything else is read (the state read
     * for that check becomes the handle's first cached head). */
    graph_head *first = NULL;
    rc = graph_handle_head(h, &first);
    if (rc == OG_E_CORRUPT) {
        /* The newest manifest version is damaged: the handle still opens, so that commits
         * before it can be read (--at) and `omnigraph repair` can run; a read or write at the
         * head fails with this same error. */
        og_error_clear();
        rc = 0;
    }
    if (rc == OG_E_NOT_FOUND) {
        rc = graph_root_absent_error(s);
        goto fail;
    }
    if (rc != 0) {
        graph_head_release(first);
        goto fail;
    }
    /* The accepted schema is the one main's head records; the root pair mirrors it, and lags
     * it only when a schema apply stopped between its commit and rewriting the pair (then the
     * kept pair of the head's identity is read; `omnigraph repair --confirm` rewrites the
     * root pair). A graph whose head cannot be read opens under the root pair. */
    rc = graph_schema_read(s, &h->catalog, h->schema_identity);
    if (first) {
        const char *want = graph_head_snapshot(first)->schema_identity;
        if (want[0] && (rc != 0 || strcmp(want, h->schema_identity) != 0)) {
            lang_catalog *c = NULL;
            int rc2 = graph_schema_read_identity(s, want, &c);
            if (rc2 == 0) {
                lang_catalog_free(h->catalog);
                h->catalog = c;
                snprintf(h->schema_identity, sizeof h->schema_identity, "%s", want);
                rc = 0;
            } else if (rc == 0)
                rc = rc2;
        }
    }
    graph_head_release(first);
    if (rc == 0) og_error_clear();
    if (rc != 0) goto fail;
    *out = h;
    return 0;
fail:
    graph_handle_close(h);
    return rc;
}
