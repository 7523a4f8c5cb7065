/* Compaction of Lance tables: fewer fragments, identical content and row ids, every earlier
 * version unchanged, exact versions reported, typed conflicts, index sections respected. */
#include "compact_fixture.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "core/error.h"
#include "lance/branch.h"
#include "lance/cleanup.h"
#include "lance/deletion.h"
#include "lance/restore.h"

typedef struct fixture {
    char dir[256];
    store *s;
    arrow_schema schema;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->s = test_sandbox_store(f->dir, sizeof f->dir, "compact");
    fx_schema(&f->schema);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    store_close(f->s);
    arrow_schema_clear(&f->schema);
    test_sandbox_done(f->dir);
    free(f);
    return 0;
}

static lance_dataset *open_latest(fixture *f)
{
    lance_dataset *ds = NULL;
    assert_og_ok(lance_dataset_open(&ds, f->s, CF_ROOT, 0, LANCE_ACCESS_WRITE));
    return ds;
}

static size_t count_files(const lance_dataset *ds)
{
    size_t n = 0;
    for (size_t i = 0; i < ds->m->pb->n_fragments; i++)
        n += ds->m->pb->fragments[i]->n_files;
    return n;
}

static uint64_t max_frag_rows(const lance_dataset *ds)
{
    uint64_t m = 0;
    for (size_t i = 0; i < ds->m->pb->n_fragments; i++)
        if (ds->m->pb->fragments[i]->physical_rows > m) m = ds->m->pb->fragments[i]->physical_rows;
    return m;
}

/* The main case: after many small appends and deletes, one Rewrite commit. */
static void test_compact_basic(void **state)
{
    fixture *f = *state;
    assert_og_ok(cf_build(f->s, &f->schema, true));
    cf_snaps sn;
    assert_og_ok(cf_snaps_take(&sn, f->s, CF_VERSIONS));
    lance_dataset *ds = open_latest(f);
    assert_int_equal(lance_dataset_version(ds), CF_VERSIONS);
    size_t frags_before = ds->m->pb->n_fragments;
    uint64_t rows_before = 0;
    assert_og_ok(lance_dataset_count_rows(ds, &rows_before));
    assert_true(frags_before >= 9);

    lance_compact_options o = LANCE_COMPACT_OPTIONS_INIT;
    o.target_rows_per_fragment = 40;
    lance_compact_report r;
    lance_dataset *nd = NULL;
    assert_og_ok(lance_compact(&nd, ds, &o, &r));
    assert_int_equal(r.read_version, CF_VERSIONS);
    assert_int_equal(r.n_commits, 1);
    assert_int_equal(r.versions[0], CF_VERSIONS + 1);
    assert_int_equal(lance_dataset_version(nd), CF_VERSIONS + 1);
    assert_int_equal(r.fragments_before, frags_before);
    assert_int_equal(r.fragments_after, nd->m->pb->n_fragments);
    assert_true(r.fragments_after < r.fragments_before);
    assert_int_equal(r.fragments_after,
                     r.fragments_before - r.fragments_removed + r.fragments_added);
    assert_int_equal(r.rows_before, rows_before);
    assert_int_equal(r.rows_after, rows_before);
    assert_int_equal(r.files_before, count_files(ds));
    assert_int_equal(r.files_after, count_files(nd));
    assert_int_equal(r.files_written, r.fragments_added);
    /* Deleted rows: ids 0..2, 20..26, 61, and the old copy of 45 = 12 rows dropped. */
    assert_int_equal(r.deleted_rows_dropped, 12);
    assert_true(max_frag_rows(nd) <= 40);
    for (size_t i = 0; i < nd->m->pb->n_fragments; i++)
        assert_null(nd->m->pb->fragments[i]->deletion_file);

    /* The latest reads the same rows, values and row ids as before (sorted by id). */
    arrow_batch *after = NULL;
    assert_og_ok(cf_scan_ds(nd, &after));
    assert_int_equal(after->num_rows, (int64_t)rows_before);
    assert_true(arrow_batch_equal(after, sn.b[CF_VERSIONS]));
    arrow_batch_free(after);
    assert_true(cf_same(f->s, CF_VERSIONS + 1, sn.b[CF_VERSIONS])); /* reopened from disk */
    /* Every earlier version still reads identically (time travel). */
    for (uint64_t v = 1; v <= CF_VERSIONS; v++)
        assert_true(cf_same(f->s, v, sn.b[v]));
    /* Row versions are carried per row. */
    assert_true(cf_versions_kept(ds, nd));
    lance_dataset *reopened = NULL;
    assert_og_ok(lance_dataset_open(&reopened, f->s, CF_ROOT, 0, LANCE_ACCESS_READ));
    assert_true(cf_versions_kept(ds, reopened));
    lance_dataset_free(reopened);

    /* The version records a Rewrite whose groups name exactly the replaced fragments. */
    Lance__Table__Transaction *t = NULL;
    assert_og_ok(cf_txn(f->s, CF_VERSIONS + 1, &t));
    assert_int_equal(t->operation_case, LANCE__TABLE__TRANSACTION__OPERATION_REWRITE);
    assert_int_equal(t->read_version, CF_VERSIONS);
    assert_string_equal(t->uuid, r.uuids[0]);
    size_t olds = 0, news = 0;
    for (size_t g = 0; g < t->rewrite->n_groups; g++) {
        olds += t->rewrite->groups[g]->n_old_fragments;
        news += t->rewrite->groups[g]->n_new_fragments;
        assert_true(t->rewrite->groups[g]->n_old_fragments >= 1);
    }
    assert_int_equal(t->rewrite->n_groups, r.groups);
    assert_int_equal(olds, r.fragments_removed);
    assert_int_equal(news, r.fragments_added);
    lance_pb_free(t);
    uint64_t found = 0;
    assert_og_ok(lance_find_txn_version(f->s, CF_ROOT, r.uuids[0], 0, &found));
    assert_int_equal(found, CF_VERSIONS + 1);

    /* Compacting again converges: leftovers of the first run (fragments below the target)
     * may merge once more, then there is nothing left to do: zero commits, same version. */
    lance_dataset *nd2 = NULL, *cur = nd;
    int runs = 0;
    for (;;) {
        assert_og_ok(lance_compact(&nd2, cur, &o, &r));
        if (cur != nd) lance_dataset_free(cur);
        cur = nd2;
        runs++;
        assert_true(cf_same(f->s, 0, sn.b[CF_VERSIONS]));
        if (r.n_commits == 0) break;
        assert_true(runs < 4);
    }
    assert_int_equal(r.groups, 0);
    uint64_t final_v = lance_dataset_version(nd2);
    assert_int_equal(final_v, CF_VERSIONS + (uint64_t)runs);
    assert_int_equal(r.read_version, final_v);
    lance_version_list vl;
    assert_og_ok(lance_versions_list(f->s, CF_ROOT, &vl));
    assert_int_equal(vl.n, final_v);
    lance_version_list_free(&vl);

    /* The table keeps working: an append and a delete on top of the compacted version, with
     * fresh row ids beyond every old one. */
    assert_og_ok(cf_append(f->s, &f->schema, 200, 3));
    assert_og_ok(cf_delete(f->s, 30, 33));
    arrow_batch *last = NULL;
    assert_og_ok(cf_scan(f->s, 0, &last));
    assert_int_equal(last->num_rows, (int64_t)rows_before + 3 - 3);
    uint64_t max_old = 0;
    for (int64_t i = 0; i < sn.b[CF_VERSIONS]->num_rows; i++) {
        uint64_t id = arrow_array_get_uint(sn.b[CF_VERSIONS]->columns[3], i);
        if (id > max_old) max_old = id;
    }
    for (int64_t i = 0; i < last->num_rows; i++)
        if (arrow_array_get_int(last->columns[0], i) >= 200)
            assert_true(arrow_array_get_uint(last->columns[3], i) > max_old);
    arrow_batch_free(last);
    lance_dataset_free(nd2);
    lance_dataset_free(nd);
    lance_dataset_free(ds);
    cf_snaps_free(&sn);
}

/* A table without stable row ids compacts too (row addresses change, content does not). */
static void test_compact_no_stable_ids(void **state)
{
    fixture *f = *state;
    assert_og_ok(cf_build(f->s, &f->schema, false));
    cf_snaps sn;
    assert_og_ok(cf_snaps_take(&sn, f->s, CF_VERSIONS));
    lance_dataset *ds = open_latest(f), *nd = NULL;
    assert_false(lance_dataset_stable_row_ids(ds));
    lance_compact_report r;
    assert_og_ok(lance_compact(&nd, ds, NULL, &r)); /* default target: everything in one */
    assert_int_equal(r.n_commits, 1);
    assert_int_equal(r.fragments_after, 1);
    assert_null(nd->m->pb->fragments[0]->inline_row_ids.data);
    assert_true(cf_same(f->s, 0, sn.b[CF_VERSIONS]));
    for (uint64_t v = 1; v <= CF_VERSIONS; v++)
        assert_true(cf_same(f->s, v, sn.b[v]));
    lance_dataset_free(nd);
    lance_dataset_free(ds);
    cf_snaps_free(&sn);
}

/* Everything in one fragment, row ids kept as a range where they are contiguous. */
static void test_compact_default_target(void **state)
{
    fixture *f = *state;
    assert_og_ok(cf_build(f->s, &f->schema, true));
    cf_snaps sn;
    assert_og_ok(cf_snaps_take(&sn, f->s, CF_VERSIONS));
    lance_dataset *ds = open_latest(f), *nd = NULL;
    lance_compact_report r;
    assert_og_ok(lance_compact(&nd, ds, NULL, &r));
    assert_int_equal(r.n_commits, 1);
    assert_int_equal(r.groups, 1);
    assert_int_equal(r.fragments_after, 1);
    assert_int_equal(r.fragments_removed, r.fragments_before);
    assert_int_equal(r.rows_rewritten, r.rows_before);
    assert_true(cf_same(f->s, 0, sn.b[CF_VERSIONS]));
    assert_true(cf_versions_kept(ds, nd));
    /* The new fragment's id is beyond every old one. */
    assert_true(nd->m->pb->fragments[0]->id > ds->m->pb->max_fragment_id);
    assert_int_equal(nd->m->pb->max_fragment_id, nd->m->pb->fragments[0]->id);
    assert_int_equal(nd->m->pb->next_row_id, ds->m->pb->next_row_id);
    lance_dataset_free(nd);
    lance_dataset_free(ds);
    cf_snaps_free(&sn);
}

/* Size tiers: one-row appends, compacted whenever a tier is due, rewrite each row at most
 * log8(rows) times, leave no tier due and at most 7 fragments per tier. A fragment merged
 * from more writes than LANCE_VERSION_RUNS_MAX carries no version sequences (unknown), so the
 * manifest does not grow by a run per row; smaller ones keep them exactly. */
static void test_compact_tiered(void **state)
{
    fixture *f = *state;
    assert_og_ok(cf_create_stable(f->s, &f->schema));
    lance_compact_options tier = LANCE_COMPACT_OPTIONS_INIT;
    tier.tier_factor = 8;
    tier.version_runs_max = LANCE_VERSION_RUNS_MAX;
    tier.materialize_deletions = false;
    enum { N = 600 }; /* 8^3 = 512 <= N: three tiers above the first */
    uint64_t rewritten = 0;
    size_t compactions = 0;
    for (int i = 0; i < N; i++) {
        assert_og_ok(cf_append(f->s, &f->schema, i, 1));
        assert_og_ok(cf_compact_while_due(f->s, &tier, &rewritten, &compactions));
    }
    lance_dataset *ds = open_latest(f);
    const Lance__Table__Manifest *pb = ds->m->pb;
    print_message("tiered: %zu compactions, %llu rows rewritten for %d rows, %zu fragments\n",
                  compactions, (unsigned long long)rewritten, N, pb->n_fragments);
    assert_true(rewritten <= 3 * (uint64_t)N);
    assert_true(pb->n_fragments <= 7 * 4);
    size_t seq_bytes = 0, with = 0;
    for (size_t i = 0; i < pb->n_fragments; i++) {
        const Lance__Table__DataFragment *fr = pb->fragments[i];
        int has =
            fr->created_at_version_sequence_case ==
            LANCE__TABLE__DATA_FRAGMENT__CREATED_AT_VERSION_SEQUENCE_INLINE_CREATED_AT_VERSIONS;
        /* exact while small (a fragment of one write, or of a few), absent when merged from
         * more writes than the bound */
        assert_int_equal(has, fr->physical_rows <= LANCE_VERSION_RUNS_MAX);
        with += has;
        seq_bytes += fr->inline_created_at_versions.len + fr->inline_last_updated_at_versions.len;
    }
    assert_true(with >= 1);
    assert_true(seq_bytes < 4096); /* one run per row would be about 15 KB */
    arrow_batch *b = NULL;
    assert_og_ok(cf_scan_ds(ds, &b));
    assert_int_equal(b->num_rows, N);
    arrow_batch_free(b);
    lance_dataset_free(ds);
}

/* A classifier that drops ids divisible by 5 and sets apart ids that leave 1; or fails. */
typedef struct classes {
    bool drop, fail;
    unsigned calls;
} classes;

static int by_id(void *arg, const arrow_batch *b, uint8_t *cls)
{
    classes *c = arg;
    c->calls++;
    if (c->fail) return core_err(OG_E_CORRUPT, "classifier refuses");
    for (int64_t i = 0; i < b->num_rows; i++) {
        int64_t id = arrow_array_get_int(b->columns[0], i);
        assert_int_equal(cls[i], LANCE_COMPACT_KEEP); /* preset */
        if (id % 5 == 0 && c->drop) cls[i] = LANCE_COMPACT_DROP;
        if (id % 5 == 1) cls[i] = LANCE_COMPACT_APART;
    }
    return 0;
}

static int txn_case(fixture *f, const lance_dataset *ds)
{
    Lance__Table__Transaction *tx = NULL;
    assert_og_ok(lance_txn_load(f->s, CF_ROOT, ds->m, &tx));
    int c = (int)tx->operation_case;
    lance_pb_free(&tx->base);
    return c;
}

/* The classifier: dropped rows are gone (an Update, since the rows changed), rows set apart
 * lead the new fragments, every kept row keeps its row id and values, earlier versions are
 * unchanged; setting apart alone stays a Rewrite; a failing classifier commits nothing. */
static void test_compact_classify(void **state)
{
    fixture *f = *state;
    assert_og_ok(cf_build(f->s, &f->schema, true));
    cf_snaps sn;
    assert_og_ok(cf_snaps_take(&sn, f->s, CF_VERSIONS));
    const arrow_batch *before = sn.b[CF_VERSIONS];

    /* failing: nothing committed, the error is the classifier's */
    lance_dataset *ds = open_latest(f), *nd = NULL;
    classes c = {true, true, 0};
    lance_compact_options o = LANCE_COMPACT_OPTIONS_INIT;
    o.classify = by_id;
    o.classify_arg = &c;
    lance_compact_report r;
    assert_og_error(lance_compact(&nd, ds, &o, &r), OG_E_CORRUPT);
    assert_int_equal(r.n_commits, 0);
    lance_dataset_free(ds);
    ds = open_latest(f);
    assert_int_equal(lance_dataset_version(ds), CF_VERSIONS);

    /* dropping and setting apart */
    c.fail = false;
    assert_og_ok(lance_compact(&nd, ds, &o, &r));
    assert_true(c.calls >= 1);
    assert_int_equal(r.n_commits, 1);
    assert_int_equal(txn_case(f, nd), LANCE__TABLE__TRANSACTION__OPERATION_UPDATE);
    uint64_t want_dropped = 0;
    for (int64_t i = 0; i < before->num_rows; i++)
        want_dropped += arrow_array_get_int(before->columns[0], i) % 5 == 0;
    assert_int_equal(r.rows_dropped, want_dropped);
    assert_int_equal(r.rows_after, (uint64_t)before->num_rows - want_dropped);
    assert_int_equal(r.fragments_after, 2); /* the rows set apart, then the rest */
    const Lance__Table__Manifest *pb = nd->m->pb;
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.with_row_id = true;
    arrow_batch *got = NULL;
    assert_og_ok(cf_scan_ds(nd, &got));
    assert_int_equal(got->num_rows, before->num_rows - (int64_t)want_dropped);
    for (int64_t i = 0, k = 0; i < before->num_rows; i++) {
        if (arrow_array_get_int(before->columns[0], i) % 5 == 0) continue;
        for (size_t col = 0; col < before->n_columns; col++) {
            /* the same row: id, values and row id */
            assert_int_equal(arrow_compare_rows(before->columns[col], i, got->columns[col], k), 0);
        }
        k++;
    }
    arrow_batch_free(got);
    /* the first fragment holds exactly the rows set apart */
    lance_dataset *first = NULL;
    Lance__Table__Manifest one = *pb;
    one.n_fragments = 1;
    core_buf buf = CORE_BUF_INIT;
    lance_manifest *m1 = NULL;
    assert_og_ok(lance_manifest_encode(&buf, &one, NULL, 0, NULL, 0));
    assert_og_ok(lance_manifest_decode(&m1, buf.data, buf.len, CF_ROOT));
    core_buf_free(&buf);
    assert_og_ok(lance_dataset_from_manifest(&first, f->s, CF_ROOT, nd->naming, m1));
    arrow_batch *apart = NULL;
    assert_og_ok(lance_dataset_scan_all(&apart, first, &so));
    assert_true(apart->num_rows > 0);
    for (int64_t i = 0; i < apart->num_rows; i++)
        assert_int_equal(arrow_array_get_int(apart->columns[0], i) % 5, 1);
    arrow_batch_free(apart);
    lance_dataset_free(first);
    for (uint64_t v = 1; v <= CF_VERSIONS; v++)
        assert_true(cf_same(f->s, v, sn.b[v]));
    lance_dataset_free(nd);
    lance_dataset_free(ds);

    /* setting apart alone (after two appends, so there is something to merge): a Rewrite */
    assert_og_ok(cf_append(f->s, &f->schema, 200, 3));
    assert_og_ok(cf_append(f->s, &f->schema, 300, 3));
    arrow_batch *kept = NULL;
    assert_og_ok(cf_scan(f->s, 0, &kept));
    ds = open_latest(f);
    c.drop = false;
    assert_og_ok(lance_compact(&nd, ds, &o, &r));
    assert_int_equal(r.n_commits, 1);
    assert_int_equal(r.rows_dropped, 0);
    assert_int_equal(txn_case(f, nd), LANCE__TABLE__TRANSACTION__OPERATION_REWRITE);
    assert_true(cf_same(f->s, 0, kept));
    arrow_batch_free(kept);
    lance_dataset_free(nd);
    lance_dataset_free(ds);
    cf_snaps_free(&sn);
}

/* A commit that finds its version taken by appends rebases onto them (the rewritten fragments
 * are still there, unchanged): the merged files commit on top, with fresh fragment ids, and no
 * row is lost. A delete from a rewritten fragment meanwhile makes it give up typed. (The
 * compaction plans on a snapshot taken before the concurrent commit.) */
static void test_compact_rebase(void **state)
{
    fixture *f = *state;
    lance_create_options co = LANCE_CREATE_OPTIONS_INIT;
    co.stable_row_ids = true;
    lance_dataset *ds = NULL, *nd = NULL;
    assert_og_ok(lance_dataset_create(&ds, f->s, CF_ROOT, &f->schema, &co));
    lance_dataset_free(ds);
    for (int i = 0; i < 8; i++)
        assert_og_ok(cf_append(f->s, &f->schema, i * 10, 10));
    lance_compact_options o = LANCE_COMPACT_OPTIONS_INIT;
    lance_compact_report r;
    ds = open_latest(f);                                            /* version 9 */
    assert_og_ok(cf_append(f->s, &f->schema, 1000, 2));             /* version 10, under the plan */
    assert_og_error(lance_compact(&nd, ds, &o, &r), OG_E_CONFLICT); /* no rebase asked */
    o.rebase_attempts = 2;
    assert_og_ok(lance_compact(&nd, ds, &o, &r));
    assert_int_equal(r.n_commits, 1);
    assert_int_equal(r.versions[0], 11);
    const Lance__Table__Manifest *pb = nd->m->pb;
    assert_int_equal(pb->n_fragments, 2); /* the merged one, then the append's */
    assert_true(pb->fragments[0]->id != pb->fragments[1]->id);
    assert_true(pb->max_fragment_id >= pb->fragments[0]->id);
    assert_true(pb->max_fragment_id >= pb->fragments[1]->id);
    lance_dataset_free(nd);
    lance_dataset_free(ds);
    arrow_batch *b = NULL;
    assert_og_ok(cf_scan(f->s, 0, &b));
    assert_int_equal(b->num_rows, 82);
    arrow_batch_free(b);

    /* a delete from a fragment the plan rewrites: no rebase, a typed conflict */
    for (int i = 0; i < 8; i++)
        assert_og_ok(cf_append(f->s, &f->schema, 2000 + i, 1));
    o.tier_factor = 8; /* only the eight one-row fragments */
    ds = open_latest(f);
    uint64_t v = ds->m->pb->version;
    assert_og_ok(cf_delete(f->s, 2000, 2001));
    assert_og_error(lance_compact(&nd, ds, &o, &r), OG_E_CONFLICT);
    assert_null(nd);
    assert_int_equal(r.n_commits, 0);
    lance_dataset_free(ds);
    ds = open_latest(f);
    assert_int_equal(ds->m->pb->version, v + 1); /* only the delete */
    lance_dataset_free(ds);

    /* With a classifier (it decided on the whole snapshot): an append is rebased over, but a
     * delete from a fragment outside the rewritten groups is not. */
    classes cl = {true, false, 0};
    o.classify = by_id;
    o.classify_arg = &cl;
    for (int i = 0; i < 8; i++)
        assert_og_ok(cf_append(f->s, &f->schema, 3000 + i * 5, 1));
    ds = open_latest(f);
    assert_og_ok(cf_append(f->s, &f->schema, 4000, 1));
    assert_og_ok(lance_compact(&nd, ds, &o, &r));
    assert_int_equal(r.n_commits, 1);
    lance_dataset_free(nd);
    lance_dataset_free(ds);
    for (int i = 0; i < 8; i++)
        assert_og_ok(cf_append(f->s, &f->schema, 5000 + i * 5, 1));
    ds = open_latest(f);
    v = ds->m->pb->version;
    assert_og_ok(cf_delete(f->s, 0, 1)); /* from the first 10-row fragment, not in a group */
    assert_og_error(lance_compact(&nd, ds, &o, &r), OG_E_CONFLICT);
    assert_null(nd);
    lance_dataset_free(ds);
    ds = open_latest(f);
    assert_int_equal(ds->m->pb->version, v + 1);
    lance_dataset_free(ds);
}

/* A commit that lands between the snapshot compaction planned on and its commit makes the
 * compaction fail typed, publishing nothing; a retry on the new version succeeds. */
static void test_compact_conflict(void **state)
{
    fixture *f = *state;
    assert_og_ok(cf_build(f->s, &f->schema, true));
    lance_dataset *ds = open_latest(f), *nd = NULL;
    assert_og_ok(cf_append(f->s, &f->schema, 300, 2)); /* the concurrent commit */
    lance_compact_report r;
    assert_og_error(lance_compact(&nd, ds, NULL, &r), OG_E_CONFLICT);
    assert_null(nd);
    assert_int_equal(r.n_commits, 0);
    assert_true(r.files_written > 0); /* staged, never referenced */
    size_t orphans = r.files_written;
    arrow_batch *b = NULL;
    assert_og_ok(cf_scan(f->s, 0, &b));
    /* The abandoned attempt's files are reclaimable: a cleanup that deletes no version (and
     * sees every file as older than its safety window) removes exactly them. */
    lance_cleanup_options co = LANCE_CLEANUP_OPTIONS_INIT;
    co.before_version = 1;
    co.older_than_ms = -1;
    co.now_ms = core_wall_ms() + 2 * LANCE_CLEANUP_DEFAULT_WINDOW_MS;
    lance_cleanup_report cr;
    assert_og_ok(lance_cleanup(f->s, CF_ROOT, &co, &cr));
    assert_int_equal(cr.versions_deleted, 0);
    assert_int_equal(cr.data_files_deleted, orphans);
    for (uint64_t v = 1; v <= CF_VERSIONS + 1; v++) {
        lance_dataset *old = NULL;
        arrow_batch *ob = NULL;
        assert_og_ok(lance_dataset_open(&old, f->s, CF_ROOT, v, LANCE_ACCESS_READ));
        assert_og_ok(cf_scan_ds(old, &ob));
        arrow_batch_free(ob);
        lance_dataset_free(old);
    }
    lance_dataset *latest = open_latest(f);
    assert_int_equal(lance_dataset_version(latest), CF_VERSIONS + 1);
    Lance__Table__Transaction *t = NULL;
    assert_og_ok(cf_txn(f->s, CF_VERSIONS + 1, &t));
    assert_int_equal(t->operation_case, LANCE__TABLE__TRANSACTION__OPERATION_APPEND);
    lance_pb_free(t);
    assert_og_ok(lance_compact(&nd, latest, NULL, &r));
    assert_int_equal(r.n_commits, 1);
    assert_int_equal(r.versions[0], CF_VERSIONS + 2);
    assert_true(cf_same(f->s, 0, b)); /* the concurrent rows are there */
    arrow_batch_free(b);
    lance_dataset_free(latest);
    lance_dataset_free(nd);
    lance_dataset_free(ds);
}

/* A store that forwards to another and, the first time a writer syncs its staged files
 * (lance_commit_pending does that right before publishing the manifest), lets another writer
 * commit an append first: a truly concurrent commit between stage and commit. */
typedef struct race_store {
    store base;
    store *inner;
    const arrow_schema *schema;
    int fired;
} race_store;

static store *rs_inner(store *s)
{
    return ((race_store *)s)->inner;
}
static int rs_get(store *s, const char *k, uint64_t off, uint64_t len, core_buf *out)
{
    return store_get(rs_inner(s), k, off, len, out);
}
static int rs_head(store *s, const char *k, store_meta *out)
{
    return store_head(rs_inner(s), k, out);
}
static int rs_put(store *s, const char *k, const void *d, size_t n, unsigned fl)
{
    return store_put(rs_inner(s), k, d, n, fl);
}
static int rs_put_if_absent(store *s, const char *k, const void *d, size_t n, unsigned fl)
{
    return store_put_if_absent(rs_inner(s), k, d, n, fl);
}
static int rs_del(store *s, const char *k, unsigned fl)
{
    return store_delete(rs_inner(s), k, fl);
}
static int rs_list(store *s, const char *p, unsigned fl, store_list *out)
{
    return store_list_prefix(rs_inner(s), p, fl, out);
}
static int rs_sync(store *s, const char *const *keys, size_t n)
{
    race_store *r = (race_store *)s;
    if (!r->fired) {
        r->fired = 1;
        int rc = cf_append(r->inner, r->schema, 300, 2);
        if (rc) return rc;
    }
    return store_sync(r->inner, keys, n);
}
static void rs_close(store *s)
{
    (void)s;
}
static const store_ops rs_ops = {
    STORE_OPS_VERSION, "race",  rs_get,   rs_head, rs_put, rs_put_if_absent, rs_del,
    rs_list,           rs_sync, rs_close, NULL,    NULL};

static void test_compact_race_at_commit(void **state)
{
    fixture *f = *state;
    assert_og_ok(cf_build(f->s, &f->schema, true));
    race_store rs;
    memset(&rs, 0, sizeof rs);
    rs.base.ops = &rs_ops;
    rs.inner = f->s;
    rs.schema = &f->schema;
    lance_dataset *ds = NULL, *nd = NULL;
    assert_og_ok(lance_dataset_open(&ds, &rs.base, CF_ROOT, 0, LANCE_ACCESS_WRITE));
    lance_compact_report r;
    assert_og_error(lance_compact(&nd, ds, NULL, &r), OG_E_CONFLICT);
    assert_true(rs.fired);
    assert_null(nd);
    assert_int_equal(r.n_commits, 0);
    /* The other writer's version stands; compaction published nothing. */
    lance_dataset *latest = open_latest(f);
    assert_int_equal(lance_dataset_version(latest), CF_VERSIONS + 1);
    Lance__Table__Transaction *t = NULL;
    assert_og_ok(cf_txn(f->s, CF_VERSIONS + 1, &t));
    assert_int_equal(t->operation_case, LANCE__TABLE__TRANSACTION__OPERATION_APPEND);
    lance_pb_free(t);
    lance_version_list vl;
    assert_og_ok(lance_versions_list(f->s, CF_ROOT, &vl));
    assert_int_equal(vl.n, CF_VERSIONS + 1);
    lance_version_list_free(&vl);
    lance_dataset_free(latest);
    lance_dataset_free(ds);
}

/* Groups committed one per version: each version is a Rewrite and reads the same rows. */
static void test_compact_several_commits(void **state)
{
    fixture *f = *state;
    assert_og_ok(cf_build(f->s, &f->schema, true));
    cf_snaps sn;
    assert_og_ok(cf_snaps_take(&sn, f->s, CF_VERSIONS));
    lance_dataset *ds = open_latest(f), *nd = NULL;
    lance_compact_options o = LANCE_COMPACT_OPTIONS_INIT;
    o.target_rows_per_fragment = 20;
    o.max_groups_per_commit = 1;
    o.uuid = "00000000-0000-4000-8000-00000000c0de";
    lance_compact_report r;
    assert_og_ok(lance_compact(&nd, ds, &o, &r));
    assert_true(r.groups >= 2);
    assert_int_equal(r.n_commits, r.groups);
    assert_string_equal(r.uuids[0], o.uuid);
    for (size_t i = 0; i < r.n_commits; i++) {
        assert_int_equal(r.versions[i], CF_VERSIONS + 1 + i);
        assert_true(cf_same(f->s, r.versions[i], sn.b[CF_VERSIONS]));
        Lance__Table__Transaction *t = NULL;
        assert_og_ok(cf_txn(f->s, r.versions[i], &t));
        assert_int_equal(t->operation_case, LANCE__TABLE__TRANSACTION__OPERATION_REWRITE);
        assert_int_equal(t->rewrite->n_groups, 1);
        assert_int_equal(t->read_version, r.versions[i] - 1);
        assert_string_equal(t->uuid, r.uuids[i]);
        if (i) assert_string_not_equal(r.uuids[i], r.uuids[i - 1]);
        lance_pb_free(t);
    }
    assert_int_equal(lance_dataset_version(nd), r.versions[r.n_commits - 1]);
    assert_true(max_frag_rows(nd) <= 20);
    assert_true(cf_versions_kept(ds, nd));
    /* The returned snapshot shares the fragments the last commit left alone with the previous
     * commit's manifest, and is the same message as the version read back. */
    assert_true(nd->m->n_borrowed > 0);
    assert_int_equal(nd->m->depth, r.n_commits);
    lance_dataset *back = NULL;
    assert_og_ok(
        lance_dataset_open(&back, f->s, CF_ROOT, r.versions[r.n_commits - 1], LANCE_ACCESS_READ));
    core_buf e1 = CORE_BUF_INIT, e2 = CORE_BUF_INIT;
    assert_og_ok(lance_manifest_encode(&e1, nd->m->pb, nd->m->txn, nd->m->txn_len, nd->m->index,
                                       nd->m->index_len));
    assert_og_ok(lance_manifest_encode(&e2, back->m->pb, back->m->txn, back->m->txn_len,
                                       back->m->index, back->m->index_len));
    assert_int_equal(e1.len, e2.len);
    assert_memory_equal(e1.data, e2.data, e1.len);
    core_buf_free(&e1);
    core_buf_free(&e2);
    lance_dataset_free(back);
    for (uint64_t v = 1; v <= CF_VERSIONS; v++)
        assert_true(cf_same(f->s, v, sn.b[v]));
    lance_dataset_free(nd);
    lance_dataset_free(ds);
    cf_snaps_free(&sn);
}

/* A large fragment is rewritten alone only when enough of it is deleted. */
static void test_compact_materialize_deletions(void **state)
{
    fixture *f = *state;
    lance_dataset *ds = NULL, *nd = NULL;
    assert_og_ok(lance_dataset_create(&ds, f->s, CF_ROOT, &f->schema, NULL));
    lance_dataset_free(ds);
    assert_og_ok(cf_append(f->s, &f->schema, 0, 100));
    assert_og_ok(cf_delete(f->s, 10, 15)); /* 5% deleted */
    lance_compact_options o = LANCE_COMPACT_OPTIONS_INIT;
    o.target_rows_per_fragment = 50;
    lance_compact_report r;
    ds = open_latest(f);
    assert_og_ok(lance_compact(&nd, ds, &o, &r));
    assert_int_equal(r.n_commits, 0);
    assert_int_equal(lance_dataset_version(nd), 3);
    lance_dataset_free(nd);
    lance_dataset_free(ds);

    assert_og_ok(cf_delete(f->s, 40, 50)); /* now 15% deleted */
    arrow_batch *b = NULL;
    assert_og_ok(cf_scan(f->s, 0, &b));
    ds = open_latest(f);
    o.materialize_deletions = false;
    assert_og_ok(lance_compact(&nd, ds, &o, &r));
    assert_int_equal(r.n_commits, 0);
    lance_dataset_free(nd);
    o.materialize_deletions = true;
    o.materialize_deletions_threshold = 0.2;
    assert_og_ok(lance_compact(&nd, ds, &o, &r));
    assert_int_equal(r.n_commits, 0);
    lance_dataset_free(nd);
    o.materialize_deletions_threshold = 0.1;
    assert_og_ok(lance_compact(&nd, ds, &o, &r));
    assert_int_equal(r.n_commits, 1);
    assert_int_equal(r.deleted_rows_dropped, 15);
    assert_int_equal(r.fragments_before, 1);
    assert_int_equal(r.fragments_after, 2); /* 85 rows at <= 50 per fragment */
    assert_int_equal(nd->m->pb->fragments[0]->physical_rows, 50);
    assert_int_equal(nd->m->pb->fragments[1]->physical_rows, 35);
    assert_true(cf_same(f->s, 0, b));
    assert_true(cf_versions_kept(ds, nd));
    /* Row ids 0..9, 15..39, 50..99 are not contiguous: a range_with_bitmap holds them. */
    lance_rowid_seq seq;
    memset(&seq, 0, sizeof seq);
    const Lance__Table__DataFragment *nf = nd->m->pb->fragments[0];
    assert_og_ok(
        lance_rowid_seq_decode(&seq, nf->inline_row_ids.data, nf->inline_row_ids.len, "t"));
    assert_int_equal(seq.n, 1);
    assert_int_equal(seq.segs[0].kind, LANCE_SEG_RANGE_BITMAP);
    assert_int_equal(seq.segs[0].start, 0);
    assert_int_equal(lance_rowid_seq_len(&seq), 50);
    assert_true(seq.segs[0].bitmap[0] == 0xff); /* ids 0..7, LSB-first */
    assert_true(seq.segs[0].bitmap[1] == 0x83); /* 8, 9 and 15 */
    lance_rowid_seq_free(&seq);
    arrow_batch_free(b);
    lance_dataset_free(nd);
    lance_dataset_free(ds);
}

/* A lone small fragment without deletions (its neighbour was deleted entirely) is left as
 * it is: rewriting it gains nothing. */
static void test_compact_all_deleted(void **state)
{
    fixture *f = *state;
    lance_dataset *ds = NULL, *nd = NULL;
    assert_og_ok(lance_dataset_create(&ds, f->s, CF_ROOT, &f->schema, NULL));
    lance_dataset_free(ds);
    assert_og_ok(cf_append(f->s, &f->schema, 0, 10));
    assert_og_ok(cf_append(f->s, &f->schema, 10, 10));
    assert_og_ok(cf_delete(f->s, 0, 10)); /* the first fragment goes away entirely */
    ds = open_latest(f);
    assert_int_equal(ds->m->pb->n_fragments, 1);
    lance_compact_report r;
    assert_og_ok(lance_compact(&nd, ds, NULL, &r));
    assert_int_equal(r.n_commits, 0); /* one small fragment without deletions */
    lance_dataset_free(nd);
    lance_dataset_free(ds);
}

/* Fragments an index covers are left alone; the index section is carried unchanged. */
static int commit_with_index(fixture *f, const uint64_t *frag_ids, size_t n, int with_bitmap)
{
    lance_dataset *ds = open_latest(f);
    core_buf bm = CORE_BUF_INIT, sec = CORE_BUF_INIT;
    roaring_bitmap_t *rb = roaring_bitmap_create();
    for (size_t i = 0; i < n; i++)
        roaring_bitmap_add(rb, (uint32_t)frag_ids[i]);
    assert_og_ok(lance_deletion_bin_encode(&bm, rb));
    roaring_bitmap_free(rb);
    Lance__Table__IndexMetadata im = LANCE__TABLE__INDEX_METADATA__INIT;
    Lance__Table__IndexMetadata *imp = &im;
    int32_t fld = 0;
    im.name = "id_idx";
    im.n_fields = 1;
    im.fields = &fld;
    im.has_dataset_version = 1;
    im.dataset_version = lance_dataset_version(ds);
    if (with_bitmap) {
        im.has_fragment_bitmap = 1;
        im.fragment_bitmap.data = bm.data;
        im.fragment_bitmap.len = bm.len;
    }
    Lance__Table__IndexSection is = LANCE__TABLE__INDEX_SECTION__INIT;
    is.n_indices = 1;
    is.indices = &imp;
    assert_og_ok(lance_pb_pack(&sec, &is.base));
    lance_manifest_next next;
    lance_manifest_next_init(&next, ds->m->pb, lance_dataset_version(ds) + 1);
    Lance__Table__Transaction txn = LANCE__TABLE__TRANSACTION__INIT;
    Lance__Table__Transaction__CreateIndex ci = LANCE__TABLE__TRANSACTION__CREATE_INDEX__INIT;
    txn.has_read_version = 1;
    txn.read_version = lance_dataset_version(ds);
    ci.n_new_indices = 1;
    ci.new_indices = &imp;
    txn.operation_case = LANCE__TABLE__TRANSACTION__OPERATION_CREATE_INDEX;
    txn.create_index = &ci;
    lance_commit_info info;
    int rc = lance_commit(f->s, CF_ROOT, ds->naming, &next.pb, &txn, sec.data, sec.len, 0, &info);
    core_buf_free(&bm);
    core_buf_free(&sec);
    lance_dataset_free(ds);
    return rc;
}

static void test_compact_skips_indexed(void **state)
{
    fixture *f = *state;
    assert_og_ok(cf_build(f->s, &f->schema, true));
    lance_dataset *ds = open_latest(f), *nd = NULL;
    /* Index the 2nd and 5th fragments: they stay, and split the candidates into runs. */
    uint64_t covered[2] = {ds->m->pb->fragments[1]->id, ds->m->pb->fragments[4]->id};
    lance_dataset_free(ds);
    assert_og_ok(commit_with_index(f, covered, 2, 1));
    arrow_batch *b = NULL;
    assert_og_ok(cf_scan(f->s, 0, &b));
    ds = open_latest(f);
    assert_true(ds->m->index_len > 0);
    lance_compact_report r;
    assert_og_ok(lance_compact(&nd, ds, NULL, &r));
    assert_int_equal(r.fragments_skipped_indexed, 2);
    assert_int_equal(r.n_commits, 1);
    assert_true(r.groups >= 2);
    for (int k = 0; k < 2; k++) {
        int present = 0;
        for (size_t i = 0; i < nd->m->pb->n_fragments; i++)
            present |= nd->m->pb->fragments[i]->id == covered[k];
        assert_true(present);
    }
    assert_true(cf_same(f->s, 0, b));
    lance_dataset *re = open_latest(f);
    assert_int_equal(re->m->index_len, ds->m->index_len);
    assert_memory_equal(re->m->index, ds->m->index, ds->m->index_len);
    lance_dataset_free(re);
    lance_dataset_free(nd);
    lance_dataset_free(ds);
    arrow_batch_free(b);
}

static void test_compact_index_without_bitmap(void **state)
{
    fixture *f = *state;
    assert_og_ok(cf_build(f->s, &f->schema, true));
    assert_og_ok(commit_with_index(f, NULL, 0, 0));
    lance_dataset *ds = open_latest(f), *nd = NULL;
    lance_compact_report r;
    assert_og_ok(lance_compact(&nd, ds, NULL, &r));
    assert_int_equal(r.n_commits, 0);
    assert_int_equal(r.fragments_skipped_indexed, ds->m->pb->n_fragments);
    lance_dataset_free(nd);
    lance_dataset_free(ds);
}

static void test_compact_bad_options(void **state)
{
    fixture *f = *state;
    assert_og_ok(cf_build(f->s, &f->schema, true));
    lance_dataset *ds = open_latest(f), *nd = NULL;
    lance_compact_options o = LANCE_COMPACT_OPTIONS_INIT;
    o.version = 2;
    assert_og_error(lance_compact(&nd, ds, &o, NULL), OG_E_BAD_REQUEST);
    o = (lance_compact_options)LANCE_COMPACT_OPTIONS_INIT;
    o.materialize_deletions_threshold = 1.5;
    assert_og_error(lance_compact(&nd, ds, &o, NULL), OG_E_BAD_REQUEST);
    o = (lance_compact_options)LANCE_COMPACT_OPTIONS_INIT;
    o.uuid = "not-a-uuid";
    assert_og_error(lance_compact(&nd, ds, &o, NULL), OG_E_BAD_REQUEST);
    o = (lance_compact_options)LANCE_COMPACT_OPTIONS_INIT;
    o.target_rows_per_fragment = UINT64_C(1) << 40;
    assert_og_error(lance_compact(&nd, ds, &o, NULL), OG_E_BAD_REQUEST);
    o = (lance_compact_options)LANCE_COMPACT_OPTIONS_INIT;
    o.tier_factor = 1;
    assert_og_error(lance_compact(&nd, ds, &o, NULL), OG_E_BAD_REQUEST);
    bool due = true;
    assert_og_error(lance_compact_due(ds, &o, &due), OG_E_BAD_REQUEST);
    assert_false(due);
    assert_null(nd);
    lance_version_list vl;
    assert_og_ok(lance_versions_list(f->s, CF_ROOT, &vl));
    assert_int_equal(vl.n, CF_VERSIONS);
    lance_version_list_free(&vl);
    lance_dataset_free(ds);
}

/* A damaged data file of a fragment to compact fails typed and commits nothing. */
static void test_compact_corrupt_data(void **state)
{
    fixture *f = *state;
    assert_og_ok(cf_build(f->s, &f->schema, true));
    lance_dataset *ds = open_latest(f), *nd = NULL;
    char path[512];
    snprintf(path, sizeof path, "%s/%s/data/%s", f->dir, CF_ROOT,
             ds->m->pb->fragments[0]->files[0]->path);
    test_write_file(path, "garbage", 7);
    lance_compact_report r;
    int rc = lance_compact(&nd, ds, NULL, &r);
    assert_true(rc == OG_E_CORRUPT);
    assert_int_equal(r.n_commits, 0);
    assert_null(nd);
    lance_dataset *re = open_latest(f);
    assert_int_equal(lance_dataset_version(re), CF_VERSIONS);
    lance_dataset_free(re);
    lance_dataset_free(ds);
}

/* Nested columns (list, fixed-size list, struct) survive compaction value for value. */
static void nested_schema(arrow_schema *s)
{
    arrow_schema_init(s);
    arrow_field f, item;
    arrow_type t = arrow_type_simple(ARROW_INT64);
    assert_og_ok(arrow_field_init(&f, "id", &t, false));
    assert_og_ok(arrow_schema_add(s, &f));
    arrow_field_clear(&f);
    t = arrow_type_simple(ARROW_FLOAT64);
    assert_og_ok(arrow_field_init(&item, "item", &t, true));
    assert_og_ok(arrow_type_list(&t, &item));
    arrow_field_clear(&item);
    assert_og_ok(arrow_field_init(&f, "ld", &t, true));
    arrow_type_clear(&t);
    assert_og_ok(arrow_schema_add(s, &f));
    arrow_field_clear(&f);
    t = arrow_type_simple(ARROW_INT64);
    assert_og_ok(arrow_field_init(&item, "item", &t, true));
    assert_og_ok(arrow_type_fixed_size_list(&t, &item, 2));
    arrow_field_clear(&item);
    assert_og_ok(arrow_field_init(&f, "v2", &t, false));
    arrow_type_clear(&t);
    assert_og_ok(arrow_schema_add(s, &f));
    arrow_field_clear(&f);
    arrow_field kids[2];
    t = arrow_type_simple(ARROW_INT32);
    assert_og_ok(arrow_field_init(&kids[0], "a", &t, true));
    t = arrow_type_simple(ARROW_UTF8);
    assert_og_ok(arrow_field_init(&kids[1], "b", &t, true));
    assert_og_ok(arrow_type_struct(&t, kids, 2));
    arrow_field_clear(&kids[0]);
    arrow_field_clear(&kids[1]);
    assert_og_ok(arrow_field_init(&f, "st", &t, false));
    arrow_type_clear(&t);
    assert_og_ok(arrow_schema_add(s, &f));
    arrow_field_clear(&f);
}

static arrow_batch *nested_batch(const arrow_schema *s, int64_t start, int64_t n)
{
    arrow_builder *b[4];
    arrow_array *a[4];
    for (int k = 0; k < 4; k++)
        assert_og_ok(arrow_builder_new(&b[k], &s->fields[k].type));
    for (int64_t i = start; i < start + n; i++) {
        assert_og_ok(arrow_builder_append_int(b[0], i));
        if (i % 6 == 2) {
            assert_og_ok(arrow_builder_append_null(b[1]));
        } else {
            for (int64_t k = 0; k < i % 4; k++)
                assert_og_ok(arrow_builder_append_double(arrow_builder_child(b[1], 0),
                                                         (double)i / 8.0 + (double)k));
            assert_og_ok(arrow_builder_append_list(b[1], i % 4));
        }
        assert_og_ok(arrow_builder_append_int(arrow_builder_child(b[2], 0), -i));
        assert_og_ok(arrow_builder_append_int(arrow_builder_child(b[2], 0), INT64_MAX - i));
        assert_og_ok(arrow_builder_append_valid(b[2]));
        if (i % 5 == 1)
            assert_og_ok(arrow_builder_append_null(arrow_builder_child(b[3], 0)));
        else
            assert_og_ok(arrow_builder_append_int(arrow_builder_child(b[3], 0), i * 3));
        char buf[32];
        snprintf(buf, sizeof buf, "s%lld", (long long)i);
        assert_og_ok(arrow_builder_append_str(arrow_builder_child(b[3], 1), buf));
        assert_og_ok(arrow_builder_append_valid(b[3]));
    }
    for (int k = 0; k < 4; k++) {
        assert_og_ok(arrow_builder_finish(b[k], &a[k]));
        arrow_builder_free(b[k]);
    }
    arrow_batch *out = NULL;
    assert_og_ok(arrow_batch_new(&out, s, a, 4));
    for (int k = 0; k < 4; k++)
        arrow_array_free(a[k]);
    return out;
}

static void test_compact_nested(void **state)
{
    fixture *f = *state;
    arrow_schema ns;
    nested_schema(&ns);
    lance_dataset *ds = NULL, *nd = NULL;
    assert_og_ok(lance_dataset_create(&ds, f->s, CF_ROOT, &ns, NULL));
    lance_dataset_free(ds);
    for (int i = 0; i < 6; i++) {
        ds = open_latest(f);
        arrow_batch *b = nested_batch(&ns, i * 7, 7);
        assert_og_ok(lance_dataset_append(&nd, ds, &b, 1));
        arrow_batch_free(b);
        lance_dataset_free(nd);
        lance_dataset_free(ds);
    }
    assert_og_ok(cf_delete(f->s, 3, 9));
    cf_snaps sn;
    assert_og_ok(cf_snaps_take(&sn, f->s, 8));
    ds = open_latest(f);
    lance_compact_options o = LANCE_COMPACT_OPTIONS_INIT;
    o.target_rows_per_fragment = 16; /* rows split across fragments mid-batch */
    lance_compact_report r;
    assert_og_ok(lance_compact(&nd, ds, &o, &r));
    assert_int_equal(r.n_commits, 1);
    assert_int_equal(r.rows_after, 42 - 6);
    assert_int_equal(r.fragments_after, 3); /* 16 + 16 + 4 */
    assert_true(cf_same(f->s, 0, sn.b[8]));
    for (uint64_t v = 1; v <= 8; v++)
        assert_true(cf_same(f->s, v, sn.b[v]));
    assert_true(cf_versions_kept(ds, nd));
    lance_dataset_free(nd);
    lance_dataset_free(ds);
    cf_snaps_free(&sn);
    arrow_schema_clear(&ns);
}

/* Compaction on a branch: inherited fragments (read through the parent's base path) and the
 * branch's own are rewritten into the branch's directory; main is untouched. */
static void test_compact_on_branch(void **state)
{
    fixture *f = *state;
    assert_og_ok(cf_build(f->s, &f->schema, true));
    cf_snaps sn;
    assert_og_ok(cf_snaps_take(&sn, f->s, CF_VERSIONS));
    assert_og_ok(lance_branch_create(f->s, CF_ROOT, "feat", NULL, CF_VERSIONS, NULL));
    lance_dataset *bd = NULL, *nd = NULL;
    assert_og_ok(lance_branch_open(&bd, f->s, CF_ROOT, "feat", 0, NULL, LANCE_ACCESS_WRITE));
    arrow_batch *b = fx_batch(&f->schema, 600, 6);
    assert_og_ok(lance_dataset_append(&nd, bd, &b, 1));
    arrow_batch_free(b);
    lance_dataset_free(bd);
    bd = nd;
    nd = NULL;
    uint64_t bv = lance_dataset_version(bd);
    arrow_batch *want = NULL;
    assert_og_ok(cf_scan_ds(bd, &want));
    assert_int_equal(want->num_rows, sn.b[CF_VERSIONS]->num_rows + 6);
    lance_compact_report r;
    assert_og_ok(lance_compact(&nd, bd, NULL, &r));
    assert_int_equal(r.n_commits, 1);
    assert_int_equal(r.versions[0], bv + 1);
    assert_int_equal(r.fragments_after, 1);
    assert_false(nd->m->pb->fragments[0]->files[0]->has_base_id); /* in the branch dir */
    lance_dataset *re = NULL;
    arrow_batch *got = NULL;
    assert_og_ok(lance_branch_open(&re, f->s, CF_ROOT, "feat", 0, NULL, LANCE_ACCESS_READ));
    assert_int_equal(lance_dataset_version(re), bv + 1);
    assert_og_ok(cf_scan_ds(re, &got));
    assert_true(arrow_batch_equal(got, want));
    assert_true(cf_versions_kept(bd, re));
    arrow_batch_free(got);
    lance_dataset_free(re);
    /* The branch's version before compaction still reads the same. */
    assert_og_ok(lance_branch_open(&re, f->s, CF_ROOT, "feat", bv, NULL, LANCE_ACCESS_READ));
    assert_og_ok(cf_scan_ds(re, &got));
    assert_true(arrow_batch_equal(got, want));
    arrow_batch_free(got);
    lance_dataset_free(re);
    /* Main: no new version, every version as before. */
    lance_dataset *main_ds = open_latest(f);
    assert_int_equal(lance_dataset_version(main_ds), CF_VERSIONS);
    lance_dataset_free(main_ds);
    for (uint64_t v = 1; v <= CF_VERSIONS; v++)
        assert_true(cf_same(f->s, v, sn.b[v]));
    arrow_batch_free(want);
    lance_dataset_free(nd);
    lance_dataset_free(bd);
    cf_snaps_free(&sn);
}

/* Every allocation failure gives a typed error, never a crash or leak; the report always
 * lists exactly the versions that were committed, and the table reads the same content. */
static void test_compact_alloc_failures(void **state)
{
    fixture *f = *state;
    assert_og_ok(cf_build(f->s, &f->schema, true));
    arrow_batch *content = NULL;
    assert_og_ok(cf_scan(f->s, 0, &content));
    lance_compact_options o = LANCE_COMPACT_OPTIONS_INIT;
    o.target_rows_per_fragment = 40;
    o.max_groups_per_commit = 1;
    /* Count the allocations of one compaction, then undo it; failures are injected at ~250
     * points spread over that count (every point would take minutes of fsyncs). */
    uint64_t count0 = core_alloc_count();
    {
        lance_dataset *ds = open_latest(f), *nd = NULL, *back = NULL;
        assert_og_ok(lance_compact(&nd, ds, &o, NULL));
        uint64_t total = core_alloc_count() - count0;
        count0 = total;
        assert_og_ok(lance_restore(&back, nd, CF_VERSIONS, NULL));
        lance_dataset_free(back);
        lance_dataset_free(nd);
        lance_dataset_free(ds);
    }
    uint64_t step = count0 / 250 ? count0 / 250 : 1;
    uint64_t failures = 0, committed_on_failure = 0;
    for (uint64_t n = 1;; n += (n < 40 ? 1 : step)) {
        lance_dataset *ds = open_latest(f), *nd = NULL;
        uint64_t v0 = lance_dataset_version(ds);
        lance_compact_report r;
        core_alloc_fail_at(n, 0);
        int rc = lance_compact(&nd, ds, &o, &r);
        uint64_t injected = core_alloc_injected();
        core_alloc_fail_at(0, 0);
        if (rc) {
            assert_int_equal(og_error_last()->code, rc);
            assert_true(og_error_last()->message[0] != '\0');
            assert_null(nd);
            failures++;
            committed_on_failure += r.n_commits > 0;
        }
        lance_dataset *latest = open_latest(f);
        assert_int_equal(lance_dataset_version(latest), v0 + r.n_commits);
        for (size_t i = 0; i < r.n_commits; i++)
            assert_int_equal(r.versions[i], v0 + 1 + i);
        assert_true(cf_same(f->s, 0, content));
        if (rc == 0 && injected == 0) {
            assert_int_equal(r.n_commits, 2);
            lance_dataset_free(latest);
            lance_dataset_free(nd);
            lance_dataset_free(ds);
            break;
        }
        if (r.n_commits) { /* give the next round the same work again */
            lance_dataset *back = NULL;
            assert_og_ok(lance_restore(&back, latest, CF_VERSIONS, NULL));
            lance_dataset_free(back);
        }
        lance_dataset_free(latest);
        lance_dataset_free(nd);
        lance_dataset_free(ds);
        assert_true(n < 1000000);
    }
    print_message("compaction: %llu allocation failures injected, %llu after a commit\n",
                  (unsigned long long)failures, (unsigned long long)committed_on_failure);
    assert_true(failures > 150);
    assert_true(committed_on_failure > 0);
    arrow_batch_free(content);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_compact_basic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_no_stable_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_default_target, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_tiered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_classify, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_rebase, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_conflict, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_race_at_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_several_commits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_materialize_deletions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_all_deleted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_skips_indexed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_index_without_bitmap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_nested, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_on_branch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_alloc_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_bad_options, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compact_corrupt_data, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
