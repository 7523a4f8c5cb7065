/* Public API over src/lang: schema check, query lint and schema-diff plan, each returning an
 * og_lang_report that owns its diagnostics and renderings. */
#include "omnigraph.h"

#include "api/graph_internal.h"
#include "api/options.h"
#include "core/alloc.h"
#include "core/buf.h"
#include "core/error.h"
#include "core/json.h"
#include "lang/catalog.h"
#include "lang/ir.h"
#include "lang/history.h"
#include "lang/lint.h"
#include "lang/schema_diff.h"

#include <string.h>

struct og_lang_report {
    core_arena arena; /* diagnostics' text */
    lang_diags diags;
    og_diagnostic *items;
    size_t n_items;
    char *text;
    char *json;
};

static og_lang_report *report_new(void)
{
    og_lang_report *r = core_calloc(1, sizeof *r);
    if (!r) return NULL;
    core_arena_init(&r->arena, 8192);
    lang_diags_init(&r->diags, &r->arena);
    return r;
}

void og_lang_report_free(og_lang_report *r)
{
    if (!r) return;
    core_free(r->items);
    core_free(r->text);
    core_free(r->json);
    core_arena_free(&r->arena);
    core_free(r);
}

static json_t *diags_json(const lang_diags *d)
{
    json_t *a = json_array();
    for (size_t i = 0; i < d->n; i++) {
        const lang_diag *g = &d->items[i];
        json_t *o = json_object();
        json_object_set_new(o, "code", json_string(g->code));
        json_object_set_new(o, "severity",
                            json_string(g->severity == LANG_SEV_ERROR ? "error" : "warning"));
        json_object_set_new(o, "message", json_string(g->message));
        json_object_set_new(o, "file", json_string(g->file));
        json_object_set_new(o, "line", json_integer(g->line));
        json_object_set_new(o, "column", json_integer(g->col));
        json_array_append_new(a, o);
    }
    return a;
}

/* Finish a report: copy diagnostics into the public form, keep text and json. `failed` is
 * nonzero when building text or json failed (out of memory): the report would be cut short. */
static int report_finish(og_lang_report *r, core_buf *text, core_buf *json, int failed)
{
    if (failed) return core_err_nomem();
    lang_diags_sort(&r->diags);
    if (r->diags.n) {
        r->items = core_calloc(r->diags.n, sizeof *r->items);
        if (!r->items) return core_err_nomem();
    }
    for (size_t i = 0; i < r->diags.n; i++) {
        const lang_diag *g = &r->diags.items[i];
        og_diagnostic *o = &r->items[i];
        o->code = g->code;
        o->severity = g->severity == LANG_SEV_ERROR ? OG_DIAG_ERROR : OG_DIAG_WARNING;
        o->message = g->message;
        o->file = g->file;
        o->line = g->line;
        o->column = g->col;
    }
    r->n_items = r->diags.n;
    if (core_buf_append_str(text, "") || core_buf_append_str(json, "")) return core_err_nomem();
    r->text = (char *)core_buf_detach(text, NULL);
    r->json = (char *)core_buf_detach(json, NULL);
    return 0;
}

/* The status to return once the report is complete. */
static int report_status(og_lang_report *r)
{
    if (r->diags.oom) return core_err_nomem();
    return r->diags.errors ? lang_diags_status(&r->diags) : 0;
}

static const char *dup_name(og_lang_report *r, const char *file, const char *fallback)
{
    const char *s = core_arena_strdup(&r->arena, file ? file : fallback);
    return s ? s : fallback;
}

int og_schema_check(og_lang_report **out, const og_schema_check_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_schema_check: out is NULL");
    *out = NULL;
    if (!opt) return core_err(OG_E_BAD_REQUEST, "og_schema_check: no options");
    int vrc =
        api_options_check(opt->version, OG_SCHEMA_CHECK_OPTIONS_VERSION, "og_schema_check_options");
    if (vrc) return vrc;
    const char *src = opt->source, *file = opt->source_file;
    size_t len = opt->source_len ? opt->source_len : src ? strlen(src) : 0;
    if (!src && len) return core_err(OG_E_BAD_REQUEST, "schema source is NULL");
    og_lang_report *r = report_new();
    if (!r) return core_err_nomem();
    file = dup_name(r, file, "<schema>");
    lang_catalog *cat = NULL;
    int rc = lang_catalog_build(&cat, src ? src : "", len, file, &r->diags);
    if (rc && rc != OG_E_BAD_REQUEST) {
        og_lang_report_free(r);
        return rc;
    }
    core_buf text = CORE_BUF_INIT, jb = CORE_BUF_INIT;
    int failed = 0;
    json_t *root = json_object();
    json_object_set_new(root, "ok", json_boolean(cat != NULL));
    json_object_set_new(root, "file", json_string(file));
    if (cat) {
        size_t nodes = 0, edges = 0;
        for (size_t i = 0; i < cat->n_types; i++) {
            if (cat->types[i].kind == LANG_NODE)
                nodes++;
            else
                edges++;
        }
        failed |=
            core_buf_printf(&text, "%s: ok (%zu node types, %zu edge types)\n", file, nodes, edges);
        core_buf cj = CORE_BUF_INIT;
        json_error_t je;
        json_t *c = NULL;
        failed |= lang_catalog_to_json(cat, &cj);
        if (!failed) failed |= (c = core_json_loadb(core_buf_cstr(&cj), cj.len, 0, &je)) == NULL;
        if (!failed) failed |= json_object_set_new(root, "catalog", c);
        core_buf_free(&cj);
    } else {
        failed |= core_buf_printf(&text, "%s: %zu error%s\n", file, r->diags.errors,
                                  r->diags.errors == 1 ? "" : "s");
    }
    failed |= json_object_set_new(root, "diagnostics", diags_json(&r->diags));
    failed |= core_json_dump(root, &jb);
    json_decref(root);
    lang_catalog_free(cat);
    int frc = report_finish(r, &text, &jb, failed);
    core_buf_free(&text);
    core_buf_free(&jb);
    if (frc) {
        og_lang_report_free(r);
        return frc;
    }
    *out = r;
    return report_status(r);
}

/* Check and lint the .gq source against cat (its unknown names worded with hist, NULL: none)
 * into r, and finish r. 0, OG_E_BAD_REQUEST (the report holds the errors), or another code
 * (then r is to be freed). `schema_rc` is the status of building cat (non-zero: cat NULL). */
static int lint_into(og_lang_report *r, int schema_rc, const lang_catalog *cat,
                     const lang_history *hist, const char *query_file, const char *query_src,
                     size_t query_len)
{
    lang_query_set *qs = NULL;
    int rc = schema_rc;
    if (rc == 0) {
        rc = lang_query_set_build_ex(&qs, cat, hist, query_src ? query_src : "", query_len,
                                     query_file, &r->diags);
        if (qs && !r->diags.oom) lang_lint(qs, &r->diags);
    }
    if (rc && rc != OG_E_BAD_REQUEST) {
        lang_query_set_free(qs);
        return rc;
    }
    lang_diags_sort(&r->diags);
    core_buf text = CORE_BUF_INIT, jb = CORE_BUF_INIT;
    int failed = lang_lint_report_text(qs, &text);
    failed |= core_buf_printf(&text, "%zu error%s, %zu warning%s\n", r->diags.errors,
                              r->diags.errors == 1 ? "" : "s", r->diags.warnings,
                              r->diags.warnings == 1 ? "" : "s");
    failed |= lang_lint_report_json(qs, &r->diags, &jb);
    lang_query_set_free(qs);
    int frc = report_finish(r, &text, &jb, failed);
    core_buf_free(&text);
    core_buf_free(&jb);
    return frc;
}

int og_query_lint(og_lang_report **out, const og_query_lint_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_query_lint: out is NULL");
    *out = NULL;
    if (!opt) return core_err(OG_E_BAD_REQUEST, "og_query_lint: no options");
    int vrc =
        api_options_check(opt->version, OG_QUERY_LINT_OPTIONS_VERSION, "og_query_lint_options");
    if (vrc) return vrc;
    const char *schema_src = opt->schema_source, *schema_file = opt->schema_file;
    const char *query_src = opt->source, *query_file = opt->source_file;
    size_t schema_len = opt->schema_source_len ? opt->schema_source_len
                        : schema_src           ? strlen(schema_src)
                                               : 0;
    size_t query_len = opt->source_len ? opt->source_len : query_src ? strlen(query_src) : 0;
    if ((!schema_src && schema_len) || (!query_src && query_len))
        return core_err(OG_E_BAD_REQUEST, "source is NULL");
    og_lang_report *r = report_new();
    if (!r) return core_err_nomem();
    schema_file = dup_name(r, schema_file, "<schema>");
    query_file = dup_name(r, query_file, "<query>");
    lang_catalog *cat = NULL;
    int rc =
        lang_catalog_build(&cat, schema_src ? schema_src : "", schema_len, schema_file, &r->diags);
    rc = lint_into(r, rc, cat, NULL, query_file, query_src, query_len);
    lang_catalog_free(cat);
    if (rc && rc != OG_E_BAD_REQUEST) {
        og_lang_report_free(r);
        return rc;
    }
    *out = r;
    return report_status(r);
}

int og_graph_lint(og_lang_report **out, og_graph *g, const og_lint_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_graph_lint: out is NULL");
    *out = NULL;
    if (!g || !opt) return core_err(OG_E_BAD_REQUEST, "og_graph_lint: missing argument");
    int rc = api_options_check(opt->version, OG_LINT_OPTIONS_VERSION, "og_lint_options");
    if (rc) return rc;
    if (!opt->source) return core_err(OG_E_BAD_REQUEST, "og_graph_lint: no query source given");
    size_t len = opt->source_len ? opt->source_len : strlen(opt->source);
    /* the schema of the snapshot asked about, and the graph's other versions of it */
    graph_snapshot *snap = NULL;
    const lang_catalog *cat = NULL;
    lang_schema_version *v = NULL;
    size_t n = 0;
    rc = api_snapshot_at(&snap, g, opt->branch, opt->at && *opt->at ? opt->at : NULL, 0);
    if (!rc) rc = graph_handle_snapshot_catalog(g->h, snap, &cat);
    graph_snapshot_free(snap);
    if (rc) return rc;
    if (graph_handle_history(g->h, cat, &v, &n) != 0) {
        og_error_clear(); /* only the wording of unknown names: lint without it */
        v = NULL;
        n = 0;
    }
    lang_history hist = {v, n};
    og_lang_report *r = report_new();
    if (!r) {
        core_free(v);
        return core_err_nomem();
    }
    const char *file = dup_name(r, opt->source_file, "<query>");
    rc = lint_into(r, 0, cat, &hist, file, opt->source, len);
    core_free(v);
    if (rc && rc != OG_E_BAD_REQUEST) {
        og_lang_report_free(r);
        return rc;
    }
    *out = r;
    return report_status(r);
}

int og_schema_plan(og_lang_report **out, const og_schema_plan_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_schema_plan: out is NULL");
    *out = NULL;
    if (!opt)
        return core_err(OG_E_BAD_REQUEST, "og_schema_plan: no options (both schemas are required)");
    int rc =
        api_options_check(opt->version, OG_SCHEMA_PLAN_OPTIONS_VERSION, "og_schema_plan_options");
    if (rc) return rc;
    if (!opt->from_source || !opt->to_source)
        return core_err(OG_E_BAD_REQUEST, "og_schema_plan: the %s schema's source is missing",
                        opt->from_source ? "desired (to)" : "accepted (from)");
    const char *from_src = opt->from_source, *to_src = opt->to_source;
    size_t from_len = opt->from_source_len ? opt->from_source_len : strlen(from_src);
    size_t to_len = opt->to_source_len ? opt->to_source_len : strlen(to_src);
    const char *from_file = opt->from_file, *to_file = opt->to_file;
    int allow_data_loss = opt->allow_data_loss != 0;
    og_lang_report *r = report_new();
    if (!r) return core_err_nomem();
    from_file = dup_name(r, from_file, "<from>");
    to_file = dup_name(r, to_file, "<to>");
    lang_catalog *a = NULL, *b = NULL;
    lang_schema_diff *plan = NULL;
    int rc1 = lang_catalog_build(&a, from_src, from_len, from_file, &r->diags);
    int rc2 = lang_catalog_build(&b, to_src, to_len, to_file, &r->diags);
    if ((rc1 && rc1 != OG_E_BAD_REQUEST) || (rc2 && rc2 != OG_E_BAD_REQUEST))
        rc = rc1 ? rc1 : rc2;
    else if (a && b)
        rc = lang_schema_diff_build(&plan, a, b, allow_data_loss);
    if (rc) {
        lang_catalog_free(a);
        lang_catalog_free(b);
        og_lang_report_free(r);
        return rc;
    }
    core_buf text = CORE_BUF_INIT, jb = CORE_BUF_INIT;
    int failed = 0;
    if (plan) {
        failed |= lang_schema_diff_to_text(plan, &text);
        failed |= lang_schema_diff_to_json(plan, &jb);
    } else {
        failed |= core_buf_printf(&text, "cannot plan: %zu schema error%s\n", r->diags.errors,
                                  r->diags.errors == 1 ? "" : "s");
        json_t *root = json_object();
        failed |= json_object_set_new(root, "supported", json_false());
        failed |= json_object_set_new(root, "diagnostics", diags_json(&r->diags));
        failed |= core_json_dump(root, &jb);
        json_decref(root);
    }
    int supported = plan ? plan->supported : 0;
    lang_schema_diff_free(plan);
    lang_catalog_free(a);
    lang_catalog_free(b);
    int frc = report_finish(r, &text, &jb, failed);
    core_buf_free(&text);
    core_buf_free(&jb);
    if (frc) {
        og_lang_report_free(r);
        return frc;
    }
    *out = r;
    rc = report_status(r);
    if (rc) return rc;
    if (!supported) {
        return core_err(OG_E_UNSUPPORTED, "the schema change has unsupported steps");
    }
    return 0;
}

size_t og_lang_report_diagnostic_count(const og_lang_report *r)
{
    return r ? r->n_items : 0;
}

const og_diagnostic *og_lang_report_diagnostic(const og_lang_report *r, size_t i)
{
    return r && i < r->n_items ? &r->items[i] : NULL;
}

size_t og_lang_report_error_count(const og_lang_report *r)
{
    return r ? r->diags.errors : 0;
}
const char *og_lang_report_text(const og_lang_report *r)
{
    return r && r->text ? r->text : "";
}
const char *og_lang_report_json(const og_lang_report *r)
{
    return r && r->json ? r->json : "{}";
}
