/* Text form of the IR: one operator per line, nested anti-joins indented. Stable, so tests
 * and `omnigraph lint --ir` can compare plans. */
#include "lang/ir.h"

#include <stdio.h>
#include <string.h>

const char *lang_ir_op_name(int kind)
{
    switch (kind) {
    case LANG_IR_NODE_SCAN:
        return "node_scan";
    case LANG_IR_EXPAND:
        return "expand";
    case LANG_IR_FILTER:
        return "filter";
    case LANG_IR_ANTI_JOIN:
        return "anti_join";
    case LANG_IR_ORDER:
        return "order";
    case LANG_IR_LIMIT:
        return "limit";
    case LANG_IR_PROJECT:
        return "project";
    case LANG_IR_AGGREGATE:
        return "aggregate";
    case LANG_IR_INSERT_NODE:
        return "insert_node";
    case LANG_IR_INSERT_EDGE:
        return "insert_edge";
    case LANG_IR_UPDATE:
        return "update";
    case LANG_IR_DELETE:
        return "delete";
    default:
        return "?";
    }
}

static const char *agg_name(int a)
{
    static const char *const n[] = {"", "count", "sum", "avg", "min", "max"};
    return a >= 0 && a <= LANG_IR_MAX ? n[a] : "?";
}

static void dump_value(core_buf *b, const lang_value *v)
{
    switch (v->kind) {
    case LANG_V_BOOL:
        core_buf_append_str(b, v->u ? "true" : "false");
        break;
    case LANG_V_INT:
        core_buf_printf(b, "%s%llu", v->neg ? "-" : "", (unsigned long long)v->u);
        break;
    case LANG_V_FLOAT:
        core_buf_printf(b, "%g", v->f);
        break;
    case LANG_V_STRING:
        core_buf_printf(b, "\"%s\"", v->s);
        break;
    case LANG_V_DATE:
        core_buf_printf(b, "date(%lld)", (long long)v->i);
        break;
    case LANG_V_DATETIME:
        core_buf_printf(b, "datetime(%lld)", (long long)v->i);
        break;
    case LANG_V_LIST:
        core_buf_append_byte(b, '[');
        for (size_t i = 0; i < v->n; i++) {
            if (i) core_buf_append_str(b, ", ");
            dump_value(b, &v->items[i]);
        }
        core_buf_append_byte(b, ']');
        break;
    default:
        core_buf_append_str(b, "null");
    }
}

static _Thread_local int g_dump_type = -1; /* the mutation's type, for where-clause properties */

static void dump_expr(core_buf *b, const lang_query_set *qs, const lang_ir_query *q,
                      const lang_ir_expr *x)
{
    const lang_catalog *c = qs->catalog;
    switch (x->kind) {
    case LANG_IR_X_LITERAL:
        dump_value(b, &x->lit);
        break;
    case LANG_IR_X_PARAM:
        core_buf_printf(b, "$%s", q->params[x->param].name);
        break;
    case LANG_IR_X_NOW:
        core_buf_append_str(b, "now()");
        break;
    case LANG_IR_X_ID:
        if (x->slot >= 0)
            core_buf_printf(b, "s%d.id", x->slot);
        else
            core_buf_append_str(b, "id");
        break;
    case LANG_IR_X_PROP: {
        int t = x->slot >= 0 ? q->slots[x->slot].type : -1;
        const char *pn = "?";
        if (t >= 0) pn = c->types[t].props[x->prop].name;
        if (x->slot >= 0)
            core_buf_printf(b, "s%d.%s", x->slot, pn);
        else if (g_dump_type >= 0)
            core_buf_printf(b, "%s", c->types[g_dump_type].props[x->prop].name);
        else
            core_buf_printf(b, "#%d", x->prop);
        break;
    }
    case LANG_IR_X_EDGE_SRC:
        core_buf_append_str(b, "from");
        break;
    case LANG_IR_X_EDGE_DST:
        core_buf_append_str(b, "to");
        break;
    case LANG_IR_X_COLUMN:
        core_buf_printf(b, "col%d", x->column);
        break;
    default:
        core_buf_printf(b, "%s(", x->kind == LANG_IR_X_NEAREST ? "nearest" : x->fn);
        for (size_t i = 0; i < x->n_args; i++) {
            if (i) core_buf_append_str(b, ", ");
            dump_expr(b, qs, q, &x->args[i]);
        }
        core_buf_append_byte(b, ')');
    }
}

static void dump_preds(core_buf *b, const lang_query_set *qs, const lang_ir_query *q,
                       const lang_ir_pred *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        core_buf_append_str(b, i ? " and " : " where ");
        dump_expr(b, qs, q, &p[i].lhs);
        if (p[i].op) {
            core_buf_printf(b, " %s ", gq_op_name(p[i].op));
            dump_expr(b, qs, q, &p[i].rhs);
        }
    }
}

static void dump_pipeline(core_buf *b, const lang_query_set *qs, const lang_ir_query *q,
                          const lang_ir_pipeline *pl, int ind)
{
    const lang_catalog *c = qs->catalog;
    for (size_t i = 0; i < pl->n_ops; i++) {
        const lang_ir_op *op = &pl->ops[i];
        core_buf_printf(b, "%*s%s", ind, "", lang_ir_op_name(op->kind));
        switch (op->kind) {
        case LANG_IR_NODE_SCAN:
            core_buf_printf(b, " s%d:%s", op->slot, c->types[op->type].name);
            dump_preds(b, qs, q, op->preds, op->n_preds);
            break;
        case LANG_IR_EXPAND:
            core_buf_printf(b, " s%d -%s:%s{%u,%u}-> s%d%s", op->src_slot,
                            op->direction == LANG_IR_OUT  ? "out"
                            : op->direction == LANG_IR_IN ? "in"
                                                          : "both",
                            c->types[op->type].name, op->min_hops, op->max_hops, op->dst_slot,
                            op->dst_bound ? " (bound)" : "");
            if (op->edge_slot >= 0) core_buf_printf(b, " edge s%d", op->edge_slot);
            break;
        case LANG_IR_FILTER:
            dump_preds(b, qs, q, op->preds, op->n_preds);
            break;
        case LANG_IR_ANTI_JOIN:
            core_buf_append_byte(b, '\n');
            dump_pipeline(b, qs, q, &op->sub, ind + 2);
            continue;
        case LANG_IR_ORDER:
            for (size_t k = 0; k < op->n_keys; k++) {
                core_buf_append_str(b, k ? ", " : " ");
                dump_expr(b, qs, q, &op->keys[k].expr);
                core_buf_append_str(b, op->keys[k].desc ? " desc" : " asc");
            }
            core_buf_append_str(b, " tie");
            for (size_t k = 0; k < op->n_tie_slots; k++)
                core_buf_printf(b, " s%d.id", op->tie_slots[k]);
            for (size_t k = 0; k < op->n_tie_columns; k++)
                core_buf_printf(b, " col%d", op->tie_columns[k]);
            break;
        case LANG_IR_LIMIT:
            core_buf_printf(b, " %llu", (unsigned long long)op->count);
            break;
        case LANG_IR_PROJECT:
        case LANG_IR_AGGREGATE:
            for (size_t k = 0; k < q->n_columns; k++) {
                const lang_ir_column *col = &q->columns[k];
                core_buf_append_str(b, k ? ", " : " ");
                if (col->agg) core_buf_printf(b, "%s(", agg_name(col->agg));
                dump_expr(b, qs, q, &col->expr);
                if (col->agg) core_buf_append_byte(b, ')');
                core_buf_printf(b, " as %s", col->name);
            }
            break;
        default: {
            const lang_typedef *t = &c->types[op->type];
            g_dump_type = op->type;
            core_buf_printf(b, " %s%s", t->name, op->upsert ? " (upsert by key)" : "");
            if (op->kind == LANG_IR_INSERT_EDGE) {
                core_buf_append_str(b, " from=");
                if (op->from) dump_expr(b, qs, q, op->from);
                core_buf_append_str(b, " to=");
                if (op->to) dump_expr(b, qs, q, op->to);
            }
            for (size_t k = 0; k < op->n_assigns; k++) {
                core_buf_printf(b, " %s=", t->props[op->assigns[k].prop].name);
                dump_expr(b, qs, q, &op->assigns[k].value);
            }
            dump_preds(b, qs, q, op->preds, op->n_preds);
            g_dump_type = -1;
        }
        }
        core_buf_append_byte(b, '\n');
    }
}

int lang_ir_dump(const lang_query_set *qs, const lang_ir_query *q, core_buf *out)
{
    core_buf_printf(out, "query %s\n", q->name);
    for (size_t s = 0; s < q->n_slots; s++)
        core_buf_printf(out, "  slot s%zu $%s: %s\n", s, q->slots[s].name,
                        qs->catalog->types[q->slots[s].type].name);
    dump_pipeline(out, qs, q, &q->pipeline, 2);
    return 0;
}
