/* Shared helpers for the tag/restore/cleanup tests: a table with a history that supersedes
 * data files, deletion files and transaction files (versions 2..7 are written in lance's own
 * layout, with a .txn file beside the inline transaction), and whole-scan snapshots of every
 * version (rows with their stable row ids) to prove versions read identically later. */
#ifndef OG_TEST_REFS_FIXTURE_H
#define OG_TEST_REFS_FIXTURE_H

#include "dataset_fixture.h"
#include "lance/cleanup.h"
#include "lance/refs.h"
#include "lance/restore.h"
#include "core/clock.h"

#include <string.h>

#define RF_ROOT "t.lance"
#define RF_MAXV 16

/* Version history:
 *  1 create (empty)          2 append ids 0..9          3 append ids 10..19
 *  4 delete id < 5           5 update id = 12 (score)   6 delete 15 <= id < 18
 *  7 overwrite with ids 100..104 (every earlier data file superseded) */
#define RF_VERSIONS 7

static inline int rf_step(store *s, const arrow_schema *schema, int step)
{
    lance_dataset *ds = NULL, *nd = NULL;
    int rc;
    if (step == 1) {
        rc = lance_dataset_create(&ds, s, RF_ROOT, schema, NULL);
        lance_dataset_free(ds);
        return rc;
    }
    rc = lance_dataset_open(&ds, s, RF_ROOT, 0, LANCE_ACCESS_WRITE);
    if (rc) return rc;
    lance_staged *st = NULL;
    lance_write_options wo = LANCE_WRITE_OPTIONS_INIT;
    wo.txn_file = true;
    lance_term t[2];
    lance_filter fl = {t, 1};
    arrow_batch *b = NULL;
    switch (step) {
    case 2:
    case 3:
        b = fx_batch(schema, step == 2 ? 0 : 10, 10);
        rc = lance_stage_append(&st, ds, &b, 1, &wo);
        break;
    case 4:
        t[0] = (lance_term){"id", ARROW_CMP_LT, {.kind = ARROW_INT64, .i = 5}};
        rc = lance_stage_delete(&st, ds, &fl, &wo);
        break;
    case 5: {
        t[0] = (lance_term){"id", ARROW_CMP_EQ, {.kind = ARROW_INT64, .i = 12}};
        const char *set[1] = {"score"};
        arrow_scalar v[1] = {{.kind = ARROW_FLOAT64, .d = 99.0}};
        rc = lance_stage_update(&st, ds, &fl, set, v, 1, &wo);
        break;
    }
    case 6:
        t[0] = (lance_term){"id", ARROW_CMP_GE, {.kind = ARROW_INT64, .i = 15}};
        t[1] = (lance_term){"id", ARROW_CMP_LT, {.kind = ARROW_INT64, .i = 18}};
        fl.n = 2;
        rc = lance_stage_delete(&st, ds, &fl, &wo);
        break;
    default:
        b = fx_batch(schema, 100, 5);
        rc = lance_stage_overwrite(&st, ds, schema, &b, 1, &wo);
        break;
    }
    if (rc == 0) rc = lance_staged_commit(st, &nd, NULL);
    lance_staged_free(st);
    arrow_batch_free(b);
    lance_dataset_free(nd);
    lance_dataset_free(ds);
    return rc;
}

static inline int rf_build(store *s, const arrow_schema *schema, int upto)
{
    for (int i = 1; i <= upto; i++) {
        int rc = rf_step(s, schema, i);
        if (rc) return rc;
    }
    return 0;
}

/* The whole scan of one version, with row ids. */
static inline int rf_scan(store *s, uint64_t v, arrow_batch **out)
{
    *out = NULL;
    lance_dataset *ds = NULL;
    int rc = lance_dataset_open(&ds, s, RF_ROOT, v, LANCE_ACCESS_READ);
    if (rc) return rc;
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.with_row_id = true;
    rc = lance_dataset_scan_all(out, ds, &so);
    lance_dataset_free(ds);
    return rc;
}

typedef struct rf_snaps {
    arrow_batch *b[RF_MAXV + 1]; /* b[v] for v = 1..n */
    uint64_t n;
} rf_snaps;

static inline void rf_snaps_take(rf_snaps *sn, store *s, uint64_t n)
{
    memset(sn, 0, sizeof *sn);
    sn->n = n;
    for (uint64_t v = 1; v <= n; v++)
        assert_og_ok(rf_scan(s, v, &sn->b[v]));
}

static inline void rf_snaps_free(rf_snaps *sn)
{
    for (uint64_t v = 0; v <= RF_MAXV; v++)
        arrow_batch_free(sn->b[v]);
    memset(sn, 0, sizeof *sn);
}

/* 1 if version v opens and scans exactly as snapshot `want`. */
static inline int rf_same(store *s, uint64_t v, const arrow_batch *want)
{
    arrow_batch *b = NULL;
    if (rf_scan(s, v, &b) != 0) return 0;
    int same = arrow_batch_equal(b, want);
    arrow_batch_free(b);
    return same;
}

/* 1 if the manifest of version v exists. */
static inline int rf_has_version(store *s, uint64_t v)
{
    lance_version_list l;
    if (lance_versions_list(s, RF_ROOT, &l) != 0) return 0;
    int found = 0;
    for (size_t i = 0; i < l.n; i++)
        found |= l.v[i] == v;
    lance_version_list_free(&l);
    return found;
}

/* Every data, deletion and transaction file every existing version references is present
 * (each version must open and scan anyway; this also covers the .txn files). */
static inline int rf_refs_present(store *s)
{
    lance_version_list l;
    if (lance_versions_list(s, RF_ROOT, &l) != 0) return 0;
    int ok = 1;
    for (size_t i = 0; ok && i < l.n; i++) {
        lance_manifest *m = NULL;
        if (lance_version_load(s, RF_ROOT, l.v[i], l.naming, LANCE_ACCESS_INSPECT, &m) != 0) {
            ok = 0;
            break;
        }
        char key[STORE_KEY_MAX];
        store_meta meta;
        const Lance__Table__Manifest *pb = m->pb;
        for (size_t f = 0; ok && f < pb->n_fragments; f++) {
            for (size_t j = 0; ok && j < pb->fragments[f]->n_files; j++) {
                ok = lance_key(key, RF_ROOT, "data/", pb->fragments[f]->files[j]->path) == 0 &&
                     store_head(s, key, &meta) == 0;
            }
        }
        if (ok && pb->transaction_file && pb->transaction_file[0])
            ok = lance_key(key, RF_ROOT, "_transactions/", pb->transaction_file) == 0 &&
                 store_head(s, key, &meta) == 0;
        lance_manifest_free(m);
    }
    lance_version_list_free(&l);
    return ok;
}

/* Number of objects under root/dir (recursive). */
static inline size_t rf_count(store *s, const char *dir)
{
    char prefix[STORE_KEY_MAX];
    assert_og_ok(lance_key(prefix, RF_ROOT, dir, NULL));
    store_list l = {0};
    int rc = store_list_prefix(s, prefix, 0, &l);
    size_t n = rc == 0 ? l.count : 0;
    store_list_free(&l);
    return n;
}

#endif
