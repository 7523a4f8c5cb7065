/* Lexer shared by .pg and .gq: the whole source becomes an array of tokens with byte offsets
 * and 1-based line:column. Comments are // and block comments; '#' is refused on purpose. */
#include "lang/lang.h"

#include <string.h>

typedef struct lexer {
    const char *src;
    size_t len, i;
    int line;
    size_t line_start;
    const char *file, *code;
    core_arena *arena;
    lang_diags *diags;
} lexer;

static int col_of(const lexer *L, size_t off)
{
    return (int)(off - L->line_start) + 1;
}

static int lex_error(lexer *L, size_t off, const char *msg, const char *detail)
{
    lang_diag_add(L->diags, LANG_SEV_ERROR, L->code, L->file, L->line, col_of(L, off), "%s%s", msg,
                  detail ? detail : "");
    return -1;
}

static int is_ident_start(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static int is_ident_char(int c)
{
    return is_ident_start(c) || (c >= '0' && c <= '9');
}
static int is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static void put_utf8(char *o, size_t *k, unsigned cp)
{
    if (cp < 0x80) {
        o[(*k)++] = (char)cp;
    } else if (cp < 0x800) {
        o[(*k)++] = (char)(0xC0 | (cp >> 6));
        o[(*k)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        o[(*k)++] = (char)(0xE0 | (cp >> 12));
        o[(*k)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[(*k)++] = (char)(0x80 | (cp & 0x3F));
    }
}

/* Length of the strict UTF-8 sequence at p (first byte >= 0x80, n bytes available), 0 when it
 * is not one (overlong forms, surrogates and values past U+10FFFF included), as JSON input is
 * checked: a string stored from a query must read back as text. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    size_t len;
    unsigned v;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2, v = c & 0x1Fu;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, v = c & 0x0Fu;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, v = c & 0x07u;
    else
        return 0;
    if (n < len) return 0;
    for (size_t k = 1; k < len; k++) {
        if ((p[k] & 0xC0u) != 0x80u) return 0;
        v = (v << 6) | (p[k] & 0x3Fu);
    }
    if ((len == 3 && v < 0x800) || (len == 4 && v < 0x10000) || v > 0x10FFFF ||
        (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    return len;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* L->i is at the opening quote. */
static int lex_string(lexer *L, lang_tok *t)
{
    size_t start = L->i++;
    /* the decoded form is never longer than the source text */
    size_t cap = 0;
    for (size_t j = L->i; j < L->len && L->src[j] != '\n'; j++) {
        cap++;
        if (L->src[j] == '"' && L->src[j - 1] != '\\') break;
    }
    char *o = core_arena_alloc(L->arena, cap + 4);
    if (!o) {
        L->diags->oom = 1;
        return -1;
    }
    size_t k = 0;
    for (;;) {
        if (L->i >= L->len || L->src[L->i] == '\n')
            return lex_error(L, start, "unterminated string", NULL);
        char c = L->src[L->i];
        if (c == '"') {
            L->i++;
            break;
        }
        if (c == '\\') {
            if (L->i + 1 >= L->len) return lex_error(L, start, "unterminated string", NULL);
            char e = L->src[L->i + 1];
            L->i += 2;
            switch (e) {
            case '"':
                o[k++] = '"';
                break;
            case '\\':
                o[k++] = '\\';
                break;
            case '/':
                o[k++] = '/';
                break;
            case 'n':
                o[k++] = '\n';
                break;
            case 't':
                o[k++] = '\t';
                break;
            case 'r':
                o[k++] = '\r';
                break;
            case 'u': {
                unsigned cp = 0;
                for (int h = 0; h < 4; h++) {
                    int v = L->i < L->len ? hexval((unsigned char)L->src[L->i]) : -1;
                    if (v < 0)
                        return lex_error(L, L->i - 2 - (size_t)h, "bad \\u escape in string", NULL);
                    cp = cp * 16 + (unsigned)v;
                    L->i++;
                }
                if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF))
                    return lex_error(L, L->i - 6, "\\u escape is not a valid character", NULL);
                put_utf8(o, &k, cp);
                break;
            }
            default:
                return lex_error(L, L->i - 2, "unknown escape in string", NULL);
            }
            continue;
        }
        if ((unsigned char)c < 0x20 && c != '\t')
            return lex_error(L, L->i, "control character in string", NULL);
        if ((unsigned char)c >= 0x80) {
            size_t w = utf8_seq((const unsigned char *)L->src + L->i, L->len - L->i);
            if (!w) return lex_error(L, L->i, "string is not valid UTF-8", NULL);
            memcpy(o + k, L->src + L->i, w);
            k += w;
            L->i += w;
            continue;
        }
        o[k++] = c;
        L->i++;
    }
    o[k] = '\0';
    t->kind = TK_STRING;
    t->str = o;
    return 0;
}

int lang_lex(lang_tok **out, size_t *n_out, const char *src, size_t len, const char *file,
             const char *code, core_arena *arena, lang_diags *diags)
{
    lexer L = {src, len, 0, 1, 0, file, code, arena, diags};
    size_t first_diag = diags->n;
    lang_tok *toks = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    if (len > LANG_MAX_SOURCE) {
        lex_error(&L, 0, "source is larger than the 4 MiB limit", NULL);
        rc = -1;
        len = 0;
        L.len = 0;
    }
    /* Said plainly: the BOM is invisible in most editors, so "unexpected byte" at 1:1 puzzles. */
    if (L.len >= 3 && memcmp(src, "\xEF\xBB\xBF", 3) == 0)
        rc = lex_error(&L, 0,
                       "the source starts with a UTF-8 byte order mark (bytes EF BB BF); "
                       "save it as UTF-8 without a BOM",
                       NULL);
    while (rc == 0) {
        /* skip whitespace and comments */
        while (L.i < L.len) {
            char c = src[L.i];
            if (c == '\n') {
                L.i++;
                L.line++;
                L.line_start = L.i;
            } else if (c == ' ' || c == '\t' || c == '\r') {
                L.i++;
            } else if (c == '/' && L.i + 1 < L.len && src[L.i + 1] == '/') {
                while (L.i < L.len && src[L.i] != '\n')
                    L.i++;
            } else if (c == '/' && L.i + 1 < L.len && src[L.i + 1] == '*') {
                size_t start = L.i;
                int sl = L.line;
                size_t sls = L.line_start;
                L.i += 2;
                for (;;) {
                    if (L.i + 1 >= L.len) {
                        L.line = sl;
                        L.line_start = sls;
                        rc = lex_error(&L, start, "unterminated block comment", NULL);
                        break;
                    }
                    if (src[L.i] == '*' && src[L.i + 1] == '/') {
                        L.i += 2;
                        break;
                    }
                    if (src[L.i] == '\n') {
                        L.line++;
                        L.line_start = L.i + 1;
                    }
                    L.i++;
                }
                if (rc) break;
            } else {
                break;
            }
        }
        if (rc) break;
        lang_tok *t = lang_vec_push(arena, (void **)&toks, &n, &cap, sizeof *t);
        if (!t) {
            diags->oom = 1;
            rc = -1;
            break;
        }
        t->off = (uint32_t)L.i;
        t->line = L.line;
        t->col = col_of(&L, L.i);
        t->text = src + L.i;
        if (L.i >= L.len) {
            t->kind = TK_EOF;
            t->end = t->off;
            break;
        }
        unsigned char c = (unsigned char)src[L.i];
        unsigned char c2 = L.i + 1 < L.len ? (unsigned char)src[L.i + 1] : 0;
        if (is_ident_start(c)) {
            size_t s = L.i;
            while (L.i < L.len && is_ident_char((unsigned char)src[L.i]))
                L.i++;
            t->kind = (c >= 'A' && c <= 'Z') ? TK_TYPENAME : TK_IDENT;
            t->len = (uint32_t)(L.i - s);
        } else if (is_digit(c)) {
            size_t s = L.i;
            while (L.i < L.len && is_digit((unsigned char)src[L.i]))
                L.i++;
            t->kind = TK_INT;
            if (L.i + 1 < L.len && src[L.i] == '.' && is_digit((unsigned char)src[L.i + 1])) {
                L.i++;
                while (L.i < L.len && is_digit((unsigned char)src[L.i]))
                    L.i++;
                t->kind = TK_FLOAT;
            }
            t->len = (uint32_t)(L.i - s);
        } else if (c == '$') {
            size_t s = ++L.i;
            if (L.i >= L.len || !((src[L.i] >= 'a' && src[L.i] <= 'z') || src[L.i] == '_')) {
                rc = lex_error(&L, s - 1,
                               "'$' must be followed by a variable name starting with a lowercase "
                               "letter or '_'",
                               NULL);
                break;
            }
            while (L.i < L.len && is_ident_char((unsigned char)src[L.i]))
                L.i++;
            t->kind = TK_VAR;
            t->text = src + s;
            t->len = (uint32_t)(L.i - s);
        } else if (c == '"') {
            if (lex_string(&L, t)) {
                rc = -1;
                break;
            }
            t->len = (uint32_t)(L.i - t->off);
        } else {
            int k = -1, w = 1;
            switch (c) {
            case '{':
                k = TK_LBRACE;
                break;
            case '}':
                k = TK_RBRACE;
                break;
            case '(':
                k = TK_LPAREN;
                break;
            case ')':
                k = TK_RPAREN;
                break;
            case '[':
                k = TK_LBRACK;
                break;
            case ']':
                k = TK_RBRACK;
                break;
            case ',':
                k = TK_COMMA;
                break;
            case ':':
                k = TK_COLON;
                break;
            case '?':
                k = TK_QUESTION;
                break;
            case '@':
                k = TK_AT;
                break;
            case '*':
                k = TK_STAR;
                break;
            case '=':
                k = TK_EQ;
                break;
            case '.':
                if (c2 == '.')
                    k = TK_DOTDOT, w = 2;
                else
                    k = TK_DOT;
                break;
            case '-':
                if (c2 == '>')
                    k = TK_ARROW, w = 2;
                else
                    k = TK_MINUS;
                break;
            case '<':
                if (c2 == '=')
                    k = TK_LE, w = 2;
                else
                    k = TK_LT;
                break;
            case '>':
                if (c2 == '=')
                    k = TK_GE, w = 2;
                else
                    k = TK_GT;
                break;
            case '!':
                if (c2 == '=') k = TK_NE, w = 2;
                break;
            default:
                break;
            }
            if (k < 0) {
                if (c == '#')
                    rc = lex_error(&L, L.i, "'#' does not start a comment; use // or /* */", NULL);
                else if (c >= 0x20 && c < 0x7f) {
                    char d[8] = {'\'', (char)c, '\'', 0};
                    rc = lex_error(&L, L.i, "unexpected character ", d);
                } else {
                    rc = lex_error(&L, L.i, "unexpected byte outside a string", NULL);
                }
                break;
            }
            t->kind = k;
            t->len = (uint32_t)w;
            L.i += (size_t)w;
        }
        t->end = (uint32_t)L.i;
    }
    if (rc) {
        /* leave a well-formed array ending in EOF so callers never walk off the end */
        lang_tok *t = lang_vec_push(arena, (void **)&toks, &n, &cap, sizeof *t);
        if (t) {
            t->kind = TK_EOF;
            t->line = L.line;
            t->col = 1;
            t->text = src ? src + L.i : "";
        } else {
            diags->oom = 1;
        }
    }
    *out = toks;
    *n_out = n;
    return rc ? lang_diags_failure(diags, first_diag) : 0;
}

const char *lang_tok_kind_name(int kind)
{
    switch (kind) {
    case TK_EOF:
        return "end of input";
    case TK_IDENT:
        return "identifier";
    case TK_TYPENAME:
        return "type name";
    case TK_VAR:
        return "variable";
    case TK_INT:
        return "integer";
    case TK_FLOAT:
        return "float";
    case TK_STRING:
        return "string";
    case TK_LBRACE:
        return "'{'";
    case TK_RBRACE:
        return "'}'";
    case TK_LPAREN:
        return "'('";
    case TK_RPAREN:
        return "')'";
    case TK_LBRACK:
        return "'['";
    case TK_RBRACK:
        return "']'";
    case TK_COMMA:
        return "','";
    case TK_COLON:
        return "':'";
    case TK_DOT:
        return "'.'";
    case TK_DOTDOT:
        return "'..'";
    case TK_ARROW:
        return "'->'";
    case TK_QUESTION:
        return "'?'";
    case TK_AT:
        return "'@'";
    case TK_EQ:
        return "'='";
    case TK_NE:
        return "'!='";
    case TK_LT:
        return "'<'";
    case TK_GT:
        return "'>'";
    case TK_LE:
        return "'<='";
    case TK_GE:
        return "'>='";
    case TK_MINUS:
        return "'-'";
    case TK_STAR:
        return "'*'";
    default:
        return "token";
    }
}
