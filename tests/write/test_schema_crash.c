/* Crash enumeration of schema apply (issue 19 item 5, crash part): one apply touching four
 * tables (Person gains a property: a rewrite; WorksAt loses one, hard: a rewrite; Company is
 * renamed Firm: a registration; Project is new: a table created) runs on the fault store,
 * crashing after every durable store operation in both crash modes; the root is then reopened
 * read-write (which recovers) and checked:
 *   - the graph holds exactly the old schema with exactly the old data, or exactly the new
 *     schema with exactly the migrated data: the accepted identity of the handle, main's
 *     schema row, the root mirror (_schema.pg/_schema.json) and the catalog all name the same
 *     schema, and the content is the one that schema's rows must have;
 *   - no sidecar is left, and the audit log has one row per sidecar the open resolved;
 *   - every pinned table is at its Lance HEAD and holds row_count rows;
 *   - a table the apply created but never registered (an orphan) is not in the snapshot;
 *   - follow-ups through the public API on the root: a query and a load under whichever
 *     schema is accepted, and the apply again: a no-op when it landed, applied now (over any
 *     orphan) when it did not.
 * Also in process: an apply failing after its sidecar (a failpoint returning an error)
 * resolves its own intent before it returns. */
#include "write_fixture.h"

#include "core/failpoint.h"
#include "crashsim.h"
#include "lang/catalog.h"

#include <string.h>

static const char *OLD_SCHEMA = "node Person {\n"
                                "    name: String @key\n"
                                "    age: I32?\n"
                                "}\n"
                                "node Company { name: String @key }\n"
                                "edge WorksAt: Person -> Company {\n"
                                "    since: I32?\n"
                                "    note: String?\n"
                                "}\n";

static const char *NEW_SCHEMA = "node Person {\n"
                                "    name: String @key\n"
                                "    age: I32?\n"
                                "    email: String?\n"
                                "}\n"
                                "node Firm @rename_from(\"Company\") { name: String @key }\n"
                                "node Project { title: String @key }\n"
                                "edge WorksAt: Person -> Firm { since: I32? }\n";

static const char *SEED =
    "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":1}}\n"
    "{\"type\":\"Person\",\"data\":{\"name\":\"bob\"}}\n"
    "{\"type\":\"Person\",\"data\":{\"name\":\"cyd\",\"age\":3}}\n"
    "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n"
    "{\"type\":\"Company\",\"data\":{\"name\":\"zeta\"}}\n"
    "{\"edge\":\"WorksAt\",\"from\":\"ann\",\"to\":\"acme\",\"data\":{\"since\":2020,\"note\":"
    "\"x\"}}\n"
    "{\"edge\":\"WorksAt\",\"from\":\"bob\",\"to\":\"zeta\",\"data\":{\"since\":2021}}\n";

typedef struct schema_case {
    /* the start of the current run */
    char *old_content, *new_content;
    char old_id[GRAPH_SCHEMA_HASH_LEN + 1], new_id[GRAPH_SCHEMA_HASH_LEN + 1];
    uint64_t old_mver;
    /* what the checks saw */
    unsigned saw_old, saw_new, orphans, reapplied, noop_reapply;
    wf_recovery_counts rec;
} schema_case;

static lang_catalog *catalog_of(const char *src)
{
    core_arena a;
    core_arena_init(&a, 4096);
    lang_diags d;
    lang_diags_init(&d, &a);
    lang_catalog *c = NULL;
    int rc = lang_catalog_build(&c, src, strlen(src), "schema.pg", &d);
    core_arena_free(&a);
    return rc == 0 ? c : NULL;
}

/* The migrated content of `old` (wf_content's text): WorksAt rows lose their note (the last
 * column), Company's table is Firm's, Person rows gain a null email, and Project's table is
 * there, empty (its alias sorts last). */
static char *migrate_content(const char *old)
{
    core_buf out = CORE_BUF_INIT;
    const char *table = "";
    for (const char *p = old; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char *line = strndup(p, len);
        if (line[0] != ' ') {
            table = strncmp(line, "edge:WorksAt ", 13) == 0  ? "edge"
                    : strncmp(line, "node:Person ", 12) == 0 ? "person"
                                                             : "";
            if (strncmp(line, "node:Company ", 13) == 0)
                assert_og_ok(core_buf_printf(&out, "node:Firm %s\n", line + 13));
            else
                assert_og_ok(core_buf_printf(&out, "%s\n", line));
        } else if (strcmp(table, "edge") == 0) {
            char *note = strstr(line, ",\"note\":");
            assert_non_null(note);
            assert_og_ok(core_buf_printf(&out, "%.*s}\n", (int)(note - line), line));
        } else if (strcmp(table, "person") == 0) {
            assert_og_ok(
                core_buf_printf(&out, "%.*s,\"email\":null}\n", (int)(strlen(line) - 1), line));
        } else {
            assert_og_ok(core_buf_printf(&out, "%s\n", line));
        }
        free(line);
        p += len + (e ? 1 : 0);
    }
    assert_og_ok(core_buf_printf(&out, "node:Project (0 rows)\n"));
    char *text = strdup(core_buf_cstr(&out));
    core_buf_free(&out);
    return text;
}

static void release_case(schema_case *sc)
{
    free(sc->old_content);
    free(sc->new_content);
    sc->old_content = sc->new_content = NULL;
}

static int build_start(store *s, schema_case *sc)
{
    release_case(sc);
    write_init_result ir;
    int rc = write_init(s, OLD_SCHEMA, strlen(OLD_SCHEMA), "s.pg", &ir);
    write_graph *g = NULL;
    if (rc == 0) rc = write_graph_open(&g, wf_borrow(s), "", NULL);
    if (rc == 0) rc = wf_load(g, SEED, EXEC_LOAD_APPEND, NULL);
    if (rc == 0) graph_handle_accepted(g->h, sc->old_id);
    write_graph_close(g);
    if (rc == 0 && !(sc->old_content = wf_content(s, NULL))) rc = OG_E_INTERNAL;
    if (rc == 0) sc->new_content = migrate_content(sc->old_content);
    graph_snapshot *snap = NULL;
    if (rc == 0) rc = graph_snapshot_load(&snap, s, NULL, 0, 0);
    if (rc == 0) sc->old_mver = snap->manifest_version;
    graph_snapshot_free(snap);
    return rc;
}

static int apply_new(write_graph *g, write_schema_result *res)
{
    lang_catalog *to = catalog_of(NEW_SCHEMA);
    if (!to) return og_error_last()->code;
    int rc = write_schema_apply(g, to, true, NULL, res);
    lang_catalog_free(to);
    return rc;
}

static int setup_apply(store *s, void *vctx)
{
    return build_start(s, vctx);
}

static int op_apply(store *s, void *vctx)
{
    (void)vctx;
    write_graph *g = NULL;
    int rc = write_graph_open(&g, wf_borrow(s), "", NULL);
    write_schema_result res;
    memset(&res, 0, sizeof res);
    if (rc == 0) rc = apply_new(g, &res);
    write_schema_result_clear(&res);
    write_graph_close(g);
    return rc;
}

/* Once, without a crash: the apply's outcome, its identity, and that the migrated content
 * derived above is what it leaves. */
static void prepare_case(schema_case *sc)
{
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "schema-crash-expected");
    store *s = wf_store(dir);
    assert_og_ok(build_start(s, sc));
    store_close(s);
    write_graph *g = NULL;
    assert_og_ok(wf_open(&g, dir));
    write_schema_result res;
    int rc = apply_new(g, &res);
    if (rc) fail_msg("the apply: %s", og_error_last()->message);
    assert_true(res.wr.committed);
    assert_int_equal(res.tables_rewritten, 2);
    assert_int_equal(res.tables_created, 1);
    assert_int_equal(res.tables_renamed, 1);
    assert_int_equal(res.wr.n_tables, 2);
    snprintf(sc->new_id, sizeof sc->new_id, "%s", res.to_identity);
    assert_string_equal(res.from_identity, sc->old_id);
    write_schema_result_clear(&res);
    char *got = wf_content(g->h->s, NULL);
    assert_non_null(got);
    if (strcmp(got, sc->new_content) != 0)
        fail_msg("migrated:\n%s--- expected:\n%s", got, sc->new_content);
    free(got);
    write_graph_close(g);
    test_sandbox_done(dir);
    assert_true(strcmp(sc->old_id, sc->new_id) != 0);
}

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            print_message("k=%llu mode=%d: ", (unsigned long long)pt->k, (int)pt->mode);           \
            print_message(__VA_ARGS__);                                                            \
            print_message("\n");                                                                   \
            rc = 1;                                                                                \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

/* Lance datasets under nodes/ and edges/ that the snapshot does not register. */
static int count_orphans(store *s, const graph_snapshot *snap, unsigned *n)
{
    *n = 0;
    const char *dirs[] = {GRAPH_NODES_DIR "/", GRAPH_EDGES_DIR "/"};
    for (size_t d = 0; d < 2; d++) {
        store_list l;
        memset(&l, 0, sizeof l);
        int rc = store_list_prefix(s, dirs[d], STORE_LIST_DELIMITED, &l);
        if (rc == OG_E_NOT_FOUND) {
            og_error_clear();
            continue;
        }
        if (rc) return rc;
        for (size_t i = 0; i < l.count; i++) {
            if (!l.items[i].is_prefix) continue;
            bool registered = false;
            size_t len = strlen(l.items[i].key) - 1; /* without the '/' */
            for (size_t t = 0; t < snap->n_tables && !registered; t++)
                registered = strlen(snap->tables[t].path) == len &&
                             strncmp(snap->tables[t].path, l.items[i].key, len) == 0;
            *n += !registered;
        }
        store_list_free(&l);
    }
    return 0;
}

static char *query_rows(og_graph *g, const char *src, const char *name)
{
    og_query_options qo = OG_QUERY_OPTIONS_INIT;
    qo.source = src;
    qo.name = name;
    og_result *r = NULL;
    if (og_graph_query(&r, g, &qo) != 0) return NULL;
    core_buf b = CORE_BUF_INIT;
    for (uint64_t i = 0; i < og_result_row_count(r); i++) {
        size_t len = 0;
        const char *j = og_result_row_json(r, i, &len);
        if (core_buf_printf(&b, "%.*s\n", (int)len, j) != 0) break;
    }
    og_result_free(r);
    char *out = strdup(b.len ? core_buf_cstr(&b) : "");
    core_buf_free(&b);
    return out;
}

static int og_load_text(og_graph *g, const char *text)
{
    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = OG_LOAD_MERGE;
    og_write_result *wr = NULL;
    int rc = og_graph_load(&wr, g, "f.jsonl", text, strlen(text), &lo);
    og_write_result_free(wr);
    return rc;
}

static int check_apply(store *s, void *vctx, const crashsim_point *pt)
{
    schema_case *sc = vctx;
    int rc = 0;
    write_graph *g = NULL;
    graph_snapshot *snap = NULL;
    lang_catalog *mirror = NULL;
    og_graph *og = NULL;
    og_schema_apply_result *ar = NULL;
    char *content = NULL, *rows = NULL, *after = NULL;
    char why[512], accepted[GRAPH_SCHEMA_HASH_LEN + 1], mid[GRAPH_SCHEMA_HASH_LEN + 1],
        cid[GRAPH_SCHEMA_HASH_LEN + 1];
    CHECK(wf_open_recovered(s, &g, &sc->rec, why, sizeof why) == 0, "%s", why);
    graph_handle_accepted(g->h, accepted);
    CHECK(graph_snapshot_load(&snap, s, NULL, 0, 0) == 0, "main: %s", og_error_last()->message);
    CHECK((content = wf_content(s, NULL)) != NULL, "content: %s", og_error_last()->message);
    bool is_old = strcmp(content, sc->old_content) == 0;
    bool is_new = strcmp(content, sc->new_content) == 0;
    CHECK(is_old || is_new, "torn content:\n%s", content);
    const char *want = is_new ? sc->new_id : sc->old_id;
    CHECK(strcmp(snap->schema_identity, want) == 0, "%s content under schema row %s",
          is_new ? "new" : "old", snap->schema_identity);
    CHECK(strcmp(accepted, want) == 0, "%s content, accepted schema %s", is_new ? "new" : "old",
          accepted);
    CHECK(graph_schema_identity(g->h->catalog, cid) == 0 && strcmp(cid, want) == 0,
          "the handle's catalog is %s", cid);
    CHECK(graph_schema_read(s, &mirror, mid) == 0, "the root mirror: %s", og_error_last()->message);
    CHECK(strcmp(mid, want) == 0, "%s content, root mirror %s", is_new ? "new" : "old", mid);
    CHECK(pt->k != 0 || (is_new && pt->op_rc == 0), "uncrashed run: rc %d", pt->op_rc);
    CHECK(pt->op_rc != 0 || pt->crashed || is_new, "an acknowledged apply is lost");
    if (is_old)
        CHECK(snap->manifest_version >= sc->old_mver && !graph_snapshot_table(snap, "node:Project"),
              "old schema, manifest version %llu", (unsigned long long)snap->manifest_version);
    for (size_t i = 0; i < snap->n_tables; i++)
        CHECK(wf_check_table(s, &snap->tables[i], why, sizeof why) == 0, "%s", why);
    unsigned orphans = 0;
    CHECK(count_orphans(s, snap, &orphans) == 0, "listing: %s", og_error_last()->message);
    CHECK(orphans <= 1, "%u unregistered tables", orphans);
    sc->orphans += orphans;
    if (is_new)
        sc->saw_new++;
    else
        sc->saw_old++;
    write_graph_close(g);
    g = NULL;

    /* Follow-ups through the public API: a query and a load under the accepted schema, then
     * the apply again. */
    og_open_options oo = OG_OPEN_OPTIONS_INIT;
    CHECK(og_graph_open(&og, pt->root, &oo) == 0, "og open: %s", og_error_last()->message);
    const char *people = "query p() { match { $p: Person } return { $p.name } }\n";
    CHECK((rows = query_rows(og, people, "p")) != NULL, "query: %s", og_error_last()->message);
    CHECK(strstr(rows, "\"ann\"") && strstr(rows, "\"bob\"") && strstr(rows, "\"cyd\""),
          "people: %s", rows);
    og_schema_apply_options ao = OG_SCHEMA_APPLY_OPTIONS_INIT;
    ao.allow_data_loss = 1;
    ao.source = NEW_SCHEMA;
    int arc = og_graph_schema_apply(&ar, og, &ao);
    CHECK(arc == 0, "the apply again: %s", og_error_last()->message);
    CHECK(ar->applied == !is_new, "the apply again: applied %d after %s content", ar->applied,
          is_new ? "new" : "old");
    if (is_new)
        sc->noop_reapply++;
    else
        sc->reapplied++;
    CHECK((after = wf_content(s, NULL)) != NULL && strcmp(after, sc->new_content) == 0,
          "after the apply again:\n%s", after ? after : og_error_last()->message);
    CHECK(og_load_text(og, "{\"type\":\"Project\",\"data\":{\"title\":\"p1\"}}\n"
                           "{\"type\":\"Firm\",\"data\":{\"name\":\"initech\"}}\n"
                           "{\"type\":\"Person\",\"data\":{\"name\":\"dee\",\"email\":\"d@x\"}}\n"
                           "{\"edge\":\"WorksAt\",\"from\":\"dee\",\"to\":\"initech\"}\n") == 0,
          "load under the new schema: %s", og_error_last()->message);
    free(rows);
    rows = query_rows(og, "query w() { match { $p: Person  $p worksAt $f } return { $f.name } }\n",
                      "w");
    CHECK(rows && strstr(rows, "initech") && strstr(rows, "acme") && strstr(rows, "zeta"),
          "edges after: %s", rows ? rows : og_error_last()->message);
    free(rows);
    rows = query_rows(og, "query j() { match { $j: Project } return { $j.title } }\n", "j");
    CHECK(rows && strcmp(rows, "{\"j.title\":\"p1\"}\n") == 0, "projects: %s",
          rows ? rows : og_error_last()->message);
    og_graph_close(og);
    og = NULL;
    /* sound after all of it: every pin at its HEAD, no sidecar */
    graph_snapshot_free(snap);
    snap = NULL;
    CHECK(graph_snapshot_load(&snap, s, NULL, 0, 0) == 0, "main: %s", og_error_last()->message);
    for (size_t i = 0; i < snap->n_tables; i++)
        CHECK(wf_check_table(s, &snap->tables[i], why, sizeof why) == 0, "after: %s", why);
    size_t left = 1;
    CHECK(wf_count_sidecars(s, &left) == 0 && left == 0, "%zu sidecars after the follow-ups", left);
out:
    og_schema_apply_result_free(ar);
    og_graph_close(og);
    lang_catalog_free(mirror);
    free(content);
    free(rows);
    free(after);
    graph_snapshot_free(snap);
    write_graph_close(g);
    return rc;
}

static void test_crash_schema_apply(void **state)
{
    (void)state;
    schema_case sc;
    memset(&sc, 0, sizeof sc);
    prepare_case(&sc);
    crashsim_case cc = {"schema apply (2 rewrites, a rename, a new table)", &sc, setup_apply,
                        op_apply, check_apply};
    crashsim_report rep;
    crashsim_run(&cc, &rep);
    print_message("%s: %llu durable ops, %llu crash runs, %llu violations (old %u, new %u; "
                  "recovered %u: %u rolled back, %u rolled forward, %u discarded; orphan tables "
                  "seen %u; apply again: %u applied, %u no-op) %s\n",
                  cc.name, (unsigned long long)rep.n, (unsigned long long)rep.runs,
                  (unsigned long long)rep.violations, sc.saw_old, sc.saw_new, sc.rec.recovered,
                  sc.rec.rolled_back, sc.rec.rolled_forward, sc.rec.discarded, sc.orphans,
                  sc.reapplied, sc.noop_reapply, rep.first);
    assert_int_equal(rep.violations, 0);
    assert_true(rep.n >= 5);
    assert_true(sc.saw_old > 0 && sc.saw_new > 0);
    assert_true(sc.rec.discarded > 0);
    assert_true(sc.rec.rolled_back > 0);
    assert_true(sc.rec.rolled_forward > 0);
    assert_true(sc.orphans > 0);
    release_case(&sc);
}

/* ---- an apply failing after its sidecar resolves its own intent ----------------------------
 * In process, on one handle: a failure before any effect is discarded, one after the first
 * of its two table effects rolled back, one after both rolled forward (the apply then succeeds).
 * Whichever, no sidecar is left when it returns, the schema row, the handle and the root mirror
 * agree, and the apply again on the same handle lands (or is a no-op). */
typedef struct fail_cell {
    const char *fp;
    uint64_t nth;
    int rc;
    const char *audit;
} fail_cell;

static void fail_round(schema_case *sc, const fail_cell *fc)
{
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "schema-fail");
    store *b = wf_store(dir);
    assert_og_ok(build_start(b, sc));
    store_close(b);
    write_graph *g = NULL;
    assert_og_ok(wf_open(&g, dir));
    store *s = g->h->s;
    write_schema_result res;
    assert_og_ok(core_fp_set(fc->fp, CORE_FP_ERROR, OG_E_STORAGE, fc->nth));
    int rc = apply_new(g, &res);
    uint64_t hits = core_fp_hits(fc->fp);
    core_fp_clear_all();
    print_message("schema apply, %s failing (hit %llu): %s%s%s\n", fc->fp, (unsigned long long)hits,
                  og_code_name(rc), rc ? ": " : "", rc ? og_error_last()->message : "");
    assert_int_equal(rc, fc->rc);
    assert_true(hits >= fc->nth);
    size_t left = 1;
    assert_og_ok(wf_count_sidecars(s, &left));
    assert_int_equal(left, 0);
    bool found = false;
    char kind[24] = "";
    assert_og_ok(write_audit_find(s, res.wr.operation_id, &found, kind, NULL));
    assert_true(found);
    assert_string_equal(kind, fc->audit);
    write_schema_result_clear(&res);
    const char *want = rc ? sc->old_id : sc->new_id;
    char accepted[GRAPH_SCHEMA_HASH_LEN + 1], mid[GRAPH_SCHEMA_HASH_LEN + 1];
    graph_handle_accepted(g->h, accepted);
    assert_string_equal(accepted, want);
    lang_catalog *mirror = NULL;
    assert_og_ok(graph_schema_read(s, &mirror, mid));
    lang_catalog_free(mirror);
    assert_string_equal(mid, want);
    char *c = wf_content(s, NULL);
    assert_string_equal(c, rc ? sc->old_content : sc->new_content);
    free(c);
    assert_og_ok(apply_new(g, &res));
    assert_int_equal(res.wr.committed, rc != 0);
    write_schema_result_clear(&res);
    c = wf_content(s, NULL);
    assert_string_equal(c, sc->new_content);
    free(c);
    write_graph_close(g);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

static void test_apply_failure_resolves_own_intent(void **state)
{
    (void)state;
    schema_case sc;
    memset(&sc, 0, sizeof sc);
    prepare_case(&sc);
    const fail_cell cells[] = {
        {"write.post_sidecar", 1, OG_E_STORAGE, "discarded"},
        {"write.post_table_effect", 1, OG_E_STORAGE, "rolled_back"},
        {"write.post_table_effect", 2, 0, "rolled_forward"}, /* the last of two effects */
        {"write.pre_publish", 1, 0, "rolled_forward"},
    };
    for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++)
        fail_round(&sc, &cells[i]);
    release_case(&sc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_apply_failure_resolves_own_intent),
        cmocka_unit_test(test_crash_schema_apply),
    };
    cmocka_set_test_filter(getenv("OG_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
