/* omnigraph export|backup and og_graph_export / og_graph_backup:
 *  - round trips: the demo graph, and a generated graph with every property type the schema
 *    language has (each integer width at its limits, floats down to denormals and -0.0, dates
 *    and datetimes outside 0000-9999, strings and blobs with escapes and astral characters,
 *    lists of every scalar, vectors, enums, nulls, composite keys, minted ids): exported,
 *    loaded into a fresh graph of the same schema, then every table's canonical dump, query
 *    results and a second export must be equal;
 *  - what the load format cannot carry (a U64 above 2^63-1) is refused, naming the row;
 *  - a backup taken while a writer thread and a writer process commit in a loop opens and
 *    answers exactly as the source did at the commit it holds (5 backups);
 *  - the CLI forms: text, --json (one object), --out, exit codes, usage and help;
 *  - a backup killed at each durable step before its commit point leaves a destination every
 *    command reads as no graph (not_found, run the backup again), not as damage. */
#include "testutil.h"

#include <float.h>
#include <ftw.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_bin[512];
static char g_src[512];
static char g_dir[256];

static int setup(void **state)
{
    (void)state;
    test_sandbox_new(g_dir, sizeof g_dir, "cli-backup");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    test_sandbox_done(g_dir);
    return 0;
}

/* ---- helpers ------------------------------------------------------------------------------ */

static char *path_in(const char *name)
{
    static char buf[4][768];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
    return buf[k];
}

static char *read_whole(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot read %s", path);
    size_t cap = 1 << 16, n = 0, got;
    char *b = malloc(cap);
    while ((got = fread(b + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n < 2) b = realloc(b, cap *= 2);
    }
    fclose(f);
    b[n] = '\0';
    if (len) *len = n;
    return b;
}

/* The CLI, run in the sandbox: stdout returned (malloc'd), stderr into err, exit status. */
static char *cli(const char *args, int *status, char *err, size_t ecap)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s 2>'%s/stderr.txt'", g_dir, g_bin, args, g_dir);
    char *out = test_capture(cmd, status);
    if (err) {
        char *e = read_whole(path_in("stderr.txt"), NULL);
        snprintf(err, ecap, "%s", e);
        free(e);
    }
    return out;
}

/* stdout of a CLI run as one JSON object; the test fails on another exit status. */
static json_t *cli_json(const char *args, int want)
{
    int st;
    char err[4096];
    char *out = cli(args, &st, err, sizeof err);
    if (st != want) fail_msg("'%s' exited %d, not %d: %s%s", args, st, want, out, err);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je); /* exactly one value: trailing text fails it */
    if (!j || !json_is_object(j)) fail_msg("'%s' printed no single JSON object: %s", args, out);
    free(out);
    return j;
}

static og_graph *open_graph(const char *root, int read_only)
{
    og_open_options o = OG_OPEN_OPTIONS_INIT;
    o.read_only = read_only;
    og_graph *g = NULL;
    assert_og_ok(og_graph_open(&g, root, &o));
    return g;
}

static void init_graph(const char *root, const char *schema)
{
    og_init_options o = OG_INIT_OPTIONS_INIT;
    o.schema_source = schema;
    og_init_result *r = NULL;
    assert_og_ok(og_root_init(&r, root, &o));
    og_init_result_free(r);
}

static void load(og_graph *g, const char *data, size_t len, int mode)
{
    og_load_options o = OG_LOAD_OPTIONS_INIT;
    o.mode = mode;
    og_write_result *r = NULL;
    if (og_graph_load(&r, g, "data.jsonl", data, len, &o) != 0)
        fail_msg("load: %s:%d: %s", og_error_last()->file ? og_error_last()->file : "",
                 og_error_last()->line, og_error_last()->message);
    og_write_result_free(r);
}

static char *mutate(og_graph *g, const char *src, const char *params)
{
    og_mutate_options o = OG_MUTATE_OPTIONS_INIT;
    o.source = src;
    o.params_json = params;
    og_write_result *r = NULL;
    assert_og_ok(og_graph_mutate(&r, g, &o));
    char *id = strdup(og_write_result_commit_id(r));
    og_write_result_free(r);
    return id;
}

/* The export of g at `at` (NULL: head) as text; the result into *res if asked. */
static char *export_text(og_graph *g, const char *at, og_export_result **res)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    og_export_options o = OG_EXPORT_OPTIONS_INIT;
    o.at = at;
    og_export_result *r = NULL;
    int rc = og_graph_export(&r, f, g, &o);
    fclose(f);
    if (rc) fail_msg("export: %s", og_error_last()->message);
    assert_int_equal(r->bytes, len);
    if (res)
        *res = r;
    else
        og_export_result_free(r);
    return buf;
}

/* Every live table of the graph at `at`, as its alias and its canonical dump (tables read
 * straight from their directories, so ids and every stored value take part). */
static char *dumps(og_graph *g, const char *root, const char *at)
{
    og_snapshot_info *s = NULL;
    assert_og_ok(og_graph_snapshot(
        &s, g, &(og_snapshot_options){.version = OG_SNAPSHOT_OPTIONS_VERSION, .at = at}));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    for (size_t i = 0; i < og_snapshot_info_table_count(s); i++) {
        const og_snapshot_table *t = og_snapshot_info_table(s, i);
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/%s", root, t->path);
        og_table *tb = NULL;
        assert_og_ok(og_table_open(&tb, dir, t->version));
        fprintf(f, "== %s (%" PRIu64 " rows)\n", t->alias, t->row_count);
        uint64_t rows = 0;
        assert_og_ok(og_table_write_json(&rows, f, tb, NULL));
        assert_int_equal(rows, t->row_count);
        og_table_close(tb);
    }
    fclose(f);
    og_snapshot_info_free(s);
    return buf;
}

static int cmp_line(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A query's columns and rows (each row's JSON on a line). sorted: the lines sorted, for
 * queries without a total order (their rows come in scan order, which a reload changes). */
static char *rows_of(og_graph *g, const char *src, const char *name, const char *params,
                     const char *at, int sorted)
{
    og_query_options o = OG_QUERY_OPTIONS_INIT;
    o.source = src;
    o.name = name;
    o.params_json = params;
    o.at = at;
    og_result *r = NULL;
    if (og_graph_query(&r, g, &o) != 0) fail_msg("query: %s", og_error_last()->message);
    uint64_t n = og_result_row_count(r);
    char **lines = calloc(n ? n : 1, sizeof *lines);
    for (uint64_t i = 0; i < n; i++) {
        const char *row = og_result_row_json(r, i, NULL);
        assert_non_null(row);
        lines[i] = strdup(row);
    }
    if (sorted) qsort(lines, n, sizeof *lines, cmp_line);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    for (size_t c = 0; c < og_result_column_count(r); c++)
        fprintf(f, "%s%s", c ? "|" : "", og_result_column_name(r, c));
    fprintf(f, "\n%" PRIu64 " rows\n", n);
    for (uint64_t i = 0; i < n; i++) {
        fprintf(f, "%s\n", lines[i]);
        free(lines[i]);
    }
    fclose(f);
    free(lines);
    og_result_free(r);
    return buf;
}

static void assert_text_equal(const char *what, const char *a, const char *b)
{
    if (strcmp(a, b) == 0) return;
    size_t i = 0;
    while (a[i] && a[i] == b[i])
        i++;
    size_t from = i > 200 ? i - 200 : 0;
    fail_msg("%s differ at byte %zu:\n--- first ---\n%.400s\n--- second ---\n%.400s", what, i,
             a + from, b + from);
}

/* A query to compare: its source, the query's name in it (NULL: the only one), params, and
 * whether its rows are compared sorted. */
typedef struct qspec {
    const char *src, *name, *params;
    int sorted;
} qspec;

/* Export `src` (at `at`), load it into a fresh graph `dst` of the same schema, and compare
 * dumps, the export of the copy and each query. */
static void roundtrip(const char *src_root, const char *dst_root, const char *schema,
                      const char *at, const qspec *qs, size_t n_queries)
{
    og_graph *g = open_graph(src_root, 1);
    char *e1 = export_text(g, at, NULL);
    init_graph(dst_root, schema);
    og_graph *h = open_graph(dst_root, 0);
    load(h, e1, strlen(e1), OG_LOAD_OVERWRITE);
    char *e2 = export_text(h, NULL, NULL);
    assert_text_equal("the exports of the source and of its reload", e1, e2);
    char *d1 = dumps(g, src_root, at), *d2 = dumps(h, dst_root, NULL);
    assert_text_equal("the table dumps of the source and of its reload", d1, d2);
    for (size_t i = 0; i < n_queries; i++) {
        char *a = rows_of(g, qs[i].src, qs[i].name, qs[i].params, at, qs[i].sorted);
        char *b = rows_of(h, qs[i].src, qs[i].name, qs[i].params, NULL, qs[i].sorted);
        assert_text_equal(qs[i].name ? qs[i].name : qs[i].src, a, b);
        free(a);
        free(b);
    }
    free(d1);
    free(d2);
    free(e1);
    free(e2);
    og_graph_close(h);
    og_graph_close(g);
}

/* ---- the demo graph ----------------------------------------------------------------------- */

static char *demo_file(const char *name)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/examples/%s", g_src, name);
    return read_whole(p, NULL);
}

static void test_roundtrip_demo(void **state)
{
    (void)state;
    char *schema = demo_file("demo.pg"), *data = demo_file("demo.jsonl");
    char *gq = demo_file("demo.gq");
    const char *src = path_in("demo.omni");
    init_graph(src, schema);
    og_graph *g = open_graph(src, 0);
    load(g, data, strlen(data), OG_LOAD_OVERWRITE);
    og_mutate_options mo = OG_MUTATE_OPTIONS_INIT;
    mo.source = gq;
    mo.name = "promote";
    mo.params_json = "{\"handle\":\"ada\",\"role\":\"manager\"}";
    og_write_result *wr = NULL;
    assert_og_ok(og_graph_mutate(&wr, g, &mo));
    og_write_result_free(wr);
    og_graph_close(g);

    /* Every column of every type, and the demo's own questions (demo.gq, by name). */
    const qspec qs[] = {
        {"query a() { match { $p: Person } return { $p.handle, $p.name, $p.email, $p.born, "
         "$p.role } order { $p.handle asc } }",
         NULL, NULL, 0},
        {"query a() { match { $c: City } return { $c.name, $c.country, $c.population } }", NULL,
         NULL, 1},
        {"query a() { match { $c: Company } return { $c.name, $c.industry, $c.founded } }", NULL,
         NULL, 1},
        {"query a() { match { $p: Project } return { $p.name, $p.language, $p.stars } }", NULL,
         NULL, 1},
        {"query a() { match { $a: Person  $a $w:worksAt $c } return { $a.handle, $c.name, "
         "$w.since, $w.title } }",
         NULL, NULL, 1},
        {"query a() { match { $a: Person  $a $k:knows $b } return { $a.handle, $b.handle, "
         "$k.since } }",
         NULL, NULL, 1},
        {"query a() { match { $a: Person  $a $k:contributesTo $b } return { $a.handle, $b.name, "
         "$k.commits } }",
         NULL, NULL, 1},
        {"query a() { match { $a: Company  $a maintains $b  $a headquarteredIn $c } return { "
         "$a.name, $b.name, $c.name } }",
         NULL, NULL, 1},
        {"query a() { match { $p: Person  $p livesIn $c } return { $c.name, count($p) as n, "
         "min($p.born) as oldest } order { n desc, $c.name asc } }",
         NULL, NULL, 0},
        {gq, "person", "{\"handle\":\"ada\"}", 0},
        {gq, "person", "{\"handle\":\"linus.keller\"}", 0},
        {gq, "friends_of_friends", "{\"handle\":\"ada\"}", 0},
        {gq, "biggest_employers", NULL, 0},
    };
    size_t nq = sizeof qs / sizeof qs[0];
    roundtrip(src, path_in("demo2.omni"), schema, NULL, qs, nq);
    /* The commit before the promotion, exported with `at`, reloads to that commit. */
    roundtrip(src, path_in("demo3.omni"), schema, "2", qs, nq);
    free(schema);
    free(data);
    free(gq);
}

/* ---- every property type ------------------------------------------------------------------ */

static const char ALL_SCHEMA[] =
    "node Thing {\n"
    "    name: String @key\n"
    "    s: String?\n"
    "    b: Bool?\n"
    "    i32: I32?\n"
    "    i64: I64?\n"
    "    u32: U32?\n"
    "    u64: U64?\n"
    "    f32: F32?\n"
    "    f64: F64?\n"
    "    d: Date?\n"
    "    dt: DateTime?\n"
    "    blob: Blob?\n"
    "    e: enum(red, green, blue-ish)?\n"
    "    ls: [String]?\n"
    "    lb: [Bool]?\n"
    "    li32: [I32]?\n"
    "    li64: [I64]?\n"
    "    lu32: [U32]?\n"
    "    lu64: [U64]?\n"
    "    lf32: [F32]?\n"
    "    lf64: [F64]?\n"
    "    ld: [Date]?\n"
    "    ldt: [DateTime]?\n"
    "    v: Vector(3)?\n"
    "}\n"
    "node Req {\n"
    "    n: I32\n"
    "    f: F64\n"
    "    d: Date\n"
    "    dt: DateTime\n"
    "    e: enum(a, b)\n"
    "    ls: [String]\n"
    "    v: Vector(2)\n"
    "    blob: Blob\n"
    "    flag: Bool\n"
    "    u: U64\n"
    "}\n"
    "node Pair { a: String  b: I64  @key(b, a) }\n"
    "edge Link: Thing -> Thing { w: F32?  at: DateTime?  tags: [String]?  note: String? }\n"
    "edge Owns: Req -> Pair\n";

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

/* Pieces of JSON string text (already escaped as JSON). */
static const char *const PIECES[] = {
    "a",
    "Zz",
    "\\\"",
    "\\\\",
    "\\n",
    "\\t",
    "\\r",
    "\\u0001",
    "\\u001f",
    "/",
    " ",
    "<&>",
    "\xc3\xa9",
    "\xe6\xbc\xa2\xe5\xad\x97",
    "\xf0\x9f\x98\x80",
    "\\ud83d\\ude00",
    "\\u2028",
    "\x7f",
    "0",
    "\\b\\f",
};
#define N_PIECES (sizeof PIECES / sizeof PIECES[0])

static void put_jstr(FILE *f, int pieces)
{
    fputc('"', f);
    for (int i = 0; i < pieces; i++)
        fputs(PIECES[rnd() % N_PIECES], f);
    fputc('"', f);
}

static double rnd_f64(void)
{
    for (;;) {
        uint64_t bits = rnd();
        double d;
        memcpy(&d, &bits, sizeof d);
        if (isfinite(d)) return d;
    }
}

static float rnd_f32(void)
{
    for (;;) {
        uint32_t bits = (uint32_t)rnd();
        float x;
        memcpy(&x, &bits, sizeof x);
        if (isfinite(x)) return x;
    }
}

/* A JSON number for a double (%.17g gives "-0" for -0.0, which JSON readers take for the
 * integer 0: the sign is written out). */
static void put_f64(FILE *f, double d)
{
    if (d == 0 && signbit(d))
        fputs("-0.0", f);
    else
        fprintf(f, "%.17g", d);
}

/* An F32 exactly (the loader refuses decimals above FLT_MAX before narrowing, so FLT_MAX's
 * 9-digit form 3.40282347e+38 would not do). */
static void put_f32(FILE *f, float x)
{
    if (x == 0 && signbit(x))
        fputs("-0.0", f);
    else
        fprintf(f, "%.17g", (double)x);
}

static void put_date(FILE *f, int k)
{
    static const char *const iso[] = {"1970-01-01", "0000-01-01", "9999-12-31", "2024-02-29",
                                      "1969-12-31"};
    if (k % 3 == 0)
        fprintf(f, "\"%s\"", iso[rnd() % 5]);
    else if (k % 3 == 1)
        fprintf(f, "%" PRId64, (int64_t)(rnd() % 6000000) - 3000000);
    else
        fprintf(f, "%d", k % 2 ? INT32_MIN : INT32_MAX);
}

static void put_datetime(FILE *f, int k)
{
    static const char *const iso[] = {"2024-02-29T12:34:56.789+05:30", "1969-12-31T23:59:59.999Z",
                                      "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z",
                                      "2001-09-09T01:46:40Z"};
    if (k % 3 == 0)
        fprintf(f, "\"%s\"", iso[rnd() % 5]);
    else if (k % 3 == 1)
        fprintf(f, "%" PRId64, (int64_t)(rnd() % 600000000000000ull) - (int64_t)300000000000000);
    else
        fprintf(f, "%" PRId64, k % 2 ? INT64_MIN / 2 : INT64_MAX / 2);
}

static void gen_thing(FILE *f, int k)
{
    fprintf(f, "{\"type\":\"Thing\",\"data\":{\"name\":\"t%04d", k);
    if (k % 7 == 0) fputs("\\\"q\xc3\xa9", f); /* ids with escapes and non-ASCII */
    fputc('"', f);
    int all_null = k % 11 == 0;
    if (all_null) {
        fputs("}}\n", f);
        return;
    }
    int null_mask = (int)(rnd() & 0xff);
#define NUL_(bit) (null_mask & (1 << (bit)) && k % 3 == 0)
    fputs(",\"s\":", f);
    if (NUL_(0))
        fputs("null", f);
    else
        put_jstr(f, (int)(rnd() % 6));
    fputs(",\"b\":", f);
    fputs(NUL_(1) ? "null" : rnd() % 2 ? "true" : "false", f);
    static const int32_t i32s[] = {INT32_MIN, INT32_MAX, 0, -1, 1};
    fprintf(f, ",\"i32\":%" PRId32, k < 5 ? i32s[k] : (int32_t)rnd());
    static const int64_t i64s[] = {INT64_MIN, INT64_MAX, 0, -1, 1};
    fprintf(f, ",\"i64\":%" PRId64, k < 5 ? i64s[k] : (int64_t)rnd());
    fprintf(f, ",\"u32\":%" PRIu32, k == 1 ? UINT32_MAX : (uint32_t)rnd());
    fprintf(f, ",\"u64\":%" PRIu64, k == 1 ? (uint64_t)INT64_MAX : rnd() >> 1);
    fputs(",\"f32\":", f);
    static const float f32s[] = {FLT_MAX, -FLT_MAX, FLT_MIN, 1e-45f, 0.1f, 3.0f};
    if (k < 6)
        put_f32(f, f32s[k]);
    else if (k == 6)
        fputs("-0.0", f);
    else
        put_f32(f, rnd_f32());
    fputs(",\"f64\":", f);
    static const double f64s[] = {DBL_MAX, -DBL_MAX, DBL_MIN, 5e-324, 0.1, 1e20, 123.0};
    if (k < 7)
        put_f64(f, f64s[k]);
    else if (k == 8)
        fputs("-0.0", f);
    else
        put_f64(f, rnd_f64());
    fputs(",\"d\":", f);
    put_date(f, k);
    fputs(",\"dt\":", f);
    put_datetime(f, k);
    fputs(",\"blob\":", f);
    if (NUL_(2))
        fputs("null", f);
    else
        put_jstr(f, (int)(rnd() % 8));
    static const char *const enums[] = {"\"red\"", "\"green\"", "\"blue-ish\"", "null"};
    fprintf(f, ",\"e\":%s", enums[rnd() % 4]);
    int n = (int)(rnd() % 4);
    fputs(",\"ls\":[", f);
    for (int i = 0; i < n; i++) {
        if (i) fputc(',', f);
        put_jstr(f, (int)(rnd() % 3));
    }
    fputs("],\"lb\":[", f);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%s", i ? "," : "", rnd() % 2 ? "true" : "false");
    fputs("],\"li32\":[", f);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%" PRId32, i ? "," : "", (int32_t)rnd());
    fputs("],\"li64\":[", f);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%" PRId64, i ? "," : "", (int64_t)rnd());
    fputs("],\"lu32\":[", f);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%" PRIu32, i ? "," : "", (uint32_t)rnd());
    fputs("],\"lu64\":[", f);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%" PRIu64, i ? "," : "", rnd() >> 1);
    fputs("],\"lf32\":[", f);
    for (int i = 0; i < n; i++) {
        if (i) fputc(',', f);
        put_f32(f, rnd_f32());
    }
    fputs("],\"lf64\":[", f);
    for (int i = 0; i < n; i++) {
        if (i) fputc(',', f);
        put_f64(f, rnd_f64());
    }
    fputs("],\"ld\":[", f);
    for (int i = 0; i < n; i++) {
        if (i) fputc(',', f);
        put_date(f, (int)rnd());
    }
    fputs("],\"ldt\":[", f);
    for (int i = 0; i < n; i++) {
        if (i) fputc(',', f);
        put_datetime(f, (int)rnd());
    }
    fputs("],\"v\":", f);
    if (NUL_(3)) {
        fputs("null", f);
    } else {
        fputc('[', f);
        for (int i = 0; i < 3; i++) {
            if (i) fputc(',', f);
            put_f32(f, rnd_f32());
        }
        fputc(']', f);
    }
    fputs("}}\n", f);
#undef NUL_
}

static void gen_req(FILE *f, int k)
{
    fputs("{\"type\":\"Req\",\"data\":{", f);
    if (k % 5 == 0) fprintf(f, "\"id\":\"req-%d-\xc3\xa9\\\"\",", k); /* given ids stay */
    fprintf(f, "\"n\":%" PRId32 ",\"f\":", (int32_t)rnd());
    put_f64(f, rnd_f64());
    fputs(",\"d\":", f);
    put_date(f, k);
    fputs(",\"dt\":", f);
    put_datetime(f, k);
    fprintf(f, ",\"e\":\"%s\",\"ls\":[", k % 2 ? "a" : "b");
    for (int i = 0; i < k % 3; i++) {
        if (i) fputc(',', f);
        put_jstr(f, 2);
    }
    fputs("],\"v\":[", f);
    put_f32(f, rnd_f32());
    fputc(',', f);
    put_f32(f, rnd_f32());
    fputs("],\"blob\":", f);
    put_jstr(f, (int)(rnd() % 5));
    fprintf(f, ",\"flag\":%s,\"u\":%" PRIu64 "}}\n", k % 2 ? "true" : "false", rnd() >> 1);
}

#define N_THING 300
#define N_REQ 100
#define N_PAIR 50

static char *gen_all(size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    for (int k = 0; k < N_THING; k++)
        gen_thing(f, k);
    for (int k = 0; k < N_REQ; k++)
        gen_req(f, k);
    for (int k = 0; k < N_PAIR; k++) {
        fputs("{\"type\":\"Pair\",\"data\":{\"a\":", f);
        put_jstr(f, 1 + k % 3);
        fprintf(f, ",\"b\":%" PRId64 "}}\n", k == 0 ? INT64_MIN : (int64_t)rnd());
    }
    for (int k = 0; k < 400; k++) {
        int a = (int)(rnd() % N_THING), b = (int)(rnd() % N_THING);
        if (a % 7 == 0 || b % 7 == 0) a = b = 1; /* ids with escapes: kept simple here */
        fprintf(f, "{\"edge\":\"Link\",\"from\":\"t%04d\",\"to\":\"t%04d\",\"data\":{", a, b);
        if (k % 4) {
            fputs("\"w\":", f);
            put_f32(f, rnd_f32());
            fputs(",\"at\":", f);
            put_datetime(f, k);
            fputs(",\"tags\":[", f);
            put_jstr(f, 1);
            fputs("],\"note\":", f);
            put_jstr(f, (int)(rnd() % 4));
        }
        fputs("}}\n", f);
    }
    fclose(f);
    return buf;
}

static const qspec ALL_QUERIES[] = {
    {"query a() { match { $t: Thing } return { $t.name, $t.s, $t.b, $t.i32, $t.i64, $t.u32, "
     "$t.u64, $t.f32, $t.f64, $t.d, $t.dt, $t.e, $t.ls, $t.lb, $t.li32, $t.li64, $t.lu32, "
     "$t.lu64, $t.lf32, $t.lf64, $t.ld, $t.ldt, $t.v } order { $t.name asc } }",
     NULL, NULL, 0},
    {"query a() { match { $r: Req } return { $r, $r.n, $r.f, $r.d, $r.dt, $r.e, $r.ls, $r.v, "
     "$r.flag, $r.u } }",
     NULL, NULL, 1},
    {"query a() { match { $p: Pair } return { $p, $p.a, $p.b } order { $p.b asc, $p.a asc } }",
     NULL, NULL, 0},
    {"query a() { match { $a: Thing  $a $l:link $b } return { $a.name, $b.name, $l.w, $l.at, "
     "$l.tags, $l.note } }",
     NULL, NULL, 1},
    {"query a() { match { $r: Req  $r owns $p } return { $r, $p.a, $p.b } }", NULL, NULL, 1},
    {"query a() { match { $t: Thing } return { count($t) as n, min($t.d) as d0, max($t.dt) as "
     "t1, max($t.u64) as u, min($t.f64) as f } }",
     NULL, NULL, 0},
    {"query a() { match { $t: Thing  $t.i32 > 0  $t.e = \"blue-ish\" } return { $t.name } "
     "order { $t.name asc } }",
     NULL, NULL, 0},
};

static void test_roundtrip_all_types(void **state)
{
    (void)state;
    const char *src = path_in("all.omni");
    init_graph(src, ALL_SCHEMA);
    og_graph *g = open_graph(src, 0);
    size_t len;
    char *data = gen_all(&len);
    load(g, data, len, OG_LOAD_OVERWRITE);
    free(data);
    /* Owns edges between minted Req ids and composite Pair ids, read back from the graph. */
    og_query_options qo = OG_QUERY_OPTIONS_INIT;
    qo.source = "query a() { match { $r: Req } return { $r } }";
    og_result *rr = NULL, *pr = NULL;
    assert_og_ok(og_graph_query(&rr, g, &qo));
    qo.source = "query a() { match { $p: Pair } return { $p } }";
    assert_og_ok(og_graph_query(&pr, g, &qo));
    char *edges = NULL;
    size_t elen = 0;
    FILE *f = open_memstream(&edges, &elen);
    for (uint64_t i = 0; i < og_result_row_count(rr); i++) {
        og_value a, b;
        assert_og_ok(og_result_value(&a, rr, i, 0));
        char *from = strndup(a.str, a.len);
        assert_og_ok(og_result_value(&b, pr, i % og_result_row_count(pr), 0));
        json_t *line =
            json_pack("{s:s, s:s, s:s#}", "edge", "Owns", "from", from, "to", b.str, b.len);
        char *text = json_dumps(line, JSON_COMPACT);
        fprintf(f, "%s\n", text);
        free(text);
        json_decref(line);
        free(from);
    }
    fclose(f);
    og_result_free(rr);
    og_result_free(pr);
    load(g, edges, elen, OG_LOAD_APPEND);
    free(edges);
    /* A value the load format has two spellings for comes back in one (the ISO one). */
    char *c =
        mutate(g, "query m() { update Thing set { s: \"changed\" } where name = \"t0002\" }", NULL);
    free(c);
    og_graph_close(g);

    size_t nq = sizeof ALL_QUERIES / sizeof ALL_QUERIES[0];
    roundtrip(src, path_in("all2.omni"), ALL_SCHEMA, NULL, ALL_QUERIES, nq);
    roundtrip(src, path_in("all3.omni"), ALL_SCHEMA, "2", ALL_QUERIES, nq);

    /* -0.0 keeps its sign (canonical dumps print it as 0). */
    og_graph *h = open_graph(path_in("all2.omni"), 1);
    qo.source = "query a() { match { $t: Thing { name: \"t0006\" } } return { $t.f32 } }";
    og_result *r = NULL;
    assert_og_ok(og_graph_query(&r, h, &qo));
    og_value v;
    assert_og_ok(og_result_value(&v, r, 0, 0));
    assert_int_equal(v.type, OG_VALUE_FLOAT);
    assert_true(v.f == 0 && signbit(v.f));
    og_result_free(r);
    qo.source = "query a() { match { $t: Thing { name: \"t0008\" } } return { $t.f64 } }";
    assert_og_ok(og_graph_query(&r, h, &qo));
    assert_og_ok(og_result_value(&v, r, 0, 0));
    assert_true(v.f == 0 && signbit(v.f));
    og_result_free(r);
    og_graph_close(h);
}

/* What the load format cannot carry is refused, naming the row; bad requests. */
static void test_export_refusals(void **state)
{
    (void)state;
    const char *src = path_in("r.omni");
    init_graph(src, ALL_SCHEMA);
    og_graph *g = open_graph(src, 0);
    char *c =
        mutate(g, "query m() { insert Thing { name: \"big\", u64: 18446744073709551615 } }", NULL);
    free(c);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    og_export_result *r = NULL;
    assert_og_error(og_graph_export(&r, f, g, NULL), OG_E_UNSUPPORTED);
    assert_null(r);
    assert_non_null(strstr(og_error_last()->message, "node:Thing \"big\", property u64"));
    og_export_options o = OG_EXPORT_OPTIONS_INIT;
    const char *types[] = {"Nope"};
    o.types = types;
    o.n_types = 1;
    assert_og_error(og_graph_export(&r, f, g, &o), OG_E_NOT_FOUND);
    o.n_types = 0;
    o.types = NULL;
    o.at = "99";
    assert_og_error(og_graph_export(&r, f, g, &o), OG_E_NOT_FOUND);
    o.at = NULL;
    o.branch = "dev"; /* no such branch (exports of branches: test_cli_branch.c) */
    assert_og_error(og_graph_export(&r, f, g, &o), OG_E_NOT_FOUND);
    o.branch = NULL;
    o.version = OG_EXPORT_OPTIONS_VERSION + 1;
    assert_og_error(og_graph_export(&r, f, g, &o), OG_E_BAD_REQUEST);
    assert_og_error(og_graph_export(NULL, f, g, NULL), OG_E_BAD_REQUEST);
    assert_og_error(og_graph_export(&r, NULL, g, NULL), OG_E_BAD_REQUEST);
    /* The genesis commit exports to nothing. */
    o = (og_export_options)OG_EXPORT_OPTIONS_INIT;
    o.at = "1";
    assert_og_ok(og_graph_export(&r, f, g, &o));
    assert_int_equal(r->nodes + r->edges + r->bytes, 0);
    assert_int_equal(r->node_types, 3);
    assert_int_equal(r->edge_types, 2);
    og_export_result_free(r);
    fclose(f);
    free(buf);
    og_export_result_free(NULL);
    og_graph_close(g);
}

/* ---- backups while writers run ------------------------------------------------------------ */

static const char WRITER_SCHEMA[] = "node Person { handle: String @key  n: I64 }\n"
                                    "edge Knows: Person -> Person\n";

/* Each commit adds a person and an edge to it from "root", and bumps root's counter: every
 * commit has #Knows = #Person - 1 and root.n = the number of writes. */
static const char WRITER_GQ[] = "query add($h: String, $n: I64) {\n"
                                "    insert Person { handle: $h, n: $n }\n"
                                "    insert Knows { from: \"root\", to: $h }\n"
                                "}\n";

typedef struct writer_arg {
    const char *root;
    atomic_int stop;
    int writes;
} writer_arg;

static void *writer_thread(void *p)
{
    writer_arg *w = p;
    og_graph *g = open_graph(w->root, 0);
    for (int i = 0; !atomic_load(&w->stop); i++) {
        char params[128];
        snprintf(params, sizeof params, "{\"h\":\"t%d\",\"n\":%d}", i, i);
        og_mutate_options o = OG_MUTATE_OPTIONS_INIT;
        o.source = WRITER_GQ;
        o.params_json = params;
        og_write_result *r = NULL;
        if (og_graph_mutate(&r, g, &o) == 0) w->writes++;
        og_write_result_free(r);
    }
    og_graph_close(g);
    return NULL;
}

static void test_backup_while_writing(void **state)
{
    (void)state;
    const char *src = path_in("live.omni");
    init_graph(src, WRITER_SCHEMA);
    og_graph *g = open_graph(src, 0);
    load(g, "{\"type\":\"Person\",\"data\":{\"handle\":\"root\",\"n\":0}}\n", 49,
         OG_LOAD_OVERWRITE);
    og_graph_close(g);
    /* A writer process: the CLI in a shell loop until the stop file appears (or the sandbox
     * is gone, or 5,000 writes: a failed test never leaves it running). */
    char gq[768], cmd[4096];
    snprintf(gq, sizeof gq, "%s/w.gq", g_dir);
    test_write_file(gq, WRITER_GQ, strlen(WRITER_GQ));
    snprintf(cmd, sizeof cmd,
             "cd '%s' && (i=0; while [ ! -e stop ] && [ -d live.omni ] && [ $i -lt 5000 ]; do "
             "i=$((i+1)); '%s' mutate --store live.omni "
             "--file w.gq --params \"{\\\"h\\\":\\\"p$i\\\",\\\"n\\\":$i}\" >/dev/null 2>>w.err "
             "|| echo fail >> w.fail; done; echo done > w.done) >/dev/null 2>&1 &",
             g_dir, g_bin);
    assert_int_equal(system(cmd), 0);
    writer_arg w = {.root = src};
    atomic_init(&w.stop, 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, writer_thread, &w), 0);

    og_graph *ro = open_graph(src, 1);
    uint64_t last_mv = 0;
    for (int it = 0; it < 5; it++) {
        usleep(50000);
        char dest[64];
        snprintf(dest, sizeof dest, "bk%d", it);
        og_backup_result *br = NULL;
        assert_og_ok(og_graph_backup(&br, ro, path_in(dest), NULL));
        assert_true(br->manifest_version > last_mv); /* writers moved on in between */
        last_mv = br->manifest_version;
        /* The copy opens (read-write: recovery has nothing to do) and holds that commit. */
        og_graph *b = open_graph(path_in(dest), 0);
        og_snapshot_info *s = NULL;
        assert_og_ok(og_graph_snapshot(&s, b, NULL));
        assert_string_equal(s->head_commit, br->commit_id);
        assert_int_equal(s->manifest_version, br->manifest_version);
        uint64_t persons = 0, knows = 0;
        for (size_t i = 0; i < og_snapshot_info_table_count(s); i++) {
            const og_snapshot_table *t = og_snapshot_info_table(s, i);
            if (!strcmp(t->alias, "node:Person")) persons = t->row_count;
            if (!strcmp(t->alias, "edge:Knows")) knows = t->row_count;
        }
        assert_int_equal(knows + 1, persons);
        assert_int_equal(br->rows, persons + knows);
        og_snapshot_info_free(s);
        /* It answers as the source did at that commit: the whole export, and a traversal. */
        char *e_bk = export_text(b, NULL, NULL);
        char *e_src = export_text(ro, br->commit_id, NULL);
        assert_text_equal("the backup's export and the source's at its commit", e_bk, e_src);
        const char *q = "query a() { match { $r: Person { handle: \"root\" }  $r knows $p } "
                        "return { count($p) as n, max($p.n) as m } }";
        char *a = rows_of(b, q, NULL, NULL, NULL, 0);
        char *c = rows_of(ro, q, NULL, NULL, br->commit_id, 0);
        assert_text_equal(q, a, c);
        free(a);
        free(c);
        free(e_bk);
        free(e_src);
        /* ... and takes writes of its own. */
        char *id = mutate(b, WRITER_GQ, "{\"h\":\"after\",\"n\":1}");
        assert_int_equal(strlen(id), OG_ID_LEN);
        free(id);
        og_graph_close(b);
        og_backup_result_free(br);
    }
    og_graph_close(ro);
    atomic_store(&w.stop, 1);
    pthread_join(th, NULL);
    test_write_file(path_in("stop"), "", 0);
    for (int i = 0; i < 600 && access(path_in("w.done"), F_OK) != 0; i++)
        usleep(50000);
    assert_int_equal(access(path_in("w.done"), F_OK), 0);
    assert_int_not_equal(access(path_in("w.fail"), F_OK), 0); /* no CLI write failed */
    assert_true(w.writes > 0);
}

/* ---- the CLI ------------------------------------------------------------------------------ */

static void make_social(void)
{
    int st;
    char args[1024], err[4096];
    snprintf(args, sizeof args, "init --schema '%s/examples/social.pg' g", g_src);
    free(cli(args, &st, err, sizeof err));
    assert_int_equal(st, 0);
    const char *data =
        "{\"type\":\"Person\",\"data\":{\"name\":\"Alice\",\"age\":30,\"status\":\"active\"}}\n"
        "{\"type\":\"Person\",\"data\":{\"name\":\"Bob\",\"age\":25}}\n"
        "{\"type\":\"Company\",\"data\":{\"name\":\"Acme\",\"size\":50}}\n"
        "{\"edge\":\"Knows\",\"from\":\"Alice\",\"to\":\"Bob\",\"data\":{\"since\":\"2020-01-02\"}}"
        "\n"
        "{\"edge\":\"WorksAt\",\"from\":\"Alice\",\"to\":\"Acme\",\"data\":{\"role\":\"CTO\"}}\n";
    test_write_file(path_in("d.jsonl"), data, strlen(data));
    free(cli("load --data d.jsonl --mode overwrite --store g", &st, err, sizeof err));
    assert_int_equal(st, 0);
}

/* Every file under root with its size and mtime, to prove a command wrote nothing there. */
static char *g_list;
static size_t g_list_len;
static FILE *g_list_f;
static int list_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)flag;
    (void)ftw;
    fprintf(g_list_f, "%s %lld %lld.%09ld\n", p, (long long)sb->st_size,
            (long long)sb->st_mtim.tv_sec, sb->st_mtim.tv_nsec);
    return 0;
}

static char *listing(const char *root)
{
    g_list_f = open_memstream(&g_list, &g_list_len);
    assert_int_equal(nftw(root, list_one, 16, FTW_PHYS), 0);
    fclose(g_list_f);
    return g_list;
}

static void test_cli_export(void **state)
{
    (void)state;
    make_social();
    int st;
    char err[4096];
    char *before = listing(path_in("g"));
    char *out = cli("export --store g", &st, err, sizeof err);
    assert_int_equal(st, 0);
    assert_string_equal(err, "");
    const char *want =
        "{\"type\":\"Company\",\"data\":{\"id\":\"Acme\",\"name\":\"Acme\",\"size\":50}}\n"
        "{\"type\":\"Person\",\"data\":{\"id\":\"Alice\",\"name\":\"Alice\",\"age\":30,"
        "\"email\":null,\"status\":\"active\"}}\n"
        "{\"type\":\"Person\",\"data\":{\"id\":\"Bob\",\"name\":\"Bob\",\"age\":25,"
        "\"email\":null,\"status\":null}}\n";
    assert_memory_equal(out, want, strlen(want));
    assert_non_null(strstr(out, "{\"edge\":\"Knows\",\"from\":\"Alice\",\"to\":\"Bob\",\"data\":"
                                "{\"id\":\""));
    assert_non_null(strstr(out, "\"since\":\"2020-01-02\"}}\n{\"edge\":\"WorksAt\""));
    char *after = listing(path_in("g"));
    assert_string_equal(before, after); /* read-only: nothing written */
    free(before);
    free(after);

    /* --out: the same bytes in the file, a summary on stdout; --json: one object. */
    char *o2 = cli("export g --out e.jsonl", &st, err, sizeof err);
    assert_int_equal(st, 0);
    assert_non_null(strstr(o2, "exported 3 nodes and 2 edges (2 node types, 2 edge types) of "
                               "commit "));
    char *file = read_whole(path_in("e.jsonl"), NULL);
    assert_string_equal(file, out);
    free(file);
    free(o2);
    json_t *j = cli_json("export --store g --out e2.jsonl --json --type Person --at 2", 0);
    assert_true(json_is_true(json_object_get(j, "ok")));
    assert_int_equal(json_integer_value(json_object_get(j, "nodes")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "edges")), 0);
    assert_int_equal(json_integer_value(json_object_get(j, "manifest_version")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "node_types")), 1);
    json_decref(j);
    file = read_whole(path_in("e2.jsonl"), NULL);
    assert_int_equal(strncmp(file, want + strcspn(want, "\n") + 1, strlen(file)), 0);
    free(file);
    struct stat sb;
    assert_int_equal(stat(path_in("e2.jsonl"), &sb), 0);
    mode_t mask = umask(0);
    umask(mask);
    assert_int_equal(sb.st_mode & 0777, 0666 & ~mask);

    /* The export loads into a fresh graph and exports the same again. */
    char args[1024];
    snprintf(args, sizeof args, "init --schema '%s/examples/social.pg' g2", g_src);
    free(cli(args, &st, err, sizeof err));
    free(cli("load --data e.jsonl --mode append --store g2", &st, err, sizeof err));
    assert_int_equal(st, 0);
    char *again = cli("export g2", &st, err, sizeof err);
    assert_string_equal(again, out);
    free(again);
    free(out);

    /* Failures: exit codes and one JSON object each. */
    j = cli_json("export --store g --type Nope --out x.jsonl --json", 1);
    json_t *e = json_object_get(j, "error");
    assert_string_equal(json_string_value(json_object_get(e, "code")), "not_found");
    json_decref(j);
    assert_int_not_equal(access(path_in("x.jsonl"), F_OK), 0); /* no file on failure */
    free(cli("export --store g --at 01ZZZZZZZZ", &st, err, sizeof err));
    assert_int_equal(st, 1);
    assert_non_null(strstr(err, "error[not_found]"));
    free(cli("export --store g --branch dev", &st, err, sizeof err));
    assert_int_equal(st, 1);
    assert_non_null(strstr(err, "error[not_found]"));
    assert_non_null(strstr(err, "dev"));
    free(cli("export --store nowhere", &st, err, sizeof err));
    assert_int_equal(st, 1);
    char *o = cli("export --store g --json", &st, err, sizeof err);
    assert_int_equal(st, 2);
    /* a usage error under --json is one JSON object on stdout (docs/cli.md) */
    assert_non_null(strstr(o, "--json needs --out"));
    assert_non_null(strstr(o, "\"code\":\"usage\""));
    free(o);
    free(cli("export --store g --bogus", &st, err, sizeof err));
    assert_int_equal(st, 2);
    free(cli("export", &st, err, sizeof err));
    assert_int_equal(st, 2);
    free(cli("export g g2", &st, err, sizeof err));
    assert_int_equal(st, 2);
    free(cli("export --store g --out", &st, err, sizeof err));
    assert_int_equal(st, 2);
    free(cli("export --store g --out nodir/x.jsonl", &st, err, sizeof err));
    assert_int_equal(st, 1);
    assert_non_null(strstr(err, "error[storage]"));
    char *help = cli("export --help", &st, err, sizeof err);
    assert_int_equal(st, 0);
    assert_non_null(strstr(help, "usage: omnigraph export [--branch B] [--at REF] [--type T]..."));
    free(help);
    help = cli("--help", &st, err, sizeof err);
    assert_non_null(strstr(help, "  export "));
    assert_non_null(strstr(help, "  backup "));
    free(help);
}

static void test_cli_backup(void **state)
{
    (void)state;
    make_social();
    int st;
    char err[4096];
    char *before = listing(path_in("g"));
    char *out = cli("backup --store g b1", &st, err, sizeof err);
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "backed up g to b1 at commit "));
    assert_non_null(strstr(out, "(manifest version 2)\ncopied "));
    assert_non_null(strstr(out, "; verified: 4 tables, 5 rows at the same versions\n"));
    free(out);
    char *after = listing(path_in("g"));
    assert_string_equal(before, after); /* the source is only read */
    free(before);
    free(after);
    json_t *j = cli_json("backup g b2 --json", 0);
    assert_true(json_is_true(json_object_get(j, "ok")));
    assert_true(json_is_true(json_object_get(j, "verified")));
    assert_int_equal(json_integer_value(json_object_get(j, "manifest_version")), 2);
    assert_int_equal(json_integer_value(json_object_get(j, "tables")), 4);
    assert_int_equal(json_integer_value(json_object_get(j, "rows")), 5);
    assert_int_equal(json_integer_value(json_object_get(j, "attempts")), 1);
    assert_string_equal(json_string_value(json_object_get(j, "dest")), "b2");
    json_t *snap = cli_json("snapshot --json g", 0), *bsnap = cli_json("snapshot --json b2", 0);
    assert_string_equal(json_string_value(json_object_get(j, "commit_id")),
                        json_string_value(json_object_get(snap, "head_commit")));
    json_object_del(snap, "root");
    json_object_del(bsnap, "root");
    assert_true(json_equal(snap, bsnap));
    json_decref(snap);
    json_decref(bsnap);
    json_decref(j);
    char *e1 = cli("export g", &st, err, sizeof err), *e2 = cli("export b2", &st, err, sizeof err);
    assert_string_equal(e1, e2);
    free(e1);
    free(e2);
    /* No sidecars, locks or temporaries of the source come along. */
    assert_int_not_equal(access(path_in("b2/__recovery"), F_OK), 0);

    /* An empty existing directory is fine; a non-empty one, or one inside the root, is not. */
    assert_int_equal(mkdir(path_in("empty"), 0755), 0);
    free(cli("backup --store g empty", &st, err, sizeof err));
    assert_int_equal(st, 0);
    j = cli_json("backup --store g b1 --json", 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "code")),
                        "exists");
    json_decref(j);
    free(cli("backup --store g g/inside", &st, err, sizeof err));
    assert_int_equal(st, 1);
    assert_non_null(strstr(err, "error[bad_request]"));
    assert_non_null(strstr(err, "inside the graph's root"));
    free(cli("backup --store nowhere b9", &st, err, sizeof err));
    assert_int_equal(st, 1);
    assert_non_null(strstr(err, "error[not_found]"));
    free(cli("backup --store g", &st, err, sizeof err));
    assert_int_equal(st, 2);
    assert_non_null(strstr(err, "missing DEST"));
    free(cli("backup --store g b3 b4", &st, err, sizeof err));
    assert_int_equal(st, 2);
    free(cli("backup --store g --at 2 b3", &st, err, sizeof err));
    assert_int_equal(st, 2);
    free(cli("backup --store g --branch dev b3", &st, err, sizeof err));
    assert_int_equal(st, 1);
    char *help = cli("backup --help", &st, err, sizeof err);
    assert_int_equal(st, 0);
    assert_non_null(strstr(help, "usage: omnigraph backup"));
    free(help);
}

/* A backup killed at each durable step before its commit point (the failpoint backup.step,
 * hit after each durable step, exits the process): the destination holds no graph, and every
 * command says so alike: not_found with the remedy (run the backup again), never a damaged
 * graph. A finished backup that has lost its manifest versions still reads as damage. */
static void test_cli_backup_interrupted(void **state)
{
    (void)state;
    make_social();
    int st;
    char err[8192];
    test_write_file(path_in("more.jsonl"), "{\"type\":\"Company\",\"data\":{\"name\":\"X\"}}\n",
                    strlen("{\"type\":\"Company\",\"data\":{\"name\":\"X\"}}\n"));
    static const char *const commands[] = {
        "snapshot bk",
        "snapshot --branch main --at 1 bk",
        "query --store bk -e x",
        "mutate --store bk -e x",
        "verify bk",
        "verify --deep bk",
        "repair bk",
        "repair --confirm bk",
        "commit list bk",
        "export bk",
        "recover list bk",
        "load --data more.jsonl --mode merge bk",
        "schema show bk",
        "branch list bk",
        "branch create dev bk",
        "optimize bk",
        "cleanup --keep 1 bk",
        "backup bk b9",
    };
    unsigned interrupted = 0;
    for (unsigned k = 1;; k++) {
        test_rmrf(path_in("bk"));
        char cmd[4096];
        snprintf(cmd, sizeof cmd,
                 "cd '%s' && OG_FAILPOINTS='backup.step=%u*exit' '%s' backup g bk 2>/dev/null",
                 g_dir, k, g_bin);
        free(test_capture(cmd, &st));
        if (st == 0) break; /* past the last step before the commit point */
        assert_int_equal(st, 86);
        assert_true(k < 100);
        interrupted++;
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
            free(cli(commands[i], &st, err, sizeof err));
            if (st != 1 || !strstr(err, "omnigraph: error[not_found]: ") ||
                !strstr(err, "interrupted before its commit point") ||
                !strstr(err, "run `omnigraph backup` again"))
                fail_msg("after step %u, '%s' exited %d: %s", k, commands[i], st, err);
        }
        json_t *j = cli_json("snapshot --json bk", 1);
        json_t *e = json_object_get(j, "error");
        assert_string_equal(json_string_value(json_object_get(e, "code")), "not_found");
        assert_non_null(strstr(json_string_value(json_object_get(e, "message")), "backup"));
        json_decref(j);
        j = cli_json("verify --json bk", 1);
        e = json_object_get(j, "error");
        assert_string_equal(json_string_value(json_object_get(e, "code")), "not_found");
        json_decref(j);
        assert_int_not_equal(access(path_in("b9"), F_OK), 0);
    }
    /* the claim, each table's files, the schema, the manifest's files */
    assert_true(interrupted >= 4);
    /* The finished backup opens, and its claim is gone. */
    free(cli("snapshot bk", &st, err, sizeof err));
    assert_int_equal(st, 0);
    assert_int_not_equal(access(path_in("bk/__backup_claim.json"), F_OK), 0);
    /* A real graph without its manifest versions is damage, not an unfinished backup. */
    test_rmrf(path_in("bk/__manifest.lance/_versions"));
    free(cli("snapshot bk", &st, err, sizeof err));
    assert_int_equal(st, 1);
    assert_non_null(strstr(err, "error[corrupt]"));
    assert_non_null(strstr(err, "lost its manifest"));
}

int main(void)
{
    const char *bindir = getenv("OG_TEST_BINDIR");
    const char *srcdir = getenv("OG_TEST_SRCDIR");
    snprintf(g_bin, sizeof g_bin, "%s/omnigraph", bindir ? bindir : ".");
    snprintf(g_src, sizeof g_src, "%s", srcdir ? srcdir : "../..");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_roundtrip_demo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_roundtrip_all_types, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cli_export, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cli_backup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cli_backup_interrupted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_backup_while_writing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
