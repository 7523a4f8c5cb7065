/* Stable row ids: RowIdSequence and RowDatasetVersionSequence, encode/decode/expand. */
#include "lance/rowids.h"

#include "core/alloc.h"
#include "core/error.h"
#include "lance/manifest.h"
#include "lance/proto/rowids.pb-c.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int bad(const char *object, const char *fmt, ...) CORE_PRINTF(2, 3);
static int bad(const char *object, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    core_err(OG_E_CORRUPT, "corrupt lance row id sequence %s: %s", object ? object : "(bytes)",
             msg);
    if (object) core_err_detail(CORE_ERR_OBJECT, object);
    return OG_E_CORRUPT;
}

static uint64_t rdle(const uint8_t *p, size_t w)
{
    uint64_t v = 0;
    for (size_t i = 0; i < w; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

uint64_t lance_segment_len(const lance_segment *s)
{
    switch (s->kind) {
    case LANCE_SEG_RANGE:
        return s->end - s->start;
    case LANCE_SEG_RANGE_HOLES:
        return s->end - s->start - s->n_values;
    case LANCE_SEG_RANGE_BITMAP: {
        /* Bits at or beyond end - start are ignored. */
        uint64_t n = 0, span = s->end - s->start, whole = span / 8;
        for (uint64_t i = 0; i < whole; i++)
            n += (uint64_t)__builtin_popcount(s->bitmap[i]);
        if (span % 8)
            n += (uint64_t)__builtin_popcount(s->bitmap[whole] & ((1u << (span % 8)) - 1));
        return n;
    }
    case LANCE_SEG_SORTED_ARRAY:
    case LANCE_SEG_ARRAY:
        return s->n_values;
    }
    return 0;
}

static void segment_clear(lance_segment *s)
{
    core_free(s->values);
    core_free(s->bitmap);
    memset(s, 0, sizeof *s);
}

/* EncodedU64Array -> values (owned). */
static int decode_array(const Lance__Table__EncodedU64Array *a, uint64_t **vals, size_t *n,
                        const char *object)
{
    *vals = NULL;
    *n = 0;
    if (!a) return bad(object, "missing encoded array");
    uint64_t base = 0;
    const ProtobufCBinaryData *d;
    size_t w;
    switch (a->array_case) {
    case LANCE__TABLE__ENCODED_U64_ARRAY__ARRAY_U16_ARRAY:
        base = a->u16_array->base_value;
        d = &a->u16_array->offsets;
        w = 2;
        break;
    case LANCE__TABLE__ENCODED_U64_ARRAY__ARRAY_U32_ARRAY:
        base = a->u32_array->base_value;
        d = &a->u32_array->offsets;
        w = 4;
        break;
    case LANCE__TABLE__ENCODED_U64_ARRAY__ARRAY_U64_ARRAY:
        d = &a->u64_array->values;
        w = 8;
        break;
    default:
        return bad(object, "encoded array of unknown kind %d", (int)a->array_case);
    }
    if (d->len % w)
        return bad(object, "%zu bytes is not a whole number of %zu-byte values", d->len, w);
    size_t cnt = d->len / w;
    uint64_t *v = core_malloc(cnt ? cnt * sizeof *v : 1);
    if (!v) return core_err_nomem();
    for (size_t i = 0; i < cnt; i++) {
        uint64_t x = rdle(d->data + i * w, w);
        if (x > UINT64_MAX - base) {
            core_free(v);
            return bad(object, "array value overflows 64 bits");
        }
        v[i] = base + x;
    }
    *vals = v;
    *n = cnt;
    return 0;
}

static int decode_segment(const Lance__Table__U64Segment *p, lance_segment *s, const char *object)
{
    memset(s, 0, sizeof *s);
    int rc = 0;
    switch (p->segment_case) {
    case LANCE__TABLE__U64_SEGMENT__SEGMENT_RANGE:
        s->kind = LANCE_SEG_RANGE;
        s->start = p->range->start;
        s->end = p->range->end;
        break;
    case LANCE__TABLE__U64_SEGMENT__SEGMENT_RANGE_WITH_HOLES:
        s->kind = LANCE_SEG_RANGE_HOLES;
        s->start = p->range_with_holes->start;
        s->end = p->range_with_holes->end;
        rc = decode_array(p->range_with_holes->holes, &s->values, &s->n_values, object);
        break;
    case LANCE__TABLE__U64_SEGMENT__SEGMENT_RANGE_WITH_BITMAP: {
        s->kind = LANCE_SEG_RANGE_BITMAP;
        s->start = p->range_with_bitmap->start;
        s->end = p->range_with_bitmap->end;
        const ProtobufCBinaryData *d = &p->range_with_bitmap->bitmap;
        s->bitmap = core_malloc(d->len ? d->len : 1);
        if (!s->bitmap) return core_err_nomem();
        if (d->len) memcpy(s->bitmap, d->data, d->len);
        s->bitmap_len = d->len;
        break;
    }
    case LANCE__TABLE__U64_SEGMENT__SEGMENT_SORTED_ARRAY:
        s->kind = LANCE_SEG_SORTED_ARRAY;
        rc = decode_array(p->sorted_array, &s->values, &s->n_values, object);
        break;
    case LANCE__TABLE__U64_SEGMENT__SEGMENT_ARRAY:
        s->kind = LANCE_SEG_ARRAY;
        rc = decode_array(p->array, &s->values, &s->n_values, object);
        break;
    default:
        return bad(object, "segment of unknown kind %d", (int)p->segment_case);
    }
    if (rc) return rc;
    /* Validate, so that length and expansion need no further checks. */
    if (s->kind <= LANCE_SEG_RANGE_BITMAP) {
        if (s->start > s->end)
            return bad(object, "range start %" PRIu64 " is after its end %" PRIu64, s->start,
                       s->end);
        if (s->end - s->start > LANCE_ROWIDS_MAX_ROWS)
            return bad(object, "range of %" PRIu64 " ids is implausibly long", s->end - s->start);
    }
    if (s->kind == LANCE_SEG_RANGE_BITMAP && (s->end - s->start + 7) / 8 > s->bitmap_len)
        return bad(object, "bitmap of %zu bytes is too short for %" PRIu64 " ids", s->bitmap_len,
                   s->end - s->start);
    if (s->kind == LANCE_SEG_RANGE_HOLES || s->kind == LANCE_SEG_SORTED_ARRAY) {
        for (size_t i = 0; i < s->n_values; i++) {
            if (i && s->values[i] <= s->values[i - 1])
                return bad(object, "sorted values are not increasing at %zu", i);
            if (s->kind == LANCE_SEG_RANGE_HOLES &&
                (s->values[i] < s->start || s->values[i] >= s->end))
                return bad(object, "hole %" PRIu64 " is outside its range", s->values[i]);
        }
    }
    return 0;
}

int lance_rowid_seq_decode(lance_rowid_seq *out, const void *data, size_t len, const char *object)
{
    memset(out, 0, sizeof *out);
    ProtobufCMessage *m = NULL;
    int rc = lance_pb_unpack(&m, &lance__table__row_id_sequence__descriptor, data, len,
                             "row id sequence", object);
    if (rc) return rc;
    Lance__Table__RowIdSequence *p = (Lance__Table__RowIdSequence *)m;
    if (p->n_segments) {
        out->segs = core_calloc(p->n_segments, sizeof *out->segs);
        if (!out->segs) {
            lance_pb_free(m);
            return core_err_nomem();
        }
    }
    uint64_t total = 0;
    for (size_t i = 0; i < p->n_segments && !rc; i++) {
        rc = decode_segment(p->segments[i], &out->segs[i], object);
        out->n = i + 1;
        if (!rc) {
            total += lance_segment_len(&out->segs[i]);
            if (total > LANCE_ROWIDS_MAX_ROWS) rc = bad(object, "too many row ids");
        }
    }
    lance_pb_free(m);
    if (rc) lance_rowid_seq_free(out);
    return rc;
}

void lance_rowid_seq_free(lance_rowid_seq *seq)
{
    if (!seq) return;
    for (size_t i = 0; i < seq->n; i++)
        segment_clear(&seq->segs[i]);
    core_free(seq->segs);
    memset(seq, 0, sizeof *seq);
}

uint64_t lance_rowid_seq_len(const lance_rowid_seq *seq)
{
    uint64_t n = 0;
    for (size_t i = 0; i < seq->n; i++)
        n += lance_segment_len(&seq->segs[i]);
    return n;
}

static size_t expand_segment(const lance_segment *s, uint64_t *o)
{
    size_t k = 0;
    switch (s->kind) {
    case LANCE_SEG_RANGE:
        for (uint64_t x = s->start; x < s->end; x++)
            o[k++] = x;
        break;
    case LANCE_SEG_RANGE_HOLES: {
        size_t h = 0;
        for (uint64_t x = s->start; x < s->end; x++) {
            if (h < s->n_values && s->values[h] == x) {
                h++;
                continue;
            }
            o[k++] = x;
        }
        break;
    }
    case LANCE_SEG_RANGE_BITMAP:
        for (uint64_t i = 0; i < s->end - s->start; i++)
            if ((s->bitmap[i / 8] >> (i % 8)) & 1) o[k++] = s->start + i;
        break;
    case LANCE_SEG_SORTED_ARRAY:
    case LANCE_SEG_ARRAY:
        if (s->n_values) memcpy(o, s->values, s->n_values * sizeof *o);
        k = s->n_values;
        break;
    }
    return k;
}

int lance_rowid_seq_expand(const lance_rowid_seq *seq, uint64_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    uint64_t total = lance_rowid_seq_len(seq);
    if (total > SIZE_MAX / sizeof(uint64_t))
        return core_err(OG_E_RESOURCE_LIMIT, "%" PRIu64 " row ids do not fit in memory", total);
    uint64_t *o = core_malloc(total ? (size_t)total * sizeof *o : 1);
    if (!o) return core_err_nomem();
    size_t k = 0;
    for (size_t i = 0; i < seq->n; i++)
        k += expand_segment(&seq->segs[i], o + k);
    *ids = o;
    *n = k;
    return 0;
}

/* ---- encoding ---------------------------------------------------------------------------- */

typedef struct seg_pb {
    Lance__Table__U64Segment seg;
    Lance__Table__U64Segment__Range r;
    Lance__Table__U64Segment__RangeWithHoles rh;
    Lance__Table__U64Segment__RangeWithBitmap rb;
    Lance__Table__EncodedU64Array arr;
    Lance__Table__EncodedU64Array__U16Array a16;
    Lance__Table__EncodedU64Array__U32Array a32;
    Lance__Table__EncodedU64Array__U64Array a64;
    core_buf bytes;
} seg_pb;

static int encode_array(seg_pb *p, const uint64_t *v, size_t n)
{
    Lance__Table__EncodedU64Array arr = LANCE__TABLE__ENCODED_U64_ARRAY__INIT;
    p->arr = arr;
    uint64_t lo = n ? v[0] : 0, hi = lo;
    for (size_t i = 1; i < n; i++) {
        if (v[i] < lo) lo = v[i];
        if (v[i] > hi) hi = v[i];
    }
    size_t w = hi - lo <= 0xFFFFu ? 2 : hi - lo <= 0xFFFFFFFFu ? 4 : 8;
    uint64_t base = w == 8 ? 0 : lo;
    int rc = core_buf_reserve(&p->bytes, n * w);
    if (rc) return rc;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = v[i] - base;
        for (size_t b = 0; b < w; b++)
            p->bytes.data[p->bytes.len++] = (uint8_t)(x >> (8 * b));
    }
    ProtobufCBinaryData d = {p->bytes.len, p->bytes.data};
    if (w == 2) {
        Lance__Table__EncodedU64Array__U16Array a =
            LANCE__TABLE__ENCODED_U64_ARRAY__U16_ARRAY__INIT;
        p->a16 = a;
        p->a16.base_value = base;
        p->a16.offsets = d;
        p->arr.array_case = LANCE__TABLE__ENCODED_U64_ARRAY__ARRAY_U16_ARRAY;
        p->arr.u16_array = &p->a16;
    } else if (w == 4) {
        Lance__Table__EncodedU64Array__U32Array a =
            LANCE__TABLE__ENCODED_U64_ARRAY__U32_ARRAY__INIT;
        p->a32 = a;
        p->a32.base_value = base;
        p->a32.offsets = d;
        p->arr.array_case = LANCE__TABLE__ENCODED_U64_ARRAY__ARRAY_U32_ARRAY;
        p->arr.u32_array = &p->a32;
    } else {
        Lance__Table__EncodedU64Array__U64Array a =
            LANCE__TABLE__ENCODED_U64_ARRAY__U64_ARRAY__INIT;
        p->a64 = a;
        p->a64.values = d;
        p->arr.array_case = LANCE__TABLE__ENCODED_U64_ARRAY__ARRAY_U64_ARRAY;
        p->arr.u64_array = &p->a64;
    }
    return 0;
}

static int encode_segment(seg_pb *p, const lance_segment *s)
{
    Lance__Table__U64Segment seg = LANCE__TABLE__U64_SEGMENT__INIT;
    p->seg = seg;
    int rc = 0;
    switch (s->kind) {
    case LANCE_SEG_RANGE: {
        Lance__Table__U64Segment__Range r = LANCE__TABLE__U64_SEGMENT__RANGE__INIT;
        p->r = r;
        p->r.start = s->start;
        p->r.end = s->end;
        p->seg.segment_case = LANCE__TABLE__U64_SEGMENT__SEGMENT_RANGE;
        p->seg.range = &p->r;
        break;
    }
    case LANCE_SEG_RANGE_HOLES: {
        Lance__Table__U64Segment__RangeWithHoles r =
            LANCE__TABLE__U64_SEGMENT__RANGE_WITH_HOLES__INIT;
        p->rh = r;
        p->rh.start = s->start;
        p->rh.end = s->end;
        rc = encode_array(p, s->values, s->n_values);
        p->rh.holes = &p->arr;
        p->seg.segment_case = LANCE__TABLE__U64_SEGMENT__SEGMENT_RANGE_WITH_HOLES;
        p->seg.range_with_holes = &p->rh;
        break;
    }
    case LANCE_SEG_RANGE_BITMAP: {
        Lance__Table__U64Segment__RangeWithBitmap r =
            LANCE__TABLE__U64_SEGMENT__RANGE_WITH_BITMAP__INIT;
        p->rb = r;
        p->rb.start = s->start;
        p->rb.end = s->end;
        p->rb.bitmap.data = s->bitmap;
        p->rb.bitmap.len = s->bitmap_len;
        p->seg.segment_case = LANCE__TABLE__U64_SEGMENT__SEGMENT_RANGE_WITH_BITMAP;
        p->seg.range_with_bitmap = &p->rb;
        break;
    }
    case LANCE_SEG_SORTED_ARRAY:
    case LANCE_SEG_ARRAY:
        rc = encode_array(p, s->values, s->n_values);
        if (s->kind == LANCE_SEG_SORTED_ARRAY) {
            p->seg.segment_case = LANCE__TABLE__U64_SEGMENT__SEGMENT_SORTED_ARRAY;
            p->seg.sorted_array = &p->arr;
        } else {
            p->seg.segment_case = LANCE__TABLE__U64_SEGMENT__SEGMENT_ARRAY;
            p->seg.array = &p->arr;
        }
        break;
    default:
        rc = core_err(OG_E_INTERNAL, "row id segment of unknown kind %d", (int)s->kind);
    }
    return rc;
}

static void seg_pbs_free(seg_pb *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        core_buf_free(&p[i].bytes);
    core_free(p);
}

/* Encode n segments (taken via get(i)) into pbs, and an array of their message pointers. */
static int encode_segments(seg_pb **pbs, Lance__Table__U64Segment ***ptrs, size_t n,
                           const lance_segment *(*get)(const void *, size_t), const void *ctx)
{
    *pbs = core_calloc(n ? n : 1, sizeof **pbs);
    *ptrs = core_calloc(n ? n : 1, sizeof **ptrs);
    if (!*pbs || !*ptrs) return core_err_nomem();
    for (size_t i = 0; i < n; i++) {
        int rc = encode_segment(&(*pbs)[i], get(ctx, i));
        if (rc) return rc;
        (*ptrs)[i] = &(*pbs)[i].seg;
    }
    return 0;
}

static const lance_segment *get_rowid_seg(const void *ctx, size_t i)
{
    return &((const lance_rowid_seq *)ctx)->segs[i];
}

int lance_rowid_seq_encode(core_buf *out, const lance_rowid_seq *seq)
{
    core_buf_clear(out);
    seg_pb *pbs = NULL;
    Lance__Table__U64Segment **ptrs = NULL;
    int rc = encode_segments(&pbs, &ptrs, seq->n, get_rowid_seg, seq);
    if (!rc) {
        Lance__Table__RowIdSequence m = LANCE__TABLE__ROW_ID_SEQUENCE__INIT;
        m.n_segments = seq->n;
        m.segments = ptrs;
        rc = lance_pb_pack(out, &m.base);
    }
    if (pbs) seg_pbs_free(pbs, seq->n);
    core_free(ptrs);
    return rc;
}

int lance_rowids_assign(core_buf *out, uint64_t *next_row_id, uint64_t n)
{
    if (n > UINT64_MAX - *next_row_id)
        return core_err(OG_E_RESOURCE_LIMIT, "row ids exhausted (next %" PRIu64 ")", *next_row_id);
    lance_segment s = {.kind = LANCE_SEG_RANGE, .start = *next_row_id, .end = *next_row_id + n};
    lance_rowid_seq seq = {&s, 1};
    int rc = lance_rowid_seq_encode(out, &seq);
    if (!rc) *next_row_id += n;
    return rc;
}

/* ---- version sequences ------------------------------------------------------------------- */

int lance_version_seq_decode(lance_version_seq *out, const void *data, size_t len,
                             const char *object)
{
    memset(out, 0, sizeof *out);
    ProtobufCMessage *m = NULL;
    int rc = lance_pb_unpack(&m, &lance__table__row_dataset_version_sequence__descriptor, data, len,
                             "row version sequence", object);
    if (rc) return rc;
    Lance__Table__RowDatasetVersionSequence *p = (Lance__Table__RowDatasetVersionSequence *)m;
    if (p->n_runs) {
        out->runs = core_calloc(p->n_runs, sizeof *out->runs);
        if (!out->runs) {
            lance_pb_free(m);
            return core_err_nomem();
        }
    }
    uint64_t total = 0;
    for (size_t i = 0; i < p->n_runs && !rc; i++) {
        out->n = i + 1;
        out->runs[i].version = p->runs[i]->version;
        if (!p->runs[i]->span) {
            rc = bad(object, "version run %zu has no span", i);
            break;
        }
        rc = decode_segment(p->runs[i]->span, &out->runs[i].span, object);
        if (!rc) {
            total += lance_segment_len(&out->runs[i].span);
            if (total > LANCE_ROWIDS_MAX_ROWS) rc = bad(object, "too many rows in version runs");
        }
    }
    lance_pb_free(m);
    if (rc) lance_version_seq_free(out);
    return rc;
}

void lance_version_seq_free(lance_version_seq *seq)
{
    if (!seq) return;
    for (size_t i = 0; i < seq->n; i++)
        segment_clear(&seq->runs[i].span);
    core_free(seq->runs);
    memset(seq, 0, sizeof *seq);
}

static const lance_segment *get_run_seg(const void *ctx, size_t i)
{
    return &((const lance_version_seq *)ctx)->runs[i].span;
}

int lance_version_seq_encode(core_buf *out, const lance_version_seq *seq)
{
    core_buf_clear(out);
    size_t n = seq->n;
    seg_pb *pbs = NULL;
    Lance__Table__U64Segment **ptrs = NULL;
    Lance__Table__RowDatasetVersionRun *runs = core_calloc(n ? n : 1, sizeof *runs);
    Lance__Table__RowDatasetVersionRun **rp = core_calloc(n ? n : 1, sizeof *rp);
    int rc = runs && rp ? encode_segments(&pbs, &ptrs, n, get_run_seg, seq) : core_err_nomem();
    for (size_t i = 0; i < n && !rc; i++) {
        Lance__Table__RowDatasetVersionRun r = LANCE__TABLE__ROW_DATASET_VERSION_RUN__INIT;
        runs[i] = r;
        runs[i].span = ptrs[i];
        runs[i].version = seq->runs[i].version;
        rp[i] = &runs[i];
    }
    if (!rc) {
        Lance__Table__RowDatasetVersionSequence m =
            LANCE__TABLE__ROW_DATASET_VERSION_SEQUENCE__INIT;
        m.n_runs = n;
        m.runs = rp;
        rc = lance_pb_pack(out, &m.base);
    }
    if (pbs) seg_pbs_free(pbs, n);
    core_free(ptrs);
    core_free(runs);
    core_free(rp);
    return rc;
}

int lance_version_seq_uniform(core_buf *out, uint64_t n_rows, uint64_t version)
{
    lance_version_run run = {.span = {.kind = LANCE_SEG_RANGE, .start = 0, .end = n_rows},
                             .version = version};
    lance_version_seq seq = {&run, 1};
    return lance_version_seq_encode(out, &seq);
}

int lance_version_seq_expand(const lance_version_seq *seq, uint64_t n_rows, uint64_t **versions)
{
    *versions = NULL;
    uint64_t total = 0;
    for (size_t i = 0; i < seq->n; i++)
        total += lance_segment_len(&seq->runs[i].span);
    if (total != n_rows)
        return bad(NULL, "version runs cover %" PRIu64 " rows, the fragment has %" PRIu64, total,
                   n_rows);
    if (n_rows > SIZE_MAX / sizeof(uint64_t))
        return core_err(OG_E_RESOURCE_LIMIT, "%" PRIu64 " rows do not fit in memory", n_rows);
    uint64_t *o = core_malloc(n_rows ? (size_t)n_rows * sizeof *o : 1);
    if (!o) return core_err_nomem();
    size_t k = 0;
    for (size_t i = 0; i < seq->n; i++) {
        uint64_t len = lance_segment_len(&seq->runs[i].span);
        for (uint64_t j = 0; j < len; j++)
            o[k++] = seq->runs[i].version;
    }
    *versions = o;
    return 0;
}

int lance_version_seq_keepable(const uint64_t *v, uint64_t n, size_t max_runs)
{
    size_t nruns = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (v[i] == 0) return 0;
        nruns += i == 0 || v[i] != v[i - 1];
        if (max_runs && nruns > max_runs) return 0;
    }
    return 1;
}

int lance_version_seq_from_rows(core_buf *out, const uint64_t *v, uint64_t n)
{
    size_t nruns = 0;
    for (uint64_t i = 0; i < n; i++)
        nruns += i == 0 || v[i] != v[i - 1];
    lance_version_run *runs = core_calloc(nruns ? nruns : 1, sizeof *runs);
    if (!runs) return core_err_nomem();
    size_t r = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (i == 0 || v[i] != v[i - 1]) {
            runs[r].span.kind = LANCE_SEG_RANGE;
            runs[r].span.start = i;
            runs[r].version = v[i];
            r++;
        }
        runs[r - 1].span.end = i + 1;
    }
    lance_version_seq seq = {runs, nruns};
    int rc = lance_version_seq_encode(out, &seq);
    core_free(runs);
    return rc;
}
