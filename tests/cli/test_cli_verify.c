/* omnigraph verify and og_root_verify: a clean graph verifies (exit 0, with and without
 * --deep), and each kind of damage is found, named and given its remedy (exit 7): a flipped
 * byte in a data file (--deep, and an ordinary read fails typed instead of returning garbage),
 * a truncated data file (without --deep), a deleted deletion file, a deleted table version a
 * pin needs, a damaged sidecar, a missing _schema.pg, a lost and a damaged graph-branch ref, a
 * damaged and a missing table fork ref, a missing and a changed kept schema (_schemas/), a
 * damaged and a missing key index segment (each with the remedy it must give). Every --json
 * form prints exactly one JSON object {ok, problems, checked}. */
#include "testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_bin[512];
static char g_schema[512];
static char g_dir[256];

static int og(const char *args, char *out, size_t cap, char *err, size_t ecap)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s", g_bin, args);
    return test_run(g_dir, 1, cmd, out, cap, err, ecap);
}

/* Run and parse stdout as exactly one JSON object (and nothing after it). */
static json_t *og_json(const char *args, int want_exit)
{
    static char out[262144];
    char err[8192];
    int ex = og(args, out, sizeof out, err, sizeof err);
    if (ex != want_exit)
        fail_msg("'%s' exited %d, not %d; stdout: %s stderr: %s", args, ex, want_exit, out, err);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je); /* fails on anything after the first value */
    if (!j || !json_is_object(j))
        fail_msg("'%s' printed no single JSON object: %s (%s)", args, out, je.text);
    return j;
}

static void write_text(const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    test_write_file(path, text, strlen(text));
}

static const char *const DATA =
    "{\"type\":\"Person\",\"data\":{\"name\":\"Alice\",\"age\":30}}\n"
    "{\"type\":\"Person\",\"data\":{\"name\":\"Bob\",\"age\":41}}\n"
    "{\"type\":\"Person\",\"data\":{\"name\":\"Carol\",\"age\":25}}\n"
    "{\"type\":\"Company\",\"data\":{\"name\":\"Acme\",\"size\":50}}\n"
    "{\"edge\":\"WorksAt\",\"from\":\"Alice\",\"to\":\"Acme\",\"data\":{\"role\":\"CTO\"}}\n";

/* A graph g with rows in Person, Company and WorksAt, and (with_delete) a deletion file in
 * Person's table. */
static void make_graph(int with_delete)
{
    char args[1024], err[4096];
    snprintf(args, sizeof args, "init --schema '%s' g", g_schema);
    int ex = og(args, NULL, 0, err, sizeof err);
    if (ex != 0) fail_msg("init exited %d: %s", ex, err);
    write_text("data.jsonl", DATA);
    ex = og("load --data data.jsonl --mode append --store g", NULL, 0, err, sizeof err);
    if (ex != 0) fail_msg("load exited %d: %s", ex, err);
    if (!with_delete) return;
    ex = og("mutate --store g -e 'query d() { delete Person where name = \"Carol\" }'", NULL, 0,
            err, sizeof err);
    if (ex != 0) fail_msg("mutate exited %d: %s", ex, err);
}

/* The directory of the table `alias` relative to the root, from `snapshot --json`. */
static int table_path(const char *alias, char *out, size_t cap)
{
    json_t *s = og_json("snapshot --json --store g", 0);
    const json_t *tables = json_object_get(s, "tables");
    size_t i;
    const json_t *t;
    int found = 0;
    json_array_foreach(tables, i, t)
    {
        const char *a = json_string_value(json_object_get(t, "alias"));
        const char *p = json_string_value(json_object_get(t, "path"));
        if (a && p && !strcmp(a, alias)) {
            snprintf(out, cap, "%s", p);
            found = 1;
        }
    }
    json_decref(s);
    if (!found) fail_msg("no table %s in the snapshot", alias);
    return found;
}

/* The last file (by name) under g/<table>/<sub>; rel is "<table>/<sub>/<name>". */
static void file_under(const char *alias, const char *sub, char *rel, size_t cap)
{
    char table[512], dir[1024];
    table_path(alias, table, sizeof table);
    snprintf(dir, sizeof dir, "%s/g/%s/%s", g_dir, table, sub);
    DIR *d = opendir(dir);
    if (!d) fail_msg("no directory %s", dir);
    struct dirent *e;
    char best[256] = "";
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof best) continue;
        if (strcmp(e->d_name, best) > 0) snprintf(best, sizeof best, "%s", e->d_name);
    }
    closedir(d);
    if (!best[0]) fail_msg("no file under %s", dir);
    snprintf(rel, cap, "%s/%s/%s", table, sub, best);
}

static void abs_of(const char *rel, char *out, size_t cap)
{
    snprintf(out, cap, "%s/g/%s", g_dir, rel);
}

/* verify --json: exit want, and when kind is given exactly one problem of that kind naming
 * object. Returns the parsed object (caller frees). */
static json_t *verify_expect(const char *flags, int want_exit, const char *kind, const char *object)
{
    char args[512];
    snprintf(args, sizeof args, "verify %s --json --store g", flags);
    json_t *j = og_json(args, want_exit);
    const json_t *ok = json_object_get(j, "ok");
    assert_true(json_is_boolean(ok));
    assert_int_equal(json_is_true(ok), want_exit == 0);
    const json_t *probs = json_object_get(j, "problems");
    assert_true(json_is_array(probs));
    assert_true(json_is_object(json_object_get(j, "checked")));
    if (!kind) {
        assert_int_equal(json_array_size(probs), 0);
        return j;
    }
    size_t i;
    const json_t *p;
    int hits = 0;
    json_array_foreach(probs, i, p)
    {
        const char *k = json_string_value(json_object_get(p, "kind"));
        const char *o = json_string_value(json_object_get(p, "object"));
        assert_non_null(k);
        assert_non_null(o);
        assert_true(json_is_string(json_object_get(p, "message")));
        assert_true(json_string_length(json_object_get(p, "remedy")) > 0);
        if (!strcmp(k, kind) && strstr(o, object)) hits++;
    }
    if (hits != 1) {
        char *dump = json_dumps(j, 0);
        fail_msg("expected one '%s' problem naming %s: %s", kind, object, dump);
    }
    return j;
}

static uint64_t checked(const json_t *j, const char *k)
{
    const json_t *v = json_object_get(json_object_get(j, "checked"), k);
    if (!json_is_integer(v)) fail_msg("checked.%s is not an integer", k);
    return (uint64_t)json_integer_value(v);
}

static int setup(void **state)
{
    (void)state;
    test_sandbox_new(g_dir, sizeof g_dir, "cli-verify");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    test_sandbox_done(g_dir);
    return 0;
}

/* A clean graph: exit 0 with and without --deep; the human form is one summary line; every
 * data and deletion file we wrote carries a checksum; --deep decodes every row. */
static void test_clean(void **state)
{
    (void)state;
    make_graph(1);
    json_t *j = verify_expect("", 0, NULL, NULL);
    /* data files of Person, Company, WorksAt, a deletion file, and 4 tables' manifests at
     * each of 3 versions (some shared) */
    assert_true(checked(j, "checksummed") >= 12);
    assert_int_equal(checked(j, "unchecked"), 0);
    assert_int_equal(checked(j, "tables"), 4);
    assert_int_equal(checked(j, "manifest_versions"), 3);
    assert_int_equal(checked(j, "rows"), 0);
    assert_true(checked(j, "files") >= checked(j, "checksummed"));
    json_decref(j);
    j = verify_expect("--deep", 0, NULL, NULL);
    assert_true(checked(j, "rows") >= 5);
    json_decref(j);
    char out[4096], err[4096];
    assert_int_equal(og("verify g", out, sizeof out, err, sizeof err), 0);
    assert_int_equal(strncmp(out, "ok: 0 problems;", 15), 0);
    assert_null(strchr(out, '\n') ? strchr(strchr(out, '\n') + 1, '\n') : NULL);
    assert_int_equal(og("verify --deep --store g", out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(err, "omnigraph verify: checking")); /* progress on stderr */
}

/* One flipped byte in a data file: verify finds the checksum mismatch naming the file (exit
 * 7), with and without --deep (the damage matrix's cells: reads fail typed, so verify must not
 * pass); an ordinary read of the small file fails `corrupt` naming it instead of returning
 * rows. */
static void test_flipped_byte(void **state)
{
    (void)state;
    make_graph(0);
    char rel[1024], path[1400];
    file_under("node:Person", "data", rel, sizeof rel);
    abs_of(rel, path, sizeof path);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    unsigned char b;
    assert_int_equal(pread(fd, &b, 1, 3), 1);
    b ^= 0x40;
    assert_int_equal(pwrite(fd, &b, 1, 3), 1);
    close(fd);
    json_decref(verify_expect("", 7, "checksum", rel));
    json_decref(verify_expect("--deep", 7, "checksum", rel));
    char out[8192], err[8192];
    assert_int_equal(og("verify --deep g", out, sizeof out, err, sizeof err), 7);
    assert_non_null(strstr(out, "checksum: "));
    assert_non_null(strstr(out, rel));
    assert_non_null(strstr(out, "damaged: 1 problem;"));
    json_t *e = og_json("export --json --out x.jsonl --store g", 1);
    const json_t *er = json_object_get(e, "error");
    assert_string_equal(json_string_value(json_object_get(er, "code")), "corrupt");
    assert_non_null(strstr(json_string_value(json_object_get(er, "message")), rel));
    json_decref(e);
}

/* A data file cut short: found without --deep, by its recorded size. */
static void test_truncated(void **state)
{
    (void)state;
    make_graph(0);
    char rel[1024], path[1400];
    file_under("edge:WorksAt", "data", rel, sizeof rel);
    abs_of(rel, path, sizeof path);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(truncate(path, st.st_size - 7), 0);
    json_decref(verify_expect("", 7, "file_size", rel));
}

/* A deleted deletion file: file_missing naming it. */
static void test_deletion_file_gone(void **state)
{
    (void)state;
    make_graph(1);
    char rel[1024], path[1400];
    file_under("node:Person", "_deletions", rel, sizeof rel);
    abs_of(rel, path, sizeof path);
    assert_int_equal(unlink(path), 0);
    json_decref(verify_expect("", 7, "file_missing", rel));
}

/* A damaged deletion file: its checksum no longer matches (found without --deep: deletion
 * files are always read whole). */
static void test_deletion_file_damaged(void **state)
{
    (void)state;
    make_graph(1);
    char rel[1024], path[1400];
    file_under("node:Person", "_deletions", rel, sizeof rel);
    abs_of(rel, path, sizeof path);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    unsigned char b = 0;
    assert_int_equal(pread(fd, &b, 1, 0), 1);
    b ^= 0x01;
    assert_int_equal(pwrite(fd, &b, 1, 0), 1);
    close(fd);
    json_t *j = verify_expect("", 7, "deletion_file", rel);
    const json_t *p = json_array_get(json_object_get(j, "problems"), 0);
    assert_non_null(strstr(json_string_value(json_object_get(p, "message")), "checksum"));
    json_decref(j);
}

/* The table version the head pins deleted: table_version_missing naming "path@version". */
static void test_pinned_version_gone(void **state)
{
    (void)state;
    make_graph(0);
    char path[1400], table[512], obj[600];
    /* V2 names sort newest first: the smallest name is the newest version. */
    table_path("node:Company", table, sizeof table);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/g/%s/_versions", g_dir, table);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    char newest[256] = "";
    while ((e = readdir(d)) != NULL)
        if (strstr(e->d_name, ".manifest") && (!newest[0] || strcmp(e->d_name, newest) < 0))
            snprintf(newest, sizeof newest, "%s", e->d_name);
    closedir(d);
    assert_true(newest[0] != '\0');
    snprintf(path, sizeof path, "%s/%s", dir, newest);
    assert_int_equal(unlink(path), 0);
    snprintf(obj, sizeof obj, "%s@2", table); /* init made 1, the load 2 */
    json_decref(verify_expect("", 7, "table_version_missing", obj));
}

/* A byte changed inside the Lance manifest of a pinned table version, where the manifest still
 * decodes (a letter of the writer's name): the checksum the graph manifest recorded for it
 * finds it, in verify and in an ordinary read. */
static void test_table_manifest_changed(void **state)
{
    (void)state;
    make_graph(0);
    char table[512], dir[1024], path[1400];
    table_path("node:Company", table, sizeof table);
    snprintf(dir, sizeof dir, "%s/g/%s/_versions", g_dir, table);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    char newest[256] = "";
    while ((e = readdir(d)) != NULL)
        if (strstr(e->d_name, ".manifest") && (!newest[0] || strcmp(e->d_name, newest) < 0))
            snprintf(newest, sizeof newest, "%s", e->d_name);
    closedir(d);
    snprintf(path, sizeof path, "%s/%s", dir, newest);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    static unsigned char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    unsigned char *at = NULL;
    for (size_t i = 0; i + 9 <= n && !at; i++)
        if (!memcmp(buf + i, "omnigraph", 9)) at = buf + i;
    assert_non_null(at);
    at[0] = 'O';
    assert_int_equal(fseek(f, 0, SEEK_SET), 0);
    assert_int_equal(fwrite(buf, 1, n, f), n);
    fclose(f);
    char rel[1600];
    snprintf(rel, sizeof rel, "%s/_versions/%s", table, newest);
    json_decref(verify_expect("", 7, "checksum", rel));
    json_t *j = og_json("export --json --out x.jsonl --store g", 1);
    const json_t *er = json_object_get(j, "error");
    assert_string_equal(json_string_value(json_object_get(er, "code")), "corrupt");
    assert_non_null(strstr(json_string_value(json_object_get(er, "message")), newest));
    json_decref(j);
    j = og_json(
        "query --json --store g -e 'query q() { match { $c: Company } return { $c.name } }'", 1);
    er = json_object_get(j, "error");
    assert_string_equal(json_string_value(json_object_get(er, "code")), "corrupt");
    assert_non_null(strstr(json_string_value(json_object_get(er, "message")), newest));
    json_decref(j);
}

/* A damaged sidecar under a valid name: sidecar_damaged naming it, the remedy a forced
 * discard of that operation. */
static void test_damaged_sidecar(void **state)
{
    (void)state;
    make_graph(0);
    char path[600];
    snprintf(path, sizeof path, "%s/g/__recovery", g_dir);
    mkdir(path, 0755);
    const char *id = "01M90XAAAAAAAAAAAAAAAAAAAA";
    char rel[256];
    snprintf(rel, sizeof rel, "g/__recovery/%s.json", id);
    write_text(rel, "{\"format\":1, not json");
    json_t *j = verify_expect("", 7, "sidecar_damaged", id);
    const json_t *p = json_array_get(json_object_get(j, "problems"), 0);
    assert_non_null(strstr(json_string_value(json_object_get(p, "remedy")), "recover resolve"));
    assert_int_equal(checked(j, "sidecars"), 1);
    json_decref(j);
}

/* The newest graph-manifest version cut short: manifest_version_unreadable naming its file,
 * with `omnigraph repair` as the remedy; the older versions still reconstruct. */
static void test_newest_manifest_version_cut(void **state)
{
    (void)state;
    make_graph(0);
    char dir[600], path[1000];
    snprintf(dir, sizeof dir, "%s/g/__manifest.lance/_versions", g_dir);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    char newest[256] = "";
    while ((e = readdir(d)) != NULL)
        if (strstr(e->d_name, ".manifest") && (!newest[0] || strcmp(e->d_name, newest) < 0))
            snprintf(newest, sizeof newest, "%s", e->d_name);
    closedir(d);
    snprintf(path, sizeof path, "%s/%s", dir, newest);
    assert_int_equal(truncate(path, 10), 0);
    char rel[400];
    snprintf(rel, sizeof rel, "__manifest.lance/_versions/%s", newest);
    json_t *j = verify_expect("", 7, "manifest_version_unreadable", rel);
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(j, "problems"), i, p)
    {
        if (strcmp(json_string_value(json_object_get(p, "kind")), "manifest_version_unreadable"))
            continue;
        assert_non_null(strstr(json_string_value(json_object_get(p, "remedy")), "repair"));
    }
    assert_int_equal(checked(j, "manifest_versions"), 1); /* the genesis still reconstructs */
    json_decref(j);
}

/* A missing _schema.pg: schema_missing naming it. */
static void test_schema_missing(void **state)
{
    (void)state;
    make_graph(0);
    char path[600];
    snprintf(path, sizeof path, "%s/g/_schema.pg", g_dir);
    assert_int_equal(unlink(path), 0);
    json_decref(verify_expect("", 7, "schema_missing", "_schema.pg"));
}

/* The remedy of the one problem of `kind` in j contains `want`. */
static void remedy_has(const json_t *j, const char *kind, const char *want)
{
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(j, "problems"), i, p)
    {
        if (strcmp(json_string_value(json_object_get(p, "kind")), kind) != 0) continue;
        const char *r = json_string_value(json_object_get(p, "remedy"));
        if (!strstr(r, want)) fail_msg("the remedy of %s does not say '%s': %s", kind, want, r);
        return;
    }
    fail_msg("no %s problem", kind);
}

/* g with graph branch feat, on which Person is forked (a person inserted there). */
static void make_branch(void)
{
    make_graph(0);
    char err[4096];
    int ex = og("branch create feat --store g", NULL, 0, err, sizeof err);
    if (ex != 0) fail_msg("branch create exited %d: %s", ex, err);
    ex = og("mutate --store g --branch feat -e 'query i() { insert Person { name: \"Dan\", age: 7 "
            "} }'",
            NULL, 0, err, sizeof err);
    if (ex != 0) fail_msg("mutate on feat exited %d: %s", ex, err);
    json_decref(verify_expect("", 0, NULL, NULL));
}

/* A lost graph-branch ref: the branch no longer lists, and verify says so (it does not vanish
 * silently): branch_ref_missing naming the ref file, and a remedy that restores it without
 * creating the name again (which would clear the branch's files). */
static void test_graph_branch_ref_lost(void **state)
{
    (void)state;
    make_branch();
    char path[600];
    snprintf(path, sizeof path, "%s/g/__manifest.lance/_refs/branches/feat.json", g_dir);
    assert_int_equal(unlink(path), 0);
    json_t *j =
        verify_expect("", 7, "branch_ref_missing", "__manifest.lance/_refs/branches/feat.json");
    remedy_has(j, "branch_ref_missing", "restore this ref file from a backup");
    remedy_has(j, "branch_ref_missing", "do not create");
    json_decref(j);
}

/* A damaged graph-branch ref: branch_ref_damaged naming it (the other checks still run). */
static void test_graph_branch_ref_damaged(void **state)
{
    (void)state;
    make_branch();
    char path[600];
    snprintf(path, sizeof path, "%s/g/__manifest.lance/_refs/branches/feat.json", g_dir);
    test_write_file(path, "{\"branch\":", 10);
    json_t *j =
        verify_expect("", 7, "branch_ref_damaged", "__manifest.lance/_refs/branches/feat.json");
    remedy_has(j, "branch_ref_damaged", "restore this ref file");
    assert_int_equal(checked(j, "manifest_versions"), 2); /* main's, still checked */
    assert_int_equal(json_array_size(json_object_get(j, "problems")), 1);
    json_decref(j);
}

/* The ref of Person's fork on feat: damaged, reads of feat still work (the graph manifest pins
 * the fork's manifest by its checksum, which graph_table_open reads without the ref), and
 * verify (not only --deep) reports table_branch_ref_damaged naming it; deleted, it reports
 * table_branch_ref_missing. */
static void test_table_branch_ref(void **state)
{
    (void)state;
    make_branch();
    char table[512], rel[1024], path[2048], saved[4096];
    table_path("node:Person", table, sizeof table);
    snprintf(rel, sizeof rel, "%s/_refs/branches/feat.json", table);
    abs_of(rel, path, sizeof path);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(saved, 1, sizeof saved, f);
    fclose(f);
    test_write_file(path, "{\"version\":", 11);
    char err[4096];
    assert_int_equal(og("query --store g --branch feat -e 'query q() { match { $p: Person } "
                        "return { $p.name } }'",
                        NULL, 0, err, sizeof err),
                     0);
    json_t *j = verify_expect("", 7, "table_branch_ref_damaged", rel);
    remedy_has(j, "table_branch_ref_damaged", "restore this ref file");
    json_decref(j);
    json_decref(verify_expect("--deep", 7, "table_branch_ref_damaged", rel));
    assert_int_equal(unlink(path), 0);
    j = verify_expect("", 7, "table_branch_ref_missing", rel);
    remedy_has(j, "table_branch_ref_missing", "restore this ref file");
    json_decref(j);
    test_write_file(path, saved, n); /* and restored, as the remedy says: clean again */
    json_decref(verify_expect("", 0, NULL, NULL));
}

/* The current schema identity of g (from _schema.json). */
static void schema_identity(char out[64])
{
    char path[600];
    snprintf(path, sizeof path, "%s/g/_schema.json", g_dir);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    assert_non_null(j);
    snprintf(out, 64, "%s", json_string_value(json_object_get(j, "identity")));
    json_decref(j);
    assert_int_equal(strlen(out), 32);
}

/* The kept copy of the schema by identity: missing, schema_history_missing naming it with the
 * remedy that copies the accepted pair; changed, schema_history_damaged; the copy the remedy
 * says makes it clean. */
static void test_schema_history(void **state)
{
    (void)state;
    make_graph(0);
    char id[64], rel[256], path[2048], root_pg[600];
    schema_identity(id);
    snprintf(rel, sizeof rel, "_schemas/%s.pg", id);
    abs_of(rel, path, sizeof path);
    snprintf(root_pg, sizeof root_pg, "%s/g/_schema.pg", g_dir);
    assert_int_equal(unlink(path), 0);
    json_t *j = verify_expect("", 7, "schema_history_missing", rel);
    remedy_has(j, "schema_history_missing", "copy _schema.pg to _schemas/");
    json_decref(j);
    const char *extra = "\nnode Extra {\n    x: String\n}\n";
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", root_pg, path);
    assert_int_equal(system(cmd), 0);
    json_decref(verify_expect("", 0, NULL, NULL));
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    fputs(extra, f);
    fclose(f);
    json_decref(verify_expect("", 7, "schema_history_damaged", rel));
}

/* A Person table with a key index segment (a load of 70 rows in one write). */
static void make_indexed(char *seg_rel, size_t cap)
{
    make_graph(0);
    char path[600];
    snprintf(path, sizeof path, "%s/many.jsonl", g_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < 70; i++)
        fprintf(f, "{\"type\":\"Person\",\"data\":{\"name\":\"n%d\",\"age\":%d}}\n", i, i);
    fclose(f);
    char err[4096];
    int ex = og("load --data many.jsonl --mode append --store g", NULL, 0, err, sizeof err);
    if (ex != 0) fail_msg("load exited %d: %s", ex, err);
    file_under("node:Person", "_ogkix", seg_rel, cap);
    json_decref(verify_expect("", 0, NULL, NULL));
    json_decref(verify_expect("--deep", 0, NULL, NULL));
}

/* A key index segment with its last byte flipped: key_index_damaged naming it (its tail is
 * read without --deep), and a remedy that says no data is lost; deleted, key_index_missing. */
static void test_key_index(void **state)
{
    (void)state;
    char rel[1024], path[2048];
    make_indexed(rel, sizeof rel);
    abs_of(rel, path, sizeof path);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    off_t end = lseek(fd, 0, SEEK_END);
    unsigned char b;
    assert_int_equal(pread(fd, &b, 1, end - 1), 1);
    b ^= 0x5a;
    assert_int_equal(pwrite(fd, &b, 1, end - 1), 1);
    close(fd);
    json_t *j = verify_expect("", 7, "key_index_damaged", rel);
    remedy_has(j, "key_index_damaged", "omnigraph optimize");
    remedy_has(j, "key_index_damaged", "nothing is wrong with the data");
    json_decref(j);
    assert_int_equal(unlink(path), 0);
    j = verify_expect("", 7, "key_index_missing", rel);
    remedy_has(j, "key_index_missing", "omnigraph optimize");
    json_decref(j);
}

/* Usage and refusals: no root (exit 2, one JSON object), a directory without a graph (exit 1,
 * not_found), and the API's options check. */
static void test_usage(void **state)
{
    (void)state;
    json_t *j = og_json("verify --json", 2);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "code")),
                        "usage");
    json_decref(j);
    json_decref(og_json("verify --bogus --json g", 2));
    char dir[600];
    snprintf(dir, sizeof dir, "%s/empty", g_dir);
    mkdir(dir, 0755);
    j = og_json("verify --json empty", 1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "code")),
                        "not_found");
    json_decref(j);
    og_verify_report *r = (og_verify_report *)1;
    og_verify_options o = OG_VERIFY_OPTIONS_INIT;
    o.version = 99;
    assert_og_error(og_root_verify(&r, dir, &o), OG_E_BAD_REQUEST);
    assert_null(r);
    assert_og_error(og_root_verify(&r, dir, NULL), OG_E_NOT_FOUND);
    assert_og_ok(og_verify_options_init(&o, OG_VERIFY_OPTIONS_VERSION));
    assert_int_equal(o.deep, 0);
}

/* The API on a damaged graph: the report lists the problem with its fields. */
static void test_api_report(void **state)
{
    (void)state;
    make_graph(0);
    char path[600], root[600];
    snprintf(path, sizeof path, "%s/g/_schema.json", g_dir);
    assert_int_equal(unlink(path), 0);
    snprintf(root, sizeof root, "%s/g", g_dir);
    og_verify_report *r = NULL;
    assert_og_ok(og_root_verify(&r, root, NULL));
    assert_int_equal(og_verify_report_problem_count(r), 1);
    assert_string_equal(og_verify_report_problem(r, 0)->kind, "schema_missing");
    assert_string_equal(og_verify_report_problem(r, 0)->object, "_schema.json");
    assert_true(r->tables == 4 && r->checksummed >= 3 && r->unchecked == 0);
    og_verify_report_free(r);
}

int main(void)
{
    const char *bindir = getenv("OG_TEST_BINDIR");
    const char *srcdir = getenv("OG_TEST_SRCDIR");
    snprintf(g_bin, sizeof g_bin, "%s/omnigraph", bindir ? bindir : ".");
    snprintf(g_schema, sizeof g_schema, "%s/examples/social.pg", srcdir ? srcdir : "../..");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_clean, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flipped_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deletion_file_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deletion_file_damaged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pinned_version_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_table_manifest_changed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_sidecar, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newest_manifest_version_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(test_schema_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_graph_branch_ref_lost, setup, teardown),
        cmocka_unit_test_setup_teardown(test_graph_branch_ref_damaged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_table_branch_ref, setup, teardown),
        cmocka_unit_test_setup_teardown(test_schema_history, setup, teardown),
        cmocka_unit_test_setup_teardown(test_key_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_usage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_api_report, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
