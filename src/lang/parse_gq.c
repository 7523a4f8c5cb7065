/* Parser for .gq files: query declarations with typed params, match/return/order/limit
 * reads, and insert/update/delete mutations, into the gq_* AST of lang.h. The first syntax
 * error (Q000) ends the parse. */
#include "lang/parser.h"

#include <string.h>

static gq_expr *parse_expr(lang_parser *p);

static gq_expr *new_expr(lang_parser *p, int kind, const lang_tok *t)
{
    gq_expr *e = core_arena_calloc(p->arena, 1, sizeof *e);
    if (!e) lp_oom(p);
    e->kind = kind;
    e->pos = lp_pos(t);
    return e;
}

static int is_call_name(lang_parser *p, size_t k)
{
    static const char *const names[] = {"now",     "count", "sum", "avg",    "min",   "max",
                                        "nearest", "bm25",  "rrf", "search", "fuzzy", "match_text"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (lp_is_word(p, k, names[i])) return 1;
    return 0;
}

static gq_expr *parse_call(lang_parser *p)
{
    const lang_tok *n = lp_next(p);
    gq_expr *e = new_expr(p, GQ_E_CALL, n);
    e->name = lp_text(p, n);
    lp_enter(p, n);
    lp_expect(p, TK_LPAREN, NULL);
    if (!strcmp(e->name, "now")) {
        lp_expect(p, TK_RPAREN, "')' (now takes no arguments)");
        e->kind = GQ_E_NOW;
        lp_leave(p);
        return e;
    }
    size_t cap = 0;
    if (!lp_is(p, TK_RPAREN)) {
        for (;;) {
            gq_expr **a = lp_push(p, (void **)&e->args, &e->n_args, &cap, sizeof *a);
            if (lp_is(p, TK_IDENT) && lp_peek(p, 1)->kind == TK_EQ && !strcmp(e->name, "rrf")) {
                /* rrf(a, b, k=60): keep the named constant as its value */
                lp_next(p);
                lp_next(p);
            }
            *a = parse_expr(p);
            if (!lp_is(p, TK_COMMA)) break;
            lp_next(p);
        }
    }
    lp_expect(p, TK_RPAREN, "',' or ')'");
    lp_leave(p);
    return e;
}

static gq_expr *parse_expr(lang_parser *p)
{
    const lang_tok *t = lp_peek(p, 0);
    if (t->kind == TK_VAR) {
        lp_next(p);
        if (lp_is(p, TK_DOT)) {
            lp_next(p);
            const lang_tok *pn = lp_peek(p, 0);
            if (pn->kind != TK_IDENT && pn->kind != TK_TYPENAME)
                lp_fail(p, pn, "expected a property name after '.', found %s", lp_tok_desc(p, pn));
            lp_next(p);
            gq_expr *e = new_expr(p, GQ_E_PROP, t);
            e->var = lp_text(p, t);
            e->name = lp_text(p, pn);
            return e;
        }
        gq_expr *e = new_expr(p, GQ_E_VAR, t);
        e->var = lp_text(p, t);
        return e;
    }
    if (t->kind == TK_IDENT && lp_peek(p, 1)->kind == TK_LPAREN && is_call_name(p, 0))
        return parse_call(p);
    if (lp_at_literal(p)) {
        gq_expr *e = new_expr(p, GQ_E_LIT, t);
        lp_literal(p, &e->lit, 1);
        return e;
    }
    if (t->kind == TK_IDENT && lp_peek(p, 1)->kind == TK_LPAREN)
        lp_fail(p, t, "unknown function '%.*s'", (int)t->len, t->text);
    if (t->kind == TK_IDENT) {
        lp_next(p);
        gq_expr *e = new_expr(p, GQ_E_ALIAS, t);
        e->name = lp_text(p, t);
        return e;
    }
    if (t->kind == TK_MINUS) lp_fail(p, t, "negative literals are not supported");
    lp_fail(p, t, "expected an expression, found %s", lp_tok_desc(p, t));
}

static int parse_fop(lang_parser *p)
{
    const lang_tok *t = lp_peek(p, 0);
    int op = 0;
    switch (t->kind) {
    case TK_EQ:
        op = GQ_OP_EQ;
        break;
    case TK_NE:
        op = GQ_OP_NE;
        break;
    case TK_LT:
        op = GQ_OP_LT;
        break;
    case TK_GT:
        op = GQ_OP_GT;
        break;
    case TK_LE:
        op = GQ_OP_LE;
        break;
    case TK_GE:
        op = GQ_OP_GE;
        break;
    default:
        if (lp_is_word(p, 0, "contains"))
            op = GQ_OP_CONTAINS;
        else if (lp_is_word(p, 0, "starts_with"))
            op = GQ_OP_STARTS_WITH;
    }
    if (!op)
        lp_fail(p, t,
                "expected a comparison (=, !=, <, >, <=, >=, contains, starts_with), found %s",
                lp_tok_desc(p, t));
    lp_next(p);
    return op;
}

static int parse_cop(lang_parser *p)
{
    const lang_tok *t = lp_peek(p, 0);
    int op = parse_fop(p);
    if (op == GQ_OP_CONTAINS || op == GQ_OP_STARTS_WITH)
        lp_fail(p, t, "a mutation's where takes =, !=, <, >, <= or >=");
    return op;
}

static gq_expr *parse_mval(lang_parser *p)
{
    const lang_tok *t = lp_peek(p, 0);
    if (t->kind == TK_VAR) {
        lp_next(p);
        if (lp_is(p, TK_DOT)) lp_fail(p, lp_peek(p, 0), "expected a literal, a $param or now()");
        gq_expr *e = new_expr(p, GQ_E_VAR, t);
        e->var = lp_text(p, t);
        return e;
    }
    if (lp_is_word(p, 0, "now") && lp_peek(p, 1)->kind == TK_LPAREN) return parse_call(p);
    if (lp_at_literal(p)) {
        gq_expr *e = new_expr(p, GQ_E_LIT, t);
        lp_literal(p, &e->lit, 1);
        return e;
    }
    lp_fail(p, t, "expected a literal, a $param or now(), found %s", lp_tok_desc(p, t));
}

static void parse_clauses(lang_parser *p, gq_clause **arr, size_t *n);

static void parse_traversal_rest(lang_parser *p, gq_clause *c)
{
    /* after the source variable: [$w:] (eword | <eword>) [bounds] $dst */
    if (lp_is(p, TK_VAR)) {
        const lang_tok *w = lp_next(p);
        c->edge_var = lp_text(p, w);
        c->edge_pos = lp_pos(w);
        lp_expect(p, TK_COLON, "':' after the edge variable");
    }
    if (lp_is(p, TK_LT)) {
        lp_next(p);
        c->undirected = 1;
    }
    const lang_tok *ew = lp_peek(p, 0);
    if (ew->kind == TK_TYPENAME)
        lp_fail(p, ew, "an edge word starts with a lowercase letter ('%c%.*s')",
                ew->text[0] + ('a' - 'A'), (int)ew->len - 1, ew->text + 1);
    if (ew->kind != TK_IDENT || lp_is_word(p, 0, "not"))
        lp_fail(p, ew, "expected an edge word, found %s", lp_tok_desc(p, ew));
    lp_next(p);
    c->eword = lp_text(p, ew);
    c->eword_pos = lp_pos(ew);
    if (c->undirected) lp_expect(p, TK_GT, "'>' closing the undirected edge");
    if (lp_is(p, TK_LBRACE)) {
        const lang_tok *b = lp_next(p);
        c->has_bounds = 1;
        c->bounds_pos = lp_pos(b);
        c->min_hops = lp_int_value(p, lp_expect(p, TK_INT, "the minimum hop count"));
        lp_expect(p, TK_COMMA, "',' in the hop bounds");
        c->max_hops = -1;
        if (lp_is(p, TK_INT)) {
            const lang_tok *mt = lp_next(p);
            uint64_t mx = lp_int_value(p, mt);
            c->max_hops = mx > INT64_MAX ? INT64_MAX : (int64_t)mx;
        }
        lp_expect(p, TK_RBRACE, "'}' closing the hop bounds");
    } else {
        c->min_hops = 1;
        c->max_hops = 1;
    }
    const lang_tok *d = lp_expect(p, TK_VAR, "the destination variable");
    c->dst = lp_text(p, d);
    c->dst_pos = lp_pos(d);
}

static void parse_clause(lang_parser *p, gq_clause *c)
{
    const lang_tok *t = lp_peek(p, 0);
    c->pos = lp_pos(t);
    if (lp_is_word(p, 0, "not") && lp_peek(p, 1)->kind == TK_LBRACE) {
        lp_enter(p, t);
        lp_next(p);
        lp_next(p);
        c->kind = GQ_C_NOT;
        parse_clauses(p, &c->body, &c->n_body);
        lp_leave(p);
        return;
    }
    if (t->kind == TK_VAR) {
        const lang_tok *t1 = lp_peek(p, 1);
        if (t1->kind == TK_COLON) {
            lp_next(p);
            lp_next(p);
            const lang_tok *ty = lp_peek(p, 0);
            if (ty->kind == TK_IDENT)
                lp_fail(p, ty, "a node type name starts with an uppercase letter");
            lp_expect(p, TK_TYPENAME, "a node type name");
            c->kind = GQ_C_BIND;
            c->var = lp_text(p, t);
            c->type_name = lp_text(p, ty);
            c->type_pos = lp_pos(ty);
            if (lp_is(p, TK_LBRACE)) {
                lp_next(p);
                size_t cap = 0;
                for (;;) {
                    const lang_tok *pn = lp_peek(p, 0);
                    if (pn->kind != TK_IDENT && pn->kind != TK_TYPENAME)
                        lp_fail(p, pn, "expected a property name, found %s", lp_tok_desc(p, pn));
                    lp_next(p);
                    gq_pm *pm = lp_push(p, (void **)&c->pms, &c->n_pms, &cap, sizeof *pm);
                    pm->prop = lp_text(p, pn);
                    pm->pos = lp_pos(pn);
                    lp_expect(p, TK_COLON, "':' after the property name");
                    pm->value = parse_mval(p);
                    if (lp_is(p, TK_COMMA)) lp_next(p);
                    if (lp_is(p, TK_RBRACE)) break;
                }
                lp_next(p);
            }
            return;
        }
        int trav =
            (t1->kind == TK_VAR && lp_peek(p, 2)->kind == TK_COLON) ||
            (t1->kind == TK_IDENT && !lp_is_word(p, 1, "contains") &&
             !lp_is_word(p, 1, "starts_with")) ||
            t1->kind == TK_TYPENAME ||
            (t1->kind == TK_LT && lp_peek(p, 2)->kind == TK_IDENT && lp_peek(p, 3)->kind == TK_GT);
        if (trav) {
            lp_next(p);
            c->kind = GQ_C_TRAV;
            c->src = lp_text(p, t);
            c->src_pos = lp_pos(t);
            parse_traversal_rest(p, c);
            return;
        }
    }
    if (t->kind == TK_IDENT && lp_peek(p, 1)->kind == TK_LPAREN &&
        (lp_is_word(p, 0, "search") || lp_is_word(p, 0, "fuzzy") ||
         lp_is_word(p, 0, "match_text"))) {
        c->kind = GQ_C_CALL;
        c->call = parse_call(p);
        return;
    }
    c->kind = GQ_C_FILTER;
    c->lhs = parse_expr(p);
    c->op_pos = lp_pos(lp_peek(p, 0));
    c->op = parse_fop(p);
    c->rhs = parse_expr(p);
}

/* After '{': clause+ then '}'. */
static void parse_clauses(lang_parser *p, gq_clause **arr, size_t *n)
{
    size_t cap = 0;
    if (lp_is(p, TK_RBRACE)) lp_fail(p, lp_peek(p, 0), "a match block needs at least one clause");
    while (!lp_is(p, TK_RBRACE)) {
        if (lp_is(p, TK_EOF)) lp_fail(p, lp_peek(p, 0), "expected '}' to close the block");
        gq_clause *c = lp_push(p, (void **)arr, n, &cap, sizeof *c);
        parse_clause(p, c);
        if (lp_is(p, TK_COMMA)) lp_next(p);
    }
    lp_next(p);
}

static void parse_read(lang_parser *p, gq_query *q)
{
    lp_expect_word(p, "match");
    lp_expect(p, TK_LBRACE, "'{' after match");
    parse_clauses(p, &q->clauses, &q->n_clauses);
    lp_expect_word(p, "return");
    lp_expect(p, TK_LBRACE, "'{' after return");
    size_t cap = 0;
    if (lp_is(p, TK_RBRACE)) lp_fail(p, lp_peek(p, 0), "return needs at least one expression");
    while (!lp_is(p, TK_RBRACE)) {
        gq_proj *pr = lp_push(p, (void **)&q->projs, &q->n_projs, &cap, sizeof *pr);
        pr->pos = lp_pos(lp_peek(p, 0));
        pr->expr = parse_expr(p);
        if (lp_is_word(p, 0, "as")) {
            lp_next(p);
            pr->alias = lp_text(p, lp_expect(p, TK_IDENT, "an alias name"));
        }
        if (lp_is(p, TK_COMMA)) lp_next(p);
        if (lp_is(p, TK_EOF)) lp_fail(p, lp_peek(p, 0), "expected '}' to close return");
    }
    lp_next(p);
    if (lp_is_word(p, 0, "order")) {
        lp_next(p);
        lp_expect(p, TK_LBRACE, "'{' after order");
        cap = 0;
        if (lp_is(p, TK_RBRACE)) lp_fail(p, lp_peek(p, 0), "order needs at least one key");
        while (!lp_is(p, TK_RBRACE)) {
            gq_ord *o = lp_push(p, (void **)&q->ords, &q->n_ords, &cap, sizeof *o);
            o->pos = lp_pos(lp_peek(p, 0));
            o->expr = parse_expr(p);
            if (lp_is_word(p, 0, "desc")) {
                o->desc = 1;
                lp_next(p);
            } else if (lp_is_word(p, 0, "asc")) {
                lp_next(p);
            }
            if (lp_is(p, TK_COMMA)) lp_next(p);
            if (lp_is(p, TK_EOF)) lp_fail(p, lp_peek(p, 0), "expected '}' to close order");
        }
        lp_next(p);
    }
    if (lp_is_word(p, 0, "limit")) {
        const lang_tok *l = lp_next(p);
        q->has_limit = 1;
        q->limit_pos = lp_pos(l);
        if (lp_is(p, TK_VAR))
            lp_fail(p, lp_peek(p, 0), "limit takes an integer literal, not a parameter");
        q->limit = lp_int_value(p, lp_expect(p, TK_INT, "an integer after limit"));
    }
}

static void parse_asgs(lang_parser *p, gq_mut *m)
{
    lp_expect(p, TK_LBRACE, "'{'");
    size_t cap = 0;
    if (lp_is(p, TK_RBRACE)) lp_fail(p, lp_peek(p, 0), "a mutation needs at least one assignment");
    while (!lp_is(p, TK_RBRACE)) {
        const lang_tok *n = lp_peek(p, 0);
        if (n->kind != TK_IDENT && n->kind != TK_TYPENAME)
            lp_fail(p, n, "expected a property name, found %s", lp_tok_desc(p, n));
        lp_next(p);
        gq_asg *a = lp_push(p, (void **)&m->asgs, &m->n_asgs, &cap, sizeof *a);
        a->name = lp_text(p, n);
        a->pos = lp_pos(n);
        lp_expect(p, TK_COLON, "':' after the property name");
        a->value = parse_mval(p);
        if (lp_is(p, TK_COMMA)) lp_next(p);
    }
    lp_next(p);
}

static void parse_where(lang_parser *p, gq_mut *m)
{
    lp_expect_word(p, "where");
    const lang_tok *w = lp_peek(p, 0);
    if (w->kind != TK_IDENT && w->kind != TK_TYPENAME)
        lp_fail(p, w, "expected a property name after where, found %s", lp_tok_desc(p, w));
    lp_next(p);
    m->where_prop = lp_text(p, w);
    m->where_pos = lp_pos(w);
    m->where_op = parse_cop(p);
    m->where_value = parse_mval(p);
}

static void parse_mutations(lang_parser *p, gq_query *q)
{
    size_t cap = 0;
    int has_write = 0, has_delete = 0;
    while (!lp_is(p, TK_RBRACE)) {
        const lang_tok *kw = lp_peek(p, 0);
        gq_mut *m = lp_push(p, (void **)&q->muts, &q->n_muts, &cap, sizeof *m);
        m->pos = lp_pos(kw);
        if (lp_is_word(p, 0, "insert"))
            m->kind = GQ_M_INSERT;
        else if (lp_is_word(p, 0, "update"))
            m->kind = GQ_M_UPDATE;
        else if (lp_is_word(p, 0, "delete"))
            m->kind = GQ_M_DELETE;
        else
            lp_fail(p, kw, "expected insert, update, delete or '}', found %s", lp_tok_desc(p, kw));
        if (m->kind == GQ_M_DELETE ? has_write : has_delete)
            lp_fail(p, kw, "a query either inserts/updates or deletes; it cannot mix the two");
        if (m->kind == GQ_M_DELETE)
            has_delete = 1;
        else
            has_write = 1;
        lp_next(p);
        const lang_tok *tn = lp_peek(p, 0);
        if (tn->kind == TK_IDENT) lp_fail(p, tn, "a type name starts with an uppercase letter");
        lp_expect(p, TK_TYPENAME, "a type name");
        m->type_name = lp_text(p, tn);
        m->type_pos = lp_pos(tn);
        if (m->kind == GQ_M_INSERT) {
            parse_asgs(p, m);
        } else if (m->kind == GQ_M_UPDATE) {
            lp_expect_word(p, "set");
            parse_asgs(p, m);
            parse_where(p, m);
        } else {
            parse_where(p, m);
        }
    }
}

static void parse_ptype(lang_parser *p, lang_type *ty)
{
    const lang_tok *t = lp_peek(p, 0);
    memset(ty, 0, sizeof *ty);
    if (t->kind == TK_LBRACK) {
        lp_next(p);
        const lang_tok *s = lp_peek(p, 0);
        int sc = s->kind == TK_TYPENAME ? lang_scalar_from_name(s->text, s->len) : 0;
        if (!sc) lp_fail(p, s, "expected a scalar type inside '[ ]', found %s", lp_tok_desc(p, s));
        lp_next(p);
        lp_expect(p, TK_RBRACK, NULL);
        ty->kind = LANG_TY_LIST;
        ty->scalar = sc;
    } else if (lp_is_word(p, 0, "Vector")) {
        lp_next(p);
        lp_expect(p, TK_LPAREN, NULL);
        const lang_tok *d = lp_expect(p, TK_INT, "the vector dimension");
        uint64_t v = lp_int_value(p, d);
        if (v < 1 || v > LANG_MAX_VECTOR_DIM)
            lp_fail(p, d, "vector dimension must be 1..%u", LANG_MAX_VECTOR_DIM);
        lp_expect(p, TK_RPAREN, NULL);
        ty->kind = LANG_TY_VECTOR;
        ty->dim = (uint32_t)v;
    } else {
        if (lp_is_word(p, 0, "enum"))
            lp_fail(p, t, "enum is not a parameter type; pass the value as a String");
        int sc = t->kind == TK_TYPENAME ? lang_scalar_from_name(t->text, t->len) : 0;
        if (!sc) lp_fail(p, t, "unknown parameter type %s", lp_tok_desc(p, t));
        lp_next(p);
        ty->kind = LANG_TY_SCALAR;
        ty->scalar = sc;
    }
    if (lp_is(p, TK_QUESTION)) {
        lp_next(p);
        ty->nullable = 1;
    }
}

static void parse_query(lang_parser *p, gq_query *q)
{
    const lang_tok *kw = lp_peek(p, 0);
    if (!lp_is_word(p, 0, "query"))
        lp_fail(p, kw, "expected 'query', found %s", lp_tok_desc(p, kw));
    lp_next(p);
    const lang_tok *n = lp_peek(p, 0);
    if (n->kind == TK_TYPENAME) lp_fail(p, n, "a query name starts with a lowercase letter or '_'");
    lp_expect(p, TK_IDENT, "a query name");
    q->name = lp_text(p, n);
    q->pos = lp_pos(n);
    lp_expect(p, TK_LPAREN, "'(' after the query name");
    size_t cap = 0;
    if (!lp_is(p, TK_RPAREN)) {
        for (;;) {
            const lang_tok *v = lp_expect(p, TK_VAR, "a parameter ($name: Type)");
            gq_param *pa = lp_push(p, (void **)&q->params, &q->n_params, &cap, sizeof *pa);
            pa->name = lp_text(p, v);
            pa->pos = lp_pos(v);
            lp_expect(p, TK_COLON, "':' and the parameter type");
            parse_ptype(p, &pa->type);
            if (!lp_is(p, TK_COMMA)) break;
            lp_next(p);
        }
    }
    lp_expect(p, TK_RPAREN, "',' or ')'");
    cap = 0;
    while (lp_is(p, TK_AT)) {
        const lang_tok *at = lp_peek(p, 0);
        if (!lp_is_word(p, 1, "description") && !lp_is_word(p, 1, "instruction"))
            lp_fail(p, at, "a query takes only @description(\"...\") and @instruction(\"...\")");
        lang_ann *a = lp_push(p, (void **)&q->anns, &q->n_anns, &cap, sizeof *a);
        lp_annotation(p, a);
        if (a->n_args != 1 || a->args[0].value.kind != LANG_V_STRING || a->args[0].is_ident ||
            a->args[0].key)
            lp_fail(p, at, "@%s takes one string", a->name);
    }
    lp_expect(p, TK_LBRACE, "'{' opening the query body");
    if (lp_is_word(p, 0, "match")) {
        parse_read(p, q);
        lp_expect(p, TK_RBRACE, "'}' closing the query");
    } else if (lp_is_word(p, 0, "insert") || lp_is_word(p, 0, "update") ||
               lp_is_word(p, 0, "delete")) {
        q->is_mutation = 1;
        parse_mutations(p, q);
        lp_next(p);
    } else {
        lp_fail(p, lp_peek(p, 0), "expected match, insert, update or delete, found %s",
                lp_tok_desc(p, lp_peek(p, 0)));
    }
}

int gq_parse(gq_file *out, const char *src, size_t len, const char *file, core_arena *arena,
             lang_diags *diags)
{
    memset(out, 0, sizeof *out);
    out->file = file;
    lang_parser P;
    memset(&P, 0, sizeof P);
    P.file = file;
    P.code = "Q000";
    P.arena = arena;
    P.diags = diags;
    size_t first_diag = diags->n;
    int rc = lang_lex(&P.toks, &P.n, src, len, file, "Q000", arena, diags);
    if (rc) return rc;
    if (!P.n) return lang_diags_failure(diags, first_diag); /* lang_lex always ends with EOF */
    volatile size_t cap = 0;
    if (setjmp(P.fail)) return lang_diags_failure(diags, first_diag);
    while (!lp_is(&P, TK_EOF)) {
        size_t c = cap;
        gq_query *q =
            lp_push_n(&P, (void **)&out->queries, &out->n_queries, &c, sizeof *q, LANG_MAX_DECLS);
        cap = c;
        parse_query(&P, q);
    }
    return 0;
}

const char *gq_op_name(int op)
{
    switch (op) {
    case GQ_OP_EQ:
        return "=";
    case GQ_OP_NE:
        return "!=";
    case GQ_OP_LT:
        return "<";
    case GQ_OP_GT:
        return ">";
    case GQ_OP_LE:
        return "<=";
    case GQ_OP_GE:
        return ">=";
    case GQ_OP_CONTAINS:
        return "contains";
    case GQ_OP_STARTS_WITH:
        return "starts_with";
    default:
        return "?";
    }
}
