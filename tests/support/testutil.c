/* Test helpers. */
#define _XOPEN_SOURCE 700
#include "testutil.h"

#include <jansson.h>
#include <fcntl.h>
#include <stdarg.h>
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

int test_interop_setup(char *src_dir, size_t cap)
{
    const char *src = getenv("OG_TEST_SRCDIR");
    snprintf(src_dir, cap, "%s/tests/interop", src && *src ? src : "..");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s/setup.sh' 1>&2", src_dir);
    int st = system(cmd);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "interop: %s/setup.sh failed: node/npm or the pinned lancedb packages "
                        "are unavailable, so the interop suite cannot run\n",
                src_dir);
        return -1;
    }
    return 0;
}

json_t *test_node_json(const char *src_dir, const char *tool, const char *args)
{
    size_t need = strlen(src_dir) + strlen(tool) + strlen(args) + 16;
    char *cmd = malloc(need);
    snprintf(cmd, need, "node '%s/%s' %s", src_dir, tool, args);
    int st = 0;
    char *out = test_capture(cmd, &st);
    free(cmd);
    if (st != 0) fail_msg("%s %s: exit status %d: %s", tool, args, st, out);
    json_error_t e;
    json_t *j = json_loads(out, 0, &e);
    if (!j) fail_msg("%s %s: bad JSON (%s): %s", tool, args, e.text, out);
    free(out);
    return j;
}

json_t *test_node_jsonf(const char *src_dir, const char *tool, const char *fmt, ...)
{
    char args[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof args) fail_msg("%s: arguments too long", tool);
    return test_node_json(src_dir, tool, args);
}

int64_t test_json_int(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) fail_msg("JSON field '%s' is not an integer", key);
    return (int64_t)json_integer_value(v);
}
