/* Minimal leveled logging to stderr. Level from OG_LOG (error, warn, info, debug);
 * default warn. */
#ifndef OG_CORE_LOG_H
#define OG_CORE_LOG_H

typedef enum core_log_level {
    CORE_LOG_ERROR = 0,
    CORE_LOG_WARN = 1,
    CORE_LOG_INFO = 2,
    CORE_LOG_DEBUG = 3,
} core_log_level;

void core_log(core_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int core_log_enabled(core_log_level level);
void core_log_set_level(core_log_level level);

#endif
