/* Lance table metadata: manifest files (every field, footer, carry-forward, corrupt input),
 * version naming and latest discovery, the put_if_absent commit and its race, data file
 * names, and interop with manifests written by the reference probe (mini_writer.py). */
#include "testutil.h"

#include "crashsim.h"

#include "core/alloc.h"
#include "lance/fragment.h"
#include "lance/manifest.h"
#include "lance/paths.h"
#include "lance/rowids.h"
#include "lance/txn.h"
#include "lance/version.h"
#include "store/store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------------------------ */

static void mkfield(Lance__File__Field *f, const char *name, int id, int parent, const char *lt,
                    int nullable)
{
    Lance__File__Field init = LANCE__FILE__FIELD__INIT;
    *f = init;
    f->name = (char *)name;
    f->id = id;
    f->parent_id = parent;
    f->logical_type = (char *)lt;
    f->nullable = nullable;
}

static int contains(const unsigned char *hay, size_t n, const unsigned char *needle, size_t k)
{
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(hay + i, needle, k) == 0) return 1;
    return 0;
}

static store *open_store(char *dir, size_t cap, const char *tag)
{
    test_sandbox_new(dir, cap, tag);
    store *s = NULL;
    assert_og_ok(store_local_open(&s, dir));
    return s;
}

/* Commit version v on top of prev (NULL: create) with an Append transaction. */
static int commit_version(store *s, const char *root, lance_naming naming,
                          const Lance__Table__Manifest *prev, uint64_t v)
{
    lance_manifest_next next;
    lance_manifest_next_init(&next, prev, v);
    Lance__Table__Transaction t = LANCE__TABLE__TRANSACTION__INIT;
    Lance__Table__Transaction__Append app = LANCE__TABLE__TRANSACTION__APPEND__INIT;
    t.read_version = v - 1;
    t.operation_case = LANCE__TABLE__TRANSACTION__OPERATION_APPEND;
    t.append = &app;
    lance_manifest_update_flags(&next.pb);
    lance_commit_info info;
    return lance_commit(s, root, naming, &next.pb, &t, NULL, 0, 0, &info);
}

/* ---- protobuf wire facts ------------------------------------------------------------------- */

static void test_wire_facts(void **state)
{
    (void)state;
    /* parent_id -1 is a 10-byte varint (field 4, wire type 0). */
    Lance__File__Field f;
    mkfield(&f, "a", 0, -1, "int64", 1);
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(lance_pb_pack(&b, &f.base));
    static const unsigned char neg1[] = {0x20, 0xff, 0xff, 0xff, 0xff, 0xff,
                                         0xff, 0xff, 0xff, 0xff, 0x01};
    assert_true(contains(b.data, b.len, neg1, sizeof neg1));

    /* DataFile.fields / column_indices are packed (wire type 2), as proto3 writers do. */
    Lance__Table__DataFile df = LANCE__TABLE__DATA_FILE__INIT;
    int32_t ids[] = {0, 1, 7};
    df.path = "x.lance";
    df.n_fields = 3;
    df.fields = ids;
    df.n_column_indices = 3;
    df.column_indices = ids;
    core_buf_clear(&b);
    assert_og_ok(lance_pb_pack(&b, &df.base));
    static const unsigned char packed_fields[] = {0x12, 0x03, 0x00, 0x01, 0x07};
    static const unsigned char packed_cols[] = {0x1a, 0x03, 0x00, 0x01, 0x07};
    assert_true(contains(b.data, b.len, packed_fields, sizeof packed_fields));
    assert_true(contains(b.data, b.len, packed_cols, sizeof packed_cols));

    /* proto3 `optional` semantics: max_fragment_id 0 is written when present, absent when
     * not (the difference between "one fragment ever" and "none ever"). */
    Lance__Table__Manifest m = LANCE__TABLE__MANIFEST__INIT;
    core_buf_clear(&b);
    assert_og_ok(lance_pb_pack(&b, &m.base));
    assert_int_equal(b.len, 0);
    m.has_max_fragment_id = 1;
    m.max_fragment_id = 0;
    assert_og_ok(lance_pb_pack(&b, &m.base));
    assert_int_equal(b.len, 2);
    assert_int_equal(b.data[0], 0x58); /* field 11, varint */
    assert_int_equal(b.data[1], 0x00);
    core_buf_free(&b);
}

/* ---- a manifest with every field ------------------------------------------------------------- */

typedef struct full {
    Lance__File__Field f[5], *fp[5];
    Lance__Table__DataFile df[2], *dfp[2];
    int32_t ids[5], cols[5];
    Lance__Table__DeletionFile del;
    Lance__Table__DataFragment frag[2], *fragp[2];
    Lance__Table__Manifest__SchemaMetadataEntry sm, *smp[1];
    Lance__Table__Manifest__ConfigEntry cfg[2], *cfgp[2];
    Lance__Table__Manifest__TableMetadataEntry tm, *tmp[1];
    Lance__Table__BasePath bp, *bpp[1];
    Lance__Table__Timestamp ts;
    Lance__Table__Manifest__WriterVersion wv;
    Lance__Table__Manifest__DataStorageFormat fmt;
    Lance__Table__Manifest m;
} full;

static void build_full(full *x)
{
    memset(x, 0, sizeof *x);
    mkfield(&x->f[0], "id", 0, -1, "int64", 0);
    x->f[0].unenforced_primary_key = 1;
    mkfield(&x->f[1], "s", 1, -1, "struct", 1);
    mkfield(&x->f[2], "x", 2, 1, "double", 1);
    mkfield(&x->f[3], "l", 3, -1, "list", 1);
    mkfield(&x->f[4], "item", 4, 3, "int32", 1);
    for (int i = 0; i < 5; i++) {
        x->fp[i] = &x->f[i];
        x->ids[i] = i;
        x->cols[i] = i;
    }
    for (int i = 0; i < 2; i++) {
        Lance__Table__DataFile d = LANCE__TABLE__DATA_FILE__INIT;
        x->df[i] = d;
        x->df[i].path = i ? "file-b.lance" : "file-a.lance";
        x->df[i].n_fields = x->df[i].n_column_indices = 5;
        x->df[i].fields = x->ids;
        x->df[i].column_indices = x->cols;
        x->df[i].has_file_major_version = x->df[i].has_file_minor_version = 1;
        x->df[i].file_major_version = 2;
        x->df[i].file_minor_version = 0;
        x->df[i].has_file_size_bytes = 1;
        x->df[i].file_size_bytes = 1000 + (uint64_t)i;
        x->dfp[i] = &x->df[i];
    }
    x->df[1].has_base_id = 1;
    x->df[1].base_id = 0;
    Lance__Table__DeletionFile del = LANCE__TABLE__DELETION_FILE__INIT;
    x->del = del;
    x->del.has_file_type = 1;
    x->del.file_type = LANCE__TABLE__DELETION_FILE__DELETION_FILE_TYPE__BITMAP;
    x->del.has_read_version = x->del.has_id = x->del.has_num_deleted_rows = 1;
    x->del.read_version = 6;
    x->del.id = 0xfedcba9876543210ull;
    x->del.num_deleted_rows = 3;
    static unsigned char rowids[] = {1, 2, 3}, upd[] = {4, 5}, cre[] = {6};
    for (int i = 0; i < 2; i++) {
        Lance__Table__DataFragment fr = LANCE__TABLE__DATA_FRAGMENT__INIT;
        x->frag[i] = fr;
        x->frag[i].has_id = x->frag[i].has_physical_rows = 1;
        x->frag[i].id = (uint64_t)(i ? 9 : 4);
        x->frag[i].physical_rows = 100 + (uint64_t)i;
        x->frag[i].n_files = 1;
        x->frag[i].files = &x->dfp[i];
        x->fragp[i] = &x->frag[i];
    }
    x->frag[0].deletion_file = &x->del;
    x->frag[0].row_id_sequence_case = LANCE__TABLE__DATA_FRAGMENT__ROW_ID_SEQUENCE_INLINE_ROW_IDS;
    x->frag[0].inline_row_ids.data = rowids;
    x->frag[0].inline_row_ids.len = sizeof rowids;
    x->frag[0].last_updated_at_version_sequence_case =
        LANCE__TABLE__DATA_FRAGMENT__LAST_UPDATED_AT_VERSION_SEQUENCE_INLINE_LAST_UPDATED_AT_VERSIONS;
    x->frag[0].inline_last_updated_at_versions.data = upd;
    x->frag[0].inline_last_updated_at_versions.len = sizeof upd;
    x->frag[0].created_at_version_sequence_case =
        LANCE__TABLE__DATA_FRAGMENT__CREATED_AT_VERSION_SEQUENCE_INLINE_CREATED_AT_VERSIONS;
    x->frag[0].inline_created_at_versions.data = cre;
    x->frag[0].inline_created_at_versions.len = sizeof cre;

    Lance__Table__Manifest__SchemaMetadataEntry sm =
        LANCE__TABLE__MANIFEST__SCHEMA_METADATA_ENTRY__INIT;
    x->sm = sm;
    x->sm.key = "owner";
    x->sm.has_value = 1;
    x->sm.value.data = (uint8_t *)"omni\0graph";
    x->sm.value.len = 10;
    x->smp[0] = &x->sm;
    for (int i = 0; i < 2; i++) {
        Lance__Table__Manifest__ConfigEntry c = LANCE__TABLE__MANIFEST__CONFIG_ENTRY__INIT;
        x->cfg[i] = c;
        x->cfg[i].key = i ? "lance.auto_cleanup.interval" : "custom.key";
        x->cfg[i].value = i ? "20" : "v";
        x->cfgp[i] = &x->cfg[i];
    }
    Lance__Table__Manifest__TableMetadataEntry tm =
        LANCE__TABLE__MANIFEST__TABLE_METADATA_ENTRY__INIT;
    x->tm = tm;
    x->tm.key = "graph";
    x->tm.value = "g1";
    x->tmp[0] = &x->tm;
    Lance__Table__BasePath bp = LANCE__TABLE__BASE_PATH__INIT;
    x->bp = bp;
    x->bp.has_id = x->bp.has_is_dataset_root = 1;
    x->bp.id = 0;
    x->bp.name = "parent";
    x->bp.is_dataset_root = 1;
    x->bp.path = "/abs/parent.lance";
    x->bpp[0] = &x->bp;
    Lance__Table__Timestamp ts = LANCE__TABLE__TIMESTAMP__INIT;
    x->ts = ts;
    x->ts.has_seconds = x->ts.has_nanos = 1;
    x->ts.seconds = 1764670000;
    x->ts.nanos = 123456789;
    Lance__Table__Manifest__WriterVersion wv = LANCE__TABLE__MANIFEST__WRITER_VERSION__INIT;
    x->wv = wv;
    x->wv.library = "omnigraph";
    x->wv.version = "0.1.0";
    x->wv.prerelease = "rc.1";
    x->wv.build_metadata = "b7";
    Lance__Table__Manifest__DataStorageFormat fmt =
        LANCE__TABLE__MANIFEST__DATA_STORAGE_FORMAT__INIT;
    x->fmt = fmt;
    x->fmt.file_format = "lance";
    x->fmt.version = "2.0";

    Lance__Table__Manifest m = LANCE__TABLE__MANIFEST__INIT;
    x->m = m;
    x->m.n_fields = 5;
    x->m.fields = x->fp;
    x->m.n_fragments = 2;
    x->m.fragments = x->fragp;
    x->m.has_version = 1;
    x->m.version = 7;
    x->m.n_schema_metadata = 1;
    x->m.schema_metadata = x->smp;
    x->m.timestamp = &x->ts;
    x->m.tag = "nightly";
    x->m.has_reader_feature_flags = x->m.has_writer_feature_flags = 1;
    x->m.reader_feature_flags = x->m.writer_feature_flags =
        LANCE_FLAG_DELETION_FILES | LANCE_FLAG_STABLE_ROW_IDS | LANCE_FLAG_TABLE_CONFIG |
        LANCE_FLAG_BASE_PATHS;
    x->m.has_max_fragment_id = 1;
    x->m.max_fragment_id = 9;
    x->m.transaction_file = "6-0b6a9a3c-1a8e-4e5f-9a49-6f1f7d2a7b10.txn";
    x->m.writer_version = &x->wv;
    x->m.has_next_row_id = 1;
    x->m.next_row_id = 201;
    x->m.data_format = &x->fmt;
    x->m.n_config = 2;
    x->m.config = x->cfgp;
    x->m.n_base_paths = 1;
    x->m.base_paths = x->bpp;
    x->m.n_table_metadata = 1;
    x->m.table_metadata = x->tmp;
    x->m.branch = "feat/x";
}

static const unsigned char TXN_BYTES[] = {0x08, 0x06, 0x12, 0x01,
                                          0x75}; /* read_version 6, uuid "u" */
static const unsigned char INDEX_BYTES[] = {0x0a, 0x03, 0x1a, 0x01, 0x69}; /* one index, name "i" */

static void check_full(const Lance__Table__Manifest *p)
{
    assert_int_equal(p->n_fields, 5);
    assert_string_equal(p->fields[0]->name, "id");
    assert_int_equal(p->fields[0]->parent_id, -1);
    assert_true(p->fields[0]->unenforced_primary_key);
    assert_false(p->fields[0]->nullable);
    assert_string_equal(p->fields[2]->logical_type, "double");
    assert_int_equal(p->fields[2]->parent_id, 1);
    assert_string_equal(p->fields[4]->name, "item");
    assert_int_equal(p->fields[4]->parent_id, 3);
    assert_int_equal(p->n_fragments, 2);
    const Lance__Table__DataFragment *f0 = p->fragments[0], *f1 = p->fragments[1];
    assert_int_equal(f0->id, 4);
    assert_int_equal(f1->id, 9);
    assert_int_equal(f0->physical_rows, 100);
    assert_int_equal(f0->n_files, 1);
    assert_string_equal(f0->files[0]->path, "file-a.lance");
    assert_int_equal(f0->files[0]->n_fields, 5);
    assert_int_equal(f0->files[0]->fields[4], 4);
    assert_int_equal(f0->files[0]->column_indices[3], 3);
    assert_int_equal(f0->files[0]->file_major_version, 2);
    assert_int_equal(f0->files[0]->file_minor_version, 0);
    assert_int_equal(f0->files[0]->file_size_bytes, 1000);
    assert_false(f0->files[0]->has_base_id);
    assert_true(f1->files[0]->has_base_id);
    assert_int_equal(f1->files[0]->base_id, 0);
    assert_non_null(f0->deletion_file);
    assert_null(f1->deletion_file);
    assert_int_equal(f0->deletion_file->file_type,
                     LANCE__TABLE__DELETION_FILE__DELETION_FILE_TYPE__BITMAP);
    assert_int_equal(f0->deletion_file->read_version, 6);
    assert_true(f0->deletion_file->id == 0xfedcba9876543210ull);
    assert_int_equal(f0->deletion_file->num_deleted_rows, 3);
    assert_int_equal(f0->row_id_sequence_case,
                     LANCE__TABLE__DATA_FRAGMENT__ROW_ID_SEQUENCE_INLINE_ROW_IDS);
    assert_int_equal(f0->inline_row_ids.len, 3);
    assert_int_equal(f0->inline_row_ids.data[2], 3);
    assert_int_equal(f0->inline_last_updated_at_versions.len, 2);
    assert_int_equal(f0->inline_created_at_versions.data[0], 6);
    assert_int_equal(p->version, 7);
    assert_int_equal(p->n_schema_metadata, 1);
    assert_string_equal(p->schema_metadata[0]->key, "owner");
    assert_int_equal(p->schema_metadata[0]->value.len, 10);
    assert_memory_equal(p->schema_metadata[0]->value.data, "omni\0graph", 10);
    assert_int_equal(p->timestamp->seconds, 1764670000);
    assert_int_equal(p->timestamp->nanos, 123456789);
    assert_string_equal(p->tag, "nightly");
    assert_int_equal(p->reader_feature_flags, 27);
    assert_int_equal(p->writer_feature_flags, 27);
    assert_true(p->has_max_fragment_id);
    assert_int_equal(p->max_fragment_id, 9);
    assert_string_equal(p->transaction_file, "6-0b6a9a3c-1a8e-4e5f-9a49-6f1f7d2a7b10.txn");
    assert_string_equal(p->writer_version->library, "omnigraph");
    assert_string_equal(p->writer_version->version, "0.1.0");
    assert_string_equal(p->writer_version->prerelease, "rc.1");
    assert_string_equal(p->writer_version->build_metadata, "b7");
    assert_int_equal(p->next_row_id, 201);
    assert_string_equal(p->data_format->file_format, "lance");
    assert_string_equal(lance_manifest_data_version(p), "2.0");
    assert_int_equal(p->n_config, 2);
    assert_string_equal(p->config[1]->key, "lance.auto_cleanup.interval");
    assert_string_equal(p->config[1]->value, "20");
    assert_int_equal(p->n_base_paths, 1);
    assert_int_equal(p->base_paths[0]->id, 0);
    assert_string_equal(p->base_paths[0]->name, "parent");
    assert_true(p->base_paths[0]->is_dataset_root);
    assert_string_equal(p->base_paths[0]->path, "/abs/parent.lance");
    assert_int_equal(p->n_table_metadata, 1);
    assert_string_equal(p->table_metadata[0]->value, "g1");
    assert_string_equal(p->branch, "feat/x");
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void test_manifest_round_trip(void **state)
{
    (void)state;
    full *x = malloc(sizeof *x);
    build_full(x);
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(lance_manifest_encode(&b, &x->m, TXN_BYTES, sizeof TXN_BYTES, INDEX_BYTES,
                                       sizeof INDEX_BYTES));
    /* Layout: txn at 0, index after it, manifest at P, 16-byte footer. */
    assert_int_equal(le32(b.data), sizeof TXN_BYTES);
    assert_memory_equal(b.data + 4, TXN_BYTES, sizeof TXN_BYTES);
    size_t idx = 4 + sizeof TXN_BYTES;
    assert_int_equal(le32(b.data + idx), sizeof INDEX_BYTES);
    uint64_t pos = le32(b.data + b.len - 16) | (uint64_t)le32(b.data + b.len - 12) << 32;
    assert_int_equal(pos, idx + 4 + sizeof INDEX_BYTES);
    assert_int_equal(pos + 4 + le32(b.data + pos), b.len - 16);
    static const unsigned char foot_tail[] = {0, 0, 2, 0, 'L', 'A', 'N', 'C'};
    assert_memory_equal(b.data + b.len - 8, foot_tail, 8);

    lance_manifest *m = NULL;
    assert_og_ok(lance_manifest_decode(&m, b.data, b.len, "t/_versions/x.manifest"));
    check_full(m->pb);
    assert_true(m->pb->has_transaction_section);
    assert_int_equal(m->pb->transaction_section, 0);
    assert_true(m->pb->has_index_section);
    assert_int_equal(m->pb->index_section, idx);
    assert_int_equal(m->txn_len, sizeof TXN_BYTES);
    assert_memory_equal(m->txn, TXN_BYTES, sizeof TXN_BYTES);
    assert_int_equal(m->index_len, sizeof INDEX_BYTES);
    assert_memory_equal(m->index, INDEX_BYTES, sizeof INDEX_BYTES);
    assert_og_ok(lance_manifest_check(m->pb, LANCE_ACCESS_READ, "x"));
    assert_og_ok(lance_manifest_check(m->pb, LANCE_ACCESS_WRITE, "x"));

    /* Re-encoding the decoded manifest gives the same bytes. */
    core_buf b2 = CORE_BUF_INIT;
    assert_og_ok(lance_manifest_encode(&b2, m->pb, m->txn, m->txn_len, m->index, m->index_len));
    assert_int_equal(b2.len, b.len);
    assert_memory_equal(b2.data, b.data, b.len);

    /* Minimal form: no txn, no index: the manifest is at 0. */
    assert_og_ok(lance_manifest_encode(&b2, m->pb, NULL, 0, NULL, 0));
    assert_int_equal(le32(b2.data + b2.len - 16), 0);
    lance_manifest *m2 = NULL;
    assert_og_ok(lance_manifest_decode(&m2, b2.data, b2.len, "min"));
    check_full(m2->pb);
    assert_false(m2->pb->has_transaction_section);
    assert_false(m2->pb->has_index_section);
    assert_null(m2->txn);
    assert_null(m2->index);
    lance_manifest_free(m2);
    lance_manifest_free(m);
    core_buf_free(&b);
    core_buf_free(&b2);
    free(x);
}

/* The reference probe's independent decoder agrees with our footer and framing. */
static const char *probe_dir(void)
{
    const char *d = getenv("OG_LANCE_PROBE_DIR"); /* tests/CMakeLists.txt; skipped without */
    if (!d || !*d) return NULL;
    char p[512];
    snprintf(p, sizeof p, "%s/mini_writer.py", d);
    if (access(p, R_OK) != 0 || system("python3 -c 'pass' >/dev/null 2>&1") != 0) return NULL;
    return d;
}

static void run_capture(const char *cmd, char *out, size_t cap)
{
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    if (st != 0) fail_msg("command failed (%d): %s\n%s", st, cmd, out);
}

static void test_manifest_python_decoder(void **state)
{
    (void)state;
    const char *pd = probe_dir();
    if (!pd) skip();
    full *x = malloc(sizeof *x);
    build_full(x);
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(lance_manifest_encode(&b, &x->m, TXN_BYTES, sizeof TXN_BYTES, INDEX_BYTES,
                                       sizeof INDEX_BYTES));
    char dir[256], path[300], cmd[1024], out[65536];
    test_sandbox_new(dir, sizeof dir, "lance-pydec");
    snprintf(path, sizeof path, "%s/m.manifest", dir);
    test_write_file(path, b.data, b.len);
    snprintf(cmd, sizeof cmd, "python3 %s/manifest.py %s 2>&1", pd, path);
    run_capture(cmd, out, sizeof out);
    char want[128];
    uint64_t pos = le32(b.data + b.len - 16);
    snprintf(want, sizeof want, "manifest_pos=%llu major=0 minor=2 magic=LANC",
             (unsigned long long)pos);
    if (!strstr(out, want)) fail_msg("probe output lacks '%s':\n%s", want, out);
    snprintf(want, sizeof want, "== size-16=%zu", b.len - 16);
    if (!strstr(out, want)) fail_msg("probe output lacks '%s':\n%s", want, out);
    assert_non_null(strstr(out, "file-a.lance"));
    assert_non_null(strstr(out, "feat/x"));
    test_sandbox_done(dir);
    core_buf_free(&b);
    free(x);
}

/* ---- carry forward --------------------------------------------------------------------------- */

static void test_next_carries_forward(void **state)
{
    (void)state;
    full *x = malloc(sizeof *x);
    build_full(x);
    core_buf b = CORE_BUF_INIT, msg = CORE_BUF_INIT;
    /* A field from a newer lance (number 99, string): must survive as an unknown field. */
    assert_og_ok(lance_pb_pack(&msg, &x->m.base));
    static const unsigned char future[] = {0x9a, 0x06, 0x03, 'n', 'e', 'w'}; /* 99, LEN, "new" */
    assert_og_ok(core_buf_append(&msg, future, sizeof future));
    assert_og_ok(core_buf_append_u32le(&b, (uint32_t)msg.len));
    assert_og_ok(core_buf_append(&b, msg.data, msg.len));
    assert_og_ok(core_buf_append_u64le(&b, 0));
    assert_og_ok(core_buf_append_u16le(&b, 0));
    assert_og_ok(core_buf_append_u16le(&b, 2));
    assert_og_ok(core_buf_append(&b, "LANC", 4));
    lance_manifest *m = NULL;
    assert_og_ok(lance_manifest_decode(&m, b.data, b.len, "prev"));
    assert_int_equal(m->pb->base.n_unknown_fields, 1);

    lance_manifest_next next;
    lance_manifest_next_init(&next, m->pb, 8);
    next.pb.fragments = NULL; /* the operation replaces the fragments: drop them all */
    next.pb.n_fragments = 0;
    lance_manifest_update_flags(&next.pb);
    assert_og_ok(lance_manifest_encode(&b, &next.pb, NULL, 0, INDEX_BYTES, sizeof INDEX_BYTES));
    lance_manifest *n = NULL;
    assert_og_ok(lance_manifest_decode(&n, b.data, b.len, "next"));
    const Lance__Table__Manifest *p = n->pb;
    assert_int_equal(p->version, 8);
    assert_int_equal(p->n_fields, 5);
    assert_int_equal(p->n_schema_metadata, 1);
    assert_int_equal(p->n_config, 2);
    assert_int_equal(p->n_table_metadata, 1);
    assert_int_equal(p->n_base_paths, 1);
    assert_string_equal(p->branch, "feat/x");
    assert_int_equal(p->next_row_id, 201);
    assert_int_equal(p->max_fragment_id, 9);
    assert_string_equal(lance_manifest_data_version(p), "2.0");
    /* Per-version fields are reset; ours is the writer. */
    assert_null(p->tag);
    assert_null(p->transaction_file);
    assert_string_equal(p->writer_version->library, LANCE_WRITER_LIBRARY);
    assert_null(p->writer_version->prerelease);
    assert_true(p->timestamp->seconds > 1700000000);
    /* No fragment has a deletion file any more: flag 1 cleared, the others kept. */
    assert_int_equal(p->reader_feature_flags, 26);
    assert_int_equal(p->writer_feature_flags, 26);
    /* The index section bytes were carried. */
    assert_int_equal(n->index_len, sizeof INDEX_BYTES);
    assert_memory_equal(n->index, INDEX_BYTES, sizeof INDEX_BYTES);
    /* The unknown field too. */
    assert_int_equal(p->base.n_unknown_fields, 1);
    assert_int_equal(p->base.unknown_fields[0].tag, 99);
    assert_int_equal(p->base.unknown_fields[0].len, 4);

    /* A new table: empty, data storage version 2.0, flags 0 written. */
    lance_manifest_next first;
    lance_manifest_next_init(&first, NULL, 1);
    assert_og_ok(lance_manifest_encode(&b, &first.pb, NULL, 0, NULL, 0));
    lance_manifest *f = NULL;
    assert_og_ok(lance_manifest_decode(&f, b.data, b.len, "first"));
    assert_int_equal(f->pb->version, 1);
    assert_string_equal(lance_manifest_data_version(f->pb), "2.0");
    assert_string_equal(f->pb->data_format->file_format, "lance");
    assert_false(f->pb->has_max_fragment_id);
    assert_og_ok(lance_manifest_check(f->pb, LANCE_ACCESS_WRITE, "first"));
    lance_manifest_free(f);
    lance_manifest_free(n);
    lance_manifest_free(m);
    core_buf_free(&b);
    core_buf_free(&msg);
    free(x);
}

/* ---- refusal ------------------------------------------------------------------------------- */

static void test_refuse_unsupported(void **state)
{
    (void)state;
    full *x = malloc(sizeof *x);
    build_full(x);
    x->fmt.version = "2.1";
    assert_og_error(lance_manifest_check(&x->m, LANCE_ACCESS_READ, "t"), OG_E_UNSUPPORTED);
    assert_non_null(strstr(og_error_last()->message, "unsupported data storage version 2.1"));
    assert_og_error(lance_manifest_check(&x->m, LANCE_ACCESS_WRITE, "t"), OG_E_UNSUPPORTED);
    assert_og_ok(lance_manifest_check(&x->m, LANCE_ACCESS_INSPECT, "t"));
    x->fmt.version = "2.0";
    x->m.reader_feature_flags |= 32;
    assert_og_error(lance_manifest_check(&x->m, LANCE_ACCESS_READ, "t"), OG_E_UNSUPPORTED);
    assert_non_null(strstr(og_error_last()->message, "reader feature flag 32"));
    assert_og_ok(lance_manifest_check(&x->m, LANCE_ACCESS_WRITE, "t")); /* writer flags clean */
    x->m.writer_feature_flags |= 4;
    assert_og_error(lance_manifest_check(&x->m, LANCE_ACCESS_WRITE, "t"), OG_E_UNSUPPORTED);
    assert_non_null(strstr(og_error_last()->message, "writer feature flag 4"));
    x->m.writer_feature_flags = 1ull << 40;
    assert_og_error(lance_manifest_check(&x->m, LANCE_ACCESS_WRITE, "t"), OG_E_UNSUPPORTED);
    assert_non_null(strstr(og_error_last()->message, "1099511627776"));
    /* A legacy table without data_format. */
    x->m.reader_feature_flags = 0;
    x->m.data_format = NULL;
    assert_og_error(lance_manifest_check(&x->m, LANCE_ACCESS_READ, "t"), OG_E_UNSUPPORTED);

    /* Through the loader: a stored 2.1 table is refused for reading, inspectable. */
    char dir[256];
    store *s = open_store(dir, sizeof dir, "lance-refuse");
    x->m.data_format = &x->fmt;
    x->fmt.version = "2.1";
    x->m.version = 1;
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(lance_manifest_encode(&b, &x->m, NULL, 0, NULL, 0));
    assert_og_ok(store_put(s, "t.lance/_versions/18446744073709551614.manifest", b.data, b.len, 0));
    lance_manifest *m = NULL;
    assert_og_error(lance_version_load_latest(s, "t.lance", LANCE_ACCESS_READ, &m, NULL),
                    OG_E_UNSUPPORTED);
    assert_non_null(strstr(og_error_last()->message, "unsupported data storage version 2.1"));
    assert_null(m);
    assert_og_ok(lance_version_load_latest(s, "t.lance", LANCE_ACCESS_INSPECT, &m, NULL));
    assert_int_equal(m->pb->version, 1);
    lance_manifest_free(m);
    core_buf_free(&b);
    test_sandbox_store_done(dir, s);
    free(x);
}

/* ---- corrupt input ----------------------------------------------------------------------------
 */

static void expect_corrupt(const void *p, size_t n)
{
    lance_manifest *m = (lance_manifest *)0x1;
    int rc = lance_manifest_decode(&m, p, n, "bad.manifest");
    if (rc != OG_E_CORRUPT)
        fail_msg("expected CORRUPT for %zu bytes, got %d: %s", n, rc, og_error_last()->message);
    assert_null(m);
    assert_non_null(strstr(og_error_last()->message, "bad.manifest"));
    assert_string_equal(og_error_last()->object, "bad.manifest");
}

static void test_manifest_corrupt(void **state)
{
    (void)state;
    full *x = malloc(sizeof *x);
    build_full(x);
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(lance_manifest_encode(&b, &x->m, TXN_BYTES, sizeof TXN_BYTES, INDEX_BYTES,
                                       sizeof INDEX_BYTES));
    /* Every truncation. */
    for (size_t n = 0; n < b.len; n++)
        expect_corrupt(b.data, n);
    unsigned char *c = malloc(b.len);
    size_t foot = b.len - 16;
    /* Wrong magic. */
    memcpy(c, b.data, b.len);
    c[b.len - 1] = 'X';
    expect_corrupt(c, b.len);
    /* Position beyond the file, negative, and off by one. */
    uint64_t bad_pos[] = {b.len, UINT64_MAX, (uint64_t)1 << 63, foot - 3};
    for (size_t i = 0; i < 4; i++) {
        memcpy(c, b.data, b.len);
        for (int k = 0; k < 8; k++)
            c[foot + k] = (unsigned char)(bad_pos[i] >> (8 * k));
        expect_corrupt(c, b.len);
    }
    /* A manifest length that overflows / does not meet the footer. */
    uint64_t pos = le32(b.data + foot);
    uint32_t bad_len[] = {0xFFFFFFFFu, 0xFFFFFFF0u, le32(b.data + pos) - 1};
    for (size_t i = 0; i < 3; i++) {
        memcpy(c, b.data, b.len);
        for (int k = 0; k < 4; k++)
            c[pos + k] = (unsigned char)(bad_len[i] >> (8 * k));
        expect_corrupt(c, b.len);
    }
    /* Bad protobuf inside good framing: a truncated varint and a field of wire type 7. */
    static const unsigned char junk1[] = {0x18, 0xff, 0xff}, junk2[] = {0x0f, 0x01};
    const unsigned char *junks[] = {junk1, junk2};
    size_t jl[] = {sizeof junk1, sizeof junk2};
    for (size_t i = 0; i < 2; i++) {
        core_buf j = CORE_BUF_INIT;
        assert_og_ok(core_buf_append_u32le(&j, (uint32_t)jl[i]));
        assert_og_ok(core_buf_append(&j, junks[i], jl[i]));
        assert_og_ok(core_buf_append_u64le(&j, 0));
        assert_og_ok(core_buf_append_u16le(&j, 0));
        assert_og_ok(core_buf_append_u16le(&j, 2));
        assert_og_ok(core_buf_append(&j, "LANC", 4));
        expect_corrupt(j.data, j.len);
        assert_non_null(strstr(og_error_last()->message, "does not decode"));
        core_buf_free(&j);
    }
    /* Field number 0 as an over-long varint (82 00): protobuf-c would keep it as an unknown
     * field it can never decode again (found by fuzz_lance_manifest). */
    {
        static const unsigned char zero[] = {0x82, 0x00, 0x01, 0x41, 0x18, 0x07};
        core_buf j = CORE_BUF_INIT;
        assert_og_ok(core_buf_append_u32le(&j, sizeof zero));
        assert_og_ok(core_buf_append(&j, zero, sizeof zero));
        assert_og_ok(core_buf_append_u64le(&j, 0));
        assert_og_ok(core_buf_append_u16le(&j, 0));
        assert_og_ok(core_buf_append_u16le(&j, 2));
        assert_og_ok(core_buf_append(&j, "LANC", 4));
        expect_corrupt(j.data, j.len);
        assert_non_null(strstr(og_error_last()->message, "field number 0"));
        core_buf_free(&j);
    }
    /* Sections pointing past the manifest, or overrunning it. */
    Lance__Table__Manifest m2 = x->m;
    core_buf raw = CORE_BUF_INIT;
    uint64_t offs[] = {1000000, UINT64_MAX - 2, 2};
    for (size_t i = 0; i < 3; i++) {
        core_buf_clear(&raw);
        assert_og_ok(core_buf_append_u32le(&raw, 0xFFFFFF00u)); /* a huge section length */
        m2.has_index_section = 1;
        m2.index_section = offs[i];
        core_buf msg = CORE_BUF_INIT;
        assert_og_ok(lance_pb_pack(&msg, &m2.base));
        uint64_t p = raw.len;
        assert_og_ok(core_buf_append_u32le(&raw, (uint32_t)msg.len));
        assert_og_ok(core_buf_append(&raw, msg.data, msg.len));
        assert_og_ok(core_buf_append_u64le(&raw, p));
        assert_og_ok(core_buf_append_u16le(&raw, 0));
        assert_og_ok(core_buf_append_u16le(&raw, 2));
        assert_og_ok(core_buf_append(&raw, "LANC", 4));
        expect_corrupt(raw.data, raw.len);
        assert_non_null(strstr(og_error_last()->message, "index section"));
        core_buf_free(&msg);
    }
    /* A child before its parent (lance would abort). */
    Lance__File__Field *swapped[5] = {x->fp[0], x->fp[2], x->fp[1], x->fp[3], x->fp[4]};
    m2 = x->m;
    m2.fields = swapped;
    assert_og_ok(lance_manifest_encode(&raw, &m2, NULL, 0, NULL, 0));
    expect_corrupt(raw.data, raw.len);
    assert_non_null(strstr(og_error_last()->message, "parent 1"));

    /* Random byte flips never crash; the result is either a manifest or CORRUPT. */
    srand(7);
    for (int r = 0; r < 3000; r++) {
        memcpy(c, b.data, b.len);
        int flips = 1 + rand() % 4;
        for (int k = 0; k < flips; k++)
            c[(size_t)rand() % b.len] ^= (unsigned char)(1 + rand() % 255);
        lance_manifest *m = NULL;
        int rc = lance_manifest_decode(&m, c, b.len, "flip");
        assert_true(rc == 0 || rc == OG_E_CORRUPT);
        assert_true((rc == 0) == (m != NULL));
        lance_manifest_free(m);
    }
    free(c);
    core_buf_free(&raw);
    core_buf_free(&b);
    free(x);
}

static void test_manifest_alloc_failures(void **state)
{
    (void)state;
    full *x = malloc(sizeof *x);
    build_full(x);
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(lance_manifest_encode(&b, &x->m, TXN_BYTES, sizeof TXN_BYTES, INDEX_BYTES,
                                       sizeof INDEX_BYTES));
    int nomem = 0;
    for (uint64_t k = 1;; k++) {
        lance_manifest *m = NULL;
        core_alloc_fail_at(k, 0);
        int rc = lance_manifest_decode(&m, b.data, b.len, "alloc");
        uint64_t injected = core_alloc_injected();
        core_alloc_fail_at(0, 0);
        if (injected == 0) {
            assert_og_ok(rc);
            lance_manifest_free(m);
            break;
        }
        assert_og_error(rc, OG_E_NOMEM);
        assert_null(m);
        nomem++;
        assert_true(k < 10000);
    }
    /* The manifest, its arena's first chunk, the inline transaction and the index section at
     * least (the message itself is carved out of the arena). */
    print_message("decode: %d allocation points\n", nomem);
    assert_true(nomem >= 4);
    core_buf_free(&b);
    free(x);
}

/* A manifest built on a decoded base is encoded with base's unchanged fragments copied from its
 * bytes: the result differs in field order (fragments last) but decodes to exactly the message a
 * full encode gives, with a fragment kept, one replaced by a changed copy, one dropped and one
 * added; and lancedb reads such manifests (every commit through lance_staged_commit uses it, so
 * the interop suites cover that). */
/* a and b are the same message (and, with sections, carry the same inline transaction and
 * index bytes), compared through a canonical re-encode. */
static void assert_same_message(const lance_manifest *a, const lance_manifest *b, int sections)
{
    core_buf ea = CORE_BUF_INIT, eb = CORE_BUF_INIT;
    assert_og_ok(lance_manifest_encode(&ea, a->pb, sections ? a->txn : NULL,
                                       sections ? a->txn_len : 0, sections ? a->index : NULL,
                                       sections ? a->index_len : 0));
    assert_og_ok(lance_manifest_encode(&eb, b->pb, sections ? b->txn : NULL,
                                       sections ? b->txn_len : 0, sections ? b->index : NULL,
                                       sections ? b->index_len : 0));
    assert_int_equal(ea.len, eb.len);
    assert_memory_equal(ea.data, eb.data, ea.len);
    core_buf_free(&ea);
    core_buf_free(&eb);
}

static void test_manifest_encode_on_base(void **state)
{
    (void)state;
    full *x = malloc(sizeof *x);
    build_full(x);
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(lance_manifest_encode(&b, &x->m, TXN_BYTES, sizeof TXN_BYTES, NULL, 0));
    lance_manifest *base = NULL;
    assert_og_ok(lance_manifest_decode(&base, b.data, b.len, "base"));
    assert_non_null(base->frag_off);
    assert_int_equal(base->pb->n_fragments, 2);

    for (int variant = 0; variant < 3; variant++) {
        lance_manifest_next next;
        lance_manifest_next_init(&next, base->pb, 8);
        Lance__Table__DataFragment changed = *base->pb->fragments[1],
                                   added = *base->pb->fragments[0];
        changed.physical_rows += 5;
        added.id = 9;
        Lance__Table__DataFragment *frags[3];
        size_t n = 0;
        if (variant == 0) { /* append: both kept, one added */
            frags[n++] = base->pb->fragments[0];
            frags[n++] = base->pb->fragments[1];
            frags[n++] = &added;
        } else if (variant == 1) { /* delete: first kept, second replaced */
            frags[n++] = base->pb->fragments[0];
            frags[n++] = &changed;
        } else { /* the first dropped, the second kept, out of the base's order after a new one */
            frags[n++] = &added;
            frags[n++] = base->pb->fragments[1];
        }
        next.pb.fragments = frags;
        next.pb.n_fragments = n;
        core_buf full_enc = CORE_BUF_INIT, spliced = CORE_BUF_INIT;
        assert_og_ok(lance_manifest_encode(&full_enc, &next.pb, TXN_BYTES, sizeof TXN_BYTES,
                                           INDEX_BYTES, sizeof INDEX_BYTES));
        assert_og_ok(lance_manifest_encode_on(&spliced, &next.pb, base, TXN_BYTES, sizeof TXN_BYTES,
                                              INDEX_BYTES, sizeof INDEX_BYTES));
        assert_int_equal(spliced.len, full_enc.len);
        assert_memory_not_equal(spliced.data, full_enc.data, full_enc.len); /* spliced */
        lance_manifest *a = NULL, *c = NULL;
        assert_og_ok(lance_manifest_decode(&a, full_enc.data, full_enc.len, "full"));
        assert_og_ok(lance_manifest_decode(&c, spliced.data, spliced.len, "spliced"));
        assert_same_message(a, c, 1);
        assert_int_equal(c->pb->n_fragments, n);
        assert_int_equal(c->pb->version, 8);
        /* Decoded on the base, from either encoding: the same message, with the fragments
         * kept unchanged shared with the base, which its owner may free first. */
        static const size_t kept[3] = {2, 1, 1};
        const core_buf *encs[2] = {&spliced, &full_enc};
        for (int e = 0; e < 2; e++) {
            lance_manifest *base2 = NULL, *d = NULL;
            assert_og_ok(lance_manifest_decode(&base2, b.data, b.len, "base2"));
            assert_og_ok(lance_manifest_decode_on(&d, encs[e]->data, encs[e]->len, "on", base2));
            assert_int_equal(d->n_borrowed, kept[variant]);
            assert_ptr_equal(d->parent, base2);
            assert_int_equal(d->depth, 1);
            lance_manifest_free(base2); /* d still holds it */
            assert_same_message(d, a, 1);
            assert_int_equal(d->file_size, encs[e]->len);
            /* Its own layout is recorded: the next version can be spliced from it. */
            assert_non_null(d->frag_off);
            core_buf again = CORE_BUF_INIT;
            assert_og_ok(lance_manifest_encode_on(&again, d->pb, d, NULL, 0, NULL, 0));
            lance_manifest *g = NULL;
            assert_og_ok(lance_manifest_decode(&g, again.data, again.len, "again"));
            assert_same_message(g, d, 0);
            core_buf_free(&again);
            lance_manifest_free(g);
            lance_manifest_free(d);
        }
        lance_manifest_free(a);
        lance_manifest_free(c);
        core_buf_free(&full_enc);
        core_buf_free(&spliced);
    }
    /* Without a recorded layout it is the plain encoding. */
    core_buf p1 = CORE_BUF_INIT, p2 = CORE_BUF_INIT;
    assert_og_ok(lance_manifest_encode_on(&p1, &x->m, NULL, NULL, 0, NULL, 0));
    assert_og_ok(lance_manifest_encode(&p2, &x->m, NULL, 0, NULL, 0));
    assert_int_equal(p1.len, p2.len);
    assert_memory_equal(p1.data, p2.data, p1.len);
    core_buf_free(&p1);
    core_buf_free(&p2);
    lance_manifest_free(base);
    core_buf_free(&b);
    free(x);
}

/* A chain of manifests each decoded on the previous one shares fragments until the chain is
 * LANCE_MANIFEST_SHARE_DEPTH deep; the next decode is a full one, and a chain never holds more
 * than that many manifests. Corrupt bytes fail the same way as with the full decoder. */
static void test_manifest_decode_on_chain(void **state)
{
    (void)state;
    full *x = malloc(sizeof *x);
    build_full(x);
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(lance_manifest_encode(&b, &x->m, TXN_BYTES, sizeof TXN_BYTES, NULL, 0));
    lance_manifest *cur = NULL;
    assert_og_ok(lance_manifest_decode(&cur, b.data, b.len, "v0"));
    unsigned resets = 0;
    for (int v = 1; v <= 2 * LANCE_MANIFEST_SHARE_DEPTH + 2; v++) {
        lance_manifest_next next;
        lance_manifest_next_init(&next, cur->pb, (uint64_t)v + 10);
        core_buf e = CORE_BUF_INIT;
        assert_og_ok(
            lance_manifest_encode_on(&e, &next.pb, cur, TXN_BYTES, sizeof TXN_BYTES, NULL, 0));
        lance_manifest *nm = NULL;
        assert_og_ok(lance_manifest_decode_on(&nm, e.data, e.len, "vn", cur));
        assert_true(nm->depth <= LANCE_MANIFEST_SHARE_DEPTH);
        if (nm->depth == 0) {
            assert_int_equal(cur->depth, LANCE_MANIFEST_SHARE_DEPTH);
            assert_int_equal(nm->n_borrowed, 0);
            assert_null(nm->parent);
            resets++;
        } else {
            assert_int_equal(nm->depth, cur->depth + 1);
            assert_int_equal(nm->n_borrowed, cur->pb->n_fragments);
        }
        assert_int_equal(nm->pb->version, (uint64_t)v + 10);
        lance_manifest_free(cur);
        cur = nm;
        core_buf_free(&e);
    }
    assert_int_equal(resets, 2);
    /* Damaged bytes: the same typed error as a full decode, and the base is untouched. */
    core_buf e = CORE_BUF_INIT;
    lance_manifest_next next;
    lance_manifest_next_init(&next, cur->pb, 99);
    assert_og_ok(lance_manifest_encode_on(&e, &next.pb, cur, NULL, 0, NULL, 0));
    lance_manifest *bad = NULL;
    e.data[e.len - 1] ^= 0xff; /* the magic */
    assert_int_equal(lance_manifest_decode_on(&bad, e.data, e.len, "bad", cur), OG_E_CORRUPT);
    assert_null(bad);
    e.data[e.len - 1] ^= 0xff;
    uint64_t pos = 0;
    for (int k = 0; k < 8; k++)
        pos |= (uint64_t)e.data[e.len - 16 + (size_t)k] << (8 * k);
    e.data[pos + 4] = 0x17; /* the message's first field: wire type 7 does not exist */
    assert_int_equal(lance_manifest_decode_on(&bad, e.data, e.len, "bad", cur), OG_E_CORRUPT);
    assert_null(bad);
    assert_int_equal(atomic_load(&cur->shares), 0);
    core_buf_free(&e);
    lance_manifest_free(cur);
    core_buf_free(&b);
    free(x);
}

/* Decoded on a base of many fragments, a manifest whose fragments come out of the base's
 * order (dropped, changed, added, reversed) finds each unchanged one through the base's
 * fragment index and borrows it; where the base holds an id twice (another writer's
 * manifest), the first fragment of that id is the one compared. Always the same message as a
 * full decode. */
static void test_manifest_decode_on_shuffled(void **state)
{
    (void)state;
    enum { N = 300 };
    full *x = malloc(sizeof *x);
    build_full(x);
    Lance__Table__DataFragment *bf = calloc(N, sizeof *bf), **bfp = calloc(N, sizeof *bfp);
    Lance__Table__DataFragment *nf = calloc(N, sizeof *nf), **nfp = calloc(N, sizeof *nfp);
    assert_true(bf && bfp && nf && nfp);
    for (int i = 0; i < N; i++) {
        bf[i] = x->frag[1];
        bf[i].id = (uint64_t)i * 3 + 1;
        bf[i].physical_rows = 10 + (uint64_t)i;
        bfp[i] = &bf[i];
    }
    bf[N - 1].id = bf[N - 2].id; /* the base holds one id twice */
    x->m.fragments = bfp;
    x->m.n_fragments = N;
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(lance_manifest_encode(&b, &x->m, NULL, 0, NULL, 0));
    for (int variant = 0; variant < 3; variant++) {
        /* variant 0: every other base fragment, reversed, each fifth changed, one new;
         * variants 1 and 2: the first, or the second, fragment of the doubled id alone */
        size_t n = 0, want_borrowed = 0;
        if (variant == 0) {
            for (int i = N - 3; i >= 0; i -= 2) {
                nf[n] = bf[i];
                if (i % 5 == 0)
                    nf[n].physical_rows += 1;
                else
                    want_borrowed++;
                n++;
            }
            nf[n] = bf[0];
            nf[n++].id = 3 * N + 7;
        } else {
            nf[n++] = bf[variant == 1 ? N - 2 : N - 1];
            want_borrowed = variant == 1; /* the id leads to its first fragment only */
        }
        for (size_t k = 0; k < n; k++)
            nfp[k] = &nf[k];
        lance_manifest_next next;
        lance_manifest *base = NULL;
        assert_og_ok(lance_manifest_decode(&base, b.data, b.len, "base"));
        lance_manifest_next_init(&next, base->pb, 2);
        next.pb.fragments = nfp;
        next.pb.n_fragments = n;
        core_buf e = CORE_BUF_INIT;
        assert_og_ok(lance_manifest_encode(&e, &next.pb, NULL, 0, NULL, 0));
        lance_manifest *full_dec = NULL, *on = NULL;
        assert_og_ok(lance_manifest_decode(&full_dec, e.data, e.len, "full"));
        assert_og_ok(lance_manifest_decode_on(&on, e.data, e.len, "on", base));
        assert_int_equal(on->n_borrowed, want_borrowed);
        lance_manifest_free(base); /* on still holds it */
        assert_same_message(on, full_dec, 0);
        lance_manifest_free(on);
        lance_manifest_free(full_dec);
        core_buf_free(&e);
    }
    core_buf_free(&b);
    free(bf);
    free(bfp);
    free(nf);
    free(nfp);
    free(x);
}

/* The records a staged write and a compaction give each file they write (lance/fragment.h):
 * a format 2.0 DataFile with the fields as its columns in order, in a fragment of its own,
 * versions as runs; they survive a manifest round trip, and an allocation failure is an
 * error. */
static void test_fragment_records(void **state)
{
    (void)state;
    core_arena a;
    core_arena_init(&a, 256);
    char name[] = "0101-file.lance";
    const int32_t fields[] = {3, 1, 7};
    Lance__Table__DataFile *df = NULL;
    assert_og_ok(lance_data_file_new(&df, &a, name, fields, 3, 1234, 0));
    name[0] = 'x'; /* the path is a copy */
    assert_string_equal(df->path, "0101-file.lance");
    assert_int_equal(df->n_fields, 3);
    assert_int_equal(df->n_column_indices, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(df->fields[i], fields[i]);
        assert_int_equal(df->column_indices[i], i);
    }
    assert_true(df->has_file_major_version && df->has_file_minor_version);
    assert_int_equal(df->file_major_version, 2);
    assert_int_equal(df->file_minor_version, 0);
    assert_true(df->has_file_size_bytes);
    assert_int_equal(df->file_size_bytes, 1234);
    assert_false(df->has_base_id);
    Lance__Table__DataFragment *f = NULL;
    assert_og_ok(lance_fragment_new(&f, &a, 42, df, 99));
    assert_int_equal(f->id, 42);
    assert_int_equal(f->physical_rows, 99);
    assert_int_equal(f->n_files, 1);
    assert_ptr_equal(f->files[0], df);
    assert_null(f->deletion_file);
    assert_int_equal(f->row_id_sequence_case,
                     LANCE__TABLE__DATA_FRAGMENT__ROW_ID_SEQUENCE__NOT_SET);
    const uint64_t v[5] = {5, 5, 5, 7, 7};
    f->created_at_version_sequence_case =
        LANCE__TABLE__DATA_FRAGMENT__CREATED_AT_VERSION_SEQUENCE_INLINE_CREATED_AT_VERSIONS;
    assert_og_ok(lance_fragment_versions(&a, v, 5, &f->inline_created_at_versions));
    lance_version_seq seq;
    assert_og_ok(lance_version_seq_decode(&seq, f->inline_created_at_versions.data,
                                          f->inline_created_at_versions.len, "v"));
    uint64_t *got = NULL;
    assert_og_ok(lance_version_seq_expand(&seq, 5, &got));
    assert_memory_equal(got, v, sizeof v);
    core_free(got);
    lance_version_seq_free(&seq);
    /* through a manifest and back */
    full *x = malloc(sizeof *x);
    build_full(x);
    Lance__Table__DataFragment *one[1] = {f};
    x->m.fragments = one;
    x->m.n_fragments = 1;
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(lance_manifest_encode(&b, &x->m, NULL, 0, NULL, 0));
    lance_manifest *m = NULL;
    assert_og_ok(lance_manifest_decode(&m, b.data, b.len, "m"));
    const Lance__Table__DataFragment *g = m->pb->fragments[0];
    assert_int_equal(g->id, 42);
    assert_int_equal(g->physical_rows, 99);
    assert_string_equal(g->files[0]->path, "0101-file.lance");
    assert_int_equal(g->files[0]->file_size_bytes, 1234);
    assert_int_equal(g->files[0]->fields[2], 7);
    assert_int_equal(g->files[0]->column_indices[2], 2);
    assert_int_equal(g->inline_created_at_versions.len, f->inline_created_at_versions.len);
    lance_manifest_free(m);
    core_buf_free(&b);
    free(x);
    core_arena_free(&a);
    /* each allocation can fail, and says so */
    for (uint64_t nth = 1; nth <= 3; nth++) {
        core_arena_init(&a, 64);
        core_alloc_fail_at(nth, 1);
        int rd = lance_data_file_new(&df, &a, "f.lance", fields, 3, 1, 0);
        int rf = lance_fragment_new(&f, &a, 1, df, 1);
        core_alloc_fail_at(0, 0);
        assert_og_error(rd ? rd : rf, OG_E_NOMEM);
        core_arena_free(&a);
    }
}

/* A manifest file around message bytes msg (no sections), as the encoder frames it. */
static size_t frame_manifest(unsigned char *out, const unsigned char *msg, size_t n)
{
    size_t p = 0;
    for (int k = 0; k < 4; k++)
        out[p++] = (unsigned char)(n >> (8 * k));
    memcpy(out + p, msg, n);
    p += n;
    memset(out + p, 0, 8); /* the message is at 0 */
    p += 8;
    out[p++] = 0;
    out[p++] = 0;
    out[p++] = 2;
    out[p++] = 0;
    memcpy(out + p, "LANC", 4);
    return p + 4;
}

/* Tags and lengths written with non-minimal varints: protobuf-c reads at most 5 bytes for
 * either, so a fragment field spelled in 6 is corrupt for the full decoder and must be for the
 * shared one too; spelled in 2 it is accepted by both, with the same message. */
static void test_manifest_decode_on_varints(void **state)
{
    (void)state;
    full *x = malloc(sizeof *x);
    build_full(x);
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(lance_manifest_encode(&b, &x->m, NULL, 0, NULL, 0));
    lance_manifest *base = NULL;
    assert_og_ok(lance_manifest_decode(&base, b.data, b.len, "base"));
    assert_non_null(base->frag_off);
    const unsigned char *msg = base->msg;
    size_t n = base->msg_len, at = base->frag_off[0]; /* the first fragment's tag (0x12) */
    assert_int_equal(msg[at], 0x12);
    assert_true(msg[at + 1] < 0x80); /* a one-byte length */
    static const struct {
        unsigned char bytes[8];
        size_t len;
        int replaces_tag; /* else it replaces the length */
        int ok;
    } cases[] = {
        {{0x92, 0x00}, 2, 1, 1},
        {{0x92, 0x80, 0x80, 0x80, 0x00}, 5, 1, 1},
        {{0x92, 0x80, 0x80, 0x80, 0x80, 0x00}, 6, 1, 0},
        {{0x80, 0x80, 0x80, 0x80, 0x00}, 5, 0, 1},
        {{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 6, 0, 0},
    };
    unsigned char *m2 = malloc(n + 16), *file = malloc(n + 64);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t k = 0, skip = cases[c].replaces_tag ? 1 : 2;
        memcpy(m2, msg, at + (cases[c].replaces_tag ? 0 : 1));
        k = at + (cases[c].replaces_tag ? 0 : 1);
        memcpy(m2 + k, cases[c].bytes, cases[c].len);
        if (!cases[c].replaces_tag) m2[k] |= msg[at + 1]; /* the length's low 7 bits */
        k += cases[c].len;
        memcpy(m2 + k, msg + at + skip, n - at - skip);
        k += n - at - skip;
        size_t fl = frame_manifest(file, m2, k);
        lance_manifest *a = NULL, *d = NULL;
        int ra = lance_manifest_decode(&a, file, fl, "full");
        int rd = lance_manifest_decode_on(&d, file, fl, "on", base);
        assert_int_equal(ra, cases[c].ok ? 0 : OG_E_CORRUPT);
        assert_int_equal(rd, ra);
        if (cases[c].ok) {
            assert_same_message(a, d, 0);
        } else {
            assert_null(d);
        }
        lance_manifest_free(a);
        lance_manifest_free(d);
    }
    free(m2);
    free(file);
    lance_manifest_free(base);
    core_buf_free(&b);
    free(x);
}

/* ---- version names -------------------------------------------------------------------------- */

static void test_version_names(void **state)
{
    (void)state;
    char n[LANCE_VERSION_NAME_CAP];
    assert_og_ok(lance_version_file_name(n, sizeof n, LANCE_NAMING_V2, 1));
    assert_string_equal(n, "18446744073709551614.manifest");
    assert_og_ok(lance_version_file_name(n, sizeof n, LANCE_NAMING_V2, 12345));
    assert_string_equal(n, "18446744073709539270.manifest");
    assert_og_ok(lance_version_file_name(n, sizeof n, LANCE_NAMING_V2, UINT64_MAX - 5));
    assert_string_equal(n, "00000000000000000005.manifest"); /* padded to 20 digits */
    assert_og_ok(lance_version_file_name(n, sizeof n, LANCE_NAMING_V1, 1));
    assert_string_equal(n, "1.manifest");
    assert_og_ok(lance_version_file_name(n, sizeof n, LANCE_NAMING_V1, 12345));
    assert_string_equal(n, "12345.manifest");
    assert_og_error(lance_version_file_name(n, sizeof n, LANCE_NAMING_V1, 0), OG_E_BAD_REQUEST);

    uint64_t v;
    lance_naming nm;
    assert_int_equal(lance_version_parse_name("18446744073709551614.manifest", &v, &nm), 1);
    assert_int_equal(v, 1);
    assert_int_equal(nm, LANCE_NAMING_V2);
    assert_int_equal(lance_version_parse_name("t/_versions/00000000000000000005.manifest", &v, &nm),
                     1);
    assert_true(v == UINT64_MAX - 5);
    assert_int_equal(nm, LANCE_NAMING_V2);
    assert_int_equal(lance_version_parse_name("12345.manifest", &v, &nm), 1);
    assert_int_equal(v, 12345);
    assert_int_equal(nm, LANCE_NAMING_V1);
    /* Round trips both ways. */
    for (uint64_t t = 1; t < 5000; t += 37) {
        for (int s = 1; s <= 2; s++) {
            assert_og_ok(lance_version_file_name(n, sizeof n, (lance_naming)s, t));
            assert_int_equal(lance_version_parse_name(n, &v, &nm), 1);
            assert_int_equal(v, t);
            assert_int_equal(nm, s);
        }
    }
    const char *skipped[] = {"d18446744073709551614.manifest", /* detached */
                             "d3.manifest",
                             "3.manifest-0b6a9a3c-1a8e-4e5f-9a49-6f1f7d2a7b10", /* staging */
                             "18446744073709551613.manifest-0b6a9a3c-1a8e-4e5f-9a49-6f1f7d2a7b10",
                             "latest_version_hint.json",
                             "0.manifest",
                             "18446744073709551615.manifest",  /* would be version 0 */
                             "99999999999999999999.manifest",  /* overflows u64 */
                             "123456789012345678901.manifest", /* 21 digits */
                             ".manifest",
                             "1a.manifest",
                             "-1.manifest",
                             "1.manifest.tmp",
                             "1.MANIFEST"};
    for (size_t i = 0; i < sizeof skipped / sizeof *skipped; i++)
        if (lance_version_parse_name(skipped[i], &v, &nm) != 0)
            fail_msg("'%s' should not parse as a version", skipped[i]);
}

/* ---- latest discovery -------------------------------------------------------------------------
 */

static void latest_case(lance_naming naming)
{
    char dir[256];
    store *s = open_store(dir, sizeof dir, "lance-latest");
    const char *root = "db/t.lance";
    uint64_t v;
    lance_naming got;
    assert_og_error(lance_version_latest(s, root, &v, &got), OG_E_NOT_FOUND);

    lance_manifest *prev = NULL;
    for (uint64_t k = 1; k <= 3; k++) {
        assert_og_ok(commit_version(s, root, naming, prev ? prev->pb : NULL, k));
        lance_manifest_free(prev);
        prev = NULL;
        assert_og_ok(lance_version_load_latest(s, root, LANCE_ACCESS_WRITE, &prev, &got));
        assert_int_equal(prev->pb->version, k);
        assert_int_equal(got, naming);
    }
    lance_manifest_free(prev);
    char key[STORE_KEY_MAX];
    core_buf b = CORE_BUF_INIT;
    snprintf(key, sizeof key, "%s/_versions/latest_version_hint.json", root);
    assert_og_ok(store_get(s, key, 0, STORE_ALL, &b));
    assert_string_equal(core_buf_cstr(&b), "{\"version\":3}");

    /* Staging and detached files, a stale hint, a too-high hint, no hint. */
    char stage[STORE_KEY_MAX], name[LANCE_VERSION_NAME_CAP];
    assert_og_ok(lance_version_file_name(name, sizeof name, naming, 4));
    snprintf(stage, sizeof stage, "%s/_versions/%s-0b6a9a3c-1a8e-4e5f-9a49-6f1f7d2a7b10", root,
             name);
    assert_og_ok(store_put(s, stage, "junk", 4, 0));
    snprintf(stage, sizeof stage, "%s/_versions/d%s", root, name);
    assert_og_ok(store_put(s, stage, "junk", 4, 0));
    const char *hints[] = {"{\"version\":1}", "{\"version\":9}", "garbage", NULL};
    for (int h = 0; h < 4; h++) {
        if (hints[h])
            assert_og_ok(store_put(s, key, hints[h], strlen(hints[h]), 0));
        else
            assert_og_ok(store_delete(s, key, 0));
        assert_og_ok(lance_version_latest(s, root, &v, &got));
        assert_int_equal(v, 3);
        assert_int_equal(got, naming);
    }
    lance_version_list l;
    assert_og_ok(lance_versions_list(s, root, &l));
    assert_int_equal(l.n, 3);
    assert_int_equal(l.v[0], 1);
    assert_int_equal(l.v[2], 3);
    lance_version_list_free(&l);

    /* Without a hint discovery lists once and reads no manifest; with a fresh hint it reads
     * the hint and heads the hinted version, the next one, the one after it (a version lost
     * below newer ones) and the hinted one again, and lists nothing; with a stale one it
     * gallops (1, 2, 4 versions on) and bisects. */
    store *f = NULL;
    assert_og_ok(store_fault_open(&f, s, 0));
    store_counts c0, c1, d;
    uint64_t listings = lance_version_listings();
    store_counts_get(f, &c0);
    assert_og_ok(lance_version_latest(f, root, &v, &got));
    store_counts_get(f, &c1);
    store_counts_diff(&c1, &c0, &d);
    assert_int_equal(v, 3);
    assert_int_equal(d.ops[STORE_OP_LIST], 1);
    assert_int_equal(d.ops[STORE_OP_GET], 1); /* the hint, found missing */
    assert_int_equal(d.total_ops, 2);
    assert_int_equal(lance_version_listings(), listings + 1);
    assert_og_ok(lance_hint_write(s, root, 3));
    store_counts_get(f, &c0);
    assert_og_ok(lance_version_latest(f, root, &v, &got));
    store_counts_get(f, &c1);
    store_counts_diff(&c1, &c0, &d);
    assert_int_equal(v, 3);
    assert_int_equal(got, naming);
    assert_int_equal(d.ops[STORE_OP_LIST], 0);
    assert_int_equal(d.ops[STORE_OP_GET], 1);
    /* a V1 table first misses the V2 name of the hinted version */
    unsigned v1_extra = naming == LANCE_NAMING_V1 ? 1 : 0;
    assert_int_equal(d.ops[STORE_OP_HEAD], 4 + v1_extra);
    assert_int_equal(lance_version_listings(), listings + 1);
    assert_og_ok(lance_hint_write(s, root, 1)); /* 1, 2 exist; 4 not; 3 does */
    store_counts_get(f, &c0);
    assert_og_ok(lance_version_latest(f, root, &v, &got));
    store_counts_get(f, &c1);
    store_counts_diff(&c1, &c0, &d);
    assert_int_equal(v, 3);
    assert_int_equal(d.ops[STORE_OP_LIST], 0);
    assert_int_equal(d.ops[STORE_OP_HEAD], 6 + v1_extra);
    /* From a version the caller knows exists: heads only. */
    store_counts_get(f, &c0);
    assert_og_ok(lance_version_latest_from(f, root, naming, 2, &v));
    store_counts_get(f, &c1);
    store_counts_diff(&c1, &c0, &d);
    assert_int_equal(v, 3);
    assert_int_equal(d.total_ops, d.ops[STORE_OP_HEAD]);
    assert_og_ok(lance_version_latest_from(f, root, naming, 3, &v));
    assert_int_equal(v, 3);
    assert_int_equal(lance_version_listings(), listings + 1);
    store_close(f);

    /* Cleanup deleted the version a caller knew (and the ones after it, oldest first): the
     * probe must not take the gap for the end. It finds 1 missing and starts from the hint,
     * which cleanup pointed at the latest before deleting. (Restored below.) */
    {
        char vname[LANCE_VERSION_NAME_CAP], vkey[STORE_KEY_MAX];
        core_buf saved[2] = {CORE_BUF_INIT, CORE_BUF_INIT};
        char keys[2][STORE_KEY_MAX];
        for (uint64_t k = 1; k <= 2; k++) {
            assert_og_ok(lance_version_file_name(vname, sizeof vname, naming, k));
            assert_og_ok(lance_key(vkey, root, LANCE_VERSIONS_DIR, vname));
            snprintf(keys[k - 1], sizeof keys[k - 1], "%s", vkey);
            assert_og_ok(store_get(s, vkey, 0, STORE_ALL, &saved[k - 1]));
        }
        assert_og_ok(lance_hint_write(s, root, 3));
        assert_og_ok(store_delete(s, keys[0], 0));
        assert_og_ok(store_delete(s, keys[1], 0));
        assert_og_ok(lance_version_latest_from(s, root, naming, 1, &v));
        assert_int_equal(v, 3);
        for (int k = 0; k < 2; k++) {
            assert_og_ok(store_put(s, keys[k], saved[k].data, saved[k].len, 0));
            core_buf_free(&saved[k]);
        }
    }

    /* Loading an older version (time travel) and a missing one. */
    lance_manifest *m = NULL;
    assert_og_ok(lance_version_load(s, root, 2, LANCE_NAMING_UNKNOWN, LANCE_ACCESS_READ, &m));
    assert_int_equal(m->pb->version, 2);
    lance_manifest_free(m);
    assert_og_error(lance_version_load(s, root, 7, naming, LANCE_ACCESS_READ, &m), OG_E_NOT_FOUND);

    /* A manifest whose content claims another version than its name. */
    assert_og_ok(lance_version_file_name(name, sizeof name, naming, 2));
    char k2[STORE_KEY_MAX], k5[STORE_KEY_MAX];
    snprintf(k2, sizeof k2, "%s/_versions/%s", root, name);
    assert_og_ok(store_get(s, k2, 0, STORE_ALL, &b));
    assert_og_ok(lance_version_file_name(name, sizeof name, naming, 5));
    snprintf(k5, sizeof k5, "%s/_versions/%s", root, name);
    assert_og_ok(store_put(s, k5, b.data, b.len, 0));
    assert_og_error(lance_version_load(s, root, 5, naming, LANCE_ACCESS_READ, &m), OG_E_CORRUPT);

    /* The other scheme next to this one is refused. */
    assert_og_ok(lance_version_file_name(
        name, sizeof name, naming == LANCE_NAMING_V1 ? LANCE_NAMING_V2 : LANCE_NAMING_V1, 6));
    snprintf(k5, sizeof k5, "%s/_versions/%s", root, name);
    assert_og_ok(store_put(s, k5, b.data, b.len, 0));
    /* (the hint path never lists, so it is the listing that sees the mix) */
    assert_og_error(lance_versions_list(s, root, &l), OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, "mixes V1 and V2"));
    assert_og_ok(store_delete(s, key, 0));
    assert_og_error(lance_version_latest(s, root, &v, &got), OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, "mixes V1 and V2"));

    core_buf_free(&b);
    test_sandbox_store_done(dir, s);
}

static void test_latest_v2(void **state)
{
    (void)state;
    latest_case(LANCE_NAMING_V2);
}

static void test_latest_v1(void **state)
{
    (void)state;
    latest_case(LANCE_NAMING_V1);
}

/* ---- commit -------------------------------------------------------------------------------- */

static void test_commit_files(void **state)
{
    (void)state;
    char dir[256];
    store *s = open_store(dir, sizeof dir, "lance-commit");
    lance_manifest_next next;
    lance_manifest_next_init(&next, NULL, 1);
    Lance__Table__Transaction t = LANCE__TABLE__TRANSACTION__INIT;
    Lance__Table__Transaction__Overwrite ow = LANCE__TABLE__TRANSACTION__OVERWRITE__INIT;
    t.operation_case = LANCE__TABLE__TRANSACTION__OPERATION_OVERWRITE;
    t.overwrite = &ow;
    lance_commit_info info;
    /* Version 1 as lance writes it: a .txn file named in the manifest, and the inline copy. */
    assert_og_ok(lance_commit(s, "t.lance", LANCE_NAMING_V2, &next.pb, &t, NULL, 0,
                              LANCE_COMMIT_TXN_FILE, &info));
    assert_int_equal(info.version, 1);
    assert_true(info.hint_written);
    assert_string_equal(info.manifest_key, "t.lance/_versions/18446744073709551614.manifest");
    /* "0-<uuid v4>.txn" */
    assert_int_equal(strlen(info.txn_file), 2 + 36 + 4);
    assert_memory_equal(info.txn_file, "0-", 2);
    assert_string_equal(info.txn_file + 38, ".txn");
    assert_int_equal(info.txn_file[2 + 8], '-');
    assert_int_equal(info.txn_file[2 + 14], '4');
    char key[STORE_KEY_MAX];
    snprintf(key, sizeof key, "t.lance/_transactions/%s", info.txn_file);
    store_meta meta;
    assert_og_ok(store_head(s, key, &meta));

    lance_manifest *m = NULL;
    assert_og_ok(lance_version_load_latest(s, "t.lance", LANCE_ACCESS_WRITE, &m, NULL));
    assert_string_equal(m->pb->transaction_file, info.txn_file);
    assert_true(m->pb->has_transaction_section);
    Lance__Table__Transaction *tx = NULL;
    assert_og_ok(lance_txn_load(s, "t.lance", m, &tx));
    assert_int_equal(tx->read_version, 0);
    assert_string_equal(tx->uuid, info.uuid);
    assert_int_equal(tx->operation_case, LANCE__TABLE__TRANSACTION__OPERATION_OVERWRITE);
    lance_pb_free(tx);
    /* Without the inline copy (as older lance wrote), the .txn file is read. */
    lance_manifest bare = *m;
    bare.txn = NULL;
    bare.txn_len = 0;
    assert_og_ok(lance_txn_load(s, "t.lance", &bare, &tx));
    assert_string_equal(tx->uuid, info.uuid);
    lance_pb_free(tx);

    /* Version 2 by default: the transaction only inline, no .txn file. */
    lance_manifest_next n2;
    lance_manifest_next_init(&n2, m->pb, 2);
    Lance__Table__Transaction t2 = LANCE__TABLE__TRANSACTION__INIT;
    Lance__Table__Transaction__Delete del = LANCE__TABLE__TRANSACTION__DELETE__INIT;
    uint64_t gone[] = {3, 4};
    del.n_deleted_fragment_ids = 2;
    del.deleted_fragment_ids = gone;
    del.predicate = "id = 1";
    t2.has_read_version = 1;
    t2.read_version = 1;
    t2.operation_case = LANCE__TABLE__TRANSACTION__OPERATION_DELETE;
    t2.delete_ = &del;
    assert_og_ok(lance_commit(s, "t.lance", LANCE_NAMING_V2, &n2.pb, &t2, NULL, 0, 0, &info));
    assert_string_equal(info.txn_file, "");
    lance_manifest *m2 = NULL;
    assert_og_ok(lance_version_load_latest(s, "t.lance", LANCE_ACCESS_READ, &m2, NULL));
    assert_int_equal(m2->pb->version, 2);
    assert_true(m2->pb->has_transaction_section);
    assert_int_equal(m2->pb->transaction_section, 0);
    assert_true(!m2->pb->transaction_file || !m2->pb->transaction_file[0]);
    assert_og_ok(lance_txn_load(s, "t.lance", m2, &tx));
    assert_int_equal(tx->read_version, 1);
    assert_string_equal(tx->uuid, info.uuid);
    assert_int_equal(tx->delete_->n_deleted_fragment_ids, 2);
    assert_int_equal(tx->delete_->deleted_fragment_ids[1], 4);
    assert_string_equal(tx->delete_->predicate, "id = 1");
    lance_pb_free(tx);
    store_list lr = {0};
    assert_og_ok(store_list_prefix(s, "t.lance/_transactions/", 0, &lr));
    assert_int_equal(lr.count, 1); /* version 1's file only */
    store_list_free(&lr);

    /* Committing version 2 again loses: a typed conflict naming the version. */
    assert_og_error(lance_commit(s, "t.lance", LANCE_NAMING_V2, &n2.pb, &t2, NULL, 0, 0, &info),
                    OG_E_CONFLICT);
    assert_non_null(strstr(og_error_last()->message, "version 2"));

    /* A failed hint write does not fail a published commit. */
    store *f = NULL;
    assert_og_ok(store_fault_open(&f, s, 0));
    lance_manifest_next n3;
    lance_manifest_next_init(&n3, m2->pb, 3);
    t2.read_version = 2;
    store_fault_fail_nth(f, 3, STORE_OP_BIT(STORE_OP_PUT) | STORE_OP_BIT(STORE_OP_PUT_IF_ABSENT),
                         STORE_FAULT_EIO);
    assert_og_ok(lance_commit(f, "t.lance", LANCE_NAMING_V2, &n3.pb, &t2, NULL, 0,
                              LANCE_COMMIT_TXN_FILE, &info));
    assert_false(info.hint_written);
    /* A failed transaction write publishes nothing. */
    lance_manifest_next n4;
    lance_manifest_next_init(&n4, m2->pb, 4);
    store_fault_fail_nth(f, 1, STORE_OP_BIT(STORE_OP_PUT), STORE_FAULT_EIO);
    assert_og_error(lance_commit(f, "t.lance", LANCE_NAMING_V2, &n4.pb, &t2, NULL, 0,
                                 LANCE_COMMIT_TXN_FILE, &info),
                    OG_E_STORAGE);
    uint64_t v;
    assert_og_ok(lance_version_latest(s, "t.lance", &v, NULL));
    assert_int_equal(v, 3);
    store_close(f);

    lance_manifest_free(m2);
    lance_manifest_free(m);
    test_sandbox_store_done(dir, s);
}

#define RACE_ROUNDS 25
#define RACERS 3

typedef struct racer {
    store *s;
    pthread_barrier_t *bar;
    int rc[RACE_ROUNDS];
    char msg[RACE_ROUNDS][128];
} racer;

static void *race_main(void *p)
{
    racer *r = p;
    for (uint64_t k = 0; k < RACE_ROUNDS; k++) {
        pthread_barrier_wait(r->bar);
        uint64_t v = k + 2; /* every racer tries to create the same version */
        lance_manifest *prev = NULL;
        int rc =
            lance_version_load(r->s, "t.lance", v - 1, LANCE_NAMING_V2, LANCE_ACCESS_WRITE, &prev);
        if (rc == 0) rc = commit_version(r->s, "t.lance", LANCE_NAMING_V2, prev->pb, v);
        r->rc[k] = rc;
        snprintf(r->msg[k], sizeof r->msg[k], "%s", og_error_last()->message);
        lance_manifest_free(prev);
        pthread_barrier_wait(r->bar);
    }
    return NULL;
}

static void test_commit_race(void **state)
{
    (void)state;
    char dir[256];
    store *s = open_store(dir, sizeof dir, "lance-race");
    assert_og_ok(commit_version(s, "t.lance", LANCE_NAMING_V2, NULL, 1));
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, RACERS);
    racer *r = calloc(RACERS, sizeof *r);
    pthread_t th[RACERS];
    for (int i = 0; i < RACERS; i++) {
        r[i].s = s;
        r[i].bar = &bar;
        pthread_create(&th[i], NULL, race_main, &r[i]);
    }
    for (int i = 0; i < RACERS; i++)
        pthread_join(th[i], NULL);
    for (int k = 0; k < RACE_ROUNDS; k++) {
        int wins = 0;
        for (int i = 0; i < RACERS; i++) {
            if (r[i].rc[k] == 0) {
                wins++;
                continue;
            }
            if (r[i].rc[k] != OG_E_CONFLICT)
                fail_msg("round %d racer %d: %d %s", k, i, r[i].rc[k], r[i].msg[k]);
            char want[32];
            snprintf(want, sizeof want, "version %d", k + 2);
            assert_non_null(strstr(r[i].msg[k], want));
        }
        assert_int_equal(wins, 1);
    }
    uint64_t v;
    assert_og_ok(lance_version_latest(s, "t.lance", &v, NULL));
    assert_int_equal(v, RACE_ROUNDS + 1);
    /* A loser leaves nothing behind: its transaction was only ever inside its manifest. */
    store_list l = {0};
    assert_og_ok(store_list_prefix(s, "t.lance/_transactions/", 0, &l));
    assert_int_equal(l.count, 0);
    store_list_free(&l);
    pthread_barrier_destroy(&bar);
    free(r);
    test_sandbox_store_done(dir, s);
}

/* Crash after every durable store operation of a commit, in both crash modes: the table
 * shows version 1 or version 2, never a damaged state; a visible version 2 has its
 * transaction file; a commit that returned is durable; the next commit succeeds. */
static int crash_setup(store *s, void *ctx)
{
    (void)ctx;
    return commit_version(s, "t.lance", LANCE_NAMING_V2, NULL, 1);
}

static int crash_op(store *s, void *ctx)
{
    (void)ctx;
    lance_manifest *m = NULL;
    int rc = lance_version_load_latest(s, "t.lance", LANCE_ACCESS_WRITE, &m, NULL);
    if (rc) return rc;
    rc = commit_version(s, "t.lance", LANCE_NAMING_V2, m->pb, 2);
    lance_manifest_free(m);
    return rc;
}

static int crash_check(store *s, void *ctx, const crashsim_point *pt)
{
    (void)ctx;
    lance_manifest *m = NULL;
    if (lance_version_load_latest(s, "t.lance", LANCE_ACCESS_WRITE, &m, NULL)) return 1;
    uint64_t v = m->pb->version;
    int bad = v != 1 && v != 2;
    if (!pt->crashed && pt->op_rc == 0 && v != 2) bad = 1; /* acknowledged => durable */
    Lance__Table__Transaction *t = NULL;
    if (lance_txn_load(s, "t.lance", m, &t))
        bad = 1;
    else if (t->read_version != v - 1)
        bad = 1;
    lance_pb_free(t);
    if (!bad && commit_version(s, "t.lance", LANCE_NAMING_V2, m->pb, v + 1)) bad = 1;
    lance_manifest_free(m);
    return bad;
}

static void test_commit_crash(void **state)
{
    (void)state;
    crashsim_case c = {"lance commit", NULL, crash_setup, crash_op, crash_check};
    crashsim_report r;
    crashsim_run(&c, &r);
    if (r.violations)
        fail_msg("%llu violations; first: %s", (unsigned long long)r.violations, r.first);
    assert_int_equal(r.n, 2); /* manifest put_if_absent (with the transaction), hint put */
    assert_int_equal(r.runs, 3 * r.n);
}

/* ---- names ----------------------------------------------------------------------------------- */

static void test_data_file_names(void **state)
{
    (void)state;
    static const uint8_t b[16] = {0x0f, 0x34, 0xc0, 0xdb, 0xd7, 0x88, 0x46, 0x40,
                                  0xb5, 0xc3, 0x74, 0x0b, 0x2a, 0x82, 0x45, 0x1a};
    char n[LANCE_DATA_FILE_NAME_LEN + 1];
    lance_data_file_name_from(b, n);
    /* The example name from the format notes. */
    assert_string_equal(n, "000011110011010011000000dbd7884640b5c3740b2a82451a.lance");
    char m[LANCE_DATA_FILE_NAME_LEN + 1];
    assert_og_ok(lance_data_file_name(n));
    assert_og_ok(lance_data_file_name(m));
    assert_int_equal(strlen(n), LANCE_DATA_FILE_NAME_LEN);
    assert_string_not_equal(n, m);
    for (int i = 0; i < 24; i++)
        assert_true(n[i] == '0' || n[i] == '1');
    for (int i = 24; i < 50; i++)
        assert_non_null(strchr("0123456789abcdef", n[i]));
    assert_string_equal(n + 50, ".lance");
    char u[LANCE_UUID_LEN + 1];
    lance_uuid_format(b, u);
    assert_string_equal(u, "0f34c0db-d788-4640-b5c3-740b2a82451a");
    char d[64];
    assert_og_ok(lance_deletion_file_name(d, sizeof d, 3, 12, 987654321, 1));
    assert_string_equal(d, "3-12-987654321.bin");
    assert_og_ok(lance_deletion_file_name(d, sizeof d, 0, 1, 5, 0));
    assert_string_equal(d, "0-1-5.arrow");
    char t[LANCE_TXN_NAME_CAP];
    assert_og_ok(lance_txn_file_name(t, sizeof t, 17, u));
    assert_string_equal(t, "17-0f34c0db-d788-4640-b5c3-740b2a82451a.txn");
}

/* ---- interop with the reference probe ------------------------------------------------------- */

static void test_mini_writer_manifest(void **state)
{
    (void)state;
    const char *pd = probe_dir();
    if (!pd) skip();
    char dir[256], cmd[1024], out[4096];
    test_sandbox_new(dir, sizeof dir, "lance-mini");
    snprintf(cmd, sizeof cmd, "python3 %s/mini_writer.py %s/t.lance create 2>&1", pd, dir);
    run_capture(cmd, out, sizeof out);
    store *s = NULL;
    assert_og_ok(store_local_open(&s, dir));
    lance_manifest *m = NULL;
    lance_naming nm;
    assert_og_ok(lance_version_load_latest(s, "t.lance", LANCE_ACCESS_WRITE, &m, &nm));
    const Lance__Table__Manifest *p = m->pb;
    assert_int_equal(nm, LANCE_NAMING_V2);
    assert_int_equal(p->version, 1);
    assert_string_equal(lance_manifest_data_version(p), "2.0");
    assert_int_equal(p->n_fields, 8);
    const char *names[] = {"id", NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    assert_string_equal(p->fields[0]->name, names[0]);
    assert_string_equal(p->fields[0]->logical_type, "int64");
    for (size_t i = 0; i < p->n_fields; i++) {
        assert_int_equal(p->fields[i]->id, (int)i);
        assert_true(p->fields[i]->parent_id == -1 || p->fields[i]->parent_id < (int)i);
    }
    assert_int_equal(p->n_fragments, 1);
    assert_int_equal(p->fragments[0]->physical_rows, 5);
    assert_int_equal(p->fragments[0]->n_files, 1);
    const Lance__Table__DataFile *df = p->fragments[0]->files[0];
    assert_int_equal(df->file_major_version, 2);
    assert_int_equal(df->file_minor_version, 0);
    assert_int_equal(df->n_fields, 8);
    assert_int_equal(df->n_column_indices, 8);
    assert_int_equal(strlen(df->path), LANCE_DATA_FILE_NAME_LEN);
    assert_true(p->has_max_fragment_id);
    assert_int_equal(p->max_fragment_id, 0);
    assert_string_equal(p->writer_version->library, "cengine");
    Lance__Table__Transaction *tx = NULL;
    assert_og_ok(lance_txn_load(s, "t.lance", m, &tx));
    assert_int_equal(tx->read_version, 0);
    assert_int_equal(tx->operation_case, LANCE__TABLE__TRANSACTION__OPERATION_OVERWRITE);
    assert_int_equal(tx->overwrite->n_schema, 8);
    lance_pb_free(tx);

    /* The probe appends and deletes on top (version 2 append, version 3 two .bin deletions). */
    snprintf(cmd, sizeof cmd, "python3 %s/mini_writer.py %s/t.lance append_delete %s %llu 2>&1", pd,
             dir, df->path, (unsigned long long)df->file_size_bytes);
    run_capture(cmd, out, sizeof out);
    lance_manifest_free(m);
    assert_og_ok(lance_version_load_latest(s, "t.lance", LANCE_ACCESS_WRITE, &m, &nm));
    assert_int_equal(m->pb->version, 3);
    assert_int_equal(m->pb->n_fragments, 2);
    assert_int_equal(m->pb->reader_feature_flags, LANCE_FLAG_DELETION_FILES);
    assert_non_null(m->pb->fragments[1]->deletion_file);

    /* We commit version 4 on top of it; the probe appends version 5 on top of ours. */
    assert_og_ok(commit_version(s, "t.lance", nm, m->pb, 4));
    snprintf(cmd, sizeof cmd, "python3 %s/mini_writer.py %s/t.lance append_txn 2>&1", pd, dir);
    run_capture(cmd, out, sizeof out);
    lance_manifest_free(m);
    assert_og_ok(lance_version_load_latest(s, "t.lance", LANCE_ACCESS_READ, &m, &nm));
    assert_int_equal(m->pb->version, 5);
    assert_int_equal(m->pb->n_fragments, 3);
    assert_int_equal(m->pb->max_fragment_id, 2);
    lance_manifest *m4 = NULL;
    assert_og_ok(lance_version_load(s, "t.lance", 4, nm, LANCE_ACCESS_READ, &m4));
    assert_string_equal(m4->pb->writer_version->library, LANCE_WRITER_LIBRARY);
    assert_int_equal(m4->pb->n_fragments, 2);
    lance_manifest_free(m4);
    lance_manifest_free(m);
    test_sandbox_store_done(dir, s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wire_facts),
        cmocka_unit_test(test_manifest_round_trip),
        cmocka_unit_test(test_manifest_python_decoder),
        cmocka_unit_test(test_next_carries_forward),
        cmocka_unit_test(test_refuse_unsupported),
        cmocka_unit_test(test_manifest_corrupt),
        cmocka_unit_test(test_manifest_alloc_failures),
        cmocka_unit_test(test_manifest_encode_on_base),
        cmocka_unit_test(test_manifest_decode_on_chain),
        cmocka_unit_test(test_manifest_decode_on_shuffled),
        cmocka_unit_test(test_fragment_records),
        cmocka_unit_test(test_manifest_decode_on_varints),
        cmocka_unit_test(test_version_names),
        cmocka_unit_test(test_latest_v2),
        cmocka_unit_test(test_latest_v1),
        cmocka_unit_test(test_commit_files),
        cmocka_unit_test(test_commit_race),
        cmocka_unit_test(test_commit_crash),
        cmocka_unit_test(test_data_file_names),
        cmocka_unit_test(test_mini_writer_manifest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
