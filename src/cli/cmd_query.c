/* omnigraph query|mutate: run a .gq read on a pinned snapshot (the head or --at an earlier
 * commit) and print it as an aligned table, one JSON object or RFC 4180 CSV, written batch by
 * batch as the rows are read; run a .gq mutation as one graph commit (--if-commit: a compare
 * and swap on the branch head). Uses only the public API; docs/cli.md shows each form. */
#include "omnigraph.h"
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmd_query(int argc, char **argv);
static int cmd_mutate(int argc, char **argv);

const cli_cmd cli_query_commands[] = {
    {"query", cmd_query,
     "run a .gq read query (at the head, or --at an earlier commit under its own schema)",
     "omnigraph query --store ROOT (-e 'TEXT' | --file F.gq [--name N]) [--params JSON] "
     "[--branch B] [--at REF] [--json | --csv]"},
    {"mutate", cmd_mutate, "run a .gq mutation as one graph commit",
     "omnigraph mutate --store ROOT (-e 'TEXT' | --file F.gq [--name N]) [--params JSON] "
     "[--branch B] [--if-commit ID] [--json]"},
    CLI_TABLE_END,
};

/* A table cell wider than this is cut ("..." marks the cut): a table is for reading. */
#define CELL_MAX 48

typedef struct q_args {
    const char *root, *text, *file, *name, *params, *branch, *at, *if_commit;
    int json, csv;
} q_args;

/* Parse argv. `mutate` selects the command's own options (--at/--csv vs --if-commit). A bare
 * word is the query name (the reference CLI's `query NAME --query F` form). */
static int parse_args(q_args *a, const cli_cmd *self, int argc, char **argv, int mutate)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char **slot = NULL;
        if (!strcmp(o, "--json")) {
            a->json = 1;
            continue;
        }
        if (!mutate && !strcmp(o, "--csv")) {
            a->csv = 1;
            continue;
        }
        if (!strcmp(o, "--store"))
            slot = &a->root;
        else if (!strcmp(o, "-e"))
            slot = &a->text;
        else if (!strcmp(o, "--file") || !strcmp(o, "--query"))
            slot = &a->file;
        else if (!strcmp(o, "--name"))
            slot = &a->name;
        else if (!strcmp(o, "--params"))
            slot = &a->params;
        else if (!strcmp(o, "--branch"))
            slot = &a->branch;
        else if (!mutate && !strcmp(o, "--at"))
            slot = &a->at;
        else if (mutate && !strcmp(o, "--if-commit"))
            slot = &a->if_commit;
        else if (o[0] == '-' && o[1])
            return cli_usage_error(self, "unknown option '%s'", o);
        if (slot) {
            if (i + 1 >= argc || !argv[i + 1][0])
                return cli_usage_error(self, "%s needs a value", o);
            if (*slot) return cli_usage_error(self, "%s given twice", o);
            *slot = argv[++i];
            continue;
        }
        if (a->name) return cli_usage_error(self, "unexpected argument '%s'", o);
        a->name = o;
    }
    if (!a->root) return cli_usage_error(self, "missing the graph root (--store ROOT)");
    if (!a->text == !a->file)
        return cli_usage_error(self, "give the query either as -e 'TEXT' or as --file F.gq");
    if (a->json && a->csv) return cli_usage_error(self, "--json and --csv exclude each other");
    return 0;
}

/* The query source: the -e text (named "<-e>") or the whole --file. */
static int open_source(cli_file *src, const q_args *a)
{
    if (a->file) return cli_file_open(src, a->file, a->json);
    memset(src, 0, sizeof *src);
    src->name = "<-e>";
    src->data = a->text;
    src->len = strlen(a->text);
    return CLI_OK;
}

static int open_graph(og_graph **g, const char *root, int read_only)
{
    og_open_options o = OG_OPEN_OPTIONS_INIT;
    o.read_only = read_only;
    return og_graph_open(g, root, &o);
}

/* ---- cell text ---------------------------------------------------------------------------- */

/* The text of a cell for a table or CSV: strings as they are, everything else in its
 * canonical JSON form without the quotes of dates (null: is_null set, text ""). Returns a
 * pointer valid until the next call on r; NULL on failure. */
static const char *cell_text(og_result *r, uint64_t row, size_t col, size_t *len, int *is_null,
                             char *num, size_t num_cap)
{
    og_value v;
    *is_null = 0;
    if (og_result_value(&v, r, row, col) != 0) return NULL;
    switch (v.type) {
    case OG_VALUE_NULL:
        *is_null = 1;
        *len = 0;
        return "";
    case OG_VALUE_BOOL:
        *len = strlen(v.b ? "true" : "false");
        return v.b ? "true" : "false";
    case OG_VALUE_INT:
        *len = (size_t)snprintf(num, num_cap, "%lld", (long long)v.i);
        return num;
    case OG_VALUE_UINT:
        *len = (size_t)snprintf(num, num_cap, "%llu", (unsigned long long)v.u);
        return num;
    case OG_VALUE_FLOAT:
        return og_result_cell_json(r, row, col, len); /* the shortest form */
    default:
        *len = v.len;
        return v.str;
    }
}

/* Display width of n bytes of UTF-8 (code points; continuation bytes do not count). */
static size_t disp_width(const char *s, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) w++;
    return w;
}

/* Bytes of s (n bytes) that fit in `cap` display columns, cut at a code point. */
static size_t cut_bytes(const char *s, size_t n, size_t cap)
{
    size_t w = 0, i = 0;
    for (; i < n; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) {
            if (w == cap) break;
            w++;
        }
    }
    return i;
}

static int is_numeric(const og_value *v)
{
    return v->type == OG_VALUE_INT || v->type == OG_VALUE_UINT || v->type == OG_VALUE_FLOAT;
}

/* Write a cell's text padded to width w (right-aligned for numbers); control characters
 * as \n, \t, ... so a row stays on one line. */
static void put_cell(const char *s, size_t n, size_t w, int right)
{
    size_t shown = disp_width(s, n), room = w;
    int cut = shown > CELL_MAX;
    if (cut) n = cut_bytes(s, n, CELL_MAX - 3), shown = CELL_MAX;
    if (right)
        for (size_t k = shown; k < room; k++)
            fputc(' ', stdout);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n')
            fputs("\\n", stdout);
        else if (c == '\t')
            fputs("\\t", stdout);
        else if (c == '\r')
            fputs("\\r", stdout);
        else if (c < 0x20)
            fputc('?', stdout);
        else
            fputc(c, stdout);
    }
    if (cut) fputs("...", stdout);
    if (!right)
        for (size_t k = shown; k < room; k++)
            fputc(' ', stdout);
}

/* ---- output formats ----------------------------------------------------------------------- */

/* "N rows from branch B via Q at commit ID", then the header, a rule and the rows. The
 * widths need one pass over the cells (they are in memory already); the text is written row
 * by row, flushed after each batch, never assembled whole. */
static int print_table(og_result *r, const char *branch)
{
    size_t nc = og_result_column_count(r);
    uint64_t nr = og_result_row_count(r);
    const char *cid = og_result_graph_commit_id(r);
    printf("%llu row%s from branch %s via %s at commit %s\n", (unsigned long long)nr,
           nr == 1 ? "" : "s", branch, og_result_query_name(r), cid[0] ? cid : "(none)");
    if (nc == 0) return 0;
    size_t *w = calloc(nc, sizeof *w);
    int *right = calloc(nc, sizeof *right);
    if (!w || !right) {
        free(w);
        free(right);
        cli_error_text(og_code_name(OG_E_NOMEM), "out of memory");
        return -1;
    }
    char num[48];
    for (size_t c = 0; c < nc; c++)
        w[c] = disp_width(og_result_column_name(r, c), strlen(og_result_column_name(r, c)));
    int rc = 0;
    for (uint64_t row = 0; !rc && row < nr; row++) {
        for (size_t c = 0; c < nc; c++) {
            size_t len;
            int null;
            const char *t = cell_text(r, row, c, &len, &null, num, sizeof num);
            if (!t) {
                rc = -1;
                break;
            }
            size_t dw = null ? 4 : disp_width(t, len);
            if (dw > CELL_MAX) dw = CELL_MAX;
            if (dw > w[c]) w[c] = dw;
        }
    }
    /* A column is right-aligned when its first non-null value is a number. */
    for (size_t c = 0; !rc && c < nc; c++) {
        for (uint64_t row = 0; row < nr; row++) {
            og_value v;
            if (og_result_value(&v, r, row, c) != 0) break;
            if (v.type == OG_VALUE_NULL) continue;
            right[c] = is_numeric(&v);
            break;
        }
    }
    if (!rc) {
        for (size_t c = 0; c < nc; c++) {
            if (c) fputs(" | ", stdout);
            const char *h = og_result_column_name(r, c);
            put_cell(h, strlen(h), c + 1 == nc && !right[c] ? 0 : w[c], right[c]);
        }
        fputc('\n', stdout);
        for (size_t c = 0; c < nc; c++) {
            if (c) fputs("-+-", stdout);
            for (size_t k = 0; k < w[c]; k++)
                fputc('-', stdout);
        }
        fputc('\n', stdout);
    }
    size_t nb = og_result_batch_count(r);
    for (size_t b = 0; !rc && b < nb; b++) {
        uint64_t first, rows;
        if (og_result_batch_rows(&first, &rows, r, b) != 0) {
            rc = -1;
            break;
        }
        for (uint64_t row = first; !rc && row < first + rows; row++) {
            for (size_t c = 0; c < nc; c++) {
                size_t len;
                int null;
                const char *t = cell_text(r, row, c, &len, &null, num, sizeof num);
                if (!t) {
                    rc = -1;
                    break;
                }
                if (c) fputs(" | ", stdout);
                if (null) t = "null", len = 4;
                /* The last column is not padded: no trailing blanks. */
                put_cell(t, len, c + 1 == nc && !right[c] ? 0 : w[c], right[c]);
            }
            fputc('\n', stdout);
        }
        fflush(stdout);
    }
    free(w);
    free(right);
    return rc;
}

/* The result as one object, rows streamed batch by batch. On a failure part way (a cell that
 * cannot be written as JSON), the rows array is closed and -1 returned: the caller ends the
 * object with the error, so stdout still holds one JSON object. */
static int print_json(og_result *r)
{
    size_t nc = og_result_column_count(r);
    const char *cid = og_result_graph_commit_id(r);
    printf("{\"graph_commit_id\":");
    if (cid[0])
        cli_json_str(stdout, cid);
    else
        fputs("null", stdout);
    printf(",\"columns\":[");
    for (size_t c = 0; c < nc; c++) {
        if (c) fputc(',', stdout);
        cli_json_str(stdout, og_result_column_name(r, c));
    }
    printf("],\"rows\":[");
    size_t nb = og_result_batch_count(r);
    uint64_t done = 0;
    int rc = 0;
    for (size_t b = 0; !rc && b < nb; b++) {
        uint64_t first, rows;
        if (og_result_batch_rows(&first, &rows, r, b) != 0) {
            rc = -1;
            break;
        }
        for (uint64_t row = first; row < first + rows; row++) {
            size_t len;
            const char *j = og_result_row_json(r, row, &len);
            if (!j) {
                rc = -1;
                break;
            }
            if (done++) fputc(',', stdout);
            fwrite(j, 1, len, stdout);
        }
        fflush(stdout);
    }
    fputc(']', stdout);
    if (!rc) {
        cli_json_warnings(stdout);
        printf("}\n");
    }
    return rc;
}

/* One CSV field (RFC 4180): quoted when it holds a comma, a quote, CR or LF, or is empty but
 * not null (so "" and a missing value differ); quotes doubled. */
static void csv_field(const char *s, size_t n, int null)
{
    if (null) return;
    int quote = n == 0;
    for (size_t i = 0; i < n && !quote; i++)
        if (s[i] == ',' || s[i] == '"' || s[i] == '\r' || s[i] == '\n') quote = 1;
    if (!quote) {
        fwrite(s, 1, n, stdout);
        return;
    }
    fputc('"', stdout);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"') fputc('"', stdout);
        fputc(s[i], stdout);
    }
    fputc('"', stdout);
}

static int print_csv(og_result *r)
{
    size_t nc = og_result_column_count(r);
    char num[48];
    for (size_t c = 0; c < nc; c++) {
        if (c) fputc(',', stdout);
        const char *h = og_result_column_name(r, c);
        csv_field(h, strlen(h), 0);
    }
    fputs("\r\n", stdout);
    size_t nb = og_result_batch_count(r);
    for (size_t b = 0; b < nb; b++) {
        uint64_t first, rows;
        if (og_result_batch_rows(&first, &rows, r, b) != 0) return -1;
        for (uint64_t row = first; row < first + rows; row++) {
            for (size_t c = 0; c < nc; c++) {
                size_t len;
                int null;
                const char *t = cell_text(r, row, c, &len, &null, num, sizeof num);
                if (!t) return -1;
                if (c) fputc(',', stdout);
                csv_field(t, len, null);
            }
            fputs("\r\n", stdout);
        }
        fflush(stdout);
    }
    return 0;
}

/* ---- commands ----------------------------------------------------------------------------- */

static int cmd_query(int argc, char **argv)
{
    const cli_cmd *self = &cli_query_commands[0];
    q_args a;
    int rc = parse_args(&a, self, argc, argv, 0);
    if (rc) return rc;
    cli_file src;
    if (open_source(&src, &a)) return CLI_ERROR;
    og_graph *g = NULL;
    if (open_graph(&g, a.root, 1) != 0) {
        cli_file_close(&src);
        return cli_fail(a.json);
    }
    og_query_options o = OG_QUERY_OPTIONS_INIT;
    o.source = src.data;
    o.source_len = src.len;
    o.source_file = src.name;
    o.name = a.name;
    o.params_json = a.params;
    o.at = a.at;
    o.branch = a.branch;
    og_result *r = NULL;
    int ex = CLI_OK;
    if (og_graph_query(&r, g, &o) != 0) {
        ex = cli_fail(a.json);
    } else {
        int prc = a.json  ? print_json(r)
                  : a.csv ? print_csv(r)
                          : print_table(r, a.branch ? a.branch : "main");
        if (prc && a.json) {
            ex = cli_fail_json_end(); /* the rows so far, then "ok":false and the error */
        } else if (prc) {
            fflush(stdout);
            ex = cli_fail(0); /* output is already under way: the error goes to stderr */
        }
    }
    og_result_free(r);
    og_graph_close(g);
    cli_file_close(&src);
    if (ex == CLI_OK && (fflush(stdout) != 0 || ferror(stdout))) {
        cli_error_text(og_code_name(OG_E_STORAGE), "writing the result failed");
        ex = CLI_ERROR;
    }
    return ex;
}

static void print_mutate_json(const og_write_result *m, const char *branch)
{
    const char *commit = og_write_result_commit_id(m);
    static const struct {
        const char *name;
        int what;
    } counts[] = {
        {"nodes_inserted", OG_WRITE_NODES_INSERTED}, {"nodes_updated", OG_WRITE_NODES_UPDATED},
        {"nodes_deleted", OG_WRITE_NODES_DELETED},   {"edges_inserted", OG_WRITE_EDGES_INSERTED},
        {"edges_updated", OG_WRITE_EDGES_UPDATED},   {"edges_deleted", OG_WRITE_EDGES_DELETED},
        {"reprepares", OG_WRITE_REPREPARES},
    };
    printf("{\"ok\":true,\"branch\":");
    cli_json_str(stdout, branch);
    printf(",\"query\":");
    cli_json_str(stdout, og_write_result_query_name(m));
    printf(",\"committed\":%s,\"commit_id\":", commit[0] ? "true" : "false");
    if (commit[0])
        cli_json_str(stdout, commit);
    else
        fputs("null", stdout);
    printf(",\"manifest_version\":%llu", (unsigned long long)og_write_result_manifest_version(m));
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        printf(",\"%s\":%llu", counts[i].name,
               (unsigned long long)og_write_result_count(m, counts[i].what));
    printf(",\"tables\":");
    cli_json_write_tables(stdout, m);
    printf("}\n");
}

static int cmd_mutate(int argc, char **argv)
{
    const cli_cmd *self = &cli_query_commands[1];
    q_args a;
    int rc = parse_args(&a, self, argc, argv, 1);
    if (rc) return rc;
    cli_file src;
    if (open_source(&src, &a)) return CLI_ERROR;
    og_graph *g = NULL;
    if (open_graph(&g, a.root, 0) != 0) {
        cli_file_close(&src);
        return cli_fail_write(a.json);
    }
    og_mutate_options o = OG_MUTATE_OPTIONS_INIT;
    o.source = src.data;
    o.source_len = src.len;
    o.source_file = src.name;
    o.name = a.name;
    o.params_json = a.params;
    o.if_commit = a.if_commit;
    o.branch = a.branch;
    og_write_result *m = NULL;
    int ex = CLI_OK;
    if (og_graph_mutate(&m, g, &o) != 0) {
        ex = cli_fail_write(a.json);
    } else if (a.json) {
        print_mutate_json(m, a.branch ? a.branch : "main");
    } else {
        const char *commit = og_write_result_commit_id(m);
        unsigned long long nodes = og_write_result_count(m, OG_WRITE_NODES_INSERTED) +
                                   og_write_result_count(m, OG_WRITE_NODES_UPDATED) +
                                   og_write_result_count(m, OG_WRITE_NODES_DELETED);
        unsigned long long edges = og_write_result_count(m, OG_WRITE_EDGES_INSERTED) +
                                   og_write_result_count(m, OG_WRITE_EDGES_UPDATED) +
                                   og_write_result_count(m, OG_WRITE_EDGES_DELETED);
        printf("changed %s via %s: %llu nodes, %llu edges ", a.branch ? a.branch : "main",
               og_write_result_query_name(m), nodes, edges);
        if (commit[0])
            printf("(commit %s)\n", commit);
        else
            printf("(nothing to commit)\n");
    }
    og_write_result_free(m);
    og_graph_close(g);
    cli_file_close(&src);
    return ex;
}
