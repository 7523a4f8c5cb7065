/* Leveled messages from inside the library. They go to the sink the embedder set with
 * og_set_log() (the CLI sets one that prints to stderr), or nowhere: the library itself never
 * writes to stdout or stderr. */
#ifndef OG_CORE_LOG_H
#define OG_CORE_LOG_H

typedef enum core_log_level {
    CORE_LOG_ERROR = 0,
    CORE_LOG_WARN = 1,
    CORE_LOG_INFO = 2,
    CORE_LOG_DEBUG = 3,
} core_log_level;

void core_log(core_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Is a sink set that takes messages of this level? (Skip building costly messages if not.) */
int core_log_enabled(core_log_level level);

#endif
