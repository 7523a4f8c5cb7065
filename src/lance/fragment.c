/* Fragment and data file records of the files this engine writes (see fragment.h). */
#include "lance/fragment.h"

#include "core/error.h"
#include "lance/rowids.h"

#include <string.h>

int lance_data_file_new(Lance__Table__DataFile **out, core_arena *a, const char *name,
                        const int32_t *field_ids, size_t n, uint64_t size, uint64_t xxh3)
{
    Lance__Table__DataFile *df = core_arena_alloc(a, sizeof *df);
    int32_t *fields = core_arena_alloc(a, (n ? n : 1) * sizeof *fields);
    int32_t *cols = core_arena_alloc(a, (n ? n : 1) * sizeof *cols);
    char *path = core_arena_strdup(a, name);
    if (!df || !fields || !cols || !path) return core_err_nomem();
    lance__table__data_file__init(df);
    for (size_t i = 0; i < n; i++) {
        fields[i] = field_ids[i];
        cols[i] = (int32_t)i;
    }
    df->path = path;
    df->n_fields = df->n_column_indices = n;
    df->fields = fields;
    df->column_indices = cols;
    df->has_file_major_version = df->has_file_minor_version = 1;
    df->file_major_version = 2;
    df->file_minor_version = 0;
    df->has_file_size_bytes = 1;
    df->file_size_bytes = size;
    df->has_og_xxh3 = 1;
    df->og_xxh3 = xxh3;
    *out = df;
    return 0;
}

int lance_data_file_blocks(Lance__Table__DataFile *df, core_arena *a, const lance_file2_info *info)
{
    if (!info || !info->n_blocks) return 0;
    uint64_t *sums = core_arena_alloc(a, info->n_blocks * sizeof *sums);
    if (!sums) return core_err_nomem();
    memcpy(sums, info->block_xxh3, info->n_blocks * sizeof *sums);
    df->has_og_block_bytes = 1;
    df->og_block_bytes = LANCE_FILE2_BLOCK_BYTES;
    df->n_og_block_xxh3 = info->n_blocks;
    df->og_block_xxh3 = sums;
    return 0;
}

int lance_fragment_new(Lance__Table__DataFragment **out, core_arena *a, uint64_t id,
                       Lance__Table__DataFile *file, uint64_t rows)
{
    Lance__Table__DataFragment *f = core_arena_alloc(a, sizeof *f);
    Lance__Table__DataFile **files = core_arena_alloc(a, sizeof *files);
    if (!f || !files) return core_err_nomem();
    lance__table__data_fragment__init(f);
    f->has_id = 1;
    f->id = id;
    files[0] = file;
    f->n_files = 1;
    f->files = files;
    f->has_physical_rows = 1;
    f->physical_rows = rows;
    *out = f;
    return 0;
}

int lance_fragment_bytes(core_arena *a, const core_buf *buf, ProtobufCBinaryData *out)
{
    out->data = core_arena_alloc(a, buf->len ? buf->len : 1);
    if (!out->data) return core_err_nomem();
    if (buf->len) memcpy(out->data, buf->data, buf->len);
    out->len = buf->len;
    return 0;
}

int lance_fragment_versions(core_arena *a, const uint64_t *v, uint64_t n, ProtobufCBinaryData *out)
{
    core_buf buf = CORE_BUF_INIT;
    int rc = lance_version_seq_from_rows(&buf, v, n);
    if (rc == 0) rc = lance_fragment_bytes(a, &buf, out);
    core_buf_free(&buf);
    return rc;
}
