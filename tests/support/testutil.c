/* Test helpers. */
#define _XOPEN_SOURCE 700
#include "testutil.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void test_mkdtemp(char *path, size_t cap, const char *tag)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    snprintf(path, cap, "%s/og-%s-XXXXXX", base, tag ? tag : "test");
    if (!mkdtemp(path)) fail_msg("mkdtemp %s failed", path);
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(p);
    return 0;
}

void test_rmrf(const char *path)
{
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void test_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f) fail_msg("cannot write %s", path);
    if (len && fwrite(data, 1, len, f) != len) fail_msg("short write to %s", path);
    fclose(f);
}
