/* The graph-branch control protocol (RFC-022 §7, src/write/branch.c): create, list and delete;
 * names; prefix-disjoint names; racing creators; identity-conditional delete (ABA); delete
 * refused while the branch's gate is held or a branch was forked from it; create and delete
 * make no graph commit (§11.1); cleanup keeps what branches read; crash enumeration of create
 * and delete in both crash modes; the store operations of create, delete and writes on a
 * branch, asserted at two history depths. */
#include "write_fixture.h"

#include "core/alloc.h"
#include "crashsim.h"

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *SCHEMA = "node Person {\n"
                            "    name: String @key\n"
                            "    age: I32?\n"
                            "}\n"
                            "node Company {\n"
                            "    name: String @key\n"
                            "}\n"
                            "edge WorksAt: Person -> Company\n";

static const char *DATA1 = "{\"type\":\"Person\",\"data\":{\"name\":\"ann\",\"age\":1}}\n"
                           "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n"
                           "{\"edge\":\"WorksAt\",\"from\":\"ann\",\"to\":\"acme\"}\n";
static const char *DATA2 = "{\"type\":\"Person\",\"data\":{\"name\":\"bob\",\"age\":2}}\n";

/* A graph with two loads (three commits: genesis, DATA1, DATA2) in a fresh sandbox. */
static write_graph *new_graph(char *dir, size_t cap, const char *tag)
{
    test_sandbox_new(dir, cap, tag);
    store *s = wf_store(dir);
    write_init_result ir;
    assert_og_ok(write_init(s, SCHEMA, strlen(SCHEMA), "s.pg", &ir));
    write_graph *g = NULL;
    assert_og_ok(write_graph_open(&g, s, dir, NULL));
    assert_og_ok(wf_load(g, DATA1, EXEC_LOAD_APPEND, NULL));
    assert_og_ok(wf_load(g, DATA2, EXEC_LOAD_APPEND, NULL));
    return g;
}

static graph_snapshot *main_lineage(write_graph *g)
{
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, g->h->s, NULL, 0, GRAPH_SNAP_LINEAGE));
    return snap;
}

static size_t count_branches(write_graph *g)
{
    write_branch_info *b = NULL;
    size_t n = 0;
    assert_og_ok(write_branch_list(g->h->s, &b, &n));
    core_free(b);
    return n;
}

static void test_create_list_delete(void **state)
{
    (void)state;
    char dir[256];
    write_graph *g = new_graph(dir, sizeof dir, "branch-basic");
    graph_snapshot *before = main_lineage(g);
    assert_int_equal(before->n_commits, 3);

    write_branch_info b;
    assert_og_ok(write_branch_create(g, "dev", NULL, NULL, &b));
    assert_string_equal(b.name, "dev");
    assert_string_equal(b.parent, "main");
    assert_string_equal(b.forked_from, before->head);
    assert_string_equal(b.head, before->head);
    assert_int_equal(b.fork_version, before->manifest_version);
    assert_int_equal(b.manifest_version, before->manifest_version);
    assert_true(b.identity[0] != '\0');

    /* at an older commit (its id, and by manifest version), and from another branch */
    const graph_commit *first_load = &before->commits[1];
    assert_og_ok(write_branch_create(g, "old", NULL, first_load->id, &b));
    assert_string_equal(b.forked_from, first_load->id);
    assert_int_equal(b.fork_version, first_load->manifest_version);
    char ver[24];
    snprintf(ver, sizeof ver, "%llu", (unsigned long long)first_load->manifest_version);
    assert_og_ok(write_branch_create(g, "old2", NULL, ver, &b));
    assert_string_equal(b.forked_from, first_load->id);
    assert_int_equal(write_branch_create(g, "dev/feature", "old", NULL, &b), OG_E_EXISTS);
    assert_og_ok(write_branch_create(g, "feature", "old", NULL, &b));
    assert_string_equal(b.parent, "old");
    assert_string_equal(b.forked_from, first_load->id);

    /* the snapshot of a fresh branch: the tables and head of its fork point */
    graph_snapshot *bs = NULL, *ms = NULL;
    assert_og_ok(graph_snapshot_load(&bs, g->h->s, "feature", 0, 0));
    assert_og_ok(graph_snapshot_load(&ms, g->h->s, NULL, first_load->manifest_version, 0));
    assert_string_equal(bs->head, first_load->id);
    assert_int_equal(bs->n_tables, ms->n_tables);
    for (size_t i = 0; i < bs->n_tables; i++) {
        assert_string_equal(bs->tables[i].alias, ms->tables[i].alias);
        assert_int_equal(bs->tables[i].version, ms->tables[i].version);
        assert_null(bs->tables[i].table_branch);
    }
    graph_snapshot_free(bs);
    graph_snapshot_free(ms);

    write_branch_info *all = NULL;
    size_t n = 0;
    assert_og_ok(write_branch_list(g->h->s, &all, &n));
    assert_int_equal(n, 4);
    const char *names[] = {"dev", "feature", "old", "old2"};
    for (size_t i = 0; i < n; i++)
        assert_string_equal(all[i].name, names[i]);
    core_free(all);

    /* §11.1: no create or delete made a commit on main (or moved its manifest) */
    graph_snapshot *after = main_lineage(g);
    assert_int_equal(after->n_commits, before->n_commits);
    assert_int_equal(after->manifest_version, before->manifest_version);
    assert_string_equal(after->head, before->head);
    graph_snapshot_free(after);

    /* delete: children first; then the parent; main never */
    assert_int_equal(write_branch_delete(g, "old", NULL, NULL), OG_E_PRECONDITION_FAILED);
    assert_non_null(strstr(og_error_last()->message, "feature"));
    assert_og_ok(write_branch_delete(g, "feature", NULL, &b));
    assert_string_equal(b.name, "feature");
    assert_og_ok(write_branch_delete(g, "old", NULL, NULL));
    assert_int_equal(write_branch_delete(g, "old", NULL, NULL), OG_E_NOT_FOUND);
    assert_int_equal(write_branch_delete(g, "main", NULL, NULL), OG_E_BAD_REQUEST);
    assert_int_equal(count_branches(g), 2);
    after = main_lineage(g);
    assert_int_equal(after->n_commits, before->n_commits);
    assert_int_equal(after->manifest_version, before->manifest_version);
    graph_snapshot_free(after);

    /* unknown sources */
    assert_int_equal(write_branch_create(g, "x", "nope", NULL, NULL), OG_E_NOT_FOUND);
    assert_int_equal(write_branch_create(g, "x", NULL, "ZZZZZZZZ", NULL), OG_E_NOT_FOUND);
    assert_int_equal(write_branch_create(g, "x", NULL, "99", NULL), OG_E_NOT_FOUND);
    assert_int_equal(count_branches(g), 2);
    graph_snapshot_free(before);
    write_graph_close(g);
    test_sandbox_done(dir);
}

static void test_names(void **state)
{
    (void)state;
    const char *bad[] = {"",     "main",  "-x",  "a/../b", "..",         "a//b",
                         "/a",   "a/",    "a b", "a\tb",   "a\nb",       "_x",
                         "a/_b", "a/./b", ".",   "x.lock", "caf\xc3\xa9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = write_branch_name_check(bad[i]);
        if (rc != OG_E_BAD_REQUEST) fail_msg("name '%s' accepted (rc %d)", bad[i], rc);
    }
    const char *good[] = {"dev", "feature/x", "v1.2", "a-b_c", "Main", "x.y/z"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        assert_og_ok(write_branch_name_check(good[i]));

    char dir[256];
    write_graph *g = new_graph(dir, sizeof dir, "branch-names");
    assert_og_ok(write_branch_create(g, "a", NULL, NULL, NULL));
    assert_int_equal(write_branch_create(g, "a", NULL, NULL, NULL), OG_E_EXISTS);
    assert_int_equal(write_branch_create(g, "a/b", NULL, NULL, NULL), OG_E_EXISTS);
    assert_non_null(strstr(og_error_last()->message, "prefix"));
    assert_og_ok(write_branch_create(g, "c/d", NULL, NULL, NULL));
    assert_int_equal(write_branch_create(g, "c", NULL, NULL, NULL), OG_E_EXISTS);
    assert_og_ok(write_branch_create(g, "ab", NULL, NULL, NULL)); /* not a '/' prefix */
    assert_int_equal(write_branch_create(g, "-z", NULL, NULL, NULL), OG_E_BAD_REQUEST);
    assert_int_equal(count_branches(g), 3);
    write_graph_close(g);
    test_sandbox_done(dir);
}

/* ---- races ------------------------------------------------------------------------------- */

typedef struct racer {
    write_graph *g;
    const char *name;
    pthread_barrier_t *go;
    int rc;
} racer;

static void *race_create(void *arg)
{
    racer *r = arg;
    pthread_barrier_wait(r->go);
    r->rc = write_branch_create(r->g, r->name, NULL, NULL, NULL);
    return NULL;
}

static void test_racing_creators(void **state)
{
    (void)state;
    char dir[256];
    write_graph *g = new_graph(dir, sizeof dir, "branch-race");
    enum { T = 4, ROUNDS = 5 };
    for (int round = 0; round < ROUNDS; round++) {
        /* threads on one writer, and a writer each (separate handles share gates by root) */
        write_graph *own[T] = {0};
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, T);
        racer r[T];
        pthread_t th[T];
        char name[32];
        snprintf(name, sizeof name, "race%d", round);
        for (int i = 0; i < T; i++) {
            if (round % 2) assert_og_ok(wf_open(&own[i], dir));
            r[i] = (racer){own[i] ? own[i] : g, name, &go, -1};
            assert_int_equal(pthread_create(&th[i], NULL, race_create, &r[i]), 0);
        }
        int wins = 0;
        for (int i = 0; i < T; i++) {
            pthread_join(th[i], NULL);
            if (r[i].rc == 0)
                wins++;
            else
                assert_int_equal(r[i].rc, OG_E_EXISTS);
            write_graph_close(own[i]);
        }
        pthread_barrier_destroy(&go);
        assert_int_equal(wins, 1);
    }
    /* processes: no shared in-process gates */
    enum { P = 3 };
    pid_t pids[P];
    for (int i = 0; i < P; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0) {
            write_graph *c = NULL;
            int rc = wf_open(&c, dir);
            if (rc == 0) rc = write_branch_create(c, "proc", NULL, NULL, NULL);
            write_graph_close(c);
            _exit(rc == 0 ? 0 : rc == OG_E_EXISTS ? 1 : 2);
        }
    }
    int wins = 0;
    for (int i = 0; i < P; i++) {
        int st = 0;
        waitpid(pids[i], &st, 0);
        assert_true(WIFEXITED(st));
        assert_true(WEXITSTATUS(st) <= 1);
        wins += WEXITSTATUS(st) == 0;
    }
    assert_int_equal(wins, 1);
    assert_int_equal(count_branches(g), ROUNDS + 1);
    write_graph_close(g);
    test_sandbox_done(dir);
}

/* A delete holding an old identity does not remove a re-created branch of the same name. */
static void test_delete_aba(void **state)
{
    (void)state;
    char dir[256];
    write_graph *g = new_graph(dir, sizeof dir, "branch-aba");
    write_branch_info first, second;
    assert_og_ok(write_branch_create(g, "dev", NULL, NULL, &first));
    assert_og_ok(write_branch_delete(g, "dev", first.identity, NULL));
    assert_og_ok(write_branch_create(g, "dev", NULL, NULL, &second));
    assert_string_not_equal(first.identity, second.identity);
    assert_int_equal(write_branch_delete(g, "dev", first.identity, NULL), OG_E_PRECONDITION_FAILED);
    assert_string_equal(og_error_last()->actual, second.identity);
    assert_int_equal(count_branches(g), 1);
    assert_og_ok(write_branch_delete(g, "dev", second.identity, NULL));
    assert_int_equal(count_branches(g), 0);
    write_graph_close(g);
    test_sandbox_done(dir);
}

/* write_branch_retract (a branch made for a write that then failed): gone while it is exactly
 * as created; kept once it has a commit of its own, was deleted and created again, or a writer
 * holds its gate (then it is in use). */
static void test_retract(void **state)
{
    (void)state;
    char dir[256];
    write_graph *g = new_graph(dir, sizeof dir, "branch-retract");
    write_branch_info info, again;
    assert_og_ok(write_branch_create(g, "dev", NULL, NULL, &info));
    assert_og_ok(write_branch_retract(g, &info));
    assert_int_equal(count_branches(g), 0);
    /* a commit on it since */
    assert_og_ok(write_branch_create(g, "dev", NULL, NULL, &info));
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = "dev";
    write_result res;
    assert_og_ok(wf_load_opt(g, "{\"type\":\"Person\",\"data\":{\"name\":\"cy\"}}\n",
                             EXEC_LOAD_APPEND, &wo, &res));
    assert_int_equal(write_branch_retract(g, &info), OG_E_PRECONDITION_FAILED);
    assert_string_equal(og_error_last()->member, "branch_head");
    assert_int_equal(count_branches(g), 1);
    assert_og_ok(write_branch_delete(g, "dev", NULL, NULL));
    /* deleted and created again: the new one is not the retracted write's */
    assert_og_ok(write_branch_create(g, "dev", NULL, NULL, &info));
    assert_og_ok(write_branch_delete(g, "dev", NULL, NULL));
    assert_og_ok(write_branch_create(g, "dev", NULL, NULL, &again));
    assert_int_equal(write_branch_retract(g, &info), OG_E_PRECONDITION_FAILED);
    assert_int_equal(count_branches(g), 1);
    /* a writer (of another handle) holds its gate */
    write_graph *other = NULL;
    assert_og_ok(wf_open(&other, dir));
    write_gate_key key = {WRITE_GATE_BRANCH, "dev", NULL, false};
    write_gate_set *held = NULL;
    assert_og_ok(write_gates_acquire(other->gates, &key, 1, 1000, &held));
    assert_int_equal(write_branch_retract(g, &again), OG_E_CONFLICT);
    assert_int_equal(count_branches(g), 1);
    write_gate_set_release(held);
    write_graph_close(other);
    assert_og_ok(write_branch_retract(g, &again));
    assert_int_equal(count_branches(g), 0);
    write_graph_close(g);
    test_sandbox_done(dir);
}

/* A delete is refused while a writer holds the branch's gate (and waits for nothing). */
static void test_delete_while_written(void **state)
{
    (void)state;
    char dir[256];
    write_graph *g = new_graph(dir, sizeof dir, "branch-busy");
    assert_og_ok(write_branch_create(g, "dev", NULL, NULL, NULL));
    write_graph *other = NULL;
    assert_og_ok(wf_open(&other, dir));
    write_gate_key key = {WRITE_GATE_BRANCH, "dev", NULL, false};
    write_gate_set *held = NULL;
    assert_og_ok(write_gates_acquire(other->gates, &key, 1, 1000, &held));
    assert_int_equal(write_branch_delete(g, "dev", NULL, NULL), OG_E_CONFLICT);
    assert_non_null(strstr(og_error_last()->message, "being written"));
    assert_int_equal(count_branches(g), 1);
    write_gate_set_release(held);
    assert_og_ok(write_branch_delete(g, "dev", NULL, NULL));
    write_graph_close(other);
    write_graph_close(g);
    test_sandbox_done(dir);
}

/* Cleanup keeps the table versions a branch reads, and frees them once it is gone. */
static void test_cleanup_keeps_branch_pins(void **state)
{
    (void)state;
    char dir[256];
    write_graph *g = new_graph(dir, sizeof dir, "branch-cleanup");
    graph_snapshot *lin = main_lineage(g);
    const graph_commit *first_load = &lin->commits[1];
    assert_og_ok(write_branch_create(g, "old", NULL, first_load->id, NULL));
    for (int i = 0; i < 3; i++) {
        char line[128];
        snprintf(line, sizeof line, "{\"type\":\"Person\",\"data\":{\"name\":\"p%d\"}}\n", i);
        assert_og_ok(wf_load(g, line, EXEC_LOAD_APPEND, NULL));
    }
    write_cleanup_options co = WRITE_CLEANUP_OPTIONS_INIT;
    co.keep = 1;
    write_cleanup_report rep;
    assert_og_ok(write_cleanup(g, &co, &rep));
    /* the branch still reads every table at its pins */
    graph_snapshot *bs = NULL;
    assert_og_ok(graph_snapshot_load(&bs, g->h->s, "old", 0, 0));
    uint64_t persons = 0;
    for (size_t i = 0; i < bs->n_tables; i++) {
        arrow_batch *b = wf_ids(g->h->s, &bs->tables[i]);
        if (strcmp(bs->tables[i].alias, "node:Person") == 0) persons = (uint64_t)b->num_rows;
        arrow_batch_free(b);
    }
    assert_int_equal(persons, 1);
    uint64_t kept_removed = rep.versions_removed;
    graph_snapshot_free(bs);
    /* without the branch, the same cleanup removes the versions it kept */
    assert_og_ok(write_branch_delete(g, "old", NULL, NULL));
    assert_og_ok(write_cleanup(g, &co, &rep));
    assert_true(rep.versions_removed > 0);
    print_message("cleanup removed %llu versions with the branch, %llu more after its delete\n",
                  (unsigned long long)kept_removed, (unsigned long long)rep.versions_removed);
    graph_snapshot_free(lin);
    write_graph_close(g);
    test_sandbox_done(dir);
}

/* ---- crash enumeration --------------------------------------------------------------------- */

typedef struct crash_ctx {
    int deleting;
    char head[GRAPH_ID_LEN + 1];
    uint64_t mver;
    size_t commits;
    unsigned saw_present, saw_absent;
} crash_ctx;

static int setup_crash(store *s, void *vctx)
{
    crash_ctx *c = vctx;
    write_init_result ir;
    int rc = write_init(s, SCHEMA, strlen(SCHEMA), "s.pg", &ir);
    write_graph *g = NULL;
    if (rc == 0) rc = write_graph_open(&g, wf_borrow(s), "", NULL);
    if (rc == 0) rc = wf_load(g, DATA1, EXEC_LOAD_APPEND, NULL);
    if (rc == 0 && c->deleting) rc = write_branch_create(g, "feat/x", NULL, NULL, NULL);
    graph_snapshot *snap = NULL;
    if (rc == 0) rc = graph_snapshot_load(&snap, s, NULL, 0, GRAPH_SNAP_LINEAGE);
    if (rc == 0) {
        memcpy(c->head, snap->head, sizeof c->head);
        c->mver = snap->manifest_version;
        c->commits = snap->n_commits;
    }
    graph_snapshot_free(snap);
    write_graph_close(g);
    return rc;
}

static int op_crash(store *s, void *vctx)
{
    crash_ctx *c = vctx;
    write_graph *g = NULL;
    int rc = write_graph_open(&g, wf_borrow(s), "", NULL);
    if (rc == 0)
        rc = c->deleting ? write_branch_delete(g, "feat/x", NULL, NULL)
                         : write_branch_create(g, "feat/x", NULL, NULL, NULL);
    write_graph_close(g);
    return rc;
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

static int check_branch(store *s, void *vctx, const crashsim_point *pt)
{
    crash_ctx *c = vctx;
    int rc = 0;
    write_graph *g = NULL;
    wf_recovery_counts rec = {0};
    char why[256];
    graph_snapshot *snap = NULL;
    write_branch_info *all = NULL;
    size_t n = 0;
    CHECK(wf_open_recovered(s, &g, &rec, why, sizeof why) == 0, "%s", why);
    CHECK(graph_snapshot_load(&snap, s, NULL, 0, GRAPH_SNAP_LINEAGE) == 0, "main: %s",
          og_error_last()->message);
    CHECK(snap->manifest_version == c->mver && snap->n_commits == c->commits &&
              strcmp(snap->head, c->head) == 0,
          "main moved: version %llu, %zu commits", (unsigned long long)snap->manifest_version,
          snap->n_commits);
    CHECK(write_branch_list(s, &all, &n) == 0, "list: %s", og_error_last()->message);
    CHECK(n <= 1, "%zu branches", n);
    bool present = n == 1;
    if (pt->k == 0)
        CHECK(present != c->deleting && pt->op_rc == 0, "uncrashed run: rc %d", pt->op_rc);
    if (present) {
        c->saw_present++;
        CHECK(strcmp(all[0].name, "feat/x") == 0 && strcmp(all[0].forked_from, c->head) == 0 &&
                  strcmp(all[0].head, c->head) == 0,
              "branch wrong: %s from %s", all[0].name, all[0].forked_from);
        graph_snapshot *bs = NULL;
        CHECK(graph_snapshot_load(&bs, s, "feat/x", 0, 0) == 0, "branch snapshot: %s",
              og_error_last()->message);
        bool same = bs->n_tables == snap->n_tables;
        for (size_t i = 0; same && i < bs->n_tables; i++)
            same = bs->tables[i].version == snap->tables[i].version;
        graph_snapshot_free(bs);
        CHECK(same, "branch tables differ from main's");
        /* follow-up: the name is taken; the branch can be deleted */
        CHECK(write_branch_create(g, "feat/x", NULL, NULL, NULL) == OG_E_EXISTS, "re-create");
        CHECK(write_branch_delete(g, "feat/x", NULL, NULL) == 0, "delete: %s",
              og_error_last()->message);
    } else {
        c->saw_absent++;
        CHECK(write_branch_delete(g, "feat/x", NULL, NULL) == OG_E_NOT_FOUND, "delete absent");
    }
    /* follow-up: the name can be created (leftovers of a torn create or delete are cleared) */
    CHECK(write_branch_create(g, "feat/x", NULL, NULL, NULL) == 0, "create: %s",
          og_error_last()->message);
    CHECK(wf_load(g, DATA2, EXEC_LOAD_APPEND, NULL) == 0, "follow-up load: %s",
          og_error_last()->message);
out:
    core_free(all);
    graph_snapshot_free(snap);
    write_graph_close(g);
    return rc;
}

/* ---- writes and reads on a branch ---------------------------------------------------------- */

static const char *DATA3 = "{\"type\":\"Person\",\"data\":{\"name\":\"cyd\",\"age\":3}}\n"
                           "{\"type\":\"Company\",\"data\":{\"name\":\"initech\"}}\n"
                           "{\"edge\":\"WorksAt\",\"from\":\"cyd\",\"to\":\"initech\"}\n";

static write_result load_on(write_graph *g, const char *branch, const char *text)
{
    graph_change_set cs;
    memset(&cs, 0, sizeof cs);
    exec_load_stats st;
    write_result res;
    memset(&res, 0, sizeof res);
    assert_og_ok(exec_load_parse(&cs, g->h->catalog, text, strlen(text), "d.jsonl",
                                 EXEC_LOAD_APPEND, &st, NULL, NULL));
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = branch;
    int rc = write_changes(g, WRITE_KIND_LOAD, &cs, &wo, &res);
    graph_change_set_clear(&cs);
    if (rc) fail_msg("load on %s: %s", branch, og_error_last()->message);
    return res;
}

static uint64_t rows_of(store *s, const graph_snapshot *snap, const char *alias)
{
    arrow_batch *b = wf_ids(s, graph_snapshot_table(snap, alias));
    uint64_t n = (uint64_t)b->num_rows;
    arrow_batch_free(b);
    return n;
}

/* The first write on a branch forks the tables it touches (and only those); main never moves;
 * the next write on the branch continues on the forks; reads at each commit of the branch see
 * its own history. */
static void test_write_on_branch(void **state)
{
    (void)state;
    char dir[256];
    write_graph *g = new_graph(dir, sizeof dir, "branch-write");
    store *s = g->h->s;
    graph_snapshot *m0 = main_lineage(g);
    assert_og_ok(write_branch_create(g, "dev", NULL, NULL, NULL));

    write_result r1 = load_on(g, "dev", DATA3);
    assert_true(r1.committed);
    graph_snapshot *b1 = NULL;
    assert_og_ok(graph_snapshot_load(&b1, s, "dev", 0, GRAPH_SNAP_LINEAGE));
    assert_string_equal(b1->head, r1.commit_id);
    assert_int_equal(b1->n_commits, m0->n_commits + 1);
    assert_string_equal(b1->commits[0].parent, m0->head); /* parent: the fork commit */
    assert_string_equal(b1->commits[0].branch, "dev");
    for (size_t i = 0; i < b1->n_tables; i++) {
        const graph_table *t = &b1->tables[i];
        const graph_table *mt = graph_snapshot_table(m0, t->alias);
        /* all three tables were touched: each forked at main's pin and moved one version */
        assert_non_null(t->table_branch);
        assert_string_equal(t->table_branch, "dev");
        assert_int_equal(t->version, mt->version + 1);
        char root[STORE_KEY_MAX];
        uint64_t head = 0;
        lance_naming nm;
        assert_og_ok(lance_branch_root(root, t->path, "dev"));
        assert_og_ok(lance_version_latest(s, root, &head, &nm));
        assert_int_equal(head, t->version);
    }
    assert_int_equal(rows_of(s, b1, "node:Person"), rows_of(s, m0, "node:Person") + 1);

    /* main is untouched */
    graph_snapshot *m1 = main_lineage(g);
    assert_string_equal(m1->head, m0->head);
    assert_int_equal(m1->manifest_version, m0->manifest_version);
    for (size_t i = 0; i < m1->n_tables; i++) {
        assert_null(m1->tables[i].table_branch);
        assert_int_equal(m1->tables[i].version, m0->tables[i].version);
    }

    /* a second write on the branch touches one table: no new fork, one version on */
    write_result r2 = load_on(g, "dev", "{\"type\":\"Person\",\"data\":{\"name\":\"dee\"}}\n");
    graph_snapshot *b2 = NULL;
    assert_og_ok(graph_snapshot_load(&b2, s, "dev", 0, 0));
    assert_string_equal(b2->head, r2.commit_id);
    assert_int_equal(graph_snapshot_table(b2, "node:Person")->version,
                     graph_snapshot_table(b1, "node:Person")->version + 1);
    assert_int_equal(graph_snapshot_table(b2, "node:Company")->version,
                     graph_snapshot_table(b1, "node:Company")->version);
    /* a key the branch has is a conflict there, not on main */
    graph_change_set cs;
    memset(&cs, 0, sizeof cs);
    exec_load_stats st;
    assert_og_ok(exec_load_parse(&cs, g->h->catalog, DATA3, strlen(DATA3), "d.jsonl",
                                 EXEC_LOAD_APPEND, &st, NULL, NULL));
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = "dev";
    write_result r3;
    assert_int_equal(write_changes(g, WRITE_KIND_LOAD, &cs, &wo, &r3), OG_E_KEY_CONFLICT);
    wo.branch = NULL;
    assert_og_ok(write_changes(g, WRITE_KIND_LOAD, &cs, &wo, &r3));
    graph_change_set_clear(&cs);
    /* time travel on the branch: its first commit still reads as it was */
    graph_snapshot *back = NULL;
    assert_og_ok(graph_snapshot_load(&back, s, "dev", b1->manifest_version, 0));
    assert_int_equal(rows_of(s, back, "node:Person"), rows_of(s, b1, "node:Person"));
    /* a write on an unknown branch is typed */
    wo.branch = "nope";
    assert_og_ok(exec_load_parse(&cs, g->h->catalog, DATA2, strlen(DATA2), "d.jsonl",
                                 EXEC_LOAD_APPEND, &st, NULL, NULL));
    assert_int_equal(write_changes(g, WRITE_KIND_LOAD, &cs, &wo, &r3), OG_E_NOT_FOUND);
    assert_non_null(strstr(og_error_last()->message, "nope"));
    graph_change_set_clear(&cs);

    /* deleting the branch reclaims its table forks */
    assert_og_ok(write_branch_delete(g, "dev", NULL, NULL));
    lance_branch ref;
    for (size_t i = 0; i < b2->n_tables; i++)
        assert_int_equal(lance_branch_get(s, b2->tables[i].path, "dev", &ref), OG_E_NOT_FOUND);
    /* and a branch of the same name starts afresh from main */
    assert_og_ok(write_branch_create(g, "dev", NULL, NULL, NULL));
    write_result r4 = load_on(g, "dev", "{\"type\":\"Person\",\"data\":{\"name\":\"eve\"}}\n");
    assert_true(r4.committed);
    graph_snapshot_free(back);
    graph_snapshot_free(b2);
    graph_snapshot_free(m1);
    graph_snapshot_free(b1);
    graph_snapshot_free(m0);
    wf_assert_sound(dir);
    write_graph_close(g);
    test_sandbox_done(dir);
}

/* A write whose branch is deleted and created again between its prepare and its gates fails
 * typed (the branch identity is a read-set member) instead of writing into the new branch. */
typedef struct recreate_ctx {
    const char *dir;
    int done;
} recreate_ctx;

static void recreate_branch(void *arg)
{
    recreate_ctx *c = arg;
    if (c->done++) return;
    write_graph *o = NULL;
    assert_og_ok(wf_open(&o, c->dir));
    assert_og_ok(write_branch_delete(o, "dev", NULL, NULL));
    assert_og_ok(write_branch_create(o, "dev", NULL, NULL, NULL));
    write_graph_close(o);
}

static void test_write_races_branch_recreate(void **state)
{
    (void)state;
    char dir[256];
    write_graph *g = new_graph(dir, sizeof dir, "branch-aba-write");
    assert_og_ok(write_branch_create(g, "dev", NULL, NULL, NULL));
    recreate_ctx c = {dir, 0};
    g->test_after_prepare = recreate_branch;
    g->test_arg = &c;
    graph_change_set cs;
    memset(&cs, 0, sizeof cs);
    exec_load_stats st;
    assert_og_ok(exec_load_parse(&cs, g->h->catalog, DATA3, strlen(DATA3), "d.jsonl",
                                 EXEC_LOAD_APPEND, &st, NULL, NULL));
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = "dev";
    write_result res;
    assert_int_equal(write_changes(g, WRITE_KIND_LOAD, &cs, &wo, &res), OG_E_READ_SET_CONFLICT);
    assert_string_equal(og_error_last()->member, "branch_identity");
    graph_change_set_clear(&cs);
    g->test_after_prepare = NULL;
    /* nothing landed on the new branch; a write to it now succeeds */
    graph_snapshot *b = NULL, *m = main_lineage(g);
    assert_og_ok(graph_snapshot_load(&b, g->h->s, "dev", 0, 0));
    assert_string_equal(b->head, m->head);
    graph_snapshot_free(b);
    graph_snapshot_free(m);
    write_result r = load_on(g, "dev", DATA3);
    assert_true(r.committed);
    write_graph_close(g);
    wf_assert_sound(dir);
    test_sandbox_done(dir);
}

/* Crash enumeration of the first write on a new branch touching two tables (two first-touch
 * forks), both crash modes: afterwards the branch shows the old state or the new one, every
 * table it pins is unforked or forked with the pin at its HEAD, no sidecar is left, main never
 * moved, and a follow-up write on the branch succeeds. */
typedef struct fork_ctx {
    char head[GRAPH_ID_LEN + 1];
    uint64_t mver, persons, companies;
    unsigned saw_old, saw_new;
    wf_recovery_counts rec;
} fork_ctx;

static const char *TWO_TABLES = "{\"type\":\"Person\",\"data\":{\"name\":\"cyd\",\"age\":3}}\n"
                                "{\"type\":\"Company\",\"data\":{\"name\":\"initech\"}}\n";

static int setup_fork(store *s, void *vctx)
{
    fork_ctx *c = vctx;
    write_init_result ir;
    int rc = write_init(s, SCHEMA, strlen(SCHEMA), "s.pg", &ir);
    write_graph *g = NULL;
    if (rc == 0) rc = write_graph_open(&g, wf_borrow(s), "", NULL);
    if (rc == 0) rc = wf_load(g, DATA1, EXEC_LOAD_APPEND, NULL);
    if (rc == 0) rc = write_branch_create(g, "dev", NULL, NULL, NULL);
    graph_snapshot *snap = NULL;
    if (rc == 0) rc = graph_snapshot_load(&snap, s, NULL, 0, 0);
    if (rc == 0) {
        memcpy(c->head, snap->head, sizeof c->head);
        c->mver = snap->manifest_version;
    }
    graph_snapshot_free(snap);
    write_graph_close(g);
    return rc;
}

static int op_fork(store *s, void *vctx)
{
    (void)vctx;
    write_graph *g = NULL;
    int rc = write_graph_open(&g, wf_borrow(s), "", NULL);
    graph_change_set cs;
    memset(&cs, 0, sizeof cs);
    exec_load_stats st;
    if (rc == 0)
        rc = exec_load_parse(&cs, g->h->catalog, TWO_TABLES, strlen(TWO_TABLES), "d.jsonl",
                             EXEC_LOAD_APPEND, &st, NULL, NULL);
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = "dev";
    write_result res;
    if (rc == 0) rc = write_changes(g, WRITE_KIND_LOAD, &cs, &wo, &res);
    graph_change_set_clear(&cs);
    write_graph_close(g);
    return rc;
}

static int check_fork(store *s, void *vctx, const crashsim_point *pt)
{
    fork_ctx *c = vctx;
    int rc = 0;
    write_graph *g = NULL;
    char why[256];
    graph_snapshot *m = NULL, *b = NULL;
    CHECK(wf_open_recovered(s, &g, &c->rec, why, sizeof why) == 0, "%s", why);
    CHECK(graph_snapshot_load(&m, s, NULL, 0, 0) == 0, "main: %s", og_error_last()->message);
    CHECK(m->manifest_version == c->mver && strcmp(m->head, c->head) == 0, "main moved");
    CHECK(graph_snapshot_load(&b, s, "dev", 0, 0) == 0, "dev: %s", og_error_last()->message);
    uint64_t persons = rows_of(s, b, "node:Person"), companies = rows_of(s, b, "node:Company");
    bool old_state =
        persons == rows_of(s, m, "node:Person") && companies == rows_of(s, m, "node:Company");
    bool new_state = persons == rows_of(s, m, "node:Person") + 1 &&
                     companies == rows_of(s, m, "node:Company") + 1;
    CHECK(old_state || new_state, "torn branch: %llu persons, %llu companies",
          (unsigned long long)persons, (unsigned long long)companies);
    if (pt->k == 0) CHECK(new_state && pt->op_rc == 0, "uncrashed run: rc %d", pt->op_rc);
    if (new_state)
        c->saw_new++;
    else
        c->saw_old++;
    for (size_t i = 0; i < b->n_tables; i++) {
        const graph_table *t = &b->tables[i];
        char root[STORE_KEY_MAX];
        uint64_t head = 0;
        lance_naming nm;
        CHECK(lance_branch_root(root, t->path, t->table_branch) == 0 &&
                  lance_version_latest(s, root, &head, &nm) == 0,
              "table %s: %s", t->alias, og_error_last()->message);
        CHECK(head == t->version, "table %s pinned at %llu, HEAD %llu", t->alias,
              (unsigned long long)t->version, (unsigned long long)head);
    }
    /* follow-up: the next write on the branch lands */
    graph_change_set cs;
    memset(&cs, 0, sizeof cs);
    exec_load_stats st;
    CHECK(exec_load_parse(&cs, g->h->catalog, DATA2, strlen(DATA2), "d.jsonl", EXEC_LOAD_APPEND,
                          &st, NULL, NULL) == 0,
          "parse");
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = "dev";
    write_result res;
    int wrc = write_changes(g, WRITE_KIND_LOAD, &cs, &wo, &res);
    graph_change_set_clear(&cs);
    CHECK(wrc == 0 && res.committed, "follow-up write on dev: %s", og_error_last()->message);
out:
    graph_snapshot_free(b);
    graph_snapshot_free(m);
    write_graph_close(g);
    return rc;
}

static void test_crash_first_write_on_branch(void **state)
{
    (void)state;
    fork_ctx c;
    memset(&c, 0, sizeof c);
    crashsim_case cc = {"first write on a branch", &c, setup_fork, op_fork, check_fork};
    crashsim_report rep;
    crashsim_run(&cc, &rep);
    print_message("%s: %llu durable ops, %llu crash runs, %llu violations (old %u, new %u; "
                  "recovered %u: %u rolled back, %u rolled forward, %u discarded) %s\n",
                  cc.name, (unsigned long long)rep.n, (unsigned long long)rep.runs,
                  (unsigned long long)rep.violations, c.saw_old, c.saw_new, c.rec.recovered,
                  c.rec.rolled_back, c.rec.rolled_forward, c.rec.discarded, rep.first);
    assert_int_equal(rep.violations, 0);
    assert_true(c.saw_old > 0 && c.saw_new > 0);
    assert_true(c.rec.rolled_back > 0 && c.rec.discarded > 0);
}

/* ---- costs --------------------------------------------------------------------------------
 * Store operations of the branch operations at two history depths, asserted (docs/maintenance.md,
 * "Graph branches"). A write's count splits into the reads of a table's data files that
 * validation makes (one per fragment its key index does not cover: they follow how compacted
 * the table is, not the protocol) and the rest, its protocol operations. Against a write on main, a
 * write on a branch makes BRANCH_OPS more:
 *  - the branch's ref read before prepare: the handle's cached head of the branch is taken
 *    only if it is still the incarnation the write is asked of (a write whose branch was
 *    deleted and created meanwhile fails typed instead of writing into the new one);
 *  - the ref read again under the gates: the incarnation is a read-set member, revalidated
 *    before any effect (RFC-022 §10 step 2);
 *  - the check that the table's branch still holds the version the change was staged on, and
 *  - the same check of the graph manifest's branch before its publish (lance_branch_check_base:
 *    each commit on a branch is conditional on the incarnation it was built on, which
 *    put_if_absent of the next version cannot tell).
 * A first touch of a table (a fork) makes FORK_OPS more per table: the listing of the fork's
 * _versions/ (files a crashed create or delete of the name left), the fork's first version and
 * its ref (both conditional puts), less the probe of the table's HEAD a fork does not need (its
 * source version never moves). A create forks the source's head, found with the look above it
 * for a lost version (one head: docs/maintenance.md, "A head that is never silently stale"). */
#define CREATE_OPS_MAX 7
#define BRANCH_OPS 4
#define FORK_OPS 2

static size_t oplog_len(store *f)
{
    size_t n = 0;
    store_fault_log(f, &n);
    return n;
}

/* Whether an op is a read of a node or edge table's data file. */
static bool data_read(const store_oplog_entry *e)
{
    return e->kind == STORE_OP_GET && e->key &&
           (strncmp(e->key, "nodes/", 6) == 0 || strncmp(e->key, "edges/", 6) == 0) &&
           strstr(e->key, "/data/") != NULL;
}

typedef struct op_count {
    size_t total, data; /* data: reads of table data files (see above) */
} op_count;

/* Store operations from log entry `from` on (printed with OG_COST_OPLOG). */
static op_count ops_since(store *f, size_t from, const char *what)
{
    size_t n = 0;
    const store_oplog_entry *l = store_fault_log(f, &n);
    op_count c = {n - from, 0};
    for (size_t i = from; i < n; i++) {
        c.data += data_read(&l[i]);
        if (getenv("OG_COST_OPLOG"))
            print_message("%s: %s %s\n", what, store_op_name(l[i].kind), l[i].key ? l[i].key : "");
    }
    return c;
}

static size_t proto(op_count c)
{
    return c.total - c.data;
}

/* The state a cached head holds must be what a fresh read of the manifest reconstructs. */
static void assert_same_snapshot(const graph_snapshot *a, const graph_snapshot *b)
{
    assert_int_equal(a->manifest_version, b->manifest_version);
    assert_string_equal(a->branch ? a->branch : "", b->branch ? b->branch : "");
    assert_string_equal(a->branch_identity, b->branch_identity);
    assert_string_equal(a->head, b->head);
    assert_string_equal(a->content_head, b->content_head);
    assert_string_equal(a->schema_identity, b->schema_identity);
    assert_int_equal(a->format_version, b->format_version);
    assert_int_equal(a->n_tables, b->n_tables);
    for (size_t i = 0; i < a->n_tables; i++) {
        const graph_table *x = &a->tables[i], *y = &b->tables[i];
        assert_string_equal(x->alias, y->alias);
        assert_string_equal(x->path, y->path);
        assert_string_equal(x->table_branch ? x->table_branch : "",
                            y->table_branch ? y->table_branch : "");
        assert_int_equal(x->version, y->version);
        assert_int_equal(x->row_count, y->row_count);
        assert_int_equal(x->has_manifest_xxh3, y->has_manifest_xxh3);
        assert_int_equal(x->manifest_xxh3, y->manifest_xxh3);
    }
}

static void assert_cached_head_fresh(write_graph *g, const char *branch)
{
    graph_head *hd = NULL;
    graph_snapshot *fresh = NULL;
    assert_og_ok(graph_handle_branch_head(g->h, branch, &hd));
    assert_og_ok(graph_snapshot_load(&fresh, g->h->s, branch, 0, 0));
    assert_same_snapshot(graph_head_snapshot(hd), fresh);
    graph_snapshot_free(fresh);
    graph_head_release(hd);
}

typedef struct branch_cost {
    op_count create, main_write, first_write, second_write, delete_;
} branch_cost;

static void measure_branch(write_graph *g, store *f, unsigned depth, branch_cost *c)
{
    char name[32];
    snprintf(name, sizeof name, "cost%u", depth);
    size_t n0 = oplog_len(f);
    assert_og_ok(write_branch_create(g, name, NULL, NULL, NULL));
    c->create = ops_since(f, n0, "create");
    assert_cached_head_fresh(g, name); /* the head create cached, as a read finds it */
    char text[128];
    snprintf(text, sizeof text, "{\"type\":\"Person\",\"data\":{\"name\":\"m%u\"}}\n", depth);
    n0 = oplog_len(f);
    assert_og_ok(wf_load(g, text, EXEC_LOAD_APPEND, NULL));
    c->main_write = ops_since(f, n0, "main write");
    snprintf(text, sizeof text, "{\"type\":\"Person\",\"data\":{\"name\":\"b%u\"}}\n", depth);
    n0 = oplog_len(f);
    (void)load_on(g, name, text);
    c->first_write = ops_since(f, n0, "first write on branch");
    snprintf(text, sizeof text, "{\"type\":\"Person\",\"data\":{\"name\":\"c%u\"}}\n", depth);
    n0 = oplog_len(f);
    (void)load_on(g, name, text);
    c->second_write = ops_since(f, n0, "second write on branch");
    assert_cached_head_fresh(g, name); /* the fork pinned with its checksum */
    n0 = oplog_len(f);
    assert_og_ok(write_branch_delete(g, name, NULL, NULL));
    c->delete_ = ops_since(f, n0, "delete");
}

static void assert_branch_costs(const branch_cost *c)
{
    assert_true(c->create.total <= CREATE_OPS_MAX);
    /* the branch was created before the write on main: both validate against one pin */
    assert_int_equal(c->first_write.data, c->main_write.data);
    assert_true(proto(c->first_write) <= proto(c->main_write) + BRANCH_OPS + FORK_OPS);
    /* the one fragment more that the first write on the branch added (its maintenance has
     * not run: the test drains no queue between the two writes) */
    assert_true(c->second_write.data <= c->first_write.data + 1);
    assert_true(proto(c->second_write) <= proto(c->main_write) + BRANCH_OPS);
}

static void test_branch_costs(void **state)
{
    (void)state;
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "branch-cost");
    store *local = NULL, *f = NULL;
    assert_og_ok(store_local_open(&local, dir));
    write_init_result ir;
    assert_og_ok(write_init(local, SCHEMA, strlen(SCHEMA), "s.pg", &ir));
    assert_og_ok(store_fault_open(&f, local, 1));
    write_graph *g = NULL;
    assert_og_ok(write_graph_open(&g, f, dir, NULL));
    unsigned next = 0;
    while (next < 10) {
        char text[128];
        snprintf(text, sizeof text, "{\"type\":\"Person\",\"data\":{\"name\":\"p%u\"}}\n", next++);
        assert_og_ok(wf_load(g, text, EXEC_LOAD_APPEND, NULL));
    }
    branch_cost shallow, deep;
    measure_branch(g, f, next, &shallow);
    while (next < 200) {
        char text[128];
        snprintf(text, sizeof text, "{\"type\":\"Person\",\"data\":{\"name\":\"p%u\"}}\n", next++);
        assert_og_ok(wf_load(g, text, EXEC_LOAD_APPEND, NULL));
    }
    write_maintenance_drain(g);
    assert_cached_head_fresh(g, NULL); /* as maintenance left it (manifest compaction) */
    measure_branch(g, f, next, &deep);
    const branch_cost *c[2] = {&shallow, &deep};
    unsigned depth[2] = {10, next};
    for (int i = 0; i < 2; i++)
        print_message("depth %u: branch create %zu ops, delete %zu; a one-node load on main %zu, "
                      "the first on a new branch %zu (one table forked), the second %zu (of "
                      "which reads of table data files: %zu, %zu, %zu)\n",
                      depth[i], c[i]->create.total, c[i]->delete_.total, c[i]->main_write.total,
                      c[i]->first_write.total, c[i]->second_write.total, c[i]->main_write.data,
                      c[i]->first_write.data, c[i]->second_write.data);
    for (int i = 0; i < 2; i++)
        assert_branch_costs(c[i]);
    /* flat in history depth: the same protocol operations at both depths */
    assert_int_equal(deep.create.total, shallow.create.total);
    assert_int_equal(deep.delete_.total, shallow.delete_.total);
    assert_int_equal(proto(deep.main_write), proto(shallow.main_write));
    assert_int_equal(proto(deep.first_write), proto(shallow.first_write));
    assert_int_equal(proto(deep.second_write), proto(shallow.second_write));
    write_graph_close(g);
    test_sandbox_done(dir);
}

static void run_crash(int deleting)
{
    crash_ctx c;
    memset(&c, 0, sizeof c);
    c.deleting = deleting;
    crashsim_case cc = {deleting ? "branch delete" : "branch create", &c, setup_crash, op_crash,
                        check_branch};
    crashsim_report rep;
    crashsim_run(&cc, &rep);
    print_message("%s: %llu durable ops, %llu crash runs, %llu violations (%u present, %u absent) "
                  "%s\n",
                  cc.name, (unsigned long long)rep.n, (unsigned long long)rep.runs,
                  (unsigned long long)rep.violations, c.saw_present, c.saw_absent, rep.first);
    assert_true(rep.n >= 1);
    assert_int_equal(rep.violations, 0);
    /* a create is visible only from its last durable op (the ref); a delete's first durable
     * op removes the ref, so after any crash of it the branch is gone */
    assert_true(c.saw_absent > 0);
    if (!deleting) assert_true(c.saw_present > 0);
}

static void test_crash_create(void **state)
{
    (void)state;
    run_crash(0);
}

static void test_crash_delete(void **state)
{
    (void)state;
    run_crash(1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_list_delete),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_racing_creators),
        cmocka_unit_test(test_delete_aba),
        cmocka_unit_test(test_delete_while_written),
        cmocka_unit_test(test_retract),
        cmocka_unit_test(test_cleanup_keeps_branch_pins),
        cmocka_unit_test(test_write_on_branch),
        cmocka_unit_test(test_write_races_branch_recreate),
        cmocka_unit_test(test_crash_first_write_on_branch),
        cmocka_unit_test(test_branch_costs),
        cmocka_unit_test(test_crash_create),
        cmocka_unit_test(test_crash_delete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
