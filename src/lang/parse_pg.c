/* Parser for .pg schema files: interfaces, nodes, edges, properties, annotations and body
 * constraints, into the pg_* AST of lang.h. The first syntax error (S000) ends the parse. */
#include "lang/parser.h"

#include <string.h>

static int is_constraint_word(lang_parser *p, size_t k)
{
    return lp_is_word(p, k, "key") || lp_is_word(p, k, "unique") || lp_is_word(p, k, "index") ||
           lp_is_word(p, k, "range") || lp_is_word(p, k, "check");
}

/* '@' constraint-word '(' starts a body constraint, not a property annotation. */
static int at_bodyc(lang_parser *p)
{
    return lp_is(p, TK_AT) && is_constraint_word(p, 1) && lp_peek(p, 2)->kind == TK_LPAREN &&
           lp_peek(p, 1)->off == lp_peek(p, 0)->end;
}

static const lang_tok *type_name(lang_parser *p, const char *what)
{
    const lang_tok *t = lp_peek(p, 0);
    if (t->kind == TK_IDENT)
        lp_fail(p, t, "%s '%.*s' must start with an uppercase letter", what, (int)t->len, t->text);
    if (t->kind != TK_TYPENAME) lp_fail(p, t, "expected %s, found %s", what, lp_tok_desc(p, t));
    return lp_next(p);
}

static int ev_token(int k)
{
    return k == TK_IDENT || k == TK_TYPENAME || k == TK_INT || k == TK_MINUS;
}

static void parse_type(lang_parser *p, lang_type *ty, lang_pos *pos)
{
    const lang_tok *t = lp_peek(p, 0);
    *pos = lp_pos(t);
    memset(ty, 0, sizeof *ty);
    if (t->kind == TK_LBRACK) {
        lp_next(p);
        const lang_tok *s = lp_peek(p, 0);
        int sc = s->kind == TK_TYPENAME ? lang_scalar_from_name(s->text, s->len) : 0;
        if (!sc) {
            if (lp_is_word(p, 0, "enum") || lp_is_word(p, 0, "Vector") || s->kind == TK_LBRACK)
                lp_fail(p, s, "a list holds scalars only (no enum, Vector or nested list)");
            lp_fail(p, s, "expected a scalar type inside '[ ]', found %s", lp_tok_desc(p, s));
        }
        lp_next(p);
        lp_expect(p, TK_RBRACK, NULL);
        ty->kind = LANG_TY_LIST;
        ty->scalar = sc;
    } else if (lp_is_word(p, 0, "enum")) {
        lp_next(p);
        lp_expect(p, TK_LPAREN, "'(' after enum");
        ty->kind = LANG_TY_ENUM;
        size_t cap = 0;
        for (;;) {
            const lang_tok *a = lp_peek(p, 0);
            if (!ev_token(a->kind))
                lp_fail(p, a, "expected an enum value ([A-Za-z0-9_-]+), found %s",
                        lp_tok_desc(p, a));
            uint32_t end = a->end;
            lp_next(p);
            while (ev_token(lp_peek(p, 0)->kind) && lp_peek(p, 0)->off == end)
                end = lp_next(p)->end;
            if (lp_peek(p, 0)->kind == TK_FLOAT || lp_peek(p, 0)->kind == TK_DOT ||
                lp_peek(p, 0)->kind == TK_ARROW)
                lp_fail(p, lp_peek(p, 0), "enum values may use only letters, digits, '_' and '-'");
            const char **v =
                lp_push_n(p, (void **)&ty->enum_vals, &ty->n_enum, &cap, sizeof *v, SIZE_MAX);
            *v = core_arena_strndup(p->arena, a->text, end - a->off);
            if (!*v) lp_oom(p);
            if (!lp_is(p, TK_COMMA)) break;
            lp_next(p);
        }
        lp_expect(p, TK_RPAREN, "',' or ')'");
    } else if (lp_is_word(p, 0, "Vector")) {
        lp_next(p);
        lp_expect(p, TK_LPAREN, "'(' after Vector");
        const lang_tok *d = lp_expect(p, TK_INT, "the vector dimension");
        uint64_t v = lp_int_value(p, d);
        if (v < 1 || v > LANG_MAX_VECTOR_DIM)
            lp_fail(p, d, "vector dimension must be 1..%u", LANG_MAX_VECTOR_DIM);
        ty->kind = LANG_TY_VECTOR;
        ty->dim = (uint32_t)v;
        lp_expect(p, TK_RPAREN, NULL);
    } else {
        int sc = t->kind == TK_TYPENAME ? lang_scalar_from_name(t->text, t->len) : 0;
        if (!sc) lp_fail(p, t, "unknown type %s", lp_tok_desc(p, t));
        lp_next(p);
        ty->kind = LANG_TY_SCALAR;
        ty->scalar = sc;
    }
    if (lp_is(p, TK_QUESTION)) {
        lp_next(p);
        ty->nullable = 1;
    }
}

static void parse_prop(lang_parser *p, pg_prop *pr)
{
    const lang_tok *n = lp_peek(p, 0);
    if (n->kind == TK_TYPENAME)
        lp_fail(p, n, "property name '%.*s' must start with a lowercase letter or '_'", (int)n->len,
                n->text);
    if (n->kind != TK_IDENT) lp_fail(p, n, "expected a property, found %s", lp_tok_desc(p, n));
    lp_next(p);
    pr->name = lp_text(p, n);
    pr->pos = lp_pos(n);
    lp_expect(p, TK_COLON, "':' after the property name");
    parse_type(p, &pr->type, &pr->type_pos);
    size_t cap = 0;
    while (lp_is(p, TK_AT) && !at_bodyc(p)) {
        if (lp_is_word(p, 1, "card"))
            lp_fail(p, lp_peek(p, 0), "@card belongs on an edge declaration, not on a property");
        lang_ann *a = lp_push(p, (void **)&pr->anns, &pr->n_anns, &cap, sizeof *a);
        lp_annotation(p, a);
    }
    if (lp_is(p, TK_COMMA))
        lp_fail(p, lp_peek(p, 0),
                "unexpected ','; properties are separated by whitespace or newlines");
}

static void parse_num(lang_parser *p, lang_value *v)
{
    int neg = 0;
    if (lp_is(p, TK_MINUS)) {
        lp_next(p);
        neg = 1;
    }
    const lang_tok *t = lp_peek(p, 0);
    if (t->kind != TK_INT && t->kind != TK_FLOAT)
        lp_fail(p, t, "expected a number, found %s", lp_tok_desc(p, t));
    lp_literal(p, v, 0);
    v->neg = neg;
    if (neg && v->kind == LANG_V_FLOAT) v->f = -v->f;
    if (neg && v->kind == LANG_V_INT && v->u == 0) v->neg = 0;
}

static void parse_bodyc(lang_parser *p, pg_bodyc *c)
{
    const lang_tok *at = lp_next(p);
    c->pos = lp_pos(at);
    if (lp_is_word(p, 0, "key"))
        c->kind = PG_C_KEY;
    else if (lp_is_word(p, 0, "unique"))
        c->kind = PG_C_UNIQUE;
    else if (lp_is_word(p, 0, "index"))
        c->kind = PG_C_INDEX;
    else if (lp_is_word(p, 0, "range"))
        c->kind = PG_C_RANGE;
    else
        c->kind = PG_C_CHECK;
    lp_next(p);
    lp_expect(p, TK_LPAREN, NULL);
    size_t cap = 0;
    for (;;) {
        pg_carg *a = lp_push(p, (void **)&c->args, &c->n_args, &cap, sizeof *a);
        const lang_tok *t = lp_peek(p, 0);
        a->pos = lp_pos(t);
        if (t->kind == TK_DOTDOT) {
            lp_next(p);
            a->kind = PG_CARG_RANGE;
            a->has_hi = 1;
            parse_num(p, &a->hi);
        } else if (t->kind == TK_MINUS || ((t->kind == TK_INT || t->kind == TK_FLOAT) &&
                                           lp_peek(p, 1)->kind == TK_DOTDOT)) {
            a->kind = PG_CARG_RANGE;
            a->has_lo = 1;
            parse_num(p, &a->lo);
            lp_expect(p, TK_DOTDOT, "'..' in the range");
            if (lp_is(p, TK_MINUS) || lp_is(p, TK_INT) || lp_is(p, TK_FLOAT)) {
                a->has_hi = 1;
                parse_num(p, &a->hi);
            }
        } else if ((t->kind == TK_IDENT || t->kind == TK_TYPENAME) && !lp_at_literal(p)) {
            a->kind = PG_CARG_IDENT;
            a->ident = lp_text(p, lp_next(p));
        } else {
            a->kind = PG_CARG_LIT;
            lp_literal(p, &a->lit, 0);
        }
        if (!lp_is(p, TK_COMMA)) break;
        lp_next(p);
    }
    lp_expect(p, TK_RPAREN, "',' or ')'");
}

static void parse_body(lang_parser *p, pg_decl *d, int allow_bodyc)
{
    lp_expect(p, TK_LBRACE, "'{'");
    size_t pcap = 0, ccap = 0;
    while (!lp_is(p, TK_RBRACE)) {
        if (lp_is(p, TK_EOF)) lp_fail(p, lp_peek(p, 0), "expected '}' to close '%s'", d->name);
        if (lp_is(p, TK_AT)) {
            if (!at_bodyc(p)) {
                if (lp_is_word(p, 1, "key") || lp_is_word(p, 1, "unique") ||
                    lp_is_word(p, 1, "index"))
                    lp_fail(p, lp_peek(p, 0),
                            "a constraint in the body needs its properties: @%.*s(a, b)",
                            (int)lp_peek(p, 1)->len, lp_peek(p, 1)->text);
                lp_fail(p, lp_peek(p, 0),
                        "expected a property or a body constraint (@key, @unique, @index, "
                        "@range, @check)");
            }
            if (!allow_bodyc) lp_fail(p, lp_peek(p, 0), "an interface holds properties only");
            pg_bodyc *c = lp_push(p, (void **)&d->bodycs, &d->n_bodycs, &ccap, sizeof *c);
            parse_bodyc(p, c);
            continue;
        }
        pg_prop *pr = lp_push(p, (void **)&d->props, &d->n_props, &pcap, sizeof *pr);
        parse_prop(p, pr);
    }
    lp_next(p);
}

static void parse_header_anns(lang_parser *p, pg_decl *d, size_t *cap)
{
    while (lp_is(p, TK_AT)) {
        if (lp_is_word(p, 1, "card") && lp_peek(p, 2)->kind == TK_LPAREN) {
            const lang_tok *at = lp_next(p);
            if (d->has_card) lp_fail(p, at, "@card given twice");
            d->has_card = 1;
            d->card_pos = lp_pos(at);
            lp_next(p);
            lp_next(p);
            d->card_min = lp_int_value(p, lp_expect(p, TK_INT, "the minimum count"));
            lp_expect(p, TK_DOTDOT, "'..'");
            d->card_max = -1;
            if (lp_is(p, TK_INT)) {
                const lang_tok *mt = lp_next(p);
                uint64_t mx = lp_int_value(p, mt);
                if (mx > INT64_MAX) lp_fail(p, mt, "@card maximum is too large");
                d->card_max = (int64_t)mx;
            } else if (lp_is(p, TK_STAR)) {
                lp_next(p);
            }
            lp_expect(p, TK_RPAREN, NULL);
            continue;
        }
        if (at_bodyc(p))
            lp_fail(p, lp_peek(p, 0), "@%.*s(...) belongs inside the body braces",
                    (int)lp_peek(p, 1)->len, lp_peek(p, 1)->text);
        lang_ann *a = lp_push(p, (void **)&d->anns, &d->n_anns, cap, sizeof *a);
        lp_annotation(p, a);
    }
}

static void parse_decl(lang_parser *p, pg_decl *d)
{
    const lang_tok *kw = lp_peek(p, 0);
    d->pos = lp_pos(kw);
    size_t acap = 0;
    if (lp_is_word(p, 0, "interface")) {
        lp_next(p);
        d->kind = PG_INTERFACE;
        const lang_tok *n = type_name(p, "an interface name");
        d->name = lp_text(p, n);
        d->pos = lp_pos(n);
        parse_body(p, d, 0);
    } else if (lp_is_word(p, 0, "node")) {
        lp_next(p);
        d->kind = PG_NODE;
        const lang_tok *n = type_name(p, "a node type name");
        d->name = lp_text(p, n);
        d->pos = lp_pos(n);
        parse_header_anns(p, d, &acap);
        if (lp_is_word(p, 0, "implements")) {
            lp_next(p);
            size_t icap = 0;
            for (;;) {
                const lang_tok *it = type_name(p, "an interface name");
                pg_name *nm =
                    lp_push(p, (void **)&d->implements, &d->n_implements, &icap, sizeof *nm);
                nm->name = lp_text(p, it);
                nm->pos = lp_pos(it);
                if (!lp_is(p, TK_COMMA)) break;
                lp_next(p);
            }
        }
        parse_header_anns(p, d, &acap); /* also accepted after the interface list */
        if (!lp_is(p, TK_LBRACE))
            lp_fail(p, lp_peek(p, 0), "expected '{' to open node '%s' (the braces are required)",
                    d->name);
        parse_body(p, d, 1);
    } else if (lp_is_word(p, 0, "edge")) {
        lp_next(p);
        d->kind = PG_EDGE;
        const lang_tok *n = type_name(p, "an edge type name");
        d->name = lp_text(p, n);
        d->pos = lp_pos(n);
        lp_expect(p, TK_COLON, "':' and the endpoint types");
        const lang_tok *f = type_name(p, "the source node type");
        d->from.name = lp_text(p, f);
        d->from.pos = lp_pos(f);
        lp_expect(p, TK_ARROW, "'->'");
        const lang_tok *t = type_name(p, "the target node type");
        d->to.name = lp_text(p, t);
        d->to.pos = lp_pos(t);
        parse_header_anns(p, d, &acap);
        if (lp_is(p, TK_LBRACE)) parse_body(p, d, 1);
    } else {
        lp_fail(p, kw, "expected 'node', 'edge' or 'interface', found %s", lp_tok_desc(p, kw));
    }
}

int pg_parse(pg_schema *out, const char *src, size_t len, const char *file, core_arena *arena,
             lang_diags *diags)
{
    memset(out, 0, sizeof *out);
    out->file = file;
    lang_parser P;
    memset(&P, 0, sizeof P);
    P.file = file;
    P.code = "S000";
    P.arena = arena;
    P.diags = diags;
    size_t first_diag = diags->n;
    int rc = lang_lex(&P.toks, &P.n, src, len, file, "S000", arena, diags);
    if (rc) return rc;
    if (!P.n) return lang_diags_failure(diags, first_diag); /* lang_lex always ends with EOF */
    volatile size_t cap = 0;
    if (setjmp(P.fail)) return lang_diags_failure(diags, first_diag);
    while (!lp_is(&P, TK_EOF)) {
        size_t c = cap;
        pg_decl *d =
            lp_push_n(&P, (void **)&out->decls, &out->n_decls, &c, sizeof *d, LANG_MAX_DECLS);
        cap = c;
        parse_decl(&P, d);
    }
    return 0;
}
