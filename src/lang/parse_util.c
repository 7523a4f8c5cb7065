/* Shared parser machinery for .pg and .gq (see parser.h). */
#include "lang/parser.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Noreturn void lp_fail(lang_parser *p, const lang_tok *t, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lang_diag_add(p->diags, LANG_SEV_ERROR, p->code, p->file, t->line, t->col, "%s", msg);
    longjmp(p->fail, 1);
}

_Noreturn void lp_oom(lang_parser *p)
{
    p->diags->oom = 1;
    longjmp(p->fail, 1);
}

const lang_tok *lp_peek(lang_parser *p, size_t k)
{
    size_t j = p->i + k;
    if (j >= p->n) j = p->n - 1; /* the last token is always EOF */
    return &p->toks[j];
}

const lang_tok *lp_next(lang_parser *p)
{
    const lang_tok *t = lp_peek(p, 0);
    if (p->i < p->n - 1) p->i++;
    return t;
}

int lp_is(lang_parser *p, int kind)
{
    return lp_peek(p, 0)->kind == kind;
}

int lp_is_word(lang_parser *p, size_t k, const char *word)
{
    const lang_tok *t = lp_peek(p, k);
    return (t->kind == TK_IDENT || t->kind == TK_TYPENAME) && t->len == strlen(word) &&
           memcmp(t->text, word, t->len) == 0;
}

const char *lp_tok_desc(lang_parser *p, const lang_tok *t)
{
    switch (t->kind) {
    case TK_EOF:
        return "end of input";
    case TK_IDENT:
    case TK_TYPENAME:
    case TK_INT:
    case TK_FLOAT: {
        char *s = core_arena_sprintf(p->arena, "'%.*s'", (int)(t->len > 40 ? 40 : t->len), t->text);
        if (!s) lp_oom(p);
        return s;
    }
    case TK_VAR: {
        char *s =
            core_arena_sprintf(p->arena, "'$%.*s'", (int)(t->len > 40 ? 40 : t->len), t->text);
        if (!s) lp_oom(p);
        return s;
    }
    default:
        return lang_tok_kind_name(t->kind);
    }
}

const lang_tok *lp_expect(lang_parser *p, int kind, const char *what)
{
    const lang_tok *t = lp_peek(p, 0);
    if (t->kind != kind)
        lp_fail(p, t, "expected %s, found %s", what ? what : lang_tok_kind_name(kind),
                lp_tok_desc(p, t));
    return lp_next(p);
}

void lp_expect_word(lang_parser *p, const char *word)
{
    if (!lp_is_word(p, 0, word))
        lp_fail(p, lp_peek(p, 0), "expected '%s', found %s", word, lp_tok_desc(p, lp_peek(p, 0)));
    lp_next(p);
}

char *lp_text(lang_parser *p, const lang_tok *t)
{
    char *s = core_arena_strndup(p->arena, t->text, t->len);
    if (!s) lp_oom(p);
    return s;
}

lang_pos lp_pos(const lang_tok *t)
{
    lang_pos q = {t->line, t->col};
    return q;
}

void *lp_push_n(lang_parser *p, void **arr, size_t *n, size_t *cap, size_t size, size_t limit)
{
    if (*n >= limit) lp_fail(p, lp_peek(p, 0), "more than %zu entries in one list", limit);
    void *e = lang_vec_push(p->arena, arr, n, cap, size);
    if (!e) lp_oom(p);
    return e;
}

void lp_enter(lang_parser *p, const lang_tok *t)
{
    if (++p->depth > LANG_MAX_DEPTH) lp_fail(p, t, "nesting deeper than %d levels", LANG_MAX_DEPTH);
}

void lp_leave(lang_parser *p)
{
    p->depth--;
}

uint64_t lp_int_value(lang_parser *p, const lang_tok *t)
{
    uint64_t v = 0;
    for (uint32_t k = 0; k < t->len; k++) {
        unsigned d = (unsigned)(t->text[k] - '0');
        if (v > (UINT64_MAX - d) / 10) lp_fail(p, t, "integer literal is too large");
        v = v * 10 + d;
    }
    return v;
}

static double float_value(lang_parser *p, const lang_tok *t)
{
    char buf[128];
    if (t->len >= sizeof buf) lp_fail(p, t, "float literal is too long");
    memcpy(buf, t->text, t->len);
    buf[t->len] = '\0';
    errno = 0;
    double d = strtod(buf, NULL);
    if (errno == ERANGE && (d > 1.0 || d < -1.0)) lp_fail(p, t, "float literal is out of range");
    return d;
}

int lp_at_literal(lang_parser *p)
{
    const lang_tok *t = lp_peek(p, 0);
    if (t->kind == TK_STRING || t->kind == TK_INT || t->kind == TK_FLOAT || t->kind == TK_LBRACK)
        return 1;
    if (lp_is_word(p, 0, "true") || lp_is_word(p, 0, "false")) return 1;
    if ((lp_is_word(p, 0, "date") || lp_is_word(p, 0, "datetime")) &&
        lp_peek(p, 1)->kind == TK_LPAREN)
        return 1;
    return 0;
}

void lp_literal(lang_parser *p, lang_value *out, int allow_calls)
{
    const lang_tok *t = lp_peek(p, 0);
    memset(out, 0, sizeof *out);
    switch (t->kind) {
    case TK_STRING:
        out->kind = LANG_V_STRING;
        out->s = t->str;
        lp_next(p);
        return;
    case TK_INT:
        out->kind = LANG_V_INT;
        out->u = lp_int_value(p, t);
        lp_next(p);
        return;
    case TK_FLOAT:
        out->kind = LANG_V_FLOAT;
        out->f = float_value(p, t);
        lp_next(p);
        return;
    case TK_LBRACK: {
        if (!allow_calls) break;
        lp_enter(p, t);
        lp_next(p);
        size_t cap = 0;
        out->kind = LANG_V_LIST;
        if (!lp_is(p, TK_RBRACK)) {
            for (;;) {
                if (!lp_at_literal(p))
                    lp_fail(p, lp_peek(p, 0), "expected a literal in the list, found %s",
                            lp_tok_desc(p, lp_peek(p, 0)));
                lang_value *v =
                    lp_push_n(p, (void **)&out->items, &out->n, &cap, sizeof *v, SIZE_MAX);
                lp_literal(p, v, allow_calls);
                if (!lp_is(p, TK_COMMA)) break;
                lp_next(p);
            }
        }
        lp_expect(p, TK_RBRACK, "',' or ']'");
        lp_leave(p);
        return;
    }
    case TK_IDENT:
        if (lp_is_word(p, 0, "true") || lp_is_word(p, 0, "false")) {
            out->kind = LANG_V_BOOL;
            out->u = lp_is_word(p, 0, "true");
            lp_next(p);
            return;
        }
        if (allow_calls && (lp_is_word(p, 0, "date") || lp_is_word(p, 0, "datetime")) &&
            lp_peek(p, 1)->kind == TK_LPAREN) {
            out->kind = lp_is_word(p, 0, "date") ? LANG_V_DATE : LANG_V_DATETIME;
            lp_next(p);
            lp_next(p);
            const lang_tok *s = lp_expect(p, TK_STRING, "a string with the date");
            out->s = s->str;
            lp_expect(p, TK_RPAREN, NULL);
            return;
        }
        break;
    default:
        break;
    }
    lp_fail(p, t, "expected a literal, found %s", lp_tok_desc(p, t));
}

void lp_annotation(lang_parser *p, lang_ann *out)
{
    const lang_tok *at = lp_expect(p, TK_AT, NULL);
    memset(out, 0, sizeof *out);
    out->pos = lp_pos(at);
    const lang_tok *nt = lp_peek(p, 0);
    if ((nt->kind != TK_IDENT && nt->kind != TK_TYPENAME) || nt->off != at->end)
        lp_fail(p, nt, "expected an annotation name right after '@'");
    out->name = lp_text(p, lp_next(p));
    if (!lp_is(p, TK_LPAREN)) return;
    out->has_parens = 1;
    lp_next(p);
    size_t cap = 0;
    while (!lp_is(p, TK_RPAREN)) {
        lang_annarg *a = lp_push(p, (void **)&out->args, &out->n_args, &cap, sizeof *a);
        const lang_tok *t = lp_peek(p, 0);
        a->pos = lp_pos(t);
        if ((t->kind == TK_IDENT || t->kind == TK_TYPENAME) && lp_peek(p, 1)->kind == TK_EQ) {
            a->key = lp_text(p, t);
            lp_next(p);
            lp_next(p);
            lp_literal(p, &a->value, 0);
        } else if ((t->kind == TK_IDENT || t->kind == TK_TYPENAME) && !lp_at_literal(p)) {
            a->is_ident = 1;
            a->value.kind = LANG_V_STRING;
            a->value.s = lp_text(p, lp_next(p));
        } else {
            lp_literal(p, &a->value, 0);
        }
        if (!lp_is(p, TK_COMMA)) break;
        lp_next(p);
    }
    lp_expect(p, TK_RPAREN, "',' or ')'");
}
