/* Key-derived node identity (the canonical text of key values) and the catalog's JSON form. */
#include "lang/catalog.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Shortest decimal digits that read back as the same value at the given width, written
 * without an exponent (as Rust's Display does). */
static int float_canonical(core_buf *out, double v, int is_f32)
{
    if (isnan(v) || isinf(v))
        return core_err(OG_E_BAD_REQUEST, "a key value may not be NaN or infinite");
    if (v == 0) return core_buf_append_str(out, "0");
    char e[64];
    int maxp = is_f32 ? 9 : 17;
    for (int p = 1; p <= maxp; p++) {
        snprintf(e, sizeof e, "%.*e", p - 1, v);
        double back = strtod(e, NULL);
        if (is_f32 ? (float)back == (float)v : back == v) break;
    }
    /* e = [-]d[.ddd]e[+-]xx */
    const char *s = e;
    int neg = 0;
    if (*s == '-') {
        neg = 1;
        s++;
    }
    char digs[32];
    int n = 0;
    while (*s && *s != 'e') {
        if (*s != '.') digs[n++] = *s;
        s++;
    }
    int exp10 = atoi(s + 1);
    while (n > 1 && digs[n - 1] == '0')
        n--;
    int rc = 0;
    if (neg) rc |= core_buf_append_byte(out, '-');
    if (exp10 >= n - 1) {
        rc |= core_buf_append(out, digs, (size_t)n);
        for (int k = 0; k < exp10 - (n - 1); k++)
            rc |= core_buf_append_byte(out, '0');
    } else if (exp10 >= 0) {
        rc |= core_buf_append(out, digs, (size_t)exp10 + 1);
        rc |= core_buf_append_byte(out, '.');
        rc |= core_buf_append(out, digs + exp10 + 1, (size_t)(n - exp10 - 1));
    } else {
        rc |= core_buf_append_str(out, "0.");
        for (int k = 0; k < -exp10 - 1; k++)
            rc |= core_buf_append_byte(out, '0');
        rc |= core_buf_append(out, digs, (size_t)n);
    }
    return rc ? OG_E_NOMEM : 0;
}

int lang_value_canonical(core_buf *out, int scalar, const lang_value *v)
{
    switch (v->kind) {
    case LANG_V_NULL:
        return core_err(OG_E_BAD_REQUEST, "a key value may not be null");
    case LANG_V_BOOL:
        if (scalar != LANG_S_BOOL) break;
        return core_buf_append_str(out, v->u ? "true" : "false");
    case LANG_V_INT:
        if (lang_scalar_is_float(scalar)) {
            double d = v->neg ? -(double)v->u : (double)v->u;
            return float_canonical(out, d, scalar == LANG_S_F32);
        }
        if (!lang_scalar_is_int(scalar) && scalar != LANG_S_DATE && scalar != LANG_S_DATETIME)
            break;
        if (v->neg && v->u != 0 && (scalar == LANG_S_U32 || scalar == LANG_S_U64))
            return core_err(OG_E_BAD_REQUEST, "negative value for an unsigned key");
        return core_buf_printf(out, "%s%llu", v->neg && v->u ? "-" : "", (unsigned long long)v->u);
    case LANG_V_FLOAT:
        if (!lang_scalar_is_float(scalar)) break;
        return float_canonical(out, v->f, scalar == LANG_S_F32);
    case LANG_V_STRING:
        if (scalar == LANG_S_DATE || scalar == LANG_S_DATETIME) {
            int64_t x;
            if (scalar == LANG_S_DATE ? lang_parse_date(v->s, &x) : lang_parse_datetime(v->s, &x))
                return core_err(OG_E_BAD_REQUEST, "'%s' is not a valid %s", v->s,
                                lang_scalar_name(scalar));
            return core_buf_printf(out, "%lld", (long long)x);
        }
        if (scalar != LANG_S_STRING) break;
        return core_buf_append_str(out, v->s);
    case LANG_V_DATE:
    case LANG_V_DATETIME: {
        if ((v->kind == LANG_V_DATE) != (scalar == LANG_S_DATE) || !lang_scalar_name(scalar)) break;
        if (scalar != LANG_S_DATE && scalar != LANG_S_DATETIME) break;
        int64_t x = v->i;
        if (!v->checked &&
            (v->kind == LANG_V_DATE ? lang_parse_date(v->s, &x) : lang_parse_datetime(v->s, &x)))
            return core_err(OG_E_BAD_REQUEST, "'%s' is not a valid %s", v->s ? v->s : "",
                            lang_scalar_name(scalar));
        return core_buf_printf(out, "%lld", (long long)x);
    }
    default:
        break;
    }
    return core_err(OG_E_BAD_REQUEST, "value does not match key type %s", lang_scalar_name(scalar));
}

int lang_key_id(char **out, const lang_typedef *t, const lang_value *vals)
{
    *out = NULL;
    if (!t->n_key) return core_err(OG_E_BAD_REQUEST, "type '%s' has no @key", t->name);
    core_buf b = CORE_BUF_INIT;
    int rc = 0;
    if (t->n_key == 1) {
        rc = lang_value_canonical(&b, t->props[t->key[0]].type.scalar, &vals[0]);
    } else {
        json_t *arr = json_array();
        if (!arr) return core_err_nomem();
        for (size_t i = 0; i < t->n_key && !rc; i++) {
            core_buf one = CORE_BUF_INIT;
            rc = lang_value_canonical(&one, t->props[t->key[i]].type.scalar, &vals[i]);
            if (!rc && json_array_append_new(arr, json_string(core_buf_cstr(&one))))
                rc = core_err_nomem();
            core_buf_free(&one);
        }
        if (!rc) {
            rc = core_json_dump_ascii(arr, &b);
        }
        json_decref(arr);
    }
    if (rc) {
        core_buf_free(&b);
        return rc;
    }
    if (!b.data && core_buf_append_str(&b, "")) return core_err_nomem();
    *out = (char *)core_buf_detach(&b, NULL);
    return 0;
}

/* ---- JSON --------------------------------------------------------------------------------- */

/* Every jansson call below can fail for memory: a constructor returns NULL, and setting or
 * appending NULL (or failing to grow) returns -1, so each builder ORs the results into a
 * failure flag and returns NULL when anything failed (the whole text, or OG_E_NOMEM). */
static json_t *value_json(const lang_value *v)
{
    switch (v->kind) {
    case LANG_V_BOOL:
        return json_boolean(v->u);
    case LANG_V_INT:
        if (v->neg) return json_integer(-(json_int_t)v->u);
        return v->u > (uint64_t)INT64_MAX ? json_real((double)v->u)
                                          : json_integer((json_int_t)v->u);
    case LANG_V_FLOAT:
        return json_real(v->f);
    case LANG_V_STRING:
    case LANG_V_DATE:
    case LANG_V_DATETIME:
        return json_string(v->s ? v->s : "");
    case LANG_V_LIST: {
        json_t *a = json_array();
        int bad = !a;
        for (size_t i = 0; a && i < v->n; i++)
            bad |= json_array_append_new(a, value_json(&v->items[i]));
        if (bad) json_decref(a);
        return bad ? NULL : a;
    }
    default:
        return json_null();
    }
}

static json_t *anns_json(const lang_ann *anns, size_t n)
{
    json_t *arr = json_array();
    int bad = !arr;
    for (size_t i = 0; !bad && i < n; i++) {
        json_t *a = json_object(), *args = json_array();
        bad |= !a || !args;
        for (size_t k = 0; !bad && k < anns[i].n_args; k++) {
            json_t *x = json_object();
            bad |= !x;
            if (!bad && anns[i].args[k].key)
                bad |= json_object_set_new(x, "key", json_string(anns[i].args[k].key));
            if (!bad) bad |= json_object_set_new(x, "value", value_json(&anns[i].args[k].value));
            bad |= json_array_append_new(args, x);
        }
        bad |= json_object_set_new(a, "name", json_string(anns[i].name));
        bad |= json_object_set_new(a, "args", args);
        bad |= json_array_append_new(arr, a);
    }
    if (bad) json_decref(arr);
    return bad ? NULL : arr;
}

static const char *con_kind_name(int k)
{
    switch (k) {
    case LANG_CON_KEY:
        return "key";
    case LANG_CON_UNIQUE:
        return "unique";
    case LANG_CON_INDEX:
        return "index";
    case LANG_CON_RANGE:
        return "range";
    case LANG_CON_CHECK:
        return "check";
    default:
        return "?";
    }
}

static json_t *type_json(const lang_catalog *c, const lang_typedef *t)
{
    char id[24];
    json_t *o = json_object();
    int bad = !o;
    bad |= json_object_set_new(o, "kind", json_string(t->kind == LANG_NODE ? "node" : "edge"));
    bad |= json_object_set_new(o, "name", json_string(t->name));
    snprintf(id, sizeof id, "%016llx", (unsigned long long)t->id);
    bad |= json_object_set_new(o, "id", json_string(id));
    if (t->kind == LANG_EDGE) {
        bad |=
            json_object_set_new(o, "from", json_string(t->from >= 0 ? c->types[t->from].name : ""));
        bad |= json_object_set_new(o, "to", json_string(t->to >= 0 ? c->types[t->to].name : ""));
        json_t *card = json_object();
        bad |= !card;
        if (card) {
            bad |= json_object_set_new(card, "min", json_integer((json_int_t)t->card_min));
            bad |= json_object_set_new(card, "max",
                                       t->card_max < 0 ? json_null() : json_integer(t->card_max));
        }
        bad |= json_object_set_new(o, "card", card);
    }
    json_t *props = json_array();
    bad |= !props;
    core_arena scratch;
    core_arena_init(&scratch, 1024);
    for (size_t i = 0; !bad && i < t->n_props; i++) {
        const lang_prop *p = &t->props[i];
        json_t *po = json_object();
        bad |= !po;
        bad |= json_object_set_new(po, "name", json_string(p->name));
        snprintf(id, sizeof id, "%016llx", (unsigned long long)p->id);
        bad |= json_object_set_new(po, "id", json_string(id));
        const char *ts = lang_type_str(&scratch, &p->type);
        bad |= !ts; /* the arena's allocation failed: "?" would change the identity */
        bad |= json_object_set_new(po, "type", json_string(ts ? ts : "?"));
        bad |= json_object_set_new(po, "nullable", json_boolean(p->type.nullable));
        if (p->is_key) bad |= json_object_set_new(po, "key", json_true());
        if (p->n_anns) bad |= json_object_set_new(po, "annotations", anns_json(p->anns, p->n_anns));
        bad |= json_array_append_new(props, po);
    }
    core_arena_free(&scratch);
    bad |= json_object_set_new(o, "properties", props);
    json_t *cons = json_array();
    bad |= !cons;
    for (size_t i = 0; !bad && i < t->n_cons; i++) {
        const lang_constraint *k = &t->cons[i];
        json_t *co = json_object(), *cols = json_array();
        bad |= !co || !cols;
        bad |= json_object_set_new(co, "kind", json_string(con_kind_name(k->kind)));
        for (size_t j = 0; !bad && j < k->n_cols; j++)
            bad |= json_array_append_new(cols, json_string(k->cols[j] == LANG_COL_SRC ? "src"
                                                           : k->cols[j] == LANG_COL_DST
                                                               ? "dst"
                                                               : t->props[k->cols[j]].name));
        bad |= json_object_set_new(co, "properties", cols);
        if (k->kind == LANG_CON_RANGE) {
            bad |= json_object_set_new(co, "min", k->has_lo ? value_json(&k->lo) : json_null());
            bad |= json_object_set_new(co, "max", k->has_hi ? value_json(&k->hi) : json_null());
        }
        if (k->kind == LANG_CON_CHECK)
            bad |= json_object_set_new(co, "pattern", json_string(k->pattern));
        if (k->kind == LANG_CON_INDEX)
            bad |= json_object_set_new(co, "index",
                                       json_string(k->index_kind == LANG_INDEX_FTS      ? "fts"
                                                   : k->index_kind == LANG_INDEX_VECTOR ? "vector"
                                                                                        : "btree"));
        bad |= json_array_append_new(cons, co);
    }
    bad |= json_object_set_new(o, "constraints", cons);
    if (!bad && t->n_key) {
        json_t *key = json_array();
        bad |= !key;
        for (size_t i = 0; !bad && i < t->n_key; i++)
            bad |= json_array_append_new(key, json_string(t->props[t->key[i]].name));
        bad |= json_object_set_new(o, "key", key);
    }
    if (!bad && t->n_anns)
        bad |= json_object_set_new(o, "annotations", anns_json(t->anns, t->n_anns));
    if (!bad && t->n_interfaces) {
        json_t *ifs = json_array();
        bad |= !ifs;
        for (size_t i = 0; !bad && i < t->n_interfaces; i++)
            bad |= json_array_append_new(ifs, json_string(t->interfaces[i]));
        bad |= json_object_set_new(o, "implements", ifs);
    }
    if (bad) json_decref(o);
    return bad ? NULL : o;
}

int lang_catalog_to_json(const lang_catalog *c, core_buf *out)
{
    json_t *root = json_object(), *types = json_array();
    int bad = !root || !types;
    for (size_t i = 0; !bad && i < c->n_types; i++)
        bad |= json_array_append_new(types, type_json(c, &c->types[i]));
    bad |= json_object_set_new(root, "types", types);
    int rc = bad ? core_err_nomem() : core_json_dump(root, out);
    json_decref(root);
    return rc;
}
