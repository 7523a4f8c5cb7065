/* The node side of the Lance interop suite: lancedb 0.31.0 makes every kind of table the C side
 * must read, tests/interop/lance_tool.cjs dumps each in the canonical JSON-lines form, and this
 * driver checks the dumps are well formed, deterministic (two dumps are byte-equal) and equal to
 * the rows the generator says the table holds (computed without lancedb). The fixtures' on-disk
 * properties the C reader depends on are checked too: manifest naming, data storage version,
 * feature flags, .arrow vs .bin deletion files, fragment count and the row-id scheme.
 *
 * The C-side checks (a)-(d) of issue 3 item 5 (tests/interop/README.md) run here too: the C
 * reader (`omnigraph lance cat --json`, `lance stats --json`) on every lancedb table, the C
 * writer (tests/interop/interop_c.c over src/lance/dataset.h) making tables lancedb reads, and
 * each side changing the other's tables. */
#include "testutil.h"
#include "interop.h"

#include "interop_c.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static char g_tmp[512];  /* this run's scratch directory */
static char g_bin[1024]; /* the omnigraph CLI */

/* One table variant: how lancedb makes it and what its files must look like. */
typedef struct variant {
    const char *table;        /* table name (DIR/table.lance) */
    const char *kind;         /* lance_tool kind */
    const char *flags;        /* extra make-table flags */
    const char *format;       /* data storage version in the manifest */
    const char *naming;       /* "v1" or "v2" manifest names */
    int versions;             /* manifests after make-table */
    int data_files;           /* files under data/ */
    const char *deletion_ext; /* every deletion file ends so; NULL: none */
    int stable;               /* made with stable row ids (feature flag 2) */
} variant;

static const variant k_variants[] = {
    {"types", "types", "", "2.0", "v2", 1, 1, NULL, 0},
    {"types_v1", "types", "--v1-names", "2.0", "v1", 1, 1, NULL, 0},
    {"types_stable", "types", "--stable-row-ids", "2.0", "v2", 1, 1, NULL, 1},
    {"big", "big", "", "2.0", "v2", 1, 1, NULL, 0},
    {"vectors", "vectors", "", "2.0", "v2", 1, 1, NULL, 0},
    {"appended", "appended", "", "2.0", "v2", 2, 2, NULL, 0},
    {"appended_stable_v1", "appended", "--stable-row-ids --v1-names", "2.0", "v1", 2, 2, NULL, 1},
    {"deleted_few", "deleted_few", "", "2.0", "v2", 2, 1, ".arrow", 0},
    {"deleted_many", "deleted_many", "", "2.0", "v2", 2, 1, ".bin", 0},
    {"mixed_stable", "mixed", "--stable-row-ids", "2.0", "v2", 3, 2, ".arrow", 1},
    /* lancedb's default data storage version: the C reader must refuse it with a typed error */
    {"types_default21", "types", "--format default", "2.1", "v2", 1, 1, NULL, 0},
};

/* ---- running the tool ---------------------------------------------------------------------- */

/* Run a shell command, capture its stdout (malloc'd, NUL-terminated) and return the exit status. */
static int sh(char **out, const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < sizeof cmd);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    for (;;) {
        if (cap - len < 2048) {
            cap *= 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        size_t got = fread(buf + len, 1, cap - len - 1, p);
        if (got == 0) break;
        len += got;
    }
    buf[len] = '\0';
    int st = pclose(p);
    if (out)
        *out = buf;
    else
        free(buf);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* node lance_tool.cjs ARGS; fails the test unless it exits 0; returns its stdout. */
static char *tool(const char *fmt, ...)
{
    char args[3072];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < sizeof args);
    char *out = NULL;
    int rc = sh(&out, "node '%s/lance_tool.cjs' %s", test_interop_dir(), args);
    if (rc != 0) fail_msg("lance_tool %s: exit %d", args, rc);
    return out;
}

/* Parse a one-object JSON answer; fails the test on bad JSON. */
static json_t *tool_json(const char *fmt, ...)
{
    char args[3072];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < sizeof args);
    char *out = tool("%s", args);
    json_error_t err;
    json_t *j = json_loads(out, 0, &err);
    if (!j || !json_is_object(j))
        fail_msg("lance_tool %s: not a JSON object: %s (%s)", args, out, err.text);
    free(out);
    return j;
}

static long long jint(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v)) fail_msg("JSON member %s is not an integer", key);
    return (long long)json_integer_value(v);
}

static const char *jstr(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_string(v)) fail_msg("JSON member %s is not a string", key);
    return json_string_value(v);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot read %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    assert_true(n >= 0);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* The two files must be byte-equal; on a difference, name the first differing line. */
static void assert_same_file(const char *a, const char *b)
{
    size_t la, lb;
    char *x = slurp(a, &la), *y = slurp(b, &lb);
    if (la != lb || memcmp(x, y, la) != 0) {
        size_t i = 0, line = 1;
        while (i < la && i < lb && x[i] == y[i])
            line += x[i++] == '\n';
        fail_msg("%s and %s differ at line %zu (sizes %zu, %zu)", a, b, line, la, lb);
    }
    free(x);
    free(y);
}

/* Every line a JSON object with the same keys in the same order; ids strictly increasing when
 * "id" is a column. Returns the number of lines. */
static size_t check_wellformed(const char *path)
{
    size_t len;
    char *text = slurp(path, &len);
    assert_true(len == 0 || text[len - 1] == '\n');
    size_t lines = 0;
    double last_id = -1e300;
    char first_keys[1024] = "";
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl);
        *nl = '\0';
        json_error_t err;
        /* 64-bit unsigned values exceed json_int_t: parse integers as doubles for the shape check
         */
        json_t *row = json_loads(line, JSON_DECODE_INT_AS_REAL | JSON_REJECT_DUPLICATES, &err);
        if (!row || !json_is_object(row))
            fail_msg("%s:%zu: not a JSON object: %s", path, lines + 1, err.text);
        char keys[1024] = "";
        const char *key;
        json_t *val;
        json_object_foreach(row, key, val)
        {
            strncat(keys, key, sizeof keys - strlen(keys) - 2);
            strcat(keys, ",");
        }
        if (lines == 0)
            memcpy(first_keys, keys, sizeof keys);
        else if (strcmp(keys, first_keys) != 0)
            fail_msg("%s:%zu: keys %s, first line has %s", path, lines + 1, keys, first_keys);
        json_t *id = json_object_get(row, "id");
        if (id) {
            assert_true(json_is_real(id));
            double v = json_real_value(id);
            if (!(v > last_id))
                fail_msg("%s:%zu: id %.0f not after %.0f", path, lines + 1, v, last_id);
            last_id = v;
        }
        json_decref(row);
        lines++;
        line = nl + 1;
    }
    free(text);
    return lines;
}

/* ---- the C side ------------------------------------------------------------------------------ */

/* C-cat: `omnigraph lance cat DIR --json ARGS > out`. Returns the exit status; *err (may be NULL)
 * receives stderr. */
static int c_cat(char **err, const char *table_dir, const char *args, const char *out)
{
    return sh(err, "'%s' lance cat '%s' --json %s 2>&1 >'%s'", g_bin, table_dir, args, out);
}

/* C-cat that must succeed. */
static void c_cat_ok(const char *table_dir, const char *args, const char *out)
{
    char *err = NULL;
    int rc = c_cat(&err, table_dir, args, out);
    if (rc != 0) fail_msg("omnigraph lance cat %s %s: exit %d: %s", table_dir, args, rc, err);
    free(err);
}

/* `omnigraph lance stats DIR --json [--version N]` parsed. */
static json_t *c_stats(const char *table_dir, uint64_t version)
{
    char *out = NULL;
    char vopt[64] = "";
    if (version) snprintf(vopt, sizeof vopt, "--version %llu", (unsigned long long)version);
    int rc = sh(&out, "'%s' lance stats '%s' --json %s", g_bin, table_dir, vopt);
    if (rc != 0) fail_msg("omnigraph lance stats %s: exit %d: %s", table_dir, rc, out);
    json_error_t err;
    json_t *j = json_loads(out, 0, &err);
    if (!j) fail_msg("omnigraph lance stats: not JSON: %s", out);
    free(out);
    return j;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    size_t n = strlen(text);
    assert_int_equal(fwrite(text, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* C-cat of DIR/NAME.lance at `version` (0: latest) equals lancedb's dump of it. */
static void assert_c_reads_like_lancedb(const char *name, int version, const char *tag)
{
    char d[700], c[700], tdir[700], vopt[64] = "";
    snprintf(d, sizeof d, "%s/%s.%s.dump", g_tmp, name, tag);
    snprintf(c, sizeof c, "%s/%s.%s.ccat", g_tmp, name, tag);
    snprintf(tdir, sizeof tdir, "%s/%s.lance", g_tmp, name);
    if (version) snprintf(vopt, sizeof vopt, "--version %d", version);
    free(tool("dump '%s' %s %s --out '%s'", g_tmp, name, vopt, d));
    c_cat_ok(tdir, vopt, c);
    assert_same_file(c, d);
}

/* ---- fixture ------------------------------------------------------------------------------- */

static int group_setup(void **state)
{
    const char *bindir = getenv("OG_TEST_BINDIR");
    snprintf(g_bin, sizeof g_bin, "%s/omnigraph", bindir && *bindir ? bindir : ".");
    /* The install must happen (CI reaches the npm registry): if it cannot, every test fails. */
    int rc = test_interop_group_setup(state);
    if (rc != 0) return rc;
    test_sandbox_new(g_tmp, sizeof g_tmp, "interop");
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    test_sandbox_done(g_tmp);
    return 0;
}

/* ---- tests --------------------------------------------------------------------------------- */

static void test_printer_selftest(void **state)
{
    (void)state;
    json_t *j = tool_json("selftest");
    assert_true(jint(j, "checks") > 1000);
    json_t *fails = json_object_get(j, "failures");
    assert_true(json_is_array(fails));
    if (json_array_size(fails))
        fail_msg("printer selftest: %s", json_string_value(json_array_get(fails, 0)));
    json_decref(j);
}

static void test_variant(void **state)
{
    const variant *v = *state;
    json_t *made = tool_json("make-table '%s' %s --kind %s %s", g_tmp, v->table, v->kind, v->flags);
    long long rows = jint(made, "rows");
    assert_int_equal(jint(made, "version"), v->versions);
    json_decref(made);

    /* every column keeps its type and nullability through lancedb */
    char *got = tool("schema '%s' %s", g_tmp, v->table), *want = tool("schema --kind %s", v->kind);
    assert_string_equal(got, want);
    free(got);
    free(want);

    /* on-disk properties the C reader depends on */
    json_t *ins = tool_json("inspect '%s' %s", g_tmp, v->table);
    assert_string_equal(jstr(ins, "naming"), v->naming);
    assert_string_equal(jstr(ins, "data_format"), v->format);
    assert_int_equal(json_array_size(json_object_get(ins, "manifests")), v->versions);
    assert_int_equal(jint(ins, "data_files"), v->data_files);
    /* lance writes each transaction twice: a .txn file and a copy inside the manifest */
    assert_int_equal(jint(ins, "transactions"), v->versions);
    assert_int_equal(jint(ins, "inline_transactions"), v->versions);
    json_t *dels = json_object_get(ins, "deletion_files");
    assert_true(json_is_array(dels));
    if (!v->deletion_ext)
        assert_int_equal(json_array_size(dels), 0);
    else {
        assert_true(json_array_size(dels) > 0);
        size_t i;
        json_t *d;
        json_array_foreach(dels, i, d)
        {
            const char *name = json_string_value(d);
            size_t nl = strlen(name), el = strlen(v->deletion_ext);
            if (nl < el || strcmp(name + nl - el, v->deletion_ext) != 0)
                fail_msg("deletion file %s, want *%s", name, v->deletion_ext);
        }
    }
    /* feature flags in the latest manifest: 1 = some fragment has deletions, 2 = stable row ids */
    assert_int_equal(jint(ins, "fragments"), v->data_files);
    long long flags = jint(ins, "reader_flags");
    assert_int_equal(jint(ins, "writer_flags"), flags);
    assert_int_equal(flags & 1, v->deletion_ext != NULL);
    assert_int_equal((flags & 2) != 0, v->stable);
    if (v->data_files >= 2) {
        /* row addresses put the second fragment at 1<<32 and up; stable row ids count the rows
         * ever written from 0 */
        unsigned long long max_rowid = strtoull(jstr(ins, "max_rowid"), NULL, 10);
        if (v->stable)
            assert_true(max_rowid < (1ULL << 20));
        else
            assert_true(max_rowid >= (1ULL << 32));
    }
    /* the C reader sees the same storage facts (it opens 2.1 tables for metadata too) */
    char tdir[700];
    snprintf(tdir, sizeof tdir, "%s/%s.lance", g_tmp, v->table);
    json_t *cs = c_stats(tdir, 0);
    assert_string_equal(jstr(cs, "naming"), v->naming);
    assert_string_equal(jstr(cs, "data_storage_version"), v->format);
    assert_int_equal(jint(cs, "version"), v->versions);
    assert_int_equal(jint(cs, "fragments"), jint(ins, "fragments"));
    assert_int_equal(jint(cs, "data_files"), v->data_files);
    assert_int_equal(jint(cs, "reader_flags"), flags);
    assert_int_equal(jint(cs, "writer_flags"), flags);
    assert_int_equal(jint(cs, "rows"), rows);
    assert_int_equal(jint(cs, "deletion_files"), json_array_size(dels));
    if (v->deletion_ext) {
        int bin = !strcmp(v->deletion_ext, ".bin");
        assert_int_equal(jint(cs, bin ? "deletion_files_bitmap" : "deletion_files_arrow"),
                         json_array_size(dels));
    }
    assert_int_equal(json_is_true(json_object_get(cs, "stable_row_ids")), v->stable);
    json_decref(cs);
    json_decref(ins);

    char d1[700], d2[700], e[700];
    snprintf(d1, sizeof d1, "%s/%s.dump1", g_tmp, v->table);
    snprintf(d2, sizeof d2, "%s/%s.dump2", g_tmp, v->table);
    snprintf(e, sizeof e, "%s/%s.expect", g_tmp, v->table);
    free(tool("dump '%s' %s --out '%s'", g_tmp, v->table, d1));
    free(tool("dump '%s' %s --out '%s'", g_tmp, v->table, d2));
    free(tool("expect --kind %s --format %s --out '%s'", v->kind, v->format, e));
    assert_int_equal(check_wellformed(d1), (size_t)rows);
    assert_same_file(d1, d2);
    assert_same_file(d1, e);

    /* (b) the C reader gives the same bytes, or refuses 2.1 with the typed error */
    char c1[700];
    snprintf(c1, sizeof c1, "%s/%s.ccat", g_tmp, v->table);
    char *err = NULL;
    int rc = c_cat(&err, tdir, "", c1);
    if (!strcmp(v->format, "2.1")) {
        if (rc != 1) fail_msg("C-cat of a 2.1 table: exit %d, want 1 (%s)", rc, err);
        /* with --json the error is the one object on stdout */
        size_t n = 0;
        char *dumped = slurp(c1, &n);
        assert_non_null(strstr(dumped, "\"code\":\"unsupported\""));
        assert_non_null(strstr(dumped, "unsupported data storage version 2.1"));
        free(dumped);
    } else {
        if (rc != 0) fail_msg("C-cat %s: exit %d: %s", v->table, rc, err);
        assert_same_file(c1, d1);
    }
    free(err);
}

/* A table with history: every version dumps to the generator's rows at that version. */
static void test_time_travel(void **state)
{
    (void)state;
    free(tool("make-table '%s' tt --kind mixed --v1-names", g_tmp));
    json_t *vs = tool_json("versions '%s' tt", g_tmp);
    json_t *arr = json_object_get(vs, "versions");
    assert_int_equal(json_array_size(arr), 3);
    for (int ver = 1; ver <= 3; ver++) {
        assert_int_equal(jint(json_array_get(arr, (size_t)ver - 1), "version"), ver);
        char d[700], e[700];
        snprintf(d, sizeof d, "%s/tt.v%d.dump", g_tmp, ver);
        snprintf(e, sizeof e, "%s/tt.v%d.expect", g_tmp, ver);
        free(tool("dump '%s' tt --version %d --out '%s'", g_tmp, ver, d));
        free(tool("expect --kind mixed --version %d --out '%s'", ver, e));
        assert_same_file(d, e);
        /* (b) time travel in C */
        char cc[700], tdir[700], vopt[32];
        snprintf(cc, sizeof cc, "%s/tt.v%d.ccat", g_tmp, ver);
        snprintf(tdir, sizeof tdir, "%s/tt.lance", g_tmp);
        snprintf(vopt, sizeof vopt, "--version %d", ver);
        c_cat_ok(tdir, vopt, cc);
        assert_same_file(cc, e);
        json_t *c = tool_json("count '%s' tt --version %d", g_tmp, ver);
        assert_int_equal(jint(c, "count"), check_wellformed(d));
        json_decref(c);
    }
    json_decref(vs);
}

/* Projection keeps the requested order; without "id" the lines sort by their bytes. */
static void test_projection(void **state)
{
    (void)state;
    free(tool("make-table '%s' proj --kind types --rows 300", g_tmp));
    const char *sets[] = {"s,id,st", "ts_us,li", "s"};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        char d[700], e[700];
        snprintf(d, sizeof d, "%s/proj%zu.dump", g_tmp, i);
        snprintf(e, sizeof e, "%s/proj%zu.expect", g_tmp, i);
        free(tool("dump '%s' proj --columns %s --out '%s'", g_tmp, sets[i], d));
        free(tool("expect --kind types --rows 300 --columns %s --out '%s'", sets[i], e));
        assert_int_equal(check_wellformed(d), 300);
        assert_same_file(d, e);
        /* (b) projection in C: same order of keys and of rows */
        char c[700], tdir[700], copt[64];
        snprintf(c, sizeof c, "%s/proj%zu.ccat", g_tmp, i);
        snprintf(tdir, sizeof tdir, "%s/proj.lance", g_tmp);
        snprintf(copt, sizeof copt, "--columns %s", sets[i]);
        c_cat_ok(tdir, copt, c);
        assert_same_file(c, e);
    }
    char *line = tool("dump '%s' proj --columns s,id", g_tmp);
    const char *first = "{\"s\":\"s0\",\"id\":0}\n{\"s\":\"s1\",\"id\":1}\n";
    assert_true(strncmp(line, first, strlen(first)) == 0);
    free(line);
}

/* append/delete/count/versions, the calls checks (c) and (d) will make on C-written tables. */
static void test_append_delete(void **state)
{
    (void)state;
    free(tool("make-table '%s' ops --kind types --rows 100", g_tmp));
    json_t *a = tool_json("append '%s' ops --rows 50", g_tmp);
    assert_int_equal(jint(a, "first_id"), 100);
    assert_int_equal(jint(a, "rows"), 150);
    assert_int_equal(jint(a, "version"), 2);
    json_decref(a);
    json_t *d = tool_json("delete '%s' ops --where 'id >= 120'", g_tmp);
    assert_int_equal(jint(d, "deleted"), 30);
    assert_int_equal(jint(d, "rows"), 120);
    json_decref(d);
    json_t *c = tool_json("count '%s' ops --version 2", g_tmp);
    assert_int_equal(jint(c, "count"), 150);
    json_decref(c);
    /* the appended rows come from the same generator, so the table is now kind types, 120 rows */
    char dp[700], ep[700];
    snprintf(dp, sizeof dp, "%s/ops.dump", g_tmp);
    snprintf(ep, sizeof ep, "%s/ops.expect", g_tmp);
    free(tool("dump '%s' ops --out '%s'", g_tmp, dp));
    free(tool("expect --kind types --rows 120 --out '%s'", ep));
    assert_same_file(dp, ep);
}

static void test_tool_errors(void **state)
{
    (void)state;
    assert_int_equal(sh(NULL, "node '%s/lance_tool.cjs' dump '%s' no_such_table 2>/dev/null",
                        test_interop_dir(), g_tmp),
                     2);
    assert_int_equal(sh(NULL, "node '%s/lance_tool.cjs' make-table '%s' x --kind nope 2>/dev/null",
                        test_interop_dir(), g_tmp),
                     2);
    assert_int_equal(sh(NULL, "node '%s/lance_tool.cjs' expect --kind types --rows x 2>/dev/null",
                        test_interop_dir()),
                     2);
    assert_int_equal(
        sh(NULL, "node '%s/lance_tool.cjs' frobnicate 2>/dev/null", test_interop_dir()), 2);
}

/* ---- (a) C writes, lancedb reads ------------------------------------------------------------ */

typedef struct c_kind {
    const char *kind;
    bool v1_names;
    bool stable;
} c_kind;

static const c_kind k_c_kinds[] = {
    {"types", false, true}, /* every type, V2 names, stable row ids (our default) */
    {"big", true, false},   /* V1 names, no stable row ids */
    {"vectors", true, true},
};

static void test_interop_a_c_writes_lancedb_reads(void **state)
{
    (void)state;
    for (size_t k = 0; k < sizeof k_c_kinds / sizeof k_c_kinds[0]; k++) {
        const c_kind *ck = &k_c_kinds[k];
        char name[64], tdir[700], e[700];
        snprintf(name, sizeof name, "ca%zu_%s", k, ck->kind);
        snprintf(tdir, sizeof tdir, "%s/%s.lance", g_tmp, name);
        snprintf(e, sizeof e, "%s/%s.expect", g_tmp, name);
        char *schema = tool("schema --kind %s", ck->kind);
        char *lines = tool("expect --kind %s --format 2.0", ck->kind);
        write_text(e, lines);
        arrow_schema s;
        ic_schema_from_json(&s, schema);
        arrow_batch *b = ic_batch_from_lines(&s, lines, INT64_MIN);
        int64_t rows = b->num_rows;
        ic_create_table(tdir, &s, b, ck->v1_names, ck->stable);
        arrow_batch_free(b);
        arrow_schema_clear(&s);
        free(lines);

        /* lancedb: same schema, same rows, same count, our two versions */
        char *got = tool("schema '%s' %s", g_tmp, name);
        assert_string_equal(got, schema);
        free(got);
        free(schema);
        assert_c_reads_like_lancedb(name, 0, "a");
        char d[700];
        snprintf(d, sizeof d, "%s/%s.a.dump", g_tmp, name);
        assert_same_file(d, e);
        json_t *c = tool_json("count '%s' %s", g_tmp, name);
        assert_int_equal(jint(c, "count"), rows);
        json_decref(c);
        json_t *ins = tool_json("inspect '%s' %s", g_tmp, name);
        assert_int_equal(json_array_size(json_object_get(ins, "manifests")), 2);
        /* ours: each transaction only inside its manifest (lance reads that copy first) */
        assert_int_equal(jint(ins, "transactions"), 0);
        assert_int_equal(jint(ins, "inline_transactions"), 2);
        assert_string_equal(jstr(ins, "naming"), ck->v1_names ? "v1" : "v2");
        assert_string_equal(jstr(ins, "data_format"), "2.0");
        assert_int_equal((jint(ins, "reader_flags") & 2) != 0, ck->stable);
        json_decref(ins);
        /* version 1 is the empty table */
        assert_c_reads_like_lancedb(name, 1, "a1");
        char d1[700];
        snprintf(d1, sizeof d1, "%s/%s.a1.dump", g_tmp, name);
        size_t len;
        free(slurp(d1, &len));
        assert_int_equal(len, 0);
    }
}

/* ---- (c) lancedb changes a table C created --------------------------------------------------- */

static void test_interop_c_lancedb_modifies_c_table(void **state)
{
    (void)state;
    const char *name = "cc";
    char tdir[700];
    snprintf(tdir, sizeof tdir, "%s/%s.lance", g_tmp, name);
    char *schema = tool("schema --kind deleted_many");
    char *lines = tool("expect --kind deleted_many --version 1 --format 2.0"); /* 12000 rows */
    arrow_schema s;
    ic_schema_from_json(&s, schema);
    arrow_batch *b = ic_batch_from_lines(&s, lines, INT64_MIN);
    assert_int_equal(b->num_rows, 12000);
    ic_create_table(tdir, &s, b, false, false);
    arrow_batch_free(b);
    arrow_schema_clear(&s);
    free(schema);
    free(lines);

    json_t *a = tool_json("append '%s' %s --rows 1000", g_tmp, name); /* v3: a second fragment */
    assert_int_equal(jint(a, "version"), 3);
    json_decref(a);
    /* v4: 6000 deleted in the first fragment (.bin), 500 in the second (.arrow) */
    json_t *d = tool_json("delete '%s' %s --where 'id %% 2 = 0'", g_tmp, name);
    assert_int_equal(jint(d, "deleted"), 6500);
    json_decref(d);
    /* v5: the deletion files are replaced by ones that also hold id % 7 = 3 */
    d = tool_json("delete '%s' %s --where 'id %% 7 = 3'", g_tmp, name);
    json_decref(d);
    json_t *ins = tool_json("inspect '%s' %s", g_tmp, name);
    json_t *dels = json_object_get(ins, "deletion_files");
    int has_bin = 0, has_arrow = 0;
    for (size_t i = 0; i < json_array_size(dels); i++) {
        const char *f = json_string_value(json_array_get(dels, i));
        has_bin |= strstr(f, ".bin") != NULL;
        has_arrow |= strstr(f, ".arrow") != NULL;
    }
    assert_true(has_bin && has_arrow);
    json_decref(ins);
    json_t *cs = c_stats(tdir, 0);
    assert_int_equal(jint(cs, "version"), 5);
    assert_true(jint(cs, "deletion_files_bitmap") >= 1);
    assert_true(jint(cs, "deletion_files_arrow") >= 1);
    json_t *cnt = tool_json("count '%s' %s", g_tmp, name);
    assert_int_equal(jint(cs, "rows"), jint(cnt, "count"));
    json_decref(cnt);
    json_decref(cs);
    for (int v = 1; v <= 5; v++) {
        char tag[16];
        snprintf(tag, sizeof tag, "c%d", v);
        assert_c_reads_like_lancedb(name, v, tag);
    }
}

/* ---- (d) C changes a table lancedb created --------------------------------------------------- */

/* The lines of `text` whose id passes keep(), in order. */
static char *filter_lines(const char *text, int (*keep)(long long))
{
    size_t n = strlen(text);
    char *out = malloc(n + 1), *o = out;
    assert_non_null(out);
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        assert_non_null(nl);
        assert_true(strncmp(p, "{\"id\":", 6) == 0);
        if (keep(strtoll(p + 6, NULL, 10))) {
            memcpy(o, p, (size_t)(nl + 1 - p));
            o += nl + 1 - p;
        }
        p = nl + 1;
    }
    *o = '\0';
    return out;
}

static int keep_d(long long id)
{
    return id < 100 || id >= 2600;
}

static void test_interop_d_c_appends_lancedb_reads(void **state)
{
    (void)state;
    /* V2 names without stable row ids, V1 names with them (each property both ways) */
    const char *flags[] = {"", "--stable-row-ids --v1-names"};
    /* the generator's rows 0..3599 (C appends 3000..3599) and 0..3699 (the end state) */
    char *src = tool("expect --kind deleted_few --rows 3600 --version 1 --format 2.0");
    char *all = tool("expect --kind deleted_few --rows 3700 --version 1 --format 2.0");
    char *want = filter_lines(all, keep_d);
    free(all);
    for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++) {
        char name[32], tdir[700];
        snprintf(name, sizeof name, "cd%zu", k);
        snprintf(tdir, sizeof tdir, "%s/%s.lance", g_tmp, name);
        free(tool("make-table '%s' %s --kind appended %s", g_tmp, name, flags[k])); /* v2, 3000 */
        /* C appends ids 3000..3599 (v3), then deletes 100 <= id < 2600 across both of lancedb's
         * fragments (v4) */
        assert_int_equal(ic_append_lines(tdir, src, 3000), 3);
        assert_int_equal(ic_delete_id_range(tdir, 100, 2600), 4);
        for (int v = 3; v <= 4;
             v++) { /* (v1, v2 are lancedb's own: the variant cases read those) */
            char tag[16];
            snprintf(tag, sizeof tag, "d%d", v);
            assert_c_reads_like_lancedb(name, v, tag);
        }
        json_t *vs = tool_json("versions '%s' %s", g_tmp, name);
        assert_int_equal(json_array_size(json_object_get(vs, "versions")), 4);
        json_decref(vs);
        json_t *c = tool_json("count '%s' %s", g_tmp, name);
        json_t *cs = c_stats(tdir, 0);
        assert_int_equal(jint(c, "count"), jint(cs, "rows"));
        json_decref(c);
        json_decref(cs);
        /* lancedb commits on top of our manifest and transaction: ids 3600..3699 */
        json_t *a = tool_json("append '%s' %s --rows 100", g_tmp, name);
        assert_int_equal(jint(a, "version"), 5);
        json_decref(a);
        assert_c_reads_like_lancedb(name, 5, "d5");
        /* and the result is exactly the generator's rows */
        char w[700], d5[700];
        snprintf(w, sizeof w, "%s/%s.want", g_tmp, name);
        snprintf(d5, sizeof d5, "%s/%s.d5.dump", g_tmp, name);
        write_text(w, want);
        assert_same_file(d5, w);
    }
    free(want);
    free(src);
}

/* ---- (e) a data file read in ranges carries block checksums lancedb ignores ------------------ */

/* 50000 rows of (id, a 120-byte name): one data file of about 6.5 MiB, larger than
 * LANCE_FILE2_SMALL_FILE_BYTES, so its record carries og_block_bytes / og_block_xxh3 (fields
 * of our own). lancedb must read the table as before, and read what we read. */
static void test_interop_e_big_file_blocks(void **state)
{
    (void)state;
    const char *name = "ce_big";
    char tdir[700];
    snprintf(tdir, sizeof tdir, "%s/%s.lance", g_tmp, name);
    arrow_schema s;
    arrow_schema_init(&s);
    arrow_field f;
    arrow_type t = arrow_type_simple(ARROW_INT64);
    assert_og_ok(arrow_field_init(&f, "id", &t, false));
    assert_og_ok(arrow_schema_add(&s, &f));
    arrow_field_clear(&f);
    t = arrow_type_simple(ARROW_UTF8);
    assert_og_ok(arrow_field_init(&f, "name", &t, true));
    assert_og_ok(arrow_schema_add(&s, &f));
    arrow_field_clear(&f);
    arrow_builder *b[2];
    for (int c = 0; c < 2; c++)
        assert_og_ok(arrow_builder_new(&b[c], &s.fields[c].type));
    for (int64_t i = 0; i < 50000; i++) {
        char v[128];
        snprintf(v, sizeof v, "%0120lld", (long long)i);
        assert_og_ok(arrow_builder_append_int(b[0], i));
        assert_og_ok(arrow_builder_append_str(b[1], v));
    }
    arrow_array *cols[2];
    for (int c = 0; c < 2; c++) {
        assert_og_ok(arrow_builder_finish(b[c], &cols[c]));
        arrow_builder_free(b[c]);
    }
    arrow_batch *batch = NULL;
    assert_og_ok(arrow_batch_new(&batch, &s, cols, 2));
    for (int c = 0; c < 2; c++)
        arrow_array_free(cols[c]);
    ic_create_table(tdir, &s, batch, false, true);
    arrow_batch_free(batch);
    arrow_schema_clear(&s);

    json_t *c = tool_json("count '%s' %s", g_tmp, name);
    assert_int_equal(jint(c, "count"), 50000);
    json_decref(c);
    assert_c_reads_like_lancedb(name, 0, "e");
}

int main(void)
{
    enum { NV = sizeof k_variants / sizeof k_variants[0] };
    struct CMUnitTest tests[NV + 9];
    size_t n = 0;
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_printer_selftest);
    for (size_t i = 0; i < NV; i++) {
        tests[n] =
            (struct CMUnitTest)cmocka_unit_test_prestate(test_variant, (void *)&k_variants[i]);
        tests[n++].name = k_variants[i].table;
    }
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_time_travel);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_projection);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_append_delete);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_tool_errors);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_interop_a_c_writes_lancedb_reads);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_interop_c_lancedb_modifies_c_table);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_interop_d_c_appends_lancedb_reads);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_interop_e_big_file_blocks);
    return _cmocka_run_group_tests("interop_harness", tests, n, group_setup, group_teardown);
}
