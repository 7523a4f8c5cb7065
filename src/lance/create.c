/* Creating tables. An empty one (lance_dataset_create) is one commit of version 1. One whose
 * first version already holds rows (lance_dataset_create_rows) runs the staged-append
 * machinery of write.c on an in-memory "version 0" snapshot, so version 1 is published by one
 * put-if-absent and a creator that crashed can be recognised by its uuid. */
#include "lance/dataset.h"
#include "core/alloc.h"
#include "core/arena.h"
#include "core/buf.h"
#include "core/error.h"
#include "lance/file2.h"
#include "lance/keyindex.h"
#include "lance/txn.h"

#include <string.h>

static int top_field(Lance__File__Field **fields, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (fields[i]->parent_id == -1 && strcmp(fields[i]->name, name) == 0) return (int)i;
    return -1;
}

/* Mark the primary key and attach field metadata (arena memory; saved[] keeps each field's
 * original metadata array so the caller can put it back before lance_fields_free). */
static int decorate_fields(core_arena *a, Lance__File__Field **fields, size_t nf,
                           const lance_create_options *opt)
{
    for (size_t i = 0; i < opt->n_primary_key; i++) {
        int k = top_field(fields, nf, opt->primary_key[i]);
        if (k < 0)
            return core_err(OG_E_BAD_REQUEST, "primary key column '%s' is not in the schema",
                            opt->primary_key[i]);
        fields[k]->unenforced_primary_key = 1;
    }
    for (size_t i = 0; i < opt->n_meta; i++) {
        int k = top_field(fields, nf, opt->meta_field[i]);
        if (k < 0)
            return core_err(OG_E_BAD_REQUEST, "metadata for unknown column '%s'",
                            opt->meta_field[i]);
        Lance__File__Field *f = fields[k];
        Lance__File__Field__MetadataEntry **entries =
            core_arena_alloc(a, (f->n_metadata + 1) * sizeof *entries);
        Lance__File__Field__MetadataEntry *e = core_arena_alloc(a, sizeof *e);
        char *key = core_arena_strdup(a, opt->meta_key[i]);
        char *val = core_arena_strdup(a, opt->meta_value[i]);
        if (!entries || !e || !key || !val) return core_err_nomem();
        lance__file__field__metadata_entry__init(e);
        e->key = key;
        e->value.data = (uint8_t *)val;
        e->value.len = strlen(val);
        if (f->n_metadata) memcpy(entries, f->metadata, f->n_metadata * sizeof *entries);
        entries[f->n_metadata] = e;
        f->metadata = entries;
        f->n_metadata++;
    }
    return 0;
}

/* The fields of a new table: the schema's, decorated as opt says (arena memory).
 * fields_done puts back the metadata arrays decoration replaced and frees the fields. */
typedef struct new_fields {
    Lance__File__Field **f;
    size_t n;
    Lance__File__Field__MetadataEntry ***saved;
    size_t *saved_n;
} new_fields;

static void fields_done(new_fields *nf)
{
    for (size_t i = 0; nf->saved && nf->saved_n && i < nf->n; i++) {
        nf->f[i]->metadata = nf->saved[i];
        nf->f[i]->n_metadata = nf->saved_n[i];
    }
    core_free(nf->saved);
    core_free(nf->saved_n);
    lance_fields_free(nf->f, nf->n);
    memset(nf, 0, sizeof *nf);
}

static int fields_make(new_fields *nf, core_arena *a, const arrow_schema *schema,
                       const lance_create_options *opt)
{
    memset(nf, 0, sizeof *nf);
    int rc = lance_fields_from_arrow(&nf->f, &nf->n, schema, NULL, 0);
    if (rc) return rc;
    /* decorate_fields replaces metadata arrays with arena copies: remember the originals. */
    nf->saved = core_calloc(nf->n ? nf->n : 1, sizeof *nf->saved);
    nf->saved_n = core_calloc(nf->n ? nf->n : 1, sizeof *nf->saved_n);
    if (!nf->saved || !nf->saved_n) rc = core_err_nomem();
    for (size_t i = 0; rc == 0 && i < nf->n; i++) {
        nf->saved[i] = nf->f[i]->metadata;
        nf->saved_n[i] = nf->f[i]->n_metadata;
    }
    if (rc == 0) rc = decorate_fields(a, nf->f, nf->n, opt);
    if (rc) fields_done(nf);
    return rc;
}

/* The manifest of a new table at `version`: its fields, opt's feature flags and key
 * indexes, no fragments. */
static int table_start(lance_manifest_next *next, core_arena *a, uint64_t version,
                       const new_fields *nf, const lance_create_options *opt)
{
    lance_manifest_next_init(next, NULL, version);
    next->pb.n_fields = nf->n;
    next->pb.fields = nf->f;
    uint64_t flags = opt->stable_row_ids ? LANCE_FLAG_STABLE_ROW_IDS : 0;
    next->pb.has_reader_feature_flags = next->pb.has_writer_feature_flags = 1;
    next->pb.reader_feature_flags = next->pb.writer_feature_flags = flags;
    next->pb.has_next_row_id = opt->stable_row_ids;
    next->pb.next_row_id = 0;
    return opt->key_indexes ? lance_kix_declare_pb(a, &next->pb, opt->key_indexes) : 0;
}

static int check_options(const lance_create_options *opt, const arrow_schema *schema,
                         const char *root)
{
    if (opt->version != 1)
        return core_err(OG_E_BAD_REQUEST, "lance_create_options version %d is not 1", opt->version);
    if (!schema || schema->n_fields == 0)
        return core_err(OG_E_BAD_REQUEST, "table '%s': a schema needs at least one field", root);
    return 0;
}

int lance_dataset_create(lance_dataset **out, store *s, const char *root,
                         const arrow_schema *schema, const lance_create_options *opt)
{
    *out = NULL;
    lance_create_options def = LANCE_CREATE_OPTIONS_INIT;
    if (!opt) opt = &def;
    int rc = check_options(opt, schema, root);
    if (rc == 0) rc = lance_dataset_check_absent(s, root);
    if (rc) return rc;
    core_arena a;
    core_arena_init(&a, 4096);
    new_fields nf;
    rc = fields_make(&nf, &a, schema, opt);
    if (rc) {
        core_arena_free(&a);
        return rc;
    }
    lance_manifest_next next;
    rc = table_start(&next, &a, 1, &nf, opt);
    if (rc == 0) {
        /* Creating a table is an Overwrite on top of version 0, as lance records it. */
        Lance__Table__Transaction txn = LANCE__TABLE__TRANSACTION__INIT;
        Lance__Table__Transaction__Overwrite ow = LANCE__TABLE__TRANSACTION__OVERWRITE__INIT;
        txn.has_read_version = 1;
        txn.read_version = 0;
        ow.n_schema = nf.n;
        ow.schema = nf.f;
        txn.operation_case = LANCE__TABLE__TRANSACTION__OPERATION_OVERWRITE;
        txn.overwrite = &ow;
        lance_commit_info info;
        lance_naming naming = opt->v1_names ? LANCE_NAMING_V1 : LANCE_NAMING_V2;
        rc = lance_commit(s, root, naming, &next.pb, &txn, NULL, 0, 0, &info);
        if (rc == OG_E_CONFLICT) {
            core_err(OG_E_EXISTS, "table '%s' was created concurrently", root);
            core_err_detail(CORE_ERR_OBJECT, root);
            rc = OG_E_EXISTS;
        }
    }
    fields_done(&nf);
    core_arena_free(&a);
    if (rc) return rc;
    return lance_dataset_open(out, s, root, 1, LANCE_ACCESS_WRITE);
}

/* The snapshot of a table that does not exist yet: version 0, no fragments, the new schema
 * and feature flags. Encoded and decoded once so the handle owns its manifest like any
 * other snapshot. */
static int version_zero(lance_dataset **out, store *s, const char *root, const arrow_schema *schema,
                        const lance_create_options *opt)
{
    core_arena a;
    core_arena_init(&a, 1024);
    new_fields nf;
    int rc = fields_make(&nf, &a, schema, opt);
    core_buf buf = CORE_BUF_INIT;
    if (rc == 0) {
        lance_manifest_next next;
        rc = table_start(&next, &a, 0, &nf, opt);
        if (rc == 0) rc = lance_manifest_encode(&buf, &next.pb, NULL, 0, NULL, 0);
        fields_done(&nf);
    }
    core_arena_free(&a);
    lance_manifest *m = NULL;
    if (rc == 0) rc = lance_manifest_decode(&m, buf.data, buf.len, root);
    core_buf_free(&buf);
    if (rc) return rc;
    lance_naming naming = opt->v1_names ? LANCE_NAMING_V1 : LANCE_NAMING_V2;
    return lance_dataset_from_manifest(out, s, root, naming, m);
}

int lance_dataset_create_rows(lance_dataset **out, store *s, const char *root,
                              const arrow_schema *schema, arrow_batch *const *b, size_t n,
                              const lance_create_options *opt, const char *uuid)
{
    *out = NULL;
    lance_create_options def = LANCE_CREATE_OPTIONS_INIT;
    if (!opt) opt = &def;
    int rc = check_options(opt, schema, root);
    if (rc) return rc;
    if (n && !b) return core_err(OG_E_BAD_REQUEST, "table '%s': no batches given", root);
    uint64_t rows = 0;
    for (size_t i = 0; i < n; i++) {
        if (!b[i]) return core_err(OG_E_BAD_REQUEST, "table '%s': batch %zu is NULL", root, i);
        rows += (uint64_t)b[i]->num_rows;
    }

    rc = lance_dataset_check_absent(s, root);
    if (rc) return rc;

    /* Without rows an Append stage is a no-op that would publish nothing: that is an empty
     * create (its transaction does not carry the caller's uuid). */
    if (rows == 0) return lance_dataset_create(out, s, root, schema, opt);
    lance_dataset *zero = NULL;
    rc = version_zero(&zero, s, root, schema, opt);
    if (rc) return rc;
    lance_write_options wo = LANCE_WRITE_OPTIONS_INIT;
    wo.uuid = uuid;
    wo.chain = opt->chain;
    lance_staged *st = NULL;
    /* Staged as an Append read at version 0 (lance records a create as an Overwrite; readers,
     * lancedb included, do not interpret the transaction of version 1). The commit publishes
     * version 1 with put-if-absent: a concurrent creator makes it fail as OG_E_CONFLICT. */
    rc = lance_stage_append(&st, zero, b, n, &wo);
    uint64_t v = 0;
    if (rc == 0) rc = lance_staged_commit(st, out, &v);
    if (rc == OG_E_CONFLICT) {
        core_err(OG_E_EXISTS, "table '%s' was created concurrently", root);
        core_err_detail(CORE_ERR_OBJECT, root);
        rc = OG_E_EXISTS;
    }
    lance_staged_free(st);
    lance_dataset_free(zero);
    if (rc == 0 && v != 1) {
        lance_dataset_free(*out);
        *out = NULL;
        rc = core_err(OG_E_INTERNAL, "table '%s': creation committed version %llu, not 1", root,
                      (unsigned long long)v);
    }
    return rc;
}
