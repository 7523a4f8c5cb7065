/* omnigraph branch create|list|delete|merge: the graph's branches (docs/cli.md, "Branches"). Uses
 * only the public API. */
#include "omnigraph.h"
#include "cli.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static int cmd_branch(int argc, char **argv);

const cli_cmd cli_branch_commands[] = {
    {"branch", cmd_branch, "create, list, delete or merge the branches of a graph",
     "omnigraph branch create NAME [--from BRANCH] [--at COMMIT] [--json] (--store ROOT | ROOT) | "
     "omnigraph branch list [--json] (--store ROOT | ROOT) | "
     "omnigraph branch delete NAME [--json] (--store ROOT | ROOT) | "
     "omnigraph branch merge SOURCE [--into TARGET] [--delete-branch] [--json] "
     "(--store ROOT | ROOT)"},
    CLI_TABLE_END,
};

typedef struct branch_args {
    const char *root, *name, *from, *at, *into;
    int json, delete_branch;
} branch_args;

enum { SUB_OTHER, SUB_CREATE, SUB_MERGE };

/* argv[2..argc): the options, NAME (create, delete, merge) and the root. */
static int parse(branch_args *a, int argc, char **argv, int wants_name, int sub)
{
    int create = sub == SUB_CREATE;
    const cli_cmd *self = &cli_branch_commands[0];
    memset(a, 0, sizeof *a);
    const char *words[2] = {NULL, NULL};
    int n_words = 0;
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i];
        const char **value = NULL;
        if (!strcmp(o, "--json")) {
            a->json = 1;
            continue;
        }
        if (sub == SUB_MERGE && !strcmp(o, "--delete-branch")) {
            a->delete_branch = 1;
            continue;
        }
        if (!strcmp(o, "--store"))
            value = &a->root;
        else if (create && !strcmp(o, "--from"))
            value = &a->from;
        else if (create && !strcmp(o, "--at"))
            value = &a->at;
        else if (sub == SUB_MERGE && !strcmp(o, "--into"))
            value = &a->into;
        if (value) {
            if (i + 1 >= argc || !argv[i + 1][0])
                return cli_usage_error(self, "%s needs a value", o);
            if (*value) return cli_usage_error(self, "%s given twice", o);
            *value = argv[++i];
        } else if (o[0] == '-' && o[1]) {
            return cli_usage_error(self, "unknown option '%s'", o);
        } else {
            if (n_words == wants_name + 1)
                return cli_usage_error(self, "unexpected argument '%s'", o);
            words[n_words++] = o;
        }
    }
    int w = 0;
    if (wants_name) {
        if (n_words == 0) return cli_usage_error(self, "missing the branch NAME");
        a->name = words[w++];
    }
    if (w < n_words) {
        if (a->root)
            return cli_usage_error(self, "the root is given twice (--store and '%s')", words[w]);
        a->root = words[w];
    }
    if (!a->root) return cli_usage_error(self, "missing the graph root (--store ROOT or ROOT)");
    return 0;
}

static int open_graph(og_graph **g, const char *root, int read_only)
{
    og_open_options o = OG_OPEN_OPTIONS_INIT;
    o.read_only = read_only;
    return og_graph_open(g, root, &o);
}

static void json_id_or_null(const char *id)
{
    if (id && *id)
        printf("\"%s\"", id);
    else
        fputs("null", stdout);
}

static void print_branch_json(const og_branch_info *b)
{
    printf("{\"name\":");
    cli_json_str(stdout, b->name);
    printf(",\"head\":");
    json_id_or_null(b->head);
    printf(",\"parent\":");
    if (b->parent)
        cli_json_str(stdout, b->parent);
    else
        fputs("null", stdout);
    printf(",\"forked_from\":");
    json_id_or_null(b->forked_from);
    printf(",\"manifest_version\":%llu,\"created_at_us\":",
           (unsigned long long)b->manifest_version);
    if (b->created_at_us)
        printf("%lld", (long long)b->created_at_us);
    else
        fputs("null", stdout);
    putchar('}');
}

static void format_time(char *out, size_t cap, int64_t us)
{
    if (!us) {
        snprintf(out, cap, "-");
        return;
    }
    time_t t = (time_t)(us / 1000000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int branch_create(int argc, char **argv)
{
    branch_args a;
    int rc = parse(&a, argc, argv, 1, SUB_CREATE);
    if (rc) return rc;
    og_graph *g = NULL;
    if (open_graph(&g, a.root, 0) != 0) return cli_fail(a.json);
    og_branch_options o = OG_BRANCH_OPTIONS_INIT;
    o.from = a.from;
    o.at = a.at;
    og_branch_info *b = NULL;
    if (og_graph_create_branch(&b, g, a.name, &o) != 0) {
        rc = cli_fail(a.json);
        og_graph_close(g);
        return rc;
    }
    if (a.json) {
        printf("{\"ok\":true,\"created\":true,\"branch\":");
        print_branch_json(b);
        printf("}\n");
    } else {
        printf("created branch %s from %s", b->name, b->parent ? b->parent : "main");
        if (b->forked_from[0]) printf(" at commit %s", b->forked_from);
        printf("\n");
    }
    og_branch_info_free(b);
    og_graph_close(g);
    return CLI_OK;
}

static int branch_list(int argc, char **argv)
{
    branch_args a;
    int rc = parse(&a, argc, argv, 0, SUB_OTHER);
    if (rc) return rc;
    og_graph *g = NULL;
    if (open_graph(&g, a.root, 1) != 0) return cli_fail(a.json);
    og_branch_list *l = NULL;
    if (og_graph_branches(&l, g) != 0) {
        rc = cli_fail(a.json);
        og_graph_close(g);
        return rc;
    }
    size_t n = og_branch_list_count(l);
    if (a.json) {
        printf("{\"ok\":true,\"branches\":[");
        for (size_t i = 0; i < n; i++) {
            if (i) putchar(',');
            print_branch_json(og_branch_list_get(l, i));
        }
        printf("]}\n");
    } else {
        size_t w = 6;
        for (size_t i = 0; i < n; i++) {
            size_t len = strlen(og_branch_list_get(l, i)->name);
            if (len > w) w = len;
        }
        printf("%-*s  %-*s  %-*s  %s\n", (int)w, "branch", OG_ID_LEN, "head", OG_ID_LEN,
               "forked from", "created");
        for (size_t i = 0; i < n; i++) {
            const og_branch_info *b = og_branch_list_get(l, i);
            char when[32], from[OG_ID_LEN + 64];
            format_time(when, sizeof when, b->created_at_us);
            if (b->parent)
                snprintf(from, sizeof from, "%s", b->forked_from);
            else
                snprintf(from, sizeof from, "-");
            printf("%-*s  %-*s  %-*s  %s", (int)w, b->name, OG_ID_LEN, b->head[0] ? b->head : "-",
                   OG_ID_LEN, from, when);
            if (b->parent && strcmp(b->parent, "main") != 0) printf("  (from %s)", b->parent);
            printf("\n");
        }
    }
    og_branch_list_free(l);
    og_graph_close(g);
    return CLI_OK;
}

static int branch_delete(int argc, char **argv)
{
    branch_args a;
    int rc = parse(&a, argc, argv, 1, SUB_OTHER);
    if (rc) return rc;
    og_graph *g = NULL;
    if (open_graph(&g, a.root, 0) != 0) return cli_fail(a.json);
    if (og_graph_delete_branch(g, a.name) != 0) {
        rc = cli_fail(a.json);
        og_graph_close(g);
        return rc;
    }
    if (a.json) {
        printf("{\"ok\":true,\"deleted\":");
        cli_json_str(stdout, a.name);
        printf("}\n");
    } else {
        printf("deleted branch %s\n", a.name);
    }
    og_graph_close(g);
    return CLI_OK;
}

static int branch_merge(int argc, char **argv)
{
    branch_args a;
    int rc = parse(&a, argc, argv, 1, SUB_MERGE);
    if (rc) return rc;
    og_graph *g = NULL;
    if (open_graph(&g, a.root, 0) != 0) return cli_fail(a.json);
    og_merge_options o = OG_MERGE_OPTIONS_INIT;
    o.source = a.name;
    o.into = a.into;
    o.delete_branch = a.delete_branch;
    og_merge_result *r = NULL;
    int mrc = og_graph_merge(&r, g, &o);
    const char *target = a.into ? a.into : "main";
    if (mrc == OG_E_MERGE_CONFLICTS && r) {
        if (a.json) {
            printf("{\"ok\":false,\"source\":");
            cli_json_str(stdout, a.name);
            printf(",\"target\":");
            cli_json_str(stdout, target);
            printf(",\"outcome\":null,\"conflicts\":");
            cli_conflicts_json(r, NULL);
            printf(",\"error\":{\"code\":\"merge_conflicts\",\"message\":");
            cli_json_str(stdout, og_error_last()->message);
            printf("}}\n");
        } else {
            cli_error_text(og_code_name(mrc),
                           "merging %s into %s: %zu conflict%s; nothing was written", a.name,
                           target, og_merge_result_conflict_count(r),
                           og_merge_result_conflict_count(r) == 1 ? "" : "s");
            cli_conflicts_text(r, NULL);
        }
        og_merge_result_free(r);
        og_graph_close(g);
        return CLI_MERGE_CONFLICTS;
    }
    if (mrc != 0) {
        rc = cli_fail_write(a.json);
        og_graph_close(g);
        return rc;
    }
    const char *outcome = og_merge_outcome_name(r->outcome);
    if (a.json) {
        printf("{\"ok\":true,\"source\":");
        cli_json_str(stdout, r->source);
        printf(",\"target\":");
        cli_json_str(stdout, r->target);
        printf(",\"outcome\":\"%s\",\"commit\":", outcome);
        json_id_or_null(r->commit);
        printf(",\"base\":");
        json_id_or_null(r->base);
        printf(",\"source_head\":");
        json_id_or_null(r->source_head);
        printf(",\"types_changed\":%zu,\"rows_changed\":%llu,\"deleted_branch\":%s,",
               r->types_changed, (unsigned long long)r->rows_changed,
               r->source_deleted ? "true" : "false");
        printf("\"conflicts\":");
        cli_conflicts_json(r, NULL);
        printf("}\n");
    } else {
        printf("merged %s into %s: %s\n", r->source, r->target, outcome);
        if (r->source_deleted) printf("deleted branch %s\n", r->source);
    }
    og_merge_result_free(r);
    og_graph_close(g);
    return CLI_OK;
}

static int cmd_branch(int argc, char **argv)
{
    const cli_cmd *self = &cli_branch_commands[0];
    if (argc < 2)
        return cli_usage_error(self, "missing subcommand (create, list, delete or merge)");
    if (!strcmp(argv[1], "create")) return branch_create(argc, argv);
    if (!strcmp(argv[1], "list")) return branch_list(argc, argv);
    if (!strcmp(argv[1], "delete")) return branch_delete(argc, argv);
    if (!strcmp(argv[1], "merge")) return branch_merge(argc, argv);
    return cli_usage_error(self, "unknown subcommand 'branch %s'", argv[1]);
}
