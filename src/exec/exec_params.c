/* Query params from JSON: each declared param checked against its type and turned into the
 * same lang_value form the checker gives literals, so the executor treats both alike. */
#include "exec/exec_internal.h"

#include "core/alloc.h"
#include "core/error.h"

#include <math.h>
#include <string.h>

static int bad(const char *name, const char *fmt, const char *what)
{
    int rc = core_err(OG_E_BAD_REQUEST, "param '%s': %s%s", name, fmt, what ? what : "");
    core_err_detail(CORE_ERR_KEY, name);
    return rc;
}

static int int_fits(int scalar, int neg, uint64_t u)
{
    switch (scalar) {
    case LANG_S_I32:
        return neg ? u <= 2147483648u : u <= 2147483647u;
    case LANG_S_I64:
    case LANG_S_DATE:
    case LANG_S_DATETIME:
        return neg ? u <= (uint64_t)INT64_MAX + 1 : u <= (uint64_t)INT64_MAX;
    case LANG_S_U32:
        return (!neg || u == 0) && u <= UINT32_MAX;
    case LANG_S_U64:
        return !neg || u == 0;
    default:
        return 1;
    }
}

static int scalar_from_json(exec_params *p, const char *name, int scalar, const json_t *j,
                            lang_value *v)
{
    memset(v, 0, sizeof *v);
    const char *want = lang_scalar_name(scalar);
    switch (scalar) {
    case LANG_S_STRING:
    case LANG_S_BLOB:
        if (!json_is_string(j)) return bad(name, "expected a string for ", want);
        v->kind = LANG_V_STRING;
        v->s = core_arena_strndup(&p->arena, json_string_value(j), json_string_length(j));
        return v->s ? 0 : core_err_nomem();
    case LANG_S_BOOL:
        if (!json_is_boolean(j)) return bad(name, "expected true or false for ", want);
        v->kind = LANG_V_BOOL;
        v->u = json_is_true(j);
        return 0;
    case LANG_S_I32:
    case LANG_S_I64:
    case LANG_S_U32:
    case LANG_S_U64: {
        if (!json_is_integer(j)) return bad(name, "expected an integer for ", want);
        json_int_t x = json_integer_value(j);
        v->kind = LANG_V_INT;
        v->neg = x < 0;
        v->u = x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;
        if (!int_fits(scalar, v->neg, v->u)) return bad(name, "value out of range for ", want);
        return 0;
    }
    case LANG_S_F32:
    case LANG_S_F64:
        if (!json_is_number(j)) return bad(name, "expected a number for ", want);
        v->kind = LANG_V_FLOAT;
        v->f = json_number_value(j);
        return 0;
    case LANG_S_DATE:
    case LANG_S_DATETIME: {
        int64_t x = 0;
        if (json_is_integer(j)) {
            x = (int64_t)json_integer_value(j);
        } else if (json_is_string(j)) {
            const char *s = json_string_value(j);
            if (scalar == LANG_S_DATE ? lang_parse_date(s, &x) : lang_parse_datetime(s, &x))
                return bad(name, "not a valid ", want);
        } else {
            return bad(name, "expected an ISO string or an integer for ", want);
        }
        if (scalar == LANG_S_DATE && (x < INT32_MIN || x > INT32_MAX))
            return bad(name, "value out of range for ", want);
        v->kind = scalar == LANG_S_DATE ? LANG_V_DATE : LANG_V_DATETIME;
        v->checked = 1;
        v->i = x;
        return 0;
    }
    default:
        return bad(name, "unsupported param type ", want);
    }
}

static int value_from_json(exec_params *p, const lang_ir_param *d, const json_t *j, lang_value *v)
{
    memset(v, 0, sizeof *v);
    if (!j || json_is_null(j)) {
        if (!d->type.nullable) return bad(d->name, "a value is required", NULL);
        v->kind = LANG_V_NULL;
        return 0;
    }
    if (d->type.kind == LANG_TY_SCALAR) return scalar_from_json(p, d->name, d->type.scalar, j, v);
    if (d->type.kind == LANG_TY_LIST || d->type.kind == LANG_TY_VECTOR) {
        if (!json_is_array(j)) return bad(d->name, "expected a JSON array", NULL);
        size_t n = json_array_size(j);
        if (d->type.kind == LANG_TY_VECTOR && n != d->type.dim) {
            int rc = core_err(OG_E_BAD_REQUEST, "param '%s': expected %u numbers, got %zu", d->name,
                              d->type.dim, n);
            core_err_detail(CORE_ERR_KEY, d->name);
            return rc;
        }
        v->kind = LANG_V_LIST;
        v->n = n;
        v->items = core_arena_calloc(&p->arena, n ? n : 1, sizeof *v->items);
        if (!v->items) return core_err_nomem();
        int el = d->type.kind == LANG_TY_VECTOR ? LANG_S_F32 : d->type.scalar;
        for (size_t i = 0; i < n; i++) {
            const json_t *e = json_array_get(j, i);
            if (json_is_null(e)) return bad(d->name, "a list may not hold null", NULL);
            int rc = scalar_from_json(p, d->name, el, e, &v->items[i]);
            if (rc) return rc;
        }
        return 0;
    }
    return bad(d->name, "unsupported param type", NULL);
}

int exec_params_from_json(exec_params **out, const lang_ir_query *q, const json_t *obj)
{
    *out = NULL;
    if (obj && !json_is_object(obj))
        return core_err(OG_E_BAD_REQUEST, "params must be a JSON object");
    if (obj) {
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)obj, key, val)
        {
            int found = 0;
            for (size_t i = 0; i < q->n_params && !found; i++)
                found = !strcmp(q->params[i].name, key);
            if (!found) {
                (void)val;
                int rc = core_err(OG_E_BAD_REQUEST, "param '%s' is not declared by query %s", key,
                                  q->name);
                core_err_detail(CORE_ERR_KEY, key);
                return rc;
            }
        }
    }
    exec_params *p = core_calloc(1, sizeof *p);
    if (!p) return core_err_nomem();
    core_arena_init(&p->arena, 0);
    p->n = q->n_params;
    p->vals = core_arena_calloc(&p->arena, p->n ? p->n : 1, sizeof *p->vals);
    if (!p->vals) {
        exec_params_free(p);
        return core_err_nomem();
    }
    for (size_t i = 0; i < q->n_params; i++) {
        const json_t *j = obj ? json_object_get(obj, q->params[i].name) : NULL;
        int rc = value_from_json(p, &q->params[i], j, &p->vals[i]);
        if (rc) {
            exec_params_free(p);
            return rc;
        }
    }
    *out = p;
    return 0;
}

void exec_params_free(exec_params *p)
{
    if (!p) return;
    core_arena_free(&p->arena);
    core_free(p);
}

void exec_params_set_now(exec_params *p, int64_t now_ms)
{
    p->has_now = 1;
    p->now_ms = now_ms;
}
