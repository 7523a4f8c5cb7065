/* The schema diff: the ordered steps that take an accepted schema to a desired one, or the
 * reason a change is unsupported. What the public og_schema_plan and `omnigraph schema plan`
 * report; computing it only, applying is the schema-apply writer's job. ("Plan" elsewhere
 * means a query plan or a compaction plan.) */
#ifndef OG_LANG_SCHEMA_DIFF_H
#define OG_LANG_SCHEMA_DIFF_H

#include "lang/catalog.h"

typedef struct lang_schema_diff_step {
    const char *kind;   /* add_type, rename_type, add_property, rename_property, extend_enum,
                           add_constraint, drop_constraint, update_type_metadata,
                           update_property_metadata, drop_property, drop_type,
                           unsupported_change */
    const char *entity; /* "Person" or "Person.age" */
    const char *detail; /* human text: the new name, the added values, ... */
    const char *code;   /* unsupported_change: M101..M108 (docs/languages.md) */
    int data_loss;      /* drops */
} lang_schema_diff_step;

typedef struct lang_schema_diff {
    core_arena arena;
    int supported;
    lang_schema_diff_step *steps;
    size_t n_steps;
} lang_schema_diff;

/* Diff `from` (accepted) against `to` (desired). Drops are soft unless allow_data_loss.
 * 0 or OG_E_NOMEM. Free with lang_schema_diff_free. */
int lang_schema_diff_build(lang_schema_diff **out, const lang_catalog *from, const lang_catalog *to,
                           int allow_data_loss);
void lang_schema_diff_free(lang_schema_diff *d);
/* Append the diff as JSON or as text; 0, or the buffer's error (out is then cut short). */
int lang_schema_diff_to_json(const lang_schema_diff *d, core_buf *out);
int lang_schema_diff_to_text(const lang_schema_diff *d, core_buf *out);

#endif
