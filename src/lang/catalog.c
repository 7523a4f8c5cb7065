/* Builds the catalog from a parsed .pg: name resolution, interface expansion, stable ids,
 * annotation and constraint checks (S001..S014, see docs/languages.md). @check patterns are
 * compiled with PCRE2 so a bad regex is a schema error, not a runtime surprise. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "lang/catalog.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/hash.h"

#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct builder {
    lang_catalog *cat;
    const pg_schema *ast;
    lang_diags *diags;
    const char *file;
} builder;

#define ERR(b, pos, code, ...)                                                                     \
    lang_diag_add((b)->diags, LANG_SEV_ERROR, code, (b)->file, (pos).line, (pos).col, __VA_ARGS__)

static uint64_t name_id(const char *a, const char *b)
{
    char buf[600];
    snprintf(buf, sizeof buf, "%s\x1f%s", a, b ? b : "");
    uint64_t h = core_hash64(buf, strlen(buf), 0x6f6d6e69u) & 0x7fffffffffffffffULL;
    return h ? h : 1;
}

static const lang_ann *find_ann(const lang_ann *anns, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(anns[i].name, name)) return &anns[i];
    return NULL;
}

/* The single string argument of @name("x"); NULL (with a diagnostic) when malformed. */
static const char *ann_string(builder *b, const lang_ann *a)
{
    if (a->n_args < 1 || a->args[0].value.kind != LANG_V_STRING || a->args[0].key) {
        ERR(b, a->pos, "S014", "@%s takes a string argument", a->name);
        return NULL;
    }
    return a->args[0].value.s;
}

static int is_reserved_prop(const char *n, int edge)
{
    static const char *const sys[] = {"id",
                                      "_rowid",
                                      "_rowaddr",
                                      "_rowoffset",
                                      "_row_created_at_version",
                                      "_row_last_updated_at_version",
                                      "_tombstone"};
    for (size_t i = 0; i < sizeof sys / sizeof sys[0]; i++)
        if (!strcmp(n, sys[i])) return 1;
    if (!strncmp(n, "_row", 4)) return 1;
    if (edge && (!strcmp(n, "src") || !strcmp(n, "dst") || !strcmp(n, "from") || !strcmp(n, "to")))
        return 1;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void check_type(builder *b, lang_type *t, lang_pos pos)
{
    if (t->kind == LANG_TY_LIST && t->scalar == LANG_S_BLOB)
        ERR(b, pos, "S013", "a list of Blob is not allowed");
    if (t->kind == LANG_TY_ENUM) {
        qsort(t->enum_vals, t->n_enum, sizeof *t->enum_vals, cmp_str);
        for (size_t i = 1; i < t->n_enum; i++)
            if (!strcmp(t->enum_vals[i - 1], t->enum_vals[i])) {
                ERR(b, pos, "S013", "enum value '%s' appears twice", t->enum_vals[i]);
                break;
            }
    }
}

static int key_capable(const lang_type *t)
{
    return !t->nullable && t->kind != LANG_TY_LIST && t->kind != LANG_TY_VECTOR &&
           !(t->kind == LANG_TY_SCALAR && t->scalar == LANG_S_BLOB);
}

static lang_constraint *add_con(builder *b, lang_typedef *t, size_t *cap, int kind, lang_pos pos)
{
    lang_constraint *c =
        lang_vec_push(&b->cat->arena, (void **)&t->cons, &t->n_cons, cap, sizeof *c);
    if (!c) {
        b->diags->oom = 1;
        return NULL;
    }
    c->kind = kind;
    c->pos = pos;
    return c;
}

static int index_kind_of(const lang_type *t)
{
    if (t->kind == LANG_TY_VECTOR) return LANG_INDEX_VECTOR;
    if (t->kind == LANG_TY_SCALAR && t->scalar == LANG_S_STRING) return LANG_INDEX_FTS;
    return LANG_INDEX_BTREE;
}

/* Property-level annotations: @key @unique @index @embed @description @rename_from, custom. */
static void prop_annotations(builder *b, lang_typedef *t, int pi, size_t *ccap)
{
    lang_prop *p = &t->props[pi];
    for (size_t i = 0; i < p->n_anns; i++) {
        const lang_ann *a = &p->anns[i];
        for (size_t j = 0; j < i; j++)
            if (!strcmp(p->anns[j].name, a->name)) {
                ERR(b, a->pos, "S014", "@%s given twice on '%s'", a->name, p->name);
                break;
            }
        if (!strcmp(a->name, "key")) {
            if (a->has_parens) ERR(b, a->pos, "S007", "@key on a property takes no arguments");
            if (t->kind == LANG_EDGE) {
                ERR(b, a->pos, "S007", "@key is allowed on node types only");
                continue;
            }
            if (!key_capable(&p->type)) {
                ERR(b, a->pos, "S007",
                    "@key property '%s' must not be nullable, a list, a Vector or a Blob", p->name);
                continue;
            }
            p->is_key = 1;
            lang_constraint *c = add_con(b, t, ccap, LANG_CON_KEY, a->pos);
            if (!c) return;
            c->cols = core_arena_alloc(&b->cat->arena, sizeof(int));
            if (!c->cols) {
                b->diags->oom = 1;
                return;
            }
            c->cols[0] = pi;
            c->n_cols = 1;
        } else if (!strcmp(a->name, "unique") || !strcmp(a->name, "index")) {
            int uniq = a->name[0] == 'u';
            if (a->has_parens)
                ERR(b, a->pos, "S008", "@%s on a property takes no arguments", a->name);
            if (p->type.kind == LANG_TY_SCALAR && p->type.scalar == LANG_S_BLOB) {
                ERR(b, a->pos, "S008", "@%s is not allowed on a Blob property", a->name);
                continue;
            }
            lang_constraint *c =
                add_con(b, t, ccap, uniq ? LANG_CON_UNIQUE : LANG_CON_INDEX, a->pos);
            if (!c) return;
            c->cols = core_arena_alloc(&b->cat->arena, sizeof(int));
            if (!c->cols) {
                b->diags->oom = 1;
                return;
            }
            c->cols[0] = pi;
            c->n_cols = 1;
            c->index_kind = index_kind_of(&p->type);
        } else if (!strcmp(a->name, "embed")) {
            if (p->type.kind != LANG_TY_VECTOR) {
                ERR(b, a->pos, "S012", "@embed belongs on a Vector property, not %s",
                    lang_type_str(&b->cat->arena, &p->type));
                continue;
            }
            if (a->n_args < 1 || a->args[0].key || a->args[0].value.kind != LANG_V_STRING) {
                ERR(b, a->pos, "S012", "@embed needs the source property: @embed(\"text\")");
                continue;
            }
            p->embed_source = a->args[0].value.s;
            for (size_t k = 1; k < a->n_args; k++) {
                if (a->args[k].key && !strcmp(a->args[k].key, "model") &&
                    a->args[k].value.kind == LANG_V_STRING)
                    p->embed_model = a->args[k].value.s;
                else
                    ERR(b, a->args[k].pos, "S012", "@embed takes only a source and model=\"...\"");
            }
        } else if (!strcmp(a->name, "description")) {
            p->description = ann_string(b, a);
        } else if (!strcmp(a->name, "rename_from")) {
            p->rename_from = ann_string(b, a);
        } else if (!strcmp(a->name, "instruction")) {
            ERR(b, a->pos, "S014", "@instruction is allowed on types only");
        } else if (!strcmp(a->name, "card")) {
            ERR(b, a->pos, "S011", "@card belongs on an edge declaration");
        } else if (!strcmp(a->name, "range") || !strcmp(a->name, "check")) {
            ERR(b, a->pos, "S014", "@%s is a body constraint: @%s(%s, ...)", a->name, a->name,
                p->name);
        }
        /* anything else is a custom annotation: kept as metadata */
    }
}

static void type_annotations(builder *b, lang_typedef *t)
{
    for (size_t i = 0; i < t->n_anns; i++) {
        const lang_ann *a = &t->anns[i];
        for (size_t j = 0; j < i; j++)
            if (!strcmp(t->anns[j].name, a->name)) {
                ERR(b, a->pos, "S014", "@%s given twice on '%s'", a->name, t->name);
                break;
            }
        if (!strcmp(a->name, "description"))
            t->description = ann_string(b, a);
        else if (!strcmp(a->name, "instruction"))
            t->instruction = ann_string(b, a);
        else if (!strcmp(a->name, "rename_from"))
            t->rename_from = ann_string(b, a);
        else if (!strcmp(a->name, "card"))
            ERR(b, a->pos, "S011", "@card is allowed on edges only");
        else if (!strcmp(a->name, "key") || !strcmp(a->name, "unique") ||
                 !strcmp(a->name, "index") || !strcmp(a->name, "embed"))
            ERR(b, a->pos, "S014", "@%s belongs on a property or in the body", a->name);
    }
}

/* Resolve a constraint argument naming a property (or src/dst on edges). */
static int col_of(builder *b, lang_typedef *t, const pg_carg *a, const char *what)
{
    if (a->kind != PG_CARG_IDENT) {
        ERR(b, a->pos, what[0] == 'k' ? "S007" : "S008", "@%s expects property names", what);
        return -1000;
    }
    if (t->kind == LANG_EDGE && !strcmp(a->ident, "src")) return LANG_COL_SRC;
    if (t->kind == LANG_EDGE && !strcmp(a->ident, "dst")) return LANG_COL_DST;
    int pi = lang_type_find_prop(t, a->ident);
    if (pi < 0)
        ERR(b, a->pos,
            !strcmp(what, "key")     ? "S007"
            : !strcmp(what, "range") ? "S009"
            : !strcmp(what, "check") ? "S010"
                                     : "S008",
            "@%s names unknown property '%s' of '%s'", what, a->ident, t->name);
    return pi < 0 ? -1000 : pi;
}

static int value_fits_bound(const lang_type *ty, const lang_value *v)
{
    if (v->kind == LANG_V_FLOAT) return lang_scalar_is_float(ty->scalar);
    if (v->kind != LANG_V_INT) return 0;
    switch (ty->scalar) {
    case LANG_S_I32:
        return v->neg ? v->u <= 2147483648ULL : v->u <= 2147483647ULL;
    case LANG_S_I64:
        return v->neg ? v->u <= 9223372036854775808ULL : v->u <= 9223372036854775807ULL;
    case LANG_S_U32:
        return !v->neg && v->u <= 4294967295ULL;
    case LANG_S_U64:
        return !v->neg;
    case LANG_S_F32:
    case LANG_S_F64:
        return 1;
    default:
        return 0;
    }
}

static double num_of(const lang_value *v)
{
    if (v->kind == LANG_V_FLOAT) return v->f;
    return v->neg ? -(double)v->u : (double)v->u;
}

static void body_constraints(builder *b, lang_typedef *t, const pg_decl *d, size_t *ccap)
{
    for (size_t i = 0; i < d->n_bodycs; i++) {
        const pg_bodyc *bc = &d->bodycs[i];
        if (bc->kind == PG_C_KEY || bc->kind == PG_C_UNIQUE || bc->kind == PG_C_INDEX) {
            const char *what = bc->kind == PG_C_KEY      ? "key"
                               : bc->kind == PG_C_UNIQUE ? "unique"
                                                         : "index";
            if (bc->kind == PG_C_KEY && t->kind == LANG_EDGE) {
                ERR(b, bc->pos, "S007", "@key is allowed on node types only");
                continue;
            }
            lang_constraint *c = add_con(b, t, ccap,
                                         bc->kind == PG_C_KEY      ? LANG_CON_KEY
                                         : bc->kind == PG_C_UNIQUE ? LANG_CON_UNIQUE
                                                                   : LANG_CON_INDEX,
                                         bc->pos);
            if (!c) return;
            c->cols = core_arena_calloc(&b->cat->arena, bc->n_args, sizeof(int));
            if (!c->cols) {
                b->diags->oom = 1;
                return;
            }
            int ok = 1;
            for (size_t k = 0; k < bc->n_args; k++) {
                int col = col_of(b, t, &bc->args[k], what);
                if (col == -1000) {
                    ok = 0;
                    break;
                }
                for (size_t j = 0; j < c->n_cols; j++)
                    if (c->cols[j] == col) {
                        ERR(b, bc->args[k].pos, bc->kind == PG_C_KEY ? "S007" : "S008",
                            "@%s names '%s' twice", what, bc->args[k].ident);
                        ok = 0;
                    }
                if (!ok) break;
                if (col >= 0) {
                    const lang_type *pt = &t->props[col].type;
                    if (bc->kind == PG_C_KEY && !key_capable(pt)) {
                        ERR(b, bc->args[k].pos, "S007",
                            "@key property '%s' must not be nullable, a list, a Vector or a Blob",
                            t->props[col].name);
                        ok = 0;
                        break;
                    }
                    if (bc->kind != PG_C_KEY && pt->kind == LANG_TY_SCALAR &&
                        pt->scalar == LANG_S_BLOB) {
                        ERR(b, bc->args[k].pos, "S008", "@%s is not allowed on a Blob property",
                            what);
                        ok = 0;
                        break;
                    }
                    if (bc->kind == PG_C_KEY) t->props[col].is_key = 1;
                }
                c->cols[c->n_cols++] = col;
            }
            if (!ok) {
                t->n_cons--;
                continue;
            }
            c->index_kind = (c->n_cols == 1 && c->cols[0] >= 0)
                                ? index_kind_of(&t->props[c->cols[0]].type)
                                : LANG_INDEX_BTREE;
        } else if (bc->kind == PG_C_RANGE) {
            if (t->kind != LANG_NODE) {
                ERR(b, bc->pos, "S009", "@range is allowed on node types only");
                continue;
            }
            if (bc->n_args != 2 || bc->args[0].kind != PG_CARG_IDENT ||
                bc->args[1].kind != PG_CARG_RANGE) {
                ERR(b, bc->pos, "S009", "@range takes a property and a range: @range(p, lo..hi)");
                continue;
            }
            int col = col_of(b, t, &bc->args[0], "range");
            if (col < 0) continue;
            const lang_type *pt = &t->props[col].type;
            if (pt->kind != LANG_TY_SCALAR || !lang_scalar_is_numeric(pt->scalar)) {
                ERR(b, bc->args[0].pos, "S009", "@range needs a numeric property; '%s' is %s",
                    t->props[col].name, lang_type_str(&b->cat->arena, pt));
                continue;
            }
            const pg_carg *r = &bc->args[1];
            if ((r->has_lo && !value_fits_bound(pt, &r->lo)) ||
                (r->has_hi && !value_fits_bound(pt, &r->hi))) {
                ERR(b, r->pos, "S009", "@range bound does not fit %s",
                    lang_scalar_name(pt->scalar));
                continue;
            }
            if (r->has_lo && r->has_hi && num_of(&r->lo) > num_of(&r->hi)) {
                ERR(b, r->pos, "S009", "@range lower bound is above the upper bound");
                continue;
            }
            lang_constraint *c = add_con(b, t, ccap, LANG_CON_RANGE, bc->pos);
            if (!c) return;
            c->cols = core_arena_alloc(&b->cat->arena, sizeof(int));
            if (!c->cols) {
                b->diags->oom = 1;
                return;
            }
            c->cols[0] = col;
            c->n_cols = 1;
            c->has_lo = r->has_lo;
            c->has_hi = r->has_hi;
            c->lo = r->lo;
            c->hi = r->hi;
        } else { /* check */
            if (t->kind != LANG_NODE) {
                ERR(b, bc->pos, "S010", "@check is allowed on node types only");
                continue;
            }
            if (bc->n_args != 2 || bc->args[0].kind != PG_CARG_IDENT ||
                bc->args[1].kind != PG_CARG_LIT || bc->args[1].lit.kind != LANG_V_STRING) {
                ERR(b, bc->pos, "S010", "@check takes a property and a pattern: @check(p, \"re\")");
                continue;
            }
            int col = col_of(b, t, &bc->args[0], "check");
            if (col < 0) continue;
            const lang_type *pt = &t->props[col].type;
            if (pt->kind != LANG_TY_SCALAR || pt->scalar != LANG_S_STRING) {
                ERR(b, bc->args[0].pos, "S010", "@check needs a String property; '%s' is %s",
                    t->props[col].name, lang_type_str(&b->cat->arena, pt));
                continue;
            }
            const char *pat = bc->args[1].lit.s;
            int ec;
            PCRE2_SIZE eo;
            pcre2_code *re = pcre2_compile((PCRE2_SPTR)pat, strlen(pat), PCRE2_UTF, &ec, &eo, NULL);
            if (!re) {
                PCRE2_UCHAR msg[160];
                pcre2_get_error_message(ec, msg, sizeof msg);
                ERR(b, bc->args[1].pos, "S010", "@check pattern does not compile at offset %zu: %s",
                    (size_t)eo, (const char *)msg);
                continue;
            }
            pcre2_code_free(re);
            lang_constraint *c = add_con(b, t, ccap, LANG_CON_CHECK, bc->pos);
            if (!c) return;
            c->cols = core_arena_alloc(&b->cat->arena, sizeof(int));
            if (!c->cols) {
                b->diags->oom = 1;
                return;
            }
            c->cols[0] = col;
            c->n_cols = 1;
            c->pattern = pat;
        }
    }
}

static void add_prop(builder *b, lang_typedef *t, size_t *cap, const pg_prop *pp, const char *iface)
{
    for (size_t i = 0; i < t->n_props; i++)
        if (!strcmp(t->props[i].name, pp->name)) {
            if (iface) {
                if (!lang_type_equal(&t->props[i].type, &pp->type) ||
                    t->props[i].type.nullable != pp->type.nullable)
                    ERR(b, t->props[i].pos, "S003",
                        "property '%s' is %s here but %s in interface '%s'", pp->name,
                        lang_type_str(&b->cat->arena, &t->props[i].type),
                        lang_type_str(&b->cat->arena, &pp->type), iface);
            } else {
                ERR(b, pp->pos, "S005", "property '%s' is declared twice in '%s'", pp->name,
                    t->name);
            }
            return;
        }
    if (t->n_props >= LANG_MAX_PROPS) {
        ERR(b, pp->pos, "S005", "'%s' has more than %d properties", t->name, LANG_MAX_PROPS);
        return;
    }
    if (is_reserved_prop(pp->name, t->kind == LANG_EDGE)) {
        ERR(b, pp->pos, "S006", "'%s' is a reserved column name", pp->name);
        return;
    }
    lang_prop *p = lang_vec_push(&b->cat->arena, (void **)&t->props, &t->n_props, cap, sizeof *p);
    if (!p) {
        b->diags->oom = 1;
        return;
    }
    p->name = pp->name;
    p->type = pp->type;
    p->pos = pp->pos;
    p->anns = pp->anns;
    p->n_anns = pp->n_anns;
    p->from_interface = iface;
    p->id = name_id(t->name, p->name);
}

static void sort_key_by_id(lang_typedef *t)
{
    /* insertion sort of t->key by the properties' stable ids */
    for (size_t i = 1; i < t->n_key; i++) {
        int x = t->key[i];
        size_t j = i;
        while (j > 0 && t->props[t->key[j - 1]].id > t->props[x].id) {
            t->key[j] = t->key[j - 1];
            j--;
        }
        t->key[j] = x;
    }
}

static void finish_keys(builder *b, lang_typedef *t)
{
    const lang_constraint *key = NULL;
    for (size_t i = 0; i < t->n_cons; i++) {
        if (t->cons[i].kind != LANG_CON_KEY) continue;
        if (key) {
            ERR(b, t->cons[i].pos, "S007", "'%s' has more than one @key", t->name);
            continue;
        }
        key = &t->cons[i];
    }
    for (size_t i = 0; i < t->n_props; i++)
        t->props[i].is_key = 0;
    if (!key) return;
    t->key = core_arena_calloc(&b->cat->arena, key->n_cols, sizeof(int));
    if (!t->key) {
        b->diags->oom = 1;
        return;
    }
    for (size_t i = 0; i < key->n_cols; i++) {
        t->key[i] = key->cols[i];
        t->props[key->cols[i]].is_key = 1;
    }
    t->n_key = key->n_cols;
    sort_key_by_id(t);
}

static void check_embeds(builder *b, lang_typedef *t)
{
    for (size_t i = 0; i < t->n_props; i++) {
        lang_prop *p = &t->props[i];
        if (!p->embed_source) continue;
        int s = lang_type_find_prop(t, p->embed_source);
        const lang_ann *a = find_ann(p->anns, p->n_anns, "embed");
        lang_pos pos = a ? a->pos : p->pos;
        if (s < 0)
            ERR(b, pos, "S012", "@embed source '%s' is not a property of '%s'", p->embed_source,
                t->name);
        else if (t->props[s].type.kind != LANG_TY_SCALAR ||
                 t->props[s].type.scalar != LANG_S_STRING)
            ERR(b, pos, "S012", "@embed source '%s' must be a String", p->embed_source);
    }
}

int lang_catalog_build(lang_catalog **out, const char *src, size_t len, const char *file,
                       lang_diags *diags)
{
    *out = NULL;
    lang_catalog *cat = core_calloc(1, sizeof *cat);
    if (!cat) return core_err_nomem();
    core_arena_init(&cat->arena, 64 * 1024);
    size_t errors_before = diags->errors, first_diag = diags->n;
    cat->file = core_arena_strdup(&cat->arena, file ? file : "<schema>");
    char *copy = core_arena_alloc(&cat->arena, len + 1);
    if (!cat->file || !copy) {
        lang_catalog_free(cat);
        return core_err_nomem();
    }
    if (len) memcpy(copy, src, len);
    copy[len] = '\0';
    cat->source = copy;
    cat->source_len = len;
    pg_schema ast;
    builder B = {cat, &ast, diags, file ? file : "<schema>"};
    if (pg_parse(&ast, copy, len, B.file, &cat->arena, diags) == 0) {
        /* names: one namespace for interfaces, nodes and edges; edges also ignoring case */
        for (size_t i = 0; i < ast.n_decls; i++)
            for (size_t j = 0; j < i; j++) {
                const pg_decl *a = &ast.decls[i], *o = &ast.decls[j];
                int same =
                    !strcmp(a->name, o->name) ||
                    ((a->kind == PG_EDGE || o->kind == PG_EDGE) && !strcasecmp(a->name, o->name));
                if (same) {
                    ERR(&B, a->pos, "S001", "'%s' is already declared at line %d", a->name,
                        o->pos.line);
                    break;
                }
            }
        for (size_t i = 0; i < ast.n_decls; i++) {
            const char *n = ast.decls[i].name;
            if (lang_scalar_from_name(n, strlen(n)) || !strcmp(n, "Vector"))
                ERR(&B, ast.decls[i].pos, "S006", "'%s' is a reserved type name", n);
        }
        size_t tcap = 0;
        for (size_t i = 0; i < ast.n_decls; i++) {
            const pg_decl *d = &ast.decls[i];
            if (d->kind == PG_INTERFACE) {
                for (size_t k = 0; k < d->n_props; k++) {
                    for (size_t m = 0; m < k; m++)
                        if (!strcmp(d->props[m].name, d->props[k].name))
                            ERR(&B, d->props[k].pos, "S005",
                                "property '%s' is declared twice in '%s'", d->props[k].name,
                                d->name);
                    if (is_reserved_prop(d->props[k].name, 0))
                        ERR(&B, d->props[k].pos, "S006", "'%s' is a reserved column name",
                            d->props[k].name);
                }
                continue;
            }
            lang_typedef *t =
                lang_vec_push(&cat->arena, (void **)&cat->types, &cat->n_types, &tcap, sizeof *t);
            if (!t) {
                diags->oom = 1;
                break;
            }
            t->kind = d->kind == PG_NODE ? LANG_NODE : LANG_EDGE;
            t->name = d->name;
            t->pos = d->pos;
            t->id = name_id(t->kind == LANG_NODE ? "node" : "edge", d->name);
            t->anns = d->anns;
            t->n_anns = d->n_anns;
            t->card_min = d->has_card ? d->card_min : 0;
            t->card_max = d->has_card ? d->card_max : -1;
            t->from = t->to = -1;
            if (d->has_card && d->kind == PG_NODE)
                ERR(&B, d->card_pos, "S011", "@card is allowed on edges only");
            else if (d->has_card && d->card_max >= 0 && (int64_t)d->card_min > d->card_max)
                ERR(&B, d->card_pos, "S011", "@card minimum %llu is above the maximum %lld",
                    (unsigned long long)d->card_min, (long long)d->card_max);
        }
        /* properties, interfaces, constraints */
        size_t ti = 0;
        for (size_t i = 0; i < ast.n_decls && !diags->oom; i++) {
            const pg_decl *d = &ast.decls[i];
            if (d->kind == PG_INTERFACE) continue;
            lang_typedef *t = &cat->types[ti++];
            size_t pcap = 0, ccap = 0;
            for (size_t k = 0; k < d->n_props; k++) {
                check_type(&B, (lang_type *)&d->props[k].type, d->props[k].type_pos);
                add_prop(&B, t, &pcap, &d->props[k], NULL);
            }
            size_t icap = 0;
            for (size_t k = 0; k < d->n_implements; k++) {
                const pg_decl *iface = NULL;
                for (size_t m = 0; m < ast.n_decls; m++)
                    if (!strcmp(ast.decls[m].name, d->implements[k].name)) iface = &ast.decls[m];
                if (!iface || iface->kind != PG_INTERFACE) {
                    ERR(&B, d->implements[k].pos, "S002", "'%s' is not a declared interface",
                        d->implements[k].name);
                    continue;
                }
                const char **slot = lang_vec_push(&cat->arena, (void **)&t->interfaces,
                                                  &t->n_interfaces, &icap, sizeof *slot);
                if (!slot) {
                    diags->oom = 1;
                    break;
                }
                *slot = iface->name;
                for (size_t m = 0; m < iface->n_props; m++) {
                    check_type(&B, (lang_type *)&iface->props[m].type, iface->props[m].type_pos);
                    add_prop(&B, t, &pcap, &iface->props[m], iface->name);
                }
            }
            if (t->kind == LANG_EDGE) {
                t->from = lang_catalog_find(cat, d->from.name, 0);
                t->to = lang_catalog_find(cat, d->to.name, 0);
                if (t->from < 0 || cat->types[t->from].kind != LANG_NODE)
                    ERR(&B, d->from.pos, "S004", "edge '%s': '%s' is not a declared node type",
                        d->name, d->from.name);
                if (t->to < 0 || cat->types[t->to].kind != LANG_NODE)
                    ERR(&B, d->to.pos, "S004", "edge '%s': '%s' is not a declared node type",
                        d->name, d->to.name);
            }
            type_annotations(&B, t);
            for (size_t k = 0; k < t->n_props; k++)
                prop_annotations(&B, t, (int)k, &ccap);
            body_constraints(&B, t, d, &ccap);
            finish_keys(&B, t);
            check_embeds(&B, t);
        }
    }
    if (diags->oom) {
        lang_catalog_free(cat);
        return core_err_nomem();
    }
    if (diags->errors > errors_before) {
        lang_catalog_free(cat);
        return lang_diags_status_since(diags, first_diag);
    }
    *out = cat;
    return 0;
}

void lang_catalog_free(lang_catalog *c)
{
    if (!c) return;
    core_arena_free(&c->arena);
    core_free(c);
}

int lang_catalog_find(const lang_catalog *c, const char *name, int kind)
{
    for (size_t i = 0; i < c->n_types; i++)
        if ((!kind || c->types[i].kind == kind) && !strcmp(c->types[i].name, name)) return (int)i;
    return -1;
}

int lang_catalog_find_edge_ci(const lang_catalog *c, const char *word)
{
    for (size_t i = 0; i < c->n_types; i++)
        if (c->types[i].kind == LANG_EDGE && !strcasecmp(c->types[i].name, word)) return (int)i;
    return -1;
}

int lang_type_find_prop(const lang_typedef *t, const char *name)
{
    for (size_t i = 0; i < t->n_props; i++)
        if (!strcmp(t->props[i].name, name)) return (int)i;
    return -1;
}

int lang_type_has_unique(const lang_typedef *t, int prop)
{
    for (size_t i = 0; i < t->n_cons; i++)
        if ((t->cons[i].kind == LANG_CON_UNIQUE || t->cons[i].kind == LANG_CON_KEY) &&
            t->cons[i].n_cols == 1 && t->cons[i].cols[0] == prop)
            return 1;
    return 0;
}

int lang_rename_ambiguous_type(const lang_catalog *desired, size_t i, const lang_catalog *accepted)
{
    const lang_typedef *t = &desired->types[i];
    if (!t->rename_from || lang_catalog_find(accepted, t->name, 0) >= 0 ||
        lang_catalog_find(accepted, t->rename_from, 0) < 0)
        return 0;
    for (size_t j = 0; j < desired->n_types; j++) {
        const lang_typedef *u = &desired->types[j];
        if (j == i) continue;
        if (!strcmp(u->name, t->rename_from)) return 1;
        if (u->rename_from && !strcmp(u->rename_from, t->rename_from) &&
            lang_catalog_find(accepted, u->name, 0) < 0)
            return 1;
    }
    return 0;
}

int lang_rename_ambiguous_prop(const lang_typedef *desired, size_t k, const lang_typedef *accepted)
{
    const lang_prop *p = &desired->props[k];
    if (!p->rename_from || lang_type_find_prop(accepted, p->name) >= 0 ||
        lang_type_find_prop(accepted, p->rename_from) < 0)
        return 0;
    for (size_t j = 0; j < desired->n_props; j++) {
        const lang_prop *q = &desired->props[j];
        if (j == k) continue;
        if (!strcmp(q->name, p->rename_from)) return 1;
        if (q->rename_from && !strcmp(q->rename_from, p->rename_from) &&
            lang_type_find_prop(accepted, q->name) < 0)
            return 1;
    }
    return 0;
}

/* Index of the property of `ot` that property k of t continues (same name, or named by an
 * unambiguous @rename_from), or -1. */
static int inherited_prop(const lang_typedef *ot, const lang_typedef *t, size_t k)
{
    const lang_prop *p = &t->props[k];
    int op = lang_type_find_prop(ot, p->name);
    if (op < 0 && p->rename_from && !lang_rename_ambiguous_prop(t, k, ot))
        op = lang_type_find_prop(ot, p->rename_from);
    return op;
}

static int id_taken(const lang_catalog *c, uint64_t id, const lang_typedef *self)
{
    for (size_t i = 0; i < c->n_types; i++)
        if (&c->types[i] != self && c->types[i].id == id) return 1;
    return 0;
}

void lang_catalog_inherit(lang_catalog *desired, const lang_catalog *accepted)
{
    for (size_t i = 0; i < desired->n_types; i++) {
        lang_typedef *t = &desired->types[i];
        int o = lang_catalog_find(accepted, t->name, t->kind);
        if (o < 0 && t->rename_from && !lang_rename_ambiguous_type(desired, i, accepted))
            o = lang_catalog_find(accepted, t->rename_from, t->kind);
        if (o >= 0) {
            const lang_typedef *ot = &accepted->types[o];
            t->id = ot->id;
            for (size_t k = 0; k < t->n_props; k++) {
                int op = inherited_prop(ot, t, k);
                if (op >= 0) t->props[k].id = ot->props[op].id;
            }
            /* a new property must not take an id the type already uses (say, the old name of a
             * renamed property, re-added); matching by name again needs no allocation, so this
             * cannot fail half done */
            for (size_t k = 0; k < t->n_props; k++) {
                if (inherited_prop(ot, t, k) >= 0) continue;
                for (;;) {
                    int clash = 0;
                    for (size_t m = 0; m < ot->n_props; m++)
                        clash |= ot->props[m].id == t->props[k].id;
                    for (size_t m = 0; m < t->n_props; m++)
                        clash |= m != k && t->props[m].id == t->props[k].id;
                    if (!clash) break;
                    t->props[k].id = (t->props[k].id + 1) & 0x7fffffffffffffffULL;
                }
            }
        } else {
            while (id_taken(accepted, t->id, NULL) || id_taken(desired, t->id, t))
                t->id = (t->id + 1) & 0x7fffffffffffffffULL;
        }
        sort_key_by_id(t);
    }
}
