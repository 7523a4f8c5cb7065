/* Lance dataset snapshots: open at a version, row counts, the files under base paths.
 * Creating is in create.c, scans in scan.c and staged writes in write.c. */
#include "lance/dataset.h"
#include "core/alloc.h"
#include "core/error.h"
#include "lance/deletion.h"
#include "lance/file2.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void lance_dataset_free(lance_dataset *ds)
{
    if (!ds) return;
    lance_manifest_free(ds->m);
    arrow_schema_clear(&ds->schema);
    core_free(ds->field_ids);
    core_free(ds->root);
    core_free(ds);
}

/* Build a snapshot around a decoded manifest (takes ownership of m, also on failure). */
int lance_dataset_from_manifest(lance_dataset **out, store *s, const char *root,
                                lance_naming naming, lance_manifest *m)
{
    *out = NULL;
    lance_dataset *ds = core_calloc(1, sizeof *ds);
    if (!ds) {
        lance_manifest_free(m);
        return core_err_nomem();
    }
    ds->s = s;
    ds->m = m;
    ds->naming = naming;
    arrow_schema_init(&ds->schema);
    ds->root = core_strdup(root);
    if (!ds->root) {
        lance_dataset_free(ds);
        return core_err_nomem();
    }
    size_t nf = m->pb->n_fields;
    ds->field_ids = core_calloc(nf ? nf : 1, sizeof *ds->field_ids);
    if (!ds->field_ids) {
        lance_dataset_free(ds);
        return core_err_nomem();
    }
    int rc = lance_arrow_from_fields(&ds->schema, m->pb->fields, nf, ds->field_ids, root);
    if (rc) {
        lance_dataset_free(ds);
        return rc;
    }
    ds->n_field_ids = lance_field_count(&ds->schema);
    *out = ds;
    return 0;
}

int lance_dataset_open(lance_dataset **out, store *s, const char *root, uint64_t version,
                       lance_access access)
{
    *out = NULL;
    lance_manifest *m = NULL;
    lance_naming naming = LANCE_NAMING_UNKNOWN;
    int rc;
    if (version == 0) {
        rc = lance_version_load_latest(s, root, access, &m, &naming);
    } else {
        /* A known version is one get: try the V2 name (what this engine writes), then the V1
         * name; only when neither exists is the directory listed, to say what does. */
        naming = LANCE_NAMING_V2;
        rc = lance_version_load(s, root, version, naming, access, &m);
        if (rc == OG_E_NOT_FOUND) {
            naming = LANCE_NAMING_V1;
            rc = lance_version_load(s, root, version, naming, access, &m);
        }
        if (rc == OG_E_NOT_FOUND) {
            uint64_t latest;
            lance_naming nm;
            rc = lance_version_latest(s, root, &latest, &nm);
            if (rc == 0)
                rc = core_err(OG_E_NOT_FOUND, "table '%s' has no version %llu (latest is %llu)",
                              root, (unsigned long long)version, (unsigned long long)latest);
        }
    }
    if (rc) return rc;
    return lance_dataset_from_manifest(out, s, root, naming, m);
}

uint64_t lance_dataset_version(const lance_dataset *ds)
{
    return ds->m->pb->version;
}

bool lance_dataset_stable_row_ids(const lance_dataset *ds)
{
    return (ds->m->pb->reader_feature_flags & LANCE_FLAG_STABLE_ROW_IDS) != 0;
}

int lance_dataset_column(const lance_dataset *ds, const char *name, size_t *idx)
{
    int i = arrow_schema_find(&ds->schema, name);
    if (i < 0) {
        core_err(OG_E_BAD_REQUEST, "table '%s' has no column '%s'", ds->root, name);
        core_err_detail(CORE_ERR_OBJECT, ds->root);
        return OG_E_BAD_REQUEST;
    }
    *idx = (size_t)i;
    return 0;
}

int lance_dataset_count_rows(const lance_dataset *ds, uint64_t *out)
{
    uint64_t total = 0;
    const Lance__Table__Manifest *pb = ds->m->pb;
    for (size_t i = 0; i < pb->n_fragments; i++) {
        const Lance__Table__DataFragment *f = pb->fragments[i];
        uint64_t rows = f->physical_rows;
        const Lance__Table__DeletionFile *df = f->deletion_file;
        if (df) {
            uint64_t del = df->num_deleted_rows;
            if (!df->has_num_deleted_rows || del == 0) {
                /* Unknown count: read the file. */
                roaring_bitmap_t *bm = NULL;
                int rc = lance_dataset_deletion_load(ds, f->id, df, &bm); /* base_id aware */
                if (rc) return rc;
                del = roaring_bitmap_get_cardinality(bm);
                roaring_bitmap_free(bm);
            }
            if (del > rows) {
                core_err(OG_E_CORRUPT, "table '%s' fragment %llu deletes %llu of %llu rows",
                         ds->root, (unsigned long long)f->id, (unsigned long long)del,
                         (unsigned long long)rows);
                return OG_E_CORRUPT;
            }
            rows -= del;
        }
        total += rows;
    }
    *out = total;
    return 0;
}

/* ---- create ---------------------------------------------------------------------------- */

int lance_dataset_check_absent(store *s, const char *root)
{
    uint64_t latest;
    lance_naming existing;
    int rc = lance_version_latest(s, root, &latest, &existing);
    if (rc == 0) {
        core_err(OG_E_EXISTS, "table '%s' already exists (version %llu)", root,
                 (unsigned long long)latest);
        core_err_detail(CORE_ERR_OBJECT, root);
        return OG_E_EXISTS;
    }
    return rc == OG_E_NOT_FOUND ? 0 : rc;
}

uint64_t lance_dataset_physical_rows(const lance_dataset *ds)
{
    uint64_t n = 0;
    for (size_t i = 0; i < ds->m->pb->n_fragments; i++)
        n += ds->m->pb->fragments[i]->physical_rows;
    return n;
}

uint64_t lance_dataset_scan_pos(const lance_dataset *ds, uint64_t addr)
{
    uint64_t fid = LANCE_ROW_ADDR_FRAG(addr);
    const Lance__Table__Manifest *pb = ds->m->pb;
    for (size_t i = 0; i < pb->n_fragments; i++)
        if (pb->fragments[i]->id == fid) return (uint64_t)i << 32 | LANCE_ROW_ADDR_OFF(addr);
    return UINT64_MAX;
}

/* ---- files under base paths ---------------------------------------------------------------- */

/* A branch's base path names its parent dataset as an absolute directory (as lance records
 * it). When the store was copied or moved since, that directory lies outside it; the parent
 * is then the directory inside the store that the recorded path ends with and that contains
 * this dataset (a branch lives under its parent's tree/): the longest such ancestor of root,
 * cut at a '/'. 1 and out set when there is one. */
static int moved_base(const char *root, const char *path, char out[STORE_KEY_MAX])
{
    if (!path) return 0;
    if (strncmp(path, "file://", 7) == 0) path += 7;
    if (path[0] != '/') return 0;
    size_t pl = strlen(path);
    while (pl > 1 && path[pl - 1] == '/')
        pl--;
    for (size_t k = strlen(root); k-- > 0;) {
        if (root[k] != '/') continue;
        /* the candidate root[0..k) */
        if (k >= pl || k >= STORE_KEY_MAX || path[pl - k - 1] != '/' ||
            memcmp(path + pl - k, root, k) != 0)
            continue;
        memcpy(out, root, k);
        out[k] = 0;
        return 1;
    }
    return 0;
}

int lance_dataset_file_root(const lance_dataset *ds, int has_base_id, uint32_t base_id,
                            char out[STORE_KEY_MAX])
{
    if (!has_base_id) {
        size_t n = strlen(ds->root);
        if (n >= STORE_KEY_MAX) return core_err(OG_E_BAD_REQUEST, "table root is too long");
        memcpy(out, ds->root, n + 1);
        return 0;
    }
    const Lance__Table__Manifest *pb = ds->m->pb;
    const Lance__Table__BasePath *bp = NULL;
    for (size_t i = 0; i < pb->n_base_paths && !bp; i++)
        if (pb->base_paths[i]->id == base_id) bp = pb->base_paths[i];
    if (!bp || !bp->path) {
        core_err(OG_E_CORRUPT,
                 "table '%s' version %" PRIu64 " refers to base path %" PRIu32
                 " which its manifest does not define",
                 ds->root, pb->version, base_id);
        core_err_detail(CORE_ERR_OBJECT, ds->root);
        return OG_E_CORRUPT;
    }
    if (!bp->is_dataset_root) {
        core_err(OG_E_UNSUPPORTED,
                 "table '%s': base path %" PRIu32 " ('%s') is not a dataset "
                 "root; only dataset-root base paths are supported",
                 ds->root, base_id, bp->path);
        return OG_E_UNSUPPORTED;
    }
    int rc = lance_base_path_key(ds->s, bp->path, out);
    if (rc == OG_E_UNSUPPORTED && moved_base(ds->root, bp->path, out)) {
        og_error_clear();
        rc = 0;
    }
    if (rc) core_err_prefix("table '%s' base path %" PRIu32, ds->root, base_id);
    return rc;
}

int lance_dataset_deletion_load(const lance_dataset *ds, uint64_t frag_id,
                                const Lance__Table__DeletionFile *df, roaring_bitmap_t **out)
{
    *out = NULL;
    if (!df->has_base_id) return lance_deletion_load(ds->s, ds->root, frag_id, df, out);
    char dir[STORE_KEY_MAX];
    int rc = lance_dataset_file_root(ds, 1, df->base_id, dir);
    if (rc) return rc;
    Lance__Table__DeletionFile local = *df;
    local.has_base_id = 0;
    local.base_id = 0;
    return lance_deletion_load(ds->s, dir, frag_id, &local, out);
}

/* ---- Fragments, as the layers above read them ----------------------------------------------- */

size_t lance_dataset_fragment_count(const lance_dataset *ds)
{
    return ds && ds->m && ds->m->pb ? ds->m->pb->n_fragments : 0;
}

void lance_dataset_fragment_info(const lance_dataset *ds, size_t i, lance_fragment_info *out)
{
    const Lance__Table__DataFragment *f = ds->m->pb->fragments[i];
    const Lance__Table__DeletionFile *d = f->deletion_file;
    memset(out, 0, sizeof *out);
    out->id = f->id;
    out->physical_rows = f->physical_rows;
    out->n_files = f->n_files;
    out->deletions = d != NULL;
    if (d) {
        out->deletion_id = d->id;
        out->deletion_read_version = d->read_version;
        out->deleted_rows = d->num_deleted_rows;
    }
}

bool lance_fragment_info_same(const lance_fragment_info *a, const lance_fragment_info *b)
{
    if (a->id != b->id || a->physical_rows != b->physical_rows) return false;
    if (!a->deletions || !b->deletions) return !a->deletions && !b->deletions;
    return a->deletion_id == b->deletion_id &&
           a->deletion_read_version == b->deletion_read_version &&
           a->deleted_rows == b->deleted_rows;
}

/* dir without trailing '/' (lance_key adds one), so one file has one key however it is named. */
static void trim_slashes(char *dir)
{
    size_t n = strlen(dir);
    while (n > 0 && dir[n - 1] == '/')
        dir[--n] = '\0';
}

struct lance_file_keys {
    const lance_dataset *ds;
    size_t n;    /* base paths of the manifest */
    char **root; /* per base path, in manifest order: its directory, once resolved */
    char own[STORE_KEY_MAX];
};

int lance_file_keys_new(lance_file_keys **out, const lance_dataset *ds)
{
    *out = NULL;
    lance_file_keys *k = core_calloc(1, sizeof *k);
    if (!k) return core_err_nomem();
    k->ds = ds;
    k->n = ds->m->pb->n_base_paths;
    if (k->n && !(k->root = core_calloc(k->n, sizeof *k->root))) {
        core_free(k);
        return core_err_nomem();
    }
    int rc = lance_dataset_file_root(ds, 0, 0, k->own);
    trim_slashes(k->own);
    if (rc) {
        lance_file_keys_free(k);
        return rc;
    }
    *out = k;
    return 0;
}

void lance_file_keys_free(lance_file_keys *k)
{
    if (!k) return;
    for (size_t i = 0; i < k->n; i++)
        core_free(k->root[i]);
    core_free(k->root);
    core_free(k);
}

/* The directory of a file with this base id (own root without one). */
static int file_keys_dir(lance_file_keys *k, int has_base_id, uint32_t base_id, const char **out)
{
    if (!has_base_id) {
        *out = k->own;
        return 0;
    }
    size_t slot = k->n;
    for (size_t i = 0; i < k->n && slot == k->n; i++)
        if (k->ds->m->pb->base_paths[i]->id == base_id) slot = i;
    if (slot < k->n && k->root[slot]) {
        *out = k->root[slot];
        return 0;
    }
    char dir[STORE_KEY_MAX];
    int rc = lance_dataset_file_root(k->ds, 1, base_id, dir); /* names a missing base path */
    if (rc) return rc;
    trim_slashes(dir);
    if (slot == k->n) return core_err(OG_E_INTERNAL, "base path %" PRIu32 " not listed", base_id);
    if (!(k->root[slot] = core_strdup(dir))) return core_err_nomem();
    *out = k->root[slot];
    return 0;
}

int lance_file_keys_fragment(lance_file_keys *k, size_t i, core_buf *out)
{
    const Lance__Table__DataFragment *f = k->ds->m->pb->fragments[i];
    int rc = 0;
    for (size_t j = 0; rc == 0 && j < f->n_files; j++) {
        const Lance__Table__DataFile *df = f->files[j];
        const char *dir = NULL;
        char key[STORE_KEY_MAX];
        rc = file_keys_dir(k, df->has_base_id, df->base_id, &dir);
        if (rc == 0) rc = lance_key(key, dir, "data/", df->path ? df->path : "");
        if (rc == 0) rc = core_buf_append(out, key, strlen(key) + 1);
    }
    return rc;
}

int lance_file_keys_deletion(lance_file_keys *k, size_t i, char key[STORE_KEY_MAX])
{
    key[0] = '\0';
    const Lance__Table__DataFragment *f = k->ds->m->pb->fragments[i];
    const Lance__Table__DeletionFile *df = f->deletion_file;
    if (!df) return 0;
    const char *dir = NULL;
    char name[96];
    int bitmap = df->file_type == LANCE__TABLE__DELETION_FILE__DELETION_FILE_TYPE__BITMAP;
    int rc = file_keys_dir(k, df->has_base_id, df->base_id, &dir);
    if (rc == 0)
        rc = lance_deletion_file_name(name, sizeof name, f->id, df->read_version, df->id, bitmap);
    if (rc == 0) rc = lance_key(key, dir, LANCE_DELETIONS_DIR, name);
    return rc;
}

int lance_dataset_fragment_deletions(const lance_dataset *ds, size_t i, roaring_bitmap_t **out)
{
    *out = NULL;
    const Lance__Table__DataFragment *f = ds->m->pb->fragments[i];
    if (!f->deletion_file) return 0;
    return lance_dataset_deletion_load(ds, f->id, f->deletion_file, out);
}

int lance_dataset_data_file(const lance_dataset *ds, size_t i, size_t j, lance_data_file_info *out)
{
    const Lance__Table__DataFile *df = ds->m->pb->fragments[i]->files[j];
    memset(out, 0, sizeof *out);
    char dir[STORE_KEY_MAX];
    int rc = lance_dataset_file_root(ds, df->has_base_id, df->base_id, dir);
    if (rc == 0) rc = lance_key(out->key, dir, "data/", df->path ? df->path : "");
    if (rc) return rc;
    out->size = df->has_file_size_bytes ? df->file_size_bytes : 0;
    out->has_xxh3 = df->has_og_xxh3;
    out->xxh3 = df->og_xxh3;
    if (df->has_og_block_bytes && df->og_block_bytes && df->n_og_block_xxh3) {
        out->block_bytes = df->og_block_bytes;
        out->n_block_xxh3 = df->n_og_block_xxh3;
        out->block_xxh3 = df->og_block_xxh3;
    }
    return 0;
}

bool lance_dataset_deletion_checksummed(const lance_dataset *ds, size_t i)
{
    const Lance__Table__DeletionFile *df = ds->m->pb->fragments[i]->deletion_file;
    return df && df->has_og_xxh3;
}

size_t lance_dataset_base_path_count(const lance_dataset *ds)
{
    return ds->m->pb->n_base_paths;
}

int lance_dataset_base_dir(const lance_dataset *ds, size_t i, char dir[STORE_KEY_MAX])
{
    return lance_dataset_file_root(ds, 1, ds->m->pb->base_paths[i]->id, dir);
}

const char *lance_dataset_table_meta(const lance_dataset *ds, const char *key)
{
    const Lance__Table__Manifest *pb = ds->m->pb;
    for (size_t i = 0; i < pb->n_table_metadata; i++)
        if (pb->table_metadata[i]->key && !strcmp(pb->table_metadata[i]->key, key))
            return pb->table_metadata[i]->value ? pb->table_metadata[i]->value : "";
    return "";
}

int lance_dataset_indices(const lance_dataset *ds, int (*fn)(void *arg, const char *prefix),
                          void *arg, size_t *foreign)
{
    if (foreign) *foreign = 0;
    if (!ds->m->index || !ds->m->index_len) return 0;
    Lance__Table__IndexSection *sec = NULL;
    int rc = lance_pb_unpack((ProtobufCMessage **)&sec, &lance__table__index_section__descriptor,
                             ds->m->index, ds->m->index_len, "index section", ds->root);
    for (size_t i = 0; rc == 0 && i < sec->n_indices; i++) {
        const Lance__Table__IndexMetadata *im = sec->indices[i];
        if (im->has_base_id) {
            if (foreign) (*foreign)++;
            continue;
        }
        if (!im->uuid || im->uuid->uuid.len != 16) {
            rc = core_err(OG_E_CORRUPT, "table '%s': an index without a 16-byte uuid", ds->root);
            break;
        }
        char uuid[LANCE_UUID_LEN + 1], dir[LANCE_UUID_LEN + 2], prefix[STORE_KEY_MAX];
        lance_uuid_format(im->uuid->uuid.data, uuid);
        snprintf(dir, sizeof dir, "%s/", uuid);
        rc = lance_key(prefix, ds->root, "_indices/", dir);
        if (rc == 0) rc = fn(arg, prefix);
    }
    if (sec) lance_pb_free((ProtobufCMessage *)sec);
    return rc;
}

bool lance_dataset_external_sequences(const lance_dataset *ds)
{
    const Lance__Table__Manifest *pb = ds->m->pb;
    for (size_t i = 0; i < pb->n_fragments; i++) {
        const Lance__Table__DataFragment *f = pb->fragments[i];
        if (f->row_id_sequence_case ==
                LANCE__TABLE__DATA_FRAGMENT__ROW_ID_SEQUENCE_EXTERNAL_ROW_IDS ||
            f->last_updated_at_version_sequence_case ==
                LANCE__TABLE__DATA_FRAGMENT__LAST_UPDATED_AT_VERSION_SEQUENCE_EXTERNAL_LAST_UPDATED_AT_VERSIONS ||
            f->created_at_version_sequence_case ==
                LANCE__TABLE__DATA_FRAGMENT__CREATED_AT_VERSION_SEQUENCE_EXTERNAL_CREATED_AT_VERSIONS)
            return true;
    }
    return false;
}
