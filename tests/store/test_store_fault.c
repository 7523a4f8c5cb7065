/* The fault store: injected errors, torn/lost/misdirected writes, crashes in both modes,
 * counters and the op log. */
#include "testutil.h"

#include "store/store.h"

#include <string.h>

typedef struct fixture {
    char dir[256];
    store *local;
    store *s;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->local = test_sandbox_store(f->dir, sizeof f->dir, "fault");
    assert_og_ok(store_fault_open(&f->s, f->local, 0));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    store_close(f->s);
    test_sandbox_store_done(f->dir, f->local);
    free(f);
    return 0;
}

static int read_str(store *s, const char *key, char *out, size_t cap)
{
    core_buf b = CORE_BUF_INIT;
    int rc = store_get(s, key, 0, STORE_ALL, &b);
    if (rc == 0) snprintf(out, cap, "%.*s", (int)b.len, (const char *)b.data);
    core_buf_free(&b);
    return rc;
}

static void test_fail_nth(void **state)
{
    fixture *f = *state;
    char got[64];
    store_fault_fail_nth(f->s, 2, STORE_OP_BIT(STORE_OP_PUT), STORE_FAULT_EIO);
    assert_og_ok(store_put(f->s, "a", "1", 1, 0));
    assert_og_error(store_put(f->s, "b", "2", 1, 0), OG_E_STORAGE);
    assert_int_equal(og_error_last()->storage_kind, OG_STORAGE_IO);
    assert_string_equal(og_error_last()->object, "b");
    assert_og_error(read_str(f->local, "b", got, sizeof got), OG_E_NOT_FOUND);
    assert_og_ok(store_put(f->s, "c", "3", 1, 0)); /* only the nth fails */

    store_fault_fail_nth(f->s, 1, STORE_OPS_DURABLE, STORE_FAULT_ENOSPC);
    assert_og_error(store_put_if_absent(f->s, "d", "4", 1, 0), OG_E_STORAGE);
    assert_int_equal(og_error_last()->storage_kind, OG_STORAGE_NO_SPACE);

    /* Gets are not in the mask: they do not consume the countdown. */
    store_fault_fail_nth(f->s, 1, STORE_OP_BIT(STORE_OP_DELETE), STORE_FAULT_EIO);
    assert_og_ok(read_str(f->s, "a", got, sizeof got));
    assert_og_error(store_delete(f->s, "a", 0), OG_E_STORAGE);
    assert_og_ok(read_str(f->local, "a", got, sizeof got));
}

static void test_gone_after_listing(void **state)
{
    fixture *f = *state;
    assert_og_ok(store_put(f->s, "p/x", "1", 1, 0));
    store_list l;
    assert_og_ok(store_list_prefix(f->s, "p/", 0, &l));
    assert_int_equal(l.count, 1);
    store_fault_fail_nth(f->s, 1, STORE_OP_BIT(STORE_OP_GET), STORE_FAULT_NOT_FOUND);
    char got[8];
    assert_og_error(read_str(f->s, l.items[0].key, got, sizeof got), OG_E_NOT_FOUND);
    store_list_free(&l);
}

static void test_torn_lost_misdirected(void **state)
{
    fixture *f = *state;
    char got[64];
    store_fault_fail_nth(f->s, 1, STORE_OP_BIT(STORE_OP_PUT), STORE_FAULT_TORN);
    assert_og_ok(store_put(f->s, "torn", "0123456789", 10, 0));
    assert_og_ok(read_str(f->local, "torn", got, sizeof got));
    assert_string_equal(got, "01234");

    assert_og_ok(store_put(f->s, "lost", "old", 3, 0));
    store_fault_fail_nth(f->s, 1, STORE_OP_BIT(STORE_OP_PUT), STORE_FAULT_LOST);
    assert_og_ok(store_put(f->s, "lost", "new", 3, 0));
    assert_og_ok(read_str(f->local, "lost", got, sizeof got));
    assert_string_equal(got, "old");

    store_fault_fail_nth(f->s, 1, STORE_OP_BIT(STORE_OP_PUT_IF_ABSENT), STORE_FAULT_LOST);
    assert_og_ok(store_put_if_absent(f->s, "lost2", "x", 1, 0));
    assert_og_error(read_str(f->local, "lost2", got, sizeof got), OG_E_NOT_FOUND);
    /* A lost create still may not claim a taken name. */
    store_fault_fail_nth(f->s, 1, STORE_OP_BIT(STORE_OP_PUT_IF_ABSENT), STORE_FAULT_LOST);
    assert_og_error(store_put_if_absent(f->s, "lost", "x", 1, 0), OG_E_EXISTS);

    store_fault_fail_nth(f->s, 1, STORE_OP_BIT(STORE_OP_PUT), STORE_FAULT_MISDIRECTED);
    assert_og_ok(store_put(f->s, "aim", "payload", 7, 0));
    assert_og_error(read_str(f->local, "aim", got, sizeof got), OG_E_NOT_FOUND);
    assert_og_ok(read_str(f->local, "aim.misdirected", got, sizeof got));
    assert_string_equal(got, "payload");
}

static void test_crash_process(void **state)
{
    fixture *f = *state;
    char got[64];
    store_fault_crash_after(f->s, 2, STORE_CRASH_PROCESS);
    assert_og_ok(store_put(f->s, "one", "1", 1, 0));
    assert_og_ok(read_str(f->s, "one", got, sizeof got)); /* reads are not durable ops */
    assert_og_ok(store_put(f->s, "two", "2", 1, STORE_F_NOSYNC));
    assert_true(store_fault_crashed(f->s));
    assert_og_error(store_put(f->s, "three", "3", 1, 0), OG_E_STORAGE);
    assert_int_equal(og_error_last()->storage_kind, OG_STORAGE_CRASHED);
    assert_og_error(read_str(f->s, "one", got, sizeof got), OG_E_STORAGE);
    /* A process crash keeps everything that completed, synced or not. */
    assert_og_ok(read_str(f->local, "one", got, sizeof got));
    assert_og_ok(read_str(f->local, "two", got, sizeof got));
    assert_og_error(read_str(f->local, "three", got, sizeof got), OG_E_NOT_FOUND);
    assert_int_equal(store_fault_durable_ops(f->s), 2);
}

static void test_crash_power_loss(void **state)
{
    fixture *f = *state;
    char got[64];
    assert_og_ok(store_put(f->s, "pre", "before", 6, 0));
    assert_og_ok(store_put(f->s, "gone", "here", 4, 0));
    for (uint64_t seed = 1; seed <= 16; seed++) {
        store_fault_set_seed(f->s, seed);
        store_fault_crash_after(f->s, 0, STORE_CRASH_POWER_LOSS);
        assert_og_ok(store_put(f->s, "synced", "durable", 7, 0));
        assert_og_ok(store_put(f->s, "pre", "AFTER-LONGER", 12, STORE_F_NOSYNC));
        assert_og_ok(store_put(f->s, "fresh", "volatile", 8, STORE_F_NOSYNC));
        assert_og_ok(store_put(f->s, "kept", "synced-later", 12, STORE_F_NOSYNC));
        const char *k[] = {"kept"};
        assert_og_ok(store_sync(f->s, k, 1));
        assert_og_ok(store_delete(f->s, "gone", STORE_F_NOSYNC));
        store_fault_crash_now(f->s, STORE_CRASH_POWER_LOSS);
        assert_og_ok(read_str(f->local, "synced", got, sizeof got));
        assert_string_equal(got, "durable");
        assert_og_ok(read_str(f->local, "kept", got, sizeof got));
        assert_string_equal(got, "synced-later");
        /* Unsynced: the old object, or a torn prefix of the new one. */
        assert_og_ok(read_str(f->local, "pre", got, sizeof got));
        assert_true(strcmp(got, "before") == 0 || strncmp("AFTER-LONGER", got, strlen(got)) == 0);
        assert_true(strcmp(got, "AFTER-LONGER") != 0);
        int rc = read_str(f->local, "fresh", got, sizeof got);
        assert_true(rc == OG_E_NOT_FOUND ||
                    (rc == 0 && strlen(got) < 8 && strncmp("volatile", got, strlen(got)) == 0));
        /* An unsynced delete comes undone. */
        assert_og_ok(read_str(f->local, "gone", got, sizeof got));
        assert_string_equal(got, "here");
        /* Reset for the next seed. */
        store_close(f->s);
        assert_og_ok(store_put(f->local, "pre", "before", 6, 0));
        assert_og_ok(store_delete(f->local, "fresh", 0));
        assert_og_ok(store_fault_open(&f->s, f->local, 0));
    }
}

static void test_oplog(void **state)
{
    fixture *f = *state;
    char got[8];
    assert_og_ok(store_put(f->s, "l1", "x", 1, 0));
    assert_og_error(read_str(f->s, "l2", got, sizeof got), OG_E_NOT_FOUND);
    assert_og_ok(store_delete(f->s, "l1", 0));
    size_t n;
    const store_oplog_entry *log = store_fault_log(f->s, &n);
    assert_int_equal(n, 3);
    assert_int_equal(log[0].kind, STORE_OP_PUT);
    assert_string_equal(log[0].key, "l1");
    assert_true(log[0].durable);
    assert_int_equal(log[1].kind, STORE_OP_GET);
    assert_int_equal(log[1].rc, OG_E_NOT_FOUND);
    assert_false(log[1].durable);
    assert_int_equal(log[2].kind, STORE_OP_DELETE);
    assert_int_equal(log[2].seq, 3);
    store_counts c;
    store_counts_get(f->s, &c);
    assert_int_equal(c.durable_ops, 2);
    assert_int_equal(c.fsyncs, 3); /* put: file + dir; delete: dir */
    assert_string_equal(store_op_name(STORE_OP_PUT_IF_ABSENT), "put_if_absent");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fail_nth, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gone_after_listing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_lost_misdirected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_process, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_power_loss, setup, teardown),
        cmocka_unit_test_setup_teardown(test_oplog, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
