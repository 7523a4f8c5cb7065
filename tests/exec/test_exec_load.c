/* Tests of the JSONL loader: every value form, id derivation and minting, every rejection
 * (with its line and message), modes, stats and progress, and a 10k-line parse. */
#include "testutil.h"

#include "core/alloc.h"
#include "core/ulid.h"
#include "exec/load.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

static const char *SCHEMA = "node Person {\n"
                            "    name: String @key\n"
                            "    age: I32?\n"
                            "    email: String? @unique\n"
                            "    status: enum(active, inactive)?\n"
                            "    @range(age, 0..150)\n"
                            "}\n"
                            "node Company { name: String @key  size: U32? }\n"
                            "node All {\n"
                            "    s: String\n"
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
                            "    tags: [String]?\n"
                            "    nums: [I32]?\n"
                            "    vec: Vector(3)?\n"
                            "    e: enum(x, y)?\n"
                            "}\n"
                            "node Pair { a: String  b: I64  @key(b, a) }\n"
                            "edge Knows: Person -> Person { since: Date? }\n"
                            "edge WorksAt: Person -> Company @card(0..1) { role: String? }\n";

typedef struct fx {
    core_arena arena;
    lang_diags diags;
    lang_catalog *cat;
    graph_change_set cs;
    exec_load_stats st;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    core_arena_init(&f->arena, 4096);
    lang_diags_init(&f->diags, &f->arena);
    if (lang_catalog_build(&f->cat, SCHEMA, strlen(SCHEMA), "t.pg", &f->diags))
        fail_msg("schema: %s", og_error_last()->message);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    graph_change_set_clear(&f->cs);
    lang_catalog_free(f->cat);
    core_arena_free(&f->arena);
    free(f);
    return 0;
}

static int parse(fx *f, const char *text, exec_load_mode mode)
{
    graph_change_set_clear(&f->cs);
    return exec_load_parse(&f->cs, f->cat, text, strlen(text), "in.jsonl", mode, &f->st, NULL,
                           NULL);
}

static const graph_change *change_of(fx *f, const char *type)
{
    int ti = lang_catalog_find(f->cat, type, 0);
    for (size_t i = 0; i < f->cs.n; i++)
        if (f->cs.changes[i].type_index == ti) return &f->cs.changes[i];
    return NULL;
}

static const arrow_array *col(const graph_change *c, const char *name)
{
    int i = arrow_schema_find(&c->rows->schema, name);
    assert_true(i >= 0);
    return c->rows->columns[i];
}

static void assert_str(const arrow_array *a, int64_t i, const char *want)
{
    size_t n;
    const uint8_t *p = arrow_array_get_bytes(a, i, &n);
    if (n != strlen(want) || memcmp(p, want, n))
        fail_msg("row %lld: got '%.*s', want '%s'", (long long)i, (int)n, (const char *)p, want);
}

/* Parse must fail with BAD_REQUEST at `line`, message containing `frag`, and leave no rows. */
static void expect_reject(fx *f, const char *text, int line, const char *frag)
{
    int rc = parse(f, text, EXEC_LOAD_APPEND);
    assert_og_error(rc, OG_E_BAD_REQUEST);
    const og_error *e = og_error_last();
    if (!strstr(e->message, frag)) fail_msg("message '%s' lacks '%s'", e->message, frag);
    assert_int_equal(e->line, line);
    assert_non_null(e->file);
    assert_string_equal(e->file, "in.jsonl");
    char pre[32];
    snprintf(pre, sizeof pre, "line %d: ", line);
    assert_true(strncmp(e->message, pre, strlen(pre)) == 0);
    assert_int_equal(f->cs.n, 0);
    assert_null(f->cs.changes);
}

static void test_modes(void **state)
{
    (void)state;
    exec_load_mode m;
    assert_og_ok(exec_load_mode_parse("append", &m));
    assert_int_equal(m, EXEC_LOAD_APPEND);
    assert_og_ok(exec_load_mode_parse("merge", &m));
    assert_int_equal(m, EXEC_LOAD_MERGE);
    assert_og_ok(exec_load_mode_parse("overwrite", &m));
    assert_int_equal(m, EXEC_LOAD_OVERWRITE);
    assert_og_error(exec_load_mode_parse("upsert", &m), OG_E_BAD_REQUEST);
    assert_og_error(exec_load_mode_parse(NULL, &m), OG_E_BAD_REQUEST);
    assert_string_equal(exec_load_mode_name(EXEC_LOAD_MERGE), "merge");
    assert_string_equal(exec_load_mode_name(EXEC_LOAD_OVERWRITE), "overwrite");
    assert_string_equal(exec_load_mode_name(EXEC_LOAD_APPEND), "append");
}

static void test_change_modes(void **state)
{
    fx *f = *state;
    const char *in = "{\"type\":\"Person\",\"data\":{\"name\":\"a\"}}\n";
    assert_og_ok(parse(f, in, EXEC_LOAD_APPEND));
    assert_int_equal(f->cs.changes[0].mode, GRAPH_CHANGE_INSERT);
    assert_og_ok(parse(f, in, EXEC_LOAD_MERGE));
    assert_int_equal(f->cs.changes[0].mode, GRAPH_CHANGE_UPSERT);
    assert_og_ok(parse(f, in, EXEC_LOAD_OVERWRITE));
    assert_int_equal(f->cs.changes[0].mode, GRAPH_CHANGE_REPLACE);
    assert_string_equal(f->cs.file, "in.jsonl");
}

static void test_value_forms(void **state)
{
    fx *f = *state;
    const char *in =
        "{\"type\":\"All\",\"data\":{\"s\":\"h\\u00e9\",\"b\":true,\"i32\":-2147483648,"
        "\"i64\":-9223372036854775807,\"u32\":4294967295,\"u64\":9223372036854775807,"
        "\"f32\":1.5,\"f64\":2.25,\"d\":\"2024-01-02\",\"dt\":\"2024-01-02T03:04:05.678Z\","
        "\"blob\":\"raw\",\"tags\":[\"a\",\"b\"],\"nums\":[1,2,3],\"vec\":[1,2.5,-3],\"e\":\"y\"}}"
        "\n"
        "\n"
        "   \n"
        "{\"type\":\"All\",\"data\":{\"s\":\"x\",\"d\":19724,\"dt\":1000,\"f32\":3,\"tags\":[]}}\n"
        "{\"type\":\"All\",\"data\":{\"s\":\"y\",\"dt\":\"2024-01-02T04:04:05+01:00\",\"b\":false,"
        "\"i32\":null}}\n"
        "{\"type\":\"All\",\"data\":{\"s\":\"z\",\"dt\":\"2024-01-02T03:04:05.1-00:30\"}}\n";
    assert_og_ok(parse(f, in, EXEC_LOAD_MERGE));
    assert_int_equal(f->st.lines, 6);
    assert_int_equal(f->st.nodes, 4);
    assert_int_equal(f->st.node_types, 1);
    assert_int_equal(f->cs.n, 1);
    const graph_change *c = change_of(f, "All");
    assert_non_null(c);
    assert_int_equal(c->rows->num_rows, 4);
    assert_int_equal(c->lines[0], 1);
    assert_int_equal(c->lines[1], 4);
    assert_int_equal(c->lines[3], 6);
    /* schema order: id then properties */
    assert_string_equal(c->rows->schema.fields[0].name, "id");
    assert_string_equal(c->rows->schema.fields[1].name, "s");
    assert_str(col(c, "s"), 0, "h\xc3\xa9");
    assert_true(arrow_array_get_bool(col(c, "b"), 0));
    assert_false(arrow_array_get_bool(col(c, "b"), 2));
    assert_int_equal(arrow_array_get_int(col(c, "i32"), 0), INT32_MIN);
    assert_false(arrow_array_is_valid(col(c, "i32"), 2)); /* explicit null */
    assert_false(arrow_array_is_valid(col(c, "i32"), 1)); /* missing nullable */
    assert_true(arrow_array_get_int(col(c, "i64"), 0) == -9223372036854775807LL);
    assert_true(arrow_array_get_uint(col(c, "u32"), 0) == 4294967295u);
    assert_true(arrow_array_get_uint(col(c, "u64"), 0) == 9223372036854775807ULL);
    assert_true(arrow_array_get_double(col(c, "f32"), 0) == 1.5);
    assert_true(arrow_array_get_double(col(c, "f32"), 1) == 3.0);
    assert_true(arrow_array_get_double(col(c, "f64"), 0) == 2.25);
    assert_int_equal(col(c, "d")->type.id, ARROW_DATE32);
    assert_int_equal(arrow_array_get_int(col(c, "d"), 0), 19724);
    assert_int_equal(arrow_array_get_int(col(c, "d"), 1), 19724);
    const arrow_array *dt = col(c, "dt");
    assert_int_equal(dt->type.id, ARROW_TIMESTAMP);
    assert_int_equal(dt->type.unit, ARROW_UNIT_MILLI);
    assert_null(dt->type.tz);
    assert_true(arrow_array_get_int(dt, 0) == 1704164645678LL);
    assert_true(arrow_array_get_int(dt, 1) == 1000);
    assert_true(arrow_array_get_int(dt, 2) == 1704164645000LL); /* +01:00 */
    assert_true(arrow_array_get_int(dt, 3) == 1704164645100LL + 30 * 60000);
    assert_str(col(c, "blob"), 0, "raw");
    assert_int_equal(col(c, "blob")->type.id, ARROW_BINARY);
    const arrow_array *tags = col(c, "tags");
    int64_t s0, e0;
    arrow_array_list_range(tags, 0, &s0, &e0);
    assert_int_equal(e0 - s0, 2);
    assert_str(tags->children[0], s0 + 1, "b");
    arrow_array_list_range(tags, 1, &s0, &e0);
    assert_int_equal(e0 - s0, 0);
    assert_true(arrow_array_is_valid(tags, 1)); /* [] is an empty list, not null */
    assert_false(arrow_array_is_valid(tags, 2));
    const arrow_array *vec = col(c, "vec");
    assert_int_equal(vec->type.id, ARROW_FIXED_SIZE_LIST);
    assert_int_equal(vec->type.list_size, 3);
    assert_true(arrow_array_get_double(vec->children[0], 1) == 2.5);
    assert_true(arrow_array_get_double(vec->children[0], 2) == -3.0);
    assert_false(arrow_array_is_valid(vec, 1));
    assert_str(col(c, "e"), 0, "y");
    /* non-keyed nodes get ULIDs, all distinct */
    for (int64_t i = 0; i < 4; i++) {
        size_t n;
        const char *id = (const char *)arrow_array_get_bytes(col(c, "id"), i, &n);
        char buf[64];
        assert_int_equal(n, CORE_ULID_LEN);
        memcpy(buf, id, n);
        buf[n] = 0;
        assert_true(core_ulid_valid(buf));
        if (i) assert_true(memcmp(id, arrow_array_get_bytes(col(c, "id"), i - 1, &n), 26));
    }
}

static void test_ids(void **state)
{
    fx *f = *state;
    const char *in =
        "{\"type\":\"Person\",\"data\":{\"name\":\"alice\",\"age\":30}}\n"
        "{\"type\":\"Person\",\"data\":{\"name\":\"bob\",\"id\":\"bob\"}}\n"
        "{\"type\":\"All\",\"data\":{\"s\":\"q\",\"id\":\"mine\"}}\n"
        "{\"type\":\"Pair\",\"data\":{\"a\":\"x\",\"b\":5}}\n"
        "{\"edge\":\"Knows\",\"from\":\"alice\",\"to\":\"bob\",\"data\":{\"since\":"
        "\"2020-01-01\"}}\n"
        "{\"edge\":\"knows\",\"from\":\"bob\",\"to\":\"alice\",\"data\":{\"id\":\"k2\"}}\n"
        "{\"edge\":\"WorksAt\",\"from\":\"alice\",\"to\":\"acme\"}\n";
    assert_og_ok(parse(f, in, EXEC_LOAD_APPEND));
    assert_int_equal(f->st.nodes, 4);
    assert_int_equal(f->st.edges, 3);
    assert_int_equal(f->st.node_types, 3);
    assert_int_equal(f->st.edge_types, 2);
    assert_int_equal(f->cs.n, 5);
    for (size_t i = 1; i < f->cs.n; i++)
        assert_true(f->cs.changes[i - 1].type_index < f->cs.changes[i].type_index);
    const graph_change *p = change_of(f, "Person");
    assert_str(col(p, "id"), 0, "alice");
    assert_str(col(p, "id"), 1, "bob");
    assert_str(col(change_of(f, "All"), "id"), 0, "mine");
    /* composite key: a JSON array of the canonical texts in stable-id order */
    const lang_typedef *pt = &f->cat->types[lang_catalog_find(f->cat, "Pair", 0)];
    lang_value kv[2];
    memset(kv, 0, sizeof kv);
    for (size_t k = 0; k < 2; k++) {
        if (!strcmp(pt->props[pt->key[k]].name, "a")) {
            kv[k].kind = LANG_V_STRING;
            kv[k].s = "x";
        } else {
            kv[k].kind = LANG_V_INT;
            kv[k].u = 5;
        }
    }
    char *want = NULL;
    assert_og_ok(lang_key_id(&want, pt, kv));
    assert_true(want[0] == '[');
    assert_str(col(change_of(f, "Pair"), "id"), 0, want);
    core_free(want);
    const graph_change *k = change_of(f, "Knows");
    assert_string_equal(k->rows->schema.fields[1].name, "src");
    assert_string_equal(k->rows->schema.fields[2].name, "dst");
    assert_string_equal(k->rows->schema.fields[3].name, "since");
    assert_str(col(k, "src"), 0, "alice");
    assert_str(col(k, "dst"), 0, "bob");
    assert_str(col(k, "id"), 1, "k2");
    size_t n;
    arrow_array_get_bytes(col(k, "id"), 0, &n);
    assert_int_equal(n, CORE_ULID_LEN);
    assert_int_equal(k->lines[0], 5);
    assert_int_equal(change_of(f, "WorksAt")->lines[0], 7);
}

static void test_rejections(void **state)
{
    fx *f = *state;
    const char *ok = "{\"type\":\"Person\",\"data\":{\"name\":\"a\"}}\n";
    char buf[1024];
#define REJ(line2, frag)                                                                           \
    do {                                                                                           \
        snprintf(buf, sizeof buf, "%s\n%s\n", ok, line2);                                          \
        expect_reject(f, buf, 3, frag);                                                            \
    } while (0)
    REJ("{\"type\":\"Person\",", "invalid JSON");
    REJ("[1,2]", "a line must be a JSON object");
    REJ("\"x\"", "invalid JSON");
    REJ("{\"type\":\"Person\",\"type\":\"Person\",\"data\":{\"name\":\"b\"}}", "duplicate");
    REJ("{\"type\":\"Person\",\"data\":{\"name\":\"b\",\"name\":\"c\"}}", "duplicate");
    REJ("{\"type\":\"Person\",\"data\":{\"name\":\"b\"},\"extra\":1}",
        "unknown top-level member \"extra\"");
    REJ("{\"type\":\"Person\",\"edge\":\"Knows\",\"data\":{}}", "exactly one of");
    REJ("{\"data\":{}}", "exactly one of");
    REJ("{\"type\":\"Nobody\",\"data\":{}}", "unknown node type \"Nobody\"");
    REJ("{\"type\":\"Knows\",\"data\":{}}", "unknown node type \"Knows\"");
    REJ("{\"type\":7}", "\"type\" must be a string");
    REJ("{\"type\":\"Person\",\"data\":{\"name\":\"b\",\"height\":3}}",
        "Person: unknown property \"height\"");
    REJ("{\"type\":\"Person\",\"data\":[]}", "\"data\" must be an object");
    REJ("{\"type\":\"Person\",\"data\":{\"name\":\"b\",\"_rowid\":3}}", "reserved");
    REJ("{\"type\":\"Person\",\"data\":{\"name\":\"b\",\"_tombstone\":true}}", "reserved");
    REJ("{\"type\":\"Person\",\"from\":\"a\",\"data\":{\"name\":\"b\"}}", "only allowed on edge");
    REJ("{\"edge\":\"Knows\",\"from\":\"a\"}", "needs \"from\" and \"to\"");
    REJ("{\"edge\":\"Knows\",\"from\":\"a\",\"to\":3}", "non-empty node id");
    REJ("{\"edge\":\"Knows\",\"from\":\"a\",\"to\":\"b\",\"data\":{\"src\":\"a\"}}",
        "data.src is not allowed");
    REJ("{\"edge\":\"Knows\",\"from\":\"a\",\"to\":\"b\",\"data\":{\"dst\":\"a\"}}",
        "data.dst is not allowed");
    REJ("{\"type\":\"All\",\"data\":{}}", "All.s: missing value for a non-nullable property");
    REJ("{\"type\":\"All\",\"data\":{\"s\":null}}", "All.s: null for a non-nullable");
    REJ("{\"type\":\"Person\",\"data\":{\"name\":\"b\",\"age\":\"x\"}}",
        "Person.age: expected I32, got string \"x\"");
    REJ("{\"type\":\"Person\",\"data\":{\"name\":\"b\",\"age\":1.5}}",
        "Person.age: expected I32, got number 1.5");
    REJ("{\"type\":\"All\",\"data\":{\"s\":\"q\",\"i32\":2147483648}}",
        "All.i32: 2147483648 is out of range for I32");
    REJ("{\"type\":\"All\",\"data\":{\"s\":\"q\",\"u32\":-1}}", "out of range for U32");
    REJ("{\"type\":\"All\",\"data\":{\"s\":\"q\",\"u32\":4294967296}}", "out of range for U32");
    REJ("{\"type\":\"All\",\"data\":{\"s\":\"q\",\"u64\":-1}}", "out of range for U64");
    REJ("{\"type\":\"All\",\"data\":{\"s\":\"q\",\"f32\":1e39}}", "out of range for F32");
    REJ("{\"type\":\"All\",\"data\":{\"s\":\"q\",\"b\":1}}", "All.b: expected Bool, got integer 1");
    REJ("{\"type\":\"All\",\"data\":{\"s\":5}}", "All.s: expected String, got integer 5");
    REJ("{\"type\":\"All\",\"data\":{\"s\":\"q\",\"d\":\"2024-02-30\"}}", "not a valid Date");
    REJ("{\"type\":\"All\",\"data\":{\"s\":\"q\",\"d\":\"2024-01-02T00:00:00Z\"}}",
        "not a valid Date");
    REJ("{\"type\":\"All\",\"data\":{\"s\":\"q\",\"d\":3000000000}}", "out of range for Date");
    REJ("{\"type\":\"All\",\"data\":{\"s\":\"q\",\"d\":true}}", "All.d: expected Date");
    REJ("{\"type\":\"All\",\"data\":{\"s\":\"q\",\"dt\":\"2024-01-02T25:00:00Z\"}}",
        "not a valid DateTime");
    REJ("{\"type\":\"All\",\"data\":{\"s\":\"q\",\"dt\":1.5}}", "All.dt: expected DateTime");
    REJ("{\"type\":\"All\",\"data\":{\"s\":\"q\",\"e\":\"z\"}}",
        "All.e: \"z\" is not a value of the enum");
    REJ("{\"type\":\"All\",\"data\":{\"s\":\"q\",\"e\":1}}", "All.e: expected an enum string");
    REJ("{\"type\":\"All\",\"data\":{\"s\":\"q\",\"vec\":[1,2]}}",
        "All.vec: vector has 2 values, expected 3");
    REJ("{\"type\":\"All\",\"data\":{\"s\":\"q\",\"vec\":[1,2,\"x\"]}}", "vector item 2");
    REJ("{\"type\":\"All\",\"data\":{\"s\":\"q\",\"vec\":1}}", "All.vec: expected a JSON array");
    REJ("{\"type\":\"All\",\"data\":{\"s\":\"q\",\"tags\":[\"a\",null]}}", "list item 1 is null");
    REJ("{\"type\":\"All\",\"data\":{\"s\":\"q\",\"nums\":[1,\"2\"]}}", "All.nums: expected I32");
    REJ("{\"type\":\"All\",\"data\":{\"s\":\"q\",\"id\":5}}", "data.id must be a non-empty string");
    REJ("{\"type\":\"Person\",\"data\":{\"name\":\"b\",\"id\":\"c\"}}",
        "differs from the id derived from @key");
    REJ("{\"type\":\"Person\",\"data\":{\"name\":\"b\",\"status\":\"gone\"}}",
        "not a value of the enum");
    /* jansson holds integers as int64: a larger U64 literal is refused as a JSON error */
    REJ("{\"type\":\"All\",\"data\":{\"s\":\"q\",\"u64\":18446744073709551615}}",
        "too big integer");
#undef REJ
    /* the first line is the failing one */
    expect_reject(f, "{\"type\":\"Person\",\"data\":{\"age\":1}}", 1, "Person.name: missing value");
}

static void test_line_limit(void **state)
{
    fx *f = *state;
    size_t big = 32u * 1024u * 1024u + 16;
    const char *head =
        "{\"type\":\"Person\",\"data\":{\"name\":\"a\"}}\n\n{\"type\":\"All\",\"data\":{\"s\":\"";
    size_t hn = strlen(head);
    char *text = malloc(hn + big + 8);
    memcpy(text, head, hn);
    memset(text + hn, 'x', big);
    memcpy(text + hn + big, "\"}}\n", 5);
    int rc = exec_load_parse(&f->cs, f->cat, text, strlen(text), "in.jsonl", EXEC_LOAD_APPEND,
                             &f->st, NULL, NULL);
    assert_og_error(rc, OG_E_BAD_REQUEST);
    assert_int_equal(og_error_last()->line, 3);
    assert_non_null(strstr(og_error_last()->message, "32 MiB"));
    assert_int_equal(f->cs.n, 0);
    free(text);
}

static int progress_calls;
static uint64_t progress_last_lines, progress_last_bytes;
static void on_progress(void *arg, uint64_t done, uint64_t total, uint64_t lines)
{
    (void)arg;
    assert_true(done <= total);
    assert_true(done >= progress_last_bytes);
    progress_calls++;
    progress_last_lines = lines;
    progress_last_bytes = done;
}

static void test_10k(void **state)
{
    fx *f = *state;
    core_buf b = CORE_BUF_INIT;
    for (int i = 0; i < 2000; i++)
        core_buf_printf(&b,
                        "{\"type\":\"Person\",\"data\":{\"name\":\"p%d\",\"age\":%d,"
                        "\"email\":\"p%d@x\",\"status\":\"active\"}}\n",
                        i, i % 100, i);
    for (int i = 0; i < 8000; i++)
        core_buf_printf(&b,
                        "{\"edge\":\"Knows\",\"from\":\"p%d\",\"to\":\"p%d\",\"data\":"
                        "{\"since\":\"2020-01-%02d\"}}\n",
                        i % 2000, (i * 7) % 2000, 1 + i % 28);
    progress_calls = 0;
    progress_last_bytes = 0;
    int rc = exec_load_parse(&f->cs, f->cat, (const char *)b.data, b.len, "big.jsonl",
                             EXEC_LOAD_MERGE, &f->st, on_progress, NULL);
    assert_og_ok(rc);
    assert_int_equal(f->st.lines, 10000);
    assert_int_equal(f->st.nodes, 2000);
    assert_int_equal(f->st.edges, 8000);
    assert_int_equal(f->cs.n, 2);
    assert_int_equal(change_of(f, "Person")->rows->num_rows, 2000);
    assert_int_equal(change_of(f, "Knows")->rows->num_rows, 8000);
    assert_int_equal(change_of(f, "Knows")->lines[7999], 10000);
    assert_str(col(change_of(f, "Person"), "id"), 1999, "p1999");
    assert_str(col(change_of(f, "Knows"), "dst"), 1, "p7");
    /* minted ids come from one reserved block: each is the previous plus one (the text is
     * counted up in base 32, carries included: 8,000 ids cross ~250 of them) */
    const arrow_array *kid = col(change_of(f, "Knows"), "id");
    for (int64_t r = 1; r < kid->length; r++) {
        size_t n0, n1;
        const uint8_t *p0 = arrow_array_get_bytes(kid, r - 1, &n0),
                      *p1 = arrow_array_get_bytes(kid, r, &n1);
        char t0[CORE_ULID_LEN + 1], t1[CORE_ULID_LEN + 1];
        assert_int_equal(n0, CORE_ULID_LEN);
        memcpy(t0, p0, n0);
        t0[n0] = '\0';
        core_ulid u;
        assert_og_ok(core_ulid_parse(&u, t0));
        core_ulid_step(&u);
        core_ulid_format(&u, t1);
        assert_int_equal(n1, CORE_ULID_LEN);
        assert_memory_equal(p1, t1, CORE_ULID_LEN);
    }
    /* every 4096 lines (4096, 8192), then once at the end */
    assert_int_equal(progress_calls, 3);
    assert_int_equal(progress_last_lines, 10000);
    assert_int_equal(progress_last_bytes, b.len);
    core_buf_free(&b);
}

static void test_empty(void **state)
{
    fx *f = *state;
    assert_og_ok(parse(f, "", EXEC_LOAD_APPEND));
    assert_int_equal(f->cs.n, 0);
    assert_og_ok(parse(f, "\n\n  \n", EXEC_LOAD_APPEND));
    assert_int_equal(f->cs.n, 0);
    assert_int_equal(f->st.lines, 3);
    /* no trailing newline on the last line */
    assert_og_ok(
        parse(f, "{\"type\":\"Company\",\"data\":{\"name\":\"c\",\"size\":3}}", EXEC_LOAD_APPEND));
    assert_int_equal(change_of(f, "Company")->rows->num_rows, 1);
    assert_int_equal(arrow_array_get_uint(col(change_of(f, "Company"), "size"), 0), 3);
}

/* ---- the fast line reader against the jansson one ---------------------------------------
 * Plain lines are read by a purpose-built scanner; a line with any escape goes through
 * jansson. Escaping one character of the "type"/"edge" member name changes nothing about the
 * line's meaning but forces the jansson path, so each line below is loaded both ways and the
 * outcomes must agree: the same code and message (file:line included), the same rows. */

/* text with the first "type" / "edge" member name escaped; 0 if it has neither. */
static int force_slow(const char *text, char *out, size_t cap)
{
    const char *hit = strstr(text, "\"type\"");
    const char *rep = "\"\\u0074ype\"";
    if (!hit) {
        hit = strstr(text, "\"edge\"");
        rep = "\"\\u0065dge\"";
    }
    if (!hit || strlen(text) + 16 > cap) return 0;
    size_t pre = (size_t)(hit - text);
    snprintf(out, cap, "%.*s%s%s", (int)pre, text, rep, hit + 6);
    return 1;
}

static int is_ulid_text(const arrow_array *a, int64_t i)
{
    size_t n;
    const uint8_t *p = arrow_array_get_bytes(a, i, &n);
    char buf[CORE_ULID_LEN + 1], back[CORE_ULID_LEN + 1];
    core_ulid u;
    if (n != CORE_ULID_LEN) return 0;
    memcpy(buf, p, n);
    buf[n] = '\0';
    if (core_ulid_parse(&u, buf)) return 0;
    core_ulid_format(&u, back);
    return !strcmp(back, buf); /* the loader's text is exactly core_ulid_format's */
}

static int n_agree_ok, n_agree_err;

static void expect_same(fx *f, const char *text)
{
    char slow[2048];
    if (!force_slow(text, slow, sizeof slow)) return;
    exec_load_mode mode = EXEC_LOAD_MERGE;
    graph_change_set a = {0}, b = {0};
    exec_load_stats sa, sb;
    int ra = exec_load_parse(&a, f->cat, text, strlen(text), "in.jsonl", mode, &sa, NULL, NULL);
    char msg[1024] = "", file[64] = "";
    int line = 0;
    if (ra) {
        snprintf(msg, sizeof msg, "%s", og_error_last()->message);
        snprintf(file, sizeof file, "%s", og_error_last()->file ? og_error_last()->file : "");
        line = og_error_last()->line;
    }
    int rb = exec_load_parse(&b, f->cat, slow, strlen(slow), "in.jsonl", mode, &sb, NULL, NULL);
    if (ra != rb)
        fail_msg("'%s': fast rc %d, jansson rc %d (%s)", text, ra, rb, og_error_last()->message);
    if (ra) {
        const og_error *e = og_error_last();
        /* jansson's own syntax errors name a column, which the escape shifts */
        if (!strstr(msg, "invalid JSON at column") && strcmp(msg, e->message))
            fail_msg("'%s':\n fast    '%s'\n jansson '%s'", text, msg, e->message);
        assert_int_equal(line, e->line);
        assert_string_equal(file, e->file ? e->file : "");
        assert_int_equal(a.n, 0);
        n_agree_err++;
    } else {
        assert_int_equal(sa.nodes, sb.nodes);
        assert_int_equal(sa.edges, sb.edges);
        assert_int_equal(a.n, b.n);
        for (size_t c = 0; c < a.n; c++) {
            const arrow_batch *x = a.changes[c].rows, *y = b.changes[c].rows;
            assert_int_equal(a.changes[c].type_index, b.changes[c].type_index);
            assert_int_equal(x->num_rows, y->num_rows);
            assert_int_equal(x->n_columns, y->n_columns);
            for (size_t k = 1; k < x->n_columns; k++)
                if (!arrow_array_equal(x->columns[k], y->columns[k]))
                    fail_msg("'%s': column %zu differs", text, k);
            for (int64_t r = 0; r < x->num_rows; r++) {
                if (is_ulid_text(x->columns[0], r) && is_ulid_text(y->columns[0], r)) continue;
                size_t n1, n2;
                const uint8_t *p1 = arrow_array_get_bytes(x->columns[0], r, &n1);
                const uint8_t *p2 = arrow_array_get_bytes(y->columns[0], r, &n2);
                if (n1 != n2 || memcmp(p1, p2, n1)) fail_msg("'%s': ids differ", text);
            }
            assert_memory_equal(a.changes[c].lines, b.changes[c].lines,
                                (size_t)x->num_rows * sizeof *a.changes[c].lines);
        }
        n_agree_ok++;
    }
    graph_change_set_clear(&a);
    graph_change_set_clear(&b);
}

static void test_fast_path_agrees(void **state)
{
    fx *f = *state;
    static const char *const lines[] = {
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":30}}",
        " { \"type\" : \"Person\" , \"data\" : { \"name\" : \"ann\" , \"age\" : 30 } } \r",
        "{\"data\":{\"age\":30,\"name\":\"ann\"},\"type\":\"Person\"}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"id\":\"ann\"}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"id\":\"bob\"}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"id\":\"\"}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"id\":7}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":null,\"status\":\"active\"}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"status\":\"gone\"}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":2147483648}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":-2147483649}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":1.5}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":\"3\"}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":01}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":-}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"name\":\"bob\"}}",
        "{\"type\":\"Person\",\"type\":\"Person\",\"data\":{\"name\":\"ann\"}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"nick\":\"a\"}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"_rowid\":1}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"_tombstone\":true}}",
        "{\"type\":\"Person\",\"data\":{\"age\":3}}",
        "{\"type\":\"Person\",\"data\":{\"name\":null}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"\xc3\xa9l\xc3\xa8ve \xe2\x82\xac "
        "\xf0\x9f\x98\x80\"}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"bad \xc3\x28\"}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"overlong \xc0\xaf\"}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"surrogate \xed\xa0\x80\"}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"big \xf4\x90\x80\x80\"}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"cut \xe2\x82\"}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"tab\there\"}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"a long name that is well past eight bytes\"}}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\"}} x",
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\"}",
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",}}",
        "{\"type\":\"Person\",\"data\":{}}",
        "{\"type\":\"Person\",\"data\":[]}",
        "{\"type\":\"Person\",\"data\":null}",
        "{\"type\":\"Person\"}",
        "{\"type\":\"Nobody\",\"data\":{}}",
        "{\"type\":\"Knows\",\"data\":{}}",
        "{\"type\":\"\",\"data\":{}}",
        "{\"type\":5,\"data\":{}}",
        "{\"type\":\"Person\",\"from\":\"a\",\"data\":{\"name\":\"ann\"}}",
        "{\"type\":\"Person\",\"edge\":\"Knows\",\"data\":{\"name\":\"ann\"}}",
        "{\"type\":\"Person\",\"extra\":1,\"data\":{\"name\":\"ann\"}}",
        "{\"type\":\"Company\",\"data\":{\"name\":\"c\",\"size\":4294967295}}",
        "{\"type\":\"Company\",\"data\":{\"name\":\"c\",\"size\":4294967296}}",
        "{\"type\":\"Company\",\"data\":{\"name\":\"c\",\"size\":-1}}",
        "{\"type\":\"Pair\",\"data\":{\"a\":\"x\",\"b\":-9223372036854775807}}",
        "{\"type\":\"Pair\",\"data\":{\"a\":\"x\",\"b\":9223372036854775807}}",
        "{\"type\":\"Pair\",\"data\":{\"a\":\"x\",\"b\":922337203685477580}}",
        "{\"type\":\"Pair\",\"data\":{\"a\":\"x\",\"b\":-0}}",
        "{\"type\":\"Pair\",\"data\":{\"a\":\"x\",\"b\":99999999999999999999}}",
        ("{\"type\":\"All\",\"data\":{\"s\":\"s\",\"b\":true,\"i32\":-5,\"i64\":-9,\"u32\":5,"
         "\"u64\":18,\"f32\":1.5,\"f64\":-2.25e-3,\"d\":\"2024-02-29\",\"dt\":\"2024-02-29T10:11:"
         "12.5Z\","
         "\"blob\":\"zz\",\"e\":\"y\"}}"),
        "{\"type\":\"All\",\"data\":{\"s\":\"s\",\"b\":false,\"f32\":3,\"f64\":7,\"d\":19000,"
        "\"dt\":-5}}",
        "{\"type\":\"All\",\"data\":{\"s\":\"s\",\"f32\":3.5e38}}",
        "{\"type\":\"All\",\"data\":{\"s\":\"s\",\"f32\":3.4e38}}",
        "{\"type\":\"All\",\"data\":{\"s\":\"s\",\"f32\":1e-50}}",
        "{\"type\":\"All\",\"data\":{\"s\":\"s\",\"f64\":1e400}}",
        "{\"type\":\"All\",\"data\":{\"s\":\"s\",\"f64\":-1e-400}}",
        "{\"type\":\"All\",\"data\":{\"s\":\"s\",\"f64\":0.1E+2}}",
        "{\"type\":\"All\",\"data\":{\"s\":\"s\",\"f64\":1.}}",
        "{\"type\":\"All\",\"data\":{\"s\":\"s\",\"f64\":.5}}",
        "{\"type\":\"All\",\"data\":{\"s\":\"s\",\"f64\":true}}",
        "{\"type\":\"All\",\"data\":{\"s\":\"s\",\"u64\":-1}}",
        "{\"type\":\"All\",\"data\":{\"s\":\"s\",\"b\":1}}",
        "{\"type\":\"All\",\"data\":{\"s\":\"s\",\"b\":tru}}",
        "{\"type\":\"All\",\"data\":{\"s\":\"s\",\"d\":\"2024-13-01\"}}",
        "{\"type\":\"All\",\"data\":{\"s\":\"s\",\"d\":2147483648}}",
        "{\"type\":\"All\",\"data\":{\"s\":\"s\",\"d\":1.5}}",
        "{\"type\":\"All\",\"data\":{\"s\":\"s\",\"dt\":\"2024-01-01T00:00:00+02:00\"}}",
        "{\"type\":\"All\",\"data\":{\"s\":\"s\",\"dt\":\"yesterday\"}}",
        "{\"type\":\"All\",\"data\":{\"s\":\"s\",\"e\":\"q\"}}",
        "{\"type\":\"All\",\"data\":{\"s\":\"s\",\"tags\":[\"a\",\"b\"],\"vec\":[1,2,3]}}",
        "{\"type\":\"All\",\"data\":{\"s\":\"s\",\"tags\":{}}}",
        "{\"type\":\"All\",\"data\":{\"s\":\"s\",\"id\":\"mine\"}}",
        "{\"type\":\"All\",\"data\":{\"s\":\"s\"}}",
        "{\"edge\":\"Knows\",\"from\":\"a\",\"to\":\"b\"}",
        "{\"edge\":\"knows\",\"from\":\"a\",\"to\":\"b\",\"data\":{\"since\":\"2020-01-01\"}}",
        "{\"edge\":\"Knows\",\"from\":\"a\",\"to\":\"b\",\"data\":{\"id\":\"e1\",\"since\":null}}",
        "{\"edge\":\"Knows\",\"from\":\"a\",\"to\":\"\"}",
        "{\"edge\":\"Knows\",\"from\":\"a\"}",
        "{\"edge\":\"Knows\",\"from\":\"a\",\"to\":3}",
        "{\"edge\":\"Knows\",\"from\":\"a\",\"to\":\"b\",\"data\":{\"src\":\"x\"}}",
        "{\"edge\":\"Knows\",\"from\":\"a\",\"to\":\"b\",\"data\":{\"dst\":\"x\"}}",
        "{\"edge\":\"Knows\",\"from\":\"a\",\"to\":\"b\",\"from\":\"c\"}",
        "{\"edge\":\"Person\",\"from\":\"a\",\"to\":\"b\"}",
        "{\"edge\":\"WorksAt\",\"from\":\"a\",\"to\":\"c\",\"data\":{\"role\":\"r\"}}",
        "[1,2]",
        "\"just a string\"",
        "{}",
    };
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
        expect_same(f, lines[i]);
    int plain = n_agree_ok, refused = n_agree_err;
    assert_true(plain >= 20);
    assert_true(refused >= 40);

    /* Random byte edits of plain lines (seeded): whatever they turn into, both readers agree. */
    uint64_t x = 0x9E3779B97F4A7C15ull;
    static const char alphabet[] = "{}[]:,\"\\ 0123456789.eE+-tfnul\x01\x7f\xc3\xa9\xff"
                                   "abxyz";
    static const char *const seeds[] = {
        "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":30,\"status\":\"active\"}}",
        ("{\"type\":\"All\",\"data\":{\"s\":\"s\",\"b\":true,\"i32\":-5,\"u32\":5,\"f32\":1.5,"
         "\"f64\":-2.25e-3,\"d\":\"2024-02-29\",\"dt\":19,\"e\":\"y\"}}"),
        "{\"edge\":\"Knows\",\"from\":\"a\",\"to\":\"b\",\"data\":{\"since\":\"2020-01-01\"}}",
        "{\"type\":\"Company\",\"data\":{\"name\":\"c\",\"size\":12}}",
    };
    char buf[512];
    for (int round = 0; round < 4000; round++) {
        const char *seed = seeds[round % 4];
        snprintf(buf, sizeof buf, "%s", seed);
        size_t n = strlen(buf);
        int edits = round % 8 ? 1 : 2;
        for (int k = 0; k < edits; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t at = (size_t)(x % n);
            char ch = alphabet[(x >> 32) % (sizeof alphabet - 1)];
            if (ch == '\0') ch = ' ';
            buf[at] = ch;
        }
        expect_same(f, buf);
    }
    print_message("agree: %d ok, %d refused (fixed lines %d, %d)\n", n_agree_ok, n_agree_err, plain,
                  refused);
    assert_true(n_agree_ok > plain + 150);
    assert_true(n_agree_err > refused + 2000);
}

/* Several lines: rows from both readers interleave in one change, in line order. */
static void test_fast_mixed_file(void **state)
{
    fx *f = *state;
    const char *text = "{\"type\":\"Person\",\"data\":{\"name\":\"a\"}}\n"
                       "{\"type\":\"Person\",\"data\":{\"name\":\"b\\u00e9\"}}\n"
                       "{\"type\":\"Person\",\"data\":{\"name\":\"c\",\"age\":3}}\n"
                       "{\"edge\":\"Knows\",\"from\":\"a\",\"to\":\"b\\u00e9\"}\n"
                       "{\"edge\":\"Knows\",\"from\":\"c\",\"to\":\"a\"}\n";
    assert_og_ok(parse(f, text, EXEC_LOAD_APPEND));
    const graph_change *p = change_of(f, "Person"), *k = change_of(f, "Knows");
    assert_int_equal(p->rows->num_rows, 3);
    assert_str(col(p, "id"), 0, "a");
    assert_str(col(p, "id"), 1, "b\xc3\xa9");
    assert_str(col(p, "name"), 2, "c");
    assert_int_equal(arrow_array_get_int(col(p, "age"), 2), 3);
    assert_false(arrow_array_is_valid(col(p, "age"), 0));
    assert_int_equal(k->lines[0], 4);
    assert_int_equal(k->lines[1], 5);
    assert_str(col(k, "dst"), 0, "b\xc3\xa9");
    assert_str(col(k, "src"), 1, "c");
    /* minted ids: core_ulid_format's text, increasing in line order */
    assert_true(is_ulid_text(col(k, "id"), 0));
    assert_true(is_ulid_text(col(k, "id"), 1));
    size_t n0, n1;
    const uint8_t *i0 = arrow_array_get_bytes(col(k, "id"), 0, &n0);
    const uint8_t *i1 = arrow_array_get_bytes(col(k, "id"), 1, &n1);
    assert_true(memcmp(i0, i1, CORE_ULID_LEN) < 0);
    /* an error after fast-path rows still leaves nothing and names its line */
    expect_reject(f,
                  "{\"type\":\"Person\",\"data\":{\"name\":\"a\"}}\n"
                  "{\"type\":\"Person\",\"data\":{\"name\":\"b\",\"age\":-1.5}}\n",
                  2, "Person.age: expected I32, got number -1.5");
}

/* ---- two parsing threads ----------------------------------------------------------------
 * Inputs past a size are parsed in two halves at once. Every outcome must be the one thread's:
 * the same changes, rows, source lines and stats, minted ids increasing in file order, and the
 * same error (code, message, line) wherever the bad line is, the first in file order when both
 * halves hold one. */

static void mixed_input(core_buf *b, int bad_at, int bad_at2)
{
    for (int i = 0; i < 3000; i++) {
        if (i == bad_at || i == bad_at2) {
            core_buf_printf(
                b, "{\"type\":\"Person\",\"data\":{\"name\":\"bad%d\",\"age\":\"x\"}}\n", i);
            continue;
        }
        switch (i % 7) {
        case 0:
            core_buf_printf(b, "{\"type\":\"Person\",\"data\":{\"name\":\"p%d\",\"age\":%d}}\n", i,
                            i % 90);
            break;
        case 1:
            core_buf_printf(b, "{\"edge\":\"Knows\",\"from\":\"p%d\",\"to\":\"p%d\"}\n", i, i / 2);
            break;
        case 2:
            core_buf_printf(
                b,
                "{\"edge\":\"Knows\",\"from\":\"p%d\",\"to\":\"p%d\",\"data\":{\"id\":\"k%d\"}}\n",
                i, i, i);
            break;
        case 3:
            core_buf_printf(b, "{\"\\u0074ype\":\"Person\",\"data\":{\"name\":\"s%d\"}}\n", i);
            break; /* jansson path */
        case 4:
            core_buf_printf(b, "\n");
            break;
        case 5:
            core_buf_printf(
                b, "{\"type\":\"All\",\"data\":{\"s\":\"a%d\",\"tags\":[\"x\",\"y\"]}}\n", i);
            break;
        default:
            /* Company only in the second half, WorksAt only in the first */
            if (i >= 1500)
                core_buf_printf(
                    b, "{\"type\":\"Company\",\"data\":{\"name\":\"c%d\",\"size\":%d}}\n", i, i);
            else
                core_buf_printf(b, "{\"edge\":\"WorksAt\",\"from\":\"p%d\",\"to\":\"c%d\"}\n", i,
                                i);
        }
    }
}

static void assert_ids_increasing(const arrow_array *a)
{
    for (int64_t r = 1; r < a->length; r++) {
        size_t n0, n1;
        const uint8_t *p0 = arrow_array_get_bytes(a, r - 1, &n0),
                      *p1 = arrow_array_get_bytes(a, r, &n1);
        if (n0 == CORE_ULID_LEN && n1 == CORE_ULID_LEN && p0[0] == '0' && p1[0] == '0')
            if (memcmp(p0, p1, CORE_ULID_LEN) >= 0)
                fail_msg("minted ids out of order at row %ld: %.26s, then %.26s", (long)r,
                         (const char *)p0, (const char *)p1);
    }
}

static void test_split_parse(void **state)
{
    fx *f = *state;
    core_buf b = CORE_BUF_INIT;
    mixed_input(&b, -1, -1);
    graph_change_set one = {0};
    exec_load_stats st1;
    exec_load_set_split_min(SIZE_MAX);
    assert_og_ok(exec_load_parse(&one, f->cat, (const char *)b.data, b.len, "in.jsonl",
                                 EXEC_LOAD_MERGE, &st1, NULL, NULL));
    exec_load_set_split_min(1);
    assert_og_ok(exec_load_parse(&f->cs, f->cat, (const char *)b.data, b.len, "in.jsonl",
                                 EXEC_LOAD_MERGE, &f->st, NULL, NULL));
    assert_int_equal(f->st.lines, st1.lines);
    assert_int_equal(f->st.nodes, st1.nodes);
    assert_int_equal(f->st.edges, st1.edges);
    assert_int_equal(f->st.node_types, st1.node_types);
    assert_int_equal(f->st.edge_types, st1.edge_types);
    assert_int_equal(f->cs.n, one.n);
    assert_int_equal(f->cs.n, 5);
    for (size_t c = 0; c < one.n; c++) {
        const graph_change *x = &one.changes[c], *y = &f->cs.changes[c];
        assert_int_equal(x->type_index, y->type_index);
        assert_int_equal(x->mode, y->mode);
        assert_int_equal(x->rows->num_rows, y->rows->num_rows);
        assert_memory_equal(x->lines, y->lines, (size_t)x->rows->num_rows * sizeof *x->lines);
        const lang_typedef *t = &f->cat->types[x->type_index];
        int minted = t->kind == LANG_EDGE || !t->n_key;
        for (size_t k = 0; k < x->rows->schema.n_fields; k++) {
            if (k == 0 && minted) continue; /* minted ids differ; checked below */
            if (!arrow_array_equal(x->rows->columns[k], y->rows->columns[k]))
                fail_msg("type %d column %zu (%s) differs", x->type_index, k,
                         x->rows->schema.fields[k].name);
        }
        if (minted) assert_ids_increasing(y->rows->columns[0]);
    }
    graph_change_set_clear(&one);

    /* errors: in the second half; in both halves (the first wins); in the first half */
    int cases[][2] = {{2500, -1}, {700, 2900}, {10, -1}, {2999, -1}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        core_buf bad = CORE_BUF_INIT;
        mixed_input(&bad, cases[k][0], cases[k][1]);
        char msg1[512];
        int line1;
        exec_load_set_split_min(SIZE_MAX);
        assert_og_error(exec_load_parse(&one, f->cat, (const char *)bad.data, bad.len, "in.jsonl",
                                        EXEC_LOAD_MERGE, &st1, NULL, NULL),
                        OG_E_BAD_REQUEST);
        snprintf(msg1, sizeof msg1, "%s", og_error_last()->message);
        line1 = og_error_last()->line;
        assert_int_equal(line1, cases[k][0] + 1);
        exec_load_set_split_min(1);
        graph_change_set_clear(&f->cs);
        assert_og_error(exec_load_parse(&f->cs, f->cat, (const char *)bad.data, bad.len, "in.jsonl",
                                        EXEC_LOAD_MERGE, &f->st, NULL, NULL),
                        OG_E_BAD_REQUEST);
        assert_string_equal(og_error_last()->message, msg1);
        assert_int_equal(og_error_last()->line, line1);
        /* counts of what was read up to the first failure, as one thread's */
        assert_int_equal(f->st.lines, st1.lines);
        assert_int_equal(f->st.nodes, st1.nodes);
        assert_int_equal(f->st.edges, st1.edges);
        assert_string_equal(og_error_last()->file, "in.jsonl");
        assert_int_equal(f->cs.n, 0);
        core_buf_free(&bad);
    }
    exec_load_set_split_min(0);
    core_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_modes),
        cmocka_unit_test_setup_teardown(test_change_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_value_forms, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rejections, setup, teardown),
        cmocka_unit_test_setup_teardown(test_line_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_10k, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fast_path_agrees, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fast_mixed_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_split_parse, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
