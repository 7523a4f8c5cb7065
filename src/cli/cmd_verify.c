/* omnigraph verify: check a graph root's invariants and files without writing to it, one line
 * per problem found, and exit 7 when there is any. Uses only the public API (docs/cli.md,
 * "omnigraph verify"; docs/maintenance.md, "Verifying a graph"). */
#include "omnigraph.h"
#include "cli.h"

#include <stdio.h>
#include <string.h>

static int cmd_verify(int argc, char **argv);

const cli_cmd cli_verify_commands[] = {
    {"verify", cmd_verify, "check a graph's invariants and files; exit 7 when damage is found",
     "omnigraph verify [--deep] [--json] (--store ROOT | ROOT)"},
    CLI_TABLE_END,
};

static void progress(void *arg, const char *what)
{
    (void)arg;
    fprintf(stderr, "omnigraph verify: %s\n", what);
}

static int cmd_verify(int argc, char **argv)
{
    const cli_cmd *self = &cli_verify_commands[0];
    const char *root = NULL;
    int json = 0, deep = 0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--json")) {
            json = 1;
        } else if (!strcmp(o, "--deep")) {
            deep = 1;
        } else if (!strcmp(o, "--store")) {
            if (i + 1 >= argc || !argv[i + 1][0])
                return cli_usage_error(self, "--store needs a value");
            if (root) return cli_usage_error(self, "the root is given twice");
            root = argv[++i];
        } else if (o[0] == '-' && o[1]) {
            return cli_usage_error(self, "unknown option '%s'", o);
        } else {
            if (root) return cli_usage_error(self, "unexpected argument '%s'", o);
            root = o;
        }
    }
    if (!root) return cli_usage_error(self, "missing the graph root (--store ROOT or ROOT)");
    og_verify_options o = OG_VERIFY_OPTIONS_INIT;
    o.deep = deep;
    if (deep && !json) o.progress = progress;
    og_verify_report *r = NULL;
    if (og_root_verify(&r, root, &o) != 0) return cli_fail(json);
    if (json) {
        printf("{\"ok\":%s,\"root\":", og_verify_report_problem_count(r) ? "false" : "true");
        cli_json_str(stdout, root);
        printf(",\"deep\":%s,\"problems\":[", deep ? "true" : "false");
        for (size_t i = 0; i < og_verify_report_problem_count(r); i++) {
            const og_verify_problem *p = og_verify_report_problem(r, i);
            printf("%s{\"kind\":", i ? "," : "");
            cli_json_str(stdout, p->kind);
            printf(",\"object\":");
            cli_json_str(stdout, p->object);
            printf(",\"message\":");
            cli_json_str(stdout, p->message);
            printf(",\"remedy\":");
            cli_json_str(stdout, p->remedy);
            printf("}");
        }
        printf("],\"checked\":{\"manifest_versions\":%llu,\"tables\":%llu,\"table_versions\":%llu,"
               "\"files\":%llu,\"bytes\":%llu,\"checksummed\":%llu,\"unchecked\":%llu,"
               "\"rows\":%llu,\"sidecars\":%llu,\"branches\":%llu}}\n",
               (unsigned long long)r->manifest_versions, (unsigned long long)r->tables,
               (unsigned long long)r->table_versions, (unsigned long long)r->files,
               (unsigned long long)r->bytes, (unsigned long long)r->checksummed,
               (unsigned long long)r->unchecked, (unsigned long long)r->rows,
               (unsigned long long)r->sidecars, (unsigned long long)r->branches);
    } else {
        for (size_t i = 0; i < og_verify_report_problem_count(r); i++) {
            const og_verify_problem *p = og_verify_report_problem(r, i);
            printf("%s: %s: %s (remedy: %s)\n", p->kind, p->object, p->message, p->remedy);
        }
        printf("%s: %zu problem%s; checked %llu manifest versions, %llu tables, %llu table "
               "versions, %llu files (",
               og_verify_report_problem_count(r) ? "damaged" : "ok",
               og_verify_report_problem_count(r), og_verify_report_problem_count(r) == 1 ? "" : "s",
               (unsigned long long)r->manifest_versions, (unsigned long long)r->tables,
               (unsigned long long)r->table_versions, (unsigned long long)r->files);
        cli_print_bytes(r->bytes);
        printf("), %llu with checksums, %llu unchecked, %llu sidecars",
               (unsigned long long)r->checksummed, (unsigned long long)r->unchecked,
               (unsigned long long)r->sidecars);
        if (r->branches) printf(", %llu branches", (unsigned long long)r->branches);
        if (deep) printf(", %llu rows decoded", (unsigned long long)r->rows);
        printf("\n");
    }
    int code = og_verify_report_problem_count(r) ? CLI_DAMAGED : CLI_OK;
    og_verify_report_free(r);
    return code;
}
