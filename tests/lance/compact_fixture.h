/* Shared helpers for the compaction tests: a table grown by many small appends and deletes,
 * scans sorted by id (with row ids), and the created-at / last-updated-at version of every
 * row id of a snapshot. */
#ifndef OG_TEST_COMPACT_FIXTURE_H
#define OG_TEST_COMPACT_FIXTURE_H

#include "dataset_fixture.h"
#include "lance/compact.h"
#include "lance/rowids.h"
#include "lance/txn.h"

#include <stdlib.h>
#include <string.h>

#define CF_ROOT "c.lance"
#define CF_MAXV 64

/* History: 1 create; 2..9 append 10 rows each (ids 0..79, eight fragments);
 * 10 delete id < 3; 11 delete 20 <= id < 27; 12 update id = 45 (score 99, moves the row to a
 * new fragment keeping its row id); 13 delete id = 61; 14 append ids 80..84.
 * Opt stable: stable row ids (the default) or not. */
#define CF_VERSIONS 14

static inline int cf_commit(lance_staged *st, int rc)
{
    lance_dataset *nd = NULL;
    if (rc == 0) rc = lance_staged_commit(st, &nd, NULL);
    lance_dataset_free(nd);
    lance_staged_free(st);
    return rc;
}

static inline int cf_append(store *s, const arrow_schema *schema, int64_t start, int64_t n)
{
    lance_dataset *ds = NULL;
    int rc = lance_dataset_open(&ds, s, CF_ROOT, 0, LANCE_ACCESS_WRITE);
    if (rc) return rc;
    arrow_batch *b = fx_batch(schema, start, n);
    lance_staged *st = NULL;
    rc = lance_stage_append(&st, ds, &b, 1, NULL);
    rc = cf_commit(st, rc);
    arrow_batch_free(b);
    lance_dataset_free(ds);
    return rc;
}

static inline int cf_delete(store *s, int64_t lo, int64_t hi)
{
    lance_dataset *ds = NULL;
    int rc = lance_dataset_open(&ds, s, CF_ROOT, 0, LANCE_ACCESS_WRITE);
    if (rc) return rc;
    lance_term t[2] = {{"id", ARROW_CMP_GE, {.kind = ARROW_INT64, .i = lo}},
                       {"id", ARROW_CMP_LT, {.kind = ARROW_INT64, .i = hi}}};
    lance_filter fl = {t, 2};
    lance_staged *st = NULL;
    rc = lance_stage_delete(&st, ds, &fl, NULL);
    rc = cf_commit(st, rc);
    lance_dataset_free(ds);
    return rc;
}

static inline int cf_build(store *s, const arrow_schema *schema, bool stable)
{
    lance_create_options co = LANCE_CREATE_OPTIONS_INIT;
    co.stable_row_ids = stable;
    lance_dataset *ds = NULL;
    int rc = lance_dataset_create(&ds, s, CF_ROOT, schema, &co);
    lance_dataset_free(ds);
    for (int i = 0; rc == 0 && i < 8; i++)
        rc = cf_append(s, schema, i * 10, 10);
    if (rc == 0) rc = cf_delete(s, -100, 3);
    if (rc == 0) rc = cf_delete(s, 20, 27);
    if (rc == 0) rc = lance_dataset_open(&ds, s, CF_ROOT, 0, LANCE_ACCESS_WRITE);
    if (rc == 0) {
        lance_term t = {"id", ARROW_CMP_EQ, {.kind = ARROW_INT64, .i = 45}};
        lance_filter fl = {&t, 1};
        const char *set[1] = {"score"};
        arrow_scalar v[1] = {{.kind = ARROW_FLOAT64, .d = 99.0}};
        lance_staged *st = NULL;
        rc = lance_stage_update(&st, ds, &fl, set, v, 1, NULL);
        rc = cf_commit(st, rc);
        lance_dataset_free(ds);
    }
    if (rc == 0) rc = cf_delete(s, 61, 62);
    if (rc == 0) rc = cf_append(s, schema, 80, 5);
    return rc;
}

/* An empty table with stable row ids at CF_ROOT. */
static inline int cf_create_stable(store *s, const arrow_schema *schema)
{
    lance_create_options co = LANCE_CREATE_OPTIONS_INIT;
    co.stable_row_ids = true;
    lance_dataset *ds = NULL;
    int rc = lance_dataset_create(&ds, s, CF_ROOT, schema, &co);
    lance_dataset_free(ds);
    return rc;
}

/* Compact the latest version while o plans something (as automatic maintenance does after
 * each write); adds the rows rewritten and the commits made (either may be NULL). */
static inline int cf_compact_while_due(store *s, const lance_compact_options *o,
                                       uint64_t *rewritten, size_t *commits)
{
    for (bool due = true; due;) {
        lance_dataset *ds = NULL;
        int rc = lance_dataset_open(&ds, s, CF_ROOT, 0, LANCE_ACCESS_WRITE);
        if (rc == 0) rc = lance_compact_due(ds, o, &due);
        lance_compact_report r;
        if (rc == 0 && due) rc = lance_compact(NULL, ds, o, &r);
        if (rc == 0 && due && rewritten) *rewritten += r.rows_rewritten;
        if (rc == 0 && due && commits) *commits += r.n_commits;
        lance_dataset_free(ds);
        if (rc) return rc;
    }
    return 0;
}

typedef struct cf_pair {
    int64_t key;
    int64_t idx;
} cf_pair;

static inline int cf_pair_cmp(const void *a, const void *b)
{
    int64_t x = ((const cf_pair *)a)->key, y = ((const cf_pair *)b)->key;
    return x < y ? -1 : x > y;
}

/* Rows of b sorted by column 0 (an integer id). */
static inline int cf_sorted(arrow_batch **out, const arrow_batch *b)
{
    size_t n = (size_t)b->num_rows;
    cf_pair *p = calloc(n ? n : 1, sizeof *p);
    int64_t *idx = calloc(n ? n : 1, sizeof *idx);
    for (size_t i = 0; i < n; i++)
        p[i] = (cf_pair){arrow_array_get_int(b->columns[0], (int64_t)i), (int64_t)i};
    qsort(p, n, sizeof *p, cf_pair_cmp);
    for (size_t i = 0; i < n; i++)
        idx[i] = p[i].idx;
    int rc = arrow_batch_take(out, b, idx, n);
    free(p);
    free(idx);
    return rc;
}

/* The whole scan of a snapshot (with row ids when the table has them), sorted by id. */
static inline int cf_scan_ds(const lance_dataset *ds, arrow_batch **out)
{
    *out = NULL;
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.with_row_id = lance_dataset_stable_row_ids(ds);
    arrow_batch *b = NULL;
    int rc = lance_dataset_scan_all(&b, ds, &so);
    if (rc == 0) rc = cf_sorted(out, b);
    arrow_batch_free(b);
    return rc;
}

static inline int cf_scan(store *s, uint64_t v, arrow_batch **out)
{
    *out = NULL;
    lance_dataset *ds = NULL;
    int rc = lance_dataset_open(&ds, s, CF_ROOT, v, LANCE_ACCESS_READ);
    if (rc == 0) rc = cf_scan_ds(ds, out);
    lance_dataset_free(ds);
    return rc;
}

typedef struct cf_snaps {
    arrow_batch *b[CF_MAXV + 1];
    uint64_t n;
} cf_snaps;

static inline int cf_snaps_take(cf_snaps *sn, store *s, uint64_t n)
{
    memset(sn, 0, sizeof *sn);
    sn->n = n;
    for (uint64_t v = 1; v <= n; v++) {
        int rc = cf_scan(s, v, &sn->b[v]);
        if (rc) return rc;
    }
    return 0;
}

static inline void cf_snaps_free(cf_snaps *sn)
{
    for (uint64_t v = 0; v <= CF_MAXV; v++)
        arrow_batch_free(sn->b[v]);
    memset(sn, 0, sizeof *sn);
}

/* 1 if version v scans (sorted) exactly as want. */
static inline int cf_same(store *s, uint64_t v, const arrow_batch *want)
{
    arrow_batch *b = NULL;
    if (cf_scan(s, v, &b) != 0) return 0;
    int same = arrow_batch_equal(b, want);
    arrow_batch_free(b);
    return same;
}

/* Row id -> (created at, last updated at), over every physical row of a snapshot. */
typedef struct cf_rowver {
    uint64_t id, created, updated;
} cf_rowver;

static inline int cf_rowver_cmp(const void *a, const void *b)
{
    uint64_t x = ((const cf_rowver *)a)->id, y = ((const cf_rowver *)b)->id;
    return x < y ? -1 : x > y;
}

static inline int cf_expand_versions(const ProtobufCBinaryData *d, uint64_t n, uint64_t **out)
{
    lance_version_seq vs;
    memset(&vs, 0, sizeof vs);
    int rc = lance_version_seq_decode(&vs, d->data, d->len, "test");
    if (rc == 0) rc = lance_version_seq_expand(&vs, n, out);
    lance_version_seq_free(&vs);
    return rc;
}

/* Sorted by id; *n entries. Fragments without version sequences give 0. */
static inline int cf_row_versions(const lance_dataset *ds, cf_rowver **out, size_t *n)
{
    const Lance__Table__Manifest *pb = ds->m->pb;
    size_t total = 0, k = 0;
    for (size_t i = 0; i < pb->n_fragments; i++)
        total += pb->fragments[i]->physical_rows;
    cf_rowver *rv = calloc(total ? total : 1, sizeof *rv);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < pb->n_fragments; i++) {
        const Lance__Table__DataFragment *f = pb->fragments[i];
        lance_rowid_seq seq;
        memset(&seq, 0, sizeof seq);
        uint64_t *ids = NULL, *cr = NULL, *up = NULL;
        size_t nid = 0;
        rc = lance_rowid_seq_decode(&seq, f->inline_row_ids.data, f->inline_row_ids.len, "test");
        if (rc == 0) rc = lance_rowid_seq_expand(&seq, &ids, &nid);
        lance_rowid_seq_free(&seq);
        if (rc == 0 && nid != f->physical_rows) rc = OG_E_CORRUPT;
        if (rc == 0 && f->created_at_version_sequence_case)
            rc = cf_expand_versions(&f->inline_created_at_versions, f->physical_rows, &cr);
        if (rc == 0 && f->last_updated_at_version_sequence_case)
            rc = cf_expand_versions(&f->inline_last_updated_at_versions, f->physical_rows, &up);
        for (size_t r = 0; rc == 0 && r < nid; r++)
            rv[k++] = (cf_rowver){ids[r], cr ? cr[r] : 0, up ? up[r] : 0};
        free(ids);
        free(cr);
        free(up);
    }
    qsort(rv, k, sizeof *rv, cf_rowver_cmp);
    *out = rv;
    *n = k;
    return rc;
}

static inline const cf_rowver *cf_rowver_find(const cf_rowver *rv, size_t n, uint64_t id)
{
    cf_rowver key = {id, 0, 0};
    return bsearch(&key, rv, n, sizeof *rv, cf_rowver_cmp);
}

/* 1 if every row id visible in snapshot `after` has the same created/updated versions as in
 * snapshot `before` (both known, non-zero). */
static inline int cf_versions_kept(const lance_dataset *before, const lance_dataset *after)
{
    cf_rowver *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    int ok = cf_row_versions(before, &a, &na) == 0 && cf_row_versions(after, &b, &nb) == 0;
    arrow_batch *vis = NULL;
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.with_row_id = true;
    const char *cols[1] = {"id"};
    so.columns = cols;
    so.n_columns = 1;
    ok = ok && lance_dataset_scan_all(&vis, after, &so) == 0;
    for (int64_t i = 0; ok && i < vis->num_rows; i++) {
        uint64_t id = arrow_array_get_uint(vis->columns[1], i);
        const cf_rowver *x = cf_rowver_find(a, na, id), *y = cf_rowver_find(b, nb, id);
        ok = x && y && x->created && x->updated && x->created == y->created &&
             x->updated == y->updated;
    }
    arrow_batch_free(vis);
    free(a);
    free(b);
    return ok;
}

/* The transaction that created version v (owned; lance_pb_free). */
static inline int cf_txn(store *s, uint64_t v, Lance__Table__Transaction **out)
{
    lance_dataset *ds = NULL;
    int rc = lance_dataset_open(&ds, s, CF_ROOT, v, LANCE_ACCESS_INSPECT);
    if (rc == 0) rc = lance_txn_load(s, CF_ROOT, ds->m, out);
    lance_dataset_free(ds);
    return rc;
}

#endif
