/* Sandboxes: every test that touches the filesystem works in a fresh directory of its own under
 * $TMPDIR (or /tmp), made by test_sandbox_new and ended by test_sandbox_done. The end removes
 * it, unless the keep-temp switch is on (OG_KEEP_TMP set to anything but "" or "0"): then the
 * directory stays and its path is printed on stderr, for a look at what a failing test left.
 * Crash enumeration (crashsim.h) makes one sandbox per crash point; under the switch it keeps
 * those whose invariant check failed (thousands of passing ones would only fill the disk). */
#ifndef OG_TEST_SANDBOX_H
#define OG_TEST_SANDBOX_H

#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>

/* Room for a sandbox path; the fixtures keep theirs in char[TEST_SANDBOX_PATH]. */
#define TEST_SANDBOX_PATH 256

/* true when OG_KEEP_TMP asks to keep sandboxes. */
bool test_keep_tmp(void);

/* Make a fresh directory "og-<tag>-XXXXXX" under $TMPDIR (or /tmp) into path (cap bytes);
 * the test fails if it cannot. */
void test_sandbox_new(char *path, size_t cap, const char *tag);
/* The end of a sandbox: remove it, or under OG_KEEP_TMP keep it and say where it is. NULL or
 * "" does nothing, so a teardown may call it for a sandbox never made. */
void test_sandbox_done(const char *path);

/* The common fixture of store, lance and graph tests: a new sandbox with a local store on it
 * (the test fails if either cannot be made), and its end (closes the store, then
 * test_sandbox_done). */
store *test_sandbox_store(char *path, size_t cap, const char *tag);
void test_sandbox_store_done(const char *path, store *s);

#endif
