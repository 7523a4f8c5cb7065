/* The preparation the two .gq requests share (request.h): a source checked against the
 * graph's accepted schema, one of its queries chosen, a read or a mutation required, and its
 * params checked against the declared ones. */
#include "exec/request.h"

#include "core/alloc.h"
#include "core/arena.h"
#include "core/error.h"
#include "core/json.h"
#include "lang/lang.h"

#include <stdio.h>
#include <string.h>

void exec_prepared_clear(exec_prepared *p)
{
    exec_params_free(p->params);
    lang_query_set_free(p->qs);
    memset(p, 0, sizeof *p);
}

/* The queries' names as "a, b, c" for messages (the first few). */
static void names_list(char *out, size_t cap, const lang_query_set *qs)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < qs->n_queries && used + 1 < cap; i++) {
        int n = snprintf(out + used, cap - used, "%s%s", i ? ", " : "", qs->queries[i].name);
        if (n < 0) break;
        used += (size_t)n;
    }
}

/* Locate the error of query `qi`: its first error diagnostic (diagnostics of the other
 * queries in the file do not concern this run). */
static int query_error(lang_diags *d, const lang_query_set *qs, size_t qi, const char *file)
{
    lang_diags_sort(d); /* the first by position, as lint reports them */
    int from = qs->queries[qi].pos.line;
    int to = qi + 1 < qs->n_queries ? qs->queries[qi + 1].pos.line : 0;
    for (size_t i = 0; i < d->n; i++) {
        const lang_diag *x = &d->items[i];
        if (x->severity != LANG_SEV_ERROR || x->line < from || (to && x->line >= to)) continue;
        return core_err_at(x->file ? x->file : file, x->line, x->col, "%s: %s", x->code,
                           x->message);
    }
    return lang_diags_status(d); /* none inside its range: the file's first error */
}

/* The query set of the source checked against cat again, its errors worded with what became
 * of unknown names in the graph's other schema versions (an error path only: it lists and
 * reads the kept schemas). Replaces p->qs and *diags when that worked; else leaves both. */
static void recheck_with_history(exec_prepared *p, graph_handle *h, const lang_catalog *cat,
                                 const char *source, size_t len, const char *file,
                                 lang_diags *diags)
{
    lang_schema_version *v = NULL;
    size_t n = 0;
    if (graph_handle_history(h, cat, &v, &n) != 0 || n == 0) {
        og_error_clear(); /* only a better message: the plain one stands */
        core_free(v);
        return;
    }
    lang_history hist = {v, n};
    lang_diags d2;
    lang_diags_init(&d2, diags->arena);
    lang_query_set *qs = NULL;
    int rc = lang_query_set_build_ex(&qs, cat, &hist, source, len, file, &d2);
    core_free(v);
    if ((rc && rc != OG_E_BAD_REQUEST) || d2.oom || !qs || qs->n_queries != p->qs->n_queries) {
        og_error_clear();
        lang_query_set_free(qs);
        return;
    }
    lang_query_set_free(p->qs);
    p->qs = qs;
    *diags = d2;
}

static int prepare(exec_prepared *p, const lang_catalog *cat, graph_handle *h,
                   const exec_gq_request *req, bool mutation)
{
    memset(p, 0, sizeof *p);
    const char *source = req->source, *file = req->file, *name = req->name;
    if (!source) return core_err(OG_E_BAD_REQUEST, "no query source given");
    size_t len = req->len ? req->len : strlen(source);
    if (!file || !*file) file = "<query>";
    core_arena arena;
    core_arena_init(&arena, 0);
    lang_diags diags;
    lang_diags_init(&diags, &arena);
    int rc = lang_query_set_build(&p->qs, cat, source, len, file, &diags);
    if (rc && rc != OG_E_BAD_REQUEST) goto out;
    if (diags.oom) {
        rc = core_err_nomem();
        goto out;
    }
    if (!p->qs || p->qs->n_queries == 0) {
        /* A parse failure leaves no queries: the thread error is its located diagnostic. */
        if (!rc) rc = core_err_at(file, 1, 1, "Q000: the source holds no query");
        goto out;
    }
    size_t qi = 0;
    char names[256];
    if (name && *name) {
        int i = lang_query_set_find(p->qs, name);
        if (i < 0) {
            names_list(names, sizeof names, p->qs);
            rc = core_err(OG_E_BAD_REQUEST, "no query named '%s' in %s (it has: %s)", name, file,
                          names);
            goto out;
        }
        qi = (size_t)i;
    } else if (p->qs->n_queries > 1) {
        names_list(names, sizeof names, p->qs);
        rc = core_err(OG_E_BAD_REQUEST, "%s holds %zu queries (%s): name the one to run", file,
                      p->qs->n_queries, names);
        goto out;
    }
    if (p->qs->status[qi]) {
        if (h) recheck_with_history(p, h, cat, source, len, file, &diags);
        rc = query_error(&diags, p->qs, qi, file);
        goto out;
    }
    rc = 0; /* other queries of the file may have errors; this one checked */
    p->q = &p->qs->queries[qi];
    if (mutation && !p->q->is_mutation) {
        rc = core_err(OG_E_BAD_REQUEST,
                      "query '%s' is a read query: run it with query, not "
                      "mutate",
                      p->q->name);
        goto out;
    }
    if (!mutation && p->q->is_mutation) {
        rc = core_err(OG_E_BAD_REQUEST,
                      "query '%s' is a mutation: run it with mutate, not "
                      "query",
                      p->q->name);
        goto out;
    }
    json_t *obj = NULL;
    if (req->params_json && *req->params_json) {
        rc = core_json_parse(&obj, req->params_json, strlen(req->params_json), "params");
        if (rc) goto out;
        if (!json_is_object(obj)) {
            json_decref(obj);
            rc = core_err(OG_E_BAD_REQUEST, "params must be a JSON object, like {\"name\": \"x\"}");
            goto out;
        }
    }
    rc = exec_params_from_json(&p->params, p->q, obj);
    json_decref(obj);
    if (!rc && req->now_ms) exec_params_set_now(p->params, req->now_ms);
out:
    core_arena_free(&arena);
    if (rc) exec_prepared_clear(p);
    return rc;
}

int exec_prepare(exec_prepared *p, const lang_catalog *cat, const exec_gq_request *req,
                 bool mutation)
{
    return prepare(p, cat, NULL, req, mutation);
}

int exec_prepare_in(exec_prepared *p, graph_handle *h, const lang_catalog *cat,
                    const exec_gq_request *req, bool mutation)
{
    return prepare(p, cat, h, req, mutation);
}
