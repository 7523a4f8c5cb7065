/* Lance deletion files: roaring `.bin` (exact bytes, round trips, every portable form,
 * corrupt input) and lancedb's Arrow IPC `.arrow` (built here by hand with a tiny
 * flatbuffers builder: raw, zstd-compressed and -1-prefixed raw buffers; corrupt input),
 * and reading/writing them under a table root. */
#include "testutil.h"

#include "lance/deletion.h"
#include "lance/paths.h"

#include <roaring/roaring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

/* ---- .bin ---------------------------------------------------------------------------------- */

static roaring_bitmap_t *decode_bin_ok(const void *p, size_t n)
{
    roaring_bitmap_t *r = NULL;
    assert_og_ok(lance_deletion_bin_decode(&r, p, n, "x.bin"));
    assert_non_null(r);
    return r;
}

static void test_bin_known_bytes(void **state)
{
    (void)state;
    /* 8572 deleted rows in one container: a bitmap container (lance-format-subset.md §4.1). */
    roaring_bitmap_t *r = roaring_bitmap_create();
    for (uint32_t i = 0; i < 8572; i++)
        roaring_bitmap_add(r, i * 3);
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(lance_deletion_bin_encode(&b, r));
    static const unsigned char head[] = {0x3a, 0x30, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
                                         0x00, 0x00, 0x7b, 0x21, 0x10, 0x00, 0x00, 0x00};
    assert_int_equal(b.len, 16 + 8192);
    assert_memory_equal(b.data, head, sizeof head);
    /* Bit 3k set, LSB-first in little-endian words. */
    assert_int_equal(b.data[16], 0x49); /* rows 0, 3, 6 */
    roaring_bitmap_t *d = decode_bin_ok(b.data, b.len);
    assert_true(roaring_bitmap_equals(r, d));
    roaring_bitmap_free(d);

    /* A run of consecutive rows (CRoaring would store a run container after run_optimize):
     * we still write the bitmap form, cookie 12346. */
    roaring_bitmap_free(r);
    r = roaring_bitmap_create();
    roaring_bitmap_add_range(r, 0, 8572);
    roaring_bitmap_run_optimize(r);
    assert_og_ok(lance_deletion_bin_encode(&b, r));
    assert_int_equal(b.len, 16 + 8192);
    assert_memory_equal(b.data, head, sizeof head);
    d = decode_bin_ok(b.data, b.len);
    assert_int_equal(roaring_bitmap_get_cardinality(d), 8572);
    assert_true(roaring_bitmap_contains(d, 8571));
    assert_false(roaring_bitmap_contains(d, 8572));
    roaring_bitmap_free(d);

    /* Array containers: {1, 5} under key 0 and {70000} under key 1, byte by byte. */
    roaring_bitmap_free(r);
    uint32_t vals[] = {1, 5, 70000};
    r = roaring_bitmap_of_ptr(3, vals);
    assert_og_ok(lance_deletion_bin_encode(&b, r));
    static const unsigned char arr[] = {
        0x3a, 0x30, 0, 0, 2,    0,   0, 0, /* cookie, 2 containers */
        0,    0,    1, 0, 1,    0,   0, 0, /* key 0 card 2, key 1 card 1 */
        24,   0,    0, 0, 28,   0,   0, 0, /* offsets */
        1,    0,    5, 0, 0x70, 0x11};     /* 1, 5, 70000 - 65536 = 0x1170 */
    assert_int_equal(b.len, sizeof arr);
    assert_memory_equal(b.data, arr, sizeof arr);

    /* Empty. */
    roaring_bitmap_free(r);
    r = roaring_bitmap_create();
    assert_og_ok(lance_deletion_bin_encode(&b, r));
    static const unsigned char empty[] = {0x3a, 0x30, 0, 0, 0, 0, 0, 0};
    assert_int_equal(b.len, sizeof empty);
    assert_memory_equal(b.data, empty, sizeof empty);
    d = decode_bin_ok(b.data, b.len);
    assert_int_equal(roaring_bitmap_get_cardinality(d), 0);
    roaring_bitmap_free(d);
    roaring_bitmap_free(r);
    core_buf_free(&b);
}

static void test_bin_round_trips(void **state)
{
    (void)state;
    srand(11);
    core_buf b = CORE_BUF_INIT;
    for (int round = 0; round < 60; round++) {
        roaring_bitmap_t *r = roaring_bitmap_create();
        int n = rand() % 20000;
        uint32_t span = 1u + (uint32_t)(rand() % 300000);
        for (int i = 0; i < n; i++)
            roaring_bitmap_add(r, (uint32_t)rand() % span);
        if (round % 3 == 0) roaring_bitmap_add_range(r, 5000, 5000 + (uint64_t)(rand() % 9000));
        if (round % 2) roaring_bitmap_run_optimize(r);
        assert_og_ok(lance_deletion_bin_encode(&b, r));
        assert_int_equal(b.data[0] | b.data[1] << 8, 12346); /* never run containers */
        roaring_bitmap_t *d = decode_bin_ok(b.data, b.len);
        assert_true(roaring_bitmap_equals(r, d));
        roaring_bitmap_free(d);
        /* CRoaring's own portable form (with run containers) decodes too. */
        size_t n2 = roaring_bitmap_portable_size_in_bytes(r);
        char *p = malloc(n2);
        assert_int_equal(roaring_bitmap_portable_serialize(r, p), n2);
        d = decode_bin_ok(p, n2);
        assert_true(roaring_bitmap_equals(r, d));
        roaring_bitmap_free(d);
        free(p);
        roaring_bitmap_free(r);
    }
    core_buf_free(&b);
}

static void test_bin_run_container_bytes(void **state)
{
    (void)state;
    /* One run container (cookie 12347, n = 1, no offset table since n < 4):
     * runs [3, 3+4] and [100, 100+4] hold 10 values. */
    static const unsigned char run[] = {0x3b, 0x30, 0x00, 0x00, /* cookie | (1-1) << 16 */
                                        0x01,                   /* run flags: container 0 */
                                        0x00, 0x00, 0x09, 0x00, /* key 0, card 10 */
                                        0x02, 0x00,             /* 2 runs */
                                        0x03, 0x00, 0x04, 0x00, 0x64, 0x00, 0x04, 0x00};
    roaring_bitmap_t *d = decode_bin_ok(run, sizeof run);
    assert_int_equal(roaring_bitmap_get_cardinality(d), 10);
    assert_true(roaring_bitmap_contains(d, 3));
    assert_true(roaring_bitmap_contains(d, 7));
    assert_false(roaring_bitmap_contains(d, 8));
    assert_true(roaring_bitmap_contains(d, 104));
    roaring_bitmap_free(d);
}

static void expect_bin_corrupt(const void *p, size_t n)
{
    roaring_bitmap_t *r = (roaring_bitmap_t *)0x1;
    int rc = lance_deletion_bin_decode(&r, p, n, "_deletions/1-2-3.bin");
    if (rc != OG_E_CORRUPT) fail_msg("expected CORRUPT (%zu bytes), got %d", n, rc);
    assert_null(r);
    assert_string_equal(og_error_last()->object, "_deletions/1-2-3.bin");
}

static void test_bin_corrupt(void **state)
{
    (void)state;
    uint32_t vals[] = {1, 5, 70000, 200000, 200001};
    roaring_bitmap_t *r = roaring_bitmap_of_ptr(5, vals);
    roaring_bitmap_add_range(r, 300000, 310000); /* a bitmap container too */
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(lance_deletion_bin_encode(&b, r));
    for (size_t n = 0; n < b.len; n++)
        expect_bin_corrupt(b.data, n);
    unsigned char *c = malloc(b.len + 1);
    /* Trailing bytes. */
    memcpy(c, b.data, b.len);
    c[b.len] = 0;
    expect_bin_corrupt(c, b.len + 1);
    /* Unknown cookie. */
    memcpy(c, b.data, b.len);
    c[0] = 0x39;
    expect_bin_corrupt(c, b.len);
    /* A container count far beyond the bytes. */
    memcpy(c, b.data, b.len);
    c[6] = 0x7f;
    expect_bin_corrupt(c, b.len);
    /* Keys not increasing (second key = first key). */
    memcpy(c, b.data, b.len);
    c[12] = c[8];
    c[13] = c[9];
    expect_bin_corrupt(c, b.len);
    /* Array values not increasing: swap 1 and 5. */
    static const unsigned char arr[] = {0x3a, 0x30, 0,  0, 1, 0, 0, 0, 0, 0,
                                        1,    0,    16, 0, 0, 0, 5, 0, 1, 0};
    roaring_bitmap_t *ok = NULL;
    expect_bin_corrupt(arr, sizeof arr);
    /* A bitmap container whose popcount disagrees with its header. */
    roaring_bitmap_t *big = roaring_bitmap_create();
    roaring_bitmap_add_range(big, 0, 5000);
    assert_og_ok(lance_deletion_bin_encode(&b, big));
    memcpy(c, b.data, b.len);
    c[16] = 0;
    expect_bin_corrupt(c, b.len);
    /* Random flips never crash. */
    assert_og_ok(lance_deletion_bin_encode(&b, r));
    srand(5);
    for (int k = 0; k < 3000; k++) {
        memcpy(c, b.data, b.len);
        size_t at = (size_t)rand() % (k % 2 ? 40 : b.len);
        c[at % b.len] ^= (unsigned char)(1 + rand() % 255);
        int rc = lance_deletion_bin_decode(&ok, c, b.len, "flip");
        assert_true(rc == 0 || rc == OG_E_CORRUPT);
        assert_true((rc == 0) == (ok != NULL));
        if (ok) roaring_bitmap_free(ok); /* CRoaring 0.2 does not accept NULL */
        ok = NULL;
    }
    roaring_bitmap_free(big);
    roaring_bitmap_free(r);
    free(c);
    core_buf_free(&b);
}

/* The reference probe's independent roaring writer gives the same bytes as ours. */
static void test_bin_matches_probe(void **state)
{
    (void)state;
    const char *pd = getenv("OG_LANCE_PROBE_DIR"); /* tests/CMakeLists.txt; skipped without */
    if (!pd || !*pd) skip();
    char chk[512];
    snprintf(chk, sizeof chk, "%s/mini_writer.py", pd);
    if (access(chk, R_OK) != 0) skip();
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "python3 -c \"import sys; sys.path.insert(0, '%s'); import mini_writer as w; "
             "sys.stdout.buffer.write(w.roaring_portable([1, 5, 70000] + list(range(131072, "
             "131072 + 6000, 1))))\"",
             pd);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    unsigned char *buf = malloc(1 << 16);
    size_t n = fread(buf, 1, 1 << 16, p);
    assert_int_equal(pclose(p), 0);
    roaring_bitmap_t *r = roaring_bitmap_create();
    roaring_bitmap_add(r, 1);
    roaring_bitmap_add(r, 5);
    roaring_bitmap_add(r, 70000);
    roaring_bitmap_add_range(r, 131072, 131072 + 6000);
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(lance_deletion_bin_encode(&b, r));
    assert_int_equal(b.len, n);
    assert_memory_equal(b.data, buf, n);
    roaring_bitmap_t *d = decode_bin_ok(buf, n);
    assert_true(roaring_bitmap_equals(d, r));
    roaring_bitmap_free(d);
    roaring_bitmap_free(r);
    core_buf_free(&b);
    free(buf);
}

/* ---- a tiny flatbuffers builder (back to front, as flatbuffers are built) -------------------- */

typedef struct fbb {
    unsigned char buf[8192];
    size_t len; /* bytes used, at the end of buf */
} fbb;

/* Position of something = its distance from the end of the buffer (stable while building). */
static size_t fbb_put(fbb *b, const void *p, size_t n)
{
    assert_true(b->len + n <= sizeof b->buf);
    b->len += n;
    memcpy(b->buf + sizeof b->buf - b->len, p, n);
    return b->len;
}

static void fbb_align(fbb *b, size_t a)
{
    static const unsigned char z[8];
    while (b->len % a)
        fbb_put(b, z, 1);
}

typedef struct fbf {
    int kind;      /* 0 absent, 1 scalar, 2 offset */
    size_t size;   /* scalar size */
    uint64_t val;  /* scalar value */
    size_t target; /* offset target position */
} fbf;

#define FB_NONE                                                                                    \
    {                                                                                              \
        0, 0, 0, 0                                                                                 \
    }
#define FB_S(sz, v)                                                                                \
    {                                                                                              \
        1, (sz), (uint64_t)(v), 0                                                                  \
    }
#define FB_O(t)                                                                                    \
    {                                                                                              \
        2, 4, 0, (t)                                                                               \
    }

static size_t fbb_table(fbb *b, const fbf *f, int nf)
{
    unsigned char content[256];
    size_t off[16], at = 4;
    for (int i = 0; i < nf; i++) {
        off[i] = f[i].kind ? at : 0;
        at += f[i].kind ? f[i].size : 0;
    }
    fbb_align(b, 8);
    size_t vtsize = 4 + 2 * (size_t)nf, tsize = at;
    size_t T = b->len + tsize;    /* the table's position once prepended */
    int32_t so = (int32_t)vtsize; /* the vtable sits right before the table */
    memcpy(content, &so, 4);
    for (int i = 0; i < nf; i++) {
        if (f[i].kind == 1) {
            memcpy(content + off[i], &f[i].val, f[i].size); /* little-endian host */
        } else if (f[i].kind == 2) {
            uint32_t u = (uint32_t)((T - off[i]) - f[i].target);
            memcpy(content + off[i], &u, 4);
        }
    }
    fbb_put(b, content, tsize);
    uint16_t vt[20];
    vt[0] = (uint16_t)vtsize;
    vt[1] = (uint16_t)tsize;
    for (int i = 0; i < nf; i++)
        vt[2 + i] = (uint16_t)off[i];
    fbb_put(b, vt, vtsize);
    return T;
}

static size_t fbb_structs(fbb *b, const void *elems, size_t n, size_t esize)
{
    fbb_align(b, 8);
    fbb_put(b, elems, n * esize);
    uint32_t c = (uint32_t)n;
    return fbb_put(b, &c, 4);
}

static size_t fbb_offsets(fbb *b, const size_t *targets, size_t n)
{
    size_t P = b->len + 4 + 4 * n;
    for (size_t i = n; i-- > 0;) {
        uint32_t u = (uint32_t)((P - 4 - 4 * i) - targets[i]);
        fbb_put(b, &u, 4);
    }
    uint32_t c = (uint32_t)n;
    return fbb_put(b, &c, 4);
}

static size_t fbb_string(fbb *b, const char *s)
{
    fbb_put(b, "", 1);
    fbb_put(b, s, strlen(s));
    uint32_t c = (uint32_t)strlen(s);
    return fbb_put(b, &c, 4);
}

/* Finish with the root offset; returns the bytes (inside b) and their length. */
static const unsigned char *fbb_finish(fbb *b, size_t root, size_t *n)
{
    fbb_align(b, 8);
    uint32_t u = (uint32_t)((b->len + 4) - root);
    fbb_put(b, &u, 4);
    *n = b->len;
    return b->buf + sizeof b->buf - b->len;
}

/* ---- Arrow IPC deletion files ---------------------------------------------------------------- */

enum { COMP_NONE, COMP_ZSTD, COMP_ZSTD_RAW };

typedef struct ipc_opts {
    const char *name;
    int bits;
    int is_signed;
    uint64_t null_count;
    int comp;
    int64_t claimed_rows; /* -1: the real count */
} ipc_opts;

static void put64(core_buf *o, int64_t v)
{
    assert_og_ok(core_buf_append_u64le(o, (uint64_t)v));
}

static void build_ipc(core_buf *out, const uint32_t *vals, size_t n, const ipc_opts *o)
{
    core_buf_clear(out);
    /* The body: validity (empty), then values. */
    core_buf body = CORE_BUF_INIT;
    core_buf raw = CORE_BUF_INIT;
    assert_og_ok(core_buf_append(&raw, vals, n * 4)); /* little-endian host */
    uint64_t voff = 0, vlen;
    if (o->comp == COMP_NONE) {
        assert_og_ok(core_buf_append(&body, raw.data, raw.len));
    } else if (o->comp == COMP_ZSTD_RAW) {
        put64(&body, -1);
        assert_og_ok(core_buf_append(&body, raw.data, raw.len));
    } else {
        put64(&body, (int64_t)raw.len);
        size_t cap = ZSTD_compressBound(raw.len);
        assert_og_ok(core_buf_reserve(&body, cap));
        size_t z = ZSTD_compress(body.data + body.len, cap, raw.data, raw.len, 3);
        assert_false(ZSTD_isError(z));
        body.len += z;
    }
    vlen = body.len;
    while (body.len % 8)
        assert_og_ok(core_buf_append_byte(&body, 0));

    /* The record batch message. */
    fbb *b = calloc(1, sizeof *b);
    size_t comp = 0;
    if (o->comp != COMP_NONE) {
        fbf cf[] = {FB_S(1, 1), FB_S(1, 0)};
        comp = fbb_table(b, cf, 2);
    }
    int64_t rows = o->claimed_rows >= 0 ? o->claimed_rows : (int64_t)n;
    int64_t nodes[2] = {rows, (int64_t)o->null_count};
    size_t nv = fbb_structs(b, nodes, 1, 16);
    int64_t bufs[4] = {0, 0, (int64_t)voff, (int64_t)vlen};
    size_t bv = fbb_structs(b, bufs, 2, 16);
    fbf rbf[] = {FB_S(8, rows), FB_O(nv), FB_O(bv), FB_NONE};
    if (comp) rbf[3] = (fbf)FB_O(comp);
    size_t rb = fbb_table(b, rbf, 4);
    fbf mf[] = {FB_S(2, 4), FB_S(1, 3), FB_O(rb), FB_S(8, body.len)};
    size_t msg = fbb_table(b, mf, 4);
    size_t mlen;
    const unsigned char *mb = fbb_finish(b, msg, &mlen);

    assert_og_ok(core_buf_append(out, "ARROW1\0\0", 8));
    uint64_t block_off = out->len;
    size_t padded = (mlen + 7) / 8 * 8;
    assert_og_ok(core_buf_append_u32le(out, 0xFFFFFFFFu));
    assert_og_ok(core_buf_append_u32le(out, (uint32_t)padded));
    assert_og_ok(core_buf_append(out, mb, mlen));
    assert_og_ok(core_buf_append_zeros(out, padded - mlen));
    int32_t meta_len = (int32_t)(8 + padded);
    assert_og_ok(core_buf_append(out, body.data, body.len));

    /* The footer: schema + one block. */
    memset(b, 0, sizeof *b);
    fbf intf[] = {FB_S(4, o->bits), FB_S(1, o->is_signed)};
    size_t it = fbb_table(b, intf, 2);
    size_t nm = fbb_string(b, o->name);
    fbf ff[] = {FB_O(nm), FB_S(1, 0), FB_S(1, 2), FB_O(it)};
    size_t fld = fbb_table(b, ff, 4);
    size_t fv = fbb_offsets(b, &fld, 1);
    fbf sf[] = {FB_S(2, 0), FB_O(fv)};
    size_t sch = fbb_table(b, sf, 2);
    struct {
        int64_t off;
        int32_t meta, pad;
        int64_t body;
    } blk = {(int64_t)block_off, meta_len, 0, (int64_t)body.len};
    size_t bl = fbb_structs(b, &blk, 1, 24);
    fbf footf[] = {FB_S(2, 4), FB_O(sch), FB_NONE, FB_O(bl)};
    size_t foot = fbb_table(b, footf, 4);
    size_t flen;
    const unsigned char *fb = fbb_finish(b, foot, &flen);
    assert_og_ok(core_buf_append(out, fb, flen));
    assert_og_ok(core_buf_append_u32le(out, (uint32_t)flen));
    assert_og_ok(core_buf_append(out, "ARROW1", 6));
    free(b);
    core_buf_free(&body);
    core_buf_free(&raw);
}

static const ipc_opts IPC_DEFAULT = {"row_id", 32, 0, 0, COMP_ZSTD, -1};

static void test_arrow_decode(void **state)
{
    (void)state;
    uint32_t vals[300];
    for (int i = 0; i < 300; i++)
        vals[i] = (uint32_t)(i * 13 + (i % 7));
    core_buf f = CORE_BUF_INIT;
    for (int comp = COMP_NONE; comp <= COMP_ZSTD_RAW; comp++) {
        ipc_opts o = IPC_DEFAULT;
        o.comp = comp;
        for (size_t n = 0; n <= 300; n += 150) {
            build_ipc(&f, vals, n, &o);
            roaring_bitmap_t *r = NULL;
            assert_og_ok(lance_deletion_arrow_decode(&r, f.data, f.len, "d.arrow"));
            assert_int_equal(roaring_bitmap_get_cardinality(r), n);
            for (size_t i = 0; i < n; i++)
                assert_true(roaring_bitmap_contains(r, vals[i]));
            assert_false(roaring_bitmap_contains(r, 5));
            roaring_bitmap_free(r);
        }
    }
    /* The docs' Int32 is accepted too (non-negative values). */
    ipc_opts o = IPC_DEFAULT;
    o.is_signed = 1;
    build_ipc(&f, vals, 10, &o);
    roaring_bitmap_t *r = NULL;
    assert_og_ok(lance_deletion_arrow_decode(&r, f.data, f.len, "d.arrow"));
    assert_int_equal(roaring_bitmap_get_cardinality(r), 10);
    roaring_bitmap_free(r);
    core_buf_free(&f);
}

static void expect_arrow_error(const core_buf *f, int code, const char *needle)
{
    roaring_bitmap_t *r = (roaring_bitmap_t *)0x1;
    int rc = lance_deletion_arrow_decode(&r, f->data, f->len, "_deletions/0-1-2.arrow");
    if (rc != code) fail_msg("expected %d, got %d: %s", code, rc, og_error_last()->message);
    assert_null(r);
    if (needle && !strstr(og_error_last()->message, needle))
        fail_msg("'%s' not in '%s'", needle, og_error_last()->message);
}

static void test_arrow_corrupt(void **state)
{
    (void)state;
    uint32_t vals[64];
    for (int i = 0; i < 64; i++)
        vals[i] = (uint32_t)i * 2;
    core_buf f = CORE_BUF_INIT;
    ipc_opts o = IPC_DEFAULT;
    o.name = "rowid";
    build_ipc(&f, vals, 64, &o);
    expect_arrow_error(&f, OG_E_CORRUPT, "row_id");
    o = IPC_DEFAULT;
    o.bits = 64;
    build_ipc(&f, vals, 64, &o);
    expect_arrow_error(&f, OG_E_CORRUPT, "32-bit");
    o = IPC_DEFAULT;
    o.null_count = 3;
    build_ipc(&f, vals, 64, &o);
    expect_arrow_error(&f, OG_E_CORRUPT, "null");
    o = IPC_DEFAULT;
    o.comp = COMP_NONE;
    o.claimed_rows = 65; /* more rows than the values buffer holds */
    build_ipc(&f, vals, 64, &o);
    expect_arrow_error(&f, OG_E_CORRUPT, "values buffer");
    o.claimed_rows = (int64_t)1 << 40;
    build_ipc(&f, vals, 64, &o);
    expect_arrow_error(&f, OG_E_CORRUPT, "implausible");
    o = IPC_DEFAULT;
    o.is_signed = 1;
    vals[3] = 0x80000000u;
    build_ipc(&f, vals, 64, &o);
    expect_arrow_error(&f, OG_E_CORRUPT, "negative");
    vals[3] = 6;

    /* A damaged zstd frame. */
    o = IPC_DEFAULT;
    build_ipc(&f, vals, 64, &o);
    core_buf g = CORE_BUF_INIT;
    assert_og_ok(core_buf_append(&g, f.data, f.len));
    /* The body's zstd magic (28 b5 2f fd) is after the length prefix; break it. */
    static const unsigned char zmagic[] = {0x28, 0xb5, 0x2f, 0xfd};
    int found = 0;
    for (size_t i = 0; i + 4 <= g.len && !found; i++)
        if (memcmp(g.data + i, zmagic, 4) == 0) {
            g.data[i] ^= 0xff;
            found = 1;
        }
    assert_true(found);
    expect_arrow_error(&g, OG_E_CORRUPT, "decompress");

    /* Every truncation and random flips: a typed error, never a crash. */
    for (size_t n = 0; n < f.len; n++) {
        roaring_bitmap_t *r = NULL;
        int rc = lance_deletion_arrow_decode(&r, f.data, n, "t");
        assert_int_equal(rc, OG_E_CORRUPT);
        assert_null(r);
    }
    srand(3);
    for (int k = 0; k < 4000; k++) {
        core_buf_clear(&g);
        assert_og_ok(core_buf_append(&g, f.data, f.len));
        int flips = 1 + rand() % 3;
        for (int j = 0; j < flips; j++)
            g.data[(size_t)rand() % g.len] ^= (unsigned char)(1 + rand() % 255);
        roaring_bitmap_t *r = NULL;
        int rc = lance_deletion_arrow_decode(&r, g.data, g.len, "t");
        assert_true(rc == 0 || rc == OG_E_CORRUPT || rc == OG_E_UNSUPPORTED);
        assert_true((rc == 0) == (r != NULL));
        if (r) roaring_bitmap_free(r);
    }
    core_buf_free(&g);
    core_buf_free(&f);
}

/* ---- files under a table root ---------------------------------------------------------------- */

static void test_deletion_files_in_store(void **state)
{
    (void)state;
    char dir[256];
    test_sandbox_new(dir, sizeof dir, "lance-del");
    store *s = NULL;
    assert_og_ok(store_local_open(&s, dir));
    roaring_bitmap_t *r = roaring_bitmap_create();
    for (uint32_t i = 0; i < 6000; i += 2)
        roaring_bitmap_add(r, i);
    Lance__Table__DeletionFile df;
    assert_og_ok(lance_deletion_write(s, "t.lance", 3, 7, r, &df));
    assert_int_equal(df.file_type, LANCE__TABLE__DELETION_FILE__DELETION_FILE_TYPE__BITMAP);
    assert_int_equal(df.read_version, 7);
    assert_int_equal(df.num_deleted_rows, 3000);
    assert_false(df.has_base_id);
    char key[STORE_KEY_MAX];
    snprintf(key, sizeof key, "t.lance/_deletions/3-7-%llu.bin", (unsigned long long)df.id);
    store_meta meta;
    assert_og_ok(store_head(s, key, &meta));
    roaring_bitmap_t *d = NULL;
    assert_og_ok(lance_deletion_load(s, "t.lance", 3, &df, &d));
    assert_true(roaring_bitmap_equals(r, d));
    roaring_bitmap_free(d);

    /* The manifest's count disagrees with the file. */
    df.num_deleted_rows = 2999;
    assert_og_error(lance_deletion_load(s, "t.lance", 3, &df, &d), OG_E_CORRUPT);
    assert_null(d);
    df.num_deleted_rows = 0; /* 0 means unknown: accepted */
    assert_og_ok(lance_deletion_load(s, "t.lance", 3, &df, &d));
    roaring_bitmap_free(d);
    /* Missing file, base paths. */
    df.id ^= 1;
    assert_og_error(lance_deletion_load(s, "t.lance", 3, &df, &d), OG_E_NOT_FOUND);
    df.has_base_id = 1;
    assert_og_error(lance_deletion_load(s, "t.lance", 3, &df, &d), OG_E_UNSUPPORTED);

    /* An .arrow file as lancedb writes it. */
    uint32_t vals[] = {4, 1, 9};
    core_buf f = CORE_BUF_INIT;
    build_ipc(&f, vals, 3, &IPC_DEFAULT);
    assert_og_ok(store_put(s, "t.lance/_deletions/0-2-55.arrow", f.data, f.len, 0));
    Lance__Table__DeletionFile adf = LANCE__TABLE__DELETION_FILE__INIT;
    adf.file_type = LANCE__TABLE__DELETION_FILE__DELETION_FILE_TYPE__ARROW_ARRAY;
    adf.read_version = 2;
    adf.id = 55;
    adf.num_deleted_rows = 3;
    assert_og_ok(lance_deletion_load(s, "t.lance", 0, &adf, &d));
    assert_int_equal(roaring_bitmap_get_cardinality(d), 3);
    assert_true(roaring_bitmap_contains(d, 9));
    roaring_bitmap_free(d);
    core_buf_free(&f);
    roaring_bitmap_free(r);
    test_sandbox_store_done(dir, s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bin_known_bytes),
        cmocka_unit_test(test_bin_round_trips),
        cmocka_unit_test(test_bin_run_container_bytes),
        cmocka_unit_test(test_bin_corrupt),
        cmocka_unit_test(test_bin_matches_probe),
        cmocka_unit_test(test_arrow_decode),
        cmocka_unit_test(test_arrow_corrupt),
        cmocka_unit_test(test_deletion_files_in_store),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
