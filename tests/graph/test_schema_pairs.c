/* Generated schema pairs (old, new), seeded: a model of node and edge types is rendered as
 * .pg, changed by a few random operations, each of which names the plan step it must give
 * (every step kind: add, rename, constraints, enum widening, metadata, drops soft and hard,
 * nullability, and the unsupported changes M101..M108), and rendered again.
 *
 *  1. Thousands of pairs through the plan: it never fails, is the same when built again, lists
 *     every expected step, and is supported exactly when no unsupported_change is listed, which
 *     is exactly when no unsupported operation was made; inherited ids follow the renames and
 *     stay distinct.
 *  2. A few dozen pairs applied to a graph populated under the old schema (rows that satisfy
 *     it), with and without allow_data_loss: either applied (rows kept per step, type ids kept
 *     across renames, and a load and queries under the new schema work, also after reopening)
 *     or refused typed with nothing changed (same head, same schema, same files).
 * OG_SEED=N runs another seed (the seed is printed on failure); OG_PAIRS_DEBUG=1 prints every
 * pair applied and how the apply ended. */
#include "testutil.h"

#include "core/alloc.h"
#include "lang/catalog.h"
#include "lang/schema_diff.h"

#include <ftw.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define N_PAIRS 3000
#define N_APPLY 32
#define ROWS 3 /* rows of each type in a populated graph */

/* ---- the model ------------------------------------------------------------------------------- */

enum { TY_STRING, TY_I32, TY_I64, TY_F64, TY_BOOL, TY_ENUM, TY_N };
#define MAXP 8
#define MAXT 12

typedef struct mprop {
    char name[24], rename_from[24];
    int ty, n_enum, nullable, unique, has_range, lo, hi, desc;
} mprop;

typedef struct mtype {
    char name[24], rename_from[24];
    int edge, from, to, key2, desc, alive;
    mprop p[MAXP];
    int np;
} mtype;

typedef struct model {
    mtype t[MAXT];
    int nt;
} model;

static uint64_t rng_state;
static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}
static int pick(int n)
{
    return n > 0 ? (int)(rnd() % (uint64_t)n) : 0;
}

static int counter;
static int op_made[32]; /* operations made, by kind, over the run */

static void render_prop(core_buf *b, const mprop *p)
{
    static const char *const names[] = {"String", "I32", "I64", "F64", "Bool"};
    core_buf_printf(b, "  %s: ", p->name);
    if (p->ty == TY_ENUM) {
        core_buf_append_str(b, "enum(");
        for (int i = 0; i < p->n_enum; i++)
            core_buf_printf(b, "%sv%d", i ? ", " : "", i);
        core_buf_append_str(b, ")");
    } else {
        core_buf_append_str(b, names[p->ty]);
    }
    core_buf_printf(b, "%s", p->nullable ? "?" : "");
    if (p->unique) core_buf_append_str(b, " @unique");
    if (p->desc) core_buf_printf(b, " @description(\"d%d\")", p->desc);
    if (p->rename_from[0]) core_buf_printf(b, " @rename_from(\"%s\")", p->rename_from);
    core_buf_append_str(b, "\n");
}

static char *render(const model *m)
{
    core_buf b = CORE_BUF_INIT;
    for (int i = 0; i < m->nt; i++) {
        const mtype *t = &m->t[i];
        if (!t->alive) continue;
        if (t->edge)
            core_buf_printf(&b, "edge %s: %s -> %s", t->name, m->t[t->from].name, m->t[t->to].name);
        else
            core_buf_printf(&b, "node %s", t->name);
        if (t->rename_from[0]) core_buf_printf(&b, " @rename_from(\"%s\")", t->rename_from);
        if (t->desc) core_buf_printf(&b, " @description(\"t%d\")", t->desc);
        core_buf_append_str(&b, " {\n");
        if (!t->edge) core_buf_append_str(&b, "  k: String\n");
        for (int k = 0; k < t->np; k++)
            render_prop(&b, &t->p[k]);
        if (!t->edge) {
            if (t->key2 >= 0)
                core_buf_printf(&b, "  @key(k, %s)\n", t->p[t->key2].name);
            else
                core_buf_append_str(&b, "  @key(k)\n");
        }
        for (int k = 0; k < t->np; k++)
            if (t->p[k].has_range)
                core_buf_printf(&b, "  @range(%s, %d..%d)\n", t->p[k].name, t->p[k].lo, t->p[k].hi);
        core_buf_append_str(&b, "}\n");
    }
    char *s = strdup(core_buf_cstr(&b));
    core_buf_free(&b);
    return s;
}

static void new_prop(mprop *p, int edge, int nullable)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "p%d", counter++);
    p->ty = pick(TY_N);
    if (p->ty == TY_ENUM) p->n_enum = 2 + pick(3);
    p->nullable = nullable;
    if (!edge && p->ty != TY_BOOL && p->ty != TY_F64 && p->ty != TY_ENUM && pick(4) == 0)
        p->unique = 1;
    if (!edge && (p->ty == TY_I32 || p->ty == TY_I64) && pick(3) == 0) {
        p->has_range = 1;
        p->lo = -pick(5);
        p->hi = 100 + pick(100);
    }
    if (pick(5) == 0) p->desc = 1 + pick(3);
}

static int alive_nodes(const model *m, int *out)
{
    int n = 0;
    for (int i = 0; i < m->nt; i++)
        if (m->t[i].alive && !m->t[i].edge) out[n++] = i;
    return n;
}

static void add_type(model *m, int edge)
{
    mtype *t = &m->t[m->nt++];
    memset(t, 0, sizeof *t);
    t->alive = 1;
    t->edge = edge;
    t->key2 = -1;
    snprintf(t->name, sizeof t->name, "%s%d", edge ? "E" : "N", counter++);
    if (edge) {
        int nodes[MAXT];
        int n = alive_nodes(m, nodes);
        t->from = nodes[pick(n)];
        t->to = nodes[pick(n)];
    }
    int np = pick(4);
    for (int k = 0; k < np; k++)
        new_prop(&t->p[t->np++], edge, edge || pick(2));
    if (pick(6) == 0) t->desc = 1 + pick(3);
}

static void old_model(model *m)
{
    memset(m, 0, sizeof *m);
    int nodes = 2 + pick(3), edges = pick(3);
    for (int i = 0; i < nodes; i++)
        add_type(m, 0);
    for (int i = 0; i < edges; i++)
        add_type(m, 1);
}

/* ---- operations ----------------------------------------------------------------------------
 */

typedef struct expect {
    char kind[32], entity[64], code[8];
} expect;

typedef struct pair {
    model old, new;
    expect e[16];
    int ne, unsupported, loss;
    char *old_src, *new_src;
} pair;

enum {
    OP_ADD_NODE,
    OP_ADD_EDGE,
    OP_RENAME_TYPE,
    OP_ADD_PROP,
    OP_RENAME_PROP,
    OP_ADD_UNIQUE,
    OP_ADD_RANGE,
    OP_EXTEND_ENUM,
    OP_TYPE_META,
    OP_PROP_META,
    OP_DROP_TYPE,
    OP_DROP_PROP,
    OP_MAKE_NULLABLE,
    OP_DROP_CONSTRAINT,
    /* unsupported */
    OP_ADD_REQUIRED,
    OP_SHRINK_ENUM,
    OP_MAKE_REQUIRED,
    OP_CHANGE_TYPE,
    OP_KEY_CHANGE,
    OP_ENDPOINTS,
    OP_NODE_TO_EDGE,
    OP_AMBIGUOUS_RENAME,
    OP_N
};
#define OP_FIRST_UNSUPPORTED OP_ADD_REQUIRED

static void want(pair *p, const char *kind, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void want(pair *p, const char *kind, const char *code, const char *fmt, ...)
{
    expect *e = &p->e[p->ne++];
    snprintf(e->kind, sizeof e->kind, "%s", kind);
    snprintf(e->code, sizeof e->code, "%s", code ? code : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->entity, sizeof e->entity, fmt, ap);
    va_end(ap);
    if (!strcmp(kind, "unsupported_change")) p->unsupported = 1;
}

static int referenced(const model *m, int ti)
{
    for (int i = 0; i < m->nt; i++)
        if (m->t[i].alive && m->t[i].edge && (m->t[i].from == ti || m->t[i].to == ti)) return 1;
    return 0;
}

/* A type untouched by the ops so far, alive in both models, of kind edge (1), node (0) or
 * either (-1); -1 when there is none. */
static int untouched(pair *p, int *touched, int edge)
{
    int c[MAXT], n = 0;
    for (int i = 0; i < p->old.nt; i++)
        if (!touched[i] && p->new.t[i].alive && (edge < 0 || p->new.t[i].edge == edge)) c[n++] = i;
    return n ? c[pick(n)] : -1;
}

/* A property index of type t matching f, or -1. */
static int prop_where(const mtype *t, int (*f)(const mtype *, const mprop *))
{
    int c[MAXP], n = 0;
    for (int k = 0; k < t->np; k++)
        if (f(t, &t->p[k])) c[n++] = k;
    return n ? c[pick(n)] : -1;
}
static int any_prop(const mtype *t, const mprop *q)
{
    (void)t;
    (void)q;
    return 1;
}
static int not_key(const mtype *t, const mprop *q)
{
    return t->key2 < 0 || &t->p[t->key2] != q;
}
static int unique_able(const mtype *t, const mprop *q)
{
    return !t->edge && not_key(t, q) && !q->unique && q->ty != TY_BOOL && q->ty != TY_F64 &&
           q->ty != TY_ENUM;
}
static int range_able(const mtype *t, const mprop *q)
{
    return !t->edge && !q->has_range && (q->ty == TY_I32 || q->ty == TY_I64);
}
static int is_enum(const mtype *t, const mprop *q)
{
    (void)t;
    return q->ty == TY_ENUM;
}
static int required(const mtype *t, const mprop *q)
{
    return not_key(t, q) && !q->nullable;
}
static int nullable_plain(const mtype *t, const mprop *q)
{
    (void)t;
    return q->nullable && !q->unique;
}
static int plain(const mtype *t, const mprop *q)
{
    return not_key(t, q) && !q->has_range && q->ty != TY_ENUM;
}
static int constrained(const mtype *t, const mprop *q)
{
    (void)t;
    return q->unique || q->has_range;
}
static int key_able(const mtype *t, const mprop *q)
{
    return !t->edge && t->key2 < 0 && !q->nullable && (q->ty == TY_STRING || q->ty == TY_I64);
}

/* One operation on p->new (types touched once each); 0 when it could not be made. */
static int apply_op(pair *p, int op, int *touched)
{
    model *m = &p->new;
    int ti, k;
    mtype *t;
    switch (op) {
    case OP_ADD_NODE:
    case OP_ADD_EDGE: {
        int nodes[MAXT];
        if (m->nt >= MAXT || (op == OP_ADD_EDGE && alive_nodes(m, nodes) == 0)) return 0;
        add_type(m, op == OP_ADD_EDGE);
        touched[m->nt - 1] = 1;
        want(p, "add_type", NULL, "%s", m->t[m->nt - 1].name);
        return 1;
    }
    case OP_DROP_CONSTRAINT:
        if ((ti = untouched(p, touched, 0)) < 0) return 0;
        t = &m->t[ti];
        if ((k = prop_where(t, constrained)) < 0) return 0;
        t->p[k].unique = t->p[k].has_range = 0;
        want(p, "drop_constraint", NULL, "%s", t->name);
        break;
    case OP_RENAME_TYPE:
        if ((ti = untouched(p, touched, -1)) < 0) return 0;
        t = &m->t[ti];
        memcpy(t->rename_from, t->name, sizeof t->name);
        snprintf(t->name, sizeof t->name, "%s%d", t->edge ? "F" : "R", counter++);
        want(p, "rename_type", NULL, "%s", t->rename_from);
        break;
    case OP_ADD_PROP:
    case OP_ADD_REQUIRED:
        if ((ti = untouched(p, touched, -1)) < 0 || m->t[ti].np >= MAXP) return 0;
        t = &m->t[ti];
        new_prop(&t->p[t->np], t->edge, op == OP_ADD_PROP);
        t->p[t->np].unique = t->p[t->np].has_range = 0; /* constraints are their own step */
        if (op == OP_ADD_PROP)
            want(p, "add_property", NULL, "%s.%s", t->name, t->p[t->np].name);
        else
            want(p, "unsupported_change", "M102", "%s.%s", t->name, t->p[t->np].name);
        t->np++;
        break;
    case OP_RENAME_PROP:
        if ((ti = untouched(p, touched, -1)) < 0) return 0;
        t = &m->t[ti];
        if ((k = prop_where(t, any_prop)) < 0) return 0;
        want(p, "rename_property", NULL, "%s.%s", t->name, t->p[k].name);
        memcpy(t->p[k].rename_from, t->p[k].name, sizeof t->p[k].name);
        snprintf(t->p[k].name, sizeof t->p[k].name, "r%d", counter++);
        break;
    case OP_ADD_UNIQUE:
    case OP_ADD_RANGE:
        if ((ti = untouched(p, touched, 0)) < 0) return 0;
        t = &m->t[ti];
        if ((k = prop_where(t, op == OP_ADD_UNIQUE ? unique_able : range_able)) < 0) return 0;
        if (op == OP_ADD_UNIQUE) {
            t->p[k].unique = 1;
        } else {
            t->p[k].has_range = 1;
            t->p[k].lo = pick(5); /* above 1: existing values break it */
            t->p[k].hi = 10 + pick(200);
        }
        want(p, "add_constraint", NULL, "%s", t->name);
        break;
    case OP_EXTEND_ENUM:
    case OP_SHRINK_ENUM:
        if ((ti = untouched(p, touched, -1)) < 0) return 0;
        t = &m->t[ti];
        if ((k = prop_where(t, is_enum)) < 0) return 0;
        if (op == OP_EXTEND_ENUM) {
            t->p[k].n_enum++;
            want(p, "extend_enum", NULL, "%s.%s", t->name, t->p[k].name);
        } else {
            t->p[k].n_enum--;
            want(p, "unsupported_change", "M106", "%s.%s", t->name, t->p[k].name);
        }
        break;
    case OP_TYPE_META:
        if ((ti = untouched(p, touched, -1)) < 0) return 0;
        t = &m->t[ti];
        t->desc = t->desc ? 0 : 9;
        want(p, "update_type_metadata", NULL, "%s", t->name);
        break;
    case OP_PROP_META:
        if ((ti = untouched(p, touched, -1)) < 0) return 0;
        t = &m->t[ti];
        if ((k = prop_where(t, any_prop)) < 0) return 0;
        t->p[k].desc = t->p[k].desc ? 0 : 7;
        want(p, "update_property_metadata", NULL, "%s.%s", t->name, t->p[k].name);
        break;
    case OP_DROP_TYPE:
        if ((ti = untouched(p, touched, -1)) < 0) return 0;
        if (referenced(m, ti)) return 0;
        m->t[ti].alive = 0;
        want(p, "drop_type", NULL, "%s", m->t[ti].name);
        break;
    case OP_DROP_PROP:
        if ((ti = untouched(p, touched, -1)) < 0) return 0;
        t = &m->t[ti];
        if ((k = prop_where(t, not_key)) < 0) return 0;
        want(p, "drop_property", NULL, "%s.%s", t->name, t->p[k].name);
        if (t->key2 > k) t->key2--;
        memmove(&t->p[k], &t->p[k + 1], (size_t)(t->np - k - 1) * sizeof *t->p);
        t->np--;
        break;
    case OP_MAKE_NULLABLE:
    case OP_MAKE_REQUIRED:
        if ((ti = untouched(p, touched, -1)) < 0) return 0;
        t = &m->t[ti];
        if ((k = prop_where(t, op == OP_MAKE_NULLABLE ? required : nullable_plain)) < 0) return 0;
        t->p[k].nullable = op == OP_MAKE_NULLABLE;
        if (op == OP_MAKE_NULLABLE)
            want(p, "update_property_metadata", NULL, "%s.%s", t->name, t->p[k].name);
        else
            want(p, "unsupported_change", "M107", "%s.%s", t->name, t->p[k].name);
        break;
    case OP_CHANGE_TYPE:
        if ((ti = untouched(p, touched, -1)) < 0) return 0;
        t = &m->t[ti];
        if ((k = prop_where(t, plain)) < 0) return 0;
        t->p[k].ty = t->p[k].ty == TY_I64 ? TY_STRING : TY_I64;
        t->p[k].unique = t->p[k].unique && t->p[k].ty != TY_BOOL;
        want(p, "unsupported_change", "M101", "%s.%s", t->name, t->p[k].name);
        break;
    case OP_KEY_CHANGE:
        if ((ti = untouched(p, touched, 0)) < 0) return 0;
        t = &m->t[ti];
        if ((k = prop_where(t, key_able)) < 0) return 0;
        t->key2 = k;
        want(p, "unsupported_change", "M104", "%s", t->name);
        break;
    case OP_ENDPOINTS: {
        if ((ti = untouched(p, touched, 1)) < 0) return 0;
        t = &m->t[ti];
        int nodes[MAXT], n = alive_nodes(m, nodes), to = nodes[pick(n)];
        if (to == t->to) return 0;
        t->to = to;
        want(p, "unsupported_change", "M103", "%s", t->name);
        break;
    }
    case OP_NODE_TO_EDGE: {
        if ((ti = untouched(p, touched, 0)) < 0 || referenced(m, ti)) return 0;
        t = &m->t[ti];
        int nodes[MAXT], n = alive_nodes(m, nodes), other = -1;
        for (int i = 0; i < n; i++)
            if (nodes[i] != ti) other = nodes[i];
        if (other < 0) return 0;
        t->edge = 1;
        t->from = t->to = other;
        t->key2 = -1;
        for (int i = 0; i < t->np; i++) {
            t->p[i].unique = t->p[i].has_range = 0;
            t->p[i].nullable = 1;
        }
        want(p, "unsupported_change", "M105", "%s", t->name);
        break;
    }
    case OP_AMBIGUOUS_RENAME: {
        /* a new type renamed from a type that stays declared */
        if ((ti = untouched(p, touched, 0)) < 0 || m->nt >= MAXT) return 0;
        mtype *n = &m->t[m->nt];
        *n = m->t[ti];
        memcpy(n->rename_from, n->name, sizeof n->name);
        snprintf(n->name, sizeof n->name, "A%d", counter++);
        touched[m->nt++] = 1;
        want(p, "unsupported_change", "M108", "%s", n->name);
        break;
    }
    default:
        return 0;
    }
    touched[ti] = 1;
    return 1;
}

static void make_pair(pair *p, int want_supported, int first_op)
{
    memset(p, 0, sizeof *p);
    counter = 0;
    old_model(&p->old);
    p->new = p->old;
    int touched[MAXT] = {0};
    int ops = 1 + pick(4), made = 0;
    for (int tries = 0; made < ops && tries < 50; tries++) {
        int op = want_supported ? pick(OP_FIRST_UNSUPPORTED) : pick(OP_N);
        if (first_op >= 0 && tries < 5) op = first_op; /* tried first, while it can be made */
        int ok = apply_op(p, op, touched);
        op_made[op] += ok;
        made += ok;
    }
    p->loss = pick(2);
    p->old_src = render(&p->old);
    p->new_src = render(&p->new);
}

static void pair_free(pair *p)
{
    free(p->old_src);
    free(p->new_src);
}

/* ---- 1. plans
 * -----------------------------------------------------------------------------------
 */

static lang_catalog *build(const char *src)
{
    core_arena a;
    core_arena_init(&a, 4096);
    lang_diags d;
    lang_diags_init(&d, &a);
    lang_catalog *c = NULL;
    int rc = lang_catalog_build(&c, src, strlen(src), "g.pg", &d);
    if (rc)
        fail_msg("seed %llu: generated schema does not build: %s\n%s",
                 (unsigned long long)rng_state, og_error_last()->message, src);
    core_arena_free(&a);
    return c;
}

static char *plan_text(const lang_catalog *a, const lang_catalog *b, int loss, int *supported,
                       lang_schema_diff **keep)
{
    lang_schema_diff *d = NULL;
    assert_og_ok(lang_schema_diff_build(&d, a, b, loss));
    core_buf t = CORE_BUF_INIT;
    assert_og_ok(lang_schema_diff_to_text(d, &t));
    assert_og_ok(lang_schema_diff_to_json(d, &t));
    *supported = d->supported;
    if (keep)
        *keep = d;
    else
        lang_schema_diff_free(d);
    char *s = strdup(core_buf_cstr(&t));
    core_buf_free(&t);
    return s;
}

static uint64_t base_seed(void)
{
    const char *s = getenv("OG_SEED");
    return s && *s ? strtoull(s, NULL, 0) : 0x5eed5c4e3a11ULL;
}

static void test_plans(void **state)
{
    (void)state;
    int n_supported = 0;
    memset(op_made, 0, sizeof op_made);
    for (int i = 0; i < N_PAIRS; i++) {
        uint64_t seed = base_seed() + (uint64_t)i * 7919;
        rng_state = seed | 1;
        pair p;
        make_pair(&p, i % 3 != 0, -1);
        lang_catalog *a = build(p.old_src), *b = build(p.new_src);
        int sup = 0, sup2 = 0;
        lang_schema_diff *d = NULL;
        char *t1 = plan_text(a, b, p.loss, &sup, &d);
        lang_catalog *a2 = build(p.old_src), *b2 = build(p.new_src);
        char *t2 = plan_text(a2, b2, p.loss, &sup2, NULL);
        if (strcmp(t1, t2) != 0)
            fail_msg("seed %llu: the plan differs when built again", (unsigned long long)seed);
        int any_unsupported = 0;
        for (size_t s = 0; s < d->n_steps; s++)
            any_unsupported |= !strcmp(d->steps[s].kind, "unsupported_change");
        if (sup != !any_unsupported || sup != !p.unsupported)
            fail_msg("seed %llu: supported %d, unsupported steps %d, unsupported ops "
                     "%d\n%s\n--\n%s\n"
                     "%s",
                     (unsigned long long)seed, sup, any_unsupported, p.unsupported, p.old_src,
                     p.new_src, t1);
        for (int e = 0; e < p.ne; e++) {
            int found = 0;
            for (size_t s = 0; s < d->n_steps && !found; s++)
                found = !strcmp(d->steps[s].kind, p.e[e].kind) &&
                        !strcmp(d->steps[s].entity, p.e[e].entity) &&
                        (!p.e[e].code[0] || !strcmp(d->steps[s].code, p.e[e].code));
            if (!found)
                fail_msg("seed %llu: no step %s %s %s\n%s\n--\n%s\n%s", (unsigned long long)seed,
                         p.e[e].kind, p.e[e].entity, p.e[e].code, p.old_src, p.new_src, t1);
        }
        for (size_t s = 0; s < d->n_steps; s++)
            if (!strcmp(d->steps[s].kind, "drop_type") ||
                !strcmp(d->steps[s].kind, "drop_property"))
                assert_int_equal(d->steps[s].data_loss, p.loss);
        /* ids: a renamed type or property keeps its id; all stay distinct */
        lang_catalog_inherit(b, a);
        for (size_t x = 0; x < b->n_types; x++) {
            const lang_typedef *nt = &b->types[x];
            for (size_t y = 0; y < x; y++)
                assert_true(nt->id != b->types[y].id);
            for (size_t k = 0; k < nt->n_props; k++)
                for (size_t j = 0; j < k; j++)
                    assert_true(nt->props[k].id != nt->props[j].id);
            int o = lang_catalog_find(a, nt->name, nt->kind);
            if (o < 0 && nt->rename_from && !lang_rename_ambiguous_type(b, x, a))
                o = lang_catalog_find(a, nt->rename_from, nt->kind);
            if (o < 0) continue;
            assert_true(nt->id == a->types[o].id);
            for (size_t k = 0; k < nt->n_props; k++) {
                const char *pw =
                    nt->props[k].rename_from ? nt->props[k].rename_from : nt->props[k].name;
                int op = lang_type_find_prop(&a->types[o], pw);
                if (op >= 0) assert_true(nt->props[k].id == a->types[o].props[op].id);
            }
        }
        n_supported += sup;
        lang_schema_diff_free(d);
        free(t1);
        free(t2);
        lang_catalog_free(a);
        lang_catalog_free(b);
        lang_catalog_free(a2);
        lang_catalog_free(b2);
        pair_free(&p);
    }
    assert_true(n_supported > N_PAIRS / 3 && n_supported < N_PAIRS);
    for (int op = 0; op < OP_N; op++)
        if (op_made[op] == 0) fail_msg("operation %d was never made", op);
}

/* ---- 2. applies
 * ---------------------------------------------------------------------------------- */

/* The value of property q in row r of a node type (old schema), as JSON; NULL for null. */
static void value_json(core_buf *b, const mprop *q, int r, int ti)
{
    if (q->nullable && r == 2 && ti % 2 == 0) {
        core_buf_append_str(b, "null");
        return;
    }
    /* values repeat unless @unique asks them not to: an added @unique may break */
    int v = q->has_range ? q->lo + r : q->unique ? r + 1 : r / 2 + 1;
    if (r >= ROWS) v = q->has_range ? q->hi : 1000 + r; /* rows added later: new values */
    switch (q->ty) {
    case TY_STRING:
        core_buf_printf(b, "\"s%d\"", q->unique || r >= ROWS ? r : r / 2);
        break;
    case TY_I32:
    case TY_I64:
        core_buf_printf(b, "%d", v);
        break;
    case TY_F64:
        core_buf_printf(b, "%d.5", v);
        break;
    case TY_BOOL:
        core_buf_append_str(b, r % 2 ? "true" : "false");
        break;
    default:
        core_buf_printf(b, "\"v%d\"", r % q->n_enum);
    }
}

/* Rows under model m (keys k0..k{ROWS-1} of each node type; ROWS-1 edges per edge type). A
 * row's values depend on its index only, so an added @unique or a narrower @range may break
 * (the apply is then refused). */
static char *rows_of(const model *m, int first, int n)
{
    core_buf b = CORE_BUF_INIT;
    for (int i = 0; i < m->nt; i++) {
        const mtype *t = &m->t[i];
        if (!t->alive) continue;
        for (int r = first; r < first + n; r++) {
            if (t->edge)
                core_buf_printf(&b, "{\"edge\":\"%s\",\"from\":\"k%d\",\"to\":\"k%d\",\"data\":{",
                                t->name, r >= ROWS ? r : r % ROWS, r >= ROWS ? r : (r + 1) % ROWS);
            else
                core_buf_printf(&b, "{\"type\":\"%s\",\"data\":{\"k\":\"k%d\"", t->name, r);
            int sep = !t->edge;
            for (int k = 0; k < t->np; k++) {
                core_buf_printf(&b, "%s\"%s\":", sep ? "," : "", t->p[k].name);
                sep = 1;
                value_json(&b, &t->p[k], r, i);
            }
            core_buf_append_str(&b, "}}\n");
        }
    }
    char *s = strdup(core_buf_cstr(&b));
    core_buf_free(&b);
    return s;
}

static int load(og_graph *g, const char *jsonl, int mode)
{
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = mode;
    og_write_result *wr = NULL;
    int rc = og_graph_load(&wr, g, "rows.jsonl", jsonl, strlen(jsonl), &lo);
    og_write_result_free(wr);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The rows of query `body` (inside `query q() { ... }`), sorted, one a line; NULL on failure.
 */
static char *rows(og_graph *g, const char *body)
{
    char src[1024];
    snprintf(src, sizeof src, "query q() { %s }", body);
    og_query_options qo = OG_QUERY_OPTIONS_INIT;
    qo.source = src;
    qo.name = "q";
    og_result *r = NULL;
    if (og_graph_query(&r, g, &qo) != 0) return NULL;
    uint64_t n = og_result_row_count(r);
    char **v = calloc(n ? n : 1, sizeof *v);
    core_buf out = CORE_BUF_INIT;
    for (uint64_t i = 0; i < n; i++) {
        size_t len = 0;
        const char *j = og_result_row_json(r, i, &len);
        v[i] = strndup(j, len);
    }
    qsort(v, n, sizeof *v, cmp_str);
    for (uint64_t i = 0; i < n; i++) {
        core_buf_printf(&out, "%s\n", v[i]);
        free(v[i]);
    }
    free(v);
    og_result_free(r);
    char *s = strdup(core_buf_cstr(&out));
    core_buf_free(&out);
    return s;
}

static size_t count_rows(og_graph *g, const char *body)
{
    char *s = rows(g, body);
    if (!s) fail_msg("query failed: %s: %s", body, og_error_last()->message);
    size_t n = 0;
    for (char *c = s; *c; c++)
        n += *c == '\n';
    free(s);
    return n;
}

/* Every file under the graph root with its size and content hash: what "nothing changed"
 * compares. */
static core_buf *g_files;
static const char *g_root;
static int list_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)f;
    if (flag != FTW_F) return 0;
    FILE *fp = fopen(path, "rb");
    uint64_t h = 1469598103934665603ULL;
    int c;
    while (fp && (c = fgetc(fp)) != EOF)
        h = (h ^ (uint64_t)c) * 1099511628211ULL;
    if (fp) fclose(fp);
    core_buf_printf(g_files, "%s %lld %016llx\n", path + strlen(g_root), (long long)st->st_size,
                    (unsigned long long)h);
    return 0;
}
static char *files_of(const char *dir)
{
    core_buf b = CORE_BUF_INIT;
    g_files = &b;
    g_root = dir;
    nftw(dir, list_one, 16, FTW_PHYS);
    /* sort the lines */
    char *all = strdup(core_buf_cstr(&b)), *save = NULL, *lines[4096];
    size_t n = 0;
    for (char *l = strtok_r(all, "\n", &save); l && n < 4096; l = strtok_r(NULL, "\n", &save))
        lines[n++] = l;
    qsort(lines, n, sizeof *lines, cmp_str);
    core_buf_clear(&b);
    for (size_t i = 0; i < n; i++)
        core_buf_printf(&b, "%s\n", lines[i]);
    free(all);
    char *s = strdup(core_buf_cstr(&b));
    core_buf_free(&b);
    return s;
}

static size_t commits(og_graph *g)
{
    og_commit_list *l = NULL;
    assert_og_ok(og_graph_commits(&l, g, NULL));
    size_t n = og_commit_list_count(l);
    og_commit_list_free(l);
    return n;
}

/* name -> id of every type in the graph's accepted catalog */
static json_t *type_ids(og_graph *g)
{
    og_schema_info *si = NULL;
    assert_og_ok(og_graph_schema(&si, g, NULL));
    json_t *cat = json_loads(si->catalog_json, 0, NULL);
    assert_non_null(cat);
    json_t *out = json_object();
    size_t i, k;
    json_t *t, *q;
    json_array_foreach(json_object_get(cat, "types"), i, t)
    {
        const char *tn = json_string_value(json_object_get(t, "name"));
        json_object_set(out, tn, json_object_get(t, "id"));
        json_array_foreach(json_object_get(t, "properties"), k, q)
        {
            char key[64];
            snprintf(key, sizeof key, "%s.%s", tn, json_string_value(json_object_get(q, "name")));
            json_object_set(out, key, json_object_get(q, "id"));
        }
    }
    json_decref(cat);
    og_schema_info_free(si);
    return out;
}

static char *identity(og_graph *g)
{
    og_schema_info *si = NULL;
    assert_og_ok(og_graph_schema(&si, g, NULL));
    char *id = strdup(si->identity);
    og_schema_info_free(si);
    return id;
}

/* The kept rows of node type t (new model, index ti) after an apply: its keys, and each
 * property that continues an old one with the old values. */
static void check_rows(og_graph *g, const pair *p, int ti, int extra)
{
    const mtype *t = &p->new.t[ti], *o = &p->old.t[ti];
    char body[512];
    snprintf(body, sizeof body, "match { $x: %s } return { $x.k }", t->name);
    assert_int_equal(count_rows(g, body), ROWS + extra);
    for (int k = 0; k < t->np; k++) {
        const mprop *q = &t->p[k];
        const mprop *oq = NULL;
        const char *was = q->rename_from[0] ? q->rename_from : q->name;
        for (int j = 0; j < o->np; j++)
            if (!strcmp(o->p[j].name, was)) oq = &o->p[j];
        if (q->ty == TY_F64) continue;
        core_buf want = CORE_BUF_INIT;
        char *lines[ROWS];
        for (int r = 0; r < ROWS; r++) {
            core_buf v = CORE_BUF_INIT;
            if (oq)
                value_json(&v, oq, r, ti);
            else
                core_buf_append_str(&v, "null");
            assert_true(asprintf(&lines[r], "{\"x.k\":\"k%d\",\"x.%s\":%s}", r, q->name,
                                 core_buf_cstr(&v)) > 0);
            core_buf_free(&v);
        }
        qsort(lines, ROWS, sizeof *lines, cmp_str);
        for (int r = 0; r < ROWS; r++) {
            core_buf_printf(&want, "%s\n", lines[r]);
            free(lines[r]);
        }
        snprintf(body, sizeof body,
                 "match { $x: %s } return { $x.k, $x.%s } order { $x.k } limit %d", t->name,
                 q->name, ROWS);
        char *got = rows(g, body);
        if (!got) fail_msg("query failed: %s: %s", body, og_error_last()->message);
        if (strcmp(got, core_buf_cstr(&want)) != 0)
            fail_msg("%s.%s after the apply:\n%s--- expected:\n%s\n%s\n--\n%s", t->name, q->name,
                     got, core_buf_cstr(&want), p->old_src, p->new_src);
        free(got);
        core_buf_free(&want);
    }
}

/* An edge type's name as a traversal word (matched ignoring case, written in lowercase). */
static const char *edge_word(const char *name)
{
    static char w[24];
    size_t i = 0;
    for (; name[i] && i + 1 < sizeof w; i++)
        w[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] - 'A' + 'a' : name[i]);
    w[i] = 0;
    return w;
}

static void test_applies(void **state)
{
    (void)state;
    int applied = 0, refused = 0, unsupported = 0;
    for (int i = 0; i < N_APPLY; i++) {
        uint64_t seed = base_seed() + 1000003ULL * (uint64_t)(i + 1);
        rng_state = seed | 1;
        pair p;
        /* every other pair adds a constraint the rows may break */
        make_pair(&p, i % 8 != 7, i % 4 == 1 ? OP_ADD_UNIQUE : i % 4 == 3 ? OP_ADD_RANGE : -1);
        char dir[TEST_SANDBOX_PATH];
        test_sandbox_new(dir, sizeof dir, "schema-pairs");
        og_init_options io = OG_INIT_OPTIONS_INIT;
        io.schema_source = p.old_src;
        og_init_result *ir = NULL;
        assert_og_ok(og_root_init(&ir, dir, &io));
        og_init_result_free(ir);
        og_graph *g = NULL;
        og_open_options oo = OG_OPEN_OPTIONS_INIT;
        assert_og_ok(og_graph_open(&g, dir, &oo));
        char *data = rows_of(&p.old, 0, ROWS);
        if (load(g, data, OG_LOAD_APPEND) != 0)
            fail_msg("seed %llu: load under the old schema: %s\n%s\n%s", (unsigned long long)seed,
                     og_error_last()->message, p.old_src, data);
        free(data);
        size_t c0 = commits(g);
        char *id0 = identity(g), *files0 = files_of(dir);
        json_t *ids0 = type_ids(g);

        og_schema_apply_options ao = OG_SCHEMA_APPLY_OPTIONS_INIT;
        ao.allow_data_loss = p.loss;
        og_schema_apply_result *r = NULL;
        og_error_clear();
        ao.source = p.new_src;
        int rc = og_graph_schema_apply(&r, g, &ao);
        if (getenv("OG_PAIRS_DEBUG"))
            fprintf(stderr, "---- seed %llu rc %d %s\n%s--\n%s", (unsigned long long)seed, rc,
                    rc ? og_error_last()->message : "", p.old_src, p.new_src);
        if (rc != 0) {
            /* refused: typed, and nothing changed */
            if (rc != OG_E_BAD_REQUEST)
                fail_msg("seed %llu: apply failed %s: %s\n%s\n--\n%s", (unsigned long long)seed,
                         og_code_name(rc), og_error_last()->message, p.old_src, p.new_src);
            assert_int_equal(og_error_last()->code, rc);
            if (p.unsupported)
                unsupported++;
            else if (!r || og_schema_apply_result_violation_count(r) == 0)
                fail_msg("seed %llu: a supported apply refused without violations: %s\n%s\n--\n%s",
                         (unsigned long long)seed, og_error_last()->message, p.old_src, p.new_src);
            else
                refused++;
            assert_int_equal(commits(g), c0);
            char *id1 = identity(g), *files1 = files_of(dir);
            assert_string_equal(id1, id0);
            if (strcmp(files0, files1) != 0)
                fail_msg("seed %llu: a refused apply changed files:\n%s--- before:\n%s",
                         (unsigned long long)seed, files1, files0);
            free(id1);
            free(files1);
            for (int t = 0; t < p.old.nt; t++) {
                if (p.old.t[t].edge) continue;
                char body[256];
                snprintf(body, sizeof body, "match { $x: %s } return { $x.k }", p.old.t[t].name);
                assert_int_equal(count_rows(g, body), ROWS);
            }
        } else {
            if (p.unsupported)
                fail_msg("seed %llu: an unsupported change applied\n%s\n--\n%s",
                         (unsigned long long)seed, p.old_src, p.new_src);
            assert_non_null(r);
            assert_int_equal(r->applied, 1);
            assert_int_equal(commits(g), c0 + 1);
            applied++;
            og_graph_close(g);
            g = NULL;
            assert_og_ok(og_graph_open(&g, dir, &oo)); /* what is on disk, reopened */
            /* type ids: kept by name or across a rename */
            json_t *ids1 = type_ids(g);
            for (int t = 0; t < p.new.nt; t++) {
                const mtype *nt = &p.new.t[t];
                if (!nt->alive || t >= p.old.nt || !p.old.t[t].alive) continue;
                const char *a = json_string_value(json_object_get(ids0, p.old.t[t].name));
                const char *b = json_string_value(json_object_get(ids1, nt->name));
                assert_non_null(a);
                assert_non_null(b);
                assert_string_equal(a, b);
                /* and so do its properties, renamed or not */
                for (int k = 0; k < nt->np; k++) {
                    const char *was =
                        nt->p[k].rename_from[0] ? nt->p[k].rename_from : nt->p[k].name;
                    char ok[64], nk[64];
                    snprintf(ok, sizeof ok, "%s.%s", p.old.t[t].name, was);
                    snprintf(nk, sizeof nk, "%s.%s", nt->name, nt->p[k].name);
                    const char *x = json_string_value(json_object_get(ids0, ok));
                    const char *y = json_string_value(json_object_get(ids1, nk));
                    assert_non_null(y);
                    if (x) assert_string_equal(x, y);
                }
            }
            json_decref(ids1);
            /* the edges are all there, under their new names */
            for (int t = 0; t < p.new.nt; t++) {
                const mtype *nt = &p.new.t[t];
                if (!nt->alive || !nt->edge || t >= p.old.nt || !p.old.t[t].alive) continue;
                char body[256];
                snprintf(body, sizeof body, "match { $a: %s  $a %s $b } return { $a.k, $b.k }",
                         p.new.t[nt->from].name, edge_word(nt->name));
                assert_int_equal(count_rows(g, body), ROWS);
            }
            /* rows kept per step, then a load and queries under the new schema */
            for (int t = 0; t < p.new.nt; t++) {
                const mtype *nt = &p.new.t[t];
                if (!nt->alive || nt->edge || t >= p.old.nt || !p.old.t[t].alive) continue;
                check_rows(g, &p, t, 0);
            }
            for (int t = 0; t < p.old.nt; t++) { /* dropped properties are gone */
                const mtype *ot = &p.old.t[t], *nt = &p.new.t[t];
                if (ot->edge || !nt->alive) continue;
                for (int k = 0; k < ot->np; k++) {
                    int kept = 0;
                    for (int j = 0; j < nt->np; j++)
                        kept |=
                            !strcmp(nt->p[j].rename_from[0] ? nt->p[j].rename_from : nt->p[j].name,
                                    ot->p[k].name);
                    if (kept) continue;
                    char body[256];
                    snprintf(body, sizeof body, "match { $x: %s } return { $x.%s }", nt->name,
                             ot->p[k].name);
                    char *got = rows(g, body);
                    if (got) fail_msg("dropped %s.%s still reads", nt->name, ot->p[k].name);
                    assert_int_equal(og_error_last()->code, OG_E_BAD_REQUEST);
                }
            }
            char *more = rows_of(&p.new, ROWS, 1);
            if (load(g, more, OG_LOAD_MERGE) != 0)
                fail_msg("seed %llu: load under the new schema: %s\n%s\n%s",
                         (unsigned long long)seed, og_error_last()->message, p.new_src, more);
            free(more);
            for (int t = 0; t < p.new.nt; t++) {
                const mtype *nt = &p.new.t[t];
                if (!nt->alive || nt->edge) continue;
                int existed = t < p.old.nt && p.old.t[t].alive;
                char body[256];
                snprintf(body, sizeof body, "match { $x: %s } return { $x.k }", nt->name);
                assert_int_equal(count_rows(g, body), existed ? ROWS + 1 : 1);
            }
            for (int t = 0; t < p.new.nt; t++) {
                const mtype *nt = &p.new.t[t];
                if (!nt->alive || !nt->edge) continue;
                int existed = t < p.old.nt && p.old.t[t].alive;
                char body[256];
                snprintf(body, sizeof body, "match { $a: %s  $a %s $b } return { $a.k, $b.k }",
                         p.new.t[nt->from].name, edge_word(nt->name));
                assert_int_equal(count_rows(g, body), existed ? ROWS + 1 : 1);
            }
        }
        og_schema_apply_result_free(r);
        json_decref(ids0);
        free(id0);
        free(files0);
        og_graph_close(g);
        test_sandbox_done(dir);
        pair_free(&p);
    }
    print_message("schema pairs applied: %d applied, %d refused for their data, %d unsupported\n",
                  applied, refused, unsupported);
    assert_true(applied > N_APPLY / 3);
    assert_true(unsupported > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plans),
        cmocka_unit_test(test_applies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
