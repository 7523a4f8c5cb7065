/* Lance data file format 2.0: writer and reader of one data file, and the mapping between
 * Arrow types and Lance fields (logical type strings, pre-order field ids).
 *
 * File layout written (lance-format-subset.md §2.4/§2.5):
 *   page buffers (64-byte aligned; all pages of a column are contiguous, columns in order)
 *   global buffer 0 = lance.file.FileDescriptor{schema, length}
 *   ColumnMetadata x C, CMO table (C x u64 pos,len), GBO table (G x u64 pos,len)
 *   footer: u64 col_meta_start, u64 cmo_pos, u64 gbo_pos, u32 G, u32 C, u16 0, u16 3, "LANC"
 * Columns are the Lance fields in pre-order, including list and struct parents; a fixed-size
 * list is one column. Lists store page-local null-adjusted u64 end offsets, their items are
 * the following column(s).
 *
 * Ownership: a writer owns its encoded bytes until finish; a reader owns the footer and
 * metadata it read, and every batch it returns is new and owned by the caller
 * (arrow_batch_free). Readers are not thread-safe; open one per thread. */
#ifndef OG_LANCE_FILE2_H
#define OG_LANCE_FILE2_H

#include "arrow/arrow.h"
#include "core/buf.h"
#include "lance/proto/file.pb-c.h"
#include "lance/proto/table.pb-c.h"
#include "store/store.h"

#include <stddef.h>
#include <stdint.h>

#define LANCE_FILE2_MAGIC "LANC"
#define LANCE_FILE2_FOOTER_LEN 40
#define LANCE_FILE2_ALIGN 64
#define LANCE_FILE2_DEFAULT_PAGE_BYTES (64u << 10)

/* ---- Arrow <-> Lance fields -------------------------------------------------------------- */

/* Lance logical type string of an Arrow type ("int64", "string", "timestamp:us:-",
 * "fixed_size_list:float:4", "list", "struct"). OG_E_UNSUPPORTED for types Lance 2.0 via this
 * engine cannot store. */
int lance_logical_type(const arrow_type *t, char *buf, size_t cap);
/* Number of Lance fields (= 2.0 columns) the schema has in pre-order. */
size_t lance_field_count(const arrow_schema *s);

/* Lance Field messages for an Arrow schema, in pre-order; ids[k] is the id of the k-th field
 * (NULL: 0, 1, 2, ...), parent ids follow. Free with lance_fields_free. */
int lance_fields_from_arrow(Lance__File__Field ***out, size_t *n_out, const arrow_schema *s,
                            const int32_t *ids, size_t n_ids);
void lance_fields_free(Lance__File__Field **f, size_t n);

/* The Arrow schema of Lance fields (pre-order, parents before children). ids_out (optional,
 * room for n) receives the field ids in the same pre-order the schema's fields unfold to.
 * OG_E_CORRUPT naming `object` for malformed trees; OG_E_UNSUPPORTED for types we cannot
 * read (naming the field and the type). */
int lance_arrow_from_fields(arrow_schema *out, Lance__File__Field *const *f, size_t n,
                            int32_t *ids_out, const char *object);

/* ---- Writer ------------------------------------------------------------------------------ */

typedef struct lance_file2_options {
    int version;              /* 1 */
    size_t page_bytes;        /* bound on a page's buffer bytes (0: default 8 MiB) */
    const int32_t *field_ids; /* pre-order Lance field ids, or NULL for 0..n-1 */
    size_t n_field_ids;
    unsigned put_flags; /* store_put flags (e.g. STORE_F_NOSYNC) */
} lance_file2_options;

#define LANCE_FILE2_OPTIONS_INIT                                                                   \
    {                                                                                              \
        1, 0, NULL, 0, 0                                                                           \
    }

typedef struct lance_file2_writer lance_file2_writer;

typedef struct lance_file2_info {
    uint64_t size; /* bytes of the whole file */
    uint64_t rows;
    uint32_t columns; /* = Lance fields in pre-order */
    uint32_t pages;   /* over all columns */
    uint64_t xxh3;    /* XXH3-64 (seed 0) of the whole file, as DataFile.og_xxh3 records it */
    /* For a file larger than LANCE_FILE2_SMALL_FILE_BYTES (read in ranges, never whole): the
     * XXH3-64 of each LANCE_FILE2_BLOCK_BYTES block, as DataFile.og_block_xxh3 records them
     * (heap; lance_file2_info_clear frees). NULL, 0 for a smaller file. */
    uint64_t *block_xxh3;
    size_t n_blocks;
} lance_file2_info;

/* Block size of the per-block checksums: a ranged read is widened to whole blocks (at most two
 * partial blocks more per get) so it can check every byte it returns. 256 KiB keeps that
 * overhead small next to the pages read, and the list in the manifest at 32 bytes per MiB. */
#define LANCE_FILE2_BLOCK_BYTES (256u << 10)

void lance_file2_info_clear(lance_file2_info *info);

int lance_file2_writer_new(lance_file2_writer **out, const arrow_schema *schema,
                           const lance_file2_options *opt);
/* Append a batch (its schema must equal the writer's). Null struct rows cannot be stored in
 * 2.0: OG_E_UNSUPPORTED naming the column. */
int lance_file2_writer_write(lance_file2_writer *w, const arrow_batch *b);
/* Append rows [off, off + n) of b (the whole batch without a copy when that is all of it). */
int lance_file2_writer_write_rows(lance_file2_writer *w, const arrow_batch *b, int64_t off,
                                  int64_t n);
/* The whole file's bytes (the writer is spent afterwards). */
int lance_file2_writer_finish_bytes(lance_file2_writer *w, core_buf *out, lance_file2_info *info);
/* Finish and store_put the file under key. */
int lance_file2_writer_finish(lance_file2_writer *w, store *s, const char *key,
                              lance_file2_info *info);
void lance_file2_writer_free(lance_file2_writer *w);

/* ---- Reader ------------------------------------------------------------------------------ */

typedef struct lance_file2_reader lance_file2_reader;

/* Store access. Every get is a round trip on an object store, so the reader trades a bounded
 * amount of extra bytes for fewer gets:
 *  - a file of at most LANCE_FILE2_SMALL_FILE_BYTES is read with one get at open and every
 *    later read is served from that buffer (size unknown: one probe get of the first
 *    LANCE_FILE2_PROBE_BYTES, which is the whole file when it is shorter);
 *  - a larger file's open reads the last LANCE_FILE2_TAIL_BYTES in one get (footer and,
 *    usually, all metadata);
 *  - a read call of a larger file fetches the pages of all its projected columns up front,
 *    merging ranges less than LANCE_FILE2_COALESCE_GAP apart, when they total at most
 *    LANCE_FILE2_PREFETCH_MAX bytes (else column by column, as with LANCE_FILE2_READ_EXACT). */
#define LANCE_FILE2_SMALL_FILE_BYTES (4u << 20)
#define LANCE_FILE2_PROBE_BYTES (64u << 10)
#define LANCE_FILE2_TAIL_BYTES (64u << 10)
#define LANCE_FILE2_COALESCE_GAP (64u << 10)
#define LANCE_FILE2_PREFETCH_MAX (64u << 20)

/* Read flags. */
#define LANCE_FILE2_READ_EXACT                                                                     \
    0x1u /* fetch exactly the bytes needed, in ranged gets (no whole-                              \
          * file read, tail window or coalescing across columns) */
/* Check the whole file's bytes against `xxh3` when the open reads it whole (a small file).
 * A larger file, read in ranges, is checked block by block when block checksums are given
 * (block_bytes, block_xxh3): every get is widened to the blocks it touches and each block
 * hashed. A mismatch is OG_E_CORRUPT naming the file (and the block). */
#define LANCE_FILE2_READ_CHECKSUM 0x2u

typedef struct lance_file2_read_options {
    int version;        /* 1 */
    uint64_t max_bytes; /* bound on decoded bytes per read call (0: 4 GiB) */
    unsigned flags;     /* LANCE_FILE2_READ_* */
    uint64_t xxh3;      /* with LANCE_FILE2_READ_CHECKSUM: the file's recorded XXH3-64 */
    /* the file's recorded block checksums (copied at open; 0, NULL, 0: none). Checked on
     * every ranged get of a store file whatever the flags; a list that does not fit the
     * file's size is OG_E_CORRUPT at open. */
    uint32_t block_bytes;
    const uint64_t *block_xxh3;
    size_t n_blocks;
} lance_file2_read_options;

#define LANCE_FILE2_READ_OPTIONS_INIT                                                              \
    {                                                                                              \
        1, 0, 0, 0, 0, NULL, 0                                                                     \
    }

/* Open a data file in a store. size is the file's size if known (e.g. DataFile.file_size_bytes),
 * else 0. A file of at most LANCE_FILE2_SMALL_FILE_BYTES costs one get (size unknown: one get
 * if shorter than LANCE_FILE2_PROBE_BYTES, else probe + head + get) and later reads cost none;
 * a larger one costs a tail get (+ one get of the metadata that lies before the tail window),
 * plus a head when the size is unknown. With LANCE_FILE2_READ_EXACT: a head if the size is
 * unknown, then the footer and exactly the metadata region; no page data. */
int lance_file2_open(lance_file2_reader **out, store *s, const char *key, uint64_t size,
                     const lance_file2_read_options *opt);
/* Open over bytes in memory (not copied: they must outlive the reader). name is used in
 * error messages. */
int lance_file2_open_bytes(lance_file2_reader **out, const void *data, size_t len, const char *name,
                           const lance_file2_read_options *opt);
void lance_file2_close(lance_file2_reader *r);
/* Ask opts to check the checksums a manifest's DataFile records (og_xxh3 and the block list
 * og_block_xxh3), if it records them; opts then points into df, which must outlive the open. */
void lance_file2_expect(lance_file2_read_options *opts, const Lance__Table__DataFile *df);

const arrow_schema *lance_file2_schema(const lance_file2_reader *r);
uint64_t lance_file2_num_rows(const lance_file2_reader *r);
/* Lance field ids in pre-order (count lance_field_count(schema)). */
const int32_t *lance_file2_field_ids(const lance_file2_reader *r, size_t *n);

/* Read top-level fields cols[0..n) (NULL, n = 0 for all), rows [row_start, row_start+count)
 * (count UINT64_MAX: to the end). Only the byte ranges of the pages of the projected columns
 * are fetched (plus gaps under LANCE_FILE2_COALESCE_GAP between them, unless
 * LANCE_FILE2_READ_EXACT); nothing when the file was read whole at open. Every malformed
 * byte gives OG_E_CORRUPT naming the file and the problem. */
int lance_file2_read(lance_file2_reader *r, const size_t *cols, size_t n, uint64_t row_start,
                     uint64_t count, arrow_batch **out);

#endif
