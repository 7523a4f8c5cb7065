/* Type checker for .gq: resolves every name against the catalog, types every expression and
 * reports T1..T24 / Q001 diagnostics; a query that checks is handed to the lowering (lower.c,
 * interface in checker.h) as a lang_checked_query. Also the query set's entry points. */
#include "lang/checker.h"
#include "lang/history.h"

#include "core/alloc.h"
#include "core/error.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

enum { XF_LIT_INT = 1, XF_LIT_FLOAT = 2, XF_LIT = 4, XF_AGG = 8, XF_CONST = 16, XF_ENTITY = 32 };
enum { CTX_FILTER = 1, CTX_RETURN, CTX_ORDER, CTX_MUT };

typedef struct var_entry {
    const char *name;
    int slot;
    int level; /* not{} nesting level where it was declared */
} var_entry;

typedef struct checker {
    lang_query_set *qs;
    const lang_catalog *cat;
    const lang_history *hist; /* other schema versions, for unknown names (NULL: none) */
    lang_diags *diags;
    const char *file;
    core_arena *a;
    const gq_query *q;
    lang_ir_query *ir;
    var_entry *vars;
    size_t n_vars, cap_vars;
    size_t cap_slots;
    int level;
    int oom;
    int used_outer; /* set while checking a not{} body when an outer variable is used */
} checker;

#define TERR(ck, pos, code, ...)                                                                   \
    lang_diag_add((ck)->diags, LANG_SEV_ERROR, code, (ck)->file, (pos).line, (pos).col, __VA_ARGS__)

/* ": <what became of it>" for a name the catalog lacks that another schema version had, or
 * "". */
static const char *type_hint(checker *ck, const char *name, int kind)
{
    const char *h = ck->hist ? lang_history_type(ck->a, ck->hist, ck->cat, name, kind) : NULL;
    const char *s = h ? core_arena_sprintf(ck->a, ": %s", h) : NULL;
    return s ? s : "";
}

static const char *prop_hint(checker *ck, const lang_typedef *t, const char *prop)
{
    const char *h = ck->hist ? lang_history_prop(ck->a, ck->hist, ck->cat, t, prop) : NULL;
    const char *s = h ? core_arena_sprintf(ck->a, ": %s", h) : NULL;
    return s ? s : "";
}

static void *push(checker *ck, void **arr, size_t *n, size_t *cap, size_t size)
{
    void *e = lang_vec_push(ck->a, arr, n, cap, size);
    if (!e) {
        ck->oom = 1;
        ck->diags->oom = 1;
    }
    return e;
}

static const char *tstr(checker *ck, const lang_type *t)
{
    const char *s = lang_type_str(ck->a, t);
    return s ? s : "?";
}

static void add_set(checker *ck, int **arr, size_t *n, size_t *cap, int v)
{
    for (size_t i = 0; i < *n; i++)
        if ((*arr)[i] == v) return;
    int *e = push(ck, (void **)arr, n, cap, sizeof(int));
    if (e) *e = v;
}

/* ---- scope ---------------------------------------------------------------------------------- */

static var_entry *find_var(checker *ck, const char *name)
{
    for (size_t i = ck->n_vars; i-- > 0;)
        if (!strcmp(ck->vars[i].name, name)) return &ck->vars[i];
    return NULL;
}

static const gq_param *find_param(checker *ck, const char *name, int *idx)
{
    for (size_t i = 0; i < ck->q->n_params; i++)
        if (!strcmp(ck->q->params[i].name, name)) {
            if (idx) *idx = (int)i;
            return &ck->q->params[i];
        }
    return NULL;
}

static int new_slot(checker *ck, const char *name, int kind, int type)
{
    lang_ir_slot *s =
        push(ck, (void **)&ck->ir->slots, &ck->ir->n_slots, &ck->cap_slots, sizeof *s);
    if (!s) return -1;
    s->name = name;
    s->kind = kind;
    s->type = type;
    s->type_id = type >= 0 ? ck->cat->types[type].id : 0;
    int slot = (int)ck->ir->n_slots - 1;
    if (strcmp(name, "_")) {
        var_entry *v = push(ck, (void **)&ck->vars, &ck->n_vars, &ck->cap_vars, sizeof *v);
        if (!v) return -1;
        v->name = name;
        v->slot = slot;
        v->level = ck->level;
    }
    return slot;
}

/* ---- literals and compatibility -------------------------------------------------------------- */

static int int_fits(int scalar, const lang_value *v)
{
    switch (scalar) {
    case LANG_S_I32:
        return v->u <= 2147483647ULL;
    case LANG_S_I64:
        return v->u <= 9223372036854775807ULL;
    case LANG_S_U32:
        return v->u <= 4294967295ULL;
    case LANG_S_U64:
        return 1;
    case LANG_S_F32:
    case LANG_S_F64:
        return 1;
    default:
        return 0;
    }
}

static int lit_type(checker *ck, lang_value *v, lang_type *t, int *flags, lang_pos pos)
{
    memset(t, 0, sizeof *t);
    *flags |= XF_LIT | XF_CONST;
    switch (v->kind) {
    case LANG_V_STRING:
        t->scalar = LANG_S_STRING;
        return 0;
    case LANG_V_BOOL:
        t->scalar = LANG_S_BOOL;
        return 0;
    case LANG_V_INT:
        t->scalar = LANG_S_I64;
        *flags |= XF_LIT_INT;
        return 0;
    case LANG_V_FLOAT:
        t->scalar = LANG_S_F64;
        *flags |= XF_LIT_FLOAT;
        return 0;
    case LANG_V_DATE:
        if (lang_parse_date(v->s, &v->i)) {
            TERR(ck, pos, "T3", "'%s' is not a valid date (YYYY-MM-DD)", v->s);
            return -1;
        }
        v->checked = 1;
        t->scalar = LANG_S_DATE;
        return 0;
    case LANG_V_DATETIME:
        if (lang_parse_datetime(v->s, &v->i)) {
            TERR(ck, pos, "T3", "'%s' is not a valid datetime (YYYY-MM-DDTHH:MM:SS[.mmm][Z])",
                 v->s);
            return -1;
        }
        v->checked = 1;
        t->scalar = LANG_S_DATETIME;
        return 0;
    case LANG_V_LIST: {
        t->kind = LANG_TY_LIST;
        int el = LANG_S_NONE;
        for (size_t i = 0; i < v->n; i++) {
            lang_type et;
            int ef = 0;
            if (v->items[i].kind == LANG_V_LIST) {
                TERR(ck, pos, "T3", "lists cannot be nested");
                return -1;
            }
            if (lit_type(ck, &v->items[i], &et, &ef, pos)) return -1;
            int s = et.scalar;
            if (el == LANG_S_NONE)
                el = s;
            else if (el != s && !(lang_scalar_is_numeric(el) && lang_scalar_is_numeric(s))) {
                TERR(ck, pos, "T3", "list literal mixes %s and %s", lang_scalar_name(el),
                     lang_scalar_name(s));
                return -1;
            }
            if (s == LANG_S_F64) el = LANG_S_F64;
        }
        t->scalar = el;
        return 0;
    }
    default:
        return -1;
    }
}

/* Does literal v fit target type t? Reports T3 (bad value) or T7 (wrong kind). */
static int lit_fits(checker *ck, lang_value *v, const lang_type *t, lang_pos pos, const char *what)
{
    if (t->kind == LANG_TY_VECTOR) {
        if (v->kind != LANG_V_LIST) goto mismatch;
        if (v->n != t->dim) {
            TERR(ck, pos, "T3", "%s needs %u numbers, the list has %zu", what, t->dim, v->n);
            return -1;
        }
        for (size_t i = 0; i < v->n; i++)
            if (v->items[i].kind != LANG_V_INT && v->items[i].kind != LANG_V_FLOAT) goto mismatch;
        return 0;
    }
    if (t->kind == LANG_TY_LIST) {
        if (v->kind != LANG_V_LIST) goto mismatch;
        lang_type et = {LANG_TY_SCALAR, t->scalar, 0, 0, NULL, 0};
        for (size_t i = 0; i < v->n; i++)
            if (lit_fits(ck, &v->items[i], &et, pos, what)) return -1;
        return 0;
    }
    if (t->kind == LANG_TY_ENUM) {
        if (v->kind != LANG_V_STRING) goto mismatch;
        for (size_t i = 0; i < t->n_enum; i++)
            if (!strcmp(t->enum_vals[i], v->s)) return 0;
        TERR(ck, pos, "T3", "'%s' is not a value of %s", v->s, tstr(ck, t));
        return -1;
    }
    switch (v->kind) {
    case LANG_V_INT:
        if (!lang_scalar_is_numeric(t->scalar)) goto mismatch;
        if (!int_fits(t->scalar, v)) {
            TERR(ck, pos, "T3", "%llu does not fit %s", (unsigned long long)v->u,
                 lang_scalar_name(t->scalar));
            return -1;
        }
        return 0;
    case LANG_V_FLOAT:
        if (!lang_scalar_is_float(t->scalar)) goto mismatch;
        return 0;
    case LANG_V_STRING:
        if (t->scalar == LANG_S_STRING || t->scalar == LANG_S_BLOB) return 0;
        goto mismatch;
    case LANG_V_BOOL:
        if (t->scalar == LANG_S_BOOL) return 0;
        goto mismatch;
    case LANG_V_DATE:
        if (t->scalar == LANG_S_DATE) return 0;
        goto mismatch;
    case LANG_V_DATETIME:
        if (t->scalar == LANG_S_DATETIME) return 0;
        goto mismatch;
    default:
        break;
    }
mismatch:
    TERR(ck, pos, "T7", "%s expects %s, not this literal", what, tstr(ck, t));
    return -1;
}

/* Can a non-literal value of type b be compared with / stored into type a? */
static int types_compatible(const lang_type *a, const lang_type *b)
{
    if (a->kind == LANG_TY_ENUM || b->kind == LANG_TY_ENUM) {
        const lang_type *o = a->kind == LANG_TY_ENUM ? b : a;
        if (o->kind == LANG_TY_ENUM) return lang_type_equal(a, b);
        return o->kind == LANG_TY_SCALAR && o->scalar == LANG_S_STRING;
    }
    if (a->kind != b->kind) return 0;
    if (a->kind == LANG_TY_VECTOR) return a->dim == b->dim;
    if (a->scalar == b->scalar) return 1;
    return lang_scalar_is_numeric(a->scalar) && lang_scalar_is_numeric(b->scalar);
}

/* ---- expressions ------------------------------------------------------------------------------
 */

static int check_expr(checker *ck, const gq_expr *e, lang_ir_expr *out, int *flags, int ctx);

static int prop_ref(checker *ck, const gq_expr *e, lang_ir_expr *out, int ctx)
{
    var_entry *v = find_var(ck, e->var);
    if (!v) {
        if (find_param(ck, e->var, NULL))
            TERR(ck, e->pos, "T6", "'$%s' is a parameter, not a bound variable", e->var);
        else if (!strcmp(e->var, "_"))
            TERR(ck, e->pos, "T6", "the anonymous variable '$_' cannot be read");
        else
            TERR(ck, e->pos, "T6", "variable '$%s' is not bound in match", e->var);
        return -1;
    }
    if (v->level < ck->level) ck->used_outer = 1;
    const lang_ir_slot *s = &ck->ir->slots[v->slot];
    const lang_typedef *t = &ck->cat->types[s->type];
    out->slot = v->slot;
    if (!strcmp(e->name, "id")) {
        out->kind = LANG_IR_X_ID;
        out->type.scalar = LANG_S_STRING;
        return 0;
    }
    int pi = lang_type_find_prop(t, e->name);
    if (pi < 0) {
        TERR(ck, e->pos, "T2", "'%s' has no property '%s'%s", t->name, e->name,
             prop_hint(ck, t, e->name));
        return -1;
    }
    const lang_prop *p = &t->props[pi];
    if (p->type.kind == LANG_TY_SCALAR && p->type.scalar == LANG_S_BLOB && ctx != CTX_MUT) {
        TERR(ck, e->pos, "T24", "Blob property '%s.%s' cannot be read in a query", e->var, e->name);
        return -1;
    }
    out->kind = LANG_IR_X_PROP;
    out->prop = pi;
    out->prop_id = p->id;
    out->type = p->type;
    return 0;
}

static int check_call(checker *ck, const gq_expr *e, lang_ir_expr *out, int *flags, int ctx)
{
    const char *fn = e->name;
    int agg = !strcmp(fn, "count") ? LANG_IR_COUNT
              : !strcmp(fn, "sum") ? LANG_IR_SUM
              : !strcmp(fn, "avg") ? LANG_IR_AVG
              : !strcmp(fn, "min") ? LANG_IR_MIN
              : !strcmp(fn, "max") ? LANG_IR_MAX
                                   : 0;
    if (agg) {
        if (ctx != CTX_RETURN) {
            TERR(ck, e->pos, "T8", "aggregate %s() is allowed only in return", fn);
            return -1;
        }
        if (e->n_args != 1) {
            TERR(ck, e->pos, "T8", "%s() takes one argument", fn);
            return -1;
        }
        int af = 0;
        if (e->args[0]->kind == GQ_E_CALL) {
            TERR(ck, e->args[0]->pos, "T8", "aggregates cannot be nested");
            return -1;
        }
        if (check_expr(ck, e->args[0], out, &af, CTX_FILTER)) return -1;
        const lang_type at = out->type;
        if (agg == LANG_IR_SUM || agg == LANG_IR_AVG) {
            if (at.kind != LANG_TY_SCALAR || !lang_scalar_is_numeric(at.scalar)) {
                TERR(ck, e->pos, "T8", "%s() needs a numeric argument, not %s", fn, tstr(ck, &at));
                return -1;
            }
        } else if (agg == LANG_IR_MIN || agg == LANG_IR_MAX) {
            if (!(at.kind == LANG_TY_ENUM ||
                  (at.kind == LANG_TY_SCALAR && lang_scalar_is_orderable(at.scalar)))) {
                TERR(ck, e->pos, "T8", "%s() needs an orderable argument, not %s", fn,
                     tstr(ck, &at));
                return -1;
            }
        }
        *flags |= XF_AGG;
        out->column = agg; /* the caller moves it into the column */
        return 0;
    }
    if (!strcmp(fn, "nearest")) {
        if (ctx != CTX_ORDER) {
            TERR(ck, e->pos, "T15", "nearest() is allowed only in order");
            return -1;
        }
        if (e->n_args != 2 || e->args[0]->kind != GQ_E_PROP) {
            TERR(ck, e->pos, "T15",
                 "nearest() takes a vector property and a query: nearest($x.v, $q)");
            return -1;
        }
        lang_ir_expr *args = core_arena_calloc(ck->a, 2, sizeof *args);
        if (!args) {
            ck->oom = 1;
            return -1;
        }
        int f0 = 0, f1 = 0;
        if (check_expr(ck, e->args[0], &args[0], &f0, CTX_FILTER)) return -1;
        if (args[0].type.kind != LANG_TY_VECTOR) {
            TERR(ck, e->args[0]->pos, "T15", "nearest() needs a Vector property, not %s",
                 tstr(ck, &args[0].type));
            return -1;
        }
        if (check_expr(ck, e->args[1], &args[1], &f1, CTX_FILTER)) return -1;
        if (f1 & XF_LIT) {
            if (args[1].lit.kind == LANG_V_STRING) {
                /* a String is embedded with the property's @embed model */
            } else if (lit_fits(ck, &args[1].lit, &args[0].type, e->args[1]->pos, "nearest()")) {
                return -1;
            }
        } else if (!(args[1].type.kind == LANG_TY_SCALAR && args[1].type.scalar == LANG_S_STRING) &&
                   !types_compatible(&args[0].type, &args[1].type)) {
            TERR(ck, e->args[1]->pos, "T15", "nearest() query must be %s or a String, not %s",
                 tstr(ck, &args[0].type), tstr(ck, &args[1].type));
            return -1;
        }
        out->kind = LANG_IR_X_NEAREST;
        out->args = args;
        out->n_args = 2;
        out->type.scalar = LANG_S_F64;
        return 0;
    }
    /* text search family */
    int is_rrf = !strcmp(fn, "rrf");
    int clause_fn = !strcmp(fn, "search") || !strcmp(fn, "fuzzy") || !strcmp(fn, "match_text");
    const char *code = !strcmp(fn, "fuzzy") ? "T20" : is_rrf ? "T21" : "T19";
    if (clause_fn && ctx != CTX_FILTER) {
        TERR(ck, e->pos, code, "%s() is a match clause", fn);
        return -1;
    }
    if (!clause_fn && ctx != CTX_ORDER) {
        TERR(ck, e->pos, code, "%s() is allowed only in order", fn);
        return -1;
    }
    size_t need_min = is_rrf ? 2 : 2, need_max = (is_rrf || !strcmp(fn, "fuzzy")) ? 3 : 2;
    if (e->n_args < need_min || e->n_args > need_max) {
        TERR(ck, e->pos, code, "%s() takes %zu..%zu arguments", fn, need_min, need_max);
        return -1;
    }
    lang_ir_expr *args = core_arena_calloc(ck->a, e->n_args, sizeof *args);
    if (!args) {
        ck->oom = 1;
        return -1;
    }
    for (size_t i = 0; i < e->n_args; i++) {
        int f = 0;
        const gq_expr *x = e->args[i];
        if (is_rrf && i < 2) {
            if (x->kind != GQ_E_CALL || (strcmp(x->name, "nearest") && strcmp(x->name, "bm25"))) {
                TERR(ck, x->pos, "T21", "rrf() combines nearest() or bm25() rankings");
                return -1;
            }
            if (check_expr(ck, x, &args[i], &f, CTX_ORDER)) return -1;
            continue;
        }
        if (check_expr(ck, x, &args[i], &f, CTX_FILTER)) return -1;
        int want_int = (is_rrf && i == 2) || (!strcmp(fn, "fuzzy") && i == 2);
        if (want_int) {
            if (!(args[i].type.kind == LANG_TY_SCALAR && lang_scalar_is_int(args[i].type.scalar))) {
                TERR(ck, x->pos, code, "%s() argument %zu must be an integer", fn, i + 1);
                return -1;
            }
        } else if (!(args[i].type.kind == LANG_TY_SCALAR && args[i].type.scalar == LANG_S_STRING)) {
            TERR(ck, x->pos, code, "%s() argument %zu must be a String, not %s", fn, i + 1,
                 tstr(ck, &args[i].type));
            return -1;
        }
        if (i == 0 && args[i].kind != LANG_IR_X_PROP) {
            TERR(ck, x->pos, code, "%s() searches a String property", fn);
            return -1;
        }
    }
    out->kind = LANG_IR_X_CALL;
    out->fn = fn;
    out->args = args;
    out->n_args = e->n_args;
    out->type.scalar = clause_fn ? LANG_S_BOOL : LANG_S_F64;
    return 0;
}

static int check_expr(checker *ck, const gq_expr *e, lang_ir_expr *out, int *flags, int ctx)
{
    memset(out, 0, sizeof *out);
    out->slot = out->prop = out->param = out->column = -1;
    switch (e->kind) {
    case GQ_E_VAR: {
        int pidx;
        const gq_param *p = find_param(ck, e->var, &pidx);
        if (p) {
            out->kind = LANG_IR_X_PARAM;
            out->param = pidx;
            out->type = p->type;
            *flags |= XF_CONST;
            return 0;
        }
        if (ctx == CTX_MUT) {
            TERR(ck, e->pos, "T14", "'$%s' is not a declared parameter", e->var);
            return -1;
        }
        var_entry *v = find_var(ck, e->var);
        if (!v) {
            if (!strcmp(e->var, "_"))
                TERR(ck, e->pos, "T6", "the anonymous variable '$_' cannot be read");
            else
                TERR(ck, e->pos, "T6", "variable '$%s' is not bound in match", e->var);
            return -1;
        }
        if (v->level < ck->level) ck->used_outer = 1;
        if (ck->ir->slots[v->slot].kind == LANG_IR_SLOT_EDGE) {
            TERR(ck, e->pos, "T23", "edge variable '$%s' can only be used as $%s.prop", e->var,
                 e->var);
            return -1;
        }
        out->kind = LANG_IR_X_ID;
        out->slot = v->slot;
        out->type.scalar = LANG_S_STRING;
        *flags |= XF_ENTITY;
        return 0;
    }
    case GQ_E_PROP:
        if (ctx == CTX_MUT) {
            TERR(ck, e->pos, "T14", "a mutation value is a literal, a $param or now()");
            return -1;
        }
        return prop_ref(ck, e, out, ctx);
    case GQ_E_LIT:
        out->kind = LANG_IR_X_LITERAL;
        out->lit = e->lit;
        return lit_type(ck, &out->lit, &out->type, flags, e->pos);
    case GQ_E_NOW:
        out->kind = LANG_IR_X_NOW;
        out->type.scalar = LANG_S_DATETIME;
        ck->ir->uses_now = 1;
        *flags |= XF_CONST;
        return 0;
    case GQ_E_CALL:
        return check_call(ck, e, out, flags, ctx);
    case GQ_E_ALIAS:
        TERR(ck, e->pos, "T6", "'%s' is not a variable; write $%s", e->name, e->name);
        return -1;
    default:
        return -1;
    }
}

/* lhs op rhs: reports T7 (and T3 for literals that do not fit). */
static int check_compare(checker *ck, lang_ir_expr *l, int lf, int op, lang_ir_expr *r, int rf,
                         lang_pos pos)
{
    if (op == GQ_OP_STARTS_WITH) {
        int ls = (l->type.kind == LANG_TY_SCALAR && l->type.scalar == LANG_S_STRING) ||
                 l->type.kind == LANG_TY_ENUM;
        int rs = r->type.kind == LANG_TY_SCALAR && r->type.scalar == LANG_S_STRING;
        if (!ls || !rs) {
            TERR(ck, pos, "T7", "starts_with needs String operands, not %s and %s",
                 tstr(ck, &l->type), tstr(ck, &r->type));
            return -1;
        }
        return 0;
    }
    if (op == GQ_OP_CONTAINS) {
        if (l->type.kind == LANG_TY_LIST) {
            lang_type et = {LANG_TY_SCALAR, l->type.scalar, 0, 0, NULL, 0};
            if (rf & XF_LIT) return lit_fits(ck, &r->lit, &et, pos, "contains");
            if (!types_compatible(&et, &r->type)) {
                TERR(ck, pos, "T7", "contains on %s needs a %s, not %s", tstr(ck, &l->type),
                     lang_scalar_name(l->type.scalar), tstr(ck, &r->type));
                return -1;
            }
            return 0;
        }
        int ls = l->type.kind == LANG_TY_SCALAR && l->type.scalar == LANG_S_STRING;
        int rs = r->type.kind == LANG_TY_SCALAR && r->type.scalar == LANG_S_STRING;
        if (!ls || !rs) {
            TERR(ck, pos, "T7", "contains needs a list or String on the left, not %s",
                 tstr(ck, &l->type));
            return -1;
        }
        return 0;
    }
    /* comparison operators */
    for (int side = 0; side < 2; side++) {
        const lang_type *t = side ? &r->type : &l->type;
        if (t->kind == LANG_TY_VECTOR) {
            TERR(ck, pos, "T7", "a Vector cannot be compared; use nearest() in order");
            return -1;
        }
        if (op != GQ_OP_EQ && op != GQ_OP_NE &&
            !(t->kind == LANG_TY_ENUM ||
              (t->kind == LANG_TY_SCALAR && lang_scalar_is_orderable(t->scalar)))) {
            TERR(ck, pos, "T7", "'%s' needs orderable operands, not %s", gq_op_name(op),
                 tstr(ck, t));
            return -1;
        }
    }
    if ((lf & XF_LIT) && !(rf & XF_LIT))
        return lit_fits(ck, &l->lit, &r->type, pos, "this comparison");
    if ((rf & XF_LIT) && !(lf & XF_LIT))
        return lit_fits(ck, &r->lit, &l->type, pos, "this comparison");
    if ((rf & XF_LIT) && (lf & XF_LIT)) {
        if (l->type.kind != r->type.kind ||
            !(l->type.scalar == r->type.scalar ||
              (lang_scalar_is_numeric(l->type.scalar) && lang_scalar_is_numeric(r->type.scalar)))) {
            TERR(ck, pos, "T7", "cannot compare %s with %s", tstr(ck, &l->type),
                 tstr(ck, &r->type));
            return -1;
        }
        return 0;
    }
    if (!types_compatible(&l->type, &r->type)) {
        TERR(ck, pos, "T7", "cannot compare %s with %s", tstr(ck, &l->type), tstr(ck, &r->type));
        return -1;
    }
    return 0;
}

/* A value stored into property type t (mutations, match property maps). */
static int check_value_for(checker *ck, lang_ir_expr *x, int xf, const lang_type *t, lang_pos pos,
                           const char *what)
{
    if (xf & XF_LIT) {
        if (lit_fits(ck, &x->lit, t, pos, what)) return -1;
        x->type = *t;
        x->type.nullable = 0;
        return 0;
    }
    if (x->kind == LANG_IR_X_NOW) {
        if (t->kind == LANG_TY_SCALAR && t->scalar == LANG_S_DATETIME) return 0;
        TERR(ck, pos, "T7", "now() is a DateTime; %s is %s", what, tstr(ck, t));
        return -1;
    }
    if (!types_compatible(t, &x->type)) {
        TERR(ck, pos, "T7", "%s is %s, the value is %s", what, tstr(ck, t), tstr(ck, &x->type));
        return -1;
    }
    return 0;
}

/* ---- match blocks ---------------------------------------------------------------------------- */

static void collect_slots(const lang_ir_expr *x, int **arr, size_t *n, size_t *cap, checker *ck)
{
    if (x->slot >= 0 && (x->kind == LANG_IR_X_ID || x->kind == LANG_IR_X_PROP))
        add_set(ck, arr, n, cap, x->slot);
    for (size_t i = 0; i < x->n_args; i++)
        collect_slots(&x->args[i], arr, n, cap, ck);
}

static int declare_var(checker *ck, const char *name, int type, lang_pos pos, const char *why)
{
    if (!strcmp(name, "_")) return new_slot(ck, "_", LANG_IR_SLOT_NODE, type);
    if (find_param(ck, name, NULL)) {
        TERR(ck, pos, "Q001", "'$%s' is already a parameter", name);
        return -1;
    }
    var_entry *v = find_var(ck, name);
    if (v) {
        const lang_ir_slot *s = &ck->ir->slots[v->slot];
        if (v->level < ck->level) ck->used_outer = 1;
        if (s->kind == LANG_IR_SLOT_EDGE) {
            TERR(ck, pos, "T23", "'$%s' is an edge variable", name);
            return -1;
        }
        if (s->type != type) {
            TERR(ck, pos, "T5", "'$%s' is a %s, but %s needs a %s", name,
                 ck->cat->types[s->type].name, why, ck->cat->types[type].name);
            return -1;
        }
        return v->slot;
    }
    return new_slot(ck, name, LANG_IR_SLOT_NODE, type);
}

/* Resolve and type the clauses of one match block, then its not {} bodies one level down. */
static int check_block(checker *ck, const gq_clause *cl, size_t n, lang_checked_block *out)
{
    int errs = 0;
    out->first_slot = ck->ir->n_slots;
    lang_checked_clause *pd = core_arena_calloc(ck->a, n ? n : 1, sizeof *pd);
    if (!pd) {
        ck->oom = 1;
        return -1;
    }
    out->clauses = pd;
    out->n = n;
    /* 1. bindings */
    for (size_t i = 0; i < n; i++) {
        pd[i].kind = cl[i].kind;
        pd[i].src_slot = pd[i].dst_slot = pd[i].edge_slot = pd[i].edge_type = -1;
        if (cl[i].kind != GQ_C_BIND) continue;
        int t = lang_catalog_find(ck->cat, cl[i].type_name, LANG_NODE);
        if (t < 0) {
            if (lang_catalog_find(ck->cat, cl[i].type_name, LANG_EDGE) >= 0)
                TERR(ck, cl[i].type_pos, "T1",
                     "'%s' is an edge type; bind nodes and traverse edges", cl[i].type_name);
            else
                TERR(ck, cl[i].type_pos, "T1", "unknown node type '%s'%s", cl[i].type_name,
                     type_hint(ck, cl[i].type_name, LANG_NODE));
            errs++;
            continue;
        }
        int s = declare_var(ck, cl[i].var, t, cl[i].pos, "this binding");
        if (s < 0) {
            errs++;
            continue;
        }
        pd[i].src_slot = s; /* set only once the binding resolved */
    }
    /* 2. traversals */
    for (size_t i = 0; i < n; i++) {
        const gq_clause *c = &cl[i];
        if (c->kind != GQ_C_TRAV) continue;
        int e = lang_catalog_find_edge_ci(ck->cat, c->eword);
        if (e < 0) {
            TERR(ck, c->eword_pos, "T4", "unknown edge '%s'%s", c->eword,
                 type_hint(ck, c->eword, LANG_EDGE));
            errs++;
            continue;
        }
        const lang_typedef *et = &ck->cat->types[e];
        if (c->has_bounds) {
            if (c->edge_var) {
                TERR(ck, c->bounds_pos, "T23", "an edge binding cannot take hop bounds");
                errs++;
                continue;
            }
            if (c->min_hops < 1 || c->max_hops < 0 || (int64_t)c->min_hops > c->max_hops ||
                c->max_hops > LANG_MAX_HOPS) {
                TERR(ck, c->bounds_pos, "T15",
                     "hop bounds need 1 <= min <= max <= %d (max is required)", LANG_MAX_HOPS);
                errs++;
                continue;
            }
        }
        if (c->undirected && et->from != et->to) {
            TERR(ck, c->eword_pos, "T22",
                 "undirected traversal needs an edge between one type; '%s' goes %s -> %s",
                 et->name, ck->cat->types[et->from].name, ck->cat->types[et->to].name);
            errs++;
            continue;
        }
        char why[200];
        snprintf(why, sizeof why, "edge '%s' (%s -> %s)", et->name, ck->cat->types[et->from].name,
                 ck->cat->types[et->to].name);
        int s = declare_var(ck, c->src, et->from, c->src_pos, why);
        int d = s < 0 ? -1 : declare_var(ck, c->dst, et->to, c->dst_pos, why);
        if (s < 0 || d < 0) {
            errs++;
            continue;
        }
        int w = -1;
        if (c->edge_var) {
            if (!strcmp(c->edge_var, "_") || find_var(ck, c->edge_var) ||
                find_param(ck, c->edge_var, NULL)) {
                TERR(ck, c->edge_pos, "T23", "edge variable '$%s' is already used", c->edge_var);
                errs++;
                continue;
            }
            w = new_slot(ck, c->edge_var, LANG_IR_SLOT_EDGE, e);
            if (w < 0) {
                errs++;
                continue;
            }
        }
        pd[i].src_slot = s;
        pd[i].dst_slot = d;
        pd[i].edge_slot = w;
        pd[i].edge_type = e;
        pd[i].undirected = c->undirected;
        pd[i].min_hops = c->min_hops;
        pd[i].max_hops = c->max_hops;
    }
    /* 3. property maps and filters */
    for (size_t i = 0; i < n; i++) {
        const gq_clause *c = &cl[i];
        if (c->kind == GQ_C_BIND && pd[i].src_slot >= 0) {
            const lang_typedef *t = &ck->cat->types[ck->ir->slots[pd[i].src_slot].type];
            if (c->n_pms) {
                pd[i].preds = core_arena_calloc(ck->a, c->n_pms, sizeof *pd[i].preds);
                if (!pd[i].preds) {
                    ck->oom = 1;
                    return -1;
                }
            }
            for (size_t k = 0; k < c->n_pms; k++) {
                const gq_pm *pm = &c->pms[k];
                int pi = lang_type_find_prop(t, pm->prop);
                if (pi < 0) {
                    TERR(ck, pm->pos, "T2", "'%s' has no property '%s'%s", t->name, pm->prop,
                         prop_hint(ck, t, pm->prop));
                    errs++;
                    continue;
                }
                const lang_prop *p = &t->props[pi];
                if (p->type.kind == LANG_TY_SCALAR && p->type.scalar == LANG_S_BLOB) {
                    TERR(ck, pm->pos, "T24", "Blob property '%s' cannot be matched", pm->prop);
                    errs++;
                    continue;
                }
                lang_ir_pred *pr = &pd[i].preds[pd[i].n_preds];
                int vf = 0;
                if (check_expr(ck, pm->value, &pr->rhs, &vf, CTX_FILTER)) {
                    errs++;
                    continue;
                }
                if (!(vf & XF_CONST)) {
                    TERR(ck, pm->value->pos, "T7",
                         "a property map takes a literal, a $param or now()");
                    errs++;
                    continue;
                }
                pr->lhs.kind = LANG_IR_X_PROP;
                pr->lhs.slot = pd[i].src_slot;
                pr->lhs.prop = pi;
                pr->lhs.prop_id = p->id;
                pr->lhs.type = p->type;
                pr->lhs.param = pr->lhs.column = -1;
                pr->op = GQ_OP_EQ;
                if (check_compare(ck, &pr->lhs, 0, GQ_OP_EQ, &pr->rhs, vf, pm->value->pos)) {
                    errs++;
                    continue;
                }
                pd[i].n_preds++;
            }
        } else if (c->kind == GQ_C_FILTER || c->kind == GQ_C_CALL) {
            int lf = 0, rf = 0;
            size_t cap = 0;
            pd[i].pred = core_arena_calloc(ck->a, 1, sizeof *pd[i].pred);
            if (!pd[i].pred) {
                ck->oom = 1;
                return -1;
            }
            if (c->kind == GQ_C_CALL) {
                if (check_expr(ck, c->call, &pd[i].pred->lhs, &lf, CTX_FILTER)) {
                    errs++;
                    continue;
                }
            } else {
                if (check_expr(ck, c->lhs, &pd[i].pred->lhs, &lf, CTX_FILTER)) {
                    errs++;
                    continue;
                }
                if (check_expr(ck, c->rhs, &pd[i].pred->rhs, &rf, CTX_FILTER)) {
                    errs++;
                    continue;
                }
                if ((lf & XF_ENTITY) && (rf & XF_ENTITY) && c->op != GQ_OP_EQ &&
                    c->op != GQ_OP_NE) {
                    TERR(ck, c->op_pos, "T7", "variables compare by identity: use = or !=");
                    errs++;
                    continue;
                }
                if (check_compare(ck, &pd[i].pred->lhs, lf, c->op, &pd[i].pred->rhs, rf,
                                  c->op_pos)) {
                    errs++;
                    continue;
                }
                pd[i].pred->op = c->op;
                collect_slots(&pd[i].pred->rhs, &pd[i].uses, &pd[i].n_uses, &cap, ck);
            }
            collect_slots(&pd[i].pred->lhs, &pd[i].uses, &pd[i].n_uses, &cap, ck);
        }
    }
    if (errs || ck->oom) return -1;
    out->own_end = ck->ir->n_slots;
    /* 4. not {} bodies, checked one level down: they see the variables bound so far */
    for (size_t i = 0; i < n; i++) {
        if (cl[i].kind != GQ_C_NOT) continue;
        lang_checked_block *body = core_arena_calloc(ck->a, 1, sizeof *body);
        if (!body) {
            ck->oom = 1;
            return -1;
        }
        pd[i].body = body;
        size_t save_vars = ck->n_vars;
        int save_outer = ck->used_outer;
        ck->level++;
        ck->used_outer = 0;
        int rc = check_block(ck, cl[i].body, cl[i].n_body, body);
        if (rc == 0 && !ck->used_outer) {
            TERR(ck, cl[i].pos, "T9", "not { } must use a variable bound outside it");
            rc = -1;
        }
        ck->level--;
        ck->used_outer = save_outer;
        ck->n_vars = save_vars;
        if (rc) errs++;
    }
    out->end_slot = ck->ir->n_slots;
    return errs ? -1 : 0;
}

/* ---- return / order ------------------------------------------------------------------------- */

static const char *col_name(checker *ck, const gq_proj *p, const lang_ir_expr *x)
{
    if (p->alias) return p->alias;
    const gq_expr *e = p->expr;
    if (e->kind == GQ_E_PROP) return core_arena_sprintf(ck->a, "%s.%s", e->var, e->name);
    if (e->kind == GQ_E_VAR) return e->var;
    if (e->kind == GQ_E_CALL && e->n_args == 1) {
        const gq_expr *a = e->args[0];
        if (a->kind == GQ_E_PROP)
            return core_arena_sprintf(ck->a, "%s(%s.%s)", e->name, a->var, a->name);
        if (a->kind == GQ_E_VAR) return core_arena_sprintf(ck->a, "%s(%s)", e->name, a->var);
    }
    if (e->kind == GQ_E_NOW) return "now()";
    (void)x;
    return core_arena_sprintf(ck->a, "col%d", p->pos.col);
}

static int same_ref(const lang_ir_expr *a, const lang_ir_expr *b)
{
    return a->kind == b->kind && a->slot == b->slot && a->prop == b->prop &&
           (a->kind == LANG_IR_X_PROP || a->kind == LANG_IR_X_ID);
}

/* The result columns (into ir->columns) and the order keys of a read. */
static int check_return(checker *ck, lang_checked_return *out)
{
    const gq_query *q = ck->q;
    lang_ir_query *ir = ck->ir;
    int errs = 0, has_agg = 0;
    ir->columns = core_arena_calloc(ck->a, q->n_projs, sizeof *ir->columns);
    if (!ir->columns) {
        ck->oom = 1;
        return -1;
    }
    for (size_t i = 0; i < q->n_projs; i++) {
        const gq_proj *p = &q->projs[i];
        lang_ir_column *c = &ir->columns[ir->n_columns];
        int f = 0;
        if (check_expr(ck, p->expr, &c->expr, &f, CTX_RETURN)) {
            errs++;
            continue;
        }
        if (c->expr.kind == LANG_IR_X_NEAREST || c->expr.kind == LANG_IR_X_CALL) {
            TERR(ck, p->pos, "T15", "search scores cannot be returned");
            errs++;
            continue;
        }
        c->type = c->expr.type;
        if (f & XF_AGG) {
            has_agg = 1;
            c->agg = c->expr.column;
            c->expr.column = -1;
            if (c->agg == LANG_IR_COUNT) {
                memset(&c->type, 0, sizeof c->type);
                c->type.scalar = LANG_S_I64;
            } else if (c->agg == LANG_IR_AVG) {
                memset(&c->type, 0, sizeof c->type);
                c->type.scalar = LANG_S_F64;
                c->type.nullable = 1;
            } else if (c->agg == LANG_IR_SUM) {
                int s = lang_scalar_is_float(c->type.scalar) ? LANG_S_F64 : LANG_S_I64;
                memset(&c->type, 0, sizeof c->type);
                c->type.scalar = s;
            } else {
                c->type.nullable = 1;
            }
        }
        c->name = col_name(ck, p, &c->expr);
        for (size_t k = 0; k < ir->n_columns; k++)
            if (c->name && !strcmp(ir->columns[k].name, c->name)) {
                TERR(ck, p->pos, "Q001", "column '%s' is returned twice; add 'as' to rename one",
                     c->name);
                errs++;
            }
        ir->n_columns++;
    }
    if (has_agg)
        for (size_t i = 0; i < ir->n_columns; i++) {
            const lang_ir_column *c = &ir->columns[i];
            if (c->agg == LANG_IR_AGG_NONE && c->expr.kind != LANG_IR_X_PROP &&
                c->expr.kind != LANG_IR_X_ID) {
                TERR(ck, q->projs[i].pos, "T9",
                     "with aggregates, other return items must be $var or $var.prop");
                errs++;
            }
        }
    if (errs) return -1;
    /* order */
    lang_ir_sort_key *keys = NULL;
    size_t n_keys = 0, kcap = 0;
    int has_rank = 0, has_alias = 0;
    for (size_t i = 0; i < q->n_ords; i++) {
        const gq_ord *o = &q->ords[i];
        lang_ir_sort_key *k = push(ck, (void **)&keys, &n_keys, &kcap, sizeof *k);
        if (!k) return -1;
        k->desc = o->desc;
        if (o->expr->kind == GQ_E_ALIAS) {
            has_alias = 1;
            int found = -1;
            for (size_t c = 0; c < ir->n_columns; c++)
                if (q->projs[c].alias && !strcmp(q->projs[c].alias, o->expr->name)) found = (int)c;
            if (found < 0) {
                TERR(ck, o->expr->pos, "T6", "'%s' is not a return alias", o->expr->name);
                errs++;
                continue;
            }
            if (has_agg) {
                k->expr.kind = LANG_IR_X_COLUMN;
                k->expr.column = found;
                k->expr.slot = k->expr.prop = k->expr.param = -1;
                k->expr.type = ir->columns[found].type;
            } else {
                k->expr = ir->columns[found].expr;
            }
            continue;
        }
        int f = 0;
        if (check_expr(ck, o->expr, &k->expr, &f, CTX_ORDER)) {
            errs++;
            continue;
        }
        if (k->expr.kind == LANG_IR_X_NEAREST || k->expr.kind == LANG_IR_X_CALL) {
            has_rank = 1;
            if (has_agg) {
                TERR(ck, o->pos, "T15", "ranking cannot be combined with aggregates");
                errs++;
            }
            continue;
        }
        if (k->expr.type.kind == LANG_TY_VECTOR || k->expr.type.kind == LANG_TY_LIST) {
            TERR(ck, o->pos, "T7", "cannot order by %s", tstr(ck, &k->expr.type));
            errs++;
            continue;
        }
        if (has_agg) {
            int found = -1;
            for (size_t c = 0; c < ir->n_columns; c++)
                if (ir->columns[c].agg == LANG_IR_AGG_NONE &&
                    same_ref(&ir->columns[c].expr, &k->expr))
                    found = (int)c;
            if (found < 0) {
                TERR(ck, o->pos, "T9", "after aggregation, order by a returned column or alias");
                errs++;
                continue;
            }
            memset(&k->expr, 0, sizeof k->expr);
            k->expr.kind = LANG_IR_X_COLUMN;
            k->expr.column = found;
            k->expr.slot = k->expr.prop = k->expr.param = -1;
            k->expr.type = ir->columns[found].type;
        }
    }
    if (has_rank && has_alias) {
        TERR(ck, q->ords[0].pos, "T18",
             "ordering by an alias cannot be combined with nearest/bm25/rrf");
        errs++;
    }
    if (has_rank && !q->has_limit) {
        TERR(ck, q->ords[0].pos, "T17", "nearest/bm25/rrf ordering needs a limit");
        errs++;
    }
    if (errs) return -1;
    out->keys = keys;
    out->n_keys = n_keys;
    out->has_agg = has_agg;
    out->has_limit = q->has_limit;
    out->limit = q->limit;
    return 0;
}

/* ---- mutations ---------------------------------------------------------------------------------
 */

static int find_mut_type(checker *ck, const gq_mut *m)
{
    int t = lang_catalog_find(ck->cat, m->type_name, 0);
    if (t < 0) t = lang_catalog_find_edge_ci(ck->cat, m->type_name);
    if (t < 0)
        TERR(ck, m->type_pos, "T10", "unknown type '%s'%s", m->type_name,
             type_hint(ck, m->type_name, 0));
    return t;
}

static int endpoint_value(checker *ck, const lang_typedef *node, lang_ir_expr *x, int xf,
                          lang_pos pos, const char *what)
{
    lang_type str = {LANG_TY_SCALAR, LANG_S_STRING, 0, 0, NULL, 0};
    if (node->n_key == 1) {
        const lang_type *kt = &node->props[node->key[0]].type;
        if ((xf & XF_LIT)
                ? (x->lit.kind == LANG_V_STRING || lit_fits(ck, &x->lit, kt, pos, what) == 0)
                : (types_compatible(&str, &x->type) || types_compatible(kt, &x->type)))
            return 0;
        if (xf & XF_LIT) return -1; /* lit_fits reported */
        TERR(ck, pos, "T7", "%s is a %s id (String or its key %s), not %s", what, node->name,
             tstr(ck, kt), tstr(ck, &x->type));
        return -1;
    }
    return check_value_for(ck, x, xf, &str, pos, what);
}

/* One insert, update or delete: its type, assignments, endpoints and where predicate. */
static int check_mutation(checker *ck, const gq_mut *m, lang_checked_mut *op)
{
    int t = find_mut_type(ck, m);
    if (t < 0) return -1;
    const lang_typedef *td = &ck->cat->types[t];
    int errs = 0;
    if (m->kind == GQ_M_UPDATE && td->kind == LANG_EDGE) {
        TERR(ck, m->type_pos, "T16", "edges cannot be updated; delete and insert instead");
        return -1;
    }
    op->kind = m->kind;
    op->type = t;
    op->pos = m->pos;
    /* assignments */
    op->assigns = core_arena_calloc(ck->a, m->n_asgs ? m->n_asgs : 1, sizeof *op->assigns);
    if (!op->assigns) {
        ck->oom = 1;
        return -1;
    }
    int have_from = 0, have_to = 0;
    for (size_t i = 0; i < m->n_asgs; i++) {
        const gq_asg *a = &m->asgs[i];
        for (size_t k = 0; k < i; k++)
            if (!strcmp(m->asgs[k].name, a->name)) {
                TERR(ck, a->pos, "T13", "'%s' is assigned twice", a->name);
                errs++;
                goto next;
            }
        {
            lang_ir_expr x;
            int xf = 0;
            if (check_expr(ck, a->value, &x, &xf, CTX_MUT)) {
                errs++;
                continue;
            }
            if (td->kind == LANG_EDGE && m->kind == GQ_M_INSERT &&
                (!strcmp(a->name, "from") || !strcmp(a->name, "to"))) {
                int is_from = a->name[0] == 'f';
                const lang_typedef *nd = &ck->cat->types[is_from ? td->from : td->to];
                if (endpoint_value(ck, nd, &x, xf, a->pos, a->name)) {
                    errs++;
                    continue;
                }
                lang_ir_expr *slot = core_arena_alloc(ck->a, sizeof *slot);
                if (!slot) {
                    ck->oom = 1;
                    return -1;
                }
                *slot = x;
                if (is_from) {
                    op->from = slot;
                    have_from = 1;
                } else {
                    op->to = slot;
                    have_to = 1;
                }
                continue;
            }
            int pi = lang_type_find_prop(td, a->name);
            if (pi < 0) {
                TERR(ck, a->pos, "T11", "'%s' has no property '%s'%s", td->name, a->name,
                     prop_hint(ck, td, a->name));
                errs++;
                continue;
            }
            const lang_prop *p = &td->props[pi];
            if (m->kind == GQ_M_UPDATE && p->is_key) {
                TERR(ck, a->pos, "T11", "key property '%s' cannot be updated", a->name);
                errs++;
                continue;
            }
            char what[160];
            snprintf(what, sizeof what, "'%s.%s'", td->name, p->name);
            if (check_value_for(ck, &x, xf, &p->type, a->pos, what)) {
                errs++;
                continue;
            }
            lang_ir_assign *as = &op->assigns[op->n_assigns++];
            as->prop = pi;
            as->prop_id = p->id;
            as->value = x;
        }
    next:;
    }
    if (m->kind == GQ_M_INSERT && !errs) {
        if (td->kind == LANG_EDGE) {
            if (!have_from || !have_to) {
                TERR(ck, m->pos, "T12", "inserting edge '%s' needs from: and to:", td->name);
                errs++;
            }
        }
        for (size_t k = 0; k < td->n_props; k++) {
            const lang_prop *p = &td->props[k];
            if (p->type.nullable) continue;
            int set = 0;
            for (size_t i = 0; i < op->n_assigns; i++)
                set |= op->assigns[i].prop == (int)k;
            if (!set) {
                TERR(ck, m->pos, "T12", "insert %s is missing required property '%s'", td->name,
                     p->name);
                errs++;
            }
        }
    }
    if (m->kind != GQ_M_INSERT) {
        lang_ir_pred *pr = core_arena_calloc(ck->a, 1, sizeof *pr);
        if (!pr) {
            ck->oom = 1;
            return -1;
        }
        op->where = pr;
        pr->op = m->where_op;
        pr->lhs.slot = pr->lhs.param = pr->lhs.column = pr->lhs.prop = -1;
        int xf = 0;
        if (check_expr(ck, m->where_value, &pr->rhs, &xf, CTX_MUT)) return -1;
        lang_type str = {LANG_TY_SCALAR, LANG_S_STRING, 0, 0, NULL, 0};
        if (!strcmp(m->where_prop, "id") ||
            (td->kind == LANG_EDGE &&
             (!strcmp(m->where_prop, "from") || !strcmp(m->where_prop, "to")))) {
            pr->lhs.kind = !strcmp(m->where_prop, "id") ? LANG_IR_X_ID
                           : m->where_prop[0] == 'f'    ? LANG_IR_X_EDGE_SRC
                                                        : LANG_IR_X_EDGE_DST;
            pr->lhs.type = str;
        } else {
            int pi = lang_type_find_prop(td, m->where_prop);
            if (pi < 0) {
                TERR(ck, m->where_pos, "T11", "'%s' has no property '%s'%s", td->name,
                     m->where_prop, prop_hint(ck, td, m->where_prop));
                return -1;
            }
            const lang_prop *p = &td->props[pi];
            if (p->type.kind == LANG_TY_SCALAR && p->type.scalar == LANG_S_BLOB) {
                TERR(ck, m->where_pos, "T11", "Blob property '%s' cannot be used in where",
                     p->name);
                return -1;
            }
            pr->lhs.kind = LANG_IR_X_PROP;
            pr->lhs.prop = pi;
            pr->lhs.prop_id = p->id;
            pr->lhs.type = p->type;
        }
        if (check_compare(ck, &pr->lhs, 0, pr->op, &pr->rhs, xf, m->where_pos)) return -1;
    }
    return errs ? -1 : 0;
}

/* ---- driver --------------------------------------------------------------------------------- */

static int check_query(checker *ck, const gq_query *q, lang_ir_query *ir)
{
    ck->q = q;
    ck->ir = ir;
    ck->n_vars = 0;
    ck->cap_slots = 0;
    ck->level = 0;
    ir->name = q->name;
    ir->file = ck->file;
    ir->pos = q->pos;
    ir->is_mutation = q->is_mutation;
    int errs = 0;
    for (size_t i = 0; i < q->n_anns; i++) {
        if (!strcmp(q->anns[i].name, "description"))
            ir->description = q->anns[i].args[0].value.s;
        else
            ir->instruction = q->anns[i].args[0].value.s;
    }
    ir->params = core_arena_calloc(ck->a, q->n_params ? q->n_params : 1, sizeof *ir->params);
    if (!ir->params) {
        ck->oom = 1;
        return -1;
    }
    for (size_t i = 0; i < q->n_params; i++) {
        for (size_t k = 0; k < i; k++)
            if (!strcmp(q->params[k].name, q->params[i].name)) {
                TERR(ck, q->params[i].pos, "Q001", "parameter '$%s' is declared twice",
                     q->params[i].name);
                errs++;
            }
        if (q->params[i].type.kind == LANG_TY_SCALAR && q->params[i].type.scalar == LANG_S_BLOB) {
            TERR(ck, q->params[i].pos, "T24", "a Blob cannot be a parameter");
            errs++;
        }
        ir->params[i].name = q->params[i].name;
        ir->params[i].type = q->params[i].type;
    }
    ir->n_params = q->n_params;
    lang_checked_query cq;
    memset(&cq, 0, sizeof cq);
    if (!q->is_mutation) {
        if (check_block(ck, q->clauses, q->n_clauses, &cq.match))
            errs++;
        else if (check_return(ck, &cq.ret))
            errs++;
    } else {
        cq.muts = core_arena_calloc(ck->a, q->n_muts ? q->n_muts : 1, sizeof *cq.muts);
        if (!cq.muts) {
            ck->oom = 1;
            return -1;
        }
        cq.n_muts = q->n_muts;
        for (size_t i = 0; i < q->n_muts; i++)
            if (check_mutation(ck, &q->muts[i], &cq.muts[i])) errs++;
    }
    if (errs || ck->oom) return -1; /* only a query that checked is lowered */
    if (lang_lower_query(ck->a, ck->cat, &cq, ir)) {
        ck->oom = 1;
        ck->diags->oom = 1;
        return -1;
    }
    return 0;
}

int lang_query_set_build(lang_query_set **out, const lang_catalog *cat, const char *src, size_t len,
                         const char *file, lang_diags *diags)
{
    return lang_query_set_build_ex(out, cat, NULL, src, len, file, diags);
}

int lang_query_set_build_ex(lang_query_set **out, const lang_catalog *cat, const lang_history *hist,
                            const char *src, size_t len, const char *file, lang_diags *diags)
{
    *out = NULL;
    lang_query_set *qs = core_calloc(1, sizeof *qs);
    if (!qs) return core_err_nomem();
    core_arena_init(&qs->arena, 64 * 1024);
    qs->catalog = cat;
    qs->file = file ? file : "<query>";
    char *copy = core_arena_alloc(&qs->arena, len + 1);
    if (!copy) {
        lang_query_set_free(qs);
        return core_err_nomem();
    }
    if (len) memcpy(copy, src, len);
    copy[len] = '\0';
    size_t errors_before = diags->errors, first_diag = diags->n;
    *out = qs;
    int rc = gq_parse(&qs->ast, copy, len, qs->file, &qs->arena, diags);
    if (rc) return rc;
    size_t nq = qs->ast.n_queries;
    qs->queries = core_arena_calloc(&qs->arena, nq ? nq : 1, sizeof *qs->queries);
    qs->status = core_arena_calloc(&qs->arena, nq ? nq : 1, sizeof *qs->status);
    if (!qs->queries || !qs->status) return core_err_nomem();
    qs->n_queries = nq;
    checker ck;
    memset(&ck, 0, sizeof ck);
    ck.qs = qs;
    ck.cat = cat;
    ck.hist = hist;
    ck.diags = diags;
    ck.file = qs->file;
    ck.a = &qs->arena;
    for (size_t i = 0; i < nq; i++) {
        for (size_t k = 0; k < i; k++)
            if (!strcmp(qs->ast.queries[k].name, qs->ast.queries[i].name)) {
                TERR(&ck, qs->ast.queries[i].pos, "Q001", "query '%s' is declared twice",
                     qs->ast.queries[i].name);
                qs->status[i] = 1;
            }
        size_t before = diags->errors;
        if (check_query(&ck, &qs->ast.queries[i], &qs->queries[i]) || diags->errors > before)
            qs->status[i] = 1;
        if (ck.oom) break;
    }
    if (diags->oom || ck.oom) return core_err_nomem();
    if (diags->errors > errors_before) return lang_diags_status_since(diags, first_diag);
    for (size_t i = 0; i < nq; i++)
        if (qs->status[i]) return lang_diags_failure(diags, first_diag);
    return 0;
}

void lang_query_set_free(lang_query_set *qs)
{
    if (!qs) return;
    core_arena_free(&qs->arena);
    core_free(qs);
}

int lang_query_set_find(const lang_query_set *qs, const char *name)
{
    for (size_t i = 0; i < qs->n_queries; i++)
        if (qs->queries[i].name && !strcmp(qs->queries[i].name, name)) return (int)i;
    return -1;
}
