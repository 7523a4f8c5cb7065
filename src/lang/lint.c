/* Lint warnings and the lint report (see lint.h). */
#include "lang/lint.h"

#include "core/error.h"
#include "core/json.h"

#include <string.h>

void lang_lint(const lang_query_set *qs, lang_diags *diags)
{
    const lang_catalog *cat = qs->catalog;
    /* L202: a mutation with no parameters writes the same constants every time */
    for (size_t i = 0; i < qs->n_queries; i++) {
        const lang_ir_query *q = &qs->queries[i];
        if (qs->status[i] || !q->is_mutation || q->n_params) continue;
        lang_diag_add(diags, LANG_SEV_WARNING, "L202", qs->file, q->pos.line, q->pos.col,
                      "mutation '%s' takes no parameters: it always writes the same values",
                      q->name);
    }
    /* L201: a nullable property of a node type this file writes, never set by any mutation */
    for (size_t t = 0; t < cat->n_types; t++) {
        const lang_typedef *td = &cat->types[t];
        if (td->kind != LANG_NODE) continue;
        int written = 0;
        for (size_t i = 0; i < qs->n_queries; i++) {
            if (qs->status[i]) continue;
            const lang_ir_pipeline *pl = &qs->queries[i].pipeline;
            for (size_t k = 0; k < pl->n_ops; k++)
                if ((pl->ops[k].kind == LANG_IR_INSERT_NODE || pl->ops[k].kind == LANG_IR_UPDATE) &&
                    pl->ops[k].type == (int)t)
                    written = 1;
        }
        if (!written) continue;
        for (size_t p = 0; p < td->n_props; p++) {
            if (!td->props[p].type.nullable) continue;
            int set = 0;
            for (size_t i = 0; i < qs->n_queries && !set; i++) {
                if (qs->status[i]) continue;
                const lang_ir_pipeline *pl = &qs->queries[i].pipeline;
                for (size_t k = 0; k < pl->n_ops; k++) {
                    const lang_ir_op *op = &pl->ops[k];
                    if (op->type != (int)t ||
                        (op->kind != LANG_IR_INSERT_NODE && op->kind != LANG_IR_UPDATE))
                        continue;
                    for (size_t a = 0; a < op->n_assigns; a++)
                        set |= op->assigns[a].prop == (int)p;
                }
            }
            if (!set)
                lang_diag_add(
                    diags, LANG_SEV_WARNING, "L201", cat->file, td->props[p].pos.line,
                    td->props[p].pos.col,
                    "nullable property '%s.%s' is never set by any insert or update in %s",
                    td->name, td->props[p].name, qs->file);
        }
    }
}

static json_t *type_list(const lang_catalog *cat, const int *ix, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(cat->types[ix[i]].name));
    return a;
}

int lang_lint_report_json(const lang_query_set *qs, const lang_diags *diags, core_buf *out)
{
    json_t *root = json_object();
    json_object_set_new(root, "ok", json_boolean(diags->errors == 0));
    json_object_set_new(root, "errors", json_integer((json_int_t)diags->errors));
    json_object_set_new(root, "warnings", json_integer((json_int_t)diags->warnings));
    json_t *qa = json_array();
    core_arena scratch;
    core_arena_init(&scratch, 4096);
    for (size_t i = 0; qs && i < qs->n_queries; i++) {
        const lang_ir_query *q = &qs->queries[i];
        json_t *o = json_object();
        json_object_set_new(o, "name", json_string(q->name ? q->name : ""));
        json_object_set_new(o, "status", json_string(qs->status[i] ? "error" : "ok"));
        json_object_set_new(o, "kind", json_string(q->is_mutation ? "mutation" : "read"));
        json_t *params = json_array();
        for (size_t k = 0; k < q->n_params; k++) {
            json_t *p = json_object();
            json_object_set_new(p, "name", json_string(q->params[k].name));
            const char *ts = lang_type_str(&scratch, &q->params[k].type);
            json_object_set_new(p, "type", json_string(ts ? ts : "?"));
            json_array_append_new(params, p);
        }
        json_object_set_new(o, "params", params);
        if (!qs->status[i]) {
            json_t *cols = json_array();
            for (size_t k = 0; k < q->n_columns; k++) {
                json_t *c = json_object();
                json_object_set_new(c, "name", json_string(q->columns[k].name));
                const char *ts = lang_type_str(&scratch, &q->columns[k].type);
                json_object_set_new(c, "kind", json_string(ts ? ts : "?"));
                json_array_append_new(cols, c);
            }
            json_t *op = json_object();
            json_object_set_new(op, "result", cols);
            json_object_set_new(op, "reads", type_list(qs->catalog, q->reads, q->n_reads));
            json_object_set_new(op, "writes", type_list(qs->catalog, q->writes, q->n_writes));
            json_object_set_new(o, "operation", op);
        }
        json_array_append_new(qa, o);
    }
    core_arena_free(&scratch);
    json_object_set_new(root, "queries", qa);
    json_t *da = json_array();
    for (size_t i = 0; i < diags->n; i++) {
        const lang_diag *g = &diags->items[i];
        json_t *d = json_object();
        json_object_set_new(d, "code", json_string(g->code));
        json_object_set_new(d, "severity",
                            json_string(g->severity == LANG_SEV_ERROR ? "error" : "warning"));
        json_object_set_new(d, "message", json_string(g->message));
        json_object_set_new(d, "file", json_string(g->file));
        json_object_set_new(d, "line", json_integer(g->line));
        json_object_set_new(d, "column", json_integer(g->col));
        json_array_append_new(da, d);
    }
    json_object_set_new(root, "diagnostics", da);
    int rc = core_json_dump(root, out);
    json_decref(root);
    return rc;
}

int lang_lint_report_text(const lang_query_set *qs, core_buf *out)
{
    core_arena scratch;
    core_arena_init(&scratch, 4096);
    int rc = 0;
    for (size_t i = 0; !rc && qs && i < qs->n_queries; i++) {
        const lang_ir_query *q = &qs->queries[i];
        rc = core_buf_printf(out, "%s %s: %s\n", q->is_mutation ? "mutation" : "query",
                             q->name ? q->name : "?", qs->status[i] ? "error" : "ok");
        if (rc || qs->status[i]) continue;
        if (q->n_columns) {
            rc = core_buf_append_str(out, "  returns:");
            for (size_t k = 0; !rc && k < q->n_columns; k++) {
                const char *ts = lang_type_str(&scratch, &q->columns[k].type);
                rc = ts ? core_buf_printf(out, "%s %s: %s", k ? "," : "", q->columns[k].name, ts)
                        : core_err_nomem();
            }
            if (!rc) rc = core_buf_append_byte(out, '\n');
        }
        if (!rc) rc = core_buf_append_str(out, "  reads:");
        for (size_t k = 0; !rc && k < q->n_reads; k++)
            rc = core_buf_printf(out, " %s", qs->catalog->types[q->reads[k]].name);
        if (!rc) rc = core_buf_append_str(out, "\n  writes:");
        for (size_t k = 0; !rc && k < q->n_writes; k++)
            rc = core_buf_printf(out, " %s", qs->catalog->types[q->writes[k]].name);
        if (!rc) rc = core_buf_append_byte(out, '\n');
    }
    core_arena_free(&scratch);
    return rc;
}
