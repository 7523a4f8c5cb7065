/* stderr logger; the level is read once from OG_LOG. */
#include "core/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_int g_level = -1;

static int level_from_env(void)
{
    const char *s = getenv("OG_LOG");
    if (!s) return CORE_LOG_WARN;
    if (strcmp(s, "error") == 0) return CORE_LOG_ERROR;
    if (strcmp(s, "info") == 0) return CORE_LOG_INFO;
    if (strcmp(s, "debug") == 0) return CORE_LOG_DEBUG;
    return CORE_LOG_WARN;
}

int core_log_enabled(core_log_level level)
{
    int l = atomic_load(&g_level);
    if (l < 0) {
        l = level_from_env();
        atomic_store(&g_level, l);
    }
    return (int)level <= l;
}

void core_log_set_level(core_log_level level)
{
    atomic_store(&g_level, (int)level);
}

void core_log(core_log_level level, const char *fmt, ...)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    if (!core_log_enabled(level)) return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "omnigraph %s: %s\n", names[level], line);
}
