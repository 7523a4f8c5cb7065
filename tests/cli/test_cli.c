/* The omnigraph command: help, version, usage errors and exit codes, selfcheck output. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static char g_bin[512];

/* Run the CLI with args; capture stdout into out; return the exit status. */
static int run(const char *args, char *out, size_t cap)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s 2>/dev/null", g_bin, args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_help_and_version(void **state)
{
    (void)state;
    char out[8192];
    assert_int_equal(run("--help", out, sizeof out), 0);
    assert_non_null(strstr(out, "usage: omnigraph <command>"));
    assert_non_null(strstr(out, "selfcheck"));
    assert_int_equal(run("version", out, sizeof out), 0);
    assert_non_null(strstr(out, OG_VERSION_STRING));
    assert_int_equal(run("version --json", out, sizeof out), 0);
    assert_string_equal(out, "{\"version\":\"" OG_VERSION_STRING "\"}\n");
    assert_int_equal(run("selfcheck --help", out, sizeof out), 0);
    assert_non_null(strstr(out, "usage: omnigraph selfcheck"));
}

static void test_usage_errors(void **state)
{
    (void)state;
    char out[4096];
    assert_int_equal(run("", out, sizeof out), 2);
    assert_int_equal(run("frobnicate", out, sizeof out), 2);
    assert_int_equal(run("version --bogus", out, sizeof out), 2);
    assert_int_equal(run("selfcheck", out, sizeof out), 2);
    assert_int_equal(run("selfcheck --rounds 0 /tmp/x", out, sizeof out), 2);
}

static void test_selfcheck(void **state)
{
    (void)state;
    char dir[256], out[4096], args[512];
    test_sandbox_new(dir, sizeof dir, "cli");
    snprintf(args, sizeof args, "selfcheck --rounds 4 --json %s", dir);
    assert_int_equal(run(args, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"ok\":true"));
    assert_non_null(strstr(out, "\"rounds\":4"));
    snprintf(args, sizeof args, "selfcheck --rounds 2 %s", dir);
    assert_int_equal(run(args, out, sizeof out), 0);
    assert_non_null(strstr(out, "ok"));
    /* A root that cannot exist: exit 1 and a typed JSON error. */
    assert_int_equal(run("selfcheck --json /proc/none/here", out, sizeof out), 1);
    assert_non_null(strstr(out, "\"code\":\"storage\""));
    test_sandbox_done(dir);
}

int main(void)
{
    const char *bindir = getenv("OG_TEST_BINDIR");
    snprintf(g_bin, sizeof g_bin, "%s/omnigraph", bindir ? bindir : ".");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_and_version),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_selfcheck),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
