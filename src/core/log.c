/* The message sink: one process-wide function set by og_set_log(); no sink, no output. */
#include "core/log.h"

#include "omnigraph.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

static pthread_mutex_t sink_mu = PTHREAD_MUTEX_INITIALIZER;
static og_log_fn sink_fn;
static void *sink_arg;
static atomic_int sink_level = -1; /* -1: no sink */

void og_set_log(og_log_fn fn, void *arg, int max_level)
{
    pthread_mutex_lock(&sink_mu);
    sink_fn = fn;
    sink_arg = arg;
    atomic_store(&sink_level, fn ? max_level : -1);
    pthread_mutex_unlock(&sink_mu);
}

const char *og_log_level_name(int level)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    return level >= 0 && level <= CORE_LOG_DEBUG ? names[level] : "unknown";
}

int core_log_enabled(core_log_level level)
{
    return (int)level <= atomic_load(&sink_level);
}

void core_log(core_log_level level, const char *fmt, ...)
{
    if (!core_log_enabled(level)) return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* Under the lock, so a sink being replaced is never called after og_set_log returns. */
    pthread_mutex_lock(&sink_mu);
    if (sink_fn && (int)level <= atomic_load(&sink_level)) sink_fn(sink_arg, (int)level, line);
    pthread_mutex_unlock(&sink_mu);
}
