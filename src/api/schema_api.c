/* og_graph_schema (include/omnigraph.h): the accepted schema a commit of a branch was made
 * under (the accepted one or one kept by identity), with its catalog's stable ids. */
#include "omnigraph.h"

#include "api/graph_internal.h"
#include "core/alloc.h"
#include "core/buf.h"
#include "core/error.h"
#include "core/json.h"
#include "api/options.h"
#include "lang/schema_diff.h"
#include "write/write.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct schema_box {
    og_schema_info pub;
    char *branch, *source, *catalog;
} schema_box;

void og_schema_info_free(og_schema_info *s)
{
    if (!s) return;
    schema_box *b = (schema_box *)s;
    core_free(b->branch);
    core_free(b->source);
    core_free(b->catalog);
    core_free(b);
}

/* The catalog as compact JSON text with sorted keys (the "catalog" object of its schema file). */
static int catalog_text(const lang_catalog *c, char **out)
{
    core_buf body = CORE_BUF_INIT;
    int rc = lang_catalog_to_json(c, &body);
    json_error_t je;
    json_t *root = rc ? NULL : core_json_loadb((const char *)body.data, body.len, 0, &je);
    core_buf_free(&body);
    if (rc) return rc;
    core_buf text = CORE_BUF_INIT;
    rc = root ? core_json_dump(root, &text) : core_err_nomem();
    json_decref(root);
    if (rc == 0) {
        *out = core_strdup(core_buf_cstr(&text));
        if (!*out) rc = core_err_nomem();
    }
    core_buf_free(&text);
    return rc;
}

int og_graph_schema(og_schema_info **out, og_graph *g, const og_snapshot_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_graph_schema: out is NULL");
    *out = NULL;
    if (!g) return core_err(OG_E_BAD_REQUEST, "og_graph_schema: no graph");
    int rc;
    if (opt && (rc = api_options_check(opt->version, OG_SNAPSHOT_OPTIONS_VERSION,
                                       "og_snapshot_options")) != 0)
        return rc;
    graph_snapshot *snap = NULL;
    rc = api_snapshot_at(&snap, g, opt ? opt->branch : NULL, opt ? opt->at : NULL, 0);
    if (rc) return rc;
    /* The schema that commit was made under: the accepted one, or one kept by identity. */
    const lang_catalog *c = NULL;
    rc = graph_handle_snapshot_catalog(g->h, snap, &c);
    if (rc) {
        graph_snapshot_free(snap);
        return rc;
    }
    schema_box *b = core_calloc(1, sizeof *b);
    if (!b) rc = core_err_nomem();
    if (rc == 0) {
        og_schema_info *si = &b->pub;
        snprintf(si->commit, sizeof si->commit, "%s", snap->head);
        snprintf(si->identity, sizeof si->identity, "%s", snap->schema_identity);
        b->branch = core_strdup(snap->branch ? snap->branch : "main");
        b->source = core_malloc(c->source_len + 1);
        if (!b->branch || !b->source) rc = core_err_nomem();
        if (rc == 0) {
            memcpy(b->source, c->source, c->source_len);
            b->source[c->source_len] = 0;
            si->branch = b->branch;
            si->source = b->source;
            si->source_len = c->source_len;
            rc = catalog_text(c, &b->catalog);
            si->catalog_json = b->catalog;
        }
    }
    graph_snapshot_free(snap);
    if (rc) {
        og_schema_info_free(b ? &b->pub : NULL);
        return rc;
    }
    *out = &b->pub;
    return 0;
}

/* ---- apply ------------------------------------------------------------------------------------
 */

typedef struct apply_box {
    og_schema_apply_result pub;
    char *plan;
    og_merge_conflict *items;
    size_t n;
} apply_box;

void og_schema_apply_result_free(og_schema_apply_result *r)
{
    if (!r) return;
    apply_box *b = (apply_box *)r;
    api_conflicts_free(b->items, b->n);
    core_free(b->plan);
    core_free(b);
}

size_t og_schema_apply_result_violation_count(const og_schema_apply_result *r)
{
    return r ? ((const apply_box *)r)->n : 0;
}

const og_merge_conflict *og_schema_apply_result_violation(const og_schema_apply_result *r, size_t i)
{
    return r && i < ((const apply_box *)r)->n ? &((const apply_box *)r)->items[i] : NULL;
}

static apply_box *apply_box_new(const write_schema_result *w, const core_buf *plan)
{
    apply_box *b = core_calloc(1, sizeof *b);
    if (!b) return NULL;
    og_schema_apply_result *r = &b->pub;
    if (!(b->plan = core_malloc(plan->len + 1))) goto fail;
    memcpy(b->plan, plan->data, plan->len);
    b->plan[plan->len] = 0;
    r->plan_json = b->plan;
    if (api_conflicts_copy(&w->violations, &b->items, &b->n) != 0) goto fail;
    r->applied = w->wr.committed;
    if (w->wr.committed) snprintf(r->commit, sizeof r->commit, "%s", w->wr.commit_id);
    r->manifest_version = w->wr.manifest_version;
    snprintf(r->from_identity, sizeof r->from_identity, "%s", w->from_identity);
    snprintf(r->to_identity, sizeof r->to_identity, "%s", w->to_identity);
    r->tables_rewritten = w->tables_rewritten;
    r->tables_created = w->tables_created;
    r->tables_renamed = w->tables_renamed;
    r->tables_dropped = w->tables_dropped;
    r->rows_rewritten = w->rows_rewritten;
    return b;
fail:
    og_schema_apply_result_free(&b->pub);
    return NULL;
}

int og_graph_schema_apply(og_schema_apply_result **out, og_graph *g,
                          const og_schema_apply_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_graph_schema_apply: out is NULL");
    *out = NULL;
    if (!g) return core_err(OG_E_BAD_REQUEST, "og_graph_schema_apply: no graph");
    if (!g->w)
        return core_err(OG_E_BAD_REQUEST, "og_graph_schema_apply: the graph is open read-only");
    if (!opt) return core_err(OG_E_BAD_REQUEST, "og_graph_schema_apply: no options");
    int rc =
        api_options_check(opt->version, OG_SCHEMA_APPLY_OPTIONS_VERSION, "og_schema_apply_options");
    if (rc) return rc;
    const char *schema_src = opt->source;
    if (!schema_src)
        return core_err(OG_E_BAD_REQUEST,
                        "og_graph_schema_apply: no schema source (og_schema_apply_options.source)");
    size_t len = opt->source_len ? opt->source_len : strlen(schema_src);
    const char *file = opt->source_file ? opt->source_file : "schema.pg";
    bool loss = opt->allow_data_loss;
    core_arena da;
    core_arena_init(&da, 4096);
    lang_diags d;
    lang_diags_init(&d, &da);
    lang_catalog *to = NULL;
    rc = lang_catalog_build(&to, schema_src, len, file, &d);
    core_arena_free(&da);
    if (rc) return rc;
    /* The plan, as schema plan prints it, against the accepted schema. */
    core_buf plan = CORE_BUF_INIT;
    lang_schema_diff *diff = NULL;
    const lang_catalog *from = graph_handle_accepted(g->h, NULL);
    rc = lang_schema_diff_build(&diff, from, to, loss);
    if (rc == 0) rc = lang_schema_diff_to_json(diff, &plan);
    lang_schema_diff_free(diff);
    write_schema_result w;
    memset(&w, 0, sizeof w);
    if (rc == 0) {
        write_options wo = WRITE_OPTIONS_INIT;
        wo.if_commit = opt->if_commit;
        rc = write_schema_apply(g->w, to, loss, &wo, &w);
    }
    if (rc == 0 || (rc == OG_E_BAD_REQUEST && w.violations.n)) {
        apply_box *b = apply_box_new(&w, &plan);
        if (!b)
            rc =
                core_err(OG_E_NOMEM, rc == 0 ? "the schema was applied; out of memory describing it"
                                             : "out of memory describing the violations");
        else
            *out = &b->pub;
    }
    write_schema_result_clear(&w);
    core_buf_free(&plan);
    lang_catalog_free(to);
    return rc;
}
