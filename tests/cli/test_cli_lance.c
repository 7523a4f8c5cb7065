/* omnigraph lance schema|versions|stats|cat on tables the C dataset layer writes (no node
 * needed): exact canonical JSON lines (row order by id, then by line bytes), projection,
 * limit, time travel, statistics, history, usage errors (exit 2), typed errors (exit 1: no
 * table, unknown column, missing version, damaged manifest, data storage version 2.1, invalid
 * UTF-8; with --json the error is the one object on stdout), and the public API's Arrow
 * stream. */
#include "testutil.h"

#include "arrow/arrow.h"
#include "core/buf.h"
#include "lance/dataset.h"
#include "lance/manifest.h"
#include "lance/version.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static char g_bin[512];
static char g_dir[256]; /* scratch */
static char g_tab[512]; /* the table every test reads */

/* Run the CLI with args; stdout into out, stderr into err (either may be NULL); exit status. */
static int run(const char *args, char *out, size_t cap, char *err, size_t ecap)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s", g_bin, args);
    return test_run(g_dir, 0, cmd, out, cap, err, ecap);
}

static void add_field(arrow_schema *s, const char *name, arrow_type_id id, bool nullable)
{
    arrow_type t = arrow_type_simple(id);
    arrow_field f;
    assert_og_ok(arrow_field_init(&f, name, &t, nullable));
    assert_og_ok(arrow_schema_add(s, &f));
    arrow_field_clear(&f);
}

/* Rows ids[0..n): name "n<id>" (null when id == 3; "dup" when id >= 100), score id / 4,
 * d = id days after 1969-12-30. */
static arrow_batch *rows(const arrow_schema *s, const int64_t *ids, size_t n, const char *bad)
{
    arrow_builder *b[4];
    for (int c = 0; c < 4; c++)
        assert_og_ok(arrow_builder_new(&b[c], &s->fields[c].type));
    for (size_t i = 0; i < n; i++) {
        int64_t id = ids[i];
        assert_og_ok(arrow_builder_append_int(b[0], id));
        char name[32];
        snprintf(name, sizeof name, id >= 100 ? "dup" : "n%lld", (long long)id);
        if (bad)
            assert_og_ok(arrow_builder_append_bytes(b[1], bad, strlen(bad)));
        else if (id == 3)
            assert_og_ok(arrow_builder_append_null(b[1]));
        else
            assert_og_ok(arrow_builder_append_str(b[1], name));
        assert_og_ok(arrow_builder_append_double(b[2], (double)id / 4));
        assert_og_ok(arrow_builder_append_int(b[3], id - 2));
    }
    arrow_array *cols[4];
    for (int c = 0; c < 4; c++) {
        assert_og_ok(arrow_builder_finish(b[c], &cols[c]));
        arrow_builder_free(b[c]);
    }
    arrow_batch *out;
    assert_og_ok(arrow_batch_new(&out, s, cols, 4));
    for (int c = 0; c < 4; c++)
        arrow_array_free(cols[c]);
    return out;
}

static void schema4(arrow_schema *s)
{
    arrow_schema_init(s);
    add_field(s, "id", ARROW_INT64, false);
    add_field(s, "name", ARROW_UTF8, true);
    add_field(s, "score", ARROW_FLOAT64, true);
    add_field(s, "d", ARROW_DATE32, true);
}

/* Version 1: empty; 2: ids 5..9 and 101; 3: + ids 0..4 and 100 (a second fragment);
 * 4: id 1, 6 and 100 deleted. */
static void make_table(const char *dir, const char *bad)
{
    store *st;
    assert_og_ok(store_local_open(&st, dir));
    arrow_schema s;
    schema4(&s);
    lance_dataset *ds, *d2, *d3, *d4;
    assert_og_ok(lance_dataset_create(&ds, st, "", &s, NULL));
    const int64_t a[] = {9, 5, 101, 7, 8, 6}, b[] = {4, 100, 3, 2, 1, 0};
    arrow_batch *ba = rows(&s, a, 6, bad), *bb = rows(&s, b, 6, NULL);
    assert_og_ok(lance_dataset_append(&d2, ds, &ba, 1));
    assert_og_ok(lance_dataset_append(&d3, d2, &bb, 1));
    const uint64_t del[] = {LANCE_ROW_ADDR(0, 5), LANCE_ROW_ADDR(1, 4), LANCE_ROW_ADDR(1, 1)};
    lance_staged *stg;
    assert_og_ok(lance_stage_delete_rows(&stg, d3, del, 3, NULL));
    assert_og_ok(lance_staged_commit(stg, &d4, NULL));
    lance_staged_free(stg);
    arrow_batch_free(ba);
    arrow_batch_free(bb);
    lance_dataset_free(ds);
    lance_dataset_free(d2);
    lance_dataset_free(d3);
    lance_dataset_free(d4);
    arrow_schema_clear(&s);
    store_close(st);
}

static int setup(void **state)
{
    (void)state;
    const char *bindir = getenv("OG_TEST_BINDIR");
    snprintf(g_bin, sizeof g_bin, "%s/omnigraph", bindir ? bindir : ".");
    test_sandbox_new(g_dir, sizeof g_dir, "cli-lance");
    snprintf(g_tab, sizeof g_tab, "%s/t.lance", g_dir);
    make_table(g_tab, NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    test_sandbox_done(g_dir);
    return 0;
}

static void test_cat_json(void **state)
{
    (void)state;
    char out[8192], args[1024];
    /* rows ordered by id although written out of order in two fragments; deleted ones gone */
    snprintf(args, sizeof args, "lance cat %s --json", g_tab);
    assert_int_equal(run(args, out, sizeof out, NULL, 0), 0);
    assert_string_equal(out,
                        "{\"id\":0,\"name\":\"n0\",\"score\":0,\"d\":\"1969-12-30\"}\n"
                        "{\"id\":2,\"name\":\"n2\",\"score\":0.5,\"d\":\"1970-01-01\"}\n"
                        "{\"id\":3,\"name\":null,\"score\":0.75,\"d\":\"1970-01-02\"}\n"
                        "{\"id\":4,\"name\":\"n4\",\"score\":1,\"d\":\"1970-01-03\"}\n"
                        "{\"id\":5,\"name\":\"n5\",\"score\":1.25,\"d\":\"1970-01-04\"}\n"
                        "{\"id\":7,\"name\":\"n7\",\"score\":1.75,\"d\":\"1970-01-06\"}\n"
                        "{\"id\":8,\"name\":\"n8\",\"score\":2,\"d\":\"1970-01-07\"}\n"
                        "{\"id\":9,\"name\":\"n9\",\"score\":2.25,\"d\":\"1970-01-08\"}\n"
                        "{\"id\":101,\"name\":\"dup\",\"score\":25.25,\"d\":\"1970-04-10\"}\n");
    /* projection without id: ordered by the line bytes ("dup" < "n0" < ... < null) */
    snprintf(args, sizeof args, "lance cat %s --json --columns name", g_tab);
    assert_int_equal(run(args, out, sizeof out, NULL, 0), 0);
    assert_string_equal(out, "{\"name\":\"dup\"}\n{\"name\":\"n0\"}\n{\"name\":\"n2\"}\n"
                             "{\"name\":\"n4\"}\n{\"name\":\"n5\"}\n{\"name\":\"n7\"}\n"
                             "{\"name\":\"n8\"}\n{\"name\":\"n9\"}\n{\"name\":null}\n");
    /* requested column order; limit takes the first rows of the scan (fragment 0: 9, 5, 101) */
    snprintf(args, sizeof args, "lance cat %s --json --columns score,id --limit 3", g_tab);
    assert_int_equal(run(args, out, sizeof out, NULL, 0), 0);
    assert_string_equal(out, "{\"score\":1.25,\"id\":5}\n{\"score\":2.25,\"id\":9}\n"
                             "{\"score\":25.25,\"id\":101}\n");
    /* time travel: version 2 has only the first fragment, nothing deleted; version 1 is empty */
    snprintf(args, sizeof args, "lance cat %s --json --version 2 --columns id", g_tab);
    assert_int_equal(run(args, out, sizeof out, NULL, 0), 0);
    assert_string_equal(out, "{\"id\":5}\n{\"id\":6}\n{\"id\":7}\n{\"id\":8}\n{\"id\":9}\n"
                             "{\"id\":101}\n");
    snprintf(args, sizeof args, "lance cat %s --json --version 1", g_tab);
    assert_int_equal(run(args, out, sizeof out, NULL, 0), 0);
    assert_string_equal(out, "");
    snprintf(args, sizeof args, "lance cat %s --json --limit 0", g_tab);
    assert_int_equal(run(args, out, sizeof out, NULL, 0), 0);
    assert_string_equal(out, "");
}

static void test_cat_text(void **state)
{
    (void)state;
    char out[8192], args[1024];
    snprintf(args, sizeof args, "lance cat %s --columns id,name --limit 2", g_tab);
    assert_int_equal(run(args, out, sizeof out, NULL, 0), 0);
    assert_string_equal(out, "id  name\n9   \"n9\"\n5   \"n5\"\n(2 rows)\n");
}

static void test_schema_stats_versions(void **state)
{
    (void)state;
    char out[8192], args[1024];
    snprintf(args, sizeof args, "lance schema %s --json", g_tab);
    assert_int_equal(run(args, out, sizeof out, NULL, 0), 0);
    assert_string_equal(out, "{\"fields\":[{\"name\":\"id\",\"type\":\"int64\",\"nullable\":false},"
                             "{\"name\":\"name\",\"type\":\"string\",\"nullable\":true},"
                             "{\"name\":\"score\",\"type\":\"double\",\"nullable\":true},"
                             "{\"name\":\"d\",\"type\":\"date32:day\",\"nullable\":true}]}\n");
    snprintf(args, sizeof args, "lance schema %s", g_tab);
    assert_int_equal(run(args, out, sizeof out, NULL, 0), 0);
    assert_string_equal(out, "id: int64 not null\nname: string\nscore: double\nd: date32:day\n");

    snprintf(args, sizeof args, "lance stats %s --json", g_tab);
    assert_int_equal(run(args, out, sizeof out, NULL, 0), 0);
    const char *want[] = {"\"version\":4,",
                          "\"data_storage_version\":\"2.0\"",
                          "\"naming\":\"v2\"",
                          "\"columns\":4,",
                          "\"fragments\":2,",
                          "\"data_files\":2,",
                          "\"rows\":9,",
                          "\"physical_rows\":12,",
                          "\"deleted_rows\":3,",
                          "\"deletion_files\":2,",
                          "\"stable_row_ids\":true",
                          "\"reader_flags\":3,",
                          "\"writer_flags\":3,"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(out, want[i])) fail_msg("stats lacks %s: %s", want[i], out);
    snprintf(args, sizeof args, "lance stats %s --json --version 2", g_tab);
    assert_int_equal(run(args, out, sizeof out, NULL, 0), 0);
    assert_non_null(strstr(out, "\"rows\":6,"));
    assert_non_null(strstr(out, "\"deletion_files\":0,"));
    assert_non_null(strstr(out, "\"reader_flags\":2,"));
    snprintf(args, sizeof args, "lance stats %s", g_tab);
    assert_int_equal(run(args, out, sizeof out, NULL, 0), 0);
    assert_non_null(strstr(out, "rows                  9 (12 stored, 3 deleted)"));

    snprintf(args, sizeof args, "lance versions %s --json", g_tab);
    assert_int_equal(run(args, out, sizeof out, NULL, 0), 0);
    assert_true(strncmp(out, "{\"versions\":[{\"version\":1,\"timestamp\":\"", 39) == 0);
    assert_non_null(strstr(out, "\"fragments\":0,\"physical_rows\":0}"));
    assert_non_null(strstr(out, "{\"version\":4,"));
    assert_null(strstr(out, "{\"version\":5,"));
    assert_non_null(strstr(out, "\"fragments\":2,\"physical_rows\":12}]}\n"));
    snprintf(args, sizeof args, "lance versions %s", g_tab);
    assert_int_equal(run(args, out, sizeof out, NULL, 0), 0);
    assert_non_null(strstr(out, "version"));
}

static void test_usage_errors(void **state)
{
    (void)state;
    char out[4096], err[4096], args[1200];
    assert_int_equal(run("lance", out, sizeof out, err, sizeof err), 2);
    assert_int_equal(run("lance frob x", out, sizeof out, err, sizeof err), 2);
    assert_non_null(strstr(err, "unknown subcommand"));
    assert_int_equal(run("lance cat", out, sizeof out, err, sizeof err), 2);
    assert_non_null(strstr(err, "missing DIR"));
    snprintf(args, sizeof args, "lance cat %s --limit x", g_tab);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 2);
    snprintf(args, sizeof args, "lance cat %s --version 0", g_tab);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 2);
    snprintf(args, sizeof args, "lance cat %s --columns a,,b", g_tab);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 2);
    snprintf(args, sizeof args, "lance versions %s --limit 3", g_tab);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 2);
    snprintf(args, sizeof args, "lance cat %s %s", g_tab, g_tab);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 2);
    assert_int_equal(run("lance --help", out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "omnigraph lance cat DIR"));
    assert_int_equal(run("--help", out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "lance"));
}

static void test_typed_errors(void **state)
{
    (void)state;
    char out[4096], err[4096], args[1024];
    /* cat --json: the error is the one JSON object on stdout (no row was written) */
    snprintf(args, sizeof args, "lance cat %s/none.lance --json", g_dir);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(out, "{\"ok\":false,\"error\":{\"code\":\"not_found\""));
    assert_string_equal(err, "");
    snprintf(args, sizeof args, "lance stats %s/none.lance --json", g_dir);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(out, "\"code\":\"not_found\""));
    /* a directory without versions */
    snprintf(args, sizeof args, "lance schema %s", g_dir);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "error[not_found]"));
    snprintf(args, sizeof args, "lance cat %s --json --columns id,nope", g_tab);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(out, "\"code\":\"bad_request\""));
    assert_non_null(strstr(out, "nope"));
    snprintf(args, sizeof args, "lance cat %s --columns id,id", g_tab);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "twice"));
    snprintf(args, sizeof args, "lance cat %s --version 99", g_tab);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "error[not_found]"));
}

/* Copy the latest manifest of the table at dir as version latest+1 with its data storage
 * version set to `ver` (what a lancedb 2.1 table looks like to the reader). */
static void commit_with_data_version(const char *dir, const char *ver)
{
    store *st;
    assert_og_ok(store_local_open(&st, dir));
    lance_manifest *m;
    lance_naming naming;
    assert_og_ok(lance_version_load_latest(st, "", LANCE_ACCESS_INSPECT, &m, &naming));
    uint64_t v = m->pb->version + 1;
    m->pb->version = v;
    assert_non_null(m->pb->data_format);
    char *old = m->pb->data_format->version;
    m->pb->data_format->version = (char *)ver;
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(lance_manifest_encode(&b, m->pb, m->txn, m->txn_len, m->index, m->index_len));
    m->pb->data_format->version = old;
    char name[LANCE_VERSION_NAME_CAP], key[STORE_KEY_MAX];
    assert_og_ok(lance_version_file_name(name, sizeof name, naming, v));
    snprintf(key, sizeof key, "_versions/%s", name);
    assert_og_ok(store_put_if_absent(st, key, b.data, b.len, 0));
    core_buf_free(&b);
    lance_manifest_free(m);
    store_close(st);
}

static void test_unsupported_and_corrupt(void **state)
{
    (void)state;
    char out[8192], err[4096], args[1024], dir[600];
    snprintf(dir, sizeof dir, "%s/v21.lance", g_dir);
    make_table(dir, NULL);
    commit_with_data_version(dir, "2.1");
    snprintf(args, sizeof args, "lance cat %s --json", dir);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(out, "{\"ok\":false,\"error\":{\"code\":\"unsupported\""));
    assert_non_null(strstr(out, "unsupported data storage version 2.1"));
    assert_string_equal(err, "");
    snprintf(args, sizeof args, "lance cat %s", dir);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "error[unsupported]"));
    /* metadata still reads, and the version before reads in full */
    snprintf(args, sizeof args, "lance stats %s --json", dir);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "\"data_storage_version\":\"2.1\""));
    snprintf(args, sizeof args, "lance cat %s --json --version 4 --columns id --limit 1", dir);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 0);
    assert_string_equal(out, "{\"id\":9}\n");

    /* a damaged manifest */
    snprintf(dir, sizeof dir, "%s/bad.lance", g_dir);
    make_table(dir, NULL);
    store *st;
    assert_og_ok(store_local_open(&st, dir));
    char name[LANCE_VERSION_NAME_CAP], path[800];
    assert_og_ok(lance_version_file_name(name, sizeof name, LANCE_NAMING_V2, 4));
    store_close(st);
    snprintf(path, sizeof path, "%s/_versions/%s", dir, name);
    test_write_file(path, "not a manifest at all, not at all", 33);
    snprintf(args, sizeof args, "lance cat %s", dir);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "error[corrupt]"));

    /* a utf8 value that is not UTF-8: typed, and no half line on stdout (with --json, the
     * error object is all there is) */
    snprintf(dir, sizeof dir, "%s/utf.lance", g_dir);
    make_table(dir, "ok\xc3(");
    snprintf(args, sizeof args, "lance cat %s --json", dir);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 1);
    assert_true(!strncmp(out, "{\"ok\":false,\"error\":{\"code\":\"corrupt\"", 33));
    assert_non_null(strchr(out, '\n'));
    assert_string_equal(strchr(out, '\n'), "\n");
    assert_string_equal(err, "");
}

/* The public API directly: schema export, Arrow stream, version, stats. */
/* A data file read in ranges (over LANCE_FILE2_SMALL_FILE_BYTES) with one flipped bit: the
 * read that touches it fails corrupt (exit 1, error[corrupt] naming the file and block);
 * a read of a column elsewhere in the file answers (issue 33, F6). */
static void test_big_file_flipped_bit(void **state)
{
    (void)state;
    char dir[600], out[4096], err[4096], args[900];
    snprintf(dir, sizeof dir, "%s/big.lance", g_dir);
    store *st;
    assert_og_ok(store_local_open(&st, dir));
    arrow_schema s;
    arrow_schema_init(&s);
    add_field(&s, "id", ARROW_INT64, false);
    add_field(&s, "name", ARROW_UTF8, true);
    arrow_builder *b[2];
    for (int c = 0; c < 2; c++)
        assert_og_ok(arrow_builder_new(&b[c], &s.fields[c].type));
    for (int64_t i = 0; i < 50000; i++) {
        char v[128];
        snprintf(v, sizeof v, "%0120lld", (long long)i);
        assert_og_ok(arrow_builder_append_int(b[0], i));
        assert_og_ok(arrow_builder_append_str(b[1], v));
    }
    arrow_array *cols[2];
    for (int c = 0; c < 2; c++) {
        assert_og_ok(arrow_builder_finish(b[c], &cols[c]));
        arrow_builder_free(b[c]);
    }
    arrow_batch *ba;
    assert_og_ok(arrow_batch_new(&ba, &s, cols, 2));
    for (int c = 0; c < 2; c++)
        arrow_array_free(cols[c]);
    lance_dataset *ds, *d2;
    assert_og_ok(lance_dataset_create(&ds, st, "", &s, NULL));
    assert_og_ok(lance_dataset_append(&d2, ds, &ba, 1));
    char key[600];
    snprintf(key, sizeof key, "data/%s", d2->m->pb->fragments[0]->files[0]->path);
    assert_true(d2->m->pb->fragments[0]->files[0]->n_og_block_xxh3 > 0);
    /* one bit of row 1's id, in block 0: still a valid id, so only the checksum tells */
    core_buf buf = CORE_BUF_INIT;
    assert_og_ok(store_get(st, key, 0, STORE_ALL, &buf));
    buf.data[9] ^= 0x01;
    assert_og_ok(store_put(st, key, buf.data, buf.len, 0));
    core_buf_free(&buf);
    arrow_batch_free(ba);
    lance_dataset_free(ds);
    lance_dataset_free(d2);
    arrow_schema_clear(&s);
    store_close(st);

    snprintf(args, sizeof args, "lance cat %s --columns id --limit 2", dir);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 1);
    assert_non_null(strstr(err, "error[corrupt]"));
    assert_non_null(strstr(err, key));
    assert_non_null(strstr(err, "checksum mismatch in block 0 "));
    snprintf(args, sizeof args, "lance cat %s --json --columns name --limit 1", dir);
    assert_int_equal(run(args, out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "{\"name\":\"000000000000"));
}

static void test_api_stream(void **state)
{
    (void)state;
    og_table *t = NULL;
    assert_og_error(og_table_open(&t, "/proc/none/here", 0), OG_E_NOT_FOUND);
    assert_null(t);
    assert_og_ok(og_table_open(&t, g_tab, 0));
    assert_int_equal(og_table_version(t), 4);
    struct ArrowSchema sch;
    assert_og_ok(og_table_schema(&sch, t));
    assert_string_equal(sch.format, "+s");
    assert_int_equal(sch.n_children, 4);
    assert_string_equal(sch.children[3]->name, "d");
    assert_string_equal(sch.children[3]->format, "tdD");
    sch.release(&sch);

    og_scan_options o = OG_SCAN_OPTIONS_INIT;
    const char *cols[] = {"score", "id"};
    o.columns = cols;
    o.n_columns = 2;
    struct ArrowArrayStream s;
    assert_og_ok(og_table_scan(&s, t, &o));
    og_table_close(t); /* the stream keeps the snapshot alive */
    assert_og_ok(s.get_schema(&s, &sch));
    assert_int_equal(sch.n_children, 2);
    assert_string_equal(sch.children[0]->name, "score");
    assert_string_equal(sch.children[0]->format, "g");
    sch.release(&sch);
    int64_t total = 0, idsum = 0;
    for (;;) {
        struct ArrowArray a;
        assert_int_equal(s.get_next(&s, &a), 0);
        if (!a.release) break;
        assert_int_equal(a.n_children, 2);
        const int64_t *ids = a.children[1]->buffers[1];
        for (int64_t i = 0; i < a.length; i++)
            idsum += ids[a.children[1]->offset + i];
        total += a.length;
        a.release(&a);
    }
    assert_int_equal(total, 9);
    assert_int_equal(idsum, 0 + 2 + 3 + 4 + 5 + 7 + 8 + 9 + 101);
    s.release(&s);
    assert_null(s.release);

    assert_og_ok(og_table_open(&t, g_tab, 3));
    og_table_info *info = NULL;
    assert_og_ok(og_table_stats(&info, t));
    assert_int_equal(info->rows, 12);
    assert_int_equal(info->fragments, 2);
    assert_string_equal(info->naming, "v2");
    og_table_info_free(info);
    og_table_version_list *l = NULL;
    assert_og_ok(og_table_versions(&l, t));
    assert_int_equal(og_table_version_list_count(l), 4); /* the whole history, not just to t */
    const og_table_version_info *v0 = og_table_version_list_get(l, 0);
    const og_table_version_info *v3 = og_table_version_list_get(l, 3);
    assert_null(og_table_version_list_get(l, 4));
    assert_int_equal(v3->version, 4);
    assert_true(v0->timestamp_ns > 0 && v0->timestamp_ns <= v3->timestamp_ns);
    og_table_version_list_free(l);
    og_table_version_list_free(NULL);
    og_table_info_free(NULL);
    o.columns = (const char *[]){"ghost"};
    o.n_columns = 1;
    assert_og_error(og_table_scan(&s, t, &o), OG_E_BAD_REQUEST);
    o.version = 99;
    assert_og_error(og_table_write_json(NULL, stdout, t, &o), OG_E_BAD_REQUEST);
    assert_og_error(og_table_write_schema(stdout, t, 7), OG_E_BAD_REQUEST); /* no such format */
    og_table_close(t);
    og_table_close(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cat_json),
        cmocka_unit_test(test_cat_text),
        cmocka_unit_test(test_schema_stats_versions),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_typed_errors),
        cmocka_unit_test(test_unsupported_and_corrupt),
        cmocka_unit_test(test_big_file_flipped_bit),
        cmocka_unit_test(test_api_stream),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
