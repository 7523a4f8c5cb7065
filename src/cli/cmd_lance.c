/* omnigraph lance schema|versions|stats|cat: inspect one Lance table (a directory) at the
 * shell. Uses only the public API. `cat --json` prints the canonical dump
 * (tests/interop/README.md), so it compares byte for byte with lancedb's side. */
#include "omnigraph.h"
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cmd_lance(int argc, char **argv);

const cli_cmd cli_lance_commands[] = {
    {"lance", cmd_lance, "inspect a Lance table: schema, versions, stats, rows",
     "omnigraph lance schema DIR [--version N] [--json] | omnigraph lance versions DIR [--json] | "
     "omnigraph lance stats DIR [--version N] [--json] | "
     "omnigraph lance cat DIR [--version N] [--columns a,b] [--limit N] [--json]"},
    CLI_TABLE_END,
};

typedef struct lance_args {
    const char *dir;
    int json;
    uint64_t version;
    char *columns_buf;
    const char *cols[256];
    size_t n_cols;
    int64_t limit;
} lance_args;

static int parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+') return -1;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end) return -1;
    *out = v;
    return 0;
}

/* Parse the options `sub` accepts (allowed: a string of letters v=--version, c=--columns,
 * l=--limit). Returns 0 or a usage exit code. */
static int parse_args(lance_args *a, int argc, char **argv, const char *allowed)
{
    const cli_cmd *self = &cli_lance_commands[0];
    memset(a, 0, sizeof *a);
    a->limit = -1;
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--json")) {
            a->json = 1;
        } else if (!strcmp(o, "--version") && strchr(allowed, 'v')) {
            if (i + 1 >= argc || parse_u64(argv[i + 1], &a->version) || a->version == 0)
                return cli_usage_error(self, "--version needs a version number >= 1");
            i++;
        } else if (!strcmp(o, "--limit") && strchr(allowed, 'l')) {
            uint64_t v;
            if (i + 1 >= argc || parse_u64(argv[i + 1], &v) || v > (uint64_t)INT64_MAX)
                return cli_usage_error(self, "--limit needs a number >= 0");
            a->limit = (int64_t)v;
            i++;
        } else if (!strcmp(o, "--columns") && strchr(allowed, 'c')) {
            if (i + 1 >= argc || !argv[i + 1][0])
                return cli_usage_error(self, "--columns needs a comma-separated list");
            free(a->columns_buf);
            a->columns_buf = strdup(argv[++i]);
            if (!a->columns_buf) return cli_usage_error(self, "out of memory");
            a->n_cols = 0;
            for (char *p = a->columns_buf;;) {
                char *comma = strchr(p, ',');
                if (comma) *comma = '\0';
                if (!*p) return cli_usage_error(self, "--columns has an empty name");
                if (a->n_cols == sizeof a->cols / sizeof a->cols[0])
                    return cli_usage_error(self, "--columns names too many columns");
                a->cols[a->n_cols++] = p;
                if (!comma) break;
                p = comma + 1;
            }
        } else if (o[0] == '-' && o[1]) {
            return cli_usage_error(self, "unknown option '%s' for 'lance %s'", o, argv[1]);
        } else if (!a->dir) {
            a->dir = o;
        } else {
            return cli_usage_error(self, "unexpected argument '%s'", o);
        }
    }
    if (!a->dir) return cli_usage_error(self, "missing DIR");
    return 0;
}

static void format_time(char *out, size_t cap, int64_t ns)
{
    int64_t secs = ns / 1000000000LL, rem = ns % 1000000000LL;
    if (rem < 0) {
        rem += 1000000000LL;
        secs--;
    }
    time_t tt = (time_t)secs;
    struct tm tm;
    if (!gmtime_r(&tt, &tm)) {
        snprintf(out, cap, "?");
        return;
    }
    char base[32];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, cap, "%s.%03dZ", base, (int)(rem / 1000000));
}

static int do_schema(lance_args *a)
{
    og_table *t = NULL;
    if (og_table_open(&t, a->dir, a->version) != 0) return cli_fail(a->json);
    int rc = og_table_write_schema(stdout, t, a->json ? OG_OUTPUT_JSON : OG_OUTPUT_TEXT);
    og_table_close(t);
    return rc ? cli_fail(a->json) : CLI_OK;
}

static int do_versions(lance_args *a)
{
    og_table *t = NULL;
    if (og_table_open(&t, a->dir, 0) != 0) return cli_fail(a->json);
    og_table_version_list *l = NULL;
    int rc = og_table_versions(&l, t);
    og_table_close(t);
    if (rc) return cli_fail(a->json);
    if (a->json)
        printf("{\"versions\":[");
    else
        printf("%-8s  %-24s  %9s  %12s\n", "version", "timestamp (UTC)", "fragments",
               "rows stored");
    for (size_t i = 0; i < og_table_version_list_count(l); i++) {
        const og_table_version_info *v = og_table_version_list_get(l, i);
        char ts[64];
        format_time(ts, sizeof ts, v->timestamp_ns);
        if (a->json)
            printf("%s{\"version\":%llu,\"timestamp\":\"%s\",\"fragments\":%llu,\"physical_rows\":%"
                   "llu}",
                   i ? "," : "", (unsigned long long)v->version, ts,
                   (unsigned long long)v->fragments, (unsigned long long)v->physical_rows);
        else
            printf("%-8llu  %-24s  %9llu  %12llu\n", (unsigned long long)v->version, ts,
                   (unsigned long long)v->fragments, (unsigned long long)v->physical_rows);
    }
    if (a->json) printf("]}\n");
    og_table_version_list_free(l);
    return CLI_OK;
}

static int do_stats(lance_args *a)
{
    og_table *t = NULL;
    if (og_table_open(&t, a->dir, a->version) != 0) return cli_fail(a->json);
    og_table_info *s = NULL;
    int rc = og_table_stats(&s, t);
    og_table_close(t);
    if (rc) return cli_fail(a->json);
    char ts[64];
    format_time(ts, sizeof ts, s->timestamp_ns);
    if (a->json) {
        printf("{\"version\":%llu,\"timestamp\":\"%s\",\"data_storage_version\":",
               (unsigned long long)s->version, ts);
        cli_json_str(stdout, s->data_storage_version);
        printf(",\"naming\":\"%s\",\"columns\":%llu,\"fragments\":%llu,\"data_files\":%llu,"
               "\"data_bytes\":%llu,\"rows\":%llu,\"physical_rows\":%llu,\"deleted_rows\":%llu,"
               "\"deletion_files\":%llu,\"deletion_files_arrow\":%llu,"
               "\"deletion_files_bitmap\":%llu,\"reader_flags\":%llu,\"writer_flags\":%llu,"
               "\"stable_row_ids\":%s}\n",
               s->naming, (unsigned long long)s->columns, (unsigned long long)s->fragments,
               (unsigned long long)s->data_files, (unsigned long long)s->data_bytes,
               (unsigned long long)s->rows, (unsigned long long)s->physical_rows,
               (unsigned long long)s->deleted_rows, (unsigned long long)s->deletion_files,
               (unsigned long long)s->deletion_files_arrow,
               (unsigned long long)s->deletion_files_bitmap, (unsigned long long)s->reader_flags,
               (unsigned long long)s->writer_flags, s->stable_row_ids ? "true" : "false");
    } else {
        printf("version               %llu (%s)\n"
               "data storage version  %s\n"
               "manifest naming       %s\n"
               "columns               %llu\n"
               "fragments             %llu\n"
               "data files            %llu (%llu bytes)\n"
               "rows                  %llu (%llu stored, %llu deleted)\n"
               "deletion files        %llu (%llu .arrow, %llu .bin)\n"
               "feature flags         reader %llu, writer %llu\n"
               "stable row ids        %s\n",
               (unsigned long long)s->version, ts,
               s->data_storage_version[0] ? s->data_storage_version : "(legacy)", s->naming,
               (unsigned long long)s->columns, (unsigned long long)s->fragments,
               (unsigned long long)s->data_files, (unsigned long long)s->data_bytes,
               (unsigned long long)s->rows, (unsigned long long)s->physical_rows,
               (unsigned long long)s->deleted_rows, (unsigned long long)s->deletion_files,
               (unsigned long long)s->deletion_files_arrow,
               (unsigned long long)s->deletion_files_bitmap, (unsigned long long)s->reader_flags,
               (unsigned long long)s->writer_flags, s->stable_row_ids ? "yes" : "no");
    }
    og_table_info_free(s);
    return CLI_OK;
}

static int do_cat(lance_args *a)
{
    og_table *t = NULL;
    /* --json: the rows are JSON lines, written only once all of them are read, so a failure
     * to open or to read has written none: the error is then the one JSON object on stdout
     * (only a failure to write stdout itself comes after some lines). */
    if (og_table_open(&t, a->dir, a->version) != 0) return cli_fail(a->json);
    og_scan_options o = OG_SCAN_OPTIONS_INIT;
    o.columns = a->n_cols ? a->cols : NULL;
    o.n_columns = a->n_cols;
    o.limit = a->limit;
    uint64_t rows = 0;
    int rc = a->json ? og_table_write_json(&rows, stdout, t, &o)
                     : og_table_write_text(&rows, stdout, t, &o);
    og_table_close(t);
    if (rc) return cli_fail(a->json);
    if (!a->json) printf("(%llu rows)\n", (unsigned long long)rows);
    return CLI_OK;
}

static int cmd_lance(int argc, char **argv)
{
    const cli_cmd *self = &cli_lance_commands[0];
    if (argc < 2) return cli_usage_error(self, "missing subcommand (schema, versions, stats, cat)");
    const char *sub = argv[1];
    const char *allowed;
    int (*fn)(lance_args *);
    if (!strcmp(sub, "schema")) {
        allowed = "v", fn = do_schema;
    } else if (!strcmp(sub, "versions")) {
        allowed = "", fn = do_versions;
    } else if (!strcmp(sub, "stats")) {
        allowed = "v", fn = do_stats;
    } else if (!strcmp(sub, "cat")) {
        allowed = "vcl", fn = do_cat;
    } else {
        return cli_usage_error(self, "unknown subcommand 'lance %s'", sub);
    }
    lance_args a;
    int rc = parse_args(&a, argc, argv, allowed);
    if (!rc) rc = fn(&a);
    free(a.columns_buf);
    return rc;
}
