/* Lance data file 2.0 reader: footer and metadata tables (every offset and length checked,
 * overflow-safe), FileDescriptor schema, and the 2.0 page decoders (flat, nullable, bool,
 * binary with null-adjusted offsets, dictionary strings, list, fixed-size list, struct) over
 * any number of pages. Store access is shaped for object stores, where a get costs a round
 * trip: small files are read whole at open, large ones through a tail window and per-read
 * coalesced ranges of the projected columns' pages (file2.h, "Store access"). */
#include "lance/file2.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/hash.h"
#include "lance/manifest.h"
#include "lance/proto/encodings.pb-c.h"
#include "lance/proto/file2.pb-c.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COLUMNS (1u << 20)
#define MAX_GLOBAL_BUFFERS (1u << 16)
#define MAX_PB_DEPTH 48

struct lance_file2_reader {
    char *name;
    store *st;
    char *key;
    const uint8_t *mem; /* the whole file: caller's bytes, or `whole` */
    core_buf whole;     /* a small file read with one get at open */
    core_buf win;       /* during open: the file's last bytes, read with one get */
    uint64_t win_off;
    unsigned flags;
    uint64_t xxh3;    /* with LANCE_FILE2_READ_CHECKSUM */
    uint64_t *blocks; /* recorded block checksums (owned), checked by every store get */
    size_t n_blocks;
    uint64_t block_bytes;
    uint64_t size;
    uint64_t max_bytes;
    uint32_t n_cols, n_gb;
    Lance__File__V2__ColumnMetadata **cols;
    arrow_schema schema;
    int32_t *ids;
    size_t n_ids;
    uint64_t rows;
};

/* ---- protobuf helpers ------------------------------------------------------------------- */

/* protobuf-c reports every failure as NULL; remember whether an allocation failed so that
 * out-of-memory is not reported as corrupt bytes. */
static _Thread_local bool pb_alloc_failed;

static void *pb_alloc(void *ud, size_t n)
{
    (void)ud;
    void *p = core_malloc(n ? n : 1);
    if (!p) pb_alloc_failed = true;
    return p;
}
static void pb_free(void *ud, void *p)
{
    (void)ud;
    core_free(p);
}
static ProtobufCAllocator pb_allocator = {pb_alloc, pb_free, NULL};

/* protobuf-c recurses once per nested message; refuse deep nesting before it does. Returns
 * -1 when too deep; other malformations are left for protobuf-c to report. */
static int pb_depth_ok(const uint8_t *p, size_t n, const ProtobufCMessageDescriptor *d, int depth)
{
    if (depth > MAX_PB_DEPTH) return -1;
    size_t i = 0;
    while (i < n) {
        uint64_t key, len;
        if (lance_pb_varint(p, n, &i, &key)) return 0;
        switch (key & 7) {
        case 0:
            if (lance_pb_varint(p, n, &i, &len)) return 0;
            break;
        case 1:
            if (n - i < 8) return 0;
            i += 8;
            break;
        case 5:
            if (n - i < 4) return 0;
            i += 4;
            break;
        case 2: {
            if (lance_pb_varint(p, n, &i, &len) || len > n - i) return 0;
            const ProtobufCFieldDescriptor *f =
                protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3));
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
                pb_depth_ok(p + i, (size_t)len, f->descriptor, depth + 1) != 0)
                return -1;
            i += (size_t)len;
            break;
        }
        default:
            return 0;
        }
    }
    return 0;
}

static int unpack(ProtobufCMessage **out, const ProtobufCMessageDescriptor *d, const uint8_t *p,
                  size_t n, const char *file, const char *what)
{
    *out = NULL;
    if (pb_depth_ok(p, n, d, 0) != 0)
        return core_err(OG_E_CORRUPT, "%s: %s is nested too deeply", file, what);
    pb_alloc_failed = false;
    *out = protobuf_c_message_unpack(d, &pb_allocator, n, p);
    if (!*out && pb_alloc_failed) return core_err_nomem();
    if (!*out) return core_err(OG_E_CORRUPT, "%s: %s is not a valid protobuf message", file, what);
    return 0;
}

/* ---- byte access --------------------------------------------------------------------------- */

/* Check the blocks of out, which holds bytes [off, off + out->len) starting on a block
 * boundary, against the recorded checksums. */
static int check_blocks(const lance_file2_reader *r, uint64_t off, const core_buf *out)
{
    const uint64_t bb = r->block_bytes;
    for (uint64_t at = 0; at < out->len; at += bb) {
        uint64_t n = out->len - at < bb ? out->len - at : bb;
        uint64_t k = (off + at) / bb; /* < n_blocks: the list fits the size (open) */
        if (k >= r->n_blocks)
            return core_err(OG_E_CORRUPT, "data file '%s': no checksum recorded for block %" PRIu64,
                            r->key, k);
        uint64_t got = core_hash64(out->data + at, (size_t)n, 0);
        if (got != r->blocks[k])
            return core_err(OG_E_CORRUPT,
                            "data file '%s': checksum mismatch in block %" PRIu64
                            " (bytes [%" PRIu64 ", +%" PRIu64 ")): they hash to %016" PRIx64
                            ", the manifest recorded %016" PRIx64 " (the file was damaged "
                            "after it was written)",
                            r->key, k, off + at, n, got, r->blocks[k]);
    }
    return 0;
}

/* Bytes [off, off + len) into out. With block checksums the get is widened to whole blocks
 * (still one get) so that every byte handed on has been checked: with `at`, out keeps them all
 * and *at is the offset of its first byte (a segment covers more, at no copy); without, out is
 * trimmed to what was asked for. */
static int fetch_at(lance_file2_reader *r, uint64_t off, uint64_t len, core_buf *out, uint64_t *at)
{
    if (at) *at = off;
    if (off > r->size || len > r->size - off)
        return core_err(OG_E_CORRUPT,
                        "%s: range [%" PRIu64 ", +%" PRIu64 ") beyond the file's %" PRIu64 " bytes",
                        r->name, off, len, r->size);
    if (r->mem) {
        core_buf_clear(out);
        return core_buf_append(out, r->mem + off, (size_t)len);
    }
    uint64_t want_off = off, want_len = len;
    if (r->n_blocks && len) {
        uint64_t end = off + len, rem = end % r->block_bytes; /* end <= size: checked above */
        off -= off % r->block_bytes;
        if (rem)
            end = r->size - end < r->block_bytes - rem ? r->size : end + (r->block_bytes - rem);
        len = end - off;
    }
    int rc = store_get(r->st, r->key, off, len, out);
    if (rc == OG_E_BAD_REQUEST && store_key_check(r->key) == 0)
        return core_err(OG_E_CORRUPT,
                        "%s: the object is shorter than the %" PRIu64 " bytes "
                        "recorded for it (read at %" PRIu64 ")",
                        r->name, r->size, off);
    if (rc) return rc;
    if (out->len != len)
        return core_err(OG_E_CORRUPT,
                        "%s: short read at %" PRIu64 " (%zu of %" PRIu64
                        " bytes): the file is shorter than its footer says",
                        r->name, off, out->len, len);
    if (r->n_blocks && len && (rc = check_blocks(r, off, out))) return rc;
    if (at) {
        *at = off;
    } else if (len != want_len) {
        if (want_off != off) memmove(out->data, out->data + (want_off - off), (size_t)want_len);
        out->len = (size_t)want_len;
    }
    return 0;
}

static int fetch(lance_file2_reader *r, uint64_t off, uint64_t len, core_buf *out)
{
    return fetch_at(r, off, len, out, NULL);
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* (pos, len) lies within [0, limit) */
static bool range_ok(uint64_t pos, uint64_t len, uint64_t limit)
{
    return pos <= limit && len <= limit - pos;
}

/* *p = bytes [off, off+len) of the file, from memory or the tail window when they hold them,
 * else fetched into scratch (same checks and errors as fetch). */
static int view(lance_file2_reader *r, uint64_t off, uint64_t len, core_buf *scratch,
                const uint8_t **p)
{
    if (off <= r->size && len <= r->size - off) {
        if (r->mem) {
            *p = r->mem + off;
            return 0;
        }
        if (r->win.len && off >= r->win_off && off - r->win_off <= r->win.len &&
            len <= r->win.len - (off - r->win_off)) {
            *p = r->win.data + (off - r->win_off);
            return 0;
        }
    }
    int rc = fetch(r, off, len, scratch);
    if (rc) return rc;
    *p = scratch->data;
    return 0;
}

/* ---- open -------------------------------------------------------------------------------- */

void lance_file2_close(lance_file2_reader *r)
{
    if (!r) return;
    for (uint32_t i = 0; r->cols && i < r->n_cols; i++)
        if (r->cols[i]) protobuf_c_message_free_unpacked(&r->cols[i]->base, &pb_allocator);
    core_free(r->cols);
    arrow_schema_clear(&r->schema);
    core_free(r->ids);
    core_free(r->name);
    core_free(r->key);
    core_buf_free(&r->whole);
    core_buf_free(&r->win);
    core_free(r->blocks);
    core_free(r);
}

static int open_common(lance_file2_reader *r)
{
    core_buf fb = CORE_BUF_INIT, b = CORE_BUF_INIT, extra = CORE_BUF_INIT;
    int rc = 0;
    Lance__File__FileDescriptor *fd = NULL;
    const uint64_t size = r->size;
    if (size < LANCE_FILE2_FOOTER_LEN) {
        rc = core_err(OG_E_CORRUPT, "%s: %" PRIu64 " bytes is shorter than the 40-byte footer",
                      r->name, size);
        goto out;
    }
    const uint64_t data_end = size - LANCE_FILE2_FOOTER_LEN;
    if (!r->mem && !(r->flags & LANCE_FILE2_READ_EXACT)) {
        /* one get for the footer and, in files written like ours, all the metadata */
        uint64_t w = size < LANCE_FILE2_TAIL_BYTES ? size : LANCE_FILE2_TAIL_BYTES;
        if ((rc = fetch(r, size - w, w, &r->win))) goto out;
        r->win_off = size - w;
    }
    const uint8_t *f;
    if ((rc = view(r, data_end, LANCE_FILE2_FOOTER_LEN, &fb, &f))) goto out;
    if (memcmp(f + 36, LANCE_FILE2_MAGIC, 4) != 0) {
        rc = core_err(OG_E_CORRUPT, "%s: bad magic at the end of the file (not a Lance data file)",
                      r->name);
        goto out;
    }
    uint64_t cm_start = rd64(f), cmo = rd64(f + 8), gbo = rd64(f + 16);
    uint32_t n_gb = rd32(f + 24), n_cols = rd32(f + 28);
    uint16_t major = (uint16_t)(f[32] | f[33] << 8), minor = (uint16_t)(f[34] | f[35] << 8);
    if (!((major == 0 && minor == 3) || (major == 2 && minor == 0))) {
        if ((major == 0 && minor < 3))
            rc = core_err(OG_E_UNSUPPORTED,
                          "%s: legacy Lance file version %u.%u (v1) is not "
                          "supported",
                          r->name, major, minor);
        else
            rc = core_err(OG_E_UNSUPPORTED,
                          "%s: unsupported data file version %u.%u (only 2.0 "
                          "is read)",
                          r->name, major, minor);
        goto out;
    }
    if (n_cols > MAX_COLUMNS || n_gb > MAX_GLOBAL_BUFFERS) {
        rc = core_err(OG_E_CORRUPT, "%s: footer claims %u columns and %u global buffers", r->name,
                      n_cols, n_gb);
        goto out;
    }
    if (n_gb < 1) {
        rc = core_err(OG_E_CORRUPT, "%s: no global buffers (global buffer 0 holds the schema)",
                      r->name);
        goto out;
    }
    if (!range_ok(cmo, (uint64_t)n_cols * 16, data_end) ||
        !range_ok(gbo, (uint64_t)n_gb * 16, data_end) || cm_start > data_end) {
        rc = core_err(OG_E_CORRUPT,
                      "%s: metadata tables (cmo %" PRIu64 ", gbo %" PRIu64
                      ", column metadata %" PRIu64 ") lie beyond the file's %" PRIu64 " bytes",
                      r->name, cmo, gbo, cm_start, size);
        goto out;
    }
    /* the metadata region: everything from the first metadata byte to the footer */
    uint64_t tail = cm_start;
    if (cmo < tail) tail = cmo;
    if (gbo < tail) tail = gbo;
    /* Global buffer 0 usually sits just before the column metadata: unless reads must be
     * exact, take it in the same get when the gap is small (its table entry is checked
     * below; bytes of a bogus entry are only read, never trusted). */
    if (!(r->flags & LANCE_FILE2_READ_EXACT) && !r->mem && n_gb && gbo >= r->win_off &&
        gbo - r->win_off <= r->win.len && r->win.len - (gbo - r->win_off) >= 16) {
        const uint8_t *e;
        if ((rc = view(r, gbo, 16, &b, &e))) goto out;
        uint64_t p0 = rd64(e), l0 = rd64(e + 8);
        if (p0 < tail && range_ok(p0, l0, data_end) && l0 <= r->max_bytes &&
            tail - p0 <= l0 + LANCE_FILE2_COALESCE_GAP)
            tail = p0;
    }
    const uint8_t *t;
    if ((rc = view(r, tail, data_end - tail, &b, &t))) goto out;
#define AT(pos) (t + ((pos)-tail))
    /* global buffer 0 */
    uint64_t g0 = rd64(AT(gbo)), g0len = rd64(AT(gbo) + 8);
    for (uint32_t i = 0; i < n_gb; i++) {
        uint64_t gp = rd64(AT(gbo) + 16 * i), gl = rd64(AT(gbo) + 16 * i + 8);
        if (!range_ok(gp, gl, data_end)) {
            rc = core_err(OG_E_CORRUPT,
                          "%s: global buffer %u [%" PRIu64 ", +%" PRIu64 ") lies beyond the file",
                          r->name, i, gp, gl);
            goto out;
        }
    }
    const uint8_t *g0p;
    if (g0 >= tail) {
        g0p = AT(g0);
    } else {
        if (g0len > r->max_bytes) {
            rc = core_err(OG_E_RESOURCE_LIMIT, "%s: global buffer 0 is %" PRIu64 " bytes", r->name,
                          g0len);
            goto out;
        }
        if ((rc = view(r, g0, g0len, &extra, &g0p))) goto out;
    }
    if ((rc = unpack((ProtobufCMessage **)&fd, &lance__file__file_descriptor__descriptor, g0p,
                     (size_t)g0len, r->name, "global buffer 0 (FileDescriptor)")))
        goto out;
    if (!fd->schema) {
        rc = core_err(OG_E_CORRUPT, "%s: FileDescriptor has no schema", r->name);
        goto out;
    }
    if (fd->length > (uint64_t)INT64_MAX / 16) {
        rc = core_err(OG_E_CORRUPT, "%s: FileDescriptor claims %" PRIu64 " rows", r->name,
                      fd->length);
        goto out;
    }
    r->rows = fd->length;
    r->n_ids = fd->schema->n_fields;
    r->ids = core_calloc(r->n_ids ? r->n_ids : 1, sizeof *r->ids);
    if (!r->ids) {
        rc = core_err_nomem();
        goto out;
    }
    if ((rc = lance_arrow_from_fields(&r->schema, fd->schema->fields, fd->schema->n_fields, r->ids,
                                      r->name)))
        goto out;
    if (r->n_ids != n_cols) {
        rc = core_err(OG_E_CORRUPT,
                      "%s: schema has %zu fields but the file has %u columns "
                      "(2.0 files have one column per field)",
                      r->name, r->n_ids, n_cols);
        goto out;
    }
    /* column metadata */
    r->cols = core_calloc(n_cols ? n_cols : 1, sizeof *r->cols);
    if (!r->cols) {
        rc = core_err_nomem();
        goto out;
    }
    r->n_cols = n_cols;
    for (uint32_t c = 0; c < n_cols; c++) {
        uint64_t cp = rd64(AT(cmo) + 16 * c), cl = rd64(AT(cmo) + 16 * c + 8);
        if (!range_ok(cp, cl, data_end)) {
            rc = core_err(OG_E_CORRUPT,
                          "%s: column %u metadata [%" PRIu64 ", +%" PRIu64 ") lies beyond the file",
                          r->name, c, cp, cl);
            goto out;
        }
        const uint8_t *cpp;
        if (cp >= tail) {
            cpp = AT(cp);
        } else {
            if ((rc = view(r, cp, cl, &extra, &cpp))) goto out;
        }
        char what[64];
        snprintf(what, sizeof what, "column %u metadata", c);
        if ((rc = unpack((ProtobufCMessage **)&r->cols[c],
                         &lance__file__v2__column_metadata__descriptor, cpp, (size_t)cl, r->name,
                         what)))
            goto out;
        const Lance__File__V2__ColumnMetadata *cm = r->cols[c];
        for (size_t p = 0; p < cm->n_pages; p++) {
            const Lance__File__V2__ColumnMetadata__Page *pg = cm->pages[p];
            if (pg->n_buffer_offsets != pg->n_buffer_sizes) {
                rc = core_err(OG_E_CORRUPT,
                              "%s: column %u page %zu has %zu buffer offsets but %zu "
                              "sizes",
                              r->name, c, p, pg->n_buffer_offsets, pg->n_buffer_sizes);
                goto out;
            }
            for (size_t k = 0; k < pg->n_buffer_offsets; k++)
                if (!range_ok(pg->buffer_offsets[k], pg->buffer_sizes[k], data_end)) {
                    rc = core_err(OG_E_CORRUPT,
                                  "%s: column %u page %zu buffer %zu [%" PRIu64 ", +%" PRIu64
                                  ") lies beyond the file",
                                  r->name, c, p, k, pg->buffer_offsets[k], pg->buffer_sizes[k]);
                    goto out;
                }
        }
        if (cm->n_buffer_offsets != cm->n_buffer_sizes) {
            rc = core_err(OG_E_CORRUPT, "%s: column %u buffer tables disagree", r->name, c);
            goto out;
        }
        for (size_t k = 0; k < cm->n_buffer_offsets; k++)
            if (!range_ok(cm->buffer_offsets[k], cm->buffer_sizes[k], data_end)) {
                rc = core_err(OG_E_CORRUPT, "%s: column %u buffer %zu lies beyond the file",
                              r->name, c, k);
                goto out;
            }
    }
#undef AT
    r->n_gb = n_gb;
out:
    if (fd) protobuf_c_message_free_unpacked(&fd->base, &pb_allocator);
    core_buf_free(&r->win); /* open's alone */
    core_buf_free(&fb);
    core_buf_free(&b);
    core_buf_free(&extra);
    return rc;
}

static int reader_new(lance_file2_reader **out, const char *name,
                      const lance_file2_read_options *opt)
{
    *out = core_calloc(1, sizeof **out);
    if (!*out) return core_err_nomem();
    (*out)->name = core_strdup(name ? name : "data file");
    if (!(*out)->name) {
        core_free(*out);
        *out = NULL;
        return core_err_nomem();
    }
    (*out)->max_bytes = opt && opt->max_bytes ? opt->max_bytes : (4ull << 30);
    (*out)->flags = opt ? opt->flags : 0;
    (*out)->xxh3 = opt ? opt->xxh3 : 0;
    arrow_schema_init(&(*out)->schema);
    return 0;
}

/* Take the caller's block checksums once the file's size is known: a list that does not
 * cover exactly the file (a damaged or foreign record) is refused rather than trusted. */
static int take_blocks(lance_file2_reader *r, const lance_file2_read_options *opt)
{
    if (!opt || !opt->n_blocks) return 0;
    uint64_t bb = opt->block_bytes;
    if (bb < 4096 || bb > (1u << 30) || !opt->block_xxh3 ||
        opt->n_blocks != r->size / bb + (r->size % bb != 0))
        return core_err(OG_E_CORRUPT,
                        "data file '%s': the manifest records %zu block checksums of %" PRIu64
                        " bytes, which do not cover its %" PRIu64 " bytes",
                        r->key, opt->n_blocks, bb, r->size);
    r->blocks = core_malloc(opt->n_blocks * sizeof *r->blocks);
    if (!r->blocks) return core_err_nomem();
    memcpy(r->blocks, opt->block_xxh3, opt->n_blocks * sizeof *r->blocks);
    r->n_blocks = opt->n_blocks;
    r->block_bytes = bb;
    return 0;
}

/* A whole file read at open against the checksum its caller recorded. */
static int check_whole(const lance_file2_reader *r)
{
    if (!(r->flags & LANCE_FILE2_READ_CHECKSUM)) return 0;
    uint64_t got = core_hash64(r->whole.data, r->whole.len, 0);
    if (got == r->xxh3) return 0;
    return core_err(OG_E_CORRUPT,
                    "data file '%s': checksum mismatch: its %zu bytes hash to %016" PRIx64
                    ", the manifest recorded %016" PRIx64 " (the file was damaged after it "
                    "was written)",
                    r->key, r->whole.len, got, r->xxh3);
}

/* Learn the size (unless given) and read a small file whole, setting r->size and, for a
 * small file, r->mem. */
static int load_small(lance_file2_reader *r, uint64_t size)
{
    int rc = 0;
    store_meta m;
    if (r->flags & LANCE_FILE2_READ_EXACT) {
        if (size == 0) {
            rc = store_head(r->st, r->key, &m);
            size = m.size;
        }
        r->size = size;
        return rc;
    }
    if (size == 0) {
        /* A probe of the first bytes is the whole file when it is shorter than the probe. */
        if ((rc = store_get(r->st, r->key, 0, LANCE_FILE2_PROBE_BYTES, &r->whole))) return rc;
        if (r->whole.len < LANCE_FILE2_PROBE_BYTES) {
            r->size = r->whole.len;
            r->mem = r->whole.data ? r->whole.data : (const uint8_t *)"";
            return check_whole(r);
        }
        if ((rc = store_head(r->st, r->key, &m))) return rc;
        r->size = m.size;
        if (m.size > LANCE_FILE2_SMALL_FILE_BYTES || m.size < r->whole.len) {
            core_buf_free(&r->whole);
            return 0;
        }
        /* the rest of a small file */
        core_buf rest = CORE_BUF_INIT;
        rc = fetch(r, r->whole.len, m.size - r->whole.len, &rest);
        if (rc == 0) rc = core_buf_append(&r->whole, rest.data, rest.len);
        core_buf_free(&rest);
        if (rc) return rc;
        r->mem = r->whole.data;
        return check_whole(r);
    }
    r->size = size;
    if (size > LANCE_FILE2_SMALL_FILE_BYTES) return 0;
    if ((rc = fetch(r, 0, size, &r->whole))) return rc;
    r->mem = r->whole.data;
    return check_whole(r);
}

int lance_file2_open(lance_file2_reader **out, store *s, const char *key, uint64_t size,
                     const lance_file2_read_options *opt)
{
    lance_file2_reader *r;
    *out = NULL;
    int rc = reader_new(&r, key, opt);
    if (rc) return rc;
    r->st = s;
    r->key = core_strdup(key);
    if (!r->key) rc = core_err_nomem();
    if (rc == 0) rc = load_small(r, size);
    if (rc == 0) rc = take_blocks(r, opt);
    if (rc == 0) rc = open_common(r);
    if (rc) {
        lance_file2_close(r);
        return rc;
    }
    *out = r;
    return 0;
}

int lance_file2_open_bytes(lance_file2_reader **out, const void *data, size_t len, const char *name,
                           const lance_file2_read_options *opt)
{
    lance_file2_reader *r;
    *out = NULL;
    int rc = reader_new(&r, name, opt);
    if (rc) return rc;
    r->mem = data ? data : (const uint8_t *)"";
    r->size = len;
    rc = open_common(r);
    if (rc) {
        lance_file2_close(r);
        return rc;
    }
    *out = r;
    return 0;
}

void lance_file2_expect(lance_file2_read_options *opts, const Lance__Table__DataFile *df)
{
    if (df->n_og_block_xxh3) {
        opts->block_bytes = df->has_og_block_bytes ? df->og_block_bytes : 0;
        opts->block_xxh3 = df->og_block_xxh3;
        opts->n_blocks = df->n_og_block_xxh3;
    }
    if (!df->has_og_xxh3) return;
    opts->flags |= LANCE_FILE2_READ_CHECKSUM;
    opts->xxh3 = df->og_xxh3;
}

const arrow_schema *lance_file2_schema(const lance_file2_reader *r)
{
    return &r->schema;
}

uint64_t lance_file2_num_rows(const lance_file2_reader *r)
{
    return r->rows;
}

const int32_t *lance_file2_field_ids(const lance_file2_reader *r, size_t *n)
{
    *n = r->n_ids;
    return r->ids;
}

/* ---- decoding ---------------------------------------------------------------------------- */

/* Decoded values of one column, growing page by page. */
typedef struct acc {
    arrow_type_id id;
    int width; /* bits; 0 for binary and nested */
    int32_t dim;
    int64_t len, nulls;
    core_buf validity, values, offsets;
    struct acc *child; /* fixed-size list items */
} acc;

typedef struct segment {
    uint64_t off;
    core_buf data;
} segment;

typedef struct dctx {
    lance_file2_reader *r;
    uint64_t budget; /* decoded bytes still allowed */
    /* current column and page, for messages and buffer lookup */
    size_t col, page;
    segment *segs;
    size_t n_segs;
    segment *pre; /* fetched for the whole read call up front (coalesced across columns) */
    size_t n_pre;
    const Lance__File__V2__ColumnMetadata__Page *pg;
} dctx;

#define CORRUPT(d, ...) page_err((d), OG_E_CORRUPT, __VA_ARGS__)
#define UNSUPPORTED(d, ...) page_err((d), OG_E_UNSUPPORTED, __VA_ARGS__)

static int page_err(const dctx *d, int code, const char *fmt, ...) CORE_PRINTF(3, 4);
static int page_err(const dctx *d, int code, const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return core_err(code, "%s: column %zu page %zu: %s", d->r->name, d->col, d->page, msg);
}

static int spend(dctx *d, uint64_t bytes)
{
    if (bytes > d->budget)
        return core_err(OG_E_RESOURCE_LIMIT,
                        "%s: column %zu: decoding needs more than the %" PRIu64 "-byte read limit",
                        d->r->name, d->col, d->r->max_bytes);
    d->budget -= bytes;
    return 0;
}

static void acc_free(acc *a)
{
    if (!a) return;
    core_buf_free(&a->validity);
    core_buf_free(&a->values);
    core_buf_free(&a->offsets);
    if (a->child) {
        acc_free(a->child);
        core_free(a->child);
    }
}

static int acc_init(acc *a, const arrow_type *t)
{
    memset(a, 0, sizeof *a);
    a->id = t->id;
    a->width = arrow_type_bit_width(t->id);
    if (arrow_type_is_binary_like(t->id)) {
        int rc = arrow_type_is_large(t->id) ? core_buf_append_u64le(&a->offsets, 0)
                                            : core_buf_append_u32le(&a->offsets, 0);
        if (rc) return rc;
    }
    if (t->id == ARROW_FIXED_SIZE_LIST) {
        a->dim = t->list_size;
        a->child = core_calloc(1, sizeof *a->child);
        if (!a->child) return core_err_nomem();
        return acc_init(a->child, &t->children[0].type);
    }
    return 0;
}

/* Append n bits (src NULL: n ones; src_all_zero: zeros) to a bit buffer holding `have` bits. */
static int bits_append(core_buf *b, int64_t have, const uint8_t *src, int64_t n, bool ones)
{
    size_t need = (size_t)((have + n + 7) / 8);
    if (b->len < need) {
        int rc = core_buf_append_zeros(b, need - b->len);
        if (rc) return rc;
    }
    if (src && have % 8 == 0) {
        memcpy(b->data + have / 8, src, (size_t)(n + 7) / 8);
        if ((have + n) % 8) b->data[(have + n) / 8] &= (uint8_t)((1u << ((have + n) % 8)) - 1);
        return 0;
    }
    if (!src) {
        /* bits past `have` are still zero: only ones need writing, a byte at a time inside */
        if (!ones) return 0;
        int64_t i = have, end = have + n;
        for (; i < end && (i & 7); i++)
            b->data[i >> 3] |= (uint8_t)(1u << (i & 7));
        if (end - i >= 8) {
            memset(b->data + (i >> 3), 0xff, (size_t)((end - i) >> 3));
            i += (end - i) & ~(int64_t)7;
        }
        for (; i < end; i++)
            b->data[i >> 3] |= (uint8_t)(1u << (i & 7));
        return 0;
    }
    for (int64_t i = 0; i < n; i++)
        if ((src[i >> 3] >> (i & 7)) & 1)
            b->data[(have + i) >> 3] |= (uint8_t)(1u << ((have + i) & 7));
    return 0;
}

static int acc_valid(acc *a, int64_t n)
{
    int rc = bits_append(&a->validity, a->len, NULL, n, true);
    if (rc == 0) a->len += n;
    return rc;
}

static int acc_nulls(dctx *d, acc *a, int64_t n)
{
    int rc = spend(d, (uint64_t)n / 8 + 1 + (uint64_t)n * (uint64_t)(a->width / 8));
    if (rc) return rc;
    if (a->width == 1)
        rc = bits_append(&a->values, a->len, NULL, n, false);
    else if (a->width > 0)
        rc = core_buf_append_zeros(&a->values, (size_t)n * (size_t)(a->width / 8));
    else if (arrow_type_is_binary_like(a->id)) {
        bool large = arrow_type_is_large(a->id);
        for (int64_t i = 0; rc == 0 && i < n; i++)
            rc = large ? core_buf_append_u64le(&a->offsets, a->values.len)
                       : core_buf_append_u32le(&a->offsets, (uint32_t)a->values.len);
    } else if (a->id == ARROW_FIXED_SIZE_LIST) {
        if (n > INT64_MAX / 64 / a->dim) return CORRUPT(d, "fixed-size list item count overflows");
        rc = acc_nulls(d, a->child, n * a->dim);
    }
    if (rc) return rc;
    rc = bits_append(&a->validity, a->len, NULL, n, false);
    if (rc) return rc;
    a->len += n;
    a->nulls += n;
    return 0;
}

static int get_buffer(dctx *d, const Lance__Encodings__Buffer *b, const uint8_t **p, uint64_t *len)
{
    if (!b) return CORRUPT(d, "flat encoding without a buffer");
    uint64_t off, size;
    if (b->buffer_type == LANCE__ENCODINGS__BUFFER__BUFFER_TYPE__page) {
        if (b->buffer_index >= d->pg->n_buffer_offsets)
            return CORRUPT(d, "buffer index %u but the page has %zu buffers", b->buffer_index,
                           d->pg->n_buffer_offsets);
        off = d->pg->buffer_offsets[b->buffer_index];
        size = d->pg->buffer_sizes[b->buffer_index];
    } else if (b->buffer_type == LANCE__ENCODINGS__BUFFER__BUFFER_TYPE__column) {
        const Lance__File__V2__ColumnMetadata *cm = d->r->cols[d->col];
        if (b->buffer_index >= cm->n_buffer_offsets)
            return CORRUPT(d, "column buffer index %u but the column has %zu", b->buffer_index,
                           cm->n_buffer_offsets);
        off = cm->buffer_offsets[b->buffer_index];
        size = cm->buffer_sizes[b->buffer_index];
    } else {
        return UNSUPPORTED(d, "buffer type %d is not supported", (int)b->buffer_type);
    }
    if (d->r->mem) { /* every buffer's range was checked against the file at open */
        *p = d->r->mem + off;
        *len = size;
        return 0;
    }
    for (size_t i = 0; i < d->n_segs + d->n_pre; i++) {
        const segment *s = i < d->n_segs ? &d->segs[i] : &d->pre[i - d->n_segs];
        if (off >= s->off && size <= s->data.len && off - s->off <= s->data.len - size) {
            *p = s->data.data + (off - s->off);
            *len = size;
            return 0;
        }
    }
    return core_err(OG_E_INTERNAL, "%s: column %zu: buffer at %" PRIu64 " was not fetched",
                    d->r->name, d->col, off);
}

/* Read n unsigned integers from a flat (optionally nullable/no_nulls) encoding. */
static int decode_uints(dctx *d, const Lance__Encodings__ArrayEncoding *e, uint64_t n,
                        uint64_t **out)
{
    *out = NULL;
    if (e && e->array_encoding_case == LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_NULLABLE &&
        e->nullable->nullability_case == LANCE__ENCODINGS__NULLABLE__NULLABILITY_NO_NULLS)
        e = e->nullable->no_nulls->values;
    if (!e || e->array_encoding_case != LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FLAT)
        return UNSUPPORTED(d, "offsets/indices must be a flat encoding");
    const Lance__Encodings__Flat *f = e->flat;
    if (f->compression && f->compression->scheme && f->compression->scheme[0])
        return UNSUPPORTED(d, "compressed buffers (%s) are not supported", f->compression->scheme);
    uint64_t bits = f->bits_per_value;
    if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
        return UNSUPPORTED(d, "%" PRIu64 "-bit offsets/indices are not supported", bits);
    const uint8_t *p;
    uint64_t len;
    int rc = get_buffer(d, f->buffer, &p, &len);
    if (rc) return rc;
    uint64_t wb = bits / 8;
    if (n > len / wb)
        return CORRUPT(
            d, "buffer of %" PRIu64 " bytes holds fewer than %" PRIu64 " %" PRIu64 "-bit values",
            len, n, bits);
    if ((rc = spend(d, n * 8))) return rc;
    uint64_t *v = core_malloc((size_t)n * 8 + 8);
    if (!v) return core_err_nomem();
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (wb == 8) {
        if (n) memcpy(v, p, (size_t)n * 8);
    } else if (wb == 4) {
        for (uint64_t i = 0; i < n; i++) {
            uint32_t x;
            memcpy(&x, p + i * 4, 4);
            v[i] = x;
        }
    } else
#endif
    {
        for (uint64_t i = 0; i < n; i++) {
            const uint8_t *q = p + i * wb;
            uint64_t x = 0;
            for (int k = (int)wb - 1; k >= 0; k--)
                x = (x << 8) | q[k];
            v[i] = x;
        }
    }
    *out = v;
    return 0;
}

static int decode_values(dctx *d, const Lance__Encodings__ArrayEncoding *e, uint64_t n, acc *a,
                         int depth);

static int decode_flat(dctx *d, const Lance__Encodings__Flat *f, uint64_t n, acc *a)
{
    if (a->width == 0) return CORRUPT(d, "flat encoding for a variable-width or nested column");
    if (f->bits_per_value != (uint64_t)a->width)
        return CORRUPT(d, "flat encoding of %" PRIu64 " bits for a %d-bit column",
                       f->bits_per_value, a->width);
    if (f->compression && f->compression->scheme && f->compression->scheme[0])
        return UNSUPPORTED(d, "compressed buffers (%s) are not supported", f->compression->scheme);
    const uint8_t *p;
    uint64_t len;
    int rc = get_buffer(d, f->buffer, &p, &len);
    if (rc) return rc;
    uint64_t need = a->width == 1 ? (n + 7) / 8 : n * (uint64_t)(a->width / 8);
    if (need > len)
        return CORRUPT(d, "values buffer of %" PRIu64 " bytes, %" PRIu64 " needed", len, need);
    if ((rc = spend(d, need + n / 8 + 1))) return rc;
    if (a->width == 1)
        rc = bits_append(&a->values, a->len, p, (int64_t)n, false);
    else
        rc = core_buf_append(&a->values, p, (size_t)need);
    if (rc) return rc;
    return acc_valid(a, (int64_t)n);
}

static int append_binary_row(acc *a, const uint8_t *p, uint64_t len, bool valid)
{
    int rc = core_buf_append(&a->values, p, (size_t)len);
    if (rc) return rc;
    if (arrow_type_is_large(a->id))
        rc = core_buf_append_u64le(&a->offsets, a->values.len);
    else if (a->values.len > INT32_MAX)
        return core_err(OG_E_RESOURCE_LIMIT,
                        "string column exceeds 2 GiB; read it as large_string");
    else
        rc = core_buf_append_u32le(&a->offsets, (uint32_t)a->values.len);
    if (rc) return rc;
    rc = bits_append(&a->validity, a->len, NULL, 1, valid);
    a->len++;
    if (!valid) a->nulls++;
    return rc;
}

static int decode_binary(dctx *d, const Lance__Encodings__Binary *b, uint64_t n, acc *a)
{
    if (!arrow_type_is_binary_like(a->id))
        return CORRUPT(d, "binary encoding for a non-binary column");
    if (!b->bytes ||
        b->bytes->array_encoding_case != LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FLAT)
        return UNSUPPORTED(d, "binary bytes must be a flat encoding");
    if (b->bytes->flat->bits_per_value != 8)
        return CORRUPT(d, "binary bytes of %" PRIu64 " bits per value",
                       b->bytes->flat->bits_per_value);
    const uint8_t *bytes;
    uint64_t blen;
    int rc = get_buffer(d, b->bytes->flat->buffer, &bytes, &blen);
    if (rc) return rc;
    uint64_t *offs;
    if ((rc = decode_uints(d, b->indices, n, &offs))) return rc;
    if ((rc = spend(d, blen + n * 8 + n / 8 + 1))) goto out;
    /* Pass 1: page-local ends, checked monotone and within the bytes. */
    uint64_t adj = b->null_adjustment, start = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = offs[i], end = v;
        if (adj && v >= adj) {
            end = v - adj;
            if (end >= adj) {
                rc = CORRUPT(d,
                             "string offset %" PRIu64 " exceeds twice the null adjustment %" PRIu64,
                             v, adj);
                goto out;
            }
        }
        if (end < start || end > blen) {
            rc = CORRUPT(
                d, "string row %" PRIu64 " spans [%" PRIu64 ", %" PRIu64 ") of %" PRIu64 " bytes",
                i, start, end, blen);
            goto out;
        }
        start = end;
    }
    /* Pass 2: the bytes in one copy (a null row spans no bytes, or bytes Arrow may keep under
     * a null slot), the offsets rebased, the validity. */
    bool large = arrow_type_is_large(a->id);
    size_t base = a->values.len;
    if (!large && base + start > INT32_MAX) {
        rc = core_err(OG_E_RESOURCE_LIMIT,
                      "%s: string column exceeds 2 GiB; read it as "
                      "large_string",
                      d->r->name);
        goto out;
    }
    if ((rc = core_buf_append(&a->values, bytes, (size_t)start))) goto out;
    if ((rc = core_buf_reserve(&a->offsets, (size_t)n * (large ? 8 : 4)))) goto out;
    if ((rc = bits_append(&a->validity, a->len, NULL, (int64_t)n, true))) goto out;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = offs[i];
        bool valid = !(adj && v >= adj);
        uint64_t end = base + (valid ? v : v - adj);
        if (large) {
            int64_t o = (int64_t)end;
            memcpy(a->offsets.data + a->offsets.len, &o, 8);
            a->offsets.len += 8;
        } else {
            int32_t o = (int32_t)end;
            memcpy(a->offsets.data + a->offsets.len, &o, 4);
            a->offsets.len += 4;
        }
        if (!valid) {
            int64_t row = a->len + (int64_t)i;
            a->validity.data[row >> 3] &= (uint8_t) ~(1u << (row & 7));
            a->nulls++;
        }
    }
    a->len += (int64_t)n;
out:
    core_free(offs);
    return rc;
}

static int decode_dictionary(dctx *d, const Lance__Encodings__Dictionary *dict, uint64_t n, acc *a,
                             int depth)
{
    if (!arrow_type_is_binary_like(a->id))
        return UNSUPPORTED(d, "dictionary encoding is only read for string/binary columns");
    acc items;
    arrow_type it =
        arrow_type_simple(arrow_type_is_large(a->id) ? ARROW_LARGE_BINARY : ARROW_BINARY);
    int rc = acc_init(&items, &it);
    if (rc) return rc;
    uint64_t *idx = NULL;
    if (!dict->items) rc = CORRUPT(d, "dictionary without items");
    if (rc == 0) rc = decode_values(d, dict->items, dict->num_dictionary_items, &items, depth + 1);
    if (rc == 0) rc = decode_uints(d, dict->indices, n, &idx);
    bool large = arrow_type_is_large(a->id);
    for (uint64_t i = 0; rc == 0 && i < n; i++) {
        uint64_t k = idx[i];
        if (k == 0) {
            rc = append_binary_row(a, NULL, 0, false);
            continue;
        }
        if (k > (uint64_t)items.len) {
            rc = CORRUPT(d, "dictionary index %" PRIu64 " beyond its %" PRId64 " items", k,
                         items.len);
            break;
        }
        int64_t s, e;
        if (large) {
            s = ((const int64_t *)items.offsets.data)[k - 1];
            e = ((const int64_t *)items.offsets.data)[k];
        } else {
            s = ((const int32_t *)items.offsets.data)[k - 1];
            e = ((const int32_t *)items.offsets.data)[k];
        }
        bool valid =
            items.validity.data && ((items.validity.data[(k - 1) >> 3] >> ((k - 1) & 7)) & 1);
        if ((rc = spend(d, (uint64_t)(e - s) + 8))) break;
        rc = append_binary_row(a, items.values.data + s, valid ? (uint64_t)(e - s) : 0, valid);
    }
    core_free(idx);
    acc_free(&items);
    return rc;
}

static int decode_values(dctx *d, const Lance__Encodings__ArrayEncoding *e, uint64_t n, acc *a,
                         int depth)
{
    if (!e) return CORRUPT(d, "missing array encoding");
    if (depth > MAX_PB_DEPTH) return CORRUPT(d, "array encoding nested too deeply");
    if (n > (uint64_t)INT64_MAX / 64) return CORRUPT(d, "page claims %" PRIu64 " values", n);
    int rc;
    switch (e->array_encoding_case) {
    case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FLAT:
        return decode_flat(d, e->flat, n, a);
    case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_NULLABLE: {
        const Lance__Encodings__Nullable *nl = e->nullable;
        switch (nl->nullability_case) {
        case LANCE__ENCODINGS__NULLABLE__NULLABILITY_NO_NULLS:
            return decode_values(d, nl->no_nulls->values, n, a, depth + 1);
        case LANCE__ENCODINGS__NULLABLE__NULLABILITY_ALL_NULLS:
            return acc_nulls(d, a, (int64_t)n);
        case LANCE__ENCODINGS__NULLABLE__NULLABILITY_SOME_NULLS: {
            const Lance__Encodings__ArrayEncoding *v = nl->some_nulls->validity;
            if (!v ||
                v->array_encoding_case != LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FLAT ||
                v->flat->bits_per_value != 1)
                return UNSUPPORTED(d, "validity must be a 1-bit flat encoding");
            const uint8_t *bits;
            uint64_t blen;
            if ((rc = get_buffer(d, v->flat->buffer, &bits, &blen))) return rc;
            if (blen < (n + 7) / 8)
                return CORRUPT(d, "validity buffer of %" PRIu64 " bytes for %" PRIu64 " rows", blen,
                               n);
            int64_t start = a->len;
            if ((rc = decode_values(d, nl->some_nulls->values, n, a, depth + 1))) return rc;
            if (a->len != start + (int64_t)n) return CORRUPT(d, "nullable values length mismatch");
            for (uint64_t i = 0; i < n; i++) {
                if ((bits[i >> 3] >> (i & 7)) & 1) continue;
                int64_t row = start + (int64_t)i;
                if ((a->validity.data[row >> 3] >> (row & 7)) & 1) {
                    a->validity.data[row >> 3] &= (uint8_t) ~(1u << (row & 7));
                    a->nulls++;
                }
            }
            return 0;
        }
        default:
            return UNSUPPORTED(d, "unknown nullability variant");
        }
    }
    case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_BINARY:
        return decode_binary(d, e->binary, n, a);
    case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_DICTIONARY:
        return decode_dictionary(d, e->dictionary, n, a, depth);
    case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_FIXED_SIZE_LIST: {
        const Lance__Encodings__FixedSizeList *fl = e->fixed_size_list;
        if (a->id != ARROW_FIXED_SIZE_LIST)
            return CORRUPT(d, "fixed-size list encoding for another type");
        if (fl->dimension != (uint32_t)a->dim)
            return CORRUPT(d, "fixed-size list dimension %u, schema says %d", fl->dimension,
                           (int)a->dim);
        if (fl->has_validity) return UNSUPPORTED(d, "fixed-size list items with inline validity");
        if (n > (uint64_t)INT64_MAX / 64 / (uint64_t)a->dim)
            return CORRUPT(d, "fixed-size list item count overflows");
        if ((rc = spend(d, n / 8 + 1))) return rc;
        int64_t before = a->child->len;
        if ((rc = decode_values(d, fl->items, n * (uint64_t)a->dim, a->child, depth + 1)))
            return rc;
        if (a->child->len != before + (int64_t)n * a->dim)
            return CORRUPT(d, "fixed-size list items mismatch");
        return acc_valid(a, (int64_t)n);
    }
    case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_LIST:
    case LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_SIMPLE_STRUCT:
        return CORRUPT(d, "list/struct encoding where values were expected");
    default:
        return UNSUPPORTED(d, "page encoding not supported by the 2.0 reader (fsst, bitpacking, "
                              "packed struct and other opt-in encodings are not read)");
    }
}

static int acc_finish(acc *a, const arrow_type *t, arrow_array **out)
{
    *out = NULL;
    arrow_array **kids = NULL;
    size_t nk = 0;
    if (a->child) {
        kids = core_calloc(1, sizeof *kids);
        if (!kids) return core_err_nomem();
        int rc = acc_finish(a->child, &t->children[0].type, &kids[0]);
        if (rc) {
            core_free(kids);
            return rc;
        }
        nk = 1;
    }
    void *offsets = NULL;
    if (arrow_type_is_binary_like(a->id)) offsets = core_buf_detach(&a->offsets, &(size_t){0});
    size_t vlen = a->values.len;
    void *values = core_buf_detach(&a->values, &(size_t){0});
    size_t vl;
    uint8_t *validity = core_buf_detach(&a->validity, &vl);
    return arrow_array_make(out, t, a->len, a->nulls, validity, offsets, values, vlen, kids, nk);
}

/* Fetch the byte ranges of column c's pages (and column buffers), coalescing ranges whose gap
 * is only alignment padding. */
typedef struct range {
    uint64_t off, len;
} range;

static int cmp_range(const void *x, const void *y)
{
    const range *a = x, *b = y;
    return a->off < b->off ? -1 : (a->off > b->off ? 1 : 0);
}

static void free_segments(dctx *d)
{
    for (size_t i = 0; i < d->n_segs; i++)
        core_buf_free(&d->segs[i].data);
    core_free(d->segs);
    d->segs = NULL;
    d->n_segs = 0;
}

static void free_prefetch(dctx *d)
{
    for (size_t i = 0; i < d->n_pre; i++)
        core_buf_free(&d->pre[i].data);
    core_free(d->pre);
    d->pre = NULL;
    d->n_pre = 0;
}

/* A prefetched segment holds [off, off+len). */
static bool prefetched(const dctx *d, uint64_t off, uint64_t len)
{
    for (size_t i = 0; i < d->n_pre; i++) {
        const segment *s = &d->pre[i];
        if (off >= s->off && off - s->off <= s->data.len && len <= s->data.len - (off - s->off))
            return true;
    }
    return false;
}

/* Pages [p0, p1) of column c: sum their lengths into *rows_before (rows of pages before p0)
 * etc. is the caller's business; this fetches their buffers (and the column buffers). */
static int fetch_column(dctx *d, size_t c, size_t p0, size_t p1)
{
    free_segments(d);
    const Lance__File__V2__ColumnMetadata *cm = d->r->cols[c];
    size_t n = cm->n_buffer_offsets;
    for (size_t p = p0; p < p1; p++)
        n += cm->pages[p]->n_buffer_offsets;
    if (n == 0) return 0;
    range *rg = core_malloc(n * sizeof *rg);
    if (!rg) return core_err_nomem();
    size_t k = 0;
    for (size_t i = 0; i < cm->n_buffer_offsets; i++)
        rg[k++] = (range){cm->buffer_offsets[i], cm->buffer_sizes[i]};
    for (size_t p = p0; p < p1; p++)
        for (size_t i = 0; i < cm->pages[p]->n_buffer_offsets; i++)
            rg[k++] = (range){cm->pages[p]->buffer_offsets[i], cm->pages[p]->buffer_sizes[i]};
    qsort(rg, n, sizeof *rg, cmp_range);
    /* merge: overlapping, touching, or separated by less than one alignment unit */
    size_t m = 0;
    for (size_t i = 1; i < n; i++) {
        uint64_t end = rg[m].off + rg[m].len; /* in range: checked at open */
        if (rg[i].off <= end + (LANCE_FILE2_ALIGN - 1)) {
            uint64_t e2 = rg[i].off + rg[i].len;
            if (e2 > end) rg[m].len = e2 - rg[m].off;
        } else {
            rg[++m] = rg[i];
        }
    }
    size_t n_seg = m + 1;
    int rc = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < n_seg; i++)
        total += rg[i].len;
    rc = spend(d, total);                /* charged as before, wherever the bytes come from */
    if (rc == 0 && d->r->mem) n_seg = 0; /* served from memory by get_buffer */
    if (rc == 0 && n_seg) {
        d->segs = core_calloc(n_seg, sizeof *d->segs);
        if (!d->segs) rc = core_err_nomem();
    }
    /* only ranges no prefetched segment holds are fetched; d->segs keeps those */
    for (size_t i = 0; rc == 0 && i < n_seg; i++) {
        if (rg[i].len == 0 || prefetched(d, rg[i].off, rg[i].len)) continue;
        segment *sg = &d->segs[d->n_segs++];
        rc = fetch_at(d->r, rg[i].off, rg[i].len, &sg->data, &sg->off);
    }
    core_free(rg);
    return rc;
}

static int page_encoding(dctx *d, const Lance__File__V2__ColumnMetadata__Page *pg,
                         Lance__Encodings__ArrayEncoding **out)
{
    *out = NULL;
    if (!pg->encoding || pg->encoding->location_case != LANCE__FILE__V2__ENCODING__LOCATION_DIRECT)
        return UNSUPPORTED(d, "page encoding is not stored inline (direct)");
    const ProtobufCBinaryData *bytes = &pg->encoding->direct->encoding;
    Lance__File__V2__AnyMessage *any;
    int rc = unpack((ProtobufCMessage **)&any, &lance__file__v2__any_message__descriptor,
                    bytes->data, bytes->len, d->r->name, "page encoding");
    if (rc) return rc;
    if (strcmp(any->type_url, "/lance.encodings.ArrayEncoding") != 0) {
        rc = UNSUPPORTED(d, "page encoding type '%.80s' is not a 2.0 ArrayEncoding", any->type_url);
    } else {
        rc = unpack((ProtobufCMessage **)out, &lance__encodings__array_encoding__descriptor,
                    any->value.data, any->value.len, d->r->name, "page ArrayEncoding");
    }
    protobuf_c_message_free_unpacked(&any->base, &pb_allocator);
    return rc;
}

/* Rows [lo, hi) of a field whose column(s) hold `expected` rows. */
typedef struct window {
    uint64_t expected, lo, hi;
} window;

static int decode_field(dctx *d, const arrow_field *f, size_t *col, window w, arrow_array **out,
                        int depth);

/* Check that the column's pages hold exactly w.expected rows and find the pages overlapping
 * [lo, hi): [*p0, *p1), with *first = the first row of page *p0. */
static int page_span(dctx *d, const Lance__File__V2__ColumnMetadata *cm, window w, size_t *p0,
                     size_t *p1, uint64_t *first)
{
    uint64_t rows = 0;
    *p0 = *p1 = cm->n_pages;
    *first = 0;
    for (size_t p = 0; p < cm->n_pages; p++) {
        uint64_t len = cm->pages[p]->length;
        d->page = p;
        if (len > w.expected - rows)
            return CORRUPT(d, "pages hold more than the %" PRIu64 " rows expected", w.expected);
        if (*p0 == cm->n_pages && len > 0 && rows + len > w.lo && w.lo < w.hi) {
            *p0 = p;
            *first = rows;
        }
        if (*p0 != cm->n_pages && *p1 == cm->n_pages && rows >= w.hi) *p1 = p;
        rows += len;
    }
    if (rows != w.expected)
        return core_err(OG_E_CORRUPT,
                        "%s: column %zu has %" PRIu64 " rows in its pages, want %" PRIu64,
                        d->r->name, d->col, rows, w.expected);
    if (*p0 == cm->n_pages) *p1 = *p0; /* empty window */
    return 0;
}

/* Rows [lo - first, hi - first) of a decoded array (the window inside the pages read). */
static int trim(arrow_array **a, uint64_t first, window w)
{
    if (w.lo == first && (uint64_t)(*a)->length == w.hi - w.lo) return 0;
    uint64_t n = w.hi - w.lo;
    int64_t *idx = core_malloc((size_t)n * sizeof *idx + 8);
    if (!idx) return core_err_nomem();
    for (uint64_t k = 0; k < n; k++)
        idx[k] = (int64_t)(w.lo - first + k);
    arrow_array *t;
    int rc = arrow_take(&t, *a, idx, (size_t)n);
    core_free(idx);
    if (rc) return rc;
    arrow_array_free(*a);
    *a = t;
    return 0;
}

static int decode_list(dctx *d, const arrow_field *f, size_t *col, window w, arrow_array **out,
                       int depth)
{
    const Lance__File__V2__ColumnMetadata *cm = d->r->cols[d->col];
    size_t p0, p1;
    uint64_t first;
    int rc = page_span(d, cm, w, &p0, &p1, &first);
    if (rc == 0) rc = fetch_column(d, d->col, p0, p1);
    if (rc) return rc;
    uint64_t nrows = w.hi - w.lo;
    if ((rc = spend(d, nrows * 12 + 16))) return rc;
    /* global item ends of the rows of pages [p0, p1), and their validity */
    uint64_t span_rows = 0;
    for (size_t p = p0; p < p1; p++)
        span_rows += cm->pages[p]->length;
    if ((rc = spend(d, span_rows * 9 + 16))) return rc;
    uint64_t *gend = core_malloc((size_t)span_rows * 8 + 8);
    uint8_t *gvalid = core_calloc((size_t)span_rows / 8 + 1, 1);
    if (!gend || !gvalid) {
        core_free(gend);
        core_free(gvalid);
        return core_err_nomem();
    }
    uint64_t items = 0, row = 0, base_p0 = 0;
    for (size_t p = 0; rc == 0 && p < cm->n_pages; p++) {
        const Lance__File__V2__ColumnMetadata__Page *pg = cm->pages[p];
        d->page = p;
        d->pg = pg;
        Lance__Encodings__ArrayEncoding *e;
        if ((rc = page_encoding(d, pg, &e))) break;
        if (e->array_encoding_case != LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_LIST) {
            rc = CORRUPT(d, "list column page is not list-encoded");
        } else if (pg->length == 0 && e->list->num_items) {
            rc = CORRUPT(d, "empty list page claims %" PRIu64 " items", e->list->num_items);
        } else if (e->list->num_items > (uint64_t)INT64_MAX - items) {
            rc = CORRUPT(d, "list item count overflows");
        } else if (p >= p0 && p < p1) {
            if (p == p0) base_p0 = items;
            uint64_t *v = NULL;
            uint64_t adj = e->list->null_offset_adjustment, k = e->list->num_items, start = 0;
            rc = decode_uints(d, e->list->offsets, pg->length, &v);
            for (uint64_t i = 0; rc == 0 && i < pg->length; i++) {
                uint64_t end = v[i];
                bool ok = true;
                if (adj && end >= adj) {
                    end -= adj;
                    ok = false;
                }
                if (end < start || end > k) {
                    rc = CORRUPT(d,
                                 "list row %" PRIu64 " spans [%" PRIu64 ", %" PRIu64 ") of %" PRIu64
                                 " items",
                                 i, start, end, k);
                    break;
                }
                gend[row + i] = items + end;
                if (ok) gvalid[(row + i) >> 3] |= (uint8_t)(1u << ((row + i) & 7));
                start = end;
            }
            if (rc == 0 && pg->length && start != k)
                rc = CORRUPT(d, "list page has %" PRIu64 " items but its rows end at %" PRIu64, k,
                             start);
            row += pg->length;
            core_free(v);
        }
        if (rc == 0) items += e->list->num_items;
        protobuf_c_message_free_unpacked(&e->base, &pb_allocator);
    }
    /* the window's rows: offsets rebased to the first item of row lo */
    uint64_t ilo = 0, ihi = 0;
    int32_t *offs = NULL;
    uint8_t *valid = NULL;
    int64_t nulls = 0;
    if (rc == 0 && nrows) {
        uint64_t r0 = w.lo - first; /* index of row lo inside the decoded span */
        ilo = r0 == 0 ? base_p0 : gend[r0 - 1];
        ihi = gend[r0 + nrows - 1];
        if (ihi - ilo > INT32_MAX)
            rc = core_err(OG_E_RESOURCE_LIMIT, "%s: list column has more than 2^31 items",
                          d->r->name);
    }
    if (rc == 0) {
        offs = core_malloc((size_t)nrows * 4 + 4);
        valid = core_calloc((size_t)nrows / 8 + 1, 1);
        if (!offs || !valid) rc = core_err_nomem();
    }
    if (rc == 0) {
        offs[0] = 0;
        uint64_t r0 = w.lo - first;
        for (uint64_t k = 0; k < nrows; k++) {
            offs[k + 1] = (int32_t)(gend[r0 + k] - ilo);
            if ((gvalid[(r0 + k) >> 3] >> ((r0 + k) & 7)) & 1)
                valid[k >> 3] |= (uint8_t)(1u << (k & 7));
            else
                nulls++;
        }
    }
    core_free(gend);
    core_free(gvalid);
    arrow_array **kids = NULL;
    if (rc == 0) {
        kids = core_calloc(1, sizeof *kids);
        if (!kids)
            rc = core_err_nomem();
        else
            rc = decode_field(d, &f->type.children[0], col, (window){items, ilo, ihi}, &kids[0],
                              depth + 1);
        if (rc) {
            core_free(kids);
            kids = NULL;
        }
    }
    if (rc) {
        core_free(offs);
        core_free(valid);
        return rc;
    }
    return arrow_array_make(out, &f->type, (int64_t)nrows, nulls, valid, offs, NULL, 0, kids, 1);
}

static int decode_struct(dctx *d, const arrow_field *f, size_t *col, window w, arrow_array **out,
                         int depth)
{
    const Lance__File__V2__ColumnMetadata *cm = d->r->cols[d->col];
    int rc = 0;
    for (size_t p = 0; rc == 0 && p < cm->n_pages; p++) {
        d->page = p;
        d->pg = cm->pages[p];
        Lance__Encodings__ArrayEncoding *e;
        if ((rc = page_encoding(d, cm->pages[p], &e))) break;
        if (e->array_encoding_case !=
            LANCE__ENCODINGS__ARRAY_ENCODING__ARRAY_ENCODING_SIMPLE_STRUCT)
            rc = UNSUPPORTED(d, "struct column page is not a simple struct");
        protobuf_c_message_free_unpacked(&e->base, &pb_allocator);
    }
    /* lance may omit struct pages entirely; when present they must cover the rows */
    size_t p0, p1;
    uint64_t first;
    if (rc == 0 && cm->n_pages) rc = page_span(d, cm, w, &p0, &p1, &first);
    size_t nk = f->type.n_children;
    arrow_array **kids = core_calloc(nk ? nk : 1, sizeof *kids);
    if (rc == 0 && !kids) rc = core_err_nomem();
    for (size_t k = 0; rc == 0 && k < nk; k++)
        rc = decode_field(d, &f->type.children[k], col, w, &kids[k], depth + 1);
    if (rc) {
        for (size_t k = 0; kids && k < nk; k++)
            arrow_array_free(kids[k]);
        core_free(kids);
        return rc;
    }
    if (nk == 0) {
        core_free(kids);
        kids = NULL;
    }
    return arrow_array_make(out, &f->type, (int64_t)(w.hi - w.lo), 0, NULL, NULL, NULL, 0, kids,
                            nk);
}

static int decode_field(dctx *d, const arrow_field *f, size_t *col, window w, arrow_array **out,
                        int depth)
{
    *out = NULL;
    if (depth > 32) return core_err(OG_E_CORRUPT, "%s: fields nested too deeply", d->r->name);
    size_t c = (*col)++;
    if (c >= d->r->n_cols)
        return core_err(OG_E_CORRUPT, "%s: schema needs more columns than the file has",
                        d->r->name);
    d->col = c;
    d->page = 0;
    if (f->type.id == ARROW_LIST) return decode_list(d, f, col, w, out, depth);
    if (f->type.id == ARROW_STRUCT) return decode_struct(d, f, col, w, out, depth);
    const Lance__File__V2__ColumnMetadata *cm = d->r->cols[c];
    size_t p0, p1;
    uint64_t first;
    int rc = page_span(d, cm, w, &p0, &p1, &first);
    if (rc == 0) rc = fetch_column(d, c, p0, p1);
    if (rc) return rc;
    acc a;
    if ((rc = acc_init(&a, &f->type))) {
        acc_free(&a);
        return rc;
    }
    for (size_t p = p0; rc == 0 && p < p1; p++) {
        const Lance__File__V2__ColumnMetadata__Page *pg = cm->pages[p];
        d->page = p;
        d->pg = pg;
        Lance__Encodings__ArrayEncoding *e;
        if ((rc = page_encoding(d, pg, &e))) break;
        int64_t before = a.len;
        rc = decode_values(d, e, pg->length, &a, 0);
        if (rc == 0 && a.len != before + (int64_t)pg->length)
            rc = CORRUPT(d, "page decoded to %" PRId64 " rows, its length is %" PRIu64,
                         a.len - before, pg->length);
        protobuf_c_message_free_unpacked(&e->base, &pb_allocator);
    }
    if (rc == 0) rc = acc_finish(&a, &f->type, out);
    acc_free(&a);
    if (rc == 0) rc = trim(out, first, w);
    if (rc) {
        arrow_array_free(*out);
        *out = NULL;
    }
    return rc;
}

/* ---- prefetch: the byte ranges of one read call, coalesced across columns ----------------- */

typedef struct plan {
    range *rg;
    size_t n, cap;
} plan;

static int plan_push(plan *pl, uint64_t off, uint64_t len)
{
    if (pl->n == pl->cap) {
        size_t cap = pl->cap ? pl->cap * 2 : 64;
        range *g = core_realloc(pl->rg, cap * sizeof *g);
        if (!g) return core_err_nomem();
        pl->rg = g;
        pl->cap = cap;
    }
    pl->rg[pl->n++] = (range){off, len};
    return 0;
}

/* The column buffers of column c and the buffers of its pages that overlap rows [lo, hi) (all
 * pages when all_pages). Mirrors page_span loosely: a page it misses is fetched on its own. */
static int plan_column(plan *pl, const lance_file2_reader *r, size_t c, window w, bool all_pages)
{
    const Lance__File__V2__ColumnMetadata *cm = r->cols[c];
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < cm->n_buffer_offsets; i++)
        rc = plan_push(pl, cm->buffer_offsets[i], cm->buffer_sizes[i]);
    uint64_t rows = 0;
    for (size_t p = 0; rc == 0 && p < cm->n_pages; p++) {
        const Lance__File__V2__ColumnMetadata__Page *pg = cm->pages[p];
        uint64_t len = pg->length;
        if (len > UINT64_MAX - rows) break; /* corrupt: decoding reports it */
        bool need =
            all_pages || (len ? rows < w.hi && rows + len > w.lo : rows >= w.lo && rows < w.hi);
        for (size_t k = 0; need && rc == 0 && k < pg->n_buffer_offsets; k++)
            rc = plan_push(pl, pg->buffer_offsets[k], pg->buffer_sizes[k]);
        rows += len;
    }
    return rc;
}

/* Plan field f's columns (pre-order from *col). Columns under a list hold items, whose window
 * is known only after decoding the list: planned when every row is read (then every item is),
 * else left to decoding. Struct columns have no buffers decoding reads. */
static int plan_field(plan *pl, const lance_file2_reader *r, const arrow_field *f, size_t *col,
                      window w, bool under_list, int depth)
{
    if (depth > 32 || *col >= r->n_cols) return 0; /* decoding reports it */
    size_t c = (*col)++;
    bool all_rows = w.lo == 0 && w.hi == w.expected;
    int rc = 0;
    if (f->type.id != ARROW_STRUCT && (!under_list || all_rows))
        rc = plan_column(pl, r, c, w, under_list);
    if (rc == 0 && f->type.id == ARROW_LIST && f->type.n_children == 1)
        rc = plan_field(pl, r, &f->type.children[0], col, w, true, depth + 1);
    for (size_t k = 0; rc == 0 && f->type.id == ARROW_STRUCT && k < f->type.n_children; k++)
        rc = plan_field(pl, r, &f->type.children[k], col, w, under_list, depth + 1);
    return rc;
}

/* Fetch the ranges top-level fields cols[0..n) need for window w, merged when less than
 * LANCE_FILE2_COALESCE_GAP apart, into d->pre; nothing when they exceed
 * LANCE_FILE2_PREFETCH_MAX or the read's budget (decoding then fetches column by column). */
static int prefetch(dctx *d, const size_t *cols, size_t n, const size_t *first, window w)
{
    lance_file2_reader *r = d->r;
    plan pl = {NULL, 0, 0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (cols[i] >= r->schema.n_fields) goto out; /* the read refuses it */
        size_t c = first[cols[i]];
        rc = plan_field(&pl, r, &r->schema.fields[cols[i]], &c, w, false, 0);
    }
    if (rc || pl.n == 0) goto out;
    qsort(pl.rg, pl.n, sizeof *pl.rg, cmp_range);
    range *rg = pl.rg;
    size_t m = 0;
    for (size_t i = 1; i < pl.n; i++) {
        uint64_t end = rg[m].off + rg[m].len; /* in range: checked at open */
        if (rg[i].off < end || rg[i].off - end < LANCE_FILE2_COALESCE_GAP) {
            uint64_t e2 = rg[i].off + rg[i].len;
            if (e2 > end) rg[m].len = e2 - rg[m].off;
        } else {
            rg[++m] = rg[i];
        }
    }
    size_t n_seg = m + 1;
    uint64_t total = 0;
    for (size_t i = 0; i < n_seg; i++)
        total += rg[i].len;
    if (total > LANCE_FILE2_PREFETCH_MAX || total > d->budget) goto out;
    d->pre = core_calloc(n_seg, sizeof *d->pre);
    if (!d->pre) {
        rc = core_err_nomem();
        goto out;
    }
    for (size_t i = 0; rc == 0 && i < n_seg; i++) {
        if (rg[i].len == 0) continue;
        segment *sg = &d->pre[d->n_pre++];
        rc = fetch_at(r, rg[i].off, rg[i].len, &sg->data, &sg->off);
    }
out:
    core_free(pl.rg);
    return rc;
}

int lance_file2_read(lance_file2_reader *r, const size_t *cols, size_t n, uint64_t row_start,
                     uint64_t count, arrow_batch **out)
{
    *out = NULL;
    size_t nf = r->schema.n_fields;
    size_t *sel = NULL;
    if (!cols) {
        n = nf;
        sel = core_malloc((n ? n : 1) * sizeof *sel);
        if (!sel) return core_err_nomem();
        for (size_t i = 0; i < n; i++)
            sel[i] = i;
        cols = sel;
    }
    if (row_start > r->rows) {
        core_free(sel);
        return core_err(OG_E_BAD_REQUEST, "%s: row %" PRIu64 " is past the file's %" PRIu64 " rows",
                        r->name, row_start, r->rows);
    }
    if (count > r->rows - row_start) count = r->rows - row_start;
    /* first column of every top-level field */
    size_t *first = core_malloc((nf + 1) * sizeof *first);
    arrow_array **arrs = core_calloc(n ? n : 1, sizeof *arrs);
    arrow_schema s;
    arrow_schema_init(&s);
    int rc = (!first || !arrs) ? core_err_nomem() : 0;
    for (size_t i = 0, c = 0; rc == 0 && i <= nf; i++) {
        first[i] = c;
        if (i < nf) {
            arrow_schema one = {1, &r->schema.fields[i]};
            c += lance_field_count(&one);
        }
    }
    dctx d = {r, r->max_bytes, 0, 0, NULL, 0, NULL, 0, NULL};
    window w = {r->rows, row_start, row_start + count};
    if (rc == 0 && !r->mem && !(r->flags & LANCE_FILE2_READ_EXACT) && count)
        rc = prefetch(&d, cols, n, first, w);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (cols[i] >= nf) {
            rc = core_err(OG_E_BAD_REQUEST, "%s: column %zu requested but the file has %zu fields",
                          r->name, cols[i], nf);
            break;
        }
        size_t c = first[cols[i]];
        rc = decode_field(&d, &r->schema.fields[cols[i]], &c, w, &arrs[i], 0);
        if (rc == 0) rc = arrow_array_validate(arrs[i]);
        if (rc == 0) rc = arrow_schema_add(&s, &r->schema.fields[cols[i]]);
        if (rc == 0 && !r->schema.fields[cols[i]].nullable && arrs[i]->null_count)
            rc = core_err(OG_E_CORRUPT, "%s: non-nullable field %s holds nulls", r->name,
                          r->schema.fields[cols[i]].name);
    }
    free_segments(&d);
    free_prefetch(&d);
    if (rc == 0) rc = arrow_batch_new(out, &s, arrs, n);
    if (rc == 0) (*out)->num_rows = (int64_t)count;
    for (size_t i = 0; arrs && i < n; i++)
        arrow_array_free(arrs[i]);
    core_free(arrs);
    core_free(first);
    core_free(sel);
    arrow_schema_clear(&s);
    return rc;
}
