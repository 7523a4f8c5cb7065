/* The merge base of graph_merge_base over hand-built commit DAGs: linear histories (up to date,
 * fast-forward), a three-way merge, merged parents followed (two branches that merged the
 * same third branch use that commit), criss-cross refused naming both bases, unrelated
 * histories refused, and a commit whose row is unknown ending its path. */
#include "testutil.h"

#include "graph/merge.h"

#include <string.h>

/* A DAG written as "id:parent:merged" triples (one letter ids, padded to GRAPH_ID_LEN). */
typedef struct fake_dag {
    graph_commit c[32];
    size_t n;
} fake_dag;

static void pad(char *out, char id)
{
    memset(out, '0', GRAPH_ID_LEN);
    out[GRAPH_ID_LEN] = 0;
    if (id)
        out[GRAPH_ID_LEN - 1] = id;
    else
        out[0] = 0;
}

static void add(fake_dag *d, char id, char parent, char merged)
{
    graph_commit *c = &d->c[d->n++];
    memset(c, 0, sizeof *c);
    pad(c->id, id);
    pad(c->parent, parent);
    pad(c->merged_parent, merged);
}

static int lookup(void *arg, const char *id, const graph_commit **out)
{
    fake_dag *d = arg;
    *out = NULL;
    for (size_t i = 0; i < d->n; i++)
        if (strcmp(d->c[i].id, id) == 0) *out = &d->c[i];
    return 0;
}

static int base_of(fake_dag *d, char src, char tgt, graph_merge_base_result *r)
{
    char s[GRAPH_ID_LEN + 1], t[GRAPH_ID_LEN + 1];
    pad(s, src);
    pad(t, tgt);
    return graph_merge_base(s, t, lookup, d, r);
}

static char base_char(const graph_merge_base_result *r)
{
    return r->base[GRAPH_ID_LEN - 1];
}

/* a - b - c (main), b - d (dev) */
static void test_linear_and_three_way(void **state)
{
    (void)state;
    fake_dag d = {0};
    add(&d, 'a', 0, 0);
    add(&d, 'b', 'a', 0);
    add(&d, 'c', 'b', 0);
    add(&d, 'd', 'b', 0);
    graph_merge_base_result r;
    assert_og_ok(base_of(&d, 'c', 'c', &r));
    assert_int_equal(r.outcome, GRAPH_MERGE_UP_TO_DATE);
    assert_og_ok(base_of(&d, 'b', 'c', &r)); /* source behind target */
    assert_int_equal(r.outcome, GRAPH_MERGE_UP_TO_DATE);
    assert_int_equal(base_char(&r), 'b');
    assert_og_ok(base_of(&d, 'c', 'b', &r)); /* target behind source */
    assert_int_equal(r.outcome, GRAPH_MERGE_FAST_FORWARD);
    assert_og_ok(base_of(&d, 'd', 'c', &r));
    assert_int_equal(r.outcome, GRAPH_MERGE_MERGED);
    assert_int_equal(base_char(&r), 'b');
    assert_string_equal(graph_merge_outcome_name(r.outcome), "merged");
}

/* A merge commit's merged parent is followed: main a-b-m(merged d), dev b-d-e. Merging dev
 * into main again uses d as the base, not b (which would make d's changes look new twice). */
static void test_merged_parent_followed(void **state)
{
    (void)state;
    fake_dag d = {0};
    add(&d, 'a', 0, 0);
    add(&d, 'b', 'a', 0);
    add(&d, 'd', 'b', 0);
    add(&d, 'm', 'b', 'd');
    add(&d, 'e', 'd', 0);
    graph_merge_base_result r;
    assert_og_ok(base_of(&d, 'e', 'm', &r));
    assert_int_equal(r.outcome, GRAPH_MERGE_MERGED);
    assert_int_equal(base_char(&r), 'd');
    assert_og_ok(base_of(&d, 'd', 'm', &r));
    assert_int_equal(r.outcome, GRAPH_MERGE_UP_TO_DATE);
    /* and the other way: main merged into dev after that is a fast-forward of dev onto m? no:
     * dev moved on (e), so a three-way with base d */
    assert_og_ok(base_of(&d, 'm', 'e', &r));
    assert_int_equal(r.outcome, GRAPH_MERGE_MERGED);
    assert_int_equal(base_char(&r), 'd');
}

/* Two branches that both merged the same third branch: x and y forked at b; both merged
 * c (forked at b too). Their base is c, not b. */
static void test_shared_third_branch(void **state)
{
    (void)state;
    fake_dag d = {0};
    add(&d, 'a', 0, 0);
    add(&d, 'b', 'a', 0);
    add(&d, 'c', 'b', 0); /* branch C */
    add(&d, 'x', 'b', 0); /* branch X */
    add(&d, 'y', 'b', 0); /* branch Y */
    add(&d, 'p', 'x', 'c');
    add(&d, 'q', 'y', 'c');
    graph_merge_base_result r;
    assert_og_ok(base_of(&d, 'p', 'q', &r));
    assert_int_equal(r.outcome, GRAPH_MERGE_MERGED);
    assert_int_equal(base_char(&r), 'c');
}

/* Criss-cross: x and y both merged the other's earlier head. Two best bases: refused. */
static void test_criss_cross_refused(void **state)
{
    (void)state;
    fake_dag d = {0};
    add(&d, 'a', 0, 0);
    add(&d, 'x', 'a', 0);
    add(&d, 'y', 'a', 0);
    add(&d, 'p', 'x', 'y');
    add(&d, 'q', 'y', 'x');
    graph_merge_base_result r;
    int rc = base_of(&d, 'p', 'q', &r);
    assert_int_equal(rc, OG_E_CONFLICT);
    const char *msg = og_error_last()->message;
    assert_non_null(strstr(msg, "criss-cross"));
    char x[GRAPH_ID_LEN + 1], y[GRAPH_ID_LEN + 1];
    pad(x, 'x');
    pad(y, 'y');
    assert_non_null(strstr(msg, x));
    assert_non_null(strstr(msg, y));
    og_error_clear();
}

static void test_unrelated_and_unknown(void **state)
{
    (void)state;
    fake_dag d = {0};
    add(&d, 'a', 0, 0);
    add(&d, 'b', 'a', 0);
    add(&d, 'z', 0, 0); /* another root */
    graph_merge_base_result r;
    assert_int_equal(base_of(&d, 'b', 'z', &r), OG_E_CONFLICT);
    assert_non_null(strstr(og_error_last()->message, "no common ancestor"));
    og_error_clear();
    /* k's row is unknown (its branch was deleted): its path ends at it. Both heads merged it,
     * so k and b are candidates and nothing tells whether b is below k: refused, saying why */
    add(&d, 'm', 'b', 'k');
    add(&d, 'n', 'b', 'k');
    assert_int_equal(base_of(&d, 'm', 'n', &r), OG_E_CONFLICT);
    assert_non_null(strstr(og_error_last()->message, "cannot be determined"));
    og_error_clear();
    /* when the unknown commit is the only candidate it is the base (found by id) */
    add(&d, 'u', 0, 'k');
    add(&d, 'v', 0, 'k');
    assert_og_ok(base_of(&d, 'u', 'v', &r));
    assert_int_equal(base_char(&r), 'k');
    assert_true(r.visited > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_and_three_way),  cmocka_unit_test(test_merged_parent_followed),
        cmocka_unit_test(test_shared_third_branch),   cmocka_unit_test(test_criss_cross_refused),
        cmocka_unit_test(test_unrelated_and_unknown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
