/* Shared test helpers: small assertions on og_error, running commands, writing files; every
 * test's temporary directory is a sandbox (sandbox.h). */
#ifndef OG_TESTUTIL_H
#define OG_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "omnigraph.h"
#include "sandbox.h"

/* rm -rf path (ignores errors): for things inside a sandbox; a sandbox itself ends with
 * test_sandbox_done, which honours the keep-temp switch. */
void test_rmrf(const char *path);
/* Write a file with contents (creating it), for tests that damage stored bytes. */
void test_write_file(const char *path, const void *data, size_t len);

/* Run a shell command and return its stdout (malloc'd); *exit_status is its exit code. */
char *test_capture(const char *cmd, int *exit_status);

/* Run a shell command line, from inside `dir` when `cd` is set: its stdout into out (at most
 * cap - 1 bytes, NUL-terminated; more is read and dropped, so the command never sees a broken
 * pipe), its stderr into err (through the file dir/stderr.txt) when err is not NULL. Returns
 * the exit status (-1 when a signal ended it). The CLI tests' common runner. */
int test_run(const char *dir, int cd, const char *cmdline, char *out, size_t cap, char *err,
             size_t ecap);

/* Assert that rc is `code` and the thread's error agrees and has a message. */
#define assert_og_error(rc, want)                                                                  \
    do {                                                                                           \
        int rc__ = (rc);                                                                           \
        if (rc__ != (want))                                                                        \
            fail_msg("expected %s, got %s (%d): %s", og_code_name(want), og_code_name(rc__), rc__, \
                     og_error_last()->message);                                                    \
        assert_int_equal(og_error_last()->code, (want));                                           \
        assert_true(og_error_last()->message[0] != '\0');                                          \
    } while (0)

#define assert_og_ok(rc)                                                                           \
    do {                                                                                           \
        int rc__ = (rc);                                                                           \
        if (rc__ != 0)                                                                             \
            fail_msg("expected ok, got %s: %s", og_code_name(rc__), og_error_last()->message);     \
    } while (0)

#endif
