/* Internal to the two parsers: the token cursor, error exit (longjmp back to the parse entry,
 * everything lives in the arena so nothing leaks), and literal/annotation parsing shared by
 * .pg and .gq. */
#ifndef OG_LANG_PARSER_H
#define OG_LANG_PARSER_H

#include "lang/lang.h"

#include <setjmp.h>

typedef struct lang_parser {
    lang_tok *toks;
    size_t n, i;
    const char *file, *code;
    core_arena *arena;
    lang_diags *diags;
    int depth;
    jmp_buf fail;
} lang_parser;

_Noreturn void lp_fail(lang_parser *p, const lang_tok *t, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
_Noreturn void lp_oom(lang_parser *p);
const lang_tok *lp_peek(lang_parser *p, size_t k);
const lang_tok *lp_next(lang_parser *p);
int lp_is(lang_parser *p, int kind);
int lp_is_word(lang_parser *p, size_t k, const char *word); /* IDENT/TYPENAME with that text */
const lang_tok *lp_expect(lang_parser *p, int kind, const char *what);
void lp_expect_word(lang_parser *p, const char *word);
char *lp_text(lang_parser *p, const lang_tok *t); /* arena copy of the token text */
lang_pos lp_pos(const lang_tok *t);
/* Append to a parsed list; more than `limit` entries is a located error (bounded work). */
void *lp_push_n(lang_parser *p, void **arr, size_t *n, size_t *cap, size_t size, size_t limit);
#define lp_push(p, arr, n, cap, size) lp_push_n(p, arr, n, cap, size, LANG_MAX_ITEMS)
void lp_enter(lang_parser *p, const lang_tok *t);
void lp_leave(lang_parser *p);
/* Integer and float tokens (range-checked) and literals: string, float, int, bool, and (when
 * allow_calls) date("..."), datetime("..."), [lists]. */
uint64_t lp_int_value(lang_parser *p, const lang_tok *t);
void lp_literal(lang_parser *p, lang_value *out, int allow_calls);
int lp_at_literal(lang_parser *p);
/* @name or @name(args) where the caller already knows the next token is '@'. */
void lp_annotation(lang_parser *p, lang_ann *out);
/* "unexpected X" message text for the current token. */
const char *lp_tok_desc(lang_parser *p, const lang_tok *t);

#endif
