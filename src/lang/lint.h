/* Lint over checked queries (warnings L201, L202) and the per-query report. */
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

#endif
