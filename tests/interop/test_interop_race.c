/* Our commits and lancedb's on one 2.0 table. Two deterministic cases first, one per
 * direction: lancedb adds through a handle opened before our append and our delete landed
 * (lance must rebase over the transactions our manifests carry), and we commit an append staged
 * before lancedb's add landed (we must rebase over lance's). Then a free-running race: our
 * rebasing appends against lancedb's `add`s; no commit may be lost, and both sides must read
 * the final table identically (row for row, via the canonical dumps). */
#include "../lance/dataset_fixture.h"
#include "interop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define ROUNDS 15

static char g_bin[512];

static int group_setup(void **state)
{
    const char *bin = getenv("OG_TEST_BINDIR");
    snprintf(g_bin, sizeof g_bin, "%s/omnigraph", bin && *bin ? bin : ".");
    return test_interop_group_setup(state);
}

static void run_ok(const char *cmd)
{
    int st = system(cmd);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("command failed (%d): %s", st, cmd);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot read %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    *len = fread(b, 1, (size_t)n, f);
    b[*len] = '\0';
    fclose(f);
    return b;
}

static lance_dataset *make_table(store *s, arrow_schema *schema)
{
    fx_schema(schema);
    lance_dataset *d1 = NULL, *d2 = NULL;
    assert_og_ok(lance_dataset_create(&d1, s, "r.lance", schema, NULL));
    arrow_batch *b = fx_batch(schema, 0, 10);
    assert_og_ok(lance_dataset_append(&d2, d1, &b, 1));
    arrow_batch_free(b);
    lance_dataset_free(d1);
    return d2;
}

/* lancedb's handle is opened at version 2; we append (v3) and delete ids 0..4 (v4); then lancedb
 * adds through its stale handle: it has to read our two transactions to rebase, and lands v5. */
static void test_lancedb_rebases_over_ours(void **state)
{
    (void)state;
    char dir[256], gate[300], cmd[2048], line[4096];
    test_sandbox_new(dir, sizeof dir, "interop-stale");
    store *s = NULL;
    assert_og_ok(store_local_open(&s, dir));
    arrow_schema schema;
    lance_dataset *ds = make_table(s, &schema);
    snprintf(gate, sizeof gate, "%s/gate", dir);
    snprintf(cmd, sizeof cmd, "node '%s/race_tool.cjs' stale-add '%s' r 500000 '%s'",
             test_interop_dir(), dir, gate);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(line, sizeof line, p));
    assert_string_equal(line, "ready\n");

    lance_dataset *d3 = NULL, *d4 = NULL;
    arrow_batch *b = fx_batch(&schema, 100, 3);
    assert_og_ok(lance_dataset_append(&d3, ds, &b, 1));
    arrow_batch_free(b);
    lance_term t = {"id", ARROW_CMP_LT, {.kind = ARROW_INT64, .i = 5}};
    lance_filter fl = {&t, 1};
    assert_og_ok(lance_dataset_delete(&d4, d3, &fl));
    assert_int_equal(lance_dataset_version(d4), 4);
    FILE *g = fopen(gate, "w");
    assert_non_null(g);
    fclose(g);

    size_t got = fread(line, 1, sizeof line - 1, p);
    line[got] = '\0';
    int rc = pclose(p);
    if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 0) fail_msg("lancedb's stale add failed: %s", line);
    assert_string_equal(line, "{\"opened\":2,\"version\":5}\n");

    lance_dataset *fin = NULL;
    assert_og_ok(lance_dataset_open(&fin, s, "r.lance", 0, LANCE_ACCESS_READ));
    assert_int_equal(lance_dataset_version(fin), 5);
    int64_t sum, rows;
    fx_ids(fin, &sum, &rows);
    assert_int_equal(rows, 5 + 3 + 2); /* ids 5..9, 100..102, 500000..1 */
    assert_int_equal(sum, 35 + 303 + 1000001);
    lance_dataset_free(fin);
    lance_dataset_free(ds);
    lance_dataset_free(d3);
    lance_dataset_free(d4);
    arrow_schema_clear(&schema);
    test_sandbox_store_done(dir, s);
}

/* We stage an append at version 2; lancedb adds (v3) before we commit: our commit must read
 * lance's transaction, rebase over it and land v4 with both sides' rows. */
static void test_we_rebase_over_lancedb(void **state)
{
    (void)state;
    char dir[256], cmd[2048];
    test_sandbox_new(dir, sizeof dir, "interop-rebase");
    store *s = NULL;
    assert_og_ok(store_local_open(&s, dir));
    arrow_schema schema;
    lance_dataset *ds = make_table(s, &schema);
    arrow_batch *b = fx_batch(&schema, 200, 2);
    lance_staged *st = NULL;
    assert_og_ok(lance_stage_append(&st, ds, &b, 1, NULL));
    arrow_batch_free(b);
    snprintf(cmd, sizeof cmd, "node '%s/race_tool.cjs' add '%s' r 700000 1 > /dev/null",
             test_interop_dir(), dir);
    run_ok(cmd);
    lance_commit_options o = {1, LANCE_COMMIT_REBASE, 100};
    lance_commit_result r;
    lance_dataset *out = NULL;
    assert_og_ok(lance_staged_commit_ex(st, &o, &out, &r));
    assert_int_equal(r.rebased_over, 1);
    assert_int_equal(lance_dataset_version(out), 4);
    int64_t sum, rows;
    fx_ids(out, &sum, &rows);
    assert_int_equal(rows, 10 + 2 + 2);
    assert_int_equal(sum, 45 + 401 + 1400001);
    lance_staged_free(st);
    lance_dataset_free(out);
    lance_dataset_free(ds);
    arrow_schema_clear(&schema);
    test_sandbox_store_done(dir, s);
}

static void test_race_with_lancedb(void **state)
{
    (void)state;
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "interop-race");
    store *s = NULL;
    assert_og_ok(store_local_open(&s, dir));
    arrow_schema schema;
    fx_schema(&schema);
    lance_dataset *d1 = NULL, *d2 = NULL;
    assert_og_ok(lance_dataset_create(&d1, s, "r.lance", &schema, NULL));
    arrow_batch *b = fx_batch(&schema, 0, 10);
    assert_og_ok(lance_dataset_append(&d2, d1, &b, 1));
    arrow_batch_free(b);
    lance_dataset_free(d1);
    lance_dataset_free(d2);

    /* lancedb starts adding; we start once it has the table open. */
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "node '%s/race_tool.cjs' add '%s' r 100000 %d", test_interop_dir(),
             dir, ROUNDS);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[4096];
    assert_non_null(fgets(line, sizeof line, p));
    assert_string_equal(line, "ready\n");
    unsigned rebased = 0;
    for (int i = 0; i < ROUNDS; i++) {
        lance_dataset *ds = NULL;
        lance_staged *st = NULL;
        assert_og_ok(lance_dataset_open(&ds, s, "r.lance", 0, LANCE_ACCESS_WRITE));
        b = fx_batch(&schema, 200000 + 2 * i, 2);
        assert_og_ok(lance_stage_append(&st, ds, &b, 1, NULL));
        lance_commit_options o = {1, LANCE_COMMIT_REBASE, 100};
        lance_commit_result r;
        assert_og_ok(lance_staged_commit_ex(st, &o, NULL, &r));
        rebased += r.rebased_over;
        lance_staged_free(st);
        arrow_batch_free(b);
        lance_dataset_free(ds);
    }
    size_t got = fread(line, 1, sizeof line - 1, p);
    line[got] = '\0';
    int rc = pclose(p);
    if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 0) fail_msg("lancedb side failed: %s", line);
    print_message("race: we rebased over %u lancedb commits; lancedb said %s", rebased, line);

    /* Nothing lost: 10 + 2*ROUNDS from each side, one version per commit. */
    lance_dataset *fin = NULL;
    assert_og_ok(lance_dataset_open(&fin, s, "r.lance", 0, LANCE_ACCESS_READ));
    int64_t sum, rows;
    fx_ids(fin, &sum, &rows);
    assert_int_equal(rows, 10 + 4 * ROUNDS);
    int64_t want = 45;
    for (int i = 0; i < 2 * ROUNDS; i++)
        want += 100000 + i + 200000 + i;
    assert_int_equal(sum, want);
    assert_int_equal(lance_dataset_version(fin), 2 + 2 * ROUNDS);
    lance_dataset_free(fin);

    /* Both sides read the same table: lancedb's count and canonical dump equal ours. */
    snprintf(cmd, sizeof cmd, "node '%s/race_tool.cjs' count '%s' r > '%s/count.json'",
             test_interop_dir(), dir, dir);
    run_ok(cmd);
    char path[512];
    snprintf(path, sizeof path, "%s/count.json", dir);
    size_t n;
    char *cnt = slurp(path, &n);
    char want_cnt[128];
    snprintf(want_cnt, sizeof want_cnt, "{\"count\":%d,\"idsum\":\"%lld\",\"version\":%d}\n",
             10 + 4 * ROUNDS, (long long)want, 2 + 2 * ROUNDS);
    assert_string_equal(cnt, want_cnt);
    free(cnt);
    snprintf(cmd, sizeof cmd, "node '%s/lance_tool.cjs' dump '%s' r --out '%s/theirs.jsonl'",
             test_interop_dir(), dir, dir);
    run_ok(cmd);
    snprintf(cmd, sizeof cmd, "'%s' lance cat '%s/r.lance' --json > '%s/ours.jsonl'", g_bin, dir,
             dir);
    run_ok(cmd);
    size_t n1, n2;
    snprintf(path, sizeof path, "%s/theirs.jsonl", dir);
    char *theirs = slurp(path, &n1);
    snprintf(path, sizeof path, "%s/ours.jsonl", dir);
    char *ours = slurp(path, &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(theirs, ours, n1);
    free(theirs);
    free(ours);
    arrow_schema_clear(&schema);
    test_sandbox_store_done(dir, s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lancedb_rebases_over_ours),
        cmocka_unit_test(test_we_rebase_over_lancedb),
        cmocka_unit_test(test_race_with_lancedb),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
