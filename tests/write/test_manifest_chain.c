/* Checksummed, chained graph-manifest versions and checksummed audit records (issue 33, F2):
 *   - one flipped byte anywhere in the newest graph-manifest version (the middle, the footer,
 *     a fragment's data-file name, the checksum entry's value or key) makes reads and writes at
 *     the head fail OG_E_CORRUPT naming the file and the remedy; nothing is acknowledged on top
 *     of it, and reads --at older intact commits still work;
 *   - the same on a branch's newest version (main is unaffected);
 *   - a handle that holds version N and finds N+1 checks N+1 and that N+1 names N as parent;
 *   - a graph written by a build before checksums still opens, reads and writes, and its next
 *     write starts the chain;
 *   - a flipped byte in an audit record is reported OG_E_CORRUPT when the log is read. */
#include "write_fixture.h"

#include "lance/manifest.h"
#include "lance/txn.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *SCHEMA = "node Person {\n"
                            "    name: String @key\n"
                            "    age: I32?\n"
                            "}\n";

static const char *LOADS[] = {
    "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":1}}\n",
    "{\"type\":\"Person\",\"data\":{\"name\":\"bob\",\"age\":2}}\n",
    "{\"type\":\"Person\",\"data\":{\"name\":\"cid\",\"age\":3}}\n",
};

static const char *Q_PEOPLE =
    "query q() { match { $p: Person } return { $p.name, $p.age } order { $p.name asc } }";

/* ---- helpers -------------------------------------------------------------------------------- */

static int load_on(const char *root, const char *branch, const char *line)
{
    og_graph *g = NULL;
    int rc = og_graph_open(&g, root, NULL);
    if (rc != 0) return rc;
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = OG_LOAD_MERGE;
    lo.branch = branch;
    og_write_result *r = NULL;
    rc = og_graph_load(&r, g, "x.jsonl", line, strlen(line), &lo);
    og_write_result_free(r);
    og_graph_close(g);
    return rc;
}

/* Genesis plus one commit per LOADS entry: graph-manifest versions 1..4. */
static void make_graph(const char *root)
{
    og_init_options io = OG_INIT_OPTIONS_INIT;
    io.schema_source = SCHEMA;
    og_init_result *ir = NULL;
    assert_og_ok(og_root_init(&ir, root, &io));
    og_init_result_free(ir);
    for (size_t i = 0; i < sizeof LOADS / sizeof LOADS[0]; i++)
        assert_og_ok(load_on(root, NULL, LOADS[i]));
}

/* The file of version v in a manifest directory (V2 names count down from UINT64_MAX). */
static void version_path(char *out, size_t cap, const char *dir, uint64_t v)
{
    snprintf(out, cap, "%s/_versions/%020llu.manifest", dir, (unsigned long long)(UINT64_MAX - v));
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static void flip(const char *path, size_t off)
{
    size_t len = 0;
    unsigned char *b = slurp(path, &len);
    assert_true(off < len);
    b[off] ^= 0x01;
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, len, f), len);
    fclose(f);
    free(b);
}

/* Offset of the last (or first) occurrence of s in the file, or -1. */
static long find_in(const char *path, const char *s, bool last)
{
    size_t len = 0, n = strlen(s);
    unsigned char *b = slurp(path, &len);
    long at = -1;
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(b + i, s, n) == 0) {
            at = (long)i;
            if (!last) break;
        }
    free(b);
    return at;
}

static char *people(og_graph *g, const char *branch, const char *at)
{
    og_query_options qo = OG_QUERY_OPTIONS_INIT;
    qo.source = Q_PEOPLE;
    qo.at = at;
    qo.branch = branch;
    og_result *r = NULL;
    if (og_graph_query(&r, g, &qo) != 0) return NULL;
    size_t cap = 4096, n = 0;
    char *out = calloc(1, cap);
    assert_non_null(out);
    for (uint64_t i = 0; i < og_result_row_count(r); i++) {
        size_t len = 0;
        const char *j = og_result_row_json(r, i, &len);
        assert_true(n + len + 2 < cap);
        memcpy(out + n, j, len);
        n += len;
        out[n++] = '\n';
    }
    og_result_free(r);
    return out;
}

static og_graph *open_ro(const char *root)
{
    og_open_options oo = OG_OPEN_OPTIONS_INIT;
    oo.read_only = 1;
    og_graph *g = NULL;
    assert_og_ok(og_graph_open(&g, root, &oo));
    return g;
}

/* The last error is typed corrupt and names `name` and the remedy. */
static void assert_corrupt_naming(int rc, const char *name)
{
    if (rc != OG_E_CORRUPT)
        fail_msg("expected corrupt naming %s, got %s: %s", name, og_code_name(rc),
                 og_error_last()->message);
    if (!strstr(og_error_last()->message, name))
        fail_msg("the error does not name %s: %s", name, og_error_last()->message);
    assert_non_null(strstr(og_error_last()->message, "omnigraph repair"));
}

/* ---- the newest version of main ------------------------------------------------------------ */

typedef struct spot {
    const char *what;
    const char *needle; /* flip near the last occurrence of this; NULL: at `off` from the end */
    long delta;         /* from the needle (or, without one: negative from the end; 0: middle) */
} spot;

static void test_flip_newest(void **state)
{
    (void)state;
    char dir[256], root[512];
    test_sandbox_new(dir, sizeof dir, "chain-head");
    snprintf(root, sizeof root, "%s/g", dir);
    make_graph(root);
    og_graph *g = open_ro(root);
    char *before_v3 = people(g, NULL, "3");
    assert_non_null(before_v3);
    og_graph_close(g);

    const spot spots[] = {
        {"the middle", NULL, 0},
        {"the footer's version (no decoder reads it)", NULL, -6},
        {"the last fragment's data-file name", ".lance", -3},
        {"the checksum entry's self digits", "xxh3:", 8},
        {"the checksum entry's key", "omnigraph.chain", 4},
    };
    og_set_log(NULL, NULL, OG_LOG_ERROR);
    for (size_t k = 0; k < sizeof spots / sizeof spots[0]; k++) {
        char copy[600], cmd[1400], mdir[700], v4[800], v5[800];
        snprintf(copy, sizeof copy, "%s/c%zu", dir, k);
        snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", root, copy);
        assert_int_equal(system(cmd), 0);
        snprintf(mdir, sizeof mdir, "%s/__manifest.lance", copy);
        version_path(v4, sizeof v4, mdir, 4);
        version_path(v5, sizeof v5, mdir, 5);
        size_t len = 0;
        free(slurp(v4, &len));
        long off;
        if (spots[k].needle) {
            long at = find_in(v4, spots[k].needle, true);
            if (at < 0) fail_msg("%s: '%s' is not in %s", spots[k].what, spots[k].needle, v4);
            off = at + spots[k].delta;
        } else {
            off = spots[k].delta ? (long)len + spots[k].delta : (long)len / 2;
        }
        flip(v4, (size_t)off);
        const char *name = strrchr(v4, '/') + 1;

        g = open_ro(copy);
        og_snapshot_info *si = NULL;
        int rc = og_graph_snapshot(&si, g, NULL);
        og_snapshot_info_free(si);
        if (rc != OG_E_CORRUPT)
            fail_msg("flip in %s at %ld: head snapshot %s", spots[k].what, off, og_code_name(rc));
        assert_corrupt_naming(rc, name);
        assert_null(people(g, NULL, NULL));
        assert_corrupt_naming(og_error_last()->code, name);
        char *at3 = people(g, NULL, "3"); /* older intact commits still read */
        assert_non_null(at3);
        assert_string_equal(at3, before_v3);
        free(at3);
        og_graph_close(g);

        /* A write is refused the same way, and nothing lands on top of the damage. */
        rc = load_on(copy, NULL, "{\"type\":\"Person\",\"data\":{\"name\":\"dan\",\"age\":4}}\n");
        assert_corrupt_naming(rc, name);
        assert_false(exists(v5));
        test_rmrf(copy);
    }
    og_set_log(NULL, NULL, OG_LOG_WARN);
    free(before_v3);
    test_sandbox_done(dir);
}

/* ---- the newest version of a branch -------------------------------------------------------- */

static void test_flip_branch_newest(void **state)
{
    (void)state;
    char dir[256], root[512], bdir[700], v5[800], v6[800];
    test_sandbox_new(dir, sizeof dir, "chain-branch");
    snprintf(root, sizeof root, "%s/g", dir);
    make_graph(root);
    og_graph *g = NULL;
    assert_og_ok(og_graph_open(&g, root, NULL));
    assert_og_ok(og_graph_create_branch(NULL, g, "b", NULL));
    og_graph_close(g);
    assert_og_ok(load_on(root, "b", "{\"type\":\"Person\",\"data\":{\"name\":\"bea\"}}\n"));
    snprintf(bdir, sizeof bdir, "%s/__manifest.lance/tree/b", root);
    /* the branch forks at main's version 4: its commit is version 5 */
    version_path(v5, sizeof v5, bdir, 5);
    version_path(v6, sizeof v6, bdir, 6);
    assert_true(exists(v5));
    long at = find_in(v5, ".lance", true);
    assert_true(at > 3);
    flip(v5, (size_t)at - 3);
    const char *name = strrchr(v5, '/') + 1;

    og_set_log(NULL, NULL, OG_LOG_ERROR);
    g = open_ro(root);
    assert_null(people(g, "b", NULL));
    assert_corrupt_naming(og_error_last()->code, name);
    char *main_head = people(g, NULL, NULL); /* main is not touched */
    assert_non_null(main_head);
    free(main_head);
    og_graph_close(g);
    assert_corrupt_naming(load_on(root, "b", "{\"type\":\"Person\",\"data\":{\"name\":\"bo\"}}\n"),
                          name);
    assert_false(exists(v6));
    assert_true(find_in(v5, LANCE_CHAIN_KEY, false) >= 0); /* a branch's versions are chained */
    og_set_log(NULL, NULL, OG_LOG_WARN);
    test_sandbox_done(dir);
}

/* ---- a cached head moving on ---------------------------------------------------------------- */

static void test_cached_head_moves_on(void **state)
{
    (void)state;
    char dir[256], a[512], b[512], cmd[1600], am[600], bm[600], a5[700], a6[700], b6[700];
    test_sandbox_new(dir, sizeof dir, "chain-cache");
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    make_graph(a);
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", a, b);
    assert_int_equal(system(cmd), 0);
    snprintf(am, sizeof am, "%s/__manifest.lance", a);
    snprintf(bm, sizeof bm, "%s/__manifest.lance", b);
    version_path(a5, sizeof a5, am, 5);
    version_path(a6, sizeof a6, am, 6);
    version_path(b6, sizeof b6, bm, 6);

    /* A handle holding version 4 finds a damaged version 5. */
    og_graph *g = open_ro(a);
    char *head = people(g, NULL, NULL);
    assert_non_null(head);
    free(head);
    assert_og_ok(load_on(a, NULL, "{\"type\":\"Person\",\"data\":{\"name\":\"dan\"}}\n"));
    long at = find_in(a5, ".lance", true);
    assert_true(at > 3);
    flip(a5, (size_t)at - 3);
    og_set_log(NULL, NULL, OG_LOG_ERROR);
    assert_null(people(g, NULL, NULL));
    assert_corrupt_naming(og_error_last()->code, strrchr(a5, '/') + 1);
    og_graph_close(g);
    flip(a5, (size_t)at - 3); /* mended */

    /* A handle holding version 5 finds a version 6 that is intact in itself but was made on
     * top of another version 5 (graph b's): it does not follow the version the handle holds. */
    assert_og_ok(load_on(b, NULL, "{\"type\":\"Person\",\"data\":{\"name\":\"eve\"}}\n"));
    g = open_ro(a);
    head = people(g, NULL, NULL);
    assert_non_null(head);
    free(head);
    assert_og_ok(load_on(a, NULL, "{\"type\":\"Person\",\"data\":{\"name\":\"fay\"}}\n"));
    assert_og_ok(load_on(b, NULL, "{\"type\":\"Person\",\"data\":{\"name\":\"gus\"}}\n"));
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", b6, a6);
    assert_int_equal(system(cmd), 0);
    assert_null(people(g, NULL, NULL));
    assert_corrupt_naming(og_error_last()->code, strrchr(a6, '/') + 1);
    assert_non_null(strstr(og_error_last()->message, "does not follow version 5"));
    og_graph_close(g);
    og_set_log(NULL, NULL, OG_LOG_WARN);
    test_sandbox_done(dir);
}

/* ---- a graph of the old format ------------------------------------------------------------- */

static void test_old_format_opens(void **state)
{
    (void)state;
    char dir[256], root[512], mdir[600], v4[700], v5[700], v6[700];
    test_sandbox_new(dir, sizeof dir, "chain-old");
    snprintf(root, sizeof root, "%s/g", dir);
    lance_chain_set_writes(false); /* as builds before chains wrote */
    make_graph(root);
    lance_chain_set_writes(true);
    snprintf(mdir, sizeof mdir, "%s/__manifest.lance", root);
    version_path(v4, sizeof v4, mdir, 4);
    version_path(v5, sizeof v5, mdir, 5);
    version_path(v6, sizeof v6, mdir, 6);
    assert_true(find_in(v4, LANCE_CHAIN_KEY, false) < 0);

    og_graph *g = open_ro(root);
    char *head = people(g, NULL, NULL);
    assert_non_null(head);
    assert_non_null(strstr(head, "cid"));
    free(head);
    char *at2 = people(g, NULL, "2");
    assert_non_null(at2);
    free(at2);
    og_graph_close(g);

    /* The first write of this build starts the chain. */
    assert_og_ok(load_on(root, NULL, "{\"type\":\"Person\",\"data\":{\"name\":\"dan\"}}\n"));
    assert_true(find_in(v5, LANCE_CHAIN_KEY, false) >= 0);
    g = open_ro(root);
    head = people(g, NULL, NULL);
    assert_non_null(head);
    assert_non_null(strstr(head, "dan"));
    free(head);
    og_graph_close(g);

    /* From then on a damaged version is refused. */
    long at = find_in(v5, ".lance", true);
    assert_true(at > 3);
    flip(v5, (size_t)at - 3);
    og_set_log(NULL, NULL, OG_LOG_ERROR);
    assert_corrupt_naming(
        load_on(root, NULL, "{\"type\":\"Person\",\"data\":{\"name\":\"eve\"}}\n"),
        strrchr(v5, '/') + 1);
    assert_false(exists(v6));
    og_set_log(NULL, NULL, OG_LOG_WARN);
    test_sandbox_done(dir);
}

/* ---- the audit log -------------------------------------------------------------------------- */

/* The data file of dir/_recoveries.lance holding `marker`, into out. */
static void audit_file_with(const char *dir, const char *marker, char *out, size_t cap)
{
    char data[600];
    snprintf(data, sizeof data, "%s/_recoveries.lance/data", dir);
    DIR *d = opendir(data);
    assert_non_null(d);
    struct dirent *e;
    out[0] = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        snprintf(out, cap, "%s/%s", data, e->d_name);
        if (find_in(out, marker, false) >= 0) break;
        out[0] = 0;
    }
    closedir(d);
    assert_true(out[0] != 0);
}

static void test_audit_record_flip(void **state)
{
    (void)state;
    char dir[256], file[900];
    test_sandbox_new(dir, sizeof dir, "chain-audit");
    store *s = wf_store(dir);
    write_intent in;
    memset(&in, 0, sizeof in);
    snprintf(in.operation_id, sizeof in.operation_id, "%s", "01J00000000000000000000001");
    in.kind = WRITE_KIND_LOAD;
    const char *outcomes = "{\"marker\":\"qzqzqzqz\"}";
    assert_og_ok(write_audit_record(s, &in, WRITE_RECOVERY_DISCARDED, NULL, outcomes));
    write_audit_row *rows = NULL;
    size_t n = 0;
    assert_og_ok(write_audit_list(s, &rows, &n));
    assert_int_equal(n, 1);
    core_free(rows);
    bool found = false;
    assert_og_ok(write_audit_find(s, in.operation_id, &found, NULL, NULL));
    assert_true(found);

    /* Data files this engine writes carry a whole-file checksum in their manifest record,
     * which catches a flip in them already; a file without one (written by lancedb or an
     * older build) does not. Publish a version whose record has none, as such a writer would,
     * so that only the record's own checksum stands between the flip and the reader. */
    lance_dataset *ds = NULL;
    assert_og_ok(lance_dataset_open(&ds, s, GRAPH_AUDIT_DIR, 0, LANCE_ACCESS_WRITE));
    assert_int_equal(ds->m->pb->n_fragments, 1);
    assert_int_equal(ds->m->pb->fragments[0]->n_files, 1);
    uint64_t v = lance_dataset_version(ds);
    lance_manifest_next next;
    lance_manifest_next_init(&next, ds->m->pb, v + 1);
    Lance__Table__DataFragment frag = *ds->m->pb->fragments[0];
    Lance__Table__DataFile df = *frag.files[0];
    df.has_og_xxh3 = 0;
    Lance__Table__DataFile *dfs[1] = {&df};
    frag.files = dfs;
    Lance__Table__DataFragment *frags[1] = {&frag};
    next.pb.fragments = frags;
    Lance__Table__Transaction txn = LANCE__TABLE__TRANSACTION__INIT;
    txn.has_read_version = 1;
    txn.read_version = v;
    lance_commit_info ci;
    assert_og_ok(lance_commit(s, GRAPH_AUDIT_DIR, ds->naming, &next.pb, &txn, ds->m->index,
                              ds->m->index_len, 0, &ci));
    lance_dataset_free(ds);
    assert_og_ok(write_audit_list(s, &rows, &n)); /* still intact */
    core_free(rows);

    audit_file_with(dir, "qzqzqzqz", file, sizeof file);
    flip(file, (size_t)find_in(file, "qzqzqzqz", false) + 2);
    assert_og_error(write_audit_list(s, &rows, &n), OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, "_recoveries.lance"));
    assert_og_error(write_audit_find(s, in.operation_id, &found, NULL, NULL), OG_E_CORRUPT);
    store_close(s);
    test_sandbox_done(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flip_newest),          cmocka_unit_test(test_flip_branch_newest),
        cmocka_unit_test(test_cached_head_moves_on), cmocka_unit_test(test_old_format_opens),
        cmocka_unit_test(test_audit_record_flip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
