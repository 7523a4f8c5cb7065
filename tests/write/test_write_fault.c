/* Storage faults beyond crashes, for every writer (issue 16 item 5), and the files a failed
 * write leaves behind (issue 16 fault g).
 *
 * Files: a write that fails before it publishes, or that recovery rolls back or discards, leaves
 * the graph's files as they were: the data, deletion and key index files under nodes/ and
 * edges/, the recovery sidecars and the store's temporaries are counted before and after and
 * must be equal. Documented exceptions, not counted: the Lance versions (_versions/,
 * _transactions/) the effects and their restores made (history that cleanup reclaims), the graph
 * manifest (a rollback is a graph commit), the audit log and the lock files.
 *
 * Faults: each writer (load, mutation, optimize, manifest compaction, cleanup, recover resolve,
 * backup) runs on the fault store with one injected fault: an I/O error on the nth operation of
 * each kind, a torn write, a lost write, a misdirected write, an object gone when read after it
 * was listed; and once with foreign and damaged files in every directory the engine lists. The
 * writer must fail typed or succeed; a read-write open on a plain store must then restore service
 * (no sidecar left, every pin equal to its Lance HEAD with the rows the manifest says), show the
 * old or the new content (the new one when the writer acknowledged), leave no orphaned files when
 * the content is the old one, and take a follow-up write. A torn, lost or misdirected write of an
 * object the store acknowledged as durable can make a published version name bytes that are not
 * there: such a point passes when every read of the damage fails typed (never wrong rows with
 * success) and is counted as "damage detected"; the others must restore service. Points are
 * enumerated for every n up to FAULT_CAP per writer, class and op kind, and sampled with a fixed
 * seed beyond it (OG_FAULT_FULL=1 enumerates them all); each cell prints its count. */
#include "write_fixture.h"

#include "core/alloc.h"
#include "core/failpoint.h"
#include "exec/load.h"
#include "exec/mutate.h"
#include "lance/version.h"
#include "write/backup.h"
#include "write/internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string.h>

static const char *SCHEMA = "node Person {\n"
                            "    name: String @key\n"
                            "    age: I32?\n"
                            "}\n"
                            "node Company {\n"
                            "    name: String @key\n"
                            "}\n"
                            "edge WorksAt: Person -> Company { role: String? }\n";

static const char *DELTA =
    "{\"type\":\"Person\",\"data\":{\"name\":\"bob\",\"age\":2}}\n"
    "{\"type\":\"Company\",\"data\":{\"name\":\"acme\"}}\n"
    "{\"edge\":\"WorksAt\",\"from\":\"bob\",\"to\":\"acme\",\"data\":{\"role\":\"x\"}}\n";

#define N_TABLES 3
static const char *const ALIASES[N_TABLES] = {"node:Person", "node:Company", "edge:WorksAt"};

/* ---- counting the files under a root ----------------------------------------------------- */

typedef struct file_counts {
    uint64_t own, own_bytes; /* table data, deletion and key index files */
    uint64_t temps;          /* the local store's .og-tmp-* temporaries */
    uint64_t sidecars;       /* __recovery/ entries */
} file_counts;

static bool is_table_file_dir(const char *dir)
{
    const char *slash = strrchr(dir, '/');
    const char *last = slash ? slash + 1 : dir;
    return strcmp(last, "data") == 0 || strcmp(last, "_deletions") == 0 ||
           strcmp(last, "_ogkix") == 0;
}

static void walk(const char *root, const char *rel, file_counts *c)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char sub[1024], full[2048];
        snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
        snprintf(full, sizeof full, "%s/%s", root, sub);
        struct stat st;
        if (lstat(full, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            /* lock files and the audit log are not a write's files */
            if (strcmp(sub, ".og-locks") != 0 && strcmp(sub, "_recoveries.lance") != 0)
                walk(root, sub, c);
            continue;
        }
        if (strncmp(e->d_name, STORE_LOCAL_TMP_PREFIX, strlen(STORE_LOCAL_TMP_PREFIX)) == 0) {
            c->temps++;
        } else if (strncmp(sub, "__recovery/", 11) == 0) {
            c->sidecars++;
        } else if ((strncmp(sub, "nodes/", 6) == 0 || strncmp(sub, "edges/", 6) == 0) &&
                   is_table_file_dir(rel)) {
            c->own++;
            c->own_bytes += (uint64_t)st.st_size;
        }
    }
    closedir(d);
}

static file_counts count_files(const char *root)
{
    file_counts c;
    memset(&c, 0, sizeof c);
    walk(root, "", &c);
    return c;
}

/* ---- the starting graph ------------------------------------------------------------------ */

/* Nine one-row loads then one with a company and an edge: the Person table has several
 * fragments (optimize has work), and the graph manifest a tier due (manifest compaction has). */
static int build_base(store *s)
{
    write_init_result ir;
    int rc = write_init(s, SCHEMA, strlen(SCHEMA), "s.pg", &ir);
    write_graph *g = NULL;
    if (rc == 0) rc = write_graph_open(&g, wf_borrow(s), "", NULL);
    for (int i = 0; rc == 0 && i < 9; i++) {
        char line[128];
        snprintf(line, sizeof line,
                 "{\"type\":\"Person\",\"data\":{\"name\":\"p%d\",\"age\":%d}}\n", i, i);
        rc = wf_load(g, line, EXEC_LOAD_APPEND, NULL);
    }
    if (rc == 0)
        rc = wf_load(g,
                     "{\"type\":\"Company\",\"data\":{\"name\":\"zeta\"}}\n"
                     "{\"edge\":\"WorksAt\",\"from\":\"p0\",\"to\":\"zeta\"}\n",
                     EXEC_LOAD_APPEND, NULL);
    write_graph_close(g);
    return rc;
}

/* The base plus an interrupted load whose first table effect landed (its sidecar is left). */
static int build_interrupted(store *s)
{
    int rc = build_base(s);
    write_graph *g = NULL;
    if (rc == 0) rc = write_graph_open(&g, wf_borrow(s), "", NULL);
    if (rc != 0) return rc;
    core_fp_set("write.post_table_effect", CORE_FP_ERROR, OG_E_STORAGE, 1);
    core_fp_set("recovery.pre_restore", CORE_FP_ERROR, OG_E_STORAGE, 0);
    rc = wf_load(g, DELTA, EXEC_LOAD_APPEND, NULL);
    core_fp_clear_all();
    write_graph_close(g);
    size_t n = 0;
    if (rc != OG_E_RECOVERY_REQUIRED || wf_count_sidecars(s, &n) != 0 || n != 1)
        return OG_E_INTERNAL;
    return 0;
}

typedef struct template
{
    const char *tag;
    int (*build)(store * s);
    char dir[256];
}
template;

static template T_BASE = {"fault-base", build_base, ""};
static template T_INTERRUPTED = {"fault-interrupted", build_interrupted, ""};

static void copy_template(template *t, const char *dir)
{
    if (!t->dir[0]) {
        test_sandbox_new(t->dir, sizeof t->dir, t->tag);
        store *s = NULL;
        assert_og_ok(store_local_open(&s, t->dir));
        assert_og_ok(t->build(s));
        store_close(s);
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp -a '%s/.' '%s/'", t->dir, dir);
    assert_int_equal(system(cmd), 0);
}

/* Rows per table at the latest snapshot; 0, or a typed error code. */
static int row_counts(store *s, uint64_t rows[N_TABLES])
{
    graph_snapshot *snap = NULL;
    int rc = graph_snapshot_load(&snap, s, NULL, 0, 0);
    for (size_t i = 0; rc == 0 && i < N_TABLES; i++) {
        const graph_table *t = graph_snapshot_table(snap, ALIASES[i]);
        rows[i] = t ? t->row_count : UINT64_MAX;
    }
    graph_snapshot_free(snap);
    return rc;
}

/* ---- fault (g): what a failed write leaves on disk ---------------------------------------- */

static char *big_delta(int n)
{
    core_buf b = CORE_BUF_INIT;
    for (int i = 0; i < n; i++)
        assert_og_ok(core_buf_printf(
            &b, "{\"type\":\"Person\",\"data\":{\"name\":\"big%d\",\"age\":%d}}\n", i, i));
    assert_og_ok(core_buf_printf(&b, "{\"type\":\"Company\",\"data\":{\"name\":\"bigco\"}}\n"));
    for (int i = 0; i < n; i++)
        assert_og_ok(
            core_buf_printf(&b, "{\"edge\":\"WorksAt\",\"from\":\"big%d\",\"to\":\"bigco\"}\n", i));
    char *s = strdup(core_buf_cstr(&b));
    core_buf_free(&b);
    return s;
}

static void assert_same_files(const file_counts *before, const file_counts *after)
{
    print_message("  files %llu (%llu bytes) before, %llu (%llu bytes) after; temporaries %llu, "
                  "sidecars %llu after\n",
                  (unsigned long long)before->own, (unsigned long long)before->own_bytes,
                  (unsigned long long)after->own, (unsigned long long)after->own_bytes,
                  (unsigned long long)after->temps, (unsigned long long)after->sidecars);
    assert_int_equal(after->own, before->own);
    assert_int_equal(after->own_bytes, before->own_bytes);
    assert_int_equal(after->temps, 0);
    assert_int_equal(after->sidecars, 0);
}

/* A load that fails after its first table effect: in-process recovery rolls it back, and the
 * files of the landed effect and of the two that never committed go with it. */
static void test_rolled_back_load_leaves_no_files(void **state)
{
    (void)state;
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "fault-g");
    copy_template(&T_BASE, dir);
    file_counts before = count_files(dir);
    write_graph *g = NULL;
    assert_og_ok(wf_open(&g, dir));
    char *delta = big_delta(3000);
    core_fp_set("write.post_table_effect", CORE_FP_ERROR, OG_E_STORAGE, 1);
    int rc = wf_load(g, delta, EXEC_LOAD_APPEND, NULL);
    core_fp_clear_all();
    assert_int_equal(rc, OG_E_STORAGE);
    assert_non_null(strstr(og_error_last()->message, "undone by recovery"));
    write_graph_close(g);
    {
        file_counts after = count_files(dir);
        assert_same_files(&before, &after);
    }
    wf_assert_sound(dir);
    free(delta);
    test_sandbox_done(dir);
}

/* A load whose staging fails on its last data file (an I/O error): the files it staged in the
 * other tables are deleted before it returns. */
static void test_failed_staging_leaves_no_files(void **state)
{
    (void)state;
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "fault-g");
    copy_template(&T_BASE, dir);
    file_counts before = count_files(dir);
    char *delta = big_delta(3000);
    /* count the data-file puts of the load, then fail the last */
    store *local = wf_store(dir), *fs = NULL;
    assert_og_ok(store_fault_open(&fs, local, 1));
    write_graph *g = NULL;
    assert_og_ok(write_graph_open(&g, wf_borrow(fs), "", NULL));
    size_t n0 = 0, n1 = 0;
    (void)store_fault_log(fs, &n0);
    core_fp_set("write.pre_revalidate", CORE_FP_ERROR, OG_E_STORAGE, 1);
    assert_int_equal(wf_load(g, delta, EXEC_LOAD_APPEND, NULL), OG_E_STORAGE);
    core_fp_clear_all();
    const store_oplog_entry *log = store_fault_log(fs, &n1);
    uint64_t puts = 0, data_puts = 0, last = 0;
    for (size_t i = n0; i < n1; i++) {
        if (log[i].kind != STORE_OP_PUT) continue;
        puts++;
        if (strstr(log[i].key, "/data/") != NULL) {
            data_puts++;
            last = puts;
        }
    }
    assert_true(data_puts >= 3);
    /* the failure at the gates already discarded them */
    {
        file_counts after = count_files(dir);
        assert_same_files(&before, &after);
    }
    store_fault_fail_nth(fs, last, STORE_OP_BIT(STORE_OP_PUT), STORE_FAULT_EIO);
    assert_int_equal(wf_load(g, delta, EXEC_LOAD_APPEND, NULL), OG_E_STORAGE);
    write_graph_close(g);
    store_close(fs);
    print_message("load staging %llu data files, the last failing\n",
                  (unsigned long long)data_puts);
    {
        file_counts after = count_files(dir);
        assert_same_files(&before, &after);
    }
    free(delta);
    test_sandbox_done(dir);
}

/* Make an abandoned temporary of the local store (what a writer killed mid-file leaves): a file
 * with the temporary prefix whose lock nobody holds. */
static void put_abandoned_temp(const char *dir, const char *sub, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s%s%s", dir, sub, *sub ? "/" : "", name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < 1000; i++)
        fputs("abandoned bytes\n", f);
    fclose(f);
}

/* The process writing a large load is killed after its first table effect: the next read-write
 * open rolls it back and removes every file it wrote (listed in its sidecar) and the
 * temporaries it left. */
static void test_killed_load_leaves_no_files(void **state)
{
    (void)state;
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "fault-g");
    copy_template(&T_BASE, dir);
    file_counts before = count_files(dir);
    char *delta = big_delta(3000);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        write_graph *g = NULL;
        if (wf_open(&g, dir) != 0) _exit(1);
        core_fp_set("write.post_table_effect", CORE_FP_EXIT, CORE_FP_EXIT_STATUS, 1);
        (void)wf_load(g, delta, EXEC_LOAD_APPEND, NULL);
        _exit(2); /* not reached: the failpoint ends the process */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), CORE_FP_EXIT_STATUS);
    /* what the killed writer left: its sidecar and files, and (made here) a temporary it was
     * writing when it died */
    char table_data[512];
    {
        store *s = wf_store(dir);
        graph_snapshot *snap = NULL;
        assert_og_ok(graph_snapshot_load(&snap, s, NULL, 0, 0));
        snprintf(table_data, sizeof table_data, "%s/data",
                 graph_snapshot_table(snap, "node:Person")->path);
        graph_snapshot_free(snap);
        store_close(s);
    }
    put_abandoned_temp(dir, table_data, STORE_LOCAL_TMP_PREFIX "99999-1-0badf00d");
    file_counts mid = count_files(dir);
    print_message("killed load left %llu files (%llu bytes), %llu temporaries, %llu sidecars\n",
                  (unsigned long long)(mid.own - before.own),
                  (unsigned long long)(mid.own_bytes - before.own_bytes),
                  (unsigned long long)mid.temps, (unsigned long long)mid.sidecars);
    assert_true(mid.own > before.own);
    assert_int_equal(mid.sidecars, 1);
    assert_true(mid.temps >= 1);
    write_graph *g = NULL;
    assert_og_ok(wf_open(&g, dir));
    write_graph_close(g);
    {
        file_counts after = count_files(dir);
        assert_same_files(&before, &after);
    }
    wf_assert_sound(dir);
    free(delta);
    test_sandbox_done(dir);
}

/* Cleanup removes the temporaries of writers that died between writes (no sidecar names them),
 * and leaves one whose writer still holds it. */
static void test_cleanup_reclaims_temps(void **state)
{
    (void)state;
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "fault-g");
    copy_template(&T_BASE, dir);
    put_abandoned_temp(dir, "", STORE_LOCAL_TMP_PREFIX "99999-2-0badf00d");
    put_abandoned_temp(dir, "__manifest.lance/data", STORE_LOCAL_TMP_PREFIX "99999-3-0badf00d");
    char held[1024];
    snprintf(held, sizeof held, "%s/" STORE_LOCAL_TMP_PREFIX "99999-4-0badf00d", dir);
    int fd = open(held, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX), 0);
    write_graph *g = NULL;
    assert_og_ok(wf_open(&g, dir));
    assert_int_equal(count_files(dir).temps, 3); /* an open with nothing to recover: no walk */
    write_cleanup_options co = WRITE_CLEANUP_OPTIONS_INIT;
    co.keep = 1;
    write_cleanup_report rep;
    assert_og_ok(write_cleanup(g, &co, &rep));
    write_graph_close(g);
    assert_int_equal(rep.temps_removed, 2);
    assert_int_equal(count_files(dir).temps, 1);
    close(fd);
    test_sandbox_done(dir);
}

/* ---- the fault cells ---------------------------------------------------------------------- */

/* The fault a run injects, armed by the writer right before its operation (after its open). */
typedef struct fault_arm {
    store *fs;
    uint64_t n; /* 0: none (the counting run) */
    unsigned mask;
    store_fault_kind kind;
    size_t mark; /* op log length when armed */
} fault_arm;

static fault_arm ARM;

static void arm(void)
{
    (void)store_fault_log(ARM.fs, &ARM.mark);
    if (ARM.n) store_fault_fail_nth(ARM.fs, ARM.n, ARM.mask, ARM.kind);
}

static void disarm(void)
{
    store_fault_fail_nth(ARM.fs, 0, 0, STORE_FAULT_NONE);
}

static int run_mutation(write_graph *g, const char *gq)
{
    core_arena a;
    core_arena_init(&a, 0);
    lang_diags d;
    lang_diags_init(&d, &a);
    lang_query_set *qs = NULL;
    exec_mutate_result res;
    int rc = lang_query_set_build(&qs, g->h->catalog, gq, strlen(gq), "m.gq", &d);
    if (rc == 0) rc = exec_mutate_run(&res, g, &qs->queries[0], NULL, NULL);
    lang_query_set_free(qs);
    core_arena_free(&a);
    return rc;
}

/* What a writer's run returned: its code, and whether it was typed. */
typedef struct run_out {
    int rc;
    char msg[256];
} run_out;

typedef struct writer_case {
    const char *name;
    template *tmpl;
    int (*run)(store *fs, const char *dir);
    uint64_t added[N_TABLES]; /* rows the writer adds when it succeeds */
    bool removes_files;       /* cleanup: files may go */
    const char *full_class;   /* a class whose gets are enumerated at every point */
} writer_case;

static int open_on(store *fs, write_graph **g, bool deferred)
{
    write_open_options oo = WRITE_OPEN_OPTIONS_INIT;
    oo.defer_recovery = deferred;
    return write_graph_open(g, wf_borrow(fs), "", &oo);
}

static int run_load(store *fs, const char *dir)
{
    (void)dir;
    write_graph *g = NULL;
    int rc = open_on(fs, &g, false);
    if (rc == 0) {
        arm();
        rc = wf_load(g, DELTA, EXEC_LOAD_APPEND, NULL);
        disarm();
    }
    write_graph_close(g);
    return rc;
}

static int run_mutate(store *fs, const char *dir)
{
    (void)dir;
    write_graph *g = NULL;
    int rc = open_on(fs, &g, false);
    if (rc == 0) {
        arm();
        rc = run_mutation(g, "query m() { insert Person { name: \"mut\", age: 7 } }");
        disarm();
    }
    write_graph_close(g);
    return rc;
}

static int run_optimize(store *fs, const char *dir)
{
    (void)dir;
    write_graph *g = NULL;
    int rc = open_on(fs, &g, false);
    if (rc == 0) {
        write_optimize_options oo = WRITE_OPTIMIZE_OPTIONS_INIT;
        write_result r;
        arm();
        rc = write_optimize(g, &oo, &r);
        disarm();
    }
    write_graph_close(g);
    return rc;
}

static int run_compact_manifest(store *fs, const char *dir)
{
    (void)dir;
    write_graph *g = NULL;
    int rc = open_on(fs, &g, false);
    if (rc == 0) {
        bool compacted = false;
        arm();
        rc = write_compact_manifest(g, NULL, false, &compacted);
        disarm();
    }
    write_graph_close(g);
    return rc;
}

static int run_cleanup(store *fs, const char *dir)
{
    (void)dir;
    write_graph *g = NULL;
    int rc = open_on(fs, &g, false);
    if (rc == 0) {
        write_cleanup_options co = WRITE_CLEANUP_OPTIONS_INIT;
        co.keep = 1;
        co.orphan_grace_ms = 0;
        write_cleanup_report rep;
        arm();
        rc = write_cleanup(g, &co, &rep);
        disarm();
    }
    write_graph_close(g);
    return rc;
}

static int run_resolve(store *fs, const char *dir)
{
    (void)dir;
    write_graph *g = NULL;
    char(*ids)[GRAPH_ID_LEN + 1] = NULL;
    size_t n = 0;
    int rc = write_sidecar_list(fs, &ids, &n);
    if (rc == 0 && n != 1) rc = OG_E_INTERNAL;
    if (rc == 0) rc = open_on(fs, &g, true);
    if (rc == 0) {
        write_resolve_options ro = {false, false};
        int kind = 0;
        char commit[GRAPH_ID_LEN + 1];
        arm();
        rc = write_recover_resolve(g, ids[0], &ro, &kind, commit);
        disarm();
    }
    free(ids);
    write_graph_close(g);
    return rc;
}

static char backup_dst[256];
static write_backup_report backup_rep;

/* The backup reads the graph through the fault store and writes a plain copy. */
static int run_backup(store *fs, const char *dir)
{
    (void)dir;
    store *dst = wf_store(backup_dst);
    write_backup_options bo = WRITE_BACKUP_OPTIONS_INIT;
    arm();
    int rc = write_backup(fs, dst, &bo, &backup_rep);
    disarm();
    store_close(dst);
    return rc;
}

/* V_ACK_LOST: the store acknowledged a write it never made (lost, or put elsewhere) and with it
 * the commit the writer then acknowledged; the graph is sound at the old state. Nothing short
 * of reading back every object after writing it can see this. */
typedef enum verdict { V_OLD, V_NEW, V_DAMAGE_DETECTED, V_ACK_LOST, V_VIOLATION } verdict;

/* Every table scans at its pin with the rows the manifest records: 0, a typed read error, or
 * OG_E_INTERNAL when a scan succeeds with other rows (wrong data returned as success). */
static int scan_all(store *s, char *why, size_t cap)
{
    graph_snapshot *snap = NULL;
    int rc = graph_snapshot_load(&snap, s, NULL, 0, 0);
    for (size_t i = 0; rc == 0 && i < snap->n_tables; i++) {
        const graph_table *t = &snap->tables[i];
        lance_dataset *ds = NULL;
        arrow_batch *b = NULL;
        rc = graph_table_open(&ds, s, t, LANCE_ACCESS_READ);
        if (rc == 0) rc = lance_dataset_scan_all(&b, ds, NULL);
        if (rc == 0 && (uint64_t)b->num_rows != t->row_count) {
            snprintf(why, cap, "%s scans %lld rows, its pin records %llu", t->alias,
                     (long long)b->num_rows, (unsigned long long)t->row_count);
            rc = OG_E_INTERNAL;
        }
        arrow_batch_free(b);
        lance_dataset_free(ds);
    }
    graph_snapshot_free(snap);
    return rc;
}

#define VCHECK(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            snprintf(why, cap, __VA_ARGS__);                                                       \
            v = V_VIOLATION;                                                                       \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

/* A typed failure of a read, allowed as "damage detected" only where the class may damage. */
#define DAMAGE_OR(cond, damaging, ...)                                                             \
    do {                                                                                           \
        int rc_ = (cond);                                                                          \
        if (rc_ != 0) {                                                                            \
            if ((damaging) && rc_ < 0 && rc_ != OG_E_INTERNAL) {                                   \
                snprintf(why, cap, "damage detected: %s", og_error_last()->message);               \
                v = V_DAMAGE_DETECTED;                                                             \
                goto out;                                                                          \
            }                                                                                      \
            snprintf(why, cap, __VA_ARGS__);                                                       \
            v = V_VIOLATION;                                                                       \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

static verdict check_point(const writer_case *w, const char *dir, int rc, const char *rc_msg,
                           const file_counts *before, const uint64_t old_rows[N_TABLES],
                           bool damaging, char *why, size_t cap)
{
    verdict v = V_OLD;
    write_graph *g = NULL;
    store *s = wf_store(dir);
    why[0] = 0;
    VCHECK(rc <= 0 && rc != OG_E_INTERNAL, "the writer returned %d (%s)", rc, rc_msg);
    DAMAGE_OR(write_graph_open(&g, wf_borrow(s), "", NULL), damaging, "read-write open: %s",
              og_error_last()->message);
    size_t sidecars = 0;
    VCHECK(wf_count_sidecars(s, &sidecars) == 0 && sidecars == 0, "%zu sidecars after the open",
           sidecars);
    uint64_t rows[N_TABLES];
    DAMAGE_OR(row_counts(s, rows), damaging, "snapshot: %s", og_error_last()->message);
    uint64_t new_rows[N_TABLES];
    for (size_t i = 0; i < N_TABLES; i++)
        new_rows[i] = old_rows[i] + w->added[i];
    bool is_old = memcmp(rows, old_rows, sizeof rows) == 0;
    bool is_new = memcmp(rows, new_rows, sizeof rows) == 0;
    VCHECK(is_old || is_new, "rows %llu/%llu/%llu are neither old nor new",
           (unsigned long long)rows[0], (unsigned long long)rows[1], (unsigned long long)rows[2]);
    bool ack_lost = rc == 0 && !is_new;
    VCHECK(!ack_lost || damaging, "an acknowledged write is not visible");
    graph_snapshot *snap = NULL;
    DAMAGE_OR(graph_snapshot_load(&snap, s, NULL, 0, 0), damaging, "snapshot: %s",
              og_error_last()->message);
    for (size_t i = 0; i < snap->n_tables; i++) {
        char tw[256];
        int bad = wf_check_table(s, &snap->tables[i], tw, sizeof tw);
        if (bad) {
            graph_snapshot_free(snap);
            DAMAGE_OR(OG_E_CORRUPT, damaging, "%s", tw);
        }
    }
    graph_snapshot_free(snap);
    char sw[256] = "";
    int src = scan_all(s, sw, sizeof sw);
    VCHECK(src != OG_E_INTERNAL, "%s", sw);
    DAMAGE_OR(src, damaging, "scan: %s", og_error_last()->message);
    file_counts after = count_files(dir);
    VCHECK(after.temps == 0, "%llu temporaries left", (unsigned long long)after.temps);
    if (w->removes_files)
        VCHECK(after.own <= before->own, "cleanup left more files (%llu) than it found (%llu)",
               (unsigned long long)after.own, (unsigned long long)before->own);
    else if (is_old && !w->added[0] && w->run != run_resolve)
        VCHECK(after.own == before->own || w->run != run_backup,
               "backup changed the source: %llu files, %llu before", (unsigned long long)after.own,
               (unsigned long long)before->own);
    if (is_old && w->added[0])
        VCHECK(after.own == before->own && after.own_bytes == before->own_bytes,
               "a write that did not happen left %lld files (%lld bytes)",
               (long long)(after.own - before->own),
               (long long)(after.own_bytes - before->own_bytes));
    DAMAGE_OR(
        wf_load(g, "{\"type\":\"Person\",\"data\":{\"name\":\"follow\"}}\n", EXEC_LOAD_MERGE, NULL),
        damaging, "follow-up load: %s", og_error_last()->message);
    v = ack_lost ? V_ACK_LOST : is_new && !is_old ? V_NEW : V_OLD;
out:
    write_graph_close(g);
    store_close(s);
    return v;
}

/* A backup that succeeded must open and hold the rows of the commit it reports (a read of the
 * latest version that wrongly finds nothing past an older one makes it copy that older
 * commit, which is consistent and named in its report). */
static bool backup_ok(const char *src_dir, char *why, size_t cap)
{
    uint64_t rows_src[N_TABLES];
    {
        store *src = wf_store(src_dir);
        graph_snapshot *snap = NULL;
        int rc = graph_snapshot_load(&snap, src, NULL, backup_rep.manifest_version, 0);
        for (size_t i = 0; rc == 0 && i < N_TABLES; i++)
            rows_src[i] = graph_snapshot_table(snap, ALIASES[i])->row_count;
        bool same = rc == 0 && strcmp(snap->head, backup_rep.commit_id) == 0;
        graph_snapshot_free(snap);
        store_close(src);
        if (!same) {
            snprintf(why, cap, "the backup reports commit %s at version %llu, not the source's",
                     backup_rep.commit_id, (unsigned long long)backup_rep.manifest_version);
            return false;
        }
    }
    store *s = wf_store(backup_dst);
    uint64_t rows[N_TABLES];
    int rc = row_counts(s, rows);
    char sw[256] = "";
    if (rc == 0) rc = scan_all(s, sw, sizeof sw);
    write_graph *g = NULL;
    if (rc == 0) rc = write_graph_open(&g, wf_borrow(s), "", NULL);
    if (rc == 0) rc = wf_load(g, DELTA, EXEC_LOAD_APPEND, NULL);
    write_graph_close(g);
    store_close(s);
    if (rc != 0) {
        snprintf(why, cap, "the backup it acknowledged: %s %s", sw, og_error_last()->message);
        return false;
    }
    if (memcmp(rows, rows_src, sizeof rows) != 0) {
        snprintf(why, cap, "the backup holds other rows");
        return false;
    }
    return true;
}

/* ---- the driver --------------------------------------------------------------------------- */

typedef struct fault_class {
    const char *name;
    store_fault_kind kind;
    unsigned mask;
    bool damaging; /* may damage what the store acknowledged (a lying device) */
} fault_class;

#define OPB(k) STORE_OP_BIT(STORE_OP_##k)
static const fault_class CLASSES[] = {
    {"io", STORE_FAULT_EIO, STORE_OPS_ALL, false},
    {"torn", STORE_FAULT_TORN, OPB(PUT) | OPB(PUT_IF_ABSENT) | OPB(GET), true},
    /* a lost sync leaves writes volatile, which matters only at a power loss: the crash
     * enumeration (test_write_crash.c) drops or tears every unsynced write there */
    {"lost", STORE_FAULT_LOST, OPB(PUT) | OPB(PUT_IF_ABSENT) | OPB(DELETE), true},
    {"misdirected", STORE_FAULT_MISDIRECTED, OPB(PUT) | OPB(PUT_IF_ABSENT) | OPB(GET), true},
    {"gone", STORE_FAULT_NOT_FOUND, OPB(GET) | OPB(HEAD), false},
};
#define N_CLASSES (sizeof CLASSES / sizeof CLASSES[0])

#define FAULT_CAP 3 /* points per (writer, class, op kind) unless OG_FAULT_FULL=1 */

typedef struct cell_tally {
    unsigned points, available, old, new_, damage, ack_lost, violations;
    char first[512];
} cell_tally;

static uint64_t rng_state = 0x5EEDF00DULL;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* ---- foreign and damaged files ------------------------------------------------------------ */

#define MAX_FOREIGN 96
typedef struct foreign_set {
    char path[MAX_FOREIGN][512];
    bool sweepable[MAX_FOREIGN]; /* in a directory cleanup sweeps of unreferenced files */
    size_t n;
} foreign_set;

static void plant(foreign_set *f, const char *dir, const char *sub, const char *name,
                  bool sweepable)
{
    char d[600];
    snprintf(d, sizeof d, "%s/%s", dir, sub);
    for (char *p = d + strlen(dir) + 1; *p; p++) { /* mkdir -p; each may exist */
        if (*p != '/') continue;
        *p = 0;
        (void)mkdir(d, 0755);
        *p = '/';
    }
    (void)mkdir(d, 0755);
    assert_true(f->n < MAX_FOREIGN);
    snprintf(f->path[f->n], sizeof f->path[f->n], "%.400s%s%.64s", d, *sub ? "/" : "", name);
    FILE *fp = fopen(f->path[f->n], "w");
    assert_non_null(fp);
    fputs("\x01not what it claims {\"format\": \x7f garbage\n", fp);
    fclose(fp);
    f->sweepable[f->n++] = sweepable;
}

/* Foreign names with damaged contents in every directory the engine lists: the root, the
 * sidecars, the audit log, and each dataset's _versions/, data/, _deletions/, _transactions/
 * and _ogkix/ (the graph manifest's included). */
static void plant_foreign(foreign_set *f, const char *dir)
{
    memset(f, 0, sizeof *f);
    plant(f, dir, "", "NOTES.txt", false);
    plant(f, dir, "", "zz-foreign.json", false);
    plant(f, dir, "zz-foreign-dir", "file", false);
    plant(f, dir, "nodes", "README", false);
    plant(f, dir, "edges", "README", false);
    plant(f, dir, "__recovery", "README", false);
    plant(f, dir, "__recovery", "not-a-ulid.json", false);
    plant(f, dir, "__recovery", "01ARZ3NDEKTSV4RRFFQ69G5FAV.json.bak", false);
    store *s = wf_store(dir);
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, s, NULL, 0, 0));
    size_t n_roots = snap->n_tables + 2;
    for (size_t i = 0; i < n_roots; i++) {
        const char *root = i < snap->n_tables    ? snap->tables[i].path
                           : i == snap->n_tables ? GRAPH_MANIFEST_DIR
                                                 : "_recoveries.lance";
        char sub[512];
        static const char *const dirs[] = {"_versions", "data", "_deletions", "_transactions",
                                           "_ogkix"};
        for (size_t d = 0; d < sizeof dirs / sizeof dirs[0]; d++) {
            bool sweepable = d > 0;
            snprintf(sub, sizeof sub, "%s/%s", root, dirs[d]);
            plant(f, dir, sub, "foreign.bin", sweepable);
            plant(f, dir, sub, d == 0 ? "garbage.manifest" : "garbage.lance", sweepable);
        }
    }
    graph_snapshot_free(snap);
    store_close(s);
}

/* The planted files that are gone (cleanup may sweep those in its directories). */
static size_t foreign_missing(const foreign_set *f, bool cleanup, char *first, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++) {
        struct stat st;
        if (stat(f->path[i], &st) == 0 || (cleanup && f->sweepable[i])) continue;
        if (n++ == 0) snprintf(first, cap, "%s", f->path[i]);
    }
    return n;
}

static foreign_set planted;

/* One run of writer w with the armed fault (n 0: none); returns the verdict. */
static verdict one_point(const writer_case *w, uint64_t n, unsigned mask, store_fault_kind kind,
                         bool damaging, uint64_t counts[STORE_OP_KIND_COUNT], bool foreign,
                         char *why, size_t cap)
{
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "fault");
    copy_template(w->tmpl, dir);
    if (foreign) plant_foreign(&planted, dir);
    if (w->run == run_backup) test_sandbox_new(backup_dst, sizeof backup_dst, "fault-dst");
    file_counts before = count_files(dir);
    uint64_t old_rows[N_TABLES];
    {
        store *s = wf_store(dir);
        assert_og_ok(row_counts(s, old_rows));
        store_close(s);
    }
    store *fs = NULL;
    assert_og_ok(store_fault_open(&fs, wf_store(dir), 1));
    ARM = (fault_arm){fs, n, mask, kind, 0};
    int rc = w->run(fs, dir);
    char msg[256];
    snprintf(msg, sizeof msg, "%s", rc ? og_error_last()->message : "");
    if (counts) {
        size_t nl = 0;
        const store_oplog_entry *log = store_fault_log(fs, &nl);
        for (size_t i = ARM.mark; i < nl; i++)
            counts[log[i].kind]++;
    }
    store_close(fs);
    verdict v = check_point(w, dir, rc, msg, &before, old_rows, damaging, why, cap);
    if (v != V_VIOLATION && w->run == run_backup && rc == 0 && !backup_ok(dir, why, cap))
        v = V_VIOLATION;
    char gone[512];
    size_t missing = foreign ? foreign_missing(&planted, w->removes_files, gone, sizeof gone) : 0;
    if (v != V_VIOLATION && missing) {
        snprintf(why, cap, "%zu foreign files were deleted, first %.400s", missing, gone);
        v = V_VIOLATION;
    }
    if (v != V_VIOLATION && foreign && rc != 0) {
        snprintf(why, cap, "foreign files made it fail: %s", msg);
        v = V_VIOLATION;
    }
    if (v == V_VIOLATION && test_keep_tmp())
        fprintf(stderr, "OG_KEEP_TMP: kept %s (%s)\n", dir, why);
    else
        test_rmrf(dir);
    if (w->run == run_backup) test_rmrf(backup_dst);
    return v;
}

static void tally(cell_tally *t, verdict v, const char *what, const char *why)
{
    t->points++;
    t->old += v == V_OLD;
    t->new_ += v == V_NEW;
    t->damage += v == V_DAMAGE_DETECTED;
    t->ack_lost += v == V_ACK_LOST;
    if (v == V_VIOLATION && t->violations++ == 0)
        snprintf(t->first, sizeof t->first, "%.96s: %.400s", what, why);
}

/* Every class for writer w: prints one line per class, fails on a violation. */
static void run_writer(const writer_case *w)
{
    const char *only = getenv("OG_FAULT_ONLY"); /* while debugging: one writer by name */
    if (only && strcmp(only, w->name) != 0) return;
    char why[512];
    uint64_t counts[STORE_OP_KIND_COUNT] = {0};
    verdict v0 = one_point(w, 0, 0, STORE_FAULT_NONE, false, counts, false, why, sizeof why);
    if (v0 == V_VIOLATION) fail_msg("%s without a fault: %s", w->name, why);
    bool full = getenv("OG_FAULT_FULL") && strcmp(getenv("OG_FAULT_FULL"), "1") == 0;
    unsigned violations = 0;
    for (size_t c = 0; c < N_CLASSES; c++) {
        const fault_class *fc = &CLASSES[c];
        cell_tally t;
        memset(&t, 0, sizeof t);
        for (int k = 0; k < STORE_OP_KIND_COUNT; k++) {
            if (!(fc->mask & STORE_OP_BIT(k)) || !counts[k]) continue;
            uint64_t n = counts[k];
            t.available += (unsigned)n;
            /* a fixed seed per cell, so a cell picks the same points however it is run */
            rng_state = 0x5EEDF00DULL + c * 131 + (uint64_t)k * 7919;
            for (const char *p = w->name; *p; p++)
                rng_state = rng_state * 31 + (unsigned char)*p;
            /* every n up to the cap; beyond it the first, the last and seeded picks */
            uint64_t picks[FAULT_CAP];
            size_t np = 0;
            if (full || n <= FAULT_CAP ||
                (w->full_class && !strcmp(w->full_class, fc->name) && k == STORE_OP_GET)) {
                np = 0;
            } else {
                picks[np++] = 1;
                picks[np++] = n;
                while (np < FAULT_CAP) {
                    uint64_t p = 2 + rng() % (n - 2);
                    bool dup = false;
                    for (size_t i = 0; i < np; i++)
                        dup |= picks[i] == p;
                    if (!dup) picks[np++] = p;
                }
            }
            uint64_t total = np ? np : n;
            for (uint64_t i = 0; i < total; i++) {
                uint64_t at = np ? picks[i] : i + 1;
                verdict v = one_point(w, at, STORE_OP_BIT(k), fc->kind, fc->damaging, NULL, false,
                                      why, sizeof why);
                char what[96];
                snprintf(what, sizeof what, "%s of %s #%llu of %llu", fc->name,
                         store_op_name((store_op_kind)k), (unsigned long long)at,
                         (unsigned long long)n);
                tally(&t, v, what, why);
            }
        }
        print_message("%s | %s: %u fault points (of %u), old %u new %u damage detected %u "
                      "acknowledged but lost by the store %u violations %u%s%s\n",
                      w->name, fc->name, t.points, t.available, t.old, t.new_, t.damage, t.ack_lost,
                      t.violations, t.violations ? "; first: " : "", t.first);
        violations += t.violations;
    }
    /* foreign and damaged files in every directory listed, no fault */
    cell_tally t;
    memset(&t, 0, sizeof t);
    t.available = 1;
    verdict v = one_point(w, 0, 0, STORE_FAULT_NONE, false, NULL, true, why, sizeof why);
    tally(&t, v, "foreign files", why);
    print_message("%s | foreign: %u runs with %zu foreign files, violations %u%s%s\n", w->name,
                  t.points, planted.n, t.violations, t.violations ? "; first: " : "", t.first);
    violations += t.violations;
    if (violations) fail_msg("%s: %u violations (see above)", w->name, violations);
}

static void test_fault_load(void **state)
{
    (void)state;
    writer_case w = {"load", &T_BASE, run_load, {1, 1, 1}, false, NULL};
    run_writer(&w);
}

static void test_fault_mutation(void **state)
{
    (void)state;
    writer_case w = {"mutation", &T_BASE, run_mutate, {1, 0, 0}, false, NULL};
    run_writer(&w);
}

static void test_fault_optimize(void **state)
{
    (void)state;
    writer_case w = {"optimize", &T_BASE, run_optimize, {0, 0, 0}, false, NULL};
    run_writer(&w);
}

static void test_fault_maintenance(void **state)
{
    (void)state;
    writer_case w = {"manifest compaction", &T_BASE, run_compact_manifest, {0, 0, 0}, false, NULL};
    run_writer(&w);
}

static void test_fault_cleanup(void **state)
{
    (void)state;
    /* every "gone" get: one of them once let cleanup delete a kept version's files */
    writer_case w = {"cleanup", &T_BASE, run_cleanup, {0, 0, 0}, true, "gone"};
    run_writer(&w);
}

static void test_fault_recover_resolve(void **state)
{
    (void)state;
    writer_case w = {"recover resolve", &T_INTERRUPTED, run_resolve, {0, 0, 0}, false, NULL};
    run_writer(&w);
}

static void test_fault_backup(void **state)
{
    (void)state;
    writer_case w = {"backup", &T_BASE, run_backup, {0, 0, 0}, false, NULL};
    run_writer(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rolled_back_load_leaves_no_files),
        cmocka_unit_test(test_failed_staging_leaves_no_files),
        cmocka_unit_test(test_killed_load_leaves_no_files),
        cmocka_unit_test(test_cleanup_reclaims_temps),
        cmocka_unit_test(test_fault_load),
        cmocka_unit_test(test_fault_mutation),
        cmocka_unit_test(test_fault_optimize),
        cmocka_unit_test(test_fault_maintenance),
        cmocka_unit_test(test_fault_cleanup),
        cmocka_unit_test(test_fault_recover_resolve),
        cmocka_unit_test(test_fault_backup),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (T_BASE.dir[0]) test_sandbox_done(T_BASE.dir);
    if (T_INTERRUPTED.dir[0]) test_sandbox_done(T_INTERRUPTED.dir);
    return rc;
}
