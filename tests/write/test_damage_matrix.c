/* The storage-damage matrix (issue 33 item 9): every kind of file a graph root holds, times six
 * kinds of damage, each run through the `omnigraph` command as a user would.
 *
 * The binary is $OMNIGRAPH_BIN, or this build's omnigraph ($OG_TEST_BINDIR/omnigraph), so the
 * same test measures an older build (the closing note gives the counts before and
 * after). It only runs the binary: it links nothing of the library.
 *
 * 1. A pristine graph is built once through the CLI: node types Person and Company (@key),
 *    Tag (@key, 30,000 rows in one data file over 4 MiB: block checksums), edges Knows and
 *    WorksAt; loads, a delete (deletion files), inserts, a write killed after its table effect
 *    (a failpoint) that the next write's recovery rolls forward (the audit log
 *    _recoveries.lance), a schema apply (_schemas/ history), an update, branches `feat` (two
 *    commits: table forks, their refs and deletion files) and `side`, and a last insert on main.
 *    The expected answers are the full row sets of Person, Company, Knows (a traversal) and Tag,
 *    and a key lookup of the middle row of Person and of Tag (a read of a byte range, not of the
 *    whole file), at the head of main, at the head of feat, and on main --at the delete's commit
 *    (before the schema apply): the JSON output of `query --json` (commit id and rows).
 * 2. Every file under the root is classified by its path (kinds[] below). A file that fits no
 *    kind fails the test, as does a kind the graph must hold but does not: nothing is skipped
 *    silently. Lance transaction files (`_transactions/`) have a kind but are not required: graph
 * writes keep each transaction inline in the Lance manifest (src/lance/txn.h) and write none;
 * recovery sidecars (`__recovery/`) are absent in a graph at rest. Representative files are picked
 *    per kind (picks[]).
 * 3. Each (file, damage) cell works on a fresh copy of the pristine graph at the path it was
 *    built at, damaged by one of: delete; truncate to half; truncate to zero; invert the lowest
 *    bit of the middle byte ("flip mid": a digit stays a digit, a letter a letter); the same for
 *    the first of the last 16 bytes ("flip tail": in a Lance file, the low byte of a footer
 *    offset); replace with the bytes of another file of the same kind (the nearest other
 *    version in the same directory first). Then, in order:
 *      a. the six queries at the head of main, the head of feat and main --at (18 runs);
 *      b. `verify`;
 *      c. one write: insert a Person on main, or on feat when the file belongs to feat
 *         (a graph-branch file or a table fork), then the queries on main and on feat (Tag
 *         counted, not listed: its bytes were checked in a.);
 *      d. `repair --confirm`, then the same queries as after the write.
 *    A cell where the damage cannot change the file (truncating or flipping an empty file, a
 *    replacement with identical bytes) is not run: it prints `-` and counts as n/a, never as
 *    passing.
 * 4. Each step gets one code (the reads one per state: the worst of its queries):
 *      C correct: exit 0 and exactly the expected rows (and, before any write, the expected
 *        commit id); for verify: exit 0 when every read and the write were correct;
 *      T typed: nonzero exit, an error code (`error[CODE]` on stderr, or a JSON error object,
 *        or for verify its exit 7 report), and the output names what is damaged (below);
 *      N repair exited 0 but reads still fail typed as before (nothing lost, nothing fixed);
 *    and the violations:
 *      W wrong: exit 0 with a wrong answer (for a write: exit 0, then a read answers wrong);
 *      U untyped: nonzero exit without an error code or without naming what is damaged;
 *      X crash: ended by a signal (or a sanitizer report, or the 120 s alarm);
 *      M verify exited 0 while a read or the write of the same state failed or was wrong;
 *      A a write was acknowledged (exit 0) but a read that was correct before it now fails;
 *      L repair exited 0 and afterwards a read answers without an acknowledged row (the
 *        expected rows, plus the write of step c when it was acknowledged), or fails where it
 *        read correctly before the repair.
 *    "Names what is damaged" means the output (stdout and stderr, text or JSON) contains one of:
 *    the file's path relative to the root or its file name; for a file of a table, the table's
 *    directory name or its alias (`node:Person`); for a graph-manifest or table version file,
 *    "version N" (or "versions N") with N its version; for a graph-branch file (its ref, its
 *    manifest versions), the branch (`branch feat`, `'feat'`, `feat.json`, `tree/feat`); for a
 *    kept schema, its identity; for the audit log, `_recoveries.lance` or "audit".
 * 5. The table (per file, per damage: the codes of reads main/feat/--at, verify, write, repair)
 *    and the totals are printed; the test fails on any violation. A control cell (no damage)
 *    must be all C, which shows the classification can tell. */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Messages kept in the table are cut to fit on purpose (gcc warns of it; clang has no such
 * warning). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

#define BIG_FILE (4u << 20)
/* Tag: 30,000 rows of a 19-byte key (id and k hold it) and a 120-byte note, over 4 MiB in one
 * data file whose middle lies in the note's string values (the columns are stored one after
 * another): a flip there changes a value, not an offset that fails to decode. */
#define TAG_ROWS 30000
#define TAG_FMT "tag-%07d-abcdefgh"
#define TAG_NOTE                                                                                   \
    "note-%07d-The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor "   \
    "jugs. Sphinx of black quartz"
#define TAG_MID "tag-0015000-abcdefgh"
#define MAXF 512

static char g_bin[1024];
static char g_box[TEST_SANDBOX_PATH];
static char g_root[TEST_SANDBOX_PATH + 16];     /* where the graph lives (each cell copies here) */
static char g_pristine[TEST_SANDBOX_PATH + 16]; /* the pristine graph, kept aside */

/* ---- running the binary ---------------------------------------------------------------- */

typedef struct run {
    int status; /* exit code, or -1 when a signal ended it */
    int sig;
    char *out, *err;
    size_t out_len;
} run;

static void run_free(run *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (len) *len = 0;
        return strdup("");
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    if (!b) fail_msg("out of memory");
    size_t got = fread(b, 1, (size_t)n, f);
    b[got] = '\0';
    fclose(f);
    if (len) *len = got;
    return b;
}

/* Run g_bin with args (NULL-terminated) from g_box, with env ("K=V" or NULL) added. */
static run og_argv(const char *env, const char *const *args)
{
    char outf[TEST_SANDBOX_PATH + 16], errf[TEST_SANDBOX_PATH + 16];
    snprintf(outf, sizeof outf, "%s/out.txt", g_box);
    snprintf(errf, sizeof errf, "%s/err.txt", g_box);
    const char *argv[32];
    size_t n = 0;
    argv[n++] = g_bin;
    for (size_t i = 0; args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) fail_msg("fork: %s", strerror(errno));
    if (pid == 0) {
        if (chdir(g_box) != 0) _exit(125);
        int fo = open(outf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fo < 0 || fe < 0) _exit(125);
        dup2(fo, 1);
        dup2(fe, 2);
        close(fo);
        close(fe);
        if (env) putenv((char *)env);
        setenv("OG_GATE_TIMEOUT_MS", "20000", 1);
        alarm(120);
        execv(g_bin, (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    run r = {0};
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    r.out = slurp(outf, &r.out_len);
    r.err = slurp(errf, NULL);
    if (r.status == 127) fail_msg("cannot run %s", g_bin);
    return r;
}

#define OG(env, ...) og_argv((env), (const char *const[]){__VA_ARGS__, NULL})

/* The run must have succeeded; it is freed. */
static void must(run r, const char *what)
{
    if (r.status != 0)
        fail_msg("%s exited %d (signal %d): %s%s", what, r.status, r.sig, r.out, r.err);
    run_free(&r);
}

static void put_text(const char *name, const char *text)
{
    char p[TEST_SANDBOX_PATH + 64];
    snprintf(p, sizeof p, "%s/%s", g_box, name);
    test_write_file(p, text, strlen(text));
}

/* ---- copying a tree -------------------------------------------------------------------- */

static const char *g_copy_from, *g_copy_to;

static int copy_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)ftw;
    char dst[1024];
    snprintf(dst, sizeof dst, "%s%s", g_copy_to, p + strlen(g_copy_from));
    if (flag == FTW_D) {
        if (mkdir(dst, 0755) != 0 && errno != EEXIST)
            fail_msg("mkdir %s: %s", dst, strerror(errno));
        return 0;
    }
    if (flag != FTW_F) return 0;
    int in = open(p, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0) fail_msg("copy %s: %s", p, strerror(errno));
    off_t left = sb->st_size;
    while (left > 0) {
        ssize_t k = copy_file_range(in, NULL, out, NULL, (size_t)left, 0);
        if (k <= 0) {
            char buf[65536];
            ssize_t m = read(in, buf, sizeof buf);
            if (m <= 0 || write(out, buf, (size_t)m) != m) fail_msg("copy %s failed", p);
            k = m;
        }
        left -= k;
    }
    close(in);
    close(out);
    return 0;
}

static void copy_tree(const char *from, const char *to)
{
    g_copy_from = from;
    g_copy_to = to;
    if (nftw(from, copy_one, 16, FTW_PHYS) != 0) fail_msg("cannot copy %s", from);
}

/* ---- query results ----------------------------------------------------------------------- */

enum { Q_PERSON, Q_COMPANY, Q_KNOWS, Q_TAG, Q_TAGN, Q_PERSON_KEY, Q_TAG_KEY, NQ };
enum { S_MAIN, S_FEAT, S_AT, NS };
static const char *QTEXT[NQ] = {
    "query q() { match { $p: Person } return { $p.name, $p.age } }",
    "query q() { match { $c: Company } return { $c.name } }",
    "query q() { match { $a: Person  $a knows $b } return { $a.name, $b.name } }",
    "query q() { match { $t: Tag } return { $t.id, $t.k, $t.note } }",
    "query q() { match { $t: Tag } return { count($t) as n } }",
    /* Key lookups read a range of the data file (the key index, then the rows around the
     * match), not the whole file: the middle row of each table. */
    "query q() { match { $p: Person  $p.name = \"p049\" } return { $p.id, $p.name, $p.age } }",
    "query q() { match { $t: Tag  $t.k = \"" TAG_MID "\" } return { $t.id, $t.k, $t.note } }",
};
static const char *QNAME[NQ] = {"Person",    "Company",           "Knows",         "Tag",
                                "Tag count", "Person key lookup", "Tag key lookup"};
/* The reads before the write read every Tag row; the reads after the write and after repair
 * count them (the rows' bytes are what the first reads checked; a count still sees a lost or
 * older Tag version), which keeps the matrix's run time down. */
static bool pre_query(int q)
{
    return q != Q_TAGN;
}
static bool post_query(int q)
{
    return q != Q_TAG;
}
static const char *SNAME[NS] = {"main", "feat", "--at"};
static char g_at[32]; /* the --at version */

/* A query's answer: the commit read and its rows (each row's JSON text, sorted). */
typedef struct answer {
    char commit[40];
    size_t n;
    char **rows;
    size_t *lens;
    char *buf; /* owns the text the rows point into */
} answer;

static void answer_free(answer *a)
{
    free(a->rows);
    free(a->lens);
    free(a->buf);
    memset(a, 0, sizeof *a);
}

static int row_cmp(const void *x, const void *y, void *lens_base)
{
    (void)lens_base;
    const char *const *a = x, *const *b = y;
    return strcmp(*a, *b);
}

/* Parse `query --json` output. false when it is not the one object with rows it should be. */
static bool answer_parse(char *text, answer *a)
{
    memset(a, 0, sizeof *a);
    a->buf = text;
    const char *c = strstr(text, "\"graph_commit_id\":\"");
    if (!c) return false;
    c += strlen("\"graph_commit_id\":\"");
    size_t k = 0;
    while (c[k] && c[k] != '"' && k < sizeof a->commit - 1) {
        a->commit[k] = c[k];
        k++;
    }
    char *r = strstr(text, "\"rows\":[");
    if (!r) return false;
    r += strlen("\"rows\":[");
    size_t cap = 1024;
    a->rows = malloc(cap * sizeof *a->rows);
    /* Rows are flat objects of scalars: split at the braces outside strings. */
    while (*r == '{') {
        char *start = r;
        bool in_str = false;
        for (; *r; r++) {
            if (in_str) {
                if (*r == '\\' && r[1])
                    r++;
                else if (*r == '"')
                    in_str = false;
            } else if (*r == '"') {
                in_str = true;
            } else if (*r == '}') {
                break;
            }
        }
        if (*r != '}') return false;
        r++;
        char sep = *r;
        *r = '\0';
        if (a->n == cap) a->rows = realloc(a->rows, (cap *= 2) * sizeof *a->rows);
        a->rows[a->n++] = start;
        if (sep != ',') {
            if (sep != ']') return false;
            break;
        }
        r++;
    }
    qsort_r(a->rows, a->n, sizeof *a->rows, row_cmp, NULL);
    return true;
}

static bool rows_equal(const answer *a, const answer *b)
{
    if (a->n != b->n) return false;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->rows[i], b->rows[i]) != 0) return false;
    return true;
}

/* ---- the pristine graph ---------------------------------------------------------------- */

static const char *SCHEMA1 = "node Person { name: String @key  age: I32? }\n"
                             "node Company { name: String @key }\n"
                             "node Tag { k: String @key  note: String }\n"
                             "edge Knows: Person -> Person { since: Date? }\n"
                             "edge WorksAt: Person -> Company\n";
static const char *SCHEMA2 = "node Person { name: String @key  age: I32? }\n"
                             "node Company { name: String @key  size: U32? }\n"
                             "node Tag { k: String @key  note: String }\n"
                             "edge Knows: Person -> Person { since: Date? }\n"
                             "edge WorksAt: Person -> Company\n";

static const char *W_INSERT = "query w() { insert Person { name: \"wnew\", age: 1 } }";

static answer g_expect[NS][NQ]; /* the pristine answers */
static answer g_after[2][2]
                     [NQ]; /* after the control write on [target main/feat], read [main/feat] */
static char g_alias_dir[8][128]; /* table directory names (nodes/...lance) ... */
static char g_alias_name[8][64]; /* ... and their aliases */
static size_t g_ntables;

static uint64_t json_u64(const char *text, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(text, k);
    if (!p) fail_msg("no %s in %s", key, text);
    return strtoull(p + strlen(k), NULL, 10);
}

static void build_pristine(void)
{
    put_text("s1.pg", SCHEMA1);
    put_text("s2.pg", SCHEMA2);
    size_t cap = 1 << 16, len = 0;
    char *a = malloc(cap);
    for (int i = 0; i < 100; i++)
        len += (size_t)snprintf(a + len, cap - len,
                                "{\"type\":\"Person\",\"data\":{\"name\":\"p%03d\",\"age\":%d}}\n",
                                i, i);
    for (int i = 0; i < 5; i++)
        len += (size_t)snprintf(a + len, cap - len,
                                "{\"type\":\"Company\",\"data\":{\"name\":\"c%d\"}}\n", i);
    for (int i = 0; i < 99; i++)
        len += (size_t)snprintf(
            a + len, cap - len,
            "{\"edge\":\"Knows\",\"from\":\"p%03d\",\"to\":\"p%03d\",\"data\":{\"id\":"
            "\"k%03d\"}}\n",
            i, i + 1, i);
    for (int i = 0; i < 10; i++)
        len += (size_t)snprintf(
            a + len, cap - len,
            "{\"edge\":\"WorksAt\",\"from\":\"p%03d\",\"to\":\"c%d\",\"data\":{\"id\":"
            "\"w%03d\"}}\n",
            i, i % 5, i);
    put_text("a.jsonl", a);
    free(a);
    size_t tcap = (size_t)TAG_ROWS * 256;
    char *t = malloc(tcap);
    len = 0;
    for (int i = 0; i < TAG_ROWS; i++)
        len += (size_t)snprintf(t + len, tcap - len,
                                "{\"type\":\"Tag\",\"data\":{\"k\":\"" TAG_FMT
                                "\",\"note\":\"" TAG_NOTE "\"}}\n",
                                i, i);
    put_text("t.jsonl", t);
    free(t);

    must(OG(NULL, "init", "--schema", "s1.pg", "g"), "init");
    must(OG(NULL, "load", "--data", "a.jsonl", "--mode", "merge", "g"), "load a");
    must(OG(NULL, "load", "--data", "t.jsonl", "--mode", "merge", "g"), "load tags");
    run r = OG(NULL, "mutate", "--store", "g", "--json", "-e",
               "query d() { delete Person where name = \"p050\" }");
    if (r.status != 0) fail_msg("delete p050 exited %d: %s", r.status, r.err);
    snprintf(g_at, sizeof g_at, "%" PRIu64, json_u64(r.out, "manifest_version"));
    run_free(&r);
    must(OG(NULL, "mutate", "--store", "g", "-e",
            "query i() { insert Person { name: \"zed\", age: 7 } }"),
         "insert zed");
    /* A write killed after its table effect: the next write's recovery rolls it forward and
     * writes the audit log. */
    r = OG("OG_FAILPOINTS=write.post_table_effect=exit", "mutate", "--store", "g", "-e",
           "query i() { insert Company { name: \"cX\" } }");
    if (r.status != 86) fail_msg("the killed write exited %d, not 86: %s", r.status, r.err);
    run_free(&r);
    must(OG(NULL, "mutate", "--store", "g", "-e", "query i() { insert Company { name: \"cY\" } }"),
         "insert cY");
    must(OG(NULL, "schema", "apply", "--schema", "s2.pg", "--store", "g"), "schema apply");
    must(OG(NULL, "mutate", "--store", "g", "-e",
            "query u() { update Company set { size: 10 } where name = \"c1\" }"),
         "update c1");
    must(OG(NULL, "branch", "create", "feat", "--store", "g"), "branch feat");
    must(OG(NULL, "branch", "create", "side", "--store", "g"), "branch side");
    must(OG(NULL, "mutate", "--store", "g", "--branch", "feat", "-e",
            "query i() { insert Person { name: \"bob\", age: 3 } }"),
         "insert bob on feat");
    must(OG(NULL, "mutate", "--store", "g", "--branch", "feat", "-e",
            "query d() { delete Person where name = \"p010\" }"),
         "delete p010 on feat");
    must(OG(NULL, "mutate", "--store", "g", "-e",
            "query i() { insert Person { name: \"amy\", age: 4 } }"),
         "insert amy");

    r = OG(NULL, "snapshot", "--json", "--store", "g");
    if (r.status != 0) fail_msg("snapshot exited %d: %s", r.status, r.err);
    json_error_t je;
    json_t *j = json_loads(r.out, 0, &je);
    if (!j) fail_msg("snapshot --json: %s", je.text);
    json_t *tables = json_object_get(j, "tables");
    for (size_t i = 0; i < json_array_size(tables) && g_ntables < 8; i++) {
        json_t *t1 = json_array_get(tables, i);
        const char *path = json_string_value(json_object_get(t1, "path"));
        const char *alias = json_string_value(json_object_get(t1, "alias"));
        const char *slash = strchr(path, '/');
        snprintf(g_alias_dir[g_ntables], sizeof g_alias_dir[0], "%s", slash ? slash + 1 : path);
        snprintf(g_alias_name[g_ntables], sizeof g_alias_name[0], "%s", alias);
        g_ntables++;
    }
    json_decref(j);
    run_free(&r);
}

/* ---- kinds ----------------------------------------------------------------------------- */

typedef enum kind {
    K_GM_VERSION,
    K_GM_HINT,
    K_GM_DATA,
    K_GM_REF,
    K_GM_BRANCH_VERSION,
    K_GM_BRANCH_HINT,
    K_GM_BRANCH_DATA,
    K_T_VERSION,
    K_T_HINT,
    K_T_DATA_SMALL,
    K_T_DATA_BIG,
    K_T_DELETION,
    K_T_KEYINDEX,
    K_T_TXN,
    K_T_REF,
    K_F_VERSION,
    K_F_HINT,
    K_F_DATA,
    K_F_DELETION,
    K_F_KEYINDEX,
    K_SCHEMA_HISTORY,
    K_SCHEMA_ACCEPTED,
    K_AUDIT_VERSION,
    K_AUDIT_HINT,
    K_AUDIT_DATA,
    K_SIDECAR,
    K_LOCK,
    K_OTHER,
    NKINDS
} kind;

static const struct {
    const char *name, *pattern;
    bool required;
} KINDS[NKINDS] = {
    [K_GM_VERSION] = {"graph-manifest version", "__manifest.lance/_versions/*.manifest", true},
    [K_GM_HINT] = {"graph-manifest hint", "__manifest.lance/_versions/latest_version_hint.json",
                   true},
    [K_GM_DATA] = {"graph-manifest data", "__manifest.lance/data/*.lance", true},
    [K_GM_REF] = {"graph branch ref", "__manifest.lance/_refs/branches/*.json", true},
    [K_GM_BRANCH_VERSION] = {"graph-manifest branch version",
                             "__manifest.lance/tree/B/_versions/*.manifest", true},
    [K_GM_BRANCH_HINT] = {"graph-manifest branch hint",
                          "__manifest.lance/tree/B/_versions/latest_version_hint.json", false},
    [K_GM_BRANCH_DATA] = {"graph-manifest branch data", "__manifest.lance/tree/B/data/*.lance",
                          true},
    [K_T_VERSION] = {"table manifest version", "{nodes,edges}/T/_versions/*.manifest", true},
    [K_T_HINT] = {"table hint", "{nodes,edges}/T/_versions/latest_version_hint.json", true},
    [K_T_DATA_SMALL] = {"table data file < 4 MiB", "{nodes,edges}/T/data/*.lance", true},
    [K_T_DATA_BIG] = {"table data file > 4 MiB", "{nodes,edges}/T/data/*.lance", true},
    [K_T_DELETION] = {"table deletion file", "{nodes,edges}/T/_deletions/*", true},
    [K_T_KEYINDEX] = {"table key index segment", "{nodes,edges}/T/_ogkix/*.ogx", true},
    [K_T_TXN] = {"table transaction file", "{nodes,edges}/T/_transactions/*.txn", false},
    [K_T_REF] = {"table branch ref", "{nodes,edges}/T/_refs/branches/*.json", true},
    [K_F_VERSION] = {"table fork version", "{nodes,edges}/T/tree/B/_versions/*.manifest", true},
    [K_F_HINT] = {"table fork hint", "{nodes,edges}/T/tree/B/_versions/latest_version_hint.json",
                  true},
    [K_F_DATA] = {"table fork data file", "{nodes,edges}/T/tree/B/data/*.lance", true},
    [K_F_DELETION] = {"table fork deletion file", "{nodes,edges}/T/tree/B/_deletions/*", true},
    [K_F_KEYINDEX] = {"table fork key index", "{nodes,edges}/T/tree/B/_ogkix/*.ogx", false},
    [K_SCHEMA_HISTORY] = {"kept schema", "_schemas/*.{pg,json}", true},
    [K_SCHEMA_ACCEPTED] = {"accepted schema", "_schema.{pg,json}", true},
    [K_AUDIT_VERSION] = {"audit log version", "_recoveries.lance/_versions/*.manifest", true},
    [K_AUDIT_HINT] = {"audit log hint", "_recoveries.lance/_versions/latest_version_hint.json",
                      true},
    [K_AUDIT_DATA] = {"audit log data", "_recoveries.lance/data/*.lance", true},
    [K_SIDECAR] = {"recovery sidecar", "__recovery/*.json", false},
    [K_LOCK] = {"lock file", ".og-locks/*", true},
    [K_OTHER] = {"unknown", "*", false},
};

typedef struct file {
    char rel[512];
    kind k;
    off_t size;
    struct timespec mtime;
    uint64_t version; /* version files: the version their name encodes */
    int table;        /* index into g_alias_dir, or -1 */
    char branch[32];  /* the branch a tree/ file belongs to, "" for main's */
} file;

static file g_files[MAXF];
static size_t g_nfiles;

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* Classify rest (a path inside a Lance dataset: after "<ds>/"), with tree/B/ stripped into b. */
static int lance_part(const char *rest, char *b, size_t bcap, const char **tail)
{
    b[0] = '\0';
    if (strncmp(rest, "tree/", 5) == 0) {
        const char *s = rest + 5, *e = strchr(s, '/');
        if (!e) return -1;
        snprintf(b, bcap, "%.*s", (int)(e - s), s);
        rest = e + 1;
    }
    *tail = rest;
    if (strncmp(rest, "_versions/", 10) == 0) {
        if (strcmp(rest + 10, "latest_version_hint.json") == 0) return 1;
        if (ends_with(rest, ".manifest") && !strchr(rest + 10, '/')) return 0;
        return -1;
    }
    if (strncmp(rest, "data/", 5) == 0 && ends_with(rest, ".lance")) return 2;
    if (strncmp(rest, "_deletions/", 11) == 0) return 3;
    if (strncmp(rest, "_ogkix/", 7) == 0 && ends_with(rest, ".ogx")) return 4;
    if (strncmp(rest, "_transactions/", 14) == 0 && ends_with(rest, ".txn")) return 5;
    if (strncmp(rest, "_refs/branches/", 15) == 0 && ends_with(rest, ".json")) return 6;
    return -1;
}

static void classify(file *f)
{
    const char *rel = f->rel, *tail = NULL;
    f->k = K_OTHER;
    f->table = -1;
    f->branch[0] = '\0';
    if (strncmp(rel, ".og-locks/", 10) == 0) {
        f->k = K_LOCK;
    } else if (strncmp(rel, "__recovery/", 11) == 0 && ends_with(rel, ".json")) {
        f->k = K_SIDECAR;
    } else if (strcmp(rel, "_schema.pg") == 0 || strcmp(rel, "_schema.json") == 0) {
        f->k = K_SCHEMA_ACCEPTED;
    } else if (strncmp(rel, "_schemas/", 9) == 0 && !strchr(rel + 9, '/') &&
               (ends_with(rel, ".pg") || ends_with(rel, ".json"))) {
        f->k = K_SCHEMA_HISTORY;
    } else if (strncmp(rel, "__manifest.lance/", 17) == 0) {
        int p = lance_part(rel + 17, f->branch, sizeof f->branch, &tail);
        bool br = f->branch[0] != '\0';
        if (p == 0) f->k = br ? K_GM_BRANCH_VERSION : K_GM_VERSION;
        if (p == 1) f->k = br ? K_GM_BRANCH_HINT : K_GM_HINT;
        if (p == 2) f->k = br ? K_GM_BRANCH_DATA : K_GM_DATA;
        if (p == 6 && !br) f->k = K_GM_REF;
        if (p == 6 && !br)
            snprintf(f->branch, sizeof f->branch, "%.*s", (int)(strlen(tail) - 15 - 5), tail + 15);
    } else if (strncmp(rel, "_recoveries.lance/", 18) == 0) {
        int p = lance_part(rel + 18, f->branch, sizeof f->branch, &tail);
        if (!f->branch[0] && p == 0) f->k = K_AUDIT_VERSION;
        if (!f->branch[0] && p == 1) f->k = K_AUDIT_HINT;
        if (!f->branch[0] && p == 2) f->k = K_AUDIT_DATA;
    } else if (strncmp(rel, "nodes/", 6) == 0 || strncmp(rel, "edges/", 6) == 0) {
        const char *ds = rel + 6, *e = strchr(ds, '/');
        if (e && e - ds > 6 && strncmp(e - 6, ".lance", 6) == 0) {
            for (size_t i = 0; i < g_ntables; i++)
                if (strlen(g_alias_dir[i]) == (size_t)(e - ds) &&
                    strncmp(g_alias_dir[i], ds, (size_t)(e - ds)) == 0)
                    f->table = (int)i;
            int p = lance_part(e + 1, f->branch, sizeof f->branch, &tail);
            bool br = f->branch[0] != '\0';
            static const kind main_k[] = {K_T_VERSION,  K_T_HINT, K_T_DATA_SMALL, K_T_DELETION,
                                          K_T_KEYINDEX, K_T_TXN,  K_T_REF};
            static const kind fork_k[] = {K_F_VERSION,  K_F_HINT, K_F_DATA, K_F_DELETION,
                                          K_F_KEYINDEX, K_OTHER,  K_OTHER};
            if (p >= 0) f->k = br ? fork_k[p] : main_k[p];
            if (f->k == K_T_DATA_SMALL && f->size > (off_t)BIG_FILE) f->k = K_T_DATA_BIG;
            if (f->k == K_T_REF)
                snprintf(f->branch, sizeof f->branch, "%.*s", (int)(strlen(tail) - 15 - 5),
                         tail + 15);
        }
    }
    if (f->k == K_GM_VERSION || f->k == K_GM_BRANCH_VERSION || f->k == K_T_VERSION ||
        f->k == K_F_VERSION || f->k == K_AUDIT_VERSION) {
        const char *base = strrchr(rel, '/') + 1;
        f->version = UINT64_MAX - strtoull(base, NULL, 10);
    }
}

static const char *g_walk_root;

static int list_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)ftw;
    if (flag != FTW_F) return 0;
    if (g_nfiles == MAXF) fail_msg("more than %d files", MAXF);
    file *f = &g_files[g_nfiles++];
    snprintf(f->rel, sizeof f->rel, "%s", p + strlen(g_walk_root) + 1);
    f->size = sb->st_size;
    f->mtime = sb->st_mtim;
    classify(f);
    return 0;
}

/* ---- picks: the files damaged ---------------------------------------------------------- */

typedef struct pick {
    const char *label;
    const file *f;
    const file *repl; /* bytes for "replace", or NULL */
    /* Damage no read shows (nothing reads it at the head) but that loses records: verify
     * must report it (the newest audit-log version: its recovery records). */
    bool verify_must_report;
} pick;

static pick g_picks[64];
static size_t g_npicks;

static int table_of(const char *alias)
{
    for (size_t i = 0; i < g_ntables; i++)
        if (strcmp(g_alias_name[i], alias) == 0) return (int)i;
    fail_msg("no table %s", alias);
    return -1;
}

static bool ts_before(struct timespec a, struct timespec b)
{
    return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}

static const char *dir_of(const char *rel, char *buf, size_t cap)
{
    const char *s = strrchr(rel, '/');
    snprintf(buf, cap, "%.*s", s ? (int)(s - rel) : 0, rel);
    return buf;
}

/* The file of kind k (in table t when t >= 0; branch br when not NULL) chosen by `how`:
 * 'n' newest version, 'o' oldest version, 'v' version == want, 'm' the version nearest to want,
 * 'N' newest mtime, 'O' oldest mtime, 'f' first by path; `base` a substring of the path. */
static const file *find(kind k, int t, const char *br, char how, uint64_t want, const char *sub)
{
    const file *best = NULL;
    for (size_t i = 0; i < g_nfiles; i++) {
        const file *f = &g_files[i];
        if (f->k != k || (t >= 0 && f->table != t) || (br && strcmp(f->branch, br) != 0)) continue;
        if (sub && !strstr(f->rel, sub)) continue;
        if (!best) {
            best = f;
            continue;
        }
        switch (how) {
        case 'n':
            if (f->version > best->version) best = f;
            break;
        case 'o':
            if (f->version < best->version) best = f;
            break;
        case 'v':
            if (f->version == want) best = f;
            break;
        case 'm': {
            uint64_t d1 = f->version > want ? f->version - want : want - f->version;
            uint64_t d0 = best->version > want ? best->version - want : want - best->version;
            if (d1 < d0) best = f;
            break;
        }
        case 'N':
            if (ts_before(best->mtime, f->mtime)) best = f;
            break;
        case 'O':
            if (ts_before(f->mtime, best->mtime)) best = f;
            break;
        default:
            if (strcmp(f->rel, best->rel) < 0) best = f;
            break;
        }
    }
    if (best && how == 'v' && best->version != want) best = NULL;
    return best;
}

static int kind_family(kind k)
{
    switch (k) {
    case K_GM_VERSION:
    case K_GM_BRANCH_VERSION:
        return 1;
    case K_T_VERSION:
    case K_F_VERSION:
        return 2;
    case K_T_DATA_SMALL:
    case K_T_DATA_BIG:
    case K_F_DATA:
        return 3;
    case K_GM_DATA:
    case K_GM_BRANCH_DATA:
    case K_AUDIT_DATA:
        return 4;
    case K_T_DELETION:
    case K_F_DELETION:
        return 5;
    case K_GM_HINT:
    case K_GM_BRANCH_HINT:
    case K_T_HINT:
    case K_F_HINT:
    case K_AUDIT_HINT:
        return 6;
    case K_GM_REF:
    case K_T_REF:
        return 7;
    case K_SCHEMA_HISTORY:
    case K_SCHEMA_ACCEPTED:
        return 8;
    case K_T_KEYINDEX:
    case K_F_KEYINDEX:
        return 9;
    default:
        return 100 + (int)k;
    }
}

static bool same_bytes(const file *a, const file *b)
{
    char pa[1024], pb[1024];
    snprintf(pa, sizeof pa, "%s/%s", g_pristine, a->rel);
    snprintf(pb, sizeof pb, "%s/%s", g_pristine, b->rel);
    size_t la, lb;
    char *x = slurp(pa, &la), *y = slurp(pb, &lb);
    bool same = la == lb && memcmp(x, y, la) == 0;
    free(x);
    free(y);
    return same;
}

/* Another file of f's kind with other bytes: in f's directory first (for versions the nearest
 * older one, else the nearest newer), then of f's kind anywhere, then of its family; a kept or
 * accepted schema only by one of the same extension. */
static const file *replacement(const file *f)
{
    char d0[1024], d1[1024];
    dir_of(f->rel, d0, sizeof d0);
    const file *best = NULL;
    int best_rank = 1 << 30;
    for (size_t i = 0; i < g_nfiles; i++) {
        const file *c = &g_files[i];
        if (c == f || kind_family(c->k) != kind_family(f->k)) continue;
        if (f->k == K_SCHEMA_HISTORY || f->k == K_SCHEMA_ACCEPTED) {
            const char *e0 = strrchr(f->rel, '.'), *e1 = strrchr(c->rel, '.');
            if (strcmp(e0, e1) != 0) continue;
        }
        int rank;
        if (c->k == f->k && strcmp(dir_of(c->rel, d1, sizeof d1), d0) == 0) {
            rank = 0;
            if (f->version || c->version)
                rank = c->version < f->version ? (int)(f->version - c->version)
                                               : 10000 + (int)(c->version - f->version);
        } else if (c->k == f->k) {
            rank = 100000;
        } else {
            rank = 200000;
        }
        if (rank < best_rank && !same_bytes(f, c)) {
            best = c;
            best_rank = rank;
        }
    }
    return best;
}

static void add_pick(const char *label, const file *f)
{
    if (!f) fail_msg("no file for the pick '%s'", label);
    pick *p = &g_picks[g_npicks++];
    p->label = label;
    p->f = f;
    p->repl = replacement(f);
    p->verify_must_report = false;
}

static void choose_picks(void)
{
    uint64_t at = strtoull(g_at, NULL, 10);
    const file *newest = find(K_GM_VERSION, -1, "", 'n', 0, NULL);
    if (!newest || newest->version < at + 2) fail_msg("the graph manifest has too few versions");
    int person = table_of("node:Person"), tag = table_of("node:Tag");
    add_pick("gm version: newest (main head)", newest);
    add_pick("gm version: middle (between)",
             find(K_GM_VERSION, -1, "", 'm', (at + newest->version + 1) / 2, NULL));
    add_pick("gm version: the one --at reads", find(K_GM_VERSION, -1, "", 'v', at, NULL));
    add_pick("gm version: oldest", find(K_GM_VERSION, -1, "", 'o', 0, NULL));
    add_pick("gm hint", find(K_GM_HINT, -1, NULL, 'f', 0, NULL));
    add_pick("gm data: newest", find(K_GM_DATA, -1, NULL, 'N', 0, NULL));
    add_pick("gm data: oldest", find(K_GM_DATA, -1, NULL, 'O', 0, NULL));
    add_pick("graph branch ref (feat)", find(K_GM_REF, -1, "feat", 'f', 0, NULL));
    add_pick("gm branch version: newest (feat head)",
             find(K_GM_BRANCH_VERSION, -1, "feat", 'n', 0, NULL));
    add_pick("gm branch data (feat)", find(K_GM_BRANCH_DATA, -1, "feat", 'N', 0, NULL));
    add_pick("table version: newest (Person)", find(K_T_VERSION, person, "", 'n', 0, NULL));
    const file *tn = find(K_T_VERSION, person, "", 'n', 0, NULL),
               *to = find(K_T_VERSION, person, "", 'o', 0, NULL);
    add_pick("table version: middle (Person)",
             find(K_T_VERSION, person, "", 'm', (tn->version + to->version) / 2, NULL));
    add_pick("table hint (Person)", find(K_T_HINT, person, "", 'f', 0, NULL));
    add_pick("data < 4 MiB: newest (Person)", find(K_T_DATA_SMALL, person, "", 'N', 0, NULL));
    add_pick("data < 4 MiB: oldest (Person)", find(K_T_DATA_SMALL, person, "", 'O', 0, NULL));
    add_pick("data > 4 MiB (Tag)", find(K_T_DATA_BIG, tag, "", 'f', 0, NULL));
    add_pick("deletion file (Person)", find(K_T_DELETION, person, "", 'f', 0, NULL));
    add_pick("key index (Person)", find(K_T_KEYINDEX, person, "", 'N', 0, NULL));
    add_pick("key index (Tag)", find(K_T_KEYINDEX, tag, "", 'N', 0, NULL));
    add_pick("table branch ref (Person feat)", find(K_T_REF, person, "feat", 'f', 0, NULL));
    add_pick("table fork version: newest (Person feat)",
             find(K_F_VERSION, person, "feat", 'n', 0, NULL));
    add_pick("table fork hint (Person feat)", find(K_F_HINT, person, "feat", 'f', 0, NULL));
    add_pick("table fork data (Person feat)", find(K_F_DATA, person, "feat", 'N', 0, NULL));
    add_pick("table fork deletion (Person feat)", find(K_F_DELETION, person, "feat", 'f', 0, NULL));
    /* The kept schemas: the older identity's source (what --at reads) and the current one's
     * JSON (the accepted pair's twin). */
    char cur_pg[1024];
    snprintf(cur_pg, sizeof cur_pg, "%s/_schema.pg", g_pristine);
    const file *acc_pg = find(K_SCHEMA_ACCEPTED, -1, NULL, 'f', 0, "_schema.pg");
    const file *old_pg = NULL, *cur_json = NULL;
    for (size_t i = 0; i < g_nfiles; i++) {
        const file *f = &g_files[i];
        if (f->k != K_SCHEMA_HISTORY) continue;
        if (ends_with(f->rel, ".pg") && !same_bytes(f, acc_pg)) old_pg = f;
        if (ends_with(f->rel, ".json") &&
            same_bytes(f, find(K_SCHEMA_ACCEPTED, -1, NULL, 'f', 0, "_schema.json")))
            cur_json = f;
    }
    add_pick("kept schema: older .pg", old_pg);
    add_pick("kept schema: current .json", cur_json);
    add_pick("accepted schema _schema.pg", acc_pg);
    add_pick("accepted schema _schema.json",
             find(K_SCHEMA_ACCEPTED, -1, NULL, 'f', 0, "_schema.json"));
    add_pick("audit log version: newest", find(K_AUDIT_VERSION, -1, "", 'n', 0, NULL));
    g_picks[g_npicks - 1].verify_must_report = true;
    add_pick("audit log hint", find(K_AUDIT_HINT, -1, "", 'f', 0, NULL));
    add_pick("audit log data", find(K_AUDIT_DATA, -1, "", 'N', 0, NULL));
    add_pick("lock file", find(K_LOCK, -1, NULL, 'f', 0, NULL));
    (void)cur_pg;
}

/* ---- damage ---------------------------------------------------------------------------- */

enum { D_DELETE, D_HALF, D_ZERO, D_FLIP_MID, D_FLIP_TAIL, D_REPLACE, ND };
static const char *DNAME[ND] = {"delete", "trunc/2", "trunc0", "flipmid", "fliptail", "replace"};

/* Damage the copy at g_root. false when the damage would leave the file as it is. */
static bool damage(const pick *p, int d)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", g_root, p->f->rel);
    off_t size = p->f->size;
    switch (d) {
    case D_DELETE:
        if (unlink(path) != 0) fail_msg("unlink %s: %s", path, strerror(errno));
        return true;
    case D_HALF:
    case D_ZERO:
        if (size == 0) return false;
        if (truncate(path, d == D_HALF ? size / 2 : 0) != 0) fail_msg("truncate %s", path);
        return true;
    case D_FLIP_MID:
    case D_FLIP_TAIL: {
        if (size == 0) return false;
        off_t at = d == D_FLIP_MID ? size / 2 : (size >= 16 ? size - 16 : size - 1);
        int fd = open(path, O_RDWR);
        unsigned char c = 0;
        if (fd < 0 || pread(fd, &c, 1, at) != 1) fail_msg("read %s", path);
        c ^= 0x01;
        if (pwrite(fd, &c, 1, at) != 1) fail_msg("write %s", path);
        close(fd);
        return true;
    }
    default: {
        if (!p->repl) return false;
        char src[1024];
        snprintf(src, sizeof src, "%s/%s", g_pristine, p->repl->rel);
        size_t n;
        char *b = slurp(src, &n);
        test_write_file(path, b, n);
        free(b);
        return true;
    }
    }
}

/* ---- classification -------------------------------------------------------------------- */

enum { R_C, R_N, R_T, R_M, R_A, R_L, R_U, R_W, R_X, R_NA, NR };
static const char RCODE[NR] = {'C', 'N', 'T', 'M', 'A', 'L', 'U', 'W', 'X', '-'};
static const char *RNAME[NR] = {"CORRECT",        "UNFIXED (repair exit 0, reads still typed)",
                                "TYPED",          "VERIFY_MISS",
                                "ACK_UNREADABLE", "REPAIR_LOST",
                                "UNTYPED",        "WRONG",
                                "CRASH",          "n/a"};
static bool violation(int r)
{
    return r == R_M || r == R_A || r == R_L || r == R_U || r == R_W || r == R_X;
}
/* Severity for "the worst of": violations first. */
static int severity(int r)
{
    static const int s[NR] = {0, 1, 2, 5, 5, 5, 6, 7, 8, -1};
    return s[r];
}
static int worst(int a, int b)
{
    return severity(b) > severity(a) ? b : a;
}

static bool names_damage(const pick *p, const char *text)
{
    const file *f = p->f;
    const char *base = strrchr(f->rel, '/');
    base = base ? base + 1 : f->rel;
    if (strstr(text, f->rel) || strstr(text, base)) return true;
    if (f->table >= 0 &&
        (strstr(text, g_alias_dir[f->table]) || strstr(text, g_alias_name[f->table])))
        return true;
    if (f->k == K_GM_VERSION || f->k == K_GM_BRANCH_VERSION || f->k == K_T_VERSION ||
        f->k == K_F_VERSION) {
        char v[64];
        for (int pl = 0; pl < 2; pl++) {
            snprintf(v, sizeof v, pl ? "versions %" PRIu64 : "version %" PRIu64, f->version);
            for (const char *s = strstr(text, v); s; s = strstr(s + 1, v))
                if (s[strlen(v)] < '0' || s[strlen(v)] > '9') return true;
        }
    }
    if (f->k == K_GM_REF || f->k == K_GM_BRANCH_VERSION || f->k == K_GM_BRANCH_DATA ||
        f->k == K_GM_BRANCH_HINT) {
        const char *forms[] = {"branch %s", "'%s'", "\"%s\"", "`%s`", "%s.json", "tree/%s"};
        for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
            char t[96];
            snprintf(t, sizeof t, forms[i], f->branch);
            if (strstr(text, t)) return true;
        }
    }
    if (f->k == K_SCHEMA_HISTORY) {
        char id[64];
        snprintf(id, sizeof id, "%.*s", (int)(strrchr(base, '.') - base), base);
        if (strstr(text, id)) return true;
    }
    if ((f->k == K_AUDIT_VERSION || f->k == K_AUDIT_HINT || f->k == K_AUDIT_DATA) &&
        (strstr(text, "_recoveries.lance") || strstr(text, "audit")))
        return true;
    return false;
}

static bool crashed(const run *r)
{
    return r->sig != 0 || strstr(r->err, "Sanitizer") || strstr(r->err, "runtime error:");
}

static bool has_code(const run *r)
{
    return strstr(r->err, "error[") || strstr(r->out, "\"error\":{\"code\":\"");
}

/* A failed run: T, U or X. */
static int failed_code(const pick *p, const run *r)
{
    if (crashed(r)) return R_X;
    size_t n = strlen(r->out) + strlen(r->err) + 2;
    char *both = malloc(n);
    snprintf(both, n, "%s\n%s", r->out, r->err);
    bool named = names_damage(p, both);
    free(both);
    return has_code(r) && named ? R_T : R_U;
}

/* One query on state s (main, feat, --at) at g_root. */
static run query(int s, int q)
{
    if (s == S_MAIN) return OG(NULL, "query", "--store", "g", "--json", "-e", QTEXT[q]);
    if (s == S_FEAT)
        return OG(NULL, "query", "--store", "g", "--json", "--branch", "feat", "-e", QTEXT[q]);
    return OG(NULL, "query", "--store", "g", "--json", "--at", g_at, "-e", QTEXT[q]);
}

/* Classify a query run against want (commit checked when check_commit). */
static int judge_query(const pick *p, run *r, const answer *want, bool check_commit, char *why,
                       size_t wcap)
{
    if (crashed(r)) {
        snprintf(why, wcap, "signal %d: %.300s", r->sig, r->err);
        return R_X;
    }
    if (r->status != 0) {
        int c = failed_code(p, r);
        if (c != R_T) snprintf(why, wcap, "exit %d: %.300s %.300s", r->status, r->err, r->out);
        return c;
    }
    answer a;
    char *text = r->out;
    r->out = NULL;
    bool ok = answer_parse(text, &a);
    int c = R_C;
    if (!ok) {
        c = R_W;
        snprintf(why, wcap, "exit 0 with output that is no answer: %.200s", a.buf);
    } else if (check_commit && strcmp(a.commit, want->commit) != 0) {
        c = R_W;
        snprintf(why, wcap, "exit 0 reading commit %s, not %s", a.commit, want->commit);
    } else if (!rows_equal(&a, want)) {
        c = R_W;
        snprintf(why, wcap, "exit 0 with %zu rows, not the expected %zu rows%s", a.n, want->n,
                 a.n == want->n ? " (as many, other values)" : "");
    }
    answer_free(&a);
    return c;
}

/* ---- a cell ----------------------------------------------------------------------------- */

enum { STEP_MAIN, STEP_FEAT, STEP_AT, STEP_VERIFY, STEP_WRITE, STEP_REPAIR, NSTEP };

typedef struct cell {
    int code[NSTEP];
    char why[NSTEP][600];
} cell;

static void fresh_copy(void)
{
    test_rmrf(g_root);
    copy_tree(g_pristine, g_root);
}

/* The write's target: feat when the file is feat's, else main. */
static int write_target(const pick *p)
{
    return p && strcmp(p->f->branch, "feat") == 0 ? 1 : 0;
}

/* Read main and feat heads (8 queries) against want[main/feat]; codes per state into out[2];
 * when before is given, a query that was correct before and now fails typed gets `regress`. */
static void read_heads(const pick *p, answer want[2][NQ], int out[2], int regress,
                       const int before[2][NQ], int now[2][NQ], char why[2][600])
{
    for (int s = 0; s < 2; s++) {
        out[s] = R_C;
        for (int q = 0; q < NQ; q++) {
            now[s][q] = R_C;
            if (!post_query(q)) continue;
            run r = query(s, q);
            char w[600] = "";
            int c = judge_query(p, &r, &want[s][q], false, w, sizeof w);
            run_free(&r);
            now[s][q] = c;
            if (c == R_T && before && before[s][q] == R_C) {
                c = regress;
                snprintf(w, sizeof w, "%s was correct before, now fails", QNAME[q]);
            }
            if (severity(c) > severity(out[s])) {
                out[s] = c;
                snprintf(why[s], 600, "%s on %s: %s", QNAME[q], SNAME[s], w);
            }
        }
    }
}

static void run_cell(const pick *p, cell *c)
{
    memset(c, 0, sizeof *c);
    int pre[2][NQ] = {{0}};
    /* a. reads */
    bool any_bad = false;
    for (int s = 0; s < NS; s++) {
        c->code[s] = R_C;
        for (int q = 0; q < NQ; q++) {
            if (!pre_query(q)) continue;
            run r = query(s, q);
            char w[600] = "";
            int k = judge_query(p, &r, &g_expect[s][q], true, w, sizeof w);
            run_free(&r);
            if (s < 2) pre[s][q] = k;
            if (k != R_C) any_bad = true;
            if (severity(k) > severity(c->code[s])) {
                c->code[s] = k;
                snprintf(c->why[s], sizeof c->why[s], "%s: %s", QNAME[q], w);
            }
        }
    }
    for (int s = 0; s < 2; s++)
        pre[s][Q_TAGN] = pre[s][Q_TAG];
    /* b. verify */
    run v = OG(NULL, "verify", "--store", "g");
    int vcode;
    if (crashed(&v))
        vcode = R_X;
    else if (v.status == 0)
        vcode = R_C; /* judged after the write */
    else if (v.status == 7)
        vcode = names_damage(p, v.out) || names_damage(p, v.err) ? R_T : R_U;
    else
        vcode = failed_code(p, &v);
    if (vcode == R_U || vcode == R_X)
        snprintf(c->why[STEP_VERIFY], 600, "exit %d: %.250s %.250s", v.status, v.out, v.err);
    if (vcode == R_C && p->verify_must_report) {
        vcode = R_M;
        snprintf(c->why[STEP_VERIFY], 600, "verify exited 0, but records in %s were lost",
                 p->f->rel);
    }
    run_free(&v);
    /* c. write */
    int tgt = write_target(p);
    run w = tgt ? OG(NULL, "mutate", "--store", "g", "--branch", "feat", "-e", W_INSERT)
                : OG(NULL, "mutate", "--store", "g", "-e", W_INSERT);
    bool acked = w.status == 0 && !crashed(&w);
    int post[2][NQ];
    int wcode;
    if (!acked) {
        wcode = failed_code(p, &w);
        if (wcode != R_T) snprintf(c->why[STEP_WRITE], 600, "exit %d: %.400s", w.status, w.err);
        memcpy(post, pre, sizeof post);
    } else {
        int o[2];
        char wy[2][600] = {"", ""};
        read_heads(p, g_after[tgt], o, R_A, (const int(*)[NQ])pre, post, wy);
        wcode = worst(o[0], o[1]);
        if (wcode == R_T) wcode = R_C; /* acknowledged; reads fail typed as they did before */
        if (wcode != R_C)
            snprintf(c->why[STEP_WRITE], 600, "%s",
                     severity(o[0]) >= severity(o[1]) ? wy[0] : wy[1]);
    }
    run_free(&w);
    c->code[STEP_WRITE] = wcode;
    if (vcode == R_C && (any_bad || wcode != R_C)) {
        vcode = R_M;
        /* Say whether --deep (which reads every data file whole) would have seen it: the
         * state is the one after the write, which changed no file of the damage. */
        run dv = OG(NULL, "verify", "--deep", "--store", "g");
        snprintf(c->why[STEP_VERIFY], 600, "verify exited 0, but %s; verify --deep: exit %d%s",
                 wcode != R_C && !any_bad ? "the write failed" : "a read failed or was wrong",
                 dv.status, dv.status == 7 && names_damage(p, dv.out) ? ", naming it" : "");
        run_free(&dv);
    }
    c->code[STEP_VERIFY] = vcode;
    /* d. repair */
    run rp = OG(NULL, "repair", "--confirm", "--store", "g");
    int rcode;
    if (crashed(&rp) || rp.status != 0) {
        rcode = failed_code(p, &rp);
        if (rcode != R_T) snprintf(c->why[STEP_REPAIR], 600, "exit %d: %.400s", rp.status, rp.err);
    } else {
        answer(*want)[NQ] = acked ? g_after[tgt] : g_expect;
        /* g_expect is indexed by state: main, feat come first, as read_heads wants. */
        int o[2], now[2][NQ];
        char wy[2][600] = {"", ""};
        read_heads(p, want, o, R_L, (const int(*)[NQ])post, now, wy);
        rcode = worst(o[0], o[1]);
        if (rcode == R_W) rcode = R_L;
        if (rcode == R_T) rcode = R_N;
        if (rcode != R_C && rcode != R_N)
            snprintf(c->why[STEP_REPAIR], 600, "repair exited 0 (%.150s); then %s", rp.out,
                     severity(o[0]) >= severity(o[1]) ? wy[0] : wy[1]);
    }
    run_free(&rp);
    c->code[STEP_REPAIR] = rcode;
}

/* ---- the test -------------------------------------------------------------------------- */

static void record_expectations(void)
{
    fresh_copy();
    for (int s = 0; s < NS; s++)
        for (int q = 0; q < NQ; q++) {
            run r = query(s, q);
            if (r.status != 0) fail_msg("a pristine query exited %d: %s", r.status, r.err);
            if (!answer_parse(r.out, &g_expect[s][q]))
                fail_msg("pristine query output: %.200s", r.out);
            r.out = NULL;
            run_free(&r);
        }
    /* What the pristine graph holds (so a mistake in building it fails here). */
    static const size_t want_n[NS][NQ] = {{101, 7, 97, TAG_ROWS, 1, 1, 1},
                                          {100, 7, 95, TAG_ROWS, 1, 1, 1},
                                          {99, 5, 97, TAG_ROWS, 1, 1, 1}};
    for (int s = 0; s < NS; s++)
        for (int q = 0; q < NQ; q++)
            if (g_expect[s][q].n != want_n[s][q])
                fail_msg("pristine %s on %s has %zu rows, not %zu", QNAME[q], SNAME[s],
                         g_expect[s][q].n, want_n[s][q]);
    /* The answers after the write, on main and on feat. */
    for (int t = 0; t < 2; t++) {
        fresh_copy();
        must(t ? OG(NULL, "mutate", "--store", "g", "--branch", "feat", "-e", W_INSERT)
               : OG(NULL, "mutate", "--store", "g", "-e", W_INSERT),
             "the write on a pristine copy");
        for (int s = 0; s < 2; s++)
            for (int q = 0; q < NQ; q++) {
                if (!post_query(q)) continue;
                run r = query(s, q);
                if (r.status != 0)
                    fail_msg("a query after the write exited %d: %s", r.status, r.err);
                if (!answer_parse(r.out, &g_after[t][s][q]))
                    fail_msg("query output: %.200s", r.out);
                r.out = NULL;
                run_free(&r);
            }
        if (g_after[t][t][Q_PERSON].n != g_expect[t][Q_PERSON].n + 1)
            fail_msg("the write added no Person row");
    }
}

static void test_damage_matrix(void **state)
{
    (void)state;
    time_t t0 = time(NULL);
    const char *env = getenv("OMNIGRAPH_BIN");
    const char *bindir = getenv("OG_TEST_BINDIR");
    if (env && *env)
        snprintf(g_bin, sizeof g_bin, "%s", env);
    else
        snprintf(g_bin, sizeof g_bin, "%s/omnigraph", bindir ? bindir : ".");
    if (g_bin[0] != '/') {
        char cwd[512];
        if (!getcwd(cwd, sizeof cwd)) fail_msg("getcwd");
        char rel[1024];
        snprintf(rel, sizeof rel, "%s/%s", cwd, g_bin);
        snprintf(g_bin, sizeof g_bin, "%s", rel);
    }
    if (access(g_bin, X_OK) != 0) fail_msg("no omnigraph binary at %s", g_bin);
    printf("binary: %s\n", g_bin);
    test_sandbox_new(g_box, sizeof g_box, "damage-matrix");
    snprintf(g_root, sizeof g_root, "%s/g", g_box);
    snprintf(g_pristine, sizeof g_pristine, "%s/pristine", g_box);

    build_pristine();
    if (rename(g_root, g_pristine) != 0) fail_msg("rename: %s", strerror(errno));
    g_walk_root = g_pristine;
    if (nftw(g_pristine, list_one, 16, FTW_PHYS) != 0) fail_msg("cannot list the graph");

    /* The kinds present, by pattern. */
    int count[NKINDS] = {0};
    for (size_t i = 0; i < g_nfiles; i++)
        count[g_files[i].k]++;
    bool missing = false;
    printf("\nfile kinds (%zu files):\n", g_nfiles);
    for (int k = 0; k < NKINDS; k++) {
        if (k == K_OTHER) continue;
        printf("  %-32s %-58s %3d%s\n", KINDS[k].name, KINDS[k].pattern, count[k],
               count[k] == 0 ? (KINDS[k].required ? "  MISSING" : "  (none: not written)") : "");
        if (count[k] == 0 && KINDS[k].required) missing = true;
    }
    for (size_t i = 0; i < g_nfiles; i++)
        if (g_files[i].k == K_OTHER) printf("  unknown kind: %s\n", g_files[i].rel);

    record_expectations();
    /* The control cell: no damage. */
    cell ctl;
    fresh_copy();
    static const file none = {.rel = "(no file)", .k = K_OTHER, .table = -1};
    static const pick control = {"control", &none, NULL, false};
    run_cell(&control, &ctl);
    bool ctl_ok = true;
    for (int s = 0; s < NSTEP; s++)
        if (ctl.code[s] != R_C) ctl_ok = false;

    choose_picks();
    static cell cells[64][ND];
    int total[NR] = {0};
    for (size_t i = 0; i < g_npicks; i++)
        for (int d = 0; d < ND; d++) {
            cell *c = &cells[i][d];
            fresh_copy();
            if (!damage(&g_picks[i], d)) {
                for (int s = 0; s < NSTEP; s++)
                    c->code[s] = R_NA;
                total[R_NA] += NSTEP;
                continue;
            }
            run_cell(&g_picks[i], c);
            for (int s = 0; s < NSTEP; s++)
                total[c->code[s]]++;
        }

    printf(
        "\ndamage matrix: per cell the codes of reads main | feat | --at, verify, write, repair\n");
    printf(
        "(C correct, T typed, N repair left it typed, M verify missed, A ack'd write unreadable,\n"
        " L repair lost a row, U untyped, W wrong answer, X crash, - n/a)\n\n");
    printf("%-42s", "file");
    for (int d = 0; d < ND; d++)
        printf(" %-8s", DNAME[d]);
    printf("\n");
    printf("%-42s", "control (no damage)");
    for (int s = 0; s < NSTEP; s++)
        printf("%c", RCODE[ctl.code[s]]);
    printf("\n");
    for (size_t i = 0; i < g_npicks; i++) {
        printf("%-42s", g_picks[i].label);
        for (int d = 0; d < ND; d++) {
            printf(" ");
            for (int s = 0; s < NSTEP; s++)
                printf("%c", RCODE[cells[i][d].code[s]]);
            printf("  ");
        }
        printf("\n");
    }
    printf("\nfiles:\n");
    for (size_t i = 0; i < g_npicks; i++)
        printf("  %-42s %s (%lld bytes; replace: %s)\n", g_picks[i].label, g_picks[i].f->rel,
               (long long)g_picks[i].f->size, g_picks[i].repl ? g_picks[i].repl->rel : "none");
    int viol = 0;
    printf("\nviolations:\n");
    static const char *STEPN[NSTEP] = {"read main", "read feat", "read --at",
                                       "verify",    "write",     "repair"};
    for (int s = 0; s < NSTEP; s++)
        if (violation(ctl.code[s])) printf("  control / %s: %s\n", STEPN[s], ctl.why[s]);
    for (size_t i = 0; i < g_npicks; i++)
        for (int d = 0; d < ND; d++)
            for (int s = 0; s < NSTEP; s++)
                if (violation(cells[i][d].code[s])) {
                    viol++;
                    printf("  %s / %s / %s: %c %s\n", g_picks[i].label, DNAME[d], STEPN[s],
                           RCODE[cells[i][d].code[s]], cells[i][d].why[s]);
                }
    printf("\ntotals over %zu files x %d damages x %d steps:\n", g_npicks, ND, NSTEP);
    for (int r = 0; r < NR; r++)
        printf("  %-44s %5d\n", RNAME[r], total[r]);
    printf("  %-44s %5d\n", "violations", viol);
    printf("time: %lld s\n", (long long)(time(NULL) - t0));
    fflush(stdout);

    test_rmrf(g_root);
    for (int s = 0; s < NS; s++)
        for (int q = 0; q < NQ; q++)
            answer_free(&g_expect[s][q]);
    for (int t = 0; t < 2; t++)
        for (int s = 0; s < 2; s++)
            for (int q = 0; q < NQ; q++)
                answer_free(&g_after[t][s][q]);
    test_sandbox_done(g_box);
    if (missing) fail_msg("a required kind of file is missing from the graph (MISSING above)");
    if (!ctl_ok) fail_msg("the control cell (no damage) is not all correct");
    if (viol) fail_msg("%d violations in the damage matrix (listed above)", viol);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_damage_matrix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
