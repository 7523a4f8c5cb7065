/* omnigraph init|load|snapshot|commit: create a graph, bulk-load JSONL into it as one graph
 * commit, and inspect its snapshots and commit lineage. Uses only the public API; every
 * command has a --json form that prints one object (docs/cli.md). Inspecting commands open the
 * graph read-only, so they write nothing. */
#include "omnigraph.h"
#include "cli.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int cmd_init(int argc, char **argv);
static int cmd_load(int argc, char **argv);
static int cmd_snapshot(int argc, char **argv);
static int cmd_commit(int argc, char **argv);
static int cmd_optimize(int argc, char **argv);
static int cmd_cleanup(int argc, char **argv);

const cli_cmd cli_graph_commands[] = {
    {"init", cmd_init, "create a graph from a .pg schema",
     "omnigraph init --schema FILE.pg [--json] (--store ROOT | ROOT)"},
    {"load", cmd_load, "load a JSONL file into a graph as one commit",
     "omnigraph load --data FILE.jsonl --mode overwrite|append|merge [--branch B [--from BASE]] "
     "[--as ACTOR] [--json] (--store ROOT | ROOT)"},
    {"snapshot", cmd_snapshot, "show a graph's tables, versions and row counts",
     "omnigraph snapshot [--branch B] [--at REF] [--json] (--store ROOT | ROOT)"},
    {"commit", cmd_commit, "list a graph's commits or show one",
     "omnigraph commit list [--branch B] [--json] (--store ROOT | ROOT) | "
     "omnigraph commit show REF [--branch B] [--json] (--store ROOT | ROOT)"},
    {"optimize", cmd_optimize, "compact a graph's tables and manifest (one maintenance commit)",
     "omnigraph optimize [--branch B] [--json] (--store ROOT | ROOT)"},
    {"cleanup", cmd_cleanup, "remove the versions and files no retained commit needs",
     "omnigraph cleanup (--keep N | --older-than DURATION | both) [--dry-run] [--json] "
     "(--store ROOT | ROOT)   DURATION: 30s, 15m, 12h, 7d or 2w"},
    CLI_TABLE_END,
};

/* Progress is drawn only for files at least this large, and only on a terminal. */
#define PROGRESS_MIN_BYTES (4u << 20)

/* ---- shared helpers -------------------------------------------------------------------- */

static void format_us(char *out, size_t cap, int64_t us)
{
    int64_t secs = us / 1000000, rem = us % 1000000;
    if (rem < 0) {
        rem += 1000000;
        secs--;
    }
    time_t tt = (time_t)secs;
    struct tm tm;
    char base[32];
    if (!gmtime_r(&tt, &tm) || !strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm)) {
        snprintf(out, cap, "?");
        return;
    }
    snprintf(out, cap, "%s.%06dZ", base, (int)rem);
}

/* A JSON string, or null for NULL / "". */
static void json_str_or_null(const char *s)
{
    if (s && *s)
        cli_json_str(stdout, s);
    else
        fputs("null", stdout);
}

/* Options shared by the graph commands. */
typedef struct graph_args {
    const char *root;
    const char *schema; /* init */
    const char *data;   /* load */
    const char *mode;   /* load */
    const char *branch; /* load */
    const char *from;   /* load: the branch to create `branch` from when it is missing */
    const char *actor;  /* load */
    const char *at;     /* snapshot */
    const char *ref;    /* commit show */
    const char *keep;   /* cleanup */
    const char *older;  /* cleanup */
    int dry_run;        /* cleanup */
    int json;
} graph_args;

/* Parse argv[first..argc). `allowed`: letters of the options this command takes
 * (s=--schema d=--data m=--mode b=--branch f=--from a=--as t=--at S=--store k=--keep
 * o=--older-than n=--dry-run); `positionals` is how many
 * bare words it takes besides the root (commit show: 1). Returns 0 or a usage exit code. */
static int parse_args(graph_args *a, const cli_cmd *self, int argc, char **argv, int first,
                      const char *allowed, int positionals)
{
    memset(a, 0, sizeof *a);
    static const struct {
        char letter;
        const char *name;
        size_t off;
    } opts[] = {
        {'s', "--schema", offsetof(graph_args, schema)},
        {'d', "--data", offsetof(graph_args, data)},
        {'m', "--mode", offsetof(graph_args, mode)},
        {'b', "--branch", offsetof(graph_args, branch)},
        {'f', "--from", offsetof(graph_args, from)},
        {'a', "--as", offsetof(graph_args, actor)},
        {'t', "--at", offsetof(graph_args, at)},
        {'S', "--store", offsetof(graph_args, root)},
        {'k', "--keep", offsetof(graph_args, keep)},
        {'o', "--older-than", offsetof(graph_args, older)},
    };
    const char *words[2] = {NULL, NULL};
    int n_words = 0;
    for (int i = first; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--json")) {
            a->json = 1;
            continue;
        }
        if (!strcmp(o, "--dry-run") && strchr(allowed, 'n')) {
            a->dry_run = 1;
            continue;
        }
        if (o[0] == '-' && o[1]) {
            size_t k = 0;
            for (; k < sizeof opts / sizeof opts[0]; k++)
                if (!strcmp(o, opts[k].name) && strchr(allowed, opts[k].letter)) break;
            if (k == sizeof opts / sizeof opts[0])
                return cli_usage_error(self, "unknown option '%s'", o);
            if (i + 1 >= argc || !argv[i + 1][0])
                return cli_usage_error(self, "%s needs a value", o);
            const char **slot = (const char **)((char *)a + opts[k].off);
            if (*slot) return cli_usage_error(self, "%s given twice", o);
            *slot = argv[++i];
            continue;
        }
        if (n_words == positionals + 1) return cli_usage_error(self, "unexpected argument '%s'", o);
        words[n_words++] = o;
    }
    /* Bare words: the command's own (commit show: the ID) first, then the root. */
    int w = 0;
    if (positionals) {
        if (n_words == 0) return cli_usage_error(self, "missing ID");
        a->ref = words[w++];
    }
    if (w < n_words) {
        if (a->root)
            return cli_usage_error(self, "the root is given twice (--store and '%s')", words[w]);
        a->root = words[w];
    }
    if (!a->root) return cli_usage_error(self, "missing the graph root (--store ROOT or ROOT)");
    return 0;
}

static int open_graph(og_graph **g, const graph_args *a, int read_only)
{
    og_open_options o = OG_OPEN_OPTIONS_INIT;
    o.read_only = read_only;
    o.actor = a->actor;
    return og_graph_open(g, a->root, &o);
}

/* ---- init ------------------------------------------------------------------------------ */

static int cmd_init(int argc, char **argv)
{
    const cli_cmd *self = &cli_graph_commands[0];
    graph_args a;
    int rc = parse_args(&a, self, argc, argv, 1, "sS", 0);
    if (rc) return rc;
    if (!a.schema) return cli_usage_error(self, "init needs --schema FILE.pg");
    cli_file f;
    if (cli_file_open(&f, a.schema, a.json)) return CLI_ERROR;
    og_init_options o = OG_INIT_OPTIONS_INIT;
    o.schema_source = f.data;
    o.schema_source_len = f.len;
    o.schema_file = f.name;
    og_init_result *r = NULL;
    rc = og_root_init(&r, a.root, &o);
    cli_file_close(&f);
    if (rc) return cli_fail(a.json);
    if (a.json) {
        printf("{\"ok\":true,\"root\":");
        cli_json_str(stdout, a.root);
        printf(",\"commit_id\":\"%s\",\"node_types\":%zu,\"edge_types\":%zu,\"took_over\":%s}\n",
               r->commit_id, r->node_types, r->edge_types, r->took_over ? "true" : "false");
    } else {
        if (r->took_over) printf("note: took over an interrupted init of %s\n", a.root);
        printf("initialized %s (%zu node types, %zu edge types; commit %s)\n", a.root,
               r->node_types, r->edge_types, r->commit_id);
    }
    og_init_result_free(r);
    return CLI_OK;
}

/* ---- load ------------------------------------------------------------------------------ */

typedef struct progress_state {
    const char *file;
    int drawn;
} progress_state;

static void draw_progress(void *arg, int phase, uint64_t done, uint64_t total, uint64_t lines)
{
    progress_state *p = arg;
    if (phase == OG_LOAD_PHASE_PARSE) {
        unsigned pct = total ? (unsigned)(done * 100 / total) : 100;
        fprintf(stderr, "\r\033[Kreading %s: %3u%% (%.1f of %.1f MiB), %llu lines", p->file, pct,
                (double)done / (1 << 20), (double)total / (1 << 20), (unsigned long long)lines);
    } else {
        fprintf(stderr, "\r\033[Kread %llu lines of %s; committing...", (unsigned long long)lines,
                p->file);
    }
    fflush(stderr);
    p->drawn = 1;
}

static void print_load_json(const graph_args *a, const og_write_result *r, const char *mode)
{
    const char *commit = og_write_result_commit_id(r);
    unsigned long long nodes = og_write_result_count(r, OG_WRITE_NODES);
    unsigned long long edges = og_write_result_count(r, OG_WRITE_EDGES);
    printf("{\"ok\":true,\"root\":");
    cli_json_str(stdout, a->root);
    printf(",\"branch\":");
    cli_json_str(stdout, a->branch ? a->branch : "main");
    printf(",\"branch_created\":%s",
           og_write_result_count(r, OG_WRITE_NEW_BRANCH) ? "true" : "false");
    printf(",\"mode\":\"%s\",\"committed\":%s,\"commit_id\":", mode, commit[0] ? "true" : "false");
    json_str_or_null(commit);
    printf(",\"operation_id\":");
    json_str_or_null(og_write_result_operation_id(r));
    printf(",\"manifest_version\":%llu,\"lines\":%llu,\"nodes\":%llu,\"edges\":%llu,"
           "\"entities\":%llu,\"node_types\":%llu,\"edge_types\":%llu,\"reprepares\":%llu,"
           "\"tables\":",
           (unsigned long long)og_write_result_manifest_version(r),
           (unsigned long long)og_write_result_count(r, OG_WRITE_LINES), nodes, edges,
           nodes + edges, (unsigned long long)og_write_result_count(r, OG_WRITE_NODE_TYPES),
           (unsigned long long)og_write_result_count(r, OG_WRITE_EDGE_TYPES),
           (unsigned long long)og_write_result_count(r, OG_WRITE_REPREPARES));
    cli_json_write_tables(stdout, r);
    printf("}\n");
}

static int cmd_load(int argc, char **argv)
{
    const cli_cmd *self = &cli_graph_commands[1];
    graph_args a;
    int rc = parse_args(&a, self, argc, argv, 1, "dmbfaS", 0);
    if (rc) return rc;
    if (!a.data) return cli_usage_error(self, "load needs --data FILE.jsonl");
    if (a.from && !a.branch) return cli_usage_error(self, "--from goes with --branch");
    if (!a.mode) return cli_usage_error(self, "load needs --mode overwrite|append|merge");
    int mode = og_load_mode_parse(a.mode);
    if (!mode)
        return cli_usage_error(self, "--mode must be overwrite, append or merge, not '%s'", a.mode);
    cli_file f;
    if (cli_file_open(&f, a.data, a.json)) return CLI_ERROR;
    og_graph *g = NULL;
    if (open_graph(&g, &a, 0) != 0) {
        cli_file_close(&f);
        return cli_fail_write(a.json);
    }
    og_load_options o = OG_LOAD_OPTIONS_INIT;
    o.mode = mode;
    o.branch = a.branch;
    /* --from: a missing branch is created from BASE's head for the load, and kept only if the
     * load succeeds (og_load_options.from). */
    o.from = a.from;
    progress_state ps = {a.data, 0};
    if (f.len >= PROGRESS_MIN_BYTES && isatty(STDERR_FILENO)) {
        o.progress = draw_progress;
        o.progress_arg = &ps;
    }
    og_write_result *r = NULL;
    rc = og_graph_load(&r, g, f.name, f.data, f.len, &o);
    if (ps.drawn) fputs("\r\033[K", stderr);
    int ex = CLI_OK;
    if (rc == 0 && og_write_result_count(r, OG_WRITE_NEW_BRANCH))
        fprintf(stderr, "omnigraph: created branch %s from %s\n", a.branch, a.from);
    if (rc) {
        ex = cli_fail_write(a.json);
    } else if (a.json) {
        print_load_json(&a, r, a.mode);
    } else {
        const char *commit = og_write_result_commit_id(r);
        printf("loaded %s on branch %s with %s: %llu entities across %llu node types and %llu "
               "edge types ",
               a.root, a.branch ? a.branch : "main", a.mode,
               (unsigned long long)(og_write_result_count(r, OG_WRITE_NODES) +
                                    og_write_result_count(r, OG_WRITE_EDGES)),
               (unsigned long long)og_write_result_count(r, OG_WRITE_NODE_TYPES),
               (unsigned long long)og_write_result_count(r, OG_WRITE_EDGE_TYPES));
        if (commit[0])
            printf("(commit %s)\n", commit);
        else
            printf("(nothing to commit)\n");
    }
    og_write_result_free(r);
    og_graph_close(g);
    cli_file_close(&f);
    return ex;
}

/* ---- snapshot -------------------------------------------------------------------------- */

static const char *kind_name(int kind)
{
    return kind == OG_KIND_EDGE ? "edge" : "node";
}

static void print_tables_json(const og_snapshot_info *s)
{
    printf("[");
    for (size_t i = 0; i < og_snapshot_info_table_count(s); i++) {
        const og_snapshot_table *t = og_snapshot_info_table(s, i);
        printf("%s{\"alias\":", i ? "," : "");
        cli_json_str(stdout, t->alias);
        printf(",\"type\":");
        cli_json_str(stdout, t->type_name);
        printf(",\"kind\":\"%s\",\"version\":%llu,\"row_count\":%llu,\"path\":", kind_name(t->kind),
               (unsigned long long)t->version, (unsigned long long)t->row_count);
        cli_json_str(stdout, t->path);
        printf(",\"table_branch\":");
        if (t->table_branch)
            cli_json_str(stdout, t->table_branch);
        else
            printf("null");
        printf("}");
    }
    printf("]");
}

/* The tables as columns aligned to their widest cell. */
static void print_tables_text(const og_snapshot_info *s)
{
    int w_alias = (int)strlen("table"), w_ver = (int)strlen("version"),
        w_rows = (int)strlen("rows");
    for (size_t i = 0; i < og_snapshot_info_table_count(s); i++) {
        const og_snapshot_table *t = og_snapshot_info_table(s, i);
        char num[32];
        int l = (int)strlen(t->alias);
        if (l > w_alias) w_alias = l;
        l = snprintf(num, sizeof num, "%llu", (unsigned long long)t->version);
        if (l > w_ver) w_ver = l;
        l = snprintf(num, sizeof num, "%llu", (unsigned long long)t->row_count);
        if (l > w_rows) w_rows = l;
    }
    printf("%-*s  %-4s  %*s  %*s  %s\n", w_alias, "table", "kind", w_ver, "version", w_rows, "rows",
           "path");
    for (size_t i = 0; i < og_snapshot_info_table_count(s); i++) {
        const og_snapshot_table *t = og_snapshot_info_table(s, i);
        printf("%-*s  %-4s  %*llu  %*llu  %s", w_alias, t->alias, kind_name(t->kind), w_ver,
               (unsigned long long)t->version, w_rows, (unsigned long long)t->row_count, t->path);
        if (t->table_branch) printf(" (on Lance branch %s)", t->table_branch);
        printf("\n");
    }
}

static int cmd_snapshot(int argc, char **argv)
{
    const cli_cmd *self = &cli_graph_commands[2];
    graph_args a;
    int rc = parse_args(&a, self, argc, argv, 1, "btS", 0);
    if (rc) return rc;
    og_graph *g = NULL;
    if (open_graph(&g, &a, 1) != 0) return cli_fail(a.json);
    og_snapshot_info *s = NULL;
    og_intent_list *pending = NULL; /* interrupted writes (recovery sidecars) */
    og_snapshot_options so = OG_SNAPSHOT_OPTIONS_INIT;
    so.branch = a.branch;
    so.at = a.at;
    rc = og_graph_snapshot(&s, g, &so);
    og_graph_close(g);
    og_recover_options ro = OG_RECOVER_OPTIONS_INIT;
    ro.read_only = 1; /* a snapshot writes nothing, not even a lock */
    if (!rc) rc = og_root_recover_list(&pending, a.root, &ro);
    if (rc) {
        og_snapshot_info_free(s);
        return cli_fail(a.json);
    }
    if (a.json) {
        printf("{\"root\":");
        cli_json_str(stdout, a.root);
        printf(",\"branch\":");
        cli_json_str(stdout, s->branch);
        printf(",\"manifest_version\":%llu,\"head_commit\":",
               (unsigned long long)s->manifest_version);
        json_str_or_null(s->head_commit);
        printf(",\"schema_identity\":\"%s\",\"format_version\":%d,\"tables\":", s->schema_identity,
               s->format_version);
        print_tables_json(s);
        printf(",\"pending_recovery\":");
        cli_json_intents(stdout, pending);
        cli_json_warnings(stdout);
        printf("}\n");
    } else {
        printf("graph             %s\n"
               "branch            %s\n"
               "manifest version  %llu\n"
               "head commit       %s\n"
               "schema identity   %s\n"
               "format version    %d\n\n",
               a.root, s->branch, (unsigned long long)s->manifest_version,
               s->head_commit[0] ? s->head_commit : "(none)", s->schema_identity,
               s->format_version);
        print_tables_text(s);
        if (og_intent_list_count(pending)) {
            printf("\npending recovery intents (interrupted writes; 'omnigraph recover list' "
                   "tells more)\n");
            cli_text_intents(stdout, pending);
        }
    }
    og_intent_list_free(pending);
    og_snapshot_info_free(s);
    return CLI_OK;
}

/* ---- commit list | show ---------------------------------------------------------------- */

static void print_commit_json(const og_commit_info *c)
{
    char ts[48];
    format_us(ts, sizeof ts, c->created_at_us);
    printf("{\"id\":\"%s\",\"parent\":", c->id);
    json_str_or_null(c->parent);
    printf(",\"merged_parent\":");
    json_str_or_null(c->merged_parent);
    printf(",\"actor\":");
    json_str_or_null(c->actor);
    printf(",\"branch\":");
    cli_json_str(stdout, c->branch);
    printf(",\"created_at\":\"%s\",\"created_at_us\":%lld,\"manifest_version\":%llu}", ts,
           (long long)c->created_at_us, (unsigned long long)c->manifest_version);
}

static int commit_list(const cli_cmd *self, int argc, char **argv)
{
    graph_args a;
    int rc = parse_args(&a, self, argc, argv, 2, "bS", 0);
    if (rc) return rc;
    og_graph *g = NULL;
    if (open_graph(&g, &a, 1) != 0) return cli_fail(a.json);
    og_commit_list *l = NULL;
    og_commit_options co = OG_COMMIT_OPTIONS_INIT;
    co.branch = a.branch;
    rc = og_graph_commits(&l, g, &co);
    og_graph_close(g);
    if (rc) return cli_fail(a.json);
    size_t n = og_commit_list_count(l);
    if (a.json) {
        printf("{\"branch\":");
        cli_json_str(stdout, a.branch ? a.branch : "main");
        printf(",\"commits\":[");
        for (size_t i = 0; i < n; i++) {
            if (i) printf(",");
            print_commit_json(og_commit_list_get(l, i));
        }
        printf("]");
        cli_json_warnings(stdout);
        printf("}\n");
    } else {
        int w_actor = (int)strlen("actor");
        for (size_t i = 0; i < n; i++) {
            const og_commit_info *c = og_commit_list_get(l, i);
            int len = c->actor ? (int)strlen(c->actor) : 1;
            if (len > w_actor) w_actor = len;
        }
        printf("%-*s  %8s  %-27s  %-*s  %s\n", OG_ID_LEN, "commit", "manifest", "created (UTC)",
               w_actor, "actor", "parent");
        for (size_t i = 0; i < n; i++) {
            const og_commit_info *c = og_commit_list_get(l, i);
            char ts[48];
            format_us(ts, sizeof ts, c->created_at_us);
            printf("%-*s  %8llu  %-27s  %-*s  %s\n", OG_ID_LEN, c->id,
                   (unsigned long long)c->manifest_version, ts, w_actor, c->actor ? c->actor : "-",
                   c->parent[0] ? c->parent : "-");
        }
        printf("(%zu commits)\n", n);
    }
    og_commit_list_free(l);
    return CLI_OK;
}

static int commit_show(const cli_cmd *self, int argc, char **argv)
{
    graph_args a;
    int rc = parse_args(&a, self, argc, argv, 2, "bS", 1);
    if (rc) return rc;
    og_graph *g = NULL;
    if (open_graph(&g, &a, 1) != 0) return cli_fail(a.json);
    og_commit_info *c = NULL;
    og_snapshot_info *s = NULL;
    og_commit_options co = OG_COMMIT_OPTIONS_INIT;
    co.branch = a.branch;
    rc = og_graph_commit_show(&c, g, a.ref, &co);
    /* The tables as this commit left them: the snapshot at its manifest version of the branch
     * it was made on. */
    if (!rc) {
        char mv[32];
        snprintf(mv, sizeof mv, "%llu", (unsigned long long)c->manifest_version);
        og_snapshot_options so = OG_SNAPSHOT_OPTIONS_INIT;
        so.branch = c->branch;
        so.at = mv;
        rc = og_graph_snapshot(&s, g, &so);
    }
    og_graph_close(g);
    if (rc) {
        og_commit_info_free(c);
        return cli_fail(a.json);
    }
    if (a.json) {
        printf("{\"commit\":");
        print_commit_json(c);
        printf(",\"tables\":");
        print_tables_json(s);
        cli_json_warnings(stdout);
        printf("}\n");
    } else {
        char ts[48];
        format_us(ts, sizeof ts, c->created_at_us);
        printf("commit            %s\n"
               "branch            %s\n"
               "manifest version  %llu\n"
               "created (UTC)     %s\n"
               "actor             %s\n"
               "parent            %s\n",
               c->id, c->branch, (unsigned long long)c->manifest_version, ts,
               c->actor ? c->actor : "-", c->parent[0] ? c->parent : "- (genesis)");
        if (c->merged_parent[0]) printf("merged parent     %s\n", c->merged_parent);
        printf("\n");
        print_tables_text(s);
    }
    og_snapshot_info_free(s);
    og_commit_info_free(c);
    return CLI_OK;
}

static int cmd_commit(int argc, char **argv)
{
    const cli_cmd *self = &cli_graph_commands[3];
    if (argc < 2) return cli_usage_error(self, "missing subcommand (list or show)");
    if (!strcmp(argv[1], "list")) return commit_list(self, argc, argv);
    if (!strcmp(argv[1], "show")) return commit_show(self, argc, argv);
    return cli_usage_error(self, "unknown subcommand 'commit %s'", argv[1]);
}

/* ---- optimize and cleanup (docs/maintenance.md) ------------------------------------------- */

static int cmd_optimize(int argc, char **argv)
{
    const cli_cmd *self = &cli_graph_commands[4];
    graph_args a;
    int rc = parse_args(&a, self, argc, argv, 1, "bS", 0);
    if (rc) return rc;
    og_graph *g = NULL;
    if (open_graph(&g, &a, 0) != 0) return cli_fail(a.json);
    og_optimize_options o = OG_OPTIMIZE_OPTIONS_INIT;
    o.branch = a.branch;
    og_optimize_result *r = NULL;
    rc = og_graph_optimize(&r, g, &o);
    if (rc) {
        og_graph_close(g);
        return cli_fail(a.json);
    }
    if (a.json) {
        printf("{\"branch\":");
        cli_json_str(stdout, a.branch ? a.branch : "main");
        printf(",\"commit_id\":");
        json_str_or_null(r->commit_id);
        printf(",\"manifest_version\":%llu,\"tables_compacted\":%zu,"
               "\"fragments_before\":%llu,\"fragments_after\":%llu,"
               "\"manifest_fragments_before\":%llu,\"manifest_fragments_after\":%llu}\n",
               (unsigned long long)r->manifest_version, r->tables_compacted,
               (unsigned long long)r->fragments_before, (unsigned long long)r->fragments_after,
               (unsigned long long)r->manifest_fragments_before,
               (unsigned long long)r->manifest_fragments_after);
    } else {
        if (r->commit_id[0])
            printf("compacted %zu table%s of branch %s in maintenance commit %s\n",
                   r->tables_compacted, r->tables_compacted == 1 ? "" : "s",
                   a.branch ? a.branch : "main", r->commit_id);
        else
            printf("no table of branch %s needed compaction\n", a.branch ? a.branch : "main");
        printf("table fragments     %llu -> %llu\n"
               "manifest fragments  %llu -> %llu\n",
               (unsigned long long)r->fragments_before, (unsigned long long)r->fragments_after,
               (unsigned long long)r->manifest_fragments_before,
               (unsigned long long)r->manifest_fragments_after);
    }
    og_optimize_result_free(r);
    og_graph_close(g);
    return CLI_OK;
}

/* "30s", "15m", "12h", "7d", "2w" -> microseconds; -1 when malformed. */
static int64_t parse_duration_us(const char *s)
{
    char *end = NULL;
    errno = 0;
    long long n = strtoll(s, &end, 10);
    if (errno || end == s || n < 0 || !end[0] || end[1]) return -1;
    int64_t unit;
    switch (end[0]) {
    case 's':
        unit = 1000000;
        break;
    case 'm':
        unit = 60ll * 1000000;
        break;
    case 'h':
        unit = 3600ll * 1000000;
        break;
    case 'd':
        unit = 86400ll * 1000000;
        break;
    case 'w':
        unit = 7 * 86400ll * 1000000;
        break;
    default:
        return -1;
    }
    if (n > INT64_MAX / unit) return -1;
    return (int64_t)n * unit;
}

static void cleanup_progress(void *arg, const char *dataset, size_t done, size_t total)
{
    (void)arg;
    fprintf(stderr, "\rcleanup: %zu/%zu datasets (%s)\033[K", done, total, dataset);
    if (done == total) fputc('\n', stderr);
}

static int cmd_cleanup(int argc, char **argv)
{
    const cli_cmd *self = &cli_graph_commands[5];
    graph_args a;
    int rc = parse_args(&a, self, argc, argv, 1, "koSn", 0);
    if (rc) return rc;
    og_cleanup_options o = OG_CLEANUP_OPTIONS_INIT;
    if (!a.keep && !a.older)
        return cli_usage_error(self, "say what to keep: --keep N, --older-than DURATION, or both");
    if (a.keep) {
        char *end = NULL;
        errno = 0;
        unsigned long long k = strtoull(a.keep, &end, 10);
        if (errno || end == a.keep || *end || k == 0 || a.keep[0] == '-')
            return cli_usage_error(self, "--keep needs a positive number of commits, not '%s'",
                                   a.keep);
        o.keep = k;
    }
    if (a.older && (o.older_than_us = parse_duration_us(a.older)) < 0)
        return cli_usage_error(self,
                               "--older-than needs a duration like 30s, 15m, 12h, 7d or "
                               "2w, not '%s'",
                               a.older);
    o.dry_run = a.dry_run;
    if (!a.json && isatty(STDERR_FILENO)) o.progress = cleanup_progress;
    og_graph *g = NULL;
    if (open_graph(&g, &a, 0) != 0) return cli_fail(a.json);
    og_cleanup_result *r = NULL;
    rc = og_graph_cleanup(&r, g, &o);
    og_graph_close(g);
    if (rc) return cli_fail(a.json);
    if (a.json) {
        printf("{\"dry_run\":%s,\"commits_total\":%llu,\"commits_retained\":%llu,"
               "\"oldest_retained\":",
               a.dry_run ? "true" : "false", (unsigned long long)r->commits_total,
               (unsigned long long)r->commits_retained);
        json_str_or_null(r->oldest_retained);
        printf(",\"versions_removed\":%llu,\"files_removed\":%llu,\"bytes_removed\":%llu,"
               "\"files_spared_recent\":%llu,\"datasets\":%zu,\"tables_removed\":%llu}\n",
               (unsigned long long)r->versions_removed, (unsigned long long)r->files_removed,
               (unsigned long long)r->bytes_removed, (unsigned long long)r->files_spared_recent,
               r->datasets, (unsigned long long)r->tables_removed);
    } else {
        printf("%s %llu of %llu commits readable (oldest %s)\n", a.dry_run ? "would keep" : "kept",
               (unsigned long long)r->commits_retained, (unsigned long long)r->commits_total,
               r->oldest_retained[0] ? r->oldest_retained : "-");
        printf("%s %llu versions, %llu files, ", a.dry_run ? "would remove" : "removed",
               (unsigned long long)r->versions_removed, (unsigned long long)r->files_removed);
        cli_print_bytes(r->bytes_removed);
        printf(" across %zu datasets\n", r->datasets);
        if (r->tables_removed)
            printf("%s %llu tables no retained commit reads (dropped types)\n",
                   a.dry_run ? "would remove" : "removed", (unsigned long long)r->tables_removed);
        if (r->files_spared_recent)
            printf("spared %llu recent unreferenced files (a writer may still commit them)\n",
                   (unsigned long long)r->files_spared_recent);
    }
    og_cleanup_result_free(r);
    return CLI_OK;
}
