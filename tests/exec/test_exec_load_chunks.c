/* Tests of the load in chunks (exec_load with a small chunk size, exec_load_set_chunk_bytes):
 * an input many chunks long, with edges that name nodes of later chunks, loads as exactly one
 * commit holding the same rows as a one-chunk load, in several fragments per table that read
 * and verify; an error on a line of a late chunk names that line and leaves nothing (no
 * commit, no table version, no data file); an overwrite in chunks replaces as one. */
#include "testutil.h"

#include "api/graph_internal.h"
#include "core/error.h"
#include "exec/load.h"
#include "write/write.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *SCHEMA = "node Person {\n"
                            "    name: String @key\n"
                            "    age: I32?\n"
                            "    email: String? @unique\n"
                            "    @range(age, 0..150)\n"
                            "}\n"
                            "node Company { name: String @key }\n"
                            "edge Knows: Person -> Person { since: I32? }\n"
                            "edge WorksAt: Person -> Company @card(0..1)\n";

#define PEOPLE 600
#define CHUNK 2048 /* bytes: the input below is about 30 chunks long */

typedef struct buf {
    char *p;
    size_t n, cap;
} buf;

static void put(buf *b, const char *fmt, ...) CORE_PRINTF(2, 3);
static void put(buf *b, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < sizeof line);
    if (b->n + (size_t)n + 1 > b->cap) {
        b->cap = (b->cap + (size_t)n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->n, line, (size_t)n + 1);
    b->n += (size_t)n;
}

static void put_raw(buf *b, const char *p, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->cap + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = 0;
}

/* People p0..p599 in two halves with Knows edges between them first (they name people of
 * later chunks), companies, and WorksAt edges at the end; every edge has its id, so two loads
 * of it hold the same rows. Returns the number of lines. */
static unsigned gen(buf *b)
{
    unsigned lines = 0;
    for (unsigned i = 0; i < PEOPLE; i++, lines++) {
        if (i == PEOPLE / 2)
            for (unsigned k = 0; k < PEOPLE; k++, lines++)
                put(b,
                    "{\"edge\":\"Knows\",\"from\":\"p%u\",\"to\":\"p%u\",\"data\":{\"id\":\"k%u\"}}"
                    "\n",
                    k, (k * 7 + 1) % PEOPLE, k);
        put(b, "{\"type\":\"Person\",\"data\":{\"name\":\"p%u\",\"age\":%u,\"email\":\"p%u@x\"}}\n",
            i, i % 90, i);
    }
    for (unsigned c = 0; c < 5; c++, lines++)
        put(b, "{\"type\":\"Company\",\"data\":{\"name\":\"c%u\"}}\n", c);
    for (unsigned i = 0; i < PEOPLE; i += 3, lines++)
        put(b, "{\"edge\":\"WorksAt\",\"from\":\"p%u\",\"to\":\"c%u\",\"data\":{\"id\":\"w%u\"}}\n",
            i, i % 5, i);
    return lines;
}

static void make_graph(const char *root)
{
    og_init_options io = OG_INIT_OPTIONS_INIT;
    io.schema_source = SCHEMA;
    og_init_result *ir = NULL;
    assert_og_ok(og_root_init(&ir, root, &io));
    og_init_result_free(ir);
}

/* In chunks (chunk > 0), a type's rows are staged in fragments of FRAG_ROWS as they fill them
 * (write_stream_set_fragment_rows; 1 Mi rows by default, more than these inputs hold). */
#define FRAG_ROWS 64

static int load(og_graph *g, const buf *b, int mode, size_t chunk, og_write_result **out)
{
    exec_load_set_chunk_bytes(chunk);
    write_stream_set_fragment_rows(chunk ? FRAG_ROWS : 0);
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = mode;
    int rc = og_graph_load(out, g, "in.jsonl", b->p, b->n, &lo);
    exec_load_set_chunk_bytes(0);
    write_stream_set_fragment_rows(0);
    return rc;
}

/* The graph's rows as export writes them (sorted by id), as one string. */
static char *export_all(og_graph *g)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    og_export_result *r = NULL;
    assert_og_ok(og_graph_export(&r, f, g, NULL));
    og_export_result_free(r);
    fclose(f);
    return text;
}

/* Fragments and rows of one table at the Lance version a write `r` committed (not the head:
 * automatic maintenance may compact the many fragments of a load in chunks after it). */
static void table_at(og_graph *g, const char *root, const og_write_result *r, const char *alias,
                     uint64_t *fragments, uint64_t *rows)
{
    uint64_t version = 0;
    for (size_t i = 0; i < og_write_result_table_count(r); i++)
        if (!strcmp(og_write_result_table(r, i)->alias, alias))
            version = og_write_result_table(r, i)->to_version;
    assert_true(version > 0);
    og_snapshot_info *s = NULL;
    assert_og_ok(og_graph_snapshot(&s, g, NULL));
    const og_snapshot_table *t = NULL;
    for (size_t i = 0; i < og_snapshot_info_table_count(s); i++)
        if (!strcmp(og_snapshot_info_table(s, i)->alias, alias)) t = og_snapshot_info_table(s, i);
    assert_non_null(t);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", root, t->path);
    og_table *tb = NULL;
    assert_og_ok(og_table_open(&tb, dir, version));
    og_table_info *info = NULL;
    assert_og_ok(og_table_stats(&info, tb));
    *fragments = info->fragments;
    *rows = info->rows;
    og_table_info_free(info);
    og_table_close(tb);
    og_snapshot_info_free(s);
}

/* The head's id and graph-manifest version. */
static void head(og_graph *g, char id[OG_ID_LEN + 1], uint64_t *mver)
{
    og_commit_list *l = NULL;
    assert_og_ok(og_graph_commits(&l, g, NULL));
    const og_commit_info *c = og_commit_list_get(l, 0);
    assert_non_null(c);
    memcpy(id, c->id, OG_ID_LEN + 1);
    *mver = c->manifest_version;
    og_commit_list_free(l);
}

/* The write r made exactly one commit on top of the head (id, mver) seen before it. */
static void one_commit_on(og_graph *g, const og_write_result *r, const char *id, uint64_t mver)
{
    assert_int_equal(og_write_result_manifest_version(r), mver + 1);
    og_commit_list *l = NULL;
    assert_og_ok(og_graph_commits(&l, g, NULL));
    const og_commit_info *mine = NULL;
    for (size_t i = 0; i < og_commit_list_count(l); i++)
        if (!strcmp(og_commit_list_get(l, i)->id, og_write_result_commit_id(r)))
            mine = og_commit_list_get(l, i);
    assert_non_null(mine);
    assert_string_equal(mine->parent, id);
    assert_int_equal(mine->manifest_version, mver + 1);
    og_commit_list_free(l);
}

/* Fragments and rows of one table at the head. */
static void table_facts(og_graph *g, const char *root, const char *alias, uint64_t *fragments,
                        uint64_t *rows, uint64_t *version)
{
    og_snapshot_info *s = NULL;
    assert_og_ok(og_graph_snapshot(&s, g, NULL));
    const og_snapshot_table *t = NULL;
    for (size_t i = 0; i < og_snapshot_info_table_count(s); i++)
        if (!strcmp(og_snapshot_info_table(s, i)->alias, alias)) t = og_snapshot_info_table(s, i);
    assert_non_null(t);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", root, t->path);
    og_table *tb = NULL;
    assert_og_ok(og_table_open(&tb, dir, t->version));
    og_table_info *info = NULL;
    assert_og_ok(og_table_stats(&info, tb));
    *fragments = info->fragments;
    *rows = info->rows;
    *version = t->version;
    og_table_info_free(info);
    og_table_close(tb);
    og_snapshot_info_free(s);
}

/* Files under root/<every table>/data/, counted (what a failed load must not leave). */
static size_t count_data_files(const char *dir)
{
    size_t n = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char sub[1024];
        snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
        if (!strcmp(e->d_name, "data")) {
            DIR *dd = opendir(sub);
            if (!dd) continue;
            struct dirent *f;
            while ((f = readdir(dd)))
                n += f->d_name[0] != '.';
            closedir(dd);
        } else if (e->d_type == DT_DIR) {
            n += count_data_files(sub);
        }
    }
    closedir(d);
    return n;
}

static void test_chunks_one_commit(void **state)
{
    (void)state;
    char one[TEST_SANDBOX_PATH], many[TEST_SANDBOX_PATH];
    test_sandbox_new(one, sizeof one, "chunk1");
    test_sandbox_new(many, sizeof many, "chunkn");
    make_graph(one);
    make_graph(many);
    buf b = {0};
    unsigned lines = gen(&b);
    assert_true(b.n > 20 * CHUNK);

    og_graph *g1 = NULL, *gn = NULL;
    assert_og_ok(og_graph_open(&g1, one, NULL));
    assert_og_ok(og_graph_open(&gn, many, NULL));
    char hid[OG_ID_LEN + 1];
    uint64_t hver;
    head(gn, hid, &hver);
    og_write_result *r1 = NULL, *rn = NULL;
    assert_og_ok(load(g1, &b, OG_LOAD_APPEND, 0, &r1));
    assert_og_ok(load(gn, &b, OG_LOAD_APPEND, CHUNK, &rn));
    /* exactly one commit, and the same counts */
    one_commit_on(gn, rn, hid, hver);
    assert_int_equal(og_write_result_count(rn, OG_WRITE_LINES), lines);
    for (int k = OG_WRITE_LINES; k <= OG_WRITE_EDGE_TYPES; k++)
        assert_int_equal(og_write_result_count(rn, k), og_write_result_count(r1, k));
    assert_int_equal(og_write_result_count(rn, OG_WRITE_NODES), PEOPLE + 5);
    assert_int_equal(og_write_result_count(rn, OG_WRITE_NODE_TYPES), 2);
    assert_int_equal(og_write_result_count(rn, OG_WRITE_EDGE_TYPES), 2);
    assert_int_equal(og_write_result_table_count(rn), 4);

    /* several fragments per table in the one version the load made, against one */
    uint64_t f1, fn, n1, nn;
    table_at(g1, one, r1, "node:Person", &f1, &n1);
    table_at(gn, many, rn, "node:Person", &fn, &nn);
    assert_int_equal(n1, PEOPLE);
    assert_int_equal(nn, PEOPLE);
    assert_int_equal(f1, 1);
    assert_true(fn > 5);
    table_at(gn, many, rn, "edge:Knows", &fn, &nn);
    assert_int_equal(nn, PEOPLE);
    assert_true(fn > 5);
    og_write_result_free(r1);
    og_write_result_free(rn);

    /* the same rows */
    char *e1 = export_all(g1), *en = export_all(gn);
    assert_string_equal(en, e1);
    free(e1);
    free(en);
    og_graph_close(g1);
    og_graph_close(gn);

    /* the multi-fragment graph verifies */
    og_verify_report *vr = NULL;
    assert_og_ok(og_root_verify(&vr, many, NULL));
    assert_int_equal(og_verify_report_problem_count(vr), 0);
    og_verify_report_free(vr);

    /* an overwrite in chunks replaces each type present as one commit */
    buf o = {0};
    for (unsigned i = 0; i < 200; i++)
        put(&o, "{\"type\":\"Person\",\"data\":{\"name\":\"q%u\",\"age\":1}}\n", i);
    assert_og_ok(og_graph_open(&gn, many, NULL));
    /* the Knows and WorksAt edges name the people replaced: the overwrite must refuse */
    og_write_result *ro = NULL;
    head(gn, hid, &hver);
    assert_int_equal(load(gn, &o, OG_LOAD_OVERWRITE, 512, &ro), OG_E_BAD_REQUEST);
    char hid2[OG_ID_LEN + 1];
    uint64_t hver2;
    head(gn, hid2, &hver2);
    assert_string_equal(hid2, hid);
    for (unsigned i = 0; i < PEOPLE; i++)
        put(&o, "{\"edge\":\"Knows\",\"from\":\"q%u\",\"to\":\"q%u\"}\n", i % 200, (i + 1) % 200);
    for (unsigned i = 0; i < 5; i++)
        put(&o, "{\"type\":\"Company\",\"data\":{\"name\":\"d%u\"}}\n", i);
    for (unsigned i = 0; i < 200; i += 2)
        put(&o, "{\"edge\":\"WorksAt\",\"from\":\"q%u\",\"to\":\"d%u\"}\n", i, i % 5);
    assert_og_ok(load(gn, &o, OG_LOAD_OVERWRITE, 512, &ro));
    one_commit_on(gn, ro, hid, hver);
    table_at(gn, many, ro, "node:Person", &fn, &nn);
    assert_int_equal(nn, 200);
    assert_true(fn > 1);
    table_at(gn, many, ro, "edge:Knows", &fn, &nn);
    assert_int_equal(nn, PEOPLE);
    table_at(gn, many, ro, "node:Company", &fn, &nn);
    assert_int_equal(nn, 5);
    og_write_result_free(ro);
    og_graph_close(gn);
    assert_og_ok(og_root_verify(&vr, many, NULL));
    assert_int_equal(og_verify_report_problem_count(vr), 0);
    og_verify_report_free(vr);

    free(b.p);
    free(o.p);
    test_sandbox_done(one);
    test_sandbox_done(many);
}

/* A load of `good` followed by `bad` (one line, on line `line`), in chunks, fails with code and
 * names the line, and leaves the graph as it was: no commit, no table version, no data file. */
static void late_error(const char *root, const buf *good, unsigned good_lines, const char *bad,
                       int code, int want_line)
{
    buf b = {0};
    put_raw(&b, good->p, good->n);
    put_raw(&b, bad, strlen(bad));
    /* a few good lines after it, so the bad one is not the last */
    for (unsigned i = 0; i < 20; i++)
        put(&b, "{\"type\":\"Company\",\"data\":{\"name\":\"z%u\"}}\n", i);
    og_graph *g = NULL;
    assert_og_ok(og_graph_open(&g, root, NULL));
    char hid[OG_ID_LEN + 1], hid2[OG_ID_LEN + 1];
    uint64_t hver, hver2;
    head(g, hid, &hver);
    size_t files = count_data_files(root);
    uint64_t f0, n0, v0;
    table_facts(g, root, "node:Person", &f0, &n0, &v0);
    /* the one-chunk load's error, then the same in chunks */
    og_write_result *r = NULL;
    int rc1 = load(g, &b, OG_LOAD_APPEND, 0, &r);
    assert_null(r);
    char msg1[1024];
    snprintf(msg1, sizeof msg1, "%s", og_error_last()->message);
    int line1 = og_error_last()->line;
    int rc = load(g, &b, OG_LOAD_APPEND, CHUNK, &r);
    assert_null(r);
    const og_error *e = og_error_last();
    if (rc != code || e->line != (want_line ? want_line : (int)good_lines + 1))
        fail_msg("rc %d line %d: %s", rc, e->line, e->message);
    assert_int_equal(rc1, rc);
    assert_int_equal(line1, e->line);
    assert_string_equal(msg1, e->message);
    assert_non_null(e->file);
    assert_string_equal(e->file, "in.jsonl");
    head(g, hid2, &hver2);
    assert_string_equal(hid2, hid);
    assert_int_equal(hver2, hver);
    uint64_t f1, n1, v1;
    table_facts(g, root, "node:Person", &f1, &n1, &v1);
    assert_int_equal(v1, v0);
    assert_int_equal(n1, n0);
    assert_int_equal(count_data_files(root), files);
    og_graph_close(g);
    free(b.p);
}

static void test_chunks_late_error(void **state)
{
    (void)state;
    char root[TEST_SANDBOX_PATH];
    test_sandbox_new(root, sizeof root, "chunkerr");
    make_graph(root);
    buf good = {0};
    unsigned lines = gen(&good);
    /* a value: @range, decided by the chunk's own rows */
    late_error(root, &good, lines,
               "{\"type\":\"Person\",\"data\":{\"name\":\"late\",\"age\":200}}\n", OG_E_BAD_REQUEST,
               0);
    /* a key given twice, the first time ~30 chunks earlier */
    late_error(root, &good, lines, "{\"type\":\"Person\",\"data\":{\"name\":\"p3\"}}\n",
               OG_E_KEY_CONFLICT, 0);
    /* @unique against a value of an early chunk */
    late_error(root, &good, lines,
               "{\"type\":\"Person\",\"data\":{\"name\":\"late\",\"email\":\"p1@x\"}}\n",
               OG_E_KEY_CONFLICT, 0);
    /* an edge to a node no chunk has */
    late_error(
        root, &good, lines,
        "{\"edge\":\"Knows\",\"from\":\"p1\",\"to\":\"nobody\",\"data\":{\"id\":\"bad1\"}}\n",
        OG_E_BAD_REQUEST, 0);
    /* @card(0..1): p0 works at c0 already; the error names p0's first WorksAt line, in an
     * early chunk, as a one-chunk load does */
    late_error(root, &good, lines,
               "{\"edge\":\"WorksAt\",\"from\":\"p0\",\"to\":\"c1\",\"data\":{\"id\":\"bad2\"}}\n",
               OG_E_BAD_REQUEST, (int)(lines - PEOPLE / 3 + 1));
    /* JSON syntax */
    late_error(root, &good, lines, "{\"type\":\"Person\",\n", OG_E_BAD_REQUEST, 0);
    free(good.p);
    test_sandbox_done(root);
}

/* ---- merge mode (upserts) in chunks ---- */

/* The load as exec_load made it before merges streamed, and as it still does for other
 * branches: the whole file parsed into one change set, then one write_changes. */
static int load_whole(og_graph *g, const buf *b, int mode, const char *branch, exec_load_stats *st)
{
    graph_change_set cs;
    memset(&cs, 0, sizeof cs);
    exec_load_mode m = mode == OG_LOAD_MERGE    ? EXEC_LOAD_MERGE
                       : mode == OG_LOAD_APPEND ? EXEC_LOAD_APPEND
                                                : EXEC_LOAD_OVERWRITE;
    int rc = exec_load_parse(&cs, g->h->catalog, b->p, b->n, "in.jsonl", m, st, NULL, NULL);
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = branch;
    write_result wr;
    if (rc == 0) rc = write_changes(g->w, WRITE_KIND_LOAD, &cs, &wo, &wr);
    graph_change_set_clear(&cs);
    return rc;
}

/* Upserts against gen()'s graph: p0..p299 again with other ages (existing ids), new people
 * n0..n199, the Knows edges k0..k199 again with other endpoints (existing edge ids), new
 * Knows edges, and the WorksAt edges of p0, p3, ... p147 moved to another company (@card(0..1)
 * holds: the upsert replaces each person's one edge). Returns the number of lines. */
static unsigned gen_merge(buf *b)
{
    unsigned lines = 0;
    for (unsigned i = 0; i < 300; i++, lines++) {
        put(b, "{\"type\":\"Person\",\"data\":{\"name\":\"p%u\",\"age\":%u,\"email\":\"p%u@x\"}}\n",
            i, (i + 11) % 90, i);
        if (i % 3 == 0 && i < 150) {
            put(b,
                "{\"edge\":\"WorksAt\",\"from\":\"p%u\",\"to\":\"c%u\",\"data\":{\"id\":\"w%u\"}}"
                "\n",
                i, (i + 1) % 5, i);
            lines++;
        }
    }
    for (unsigned i = 0; i < 200; i++, lines++)
        put(b, "{\"edge\":\"Knows\",\"from\":\"n%u\",\"to\":\"p%u\",\"data\":{\"id\":\"k%u\"}}\n",
            i, i, i);
    for (unsigned i = 0; i < 200; i++, lines++)
        put(b, "{\"type\":\"Person\",\"data\":{\"name\":\"n%u\",\"age\":5}}\n", i);
    for (unsigned i = 0; i < 100; i++, lines++)
        put(b, "{\"edge\":\"Knows\",\"from\":\"n%u\",\"to\":\"n%u\",\"data\":{\"id\":\"nk%u\"}}\n",
            i, (i + 1) % 200, i);
    return lines;
}

/* A merge of gen_merge() in chunks on one graph and read whole on another, both loaded with
 * gen() first: the same counts, the same rows, one commit, in several fragments. */
static void test_chunks_merge(void **state)
{
    (void)state;
    char one[TEST_SANDBOX_PATH], many[TEST_SANDBOX_PATH];
    test_sandbox_new(one, sizeof one, "merge1");
    test_sandbox_new(many, sizeof many, "mergen");
    make_graph(one);
    make_graph(many);
    buf b = {0}, m = {0};
    gen(&b);
    unsigned lines = gen_merge(&m);
    assert_true(m.n > 15 * CHUNK);
    og_graph *g1 = NULL, *gn = NULL;
    assert_og_ok(og_graph_open(&g1, one, NULL));
    assert_og_ok(og_graph_open(&gn, many, NULL));
    og_write_result *r = NULL;
    assert_og_ok(load(g1, &b, OG_LOAD_APPEND, 0, &r));
    og_write_result_free(r);
    assert_og_ok(load(gn, &b, OG_LOAD_APPEND, 0, &r));
    og_write_result_free(r);

    exec_load_stats st;
    assert_og_ok(load_whole(g1, &m, OG_LOAD_MERGE, NULL, &st));
    char hid[OG_ID_LEN + 1];
    uint64_t hver;
    head(gn, hid, &hver);
    og_write_result *rn = NULL;
    assert_og_ok(load(gn, &m, OG_LOAD_MERGE, CHUNK, &rn));
    one_commit_on(gn, rn, hid, hver);
    assert_int_equal(og_write_result_count(rn, OG_WRITE_LINES), lines);
    assert_int_equal(og_write_result_count(rn, OG_WRITE_LINES), st.lines);
    assert_int_equal(og_write_result_count(rn, OG_WRITE_NODES), st.nodes);
    assert_int_equal(og_write_result_count(rn, OG_WRITE_EDGES), st.edges);
    assert_int_equal(og_write_result_count(rn, OG_WRITE_NODE_TYPES), st.node_types);
    assert_int_equal(og_write_result_count(rn, OG_WRITE_EDGE_TYPES), st.edge_types);
    assert_int_equal(og_write_result_table_count(rn), 3);
    /* staged chunk by chunk: many fragments (read whole, the upsert writes two) */
    uint64_t fn, nn;
    table_at(gn, many, rn, "node:Person", &fn, &nn);
    assert_int_equal(nn, PEOPLE + 200);
    assert_true(fn > 5);
    table_at(gn, many, rn, "edge:Knows", &fn, &nn);
    assert_int_equal(nn, PEOPLE + 100);
    table_at(gn, many, rn, "edge:WorksAt", &fn, &nn);
    assert_int_equal(nn, PEOPLE / 3);
    og_write_result_free(rn);
    char *e1 = export_all(g1), *en = export_all(gn);
    assert_string_equal(en, e1);
    assert_non_null(strstr(en, "\"name\":\"p7\",\"age\":18")); /* upserted */
    free(e1);
    free(en);
    og_graph_close(g1);
    og_graph_close(gn);
    og_verify_report *vr = NULL;
    assert_og_ok(og_root_verify(&vr, many, NULL));
    assert_int_equal(og_verify_report_problem_count(vr), 0);
    og_verify_report_free(vr);
    free(b.p);
    free(m.p);
    test_sandbox_done(one);
    test_sandbox_done(many);
}

/* A merge of `good` then `bad` (on line want_line, 0: the line after good's), in chunks: the
 * error (code, message, line) of the load read whole, and nothing left. */
static void merge_error(const char *root, const buf *good, unsigned good_lines, const char *bad,
                        int code, int want_line, const char *want_msg)
{
    buf b = {0};
    put_raw(&b, good->p, good->n);
    put_raw(&b, bad, strlen(bad));
    for (unsigned i = 0; i < 20; i++)
        put(&b, "{\"type\":\"Company\",\"data\":{\"name\":\"z%u\"}}\n", i);
    og_graph *g = NULL;
    assert_og_ok(og_graph_open(&g, root, NULL));
    char hid[OG_ID_LEN + 1], hid2[OG_ID_LEN + 1];
    uint64_t hver, hver2;
    head(g, hid, &hver);
    size_t files = count_data_files(root);
    exec_load_stats st;
    int rc1 = load_whole(g, &b, OG_LOAD_MERGE, NULL, &st);
    char msg1[1024];
    snprintf(msg1, sizeof msg1, "%s", og_error_last()->message);
    int line1 = og_error_last()->line;
    og_write_result *r = NULL;
    int rc = load(g, &b, OG_LOAD_MERGE, CHUNK, &r);
    assert_null(r);
    const og_error *e = og_error_last();
    if (rc != code || (want_line >= 0 && e->line != (want_line ? want_line : (int)good_lines + 1)))
        fail_msg("rc %d line %d: %s", rc, e->line, e->message);
    assert_int_equal(rc1, rc);
    assert_int_equal(line1, e->line);
    assert_string_equal(msg1, e->message);
    if (want_msg) assert_string_equal(e->message, want_msg);
    head(g, hid2, &hver2);
    assert_string_equal(hid2, hid);
    assert_int_equal(hver2, hver);
    assert_int_equal(count_data_files(root), files);
    og_graph_close(g);
    free(b.p);
}

static void test_chunks_merge_errors(void **state)
{
    (void)state;
    char root[TEST_SANDBOX_PATH];
    test_sandbox_new(root, sizeof root, "mergeerr");
    make_graph(root);
    buf b = {0}, m = {0};
    gen(&b);
    unsigned lines = gen_merge(&m);
    og_graph *g = NULL;
    og_write_result *r = NULL;
    assert_og_ok(og_graph_open(&g, root, NULL));
    assert_og_ok(load(g, &b, OG_LOAD_APPEND, 0, &r));
    og_write_result_free(r);
    og_graph_close(g);
    char want[256];
    /* an existing id upserted twice, the first time ~20 chunks earlier (line 5: p3 follows
     * p0, w0, p1, p2): an error, as read whole, not the last row winning */
    snprintf(want, sizeof want,
             "line %u: Person: id \"p3\" appears twice in the input (lines 5 and %u)", lines + 1,
             lines + 1);
    merge_error(root, &m, lines, "{\"type\":\"Person\",\"data\":{\"name\":\"p3\",\"age\":1}}\n",
                OG_E_KEY_CONFLICT, 0, want);
    /* a new id given twice across chunks */
    merge_error(root, &m, lines, "{\"type\":\"Person\",\"data\":{\"name\":\"n9\",\"age\":1}}\n",
                OG_E_KEY_CONFLICT, 0, NULL);
    /* an existing edge id upserted twice */
    merge_error(root, &m, lines,
                "{\"edge\":\"Knows\",\"from\":\"p1\",\"to\":\"p2\",\"data\":{\"id\":\"k5\"}}\n",
                OG_E_KEY_CONFLICT, 0, NULL);
    /* a value error in the last chunk, after a chunk with a key given twice: the value's
     * error, as read whole (row checks come before the whole set's) */
    buf d = {0};
    put_raw(&d, m.p, m.n);
    put(&d, "{\"type\":\"Person\",\"data\":{\"name\":\"p0\",\"age\":3}}\n");
    merge_error(root, &d, lines + 1,
                "{\"type\":\"Person\",\"data\":{\"name\":\"late\",\"age\":200}}\n",
                OG_E_BAD_REQUEST, 0, NULL);
    /* an upserted edge to a node no chunk has and the table does not hold */
    merge_error(
        root, &m, lines,
        "{\"edge\":\"Knows\",\"from\":\"p1\",\"to\":\"nobody\",\"data\":{\"id\":\"bad9\"}}\n",
        OG_E_BAD_REQUEST, 0, NULL);
    /* @card(0..1): p1 works at c1 already and the upsert adds another edge */
    merge_error(root, &m, lines,
                "{\"edge\":\"WorksAt\",\"from\":\"p3\",\"to\":\"c2\",\"data\":{\"id\":\"new\"}}\n",
                OG_E_BAD_REQUEST, -1, NULL);
    free(b.p);
    free(m.p);
    free(d.p);
    test_sandbox_done(root);
}

/* ---- loads on another branch in chunks ---- */

static int load_on(og_graph *g, const buf *b, int mode, const char *branch, const char *from,
                   size_t chunk, og_write_result **out)
{
    exec_load_set_chunk_bytes(chunk);
    write_stream_set_fragment_rows(chunk ? FRAG_ROWS : 0);
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = mode;
    lo.branch = branch;
    lo.from = from;
    int rc = og_graph_load(out, g, "in.jsonl", b->p, b->n, &lo);
    exec_load_set_chunk_bytes(0);
    write_stream_set_fragment_rows(0);
    return rc;
}

static char *export_branch(og_graph *g, const char *branch)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    og_export_options eo = OG_EXPORT_OPTIONS_INIT;
    eo.branch = branch;
    og_export_result *r = NULL;
    assert_og_ok(og_graph_export(&r, f, g, &eo));
    og_export_result_free(r);
    fclose(f);
    return text;
}

/* Data files of the Person table's fork on `branch`. */
static size_t fork_files(og_graph *g, const char *root, const char *branch)
{
    og_snapshot_info *s = NULL;
    assert_og_ok(og_graph_snapshot(&s, g, NULL));
    char dir[1024] = "";
    for (size_t i = 0; i < og_snapshot_info_table_count(s); i++)
        if (!strcmp(og_snapshot_info_table(s, i)->alias, "node:Person"))
            snprintf(dir, sizeof dir, "%s/%s/tree/%s", root, og_snapshot_info_table(s, i)->path,
                     branch);
    og_snapshot_info_free(s);
    return count_data_files(dir);
}

static bool has_branch(og_graph *g, const char *name)
{
    og_branch_list *l = NULL;
    assert_og_ok(og_graph_branches(&l, g));
    bool found = false;
    for (size_t i = 0; i < og_branch_list_count(l); i++)
        found |= !strcmp(og_branch_list_get(l, i)->name, name);
    og_branch_list_free(l);
    return found;
}

/* Loads on a branch in chunks against the same loads read whole: a first touch (forks made in
 * apply, the input read again: people without ids, edges with minted ids), then a merge onto
 * the tables the branch has forked already; the same counts and rows, main untouched. */
static void test_chunks_branch(void **state)
{
    (void)state;
    char one[TEST_SANDBOX_PATH], many[TEST_SANDBOX_PATH];
    test_sandbox_new(one, sizeof one, "branch1");
    test_sandbox_new(many, sizeof many, "branchn");
    make_graph(one);
    make_graph(many);
    buf b = {0}, m = {0}, a = {0};
    gen(&b);
    unsigned lines = gen_merge(&m);
    /* new people, Knows edges without ids (minted: the second read must mint the same) */
    for (unsigned i = 0; i < 300; i++)
        put(&a, "{\"type\":\"Person\",\"data\":{\"name\":\"b%u\",\"age\":%u}}\n", i, i % 50);
    for (unsigned i = 0; i < 600; i++)
        put(&a, "{\"edge\":\"Knows\",\"from\":\"b%u\",\"to\":\"p%u\"}\n", i % 300, i);
    og_graph *g1 = NULL, *gn = NULL;
    assert_og_ok(og_graph_open(&g1, one, NULL));
    assert_og_ok(og_graph_open(&gn, many, NULL));
    og_write_result *r = NULL;
    assert_og_ok(load(g1, &b, OG_LOAD_APPEND, 0, &r));
    og_write_result_free(r);
    assert_og_ok(load(gn, &b, OG_LOAD_APPEND, 0, &r));
    og_write_result_free(r);
    char *main1 = export_all(gn);
    og_branch_info *bi = NULL;
    assert_og_ok(og_graph_create_branch(&bi, g1, "feat", NULL));
    og_branch_info_free(bi);

    /* a first touch, with --from: the branch made for the load */
    exec_load_stats st;
    assert_og_ok(load_whole(g1, &a, OG_LOAD_APPEND, "feat", &st));
    og_write_result *rn = NULL;
    assert_og_ok(load_on(gn, &a, OG_LOAD_APPEND, "feat", "main", CHUNK, &rn));
    assert_int_equal(og_write_result_count(rn, OG_WRITE_NEW_BRANCH), 1);
    assert_int_equal(og_write_result_count(rn, OG_WRITE_LINES), st.lines);
    assert_int_equal(og_write_result_count(rn, OG_WRITE_NODES), st.nodes);
    assert_int_equal(og_write_result_count(rn, OG_WRITE_EDGES), st.edges);
    assert_int_equal(og_write_result_count(rn, OG_WRITE_NODE_TYPES), st.node_types);
    assert_int_equal(og_write_result_count(rn, OG_WRITE_EDGE_TYPES), st.edge_types);
    assert_int_equal(og_write_result_table_count(rn), 2);
    og_write_result_free(rn);
    /* staged chunk by chunk on the fork: many files (read whole: one) */
    size_t files_first = fork_files(gn, many, "feat");
    assert_true(files_first > 3);
    char *e1 = export_branch(g1, "feat"), *en = export_branch(gn, "feat");
    /* the same rows, but the minted edge ids differ between the two graphs: compare counts
     * of lines and the people */
    size_t l1 = 0, ln = 0;
    for (const char *p = e1; *p; p++)
        l1 += *p == '\n';
    for (const char *p = en; *p; p++)
        ln += *p == '\n';
    assert_int_equal(l1, ln);
    assert_non_null(strstr(en, "\"name\":\"b299\""));
    free(e1);
    free(en);

    /* a merge onto the branch's own forks (staged in prepare), with first touches of WorksAt */
    assert_og_ok(load_whole(g1, &m, OG_LOAD_MERGE, "feat", &st));
    assert_og_ok(load_on(gn, &m, OG_LOAD_MERGE, "feat", NULL, CHUNK, &rn));
    assert_int_equal(og_write_result_count(rn, OG_WRITE_LINES), lines);
    assert_int_equal(og_write_result_count(rn, OG_WRITE_NODES), st.nodes);
    assert_int_equal(og_write_result_count(rn, OG_WRITE_EDGES), st.edges);
    assert_int_equal(og_write_result_table_count(rn), 3);
    og_write_result_free(rn);
    assert_true(fork_files(gn, many, "feat") > files_first + 3);
    e1 = export_branch(g1, "feat");
    en = export_branch(gn, "feat");
    l1 = ln = 0;
    for (const char *p = e1; *p; p++)
        l1 += *p == '\n';
    for (const char *p = en; *p; p++)
        ln += *p == '\n';
    assert_int_equal(l1, ln);
    assert_non_null(strstr(en, "\"name\":\"p7\",\"age\":18"));
    free(e1);
    free(en);
    /* main is as it was */
    char *main2 = export_all(gn);
    assert_string_equal(main2, main1);
    free(main1);
    free(main2);

    /* refused loads with --from leave nothing: no branch, no file. Late in the input: a key
     * given twice (found by the whole-set check), an edge to nobody. (Closed and opened
     * again first: the maintenance the merge queued has run.) */
    og_graph_close(gn);
    assert_og_ok(og_graph_open(&gn, many, NULL));
    size_t files = count_data_files(many);
    buf d = {0};
    put_raw(&d, a.p, a.n);
    put(&d, "{\"type\":\"Person\",\"data\":{\"name\":\"b3\",\"age\":1}}\n");
    rn = NULL;
    assert_int_equal(load_on(gn, &d, OG_LOAD_APPEND, "nope", "main", CHUNK, &rn),
                     OG_E_KEY_CONFLICT);
    assert_null(rn);
    char want[256];
    snprintf(want, sizeof want,
             "line %u: Person: id \"b3\" appears twice in the input (lines 4 and %u)", 901, 901);
    assert_string_equal(og_error_last()->message, want);
    assert_false(has_branch(gn, "nope"));
    assert_int_equal(count_data_files(many), files);
    d.n = 0;
    put_raw(&d, a.p, a.n);
    put(&d, "{\"edge\":\"Knows\",\"from\":\"b1\",\"to\":\"nobody\"}\n");
    assert_int_equal(load_on(gn, &d, OG_LOAD_MERGE, "nope", "main", CHUNK, &rn), OG_E_BAD_REQUEST);
    assert_int_equal(og_error_last()->line, 901);
    assert_false(has_branch(gn, "nope"));
    assert_int_equal(count_data_files(many), files);
    og_graph_close(g1);
    og_graph_close(gn);
    og_verify_report *vr = NULL;
    assert_og_ok(og_root_verify(&vr, many, NULL));
    assert_int_equal(og_verify_report_problem_count(vr), 0);
    og_verify_report_free(vr);
    free(b.p);
    free(m.p);
    free(a.p);
    free(d.p);
    test_sandbox_done(one);
    test_sandbox_done(many);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunks_one_commit), cmocka_unit_test(test_chunks_late_error),
        cmocka_unit_test(test_chunks_merge),      cmocka_unit_test(test_chunks_merge_errors),
        cmocka_unit_test(test_chunks_branch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
