/* The schema-apply adapter (RFC-022 §6.3): the graph's accepted schema becomes another one as
 * one graph commit on main, through the coordinator like every other writer.
 *
 * Prepare (no gates, against the coordinator's fresh base of main): the desired catalog's ids
 * were inherited from the accepted one (renames keep them), so types and properties are matched
 * by stable id. For every type of the desired schema:
 *  - a new type gets a new table, created empty at version 1 under a new incarnation;
 *  - a kept type's rows are read whole and migrated into the table schema it will have (its
 *    properties in the new order and names, new properties null, a soft-dropped property's
 *    column kept at the end, hidden); when that schema differs from the table's, the table is
 *    rewritten (one staged overwrite: the effect); a renamed type is registered again under its
 *    new alias (same identity and path);
 *  - a type the desired schema lacks is tombstoned (its data stays readable at earlier commits).
 * Then the migrated rows of every type are validated under the desired schema with the
 * validator loads and mutations use, collecting every violation: existing data that breaks an
 * added constraint refuses the apply and changes nothing. The desired schema's files are
 * written under its identity (_schemas/, immutable) before the sidecar.
 *
 * Gates: the graph/schema-control gate and the branch-refs gate exclusive (no write, branch
 * create or delete runs meanwhile), main's branch gate, and every rewritten table's. Under
 * them the coordinator revalidates main's head and schema identity; the recheck proves still no
 * other branch exists. The one manifest commit carries the rewritten tables' versions, the
 * registrations, renames and tombstones, and the new schema row; the sidecar records all of
 * them, so recovery publishes exactly that commit or rolls the rewrites back. After it, and
 * before the sidecar is deleted, the root pair (_schema.pg/_schema.json) is rewritten to
 * mirror it (a crash in between leaves the intent, and its recovery mirrors it). The new types'
 * tables are created after validation, before the sidecar: unregistered, they are inert, and a
 * crash or a restart leaves them as orphans no commit names. */
#include "write/internal.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/log.h"
#include "graph/merge.h"
#include "lang/schema_diff.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int write_schema_prepare(write_graph *g, const void *input, const graph_snapshot *snap,
                         write_intent *in);
int write_schema_rows(void *arg, const graph_snapshot *cur, uint64_t mver, graph_rows *rows);
int write_schema_recheck(write_graph *g, const void *input, const write_intent *in);

typedef struct schema_input {
    const lang_catalog *from; /* the accepted catalog the apply was planned against */
    char from_identity[GRAPH_SCHEMA_HASH_LEN + 1];
    const lang_catalog *to; /* the desired catalog, ids inherited from `from` */
    char to_identity[GRAPH_SCHEMA_HASH_LEN + 1];
    bool allow_data_loss;
    write_schema_result *res;
    /* The new types' tables an earlier attempt of this apply created (unregistered, this
     * apply's alone): a restarted prepare takes them again instead of leaving each attempt's
     * as an orphan. */
    write_schema_table *made;
    size_t n_made;
} schema_input;

/* ---- rows ------------------------------------------------------------------------------------ */

int write_rows_schema(graph_rows *rows, const write_intent *in, uint64_t mver)
{
    if (!in->schema_target[0]) return 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < in->n_schema_tables; i++) {
        const write_schema_table *t = &in->schema_tables[i];
        switch (t->op) {
        case WRITE_SCHEMA_CREATE:
            rc = graph_rows_add_table(rows, t->kind, t->sid, t->inc, t->alias);
            if (rc == 0) rc = graph_rows_add_version(rows, t->sid, t->inc, t->alias, 1, NULL, 0);
            break;
        case WRITE_SCHEMA_RENAME:
            rc = graph_rows_add_table_at(rows, t->kind, t->sid, t->inc, t->alias, mver);
            break;
        case WRITE_SCHEMA_DROP:
            rc = graph_rows_add_tombstone(rows, t->sid, t->inc, t->alias, t->version);
            break;
        default:
            rc = core_err(OG_E_INTERNAL, "unknown schema table op %d", t->op);
        }
    }
    if (rc == 0) rc = graph_rows_add_schema(rows, in->schema_target, mver);
    return rc;
}

int write_schema_rows(void *arg, const graph_snapshot *cur, uint64_t mver, graph_rows *rows)
{
    (void)cur;
    const write_intent *in = arg;
    int rc = write_rows_versions(rows, in, NULL, NULL, NULL, true);
    if (rc == 0) rc = write_rows_schema(rows, in, mver);
    if (rc == 0)
        rc = write_rows_lineage(rows, in, in->commit_id, in->parent_commit_id, in->actor,
                                in->created_at_us, mver, false);
    return rc;
}

void write_schema_promote(write_graph *g, const char *identity)
{
    const lang_catalog *c = NULL;
    int rc = graph_handle_catalog(g->h, identity, &c);
    if (rc == 0 && !g->h->readonly) rc = graph_schema_mirror(g->h->s, c);
    if (rc == 0) rc = graph_handle_accept_schema(g->h, identity);
    if (rc != 0) {
        core_log(CORE_LOG_WARN,
                 "schema %s is published, but mirroring it in %s failed (%s); opens read "
                 "the copy kept under its identity, and `omnigraph repair --confirm` rewrites it",
                 identity, GRAPH_SCHEMA_PG, og_error_last()->message);
        og_error_clear();
    }
}

/* ---- migration ----------------------------------------------------------------------------- */

static const lang_typedef *type_by_id(const lang_catalog *c, uint64_t id, int kind)
{
    for (size_t i = 0; i < c->n_types; i++)
        if (c->types[i].id == id && c->types[i].kind == kind) return &c->types[i];
    return NULL;
}

static const lang_prop *prop_by_id(const lang_typedef *t, uint64_t id)
{
    for (size_t i = 0; i < t->n_props; i++)
        if (t->props[i].id == id) return &t->props[i];
    return NULL;
}

/* Nullability counts: a property made nullable, or a column a soft drop hides (it must take
 * the nulls later writes give it), needs the table rewritten as much as a type change does. */
static bool schemas_same(const arrow_schema *a, const arrow_schema *b)
{
    if (a->n_fields != b->n_fields) return false;
    for (size_t i = 0; i < a->n_fields; i++)
        if (strcmp(a->fields[i].name, b->fields[i].name) != 0 ||
            a->fields[i].nullable != b->fields[i].nullable ||
            !arrow_type_equal(&a->fields[i].type, &b->fields[i].type))
            return false;
    return true;
}

/* The schema the table of type `to` (`from` before; the table's schema `have`) gets: its
 * columns in the order they have, each property under its new name and type, then the new
 * properties. A column `to` has no property for (a property dropped now, or a column kept
 * from an earlier soft drop) stays, nullable and hidden, unless data loss is allowed (then it
 * goes) or a property of `to` now has its name. `vs` is graph_type_schema(to). */
static int target_schema(arrow_schema *out, const arrow_schema *vs, const lang_typedef *to,
                         const lang_typedef *from, const arrow_schema *have, bool allow_loss)
{
    arrow_schema_init(out);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < have->n_fields; i++) {
        const char *name = have->fields[i].name;
        const arrow_field *f = NULL;
        bool hidden = false;
        const lang_prop *op = NULL;
        for (size_t k = 0; k < from->n_props && !op; k++)
            if (strcmp(from->props[k].name, name) == 0) op = &from->props[k];
        if (op) {
            const lang_prop *np = prop_by_id(to, op->id);
            if (np)
                f = &vs->fields[arrow_schema_find(vs, np->name)];
            else
                hidden = true;
        } else if (arrow_schema_find(vs, name) >= 0) {
            /* id/src/dst; a hidden column whose name a new property takes is not kept (the
             * property is appended below, null) */
            if (!strcmp(name, GRAPH_COL_ID) || !strcmp(name, GRAPH_COL_SRC) ||
                !strcmp(name, GRAPH_COL_DST))
                f = &vs->fields[arrow_schema_find(vs, name)];
        } else {
            hidden = true;
        }
        if (hidden && (allow_loss || arrow_schema_find(vs, name) >= 0)) continue;
        if (!f && !hidden) continue;
        arrow_field c;
        if ((rc = arrow_field_copy(&c, f ? f : &have->fields[i])) != 0) break;
        if (hidden) c.nullable = true;
        rc = arrow_schema_add(out, &c);
        arrow_field_clear(&c);
    }
    for (size_t i = 0; rc == 0 && i < vs->n_fields; i++)
        if (arrow_schema_find(out, vs->fields[i].name) < 0)
            rc = arrow_schema_add(out, &vs->fields[i]);
    return rc;
}

/* Rows `b` of a table (type `from`, NULL for columns taken by name only) in schema `tgt`: a
 * property column comes from the property of the same id (its old name), a kept column by its
 * name, a new property is null. */
static int migrate_rows(arrow_batch **out, const arrow_batch *b, const arrow_schema *tgt,
                        const lang_typedef *to, const lang_typedef *from)
{
    *out = NULL;
    arrow_array **cols = core_calloc(tgt->n_fields ? tgt->n_fields : 1, sizeof *cols);
    if (!cols) return core_err_nomem();
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < tgt->n_fields; i++) {
        const char *name = tgt->fields[i].name;
        const char *src_name = name;
        const lang_prop *p = NULL;
        for (size_t k = 0; k < to->n_props && !p; k++)
            if (strcmp(to->props[k].name, name) == 0) p = &to->props[k];
        if (p && from) {
            const lang_prop *old = prop_by_id(from, p->id);
            src_name = old ? old->name : NULL; /* a new property: null */
        }
        int at = src_name ? arrow_schema_find(&b->schema, src_name) : -1;
        if (at >= 0 && arrow_type_equal(&b->schema.fields[at].type, &tgt->fields[i].type))
            cols[i] = arrow_array_ref(b->columns[at]);
        else
            rc = arrow_array_new_null(&cols[i], &tgt->fields[i].type, b->num_rows);
    }
    if (rc == 0) rc = arrow_batch_new(out, tgt, cols, tgt->n_fields);
    for (size_t i = 0; i < tgt->n_fields; i++)
        arrow_array_free(cols[i]);
    core_free(cols);
    return rc;
}

/* ---- prepare --------------------------------------------------------------------------------- */

static int add_schema_table(write_intent *in, int op, int kind, uint64_t sid, uint64_t inc,
                            uint64_t version, const char *alias)
{
    write_schema_table *t =
        core_realloc(in->schema_tables, (in->n_schema_tables + 1) * sizeof *in->schema_tables);
    if (!t) return core_err_nomem();
    in->schema_tables = t;
    t = &t[in->n_schema_tables];
    memset(t, 0, sizeof *t);
    if (!(t->alias = core_strdup(alias))) return core_err_nomem();
    t->op = op;
    t->kind = kind;
    t->sid = sid;
    t->inc = inc;
    t->version = version;
    in->n_schema_tables++;
    return 0;
}

/* A new empty table for type t under the first incarnation that has no version yet (a dropped
 * type re-added, an orphan an interrupted apply left, or another apply racing this one take
 * the next). */
static int create_table(store *s, const lang_typedef *t, uint64_t *inc_out)
{
    arrow_schema sch;
    lance_create_options co;
    char kix[GRAPH_KIX_DECL_MAX];
    int rc = graph_type_create_options(&co, t, kix);
    if (rc == 0) rc = graph_type_schema(&sch, t);
    if (rc) return rc;
    rc = OG_E_EXISTS;
    for (uint64_t inc = 1; rc == OG_E_EXISTS && inc < 1u << 20; inc++) {
        char path[STORE_KEY_MAX];
        if ((rc = graph_table_path(path, t->kind, t->id, inc)) != 0) break;
        lance_dataset *ds = NULL;
        rc = lance_dataset_create(&ds, s, path, &sch, &co);
        lance_dataset_free(ds);
        if (rc == OG_E_EXISTS) og_error_clear();
        if (rc == 0) *inc_out = inc;
    }
    arrow_schema_clear(&sch);
    return rc;
}

static int other_branches(store *s)
{
    write_branch_info *bl = NULL;
    size_t n = 0;
    int rc = write_branch_list(s, &bl, &n);
    if (rc == 0 && n > 0) {
        char names[400] = "";
        size_t used = 0;
        for (size_t i = 0; i < n && used + 2 < sizeof names; i++) {
            int w = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", bl[i].name);
            if (w > 0) used += (size_t)w;
        }
        rc = core_err(OG_E_PRECONDITION_FAILED,
                      "schema apply changes the whole graph, and other branches exist (%s): "
                      "merge them into main and delete them, then apply; their commits keep "
                      "their schema",
                      names);
        core_err_detail(CORE_ERR_OBJECT, bl[0].name);
    }
    core_free(bl);
    return rc;
}

static int schema_prepare(write_graph *g, schema_input *si, const graph_snapshot *snap,
                          write_intent *in)
{
    store *s = g->h->s;
    write_schema_result *res = si->res;
    if (in->branch)
        return core_err(OG_E_BAD_REQUEST, "schema apply runs on main, not on branch '%s'",
                        in->branch);
    if (strcmp(snap->schema_identity, si->from_identity) != 0) {
        int rc = core_err(OG_E_CONFLICT,
                          "the graph's schema is %s now, not the %s this apply was planned "
                          "against; plan it again",
                          snap->schema_identity, si->from_identity);
        core_err_detail(CORE_ERR_EXPECTED, si->from_identity);
        core_err_detail(CORE_ERR_ACTUAL, snap->schema_identity);
        return rc;
    }
    int rc = other_branches(s);
    if (rc) return rc;
    res->tables_rewritten = res->tables_created = res->tables_renamed = res->tables_dropped = 0;
    res->rows_rewritten = 0;
    graph_conflicts_clear(&res->violations);

    const lang_catalog *to = si->to, *from = si->from;
    graph_change_set cs;
    memset(&cs, 0, sizeof cs);
    if (to->n_types && !(cs.changes = core_calloc(to->n_types, sizeof *cs.changes)))
        return core_err_nomem();
    if (to->n_types && !(in->effects = core_calloc(to->n_types, sizeof *in->effects))) {
        core_free(cs.changes);
        return core_err_nomem();
    }
    for (size_t i = 0; rc == 0 && i < to->n_types; i++) {
        const lang_typedef *nt = &to->types[i];
        const lang_typedef *ot = type_by_id(from, nt->id, nt->kind);
        char alias[256], old_alias[256];
        arrow_schema tgt, vs;
        arrow_schema_init(&tgt);
        arrow_schema_init(&vs);
        graph_change *c = &cs.changes[cs.n++];
        c->type_index = (int)i;
        c->mode = GRAPH_CHANGE_REPLACE;
        if ((rc = graph_table_alias(alias, sizeof alias, nt->kind, nt->name)) != 0) break;
        if (!ot) { /* a new type: a new empty table (created once validation passed) */
            rc = add_schema_table(in, WRITE_SCHEMA_CREATE, nt->kind, nt->id, 0, 1, alias);
            if (rc == 0) rc = graph_type_schema(&tgt, nt);
            if (rc == 0) {
                arrow_array **none = core_calloc(tgt.n_fields ? tgt.n_fields : 1, sizeof *none);
                for (size_t k = 0; none && rc == 0 && k < tgt.n_fields; k++)
                    rc = arrow_array_new_null(&none[k], &tgt.fields[k].type, 0);
                if (!none) rc = core_err_nomem();
                if (rc == 0) rc = arrow_batch_new(&c->rows, &tgt, none, tgt.n_fields);
                for (size_t k = 0; none && k < tgt.n_fields; k++)
                    arrow_array_free(none[k]);
                core_free(none);
            }
            res->tables_created++;
            arrow_schema_clear(&tgt);
            continue;
        }
        if ((rc = graph_table_alias(old_alias, sizeof old_alias, ot->kind, ot->name)) != 0) break;
        const graph_table *t = graph_snapshot_table(snap, old_alias);
        if (!t) {
            rc = core_err(OG_E_CORRUPT, "type %s has no table in the graph manifest", old_alias);
            break;
        }
        const lance_dataset *ds = NULL;
        if ((rc = graph_head_table(in->base, t, &ds)) != 0) break;
        arrow_batch *all = NULL, *mig = NULL;
        rc = lance_dataset_scan_all(&all, ds, NULL);
        if (rc == 0) rc = graph_type_schema(&vs, nt);
        /* validation sees the rows in the desired type's schema */
        if (rc == 0) rc = migrate_rows(&c->rows, all, &vs, nt, ot);
        if (rc == 0) rc = target_schema(&tgt, &vs, nt, ot, &ds->schema, si->allow_data_loss);
        bool rewrite = rc == 0 && !schemas_same(&tgt, &ds->schema);
        if (rc == 0 && rewrite) rc = migrate_rows(&mig, all, &tgt, nt, ot);
        if (rc == 0) rc = write_rs_add_table(&in->rs, t->alias, t->version, rewrite);
        if (rc == 0 && rewrite) {
            lance_staged *st = NULL;
            lance_write_options wo = LANCE_WRITE_OPTIONS_INIT;
            arrow_batch *const *b = mig->num_rows ? &mig : NULL;
            rc = lance_stage_overwrite(&st, ds, &tgt, b, b ? 1 : 0, &wo);
            if (rc == 0) {
                lance_staged_info info;
                lance_staged_get_info(st, &info);
                write_effect *e = &in->effects[in->n_effects++];
                e->staged = st;
                e->kind = nt->kind;
                e->sid = t->sid;
                e->inc = t->inc;
                e->expected_version = t->version;
                snprintf(e->uuid, sizeof e->uuid, "%s", info.uuid);
                if (!(e->alias = core_strdup(t->alias)) || !(e->path = core_strdup(t->path)))
                    rc = core_err_nomem();
                res->tables_rewritten++;
                res->rows_rewritten += (uint64_t)mig->num_rows;
            }
        }
        if (rc == 0 && strcmp(alias, old_alias) != 0) {
            rc = add_schema_table(in, WRITE_SCHEMA_RENAME, nt->kind, t->sid, t->inc, 0, alias);
            res->tables_renamed++;
        }
        arrow_batch_free(all);
        arrow_batch_free(mig);
        arrow_schema_clear(&tgt);
        arrow_schema_clear(&vs);
    }
    /* Types the desired schema lacks: tombstoned. */
    for (size_t i = 0; rc == 0 && i < from->n_types; i++) {
        const lang_typedef *ot = &from->types[i];
        if (type_by_id(to, ot->id, ot->kind)) continue;
        char old_alias[256];
        if ((rc = graph_table_alias(old_alias, sizeof old_alias, ot->kind, ot->name)) != 0) break;
        const graph_table *t = graph_snapshot_table(snap, old_alias);
        if (!t) continue;
        rc = write_rs_add_table(&in->rs, t->alias, t->version, false);
        if (rc == 0)
            rc = add_schema_table(in, WRITE_SCHEMA_DROP, ot->kind, t->sid, t->inc, t->version,
                                  t->alias);
        res->tables_dropped++;
    }
    /* Existing data under the desired schema: every violation, or nothing happens. */
    if (rc == 0) {
        graph_probes probes;
        memset(&probes, 0, sizeof probes);
        graph_validate_stats vs;
        memset(&vs, 0, sizeof vs);
        rc = graph_validate_all(to, snap, s, &cs, &probes, &vs, graph_head_table, in->base,
                                &res->violations);
        graph_probes_clear(&probes);
        if (rc == 0 && res->violations.n > 0) {
            const graph_conflict *v = &res->violations.items[0];
            rc = core_err(OG_E_BAD_REQUEST,
                          "the graph's data breaks the new schema (%zu violation%s; the first: "
                          "%s): nothing was changed",
                          res->violations.n, res->violations.n == 1 ? "" : "s", v->message);
            core_err_detail(CORE_ERR_OBJECT, v->type);
        }
    }
    graph_change_set_clear(&cs);
    /* The new types' tables, created empty: inert until the commit registers them (an
     * interrupted or restarted apply leaves an unregistered orphan, never a visible table). */
    for (size_t i = 0; rc == 0 && i < in->n_schema_tables; i++) {
        write_schema_table *t = &in->schema_tables[i];
        if (t->op != WRITE_SCHEMA_CREATE) continue;
        for (size_t k = 0; k < si->n_made && !t->inc; k++)
            if (si->made[k].kind == t->kind && si->made[k].sid == t->sid) t->inc = si->made[k].inc;
        if (t->inc) continue;
        rc = create_table(s, type_by_id(to, t->sid, t->kind), &t->inc);
        write_schema_table *m =
            rc == 0 ? core_realloc(si->made, (si->n_made + 1) * sizeof *si->made) : NULL;
        if (rc == 0 && !m) rc = core_err_nomem();
        if (rc == 0) {
            si->made = m;
            memset(&m[si->n_made], 0, sizeof *m);
            m[si->n_made].kind = t->kind;
            m[si->n_made].sid = t->sid;
            m[si->n_made].inc = t->inc;
            si->n_made++;
        }
    }
    /* The desired schema, kept by identity: inert until the commit names it. */
    if (rc == 0) rc = graph_schema_write_version(s, to);
    if (rc == 0) {
        memcpy(in->schema_target, si->to_identity, sizeof in->schema_target);
        in->publish_always = true; /* the schema row alone is a commit */
    }
    return rc;
}

int write_schema_prepare(write_graph *g, const void *input, const graph_snapshot *snap,
                         write_intent *in)
{
    return schema_prepare(g, (schema_input *)input, snap, in); /* ours: write_schema_apply */
}

/* Under the gates: still no other branch (the branch-refs gate now keeps it so). */
int write_schema_recheck(write_graph *g, const void *input, const write_intent *in)
{
    (void)input;
    (void)in;
    return other_branches(g->h->s);
}

/* ---- entry ----------------------------------------------------------------------------------- */

void write_schema_result_clear(write_schema_result *r)
{
    graph_conflicts_clear(&r->violations);
    memset(r, 0, sizeof *r);
}

int write_schema_apply(write_graph *g, lang_catalog *to, bool allow_data_loss,
                       const write_options *opt, write_schema_result *res)
{
    memset(res, 0, sizeof *res);
    write_options def = WRITE_OPTIONS_INIT;
    if (!opt) opt = &def;
    if (g->h->readonly) return core_err(OG_E_BAD_REQUEST, "the graph is open read-only");
    if (opt->branch && strcmp(opt->branch, "main") != 0)
        return core_err(OG_E_BAD_REQUEST, "schema apply runs on main, not on branch '%s'",
                        opt->branch);
    schema_input si;
    memset(&si, 0, sizeof si);
    si.from = graph_handle_accepted(g->h, si.from_identity);
    lang_catalog_inherit(to, si.from);
    int rc = graph_schema_identity(to, si.to_identity);
    if (rc) return rc;
    snprintf(res->from_identity, sizeof res->from_identity, "%s", si.from_identity);
    snprintf(res->to_identity, sizeof res->to_identity, "%s", si.to_identity);
    if (strcmp(si.from_identity, si.to_identity) == 0) return 0; /* nothing to apply */
    lang_schema_diff *d = NULL;
    rc = lang_schema_diff_build(&d, si.from, to, allow_data_loss);
    if (rc) return rc;
    if (!d->supported) {
        const lang_schema_diff_step *u = NULL;
        size_t n = 0;
        for (size_t i = 0; i < d->n_steps; i++)
            if (strcmp(d->steps[i].kind, "unsupported_change") == 0 && !n++) u = &d->steps[i];
        rc = core_err(OG_E_BAD_REQUEST,
                      "the schema change is not supported (%zu unsupported change%s; the first: "
                      "%s %s: %s): `omnigraph schema plan` lists them",
                      n, n == 1 ? "" : "s", u ? u->code : "", u ? u->entity : "",
                      u ? u->detail : "");
        if (u) core_err_detail(CORE_ERR_OBJECT, u->entity);
    }
    lang_schema_diff_free(d);
    if (rc) return rc;
    si.to = to;
    si.allow_data_loss = allow_data_loss;
    si.res = res;
    write_options o = *opt;
    o.branch = NULL;
    /* the root mirror is rewritten by the coordinator (or recovery) before the sidecar goes */
    rc = write_run_kind(g, WRITE_KIND_SCHEMA, &si, &o, &res->wr);
    core_free(si.made);
    return rc;
}
