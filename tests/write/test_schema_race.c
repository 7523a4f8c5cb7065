/* Races of schema apply (issue 19 items 4 and 5, race parts), with threads (separate handles on
 * one root, sharing the process's gates) and processes (the store's lock gates only). Every
 * cell asserts outcomes and counts, never times:
 *   - a write (load, mutation) paused between its prepare and its gates while an apply commits
 *     (write_graph.test_after_prepare): it fails typed (OG_E_CONFLICT, "schema changed"), the
 *     handle takes the new schema, and the write made again under it lands; threads and
 *     processes; a write on a table the apply rewrites and one on a table it does not;
 *   - an apply paused the same way while a load commits: the apply starts again, and the
 *     load's rows are in the migrated table, and the new type's table its first attempt
 *     created is the one registered (no orphan per attempt) (threads and processes);
 *   - random interleavings (threads 30, processes 10 by default): an apply per iteration
 *     against a writer doing loads and mutations, each write retried when it fails typed;
 *     every write either committed before the apply's commit (and its rows were migrated) or
 *     failed typed and landed when made again; no write committed under the old schema after
 *     the apply's commit: every manifest version from the apply's on records the new schema
 *     identity and every table it pins has the columns its type's table must have;
 *   - two applies racing (threads, processes): one wins, the other fails typed (it planned
 *     against the schema the winner replaced) or is a no-op (the same target); the root
 *     mirror names the winner. Both committing is right only when one was planned against
 *     the schema the other committed (it ran after it, serially); two planned against the
 *     same schema that both commit are a lost update;
 *   - apply vs branch create: a branch created in the apply's prepare-to-gates window makes
 *     the apply refuse (precondition_failed, nothing changed); racing (threads, processes),
 *     either the branch exists first and the apply refuses, or it is created after the apply
 *     under the new schema.
 * Seeds: OG_TEST_SEED (printed); iterations: OG_SCHEMA_RACE_ITERS (threads; processes get a
 * third); one cell: OG_TEST_FILTER=<its function's name>. */
#include "write_fixture.h"

#include "core/clock.h"
#include "exec/mutate.h"
#include "lance/branch.h"
#include "lang/catalog.h"

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *SCHEMA = "node Person {\n"
                            "    name: String @key\n"
                            "    age: I32?\n"
                            "}\n"
                            "node Company { name: String @key }\n"
                            "edge WorksAt: Person -> Company\n";

static const char *BASE = "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":1}}\n"
                          "{\"type\":\"Person\",\"data\":{\"name\":\"bob\",\"age\":2}}\n"
                          "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n"
                          "{\"edge\":\"WorksAt\",\"from\":\"ann\",\"to\":\"acme\"}\n";

/* ---- helpers ------------------------------------------------------------------------------- */

static unsigned test_seed(void)
{
    const char *e = getenv("OG_TEST_SEED");
    return e && *e ? (unsigned)strtoul(e, NULL, 10)
                   : (unsigned)(core_wall_us() ^ ((uint64_t)getpid() << 16));
}

static int iterations(int dflt)
{
    const char *e = getenv("OG_SCHEMA_RACE_ITERS");
    int n = e && *e ? atoi(e) : dflt;
    return n > 0 ? n : dflt;
}

static void new_graph(char *dir, size_t cap, const char *tag)
{
    test_sandbox_new(dir, cap, tag);
    store *s = wf_store(dir);
    write_init_result ir;
    assert_og_ok(write_init(s, SCHEMA, strlen(SCHEMA), "s.pg", &ir));
    write_graph *g = NULL;
    assert_og_ok(write_graph_open(&g, s, dir, NULL));
    assert_og_ok(wf_load(g, BASE, EXEC_LOAD_APPEND, NULL));
    write_graph_close(g);
}

/* The schema with Person's properties extra_0 .. extra_{n-1} (I32?) added, and, when `project`,
 * a new type Project. */
static char *schema_with(int n, bool project)
{
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(core_buf_printf(&b, "node Person {\n    name: String @key\n    age: I32?\n"));
    for (int i = 0; i < n; i++)
        assert_og_ok(core_buf_printf(&b, "    extra_%d: I32?\n", i));
    assert_og_ok(core_buf_printf(&b, "}\nnode Company { name: String @key }\n"
                                     "edge WorksAt: Person -> Company\n"));
    if (project) assert_og_ok(core_buf_printf(&b, "node Project { title: String @key }\n"));
    char *out = strdup(core_buf_cstr(&b));
    core_buf_free(&b);
    return out;
}

/* Apply schema source src on g (allow_data_loss off); the apply's rc. */
static int apply_src(write_graph *g, const char *src, write_schema_result *res)
{
    memset(res, 0, sizeof *res);
    core_arena a;
    core_arena_init(&a, 4096);
    lang_diags d;
    lang_diags_init(&d, &a);
    lang_catalog *to = NULL;
    int rc = lang_catalog_build(&to, src, strlen(src), "schema.pg", &d);
    core_arena_free(&a);
    if (rc == 0) rc = write_schema_apply(g, to, false, NULL, res);
    lang_catalog_free(to);
    return rc;
}

static void must_apply(write_graph *g, const char *src, write_schema_result *res)
{
    int rc = apply_src(g, src, res);
    if (rc) fail_msg("apply: %s", og_error_last()->message);
    assert_true(res->wr.committed);
}

/* One load under the handle's accepted schema; the write's rc. */
static int load_text(write_graph *g, const char *text, write_result *res)
{
    graph_change_set cs;
    memset(&cs, 0, sizeof cs);
    exec_load_stats st;
    write_result local;
    if (!res) res = &local;
    memset(res, 0, sizeof *res);
    const lang_catalog *cat = graph_handle_accepted(g->h, NULL);
    int rc =
        exec_load_parse(&cs, cat, text, strlen(text), "d.jsonl", EXEC_LOAD_MERGE, &st, NULL, NULL);
    if (rc == 0) rc = write_changes(g, WRITE_KIND_LOAD, &cs, NULL, res);
    graph_change_set_clear(&cs);
    return rc;
}

/* One mutation (a query source of one query) under the handle's accepted schema. */
static int mutate_text(write_graph *g, const char *gq, write_result *res)
{
    memset(res, 0, sizeof *res);
    core_arena a;
    core_arena_init(&a, 0);
    lang_diags d;
    lang_diags_init(&d, &a);
    lang_query_set *qs = NULL;
    exec_mutate_result mr;
    memset(&mr, 0, sizeof mr);
    const lang_catalog *cat = graph_handle_accepted(g->h, NULL);
    int rc = lang_query_set_build(&qs, cat, gq, strlen(gq), "m.gq", &d);
    if (rc == 0) rc = exec_mutate_run(&mr, g, &qs->queries[0], NULL, NULL);
    *res = mr.write;
    exec_mutate_result_clear(&mr);
    lang_query_set_free(qs);
    core_arena_free(&a);
    return rc;
}

/* A write failed the way a write made under a replaced schema must. */
static bool typed_schema_conflict(int rc)
{
    return rc == OG_E_CONFLICT && strstr(og_error_last()->message, "schema changed") != NULL;
}

static size_t sidecars(store *s)
{
    size_t n = 0;
    assert_og_ok(wf_count_sidecars(s, &n));
    return n;
}

static char *identity_of(write_graph *g)
{
    char id[GRAPH_SCHEMA_HASH_LEN + 1];
    graph_handle_accepted(g->h, id);
    return strdup(id);
}

/* The schema identity the root mirror names ("" when it does not read). */
static void mirror_of(store *s, char out[GRAPH_SCHEMA_HASH_LEN + 1])
{
    lang_catalog *c = NULL;
    if (graph_schema_read(s, &c, out) != 0) {
        og_error_clear();
        out[0] = 0;
    }
    lang_catalog_free(c);
}

static const lang_typedef *type_of_alias(const lang_catalog *c, const char *alias)
{
    for (size_t i = 0; i < c->n_types; i++) {
        char a[256];
        if (graph_table_alias(a, sizeof a, c->types[i].kind, c->types[i].name) == 0 &&
            strcmp(a, alias) == 0)
            return &c->types[i];
    }
    return NULL;
}

/* From manifest version `from` to the latest: every version records schema `identity`, every
 * table it pins is a table of that schema's types with every column the type's table must have.
 * NULL when so, else what is wrong (in why). */
static const char *check_versions_after(store *s, uint64_t from, const char *identity, char *why,
                                        size_t cap)
{
    lang_catalog *cat = NULL;
    if (graph_schema_read_identity(s, identity, &cat) != 0) {
        snprintf(why, cap, "schema %s: %s", identity, og_error_last()->message);
        return why;
    }
    graph_snapshot *latest = NULL;
    if (graph_snapshot_load(&latest, s, NULL, 0, 0) != 0) {
        lang_catalog_free(cat);
        snprintf(why, cap, "main: %s", og_error_last()->message);
        return why;
    }
    uint64_t last = latest->manifest_version;
    graph_snapshot_free(latest);
    const char *bad = NULL;
    for (uint64_t v = from; v <= last && !bad; v++) {
        graph_snapshot *snap = NULL;
        if (graph_snapshot_load(&snap, s, NULL, v, 0) != 0) {
            snprintf(why, cap, "manifest version %llu: %s", (unsigned long long)v,
                     og_error_last()->message);
            bad = why;
            break;
        }
        if (strcmp(snap->schema_identity, identity) != 0) {
            snprintf(why, cap, "manifest version %llu (after the apply at %llu) records schema %s",
                     (unsigned long long)v, (unsigned long long)from, snap->schema_identity);
            bad = why;
        }
        for (size_t i = 0; !bad && i < snap->n_tables; i++) {
            const graph_table *t = &snap->tables[i];
            const lang_typedef *ty = type_of_alias(cat, t->alias);
            if (!ty) {
                snprintf(why, cap, "version %llu pins %s, not a type of the schema",
                         (unsigned long long)v, t->alias);
                bad = why;
                break;
            }
            arrow_schema want;
            lance_dataset *ds = NULL;
            assert_og_ok(graph_type_schema(&want, ty));
            if (graph_table_open(&ds, s, t, LANCE_ACCESS_READ) != 0) {
                snprintf(why, cap, "version %llu: %s: %s", (unsigned long long)v, t->alias,
                         og_error_last()->message);
                bad = why;
            }
            for (size_t f = 0; !bad && f < want.n_fields; f++)
                if (arrow_schema_find(&ds->schema, want.fields[f].name) < 0) {
                    snprintf(why, cap,
                             "version %llu: table %s (Lance version %llu) has no column %s",
                             (unsigned long long)v, t->alias, (unsigned long long)t->version,
                             want.fields[f].name);
                    bad = why;
                }
            lance_dataset_free(ds);
            arrow_schema_clear(&want);
        }
        graph_snapshot_free(snap);
    }
    lang_catalog_free(cat);
    return bad;
}

static void assert_versions_after(store *s, uint64_t from, const char *identity)
{
    char why[512];
    const char *bad = check_versions_after(s, from, identity, why, sizeof why);
    if (bad) fail_msg("%s", bad);
}

/* Every pinned table of main is at its Lance HEAD and holds row_count rows; no sidecar. */
static void assert_sound_main(store *s)
{
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, s, NULL, 0, 0));
    for (size_t i = 0; i < snap->n_tables; i++) {
        char why[400];
        if (wf_check_table(s, &snap->tables[i], why, sizeof why)) fail_msg("%s", why);
    }
    graph_snapshot_free(snap);
    assert_int_equal(sidecars(s), 0);
}

/* Lance datasets under nodes/ and edges/ that main's latest snapshot does not register. */
static unsigned unregistered_tables(store *s)
{
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, s, NULL, 0, 0));
    unsigned n = 0;
    const char *dirs[] = {GRAPH_NODES_DIR "/", GRAPH_EDGES_DIR "/"};
    for (size_t d = 0; d < 2; d++) {
        store_list l;
        memset(&l, 0, sizeof l);
        int rc = store_list_prefix(s, dirs[d], STORE_LIST_DELIMITED, &l);
        if (rc == OG_E_NOT_FOUND) {
            og_error_clear();
            continue;
        }
        assert_og_ok(rc);
        for (size_t i = 0; i < l.count; i++) {
            if (!l.items[i].is_prefix) continue;
            bool registered = false;
            size_t len = strlen(l.items[i].key) - 1;
            for (size_t t = 0; t < snap->n_tables && !registered; t++)
                registered = strlen(snap->tables[t].path) == len &&
                             strncmp(snap->tables[t].path, l.items[i].key, len) == 0;
            n += !registered;
        }
        store_list_free(&l);
    }
    graph_snapshot_free(snap);
    return n;
}

static bool has_row(const char *content, const char *needle)
{
    return strstr(content, needle) != NULL;
}

static void read_all(int fd, char *buf, size_t cap)
{
    size_t len = 0;
    ssize_t n;
    while (len + 1 < cap && (n = read(fd, buf + len, cap - 1 - len)) > 0)
        len += (size_t)n;
    buf[len] = 0;
}

static void wait_child(pid_t pid)
{
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    if (WEXITSTATUS(st) != 0) fail_msg("child exited %d", WEXITSTATUS(st));
}

/* ---- cell 1: a write paused between prepare and gates while an apply commits -------------- */

typedef struct apply_in_window {
    write_graph *other;
    const char *src;
    int hits, rc;
    write_schema_result res;
} apply_in_window;

static void apply_hook(void *arg)
{
    apply_in_window *w = arg;
    if (w->hits++) return;
    w->rc = apply_src(w->other, w->src, &w->res);
}

typedef struct write_case {
    const char *what;
    bool mutation;
    const char *text;   /* JSONL or a mutation */
    const char *needle; /* in the content once it landed (under the new schema) */
} write_case;

static const write_case WINDOW_WRITES[] = {
    {"load into the rewritten table", false, "{\"type\":\"Person\",\"data\":{\"name\":\"cyd\"}}\n",
     "\"name\":\"cyd\",\"age\":null,\"extra_0\":null"},
    {"load into a table the apply keeps", false,
     "{\"type\":\"Company\",\"data\":{\"name\":\"initech\"}}\n", "\"name\":\"initech\""},
    {"mutation of the rewritten table", true,
     "query m() { update Person set { age: 77 } where name = \"bob\" }\n",
     "\"name\":\"bob\",\"age\":77,\"extra_0\":null"},
};

static int run_write(write_graph *g, const write_case *wc, write_result *res)
{
    return wc->mutation ? mutate_text(g, wc->text, res) : load_text(g, wc->text, res);
}

static void write_paused_threads(const write_case *wc)
{
    char dir[256];
    new_graph(dir, sizeof dir, "srace-window");
    write_graph *gw = NULL, *ga = NULL;
    assert_og_ok(wf_open(&gw, dir));
    assert_og_ok(wf_open(&ga, dir));
    store *s = gw->h->s;
    char *next = schema_with(1, true);
    char *old_id = identity_of(gw);
    apply_in_window w = {.other = ga, .src = next, .rc = -1};
    gw->test_after_prepare = apply_hook;
    gw->test_arg = &w;
    write_result wr;
    int rc = run_write(gw, wc, &wr);
    gw->test_after_prepare = NULL;
    if (w.rc) fail_msg("the apply in the window: %s", og_error_last()->message);
    assert_true(w.res.wr.committed);
    assert_int_equal(w.hits, 1); /* the write did not prepare again: it failed */
    if (!typed_schema_conflict(rc))
        fail_msg("%s under the replaced schema: %s (%s)", wc->what, og_code_name(rc),
                 rc ? og_error_last()->message : "it committed");
    assert_false(wr.committed);
    /* the writer's handle took the new schema; made again, the write lands */
    char *now = identity_of(gw);
    assert_string_equal(now, w.res.to_identity);
    assert_string_not_equal(now, old_id);
    rc = run_write(gw, wc, &wr);
    if (rc) fail_msg("%s again: %s", wc->what, og_error_last()->message);
    assert_true(wr.committed);
    assert_true(wr.manifest_version > w.res.wr.manifest_version);
    char *c = wf_content(s, NULL);
    if (!has_row(c, wc->needle)) fail_msg("%s: %s not in\n%s", wc->what, wc->needle, c);
    free(c);
    print_message("%s paused between prepare and gates while an apply committed: typed "
                  "conflict, landed when made again\n",
                  wc->what);
    assert_versions_after(s, w.res.wr.manifest_version, w.res.to_identity);
    assert_sound_main(s);
    write_schema_result_clear(&w.res);
    free(next);
    free(old_id);
    free(now);
    write_graph_close(gw);
    write_graph_close(ga);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

static void test_write_paused_threads(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof WINDOW_WRITES / sizeof WINDOW_WRITES[0]; i++)
        write_paused_threads(&WINDOW_WRITES[i]);
}

/* The same with processes: a child writes and stops after its prepare; the parent applies and
 * lets it go on; the child reports the write's rc and message, then writes again. */
static void child_pause_hook(void *arg)
{
    int *fds = arg; /* ready, go; once */
    if (fds[0] < 0) return;
    char c = 'r';
    if (write(fds[0], &c, 1) != 1 || read(fds[1], &c, 1) != 1) _exit(94);
    fds[0] = -1;
}

static void write_paused_process(const write_case *wc)
{
    char dir[256];
    new_graph(dir, sizeof dir, "srace-window-proc");
    write_graph *ga = NULL;
    assert_og_ok(wf_open(&ga, dir));
    store *s = ga->h->s;
    char *next = schema_with(1, true);
    int ready[2], go[2], rep[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(rep), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(ready[0]);
        close(go[1]);
        close(rep[0]);
        write_graph *c = NULL;
        if (wf_open(&c, dir) != 0) _exit(80);
        int fds[2] = {ready[1], go[0]};
        c->test_after_prepare = child_pause_hook;
        c->test_arg = fds;
        write_result wr;
        int rc1 = run_write(c, wc, &wr);
        int typed = typed_schema_conflict(rc1);
        char msg[600];
        snprintf(msg, sizeof msg, "%s", rc1 ? og_error_last()->message : "committed");
        int rc2 = run_write(c, wc, &wr);
        char out[1400];
        int n = snprintf(out, sizeof out, "%d %d %d %d %llu %s | %s", rc1, typed, rc2,
                         (int)wr.committed, (unsigned long long)wr.manifest_version, msg,
                         rc2 ? og_error_last()->message : "");
        if (write(rep[1], out, (size_t)n) != n) _exit(93);
        write_graph_close(c);
        _exit(0);
    }
    close(ready[1]);
    close(go[0]);
    close(rep[1]);
    char ch;
    assert_int_equal(read(ready[0], &ch, 1), 1); /* the child has prepared */
    write_schema_result res;
    must_apply(ga, next, &res);
    assert_int_equal(write(go[1], "g", 1), 1);
    char buf[1500];
    read_all(rep[0], buf, sizeof buf);
    wait_child(pid);
    close(ready[0]);
    close(go[1]);
    close(rep[0]);
    int rc1 = -1, typed = 0, rc2 = -1, committed = 0, used = 0;
    unsigned long long mver = 0;
    if (sscanf(buf, "%d %d %d %d %llu %n", &rc1, &typed, &rc2, &committed, &mver, &used) < 5)
        fail_msg("bad report: %s", buf);
    if (!typed) fail_msg("%s in another process under the replaced schema: %s", wc->what, buf);
    if (rc2 || !committed) fail_msg("%s again in the other process: %s", wc->what, buf);
    assert_true(mver > res.wr.manifest_version);
    char *c = wf_content(s, NULL);
    if (!has_row(c, wc->needle)) fail_msg("%s: %s not in\n%s", wc->what, wc->needle, c);
    free(c);
    print_message("%s in another process, paused while an apply committed: typed conflict, "
                  "landed when made again\n",
                  wc->what);
    assert_versions_after(s, res.wr.manifest_version, res.to_identity);
    assert_sound_main(s);
    write_schema_result_clear(&res);
    free(next);
    write_graph_close(ga);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

static void test_write_paused_processes(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof WINDOW_WRITES / sizeof WINDOW_WRITES[0]; i++)
        write_paused_process(&WINDOW_WRITES[i]);
}

/* ---- cell 2: an apply paused between prepare and gates while a load commits --------------- */

typedef struct load_in_window {
    write_graph *other;
    const char *text;
    int hits, rc;
    write_result res;
} load_in_window;

static void load_hook(void *arg)
{
    load_in_window *w = arg;
    if (w->hits++) return;
    w->rc = load_text(w->other, w->text, &w->res);
}

static void test_apply_paused_threads(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "srace-apply-window");
    write_graph *gw = NULL, *ga = NULL;
    assert_og_ok(wf_open(&gw, dir));
    assert_og_ok(wf_open(&ga, dir));
    store *s = ga->h->s;
    char *next = schema_with(1, true);
    load_in_window w = {
        gw, "{\"type\":\"Person\",\"data\":{\"name\":\"dee\",\"age\":4}}\n", 0, -1, {0}};
    ga->test_after_prepare = load_hook;
    ga->test_arg = &w;
    write_schema_result res;
    must_apply(ga, next, &res);
    ga->test_after_prepare = NULL;
    if (w.rc) fail_msg("the load in the window: %s", og_error_last()->message);
    assert_true(w.res.committed);
    assert_int_equal(w.hits, 2); /* the apply prepared again */
    assert_true(res.wr.reprepares >= 1);
    assert_true(res.wr.manifest_version > w.res.manifest_version);
    assert_int_equal(res.rows_rewritten, 3); /* ann, bob and the load's dee */
    char *c = wf_content(s, NULL);
    assert_true(has_row(c, "\"name\":\"dee\",\"age\":4,\"extra_0\":null"));
    free(c);
    /* the restarted prepare took the new type's table its first attempt created */
    assert_int_equal(unregistered_tables(s), 0);
    print_message("a load between the apply's prepare and gates: the apply prepared again (%u) "
                  "and migrated the load's row\n",
                  res.wr.reprepares);
    assert_versions_after(s, res.wr.manifest_version, res.to_identity);
    assert_sound_main(s);
    write_schema_result_clear(&res);
    free(next);
    write_graph_close(gw);
    write_graph_close(ga);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

static void test_apply_paused_process(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "srace-apply-window-proc");
    write_graph *gw = NULL;
    assert_og_ok(wf_open(&gw, dir));
    store *s = gw->h->s;
    char *next = schema_with(1, true);
    int ready[2], go[2], rep[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(rep), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(ready[0]);
        close(go[1]);
        close(rep[0]);
        write_graph *c = NULL;
        if (wf_open(&c, dir) != 0) _exit(80);
        int fds[2] = {ready[1], go[0]};
        c->test_after_prepare = child_pause_hook;
        c->test_arg = fds;
        write_schema_result res;
        int rc = apply_src(c, next, &res);
        char out[900];
        int n = snprintf(out, sizeof out, "%d %d %u %llu %llu %s", rc, (int)res.wr.committed,
                         res.wr.reprepares, (unsigned long long)res.rows_rewritten,
                         (unsigned long long)res.wr.manifest_version,
                         rc ? og_error_last()->message : "");
        if (write(rep[1], out, (size_t)n) != n) _exit(93);
        write_graph_close(c);
        _exit(0);
    }
    close(ready[1]);
    close(go[0]);
    close(rep[1]);
    char ch;
    assert_int_equal(read(ready[0], &ch, 1), 1);
    write_result wr;
    assert_og_ok(
        load_text(gw, "{\"type\":\"Person\",\"data\":{\"name\":\"dee\",\"age\":4}}\n", &wr));
    assert_true(wr.committed);
    assert_int_equal(write(go[1], "g", 1), 1);
    char buf[1000];
    read_all(rep[0], buf, sizeof buf);
    wait_child(pid);
    close(ready[0]);
    close(go[1]);
    close(rep[0]);
    int rc = -1, committed = 0;
    unsigned re = 0;
    unsigned long long rows = 0, mver = 0;
    if (sscanf(buf, "%d %d %u %llu %llu", &rc, &committed, &re, &rows, &mver) < 5)
        fail_msg("bad report: %s", buf);
    if (rc || !committed) fail_msg("the child's apply: %s", buf);
    assert_true(re >= 1);
    assert_int_equal(rows, 3);
    assert_true(mver > wr.manifest_version);
    char *c = wf_content(s, NULL);
    assert_true(has_row(c, "\"name\":\"dee\",\"age\":4,\"extra_0\":null"));
    free(c);
    /* this handle's next write was made under the old schema: typed, then it lands */
    int rc1 = load_text(gw, "{\"type\":\"Person\",\"data\":{\"name\":\"eve\"}}\n", &wr);
    if (!typed_schema_conflict(rc1)) fail_msg("stale handle: %s", og_code_name(rc1));
    assert_og_ok(load_text(gw, "{\"type\":\"Person\",\"data\":{\"name\":\"eve\"}}\n", &wr));
    char *id = identity_of(gw);
    assert_versions_after(s, mver, id);
    free(id);
    assert_int_equal(unregistered_tables(s), 0);
    print_message("a load by another process between the apply's prepare and gates: the apply "
                  "prepared again (%u) and migrated the load's row\n",
                  re);
    assert_sound_main(s);
    free(next);
    write_graph_close(gw);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

/* ---- cell 3: random interleavings of an apply and a writer --------------------------------- */

/* One write of the writer, as it ended. */
typedef struct write_rec {
    int attempts;   /* typed failures before it landed */
    bool committed; /* it landed (after attempts failures) */
    uint64_t mver;  /* its commit's manifest version */
    char name[32];  /* the Person or Company it loaded ("" for a mutation) */
    bool stale;     /* it was made under the old schema and landed */
    int bad_rc;     /* an untyped failure (0: none) */
    char bad_msg[300];
} write_rec;

#define WRITES_PER_ITER 4

typedef struct writer_arg {
    write_graph *g;
    int iter;
    unsigned jitter;
    pthread_barrier_t *start;
    write_rec recs[WRITES_PER_ITER];
} writer_arg;

/* Write k of iteration `iter`, retried while it fails typed (at most 3 times). */
static void one_write(write_graph *g, int iter, int k, write_rec *r)
{
    memset(r, 0, sizeof *r);
    char text[256];
    bool mutation = k == 3;
    if (k == 0 || k == 2)
        snprintf(r->name, sizeof r->name, "p%d_%d", iter, k);
    else if (k == 1)
        snprintf(r->name, sizeof r->name, "c%d_%d", iter, k);
    if (k == 0 || k == 2)
        snprintf(text, sizeof text, "{\"type\":\"Person\",\"data\":{\"name\":\"%s\",\"age\":%d}}\n",
                 r->name, iter);
    else if (k == 1)
        snprintf(text, sizeof text, "{\"type\":\"Company\",\"data\":{\"name\":\"%s\"}}\n", r->name);
    else
        snprintf(text, sizeof text,
                 "query m() { update Person set { age: %d } where name = \"ann\" }\n", 1000 + iter);
    for (int t = 0; t < 4; t++) {
        write_result wr;
        int rc = mutation ? mutate_text(g, text, &wr) : load_text(g, text, &wr);
        if (rc == 0) {
            r->committed = wr.committed;
            r->mver = wr.manifest_version;
            return;
        }
        if (!typed_schema_conflict(rc)) {
            r->bad_rc = rc;
            snprintf(r->bad_msg, sizeof r->bad_msg, "%s", og_error_last()->message);
            return;
        }
        r->attempts++;
    }
    r->bad_rc = OG_E_CONFLICT;
    snprintf(r->bad_msg, sizeof r->bad_msg, "still a schema conflict after %d attempts",
             r->attempts);
}

static void *writer_run(void *arg)
{
    writer_arg *w = arg;
    pthread_barrier_wait(w->start);
    if (w->jitter) usleep(w->jitter);
    for (int k = 0; k < WRITES_PER_ITER; k++)
        one_write(w->g, w->iter, k, &w->recs[k]);
    return NULL;
}

typedef struct race_tally {
    unsigned writes, before_apply, after_apply, typed_failures, violations;
} race_tally;

/* Judge one iteration: the apply at manifest version amver landed schema id; recs are the
 * writer's. NULL, or what is wrong. */
static const char *judge_iteration(store *s, int iter, uint64_t amver, const char *id,
                                   const write_rec *recs, race_tally *t, char *why, size_t cap)
{
    const char *bad = check_versions_after(s, amver, id, why, cap);
    if (bad) return bad;
    char *c = wf_content(s, NULL);
    if (!c) return "content";
    char extra[32];
    snprintf(extra, sizeof extra, "\"extra_%d\":null", iter);
    for (int k = 0; k < WRITES_PER_ITER && !bad; k++) {
        const write_rec *r = &recs[k];
        t->writes++;
        t->typed_failures += (unsigned)r->attempts;
        if (r->bad_rc) {
            snprintf(why, cap, "write %d: %s: %s", k, og_code_name(r->bad_rc), r->bad_msg);
            bad = why;
            break;
        }
        if (!r->committed) {
            snprintf(why, cap, "write %d committed nothing", k);
            bad = why;
            break;
        }
        if (r->mver == amver) {
            snprintf(why, cap, "write %d at the apply's own version", k);
            bad = why;
            break;
        }
        if (r->mver < amver)
            t->before_apply++;
        else
            t->after_apply++;
        /* landed: its row is there, in the migrated table (the new column, null) */
        if (r->name[0]) {
            char pat[96];
            snprintf(pat, sizeof pat, "\"name\":\"%s\"", r->name);
            const char *row = strstr(c, pat);
            const char *eol = row ? strchr(row, '\n') : NULL;
            if (!row) {
                snprintf(why, cap, "write %d's %s is not there", k, r->name);
                bad = why;
            } else if (r->name[0] == 'p' &&
                       (!strstr(row, extra) || (eol && strstr(row, extra) > eol))) {
                snprintf(why, cap, "%s is not migrated: %.*s", r->name, (int)(eol ? eol - row : 80),
                         row);
                bad = why;
            }
        }
    }
    free(c);
    if (!bad && sidecars(s)) bad = "a sidecar was left";
    return bad;
}

static void test_random_threads(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "srace-rand-thr");
    unsigned seed = test_seed();
    int iters = iterations(30);
    print_message("apply vs writer (threads): seed %u (OG_TEST_SEED), %d iterations\n", seed,
                  iters);
    write_graph *ga = NULL, *gw = NULL;
    assert_og_ok(wf_open(&ga, dir));
    assert_og_ok(wf_open(&gw, dir));
    store *s = ga->h->s;
    unsigned rnd = seed;
    race_tally t = {0};
    for (int it = 0; it < iters; it++) {
        char *next = schema_with(it + 1, false);
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, 2);
        writer_arg w;
        memset(&w, 0, sizeof w);
        w.g = gw;
        w.iter = it;
        w.jitter = rand_r(&rnd) % 4000;
        w.start = &start;
        unsigned ajit = rand_r(&rnd) % 4000;
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, writer_run, &w), 0);
        pthread_barrier_wait(&start);
        if (ajit) usleep(ajit);
        write_schema_result res;
        int rc = apply_src(ga, next, &res);
        pthread_join(th, NULL);
        pthread_barrier_destroy(&start);
        if (rc) fail_msg("iteration %d: the apply: %s", it, og_error_last()->message);
        char why[600];
        const char *bad = judge_iteration(s, it, res.wr.manifest_version, res.to_identity, w.recs,
                                          &t, why, sizeof why);
        if (bad) {
            t.violations++;
            fail_msg("iteration %d (seed %u): %s", it, seed, bad);
        }
        char mid[GRAPH_SCHEMA_HASH_LEN + 1];
        mirror_of(s, mid);
        assert_string_equal(mid, res.to_identity);
        write_schema_result_clear(&res);
        free(next);
    }
    print_message("apply vs writer (threads): %d iterations, %u writes (%u before the apply's "
                  "commit, %u after), %u typed schema conflicts made again, %u violations\n",
                  iters, t.writes, t.before_apply, t.after_apply, t.typed_failures, t.violations);
    assert_int_equal(t.writes, (unsigned)iters * WRITES_PER_ITER);
    assert_sound_main(s);
    write_graph_close(ga);
    write_graph_close(gw);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

static void test_random_processes(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "srace-rand-proc");
    unsigned seed = test_seed();
    int iters = iterations(30) / 3;
    if (iters < 1) iters = 1;
    print_message("apply vs writer (processes): seed %u (OG_TEST_SEED), %d iterations\n", seed,
                  iters);
    write_graph *ga = NULL;
    assert_og_ok(wf_open(&ga, dir));
    store *s = ga->h->s;
    unsigned rnd = seed;
    race_tally t = {0};
    for (int it = 0; it < iters; it++) {
        char *next = schema_with(it + 1, false);
        unsigned wjit = rand_r(&rnd) % 6000, ajit = rand_r(&rnd) % 6000;
        int go[2], rep[2];
        assert_int_equal(pipe(go), 0);
        assert_int_equal(pipe(rep), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(go[1]);
            close(rep[0]);
            write_graph *c = NULL;
            if (wf_open(&c, dir) != 0) _exit(80);
            char ch;
            if (read(go[0], &ch, 1) != 1) _exit(81);
            if (wjit) usleep(wjit);
            write_rec recs[WRITES_PER_ITER];
            for (int k = 0; k < WRITES_PER_ITER; k++)
                one_write(c, it, k, &recs[k]);
            if (write(rep[1], recs, sizeof recs) != (ssize_t)sizeof recs) _exit(82);
            write_graph_close(c);
            _exit(0);
        }
        close(go[0]);
        close(rep[1]);
        assert_int_equal(write(go[1], "g", 1), 1);
        if (ajit) usleep(ajit);
        write_schema_result res;
        int rc = apply_src(ga, next, &res);
        write_rec recs[WRITES_PER_ITER];
        size_t got = 0;
        ssize_t n;
        while (got < sizeof recs && (n = read(rep[0], (char *)recs + got, sizeof recs - got)) > 0)
            got += (size_t)n;
        wait_child(pid);
        close(go[1]);
        close(rep[0]);
        assert_int_equal(got, sizeof recs);
        if (rc == OG_E_CONFLICT && strstr(og_error_last()->message, "schema changed")) {
            fail_msg("iteration %d: the apply's handle is the only one applying", it);
        }
        if (rc) fail_msg("iteration %d: the apply: %s", it, og_error_last()->message);
        char why[600];
        const char *bad = judge_iteration(s, it, res.wr.manifest_version, res.to_identity, recs, &t,
                                          why, sizeof why);
        if (bad) {
            t.violations++;
            fail_msg("iteration %d (seed %u): %s", it, seed, bad);
        }
        write_schema_result_clear(&res);
        free(next);
    }
    print_message("apply vs writer (processes): %d iterations, %u writes (%u before the apply's "
                  "commit, %u after), %u typed schema conflicts made again, %u violations\n",
                  iters, t.writes, t.before_apply, t.after_apply, t.typed_failures, t.violations);
    assert_int_equal(t.writes, (unsigned)iters * WRITES_PER_ITER);
    assert_sound_main(s);
    write_graph_close(ga);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

/* ---- cell 4: two applies ------------------------------------------------------------------- */

typedef struct applier {
    write_graph *g;
    const char *src;
    unsigned jitter;
    pthread_barrier_t *start;
    int rc;
    char msg[400];
    write_schema_result res;
} applier;

static void *applier_run(void *arg)
{
    applier *a = arg;
    pthread_barrier_wait(a->start);
    if (a->jitter) usleep(a->jitter);
    a->rc = apply_src(a->g, a->src, &a->res);
    snprintf(a->msg, sizeof a->msg, "%s", a->rc ? og_error_last()->message : "");
    return NULL;
}

typedef struct two_tally {
    unsigned a_won, b_won, loser_typed, loser_noop, serial;
} two_tally;

/* Both applies committed. That is serializable only when one was planned against the schema
 * the other committed (it read the other's outcome: it ran after it, not beside it), and
 * published after it; then the later one's schema is the graph's. Two applies planned against
 * the same schema that both commit are a lost update. */
static void judge_serial(store *s, const write_schema_result *a, const write_schema_result *b,
                         two_tally *t)
{
    const write_schema_result *first = NULL, *later = NULL;
    if (strcmp(b->from_identity, a->to_identity) == 0) {
        first = a;
        later = b;
    } else if (strcmp(a->from_identity, b->to_identity) == 0) {
        first = b;
        later = a;
    } else {
        fail_msg("two applies both committed: A planned against %s (to %s, manifest version "
                 "%llu), B against %s (to %s, manifest version %llu): neither read the other's "
                 "schema, a lost update",
                 a->from_identity, a->to_identity, (unsigned long long)a->wr.manifest_version,
                 b->from_identity, b->to_identity, (unsigned long long)b->wr.manifest_version);
    }
    if (later->wr.manifest_version <= first->wr.manifest_version)
        fail_msg("the apply planned against %s committed at manifest version %llu, not after "
                 "the apply that made that schema (%llu)",
                 later->from_identity, (unsigned long long)later->wr.manifest_version,
                 (unsigned long long)first->wr.manifest_version);
    t->serial++;
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, s, NULL, 0, 0));
    assert_string_equal(snap->schema_identity, later->to_identity);
    graph_snapshot_free(snap);
    char mid[GRAPH_SCHEMA_HASH_LEN + 1];
    mirror_of(s, mid);
    assert_string_equal(mid, later->to_identity);
    graph_snapshot *at = NULL;
    assert_og_ok(graph_snapshot_load(&at, s, NULL, first->wr.manifest_version, 0));
    assert_string_equal(at->schema_identity, first->to_identity);
    graph_snapshot_free(at);
    assert_versions_after(s, later->wr.manifest_version, later->to_identity);
    assert_sound_main(s);
}

/* One of two applies (planned against the same schema) won: the other failed typed, or was a
 * no-op when both asked for the same schema. The schema row and the mirror name the winner.
 * Both committing is judged by what each was planned against (judge_serial). */
static void judge_two(store *s, int rc_a, const write_schema_result *a, const char *msg_a, int rc_b,
                      const write_schema_result *b, const char *msg_b, bool same, two_tally *t)
{
    bool a_won = rc_a == 0 && a->wr.committed, b_won = rc_b == 0 && b->wr.committed;
    if (a_won && b_won) {
        judge_serial(s, a, b, t);
        return;
    }
    if (a_won == b_won)
        fail_msg("two applies: %s (%s) and %s (%s)", og_code_name(rc_a), msg_a, og_code_name(rc_b),
                 msg_b);
    int rc_l = a_won ? rc_b : rc_a;
    const write_schema_result *w = a_won ? a : b, *l = a_won ? b : a;
    const char *msg_l = a_won ? msg_b : msg_a;
    if (rc_l == 0) {
        if (!same || l->wr.committed) fail_msg("the losing apply did not fail: %s", msg_l);
        t->loser_noop++;
    } else if (rc_l == OG_E_CONFLICT &&
               (strstr(msg_l, "schema changed") || strstr(msg_l, "plan it again"))) {
        t->loser_typed++;
    } else {
        fail_msg("the losing apply: %s: %s", og_code_name(rc_l), msg_l);
    }
    t->a_won += a_won;
    t->b_won += b_won;
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, s, NULL, 0, 0));
    assert_string_equal(snap->schema_identity, w->to_identity);
    graph_snapshot_free(snap);
    char mid[GRAPH_SCHEMA_HASH_LEN + 1];
    mirror_of(s, mid);
    assert_string_equal(mid, w->to_identity);
    assert_versions_after(s, w->wr.manifest_version, w->to_identity);
    assert_sound_main(s);
}

static void test_two_applies_threads(void **state)
{
    (void)state;
    unsigned seed = test_seed();
    int iters = iterations(30) / 3;
    if (iters < 2) iters = 2;
    print_message("two applies (threads): seed %u, %d iterations\n", seed, iters);
    unsigned rnd = seed;
    two_tally t = {0};
    for (int it = 0; it < iters; it++) {
        bool same = it % 2 == 1;
        char dir[256];
        new_graph(dir, sizeof dir, "srace-two");
        write_graph *ga = NULL, *gb = NULL;
        assert_og_ok(wf_open(&ga, dir));
        assert_og_ok(wf_open(&gb, dir));
        char *sa = schema_with(1, false), *sb = schema_with(same ? 1 : 2, true);
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, 2);
        /* a random head start (up to about a prepare's length), to A or to B by turns */
        unsigned head = (unsigned)(rand_r(&rnd) % 40000);
        unsigned ja = rand_r(&rnd) % 3000 + (it % 2 ? head : 0);
        unsigned jb = rand_r(&rnd) % 3000 + (it % 2 ? 0 : head);
        applier a = {.g = ga, .src = sa, .jitter = ja, .start = &start, .rc = -1};
        applier b = {.g = gb, .src = sb, .jitter = jb, .start = &start, .rc = -1};
        pthread_t ta, tb;
        assert_int_equal(pthread_create(&ta, NULL, applier_run, &a), 0);
        assert_int_equal(pthread_create(&tb, NULL, applier_run, &b), 0);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        pthread_barrier_destroy(&start);
        judge_two(ga->h->s, a.rc, &a.res, a.msg, b.rc, &b.res, b.msg, same, &t);
        write_schema_result_clear(&a.res);
        write_schema_result_clear(&b.res);
        free(sa);
        free(sb);
        write_graph_close(ga);
        write_graph_close(gb);
        wf_assert_sound(dir);
        test_sandbox_done(dir);
    }
    print_message("two applies (threads): %d iterations: A won %u, B won %u; the loser failed "
                  "typed %u, was a no-op %u; one ran after the other %u\n",
                  iters, t.a_won, t.b_won, t.loser_typed, t.loser_noop, t.serial);
    assert_int_equal(t.a_won + t.b_won + t.serial, (unsigned)iters);
}

/* Deterministic: apply A's window holds apply B (to another schema), whole: A fails typed,
 * and the mirror stays B's (A's commit never happened). */
static void test_two_applies_deterministic(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "srace-two-det");
    write_graph *ga = NULL, *gb = NULL;
    assert_og_ok(wf_open(&ga, dir));
    assert_og_ok(wf_open(&gb, dir));
    char *sa = schema_with(1, false), *sb = schema_with(2, true);
    apply_in_window w = {.other = gb, .src = sb, .rc = -1};
    ga->test_after_prepare = apply_hook;
    ga->test_arg = &w;
    write_schema_result ra;
    int rc = apply_src(ga, sa, &ra);
    ga->test_after_prepare = NULL;
    assert_int_equal(w.rc, 0);
    assert_int_equal(w.hits, 1);
    assert_int_equal(rc, OG_E_CONFLICT);
    char msg[400];
    snprintf(msg, sizeof msg, "%s", og_error_last()->message);
    print_message("an apply whose window held another apply: %s\n", msg);
    two_tally t = {0};
    judge_two(ga->h->s, rc, &ra, msg, w.rc, &w.res, "", false, &t);
    assert_int_equal(t.b_won, 1);
    /* planned again against the winner, A lands on top of it (Project stays: A's schema lacks
     * it, so it is dropped, soft) */
    write_schema_result_clear(&ra);
    must_apply(ga, sa, &ra);
    char mid[GRAPH_SCHEMA_HASH_LEN + 1];
    mirror_of(ga->h->s, mid);
    assert_string_equal(mid, ra.to_identity);
    write_schema_result_clear(&ra);
    write_schema_result_clear(&w.res);
    free(sa);
    free(sb);
    write_graph_close(ga);
    write_graph_close(gb);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

static void test_two_applies_processes(void **state)
{
    (void)state;
    unsigned seed = test_seed();
    int iters = iterations(30) / 5;
    if (iters < 2) iters = 2;
    print_message("two applies (processes): seed %u, %d iterations\n", seed, iters);
    unsigned rnd = seed;
    two_tally t = {0};
    for (int it = 0; it < iters; it++) {
        bool same = it % 2 == 1;
        char dir[256];
        new_graph(dir, sizeof dir, "srace-two-proc");
        char *sa = schema_with(1, false), *sb = schema_with(same ? 1 : 2, true);
        const char *srcs[2] = {sa, sb};
        int go[2], ready[2], rep[2][2];
        assert_int_equal(pipe(go), 0);
        assert_int_equal(pipe(ready), 0);
        pid_t pids[2];
        for (int c = 0; c < 2; c++) {
            assert_int_equal(pipe(rep[c]), 0);
            /* the head start alternates between the two children */
            unsigned jit = rand_r(&rnd) % 5000 + ((unsigned)(it + c) % 2 ? 20000 : 0);
            pids[c] = fork();
            assert_true(pids[c] >= 0);
            if (pids[c] == 0) {
                close(go[1]);
                close(ready[0]);
                close(rep[c][0]);
                write_graph *g = NULL;
                if (wf_open(&g, dir) != 0) _exit(80);
                /* opened (the handle has read the schema its apply plans against) */
                if (write(ready[1], "r", 1) != 1) _exit(83);
                char ch;
                if (read(go[0], &ch, 1) != 1) _exit(81);
                if (jit) usleep(jit);
                write_schema_result res;
                int rc = apply_src(g, srcs[c], &res);
                char out[900];
                int n = snprintf(out, sizeof out, "%d %d %llu %s %s %s", rc, (int)res.wr.committed,
                                 (unsigned long long)res.wr.manifest_version,
                                 res.to_identity[0] ? res.to_identity : "-",
                                 res.from_identity[0] ? res.from_identity : "-",
                                 rc ? og_error_last()->message : "");
                if (write(rep[c][1], out, (size_t)n) != n) _exit(82);
                write_graph_close(g);
                _exit(0);
            }
            close(rep[c][1]);
        }
        close(go[0]);
        /* Both handles are open before either apply starts: a child slow to open would plan
         * against the schema the other had committed already, an apply after it, not beside
         * it. */
        close(ready[1]);
        char rd[2];
        size_t got = 0;
        ssize_t nr;
        while (got < 2 && (nr = read(ready[0], rd + got, 2 - got)) > 0)
            got += (size_t)nr;
        close(ready[0]);
        if (got != 2) fail_msg("a child did not open the graph");
        assert_int_equal(write(go[1], "gg", 2), 2);
        int rcs[2];
        write_schema_result res[2];
        char msgs[2][900];
        for (int c = 0; c < 2; c++) {
            char buf[1000];
            read_all(rep[c][0], buf, sizeof buf);
            wait_child(pids[c]);
            close(rep[c][0]);
            memset(&res[c], 0, sizeof res[c]);
            int committed = 0, used = 0;
            unsigned long long mver = 0;
            char id[64] = "", from[64] = "";
            if (sscanf(buf, "%d %d %llu %63s %63s %n", &rcs[c], &committed, &mver, id, from,
                       &used) < 5)
                fail_msg("bad report: %s", buf);
            res[c].wr.committed = committed;
            res[c].wr.manifest_version = mver;
            snprintf(res[c].to_identity, sizeof res[c].to_identity, "%.32s", id);
            snprintf(res[c].from_identity, sizeof res[c].from_identity, "%.32s", from);
            snprintf(msgs[c], sizeof msgs[c], "%s", used ? buf + used : "");
        }
        close(go[1]);
        store *s = wf_store(dir);
        judge_two(s, rcs[0], &res[0], msgs[0], rcs[1], &res[1], msgs[1], same, &t);
        store_close(s);
        free(sa);
        free(sb);
        wf_assert_sound(dir);
        test_sandbox_done(dir);
    }
    print_message("two applies (processes): %d iterations: A won %u, B won %u; the loser failed "
                  "typed %u, was a no-op %u; one ran after the other %u\n",
                  iters, t.a_won, t.b_won, t.loser_typed, t.loser_noop, t.serial);
    assert_int_equal(t.a_won + t.b_won + t.serial, (unsigned)iters);
}

/* ---- cell 5: apply vs branch create --------------------------------------------------------- */

typedef struct branch_in_window {
    write_graph *other;
    int hits, rc;
} branch_in_window;

static void branch_hook(void *arg)
{
    branch_in_window *w = arg;
    if (w->hits++) return;
    w->rc = write_branch_create(w->other, "dev", NULL, NULL, NULL);
}

static bool branch_exists(store *s, const char *name)
{
    lance_branch ref;
    int rc = lance_branch_get(s, GRAPH_MANIFEST_DIR, name, &ref);
    og_error_clear();
    return rc == 0;
}

static void test_branch_in_apply_window(void **state)
{
    (void)state;
    char dir[256];
    new_graph(dir, sizeof dir, "srace-branch-det");
    write_graph *ga = NULL, *gb = NULL;
    assert_og_ok(wf_open(&ga, dir));
    assert_og_ok(wf_open(&gb, dir));
    store *s = ga->h->s;
    char *old_id = identity_of(ga);
    graph_snapshot *before = NULL;
    assert_og_ok(graph_snapshot_load(&before, s, NULL, 0, 0));
    char *next = schema_with(1, true);
    branch_in_window w = {gb, 0, -1};
    ga->test_after_prepare = branch_hook;
    ga->test_arg = &w;
    write_schema_result res;
    int rc = apply_src(ga, next, &res);
    ga->test_after_prepare = NULL;
    assert_int_equal(w.rc, 0);
    assert_int_equal(w.hits, 1);
    assert_og_error(rc, OG_E_PRECONDITION_FAILED);
    assert_non_null(strstr(og_error_last()->message, "dev"));
    print_message("a branch created in the apply's window: %s\n", og_error_last()->message);
    assert_false(res.wr.committed);
    graph_snapshot *after = NULL;
    assert_og_ok(graph_snapshot_load(&after, s, NULL, 0, 0));
    assert_int_equal(after->manifest_version, before->manifest_version);
    assert_string_equal(after->schema_identity, old_id);
    char mid[GRAPH_SCHEMA_HASH_LEN + 1];
    mirror_of(s, mid);
    assert_string_equal(mid, old_id);
    graph_snapshot_free(after);
    graph_snapshot_free(before);
    /* the branch is under the old schema; deleted, the apply lands, and a branch made now has
     * the new schema */
    graph_snapshot *dev = NULL;
    assert_og_ok(graph_snapshot_load(&dev, s, "dev", 0, 0));
    assert_string_equal(dev->schema_identity, old_id);
    graph_snapshot_free(dev);
    assert_og_ok(write_branch_delete(ga, "dev", NULL, NULL));
    write_schema_result_clear(&res);
    must_apply(ga, next, &res);
    assert_og_ok(write_branch_create(gb, "dev2", NULL, NULL, NULL));
    assert_og_ok(graph_snapshot_load(&dev, s, "dev2", 0, 0));
    assert_string_equal(dev->schema_identity, res.to_identity);
    graph_snapshot_free(dev);
    write_schema_result_clear(&res);
    assert_sound_main(s);
    free(next);
    free(old_id);
    write_graph_close(ga);
    write_graph_close(gb);
    test_sandbox_done(dir);
}

typedef struct brancher {
    write_graph *g;
    unsigned jitter;
    pthread_barrier_t *start;
    int rc;
    char msg[300];
} brancher;

static void *brancher_run(void *arg)
{
    brancher *b = arg;
    pthread_barrier_wait(b->start);
    if (b->jitter) usleep(b->jitter);
    b->rc = write_branch_create(b->g, "dev", NULL, NULL, NULL);
    snprintf(b->msg, sizeof b->msg, "%s", b->rc ? og_error_last()->message : "");
    return NULL;
}

typedef struct branch_tally {
    unsigned refused, applied_first;
} branch_tally;

/* The apply and the branch create both ran: either the apply refused (the branch existed
 * first, under the old schema, and main is unchanged) or the apply landed and the branch was
 * created after it, under the new schema. */
static void judge_branch(store *s, const char *old_id, int rc_apply, const write_schema_result *r,
                         const char *amsg, int rc_branch, const char *bmsg, branch_tally *t)
{
    if (rc_branch) fail_msg("branch create: %s: %s", og_code_name(rc_branch), bmsg);
    assert_true(branch_exists(s, "dev"));
    graph_snapshot *dev = NULL, *m = NULL;
    assert_og_ok(graph_snapshot_load(&dev, s, "dev", 0, 0));
    assert_og_ok(graph_snapshot_load(&m, s, NULL, 0, 0));
    char mid[GRAPH_SCHEMA_HASH_LEN + 1];
    mirror_of(s, mid);
    if (rc_apply == OG_E_PRECONDITION_FAILED) {
        if (!strstr(amsg, "dev")) fail_msg("the refusal does not name the branch: %s", amsg);
        assert_string_equal(m->schema_identity, old_id);
        assert_string_equal(dev->schema_identity, old_id);
        assert_string_equal(mid, old_id);
        t->refused++;
    } else if (rc_apply == 0 && r->wr.committed) {
        assert_string_equal(m->schema_identity, r->to_identity);
        assert_string_equal(dev->schema_identity, r->to_identity);
        assert_string_equal(mid, r->to_identity);
        assert_true(dev->manifest_version >= r->wr.manifest_version);
        t->applied_first++;
    } else {
        fail_msg("the apply: %s: %s", og_code_name(rc_apply), amsg);
    }
    graph_snapshot_free(dev);
    graph_snapshot_free(m);
    assert_sound_main(s);
}

static void test_branch_race_threads(void **state)
{
    (void)state;
    unsigned seed = test_seed();
    int iters = iterations(30) / 3;
    if (iters < 2) iters = 2;
    print_message("apply vs branch create (threads): seed %u, %d iterations\n", seed, iters);
    unsigned rnd = seed;
    branch_tally t = {0};
    for (int it = 0; it < iters; it++) {
        char dir[256];
        new_graph(dir, sizeof dir, "srace-branch");
        write_graph *ga = NULL, *gb = NULL;
        assert_og_ok(wf_open(&ga, dir));
        assert_og_ok(wf_open(&gb, dir));
        char *old_id = identity_of(ga);
        char *next = schema_with(1, true);
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, 2);
        /* every other iteration the create comes late (inside or after the apply) */
        unsigned bjit = rand_r(&rnd) % 3000 + (it % 2 ? (unsigned)(rand_r(&rnd) % 150000) : 0);
        brancher b = {gb, bjit, &start, -1, ""};
        unsigned ajit = rand_r(&rnd) % 3000;
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, brancher_run, &b), 0);
        pthread_barrier_wait(&start);
        if (ajit) usleep(ajit);
        write_schema_result res;
        int rc = apply_src(ga, next, &res);
        char amsg[600];
        snprintf(amsg, sizeof amsg, "%s", rc ? og_error_last()->message : "");
        pthread_join(th, NULL);
        pthread_barrier_destroy(&start);
        judge_branch(ga->h->s, old_id, rc, &res, amsg, b.rc, b.msg, &t);
        write_schema_result_clear(&res);
        free(next);
        free(old_id);
        write_graph_close(ga);
        write_graph_close(gb);
        test_sandbox_done(dir);
    }
    print_message("apply vs branch create (threads): %d iterations: refused %u, applied before "
                  "the create %u\n",
                  iters, t.refused, t.applied_first);
    assert_int_equal(t.refused + t.applied_first, (unsigned)iters);
}

static void test_branch_race_processes(void **state)
{
    (void)state;
    unsigned seed = test_seed();
    int iters = iterations(30) / 5;
    if (iters < 2) iters = 2;
    print_message("apply vs branch create (processes): seed %u, %d iterations\n", seed, iters);
    unsigned rnd = seed;
    branch_tally t = {0};
    for (int it = 0; it < iters; it++) {
        char dir[256];
        new_graph(dir, sizeof dir, "srace-branch-proc");
        write_graph *ga = NULL;
        assert_og_ok(wf_open(&ga, dir));
        char *old_id = identity_of(ga);
        char *next = schema_with(1, true);
        unsigned bjit = rand_r(&rnd) % 5000 + (it % 2 ? (unsigned)(rand_r(&rnd) % 200000) : 0),
                 ajit = rand_r(&rnd) % 5000;
        int go[2], rep[2];
        assert_int_equal(pipe(go), 0);
        assert_int_equal(pipe(rep), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(go[1]);
            close(rep[0]);
            write_graph *c = NULL;
            if (wf_open(&c, dir) != 0) _exit(80);
            char ch;
            if (read(go[0], &ch, 1) != 1) _exit(81);
            if (bjit) usleep(bjit);
            int rc = write_branch_create(c, "dev", NULL, NULL, NULL);
            char out[600];
            int n = snprintf(out, sizeof out, "%d %s", rc, rc ? og_error_last()->message : "");
            if (write(rep[1], out, (size_t)n) != n) _exit(82);
            write_graph_close(c);
            _exit(0);
        }
        close(go[0]);
        close(rep[1]);
        assert_int_equal(write(go[1], "g", 1), 1);
        if (ajit) usleep(ajit);
        write_schema_result res;
        int rc = apply_src(ga, next, &res);
        char amsg[600];
        snprintf(amsg, sizeof amsg, "%s", rc ? og_error_last()->message : "");
        char buf[700];
        read_all(rep[0], buf, sizeof buf);
        wait_child(pid);
        close(go[1]);
        close(rep[0]);
        int brc = -1, used = 0;
        if (sscanf(buf, "%d %n", &brc, &used) < 1) fail_msg("bad report: %s", buf);
        judge_branch(ga->h->s, old_id, rc, &res, amsg, brc, buf + used, &t);
        write_schema_result_clear(&res);
        free(next);
        free(old_id);
        write_graph_close(ga);
        test_sandbox_done(dir);
    }
    print_message("apply vs branch create (processes): %d iterations: refused %u, applied "
                  "before the create %u\n",
                  iters, t.refused, t.applied_first);
    assert_int_equal(t.refused + t.applied_first, (unsigned)iters);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_paused_threads),
        cmocka_unit_test(test_write_paused_processes),
        cmocka_unit_test(test_apply_paused_threads),
        cmocka_unit_test(test_apply_paused_process),
        cmocka_unit_test(test_random_threads),
        cmocka_unit_test(test_random_processes),
        cmocka_unit_test(test_two_applies_deterministic),
        cmocka_unit_test(test_two_applies_threads),
        cmocka_unit_test(test_two_applies_processes),
        cmocka_unit_test(test_branch_in_apply_window),
        cmocka_unit_test(test_branch_race_threads),
        cmocka_unit_test(test_branch_race_processes),
    };
    cmocka_set_test_filter(getenv("OG_TEST_FILTER"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
