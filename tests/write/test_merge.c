/* Branch merge through the public API (og_graph_merge), checked against the reference's
 * fixture truth table: base Alice, Bob, Carol, Dan and one edge Bob->Carol; every ordered pair
 * of the actions below, one on the source branch and one on the target (main), in both roles.
 * Outcomes are exact: already_up_to_date when the source did nothing, fast_forward when only
 * the source did something, divergent_insert / divergent_update / delete_vs_update /
 * orphan_edge for the listed pairs, merged otherwise; after a merge the target holds exactly
 * what applying both actions to the base gives (an oracle graph written by the same calls),
 * and the merge commit records the source head as its merged parent. Conflicts write nothing.
 * Also: merging twice is up to date, the merged parent is followed as the next base, merge
 * into a branch, --delete-branch, unknown branches, merging a branch into itself. */
#include "testutil.h"

#include "omnigraph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *SCHEMA = "node Person {\n"
                            "    name: String @key\n"
                            "    age: I32?\n"
                            "}\n"
                            "edge Knows: Person -> Person\n";

static const char *SEED = "{\"type\":\"Person\",\"data\":{\"name\":\"Alice\",\"age\":30}}\n"
                          "{\"type\":\"Person\",\"data\":{\"name\":\"Bob\",\"age\":40}}\n"
                          "{\"type\":\"Person\",\"data\":{\"name\":\"Carol\",\"age\":50}}\n"
                          "{\"type\":\"Person\",\"data\":{\"name\":\"Dan\",\"age\":60}}\n"
                          "{\"edge\":\"Knows\",\"from\":\"Bob\",\"to\":\"Carol\"}\n";

static const char *MUTATIONS =
    "query add($n: String, $a: I32?) { insert Person { name: $n, age: $a } }\n"
    "query set_age($n: String, $a: I32?) { update Person set { age: $a } where name = $n }\n"
    "query drop($n: String) { delete Person where name = $n }\n"
    "query knows($a: String, $b: String) { insert Knows { from: $a, to: $b } }\n";

static const char *READS =
    "query persons() { match { $p: Person } return { $p.name, $p.age } }\n"
    "query knows() { match { $a: Person  $a knows $b } return { $a.name, $b.name } }\n";

/* The actions: one mutation each (NULL query: nothing). */
typedef struct action {
    const char *name, *query, *params;
} action;

static const action ACTIONS[] = {
    {"noop", NULL, NULL},
    {"add Eve 25", "add", "{\"n\":\"Eve\",\"a\":25}"},
    {"add Eve 35", "add", "{\"n\":\"Eve\",\"a\":35}"},
    {"set Alice 31", "set_age", "{\"n\":\"Alice\",\"a\":31}"},
    {"set Alice 32", "set_age", "{\"n\":\"Alice\",\"a\":32}"},
    {"delete Alice", "drop", "{\"n\":\"Alice\"}"},
    {"Alice knows Carol", "knows", "{\"a\":\"Alice\",\"b\":\"Carol\"}"},
    {"set Bob 41", "set_age", "{\"n\":\"Bob\",\"a\":41}"},
    {"delete Dan", "drop", "{\"n\":\"Dan\"}"},
    {"add Frank", "add", "{\"n\":\"Frank\",\"a\":20}"},
};
#define N_ACTIONS (sizeof ACTIONS / sizeof ACTIONS[0])
enum { A_NOOP, A_EVE25, A_EVE35, A_ALICE31, A_ALICE32, A_DEL_ALICE, A_KNOWS, A_BOB, A_DEL_DAN };

/* The expected outcome of source action s merged into target action t: an og_merge_outcome,
 * or the name of the one conflict kind. */
static const char *expected(size_t s, size_t t)
{
    if (s == A_NOOP) return "already_up_to_date";
    if (t == A_NOOP) return "fast_forward";
    if ((s == A_EVE25 && t == A_EVE35) || (s == A_EVE35 && t == A_EVE25)) return "divergent_insert";
    if ((s == A_ALICE31 && t == A_ALICE32) || (s == A_ALICE32 && t == A_ALICE31))
        return "divergent_update";
    if ((s == A_DEL_ALICE && (t == A_ALICE31 || t == A_ALICE32)) ||
        (t == A_DEL_ALICE && (s == A_ALICE31 || s == A_ALICE32)))
        return "delete_vs_update";
    if ((s == A_DEL_ALICE && t == A_KNOWS) || (s == A_KNOWS && t == A_DEL_ALICE))
        return "orphan_edge";
    return "merged";
}

static og_graph *new_graph(char *dir, size_t cap)
{
    test_sandbox_new(dir, cap, "merge");
    og_init_options io = OG_INIT_OPTIONS_INIT;
    io.schema_source = SCHEMA;
    og_init_result *ir = NULL;
    assert_og_ok(og_root_init(&ir, dir, &io));
    og_init_result_free(ir);
    og_graph *g = NULL;
    og_open_options oo = OG_OPEN_OPTIONS_INIT;
    assert_og_ok(og_graph_open(&g, dir, &oo));
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = OG_LOAD_APPEND;
    og_write_result *wr = NULL;
    assert_og_ok(og_graph_load(&wr, g, "seed.jsonl", SEED, strlen(SEED), &lo));
    og_write_result_free(wr);
    return g;
}

static void act(og_graph *g, const char *branch, size_t a)
{
    if (!ACTIONS[a].query) return;
    og_mutate_options mo = OG_MUTATE_OPTIONS_INIT;
    mo.source = MUTATIONS;
    mo.name = ACTIONS[a].query;
    mo.params_json = ACTIONS[a].params;
    mo.branch = branch;
    og_write_result *wr = NULL;
    int rc = og_graph_mutate(&wr, g, &mo);
    if (rc) fail_msg("%s on %s: %s", ACTIONS[a].name, branch, og_error_last()->message);
    og_write_result_free(wr);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The rows of a read on a branch as one sorted text (rows joined by newlines). */
static char *read_text(og_graph *g, const char *branch, const char *name)
{
    og_query_options qo = OG_QUERY_OPTIONS_INIT;
    qo.source = READS;
    qo.name = name;
    qo.branch = branch;
    og_result *r = NULL;
    assert_og_ok(og_graph_query(&r, g, &qo));
    uint64_t n = og_result_row_count(r);
    char **rows = calloc(n ? n : 1, sizeof *rows);
    size_t total = 1;
    for (uint64_t i = 0; i < n; i++) {
        size_t len = 0;
        const char *j = og_result_row_json(r, i, &len);
        rows[i] = strndup(j, len);
        total += len + 1;
    }
    qsort(rows, n, sizeof *rows, cmp_str);
    char *out = calloc(1, total);
    for (uint64_t i = 0; i < n; i++) {
        strcat(out, rows[i]);
        strcat(out, "\n");
        free(rows[i]);
    }
    free(rows);
    og_result_free(r);
    return out;
}

static void assert_same_content(og_graph *a, const char *ba, og_graph *b, const char *bb,
                                const char *what)
{
    static const char *const reads[] = {"persons", "knows"};
    for (int i = 0; i < 2; i++) {
        char *x = read_text(a, ba, reads[i]), *y = read_text(b, bb, reads[i]);
        if (strcmp(x, y) != 0)
            fail_msg("%s: %s differ:\n%s--- expected:\n%s", what, reads[i], x, y);
        free(x);
        free(y);
    }
}

static const og_commit_info *head_commit(og_graph *g, const char *branch, og_commit_list **keep)
{
    assert_og_ok(og_graph_commits(
        keep, g, &(og_commit_options){.version = OG_COMMIT_OPTIONS_VERSION, .branch = branch}));
    assert_true(og_commit_list_count(*keep) > 0);
    return og_commit_list_get(*keep, 0);
}

/* One cell of the truth table: source action s on branch "src", target action t on main. */
static void one_pair(size_t s, size_t t, unsigned *n_merged, unsigned *n_conflicts)
{
    char dir[512], odir[512], what[128];
    snprintf(what, sizeof what, "source '%s' x target '%s'", ACTIONS[s].name, ACTIONS[t].name);
    og_graph *g = new_graph(dir, sizeof dir);
    assert_og_ok(og_graph_create_branch(NULL, g, "src", NULL));
    act(g, "src", s);
    act(g, NULL, t);
    og_commit_list *before = NULL;
    char main_head[OG_ID_LEN + 1], src_head[OG_ID_LEN + 1];
    snprintf(main_head, sizeof main_head, "%s", head_commit(g, NULL, &before)->id);
    og_commit_list_free(before);
    snprintf(src_head, sizeof src_head, "%s", head_commit(g, "src", &before)->id);
    og_commit_list_free(before);
    char *main_before = read_text(g, NULL, "persons");

    og_merge_result *r = NULL;
    int rc = og_graph_merge(
        &r, g, &(og_merge_options){.version = OG_MERGE_OPTIONS_VERSION, .source = "src"});
    const char *want = expected(s, t);
    bool conflict = strcmp(want, "merged") && strcmp(want, "fast_forward") &&
                    strcmp(want, "already_up_to_date");
    if (conflict) {
        if (rc != OG_E_MERGE_CONFLICTS)
            fail_msg("%s: expected %s, got %s (%s)", what, want, og_code_name(rc),
                     rc ? og_error_last()->message : og_merge_outcome_name(r->outcome));
        assert_non_null(r);
        assert_true(og_merge_result_conflict_count(r) >= 1);
        bool found = false;
        for (size_t i = 0; i < og_merge_result_conflict_count(r); i++)
            found |= strcmp(og_merge_result_conflict(r, i)->kind, want) == 0;
        if (!found)
            fail_msg("%s: no %s among %zu conflicts (first: %s %s)", what, want,
                     og_merge_result_conflict_count(r), og_merge_result_conflict(r, 0)->kind,
                     og_merge_result_conflict(r, 0)->message);
        /* nothing written: main is where it was */
        og_commit_list *after = NULL;
        assert_string_equal(head_commit(g, NULL, &after)->id, main_head);
        og_commit_list_free(after);
        char *now = read_text(g, NULL, "persons");
        assert_string_equal(now, main_before);
        free(now);
        (*n_conflicts)++;
    } else {
        if (rc)
            fail_msg("%s: expected %s, got %s: %s", what, want, og_code_name(rc),
                     og_error_last()->message);
        assert_string_equal(og_merge_outcome_name(r->outcome), want);
        assert_string_equal(r->source_head, src_head);
        og_commit_list *after = NULL;
        const og_commit_info *h = head_commit(g, NULL, &after);
        if (r->outcome == OG_MERGE_UP_TO_DATE) {
            assert_string_equal(r->commit, "");
            assert_string_equal(h->id, main_head);
        } else {
            assert_string_equal(h->id, r->commit);
            assert_string_equal(h->parent, main_head);
            assert_string_equal(h->merged_parent, src_head);
        }
        og_commit_list_free(after);
        /* the oracle: both actions applied to the base in one line of history */
        og_graph *o = new_graph(odir, sizeof odir);
        act(o, NULL, t);
        act(o, NULL, s);
        assert_same_content(g, NULL, o, NULL, what);
        og_graph_close(o);
        test_sandbox_done(odir);
        /* merging again changes nothing */
        og_merge_result *again = NULL;
        assert_og_ok(og_graph_merge(
            &again, g, &(og_merge_options){.version = OG_MERGE_OPTIONS_VERSION, .source = "src"}));
        assert_int_equal(again->outcome, OG_MERGE_UP_TO_DATE);
        og_merge_result_free(again);
        (*n_merged)++;
    }
    free(main_before);
    og_merge_result_free(r);
    og_graph_close(g);
    test_sandbox_done(dir);
}

static void test_truth_table(void **state)
{
    (void)state;
    unsigned merged = 0, conflicts = 0;
    for (size_t s = 0; s < N_ACTIONS; s++)
        for (size_t t = 0; t < N_ACTIONS; t++)
            one_pair(s, t, &merged, &conflicts);
    print_message("truth table: %zu pairs, %u merged or up to date, %u conflicts\n",
                  N_ACTIONS * N_ACTIONS, merged, conflicts);
    assert_int_equal(merged + conflicts, N_ACTIONS * N_ACTIONS);
    /* divergent inserts 2, divergent updates 2, delete vs update 4, orphan edges 2 */
    assert_int_equal(conflicts, 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_truth_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
