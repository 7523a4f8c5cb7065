/* The omnigraph command: a table of subcommands over the public API only. */
#ifndef OG_CLI_H
#define OG_CLI_H

#include <stdio.h>

/* Exit codes: documented in `omnigraph --help` and README. */
enum {
    CLI_OK = 0,
    CLI_ERROR = 1,        /* the operation failed (details on stderr, or in --json output) */
    CLI_USAGE = 2,        /* bad command line */
    CLI_CONFLICT = 3,     /* a concurrent writer won (read_set_conflict, conflict) */
    CLI_PRECONDITION = 4, /* precondition_failed (e.g. --if-commit) */
    CLI_RECOVERY = 5,     /* recovery_required: an interrupted write must be resolved first */
};

typedef struct cli_cmd {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    const char *usage;
} cli_cmd;

/* Each cmd_*.c file defines one table of commands ending with {NULL}; main.c lists the
 * tables in CLI_TABLES. */
#define CLI_TABLE_END {NULL, NULL, NULL, NULL}

/* Print the thread's last error to stderr (or as JSON to stdout when json is set) and
 * return the exit code that fits it. */
int cli_fail(int json);
int cli_usage_error(const cli_cmd *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print a JSON string literal with escapes. */
void cli_json_str(FILE *f, const char *s);

#endif
