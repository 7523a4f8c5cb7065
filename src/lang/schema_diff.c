/* The schema diff (see schema_diff.h): matches types and properties by name or @rename_from
 * and lists the steps in a fixed order: adds and renames first, then widening and constraints,
 * then metadata, then drops; any change that cannot be applied in place is an
 * unsupported_change with a code and a reason. */
#include "lang/schema_diff.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/json.h"

#include <stdio.h>
#include <string.h>

enum {
    ST_ADD_TYPE,
    ST_RENAME_TYPE,
    ST_ADD_PROP,
    ST_RENAME_PROP,
    ST_EXTEND_ENUM,
    ST_ADD_CON,
    ST_DROP_CON,
    ST_TYPE_META,
    ST_PROP_META,
    ST_DROP_PROP,
    ST_DROP_TYPE,
    ST_UNSUPPORTED,
    ST_N
};
static const char *const STEP_NAMES[ST_N] = {"add_type",
                                             "rename_type",
                                             "add_property",
                                             "rename_property",
                                             "extend_enum",
                                             "add_constraint",
                                             "drop_constraint",
                                             "update_type_metadata",
                                             "update_property_metadata",
                                             "drop_property",
                                             "drop_type",
                                             "unsupported_change"};

typedef struct raw_step {
    int kind;
    const char *entity, *detail, *code;
    int data_loss;
} raw_step;

typedef struct differ {
    lang_schema_diff *diff;
    raw_step *raw;
    size_t n_raw, cap_raw;
    int oom;
} differ;

static void step(differ *p, int kind, const char *entity, const char *detail, const char *code)
{
    raw_step *s =
        lang_vec_push(&p->diff->arena, (void **)&p->raw, &p->n_raw, &p->cap_raw, sizeof *s);
    /* every step has an entity and a detail: NULL is an allocation that failed (FMT, a type's
     * text, a constraint's signature), never a step to list without them */
    if (!s || !entity || !detail) {
        p->oom = 1;
        return;
    }
    s->kind = kind;
    s->entity = entity;
    s->detail = detail;
    s->code = code;
    if (kind == ST_UNSUPPORTED) p->diff->supported = 0;
}

#define FMT(p, ...) core_arena_sprintf(&(p)->diff->arena, __VA_ARGS__)

static int ann_is_structural(const char *n)
{
    return !strcmp(n, "rename_from") || !strcmp(n, "key") || !strcmp(n, "unique") ||
           !strcmp(n, "index");
}

static int ann_sig(core_buf *b, const lang_ann *anns, size_t n)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        if (ann_is_structural(anns[i].name)) continue;
        rc = core_buf_printf(b, "@%s(", anns[i].name);
        for (size_t k = 0; !rc && k < anns[i].n_args; k++) {
            const lang_value *v = &anns[i].args[k].value;
            rc = core_buf_printf(b, "%s=%d:%s:%llu:%g;",
                                 anns[i].args[k].key ? anns[i].args[k].key : "", v->kind,
                                 v->s ? v->s : "", (unsigned long long)v->u, v->f);
        }
        if (!rc) rc = core_buf_append_str(b, ")");
    }
    return rc;
}

/* 1 when the annotations other than the structural ones differ; an allocation failure sets
 * p->oom (two cut-short signatures must not decide). */
static int anns_differ(differ *p, const lang_ann *a, size_t na, const lang_ann *b, size_t nb)
{
    core_buf x = CORE_BUF_INIT, y = CORE_BUF_INIT;
    if (ann_sig(&x, a, na) || ann_sig(&y, b, nb)) p->oom = 1;
    int d = !p->oom && strcmp(core_buf_cstr(&x), core_buf_cstr(&y)) != 0;
    core_buf_free(&x);
    core_buf_free(&y);
    return d;
}

/* A constraint's identity in names: "unique(a,b)" / "range(age,0..150)". */
static char *con_sig(differ *p, const lang_typedef *t, const lang_constraint *c)
{
    core_buf b = CORE_BUF_INIT;
    static const char *const kn[] = {"", "key", "unique", "index", "range", "check"};
    int rc = core_buf_printf(&b, "%s(", kn[c->kind]);
    for (size_t i = 0; !rc && i < c->n_cols; i++)
        rc = core_buf_printf(&b, "%s%s", i ? "," : "",
                             c->cols[i] == LANG_COL_SRC   ? "src"
                             : c->cols[i] == LANG_COL_DST ? "dst"
                                                          : t->props[c->cols[i]].name);
    if (!rc && c->kind == LANG_CON_RANGE) {
        rc = core_buf_append_str(&b, ",");
        if (!rc && c->has_lo)
            rc = core_buf_printf(&b, "%s%g", c->lo.neg ? "-" : "",
                                 c->lo.kind == LANG_V_FLOAT ? (c->lo.f < 0 ? -c->lo.f : c->lo.f)
                                                            : (double)c->lo.u);
        if (!rc) rc = core_buf_append_str(&b, "..");
        if (!rc && c->has_hi)
            rc = core_buf_printf(&b, "%s%g", c->hi.neg ? "-" : "",
                                 c->hi.kind == LANG_V_FLOAT ? (c->hi.f < 0 ? -c->hi.f : c->hi.f)
                                                            : (double)c->hi.u);
    }
    if (!rc && c->kind == LANG_CON_CHECK) rc = core_buf_printf(&b, ",\"%s\"", c->pattern);
    if (!rc) rc = core_buf_append_str(&b, ")");
    char *s = rc ? NULL : core_arena_strdup(&p->diff->arena, core_buf_cstr(&b));
    core_buf_free(&b);
    if (!s) p->oom = 1;
    return s;
}

/* index of the old property a property of nt continues (same name or an unambiguous
 * @rename_from), or -1 */
static int match_prop(const lang_typedef *old, const lang_typedef *nt, const lang_prop *np)
{
    int i = lang_type_find_prop(old, np->name);
    if (i < 0 && np->rename_from && !lang_rename_ambiguous_prop(nt, (size_t)(np - nt->props), old))
        i = lang_type_find_prop(old, np->rename_from);
    return i;
}

static int enum_superset(const lang_type *n, const lang_type *o)
{
    for (size_t i = 0; i < o->n_enum; i++) {
        int found = 0;
        for (size_t k = 0; k < n->n_enum; k++)
            found |= !strcmp(o->enum_vals[i], n->enum_vals[k]);
        if (!found) return 0;
    }
    return 1;
}

static void diff_type(differ *p, const lang_catalog *from, const lang_typedef *ot,
                      const lang_catalog *to, const lang_typedef *nt, int allow)
{
    if (strcmp(ot->name, nt->name))
        step(p, ST_RENAME_TYPE, ot->name, FMT(p, "%s -> %s", ot->name, nt->name), NULL);
    if (nt->kind == LANG_EDGE) {
        const char *of = from->types[ot->from].name, *oto = from->types[ot->to].name;
        const char *nf = to->types[nt->from].name, *nto = to->types[nt->to].name;
        /* endpoints may be renamed types; compare through the rename */
        int nfi = lang_catalog_find(from, nf, LANG_NODE),
            ntoi = lang_catalog_find(from, nto, LANG_NODE);
        if (nfi < 0 && to->types[nt->from].rename_from &&
            !lang_rename_ambiguous_type(to, (size_t)nt->from, from))
            nfi = lang_catalog_find(from, to->types[nt->from].rename_from, LANG_NODE);
        if (ntoi < 0 && to->types[nt->to].rename_from &&
            !lang_rename_ambiguous_type(to, (size_t)nt->to, from))
            ntoi = lang_catalog_find(from, to->types[nt->to].rename_from, LANG_NODE);
        if (nfi != ot->from || ntoi != ot->to)
            step(p, ST_UNSUPPORTED, nt->name,
                 FMT(p, "edge endpoints change from %s -> %s to %s -> %s", of, oto, nf, nto),
                 "M103");
        if (nt->card_min != ot->card_min || nt->card_max != ot->card_max) {
            const char *max = nt->card_max < 0 ? "*" : FMT(p, "%lld", (long long)nt->card_max);
            step(p, ST_ADD_CON, nt->name,
                 max ? FMT(p, "@card(%llu..%s)", (unsigned long long)nt->card_min, max) : NULL,
                 NULL);
        }
    }
    /* keys */
    int key_changed = ot->n_key != nt->n_key;
    for (size_t i = 0; !key_changed && i < nt->n_key; i++) {
        int o = match_prop(ot, nt, &nt->props[nt->key[i]]);
        int found = 0;
        for (size_t k = 0; k < ot->n_key; k++)
            found |= ot->key[k] == o;
        key_changed |= !found;
    }
    if (key_changed)
        step(p, ST_UNSUPPORTED, nt->name, "the @key changes (node ids derive from it)", "M104");
    /* properties */
    for (size_t i = 0; i < nt->n_props; i++) {
        const lang_prop *np = &nt->props[i];
        const char *ent = FMT(p, "%s.%s", nt->name, np->name);
        int o = match_prop(ot, nt, np);
        if (lang_rename_ambiguous_prop(nt, i, ot))
            step(p, ST_UNSUPPORTED, ent,
                 FMT(p,
                     "@rename_from(\"%s\") is ambiguous: '%s' is still declared, or another "
                     "property is renamed from it too",
                     np->rename_from, np->rename_from),
                 "M108");
        if (o < 0) {
            if (np->type.nullable)
                step(p, ST_ADD_PROP, ent, lang_type_str(&p->diff->arena, &np->type), NULL);
            else
                step(p, ST_UNSUPPORTED, ent,
                     "a new property must be nullable (existing rows have no value)", "M102");
            continue;
        }
        const lang_prop *op = &ot->props[o];
        if (strcmp(op->name, np->name))
            step(p, ST_RENAME_PROP, FMT(p, "%s.%s", nt->name, op->name),
                 FMT(p, "%s -> %s", op->name, np->name), NULL);
        if (np->type.kind == LANG_TY_ENUM && op->type.kind == LANG_TY_ENUM &&
            !lang_type_equal(&np->type, &op->type)) {
            if (enum_superset(&np->type, &op->type))
                step(p, ST_EXTEND_ENUM, ent, lang_type_str(&p->diff->arena, &np->type), NULL);
            else
                step(p, ST_UNSUPPORTED, ent, "enum values are removed (only widening is supported)",
                     "M106");
        } else if (!lang_type_equal(&np->type, &op->type)) {
            const char *was = lang_type_str(&p->diff->arena, &op->type);
            const char *now = lang_type_str(&p->diff->arena, &np->type);
            step(p, ST_UNSUPPORTED, ent,
                 was && now ? FMT(p, "type changes from %s to %s", was, now) : NULL, "M101");
        }
        if (op->type.nullable && !np->type.nullable)
            step(p, ST_UNSUPPORTED, ent, "a nullable property cannot become required", "M107");
        else if (!op->type.nullable && np->type.nullable)
            step(p, ST_PROP_META, ent, "becomes nullable", NULL);
        if (anns_differ(p, op->anns, op->n_anns, np->anns, np->n_anns))
            step(p, ST_PROP_META, ent, "annotations change", NULL);
    }
    for (size_t i = 0; i < ot->n_props; i++) {
        int kept = 0;
        for (size_t k = 0; k < nt->n_props; k++)
            kept |= match_prop(ot, nt, &nt->props[k]) == (int)i;
        if (!kept) {
            step(p, ST_DROP_PROP, FMT(p, "%s.%s", ot->name, ot->props[i].name),
                 allow ? "hard" : "soft", NULL);
            if (!p->oom) p->raw[p->n_raw - 1].data_loss = allow;
        }
    }
    /* constraints other than the key, compared by their signature in new names */
    for (size_t i = 0; i < nt->n_cons; i++) {
        if (nt->cons[i].kind == LANG_CON_KEY) continue;
        const char *ns = con_sig(p, nt, &nt->cons[i]);
        int found = 0;
        for (size_t k = 0; k < ot->n_cons && ns; k++) {
            if (ot->cons[k].kind != nt->cons[i].kind) continue;
            /* translate the old signature's names: compare via matched properties */
            const lang_constraint *oc = &ot->cons[k];
            if (oc->n_cols != nt->cons[i].n_cols) continue;
            int same = 1;
            for (size_t c = 0; c < oc->n_cols; c++) {
                int nc = nt->cons[i].cols[c];
                int mapped = nc < 0 ? nc : match_prop(ot, nt, &nt->props[nc]);
                same &= mapped == oc->cols[c];
            }
            if (same && oc->kind == LANG_CON_CHECK)
                same = !strcmp(oc->pattern, nt->cons[i].pattern);
            if (same && oc->kind == LANG_CON_RANGE) {
                const char *os = con_sig(p, ot, oc);
                /* names may differ under a rename: compare from the first ',' */
                const char *a = os ? strchr(os, ',') : NULL, *b = strchr(ns, ',');
                same = a && b && !strcmp(a, b);
            }
            found |= same;
        }
        if (!found) step(p, ST_ADD_CON, nt->name, ns, NULL);
    }
    for (size_t k = 0; k < ot->n_cons; k++) {
        if (ot->cons[k].kind == LANG_CON_KEY) continue;
        int found = 0;
        for (size_t i = 0; i < nt->n_cons; i++) {
            const lang_constraint *nc = &nt->cons[i], *oc = &ot->cons[k];
            if (nc->kind != oc->kind || nc->n_cols != oc->n_cols) continue;
            int same = 1;
            for (size_t c = 0; c < oc->n_cols; c++) {
                int x = nc->cols[c];
                same &= (x < 0 ? x : match_prop(ot, nt, &nt->props[x])) == oc->cols[c];
            }
            if (same && oc->kind == LANG_CON_CHECK) same = !strcmp(oc->pattern, nc->pattern);
            if (same && oc->kind == LANG_CON_RANGE) {
                const char *os = con_sig(p, ot, oc), *ns = con_sig(p, nt, nc);
                const char *a = os ? strchr(os, ',') : NULL, *b = ns ? strchr(ns, ',') : NULL;
                same = a && b && !strcmp(a, b);
            }
            found |= same;
        }
        if (!found) step(p, ST_DROP_CON, ot->name, con_sig(p, ot, &ot->cons[k]), NULL);
    }
    if (anns_differ(p, ot->anns, ot->n_anns, nt->anns, nt->n_anns))
        step(p, ST_TYPE_META, nt->name, "annotations change", NULL);
}

int lang_schema_diff_build(lang_schema_diff **out, const lang_catalog *from, const lang_catalog *to,
                           int allow)
{
    *out = NULL;
    lang_schema_diff *diff = core_calloc(1, sizeof *diff);
    if (!diff) return core_err_nomem();
    core_arena_init(&diff->arena, 8192);
    diff->supported = 1;
    differ P = {diff, NULL, 0, 0, 0};
    int *matched = core_arena_calloc(&diff->arena, from->n_types ? from->n_types : 1, sizeof(int));
    if (!matched) P.oom = 1;
    /* nodes before edges, so an added edge's endpoints exist when it is added */
    for (int pass = LANG_NODE; pass <= LANG_EDGE && !P.oom; pass++)
        for (size_t i = 0; i < to->n_types; i++) {
            const lang_typedef *nt = &to->types[i];
            if (nt->kind != pass) continue;
            int o = lang_catalog_find(from, nt->name, 0);
            if (o < 0 && nt->rename_from && lang_rename_ambiguous_type(to, i, from)) {
                step(&P, ST_UNSUPPORTED, nt->name,
                     FMT(&P,
                         "@rename_from(\"%s\") is ambiguous: '%s' is still declared, or another "
                         "type is renamed from it too",
                         nt->rename_from, nt->rename_from),
                     "M108");
                continue;
            }
            if (o < 0 && nt->rename_from) o = lang_catalog_find(from, nt->rename_from, 0);
            if (o < 0) {
                step(&P, ST_ADD_TYPE, nt->name, nt->kind == LANG_NODE ? "node" : "edge", NULL);
                continue;
            }
            if (from->types[o].kind != nt->kind) {
                step(&P, ST_UNSUPPORTED, nt->name, "a node type cannot become an edge type or back",
                     "M105");
                matched[o] = 1;
                continue;
            }
            matched[o] = 1;
            diff_type(&P, from, &from->types[o], to, nt, allow);
        }
    for (size_t i = 0; i < from->n_types && !P.oom; i++)
        if (!matched[i]) {
            step(&P, ST_DROP_TYPE, from->types[i].name, allow ? "hard" : "soft", NULL);
            if (!P.oom) P.raw[P.n_raw - 1].data_loss = allow;
        }
    if (P.oom) {
        lang_schema_diff_free(diff);
        return core_err_nomem();
    }
    /* stable order by step kind */
    diff->steps = core_arena_calloc(&diff->arena, P.n_raw ? P.n_raw : 1, sizeof *diff->steps);
    if (!diff->steps) {
        lang_schema_diff_free(diff);
        return core_err_nomem();
    }
    for (int k = 0; k < ST_N; k++)
        for (size_t i = 0; i < P.n_raw; i++) {
            if (P.raw[i].kind != k) continue;
            lang_schema_diff_step *s = &diff->steps[diff->n_steps++];
            s->kind = STEP_NAMES[k];
            s->entity = P.raw[i].entity;
            s->detail = P.raw[i].detail;
            s->code = P.raw[i].code;
            s->data_loss = P.raw[i].data_loss;
        }
    *out = diff;
    return 0;
}

void lang_schema_diff_free(lang_schema_diff *p)
{
    if (!p) return;
    core_arena_free(&p->arena);
    core_free(p);
}

int lang_schema_diff_to_json(const lang_schema_diff *p, core_buf *out)
{
    json_t *root = json_object(), *steps = json_array();
    int bad = !root || !steps;
    bad |= json_object_set_new(root, "supported", json_boolean(p->supported));
    for (size_t i = 0; !bad && i < p->n_steps; i++) {
        const lang_schema_diff_step *s = &p->steps[i];
        json_t *o = json_object();
        bad |= !o;
        bad |= json_object_set_new(o, "kind", json_string(s->kind));
        bad |= json_object_set_new(o, "entity", json_string(s->entity ? s->entity : ""));
        if (s->detail)
            bad |=
                json_object_set_new(o, !strcmp(s->kind, "unsupported_change") ? "reason" : "detail",
                                    json_string(s->detail));
        if (s->code) bad |= json_object_set_new(o, "code", json_string(s->code));
        if (!strcmp(s->kind, "drop_type") || !strcmp(s->kind, "drop_property"))
            bad |= json_object_set_new(o, "data_loss", json_boolean(s->data_loss));
        bad |= json_array_append_new(steps, o);
    }
    bad |= json_object_set_new(root, "steps", steps);
    int rc = bad ? core_err_nomem() : core_json_dump(root, out);
    json_decref(root);
    return rc;
}

int lang_schema_diff_to_text(const lang_schema_diff *p, core_buf *out)
{
    int rc = core_buf_printf(out, "%s (%zu step%s)\n", p->supported ? "supported" : "unsupported",
                             p->n_steps, p->n_steps == 1 ? "" : "s");
    for (size_t i = 0; !rc && i < p->n_steps; i++) {
        const lang_schema_diff_step *s = &p->steps[i];
        rc = core_buf_printf(out, "  %zu. %s %s", i + 1, s->kind, s->entity ? s->entity : "");
        if (!rc && s->code) rc = core_buf_printf(out, " [%s]", s->code);
        if (!rc && s->detail) rc = core_buf_printf(out, ": %s", s->detail);
        if (!rc) rc = core_buf_append_byte(out, '\n');
    }
    return rc;
}
