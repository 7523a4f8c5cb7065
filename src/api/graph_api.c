/* The public graph API (include/omnigraph.h, "Graphs"): init, open/close, JSONL load (a load
 * request handed to the executor, exec_load), snapshots at the head or at a reference, the
 * commit lineage and the handle's counters. A thin layer: the protocol lives in src/write/,
 * the parsing of load input in src/exec/load.c, snapshot reconstruction and the open graph
 * (graph_handle) in src/graph/.
 * The og_graph (graph_internal.h) holds the graph handle, its writer when it was opened
 * read-write, and the read cache that query_api.c runs queries through. */
#include "omnigraph.h"

#include "api/graph_internal.h"
#include "core/alloc.h"
#include "api/options.h"
#include "core/error.h"
#include "core/log.h"
#include "graph/graph.h"
#include "lance/version.h"
#include "store/store.h"
#include "write/write.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

_Static_assert(OG_ID_LEN == GRAPH_ID_LEN, "public and internal id lengths differ");
_Static_assert(OG_SCHEMA_ID_LEN == GRAPH_SCHEMA_HASH_LEN, "schema identity lengths differ");
_Static_assert((int)OG_KIND_NODE == (int)LANG_NODE && (int)OG_KIND_EDGE == (int)LANG_EDGE,
               "kind values differ");
_Static_assert((int)OG_LOAD_APPEND == (int)EXEC_LOAD_APPEND &&
                   (int)OG_LOAD_MERGE == (int)EXEC_LOAD_MERGE &&
                   (int)OG_LOAD_OVERWRITE == (int)EXEC_LOAD_OVERWRITE,
               "load mode values differ");
_Static_assert((int)OG_LOAD_PHASE_PARSE == (int)EXEC_LOAD_PHASE_PARSE &&
                   (int)OG_LOAD_PHASE_WRITE == (int)EXEC_LOAD_PHASE_WRITE,
               "load phase values differ");

/* The canonical identity of a root directory: processes and handles that name the same
 * directory differently (relative path, symlink) must share one set of gates. */
static int root_identity(char **out, const char *dir)
{
    char buf[PATH_MAX];
    if (!realpath(dir, buf)) return core_err_storage(errno, dir, "cannot resolve '%s'", dir);
    *out = core_strdup(buf);
    return *out ? 0 : core_err_nomem();
}

/* ---- init ---------------------------------------------------------------------------------- */

int og_root_init(og_init_result **out, const char *root_dir, const og_init_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_root_init: out is NULL");
    *out = NULL;
    if (!root_dir || !*root_dir)
        return core_err(OG_E_BAD_REQUEST, "og_root_init: no root directory given");
    if (!opt)
        return core_err(OG_E_BAD_REQUEST, "og_root_init: no options (the schema is required)");
    int vrc = api_options_check(opt->version, OG_INIT_OPTIONS_VERSION, "og_init_options");
    if (vrc) return vrc;
    if (!opt->schema_source)
        return core_err(OG_E_BAD_REQUEST,
                        "og_root_init: no schema source (og_init_options.schema_source)");
    const char *schema_src = opt->schema_source;
    size_t len = opt->schema_source_len ? opt->schema_source_len : strlen(schema_src);
    const char *schema_file = opt->schema_file;
    if ((vrc = store_local_check_root(root_dir)) != 0) return vrc;
    /* A graph that is already there is refused before anything is written: opening the
     * root read-write would already probe the filesystem inside it. */
    store *s = NULL;
    struct stat st;
    if (stat(root_dir, &st) == 0 && S_ISDIR(st.st_mode) &&
        store_local_open_readonly(&s, root_dir) == 0) {
        uint64_t v = 0;
        lance_naming naming;
        int have = lance_version_latest(s, GRAPH_MANIFEST_DIR, &v, &naming) == 0 && v >= 1;
        store_close(s);
        s = NULL;
        if (have) {
            core_err(OG_E_EXISTS, "a graph already exists at '%s'", root_dir);
            core_err_detail(CORE_ERR_OBJECT, root_dir);
            return OG_E_EXISTS;
        }
    }
    /* An invalid schema is refused before the root is made: a failed init leaves nothing. */
    int rc = write_init_check(schema_src, len, schema_file ? schema_file : "schema.pg");
    if (rc) return rc;
    rc = store_local_open(&s, root_dir); /* creates the root when missing */
    if (rc) {
        core_err_prefix("opening graph root '%s'", root_dir);
        return rc;
    }
    write_init_result r;
    rc = write_init(s, schema_src, len, schema_file ? schema_file : "schema.pg", &r);
    store_close(s);
    if (rc) {
        if (rc == OG_E_EXISTS) core_err_detail(CORE_ERR_OBJECT, root_dir);
        return rc;
    }
    og_init_result *res = core_calloc(1, sizeof *res);
    if (!res) return core_err_nomem();
    memcpy(res->commit_id, r.commit_id, sizeof res->commit_id);
    res->took_over = r.took_over ? 1 : 0;
    res->node_types = r.node_types;
    res->edge_types = r.edge_types;
    *out = res;
    return 0;
}

void og_init_result_free(og_init_result *r)
{
    core_free(r);
}

/* ---- open / close -------------------------------------------------------------------------- */

/* write_graph.on_commit: a table version this handle published, offered to its read cache. */
static void offer_to_cache(void *arg, const write_committed_table *t)
{
    exec_table_offer o = {
        .path = t->path,
        .branch = t->table_branch,
        .kind = t->kind,
        .from_version = t->from_version,
        .to_version = t->to_version,
        .ds = *t->ds,
        .rewrite = t->rewrite,
        .id = t->id,
        .src = t->src,
        .dst = t->dst,
    };
    *t->ds = NULL;
    exec_cache_offer(arg, &o);
}

/* The gate timeout: the option (version 2), else OG_GATE_TIMEOUT_MS, else 0 (the default). */
static int gate_timeout(const og_open_options *opt, uint32_t *out)
{
    *out = 0;
    if (opt->version >= 2 && opt->gate_timeout_ms) {
        *out = opt->gate_timeout_ms;
        return 0;
    }
    const char *env = getenv("OG_GATE_TIMEOUT_MS");
    if (!env || !*env) return 0;
    char *end = NULL;
    errno = 0;
    unsigned long v = strtoul(env, &end, 10);
    if (errno || *end || v == 0 || v > UINT32_MAX - 1 || env[0] == '-' || env[0] == '+') {
        core_err(OG_E_BAD_REQUEST,
                 "OG_GATE_TIMEOUT_MS='%s' is not a positive number of milliseconds", env);
        core_err_detail(CORE_ERR_OBJECT, "OG_GATE_TIMEOUT_MS");
        return OG_E_BAD_REQUEST;
    }
    *out = (uint32_t)v;
    return 0;
}

int og_graph_open(og_graph **out, const char *root_dir, const og_open_options *opt)
{
    return api_graph_open(out, root_dir, opt, false);
}

int api_graph_open(og_graph **out, const char *root_dir, const og_open_options *opt,
                   bool defer_recovery)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_graph_open: out is NULL");
    *out = NULL;
    if (!root_dir || !*root_dir)
        return core_err(OG_E_BAD_REQUEST, "og_graph_open: no root directory given");
    og_open_options def = OG_OPEN_OPTIONS_INIT;
    if (!opt) opt = &def;
    int vrc = api_options_check(opt->version, OG_OPEN_OPTIONS_VERSION, "og_open_options");
    if (vrc) return vrc;
    uint32_t gate_timeout_ms = 0;
    if ((vrc = gate_timeout(opt, &gate_timeout_ms)) != 0) return vrc;
    if ((vrc = store_local_check_root(root_dir)) != 0) return vrc; /* before "no such directory" */
    struct stat st;
    int missing = 0;
    if (stat(root_dir, &st) != 0) {
        if (errno != ENOENT && errno != ENOTDIR)
            return core_err_storage(errno, root_dir, "cannot open graph root '%s'", root_dir);
        missing = 1;
    }
    /* Opening must not create the root (a read-write store would). */
    if (missing || !S_ISDIR(st.st_mode)) {
        core_err(OG_E_NOT_FOUND, "no graph at '%s': %s", root_dir,
                 missing ? "no such directory" : "not a directory");
        core_err_detail(CORE_ERR_OBJECT, root_dir);
        return OG_E_NOT_FOUND;
    }
    char *root_id = NULL;
    int rc = root_identity(&root_id, root_dir);
    if (rc) return rc;
    store *s = NULL;
    rc = opt->read_only ? store_local_open_readonly(&s, root_dir) : store_local_open(&s, root_dir);
    if (rc) {
        core_err_prefix("opening graph root '%s'", root_dir);
        core_free(root_id);
        return rc;
    }
    og_graph *g = core_calloc(1, sizeof *g);
    if (!g) {
        store_close(s);
        core_free(root_id);
        return core_err_nomem();
    }
    rc = exec_cache_new(&g->cache);
    if (rc) {
        store_close(s);
        core_free(root_id);
        core_free(g);
        return rc;
    }
    graph_open_options go = GRAPH_OPEN_OPTIONS_INIT;
    go.readonly = opt->read_only != 0;
    go.actor = opt->actor;
    rc = graph_handle_open(&g->h, s, root_id, &go); /* takes s, also on failure */
    core_free(root_id);
    /* A read-only handle has no writer: nothing on the root is written through it. */
    if (!rc && !go.readonly) {
        write_open_options wo = WRITE_OPEN_OPTIONS_INIT;
        /* never inside the caller's write (docs/maintenance.md) */
        wo.background_maintenance = true;
        wo.defer_recovery = defer_recovery;
        wo.gate_timeout_ms = gate_timeout_ms;
        rc = write_graph_attach(&g->w, g->h, &wo);
    }
    if (rc) {
        graph_handle_close(g->h);
        exec_cache_free(g->cache);
        core_free(g);
        return rc;
    }
    if (g->w) {
        /* What this handle commits reaches its read cache without a read back. */
        g->w->on_commit = offer_to_cache;
        g->w->on_commit_arg = g->cache;
    }
    *out = g;
    return 0;
}

void og_graph_close(og_graph *g)
{
    if (!g) return;
    write_graph_close(g->w); /* first: its queued maintenance still uses the handle */
    graph_handle_close(g->h);
    exec_cache_free(g->cache);
    core_free(g);
}

/* ---- load ---------------------------------------------------------------------------------- */

const char *og_load_mode_name(int mode)
{
    switch (mode) {
    case OG_LOAD_APPEND:
        return "append";
    case OG_LOAD_MERGE:
        return "merge";
    case OG_LOAD_OVERWRITE:
        return "overwrite";
    default:
        return NULL;
    }
}

int og_load_mode_parse(const char *name)
{
    for (int m = OG_LOAD_APPEND; m <= OG_LOAD_OVERWRITE; m++)
        if (name && !strcmp(name, og_load_mode_name(m))) return m;
    return 0;
}

/* One load of the data into opt->branch (which exists). */
static int load_once(og_write_result **out, og_graph *g, const char *data_file_name,
                     const char *data, size_t len, const og_load_options *opt)
{
    og_write_result *res = NULL;
    int rc = api_write_result_new(&res);
    if (rc) return rc;
    exec_load_request req = {
        data, len, data_file_name, (exec_load_mode)opt->mode, opt->progress, opt->progress_arg};
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = opt->branch; /* NULL or "main": main */
    api_write_result_collect(res, &wo);
    exec_load_result lr;
    rc = exec_load(&lr, g->w, &req, &wo);
    if (!rc) {
        res->counts[OG_WRITE_LINES] = lr.stats.lines;
        res->counts[OG_WRITE_NODES] = lr.stats.nodes;
        res->counts[OG_WRITE_EDGES] = lr.stats.edges;
        res->counts[OG_WRITE_NODE_TYPES] = lr.stats.node_types;
        res->counts[OG_WRITE_EDGE_TYPES] = lr.stats.edge_types;
        rc = api_write_result_finish(res, &lr.write);
    }
    if (rc) {
        og_write_result_free(res);
        return rc;
    }
    *out = res;
    return 0;
}

/* A branch retracted by the load that created it can be met by a load that found it (and
 * creates it anew): this many tries in all. */
#define LOAD_FROM_TRIES 3

/* Whether graph branch `name` exists now (errors read as "it does", which stops a retry). */
static bool branch_exists(og_graph *g, const char *name)
{
    lance_branch ref;
    int rc = lance_branch_get(g->h->s, GRAPH_MANIFEST_DIR, name, &ref);
    og_error_clear(); /* only a yes or no is wanted */
    return rc != OG_E_NOT_FOUND;
}

int og_graph_load(og_write_result **out, og_graph *g, const char *data_file_name, const char *data,
                  size_t len, const og_load_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_graph_load: out is NULL");
    *out = NULL;
    if (!g || !opt) return core_err(OG_E_BAD_REQUEST, "og_graph_load: missing argument");
    int vrc = api_options_check(opt->version, OG_LOAD_OPTIONS_VERSION, "og_load_options");
    if (vrc) return vrc;
    if (!og_load_mode_name(opt->mode))
        return core_err(OG_E_BAD_REQUEST, "a load mode is required: append, merge or overwrite");
    if (!data && len) return core_err(OG_E_BAD_REQUEST, "og_graph_load: no data");
    /* Refuse before parsing: a read-only handle would only fail after all the work. */
    if (!g->w) return core_err(OG_E_BAD_REQUEST, "the graph is open read-only");
    const char *from = opt->version >= 2 ? opt->from : NULL;
    if (!from) return load_once(out, g, data_file_name, data, len, opt);
    const char *branch = opt->branch;
    if (!branch || !*branch || strcmp(branch, "main") == 0)
        return core_err(OG_E_BAD_REQUEST, "a load's `from` goes with a branch other than main");
    int rc = write_branch_name_check(branch);
    if (rc) return rc;
    /* The branch is made for the load and kept only if the load succeeds: a refused load
     * retracts it, under the branch-ref control protocol's rules (write_branch_retract), which
     * keep it when another writer has used it meanwhile. */
    for (int tries = 1;; tries++) {
        write_branch_info created;
        bool made = false;
        if (!branch_exists(g, branch)) {
            rc = write_branch_create(g->w, branch, from, NULL, &created);
            if (rc == OG_E_EXISTS)
                og_error_clear(); /* created meanwhile by another writer: load into it */
            else if (rc)
                return rc;
            else
                made = true;
        }
        rc = load_once(out, g, data_file_name, data, len, opt);
        if (rc == 0) {
            (*out)->counts[OG_WRITE_NEW_BRANCH] = made;
            return 0;
        }
        core_err_saved why;
        core_err_save(&why);
        if (made && write_branch_retract(g->w, &created) != 0) {
            core_log(CORE_LOG_WARN,
                     "the load into new branch '%s' failed, and the branch stays: %s", branch,
                     og_error_last()->message);
        }
        /* A branch found, then retracted by the failed load that had made it, before this
         * load's commit: make it again. */
        if (!made && rc == OG_E_NOT_FOUND && tries < LOAD_FROM_TRIES && !branch_exists(g, branch))
            continue;
        return core_err_restore(&why);
    }
}

/* ---- snapshots ----------------------------------------------------------------------------- */

static const char *branch_name(const char *b)
{
    return b && *b ? b : "main";
}

int api_branch_arg(og_graph *g, const char **branch)
{
    if (*branch && (!**branch || strcmp(*branch, "main") == 0)) *branch = NULL;
    if (!*branch) return 0;
    lance_branch ref;
    int rc = lance_branch_get(g->h->s, GRAPH_MANIFEST_DIR, *branch, &ref);
    if (rc == OG_E_NOT_FOUND) {
        og_error_clear();
        rc = core_err(OG_E_NOT_FOUND, "branch '%s' does not exist", *branch);
        core_err_detail(CORE_ERR_KEY, *branch);
    }
    return rc;
}

int api_snapshot_at(graph_snapshot **out, og_graph *g, const char *branch, const char *at,
                    unsigned flags)
{
    *out = NULL;
    uint64_t mver = 0;
    int rc0 = api_branch_arg(g, &branch);
    if (rc0) return rc0;
    if (at) {
        graph_snapshot *head = NULL;
        int rc = branch ? graph_snapshot_load(&head, g->h->s, branch, 0, GRAPH_SNAP_LINEAGE)
                        : graph_snapshot_load_tolerant(&head, g->h->s, GRAPH_SNAP_LINEAGE);
        if (!rc) rc = graph_lineage_resolve(head, at, &mver);
        if (!rc && mver == head->manifest_version && (flags & GRAPH_SNAP_LINEAGE)) {
            *out = head; /* already the wanted one */
            return 0;
        }
        graph_snapshot_free(head);
        if (rc) return rc;
    }
    if (!at && !branch && !(flags & GRAPH_SNAP_LINEAGE))
        return graph_handle_head_snapshot(g->h, out);
    return graph_snapshot_load(out, g->h->s, branch, mver, flags);
}

static int dup_into(const char **dst, const char *src)
{
    char *p = core_strdup(src ? src : "");
    *dst = p;
    return p ? 0 : core_err_nomem();
}

/* The public og_snapshot_info and, behind it, its tables (read through
 * og_snapshot_info_table, so og_snapshot_table can grow). */
typedef struct snapshot_info {
    og_snapshot_info pub; /* first: the pointer handed out */
    og_snapshot_table *tables;
    size_t n_tables;
} snapshot_info;

static snapshot_info *snapshot_of(const og_snapshot_info *s)
{
    return (snapshot_info *)((char *)s - offsetof(snapshot_info, pub));
}

int og_graph_snapshot(og_snapshot_info **out, og_graph *g, const og_snapshot_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_graph_snapshot: out is NULL");
    *out = NULL;
    if (!g) return core_err(OG_E_BAD_REQUEST, "og_graph_snapshot: no graph");
    int rc;
    if (opt && (rc = api_options_check(opt->version, OG_SNAPSHOT_OPTIONS_VERSION,
                                       "og_snapshot_options")) != 0)
        return rc;
    graph_snapshot *snap = NULL;
    rc = api_snapshot_at(&snap, g, opt ? opt->branch : NULL, opt ? opt->at : NULL, 0);
    if (rc) return rc;
    snapshot_info *whole = core_calloc(1, sizeof *whole);
    if (!whole) {
        graph_snapshot_free(snap);
        return core_err_nomem();
    }
    og_snapshot_info *si = &whole->pub;
    si->manifest_version = snap->manifest_version;
    si->format_version = snap->format_version;
    snprintf(si->head_commit, sizeof si->head_commit, "%s", snap->head);
    snprintf(si->schema_identity, sizeof si->schema_identity, "%s", snap->schema_identity);
    rc = dup_into(&si->branch, branch_name(snap->branch));
    if (!rc && snap->n_tables) {
        whole->tables = core_calloc(snap->n_tables, sizeof *whole->tables);
        if (!whole->tables) rc = core_err_nomem();
    }
    for (size_t i = 0; !rc && i < snap->n_tables; i++) {
        const graph_table *t = &snap->tables[i];
        og_snapshot_table *o = &whole->tables[i];
        whole->n_tables = i + 1; /* so a partial fill frees what it holds */
        o->kind = t->kind;
        o->version = t->version;
        o->row_count = t->row_count;
        rc = dup_into(&o->alias, t->alias);
        if (!rc) rc = dup_into(&o->type_name, t->type_name);
        if (!rc) rc = dup_into(&o->path, t->path);
        if (!rc && t->table_branch) rc = dup_into(&o->table_branch, t->table_branch);
    }
    graph_snapshot_free(snap);
    if (rc) {
        og_snapshot_info_free(si);
        return rc;
    }
    *out = si;
    return 0;
}

size_t og_snapshot_info_table_count(const og_snapshot_info *s)
{
    return s ? snapshot_of(s)->n_tables : 0;
}

const og_snapshot_table *og_snapshot_info_table(const og_snapshot_info *s, size_t i)
{
    return s && i < snapshot_of(s)->n_tables ? &snapshot_of(s)->tables[i] : NULL;
}

void og_snapshot_info_free(og_snapshot_info *s)
{
    if (!s) return;
    snapshot_info *whole = snapshot_of(s);
    for (size_t i = 0; i < whole->n_tables; i++) {
        core_free((char *)whole->tables[i].alias);
        core_free((char *)whole->tables[i].type_name);
        core_free((char *)whole->tables[i].path);
        core_free((char *)whole->tables[i].table_branch);
    }
    core_free(whole->tables);
    core_free((char *)s->branch);
    core_free(whole);
}

/* ---- lineage ------------------------------------------------------------------------------- */

/* Copy commits into one allocation: the structs, then their strings, so one core_free
 * releases them. */
static int commits_pack(og_commit_info **out, const graph_commit *const *src, size_t n)
{
    size_t strings = 0;
    for (size_t i = 0; i < n; i++) {
        if (src[i]->actor) strings += strlen(src[i]->actor) + 1;
        strings += strlen(branch_name(src[i]->branch)) + 1;
    }
    size_t head = (n ? n : 1) * sizeof(og_commit_info);
    og_commit_info *c = core_calloc(1, head + strings);
    if (!c) return core_err_nomem();
    char *pool = (char *)c + head;
    for (size_t i = 0; i < n; i++) {
        const graph_commit *g = src[i];
        snprintf(c[i].id, sizeof c[i].id, "%s", g->id);
        snprintf(c[i].parent, sizeof c[i].parent, "%s", g->parent);
        snprintf(c[i].merged_parent, sizeof c[i].merged_parent, "%s", g->merged_parent);
        c[i].created_at_us = g->created_at_us;
        c[i].manifest_version = g->manifest_version;
        if (g->actor) {
            size_t l = strlen(g->actor) + 1;
            memcpy(pool, g->actor, l);
            c[i].actor = pool;
            pool += l;
        }
        const char *b = branch_name(g->branch);
        size_t l = strlen(b) + 1;
        memcpy(pool, b, l);
        c[i].branch = pool;
        pool += l;
    }
    *out = c;
    return 0;
}

struct og_commit_list {
    og_commit_info *c; /* one allocation (commits_pack) */
    size_t n;
};

size_t og_commit_list_count(const og_commit_list *l)
{
    return l ? l->n : 0;
}

const og_commit_info *og_commit_list_get(const og_commit_list *l, size_t i)
{
    return l && i < l->n ? &l->c[i] : NULL;
}

void og_commit_list_free(og_commit_list *l)
{
    if (!l) return;
    core_free(l->c);
    core_free(l);
}

/* The branch a og_commit_options names (NULL: main), its version checked. */
static int commit_options_branch(const og_commit_options *opt, const char **branch)
{
    *branch = NULL;
    if (!opt) return 0;
    int rc = api_options_check(opt->version, OG_COMMIT_OPTIONS_VERSION, "og_commit_options");
    if (rc == 0) *branch = opt->branch;
    return rc;
}

int og_graph_commits(og_commit_list **out, og_graph *g, const og_commit_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_graph_commits: out is NULL");
    *out = NULL;
    if (!g) return core_err(OG_E_BAD_REQUEST, "og_graph_commits: no graph");
    const char *branch = NULL;
    int rc = commit_options_branch(opt, &branch);
    if (rc == 0) rc = api_branch_arg(g, &branch);
    if (rc) return rc;
    og_commit_list *list = core_calloc(1, sizeof *list);
    if (!list) return core_err_nomem();
    graph_snapshot *snap = NULL;
    rc = branch ? graph_snapshot_load(&snap, g->h->s, branch, 0, GRAPH_SNAP_LINEAGE)
                : graph_snapshot_load_tolerant(&snap, g->h->s, GRAPH_SNAP_LINEAGE);
    const graph_commit **v = NULL;
    if (!rc) {
        v = core_calloc(snap->n_commits ? snap->n_commits : 1, sizeof *v);
        if (!v) rc = core_err_nomem();
    }
    if (!rc) {
        for (size_t i = 0; i < snap->n_commits; i++)
            v[i] = &snap->commits[i];
        rc = commits_pack(&list->c, v, snap->n_commits);
    }
    if (!rc) list->n = snap->n_commits;
    core_free(v);
    graph_snapshot_free(snap);
    if (rc) {
        og_commit_list_free(list);
        return rc;
    }
    *out = list;
    return 0;
}

/* The commit `ref` names in one lineage snapshot into *hit (NULL: none; 0 either way unless
 * the reference cannot be resolved). A full id names its commit; a prefix or a manifest version
 * names the commit that produced that manifest version. */
static int commit_in(const graph_snapshot *snap, const char *ref, const graph_commit **hit)
{
    *hit = NULL;
    uint64_t mver = 0;
    int rc = graph_lineage_resolve(snap, ref, &mver);
    if (rc) return rc;
    if (ref && strlen(ref) == GRAPH_ID_LEN) *hit = graph_lineage_find(snap, ref);
    for (size_t i = 0; !*hit && i < snap->n_commits; i++)
        if (snap->commits[i].manifest_version == mver) *hit = &snap->commits[i];
    if (!*hit) {
        rc = core_err(OG_E_NOT_FOUND, "no commit produced manifest version %llu (named by '%s')",
                      (unsigned long long)mver, ref);
        core_err_detail(CORE_ERR_OBJECT, ref);
    }
    return rc;
}

/* A full commit id main's lineage lacks: the commit made on another branch, found in the
 * lineage of the first branch (by name) that has it. 0 with *out set, or OG_E_NOT_FOUND. */
static int commit_on_any_branch(og_commit_info **out, og_graph *g, const char *id)
{
    lance_branch *refs = NULL;
    size_t n = 0;
    int rc = lance_branch_list(g->h->s, GRAPH_MANIFEST_DIR, &refs, &n);
    if (rc) return rc;
    bool found = false;
    for (size_t i = 0; rc == 0 && !found && i < n; i++) {
        graph_snapshot *snap = NULL;
        if (graph_snapshot_load(&snap, g->h->s, refs[i].name, 0, GRAPH_SNAP_LINEAGE) != 0) {
            og_error_clear(); /* deleted meanwhile, or unreadable: `verify` reports that */
            continue;
        }
        const graph_commit *hit = graph_lineage_find(snap, id);
        if (hit) {
            found = true;
            rc = commits_pack(out, &hit, 1);
        }
        graph_snapshot_free(snap);
    }
    lance_branch_list_free(refs);
    if (rc == 0 && !found) {
        rc = core_err(OG_E_NOT_FOUND, "no branch has commit %s", id);
        core_err_detail(CORE_ERR_OBJECT, id);
    }
    return rc;
}

int og_graph_commit_show(og_commit_info **out, og_graph *g, const char *ref,
                         const og_commit_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_graph_commit_show: out is NULL");
    *out = NULL;
    if (!g) return core_err(OG_E_BAD_REQUEST, "og_graph_commit_show: no graph");
    const char *branch = NULL;
    int rc = commit_options_branch(opt, &branch);
    if (rc == 0) rc = api_branch_arg(g, &branch);
    if (rc) return rc;
    graph_snapshot *snap = NULL;
    rc = branch ? graph_snapshot_load(&snap, g->h->s, branch, 0, GRAPH_SNAP_LINEAGE)
                : graph_snapshot_load_tolerant(&snap, g->h->s, GRAPH_SNAP_LINEAGE);
    if (rc) return rc;
    const graph_commit *hit = NULL;
    rc = commit_in(snap, ref, &hit);
    if (!rc) rc = commits_pack(out, &hit, 1);
    graph_snapshot_free(snap);
    /* Ids are unique across branches: main's lineage lacking a full id is not the end. */
    if (rc == OG_E_NOT_FOUND && !branch && ref && strlen(ref) == GRAPH_ID_LEN) {
        char saved[700];
        snprintf(saved, sizeof saved, "%s", og_error_last()->message);
        og_error_clear();
        rc = commit_on_any_branch(out, g, ref);
        if (rc == OG_E_NOT_FOUND) {
            og_error_clear();
            rc = core_err(OG_E_NOT_FOUND, "%s, on main or any other branch", saved);
            core_err_detail(CORE_ERR_OBJECT, ref);
        }
    }
    return rc;
}

void og_commit_info_free(og_commit_info *c)
{
    core_free(c);
}

/* ---- counters ------------------------------------------------------------------------------ */

int og_graph_stats_get(og_graph_stats **out, og_graph *g)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_graph_stats_get: out is NULL");
    *out = NULL;
    if (!g) return core_err(OG_E_BAD_REQUEST, "og_graph_stats_get: no graph");
    og_graph_stats *st = core_calloc(1, sizeof *st);
    if (!st) return core_err_nomem();
    write_stats ws;
    memset(&ws, 0, sizeof ws); /* a read-only handle has no writer: it wrote nothing */
    if (g->w) write_graph_stats(g->w, &ws);
    st->writes = ws.writes;
    st->noops = ws.noops;
    st->reprepares = ws.reprepares;
    st->publish_retries = ws.publish_retries;
    st->recoveries = ws.recoveries;
    *out = st;
    return 0;
}

void og_graph_stats_free(og_graph_stats *s)
{
    core_free(s);
}
