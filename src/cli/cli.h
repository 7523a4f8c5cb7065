/* The omnigraph command: a table of subcommands over the public API only, and the helpers
 * every command shares (cli.c): the one error printer with its exit codes, the input-file
 * reader, JSON string output. */
#ifndef OG_CLI_H
#define OG_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes: documented in `omnigraph --help` and README. */
enum {
    CLI_OK = 0,
    CLI_ERROR = 1,           /* the operation failed (details on stderr, or in --json output) */
    CLI_USAGE = 2,           /* bad command line */
    CLI_CONFLICT = 3,        /* a concurrent writer won (read_set_conflict, conflict) */
    CLI_PRECONDITION = 4,    /* precondition_failed (e.g. --if-commit) */
    CLI_RECOVERY = 5,        /* recovery_required: an interrupted write must be resolved first */
    CLI_MERGE_CONFLICTS = 6, /* branch merge found conflicts (each listed) */
    CLI_DAMAGED = 7,         /* verify found damage (it prints each problem) */
};

typedef struct cli_cmd {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    const char *usage;
} cli_cmd;

/* Each cmd_*.c file defines one table of commands ending with {NULL}; main.c lists the
 * tables in CLI_TABLES. */
#define CLI_TABLE_END                                                                              \
    {                                                                                              \
        NULL, NULL, NULL, NULL                                                                     \
    }

/* The exit code for an og_code (0 for OG_OK). */
int cli_exit_code(int code);
/* A byte count for people: "N bytes", "x.y KiB" from 10 KiB, "x.y MiB" from 10 MiB. */
void cli_print_bytes(uint64_t b);

/* Report the thread's last error (og_error_last()) and return cli_exit_code() of it.
 * json nonzero: one {"ok":false,"error":{...}} object on stdout with every detail the error
 * has. Otherwise on stderr: `omnigraph: error[CODE]: MESSAGE`; an error located in an input
 * file (a bad load line, a schema or .gq error) comes first as `FILE:LINE[:COLUMN]: MESSAGE`,
 * the form editors jump to, followed by `omnigraph: error[CODE]`. */
int cli_fail(int json);
/* Print `omnigraph: error[CODE]: MESSAGE` on stderr: the one text form of every error the CLI
 * prints (cli_fail, usage errors, unreadable input files and the CLI's own failures). An empty
 * message prints `omnigraph: error[CODE]` alone (after diagnostics located in a file). */
void cli_error_text(const char *code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same for a write the library refused as a whole (load, mutate): the text form adds that
 * nothing was written. */
int cli_fail_write(int json);
/* End a JSON object already under way on stdout (a streamed query result) with the thread's
 * last error: `,"ok":false,"error":{...}}` and a newline. Returns cli_exit_code() of it. */
int cli_fail_json_end(void);
/* A bad command line: `omnigraph: error[usage]: MESSAGE` and the command's usage on stderr, exit
 * CLI_USAGE. When the command line holds --json (cli_set_json_requested), instead one object on
 * stdout:
 * {"ok":false,"error":{"code":"usage","message":...,"usage":...}}. */
int cli_usage_error(const cli_cmd *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* main: whether argv holds --json, before any command parses it (a usage error may come first). */
void cli_set_json_requested(int on);

/* A whole input file (schema, query, JSONL data). A regular file is mapped, so a large load is
 * not copied; anything else (a pipe, /dev/stdin) is read into memory. */
typedef struct cli_file {
    const char *name; /* the path as given: diagnostics name the file by it */
    const char *data; /* len bytes, not NUL-terminated; never NULL ("" when empty) */
    size_t len;
    void *map_; /* the mapping, or NULL */
    char *buf_; /* the bytes read, or NULL */
} cli_file;

/* Read `path` whole into *f. On failure reports it like cli_fail (as JSON when json is set:
 * code not_found or storage, with the path as object) and returns CLI_ERROR; *f is then
 * empty and cli_file_close may still be called on it. */
int cli_file_open(cli_file *f, const char *path, int json);
void cli_file_close(cli_file *f);

/* Print a JSON string literal with escapes. */
void cli_json_str(FILE *f, const char *s);
/* A merge's conflicts (m) or a schema apply's violations (a; the other one NULL): a JSON array
 * of {kind, type, id, message} on stdout, or one indented line each on stderr. */
void cli_conflicts_json(const og_merge_result *m, const og_schema_apply_result *a);
void cli_conflicts_text(const og_merge_result *m, const og_schema_apply_result *a);
/* The library's warnings of this run (the log sink keeps them besides printing them): the
 * reads that can fall back past damage (commit list/show, snapshot, query) add them to their
 * --json object as ,"warnings":[...] (nothing when there were none). */
void cli_warning_keep(const char *message);
void cli_json_warnings(FILE *f);

struct og_write_result;
/* The tables a write changed, as the JSON array `load --json` and `mutate --json` print:
 * [{"alias","from_version","to_version","row_count"},...]. */
void cli_json_write_tables(FILE *f, const struct og_write_result *r);

struct og_intent_list;
/* The pending recovery intents as `snapshot` shows them (cmd_recover.c): a JSON array of
 * {"operation_id","writer_kind","state","damaged"}, or aligned text lines. */
void cli_json_intents(FILE *f, const struct og_intent_list *l);
void cli_text_intents(FILE *f, const struct og_intent_list *l);

#endif
