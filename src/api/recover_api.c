/* The recovery calls of the public API (include/omnigraph.h, "Recovery"): list, show and resolve
 * pending recovery intents, a thin layer over src/write/recovery.c. They open the root
 * read-write without the open's recovery barrier, since a pending intent may block it. */
#include "omnigraph.h"

#include "api/graph_internal.h"
#include "api/options.h"
#include "core/alloc.h"
#include "core/error.h"

#include "graph/graph.h"
#include "store/store.h"

#include <stdio.h>
#include <sys/stat.h>
#include <string.h>

struct og_intent_list {
    og_intent_info *items;
    size_t n;
};

const char *og_intent_state_name(int state)
{
    switch (state) {
    case OG_INTENT_PENDING:
        return "pending";
    case OG_INTENT_LIVE:
        return "live";
    case OG_INTENT_UNCHECKED:
        return "unchecked";
    case OG_INTENT_RESOLVED:
        return "resolved";
    case OG_INTENT_DAMAGED:
        return "damaged";
    default:
        return "unknown";
    }
}

const char *og_recover_action_name(int action)
{
    switch (action) {
    case OG_RECOVER_NONE:
        return "none";
    case OG_RECOVER_FINALIZE:
        return "finalize";
    case OG_RECOVER_ROLL_FORWARD:
        return "roll_forward";
    case OG_RECOVER_ROLL_BACK:
        return "roll_back";
    case OG_RECOVER_DISCARD:
        return "discard";
    case OG_RECOVER_RETIRE:
        return "retire";
    case OG_RECOVER_BLOCKED:
        return "blocked";
    default:
        return "unknown";
    }
}

const char *og_recover_outcome_name(int outcome)
{
    switch (outcome) {
    case OG_RECOVERED_ROLLED_FORWARD:
        return "rolled_forward";
    case OG_RECOVERED_ROLLED_BACK:
        return "rolled_back";
    case OG_RECOVERED_DISCARDED:
        return "discarded";
    case OG_RECOVERED_RETIRED:
        return "retired";
    case OG_RECOVERED_DISCARDED_FORCED:
        return "discarded_forced";
    case OG_RECOVERED_REPAIRED:
        return "repaired";
    case OG_RECOVERED_REPAIRED_FORCED:
        return "repaired_forced";
    default:
        return "unknown";
    }
}

static int state_of(int s)
{
    switch (s) {
    case WRITE_PENDING_OWNER_GONE:
        return OG_INTENT_PENDING;
    case WRITE_PENDING_LIVE:
        return OG_INTENT_LIVE;
    case WRITE_PENDING_RESOLVED:
        return OG_INTENT_RESOLVED;
    case WRITE_PENDING_DAMAGED:
        return OG_INTENT_DAMAGED;
    default:
        return OG_INTENT_UNCHECKED;
    }
}

static int action_of(int a)
{
    switch (a) {
    case WRITE_PLAN_FINALIZE_FORWARD:
    case WRITE_PLAN_FINALIZE_BACK:
        return OG_RECOVER_FINALIZE;
    case WRITE_PLAN_ROLL_FORWARD:
        return OG_RECOVER_ROLL_FORWARD;
    case WRITE_PLAN_RESUME_ROLLBACK:
    case WRITE_PLAN_ROLL_BACK:
        return OG_RECOVER_ROLL_BACK;
    case WRITE_PLAN_DISCARD:
        return OG_RECOVER_DISCARD;
    case WRITE_PLAN_RETIRE:
        return OG_RECOVER_RETIRE;
    case WRITE_PLAN_BLOCKED:
        return OG_RECOVER_BLOCKED;
    default:
        return OG_RECOVER_NONE;
    }
}

static int outcome_of(int kind)
{
    switch (kind) {
    case WRITE_RECOVERY_ROLLED_FORWARD:
        return OG_RECOVERED_ROLLED_FORWARD;
    case WRITE_RECOVERY_ROLLED_BACK:
        return OG_RECOVERED_ROLLED_BACK;
    case WRITE_RECOVERY_RETIRED:
        return OG_RECOVERED_RETIRED;
    case WRITE_RECOVERY_DISCARDED_FORCED:
        return OG_RECOVERED_DISCARDED_FORCED;
    case WRITE_RECOVERY_REPAIRED:
        return OG_RECOVERED_REPAIRED;
    case WRITE_RECOVERY_REPAIRED_FORCED:
        return OG_RECOVERED_REPAIRED_FORCED;
    default:
        return OG_RECOVERED_DISCARDED;
    }
}

static void info_clear(og_intent_info *i)
{
    core_free((char *)i->file);
    core_free((char *)i->branch);
    core_free((char *)i->actor);
    core_free((char *)i->problem);
    core_free((char *)i->resolved_as);
    core_free((char *)i->reason);
    memset(i, 0, sizeof *i);
}

/* The public form of p (the strings copied). */
static int info_fill(og_intent_info *out, const write_pending *p)
{
    memset(out, 0, sizeof *out);
    memcpy(out->operation_id, p->operation_id, sizeof out->operation_id);
    char key[STORE_KEY_MAX];
    snprintf(key, sizeof key, "%s/%s.json", GRAPH_RECOVERY_DIR, p->operation_id);
    out->writer_kind = p->damaged ? NULL : write_kind_name(p->kind); /* static strings */
    out->state = state_of(p->state);
    out->damaged = p->damaged;
    out->started_at_us = p->started_at_us;
    out->owner_pid = p->owner_pid;
    out->tables = p->n_effects;
    out->action = action_of(p->action);
    bool bad = !(out->file = core_strdup(key)) ||
               !(out->branch = core_strdup(p->branch ? p->branch : "main")) ||
               (p->actor && !(out->actor = core_strdup(p->actor))) ||
               (p->problem && !(out->problem = core_strdup(p->problem))) ||
               (p->audit_kind[0] && !(out->resolved_as = core_strdup(p->audit_kind))) ||
               (p->reason && !(out->reason = core_strdup(p->reason)));
    if (bad) {
        info_clear(out);
        return core_err_nomem();
    }
    return 0;
}

size_t og_intent_list_count(const og_intent_list *l)
{
    return l ? l->n : 0;
}

const og_intent_info *og_intent_list_get(const og_intent_list *l, size_t i)
{
    return l && i < l->n ? &l->items[i] : NULL;
}

void og_intent_list_free(og_intent_list *l)
{
    if (!l) return;
    for (size_t i = 0; i < l->n; i++)
        info_clear(&l->items[i]);
    core_free(l->items);
    core_free(l);
}

void og_intent_info_free(og_intent_info *i)
{
    if (!i) return;
    info_clear(i);
    core_free(i);
}

void og_recover_result_free(og_recover_result *r)
{
    core_free(r);
}

static int list_of(og_intent_list **out, store *s, bool probe_locks)
{
    write_pending *p = NULL;
    size_t n = 0;
    int rc = write_pending_list(s, probe_locks, &p, &n);
    if (rc) return rc;
    og_intent_list *l = core_calloc(1, sizeof *l);
    if (!l || (n && !(l->items = core_calloc(n, sizeof *l->items)))) {
        core_free(l);
        write_pending_list_free(p, n);
        return core_err_nomem();
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        rc = info_fill(&l->items[i], &p[i]);
        if (rc == 0) l->n++;
    }
    write_pending_list_free(p, n);
    if (rc) {
        og_intent_list_free(l);
        return rc;
    }
    *out = l;
    return 0;
}

/* The root opened read-write without the barrier (read-only when `read_only`). */
static int open_for_recovery(og_graph **g, const char *root_dir, const og_recover_options *opt,
                             const char *fn, bool read_only)
{
    if (!root_dir || !*root_dir)
        return core_err(OG_E_BAD_REQUEST, "%s: no root directory given", fn);
    if (opt) {
        int rc = api_options_check(opt->version, OG_RECOVER_OPTIONS_VERSION, "og_recover_options");
        if (rc) return rc;
    }
    og_open_options oo = OG_OPEN_OPTIONS_INIT;
    oo.read_only = read_only;
    return api_graph_open(g, root_dir, &oo, true);
}

int og_root_recover_list(og_intent_list **out, const char *root_dir, const og_recover_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_root_recover_list: out is NULL");
    *out = NULL;
    og_graph *g = NULL;
    /* read_only: a read-only handle takes no locks, so it cannot probe whose writer lives. */
    bool read_only = opt && opt->read_only;
    int rc = open_for_recovery(&g, root_dir, opt, "og_root_recover_list", read_only);
    if (rc == 0) rc = list_of(out, g->h->s, !read_only);
    og_graph_close(g);
    return rc;
}

int og_root_recover_show(og_intent_info **out, const char *root_dir, const char *operation_id,
                         const og_recover_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_root_recover_show: out is NULL");
    *out = NULL;
    if (!operation_id) return core_err(OG_E_BAD_REQUEST, "og_root_recover_show: no operation id");
    og_graph *g = NULL;
    int rc = open_for_recovery(&g, root_dir, opt, "og_root_recover_show", false);
    write_pending p;
    memset(&p, 0, sizeof p);
    if (rc == 0) rc = write_pending_show(g->h->s, true, operation_id, &p);
    og_graph_close(g);
    og_intent_info *i = NULL;
    if (rc == 0 && !(i = core_calloc(1, sizeof *i))) rc = core_err_nomem();
    if (rc == 0) rc = info_fill(i, &p);
    write_pending_clear(&p);
    if (rc) {
        core_free(i);
        return rc;
    }
    *out = i;
    return 0;
}

int og_root_recover_resolve(og_recover_result **out, const char *root_dir, const char *operation_id,
                            const og_recover_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_root_recover_resolve: out is NULL");
    *out = NULL;
    if (!operation_id)
        return core_err(OG_E_BAD_REQUEST, "og_root_recover_resolve: no operation id");
    og_recover_options def = OG_RECOVER_OPTIONS_INIT;
    if (!opt) opt = &def;
    if (opt->force && !opt->discard)
        return core_err(OG_E_BAD_REQUEST,
                        "og_root_recover_resolve: force applies to a discard only");
    og_recover_result *r = core_calloc(1, sizeof *r);
    if (!r) return core_err_nomem();
    og_graph *g = NULL;
    int rc = open_for_recovery(&g, root_dir, opt, "og_root_recover_resolve", false);
    int kind = 0;
    if (rc == 0) {
        write_resolve_options wo = {opt->discard != 0, opt->force != 0};
        rc = write_recover_resolve(g->w, operation_id, &wo, &kind, r->commit_id);
    }
    og_graph_close(g);
    if (rc) {
        core_free(r);
        return rc;
    }
    memcpy(r->operation_id, operation_id, OG_ID_LEN);
    r->outcome = outcome_of(kind);
    *out = r;
    return 0;
}

/* ---- repair -------------------------------------------------------------------------------- */

typedef struct repair_result {
    og_repair_result pub; /* first: the pointer handed out */
    char **damaged;
    og_repair_table *tables;
    char *damage, *moved_to, *at_stake, *branch;
    char **refs;
    char **refless;
    size_t n_damaged, n_tables, n_refs, n_refless;
} repair_result;

static const repair_result *repair_of(const og_repair_result *r)
{
    return (const repair_result *)r;
}

size_t og_repair_result_refless_count(const og_repair_result *r)
{
    return r ? repair_of(r)->n_refless : 0;
}

const char *og_repair_result_refless(const og_repair_result *r, size_t i)
{
    return r && i < repair_of(r)->n_refless ? repair_of(r)->refless[i] : NULL;
}

size_t og_repair_result_ref_count(const og_repair_result *r)
{
    return r ? repair_of(r)->n_refs : 0;
}

const char *og_repair_result_ref(const og_repair_result *r, size_t i)
{
    return r && i < repair_of(r)->n_refs ? repair_of(r)->refs[i] : NULL;
}

size_t og_repair_result_damaged_count(const og_repair_result *r)
{
    return r ? repair_of(r)->n_damaged : 0;
}

const char *og_repair_result_damaged(const og_repair_result *r, size_t i)
{
    return r && i < repair_of(r)->n_damaged ? repair_of(r)->damaged[i] : NULL;
}

size_t og_repair_result_table_count(const og_repair_result *r)
{
    return r ? repair_of(r)->n_tables : 0;
}

const og_repair_table *og_repair_result_table(const og_repair_result *r, size_t i)
{
    return r && i < repair_of(r)->n_tables ? &repair_of(r)->tables[i] : NULL;
}

void og_repair_result_free(og_repair_result *r)
{
    repair_result *rr = (repair_result *)r;
    if (!rr) return;
    for (size_t i = 0; i < rr->n_damaged; i++)
        core_free(rr->damaged[i]);
    core_free(rr->damaged);
    for (size_t i = 0; i < rr->n_tables; i++)
        core_free((char *)rr->tables[i].alias);
    core_free(rr->tables);
    core_free(rr->damage);
    core_free(rr->moved_to);
    core_free(rr->at_stake);
    core_free(rr->branch);
    for (size_t i = 0; i < rr->n_refs; i++)
        core_free(rr->refs[i]);
    core_free(rr->refs);
    for (size_t i = 0; i < rr->n_refless; i++)
        core_free(rr->refless[i]);
    core_free(rr->refless);
    core_free(rr);
}

static int repair_fill(repair_result *r, const write_repair_report *w, const char *branch)
{
    og_repair_result *p = &r->pub;
    p->forced = w->forced;
    if (!(r->at_stake = core_strdup(w->at_stake)) ||
        !(r->branch = core_strdup(branch ? branch : "main")))
        return core_err_nomem();
    p->at_stake = r->at_stake;
    p->branch = r->branch;
    if (w->n_refs && !(r->refs = core_calloc(w->n_refs, sizeof *r->refs))) return core_err_nomem();
    for (size_t i = 0; i < w->n_refs; i++) {
        if (!(r->refs[i] = core_strdup(w->refs[i]))) return core_err_nomem();
        r->n_refs++;
    }
    if (w->n_refless && !(r->refless = core_calloc(w->n_refless, sizeof *r->refless)))
        return core_err_nomem();
    for (size_t i = 0; i < w->n_refless; i++) {
        if (!(r->refless[i] = core_strdup(w->refless[i]))) return core_err_nomem();
        r->n_refless++;
    }
    p->clean = w->clean;
    p->repaired = w->repaired;
    p->latest_version = w->latest;
    p->intact_version = w->intact;
    p->missing_version = w->missing;
    p->lost_version = w->lost;
    p->manifest_version = w->manifest_version;
    p->cleanup_unfinished = w->cleanup_unfinished;
    p->cleanup_versions_removed = w->cleanup_versions_removed;
    memcpy(p->operation_id, w->operation_id, sizeof p->operation_id);
    memcpy(p->commit_id, w->commit_id, sizeof p->commit_id);
    if (!(r->damage = core_strdup(w->why)) || !(r->moved_to = core_strdup(w->moved_to)))
        return core_err_nomem();
    p->damage = r->damage;
    p->moved_to = r->moved_to;
    if (w->n_damaged && !(r->damaged = core_calloc(w->n_damaged, sizeof *r->damaged)))
        return core_err_nomem();
    for (size_t i = 0; i < w->n_damaged; i++) {
        if (!(r->damaged[i] = core_strdup(w->damaged[i]))) return core_err_nomem();
        r->n_damaged++;
    }
    if (w->n_tables && !(r->tables = core_calloc(w->n_tables, sizeof *r->tables)))
        return core_err_nomem();
    for (size_t i = 0; i < w->n_tables; i++) {
        if (!(r->tables[i].alias = core_strdup(w->tables[i].alias))) return core_err_nomem();
        r->tables[i].head = w->tables[i].head;
        r->tables[i].published = w->tables[i].published;
        r->n_tables++;
    }
    return 0;
}

/* The schema files first: no handle opens without them. Checked against the identity the
 * newest readable manifest version records, and rewritten from _schema.pg with confirm. A dry
 * run that finds them damaged inspects the manifest on the store (*inspected). */
static int repair_schema(const char *root_dir, bool confirm, bool force, bool *damaged,
                         write_repair_report *w, bool *inspected)
{
    *damaged = *inspected = false;
    struct stat st;
    if (stat(root_dir, &st) != 0 || !S_ISDIR(st.st_mode) || store_local_check_root(root_dir) != 0) {
        og_error_clear();
        return 0; /* the open reports it */
    }
    store *s = NULL;
    if (store_local_open(&s, root_dir) != 0) {
        og_error_clear();
        return 0;
    }
    graph_snapshot *snap = NULL;
    int rc = graph_snapshot_load_tolerant(&snap, s, 0);
    if (rc != 0) { /* no readable manifest: the open and the inspection report it */
        og_error_clear();
        store_close(s);
        return 0;
    }
    /* The snapshot read may be the newest intact one below a damaged top. When the lost top
     * holds an acknowledged commit repair cannot roll forward (a schema apply, whose schema
     * the root pair mirrors), rewriting the pair to the intact version's schema would drop
     * it: only a forced repair, which drops that commit anyway, does. */
    bool write = true;
    if (!force) {
        write_repair_report probe;
        memset(&probe, 0, sizeof probe);
        if (write_repair_inspect(s, NULL, &probe) == 0 && probe.at_stake[0]) write = false;
        og_error_clear(); /* the repair itself reports what the probe found */
        write_repair_report_clear(&probe);
    }
    rc = write ? graph_schema_restore(s, snap->schema_identity, confirm, damaged) : 0;
    graph_snapshot_free(snap);
    if (rc == 0 && *damaged && !confirm) {
        rc = write_repair_inspect(s, NULL, w);
        *inspected = true;
    }
    store_close(s);
    return rc;
}

int og_root_repair(og_repair_result **out, const char *root_dir, const og_repair_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_root_repair: out is NULL");
    *out = NULL;
    if (!root_dir || !*root_dir)
        return core_err(OG_E_BAD_REQUEST, "og_root_repair: no root directory given");
    og_repair_options def = OG_REPAIR_OPTIONS_INIT;
    if (!opt) opt = &def;
    int rc = api_options_check(opt->version, OG_REPAIR_OPTIONS_VERSION, "og_repair_options");
    if (rc) return rc;
    write_repair_report w;
    memset(&w, 0, sizeof w);
    bool force = opt->version >= 2 && opt->force;
    const char *branch = opt->version >= 2 ? opt->branch : NULL;
    if (branch && (!*branch || strcmp(branch, "main") == 0)) branch = NULL;
    bool schema_damaged = false, inspected = false;
    if (!branch && (rc = repair_schema(root_dir, opt->confirm != 0, force, &schema_damaged, &w,
                                       &inspected)) != 0)
        return rc;
    if (!inspected) {
        og_graph *g = NULL;
        og_open_options oo = OG_OPEN_OPTIONS_INIT;
        rc = api_graph_open(&g, root_dir, &oo, true); /* without the barrier: repair runs it */
        if (rc == 0) rc = write_repair(g->w, branch, opt->confirm != 0, force, &w);
        og_graph_close(g);
    }
    if (rc == 0 && schema_damaged) {
        w.clean = false;
        w.repaired = w.repaired || opt->confirm;
    }
    repair_result *r = NULL;
    if (rc == 0 && !(r = core_calloc(1, sizeof *r))) rc = core_err_nomem();
    if (rc == 0) r->pub.schema_damaged = schema_damaged;
    if (rc == 0 && (rc = repair_fill(r, &w, branch)) != 0) {
        og_repair_result_free(&r->pub);
        r = NULL;
    }
    write_repair_report_clear(&w);
    if (rc) return rc;
    *out = &r->pub;
    return 0;
}
