/* Test helpers. */
#define _XOPEN_SOURCE 700
#include "testutil.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

char *test_capture(const char *cmd, int *exit_status)
{
    FILE *p = popen(cmd, "r");
    if (!p) fail_msg("cannot run %s", cmd);
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    size_t got;
    while ((got = fread(out + len, 1, cap - len - 1, p)) > 0) {
        len += got;
        if (cap - len < 2) out = realloc(out, cap *= 2);
    }
    out[len] = 0;
    int st = pclose(p);
    *exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return out;
}
