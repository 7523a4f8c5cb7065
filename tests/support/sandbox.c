/* Sandboxes (sandbox.h): one temporary directory per test, removed at its end unless the
 * keep-temp switch OG_KEEP_TMP is on. */
#include "sandbox.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool test_keep_tmp(void)
{
    const char *k = getenv("OG_KEEP_TMP");
    return k && *k && strcmp(k, "0") != 0;
}

void test_sandbox_new(char *path, size_t cap, const char *tag)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    int n = snprintf(path, cap, "%s/og-%s-XXXXXX", base, tag && *tag ? tag : "test");
    if (n < 0 || (size_t)n >= cap)
        fail_msg("sandbox path under %s does not fit %zu bytes", base, cap);
    if (!mkdtemp(path)) fail_msg("cannot make the sandbox %s", path);
}

void test_sandbox_done(const char *path)
{
    if (!path || !*path) return;
    if (test_keep_tmp()) {
        fprintf(stderr, "OG_KEEP_TMP: kept %s\n", path);
        return;
    }
    test_rmrf(path);
}

store *test_sandbox_store(char *path, size_t cap, const char *tag)
{
    test_sandbox_new(path, cap, tag);
    store *s = NULL;
    assert_og_ok(store_local_open(&s, path));
    return s;
}

void test_sandbox_store_done(const char *path, store *s)
{
    store_close(s);
    test_sandbox_done(path);
}
