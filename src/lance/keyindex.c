/* Key indexes over Lance tables (see keyindex.h): segment files (sorted trees of 4 KiB blocks,
 * each block checksummed), their listing in table_metadata, and lookups that merge segments
 * with a scan of the fragments no segment covers.
 *
 * Segment file, little-endian:
 *   "OGKIX001"  blocks...  directory block  trailer
 *   block     = u32 body_len, body, u64 xxh3(body); a leaf or internal body may be stored as
 *               u8 0x80, varint raw length, zstd frame of the raw body
 *   leaf      = u8 1, varint n, n x (varint shared, varint suffix_len, suffix, varint plen + 1
 *               (0: null), pay, varint slot (only when the segment has several slots),
 *               varint off); a key is `shared` bytes of the previous key of the leaf + suffix
 *   internal  = u8 2, varint n, n x (varint klen, first key of child, varint off, varint len);
 *               off counts from the tree's first byte (its leaf_start), so trees can be
 *               built apart
 *   directory = u8 3, varint n_slots, n_slots x (varint physical rows, u64 hash of the
 *               fragment's data file paths),
 *               varint n_trees, per tree: varint name_len, name, varint entries, varint depth,
 *               varint root_off, varint root_len, varint leaf_start, varint leaf_end
 *   trailer   = u64 dir_off, u32 dir_len, u32 version 3, u64 xxh3(first 16 bytes), "OGKIXEND"
 * A tree's leaves are contiguous in key order, children precede their parent, so a reader
 * walks leaves forward from the one the descent found and no block can point at itself. */
#include "lance/keyindex.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/log.h"
#include "lance/paths.h"

#include <inttypes.h>
#include <pthread.h>
#include <roaring/roaring.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define KIX_MAGIC "OGKIX001"
#define KIX_END "OGKIXEND"
#define KIX_TRAILER 32
#define KIX_BLOCK_TARGET 4096
#define KIX_TAIL_READ 4096
#define KIX_MAX_DEPTH 12
#define KIX_CACHE 8
#define KIX_WINDOW_MAX (32u << 20) /* bound on a tree's leaves read at once by a lookup */
#define KIX_THREAD_ENTRIES 100000  /* trees of a segment this large are built by workers */
#define KIX_TREE_WORKERS 2         /* ... this many (the caller and threads) */
#define KIX_VERSION 3 /* 2: slots carry their data files' hash; 3: child offsets per tree */
#define KIX_DIR_KIND 3
#define KIX_ZSTD 0x80
#define KIX_BLOCK_MAX (64u << 20) /* bound on a decompressed block (a leaf of huge keys) */

static _Atomic uint64_t kix_damaged_count;

uint64_t lance_kix_damaged(void)
{
    return atomic_load(&kix_damaged_count);
}

static int on_addr(void *arg, size_t key, uint64_t addr, const uint8_t *pay, size_t plen)
{
    lance_kix_addrs *l = arg;
    (void)key;
    (void)pay;
    (void)plen;
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 16;
        uint64_t *na = core_realloc(l->a, nc * sizeof *na);
        if (!na) return core_err_nomem();
        l->a = na;
        l->cap = nc;
    }
    l->a[l->n++] = addr;
    return 0;
}

int lance_kix_lookup_strs(lance_kix_addrs *out, const lance_dataset *ds, const char *column,
                          char *const *keys, size_t n)
{
    memset(out, 0, sizeof *out);
    if (!n) return 0;
    const uint8_t **k = core_malloc(n * sizeof *k);
    size_t *l = core_malloc(n * sizeof *l), nk = 0;
    int rc = k && l ? 0 : core_err_nomem();
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (!keys[i]) continue;
        k[nk] = (const uint8_t *)keys[i];
        l[nk++] = strlen(keys[i]);
    }
    if (rc == 0) rc = lance_kix_lookup(ds, column, NULL, k, l, nk, on_addr, out, NULL);
    core_free(k);
    core_free(l);
    if (rc) lance_kix_addrs_clear(out);
    return rc;
}

void lance_kix_addrs_clear(lance_kix_addrs *a)
{
    core_free(a->a);
    memset(a, 0, sizeof *a);
}

/* ---- small helpers ----------------------------------------------------------------------- */

static int put_varint(core_buf *b, uint64_t v)
{
    unsigned char tmp[10];
    size_t n = 0;
    do {
        tmp[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v) tmp[n] |= 0x80;
        n++;
    } while (v);
    return core_buf_append(b, tmp, n);
}

/* Write v as a varint at w (room for 10 bytes); returns the end. */
static uint8_t *varint_to(uint8_t *w, uint64_t v)
{
    while (v >= 0x80) {
        *w++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *w++ = (uint8_t)v;
    return w;
}

typedef struct rd {
    const uint8_t *p, *end;
    int bad;
} rd;

static uint64_t get_varint(rd *r)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) break;
        uint8_t c = *r->p++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) return v;
    }
    r->bad = 1;
    return 0;
}

static const uint8_t *get_bytes(rd *r, uint64_t n)
{
    if (r->bad || n > (uint64_t)(r->end - r->p)) {
        r->bad = 1;
        return NULL;
    }
    const uint8_t *p = r->p;
    r->p += n;
    return p;
}

static uint32_t rd_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd_u64(const uint8_t *p)
{
    return (uint64_t)rd_u32(p) | (uint64_t)rd_u32(p + 4) << 32;
}

static int bytes_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    if (c) return c;
    return an < bn ? -1 : an > bn;
}

/* ---- declarations ------------------------------------------------------------------------ */

static const char *meta_value(const Lance__Table__Manifest *pb, const char *key)
{
    for (size_t i = 0; pb && i < pb->n_table_metadata; i++)
        if (pb->table_metadata[i]->key && strcmp(pb->table_metadata[i]->key, key) == 0)
            return pb->table_metadata[i]->value;
    return NULL;
}

static int name_ok(const char *s, size_t n)
{
    if (n == 0 || n >= 64) return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == ';' || s[i] == '>' || s[i] == ':' || s[i] == ',' || (unsigned char)s[i] < 0x20)
            return 0;
    return 1;
}

int lance_kix_decl_check(const char *decls)
{
    size_t n = 0;
    const char *p = decls;
    while (p && *p) {
        const char *e = strchr(p, ';');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *gt = memchr(p, '>', len);
        size_t cl = gt ? (size_t)(gt - p) : len;
        if (!name_ok(p, cl) || (gt && !name_ok(gt + 1, len - cl - 1)))
            return core_err(OG_E_BAD_REQUEST,
                            "key index declaration '%.*s' is not "
                            "'column' or 'column>payload'",
                            (int)len, p);
        if (++n > LANCE_KIX_MAX_DECLS)
            return core_err(OG_E_BAD_REQUEST, "more than %d key indexes declared",
                            LANCE_KIX_MAX_DECLS);
        p = e ? e + 1 : NULL;
    }
    return 0;
}

static int utf8_like(const arrow_field *f)
{
    arrow_type_id t = f->type.id;
    return t == ARROW_UTF8 || t == ARROW_BINARY;
}

static int schema_col(const arrow_schema *s, const char *name)
{
    for (size_t i = 0; i < s->n_fields; i++)
        if (strcmp(s->fields[i].name, name) == 0) return (int)i;
    return -1;
}

static int decls_parse(const char *v, const arrow_schema *schema, lance_kix_decl *out, size_t *n);

const char *lance_kix_decl_text(const Lance__Table__Manifest *pb)
{
    const char *v = meta_value(pb, LANCE_KIX_DECL_KEY);
    return v ? v : "";
}

static int decls_parse(const char *v, const arrow_schema *schema, lance_kix_decl *out, size_t *n)
{
    *n = 0;
    if (!v || lance_kix_decl_check(v)) return 0; /* a bad declaration: unindexed, not broken */
    const char *p = v;
    while (p && *p) {
        const char *e = strchr(p, ';');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *gt = memchr(p, '>', len);
        size_t cl = gt ? (size_t)(gt - p) : len;
        lance_kix_decl d;
        memset(&d, 0, sizeof d);
        memcpy(d.column, p, cl);
        if (gt) memcpy(d.payload, gt + 1, len - cl - 1);
        d.col = schema_col(schema, d.column);
        d.pay = gt ? schema_col(schema, d.payload) : -1;
        if (d.col >= 0 && utf8_like(&schema->fields[d.col]) &&
            (!gt || (d.pay >= 0 && utf8_like(&schema->fields[d.pay]))))
            out[(*n)++] = d;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

int lance_kix_decls(const lance_dataset *ds, lance_kix_decl *out, size_t *n)
{
    return decls_parse(meta_value(ds->m->pb, LANCE_KIX_DECL_KEY), &ds->schema, out, n);
}

bool lance_kix_covers(const Lance__Table__Manifest *pb, uint64_t frag_id);

uint64_t lance_kix_covered_rows(const lance_dataset *ds)
{
    const Lance__Table__Manifest *pb = ds->m->pb;
    uint64_t n = 0;
    for (size_t i = 0; i < pb->n_fragments; i++)
        if (lance_kix_covers(pb, pb->fragments[i]->id)) n += pb->fragments[i]->physical_rows;
    return n;
}

bool lance_kix_missing(const lance_dataset *ds, const char *decls)
{
    const Lance__Table__Manifest *pb = ds->m->pb;
    int changed = decls && strcmp(decls, lance_kix_decl_text(pb)) != 0;
    if (!decls && !*lance_kix_decl_text(pb)) return false;
    uint64_t *ok = NULL;
    size_t n_ok = 0;
    if (!changed && lance_kix_healthy(ds, &ok, &n_ok) != 0) {
        og_error_clear();
        return true;
    }
    bool missing = false;
    for (size_t i = 0; i < pb->n_fragments && !missing; i++) {
        const Lance__Table__DataFragment *f = pb->fragments[i];
        uint64_t dead = f->deletion_file ? f->deletion_file->num_deleted_rows : 0;
        if (f->physical_rows < LANCE_KIX_MIN_ROWS + dead) continue;
        if (changed) missing = true;
        for (size_t k = 0; !missing && k <= n_ok; k++) {
            if (k == n_ok)
                missing = true;
            else if (ok[k] == f->id)
                break;
        }
    }
    core_free(ok);
    return missing;
}

static void decl_text(const lance_kix_decl *d, char out[130])
{
    if (d->payload[0])
        snprintf(out, 130, "%s>%s", d->column, d->payload);
    else
        snprintf(out, 130, "%s", d->column);
}

bool lance_kix_declared(const lance_dataset *ds, const char *column, const char *payload)
{
    lance_kix_decl d[LANCE_KIX_MAX_DECLS];
    size_t n = 0;
    lance_kix_decls(ds, d, &n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(d[i].column, column) && (!payload || !strcmp(d[i].payload, payload)))
            return true;
    return false;
}

/* Replace (or add) key's entry in pb's table_metadata; NULL value removes it. */
static int set_meta(core_arena *a, Lance__Table__Manifest *pb, const char *key, const char *value)
{
    Lance__Table__Manifest__TableMetadataEntry **entries =
        core_arena_alloc(a, (pb->n_table_metadata + 1) * sizeof *entries);
    if (!entries) return core_err_nomem();
    size_t ne = 0;
    for (size_t i = 0; i < pb->n_table_metadata; i++)
        if (!pb->table_metadata[i]->key || strcmp(pb->table_metadata[i]->key, key))
            entries[ne++] = pb->table_metadata[i];
    if (value) {
        Lance__Table__Manifest__TableMetadataEntry *mine = core_arena_alloc(a, sizeof *mine);
        char *k = core_arena_strdup(a, key), *v = core_arena_strdup(a, value);
        if (!mine || !k || !v) return core_err_nomem();
        lance__table__manifest__table_metadata_entry__init(mine);
        mine->key = k;
        mine->value = v;
        entries[ne++] = mine;
    }
    pb->n_table_metadata = ne;
    pb->table_metadata = entries;
    return 0;
}

int lance_kix_declare_pb(core_arena *a, Lance__Table__Manifest *pb, const char *decls)
{
    int rc = decls ? lance_kix_decl_check(decls) : 0;
    if (rc) return rc;
    return set_meta(a, pb, LANCE_KIX_DECL_KEY, decls && *decls ? decls : NULL);
}

/* ---- segment listing --------------------------------------------------------------------- */

typedef struct seg_ref {
    char name[40];
    uint64_t size;
    uint64_t *frags;
    size_t n_frags;
} seg_ref;

static void refs_free(seg_ref *r, size_t n)
{
    for (size_t i = 0; r && i < n; i++)
        core_free(r[i].frags);
    core_free(r);
}

static int seg_name_ok(const char *s, size_t n)
{
    if (n == 0 || n >= 40) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '.' || c == '-')) return 0;
    }
    return s[0] != '.';
}

/* Parse "name:size:f,f;..." (untrusted text). Entries that do not parse are left out. */
static int refs_parse(const char *v, seg_ref **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    if (!v || !*v) return 0;
    size_t cap = 1;
    for (const char *q = v; *q; q++)
        cap += *q == ';';
    seg_ref *r = core_calloc(cap, sizeof *r);
    if (!r) return core_err_nomem();
    size_t n = 0;
    const char *p = v;
    while (p && *p) {
        const char *e = strchr(p, ';');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *c1 = memchr(p, ':', len);
        const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - p)) : NULL;
        if (c1 && c2 && seg_name_ok(p, (size_t)(c1 - p))) {
            seg_ref *s = &r[n];
            memcpy(s->name, p, (size_t)(c1 - p));
            s->name[c1 - p] = '\0';
            char *endp;
            s->size = strtoull(c1 + 1, &endp, 10);
            int ok = endp == c2;
            const char *f = c2 + 1, *fe = p + len;
            size_t nf = f < fe ? 1 : 0;
            for (const char *q = f; q < fe; q++)
                nf += *q == ',';
            s->frags = core_malloc((nf ? nf : 1) * sizeof *s->frags);
            if (!s->frags) {
                refs_free(r, n);
                return core_err_nomem();
            }
            while (ok && f < fe) {
                if (*f < '0' || *f > '9') {
                    ok = 0;
                    break;
                }
                uint64_t id = strtoull(f, &endp, 10);
                if (endp > fe || (endp < fe && *endp != ',')) ok = 0;
                s->frags[s->n_frags++] = id;
                f = endp < fe ? endp + 1 : fe;
            }
            if (ok && s->n_frags)
                n++;
            else {
                core_free(s->frags);
                memset(s, 0, sizeof *s);
            }
        }
        p = e ? e + 1 : NULL;
    }
    *out = r;
    *n_out = n;
    return 0;
}

static int has_frag_id(Lance__Table__DataFragment *const *frags, size_t n, uint64_t id)
{
    for (size_t i = 0; i < n; i++)
        if (frags[i]->id == id) return 1;
    return 0;
}

int lance_kix_next_metadata(core_arena *a, Lance__Table__Manifest *next,
                            const Lance__Table__Manifest *base_pb, const lance_kix_staged *st,
                            size_t n_st, const uint64_t *new_ids, size_t n_new_ids)
{
    /* Segments built for another declaration have other trees: a new declaration drops them. */
    const char *old = strcmp(lance_kix_decl_text(base_pb), lance_kix_decl_text(next)) == 0
                          ? meta_value(base_pb, LANCE_KIX_SEG_KEY)
                          : NULL;
    if (!old && !n_st) return 0;
    seg_ref *refs = NULL;
    size_t nr = 0;
    int rc = refs_parse(old, &refs, &nr);
    if (rc) return rc;
    core_buf v = CORE_BUF_INIT;
    for (size_t i = 0; rc == 0 && i < nr; i++) {
        int live = 0;
        for (size_t k = 0; !live && k < refs[i].n_frags; k++)
            live = has_frag_id(next->fragments, next->n_fragments, refs[i].frags[k]);
        if (!live) continue; /* every fragment it covered is gone */
        rc = core_buf_printf(&v, "%s%s:%" PRIu64 ":", v.len ? ";" : "", refs[i].name, refs[i].size);
        for (size_t k = 0; rc == 0 && k < refs[i].n_frags; k++)
            rc = core_buf_printf(&v, "%s%" PRIu64, k ? "," : "", refs[i].frags[k]);
    }
    for (size_t i = 0; rc == 0 && i < n_st; i++) {
        if (!st[i].n || st[i].first + st[i].n > n_new_ids) continue;
        rc = core_buf_printf(&v, "%s%s:%" PRIu64 ":", v.len ? ";" : "", st[i].name, st[i].size);
        for (size_t k = 0; rc == 0 && k < st[i].n; k++)
            rc = core_buf_printf(&v, "%s%" PRIu64, k ? "," : "", new_ids[st[i].first + k]);
    }
    refs_free(refs, nr);
    /* next's entries: every other key kept, the listing replaced (or dropped when empty). */
    if (rc == 0) rc = set_meta(a, next, LANCE_KIX_SEG_KEY, v.len ? core_buf_cstr(&v) : NULL);
    core_buf_free(&v);
    return rc;
}

int lance_kix_files(const Lance__Table__Manifest *pb, const char *root,
                    int (*fn)(void *arg, const char *key), void *arg)
{
    seg_ref *refs = NULL;
    size_t nr = 0;
    int rc = refs_parse(meta_value(pb, LANCE_KIX_SEG_KEY), &refs, &nr);
    for (size_t i = 0; rc == 0 && i < nr; i++) {
        char key[STORE_KEY_MAX];
        if ((rc = lance_key(key, root, LANCE_KIX_DIR, refs[i].name)) == 0) rc = fn(arg, key);
    }
    refs_free(refs, nr);
    return rc;
}

bool lance_kix_covers(const Lance__Table__Manifest *pb, uint64_t frag_id)
{
    seg_ref *refs = NULL;
    size_t nr = 0;
    if (refs_parse(meta_value(pb, LANCE_KIX_SEG_KEY), &refs, &nr)) {
        og_error_clear();
        return false;
    }
    bool found = false;
    for (size_t i = 0; !found && i < nr; i++)
        for (size_t k = 0; !found && k < refs[i].n_frags; k++)
            found = refs[i].frags[k] == frag_id;
    refs_free(refs, nr);
    return found;
}

/* ---- encoding ---------------------------------------------------------------------------- */

static int entry_cmp(const void *pa, const void *pb)
{
    const lance_kix_entry *a = pa, *b = pb;
    int c = bytes_cmp(a->key, a->klen, b->key, b->klen);
    if (c) return c;
    if (a->slot != b->slot) return a->slot < b->slot ? -1 : 1;
    return a->off < b->off ? -1 : a->off > b->off;
}

/* Append block body to out with its length and checksum; leaf and internal bodies are stored
 * zstd-compressed (0x80, varint raw length, frame) when that is smaller. */
/* What the blocks of one tree reuse: a compression context and its output buffer (a fresh
 * context per block would allocate and fault in its tables every 4 KiB). */
typedef struct kix_enc {
    ZSTD_CCtx *cz; /* NULL: blocks stay raw */
    core_buf z, body;
} kix_enc;

static void kix_enc_init(kix_enc *x)
{
    x->cz = ZSTD_createCCtx();
    x->z = (core_buf)CORE_BUF_INIT;
    x->body = (core_buf)CORE_BUF_INIT;
}

static void kix_enc_free(kix_enc *x)
{
    ZSTD_freeCCtx(x->cz);
    core_buf_free(&x->z);
    core_buf_free(&x->body);
}

static int emit_block(core_buf *out, const core_buf *body, kix_enc *x)
{
    const core_buf *use = body;
    int rc = 0;
    /* (a block the reader would refuse to inflate, past KIX_BLOCK_MAX, stays raw) */
    if (x && x->cz && body->len > 64 && body->len <= KIX_BLOCK_MAX &&
        body->data[0] != KIX_DIR_KIND) {
        core_buf *z = &x->z;
        core_buf_clear(z);
        size_t bound = ZSTD_compressBound(body->len);
        rc = core_buf_reserve(z, bound + 16);
        if (rc == 0) rc = core_buf_append_byte(z, KIX_ZSTD);
        if (rc == 0) rc = put_varint(z, body->len);
        if (rc == 0) {
            size_t zn = ZSTD_compressCCtx(x->cz, z->data + z->len, z->cap - z->len, body->data,
                                          body->len, -1);
            if (!ZSTD_isError(zn) && z->len + zn < body->len) {
                z->len += zn;
                use = z;
            }
        }
    }
    if (rc == 0) rc = core_buf_reserve(out, use->len + 12);
    if (rc == 0) rc = core_buf_append_u32le(out, (uint32_t)use->len);
    if (rc == 0) rc = core_buf_append(out, use->data, use->len);
    if (rc == 0) rc = core_buf_append_u64le(out, core_hash64(use->data, use->len, 0));
    return rc;
}

/* Frame `cnt` encoded entries as a block of this kind (body = kind, varint cnt, entries),
 * append it to out and return its extent. */
static int emit_entries(core_buf *out, kix_enc *x, uint8_t kind, size_t cnt, const core_buf *ent,
                        uint64_t *off, uint64_t *len)
{
    core_buf *body = &x->body;
    core_buf_clear(body);
    int rc = core_buf_append_byte(body, kind);
    if (rc == 0) rc = put_varint(body, cnt);
    if (rc == 0) rc = core_buf_append(body, ent->data, ent->len);
    *off = out->len;
    if (rc == 0) rc = emit_block(out, body, x);
    *len = out->len - *off;
    return rc;
}

typedef struct child {
    const uint8_t *key;
    uint32_t klen;
    uint64_t off, len;
} child;

typedef struct tree_info {
    uint64_t entries, depth, root_off, root_len, leaf_start, leaf_end;
} tree_info;

static size_t shared_prefix(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    size_t i = 0, m = an < bn ? an : bn;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* eight bytes at a time; the first differing byte is the lowest set one of x ^ y */
    for (; i + 8 <= m; i += 8) {
        uint64_t x, y;
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y) return i + (size_t)__builtin_ctzll(x ^ y) / 8;
    }
#endif
    while (i < m && a[i] == b[i])
        i++;
    return i;
}

/* The first 8 bytes of a key, big-endian, zero-padded: orders keys as memcmp does, up to
 * ties of keys that share those bytes. */
static uint64_t key_prefix(const uint8_t *k, size_t n)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n >= 8) {
        uint64_t v;
        memcpy(&v, k, 8);
        return __builtin_bswap64(v);
    }
#endif
    uint64_t v = 0;
    for (size_t i = 0; i < 8; i++)
        v = v << 8 | (i < n ? k[i] : 0);
    return v;
}

typedef struct pfx_ent {
    uint64_t pfx;
    size_t at;
} pfx_ent;

/* Sort entries by (key, slot, off): a stable LSD radix sort of 8-byte key prefixes (entries
 * arrive in (slot, off) order, which stability keeps among equal prefixes), then a comparison
 * sort of each run of equal prefixes whose keys may still differ. Already sorted input (ids
 * a load generates in order) costs one pass. */
static int sort_entries(lance_kix_entry *e, size_t n)
{
    int sorted = 1;
    for (size_t i = 1; i < n && sorted; i++)
        sorted = entry_cmp(&e[i - 1], &e[i]) <= 0;
    if (sorted) return 0;
    pfx_ent *a = core_malloc(n * sizeof *a), *b = core_malloc(n * sizeof *b);
    if (!a || !b) {
        core_free(a);
        core_free(b);
        return core_err_nomem();
    }
    for (size_t i = 0; i < n; i++)
        a[i] = (pfx_ent){key_prefix(e[i].key, e[i].klen), i};
    for (unsigned shift = 0; shift < 64; shift += 8) {
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++)
            count[((a[i].pfx >> shift) & 0xff) + 1]++;
        if (count[((a[0].pfx >> shift) & 0xff) + 1] == n) continue; /* one bucket: no-op */
        for (size_t k = 0; k < 256; k++)
            count[k + 1] += count[k];
        for (size_t i = 0; i < n; i++)
            b[count[(a[i].pfx >> shift) & 0xff]++] = a[i];
        pfx_ent *t = a;
        a = b;
        b = t;
    }
    /* e[i] = old e[a[i].at], in place: follow each cycle of the permutation once */
    for (size_t i = 0; i < n; i++) {
        if (a[i].at == SIZE_MAX) continue; /* placed by an earlier cycle */
        lance_kix_entry first = e[i];
        size_t j = i;
        for (;;) {
            size_t k = a[j].at;
            a[j].at = SIZE_MAX;
            if (k == i) {
                e[j] = first;
                break;
            }
            e[j] = e[k];
            j = k;
        }
    }
    /* runs of one prefix: equal keys are in place; longer keys may still differ */
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        int differ = 0;
        while (j < n && a[j].pfx == a[i].pfx) {
            differ |= e[j].klen != e[i].klen || e[j].klen > 8;
            j++;
        }
        if (j - i > 1 && differ) qsort(e + i, j - i, sizeof *e, entry_cmp);
        i = j;
    }
    core_free(a);
    core_free(b);
    return 0;
}

static int encode_tree(core_buf *out, lance_kix_entry *e, size_t n, size_t n_slots, tree_info *ti)
{
    memset(ti, 0, sizeof *ti);
    ti->entries = n;
    ti->leaf_start = ti->leaf_end = out->len;
    if (n == 0) return 0;
    int src = sort_entries(e, n);
    if (src) return src;
    core_buf ent = CORE_BUF_INIT;
    kix_enc x;
    kix_enc_init(&x);
    child *kids = NULL, *up = NULL;
    size_t nk = 0, cap = 0;
    int rc = 0;
    /* Leaves. */
    size_t i = 0;
    while (rc == 0 && i < n) {
        size_t start = i, cnt = 0;
        core_buf_clear(&ent);
        while (rc == 0 && i < n && (cnt == 0 || ent.len < KIX_BLOCK_TARGET)) {
            /* sorted entries point all over the copied keys: fetch a few ahead */
            if (i + 16 < n) {
                __builtin_prefetch(e[i + 16].key);
                if (e[i + 16].pay) __builtin_prefetch(e[i + 16].pay);
            }
            /* the key as (bytes shared with the previous key of the leaf, the rest) */
            size_t sh = cnt ? shared_prefix(e[i - 1].key, e[i - 1].klen, e[i].key, e[i].klen) : 0;
            size_t most = 5 * 10 + (e[i].klen - sh) + e[i].plen;
            if ((rc = core_buf_reserve(&ent, most))) break;
            uint8_t *w = ent.data + ent.len;
            w = varint_to(w, sh);
            w = varint_to(w, e[i].klen - sh);
            memcpy(w, e[i].key + sh, e[i].klen - sh);
            w += e[i].klen - sh;
            /* payload length + 1; 0 for a null payload */
            w = varint_to(w, e[i].pay ? (uint64_t)e[i].plen + 1 : 0);
            if (e[i].pay && e[i].plen) {
                memcpy(w, e[i].pay, e[i].plen);
                w += e[i].plen;
            }
            if (n_slots > 1) w = varint_to(w, e[i].slot);
            w = varint_to(w, e[i].off);
            ent.len = (size_t)(w - ent.data);
            i++;
            cnt++;
        }
        if (rc == 0 && nk == cap) {
            cap = cap ? cap * 2 : 64;
            child *nkids = core_realloc(kids, cap * sizeof *nkids);
            if (!nkids)
                rc = core_err_nomem();
            else
                kids = nkids;
        }
        if (rc == 0) {
            kids[nk] = (child){e[start].key, e[start].klen, 0, 0};
            rc = emit_entries(out, &x, 1, cnt, &ent, &kids[nk].off, &kids[nk].len);
            nk++;
        }
    }
    ti->leaf_end = out->len;
    /* Internal levels until one block remains. */
    while (rc == 0 && nk > 1) {
        size_t nu = 0;
        up = core_malloc(nk * sizeof *up);
        if (!up) rc = core_err_nomem();
        size_t j = 0;
        while (rc == 0 && j < nk) {
            size_t start = j, cnt = 0;
            core_buf_clear(&ent);
            while (rc == 0 && j < nk && (cnt < 2 || ent.len < KIX_BLOCK_TARGET)) {
                rc = put_varint(&ent, kids[j].klen);
                if (rc == 0) rc = core_buf_append(&ent, kids[j].key, kids[j].klen);
                if (rc == 0) rc = put_varint(&ent, kids[j].off);
                if (rc == 0) rc = put_varint(&ent, kids[j].len);
                j++;
                cnt++;
            }
            if (rc == 0) {
                up[nu] = (child){kids[start].key, kids[start].klen, 0, 0};
                rc = emit_entries(out, &x, 2, cnt, &ent, &up[nu].off, &up[nu].len);
                nu++;
            }
        }
        core_free(kids);
        kids = up;
        up = NULL;
        nk = nu;
        ti->depth++;
    }
    if (rc == 0) {
        ti->root_off = kids[0].off;
        ti->root_len = kids[0].len;
    }
    core_free(kids);
    core_free(up);
    kix_enc_free(&x);
    core_buf_free(&ent);
    return rc;
}

struct lance_kix_builder;
static int builder_entries(struct lance_kix_builder *kb, size_t k, lance_kix_entry **out,
                           size_t *n);

typedef struct tree_job {
    core_buf *out;
    lance_kix_entry *e;
    size_t n, n_slots;
    tree_info *ti;
    lance_kix_entry **owned; /* freed (and set to NULL) once the tree is encoded, or NULL */
    /* or the entries are drawn from the rows of a borrowing builder when the tree's turn
     * comes (index `k`), and freed once it is encoded */
    struct lance_kix_builder *from;
    size_t k;
    int rc;
    char msg[256];
} tree_job;

static void tree_job_run(tree_job *j)
{
    lance_kix_entry *drawn = NULL;
    j->rc = 0;
    if (j->from && (j->rc = builder_entries(j->from, j->k, &drawn, &j->n)) == 0) j->e = drawn;
    if (j->rc == 0) j->rc = encode_tree(j->out, j->e, j->n, j->n_slots, j->ti);
    core_free(drawn);
    if (j->rc) snprintf(j->msg, sizeof j->msg, "%s", og_error_last()->message);
    if (j->owned) { /* the entries are no longer needed: do not hold them beside the others */
        core_free(*j->owned);
        *j->owned = NULL;
    }
}

/* Trees taken one after another by the workers that share them. */
typedef struct tree_pool {
    tree_job *jobs;
    size_t n;
    atomic_size_t next;
} tree_pool;

static void tree_pool_work(tree_pool *p)
{
    for (size_t t; (t = atomic_fetch_add(&p->next, 1)) < p->n;)
        tree_job_run(&p->jobs[t]);
}

static void *tree_pool_thread(void *arg)
{
    tree_pool_work(arg);
    return NULL;
}

/* lance_kix_encode; with `owned`, each e[t] is freed (owned[t] set to NULL) as soon as its
 * tree is encoded. */
static int kix_encode(core_buf *out, const char *const *names, lance_kix_entry *const *e,
                      const size_t *ne, size_t n_idx, const uint64_t *slot_rows,
                      const uint64_t *slot_files, size_t n_slots, lance_kix_entry **owned,
                      struct lance_kix_builder *from, uint64_t from_rows)
{
    core_buf_clear(out);
    tree_info ti[LANCE_KIX_MAX_DECLS];
    if (n_idx > LANCE_KIX_MAX_DECLS) return core_err(OG_E_BAD_REQUEST, "too many key indexes");
    int rc = core_buf_append(out, KIX_MAGIC, 8);
    /* Each tree into a buffer of its own (its offsets count from its first byte), a large
     * segment's trees on KIX_TREE_WORKERS workers (the caller and threads; the scheduler shares
     * the cores among them and the caller's other work: a bulk load's three edge trees are
     * most of its CPU, and two workers finish them about as soon as one thread per tree did,
     * with the entries and sort buffers of two trees at a time in memory instead of all),
     * then one after the other into the file. */
    core_buf tb[LANCE_KIX_MAX_DECLS];
    tree_job jobs[LANCE_KIX_MAX_DECLS];
    for (size_t t = 0; t < n_idx; t++) {
        tb[t] = (core_buf)CORE_BUF_INIT;
        jobs[t] = (tree_job){&tb[t],
                             from ? NULL : e[t],
                             from ? 0 : ne[t],
                             n_slots,
                             &ti[t],
                             owned ? &owned[t] : NULL,
                             from,
                             t,
                             0,
                             {0}};
    }
    size_t total = from ? (size_t)from_rows * n_idx : 0;
    for (size_t t = 0; !from && t < n_idx; t++)
        total += ne[t];
    tree_pool pool = {jobs, rc == 0 ? n_idx : 0, 0};
    pthread_t th[KIX_TREE_WORKERS];
    bool threaded[KIX_TREE_WORKERS] = {false};
    bool spread = rc == 0 && n_idx > 1 && total >= KIX_THREAD_ENTRIES;
    for (size_t k = 1; spread && k < KIX_TREE_WORKERS && k < n_idx; k++)
        threaded[k] = pthread_create(&th[k], NULL, tree_pool_thread, &pool) == 0;
    tree_pool_work(&pool);
    for (size_t k = 1; k < KIX_TREE_WORKERS; k++)
        if (threaded[k]) pthread_join(th[k], NULL);
    /* the trees into the file's buffer, sized once (growing it would copy what is in), each
     * tree's own buffer freed as soon as it is in */
    size_t tree_bytes = 0;
    for (size_t t = 0; t < n_idx; t++)
        tree_bytes += tb[t].len;
    if (rc == 0) rc = core_buf_reserve(out, tree_bytes + 64 + 256 * (n_idx + n_slots));
    for (size_t t = 0; rc == 0 && t < n_idx; t++) {
        if (jobs[t].rc) {
            rc = core_err(jobs[t].rc, "%s", jobs[t].msg);
            break;
        }
        uint64_t base = out->len;
        rc = core_buf_append(out, tb[t].data, tb[t].len);
        core_buf_free(&tb[t]);
        ti[t].leaf_start += base;
        ti[t].leaf_end += base;
        ti[t].root_off += base;
    }
    for (size_t t = 0; t < n_idx; t++)
        core_buf_free(&tb[t]);
    core_buf dir = CORE_BUF_INIT;
    if (rc == 0) rc = core_buf_append_byte(&dir, 3);
    if (rc == 0) rc = put_varint(&dir, n_slots);
    for (size_t i = 0; rc == 0 && i < n_slots; i++) {
        rc = put_varint(&dir, slot_rows[i]);
        if (rc == 0) rc = core_buf_append_u64le(&dir, slot_files ? slot_files[i] : 0);
    }
    if (rc == 0) rc = put_varint(&dir, n_idx);
    for (size_t t = 0; rc == 0 && t < n_idx; t++) {
        size_t nl = strlen(names[t]);
        rc = put_varint(&dir, nl);
        if (rc == 0) rc = core_buf_append(&dir, names[t], nl);
        uint64_t f[6] = {ti[t].entries,  ti[t].depth,      ti[t].root_off,
                         ti[t].root_len, ti[t].leaf_start, ti[t].leaf_end};
        for (int k = 0; rc == 0 && k < 6; k++)
            rc = put_varint(&dir, f[k]);
    }
    uint64_t dir_off = out->len;
    if (rc == 0) rc = emit_block(out, &dir, NULL);
    uint8_t tr[16];
    if (rc == 0) {
        uint64_t dlen = out->len - dir_off;
        for (int k = 0; k < 8; k++)
            tr[k] = (uint8_t)(dir_off >> (8 * k));
        for (int k = 0; k < 4; k++)
            tr[8 + k] = (uint8_t)(dlen >> (8 * k));
        tr[12] = KIX_VERSION, tr[13] = tr[14] = tr[15] = 0;
        rc = core_buf_append(out, tr, 16);
    }
    if (rc == 0) rc = core_buf_append_u64le(out, core_hash64(tr, 16, 0));
    if (rc == 0) rc = core_buf_append(out, KIX_END, 8);
    core_buf_free(&dir);
    return rc;
}

int lance_kix_encode(core_buf *out, const char *const *names, lance_kix_entry *const *e,
                     const size_t *ne, size_t n_idx, const uint64_t *slot_rows,
                     const uint64_t *slot_files, size_t n_slots)
{
    return kix_encode(out, names, e, ne, n_idx, slot_rows, slot_files, n_slots, NULL, NULL, 0);
}

/* ---- reading ----------------------------------------------------------------------------- */

typedef struct kix_tree {
    char name[130];
    uint64_t entries, depth, root_off, root_len, leaf_start, leaf_end;
} kix_tree;

typedef struct cblock {
    uint64_t off;
    core_buf body; /* verified body */
    uint64_t stamp;
} cblock;

struct lance_kix_seg {
    store *s;
    char key[STORE_KEY_MAX];
    const uint8_t *mem; /* open_bytes */
    uint64_t size;
    uint64_t dir_off;
    uint64_t *slot_rows, *slot_files;
    size_t n_slots;
    kix_tree trees[LANCE_KIX_MAX_DECLS];
    size_t n_trees;
    cblock cache[KIX_CACHE];
    uint64_t clock;
    core_buf win; /* bytes [win_off, win_off + win.len) of the file, read at once (or empty) */
    uint64_t win_off;
};

static int corrupt(const lance_kix_seg *g, const char *what)
{
    return core_err(OG_E_CORRUPT, "key index segment '%s': %s", g->mem ? "(memory)" : g->key, what);
}

/* Bytes [off, off+len) of the file into out. */
static int seg_read(lance_kix_seg *g, uint64_t off, uint64_t len, core_buf *out)
{
    if (off > g->size || len > g->size - off) return corrupt(g, "a block lies outside the file");
    if (g->mem) {
        core_buf_clear(out);
        return core_buf_append(out, g->mem + off, (size_t)len);
    }
    if (g->win.len && off >= g->win_off && off - g->win_off <= g->win.len &&
        len <= g->win.len - (off - g->win_off)) {
        core_buf_clear(out);
        return core_buf_append(out, g->win.data + (off - g->win_off), (size_t)len);
    }
    int rc = store_get(g->s, g->key, off, len, out);
    if (rc == 0 && out->len != len) rc = corrupt(g, "the file is shorter than its listing says");
    return rc;
}

/* Check a framed block held in raw[0..len) and put its (decompressed) body into body. */
static int unframe(lance_kix_seg *g, const uint8_t *raw, size_t len, core_buf *body)
{
    if (len < 12) return corrupt(g, "a block is too short");
    uint32_t bl = rd_u32(raw);
    if ((uint64_t)bl + 12 != len) return corrupt(g, "a block's length does not match");
    if (core_hash64(raw + 4, bl, 0) != rd_u64(raw + 4 + bl))
        return corrupt(g, "a block fails its checksum");
    core_buf_clear(body);
    if (bl == 0 || raw[4] != KIX_ZSTD) return core_buf_append(body, raw + 4, bl);
    rd r = {raw + 5, raw + 4 + bl, 0};
    uint64_t n = get_varint(&r);
    if (r.bad || n == 0 || n > KIX_BLOCK_MAX)
        return corrupt(g, "a compressed block has a bad size");
    int rc = core_buf_resize(body, (size_t)n);
    if (rc) return rc;
    size_t got = ZSTD_decompress(body->data, (size_t)n, r.p, (size_t)(r.end - r.p));
    if (ZSTD_isError(got) || got != n) {
        core_buf_clear(body);
        return corrupt(g, "a compressed block does not decompress");
    }
    return 0;
}

/* The verified body of the block at [off, off+len), through the small cache. */
static int block_get(lance_kix_seg *g, uint64_t off, uint64_t len, const core_buf **out)
{
    cblock *victim = &g->cache[0];
    for (size_t i = 0; i < KIX_CACHE; i++) {
        if (g->cache[i].stamp && g->cache[i].off == off) {
            g->cache[i].stamp = ++g->clock;
            *out = &g->cache[i].body;
            return 0;
        }
        if (g->cache[i].stamp < victim->stamp) victim = &g->cache[i];
    }
    core_buf raw = CORE_BUF_INIT;
    int rc = seg_read(g, off, len, &raw);
    if (rc == 0) rc = unframe(g, raw.data, raw.len, &victim->body);
    core_buf_free(&raw);
    if (rc) {
        victim->stamp = 0;
        return rc;
    }
    victim->off = off;
    victim->stamp = ++g->clock;
    *out = &victim->body;
    return 0;
}

static int parse_dir(lance_kix_seg *g, const core_buf *dir)
{
    rd r = {dir->data, dir->data + dir->len, 0};
    const uint8_t *k = get_bytes(&r, 1);
    if (!k || *k != 3) return corrupt(g, "the directory block has the wrong kind");
    uint64_t ns = get_varint(&r);
    if (r.bad || ns > dir->len) return corrupt(g, "bad slot count");
    g->slot_rows = core_malloc((ns ? ns : 1) * sizeof *g->slot_rows);
    g->slot_files = core_malloc((ns ? ns : 1) * sizeof *g->slot_files);
    if (!g->slot_rows || !g->slot_files) return core_err_nomem();
    g->n_slots = (size_t)ns;
    for (uint64_t i = 0; i < ns; i++) {
        g->slot_rows[i] = get_varint(&r);
        const uint8_t *h = get_bytes(&r, 8);
        g->slot_files[i] = h ? rd_u64(h) : 0;
    }
    uint64_t nt = get_varint(&r);
    if (r.bad || nt > LANCE_KIX_MAX_DECLS) return corrupt(g, "bad tree count");
    for (uint64_t t = 0; t < nt; t++) {
        kix_tree *tr = &g->trees[t];
        uint64_t nl = get_varint(&r);
        const uint8_t *nm = get_bytes(&r, nl);
        if (!nm || nl >= sizeof tr->name) return corrupt(g, "bad tree name");
        memcpy(tr->name, nm, nl);
        tr->name[nl] = '\0';
        tr->entries = get_varint(&r);
        tr->depth = get_varint(&r);
        tr->root_off = get_varint(&r);
        tr->root_len = get_varint(&r);
        tr->leaf_start = get_varint(&r);
        tr->leaf_end = get_varint(&r);
        if (r.bad) return corrupt(g, "the directory is cut short");
        if (tr->depth > KIX_MAX_DEPTH || tr->leaf_start < 8 || tr->leaf_start > tr->leaf_end ||
            tr->leaf_end > g->dir_off ||
            (tr->entries &&
             (tr->root_len == 0 || tr->root_off < tr->leaf_start || tr->root_off > g->dir_off ||
              tr->root_len > g->dir_off - tr->root_off)))
            return corrupt(g, "a tree's extent is out of range");
    }
    g->n_trees = (size_t)nt;
    return 0;
}

static int seg_init(lance_kix_seg *g, const uint8_t *tail, size_t tail_len, uint64_t tail_off)
{
    if (g->size < 8 + KIX_TRAILER + 12 || tail_len < KIX_TRAILER) return corrupt(g, "too short");
    const uint8_t *tr = tail + tail_len - KIX_TRAILER;
    if (memcmp(tr + 24, KIX_END, 8) != 0) return corrupt(g, "no trailer");
    if (core_hash64(tr, 16, 0) != rd_u64(tr + 16))
        return corrupt(g, "the trailer fails its checksum");
    uint64_t dir_off = rd_u64(tr);
    uint32_t dir_len = rd_u32(tr + 8);
    if (rd_u32(tr + 12) != KIX_VERSION) return corrupt(g, "unknown format version");
    /* (no sum may wrap: dir_len is bounded by the file before the offset is compared) */
    if (dir_len < 12 || dir_len > g->size - KIX_TRAILER - 8 ||
        dir_off != g->size - KIX_TRAILER - dir_len)
        return corrupt(g, "bad directory extent");
    g->dir_off = dir_off;
    core_buf body = CORE_BUF_INIT;
    int rc;
    if (dir_off >= tail_off) {
        rc = unframe(g, tail + (dir_off - tail_off), dir_len, &body);
    } else {
        core_buf raw = CORE_BUF_INIT;
        rc = seg_read(g, dir_off, dir_len, &raw);
        if (rc == 0) rc = unframe(g, raw.data, raw.len, &body);
        core_buf_free(&raw);
    }
    if (rc == 0) rc = parse_dir(g, &body);
    core_buf_free(&body);
    return rc;
}

int lance_kix_seg_open(lance_kix_seg **out, store *s, const char *key, uint64_t size)
{
    *out = NULL;
    lance_kix_seg *g = core_calloc(1, sizeof *g);
    if (!g) return core_err_nomem();
    g->s = s;
    g->size = size;
    snprintf(g->key, sizeof g->key, "%s", key);
    uint64_t tl = size < KIX_TAIL_READ ? size : KIX_TAIL_READ;
    core_buf tail = CORE_BUF_INIT;
    int rc = size < 8 + KIX_TRAILER ? corrupt(g, "too short") : seg_read(g, size - tl, tl, &tail);
    if (rc == 0) rc = seg_init(g, tail.data, tail.len, size - tl);
    core_buf_free(&tail);
    if (rc) {
        lance_kix_seg_close(g);
        return rc;
    }
    *out = g;
    return 0;
}

int lance_kix_seg_open_bytes(lance_kix_seg **out, const void *data, size_t len)
{
    *out = NULL;
    lance_kix_seg *g = core_calloc(1, sizeof *g);
    if (!g) return core_err_nomem();
    g->mem = data;
    g->size = len;
    int rc = len < 8 + KIX_TRAILER        ? corrupt(g, "too short")
             : memcmp(data, KIX_MAGIC, 8) ? corrupt(g, "no magic")
                                          : seg_init(g, data, len, 0);
    if (rc) {
        lance_kix_seg_close(g);
        return rc;
    }
    *out = g;
    return 0;
}

void lance_kix_seg_close(lance_kix_seg *g)
{
    if (!g) return;
    for (size_t i = 0; i < KIX_CACHE; i++)
        core_buf_free(&g->cache[i].body);
    core_buf_free(&g->win);
    core_free(g->slot_rows);
    core_free(g->slot_files);
    core_free(g);
}

size_t lance_kix_seg_slots(const lance_kix_seg *g, const uint64_t **rows, const uint64_t **files)
{
    *rows = g->slot_rows;
    if (files) *files = g->slot_files;
    return g->n_slots;
}

uint64_t lance_kix_files_hash(const Lance__Table__DataFragment *f)
{
    uint64_t h = 0x6f676b6978ull; /* "ogkix" */
    for (size_t i = 0; i < f->n_files; i++) {
        const char *p = f->files[i]->path ? f->files[i]->path : "";
        h = core_hash64(p, strlen(p), h);
    }
    return h ? h : 1;
}

int lance_kix_seg_find_tree(const lance_kix_seg *g, const char *decl)
{
    for (size_t t = 0; t < g->n_trees; t++)
        if (strcmp(g->trees[t].name, decl) == 0) return (int)t;
    return -1;
}

/* The child of internal block body to descend into for key k: the last whose first key is
 * below k (the first child when none is). */
/* (child offsets are relative to the tree's first byte, base) */
static int descend(lance_kix_seg *g, const core_buf *body, uint64_t base, uint64_t parent_off,
                   const uint8_t *k, size_t kn, uint64_t *off, uint64_t *len)
{
    rd r = {body->data, body->data + body->len, 0};
    const uint8_t *kind = get_bytes(&r, 1);
    if (!kind || *kind != 2) return corrupt(g, "an internal block has the wrong kind");
    uint64_t n = get_varint(&r);
    if (r.bad || n == 0 || n > body->len) return corrupt(g, "bad internal block count");
    int found = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t cl = get_varint(&r);
        const uint8_t *ck = get_bytes(&r, cl);
        uint64_t co = get_varint(&r), cn = get_varint(&r);
        if (r.bad) return corrupt(g, "an internal block is cut short");
        if (co > parent_off - base || cn > parent_off - base - co)
            return corrupt(g, "a child does not precede its parent");
        if (i > 0 && bytes_cmp(ck, cl, k, kn) >= 0) break;
        *off = base + co;
        *len = cn;
        found = 1;
    }
    return found ? 0 : corrupt(g, "empty internal block");
}

typedef struct leaf_it {
    rd r;
    uint64_t left;
    core_buf key; /* the current key (keys are stored as prefix + suffix) */
} leaf_it;

static int leaf_begin(lance_kix_seg *g, const core_buf *body, leaf_it *it)
{
    it->r = (rd){body->data, body->data + body->len, 0};
    core_buf_clear(&it->key);
    const uint8_t *kind = get_bytes(&it->r, 1);
    if (!kind || *kind != 1) return corrupt(g, "a leaf has the wrong kind");
    it->left = get_varint(&it->r);
    if (it->r.bad || it->left == 0 || it->left > body->len) return corrupt(g, "bad leaf count");
    return 0;
}

/* The next entry of a leaf: 1, 0 at its end, or an error. e->key lives until the next call. */
static int leaf_next(lance_kix_seg *g, leaf_it *it, lance_kix_entry *e)
{
    if (!it->left) return 0;
    it->left--;
    uint64_t sh = get_varint(&it->r), sl = get_varint(&it->r);
    const uint8_t *suffix = get_bytes(&it->r, sl);
    uint64_t pl1 = get_varint(&it->r), pl = pl1 ? pl1 - 1 : 0;
    e->pay = pl1 ? get_bytes(&it->r, pl) : NULL;
    uint64_t slot = g->n_slots > 1 ? get_varint(&it->r) : 0, off = get_varint(&it->r);
    if (it->r.bad || sh > it->key.len || sl > UINT32_MAX || pl > UINT32_MAX || off > UINT32_MAX ||
        slot >= g->n_slots)
        return corrupt(g, "a leaf entry is malformed");
    if (off >= g->slot_rows[slot]) return corrupt(g, "a leaf entry points past its fragment");
    if (core_buf_resize(&it->key, (size_t)sh) ||
        (sl && core_buf_append(&it->key, suffix, (size_t)sl)))
        return core_err_nomem();
    e->key = it->key.data ? it->key.data : (const uint8_t *)"";
    e->klen = (uint32_t)it->key.len;
    e->plen = (uint32_t)pl;
    e->slot = (uint32_t)slot;
    e->off = (uint32_t)off;
    return 1;
}

/* Framed length of the block at off (reads its length prefix through the block itself). */
static int next_leaf_len(lance_kix_seg *g, uint64_t off, uint64_t end, uint64_t *len)
{
    if (off + 4 > end) return corrupt(g, "a leaf runs past the leaf region");
    core_buf b = CORE_BUF_INIT;
    int rc = seg_read(g, off, 4, &b);
    if (rc == 0) *len = (uint64_t)rd_u32(b.data) + 12;
    core_buf_free(&b);
    if (rc == 0 && off + *len > end) rc = corrupt(g, "a leaf runs past the leaf region");
    return rc;
}

/* Keys ascend, so a lookup is a merge of the keys with the leaves: each key starts where the
 * last one stopped (the first entry above it, still pending) as long as it is found, or passed,
 * in that same leaf; a key beyond the leaf descends from the root again. Many keys in one leaf
 * decode it once, not once each. */
int lance_kix_seg_lookup(lance_kix_seg *g, int t, const uint8_t *const *keys, const size_t *klens,
                         size_t n, lance_kix_seg_hit_fn fn, void *arg)
{
    if (t < 0 || (size_t)t >= g->n_trees) return core_err(OG_E_INTERNAL, "no tree %d", t);
    const kix_tree *tr = &g->trees[t];
    if (!tr->entries || !n) return 0;
    int rc = 0;
    /* Keys enough to touch a good share of the leaves (at least one per two blocks' worth of
     * the region): the leaves are read in one request, not a request each. */
    uint64_t region = tr->leaf_end - tr->leaf_start;
    if (!g->mem && n >= 2 && region <= KIX_WINDOW_MAX && n >= region / (2 * KIX_BLOCK_TARGET) &&
        !(g->win.len && g->win_off == tr->leaf_start && g->win.len == region)) {
        core_buf_clear(&g->win);
        rc = seg_read(g, tr->leaf_start, region, &g->win);
        if (rc == 0) {
            g->win_off = tr->leaf_start;
        } else {
            core_buf_clear(&g->win);
            return rc;
        }
    }
    leaf_it it = {.key = CORE_BUF_INIT};
    lance_kix_entry e;
    bool in_leaf = false; /* it walks the leaf at off (len bytes) */
    bool pending = false; /* e is that leaf's next entry, not compared with a key yet */
    uint64_t off = 0, len = 0;
    for (size_t q = 0; rc == 0 && q < n; q++) {
        /* a key not above the last one (the caller's order broken) starts over from the root */
        if (q > 0 && bytes_cmp(keys[q - 1], klens[q - 1], keys[q], klens[q]) >= 0) in_leaf = false;
        bool descended = false, matched = false, done = false;
        while (rc == 0 && !done) {
            if (!in_leaf) {
                const core_buf *body = NULL;
                off = tr->root_off;
                len = tr->root_len;
                for (uint64_t d = 0; rc == 0 && d < tr->depth; d++) {
                    uint64_t parent = off;
                    if ((rc = block_get(g, off, len, &body))) break;
                    rc = descend(g, body, tr->leaf_start, parent, keys[q], klens[q], &off, &len);
                }
                if (rc == 0 && (off < tr->leaf_start || off + len > tr->leaf_end))
                    rc = corrupt(g, "a descent ends outside the leaves");
                if (rc == 0) rc = block_get(g, off, len, &body);
                if (rc == 0) rc = leaf_begin(g, body, &it);
                if (rc) break;
                in_leaf = descended = true;
                pending = false;
            }
            if (!pending) {
                int more = leaf_next(g, &it, &e);
                if (more < 0) {
                    rc = more;
                    break;
                }
                if (more == 0) {
                    /* The leaf is done. Past a descent (or a match, which may go on in the next
                     * leaf) walk on into the next leaf, as the tree's order says; a key carried
                     * over from an earlier one that this leaf did not reach descends. */
                    in_leaf = false;
                    if (!descended && !matched) continue;
                    off += len;
                    if (off >= tr->leaf_end) break;
                    const core_buf *body = NULL;
                    rc = next_leaf_len(g, off, tr->leaf_end, &len);
                    if (rc == 0) rc = block_get(g, off, len, &body);
                    if (rc == 0) rc = leaf_begin(g, body, &it);
                    if (rc == 0) in_leaf = true;
                    continue;
                }
                pending = true;
            }
            int c = bytes_cmp(e.key, e.klen, keys[q], klens[q]);
            if (c > 0) {
                done = true; /* e stays pending for the next key */
            } else {
                pending = false;
                if (c == 0) {
                    matched = true;
                    rc = fn(arg, q, e.slot, e.off, e.pay, e.plen);
                }
            }
        }
    }
    core_buf_free(&it.key);
    return rc;
}

int lance_kix_seg_walk_entries(lance_kix_seg *g, int t, lance_kix_seg_entry_fn fn, void *arg)
{
    if (t < 0 || (size_t)t >= g->n_trees) return core_err(OG_E_INTERNAL, "no tree %d", t);
    const kix_tree *tr = &g->trees[t];
    if (!tr->entries) return 0;
    core_buf all = CORE_BUF_INIT, body = CORE_BUF_INIT;
    int rc = seg_read(g, tr->leaf_start, tr->leaf_end - tr->leaf_start, &all);
    uint64_t pos = 0, seen = 0;
    core_buf prev = CORE_BUF_INIT;
    while (rc == 0 && pos < all.len) {
        if (all.len - pos < 4) {
            rc = corrupt(g, "the leaf region is cut short");
            break;
        }
        uint64_t len = (uint64_t)rd_u32(all.data + pos) + 12;
        if (len > all.len - pos) {
            rc = corrupt(g, "the leaf region is cut short");
            break;
        }
        if ((rc = unframe(g, all.data + pos, (size_t)len, &body))) break;
        leaf_it it = {.key = CORE_BUF_INIT};
        if ((rc = leaf_begin(g, &body, &it))) {
            core_buf_free(&it.key);
            break;
        }
        lance_kix_entry e;
        int more;
        while ((more = leaf_next(g, &it, &e)) == 1) {
            /* keys must ascend, across leaves too */
            if (seen && bytes_cmp(prev.data, prev.len, e.key, e.klen) > 0) {
                more = corrupt(g, "keys are out of order");
                break;
            }
            core_buf_clear(&prev);
            if (e.klen && (rc = core_buf_append(&prev, e.key, e.klen))) break;
            seen++;
            if ((rc = fn(arg, &e))) break;
        }
        core_buf_free(&it.key);
        if (rc == 0 && more < 0) rc = more;
        pos += len;
    }
    if (rc == 0 && seen != tr->entries) rc = corrupt(g, "the tree holds another number of entries");
    core_buf_free(&prev);
    core_buf_free(&all);
    core_buf_free(&body);
    return rc;
}

typedef struct walk_adapter {
    lance_kix_seg_hit_fn fn;
    void *arg;
} walk_adapter;

static int walk_adapt(void *arg, const lance_kix_entry *e)
{
    walk_adapter *w = arg;
    return w->fn(w->arg, 0, e->slot, e->off, e->pay, e->plen);
}

int lance_kix_seg_walk(lance_kix_seg *g, int t, lance_kix_seg_hit_fn fn, void *arg)
{
    walk_adapter w = {fn, arg};
    return lance_kix_seg_walk_entries(g, t, walk_adapt, &w);
}

/* ---- building from rows ------------------------------------------------------------------ */

struct lance_kix_builder {
    const lance_dataset *ds;
    lance_kix_decl d[LANCE_KIX_MAX_DECLS];
    size_t nd;
    lance_kix_entry *e[LANCE_KIX_MAX_DECLS];
    size_t ne[LANCE_KIX_MAX_DECLS], cap;
    uint64_t rows;
    core_arena bytes; /* copies of keys and payloads */
    bool borrow;      /* point into the batches instead (they outlive the builder) */
    /* Borrowing, the rows added are only noted, and each index's entries are drawn from them
     * when its tree is encoded (then freed): the entries of every index are never all held
     * at once. */
    struct kix_range {
        const arrow_batch *b;
        int64_t off, n;
        uint32_t slot, first_off;
    } * rg;
    size_t n_rg, cap_rg;
};

void lance_kix_builder_borrow(lance_kix_builder *kb)
{
    if (kb) kb->borrow = true;
}

int lance_kix_builder_new(lance_kix_builder **out, const lance_dataset *ds)
{
    return lance_kix_builder_new_decl(out, ds, meta_value(ds->m->pb, LANCE_KIX_DECL_KEY));
}

int lance_kix_builder_new_decl(lance_kix_builder **out, const lance_dataset *ds, const char *decls)
{
    *out = NULL;
    lance_kix_decl d[LANCE_KIX_MAX_DECLS];
    size_t nd = 0;
    int rc = decls_parse(decls, &ds->schema, d, &nd);
    if (rc || !nd) return rc;
    lance_kix_builder *kb = core_calloc(1, sizeof *kb);
    if (!kb) return core_err_nomem();
    kb->ds = ds;
    memcpy(kb->d, d, sizeof d);
    kb->nd = nd;
    core_arena_init(&kb->bytes, 1 << 16);
    *out = kb;
    return 0;
}

void lance_kix_builder_free(lance_kix_builder *kb)
{
    if (!kb) return;
    for (size_t k = 0; k < kb->nd; k++)
        core_free(kb->e[k]);
    core_arena_free(&kb->bytes);
    core_free(kb->rg);
    core_free(kb);
}

int lance_kix_builder_reserve(lance_kix_builder *kb, uint64_t rows)
{
    if (!kb || kb->borrow || rows <= kb->cap) return 0; /* borrowing: drawn at finish */
    if (rows > UINT32_MAX) return core_err(OG_E_RESOURCE_LIMIT, "key index too large");
    for (size_t k = 0; k < kb->nd; k++) {
        lance_kix_entry *p = core_realloc(kb->e[k], (size_t)rows * sizeof *p);
        if (!p) return core_err_nomem();
        kb->e[k] = p;
    }
    kb->cap = (size_t)rows;
    return 0;
}

uint64_t lance_kix_builder_rows(const lance_kix_builder *kb)
{
    return kb ? kb->rows : 0;
}

static const uint8_t *keep_bytes(lance_kix_builder *kb, const uint8_t *p, size_t n)
{
    if (!n) return (const uint8_t *)"";
    if (kb->borrow) return p;
    uint8_t *c = core_arena_alloc(&kb->bytes, n);
    if (c) memcpy(c, p, n);
    return c;
}

int lance_kix_builder_add(lance_kix_builder *kb, const arrow_batch *b, int64_t off, int64_t n,
                          uint32_t slot, uint32_t first_off)
{
    if (!kb || n <= 0) return 0;
    if (kb->rows + (uint64_t)n > UINT32_MAX)
        return core_err(OG_E_RESOURCE_LIMIT, "key index too large");
    if (kb->borrow) {
        if (kb->n_rg == kb->cap_rg) {
            size_t cap = kb->cap_rg ? kb->cap_rg * 2 : 16;
            struct kix_range *r = core_realloc(kb->rg, cap * sizeof *r);
            if (!r) return core_err_nomem();
            kb->rg = r;
            kb->cap_rg = cap;
        }
        kb->rg[kb->n_rg++] = (struct kix_range){b, off, n, slot, first_off};
        kb->rows += (uint64_t)n;
        return 0;
    }
    size_t need = (size_t)(kb->rows + (uint64_t)n);
    if (need > kb->cap) {
        size_t cap = kb->cap ? kb->cap : 1024;
        while (cap < need)
            cap *= 2;
        for (size_t k = 0; k < kb->nd; k++) {
            lance_kix_entry *p = core_realloc(kb->e[k], cap * sizeof *p);
            if (!p) return core_err_nomem();
            kb->e[k] = p;
        }
        kb->cap = cap;
    }
    for (size_t k = 0; k < kb->nd; k++) {
        const arrow_array *kc = b->columns[kb->d[k].col];
        const arrow_array *pc = kb->d[k].pay >= 0 ? b->columns[kb->d[k].pay] : NULL;
        for (int64_t r = 0; r < n; r++) {
            if (!arrow_array_is_valid(kc, off + r)) continue; /* nulls are not indexed */
            size_t kl, pl = 0;
            const uint8_t *kp = arrow_array_get_bytes(kc, off + r, &kl);
            const uint8_t *pp = NULL;
            if (pc && arrow_array_is_valid(pc, off + r))
                pp = arrow_array_get_bytes(pc, off + r, &pl);
            lance_kix_entry *x = &kb->e[k][kb->ne[k]++];
            x->key = keep_bytes(kb, kp, kl);
            x->pay = pp ? keep_bytes(kb, pp, pl) : NULL;
            if (!x->key || (pp && !x->pay)) return core_err_nomem();
            x->klen = (uint32_t)kl;
            x->plen = (uint32_t)pl;
            x->slot = slot;
            x->off = first_off + (uint32_t)r;
        }
    }
    kb->rows += (uint64_t)n;
    return 0;
}

/* Index k's entries of the rows a borrowing builder noted, in the order lance_kix_builder_add
 * would have made them: one allocation of their exact count (*out NULL when there are none). */
static int builder_entries(lance_kix_builder *kb, size_t k, lance_kix_entry **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t cnt = 0;
    for (size_t i = 0; i < kb->n_rg; i++) {
        const arrow_array *kc = kb->rg[i].b->columns[kb->d[k].col];
        for (int64_t r = 0; r < kb->rg[i].n; r++)
            cnt += arrow_array_is_valid(kc, kb->rg[i].off + r);
    }
    if (!cnt) return 0;
    lance_kix_entry *e = core_malloc(cnt * sizeof *e);
    if (!e) return core_err_nomem();
    size_t m = 0;
    for (size_t i = 0; i < kb->n_rg; i++) {
        const struct kix_range *g = &kb->rg[i];
        const arrow_array *kc = g->b->columns[kb->d[k].col];
        const arrow_array *pc = kb->d[k].pay >= 0 ? g->b->columns[kb->d[k].pay] : NULL;
        for (int64_t r = 0; r < g->n; r++) {
            if (!arrow_array_is_valid(kc, g->off + r)) continue; /* nulls are not indexed */
            size_t kl, pl = 0;
            const uint8_t *kp = arrow_array_get_bytes(kc, g->off + r, &kl);
            const uint8_t *pp = NULL;
            if (pc && arrow_array_is_valid(pc, g->off + r))
                pp = arrow_array_get_bytes(pc, g->off + r, &pl);
            lance_kix_entry *x = &e[m++];
            x->key = kl ? kp : (const uint8_t *)"";
            x->pay = pp ? (pl ? pp : (const uint8_t *)"") : NULL;
            x->klen = (uint32_t)kl;
            x->plen = (uint32_t)pl;
            x->slot = g->slot;
            x->off = g->first_off + (uint32_t)r;
        }
    }
    *out = e;
    *n = m;
    return 0;
}

int lance_kix_builder_finish(lance_kix_builder *kb, const uint64_t *slot_rows,
                             const uint64_t *slot_files, size_t n_slots, lance_kix_staged *out,
                             char key_out[STORE_KEY_MAX])
{
    memset(out, 0, sizeof *out);
    key_out[0] = '\0';
    if (!kb || kb->rows < LANCE_KIX_MIN_ROWS || !n_slots) return 0;
    char names[LANCE_KIX_MAX_DECLS][130];
    const char *np[LANCE_KIX_MAX_DECLS];
    for (size_t k = 0; k < kb->nd; k++) {
        decl_text(&kb->d[k], names[k]);
        np[k] = names[k];
    }
    core_buf bytes = CORE_BUF_INIT;
    /* each index's entries are freed once its tree is encoded */
    int rc = kix_encode(&bytes, np, kb->e, kb->ne, kb->nd, slot_rows, slot_files, n_slots, kb->e,
                        kb->borrow ? kb : NULL, kb->rows);
    if (rc == 0) {
        uint8_t rnd[12];
        rc = lance_random_bytes(rnd, sizeof rnd);
        char *p = out->name;
        for (size_t i = 0; rc == 0 && i < sizeof rnd; i++)
            p += sprintf(p, "%02x", rnd[i]);
        if (rc == 0) strcpy(p, ".ogx");
    }
    if (rc == 0) rc = lance_key(key_out, kb->ds->root, LANCE_KIX_DIR, out->name);
    if (rc == 0) rc = store_put(kb->ds->s, key_out, bytes.data, bytes.len, STORE_F_NOSYNC);
    if (rc == 0) {
        out->size = bytes.len;
        out->n = n_slots;
    } else {
        memset(out, 0, sizeof *out);
    }
    core_buf_free(&bytes);
    return rc;
}

/* ---- lookups ----------------------------------------------------------------------------- */

typedef struct skey {
    const uint8_t *k;
    size_t n;
    size_t orig; /* the caller's first index with this value */
} skey;

static int skey_cmp(const void *pa, const void *pb)
{
    const skey *a = pa, *b = pb;
    int c = bytes_cmp(a->k, a->n, b->k, b->n);
    if (c) return c;
    return a->orig < b->orig ? -1 : a->orig > b->orig;
}

typedef struct hit {
    size_t key; /* sorted index */
    uint32_t slot, off;
    const uint8_t *pay;
    size_t plen;
    size_t pay_at; /* offset into the payload buffer */
} hit;

typedef struct seg_hits {
    hit *h;
    size_t n, cap;
    core_buf pay;
} seg_hits;

static int hit_cmp(const void *pa, const void *pb)
{
    const hit *a = pa, *b = pb;
    if (a->slot != b->slot) return a->slot < b->slot ? -1 : 1;
    return a->off < b->off ? -1 : a->off > b->off;
}

static int collect(void *arg, size_t key, uint32_t slot, uint32_t off, const uint8_t *pay,
                   size_t plen)
{
    seg_hits *sh = arg;
    if (sh->n == sh->cap) {
        size_t nc = sh->cap ? sh->cap * 2 : 64;
        hit *nh = core_realloc(sh->h, nc * sizeof *nh);
        if (!nh) return core_err_nomem();
        sh->h = nh;
        sh->cap = nc;
    }
    hit *x = &sh->h[sh->n++];
    x->key = key;
    x->slot = slot;
    x->off = off;
    x->plen = pay ? plen : 0;
    x->pay = NULL;
    x->pay_at = sh->pay.len;
    if (pay && plen) return core_buf_append(&sh->pay, pay, plen);
    if (pay) x->plen = SIZE_MAX; /* present but empty */
    return 0;
}

typedef struct cover {
    uint64_t frag;
    const Lance__Table__DataFragment *f;
    long seg; /* covering segment, -1: scanned */
    uint32_t slot;
} cover;

static int cover_cmp(const void *pa, const void *pb)
{
    const cover *a = pa, *b = pb;
    return a->frag < b->frag ? -1 : a->frag > b->frag;
}

static cover *cover_find(cover *c, size_t n, uint64_t id)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c[mid].frag < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && c[lo].frag == id ? &c[lo] : NULL;
}

static int find_sorted(const skey *k, size_t n, const uint8_t *v, size_t vn)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (bytes_cmp(k[mid].k, k[mid].n, v, vn) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && bytes_cmp(k[lo].k, k[lo].n, v, vn) == 0 ? (int)lo : -1;
}

/* Open a listed segment of ds: under its own root, or (a branch's version lists the segments
 * it inherited) under one of the dataset-root base paths its manifest defines. */
static int seg_open_ds(lance_kix_seg **out, const lance_dataset *ds, const seg_ref *ref)
{
    char key[STORE_KEY_MAX];
    int rc = lance_key(key, ds->root, LANCE_KIX_DIR, ref->name);
    if (rc == 0) rc = lance_kix_seg_open(out, ds->s, key, ref->size);
    const Lance__Table__Manifest *pb = ds->m->pb;
    for (size_t i = 0; rc == OG_E_NOT_FOUND && i < pb->n_base_paths; i++) {
        const Lance__Table__BasePath *bp = pb->base_paths[i];
        char dir[STORE_KEY_MAX];
        if (!bp->is_dataset_root || lance_dataset_file_root(ds, 1, bp->id, dir) != 0 ||
            lance_key(key, dir, LANCE_KIX_DIR, ref->name) != 0) {
            core_err(OG_E_NOT_FOUND, "segment %s not found", ref->name);
            continue;
        }
        rc = lance_kix_seg_open(out, ds->s, key, ref->size);
    }
    return rc;
}

/* Segments already reported by this process (a damaged one is skipped by every lookup; one
 * warning each is enough). */
static _Atomic uint64_t warned[64];

int lance_kix_healthy(const lance_dataset *ds, uint64_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    const Lance__Table__Manifest *pb = ds->m->pb;
    lance_kix_decl d[LANCE_KIX_MAX_DECLS];
    size_t nd = 0;
    seg_ref *refs = NULL;
    size_t nr = 0;
    int rc = lance_kix_decls(ds, d, &nd);
    if (rc == 0 && nd) rc = refs_parse(meta_value(pb, LANCE_KIX_SEG_KEY), &refs, &nr);
    size_t cap = 0;
    for (size_t i = 0; rc == 0 && i < nr; i++) {
        lance_kix_seg *g = NULL;
        if (seg_open_ds(&g, ds, &refs[i]) != 0) {
            og_error_clear(); /* missing, damaged or of another format: covers nothing */
            continue;
        }
        const uint64_t *rows, *files;
        int whole = lance_kix_seg_slots(g, &rows, &files) == refs[i].n_frags;
        for (size_t k = 0; whole && k < nd; k++) {
            char want[130];
            decl_text(&d[k], want);
            whole = lance_kix_seg_find_tree(g, want) >= 0;
        }
        for (size_t k = 0; whole && rc == 0 && k < refs[i].n_frags; k++) {
            const Lance__Table__DataFragment *f = NULL;
            for (size_t j = 0; j < pb->n_fragments && !f; j++)
                if (pb->fragments[j]->id == refs[i].frags[k]) f = pb->fragments[j];
            if (!f || f->physical_rows != rows[k] || lance_kix_files_hash(f) != files[k]) continue;
            if (*n == cap) {
                cap = cap ? cap * 2 : 16;
                uint64_t *na = core_realloc(*ids, cap * sizeof *na);
                if (!na) {
                    rc = core_err_nomem();
                    break;
                }
                *ids = na;
            }
            (*ids)[(*n)++] = f->id;
        }
        lance_kix_seg_close(g);
    }
    refs_free(refs, nr);
    if (rc) {
        core_free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return rc;
}

static void damaged(const lance_dataset *ds, const char *name)
{
    atomic_fetch_add(&kix_damaged_count, 1);
    uint64_t h = core_hash64(name, strlen(name), 0) | 1;
    for (size_t i = 0; i < sizeof warned / sizeof *warned; i++) {
        uint64_t cur = atomic_load(&warned[i]);
        if (cur == h) return;
        if (cur == 0) {
            uint64_t zero = 0;
            if (atomic_compare_exchange_strong(&warned[i], &zero, h)) break;
            if (zero == h) return;
        }
    }
    core_log(CORE_LOG_WARN,
             "table '%s': key index segment %s is missing or damaged (%s); "
             "reading its fragments instead ('omnigraph optimize' rebuilds what is missing)",
             ds->root, name, og_error_last()->message);
}

int lance_kix_lookup(const lance_dataset *ds, const char *column, const char *payload,
                     const uint8_t *const *keys, const size_t *klens, size_t n, lance_kix_hit_fn fn,
                     void *arg, lance_kix_stats *st)
{
    lance_kix_stats local;
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    const Lance__Table__Manifest *pb = ds->m->pb;
    if (!n || !pb->n_fragments) return 0;
    size_t kc;
    int rc = lance_dataset_column(ds, column, &kc);
    if (rc) return rc;
    int pc = -1;
    if (payload && (pc = schema_col(&ds->schema, payload)) < 0)
        return core_err(OG_E_BAD_REQUEST, "table '%s' has no column '%s'", ds->root, payload);
    /* The keys, sorted and unique. */
    skey *sk = core_malloc(n * sizeof *sk);
    const uint8_t **sp = core_malloc(n * sizeof *sp);
    size_t *sl = core_malloc(n * sizeof *sl);
    cover *cv = core_malloc(pb->n_fragments * sizeof *cv);
    seg_ref *refs = NULL;
    size_t nr = 0, nu = 0;
    if (!sk || !sp || !sl || !cv) rc = core_err_nomem();
    for (size_t i = 0; rc == 0 && i < n; i++)
        sk[i] = (skey){keys[i], klens[i], i};
    if (rc == 0) {
        qsort(sk, n, sizeof *sk, skey_cmp);
        for (size_t i = 0; i < n; i++)
            if (!nu || bytes_cmp(sk[nu - 1].k, sk[nu - 1].n, sk[i].k, sk[i].n)) sk[nu++] = sk[i];
        for (size_t i = 0; i < nu; i++) {
            sp[i] = sk[i].k;
            sl[i] = sk[i].n;
        }
        for (size_t i = 0; i < pb->n_fragments; i++)
            cv[i] = (cover){pb->fragments[i]->id, pb->fragments[i], -1, 0};
        qsort(cv, pb->n_fragments, sizeof *cv, cover_cmp);
    }
    /* Which declaration answers, and which segments cover what. */
    char want[130] = "";
    lance_kix_decl d[LANCE_KIX_MAX_DECLS];
    size_t nd = 0;
    if (rc == 0) lance_kix_decls(ds, d, &nd);
    for (size_t i = 0; rc == 0 && i < nd; i++)
        if (!strcmp(d[i].column, column) && (!payload || !strcmp(d[i].payload, payload))) {
            decl_text(&d[i], want);
            break;
        }
    if (rc == 0 && want[0]) rc = refs_parse(meta_value(pb, LANCE_KIX_SEG_KEY), &refs, &nr);
    lance_kix_seg **segs = rc == 0 && nr ? core_calloc(nr, sizeof *segs) : NULL;
    if (rc == 0 && nr && !segs) rc = core_err_nomem();
    int *tree = rc == 0 && nr ? core_calloc(nr, sizeof *tree) : NULL;
    if (rc == 0 && nr && !tree) rc = core_err_nomem();
    for (size_t i = 0; rc == 0 && i < nr; i++) {
        /* Only segments that still cover a fragment are opened. */
        int live = 0;
        for (size_t k = 0; !live && k < refs[i].n_frags; k++) {
            cover *c = cover_find(cv, pb->n_fragments, refs[i].frags[k]);
            live = c && c->seg < 0;
        }
        if (!live) continue;
        const uint64_t *rows, *files;
        if (seg_open_ds(&segs[i], ds, &refs[i]) != 0 ||
            (tree[i] = lance_kix_seg_find_tree(segs[i], want)) < 0 ||
            lance_kix_seg_slots(segs[i], &rows, &files) != refs[i].n_frags) {
            if (segs[i] && tree[i] < 0) core_err(OG_E_CORRUPT, "no tree for %s", want);
            if (segs[i] && tree[i] >= 0) core_err(OG_E_CORRUPT, "slot count differs from listing");
            damaged(ds, refs[i].name);
            st->damaged++;
            lance_kix_seg_close(segs[i]);
            segs[i] = NULL;
            continue;
        }
        for (size_t k = 0; k < refs[i].n_frags; k++) {
            cover *c = cover_find(cv, pb->n_fragments, refs[i].frags[k]);
            /* the same rows in the same data files: a column rewritten in place (a new data
             * file under the same fragment id) no longer matches */
            if (c && c->seg < 0 && c->f->physical_rows == rows[k] &&
                lance_kix_files_hash(c->f) == files[k]) {
                c->seg = (long)i;
                c->slot = (uint32_t)k;
            }
        }
    }
    /* Segments first: each one's hits are collected whole, so a damaged block drops the
     * segment (its fragments are scanned below) without reporting anything twice. */
    seg_hits sh = {0};
    roaring_bitmap_t *del = NULL;
    uint64_t del_frag = UINT64_MAX;
    for (size_t i = 0; rc == 0 && i < nr; i++) {
        if (!segs[i]) continue;
        int used = 0;
        for (size_t k = 0; k < pb->n_fragments; k++)
            used |= cv[k].seg == (long)i;
        if (!used) continue;
        st->segments++;
        sh.n = 0;
        core_buf_clear(&sh.pay);
        int lr = lance_kix_seg_lookup(segs[i], tree[i], sp, sl, nu, collect, &sh);
        if (lr == OG_E_NOMEM) {
            rc = lr;
            break;
        }
        if (lr) {
            damaged(ds, refs[i].name);
            st->damaged++;
            for (size_t k = 0; k < pb->n_fragments; k++)
                if (cv[k].seg == (long)i) cv[k].seg = -1;
            continue;
        }
        for (size_t k = 0; k < pb->n_fragments; k++)
            st->fragments_indexed += cv[k].seg == (long)i;
        /* by fragment, so each deletion file is read once */
        if (sh.n > 1) qsort(sh.h, sh.n, sizeof *sh.h, hit_cmp);
        for (size_t h = 0; rc == 0 && h < sh.n; h++) {
            const hit *x = &sh.h[h];
            if (x->slot >= refs[i].n_frags) continue;
            cover *c = cover_find(cv, pb->n_fragments, refs[i].frags[x->slot]);
            if (!c || c->seg != (long)i || c->slot != x->slot) continue;
            if (c->f->deletion_file) {
                if (del_frag != c->frag) {
                    if (del) roaring_bitmap_free(del);
                    del = NULL;
                    del_frag = c->frag;
                    if ((rc = lance_dataset_deletion_load(ds, c->frag, c->f->deletion_file, &del)))
                        break;
                }
                if (del && roaring_bitmap_contains(del, x->off)) continue;
            }
            const uint8_t *pay = NULL;
            size_t plen = 0;
            if (payload && x->plen == SIZE_MAX)
                pay = (const uint8_t *)"", plen = 0;
            else if (payload && x->plen)
                pay = sh.pay.data + x->pay_at, plen = x->plen;
            rc = fn(arg, sk[x->key].orig, (c->frag << 32) | x->off, pay, plen);
        }
    }
    if (del) roaring_bitmap_free(del);
    core_free(sh.h);
    core_buf_free(&sh.pay);
    /* Then every fragment no segment answered. */
    uint64_t *skip = NULL;
    size_t n_skip = 0, n_scan = 0;
    if (rc == 0) {
        skip = core_malloc(pb->n_fragments * sizeof *skip);
        if (!skip) rc = core_err_nomem();
        for (size_t k = 0; rc == 0 && k < pb->n_fragments; k++) {
            if (cv[k].seg >= 0)
                skip[n_skip++] = cv[k].frag; /* ascending: cv is sorted */
            else
                n_scan++;
        }
    }
    if (rc == 0 && n_scan) {
        const char *cols[2] = {column, payload};
        lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
        so.columns = cols;
        so.n_columns = payload ? 2 : 1;
        so.with_row_addr = true;
        so.skip_fragments = skip;
        so.n_skip_fragments = n_skip;
        lance_scanner *sc = NULL;
        rc = lance_scanner_open(&sc, ds, &so);
        st->fragments_scanned = n_scan;
        while (rc == 0) {
            arrow_batch *b = NULL;
            if ((rc = lance_scanner_next(sc, &b)) != 0 || !b) break;
            const arrow_array *kcol = b->columns[0];
            const arrow_array *pcol = payload ? b->columns[1] : NULL;
            const arrow_array *acol = b->columns[b->n_columns - 1];
            st->rows_scanned += (uint64_t)b->num_rows;
            for (int64_t r = 0; rc == 0 && r < b->num_rows; r++) {
                if (!arrow_array_is_valid(kcol, r)) continue;
                size_t vn, pn = 0;
                const uint8_t *v = arrow_array_get_bytes(kcol, r, &vn);
                int at = find_sorted(sk, nu, v, vn);
                if (at < 0) continue;
                const uint8_t *pv = NULL;
                if (pcol && arrow_array_is_valid(pcol, r)) pv = arrow_array_get_bytes(pcol, r, &pn);
                rc = fn(arg, sk[at].orig, arrow_array_get_uint(acol, r), pv, pn);
            }
            arrow_batch_free(b);
        }
        lance_scanner_free(sc);
    }
    core_free(skip);
    for (size_t i = 0; segs && i < nr; i++)
        lance_kix_seg_close(segs[i]);
    core_free(segs);
    core_free(tree);
    refs_free(refs, nr);
    core_free(sk);
    core_free(sp);
    core_free(sl);
    core_free(cv);
    (void)kc;
    (void)pc;
    return rc;
}

/* ---- verify ------------------------------------------------------------------------------ */

/* One entry of a tree held for the comparison with the data: its row (slot, offset) and where
 * its key and payload bytes are in the arena. */
typedef struct ventry {
    uint32_t slot, off;
    const uint8_t *key, *pay;
    uint32_t klen, plen;
    bool has_pay;
} ventry;

typedef struct vwalk {
    core_arena *a;
    ventry *e;
    size_t n, cap;
    const uint64_t *slot_rows;
    size_t n_slots;
    uint64_t bad_offsets;
} vwalk;

static const uint8_t *arena_dup(core_arena *a, const uint8_t *p, size_t n)
{
    uint8_t *d = core_arena_alloc(a, n);
    if (d) memcpy(d, p, n);
    return d;
}

static int u64_cmp(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

static int vwalk_put(void *arg, const lance_kix_entry *x)
{
    vwalk *w = arg;
    if (x->slot >= w->n_slots || x->off >= w->slot_rows[x->slot]) {
        w->bad_offsets++;
        return 0;
    }
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 1024;
        ventry *ne = core_realloc(w->e, cap * sizeof *ne);
        if (!ne) return core_err_nomem();
        w->e = ne;
        w->cap = cap;
    }
    ventry *v = &w->e[w->n++];
    memset(v, 0, sizeof *v);
    v->slot = x->slot;
    v->off = x->off;
    v->klen = x->klen;
    v->plen = x->plen;
    v->has_pay = x->pay != NULL;
    v->key = x->klen ? arena_dup(w->a, x->key, x->klen) : (const uint8_t *)"";
    v->pay = x->plen ? arena_dup(w->a, x->pay, x->plen) : (const uint8_t *)"";
    if (!v->key || !v->pay) return core_err_nomem();
    return 0;
}

static int ventry_cmp(const void *pa, const void *pb)
{
    const ventry *a = pa, *b = pb;
    if (a->slot != b->slot) return a->slot < b->slot ? -1 : 1;
    return a->off < b->off ? -1 : a->off > b->off;
}

typedef struct vctx {
    const lance_dataset *ds;
    lance_kix_verify_report *rep;
    lance_kix_problem_fn fn;
    void *arg;
    const char *seg;
    unsigned told; /* problems reported for this segment (the first few) */
} vctx;

static void problem(vctx *v, const char *fmt, ...)
{
    v->rep->problems++;
    if (!v->fn || v->told++ >= 8) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    v->fn(v->arg, v->seg, msg);
}

/* Tree t of segment g against the live rows of the fragments it counts for (slot_frag[k]:
 * the fragment id of slot k, or UINT64_MAX when the slot does not count). */
static int verify_tree(vctx *v, lance_kix_seg *g, int t, const lance_kix_decl *d,
                       const uint64_t *slot_frag, const uint64_t *slot_rows, size_t n_slots)
{
    core_arena a;
    core_arena_init(&a, 0);
    vwalk w = {.a = &a, .slot_rows = slot_rows, .n_slots = n_slots};
    char dtext[130];
    decl_text(d, dtext);
    int rc = lance_kix_seg_walk_entries(g, t, vwalk_put, &w);
    if (rc && rc != OG_E_NOMEM) { /* damaged, or gone since it was opened */
        problem(v, "index %s: %s", dtext, og_error_last()->message);
        og_error_clear();
        rc = 0;
        goto out;
    }
    if (rc) goto out;
    if (w.bad_offsets)
        problem(v, "index %s: %llu entries name a row the fragment does not have", dtext,
                (unsigned long long)w.bad_offsets);
    if (w.n) qsort(w.e, w.n, sizeof *w.e, ventry_cmp); /* w.e is NULL when there is none */
    for (size_t i = 1; i < w.n; i++)
        if (w.e[i].slot == w.e[i - 1].slot && w.e[i].off == w.e[i - 1].off) {
            problem(v, "index %s: row %u of slot %u has two entries", dtext, w.e[i].off,
                    w.e[i].slot);
            break;
        }
    for (size_t i = 0; i < w.n; i++)
        v->rep->entries += slot_frag[w.e[i].slot] != UINT64_MAX;
    /* The live rows of the counted fragments, with their values. */
    const Lance__Table__Manifest *pb = v->ds->m->pb;
    uint64_t *skip = core_malloc((pb->n_fragments ? pb->n_fragments : 1) * sizeof *skip);
    if (!skip) {
        rc = core_err_nomem();
        goto out;
    }
    size_t ns = 0;
    for (size_t i = 0; i < pb->n_fragments; i++) {
        bool counted = false;
        for (size_t k = 0; k < n_slots && !counted; k++)
            counted = slot_frag[k] == pb->fragments[i]->id;
        if (!counted) skip[ns++] = pb->fragments[i]->id;
    }
    if (ns) qsort(skip, ns, sizeof *skip, u64_cmp);
    const char *cols[2] = {v->ds->schema.fields[d->col].name,
                           d->pay >= 0 ? v->ds->schema.fields[d->pay].name : NULL};
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.columns = cols;
    so.n_columns = d->pay >= 0 ? 2 : 1;
    so.with_row_addr = true;
    so.skip_fragments = skip;
    so.n_skip_fragments = ns;
    lance_scanner *sc = NULL;
    rc = lance_scanner_open(&sc, v->ds, &so);
    uint64_t missing = 0, differ = 0;
    while (rc == 0) {
        arrow_batch *b = NULL;
        if ((rc = lance_scanner_next(sc, &b)) != 0 || !b) break;
        const arrow_array *addr = b->columns[so.n_columns];
        for (int64_t r = 0; r < b->num_rows; r++) {
            uint64_t ad = arrow_array_get_uint(addr, r);
            uint32_t slot = UINT32_MAX;
            for (size_t k = 0; k < n_slots && slot == UINT32_MAX; k++)
                if (slot_frag[k] == ad >> 32) slot = (uint32_t)k;
            if (slot == UINT32_MAX) continue;
            ventry want = {.slot = slot, .off = (uint32_t)ad};
            ventry *e = w.n ? bsearch(&want, w.e, w.n, sizeof *w.e, ventry_cmp) : NULL;
            if (!arrow_array_is_valid(b->columns[0], r)) {
                if (e) differ++; /* nulls are not indexed */
                continue;
            }
            if (!e) {
                missing++;
                continue;
            }
            size_t kl, pl = 0;
            const uint8_t *kp = arrow_array_get_bytes(b->columns[0], r, &kl), *pp = NULL;
            bool pnull = true;
            if (d->pay >= 0 && arrow_array_is_valid(b->columns[1], r)) {
                pp = arrow_array_get_bytes(b->columns[1], r, &pl);
                pnull = false;
            }
            bool pay_ok = d->pay < 0 ||
                          (pnull ? !e->has_pay
                                 : e->has_pay && pl == e->plen && (!pl || !memcmp(pp, e->pay, pl)));
            if (kl != e->klen || (kl && memcmp(kp, e->key, kl)) || !pay_ok) differ++;
        }
        arrow_batch_free(b);
    }
    lance_scanner_free(sc);
    core_free(skip);
    if (rc) goto out;
    if (missing)
        problem(v, "index %s: %llu live rows have no entry", dtext, (unsigned long long)missing);
    if (differ)
        problem(v, "index %s: %llu entries disagree with their row's values", dtext,
                (unsigned long long)differ);
out:
    core_free(w.e);
    core_arena_free(&a);
    return rc;
}

/* entries: compare every entry with the data (lance_kix_verify); without, only what each
 * segment's tail says (lance_kix_check). */
static int kix_check(const lance_dataset *ds, bool entries, lance_kix_verify_report *rep,
                     lance_kix_problem_fn fn, void *arg)
{
    memset(rep, 0, sizeof *rep);
    const Lance__Table__Manifest *pb = ds->m->pb;
    lance_kix_decl d[LANCE_KIX_MAX_DECLS];
    size_t nd = 0;
    seg_ref *refs = NULL;
    size_t nr = 0;
    int rc = lance_kix_decls(ds, d, &nd);
    if (rc == 0) rc = refs_parse(meta_value(pb, LANCE_KIX_SEG_KEY), &refs, &nr);
    if (rc == OG_E_CORRUPT || rc == OG_E_BAD_REQUEST) {
        vctx v = {ds, rep, fn, arg, LANCE_KIX_SEG_KEY, 0};
        problem(&v, "the segment list does not parse: %s", og_error_last()->message);
        og_error_clear();
        return 0;
    }
    for (size_t i = 0; rc == 0 && i < nr; i++) {
        vctx v = {ds, rep, fn, arg, refs[i].name, 0};
        uint64_t before = rep->problems;
        rep->segments++;
        lance_kix_seg *g = NULL;
        if (seg_open_ds(&g, ds, &refs[i]) != 0) {
            problem(&v, "cannot be used: %s", og_error_last()->message);
            og_error_clear();
            continue;
        }
        const uint64_t *rows, *files;
        size_t ns = lance_kix_seg_slots(g, &rows, &files);
        if (ns != refs[i].n_frags) {
            problem(&v, "holds %zu fragments, the manifest lists %zu", ns, refs[i].n_frags);
            lance_kix_seg_close(g);
            continue;
        }
        uint64_t *slot_frag = core_malloc((ns ? ns : 1) * sizeof *slot_frag);
        if (!slot_frag) {
            rc = core_err_nomem();
            lance_kix_seg_close(g);
            break;
        }
        size_t counted = 0;
        for (size_t k = 0; k < ns; k++) {
            const Lance__Table__DataFragment *f = NULL;
            for (size_t j = 0; j < pb->n_fragments && !f; j++)
                if (pb->fragments[j]->id == refs[i].frags[k]) f = pb->fragments[j];
            slot_frag[k] = UINT64_MAX;
            if (!f) continue; /* gone since (a later compaction): it covers the others */
            if (f->physical_rows != rows[k] || lance_kix_files_hash(f) != files[k]) {
                problem(&v, "was built for other rows of fragment %llu than the version has",
                        (unsigned long long)f->id);
                continue;
            }
            slot_frag[k] = f->id;
            counted++;
        }
        for (size_t k = 0; rc == 0 && counted && k < nd; k++) {
            char want[130];
            decl_text(&d[k], want);
            int t = lance_kix_seg_find_tree(g, want);
            if (t < 0)
                problem(&v, "has no tree for the declared index %s", want);
            else if (entries)
                rc = verify_tree(&v, g, t, &d[k], slot_frag, rows, ns);
        }
        if (rc == 0 && rep->problems == before) {
            rep->segments_ok++;
            rep->fragments_covered += counted;
        }
        core_free(slot_frag);
        lance_kix_seg_close(g);
    }
    refs_free(refs, nr);
    return rc;
}

int lance_kix_verify(const lance_dataset *ds, lance_kix_verify_report *rep, lance_kix_problem_fn fn,
                     void *arg)
{
    return kix_check(ds, true, rep, fn, arg);
}

int lance_kix_check(const lance_dataset *ds, lance_kix_verify_report *rep, lance_kix_problem_fn fn,
                    void *arg)
{
    return kix_check(ds, false, rep, fn, arg);
}
