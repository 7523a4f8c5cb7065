/* Names across schema versions: what became of a type or property name the catalog a query is
 * checked against does not have, given the other schemas the graph kept. A type or property is
 * the same entity across versions when its stable id is (ids survive @rename_from renames), so
 * a name one of them had is either the same entity under another name now, or gone. The type
 * checker words its unknown-name errors with it (T1, T2, T4, T10, T11). Pure: the caller
 * supplies the catalogs. */
#ifndef OG_LANG_HISTORY_H
#define OG_LANG_HISTORY_H

#include "core/arena.h"
#include "lang/catalog.h"

#include <stdbool.h>

/* One other schema version of the graph. */
typedef struct lang_schema_version {
    const lang_catalog *cat;
    const char *identity; /* its schema identity (hex); messages quote its first 12 digits */
    bool newer;           /* later than the catalog checked against (else earlier) */
} lang_schema_version;

typedef struct lang_history {
    const lang_schema_version *versions;
    size_t n;
} lang_history;

/* What became of type `name` (kind LANG_NODE, LANG_EDGE or 0: either; an edge name compares
 * ignoring ASCII case, as traversals spell edges) that `cur` lacks, as one phrase in the arena:
 *   earlier versions: "node type `Person` was renamed to `Human`",
 *                     "node type `Pet` was dropped (schema 0123456789ab had it)";
 *   later versions:   "node type `Human` is `Person` in this schema",
 *                     "node type `Pet` was added later (schema 0123456789ab has it)".
 * A rename is preferred over a drop when versions disagree. NULL when no version had the name
 * (or memory ran out: a hint is only a hint). */
const char *lang_history_type(core_arena *a, const lang_history *h, const lang_catalog *cur,
                              const char *name, int kind);
/* The same for property `prop` of type `t` of `cur` (matched in the other versions by the
 * type's stable id, whatever the type was called there): "property `Human.nick` was renamed
 * to `nickname`", "property `Human.nick` was dropped (schema 0123456789ab had it)", "property
 * `Person.nickname` is `nick` in this schema", "property `Person.email` was added later
 * (schema 0123456789ab has it)". */
const char *lang_history_prop(core_arena *a, const lang_history *h, const lang_catalog *cur,
                              const lang_typedef *t, const char *prop);

#endif
