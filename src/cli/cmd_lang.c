/* omnigraph schema check|plan|show and omnigraph lint: the language layer at the shell. Uses only
 * the public API. Diagnostics go to stderr as file:line:col: severity[CODE]: message, then the
 * source line and a caret under the column. */
#include "omnigraph.h"
#include "cli.h"

#include <stdio.h>
#include <string.h>

static int cmd_schema(int argc, char **argv);
static int cmd_lint(int argc, char **argv);

const cli_cmd cli_lang_commands[] = {
    {"schema", cmd_schema, "check a .pg schema, plan or apply a change, or show a graph's schema",
     "omnigraph schema check FILE.pg [--json] | omnigraph schema plan --from OLD.pg --to NEW.pg "
     "[--allow-data-loss] [--json] | omnigraph schema plan --schema NEW.pg (--store ROOT) "
     "[--allow-data-loss] [--json] | omnigraph schema apply --schema NEW.pg --store ROOT "
     "[--allow-data-loss] [--json] | omnigraph schema show (--store ROOT | ROOT) [--branch B] "
     "[--at COMMIT] [--json]"},
    {"lint", cmd_lint, "type-check and lint .gq queries against a .pg schema or a graph's",
     "omnigraph lint --schema FILE.pg [--query] FILE.gq [--json] | omnigraph lint --store ROOT "
     "[--branch B] [--at COMMIT] [--query] FILE.gq [--json]"},
    CLI_TABLE_END,
};

static void print_diag(const og_diagnostic *d, const cli_file *files, size_t n_files)
{
    fprintf(stderr, "%s:%d:%d: %s[%s]: %s\n", d->file, d->line, d->column,
            d->severity == OG_DIAG_ERROR ? "error" : "warning", d->code, d->message);
    const cli_file *f = NULL;
    for (size_t i = 0; i < n_files; i++)
        if (files[i].name && !strcmp(files[i].name, d->file)) f = &files[i];
    if (!f || d->line < 1) return;
    const char *p = f->data, *end = f->data + f->len;
    for (int l = 1; l < d->line && p < end; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) return;
        p = nl + 1;
    }
    const char *e = memchr(p, '\n', (size_t)(end - p));
    if (!e) e = end;
    int len = (int)(e - p);
    if (len > 0 && p[len - 1] == '\r') len--;
    fprintf(stderr, "  %.*s\n  ", len, p);
    for (int c = 1; c < d->column && c <= len; c++)
        fputc(p[c - 1] == '\t' ? '\t' : ' ', stderr);
    fprintf(stderr, "^\n");
}

/* Print the report and map the call's status to an exit code. */
static int finish(int rc, og_lang_report *r, int json, const cli_file *files, size_t n_files)
{
    if (!r) return cli_fail(json);
    if (json) {
        printf("%s\n", og_lang_report_json(r));
    } else {
        size_t n = og_lang_report_diagnostic_count(r);
        for (size_t i = 0; i < n; i++)
            print_diag(og_lang_report_diagnostic(r, i), files, n_files);
        fputs(og_lang_report_text(r), stdout);
        /* The diagnostics located the errors; the code closes them, as for a bad load line. */
        if (rc) cli_error_text(og_code_name(rc), "%s", n ? "" : og_error_last()->message);
    }
    og_lang_report_free(r);
    return cli_exit_code(rc);
}

static int schema_check(const cli_cmd *self, int argc, char **argv)
{
    int json = 0;
    const char *path = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (argv[i][0] == '-' && argv[i][1])
            return cli_usage_error(self, "unknown option '%s'", argv[i]);
        else if (!path)
            path = argv[i];
        else
            return cli_usage_error(self, "unexpected argument '%s'", argv[i]);
    }
    if (!path) return cli_usage_error(self, "schema check needs FILE.pg");
    cli_file f;
    if (cli_file_open(&f, path, json)) return CLI_ERROR;
    og_lang_report *r = NULL;
    og_schema_check_options o = OG_SCHEMA_CHECK_OPTIONS_INIT;
    o.source = f.data;
    o.source_len = f.len;
    o.source_file = f.name;
    int rc = og_schema_check(&r, &o);
    int ex = finish(rc, r, json, &f, 1);
    cli_file_close(&f);
    return ex;
}

static int schema_plan(const cli_cmd *self, int argc, char **argv)
{
    int json = 0, allow = 0;
    const char *from = NULL, *to = NULL, *root = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--allow-data-loss"))
            allow = 1;
        else if (!strcmp(argv[i], "--from") || !strcmp(argv[i], "--to") ||
                 !strcmp(argv[i], "--schema") || !strcmp(argv[i], "--store")) {
            if (i + 1 >= argc) return cli_usage_error(self, "%s needs a value", argv[i]);
            const char **v = argv[i][2] == 'f'   ? &from
                             : argv[i][2] == 't' ? &to
                             : argv[i][3] == 'c' ? &to /* --schema: the desired schema */
                                                 : &root;
            if (*v) return cli_usage_error(self, "%s given twice", argv[i]);
            *v = argv[++i];
        } else {
            return cli_usage_error(self, "unexpected argument '%s'", argv[i]);
        }
    }
    if (root && from)
        return cli_usage_error(self, "schema plan takes --store ROOT or --from OLD.pg, not both");
    if ((!from && !root) || !to)
        return cli_usage_error(self, "schema plan needs --from OLD.pg and --to NEW.pg, or "
                                     "--schema NEW.pg and --store ROOT");
    cli_file f[2];
    og_schema_info *accepted = NULL;
    if (root) {
        /* against the graph's accepted schema */
        og_graph *g = NULL;
        og_open_options oo = OG_OPEN_OPTIONS_INIT;
        oo.read_only = 1;
        if (og_graph_open(&g, root, &oo) != 0) return cli_fail(json);
        int grc = og_graph_schema(&accepted, g, NULL);
        og_graph_close(g);
        if (grc != 0) return cli_fail(json);
        memset(&f[0], 0, sizeof f[0]);
        f[0].name = "accepted schema";
        f[0].data = accepted->source;
        f[0].len = accepted->source_len;
    } else if (cli_file_open(&f[0], from, json)) {
        return CLI_ERROR;
    }
    if (cli_file_open(&f[1], to, json)) {
        if (accepted)
            og_schema_info_free(accepted);
        else
            cli_file_close(&f[0]);
        return CLI_ERROR;
    }
    og_schema_plan_options o = OG_SCHEMA_PLAN_OPTIONS_INIT;
    o.from_source = f[0].data;
    o.from_source_len = f[0].len;
    o.from_file = f[0].name;
    o.to_source = f[1].data;
    o.to_source_len = f[1].len;
    o.to_file = f[1].name;
    o.allow_data_loss = allow;
    og_lang_report *r = NULL;
    int rc = og_schema_plan(&r, &o);
    int ex = finish(rc, r, json, f, 2);
    if (accepted)
        og_schema_info_free(accepted);
    else
        cli_file_close(&f[0]);
    cli_file_close(&f[1]);
    return ex;
}

static int schema_show(const cli_cmd *self, int argc, char **argv)
{
    int json = 0;
    const char *root = NULL, *branch = NULL, *at = NULL;
    for (int i = 2; i < argc; i++) {
        const char **v = NULL;
        if (!strcmp(argv[i], "--json")) {
            json = 1;
            continue;
        }
        if (!strcmp(argv[i], "--store"))
            v = &root;
        else if (!strcmp(argv[i], "--branch"))
            v = &branch;
        else if (!strcmp(argv[i], "--at"))
            v = &at;
        if (v) {
            if (i + 1 >= argc || !argv[i + 1][0])
                return cli_usage_error(self, "%s needs a value", argv[i]);
            if (*v) return cli_usage_error(self, "%s given twice", argv[i]);
            *v = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error(self, "unknown option '%s'", argv[i]);
        } else if (!root) {
            root = argv[i];
        } else {
            return cli_usage_error(self, "unexpected argument '%s'", argv[i]);
        }
    }
    if (!root) return cli_usage_error(self, "missing the graph root (--store ROOT or ROOT)");
    og_graph *g = NULL;
    og_open_options oo = OG_OPEN_OPTIONS_INIT;
    oo.read_only = 1;
    if (og_graph_open(&g, root, &oo) != 0) return cli_fail(json);
    og_schema_info *si = NULL;
    og_snapshot_options so = OG_SNAPSHOT_OPTIONS_INIT;
    so.branch = branch;
    so.at = at;
    if (og_graph_schema(&si, g, &so) != 0) {
        int rc = cli_fail(json);
        og_graph_close(g);
        return rc;
    }
    if (json) {
        printf("{\"ok\":true,\"branch\":");
        cli_json_str(stdout, si->branch);
        printf(",\"commit\":\"%s\",\"identity\":\"%s\",\"source\":", si->commit, si->identity);
        cli_json_str(stdout, si->source);
        printf(",\"catalog\":%s}\n", si->catalog_json);
    } else {
        fwrite(si->source, 1, si->source_len, stdout);
        if (si->source_len && si->source[si->source_len - 1] != '\n') putchar('\n');
    }
    og_schema_info_free(si);
    og_graph_close(g);
    return CLI_OK;
}

static int schema_apply(const cli_cmd *self, int argc, char **argv)
{
    int json = 0, allow = 0;
    const char *to = NULL, *root = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--allow-data-loss"))
            allow = 1;
        else if (!strcmp(argv[i], "--schema") || !strcmp(argv[i], "--store")) {
            const char **v = argv[i][3] == 'c' ? &to : &root;
            if (i + 1 >= argc || !argv[i + 1][0])
                return cli_usage_error(self, "%s needs a value", argv[i]);
            if (*v) return cli_usage_error(self, "%s given twice", argv[i]);
            *v = argv[++i];
        } else {
            return cli_usage_error(self, "unexpected argument '%s'", argv[i]);
        }
    }
    if (!to || !root)
        return cli_usage_error(self, "schema apply needs --schema NEW.pg and --store ROOT");
    cli_file f;
    if (cli_file_open(&f, to, json)) return CLI_ERROR;
    og_graph *g = NULL;
    og_open_options oo = OG_OPEN_OPTIONS_INIT;
    if (og_graph_open(&g, root, &oo) != 0) {
        cli_file_close(&f);
        return cli_fail(json);
    }
    og_schema_apply_options ao = OG_SCHEMA_APPLY_OPTIONS_INIT;
    ao.allow_data_loss = allow;
    ao.source_file = to;
    og_schema_apply_result *r = NULL;
    ao.source = f.data;
    ao.source_len = f.len;
    int rc = og_graph_schema_apply(&r, g, &ao);
    int ex = CLI_OK;
    if (rc != 0 && !r) {
        ex = cli_fail(json);
    } else if (rc != 0) {
        /* existing data the new schema refuses: every violation */
        if (json) {
            printf("{\"ok\":false,\"error\":{\"code\":");
            cli_json_str(stdout, og_code_name(rc));
            printf(",\"message\":");
            cli_json_str(stdout, og_error_last()->message);
            printf("},\"violations\":");
            cli_conflicts_json(NULL, r);
            printf("}\n");
        } else {
            cli_error_text(og_code_name(rc), "%s", og_error_last()->message);
            cli_conflicts_text(NULL, r);
        }
        ex = cli_exit_code(rc);
    } else if (json) {
        printf("{\"ok\":true,\"applied\":%s,\"commit\":", r->applied ? "true" : "false");
        if (r->applied)
            printf("\"%s\"", r->commit);
        else
            printf("null");
        printf(",\"from\":\"%s\",\"to\":\"%s\",\"tables_rewritten\":%zu,"
               "\"tables_created\":%zu,\"tables_renamed\":%zu,\"tables_dropped\":%zu,"
               "\"rows_rewritten\":%llu,\"plan\":%s}\n",
               r->from_identity, r->to_identity, r->tables_rewritten, r->tables_created,
               r->tables_renamed, r->tables_dropped, (unsigned long long)r->rows_rewritten,
               r->plan_json);
    } else if (!r->applied) {
        printf("schema unchanged: %s is the accepted schema already\n", to);
    } else {
        printf("applied %s: commit %s, schema %s -> %s (%zu table%s rewritten, %zu created, "
               "%zu renamed, %zu dropped)\n",
               to, r->commit, r->from_identity, r->to_identity, r->tables_rewritten,
               r->tables_rewritten == 1 ? "" : "s", r->tables_created, r->tables_renamed,
               r->tables_dropped);
    }
    og_schema_apply_result_free(r);
    og_graph_close(g);
    cli_file_close(&f);
    return ex;
}

static int cmd_schema(int argc, char **argv)
{
    const cli_cmd *self = &cli_lang_commands[0];
    if (argc < 2) return cli_usage_error(self, "missing subcommand (check, plan, apply or show)");
    if (!strcmp(argv[1], "check")) return schema_check(self, argc, argv);
    if (!strcmp(argv[1], "plan")) return schema_plan(self, argc, argv);
    if (!strcmp(argv[1], "show")) return schema_show(self, argc, argv);
    if (!strcmp(argv[1], "apply")) return schema_apply(self, argc, argv);
    return cli_usage_error(self, "unknown subcommand '%s'", argv[1]);
}

static int cmd_lint(int argc, char **argv)
{
    const cli_cmd *self = &cli_lang_commands[1];
    int json = 0;
    const char *schema = NULL, *query = NULL, *root = NULL, *branch = NULL, *at = NULL;
    for (int i = 1; i < argc; i++) {
        const char **v = NULL;
        if (!strcmp(argv[i], "--json")) {
            json = 1;
            continue;
        }
        if (!strcmp(argv[i], "--schema"))
            v = &schema;
        else if (!strcmp(argv[i], "--query"))
            v = &query;
        else if (!strcmp(argv[i], "--store"))
            v = &root;
        else if (!strcmp(argv[i], "--branch"))
            v = &branch;
        else if (!strcmp(argv[i], "--at"))
            v = &at;
        if (v) {
            if (i + 1 >= argc || !argv[i + 1][0])
                return cli_usage_error(self, "%s needs a value", argv[i]);
            if (*v && v == &query) return cli_usage_error(self, "more than one query file");
            if (*v) return cli_usage_error(self, "%s given twice", argv[i]);
            *v = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error(self, "unknown option '%s'", argv[i]);
        } else if (!query) {
            query = argv[i];
        } else {
            return cli_usage_error(self, "unexpected argument '%s'", argv[i]);
        }
    }
    if (schema && root)
        return cli_usage_error(self, "lint takes --schema FILE.pg or --store ROOT, not both");
    if (!schema && !root)
        return cli_usage_error(self, "lint needs --schema FILE.pg or --store ROOT");
    if (!root && (branch || at))
        return cli_usage_error(self, "--branch and --at need --store ROOT");
    if (!query) return cli_usage_error(self, "lint needs a FILE.gq");
    cli_file f[2];
    og_lang_report *r = NULL;
    int rc, ex;
    if (root) {
        /* against the schema of the graph at that commit (the head's: the accepted one) */
        if (cli_file_open(&f[0], query, json)) return CLI_ERROR;
        og_graph *g = NULL;
        og_open_options oo = OG_OPEN_OPTIONS_INIT;
        oo.read_only = 1;
        if (og_graph_open(&g, root, &oo) != 0) {
            cli_file_close(&f[0]);
            return cli_fail(json);
        }
        og_lint_options lo = OG_LINT_OPTIONS_INIT;
        lo.source = f[0].data;
        lo.source_len = f[0].len;
        lo.source_file = f[0].name;
        lo.branch = branch;
        lo.at = at;
        rc = og_graph_lint(&r, g, &lo);
        ex = finish(rc, r, json, f, 1);
        og_graph_close(g);
        cli_file_close(&f[0]);
        return ex;
    }
    if (cli_file_open(&f[0], schema, json)) return CLI_ERROR;
    if (cli_file_open(&f[1], query, json)) {
        cli_file_close(&f[0]);
        return CLI_ERROR;
    }
    og_query_lint_options o = OG_QUERY_LINT_OPTIONS_INIT;
    o.schema_source = f[0].data;
    o.schema_source_len = f[0].len;
    o.schema_file = f[0].name;
    o.source = f[1].data;
    o.source_len = f[1].len;
    o.source_file = f[1].name;
    rc = og_query_lint(&r, &o);
    ex = finish(rc, r, json, f, 2);
    cli_file_close(&f[0]);
    cli_file_close(&f[1]);
    return ex;
}
