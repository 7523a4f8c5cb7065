/* Lint over checked queries (warnings L201, L202) and the per-query report, and the
 * schema-diff planner: the ordered steps from an accepted to a desired schema, or the reason a
 * change is unsupported. Planning only; applying is the schema-apply writer's job. */
#ifndef OG_LANG_LINT_H
#define OG_LANG_LINT_H

#include "lang/ir.h"

/* Add lint warnings for qs to diags (schema-located ones use the catalog's file name). */
void lang_lint(const lang_query_set *qs, lang_diags *diags);
/* JSON report: {"ok", "queries":[{name, status, kind, params, columns[{name,kind}], reads,
 * writes}], "diagnostics":[...]}. qs may be NULL (schema failed). Appends to out; 0 or
 * OG_E_NOMEM. */
int lang_lint_report_json(const lang_query_set *qs, const lang_diags *diags, core_buf *out);
/* The same for people, one block per query. 0, or the buffer's error (out is then cut short). */
int lang_lint_report_text(const lang_query_set *qs, core_buf *out);

typedef struct lang_plan_step {
    const char *kind;   /* add_type, rename_type, add_property, rename_property, extend_enum,
                           add_constraint, drop_constraint, update_type_metadata,
                           update_property_metadata, drop_property, drop_type,
                           unsupported_change */
    const char *entity; /* "Person" or "Person.age" */
    const char *detail; /* human text: the new name, the added values, ... */
    const char *code;   /* unsupported_change: M101..M107 (docs/languages.md) */
    int data_loss;      /* drops */
} lang_plan_step;

typedef struct lang_plan {
    core_arena arena;
    int supported;
    lang_plan_step *steps;
    size_t n_steps;
} lang_plan;

/* Plan the change from `from` (accepted) to `to` (desired). Drops are soft unless
 * allow_data_loss. Free with lang_plan_free. */
int lang_schema_plan(lang_plan **out, const lang_catalog *from, const lang_catalog *to, int allow_data_loss);
void lang_plan_free(lang_plan *p);
/* Append the plan as JSON or as text; 0, or the buffer's error (out is then cut short). */
int lang_plan_to_json(const lang_plan *p, core_buf *out);
int lang_plan_to_text(const lang_plan *p, core_buf *out);

#endif
