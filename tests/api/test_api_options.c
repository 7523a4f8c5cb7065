/* The options structs of the public API: each og_..._options_init() gives exactly what its
 * ..._INIT macro gives, refuses NULL and versions it does not know, and a call given an
 * unknown version fails with OG_E_BAD_REQUEST before doing anything. */
#include "testutil.h"

#include <string.h>

/* Filled with garbage, then initialised by the function: equal to the macro's struct. */
#define CHECK_INIT(type, INIT, VERSION, fn)                                                        \
    do {                                                                                           \
        static const type by_macro = INIT; /* static: its padding is zero too */                   \
        type by_fn;                                                                                \
        memset(&by_fn, 0x5a, sizeof by_fn);                                                        \
        assert_og_ok(fn(&by_fn, VERSION));                                                         \
        assert_int_equal(by_fn.version, VERSION);                                                  \
        assert_memory_equal(&by_fn, &by_macro, sizeof by_fn);                                      \
        assert_og_error(fn(&by_fn, 0), OG_E_BAD_REQUEST);                                          \
        assert_og_error(fn(&by_fn, VERSION + 1), OG_E_BAD_REQUEST);                                \
        assert_og_error(fn(NULL, VERSION), OG_E_BAD_REQUEST);                                      \
    } while (0)

static void test_options_init(void **state)
{
    (void)state;
    CHECK_INIT(og_selfcheck_options, OG_SELFCHECK_OPTIONS_INIT, OG_SELFCHECK_OPTIONS_VERSION,
               og_selfcheck_options_init);
    CHECK_INIT(og_schema_plan_options, OG_SCHEMA_PLAN_OPTIONS_INIT, OG_SCHEMA_PLAN_OPTIONS_VERSION,
               og_schema_plan_options_init);
    CHECK_INIT(og_lint_options, OG_LINT_OPTIONS_INIT, OG_LINT_OPTIONS_VERSION,
               og_lint_options_init);
    CHECK_INIT(og_scan_options, OG_SCAN_OPTIONS_INIT, OG_SCAN_OPTIONS_VERSION,
               og_scan_options_init);
    CHECK_INIT(og_init_options, OG_INIT_OPTIONS_INIT, OG_INIT_OPTIONS_VERSION,
               og_init_options_init);
    CHECK_INIT(og_open_options, OG_OPEN_OPTIONS_INIT, OG_OPEN_OPTIONS_VERSION,
               og_open_options_init);
    CHECK_INIT(og_load_options, OG_LOAD_OPTIONS_INIT, OG_LOAD_OPTIONS_VERSION,
               og_load_options_init);
    CHECK_INIT(og_optimize_options, OG_OPTIMIZE_OPTIONS_INIT, OG_OPTIMIZE_OPTIONS_VERSION,
               og_optimize_options_init);
    CHECK_INIT(og_cleanup_options, OG_CLEANUP_OPTIONS_INIT, OG_CLEANUP_OPTIONS_VERSION,
               og_cleanup_options_init);
    CHECK_INIT(og_query_options, OG_QUERY_OPTIONS_INIT, OG_QUERY_OPTIONS_VERSION,
               og_query_options_init);
    CHECK_INIT(og_mutate_options, OG_MUTATE_OPTIONS_INIT, OG_MUTATE_OPTIONS_VERSION,
               og_mutate_options_init);
    CHECK_INIT(og_export_options, OG_EXPORT_OPTIONS_INIT, OG_EXPORT_OPTIONS_VERSION,
               og_export_options_init);
    CHECK_INIT(og_backup_options, OG_BACKUP_OPTIONS_INIT, OG_BACKUP_OPTIONS_VERSION,
               og_backup_options_init);
    CHECK_INIT(og_recover_options, OG_RECOVER_OPTIONS_INIT, OG_RECOVER_OPTIONS_VERSION,
               og_recover_options_init);
    CHECK_INIT(og_repair_options, OG_REPAIR_OPTIONS_INIT, OG_REPAIR_OPTIONS_VERSION,
               og_repair_options_init);
    CHECK_INIT(og_verify_options, OG_VERIFY_OPTIONS_INIT, OG_VERIFY_OPTIONS_VERSION,
               og_verify_options_init);
    CHECK_INIT(og_branch_options, OG_BRANCH_OPTIONS_INIT, OG_BRANCH_OPTIONS_VERSION,
               og_branch_options_init);
    CHECK_INIT(og_merge_options, OG_MERGE_OPTIONS_INIT, OG_MERGE_OPTIONS_VERSION,
               og_merge_options_init);
    CHECK_INIT(og_snapshot_options, OG_SNAPSHOT_OPTIONS_INIT, OG_SNAPSHOT_OPTIONS_VERSION,
               og_snapshot_options_init);
    CHECK_INIT(og_commit_options, OG_COMMIT_OPTIONS_INIT, OG_COMMIT_OPTIONS_VERSION,
               og_commit_options_init);
    CHECK_INIT(og_schema_apply_options, OG_SCHEMA_APPLY_OPTIONS_INIT,
               OG_SCHEMA_APPLY_OPTIONS_VERSION, og_schema_apply_options_init);
    CHECK_INIT(og_schema_check_options, OG_SCHEMA_CHECK_OPTIONS_INIT,
               OG_SCHEMA_CHECK_OPTIONS_VERSION, og_schema_check_options_init);
    CHECK_INIT(og_query_lint_options, OG_QUERY_LINT_OPTIONS_INIT, OG_QUERY_LINT_OPTIONS_VERSION,
               og_query_lint_options_init);
}

/* A call refuses options of a version it does not know, naming the struct. */
static void test_unknown_version(void **state)
{
    (void)state;
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "api-options");
    og_open_options oo = OG_OPEN_OPTIONS_INIT;
    oo.version = OG_OPEN_OPTIONS_VERSION + 1;
    og_graph *g = NULL;
    assert_og_error(og_graph_open(&g, dir, &oo), OG_E_BAD_REQUEST);
    assert_null(g);
    assert_non_null(strstr(og_error_last()->message, "og_open_options"));
    og_selfcheck_options so = OG_SELFCHECK_OPTIONS_INIT;
    so.version = 0;
    assert_og_error(og_store_selfcheck(NULL, dir, &so), OG_E_BAD_REQUEST);
    assert_non_null(strstr(og_error_last()->message, "og_selfcheck_options"));
    test_sandbox_done(dir);
}

/* Every list accessor of a result struct takes NULL: a count of 0 and no item. */
static void test_list_accessors_take_null(void **state)
{
    (void)state;
    assert_int_equal(og_snapshot_info_table_count(NULL), 0);
    assert_null(og_snapshot_info_table(NULL, 0));
    assert_int_equal(og_merge_result_conflict_count(NULL), 0);
    assert_null(og_merge_result_conflict(NULL, 0));
    assert_int_equal(og_verify_report_problem_count(NULL), 0);
    assert_null(og_verify_report_problem(NULL, 0));
    assert_int_equal(og_schema_apply_result_violation_count(NULL), 0);
    assert_null(og_schema_apply_result_violation(NULL, 0));
    assert_int_equal(og_repair_result_damaged_count(NULL), 0);
    assert_null(og_repair_result_damaged(NULL, 0));
    assert_int_equal(og_repair_result_table_count(NULL), 0);
    assert_null(og_repair_result_table(NULL, 0));
    assert_int_equal(og_repair_result_ref_count(NULL), 0);
    assert_null(og_repair_result_ref(NULL, 0));
    assert_int_equal(og_repair_result_refless_count(NULL), 0);
    assert_null(og_repair_result_refless(NULL, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options_init),
        cmocka_unit_test(test_list_accessors_take_null),
        cmocka_unit_test(test_unknown_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
