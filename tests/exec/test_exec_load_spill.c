/* Tests of the load whose kept columns go to sorted runs on disk (write_stream_set_keep_bytes
 * with a small budget, a small chunk size): the memory held for the whole-set checks
 * (core_sortrun_peak) stays under one bound at two input sizes, four times apart, where the
 * in-memory path grows past it; and every whole-set error found across chunks is the one the
 * in-memory path reports, with the same message and line: a key given twice, an edge id given
 * twice, an endpoint no node has (the first in the file when there are several), an inserted
 * id already committed, a committed edge left dangling by an overwrite; and an @unique
 * violation across chunks, whose catalog keeps the set in memory whatever the budget. And the
 * sorter itself (core/sortrun.h): many runs merged back in order. */
#include "testutil.h"

#include "core/error.h"
#include "core/sortrun.h"
#include "exec/load.h"
#include "write/write.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *SCHEMA = "node Person {\n"
                            "    name: String @key\n"
                            "    age: I32?\n"
                            "}\n"
                            "node Company { name: String @key }\n"
                            "edge Knows: Person -> Person\n"
                            "edge WorksAt: Person -> Company\n";

static const char *SCHEMA_UNIQUE = "node Person {\n"
                                   "    name: String @key\n"
                                   "    email: String? @unique\n"
                                   "}\n"
                                   "edge Knows: Person -> Person\n";

#define CHUNK 4096
#define KEEP 16384
/* The memory the whole-set checks may hold with KEEP and CHUNK, whatever the input size. */
#define BOUND ((uint64_t)1 << 20)

typedef struct text {
    char *p;
    size_t n, cap;
} text;

static void add_raw(text *t, const char *line, size_t n)
{
    if (t->n + n + 1 > t->cap) {
        t->cap = (t->n + n + 1) * 2;
        t->p = realloc(t->p, t->cap);
        assert_non_null(t->p);
    }
    memcpy(t->p + t->n, line, n + 1);
    t->n += n;
}

static void add(text *t, const char *fmt, ...) CORE_PRINTF(2, 3);
static void add(text *t, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < sizeof line);
    if (t->n + (size_t)n + 1 > t->cap) {
        t->cap = (t->n + (size_t)n + 1) * 2;
        t->p = realloc(t->p, t->cap);
        assert_non_null(t->p);
    }
    memcpy(t->p + t->n, line, (size_t)n + 1);
    t->n += (size_t)n;
}

/* n people, 3n Knows edges without ids (the first third before the people they name), 4
 * companies and a WorksAt edge per fifth person. Lines: 4n + 4 + n/5. */
static void gen(text *t, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        add(t, "{\"edge\":\"Knows\",\"from\":\"p%u\",\"to\":\"p%u\"}\n", i, (i * 7 + 1) % n);
    for (unsigned i = 0; i < n; i++)
        add(t, "{\"type\":\"Person\",\"data\":{\"name\":\"p%u\",\"age\":%u}}\n", i, i % 90);
    for (unsigned i = 0; i < 2 * n; i++)
        add(t, "{\"edge\":\"Knows\",\"from\":\"p%u\",\"to\":\"p%u\"}\n", (i * 13) % n,
            (i * 5 + 3) % n);
    for (unsigned c = 0; c < 4; c++)
        add(t, "{\"type\":\"Company\",\"data\":{\"name\":\"c%u\"}}\n", c);
    for (unsigned i = 0; i < n; i += 5)
        add(t, "{\"edge\":\"WorksAt\",\"from\":\"p%u\",\"to\":\"c%u\"}\n", i, i % 4);
}

static og_graph *fresh(char *root, size_t cap, const char *name, const char *schema)
{
    test_sandbox_new(root, cap, name);
    og_init_options io = OG_INIT_OPTIONS_INIT;
    io.schema_source = schema;
    og_init_result *ir = NULL;
    assert_og_ok(og_root_init(&ir, root, &io));
    og_init_result_free(ir);
    og_graph *g = NULL;
    assert_og_ok(og_graph_open(&g, root, NULL));
    return g;
}

/* A load in chunks of CHUNK bytes whose kept columns may hold `keep` bytes (0: the default). */
static int load(og_graph *g, const text *t, int mode, size_t keep)
{
    exec_load_set_chunk_bytes(CHUNK);
    write_stream_set_keep_bytes(keep);
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = mode;
    og_write_result *r = NULL;
    int rc = og_graph_load(&r, g, "in.jsonl", t->p, t->n, &lo);
    exec_load_set_chunk_bytes(0);
    write_stream_set_keep_bytes(0);
    if (rc == 0) assert_non_null(og_write_result_commit_id(r));
    og_write_result_free(r);
    return rc;
}

/* The peak of what the whole-set checks held during a load. */
static uint64_t load_peak(og_graph *g, const text *t, int mode, size_t keep)
{
    uint64_t before = core_sortrun_held();
    core_sortrun_reset_peak();
    assert_og_ok(load(g, t, mode, keep));
    assert_int_equal(core_sortrun_held(), before);
    return core_sortrun_peak() - before;
}

static void test_spill_bounded(void **state)
{
    (void)state;
    uint64_t peak[2], in_memory = 0;
    const unsigned sizes[2] = {1500, 6000};
    for (int k = 0; k < 2; k++) {
        char root[TEST_SANDBOX_PATH];
        og_graph *g = fresh(root, sizeof root, k ? "spill_big" : "spill_small", SCHEMA);
        text t = {0};
        gen(&t, sizes[k]);
        assert_true(t.n > 40 * CHUNK);
        peak[k] = load_peak(g, &t, OG_LOAD_OVERWRITE, KEEP);
        /* the same rows as the in-memory path: every one of them, once */
        og_snapshot_info *s = NULL;
        assert_og_ok(og_graph_snapshot(&s, g, NULL));
        uint64_t rows = 0;
        for (size_t i = 0; i < og_snapshot_info_table_count(s); i++)
            rows += og_snapshot_info_table(s, i)->row_count;
        og_snapshot_info_free(s);
        assert_int_equal(rows, 4u * sizes[k] + 4 + sizes[k] / 5);
        if (k) in_memory = load_peak(g, &t, OG_LOAD_OVERWRITE, 0);
        og_graph_close(g);
        free(t.p);
        test_sandbox_done(root);
    }
    print_message("peak held for the whole-set checks: %llu B at %u people, %llu B at %u; "
                  "%llu B in memory at %u\n",
                  (unsigned long long)peak[0], sizes[0], (unsigned long long)peak[1], sizes[1],
                  (unsigned long long)in_memory, sizes[1]);
    assert_true(peak[0] > 0 && peak[0] < BOUND);
    assert_true(peak[1] < BOUND);
    /* the bound means something: kept in memory, the larger input's columns exceed it */
    assert_true(in_memory > BOUND);
}

static char last_msg[1024]; /* the message same_error saw */

/* Load `t` (mode) with the set in memory, then with it spilled: the same failure, code, message
 * and line (want_line; 0: no line), and nothing committed. */
static void same_error(og_graph **gp, const char *root, const text *t, int mode, int code,
                       int want_line)
{
    /* closed and opened again: the maintenance an earlier load started has committed */
    og_graph_close(*gp);
    assert_og_ok(og_graph_open(gp, root, NULL));
    og_graph *g = *gp;
    og_commit_list *l = NULL;
    assert_og_ok(og_graph_commits(&l, g, NULL));
    size_t commits = og_commit_list_count(l);
    og_commit_list_free(l);
    int rc1 = load(g, t, mode, 0);
    char msg1[1024];
    snprintf(msg1, sizeof msg1, "%s", og_error_last()->message);
    int line1 = og_error_last()->line;
    int rc2 = load(g, t, mode, 4096);
    const og_error *e = og_error_last();
    if (rc2 != code || e->line != want_line || strcmp(e->message, msg1))
        fail_msg("rc %d line %d: %s (in memory: rc %d line %d: %s)", rc2, e->line, e->message, rc1,
                 line1, msg1);
    snprintf(last_msg, sizeof last_msg, "%s", e->message);
    assert_int_equal(rc1, code);
    assert_int_equal(line1, want_line);
    assert_og_ok(og_graph_commits(&l, g, NULL));
    assert_int_equal(og_commit_list_count(l), commits);
    og_commit_list_free(l);
}

static void test_spill_errors(void **state)
{
    (void)state;
    char root[TEST_SANDBOX_PATH];
    og_graph *g = fresh(root, sizeof root, "spill_err", SCHEMA);
    const unsigned n = 1000, lines = 4 * n + 4 + n / 5;
    text good = {0};
    gen(&good, n);

    /* a key given twice, the first time many chunks earlier */
    text t = {0};
    add_raw(&t, good.p, good.n);
    add(&t, "{\"type\":\"Person\",\"data\":{\"name\":\"p3\"}}\n");
    same_error(&g, root, &t, OG_LOAD_OVERWRITE, OG_E_KEY_CONFLICT, (int)lines + 1);
    assert_non_null(strstr(last_msg, "appears twice"));
    free(t.p);

    /* an edge id given twice, across chunks */
    t = (text){0};
    add(&t, "{\"edge\":\"Knows\",\"from\":\"p1\",\"to\":\"p2\",\"data\":{\"id\":\"k9\"}}\n");
    add_raw(&t, good.p, good.n);
    add(&t, "{\"edge\":\"Knows\",\"from\":\"p2\",\"to\":\"p3\",\"data\":{\"id\":\"k9\"}}\n");
    same_error(&g, root, &t, OG_LOAD_OVERWRITE, OG_E_KEY_CONFLICT, (int)lines + 2);
    free(t.p);

    /* endpoints no node has: srcs at the first and near the last line (the later one first
     * in sort order), a dst between them; the src side is reported first (as a one-chunk load
     * does), at the first line that breaks it */
    t = (text){0};
    add(&t, "{\"edge\":\"Knows\",\"from\":\"ghost0\",\"to\":\"p1\",\"data\":{\"id\":\"x0\"}}\n");
    add_raw(&t, good.p, good.n);
    add(&t, "{\"edge\":\"Knows\",\"from\":\"p1\",\"to\":\"nobody\",\"data\":{\"id\":\"x1\"}}\n");
    for (unsigned i = 0; i < 200; i++)
        add(&t, "{\"type\":\"Company\",\"data\":{\"name\":\"z%u\"}}\n", i);
    add(&t, "{\"edge\":\"WorksAt\",\"from\":\"ghost\",\"to\":\"c1\",\"data\":{\"id\":\"x2\"}}\n");
    add(&t, "{\"edge\":\"Knows\",\"from\":\"ghost\",\"to\":\"p1\",\"data\":{\"id\":\"x3\"}}\n");
    same_error(&g, root, &t, OG_LOAD_OVERWRITE, OG_E_BAD_REQUEST, 1);
    assert_non_null(strstr(last_msg, "src \"ghost0\""));
    free(t.p);
    /* and without it, the dst */
    t = (text){0};
    add_raw(&t, good.p, good.n);
    add(&t, "{\"edge\":\"Knows\",\"from\":\"p1\",\"to\":\"nobody\",\"data\":{\"id\":\"x1\"}}\n");
    for (unsigned i = 0; i < 200; i++)
        add(&t, "{\"type\":\"Company\",\"data\":{\"name\":\"z%u\"}}\n", i);
    same_error(&g, root, &t, OG_LOAD_OVERWRITE, OG_E_BAD_REQUEST, (int)lines + 1);
    assert_non_null(strstr(last_msg, "dst \"nobody\""));
    free(t.p);

    /* the good load commits; then an append of a new person and, chunks later, one already
     * committed */
    assert_og_ok(load(g, &good, OG_LOAD_OVERWRITE, 4096));
    t = (text){0};
    for (unsigned i = 0; i < 300; i++)
        add(&t, "{\"type\":\"Person\",\"data\":{\"name\":\"new%u\"}}\n", i);
    add(&t, "{\"type\":\"Person\",\"data\":{\"name\":\"p17\"}}\n");
    same_error(&g, root, &t, OG_LOAD_APPEND, OG_E_KEY_CONFLICT, 301);
    assert_non_null(strstr(last_msg, "already exists"));
    free(t.p);

    /* a merge: committed people upserted, new ones inserted, and chunks later one of them
     * again: refused as given twice (as read whole), with sorted runs as in memory */
    t = (text){0};
    for (unsigned i = 0; i < 300; i++)
        add(&t, "{\"type\":\"Person\",\"data\":{\"name\":\"p%u\",\"age\":7}}\n", i);
    for (unsigned i = 0; i < 300; i++)
        add(&t, "{\"type\":\"Person\",\"data\":{\"name\":\"m%u\"}}\n", i);
    text dup = {0};
    add_raw(&dup, t.p, t.n);
    add(&dup, "{\"type\":\"Person\",\"data\":{\"name\":\"p17\",\"age\":8}}\n");
    same_error(&g, root, &dup, OG_LOAD_MERGE, OG_E_KEY_CONFLICT, 601);
    assert_non_null(strstr(last_msg, "\"p17\" appears twice in the input (lines 18 and 601)"));
    free(dup.p);
    /* upserted edges, one to a node neither the input nor the table has */
    dup = (text){0};
    add_raw(&dup, t.p, t.n);
    add(&dup, "{\"edge\":\"Knows\",\"from\":\"m5\",\"to\":\"q5\",\"data\":{\"id\":\"z1\"}}\n");
    for (unsigned i = 0; i < 100; i++)
        add(&dup, "{\"edge\":\"Knows\",\"from\":\"m%u\",\"to\":\"p%u\"}\n", i, i);
    same_error(&g, root, &dup, OG_LOAD_MERGE, OG_E_BAD_REQUEST, 601);
    assert_non_null(strstr(last_msg, "dst \"q5\""));
    free(dup.p);
    /* and the merge itself, spilled: n + 300 people */
    assert_og_ok(load(g, &t, OG_LOAD_MERGE, 4096));
    og_snapshot_info *si = NULL;
    assert_og_ok(og_graph_snapshot(&si, g, NULL));
    for (size_t i = 0; i < og_snapshot_info_table_count(si); i++)
        if (!strcmp(og_snapshot_info_table(si, i)->alias, "node:Person"))
            assert_int_equal(og_snapshot_info_table(si, i)->row_count, n + 300);
    og_snapshot_info_free(si);
    free(t.p);

    /* appended edges between committed people (asked of the committed table), one to nobody */
    t = (text){0};
    for (unsigned i = 0; i < 600; i++)
        add(&t, "{\"edge\":\"Knows\",\"from\":\"p%u\",\"to\":\"p%u\"}\n", i, (i * 3) % n);
    assert_og_ok(load(g, &t, OG_LOAD_APPEND, 4096));
    add(&t, "{\"edge\":\"Knows\",\"from\":\"p5\",\"to\":\"q5\",\"data\":{\"id\":\"y1\"}}\n");
    for (unsigned i = 0; i < 100; i++)
        add(&t, "{\"edge\":\"Knows\",\"from\":\"p%u\",\"to\":\"p%u\"}\n", i, i);
    same_error(&g, root, &t, OG_LOAD_APPEND, OG_E_BAD_REQUEST, 601);
    free(t.p);

    /* an overwrite of the people alone would leave the committed edges dangling */
    t = (text){0};
    for (unsigned i = 0; i < 400; i++)
        add(&t, "{\"type\":\"Person\",\"data\":{\"name\":\"p%u\"}}\n", i);
    same_error(&g, root, &t, OG_LOAD_OVERWRITE, OG_E_BAD_REQUEST, 0);
    assert_non_null(strstr(last_msg, "dangling"));
    free(t.p);

    og_graph_close(g);
    free(good.p);
    test_sandbox_done(root);

    /* @unique across chunks: such a catalog keeps its set in memory, whatever the budget */
    g = fresh(root, sizeof root, "spill_unique", SCHEMA_UNIQUE);
    t = (text){0};
    for (unsigned i = 0; i < 800; i++)
        add(&t, "{\"type\":\"Person\",\"data\":{\"name\":\"p%u\",\"email\":\"e%u\"}}\n", i, i);
    add(&t, "{\"type\":\"Person\",\"data\":{\"name\":\"late\",\"email\":\"e4\"}}\n");
    same_error(&g, root, &t, OG_LOAD_OVERWRITE, OG_E_KEY_CONFLICT, 801);
    free(t.p);
    og_graph_close(g);
    test_sandbox_done(root);
}

/* The sorter alone: 60,000 records in random order through a 4 KiB buffer (hundreds of runs,
 * merged 32 at a time as they come) read back twice in (key, line) order, every one once, aux
 * intact; in-memory when they fit. */
static void test_sortrun(void **state)
{
    (void)state;
    for (int big = 0; big < 2; big++) {
        core_sortrun *s = NULL;
        assert_og_ok(core_sortrun_new(&s, big ? 4096 : (size_t)16 << 20));
        const unsigned n = 60000;
        uint64_t x = 88172645463325252ull, sum = 0;
        for (unsigned i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            char k[32], a[32];
            int kn = snprintf(k, sizeof k, "k%llu", (unsigned long long)(x % 5000));
            int an = snprintf(a, sizeof a, "a%u", i);
            assert_og_ok(core_sortrun_add(s, k, (size_t)kn, i + 1, a, (size_t)an));
            sum += i + 1;
        }
        assert_false(core_sortrun_increasing(s));
        for (int pass = 0; pass < 2; pass++) {
            core_sortrun_iter *it = NULL;
            assert_og_ok(core_sortrun_iter_open(&it, s));
            char prev[32] = "";
            uint64_t prev_line = 0, got = 0, count = 0;
            for (;;) {
                core_sortrun_rec r;
                bool done;
                assert_og_ok(core_sortrun_iter_next(it, &r, &done));
                if (done) break;
                char k[32], a[32];
                assert_true(r.klen < sizeof k && r.alen < sizeof a);
                memcpy(k, r.key, r.klen);
                k[r.klen] = 0;
                memcpy(a, r.aux, r.alen);
                a[r.alen] = 0;
                int c = strcmp(prev, k);
                assert_true(c < 0 || (c == 0 && prev_line < r.line));
                assert_int_equal(strtoull(a + 1, NULL, 10) + 1, r.line);
                memcpy(prev, k, r.klen + 1);
                prev_line = r.line;
                got += r.line;
                count++;
            }
            core_sortrun_iter_free(it);
            assert_int_equal(count, n);
            assert_int_equal(got, sum);
        }
        if (big)
            assert_true(core_sortrun_runs(s) < 32);
        else
            assert_int_equal(core_sortrun_runs(s), 0);
        core_sortrun_free(s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sortrun),
        cmocka_unit_test(test_spill_bounded),
        cmocka_unit_test(test_spill_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
