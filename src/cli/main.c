/* omnigraph CLI entry point: dispatches to subcommands; knows only the public API. */
#include "omnigraph.h"
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmd_version(int argc, char **argv);
static int cmd_selfcheck(int argc, char **argv);
extern const cli_cmd cli_lang_commands[];    /* cmd_lang.c */
extern const cli_cmd cli_lance_commands[];   /* cmd_lance.c */
extern const cli_cmd cli_graph_commands[];   /* cmd_graph.c */
extern const cli_cmd cli_query_commands[];   /* cmd_query.c */
extern const cli_cmd cli_backup_commands[];  /* cmd_backup.c */
extern const cli_cmd cli_recover_commands[]; /* cmd_recover.c */
extern const cli_cmd cli_branch_commands[];  /* cmd_branch.c */
extern const cli_cmd cli_verify_commands[];  /* cmd_verify.c */

static const cli_cmd CORE_COMMANDS[] = {
    {"version", cmd_version, "print the version", "omnigraph version [--json]"},
    {"selfcheck", cmd_selfcheck, "check that a directory's filesystem gives durable atomic objects",
     "omnigraph selfcheck [--rounds N] [--json] DIR"},
    CLI_TABLE_END,
};

/* One line per cmd_*.c table. */
static const cli_cmd *const CLI_TABLES[] = {
    CORE_COMMANDS,        cli_lang_commands,   cli_lance_commands,
    cli_graph_commands,   cli_query_commands,  cli_backup_commands,
    cli_recover_commands, cli_branch_commands, cli_verify_commands,
};
#define NTABLES (sizeof CLI_TABLES / sizeof CLI_TABLES[0])

static const cli_cmd *find_cmd(const char *name)
{
    for (size_t t = 0; t < NTABLES; t++)
        for (const cli_cmd *c = CLI_TABLES[t]; c->name; c++)
            if (strcmp(c->name, name) == 0) return c;
    return NULL;
}

static void usage(FILE *f)
{
    fprintf(f,
            "omnigraph %s: an embedded, versioned, branchable property-graph database\n\n"
            "usage: omnigraph <command> [options]\n\ncommands:\n",
            og_version());
    for (size_t t = 0; t < NTABLES; t++)
        for (const cli_cmd *c = CLI_TABLES[t]; c->name; c++)
            fprintf(f, "  %-12s %s\n", c->name, c->summary);
    fprintf(f, "\n'omnigraph <command> --help' shows a command's options.\n"
               "exit codes: 0 ok, 1 error, 2 usage, 3 conflict with a concurrent writer,\n"
               "            4 precondition failed, 5 recovery required (an interrupted write\n"
               "            must be resolved first), 6 merge conflicts, 7 verify found damage\n");
}

/* The command list as one JSON object (omnigraph --help --json). */
static void usage_json(void)
{
    printf("{\"ok\":true,\"version\":");
    cli_json_str(stdout, og_version());
    printf(",\"commands\":[");
    int first = 1;
    for (size_t t = 0; t < NTABLES; t++)
        for (const cli_cmd *c = CLI_TABLES[t]; c->name; c++) {
            printf("%s{\"name\":", first ? "" : ",");
            cli_json_str(stdout, c->name);
            printf(",\"summary\":");
            cli_json_str(stdout, c->summary);
            printf(",\"usage\":");
            cli_json_str(stdout, c->usage);
            printf("}");
            first = 0;
        }
    printf("]}\n");
}

static int has_arg(int argc, char **argv, const char *a, const char *b)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], a) || (b && !strcmp(argv[i], b))) return 1;
    return 0;
}

static int wants_help(int argc, char **argv)
{
    return has_arg(argc, argv, "--help", "-h");
}

static int cmd_version(int argc, char **argv)
{
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else
            return cli_usage_error(find_cmd("version"), "unknown option '%s'", argv[i]);
    }
    if (json)
        printf("{\"version\":\"%s\"}\n", og_version());
    else
        printf("omnigraph %s\n", og_version());
    return CLI_OK;
}

static int cmd_selfcheck(int argc, char **argv)
{
    const cli_cmd *self = find_cmd("selfcheck");
    int json = 0;
    const char *dir = NULL;
    og_selfcheck_options opts = OG_SELFCHECK_OPTIONS_INIT;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (!strcmp(argv[i], "--rounds")) {
            if (i + 1 >= argc) return cli_usage_error(self, "--rounds needs a number");
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 100000)
                return cli_usage_error(self, "--rounds must be 1..100000, not '%s'", argv[i]);
            opts.rounds = (unsigned)v;
        } else if (argv[i][0] == '-') {
            return cli_usage_error(self, "unknown option '%s'", argv[i]);
        } else if (!dir) {
            dir = argv[i];
        } else {
            return cli_usage_error(self, "unexpected argument '%s'", argv[i]);
        }
    }
    if (!dir) return cli_usage_error(self, "missing DIR");
    og_selfcheck_result *r = NULL;
    if (og_store_selfcheck(&r, dir, &opts) != 0) return cli_fail(json);
    if (json) {
        printf("{\"ok\":true,\"rounds\":%u,\"store_ops\":%llu,\"fsyncs\":%llu,"
               "\"put_us_p50\":%.1f,\"put_if_absent_us_p50\":%.1f}\n",
               r->rounds, (unsigned long long)r->store_ops, (unsigned long long)r->fsyncs,
               r->put_us_p50, r->put_if_absent_us_p50);
    } else {
        printf("store self-check of %s: ok\n"
               "  %u rounds of durable put, create-if-absent (and its refusal), read-back\n"
               "  %llu store operations, %llu fsyncs\n"
               "  median durable put %.0f us, durable put_if_absent %.0f us\n",
               dir, r->rounds, (unsigned long long)r->store_ops, (unsigned long long)r->fsyncs,
               r->put_us_p50, r->put_if_absent_us_p50);
    }
    og_selfcheck_result_free(r);
    return CLI_OK;
}

/* The library's warnings and notices, on stderr; OG_LOG (error, warn, info, debug) sets how
 * much, warnings by default. */
static void log_to_stderr(void *arg, int level, const char *message)
{
    (void)arg;
    fprintf(stderr, "omnigraph %s: %s\n", og_log_level_name(level), message);
    if (level == OG_LOG_WARN) cli_warning_keep(message);
}

static int log_level_from_env(void)
{
    const char *s = getenv("OG_LOG");
    for (int l = OG_LOG_ERROR; s && l <= OG_LOG_DEBUG; l++)
        if (strcmp(s, og_log_level_name(l)) == 0) return l;
    return OG_LOG_WARN;
}

int main(int argc, char **argv)
{
    og_set_log(log_to_stderr, NULL, log_level_from_env());
    /* --json anywhere: every outcome, a usage error included, is one JSON object on stdout. */
    int json = has_arg(argc, argv, "--json", NULL);
    cli_set_json_requested(json);
    if (argc < 2) {
        cli_error_text("usage", "missing the command");
        usage(stderr);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        if (json)
            usage_json();
        else
            usage(stdout);
        return CLI_OK;
    }
    if (!strcmp(argv[1], "--version")) return cmd_version(argc - 1, argv + 1);
    const cli_cmd *c = find_cmd(argv[1]);
    if (!c) {
        if (json) return cli_usage_error(NULL, "unknown command '%s'", argv[1]);
        cli_error_text("usage", "unknown command '%s'", argv[1]);
        fputc('\n', stderr);
        usage(stderr);
        return CLI_USAGE;
    }
    if (wants_help(argc - 1, argv + 1)) {
        if (json) {
            printf("{\"ok\":true,\"command\":");
            cli_json_str(stdout, c->name);
            printf(",\"summary\":");
            cli_json_str(stdout, c->summary);
            printf(",\"usage\":");
            cli_json_str(stdout, c->usage);
            printf("}\n");
        } else {
            printf("usage: %s\n%s\n", c->usage, c->summary);
        }
        return CLI_OK;
    }
    return c->run(argc - 1, argv + 1);
}
