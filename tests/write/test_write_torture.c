/* kill -9 torture: several processes load into one graph while a driver kills them with SIGKILL
 * at random moments (and starts replacements) for a bounded time. Afterwards a read-write open
 * recovers every interrupted write and the invariants hold: no sidecar left, every pin equals
 * its Lance HEAD, no orphan edge, row counts equal what the manifest says, every acknowledged
 * commit is in the lineage, and one audit row per sidecar the open resolved. */
#include "write_fixture.h"

#include "core/clock.h"
#include "exec/load.h"
#include "lance/version.h"
#include "write/internal.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *SCHEMA = "node Person {\n"
                            "    name: String @key\n"
                            "    n: I64?\n"
                            "}\n"
                            "node Company {\n"
                            "    name: String @key\n"
                            "}\n"
                            "edge WorksAt: Person -> Company { role: String? }\n";

#define NWORKERS 3
#define RUN_MS 4000

/* A worker: loads forever; logs each acknowledged commit id to its log file. */
static void worker(const char *dir, int slot, unsigned seed)
{
    char logp[512];
    snprintf(logp, sizeof logp, "%s.acks.%d", dir, slot);
    int fd = open(logp, O_WRONLY | O_CREAT | O_APPEND, 0644);
    srand(seed);
    for (unsigned i = 0;; i++) {
        store *s = NULL;
        write_graph *g = NULL;
        if (store_local_open(&s, dir) != 0 || write_graph_open(&g, s, dir, NULL) != 0) {
            usleep(1000);
            continue;
        }
        for (unsigned j = 0; j < 20; j++, i++) {
            char text[512];
            exec_load_mode mode = EXEC_LOAD_APPEND;
            if (rand() % 5 == 0) {
                snprintf(text, sizeof text,
                         "{\"type\":\"Person\",\"data\":{\"name\":\"shared\",\"n\":%u}}\n", i);
                mode = EXEC_LOAD_MERGE;
            } else {
                snprintf(text, sizeof text,
                         "{\"type\":\"Person\",\"data\":{\"name\":\"p%d-%u-%u\"}}\n"
                         "{\"edge\":\"WorksAt\",\"from\":\"p%d-%u-%u\",\"to\":\"acme\"}\n",
                         slot, seed, i, slot, seed, i);
            }
            write_result r;
            if (wf_load(g, text, mode, &r) == 0 && r.committed) {
                char line[64];
                int n = snprintf(line, sizeof line, "%s\n", r.commit_id);
                if (write(fd, line, (size_t)n) != n) _exit(3);
            }
        }
        write_graph_close(g);
    }
}

static pid_t spawn(const char *dir, int slot, unsigned seed)
{
    pid_t pid = fork();
    if (pid == 0) {
        worker(dir, slot, seed);
        _exit(0);
    }
    return pid;
}

static void test_kill9_torture(void **state)
{
    (void)state;
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "torture");
    store *s = NULL;
    assert_og_ok(store_local_open(&s, dir));
    write_init_result ir;
    assert_og_ok(write_init(s, SCHEMA, strlen(SCHEMA), "s.pg", &ir));
    store_close(s);
    {
        write_graph *g = NULL;
        assert_og_ok(store_local_open(&s, dir));
        assert_og_ok(write_graph_open(&g, s, dir, NULL));
        write_result r;
        assert_og_ok(wf_load(g, "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n",
                             EXEC_LOAD_APPEND, &r));
        write_graph_close(g);
    }
    pid_t pids[NWORKERS];
    unsigned seed = (unsigned)time(NULL);
    for (int i = 0; i < NWORKERS; i++)
        pids[i] = spawn(dir, i, seed + (unsigned)i);
    uint64_t end = core_mono_ns() + (uint64_t)RUN_MS * 1000000u;
    unsigned kills = 0;
    srand(seed);
    while (core_mono_ns() < end) {
        usleep(10000 + (useconds_t)(rand() % 90000));
        int v = rand() % NWORKERS;
        kill(pids[v], SIGKILL);
        waitpid(pids[v], NULL, 0);
        kills++;
        pids[v] = spawn(dir, v, seed + 1000u * kills + (unsigned)v);
    }
    for (int i = 0; i < NWORKERS; i++) {
        kill(pids[i], SIGKILL);
        waitpid(pids[i], NULL, 0);
    }

    /* Recover: no sidecar left, and exactly one audit row per pending sidecar (a worker killed
     * inside its own recovery, between the audit append and the sidecar delete, has already
     * written that row: the open must not add a second). */
    assert_og_ok(store_local_open(&s, dir));
    write_graph *g = NULL;
    wf_recovery_counts rc_counts = {0};
    char why[512];
    if (wf_open_recovered(s, &g, &rc_counts, why, sizeof why)) fail_msg("recovery: %s", why);

    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, g->h->s, NULL, 0, GRAPH_SNAP_LINEAGE));
    for (size_t i = 0; i < snap->n_tables; i++) {
        char root[STORE_KEY_MAX];
        uint64_t head = 0, rows = 0;
        lance_naming nm;
        assert_og_ok(lance_branch_root(root, snap->tables[i].path, snap->tables[i].table_branch));
        assert_og_ok(lance_version_latest(g->h->s, root, &head, &nm));
        assert_int_equal(head, snap->tables[i].version);
        lance_dataset *ds = NULL;
        assert_og_ok(graph_table_open(&ds, g->h->s, &snap->tables[i], LANCE_ACCESS_READ));
        assert_og_ok(lance_dataset_count_rows(ds, &rows));
        lance_dataset_free(ds);
        assert_int_equal(rows, snap->tables[i].row_count);
    }
    /* Every WorksAt edge points at an existing person (each edge came with its person). */
    const graph_table *et = graph_snapshot_table(snap, "edge:WorksAt");
    const graph_table *pt = graph_snapshot_table(snap, "node:Person");
    assert_true(pt->row_count >= et->row_count);
    /* Every acknowledged commit is in the lineage. */
    size_t acked = 0;
    for (int i = 0; i < NWORKERS; i++) {
        char logp[512];
        snprintf(logp, sizeof logp, "%s.acks.%d", dir, i);
        FILE *f = fopen(logp, "r");
        char line[64];
        while (f && fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = 0;
            if (strlen(line) != GRAPH_ID_LEN) continue; /* a torn last line of a killed worker */
            bool found = false;
            for (size_t k = 0; k < snap->n_commits && !found; k++)
                found = strcmp(snap->commits[k].id, line) == 0;
            if (!found) fail_msg("acknowledged commit %s is not in the lineage", line);
            acked++;
        }
        if (f) fclose(f);
        unlink(logp);
    }
    print_message("torture: %u kills, %zu acknowledged commits, %zu commits in lineage, %u "
                  "sidecars recovered at open\n",
                  kills, acked, snap->n_commits, rc_counts.recovered);
    assert_true(kills > 10);
    assert_true(acked > 0);
    graph_snapshot_free(snap);
    /* A follow-up write succeeds. */
    write_result r;
    assert_og_ok(
        wf_load(g, "{\"type\":\"Person\",\"data\":{\"name\":\"after\"}}\n", EXEC_LOAD_APPEND, &r));
    write_graph_close(g);
    test_sandbox_store_done(dir, s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill9_torture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
