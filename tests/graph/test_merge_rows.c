/* Tests of graph_merge_table, the row-level three-way merge: every row of the truth table on
 * real Lance tables whose source and target are native branches sharing the base's fragments,
 * edges (two inserts of "the same" edge are two rows), absent tables, and the cost of a merge
 * following the change (rows read, fragments shared) with the full-read path giving the same
 * delta. */
#include "testutil.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "exec/load.h"
#include "graph/merge.h"
#include "lance/branch.h"
#include "lance/compact.h"

#include <string.h>

static const char *SCHEMA = "node Person { name: String @key  age: I32?  score: F64?  tags: "
                            "[String]? }\n"
                            "edge Knows: Person -> Person { since: Date? }\n";

#define PT "nodes/p.lance"
#define KT "edges/k.lance"

typedef struct fx {
    char dir[TEST_SANDBOX_PATH];
    store *s;
    core_arena arena;
    lang_diags diags;
    lang_catalog *cat;
    int person, knows;
    graph_change delta;
    bool changed;
    graph_conflicts conf;
    graph_merge_stats st;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->s = test_sandbox_store(f->dir, sizeof f->dir, "merge-rows");
    core_arena_init(&f->arena, 4096);
    lang_diags_init(&f->diags, &f->arena);
    if (lang_catalog_build(&f->cat, SCHEMA, strlen(SCHEMA), "t.pg", &f->diags))
        fail_msg("schema: %s", og_error_last()->message);
    f->person = lang_catalog_find(f->cat, "Person", LANG_NODE);
    f->knows = lang_catalog_find(f->cat, "Knows", LANG_EDGE);
    assert_true(f->person >= 0 && f->knows >= 0);
    *state = f;
    return 0;
}

static void change_free(graph_change *c)
{
    arrow_batch_free(c->rows);
    core_free(c->lines);
    for (size_t i = 0; i < c->n_delete_ids; i++)
        core_free(c->delete_ids[i]);
    core_free(c->delete_ids);
    memset(c, 0, sizeof *c);
}

static void delta_clear(fx *f)
{
    change_free(&f->delta);
    graph_conflicts_clear(&f->conf);
    memset(&f->st, 0, sizeof f->st);
}

static int teardown(void **state)
{
    fx *f = *state;
    delta_clear(f);
    lang_catalog_free(f->cat);
    core_arena_free(&f->arena);
    test_sandbox_store_done(f->dir, f->s);
    free(f);
    return 0;
}

/* The rows of one type parsed from JSONL (in the table's schema, ids filled). */
static arrow_batch *rows_of(fx *f, const char *jsonl)
{
    graph_change_set cs;
    assert_og_ok(exec_load_parse(&cs, f->cat, jsonl, strlen(jsonl), "t.jsonl", EXEC_LOAD_MERGE,
                                 NULL, NULL, NULL));
    assert_int_equal(cs.n, 1);
    arrow_batch *b = cs.changes[0].rows;
    cs.changes[0].rows = NULL;
    graph_change_set_clear(&cs);
    return b;
}

/* Create a type's table on main holding each JSONL chunk as its own append (rows per data file
 * at most max_rows: 0 for the default); the version reached. */
static uint64_t create(fx *f, int ti, const char *root, const char *const *chunks, size_t n,
                       uint64_t max_rows)
{
    arrow_schema sch;
    lance_create_options o;
    char kix[GRAPH_KIX_DECL_MAX];
    assert_og_ok(graph_type_schema(&sch, &f->cat->types[ti]));
    assert_og_ok(graph_type_create_options(&o, &f->cat->types[ti], kix));
    lance_dataset *ds = NULL;
    assert_og_ok(lance_dataset_create(&ds, f->s, root, &sch, &o));
    arrow_schema_clear(&sch);
    for (size_t i = 0; i < n; i++) {
        arrow_batch *b = rows_of(f, chunks[i]);
        lance_write_options wo = LANCE_WRITE_OPTIONS_INIT;
        wo.max_rows_per_file = max_rows;
        lance_staged *st = NULL;
        lance_dataset *nd = NULL;
        assert_og_ok(lance_stage_append(&st, ds, &b, 1, &wo));
        assert_og_ok(lance_staged_commit(st, &nd, NULL));
        lance_staged_free(st);
        arrow_batch_free(b);
        lance_dataset_free(ds);
        ds = nd;
    }
    uint64_t v = lance_dataset_version(ds);
    lance_dataset_free(ds);
    return v;
}

static void commit(lance_staged *st)
{
    lance_dataset *nd = NULL;
    assert_og_ok(lance_staged_commit(st, &nd, NULL));
    lance_staged_free(st);
    lance_dataset_free(nd);
}

/* Upsert JSONL rows by id on a branch (NULL: main). */
static void upsert(fx *f, const char *root, const char *branch, const char *jsonl)
{
    lance_dataset *ds = NULL;
    assert_og_ok(lance_branch_open(&ds, f->s, root, branch, 0, NULL, LANCE_ACCESS_WRITE));
    arrow_batch *b = rows_of(f, jsonl);
    lance_staged *st = NULL;
    assert_og_ok(lance_stage_merge_insert(&st, ds, GRAPH_COL_ID, &b, 1, LANCE_MERGE_UPSERT, NULL));
    commit(st);
    arrow_batch_free(b);
    lance_dataset_free(ds);
}

static void delete_id(fx *f, const char *root, const char *branch, const char *id)
{
    lance_dataset *ds = NULL;
    assert_og_ok(lance_branch_open(&ds, f->s, root, branch, 0, NULL, LANCE_ACCESS_WRITE));
    lance_term t = {
        GRAPH_COL_ID, ARROW_CMP_EQ, {.kind = ARROW_BINARY, .bytes = id, .n_bytes = strlen(id)}};
    lance_filter fl = {&t, 1};
    lance_staged *st = NULL;
    assert_og_ok(lance_stage_delete(&st, ds, &fl, NULL));
    commit(st);
    lance_dataset_free(ds);
}

static void compact(fx *f, const char *root, const char *branch)
{
    lance_dataset *ds = NULL, *nd = NULL;
    assert_og_ok(lance_branch_open(&ds, f->s, root, branch, 0, NULL, LANCE_ACCESS_WRITE));
    lance_compact_options o = LANCE_COMPACT_OPTIONS_INIT;
    o.materialize_deletions_threshold = 0.0;
    lance_compact_report rep;
    assert_og_ok(lance_compact(&nd, ds, &o, &rep));
    assert_true(rep.n_commits > 0);
    lance_dataset_free(nd);
    lance_dataset_free(ds);
}

/* Merge type ti: base = main at base_v, source and target = the latest of those branches
 * (NULL: main; "-": no table). */
static int merge(fx *f, int ti, const char *root, uint64_t base_v, const char *src, const char *tgt,
                 unsigned flags)
{
    delta_clear(f);
    lance_dataset *b = NULL, *s = NULL, *t = NULL;
    if (base_v) assert_og_ok(lance_dataset_open(&b, f->s, root, base_v, LANCE_ACCESS_READ));
    if (!src || strcmp(src, "-"))
        assert_og_ok(lance_branch_open(&s, f->s, root, src, 0, NULL, LANCE_ACCESS_READ));
    if (!tgt || strcmp(tgt, "-"))
        assert_og_ok(lance_branch_open(&t, f->s, root, tgt, 0, NULL, LANCE_ACCESS_READ));
    int rc =
        graph_merge_table_ex(f->cat, ti, b, s, t, &f->delta, &f->changed, &f->conf, &f->st, flags);
    lance_dataset_free(b);
    lance_dataset_free(s);
    lance_dataset_free(t);
    return rc;
}

/* The delta's upserted ids, comma-separated, in order. */
static void upserted(fx *f, char *out, size_t cap)
{
    out[0] = '\0';
    if (!f->delta.rows) return;
    size_t used = 0;
    for (int64_t i = 0; i < f->delta.rows->num_rows; i++) {
        size_t n;
        const uint8_t *p = arrow_array_get_bytes(f->delta.rows->columns[0], i, &n);
        used += (size_t)snprintf(out + used, cap - used, "%s%.*s", i ? "," : "", (int)n, p);
    }
}

static void deleted(fx *f, char *out, size_t cap)
{
    out[0] = '\0';
    size_t used = 0;
    for (size_t i = 0; i < f->delta.n_delete_ids; i++)
        used +=
            (size_t)snprintf(out + used, cap - used, "%s%s", i ? "," : "", f->delta.delete_ids[i]);
}

static void assert_delta(fx *f, const char *ups, const char *dels)
{
    char buf[4096];
    upserted(f, buf, sizeof buf);
    assert_string_equal(buf, ups);
    deleted(f, buf, sizeof buf);
    assert_string_equal(buf, dels);
    assert_int_equal(f->delta.mode, GRAPH_CHANGE_DELTA);
    size_t n = (f->delta.rows ? (size_t)f->delta.rows->num_rows : 0) + f->delta.n_delete_ids;
    assert_int_equal(f->changed, n > 0);
    assert_int_equal(f->st.rows_changed, n);
}

/* The value of column `col` (an I32) in the delta row with this id; INT64_MIN for null. */
static int64_t delta_int(fx *f, const char *id, const char *col)
{
    const arrow_batch *b = f->delta.rows;
    int c = arrow_schema_find(&b->schema, col);
    assert_true(c >= 0);
    for (int64_t i = 0; i < b->num_rows; i++) {
        size_t n;
        const uint8_t *p = arrow_array_get_bytes(b->columns[0], i, &n);
        if (n == strlen(id) && !memcmp(p, id, n))
            return arrow_array_is_valid(b->columns[c], i) ? arrow_array_get_int(b->columns[c], i)
                                                          : INT64_MIN;
    }
    fail_msg("no row %s in the delta", id);
    return 0;
}

static void assert_conflict(fx *f, size_t i, int kind, const char *id, const char *frag)
{
    assert_true(i < f->conf.n);
    const graph_conflict *c = &f->conf.items[i];
    if (c->kind != kind)
        fail_msg("conflict %zu on %s: %s, expected %s (%s)", i, c->id,
                 graph_conflict_kind_name(c->kind), graph_conflict_kind_name(kind), c->message);
    assert_string_equal(c->type, "Person");
    assert_string_equal(c->id, id);
    if (!strstr(c->message, frag)) fail_msg("message '%s' lacks '%s'", c->message, frag);
    if (!strstr(c->message, id)) fail_msg("message '%s' does not name %s", c->message, id);
}

#define P(name, age) "{\"type\":\"Person\",\"data\":{\"name\":\"" #name "\",\"age\":" #age "}}\n"

/* Every row of the truth table in one merge of a branch into main. */
static void test_truth_table(void **state)
{
    fx *f = *state;
    const char *seed[] = {
        P(cancel, 1) P(del_both, 1) P(div_upd, 1) P(dvu_sd, 1) P(dvu_su, 1) P(keep, 1),
        P(revive, 1) P(s_del, 1) P(s_null, 1) P(s_upd, 1) P(same_upd, 1) P(t_del, 1)
            P(t_upd, 1) "{\"type\":\"Person\",\"data\":{\"name\":\"s_tags\",\"tags\":[\"a\"]}}\n",
    };
    uint64_t base = create(f, f->person, PT, seed, 2, 0);
    assert_og_ok(lance_branch_create(f->s, PT, "src", NULL, base, NULL));

    /* the source */
    upsert(
        f, PT, "src",
        P(s_ins, 1) P(s_upd, 99) P(same_upd, 50) P(same_ins, 7) P(div_ins, 1) P(div_upd,
                                                                                10) P(dvu_su, 5)
            P(cancel,
              77) "{\"type\":\"Person\",\"data\":{\"name\":\"s_null\"}}\n"
                  "{\"type\":\"Person\",\"data\":{\"name\":\"s_tags\",\"tags\":[\"a\",\"b\"]}}\n");
    delete_id(f, PT, "src", "s_del");
    delete_id(f, PT, "src", "dvu_sd");
    delete_id(f, PT, "src", "del_both");
    delete_id(f, PT, "src", "revive");
    upsert(f, PT, "src", P(cancel, 1) P(revive, 1)); /* both back to the base's row */

    /* the target (main) */
    upsert(f, PT, NULL,
           P(t_ins, 1) P(t_upd, 2) P(same_upd, 50) P(same_ins, 7) P(div_ins, 2) P(div_upd, 20)
               P(dvu_sd, 5) P(cancel, 3) P(revive, 4));
    delete_id(f, PT, NULL, "t_del");
    delete_id(f, PT, NULL, "dvu_su");
    delete_id(f, PT, NULL, "del_both");

    assert_og_ok(merge(f, f->person, PT, base, "src", NULL, 0));
    assert_delta(f, "s_ins,s_null,s_tags,s_upd", "s_del");
    assert_int_equal(delta_int(f, "s_upd", "age"), 99);
    assert_int_equal(delta_int(f, "s_ins", "age"), 1);
    assert_int_equal(delta_int(f, "s_null", "age"), INT64_MIN);
    assert_int_equal(f->delta.type_index, f->person);
    assert_int_equal(f->conf.n, 4);
    assert_conflict(f, 0, GRAPH_CONFLICT_DIVERGENT_INSERT, "div_ins", "property 'age'");
    assert_conflict(f, 1, GRAPH_CONFLICT_DIVERGENT_UPDATE, "div_upd", "property 'age'");
    assert_conflict(f, 2, GRAPH_CONFLICT_DELETE_VS_UPDATE, "dvu_sd", "deleted on the source");
    assert_conflict(f, 3, GRAPH_CONFLICT_DELETE_VS_UPDATE, "dvu_su", "deleted on the target");
    assert_true(f->st.fragments_shared > 0);

    /* The full-read path agrees. */
    graph_change sharing = f->delta;
    memset(&f->delta, 0, sizeof f->delta);
    graph_conflicts c1 = f->conf;
    memset(&f->conf, 0, sizeof f->conf);
    assert_og_ok(merge(f, f->person, PT, base, "src", NULL, GRAPH_MERGE_FULL_READ));
    assert_true(arrow_batch_equal(sharing.rows, f->delta.rows));
    assert_int_equal(f->conf.n, c1.n);
    for (size_t i = 0; i < c1.n; i++) {
        assert_int_equal(f->conf.items[i].kind, c1.items[i].kind);
        assert_string_equal(f->conf.items[i].message, c1.items[i].message);
    }
    assert_int_equal(f->st.fragments_shared, 0);
    graph_conflicts_clear(&c1);
    change_free(&sharing);

    /* Compaction rewrites fragments: they are no longer shared, the diffs read them, and the
     * outcome is the same. */
    compact(f, PT, NULL);
    compact(f, PT, "src");
    assert_og_ok(merge(f, f->person, PT, base, "src", NULL, 0));
    assert_delta(f, "s_ins,s_null,s_tags,s_upd", "s_del");
    assert_int_equal(f->conf.n, 4);
    assert_conflict(f, 1, GRAPH_CONFLICT_DIVERGENT_UPDATE, "div_upd", "property 'age'");

    /* The other way round (main into the branch): main's changes are now the source's, and
     * the rows the branch changed back are unchanged there, so main's versions are taken. */
    assert_og_ok(merge(f, f->person, PT, base, NULL, "src", 0));
    assert_delta(f, "cancel,revive,t_ins,t_upd", "t_del");
    assert_int_equal(delta_int(f, "cancel", "age"), 3);
    assert_int_equal(f->conf.n, 4);
    assert_conflict(f, 2, GRAPH_CONFLICT_DELETE_VS_UPDATE, "dvu_sd", "deleted on the target");
    assert_conflict(f, 3, GRAPH_CONFLICT_DELETE_VS_UPDATE, "dvu_su", "deleted on the source");

    /* A source with no change since the base: nothing, and nothing read. */
    assert_og_ok(lance_branch_create(f->s, PT, "idle", NULL, base, NULL));
    assert_og_ok(merge(f, f->person, PT, base, "idle", NULL, 0));
    assert_delta(f, "", "");
    assert_int_equal(f->conf.n, 0);
    assert_int_equal(f->st.rows_read, 0);
}

#define K(id, from, to)                                                                            \
    "{\"edge\":\"Knows\",\"from\":\"" from "\",\"to\":\"" to "\",\"data\":{\"id\":\"" #id "\"}}\n"
#define KM(from, to) "{\"edge\":\"Knows\",\"from\":\"" from "\",\"to\":\"" to "\"}\n"

/* Edges compare the same way (id, src, dst, properties); two sides inserting an edge between
 * the same nodes mint two ids, so both rows survive. */
static void test_edges(void **state)
{
    fx *f = *state;
    const char *seed[] = {K(k1, "a", "b") K(k2, "a", "c") K(k3, "b", "c")};
    uint64_t base = create(f, f->knows, KT, seed, 1, 0);
    assert_og_ok(lance_branch_create(f->s, KT, "src", NULL, base, NULL));
    upsert(f, KT, "src", K(k1, "a", "d") KM("x", "y"));
    upsert(f, KT, NULL, KM("x", "y") K(k3, "b", "d"));
    delete_id(f, KT, NULL, "k2");
    assert_og_ok(merge(f, f->knows, KT, base, "src", NULL, 0));
    assert_int_equal(f->conf.n, 0);
    assert_non_null(f->delta.rows);
    assert_int_equal(f->delta.rows->num_rows, 2); /* k1 changed, the source's minted edge */
    assert_int_equal(f->delta.n_delete_ids, 0);
    int src_c = arrow_schema_find(&f->delta.rows->schema, GRAPH_COL_SRC);
    int dst_c = arrow_schema_find(&f->delta.rows->schema, GRAPH_COL_DST);
    int seen_k1 = 0, seen_xy = 0;
    for (int64_t i = 0; i < 2; i++) {
        size_t n, ns, nd;
        const uint8_t *id = arrow_array_get_bytes(f->delta.rows->columns[0], i, &n);
        const uint8_t *s = arrow_array_get_bytes(f->delta.rows->columns[src_c], i, &ns);
        const uint8_t *d = arrow_array_get_bytes(f->delta.rows->columns[dst_c], i, &nd);
        if (n == 2 && !memcmp(id, "k1", 2)) {
            seen_k1 = nd == 1 && d[0] == 'd';
        } else {
            seen_xy = n == GRAPH_ID_LEN && ns == 1 && s[0] == 'x' && nd == 1 && d[0] == 'y';
        }
    }
    assert_true(seen_k1 && seen_xy);
    /* the same edge changed apart on both sides */
    upsert(f, KT, NULL, K(k1, "a", "e"));
    assert_og_ok(merge(f, f->knows, KT, base, "src", NULL, 0));
    assert_int_equal(f->conf.n, 1);
    assert_int_equal(f->conf.items[0].kind, GRAPH_CONFLICT_DIVERGENT_UPDATE);
    assert_string_equal(f->conf.items[0].type, "Knows");
    assert_string_equal(f->conf.items[0].id, "k1");
    assert_non_null(strstr(f->conf.items[0].message, "property 'dst'"));
}

/* A state without the type's table reads as no rows. */
static void test_absent_tables(void **state)
{
    fx *f = *state;
    const char *seed[] = {P(a, 1) P(b, 2)};
    uint64_t v = create(f, f->person, PT, seed, 1, 0);
    /* created on the source since the base, absent on the target: every row is taken */
    assert_og_ok(merge(f, f->person, PT, 0, NULL, "-", 0));
    assert_delta(f, "a,b", "");
    /* created on both with one row apart */
    assert_og_ok(lance_branch_create(f->s, PT, "t", NULL, v, NULL));
    upsert(f, PT, "t", P(b, 3) P(c, 1));
    assert_og_ok(merge(f, f->person, PT, 0, NULL, "t", 0));
    assert_delta(f, "", "");
    assert_int_equal(f->conf.n, 1);
    assert_int_equal(f->conf.items[0].kind, GRAPH_CONFLICT_DIVERGENT_INSERT);
    assert_string_equal(f->conf.items[0].id, "b");
    /* gone on the source, untouched on the target: its rows are deleted */
    assert_og_ok(merge(f, f->person, PT, v, "-", NULL, 0));
    assert_delta(f, "", "a,b");
    /* nothing anywhere */
    assert_og_ok(merge(f, f->person, PT, 0, "-", "-", 0));
    assert_delta(f, "", "");
}

/* 10,000 rows in 20 fragments; the delta of the fragment-sharing path against the full-read
 * path, and what each read. */
static void big(fx *f, int n_src, uint64_t *rows_shared, uint64_t *rows_full)
{
    core_buf b = CORE_BUF_INIT;
    for (int i = 0; i < 10000; i++)
        assert_og_ok(core_buf_printf(&b,
                                     "{\"type\":\"Person\",\"data\":{\"name\":\"p%05d\",\"age\":%d,"
                                     "\"score\":%d.5}}\n",
                                     i, i % 100, i));
    const char *seed[] = {core_buf_cstr(&b)};
    uint64_t base = create(f, f->person, PT, seed, 1, 500);
    assert_og_ok(lance_branch_create(f->s, PT, "src", NULL, base, NULL));
    assert_og_ok(lance_branch_create(f->s, PT, "tgt", NULL, base, NULL));
    /* the source: n_src - 2 updates spread over the fragments, one insert, one delete */
    core_buf_clear(&b);
    for (int i = 0; i < n_src - 2; i++)
        assert_og_ok(
            core_buf_printf(&b, "{\"type\":\"Person\",\"data\":{\"name\":\"p%05d\",\"age\":%d}}\n",
                            (i * 7919) % 10000, 1000 + i));
    assert_og_ok(core_buf_printf(&b, "{\"type\":\"Person\",\"data\":{\"name\":\"new\"}}\n"));
    upsert(f, PT, "src", core_buf_cstr(&b));
    delete_id(f, PT, "src", "p09999");
    /* the target: five updates, one of them of a row the source changed too */
    upsert(f, PT, "tgt", P(p00001, 1) P(p00002, 1) P(p00003, 1) P(p00004, 1) P(p00000, 1));
    core_buf_free(&b);

    assert_og_ok(merge(f, f->person, PT, base, "src", "tgt", 0));
    *rows_shared = f->st.rows_read;
    assert_int_equal(f->st.fragments_shared, 40); /* every base fragment, in both pairs */
    assert_int_equal(f->st.rows_changed, (uint64_t)n_src - 1);
    assert_int_equal(f->conf.n, 1); /* p00000: age 1000 on the source, 1 on the target */
    assert_string_equal(f->conf.items[0].id, "p00000");
    graph_merge_stats shared_st = f->st;
    graph_change sharing = f->delta;
    memset(&f->delta, 0, sizeof f->delta);
    assert_og_ok(merge(f, f->person, PT, base, "src", "tgt", GRAPH_MERGE_FULL_READ));
    *rows_full = f->st.rows_read;
    assert_true(arrow_batch_equal(sharing.rows, f->delta.rows));
    assert_int_equal(sharing.n_delete_ids, f->delta.n_delete_ids);
    for (size_t i = 0; i < sharing.n_delete_ids; i++)
        assert_string_equal(sharing.delete_ids[i], f->delta.delete_ids[i]);
    assert_int_equal(f->conf.n, 1);
    assert_int_equal(f->st.rows_changed, shared_st.rows_changed);
    assert_true(f->st.rows_read >= 20000);
    print_message("%d source changes: sharing read %llu rows (%llu fragments read, %llu shared), "
                  "full read %llu rows\n",
                  n_src, (unsigned long long)shared_st.rows_read,
                  (unsigned long long)shared_st.fragments_read,
                  (unsigned long long)shared_st.fragments_shared, (unsigned long long)*rows_full);
    change_free(&sharing);
}

static void test_cost_follows_change(void **state)
{
    fx *f = *state;
    uint64_t shared, full;
    big(f, 5, &shared, &full);
    assert_true(shared <= 100);
}

static void test_cost_five_percent(void **state)
{
    fx *f = *state;
    uint64_t shared, full;
    big(f, 500, &shared, &full);
    assert_true(shared <= 2500); /* ids and rows of the change, each side: not the table */
}

/* Replace a branch's rows with these (a full reload: every fragment rewritten). */
static void overwrite(fx *f, const char *root, const char *branch, const char *jsonl,
                      uint64_t max_rows)
{
    lance_dataset *ds = NULL;
    assert_og_ok(lance_branch_open(&ds, f->s, root, branch, 0, NULL, LANCE_ACCESS_WRITE));
    arrow_batch *b = rows_of(f, jsonl);
    lance_write_options wo = LANCE_WRITE_OPTIONS_INIT;
    wo.max_rows_per_file = max_rows;
    lance_staged *st = NULL;
    assert_og_ok(lance_stage_overwrite(&st, ds, &ds->schema, &b, 1, &wo));
    commit(st);
    arrow_batch_free(b);
    lance_dataset_free(ds);
}

/* A source that reloaded the whole table (no fragment shared with the base) with 5% of the
 * rows changed: each of base and source is read once, the rows rewritten unchanged are not
 * candidates, and the delta is the change alone; the full-read path agrees. */
static void test_cost_reload(void **state)
{
    fx *f = *state;
    core_buf b = CORE_BUF_INIT;
    for (int i = 0; i < 10000; i++)
        assert_og_ok(core_buf_printf(&b,
                                     "{\"type\":\"Person\",\"data\":{\"name\":\"p%05d\",\"age\":%d,"
                                     "\"score\":%d.5}}\n",
                                     i, i % 100, i));
    const char *seed[] = {core_buf_cstr(&b)};
    uint64_t base = create(f, f->person, PT, seed, 1, 500);
    assert_og_ok(lance_branch_create(f->s, PT, "src", NULL, base, NULL));
    assert_og_ok(lance_branch_create(f->s, PT, "tgt", NULL, base, NULL));
    /* the reload: every 20th row a new age (500), p09999 gone, one new row */
    core_buf_clear(&b);
    for (int i = 0; i < 9999; i++)
        assert_og_ok(core_buf_printf(&b,
                                     "{\"type\":\"Person\",\"data\":{\"name\":\"p%05d\",\"age\":%d,"
                                     "\"score\":%d.5}}\n",
                                     i, i % 20 ? i % 100 : 1000 + i, i));
    assert_og_ok(core_buf_printf(&b, "{\"type\":\"Person\",\"data\":{\"name\":\"new\"}}\n"));
    overwrite(f, PT, "src", core_buf_cstr(&b), 700);
    core_buf_free(&b);
    /* the target: a row the source kept, one it changed apart, one it changed alike */
    upsert(f, PT, "tgt",
           "{\"type\":\"Person\",\"data\":{\"name\":\"p00001\",\"age\":7,\"score\":1.5}}\n"
           "{\"type\":\"Person\",\"data\":{\"name\":\"p00020\",\"age\":7,\"score\":20.5}}\n"
           "{\"type\":\"Person\",\"data\":{\"name\":\"p00040\",\"age\":1040,\"score\":"
           "40.5}}\n");

    assert_og_ok(merge(f, f->person, PT, base, "src", "tgt", 0));
    /* 500 changed + 1 deleted + 1 inserted, less p00020 (a conflict) and p00040 (alike) */
    assert_int_equal(f->st.rows_changed, 500);
    assert_int_equal(f->delta.n_delete_ids, 1);
    assert_string_equal(f->delta.delete_ids[0], "p09999");
    assert_int_equal(f->conf.n, 1);
    assert_int_equal(f->conf.items[0].kind, GRAPH_CONFLICT_DIVERGENT_UPDATE);
    assert_string_equal(f->conf.items[0].id, "p00020");
    assert_int_equal(delta_int(f, "p00060", "age"), 1060);
    assert_int_equal(delta_int(f, "new", "age"), INT64_MIN);
    /* Base and source read once each (not ids, then every row again by address), and of the
     * target only what it changed: about twice the table, not four times. */
    assert_int_equal(f->st.fragments_shared, 20); /* the target's pair only */
    assert_true(f->st.rows_read >= 20000);
    assert_true(f->st.rows_read <= 20000 + 20);
    print_message("reload: %llu rows read, %llu changed\n", (unsigned long long)f->st.rows_read,
                  (unsigned long long)f->st.rows_changed);

    graph_change sharing = f->delta;
    memset(&f->delta, 0, sizeof f->delta);
    assert_og_ok(merge(f, f->person, PT, base, "src", "tgt", GRAPH_MERGE_FULL_READ));
    assert_true(arrow_batch_equal(sharing.rows, f->delta.rows));
    assert_int_equal(sharing.n_delete_ids, f->delta.n_delete_ids);
    assert_string_equal(f->delta.delete_ids[0], "p09999");
    assert_int_equal(f->conf.n, 1);
    assert_string_equal(f->conf.items[0].id, "p00020");
    assert_int_equal(f->st.rows_changed, 500);
    assert_int_equal(f->st.fragments_shared, 0);
    change_free(&sharing);
}

/* A property the tables do not have yet (added to the schema without rewriting them) reads as
 * null, on the reload path (rows scanned) and the shared path (rows taken by address) alike;
 * a column of another type than the schema's is refused. */
static void test_missing_column(void **state)
{
    fx *f = *state;
    const char *seed[] = {P(a, 1) P(b, 2) P(c, 3)};
    uint64_t base = create(f, f->person, PT, seed, 1, 0);
    assert_og_ok(lance_branch_create(f->s, PT, "src", NULL, base, NULL));
    assert_og_ok(lance_branch_create(f->s, PT, "re", NULL, base, NULL));
    upsert(f, PT, "src", P(b, 20));
    overwrite(f, PT, "re", P(a, 1) P(b, 20) P(c, 3), 0);
    static const char *wider = "node Person { name: String @key  age: I32?  score: F64?  tags: "
                               "[String]?  nick: String? }\n"
                               "edge Knows: Person -> Person { since: Date? }\n";
    static const char *other = "node Person { name: String @key  age: I64? }\n";
    lang_catalog *cats[2] = {NULL, NULL};
    assert_og_ok(lang_catalog_build(&cats[0], wider, strlen(wider), "w.pg", &f->diags));
    assert_og_ok(lang_catalog_build(&cats[1], other, strlen(other), "o.pg", &f->diags));
    int pi = lang_catalog_find(cats[0], "Person", LANG_NODE);
    for (int i = 0; i < 2; i++) {
        lance_dataset *b = NULL, *s = NULL, *t = NULL;
        assert_og_ok(lance_dataset_open(&b, f->s, PT, base, LANCE_ACCESS_READ));
        assert_og_ok(lance_branch_open(&s, f->s, PT, i ? "re" : "src", 0, NULL, LANCE_ACCESS_READ));
        assert_og_ok(lance_branch_open(&t, f->s, PT, NULL, 0, NULL, LANCE_ACCESS_READ));
        delta_clear(f);
        assert_og_ok(
            graph_merge_table(cats[0], pi, b, s, t, &f->delta, &f->changed, &f->conf, &f->st));
        assert_delta(f, "b", "");
        int nick = arrow_schema_find(&f->delta.rows->schema, "nick");
        assert_true(nick >= 0);
        assert_false(arrow_array_is_valid(f->delta.rows->columns[nick], 0));
        assert_int_equal(delta_int(f, "b", "age"), 20);
        assert_int_equal(f->st.fragments_shared, i ? 1 : 2); /* the target pair shares too */
        delta_clear(f);
        int oi = lang_catalog_find(cats[1], "Person", LANG_NODE);
        assert_int_equal(
            graph_merge_table(cats[1], oi, b, s, t, &f->delta, &f->changed, &f->conf, &f->st),
            OG_E_UNSUPPORTED);
        assert_non_null(strstr(og_error_last()->message, "column 'age'"));
        lance_dataset_free(b);
        lance_dataset_free(s);
        lance_dataset_free(t);
    }
    lang_catalog_free(cats[0]);
    lang_catalog_free(cats[1]);
}

/* Every allocation of a merge failing in turn: OG_E_NOMEM, nothing leaked, and once none
 * fails the whole result; for a source sharing the base's fragments and for a reloaded one. */
static void test_alloc_failures(void **state)
{
    fx *f = *state;
    const char *seed[] = {P(a, 1) P(b, 1), P(c, 1) P(d, 1)};
    uint64_t base = create(f, f->person, PT, seed, 2, 0);
    assert_og_ok(lance_branch_create(f->s, PT, "src", NULL, base, NULL));
    assert_og_ok(lance_branch_create(f->s, PT, "re", NULL, base, NULL));
    upsert(f, PT, "src", P(a, 2) P(c, 2) P(e, 1));
    delete_id(f, PT, "src", "b");
    overwrite(f, PT, "re", P(d, 1) P(a, 2) P(c, 2), 2);
    upsert(f, PT, "re", P(e, 1));
    upsert(f, PT, NULL, P(c, 3));
    for (int v = 0; v < 2; v++) {
        lance_dataset *ds[3] = {NULL, NULL, NULL};
        assert_og_ok(lance_dataset_open(&ds[0], f->s, PT, base, LANCE_ACCESS_READ));
        assert_og_ok(
            lance_branch_open(&ds[1], f->s, PT, v ? "re" : "src", 0, NULL, LANCE_ACCESS_READ));
        assert_og_ok(lance_branch_open(&ds[2], f->s, PT, NULL, 0, NULL, LANCE_ACCESS_READ));
        int done = 0;
        for (uint64_t n = 1; !done && n < 100000; n++) {
            delta_clear(f);
            core_alloc_fail_at(n, 0);
            int rc = graph_merge_table(f->cat, f->person, ds[0], ds[1], ds[2], &f->delta,
                                       &f->changed, &f->conf, &f->st);
            uint64_t injected = core_alloc_injected();
            core_alloc_fail_at(0, 0);
            if (rc && rc != OG_E_NOMEM)
                fail_msg("allocation %llu: %s", (unsigned long long)n, og_error_last()->message);
            if (rc == 0 && injected == 0) {
                assert_delta(f, "a,e", "b");
                assert_int_equal(f->conf.n, 1);
                done = 1;
            }
        }
        assert_true(done);
        for (int i = 0; i < 3; i++)
            lance_dataset_free(ds[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_truth_table, setup, teardown),
        cmocka_unit_test_setup_teardown(test_edges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_absent_tables, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cost_follows_change, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cost_five_percent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cost_reload, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_column, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alloc_failures, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
