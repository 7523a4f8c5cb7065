/* The recovery audit log: an append-only Lance dataset (_recoveries.lance) with exactly one row
 * per resolved recovery intent, plus one "retired" row when a stale copy of an intent it
 * records was later found and deleted. Recording is idempotent by operation id (and kind, for
 * retirements), so a crash between the audit append and the sidecar delete never yields a
 * second row. */
#include "write/internal.h"

#include "core/alloc.h"
#include "core/error.h"

#include <string.h>

static const char *const AUDIT_COLS[] = {
    "operation_id",    "recovery_kind",           "writer_kind", "recovery_for_actor",
    "graph_commit_id", "per_table_outcomes_json", "created_at"};
#define AUDIT_NCOLS 7

static int audit_schema(arrow_schema *out)
{
    arrow_schema_init(out);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < AUDIT_NCOLS; i++) {
        arrow_type t;
        memset(&t, 0, sizeof t);
        if (i == 6)
            rc = arrow_type_timestamp(&t, ARROW_UNIT_MICRO, NULL);
        else
            t.id = ARROW_UTF8;
        arrow_field f;
        if (rc == 0) rc = arrow_field_init(&f, AUDIT_COLS[i], &t, i == 3 || i == 4);
        arrow_type_clear(&t);
        if (rc == 0) {
            rc = arrow_schema_add(out, &f);
            arrow_field_clear(&f);
        }
    }
    if (rc != 0) arrow_schema_clear(out);
    return rc;
}

static int audit_open(store *s, lance_dataset **out, bool create)
{
    int rc = lance_dataset_open(out, s, GRAPH_AUDIT_DIR, 0, LANCE_ACCESS_WRITE);
    if (rc != OG_E_NOT_FOUND || !create) return rc;
    arrow_schema sch;
    if ((rc = audit_schema(&sch)) != 0) return rc;
    lance_create_options co = LANCE_CREATE_OPTIONS_INIT;
    rc = lance_dataset_create(out, s, GRAPH_AUDIT_DIR, &sch, &co);
    arrow_schema_clear(&sch);
    if (rc == OG_E_EXISTS) /* created concurrently */
        rc = lance_dataset_open(out, s, GRAPH_AUDIT_DIR, 0, LANCE_ACCESS_WRITE);
    return rc;
}

/* The rows of operation_id (only those of recovery kind `kind` when not NULL): columns
 * recovery_kind and graph_commit_id. */
static int audit_rows_of(const lance_dataset *ds, const char *operation_id, const char *kind,
                         arrow_batch **out)
{
    lance_term terms[2];
    memset(terms, 0, sizeof terms);
    const char *vals[2] = {operation_id, kind};
    const char *names[2] = {"operation_id", "recovery_kind"};
    for (size_t i = 0; i < 2; i++) {
        terms[i].column = names[i];
        terms[i].op = ARROW_CMP_EQ;
        terms[i].value.kind = ARROW_BINARY;
        terms[i].value.bytes = vals[i];
        terms[i].value.n_bytes = vals[i] ? strlen(vals[i]) : 0;
    }
    lance_filter f = {terms, kind ? 2 : 1};
    const char *cols[] = {"recovery_kind", "graph_commit_id"};
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.columns = cols;
    so.n_columns = 2;
    so.filter = &f;
    return lance_dataset_scan_all(out, ds, &so);
}

static int audit_has(const lance_dataset *ds, const char *operation_id, const char *kind, bool *has)
{
    arrow_batch *b = NULL;
    int rc = audit_rows_of(ds, operation_id, kind, &b);
    if (rc == 0) *has = b->num_rows > 0;
    arrow_batch_free(b);
    return rc;
}

static void copy_cell(char *dst, size_t cap, const arrow_array *a, int64_t r)
{
    size_t len = 0;
    const uint8_t *p = arrow_array_get_bytes(a, r, &len);
    if (!p) len = 0;
    if (len >= cap) len = cap - 1;
    if (len) memcpy(dst, p, len);
    dst[len] = 0;
}

int write_audit_find(store *s, const char *operation_id, bool *found, char kind[24],
                     char commit_id[GRAPH_ID_LEN + 1])
{
    *found = false;
    lance_dataset *ds = NULL;
    int rc = lance_dataset_open(&ds, s, GRAPH_AUDIT_DIR, 0, LANCE_ACCESS_READ);
    if (rc == OG_E_NOT_FOUND) { /* no recovery has happened yet */
        og_error_clear();
        return 0;
    }
    if (rc != 0) return rc;
    arrow_batch *b = NULL;
    rc = audit_rows_of(ds, operation_id, NULL, &b);
    lance_dataset_free(ds);
    for (int64_t r = 0; rc == 0 && r < b->num_rows && !*found; r++) {
        char k[24];
        copy_cell(k, sizeof k, b->columns[0], r);
        if (strcmp(k, write_recovery_kind_name(WRITE_RECOVERY_RETIRED)) == 0) continue;
        *found = true;
        if (kind) memcpy(kind, k, sizeof k);
        if (commit_id) copy_cell(commit_id, GRAPH_ID_LEN + 1, b->columns[1], r);
    }
    arrow_batch_free(b);
    return rc;
}

static int str_col(arrow_array **out, const char *v)
{
    arrow_type t;
    memset(&t, 0, sizeof t);
    t.id = ARROW_UTF8;
    arrow_builder *b = NULL;
    int rc = arrow_builder_new(&b, &t);
    if (rc == 0) rc = v ? arrow_builder_append_str(b, v) : arrow_builder_append_null(b);
    if (rc == 0) rc = arrow_builder_finish(b, out);
    arrow_builder_free(b);
    return rc;
}

int write_audit_record(store *s, const write_intent *in, int recovery_kind, const char *commit_id,
                       const char *outcomes_json)
{
    lance_dataset *ds = NULL;
    int rc = audit_open(s, &ds, true);
    if (rc != 0) return rc;
    /* A retirement is recorded once beside the resolution it follows; anything else once per
     * operation. */
    bool has = false;
    rc = audit_has(ds, in->operation_id,
                   recovery_kind == WRITE_RECOVERY_RETIRED ? write_recovery_kind_name(recovery_kind)
                                                           : NULL,
                   &has);
    if (rc != 0 || has) {
        lance_dataset_free(ds);
        return rc;
    }
    arrow_array *cols[AUDIT_NCOLS] = {0};
    /* A sidecar that could not be read (torn) tells no writer kind. */
    const char *writer = write_kind_name(in->kind) ? write_kind_name(in->kind) : "unknown";
    const char *vals[6] = {
        in->operation_id, write_recovery_kind_name(recovery_kind),      writer,
        in->actor,        commit_id && commit_id[0] ? commit_id : NULL, outcomes_json};
    for (size_t i = 0; rc == 0 && i < 6; i++)
        rc = str_col(&cols[i], vals[i]);
    if (rc == 0) {
        arrow_builder *b = NULL;
        rc = arrow_builder_new(&b, &ds->schema.fields[6].type);
        if (rc == 0) rc = arrow_builder_append_int(b, write_now_us());
        if (rc == 0) rc = arrow_builder_finish(b, &cols[6]);
        arrow_builder_free(b);
    }
    arrow_batch *batch = NULL;
    if (rc == 0) rc = arrow_batch_new(&batch, &ds->schema, cols, AUDIT_NCOLS);
    for (size_t i = 0; i < AUDIT_NCOLS; i++)
        arrow_array_free(cols[i]);
    lance_staged *st = NULL;
    if (rc == 0) rc = lance_stage_append(&st, ds, &batch, 1, NULL);
    if (rc == 0) {
        /* Appends commute: rebase over a concurrent audit append instead of failing. */
        lance_commit_options co = LANCE_COMMIT_OPTIONS_INIT;
        co.mode = LANCE_COMMIT_REBASE;
        lance_commit_result cr;
        rc = lance_staged_commit_ex(st, &co, NULL, &cr);
    }
    lance_staged_free(st);
    arrow_batch_free(batch);
    lance_dataset_free(ds);
    return rc;
}

int write_audit_list(store *s, write_audit_row **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    lance_dataset *ds = NULL;
    int rc = audit_open(s, &ds, false);
    if (rc == OG_E_NOT_FOUND) return 0;
    if (rc != 0) return rc;
    arrow_batch *b = NULL;
    const char *cols[] = {"operation_id", "recovery_kind", "writer_kind", "graph_commit_id",
                          "created_at"};
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.columns = cols;
    so.n_columns = 5;
    rc = lance_dataset_scan_all(&b, ds, &so);
    lance_dataset_free(ds);
    if (rc != 0) return rc;
    write_audit_row *rows = b->num_rows ? core_calloc((size_t)b->num_rows, sizeof *rows) : NULL;
    if (b->num_rows && !rows) {
        arrow_batch_free(b);
        return core_err_nomem();
    }
    for (int64_t r = 0; r < b->num_rows; r++) {
        char *dst[4] = {rows[r].operation_id, rows[r].kind, rows[r].writer_kind, rows[r].commit_id};
        size_t caps[4] = {sizeof rows[r].operation_id, sizeof rows[r].kind,
                          sizeof rows[r].writer_kind, sizeof rows[r].commit_id};
        for (size_t c = 0; c < 4; c++) {
            size_t len = 0;
            const uint8_t *p = arrow_array_get_bytes(b->columns[c], r, &len);
            if (!p) len = 0;
            if (len >= caps[c]) len = caps[c] - 1;
            if (len) memcpy(dst[c], p, len);
            dst[c][len] = 0;
        }
        rows[r].created_at_us = arrow_array_get_int(b->columns[4], r);
    }
    *n = (size_t)b->num_rows;
    *out = rows;
    arrow_batch_free(b);
    return 0;
}
