/* Helpers for the branch tests: scans of a branch at a version and commits on a branch, over
 * the refs fixture's main history (refs_fixture.h). */
#ifndef OG_TEST_BRANCH_FIXTURE_H
#define OG_TEST_BRANCH_FIXTURE_H

#include "refs_fixture.h"
#include "lance/branch.h"

/* The whole scan (with row ids) of a branch at a version. */
static inline int bscan(store *s, const char *branch, uint64_t v, arrow_batch **out)
{
    *out = NULL;
    lance_dataset *ds = NULL;
    int rc = lance_branch_open(&ds, s, RF_ROOT, branch, v, NULL, LANCE_ACCESS_READ);
    if (rc) return rc;
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.with_row_id = lance_dataset_stable_row_ids(ds); /* lancedb tables: none */
    rc = lance_dataset_scan_all(out, ds, &so);
    lance_dataset_free(ds);
    return rc;
}

static inline int bsame(store *s, const char *branch, uint64_t v, const arrow_batch *want)
{
    arrow_batch *b = NULL;
    if (bscan(s, branch, v, &b) != 0) return 0;
    int same = arrow_batch_equal(b, want);
    arrow_batch_free(b);
    return same;
}

static inline uint64_t brows(store *s, const char *branch, uint64_t v)
{
    lance_dataset *ds = NULL;
    assert_og_ok(lance_branch_open(&ds, s, RF_ROOT, branch, v, NULL, LANCE_ACCESS_READ));
    uint64_t n = 0;
    assert_og_ok(lance_dataset_count_rows(ds, &n));
    lance_dataset_free(ds);
    return n;
}

/* Does a scan of the branch's latest version contain this id? */
static inline int bhas_id(store *s, const char *branch, int64_t id)
{
    arrow_batch *b = NULL;
    assert_og_ok(bscan(s, branch, 0, &b));
    int found = 0;
    for (int64_t i = 0; i < b->num_rows; i++)
        if (arrow_array_get_int(b->columns[0], i) == id) found = 1;
    arrow_batch_free(b);
    return found;
}

/* One commit on a branch: 1 append ids 200..204, 2 delete id 11, 3 set score of id 13. */
static inline uint64_t bf_commit(store *s, const arrow_schema *schema, const char *branch, int step)
{
    lance_dataset *ds = NULL, *nd = NULL;
    assert_og_ok(lance_branch_open(&ds, s, RF_ROOT, branch, 0, NULL, LANCE_ACCESS_WRITE));
    lance_staged *st = NULL;
    lance_term t[1];
    lance_filter fl = {t, 1};
    arrow_batch *b = NULL;
    if (step == 1) {
        b = fx_batch(schema, 200, 5);
        assert_og_ok(lance_stage_append(&st, ds, &b, 1, NULL));
    } else if (step == 2) {
        t[0] = (lance_term){"id", ARROW_CMP_EQ, {.kind = ARROW_INT64, .i = 11}};
        assert_og_ok(lance_stage_delete(&st, ds, &fl, NULL));
    } else {
        t[0] = (lance_term){"id", ARROW_CMP_EQ, {.kind = ARROW_INT64, .i = 13}};
        const char *set[1] = {"score"};
        arrow_scalar v[1] = {{.kind = ARROW_FLOAT64, .d = -1.0}};
        assert_og_ok(lance_stage_update(&st, ds, &fl, set, v, 1, NULL));
    }
    uint64_t ver = 0;
    assert_og_ok(lance_staged_commit(st, &nd, &ver));
    lance_staged_free(st);
    arrow_batch_free(b);
    lance_dataset_free(nd);
    lance_dataset_free(ds);
    return ver;
}

#endif
