/* The recovery audit log: an append-only Lance dataset (_recoveries.lance) with exactly one row
 * per resolved recovery intent, plus one "retired" row when a stale copy of an intent it
 * records was later found and deleted. Recording is idempotent by operation id (and kind, for
 * retirements), so a crash between the audit append and the sidecar delete never yields a
 * second row. Each row carries a checksum of its own values (record_xxh3), verified whenever
 * rows are read, so a damaged record is reported, never taken for another outcome; a log made
 * by a build before checksums has no such column and its rows are read unverified. */
#include "write/internal.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/hash.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char *const AUDIT_COLS[] = {
    "operation_id",    "recovery_kind",           "writer_kind", "recovery_for_actor",
    "graph_commit_id", "per_table_outcomes_json", "created_at",  "record_xxh3"};
#define AUDIT_NCOLS 8
#define AUDIT_NSTR 6    /* the string columns before created_at */
#define AUDIT_SUM_COL 7 /* record_xxh3: absent in logs of builds before checksums */

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

/* The checksum of one record: XXH3-64 of its values, each string framed by a presence byte and
 * its length (so no two different records frame to the same bytes), then created_at. */
static int record_sum(const char *const vals[AUDIT_NSTR], const size_t lens[AUDIT_NSTR],
                      int64_t created_at, uint64_t *out)
{
    core_buf b = CORE_BUF_INIT;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < AUDIT_NSTR; i++) {
        rc = core_buf_append_byte(&b, vals[i] ? 1 : 0);
        if (rc == 0) rc = core_buf_append_u64le(&b, vals[i] ? lens[i] : 0);
        if (rc == 0 && vals[i] && lens[i]) rc = core_buf_append(&b, vals[i], lens[i]);
    }
    if (rc == 0) rc = core_buf_append_u64le(&b, (uint64_t)created_at);
    if (rc == 0) *out = core_hash64(b.data, b.len, 0);
    core_buf_free(&b);
    return rc;
}

/* Does this log record checksums (made by a build that writes them)? */
static bool audit_summed(const lance_dataset *ds)
{
    return ds->schema.n_fields > AUDIT_SUM_COL &&
           strcmp(ds->schema.fields[AUDIT_SUM_COL].name, AUDIT_COLS[AUDIT_SUM_COL]) == 0;
}

/* Every row of the log (only operation_id's when not NULL), every column, each row checked
 * against its checksum when the log has them: OG_E_CORRUPT naming the log and the row. */
static int audit_rows(const lance_dataset *ds, const char *operation_id, arrow_batch **out)
{
    *out = NULL;
    const bool summed = audit_summed(ds);
    lance_term term;
    memset(&term, 0, sizeof term);
    term.column = AUDIT_COLS[0];
    term.op = ARROW_CMP_EQ;
    term.value.kind = ARROW_BINARY;
    term.value.bytes = operation_id;
    term.value.n_bytes = operation_id ? strlen(operation_id) : 0;
    lance_filter f = {&term, 1};
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.columns = (const char **)AUDIT_COLS;
    so.n_columns = summed ? AUDIT_NCOLS : AUDIT_NCOLS - 1;
    if (operation_id) so.filter = &f;
    arrow_batch *b = NULL;
    int rc = lance_dataset_scan_all(&b, ds, &so);
    for (int64_t r = 0; rc == 0 && summed && r < b->num_rows; r++) {
        const char *vals[AUDIT_NSTR];
        size_t lens[AUDIT_NSTR];
        for (size_t c = 0; c < AUDIT_NSTR; c++) {
            lens[c] = 0;
            const char *p = arrow_array_is_valid(b->columns[c], r)
                                ? (const char *)arrow_array_get_bytes(b->columns[c], r, &lens[c])
                                : NULL;
            vals[c] = arrow_array_is_valid(b->columns[c], r) ? (p ? p : "") : NULL;
        }
        uint64_t want = 0;
        size_t hl = 0;
        const char *hex =
            arrow_array_is_valid(b->columns[AUDIT_SUM_COL], r)
                ? (const char *)arrow_array_get_bytes(b->columns[AUDIT_SUM_COL], r, &hl)
                : NULL;
        char have[17] = "";
        rc = record_sum(vals, lens, arrow_array_get_int(b->columns[6], r), &want);
        if (rc == 0) snprintf(have, sizeof have, "%016" PRIx64, want);
        if (rc == 0 && (!hex || hl != 16 || memcmp(hex, have, 16) != 0)) {
            char op[GRAPH_ID_LEN + 1] = "";
            if (vals[0]) snprintf(op, sizeof op, "%.*s", (int)lens[0], vals[0]);
            rc = core_err(OG_E_CORRUPT,
                          "the recovery audit log %s has a damaged record (row %" PRId64
                          ", operation '%s'): its values do not match the checksum it records. "
                          "`omnigraph verify` lists the damage; restore %s from a backup",
                          GRAPH_AUDIT_DIR, r, op, GRAPH_AUDIT_DIR);
            core_err_detail(CORE_ERR_OBJECT, GRAPH_AUDIT_DIR);
        }
    }
    if (rc != 0) {
        arrow_batch_free(b);
        return rc;
    }
    *out = b;
    return 0;
}

static bool cell_is(const arrow_array *a, int64_t r, const char *s)
{
    size_t len = 0;
    const uint8_t *p = arrow_array_get_bytes(a, r, &len);
    return p && len == strlen(s) && memcmp(p, s, len) == 0;
}

/* Has operation_id a row (of recovery kind `kind` when not NULL)? */
static int audit_has(const lance_dataset *ds, const char *operation_id, const char *kind, bool *has)
{
    arrow_batch *b = NULL;
    int rc = audit_rows(ds, operation_id, &b);
    *has = false;
    for (int64_t r = 0; rc == 0 && r < b->num_rows && !*has; r++)
        *has = !kind || cell_is(b->columns[1], r, kind);
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
    rc = audit_rows(ds, operation_id, &b);
    lance_dataset_free(ds);
    for (int64_t r = 0; rc == 0 && r < b->num_rows && !*found; r++) {
        char k[24];
        copy_cell(k, sizeof k, b->columns[1], r);
        if (strcmp(k, write_recovery_kind_name(WRITE_RECOVERY_RETIRED)) == 0) continue;
        *found = true;
        if (kind) memcpy(kind, k, sizeof k);
        if (commit_id) copy_cell(commit_id, GRAPH_ID_LEN + 1, b->columns[4], r);
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
    const char *vals[AUDIT_NSTR] = {
        in->operation_id, write_recovery_kind_name(recovery_kind),      writer,
        in->actor,        commit_id && commit_id[0] ? commit_id : NULL, outcomes_json};
    for (size_t i = 0; rc == 0 && i < AUDIT_NSTR; i++)
        rc = str_col(&cols[i], vals[i]);
    const int64_t now = write_now_us();
    if (rc == 0) {
        arrow_builder *b = NULL;
        rc = arrow_builder_new(&b, &ds->schema.fields[6].type);
        if (rc == 0) rc = arrow_builder_append_int(b, now);
        if (rc == 0) rc = arrow_builder_finish(b, &cols[6]);
        arrow_builder_free(b);
    }
    /* A log created by a build before checksums keeps its seven columns (its rows, this one
     * too, are read unverified). */
    const bool summed = audit_summed(ds);
    if (rc == 0 && summed) {
        size_t lens[AUDIT_NSTR];
        for (size_t i = 0; i < AUDIT_NSTR; i++)
            lens[i] = vals[i] ? strlen(vals[i]) : 0;
        uint64_t sum = 0;
        char hex[17];
        rc = record_sum(vals, lens, now, &sum);
        snprintf(hex, sizeof hex, "%016" PRIx64, sum);
        if (rc == 0) rc = str_col(&cols[AUDIT_SUM_COL], hex);
    }
    arrow_batch *batch = NULL;
    if (rc == 0)
        rc = arrow_batch_new(&batch, &ds->schema, cols, summed ? AUDIT_NCOLS : AUDIT_NCOLS - 1);
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
    rc = audit_rows(ds, NULL, &b);
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
        const size_t col[4] = {0, 1, 2, 4};
        for (size_t c = 0; c < 4; c++) {
            size_t len = 0;
            const uint8_t *p = arrow_array_get_bytes(b->columns[col[c]], r, &len);
            if (!p) len = 0;
            if (len >= caps[c]) len = caps[c] - 1;
            if (len) memcpy(dst[c], p, len);
            dst[c][len] = 0;
        }
        rows[r].created_at_us = arrow_array_get_int(b->columns[6], r);
    }
    *n = (size_t)b->num_rows;
    *out = rows;
    arrow_batch_free(b);
    return 0;
}
