/* The .pg schema and .gq query languages: shared types (positions, diagnostics, tokens,
 * values, language types, ASTs) and the entry points of the layer. Everything a parse or a
 * check produces lives in one core_arena owned by the caller's result object.
 * The catalog is in catalog.h, the executable IR in ir.h.
 * Errors: every fallible function of the layer returns 0 or a negative og_code, mostly
 * OG_E_BAD_REQUEST after recording diagnostics, or OG_E_NOMEM. Lookups that return an index
 * (lang_catalog_find, ...) return -1 for "none": a sentinel, never a code to pass on. */
#ifndef OG_LANG_LANG_H
#define OG_LANG_LANG_H

#include "core/arena.h"

#include <stddef.h>
#include <stdint.h>

/* ---- Limits (bounded work on any input) ------------------------------------------------- */

#define LANG_MAX_SOURCE (4u * 1024u * 1024u) /* bytes of one source file */
#define LANG_MAX_DEPTH 32                    /* nesting of not{}, lists, calls */
#define LANG_MAX_DIAGS 200                   /* diagnostics kept per run */
#define LANG_MAX_HOPS 64                     /* largest finite hop bound */
#define LANG_MAX_VECTOR_DIM 65536
#define LANG_MAX_ITEMS 1024 /* entries of one list: props, clauses, params, args, ... */
#define LANG_MAX_DECLS 4096 /* declarations in one .pg, queries in one .gq */
#define LANG_MAX_PROPS 1024 /* properties of one type after interfaces are expanded */

/* ---- Diagnostics -------------------------------------------------------------------------- */

typedef enum lang_severity { LANG_SEV_ERROR = 0, LANG_SEV_WARNING = 1 } lang_severity;

typedef struct lang_diag {
    const char *code;    /* stable code: "S007", "Q000", "T5", "L201" (docs/languages.md) */
    int severity;        /* lang_severity */
    const char *message; /* one line, no trailing period */
    const char *file;    /* the source name given by the caller */
    int line, col;       /* 1-based; col counts bytes */
} lang_diag;

typedef struct lang_diags {
    core_arena *arena;
    lang_diag *items;
    size_t n, cap;
    size_t errors, warnings;
    size_t dropped; /* diagnostics past LANG_MAX_DIAGS */
    int oom;        /* an allocation failed while recording */
} lang_diags;

void lang_diags_init(lang_diags *d, core_arena *arena);
void lang_diag_add(lang_diags *d, int severity, const char *code, const char *file, int line,
                   int col, const char *fmt, ...) __attribute__((format(printf, 7, 8)));
/* 0 when no error was recorded; otherwise sets the thread's error from the first error
 * diagnostic (OG_E_BAD_REQUEST at its location, message "CODE: text") and returns it. */
int lang_diags_status(const lang_diags *d);
/* The same, considering only diagnostics from index `first` on (one call's own). */
int lang_diags_status_since(const lang_diags *d, size_t first);
/* The code a failing call returns once its diagnostics are recorded: OG_E_NOMEM when recording
 * ran out of memory, else OG_E_BAD_REQUEST located at the first error from index `first` on;
 * never 0 (OG_E_INTERNAL if nothing was recorded). Sets the thread's error. */
int lang_diags_failure(const lang_diags *d, size_t first);
/* Sort by file, line, column (stable), so reports read top to bottom. */
void lang_diags_sort(lang_diags *d);

/* ---- Tokens -------------------------------------------------------------------------------- */

typedef enum lang_tok_kind {
    TK_EOF = 0,
    TK_IDENT,    /* [a-z_][A-Za-z0-9_]* */
    TK_TYPENAME, /* [A-Z][A-Za-z0-9_]* */
    TK_VAR,      /* $name or $_ (text excludes the $) */
    TK_INT,
    TK_FLOAT,
    TK_STRING, /* str holds the decoded value */
    TK_LBRACE,
    TK_RBRACE,
    TK_LPAREN,
    TK_RPAREN,
    TK_LBRACK,
    TK_RBRACK,
    TK_COMMA,
    TK_COLON,
    TK_DOT,
    TK_DOTDOT,
    TK_ARROW,
    TK_QUESTION,
    TK_AT,
    TK_EQ,
    TK_NE,
    TK_LT,
    TK_GT,
    TK_LE,
    TK_GE,
    TK_MINUS,
    TK_STAR,
} lang_tok_kind;

typedef struct lang_tok {
    int kind;
    const char *text; /* into the source (for TK_VAR, after the $) */
    uint32_t len;
    uint32_t off; /* byte offset of the token's first byte in the source */
    uint32_t end; /* byte offset just past it */
    int line, col;
    const char *str; /* TK_STRING: decoded, NUL-terminated; NULL otherwise */
} lang_tok;

/* Tokenize all of src. On a lexical error, records one diagnostic with `code` and returns
 * OG_E_BAD_REQUEST (OG_E_NOMEM if memory ran out; see lang_diags_failure); the token array
 * always ends with TK_EOF unless memory ran out. */
int lang_lex(lang_tok **out, size_t *n_out, const char *src, size_t len, const char *file,
             const char *code, core_arena *arena, lang_diags *diags);
const char *lang_tok_kind_name(int kind);

/* ---- Types and values ---------------------------------------------------------------------- */

typedef enum lang_scalar {
    LANG_S_NONE = 0,
    LANG_S_STRING,
    LANG_S_BOOL,
    LANG_S_I32,
    LANG_S_I64,
    LANG_S_U32,
    LANG_S_U64,
    LANG_S_F32,
    LANG_S_F64,
    LANG_S_DATE,
    LANG_S_DATETIME,
    LANG_S_BLOB,
} lang_scalar;

typedef enum lang_type_kind {
    LANG_TY_SCALAR = 0,
    LANG_TY_LIST,   /* [scalar] */
    LANG_TY_ENUM,   /* enum(a, b) : values sorted, unique */
    LANG_TY_VECTOR, /* Vector(dim) of f32 */
} lang_type_kind;

typedef struct lang_type {
    int kind;               /* lang_type_kind */
    int scalar;             /* LANG_TY_SCALAR: the scalar; LANG_TY_LIST: the element scalar */
    int nullable;           /* trailing ? */
    uint32_t dim;           /* LANG_TY_VECTOR */
    const char **enum_vals; /* LANG_TY_ENUM, sorted ascending (byte order) */
    size_t n_enum;
} lang_type;

const char *lang_scalar_name(int scalar);
/* Parse a scalar type name; LANG_S_NONE when it is not one. */
int lang_scalar_from_name(const char *s, size_t n);
/* "String?", "[I32]", "Vector(4)", "enum(a, b)" into the arena. */
char *lang_type_str(core_arena *a, const lang_type *t);
int lang_type_equal(const lang_type *a, const lang_type *b); /* ignores nullability */
int lang_scalar_is_int(int s);
int lang_scalar_is_float(int s);
int lang_scalar_is_numeric(int s);
int lang_scalar_is_orderable(int s); /* numbers, String, Date, DateTime, Bool */

typedef enum lang_value_kind {
    LANG_V_NULL = 0,
    LANG_V_BOOL,
    LANG_V_INT,      /* u = magnitude, neg = sign (schema ranges only are negative) */
    LANG_V_FLOAT,    /* f */
    LANG_V_STRING,   /* s */
    LANG_V_DATE,     /* s = ISO text; i = days since 1970-01-01 once checked */
    LANG_V_DATETIME, /* s = ISO text; i = milliseconds since the epoch once checked */
    LANG_V_LIST,     /* items[n] */
} lang_value_kind;

typedef struct lang_value {
    int kind;
    int neg;
    int checked; /* LANG_V_DATE/DATETIME: i is valid */
    uint64_t u;
    int64_t i;
    double f;
    const char *s;
    struct lang_value *items;
    size_t n;
} lang_value;

/* Calendar helpers for date("YYYY-MM-DD") and datetime("YYYY-MM-DDTHH:MM:SS[.mmm][Z|±HH:MM]").
 * 0, or OG_E_BAD_REQUEST when the text is not one. They leave the thread's error alone: callers
 * probe with them, and those that fail report the value with their own context. */
int lang_parse_date(const char *s, int64_t *days);
int lang_parse_datetime(const char *s, int64_t *ms);

/* ---- Annotations --------------------------------------------------------------------------- */

typedef struct lang_pos {
    int line, col;
} lang_pos;

typedef struct lang_annarg {
    const char *key;  /* NULL for a positional argument; "model" in model="m" */
    lang_value value; /* a bare ident is kept as a string, with is_ident set */
    int is_ident;
    lang_pos pos;
} lang_annarg;

typedef struct lang_ann {
    const char *name; /* without the @ */
    lang_annarg *args;
    size_t n_args;
    int has_parens;
    lang_pos pos;
} lang_ann;

/* ---- .pg AST ------------------------------------------------------------------------------- */

typedef enum pg_decl_kind { PG_INTERFACE = 1, PG_NODE, PG_EDGE } pg_decl_kind;
typedef enum pg_bodyc_kind {
    PG_C_KEY = 1,
    PG_C_UNIQUE,
    PG_C_INDEX,
    PG_C_RANGE,
    PG_C_CHECK
} pg_bodyc_kind;

typedef struct pg_prop {
    const char *name;
    lang_pos pos;
    lang_type type;
    lang_pos type_pos;
    lang_ann *anns;
    size_t n_anns;
} pg_prop;

typedef enum pg_carg_kind { PG_CARG_IDENT = 1, PG_CARG_LIT, PG_CARG_RANGE } pg_carg_kind;

typedef struct pg_carg {
    int kind;
    const char *ident;
    lang_value lit;
    int has_lo, has_hi;
    lang_value lo, hi;
    lang_pos pos;
} pg_carg;

typedef struct pg_bodyc {
    int kind; /* pg_bodyc_kind */
    pg_carg *args;
    size_t n_args;
    lang_pos pos;
} pg_bodyc;

typedef struct pg_name {
    const char *name;
    lang_pos pos;
} pg_name;

typedef struct pg_decl {
    int kind;
    const char *name;
    lang_pos pos;
    pg_name from, to; /* edges */
    int has_card;
    uint64_t card_min;
    int64_t card_max; /* -1: unbounded */
    lang_pos card_pos;
    lang_ann *anns;
    size_t n_anns;
    pg_name *implements;
    size_t n_implements;
    pg_prop *props;
    size_t n_props;
    pg_bodyc *bodycs;
    size_t n_bodycs;
} pg_decl;

typedef struct pg_schema {
    const char *file;
    pg_decl *decls;
    size_t n_decls;
} pg_schema;

/* Parse a .pg source. Syntax errors are S000 (first error only). 0, or OG_E_BAD_REQUEST with
 * the diagnostic recorded, or OG_E_NOMEM (see lang_diags_failure). */
int pg_parse(pg_schema *out, const char *src, size_t len, const char *file, core_arena *arena,
             lang_diags *diags);

/* ---- .gq AST ------------------------------------------------------------------------------- */

typedef enum gq_op {
    GQ_OP_EQ = 1,
    GQ_OP_NE,
    GQ_OP_LT,
    GQ_OP_GT,
    GQ_OP_LE,
    GQ_OP_GE,
    GQ_OP_CONTAINS,
    GQ_OP_STARTS_WITH,
} gq_op;
const char *gq_op_name(int op);

typedef enum gq_expr_kind {
    GQ_E_VAR = 1, /* $x (a param or a bound variable) */
    GQ_E_PROP,    /* $x.prop */
    GQ_E_LIT,
    GQ_E_NOW,   /* now() */
    GQ_E_CALL,  /* name(args): aggregates, nearest, bm25, rrf, search, fuzzy, match_text */
    GQ_E_ALIAS, /* a bare ident: a return alias */
} gq_expr_kind;

typedef struct gq_expr {
    int kind;
    const char *var;  /* VAR, PROP */
    const char *name; /* PROP: property; CALL: function; ALIAS: alias */
    lang_value lit;
    struct gq_expr **args;
    size_t n_args;
    lang_pos pos;
} gq_expr;

typedef struct gq_pm {
    const char *prop;
    lang_pos pos;
    gq_expr *value; /* LIT, VAR or NOW */
} gq_pm;

typedef enum gq_clause_kind {
    GQ_C_BIND = 1,
    GQ_C_TRAV,
    GQ_C_FILTER,
    GQ_C_NOT,
    GQ_C_CALL
} gq_clause_kind;

typedef struct gq_clause {
    int kind;
    lang_pos pos;
    /* BIND */
    const char *var;
    const char *type_name;
    lang_pos type_pos;
    gq_pm *pms;
    size_t n_pms;
    /* TRAV: src -[edge_var: eword]-> dst */
    const char *src, *dst, *edge_var, *eword;
    lang_pos src_pos, dst_pos, edge_pos, eword_pos;
    int undirected, has_bounds;
    uint64_t min_hops;
    int64_t max_hops; /* -1 when the upper bound is missing */
    lang_pos bounds_pos;
    /* FILTER */
    gq_expr *lhs, *rhs;
    int op;
    lang_pos op_pos;
    /* NOT */
    struct gq_clause *body;
    size_t n_body;
    /* CALL (search/fuzzy/match_text as a clause) */
    gq_expr *call;
} gq_clause;

typedef struct gq_proj {
    gq_expr *expr;
    const char *alias;
    lang_pos pos;
} gq_proj;

typedef struct gq_ord {
    gq_expr *expr;
    int desc;
    lang_pos pos;
} gq_ord;

typedef enum gq_mut_kind { GQ_M_INSERT = 1, GQ_M_UPDATE, GQ_M_DELETE } gq_mut_kind;

typedef struct gq_asg {
    const char *name;
    lang_pos pos;
    gq_expr *value;
} gq_asg;

typedef struct gq_mut {
    int kind;
    lang_pos pos;
    const char *type_name;
    lang_pos type_pos;
    gq_asg *asgs;
    size_t n_asgs;
    const char *where_prop; /* UPDATE, DELETE */
    lang_pos where_pos;
    int where_op;
    gq_expr *where_value;
} gq_mut;

typedef struct gq_param {
    const char *name;
    lang_pos pos;
    lang_type type;
} gq_param;

typedef struct gq_query {
    const char *name;
    lang_pos pos;
    gq_param *params;
    size_t n_params;
    lang_ann *anns;
    size_t n_anns;
    int is_mutation;
    gq_clause *clauses;
    size_t n_clauses;
    gq_proj *projs;
    size_t n_projs;
    gq_ord *ords;
    size_t n_ords;
    int has_limit;
    uint64_t limit;
    lang_pos limit_pos;
    gq_mut *muts;
    size_t n_muts;
} gq_query;

typedef struct gq_file {
    const char *file;
    gq_query *queries;
    size_t n_queries;
} gq_file;

/* Parse a .gq source. Syntax errors are Q000 (first error only). 0, or OG_E_BAD_REQUEST with
 * the diagnostic recorded, or OG_E_NOMEM (see lang_diags_failure). */
int gq_parse(gq_file *out, const char *src, size_t len, const char *file, core_arena *arena,
             lang_diags *diags);

/* ---- small arena vector helper ------------------------------------------------------------- */

/* Append one zeroed element of `size` bytes to *arr (n elements, capacity *cap), growing in the
 * arena. Returns the new element or NULL on out-of-memory. */
void *lang_vec_push(core_arena *a, void **arr, size_t *n, size_t *cap, size_t size);

#endif
