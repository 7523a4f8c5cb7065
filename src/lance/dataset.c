/* Lance dataset snapshots: open at a version, row counts, the files under base paths.
 * Creating is in create.c, scans in scan.c and staged writes in write.c. */
#include "lance/dataset.h"
#include "core/alloc.h"
#include "core/error.h"
#include "lance/deletion.h"
#include "lance/file2.h"

#include <inttypes.h>
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
