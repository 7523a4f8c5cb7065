/* Lance deletion files: portable roaring `.bin` (read and write) and lancedb's Arrow IPC
 * `.arrow` (read), with a small bounds-checked flatbuffers walk and libzstd. */
#include "lance/deletion.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/hash.h"
#include "lance/paths.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <zstd.h>

static int bad(const char *kind, const char *object, const char *fmt, ...) CORE_PRINTF(3, 4);
static int bad(const char *kind, const char *object, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    core_err(OG_E_CORRUPT, "corrupt lance deletion file %s (%s): %s", object ? object : "(bytes)",
             kind, msg);
    if (object) core_err_detail(CORE_ERR_OBJECT, object);
    return OG_E_CORRUPT;
}

static uint16_t rd16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* ---- .bin: portable roaring ------------------------------------------------------------- */

#define COOKIE_NO_RUN 12346u
#define COOKIE_RUN 12347u
#define ARRAY_MAX 4096u
#define BITMAP_BYTES 8192u

int lance_deletion_bin_encode(core_buf *out, const roaring_bitmap_t *rows)
{
    core_buf_clear(out);
    roaring_bitmap_t *c = roaring_bitmap_copy(rows);
    if (!c) return core_err_nomem();
    /* lance-format-subset.md §4.1: write only array and bitmap containers. */
    roaring_bitmap_remove_run_compression(c);
    size_t n = roaring_bitmap_portable_size_in_bytes(c);
    int rc = core_buf_reserve(out, n);
    if (!rc) {
        size_t w = roaring_bitmap_portable_serialize(c, (char *)out->data);
        if (w != n)
            rc = core_err(OG_E_INTERNAL, "roaring serialized %zu of %zu bytes", w, n);
        else
            out->len = n;
    }
    roaring_bitmap_free(c);
    return rc;
}

int lance_deletion_bin_decode(roaring_bitmap_t **out, const void *data, size_t len,
                              const char *object)
{
    *out = NULL;
    const unsigned char *b = data;
    const char *K = "roaring .bin";
    if (len < 4) return bad(K, object, "%zu bytes is too short", len);
    uint32_t cookie = rd32(b);
    size_t pos = 4, count;
    int has_run = 0;
    const unsigned char *runflags = NULL;
    if (cookie == COOKIE_NO_RUN) {
        if (len < 8) return bad(K, object, "truncated container count");
        count = rd32(b + 4);
        pos = 8;
    } else if ((cookie & 0xFFFFu) == COOKIE_RUN) {
        has_run = 1;
        count = (size_t)(cookie >> 16) + 1;
        size_t fl = (count + 7) / 8;
        if (len - pos < fl) return bad(K, object, "truncated run-container flags");
        runflags = b + pos;
        pos += fl;
    } else {
        return bad(K, object, "unknown cookie %" PRIu32 " (not a portable roaring bitmap)", cookie);
    }
    if (count > 65536) return bad(K, object, "%zu containers (at most 65536)", count);
    if ((len - pos) / 4 < count) return bad(K, object, "truncated container headers");
    const unsigned char *hdr = b + pos;
    pos += 4 * count;
    if (!has_run || count >= 4) { /* the offset table: present, not needed for reading */
        if ((len - pos) / 4 < count) return bad(K, object, "truncated offset table");
        pos += 4 * count;
    }
    roaring_bitmap_t *r = roaring_bitmap_create();
    uint32_t *vals = core_malloc(65536 * sizeof *vals);
    if (!r || !vals) {
        if (r) roaring_bitmap_free(r); /* CRoaring 0.2 does not accept NULL */
        core_free(vals);
        return core_err_nomem();
    }
    int rc = 0;
    long prev_key = -1;
    for (size_t i = 0; i < count && !rc; i++) {
        uint32_t key = rd16(hdr + 4 * i), card = (uint32_t)rd16(hdr + 4 * i + 2) + 1;
        if ((long)key <= prev_key) {
            rc = bad(K, object, "container keys are not increasing (%" PRIu32 ")", key);
            break;
        }
        prev_key = key;
        uint32_t hi = key << 16;
        size_t nv = 0;
        if (has_run && (runflags[i / 8] >> (i % 8) & 1)) {
            if (len - pos < 2) {
                rc = bad(K, object, "truncated run container");
                break;
            }
            uint32_t runs = rd16(b + pos);
            pos += 2;
            if ((len - pos) / 4 < runs) {
                rc = bad(K, object, "truncated runs");
                break;
            }
            long last = -1;
            for (uint32_t j = 0; j < runs && !rc; j++) {
                uint32_t start = rd16(b + pos + 4 * j), l = rd16(b + pos + 4 * j + 2);
                if ((long)start <= last || start + l > 65535u) {
                    rc = bad(K, object, "run containers overlap or overflow");
                    break;
                }
                for (uint32_t x = start; x <= start + l; x++)
                    vals[nv++] = hi | x;
                last = (long)(start + l);
            }
            pos += 4 * (size_t)runs;
        } else if (card <= ARRAY_MAX) {
            if ((len - pos) / 2 < card) {
                rc = bad(K, object, "truncated array container");
                break;
            }
            long last = -1;
            for (uint32_t j = 0; j < card; j++) {
                uint32_t x = rd16(b + pos + 2 * j);
                if ((long)x <= last) {
                    rc = bad(K, object, "array container values are not increasing");
                    break;
                }
                vals[nv++] = hi | x;
                last = (long)x;
            }
            pos += 2 * (size_t)card;
        } else {
            if (len - pos < BITMAP_BYTES) {
                rc = bad(K, object, "truncated bitmap container");
                break;
            }
            for (uint32_t w = 0; w < BITMAP_BYTES / 8; w++) {
                uint64_t word = rd64(b + pos + 8 * w);
                while (word) {
                    vals[nv++] = hi | (w * 64 + (uint32_t)__builtin_ctzll(word));
                    word &= word - 1;
                }
            }
            pos += BITMAP_BYTES;
        }
        if (rc) break;
        if (nv != card) {
            rc = bad(K, object, "container %zu holds %zu values but its header says %" PRIu32, i,
                     nv, card);
            break;
        }
        roaring_bitmap_add_many(r, nv, vals);
    }
    if (!rc && pos != len) rc = bad(K, object, "%zu unexpected bytes after the bitmap", len - pos);
    core_free(vals);
    if (rc) {
        roaring_bitmap_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

/* ---- .arrow: Arrow IPC file, one UInt32 column -------------------------------------------- */

/* A flatbuffer: every position is checked against n before it is read. */
typedef struct fb {
    const unsigned char *b;
    size_t n;
} fb;

typedef struct fbt { /* a table */
    size_t pos, vt, vtsize;
} fbt;

static int fb_table(const fb *f, size_t pos, fbt *t)
{
    if (pos > f->n || f->n - pos < 4) return -1;
    int32_t so = (int32_t)rd32(f->b + pos);
    int64_t vt = (int64_t)pos - so;
    if (vt < 0 || (uint64_t)vt > f->n - 4) return -1; /* reads are bytewise: no alignment */
    size_t vtsize = rd16(f->b + vt);
    if (vtsize < 4 || (vtsize & 1) || vtsize > f->n - (size_t)vt) return -1;
    size_t tsize = rd16(f->b + vt + 2);
    if (tsize < 4 || tsize > f->n - pos) return -1;
    t->pos = pos;
    t->vt = (size_t)vt;
    t->vtsize = vtsize;
    return 0;
}

/* Position of field idx of t, 0 if absent; -1 if its `size` bytes do not fit. */
static int64_t fb_field(const fb *f, const fbt *t, unsigned idx, size_t size)
{
    size_t at = 4 + 2 * (size_t)idx;
    if (at + 2 > t->vtsize) return 0;
    size_t off = rd16(f->b + t->vt + at);
    if (off == 0) return 0;
    size_t p = t->pos + off;
    if (p > f->n || f->n - p < size) return -1;
    return (int64_t)p;
}

static int fb_scalar(const fb *f, const fbt *t, unsigned idx, size_t size, uint64_t dflt,
                     uint64_t *v)
{
    int64_t p = fb_field(f, t, idx, size);
    if (p < 0) return -1;
    if (p == 0) {
        *v = dflt;
        return 0;
    }
    const unsigned char *q = f->b + p;
    *v = size == 1 ? q[0] : size == 2 ? rd16(q) : size == 4 ? rd32(q) : rd64(q);
    return 0;
}

/* Follow the uoffset in field idx: 1 found, 0 absent, -1 bad. */
static int fb_ref(const fb *f, const fbt *t, unsigned idx, size_t *target)
{
    int64_t p = fb_field(f, t, idx, 4);
    if (p <= 0) return (int)p;
    uint64_t tgt = (uint64_t)p + rd32(f->b + p);
    if (tgt >= f->n) return -1;
    *target = (size_t)tgt;
    return 1;
}

/* A vector at `pos` with elements of esize bytes: count and first element position. */
static int fb_vector(const fb *f, size_t pos, size_t esize, size_t *count, size_t *first)
{
    if (pos > f->n || f->n - pos < 4) return -1;
    uint64_t c = rd32(f->b + pos);
    if (c > (f->n - pos - 4) / (esize ? esize : 1)) return -1;
    *count = (size_t)c;
    *first = pos + 4;
    return 0;
}

static int fb_subtable(const fb *f, const fbt *t, unsigned idx, fbt *out)
{
    size_t tgt = 0;
    int r = fb_ref(f, t, idx, &tgt);
    if (r <= 0) return r == 0 ? 0 : -1;
    return fb_table(f, tgt, out) == 0 ? 1 : -1;
}

#define ARROW_MAGIC "ARROW1"
#define TYPE_INT 2
#define HEADER_RECORD_BATCH 3
#define CODEC_ZSTD 1

/* Check the footer's schema: exactly one field `row_id`, Int(32), unsigned or signed. */
static int check_schema(const fb *f, const fbt *schema, int *is_signed, const char *object)
{
    const char *K = "arrow";
    uint64_t endian;
    if (fb_scalar(f, schema, 0, 2, 0, &endian)) return bad(K, object, "bad schema table");
    if (endian != 0) {
        core_err(OG_E_UNSUPPORTED, "big-endian arrow deletion file %s", object ? object : "");
        return OG_E_UNSUPPORTED;
    }
    size_t fv, n, first;
    if (fb_ref(f, schema, 1, &fv) != 1 || fb_vector(f, fv, 4, &n, &first))
        return bad(K, object, "schema without fields");
    if (n != 1) return bad(K, object, "schema has %zu fields, expected one (row_id)", n);
    fbt fld, ty;
    uint64_t tgt = (uint64_t)first + rd32(f->b + first);
    if (tgt >= f->n || fb_table(f, (size_t)tgt, &fld)) return bad(K, object, "bad field table");
    size_t sp, sn, sfirst;
    if (fb_ref(f, &fld, 0, &sp) != 1 || fb_vector(f, sp, 1, &sn, &sfirst))
        return bad(K, object, "field without a name");
    if (sn != 6 || memcmp(f->b + sfirst, "row_id", 6) != 0)
        return bad(K, object, "the column is not named row_id");
    uint64_t tt, bits, sign;
    if (fb_scalar(f, &fld, 2, 1, 0, &tt) || tt != TYPE_INT || fb_subtable(f, &fld, 3, &ty) != 1)
        return bad(K, object, "row_id is not an integer column");
    if (fb_scalar(f, &ty, 0, 4, 0, &bits) || fb_scalar(f, &ty, 1, 1, 0, &sign) || bits != 32)
        return bad(K, object, "row_id is not a 32-bit integer column");
    *is_signed = sign != 0;
    return 0;
}

/* A body buffer, decompressed if the batch is compressed: p and n point into data or into
 * *owned (freed by the caller). */
static int body_buffer(const unsigned char *body, uint64_t body_len, const fb *f, size_t bufs_first,
                       size_t i, int compressed, uint64_t max_len, const unsigned char **p,
                       size_t *n, unsigned char **owned, const char *object)
{
    const char *K = "arrow";
    const unsigned char *e = f->b + bufs_first + 16 * i;
    uint64_t off = rd64(e), len = rd64(e + 8);
    if (off > body_len || len > body_len - off)
        return bad(K, object, "buffer %zu [%" PRIu64 ", +%" PRIu64 ") is outside the body", i, off,
                   len);
    *p = body + off;
    *n = (size_t)len;
    *owned = NULL;
    if (!compressed || len == 0) return 0;
    if (len < 8) return bad(K, object, "compressed buffer %zu has no length prefix", i);
    int64_t ulen = (int64_t)rd64(body + off);
    if (ulen == -1) {
        *p = body + off + 8;
        *n = (size_t)(len - 8);
        return 0;
    }
    if (ulen < 0 || (uint64_t)ulen > max_len)
        return bad(K, object,
                   "buffer %zu claims %" PRId64 " uncompressed bytes (at most %" PRIu64 ")", i,
                   ulen, max_len);
    unsigned char *dst = core_malloc(ulen ? (size_t)ulen : 1);
    if (!dst) return core_err_nomem();
    size_t got = ZSTD_decompress(dst, (size_t)ulen, body + off + 8, (size_t)(len - 8));
    if (ZSTD_isError(got) || got != (size_t)ulen) {
        core_free(dst);
        return bad(K, object, "buffer %zu does not decompress (zstd: %s)", i,
                   ZSTD_isError(got) ? ZSTD_getErrorName(got) : "wrong length");
    }
    *p = dst;
    *n = (size_t)ulen;
    *owned = dst;
    return 0;
}

static int read_batch(const unsigned char *file, size_t flen, const unsigned char *block,
                      int is_signed, roaring_bitmap_t *r, const char *object)
{
    const char *K = "arrow";
    uint64_t off = rd64(block), mlen = (uint64_t)(int64_t)(int32_t)rd32(block + 8),
             blen = rd64(block + 16);
    if (off > flen || mlen > flen - off || blen > flen - off - mlen || mlen < 8)
        return bad(K, object,
                   "record batch block [%" PRIu64 ", +%" PRIu64 "+%" PRIu64 ") is outside the file",
                   off, mlen, blen);
    const unsigned char *m = file + off;
    size_t hdr = 0;
    uint32_t l = rd32(m);
    if (l == 0xFFFFFFFFu) { /* continuation marker, then the length */
        l = rd32(m + 4);
        hdr = 8;
    } else {
        hdr = 4;
    }
    if (l > mlen - hdr) return bad(K, object, "message metadata overruns its block");
    fb f = {m + hdr, l};
    fbt msg, rb, comp;
    uint64_t root = l >= 4 ? rd32(f.b) : UINT64_MAX;
    if (root >= f.n || fb_table(&f, (size_t)root, &msg)) return bad(K, object, "bad message");
    uint64_t ht;
    if (fb_scalar(&f, &msg, 1, 1, 0, &ht) || ht != HEADER_RECORD_BATCH ||
        fb_subtable(&f, &msg, 2, &rb) != 1)
        return bad(K, object, "block is not a record batch");
    uint64_t rows;
    if (fb_scalar(&f, &rb, 0, 8, 0, &rows)) return bad(K, object, "bad record batch");
    if (rows > LANCE_DELETION_ARROW_MAX_ROWS)
        return bad(K, object, "implausible row count %" PRIu64, rows);
    size_t np, nn, nfirst, bp, bn, bfirst;
    if (fb_ref(&f, &rb, 1, &np) != 1 || fb_vector(&f, np, 16, &nn, &nfirst) || nn != 1)
        return bad(K, object, "record batch does not have exactly one field node");
    uint64_t node_len = rd64(f.b + nfirst), nulls = rd64(f.b + nfirst + 8);
    if (node_len != rows) return bad(K, object, "field node length differs from the batch's");
    if (nulls != 0) return bad(K, object, "%" PRIu64 " null row ids", nulls);
    if (fb_ref(&f, &rb, 2, &bp) != 1 || fb_vector(&f, bp, 16, &bn, &bfirst) || bn != 2)
        return bad(K, object, "record batch does not have two buffers");
    int cs = fb_subtable(&f, &rb, 3, &comp), compressed = 0;
    if (cs < 0) return bad(K, object, "bad compression table");
    if (cs == 1) {
        uint64_t codec, method;
        if (fb_scalar(&f, &comp, 0, 1, 0, &codec) || fb_scalar(&f, &comp, 1, 1, 0, &method))
            return bad(K, object, "bad compression table");
        if (codec != CODEC_ZSTD || method != 0) {
            core_err(OG_E_UNSUPPORTED,
                     "arrow deletion file %s uses compression codec %" PRIu64 " (only zstd)",
                     object ? object : "", codec);
            return OG_E_UNSUPPORTED;
        }
        compressed = 1;
    }
    const unsigned char *body = m + mlen, *vals = NULL;
    size_t vn = 0;
    unsigned char *owned = NULL;
    uint64_t need = rows * 4;
    int rc =
        body_buffer(body, blen, &f, bfirst, 1, compressed, need + 64, &vals, &vn, &owned, object);
    if (rc) return rc;
    if (vn < need) {
        core_free(owned);
        return bad(K, object, "values buffer holds %zu bytes for %" PRIu64 " rows", vn, rows);
    }
    for (uint64_t i = 0; i < rows; i++) {
        uint32_t x = rd32(vals + 4 * i);
        if (is_signed && (x & 0x80000000u)) {
            core_free(owned);
            return bad(K, object, "negative row offset at %" PRIu64, i);
        }
        roaring_bitmap_add(r, x);
    }
    core_free(owned);
    return 0;
}

int lance_deletion_arrow_decode(roaring_bitmap_t **out, const void *data, size_t len,
                                const char *object)
{
    *out = NULL;
    const unsigned char *b = data;
    const char *K = "arrow";
    if (len < 8 + 4 + 6 || memcmp(b, ARROW_MAGIC, 6) != 0 ||
        memcmp(b + len - 6, ARROW_MAGIC, 6) != 0)
        return bad(K, object, "not an Arrow IPC file (magic ARROW1 missing)");
    uint32_t flen = rd32(b + len - 10);
    if (flen > len - 10 - 8)
        return bad(K, object, "footer length %" PRIu32 " overruns the file", flen);
    fb f = {b + len - 10 - flen, flen};
    fbt foot, schema;
    uint64_t root = flen >= 4 ? rd32(f.b) : UINT64_MAX;
    if (root >= f.n || fb_table(&f, (size_t)root, &foot)) return bad(K, object, "bad footer");
    if (fb_subtable(&f, &foot, 1, &schema) != 1) return bad(K, object, "footer has no schema");
    int is_signed = 0;
    int rc = check_schema(&f, &schema, &is_signed, object);
    if (rc) return rc;
    size_t bp, bn, bfirst;
    if (fb_ref(&f, &foot, 3, &bp) != 1 || fb_vector(&f, bp, 24, &bn, &bfirst))
        return bad(K, object, "footer lists no record batches");
    roaring_bitmap_t *r = roaring_bitmap_create();
    if (!r) return core_err_nomem();
    for (size_t i = 0; i < bn && !rc; i++)
        rc = read_batch(b, len, f.b + bfirst + 24 * i, is_signed, r, object);
    if (rc) {
        roaring_bitmap_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

/* ---- files in a table ------------------------------------------------------------------- */

int lance_deletion_load(store *s, const char *root, uint64_t frag_id,
                        const Lance__Table__DeletionFile *df, roaring_bitmap_t **out)
{
    *out = NULL;
    if (df->has_base_id) {
        core_err(OG_E_UNSUPPORTED,
                 "deletion file of fragment %" PRIu64 " lives under base path %" PRIu32
                 " (shallow clones are not supported yet)",
                 frag_id, df->base_id);
        return OG_E_UNSUPPORTED;
    }
    int bitmap = df->file_type == LANCE__TABLE__DELETION_FILE__DELETION_FILE_TYPE__BITMAP;
    if (!bitmap && df->file_type != LANCE__TABLE__DELETION_FILE__DELETION_FILE_TYPE__ARROW_ARRAY) {
        core_err(OG_E_UNSUPPORTED, "deletion file type %d of fragment %" PRIu64, (int)df->file_type,
                 frag_id);
        return OG_E_UNSUPPORTED;
    }
    char name[96], key[STORE_KEY_MAX];
    int rc = lance_deletion_file_name(name, sizeof name, frag_id, df->read_version, df->id, bitmap);
    if (!rc) rc = lance_key(key, root, LANCE_DELETIONS_DIR, name);
    if (rc) return rc;
    core_buf b = CORE_BUF_INIT;
    rc = store_get(s, key, 0, STORE_ALL, &b);
    if (!rc && df->has_og_xxh3 && core_hash64(b.data, b.len, 0) != df->og_xxh3)
        rc = core_err(OG_E_CORRUPT,
                      "deletion file '%s': checksum mismatch (its %zu bytes are not the ones "
                      "written; recorded xxh3 %016" PRIx64 ")",
                      key, b.len, df->og_xxh3);
    else if (!rc)
        rc = bitmap ? lance_deletion_bin_decode(out, b.data, b.len, key)
                    : lance_deletion_arrow_decode(out, b.data, b.len, key);
    core_buf_free(&b);
    if (!rc && df->num_deleted_rows &&
        roaring_bitmap_get_cardinality(*out) != df->num_deleted_rows) {
        uint64_t got = roaring_bitmap_get_cardinality(*out);
        roaring_bitmap_free(*out);
        *out = NULL;
        return bad(bitmap ? "roaring .bin" : "arrow", key,
                   "holds %" PRIu64 " rows but the manifest says %" PRIu64, got,
                   df->num_deleted_rows);
    }
    return rc;
}

int lance_deletion_write(store *s, const char *root, uint64_t frag_id, uint64_t read_version,
                         const roaring_bitmap_t *rows, Lance__Table__DeletionFile *df)
{
    uint64_t id;
    int rc = lance_random_bytes(&id, sizeof id);
    if (rc) return rc;
    char name[96], key[STORE_KEY_MAX];
    rc = lance_deletion_file_name(name, sizeof name, frag_id, read_version, id, 1);
    if (!rc) rc = lance_key(key, root, LANCE_DELETIONS_DIR, name);
    if (rc) return rc;
    core_buf b = CORE_BUF_INIT;
    rc = lance_deletion_bin_encode(&b, rows);
    if (!rc) rc = store_put(s, key, b.data, b.len, 0);
    uint64_t xxh3 = rc ? 0 : core_hash64(b.data, b.len, 0);
    core_buf_free(&b);
    if (rc) return rc;
    Lance__Table__DeletionFile init = LANCE__TABLE__DELETION_FILE__INIT;
    *df = init;
    df->has_file_type = 1;
    df->file_type = LANCE__TABLE__DELETION_FILE__DELETION_FILE_TYPE__BITMAP;
    df->has_read_version = 1;
    df->read_version = read_version;
    df->has_id = 1;
    df->id = id;
    df->has_num_deleted_rows = 1;
    df->num_deleted_rows = roaring_bitmap_get_cardinality(rows);
    df->has_og_xxh3 = 1;
    df->og_xxh3 = xxh3;
    return 0;
}
