/* The catalog: what a checked .pg schema declares. Node and edge types with stable
 * identities, their properties (interfaces expanded), constraints, edge endpoints and
 * cardinality, and every annotation (custom ones kept as metadata). Also the key-derived
 * identity rule (lang_key_id) the loader, mutations and merge use for keyed nodes. */
#ifndef OG_LANG_CATALOG_H
#define OG_LANG_CATALOG_H

#include "core/buf.h"
#include "lang/lang.h"

typedef enum lang_entity_kind { LANG_NODE = 1, LANG_EDGE = 2 } lang_entity_kind;

/* Pseudo-columns an edge constraint or a delete predicate may name. */
#define LANG_COL_SRC (-2)
#define LANG_COL_DST (-3)

typedef enum lang_index_kind {
    LANG_INDEX_BTREE = 1,
    LANG_INDEX_FTS,
    LANG_INDEX_VECTOR
} lang_index_kind;

typedef struct lang_prop {
    const char *name;
    uint64_t id; /* stable identity; survives renames once inherited (lang_catalog_inherit) */
    lang_type type;
    lang_pos pos;
    lang_ann *anns; /* every annotation as written (including custom ones) */
    size_t n_anns;
    int is_key; /* part of the type's @key */
    const char *description;
    const char *rename_from;
    const char *embed_source;   /* @embed("src"): the String property the vector comes from */
    const char *embed_model;    /* @embed(..., model="m") or NULL */
    const char *from_interface; /* the interface it came from, or NULL */
} lang_prop;

typedef enum lang_constraint_kind {
    LANG_CON_KEY = 1,
    LANG_CON_UNIQUE,
    LANG_CON_INDEX,
    LANG_CON_RANGE,
    LANG_CON_CHECK,
} lang_constraint_kind;

typedef struct lang_constraint {
    int kind;
    int *cols; /* property indexes, or LANG_COL_SRC / LANG_COL_DST on edges */
    size_t n_cols;
    int index_kind;     /* LANG_CON_INDEX: lang_index_kind */
    int has_lo, has_hi; /* LANG_CON_RANGE: inclusive bounds, already checked against the type */
    lang_value lo, hi;
    const char *pattern; /* LANG_CON_CHECK: PCRE2 pattern, compiled once during the check */
    lang_pos pos;
} lang_constraint;

typedef struct lang_typedef {
    int kind; /* lang_entity_kind */
    const char *name;
    uint64_t id;
    lang_pos pos;
    lang_prop *props;
    size_t n_props;
    lang_constraint *cons;
    size_t n_cons;
    int *key; /* indexes of the @key properties, ordered by their stable ids */
    size_t n_key;
    int from, to; /* edges: type indexes of the endpoints */
    uint64_t card_min;
    int64_t card_max; /* -1 = unbounded; default 0..* */
    lang_ann *anns;
    size_t n_anns;
    const char *description, *instruction, *rename_from;
    const char **interfaces;
    size_t n_interfaces;
} lang_typedef;

typedef struct lang_catalog {
    core_arena arena; /* owns everything below */
    const char *file;
    const char *source; /* copy of the .pg text */
    size_t source_len;
    lang_typedef *types; /* declaration order, nodes and edges mixed */
    size_t n_types;
} lang_catalog;

/* Parse and check a .pg source into a new catalog. Diagnostics go to `diags` (their text lives
 * in diags->arena). On any error returns OG_E_BAD_REQUEST (thread error = first diagnostic) and
 * sets *out = NULL. */
int lang_catalog_build(lang_catalog **out, const char *src, size_t len, const char *file,
                       lang_diags *diags);
void lang_catalog_free(lang_catalog *c);

/* Index of the type named exactly `name` of `kind` (0 = either), or -1. */
int lang_catalog_find(const lang_catalog *c, const char *name, int kind);
/* Index of the edge type whose name equals `word` ignoring ASCII case, or -1. */
int lang_catalog_find_edge_ci(const lang_catalog *c, const char *word);
/* Index of property `name` in type t, or -1. */
int lang_type_find_prop(const lang_typedef *t, const char *name);
int lang_type_has_unique(const lang_typedef *t, int prop);

/* Give `desired` the stable ids of `accepted` where a type or property is the same entity
 * (same name, or named by an unambiguous @rename_from); other ids stay as derived from names,
 * moved off any collision. */
void lang_catalog_inherit(lang_catalog *desired, const lang_catalog *accepted);
/* 1 when the @rename_from of desired type i (property k of type `desired`) names an accepted
 * type (property) that another desired one also continues: the old name is still declared, or
 * another rename names it too. Such a rename continues nothing (the plan refuses it, M108):
 * taken, it would give two types (properties) one stable id. 0 when it is a plain rename, or
 * no rename (the name itself is accepted, or the old name is not). */
int lang_rename_ambiguous_type(const lang_catalog *desired, size_t i, const lang_catalog *accepted);
int lang_rename_ambiguous_prop(const lang_typedef *desired, size_t k, const lang_typedef *accepted);

/* The catalog as JSON (types, ids as 16 hex digits, properties, constraints, annotations). */
int lang_catalog_to_json(const lang_catalog *c, core_buf *out);

/* Key-derived identity. vals[i] is the value of the type's key property t->key[i] (so already in
 * stable-id order). One key property: the value's canonical text (integers in decimal, bools as
 * true/false, Date as days, DateTime as ms, floats shortest-round-trip for their width, -0 as 0);
 * several: a JSON array of those strings. NaN/inf, nulls and type mismatches are
 * OG_E_BAD_REQUEST. *out is allocated with core_malloc. */
int lang_key_id(char **out, const lang_typedef *t, const lang_value *vals);
/* Canonical text of one value of scalar type `scalar` (the single-key form). */
int lang_value_canonical(core_buf *out, int scalar, const lang_value *v);

#endif
