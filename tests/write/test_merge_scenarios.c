/* The merge scenario runner: every ".scn" file in tests/merge is a small script of writes on
 * named branches, merges with their expected outcome or conflicts, and reads with their
 * expected rows, run through the public API. A bug found in merging becomes a one-file
 * regression test. `test_merge_scenarios FILE...` runs only those files.
 *
 * The format (one command per line; blank lines and lines starting with '#' are skipped; a
 * block ends at a line "end"):
 *   schema                      block: the .pg source (the graph is created at its end)
 *   queries                     block: .gq source for `mutate` and `expect`
 *   load BRANCH [MODE]          block: JSONL rows (MODE append | merge | overwrite; append)
 *   branch NAME [from B] [at C] create a branch (C: "head~N" of B, N commits back, or an id)
 *   delete NAME                 delete a branch
 *   mutate BRANCH QUERY [JSON]  run a mutation with params
 *   merge SRC into TGT -> OUTCOME          already_up_to_date | fast_forward | merged
 *   merge SRC into TGT -> error CODE       the merge fails with that error code (og_code_name)
 *   merge SRC into TGT -> conflicts        block: "KIND TYPE ID" lines (ID "-" when none,
 *                                          "*" for any: generated edge ids), exactly the
 *                                          conflicts reported, in any order
 *   expect BRANCH QUERY         block: the rows the read returns, one JSON object per line,
 *                               in any order (compared as sorted text)
 *   fail BRANCH QUERY [JSON] -> CODE       a mutation that must fail with that code
 *   optimize BRANCH             compact the branch's tables (a maintenance commit, or none) */
#include "testutil.h"

#include "omnigraph.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct scn {
    const char *file;
    int line;
    char **lines;
    size_t n, at;
    char dir[512];
    og_graph *g;
    char *queries;
    unsigned merges, conflicts, reads, writes;
} scn;

#define SCN_FAIL(s, ...)                                                                           \
    do {                                                                                           \
        print_error("%s:%d: ", (s)->file, (s)->line);                                              \
        print_error(__VA_ARGS__);                                                                  \
        print_error("\n");                                                                         \
        fail();                                                                                    \
    } while (0)

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    size_t got = fread(b, 1, (size_t)n, f);
    fclose(f);
    b[got] = 0;
    if (len) *len = got;
    return b;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The block after the current line, up to "end", as text with its lines joined by '\n'. */
static char *block(scn *s)
{
    size_t cap = 256, len = 0;
    char *out = malloc(cap);
    out[0] = 0;
    for (s->at++; s->at < s->n; s->at++) {
        const char *l = s->lines[s->at];
        const char *t = l;
        while (*t == ' ')
            t++;
        if (strcmp(t, "end") == 0) return out;
        size_t ll = strlen(t);
        while (len + ll + 2 > cap)
            out = realloc(out, cap *= 2);
        memcpy(out + len, t, ll);
        len += ll;
        out[len++] = '\n';
        out[len] = 0;
    }
    SCN_FAIL(s, "a block without its \"end\"");
    return out;
}

/* Lines of text, sorted, rejoined (for order-free comparison). */
static char *sorted(char *text)
{
    size_t n = 0;
    char *lines[4096];
    for (char *p = strtok(text, "\n"); p && n < 4096; p = strtok(NULL, "\n"))
        if (*p) lines[n++] = p;
    qsort(lines, n, sizeof *lines, cmp_str);
    size_t total = 1;
    for (size_t i = 0; i < n; i++)
        total += strlen(lines[i]) + 1;
    char *out = calloc(1, total);
    for (size_t i = 0; i < n; i++) {
        strcat(out, lines[i]);
        strcat(out, "\n");
    }
    return out;
}

static const char *branch_arg(const char *b)
{
    return strcmp(b, "main") == 0 ? NULL : b;
}

static void do_schema(scn *s)
{
    char *src = block(s);
    test_sandbox_new(s->dir, sizeof s->dir, "merge-scn");
    og_init_options io = OG_INIT_OPTIONS_INIT;
    io.schema_source = src;
    og_init_result *ir = NULL;
    if (og_root_init(&ir, s->dir, &io)) SCN_FAIL(s, "init: %s", og_error_last()->message);
    og_init_result_free(ir);
    og_open_options oo = OG_OPEN_OPTIONS_INIT;
    if (og_graph_open(&s->g, s->dir, &oo)) SCN_FAIL(s, "open: %s", og_error_last()->message);
    free(src);
}

static void do_load(scn *s, const char *branch, const char *mode)
{
    char *rows = block(s);
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = mode ? og_load_mode_parse(mode) : OG_LOAD_APPEND;
    if (!lo.mode) SCN_FAIL(s, "unknown load mode %s", mode);
    lo.branch = branch_arg(branch);
    og_write_result *wr = NULL;
    if (og_graph_load(&wr, s->g, s->file, rows, strlen(rows), &lo))
        SCN_FAIL(s, "load on %s: %s", branch, og_error_last()->message);
    og_write_result_free(wr);
    free(rows);
    s->writes++;
}

/* "head~N" of branch b: the commit N back along its list (newest first), else the text. */
static void resolve_at(scn *s, const char *b, const char *at, char *out, size_t cap)
{
    if (strncmp(at, "head~", 5) != 0) {
        snprintf(out, cap, "%s", at);
        return;
    }
    size_t k = strtoul(at + 5, NULL, 10);
    og_commit_list *l = NULL;
    if (og_graph_commits(
            &l, s->g,
            &(og_commit_options){.version = OG_COMMIT_OPTIONS_VERSION, .branch = branch_arg(b)}))
        SCN_FAIL(s, "commits of %s: %s", b, og_error_last()->message);
    if (k >= og_commit_list_count(l)) SCN_FAIL(s, "%s has no commit %s", b, at);
    snprintf(out, cap, "%s", og_commit_list_get(l, k)->id);
    og_commit_list_free(l);
}

static int mutate(scn *s, const char *branch, const char *query, const char *params)
{
    og_mutate_options mo = OG_MUTATE_OPTIONS_INIT;
    mo.source = s->queries;
    mo.source_file = s->file;
    mo.name = query;
    mo.params_json = params && *params ? params : NULL;
    mo.branch = branch_arg(branch);
    og_write_result *wr = NULL;
    int rc = og_graph_mutate(&wr, s->g, &mo);
    og_write_result_free(wr);
    return rc;
}

static void do_merge(scn *s, const char *src, const char *tgt, const char *what, const char *arg)
{
    og_merge_options mo = OG_MERGE_OPTIONS_INIT;
    mo.source = src;
    mo.into = tgt;
    og_merge_result *r = NULL;
    int rc = og_graph_merge(&r, s->g, &mo);
    s->merges++;
    if (strcmp(what, "conflicts") == 0) {
        char *want_text = block(s);
        if (rc != OG_E_MERGE_CONFLICTS)
            SCN_FAIL(s, "merge %s into %s: expected conflicts, got %s (%s)", src, tgt,
                     og_code_name(rc), rc ? og_error_last()->message : "");
        char *got = NULL;
        size_t glen = 0;
        FILE *m = open_memstream(&got, &glen);
        for (size_t i = 0; i < og_merge_result_conflict_count(r); i++) {
            /* an expected id "*" stands for any id (a generated edge id) */
            char pat[256];
            snprintf(pat, sizeof pat, "%s %s *\n", og_merge_result_conflict(r, i)->kind,
                     og_merge_result_conflict(r, i)->type);
            bool any = strstr(want_text, pat) != NULL;
            fprintf(m, "%s %s %s\n", og_merge_result_conflict(r, i)->kind,
                    og_merge_result_conflict(r, i)->type,
                    any                                  ? "*"
                    : og_merge_result_conflict(r, i)->id ? og_merge_result_conflict(r, i)->id
                                                         : "-");
        }
        fclose(m);
        char *a = sorted(want_text), *b = sorted(got);
        if (strcmp(a, b) != 0) {
            for (size_t i = 0; i < og_merge_result_conflict_count(r); i++)
                print_error("  reported: %s %s %s: %s\n", og_merge_result_conflict(r, i)->kind,
                            og_merge_result_conflict(r, i)->type,
                            og_merge_result_conflict(r, i)->id ? og_merge_result_conflict(r, i)->id
                                                               : "-",
                            og_merge_result_conflict(r, i)->message);
            SCN_FAIL(s, "merge %s into %s: conflicts differ\nexpected:\n%sgot:\n%s", src, tgt, a,
                     b);
        }
        s->conflicts += (unsigned)og_merge_result_conflict_count(r);
        free(a);
        free(b);
        free(got);
        free(want_text);
    } else if (strcmp(what, "error") == 0) {
        if (!arg || strcmp(og_code_name(rc), arg) != 0)
            SCN_FAIL(s, "merge %s into %s: expected error %s, got %s (%s)", src, tgt,
                     arg ? arg : "?", og_code_name(rc), rc ? og_error_last()->message : "");
        og_error_clear();
    } else {
        if (rc)
            SCN_FAIL(s, "merge %s into %s: %s: %s", src, tgt, og_code_name(rc),
                     og_error_last()->message);
        if (strcmp(og_merge_outcome_name(r->outcome), what) != 0)
            SCN_FAIL(s, "merge %s into %s: expected %s, got %s", src, tgt, what,
                     og_merge_outcome_name(r->outcome));
    }
    og_merge_result_free(r);
}

static void do_expect(scn *s, const char *branch, const char *query)
{
    char *want_text = block(s);
    og_query_options qo = OG_QUERY_OPTIONS_INIT;
    qo.source = s->queries;
    qo.source_file = s->file;
    qo.name = query;
    qo.branch = branch_arg(branch);
    og_result *r = NULL;
    if (og_graph_query(&r, s->g, &qo))
        SCN_FAIL(s, "query %s on %s: %s", query, branch, og_error_last()->message);
    char *got = NULL;
    size_t glen = 0;
    FILE *m = open_memstream(&got, &glen);
    for (uint64_t i = 0; i < og_result_row_count(r); i++) {
        size_t len = 0;
        const char *j = og_result_row_json(r, i, &len);
        fprintf(m, "%.*s\n", (int)len, j);
    }
    fclose(m);
    og_result_free(r);
    char *a = sorted(want_text), *b = sorted(got);
    if (strcmp(a, b) != 0)
        SCN_FAIL(s, "%s on %s: rows differ\nexpected:\n%sgot:\n%s", query, branch, a, b);
    s->reads++;
    free(a);
    free(b);
    free(got);
    free(want_text);
}

static void run_line(scn *s, char *l)
{
    char w[6][256] = {{0}};
    char rest[1024] = "";
    int nw = sscanf(l, "%255s %255s %255s %255s %255s %255s", w[0], w[1], w[2], w[3], w[4], w[5]);
    if (nw <= 0) return;
    if (!strcmp(w[0], "schema")) {
        do_schema(s);
    } else if (!strcmp(w[0], "queries")) {
        free(s->queries);
        s->queries = block(s);
    } else if (!s->g) {
        SCN_FAIL(s, "'%s' before the schema", w[0]);
    } else if (!strcmp(w[0], "load")) {
        do_load(s, w[1], nw > 2 ? w[2] : NULL);
    } else if (!strcmp(w[0], "branch")) {
        og_branch_options bo = OG_BRANCH_OPTIONS_INIT;
        char at[128] = "";
        for (int i = 2; i + 1 < nw; i += 2) {
            if (!strcmp(w[i], "from")) bo.from = w[i + 1];
            if (!strcmp(w[i], "at")) {
                resolve_at(s, bo.from ? bo.from : "main", w[i + 1], at, sizeof at);
                bo.at = at;
            }
        }
        if (og_graph_create_branch(NULL, s->g, w[1], &bo))
            SCN_FAIL(s, "branch %s: %s", w[1], og_error_last()->message);
    } else if (!strcmp(w[0], "delete")) {
        if (og_graph_delete_branch(s->g, w[1]))
            SCN_FAIL(s, "delete %s: %s", w[1], og_error_last()->message);
    } else if (!strcmp(w[0], "mutate") || !strcmp(w[0], "fail")) {
        /* params: the rest of the line after the query name, up to "->" */
        const char *p = strstr(l, w[2]) + strlen(w[2]);
        snprintf(rest, sizeof rest, "%s", p);
        char *arrow = strstr(rest, "->");
        char code[64] = "";
        if (arrow) {
            sscanf(arrow + 2, "%63s", code);
            *arrow = 0;
        }
        int rc = mutate(s, w[1], w[2], rest);
        if (!strcmp(w[0], "mutate") && rc)
            SCN_FAIL(s, "mutate %s on %s: %s", w[2], w[1], og_error_last()->message);
        if (!strcmp(w[0], "fail") && strcmp(og_code_name(rc), code) != 0)
            SCN_FAIL(s, "%s on %s: expected %s, got %s", w[2], w[1], code, og_code_name(rc));
        og_error_clear();
        s->writes++;
    } else if (!strcmp(w[0], "merge")) {
        char arg[64] = "";
        if (nw < 6 || strcmp(w[2], "into") || strcmp(w[4], "->"))
            SCN_FAIL(s, "merge SRC into TGT -> WHAT");
        if (!strcmp(w[5], "error")) sscanf(strstr(l, "error") + 5, "%63s", arg);
        do_merge(s, w[1], w[3], w[5], arg);
    } else if (!strcmp(w[0], "optimize")) {
        og_optimize_options oo = OG_OPTIMIZE_OPTIONS_INIT;
        oo.branch = branch_arg(w[1]);
        og_optimize_result *r = NULL;
        if (og_graph_optimize(&r, s->g, &oo))
            SCN_FAIL(s, "optimize %s: %s", w[1], og_error_last()->message);
        og_optimize_result_free(r);
    } else if (!strcmp(w[0], "expect")) {
        do_expect(s, w[1], w[2]);
    } else {
        SCN_FAIL(s, "unknown command '%s'", w[0]);
    }
}

static void run_file(const char *path)
{
    size_t len = 0;
    char *text = read_file(path, &len);
    if (!text) fail_msg("cannot read %s", path);
    scn s = {.file = path};
    for (char *p = text; p && *p;) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = 0;
        s.lines = realloc(s.lines, (s.n + 1) * sizeof *s.lines);
        s.lines[s.n++] = p;
        p = nl ? nl + 1 : NULL;
    }
    for (s.at = 0; s.at < s.n; s.at++) {
        char *l = s.lines[s.at];
        s.line = (int)s.at + 1;
        while (*l == ' ')
            l++;
        if (!*l || *l == '#') continue;
        run_line(&s, l);
    }
    print_message("%s: %u writes, %u merges (%u conflicts), %u reads\n", path, s.writes, s.merges,
                  s.conflicts, s.reads);
    if (s.g) og_graph_close(s.g);
    if (s.dir[0]) test_sandbox_done(s.dir);
    free(s.queries);
    free(s.lines);
    free(text);
}

static char **g_files;
static size_t g_nfiles;

static void test_scenarios(void **state)
{
    (void)state;
    assert_true(g_nfiles > 0);
    for (size_t i = 0; i < g_nfiles; i++)
        run_file(g_files[i]);
}

int main(int argc, char **argv)
{
    if (argc > 1) {
        g_files = argv + 1;
        g_nfiles = (size_t)argc - 1;
    } else {
        const char *src = getenv("OG_TEST_SRCDIR");
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/tests/merge", src ? src : ".");
        DIR *d = opendir(dir);
        if (!d) {
            fprintf(stderr, "cannot open %s\n", dir);
            return 1;
        }
        struct dirent *e;
        while ((e = readdir(d))) {
            size_t n = strlen(e->d_name);
            if (n < 5 || strcmp(e->d_name + n - 4, ".scn") != 0) continue;
            g_files = realloc(g_files, (g_nfiles + 1) * sizeof *g_files);
            char *p = malloc(strlen(dir) + n + 2);
            sprintf(p, "%s/%s", dir, e->d_name);
            g_files[g_nfiles++] = p;
        }
        closedir(d);
        qsort(g_files, g_nfiles, sizeof *g_files, cmp_str);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scenarios),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
