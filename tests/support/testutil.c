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

int test_run(const char *dir, int cd, const char *cmdline, char *out, size_t cap, char *err,
             size_t ecap)
{
    size_t n = strlen(cmdline) + 2 * strlen(dir) + 64;
    char *cmd = malloc(n), errf[1024];
    if (!cmd) fail_msg("out of memory");
    snprintf(errf, sizeof errf, "%s/stderr.txt", dir);
    if (cd)
        snprintf(cmd, n, "cd '%s' && %s 2>'%s'", dir, cmdline, errf);
    else
        snprintf(cmd, n, "%s 2>'%s'", cmdline, errf);
    FILE *p = popen(cmd, "r");
    if (!p) fail_msg("cannot run %s", cmd);
    free(cmd);
    size_t len = 0;
    char drop[4096];
    for (;;) {
        char *at = out && len + 1 < cap ? out + len : drop;
        size_t room = out && len + 1 < cap ? cap - 1 - len : sizeof drop;
        size_t got = fread(at, 1, room, p);
        if (got == 0) break;
        if (at != drop) len += got;
    }
    if (out && cap) out[len] = '\0';
    int st = pclose(p);
    if (err && ecap) {
        FILE *f = fopen(errf, "rb");
        if (!f) fail_msg("no stderr file %s", errf);
        size_t m = fread(err, 1, ecap - 1, f);
        err[m] = '\0';
        fclose(f);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
