/* The lancedb interop preamble, C side (interop.h). */
#include "interop.h"
#include "testutil.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static char g_dir[1024];

int test_interop_group_setup(void **state)
{
    (void)state;
    const char *src = getenv("OG_TEST_SRCDIR");
    snprintf(g_dir, sizeof g_dir, "%s/tests/interop", src && *src ? src : "..");
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s/setup.sh' 1>&2", g_dir);
    int st = system(cmd);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr,
                "interop: %s/setup.sh failed: node/npm or the pinned lancedb packages "
                "are unavailable, so the interop suite cannot run\n",
                g_dir);
        return -1;
    }
    return 0;
}

const char *test_interop_dir(void)
{
    if (!g_dir[0]) fail_msg("test_interop_dir() before test_interop_group_setup");
    return g_dir;
}

json_t *test_interop_tool(const char *tool, const char *fmt, ...)
{
    char args[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof args) fail_msg("%s: arguments too long", tool);
    char cmd[sizeof args + sizeof g_dir + 64];
    snprintf(cmd, sizeof cmd, "node '%s/%s' %s", test_interop_dir(), tool, args);
    int st = 0;
    char *out = test_capture(cmd, &st);
    if (st != 0) fail_msg("%s %s: exit status %d: %s", tool, args, st, out);
    json_error_t e;
    json_t *j = json_loads(out, 0, &e);
    if (!j) fail_msg("%s %s: bad JSON (%s): %s", tool, args, e.text, out);
    free(out);
    return j;
}

int64_t test_json_int(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) fail_msg("JSON field '%s' is not an integer", key);
    return (int64_t)json_integer_value(v);
}
