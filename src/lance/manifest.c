/* Lance manifest files: the footer-framed container around the Manifest message, the
 * read/write gate (feature flags, data storage version) and next-version carry-forward. */
#include "lance/manifest.h"

#include "core/alloc.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/hmap.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void *pb_alloc(void *data, size_t n)
{
    (void)data;
    return core_malloc(n ? n : 1);
}

static void pb_free(void *data, void *p)
{
    (void)data;
    core_free(p);
}

ProtobufCAllocator lance_pb_allocator = {pb_alloc, pb_free, NULL};

/* A manifest's message lives in its own arena: a manifest of n fragments is thousands of small
 * allocations, and decoding one is on every commit's path (the new snapshot is built from the
 * bytes just published). Parts are never freed one by one; the arena goes with the manifest. */
static void *arena_pb_alloc(void *data, size_t n)
{
    return core_arena_alloc(data, n ? n : 1);
}

static void arena_pb_free(void *data, void *p)
{
    (void)data;
    (void)p;
}

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static int corrupt(const char *object, const char *fmt, ...) CORE_PRINTF(2, 3);
static int corrupt(const char *object, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    core_err(OG_E_CORRUPT, "corrupt lance manifest %s: %s", object ? object : "(bytes)", msg);
    if (object) core_err_detail(CORE_ERR_OBJECT, object);
    return OG_E_CORRUPT;
}

/* protobuf-c accepts a field number 0 written as an over-long varint and keeps it as an
 * unknown field, but refuses the canonical form it would write back: such a message would
 * decode once and never again. Field 0 is invalid protobuf, so refuse it everywhere. */
static int has_field_zero(const ProtobufCMessage *m, int depth)
{
    if (depth > 64) return 1; /* our schemas nest far less deeply */
    for (unsigned i = 0; i < m->n_unknown_fields; i++)
        if (m->unknown_fields[i].tag == 0) return 1;
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (f->type != PROTOBUF_C_TYPE_MESSAGE) continue;
        const char *base = (const char *)m;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)(base + f->quantifier_offset);
            ProtobufCMessage *const *arr = *(ProtobufCMessage *const *const *)(base + f->offset);
            for (size_t k = 0; k < n; k++)
                if (arr[k] && has_field_zero(arr[k], depth + 1)) return 1;
            continue;
        }
        if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
            *(const uint32_t *)(base + f->quantifier_offset) != f->id)
            continue;
        const ProtobufCMessage *sub = *(ProtobufCMessage *const *)(base + f->offset);
        if (sub && has_field_zero(sub, depth + 1)) return 1;
    }
    return 0;
}

int lance_pb_unpack(ProtobufCMessage **out, const ProtobufCMessageDescriptor *d, const void *data,
                    size_t len, const char *what, const char *object)
{
    return lance_pb_unpack_with(out, d, data, len, what, object, &lance_pb_allocator);
}

int lance_pb_unpack_with(ProtobufCMessage **out, const ProtobufCMessageDescriptor *d,
                         const void *data, size_t len, const char *what, const char *object,
                         ProtobufCAllocator *al)
{
    *out = NULL;
    uint64_t before = core_alloc_failures();
    ProtobufCMessage *m = protobuf_c_message_unpack(d, al, len, data);
    if (!m) {
        /* protobuf-c reports both bad bytes and allocation failure as NULL. */
        if (core_alloc_failures() != before) return core_err_nomem();
        core_err(OG_E_CORRUPT, "corrupt %s in %s: the protobuf %s message does not decode", what,
                 object ? object : "(bytes)", d->short_name);
        if (object) core_err_detail(CORE_ERR_OBJECT, object);
        return OG_E_CORRUPT;
    }
    if (has_field_zero(m, 0)) {
        protobuf_c_message_free_unpacked(m, al);
        core_err(OG_E_CORRUPT, "corrupt %s in %s: the protobuf %s message has a field number 0",
                 what, object ? object : "(bytes)", d->short_name);
        if (object) core_err_detail(CORE_ERR_OBJECT, object);
        return OG_E_CORRUPT;
    }
    *out = m;
    return 0;
}

int lance_pb_pack(core_buf *out, const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    size_t at = out->len;
    int rc = core_buf_reserve(out, n);
    if (rc) return rc;
    size_t w = protobuf_c_message_pack(m, out->data + at);
    if (w != n) return core_err(OG_E_INTERNAL, "protobuf pack wrote %zu of %zu bytes", w, n);
    out->len = at + n;
    out->data[out->len] = '\0';
    return 0;
}

void lance_pb_free(void *m)
{
    if (m) protobuf_c_message_free_unpacked((ProtobufCMessage *)m, &lance_pb_allocator);
}

int lance_schema_check(Lance__File__Field *const *fields, size_t n, const char *object)
{
    /* Quadratic only in the number of fields of a schema (small); no allocation. */
    for (size_t i = 0; i < n; i++) {
        const Lance__File__Field *f = fields[i];
        if (!f->name || !f->name[0]) return corrupt(object, "field %zu has no name", i);
        if (f->id < 0) return corrupt(object, "field %zu has a negative id (%d)", i, (int)f->id);
        int parent_seen = f->parent_id == -1;
        for (size_t j = 0; j < i; j++) {
            if (fields[j]->id == f->id)
                return corrupt(object, "field id %d appears twice", (int)f->id);
            if (fields[j]->id == f->parent_id) parent_seen = 1;
        }
        if (!parent_seen)
            return corrupt(object, "field id %d names parent %d, which is not an earlier field",
                           (int)f->id, (int)f->parent_id);
    }
    return 0;
}

/* A [u32 len][message] section at `off`, which must end at or before `limit`. */
static int section(const unsigned char *b, uint64_t off, uint64_t limit, const char *what,
                   const char *object, uint64_t *msg_off, uint64_t *msg_len)
{
    if (off > limit || limit - off < 4)
        return corrupt(object, "%s offset %" PRIu64 " is beyond the sections (end %" PRIu64 ")",
                       what, off, limit);
    uint64_t len = rd32(b + off);
    if (len > limit - off - 4)
        return corrupt(object,
                       "%s length %" PRIu64 " overruns the file (%" PRIu64 " bytes available)",
                       what, len, limit - off - 4);
    *msg_off = off + 4;
    *msg_len = len;
    return 0;
}

static int dup_bytes(unsigned char **out, const unsigned char *p, size_t n)
{
    *out = core_malloc(n ? n : 1);
    if (!*out) return core_err_nomem();
    if (n) memcpy(*out, p, n);
    return 0;
}

int lance_pb_varint(const unsigned char *b, size_t n, size_t *i, uint64_t *v)
{
    *v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (*i >= n) return -1;
        unsigned char c = b[(*i)++];
        *v |= (uint64_t)(c & 0x7f) << shift;
        if (c < 0x80) return 0;
    }
    return -1;
}

/* One protobuf field at b[*i..n): its tag, its value (a varint's value, or a length-delimited
 * field's length), where its payload starts (after the length for a length-delimited field),
 * and *i moved past it. A tag or a length is refused, as protobuf-c refuses it, when written
 * in more than 5 bytes, and so is a tag beyond 32 bits or a length beyond INT32_MAX (protobuf-c
 * would read some of those differently): 0, or -1. */
static int pb_field(const unsigned char *b, size_t n, size_t *i, uint64_t *tag, uint64_t *value,
                    size_t *payload)
{
    size_t at = *i;
    if (lance_pb_varint(b, n, i, tag) || *i - at > 5 || *tag > UINT32_MAX) return -1;
    *value = 0;
    switch (*tag & 7) {
    case 0:
        *payload = *i;
        return lance_pb_varint(b, n, i, value);
    case 1:
    case 5: {
        size_t w = (*tag & 7) == 1 ? 8 : 4;
        if (n - *i < w) return -1;
        *payload = *i;
        *i += w;
        return 0;
    }
    case 2:
        at = *i;
        if (lance_pb_varint(b, n, i, value) || *i - at > 5 || *value > INT32_MAX || *value > n - *i)
            return -1;
        *payload = *i;
        *i += (size_t)*value;
        return 0;
    default:
        return -1;
    }
}

/* Keep the message bytes and each fragment field's place in them (see lance_manifest.msg).
 * Any surprise (a fragment field that is not length-delimited, a count that differs from the
 * decoded one) only turns the optimisation off: the message already decoded. */
static int record_layout(lance_manifest *m, const unsigned char *b, size_t n)
{
    size_t nf = m->pb->n_fragments;
    if (nf == 0 || n > UINT32_MAX) return 0;
    uint32_t *off = core_arena_alloc(&m->arena, nf * sizeof *off);
    uint32_t *len = core_arena_alloc(&m->arena, nf * sizeof *len);
    unsigned char *copy = core_arena_alloc(&m->arena, n);
    if (!off || !len || !copy) return core_err_nomem();
    size_t i = 0, k = 0;
    while (i < n) {
        size_t start = i, payload;
        uint64_t tag, v;
        if (pb_field(b, n, &i, &tag, &v, &payload)) return 0;
        if (tag >> 3 == 2) {
            if ((tag & 7) != 2 || k == nf) return 0;
            off[k] = (uint32_t)start;
            len[k] = (uint32_t)(i - start);
            k++;
        }
    }
    if (k != nf) return 0;
    memcpy(copy, b, n);
    m->msg = copy;
    m->msg_len = n;
    m->frag_off = off;
    m->frag_len = len;
    return 0;
}

/* The footer-framed container: the Manifest message is at b[pos + 4, pos + 4 + mlen). */
static int container(const unsigned char *b, size_t len, const char *object, uint64_t *pos_out,
                     uint64_t *mlen_out)
{
    if (len < LANCE_FOOTER_LEN + 4)
        return corrupt(object, "truncated: %zu bytes is too short for a manifest", len);
    const unsigned char *foot = b + len - LANCE_FOOTER_LEN;
    if (memcmp(foot + 12, "LANC", 4) != 0)
        return corrupt(object, "wrong magic: the footer does not end in LANC");
    int64_t pos = (int64_t)rd64(foot);
    uint64_t body_end = len - LANCE_FOOTER_LEN;
    if (pos < 0 || (uint64_t)pos > body_end - 4)
        return corrupt(object, "manifest position %" PRId64 " is beyond the file (%zu bytes)", pos,
                       len);
    uint64_t mlen = rd32(b + pos);
    if ((uint64_t)pos + 4 + mlen != body_end)
        return corrupt(object,
                       "manifest length mismatch: position + 4 + length = %" PRIu64
                       " but the footer starts at %" PRIu64,
                       (uint64_t)pos + 4 + mlen, body_end);
    *pos_out = (uint64_t)pos;
    *mlen_out = mlen;
    return 0;
}

static lance_manifest *manifest_new(const void *file, size_t file_len, uint64_t mlen)
{
    lance_manifest *m = core_calloc(1, sizeof *m);
    if (!m) return NULL;
    m->file_size = file_len;
    m->file_xxh3 = core_hash64(file, file_len, 0);
    atomic_init(&m->shares, 0);
    /* Chunks of about the encoded size: the decoded form is a few times larger. */
    core_arena_init(&m->arena, mlen < 4096 ? 8192 : (size_t)mlen * 2);
    return m;
}

static int check_fragment(const Lance__Table__DataFragment *f, const char *object)
{
    for (size_t j = 0; j < f->n_files; j++) {
        const Lance__Table__DataFile *df = f->files[j];
        if (!df->path || !df->path[0])
            return corrupt(object, "fragment %" PRIu64 " has a data file without a path", f->id);
        if (df->n_column_indices && df->n_column_indices != df->n_fields)
            return corrupt(object,
                           "fragment %" PRIu64 " has a data file with %zu column indices"
                           " for %zu fields",
                           f->id, df->n_column_indices, df->n_fields);
    }
    return 0;
}

/* The parts after the message: inline transaction and index section bytes, schema check. */
static int finish(lance_manifest *m, const unsigned char *b, uint64_t pos, const char *object)
{
    const Lance__Table__Manifest *p = m->pb;
    int rc;
    if (p->has_transaction_section) {
        uint64_t off = 0, n = 0;
        rc = section(b, p->transaction_section, pos, "transaction section", object, &off, &n);
        if (rc) return rc;
        rc = dup_bytes(&m->txn, b + off, n);
        if (rc) return rc;
        m->txn_len = n;
    }
    if (p->has_index_section) {
        uint64_t off = 0, n = 0;
        rc = section(b, p->index_section, pos, "index section", object, &off, &n);
        if (rc) return rc;
        rc = dup_bytes(&m->index, b + off, n);
        if (rc) return rc;
        m->index_len = n;
    }
    return lance_schema_check(p->fields, p->n_fields, object);
}

int lance_manifest_decode(lance_manifest **out, const void *data, size_t len, const char *object)
{
    *out = NULL;
    const unsigned char *b = data;
    uint64_t pos, mlen;
    int rc = container(b, len, object, &pos, &mlen);
    if (rc) return rc;
    lance_manifest *m = manifest_new(data, len, mlen);
    if (!m) return core_err_nomem();
    ProtobufCMessage *pm = NULL;
    ProtobufCAllocator al = {arena_pb_alloc, arena_pb_free, &m->arena};
    rc = lance_pb_unpack_with(&pm, &lance__table__manifest__descriptor, b + pos + 4, mlen,
                              "manifest", object, &al);
    if (rc) goto fail;
    m->pb = (Lance__Table__Manifest *)pm;
    rc = record_layout(m, b + pos + 4, mlen);
    if (rc == 0) rc = finish(m, b, pos, object);
    if (rc == 0) lance_chain_read(m, b, len, pos + 4, mlen);
    for (size_t i = 0; rc == 0 && i < m->pb->n_fragments; i++)
        rc = check_fragment(m->pb->fragments[i], object);
    if (rc) goto fail;
    *out = m;
    return 0;
fail:
    lance_manifest_free(m);
    return rc;
}

/* A fragment's id from its encoded DataFragment message (field 1; absent means 0), or -1. */
static int fragment_id(const unsigned char *p, size_t n, uint64_t *id)
{
    size_t i = 0, payload;
    *id = 0;
    while (i < n) {
        uint64_t tag, v;
        if (pb_field(p, n, &i, &tag, &v, &payload)) return -1;
        if (tag == (1 << 3 | 0)) {
            *id = v; /* only a hint of where to look: the bytes decide */
            return 0;
        }
    }
    return 0;
}

/* Index of base's fragments by id (entries: their positions), built on the first fragment
 * that is not where the previous one left off. */
static uint64_t frag_hash(uint64_t id)
{
    return core_hmap_hash(&id, sizeof id);
}

static int frag_index_build(core_hmap *ix, const Lance__Table__Manifest *bp)
{
    int rc = core_hmap_reserve(ix, bp->n_fragments);
    for (size_t k = 0; rc == 0 && k < bp->n_fragments; k++)
        rc = core_hmap_add(ix, frag_hash(bp->fragments[k]->id), (uint32_t)k);
    return rc;
}

/* The first of base's fragments with this id, or -1. */
static long frag_index_find(const core_hmap *ix, const Lance__Table__Manifest *bp, uint64_t id)
{
    core_hmap_probe p = core_hmap_probe_of(ix, frag_hash(id));
    uint32_t k;
    while (core_hmap_next(ix, &p, &k))
        if (bp->fragments[k]->id == id) return (long)k;
    return -1;
}

int lance_manifest_decode_on(lance_manifest **out, const void *data, size_t len, const char *object,
                             const lance_manifest *base)
{
    if (!base || !base->frag_off || base->depth >= LANCE_MANIFEST_SHARE_DEPTH ||
        base->pb->n_fragments > CORE_HMAP_MAX_ENTRIES)
        return lance_manifest_decode(out, data, len, object);
    *out = NULL;
    const unsigned char *b = data;
    uint64_t pos, mlen;
    int rc = container(b, len, object, &pos, &mlen);
    if (rc) return rc;
    if (mlen > UINT32_MAX) return lance_manifest_decode(out, data, len, object);
    const unsigned char *msg = b + pos + 4;
    const size_t n = (size_t)mlen;

    /* One pass over the message's fields: the fragments (field 2) are found, every other field
     * is gathered, in order, into `head`, which decodes to the message without its fragments
     * (protobuf fields may come in any order; repeated ones keep theirs). Anything unexpected
     * leaves the work to the full decoder, which also gives the proper error. */
    size_t nf = 0;
    for (size_t i = 0; i < n;) {
        uint64_t tag, v;
        size_t payload;
        /* pb_field refuses what protobuf-c refuses in a tag or a length, which matters here:
         * this scan strips the tag and length of each fragment it decodes on its own. */
        if (pb_field(msg, n, &i, &tag, &v, &payload) || (tag >> 3 == 2 && (tag & 7) != 2))
            return lance_manifest_decode(out, data, len, object);
        if (tag >> 3 == 2) nf++;
    }
    lance_manifest *m = manifest_new(data, len, mlen);
    if (!m) return core_err_nomem();
    core_buf head = CORE_BUF_INIT;
    core_hmap ix = CORE_HMAP_INIT;
    unsigned char *copy = core_arena_alloc(&m->arena, n ? n : 1);
    uint32_t *off = core_arena_alloc(&m->arena, (nf ? nf : 1) * sizeof *off);
    uint32_t *flen = core_arena_alloc(&m->arena, (nf ? nf : 1) * sizeof *flen);
    uint32_t *body = core_arena_alloc(&m->arena, (nf ? nf : 1) * sizeof *body);
    Lance__Table__DataFragment **frags = core_arena_alloc(&m->arena, (nf ? nf : 1) * sizeof *frags);
    if (!copy || !off || !flen || !body || !frags) {
        rc = core_err_nomem();
        goto fail;
    }
    memcpy(copy, msg, n);
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        size_t start = i, payload = 0;
        uint64_t tag = 0, v;
        (void)pb_field(copy, n, &i, &tag, &v, &payload); /* checked by the first pass */
        if (tag >> 3 == 2) {
            body[k] = (uint32_t)(payload - start);
            off[k] = (uint32_t)start;
            flen[k] = (uint32_t)(i - start);
            k++;
        } else if ((rc = core_buf_append(&head, copy + start, i - start)) != 0) {
            goto fail;
        }
    }
    ProtobufCAllocator al = {arena_pb_alloc, arena_pb_free, &m->arena};
    ProtobufCMessage *pm = NULL;
    rc = lance_pb_unpack_with(&pm, &lance__table__manifest__descriptor, head.data, head.len,
                              "manifest", object, &al);
    if (rc) goto fail;
    m->pb = (Lance__Table__Manifest *)pm;

    /* Each fragment: base's own when its bytes are identical (looked for where the previous
     * match left off, then by id), else decoded from its bytes. The first look compares bytes
     * only: base's fragment structs are not touched (after a commit's flushes they are
     * usually out of the cache, and a chain of misses costs more than the comparison). */
    const Lance__Table__Manifest *bp = base->pb;
    size_t cursor = 0;
    for (k = 0; k < nf; k++) {
        const unsigned char *fb = copy + off[k];
        if (cursor < bp->n_fragments && base->frag_len[cursor] == flen[k] &&
            memcmp(base->msg + base->frag_off[cursor], fb, flen[k]) == 0) {
            frags[k] = bp->fragments[cursor++];
            m->n_borrowed++;
            continue;
        }
        uint64_t id;
        long at = -1;
        if (fragment_id(fb + body[k], flen[k] - body[k], &id) == 0) {
            if (cursor < bp->n_fragments && bp->fragments[cursor]->id == id) {
                at = (long)cursor;
            } else if (bp->n_fragments) {
                if (!ix.n && (rc = frag_index_build(&ix, bp)) != 0) goto fail;
                at = frag_index_find(&ix, bp, id);
            }
        }
        if (at >= 0) cursor = (size_t)at + 1;
        if (at >= 0 && base->frag_len[at] == flen[k] &&
            memcmp(base->msg + base->frag_off[at], fb, flen[k]) == 0) {
            frags[k] = bp->fragments[at];
            m->n_borrowed++;
            continue;
        }
        ProtobufCMessage *fm = NULL;
        rc = lance_pb_unpack_with(&fm, &lance__table__data_fragment__descriptor, fb + body[k],
                                  flen[k] - body[k], "manifest fragment", object, &al);
        if (rc) goto fail;
        frags[k] = (Lance__Table__DataFragment *)fm;
        rc = check_fragment(frags[k], object);
        if (rc) goto fail;
    }
    m->pb->n_fragments = nf;
    m->pb->fragments = nf ? frags : NULL;
    if (nf) {
        m->msg = copy;
        m->msg_len = n;
        m->frag_off = off;
        m->frag_len = flen;
    }
    rc = finish(m, b, pos, object);
    if (rc) goto fail;
    lance_chain_read(m, b, len, pos + 4, mlen);
    if (m->n_borrowed) {
        m->parent = lance_manifest_share(base);
        m->depth = base->depth + 1;
    }
    core_hmap_free(&ix);
    core_buf_free(&head);
    *out = m;
    return 0;
fail:
    core_hmap_free(&ix);
    core_buf_free(&head);
    lance_manifest_free(m);
    return rc;
}

lance_manifest *lance_manifest_share(const lance_manifest *m)
{
    lance_manifest *p = (lance_manifest *)m; /* only its share count changes */
    atomic_fetch_add_explicit(&p->shares, 1, memory_order_relaxed);
    return p;
}

uint64_t lance_manifest_version(const lance_manifest *m)
{
    return m->pb->version;
}

size_t lance_manifest_fragment_count(const lance_manifest *m)
{
    return m && m->pb ? m->pb->n_fragments : 0;
}

void lance_manifest_summarize(const lance_manifest *m, lance_manifest_summary *out)
{
    const Lance__Table__Manifest *pb = m->pb;
    memset(out, 0, sizeof *out);
    out->version = pb->version;
    if (pb->timestamp)
        out->timestamp_ns = pb->timestamp->seconds * 1000000000LL + pb->timestamp->nanos;
    out->fragments = pb->n_fragments;
    for (size_t i = 0; i < pb->n_fragments; i++) {
        const Lance__Table__DataFragment *f = pb->fragments[i];
        out->data_files += f->n_files;
        for (size_t k = 0; k < f->n_files; k++)
            out->data_bytes += f->files[k]->file_size_bytes;
        out->physical_rows += f->physical_rows;
        if (f->deletion_file) {
            if (f->deletion_file->file_type ==
                LANCE__TABLE__DELETION_FILE__DELETION_FILE_TYPE__BITMAP)
                out->deletion_files_bitmap++;
            else
                out->deletion_files_arrow++;
        }
    }
    out->reader_flags = pb->reader_feature_flags;
    out->writer_flags = pb->writer_feature_flags;
    out->data_storage_version = lance_manifest_data_version(pb);
}

int lance_manifest_check_access(const lance_manifest *m, lance_access access, const char *object)
{
    return lance_manifest_check(m->pb, access, object);
}

bool lance_manifest_has_unknown_fields(const lance_manifest *m)
{
    return m->pb->base.n_unknown_fields != 0;
}

void lance_manifest_free(lance_manifest *m)
{
    while (m) {
        if (atomic_fetch_sub_explicit(&m->shares, 1, memory_order_acq_rel) > 0) return;
        lance_manifest *parent = m->parent;
        core_arena_free(&m->arena); /* m->pb and everything in it */
        core_free(m->txn);
        core_free(m->index);
        core_free(m);
        m = parent;
    }
}

const char *lance_manifest_data_version(const Lance__Table__Manifest *m)
{
    if (!m->data_format || !m->data_format->version) return "";
    return m->data_format->version;
}

int lance_manifest_check(const Lance__Table__Manifest *m, lance_access access, const char *object)
{
    if (access == LANCE_ACCESS_INSPECT) return 0;
    uint64_t flags =
        access == LANCE_ACCESS_WRITE ? m->writer_feature_flags : m->reader_feature_flags;
    uint64_t unknown = flags & ~(uint64_t)LANCE_FLAGS_KNOWN;
    if (unknown) {
        int bit = __builtin_ctzll(unknown);
        core_err(OG_E_UNSUPPORTED,
                 "unsupported %s feature flag %" PRIu64 " (bit %d) in lance table version %" PRIu64
                 " (%s)",
                 access == LANCE_ACCESS_WRITE ? "writer" : "reader", (uint64_t)1 << bit, bit,
                 m->version, object ? object : "?");
        if (object) core_err_detail(CORE_ERR_OBJECT, object);
        return OG_E_UNSUPPORTED;
    }
    const char *fmt =
        m->data_format && m->data_format->file_format ? m->data_format->file_format : "";
    const char *ver = lance_manifest_data_version(m);
    if (!ver[0]) {
        core_err(OG_E_UNSUPPORTED,
                 "unsupported data storage version: legacy (pre-2.0) lance table (%s)",
                 object ? object : "?");
        if (object) core_err_detail(CORE_ERR_OBJECT, object);
        return OG_E_UNSUPPORTED;
    }
    if ((fmt[0] && strcmp(fmt, "lance") != 0) || strcmp(ver, "2.0") != 0) {
        core_err(OG_E_UNSUPPORTED, "unsupported data storage version %s%s%s (%s)", ver,
                 fmt[0] && strcmp(fmt, "lance") ? " of format " : "",
                 fmt[0] && strcmp(fmt, "lance") ? fmt : "", object ? object : "?");
        core_err_detail(CORE_ERR_ACTUAL, ver);
        core_err_detail(CORE_ERR_EXPECTED, "2.0");
        if (object) core_err_detail(CORE_ERR_OBJECT, object);
        return OG_E_UNSUPPORTED;
    }
    return 0;
}

static int put_section(core_buf *out, const void *p, size_t n)
{
    if (n > UINT32_MAX) return core_err(OG_E_RESOURCE_LIMIT, "manifest section of %zu bytes", n);
    int rc = core_buf_append_u32le(out, (uint32_t)n);
    if (!rc && n) rc = core_buf_append(out, p, n);
    return rc;
}

static int put_varint(core_buf *out, uint64_t v)
{
    unsigned char b[10];
    size_t n = 0;
    do {
        b[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    return core_buf_append(out, b, n);
}

/* m's fragments after the rest of the message: those borrowed unchanged from base (the same
 * struct pointer) copied from base's bytes, the others encoded. Ours keep base's order, so base's
 * index only moves forward; a fragment not found within a short window ahead is encoded afresh
 * (correct either way). */
static int put_fragments_on(core_buf *out, const Lance__Table__Manifest *m,
                            const lance_manifest *base)
{
    const Lance__Table__Manifest *bp = base->pb;
    size_t k = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < m->n_fragments; i++) {
        const Lance__Table__DataFragment *f = m->fragments[i];
        size_t j = k;
        while (j < bp->n_fragments && j < k + 8 && bp->fragments[j] != f)
            j++;
        if (j < bp->n_fragments && bp->fragments[j] == f) {
            rc = core_buf_append(out, base->msg + base->frag_off[j], base->frag_len[j]);
            k = j + 1;
            continue;
        }
        rc = put_varint(out, 2u << 3 | 2u);
        if (!rc) rc = put_varint(out, protobuf_c_message_get_packed_size(&f->base));
        if (!rc) rc = lance_pb_pack(out, &f->base);
    }
    return rc;
}

int lance_manifest_encode_on(core_buf *out, const Lance__Table__Manifest *m,
                             const lance_manifest *base, const void *txn, size_t txn_len,
                             const void *index, size_t index_len)
{
    const int splice = base && base->frag_off;
    core_buf_clear(out);
    Lance__Table__Manifest copy = *m;
    if (splice) {
        copy.n_fragments = 0;
        copy.fragments = NULL;
    }
    copy.has_transaction_section = 0;
    copy.transaction_section = 0;
    copy.has_index_section = 0;
    copy.index_section = 0;
    int rc = 0;
    if (txn) {
        copy.has_transaction_section = 1;
        copy.transaction_section = out->len;
        rc = put_section(out, txn, txn_len);
        if (rc) return rc;
    }
    if (index) {
        copy.has_index_section = 1;
        copy.index_section = out->len;
        rc = put_section(out, index, index_len);
        if (rc) return rc;
    }
    uint64_t pos = out->len;
    rc = core_buf_append_u32le(out, 0); /* the message length, set below */
    if (!rc) rc = lance_pb_pack(out, &copy.base);
    if (!rc && splice) rc = put_fragments_on(out, m, base);
    if (rc) return rc;
    uint64_t n = out->len - pos - 4;
    if (n > UINT32_MAX) return core_err(OG_E_RESOURCE_LIMIT, "manifest of %" PRIu64 " bytes", n);
    for (int s = 0; s < 4; s++)
        out->data[pos + (size_t)s] = (unsigned char)(n >> (8 * s));
    rc = core_buf_append_u64le(out, pos);
    if (!rc) rc = core_buf_append_u16le(out, 0);
    if (!rc) rc = core_buf_append_u16le(out, 2);
    if (!rc) rc = core_buf_append(out, "LANC", 4);
    return rc;
}

int lance_manifest_encode(core_buf *out, const Lance__Table__Manifest *m, const void *txn,
                          size_t txn_len, const void *index, size_t index_len)
{
    return lance_manifest_encode_on(out, m, NULL, txn, txn_len, index, index_len);
}

void lance_manifest_next_init(lance_manifest_next *next, const Lance__Table__Manifest *prev,
                              uint64_t version)
{
    Lance__Table__Manifest init = LANCE__TABLE__MANIFEST__INIT;
    Lance__Table__Timestamp ts = LANCE__TABLE__TIMESTAMP__INIT;
    Lance__Table__Manifest__WriterVersion wv = LANCE__TABLE__MANIFEST__WRITER_VERSION__INIT;
    Lance__Table__Manifest__DataStorageFormat fmt =
        LANCE__TABLE__MANIFEST__DATA_STORAGE_FORMAT__INIT;
    next->pb = prev ? *prev : init;
    next->timestamp = ts;
    next->writer = wv;
    next->format = fmt;

    Lance__Table__Manifest *p = &next->pb;
    p->has_version = 1;
    p->version = version;
    p->has_version_aux_data = 0;
    p->version_aux_data = 0;
    p->tag = NULL;
    p->transaction_file = NULL;
    p->has_transaction_section = 0;
    p->transaction_section = 0;
    p->has_index_section = 0;
    p->index_section = 0;

    uint64_t us = core_wall_us();
    next->timestamp.has_seconds = 1;
    next->timestamp.seconds = (int64_t)(us / 1000000);
    next->timestamp.has_nanos = 1;
    next->timestamp.nanos = (int32_t)(us % 1000000) * 1000;
    p->timestamp = &next->timestamp;

    next->writer.library = (char *)LANCE_WRITER_LIBRARY;
    next->writer.version = (char *)OG_VERSION_STRING;
    p->writer_version = &next->writer;

    if (!prev || !prev->data_format) {
        next->format.file_format = (char *)"lance";
        next->format.version = (char *)"2.0";
        p->data_format = &next->format;
    }
    if (!prev) {
        p->has_reader_feature_flags = 1;
        p->has_writer_feature_flags = 1;
    }
}

void lance_manifest_update_flags(Lance__Table__Manifest *m)
{
    int any = 0;
    for (size_t i = 0; i < m->n_fragments && !any; i++)
        if (m->fragments[i]->deletion_file) any = 1;
    if (any) {
        m->reader_feature_flags |= LANCE_FLAG_DELETION_FILES;
        m->writer_feature_flags |= LANCE_FLAG_DELETION_FILES;
    } else {
        m->reader_feature_flags &= ~(uint64_t)LANCE_FLAG_DELETION_FILES;
        m->writer_feature_flags &= ~(uint64_t)LANCE_FLAG_DELETION_FILES;
    }
    m->has_reader_feature_flags = m->has_writer_feature_flags = 1;
}
