/* Lance compaction (see compact.h): plan groups of adjacent small or deletion-heavy
 * fragments, copy each group's visible rows (with their row ids and row versions) into new
 * data files, and commit Rewrite transactions at exact versions. */
#include "lance/compact.h"
#include "lance/keyindex.h"

#include "core/alloc.h"
#include "core/arena.h"
#include "core/error.h"
#include "lance/branch.h"
#include "lance/deletion.h"
#include "lance/file2.h"
#include "lance/fragment.h"
#include "lance/rowids.h"
#include "lance/txn.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* One planned group: old fragments (borrowed from the snapshot, in manifest order) and the
 * new fragments written for them (arena memory). */
typedef struct cgroup {
    const Lance__Table__DataFragment **old;
    size_t n_old;
    Lance__Table__DataFragment **nw;
    size_t n_new, cap_new;
    size_t n_apart;   /* the first n_apart of nw hold the rows the classifier set apart */
    uint64_t live;    /* visible rows */
    uint64_t deleted; /* deleted rows dropped */
    uint64_t dropped; /* visible rows the classifier dropped */
    uint64_t **created, **updated; /* while writing: per old fragment, its rows' versions */
    lance_kix_builder *kb;         /* while writing: key index entries of the kept rows */
    bool index_me;                 /* holds a fragment to index (opt->key_indexes) */
    lance_kix_staged kix;          /* the segment over nw (kix.n 0: none) */
} cgroup;

typedef struct id_group {
    uint64_t id;
    size_t group;
} id_group;

typedef struct compactor {
    const lance_dataset *ds;
    const lance_compact_options *opt;
    uint64_t target;
    int stable;
    core_arena arena;
    cgroup *g;
    size_t n_g;
    id_group *by_id; /* old fragment id -> group, sorted by id */
    size_t n_by_id;
    uint64_t next_frag_id;
    const char **pending; /* data files of the commit being built */
    size_t n_pending, cap_pending;
    lance_compact_report *rep;
    bool decl_changed; /* opt->key_indexes differs from the table's declaration */
    uint64_t *healthy; /* with opt->key_indexes: fragments a usable segment covers */
    size_t n_healthy;
} compactor;

static bool healthy_has(const compactor *c, uint64_t id)
{
    for (size_t i = 0; i < c->n_healthy; i++)
        if (c->healthy[i] == id) return true;
    return false;
}

/* ---- planning ------------------------------------------------------------------------- */

static int frag_deleted(const lance_dataset *ds, const Lance__Table__DataFragment *f, uint64_t *out)
{
    *out = 0;
    if (!f->deletion_file) return 0;
    if (f->deletion_file->num_deleted_rows) {
        *out = f->deletion_file->num_deleted_rows;
    } else { /* 0 means unknown: count the file */
        roaring_bitmap_t *bm = NULL;
        int rc = lance_dataset_deletion_load(ds, f->id, f->deletion_file, &bm); /* base_id aware */
        if (rc) return rc;
        *out = roaring_bitmap_get_cardinality(bm);
        roaring_bitmap_free(bm);
    }
    if (*out > f->physical_rows)
        return core_err(OG_E_CORRUPT,
                        "table '%s' fragment %" PRIu64 ": %" PRIu64 " deleted rows of %" PRIu64,
                        ds->root, f->id, *out, f->physical_rows);
    return 0;
}

/* Fragment ids covered by an index: *all = 1 when some index covers every fragment (no
 * bitmap, or one we cannot read); else *cov holds the union of the bitmaps (NULL: none). */
static int index_coverage(const lance_dataset *ds, roaring_bitmap_t **cov, int *all)
{
    *cov = NULL;
    *all = 0;
    if (!ds->m->index || ds->m->index_len == 0) return 0;
    Lance__Table__IndexSection *sec = NULL;
    int rc = lance_pb_unpack((ProtobufCMessage **)&sec, &lance__table__index_section__descriptor,
                             ds->m->index, ds->m->index_len, "index section", ds->root);
    if (rc) {
        /* Not ours to judge: without a readable section, leave every fragment alone. */
        og_error_clear();
        *all = 1;
        return 0;
    }
    for (size_t i = 0; i < sec->n_indices && !*all; i++) {
        const Lance__Table__IndexMetadata *im = sec->indices[i];
        roaring_bitmap_t *bm = NULL;
        if (!im->has_fragment_bitmap ||
            lance_deletion_bin_decode(&bm, im->fragment_bitmap.data, im->fragment_bitmap.len,
                                      ds->root) != 0) {
            og_error_clear();
            *all = 1;
            break;
        }
        if (!*cov) {
            *cov = bm;
        } else {
            roaring_bitmap_or_inplace(*cov, bm);
            roaring_bitmap_free(bm);
        }
    }
    lance_pb_free(sec);
    return 0;
}

static int group_push_old(cgroup *g, const Lance__Table__DataFragment *f, uint64_t live,
                          uint64_t deleted)
{
    const Lance__Table__DataFragment **p = core_realloc(g->old, (g->n_old + 1) * sizeof *p);
    if (!p) return core_err_nomem();
    g->old = p;
    g->old[g->n_old++] = f;
    g->live += live;
    g->deleted += deleted;
    return 0;
}

static void groups_free(compactor *c)
{
    for (size_t i = 0; i < c->n_g; i++)
        core_free(c->g[i].old);
    core_free(c->g);
    c->g = NULL;
    c->n_g = 0;
}

/* Is group g worth rewriting? */
static int group_worth(const compactor *c, const cgroup *g)
{
    if (g->n_old >= 2) return 1;
    if (g->n_old == 0) return 0;
    if (g->index_me) return 1;
    const Lance__Table__DataFragment *f = g->old[0];
    if (g->deleted == 0) return 0;
    if (g->deleted == f->physical_rows) return 1;
    return c->opt->materialize_deletions &&
           (double)g->deleted > c->opt->materialize_deletions_threshold * (double)f->physical_rows;
}

static int cmp_id_group(const void *a, const void *b)
{
    uint64_t x = ((const id_group *)a)->id, y = ((const id_group *)b)->id;
    return x < y ? -1 : x > y;
}

static unsigned tier_of(uint64_t live, unsigned t)
{
    unsigned level = 0;
    while (live >= t) {
        live /= t;
        level++;
    }
    return level;
}

/* Close group cur: keep it when worth rewriting, then start an empty one. */
static void group_close(compactor *c, cgroup *cur)
{
    if (cur->n_old && group_worth(c, cur))
        c->g[c->n_g++] = *cur;
    else
        core_free(cur->old);
    memset(cur, 0, sizeof *cur);
}

/* Size-tiered planning (opt->tier_factor): runs of at least T adjacent mergeable fragments of
 * one tier form groups; a fragment with deletions to materialize is a group of its own. */
static int plan_tiered(compactor *c, const roaring_bitmap_t *cov, int all_indexed)
{
    const lance_dataset *ds = c->ds;
    const Lance__Table__Manifest *pb = ds->m->pb;
    const unsigned t = c->opt->tier_factor;
    size_t n = pb->n_fragments;
    uint64_t *live = core_calloc(n ? n : 1, sizeof *live);
    uint64_t *del = core_calloc(n ? n : 1, sizeof *del);
    int *kind = core_calloc(n ? n : 1, sizeof *kind); /* 0 keep, 1 mergeable, 2 heavy */
    int rc = live && del && kind ? 0 : core_err_nomem();
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const Lance__Table__DataFragment *f = pb->fragments[i];
        rc = frag_deleted(ds, f, &del[i]);
        if (rc) break;
        live[i] = f->physical_rows - del[i];
        c->rep->rows_before += live[i];
        c->rep->files_before += f->n_files;
        int heavy =
            del[i] == f->physical_rows ||
            (c->opt->materialize_deletions && del[i] > 0 &&
             (double)del[i] > c->opt->materialize_deletions_threshold * (double)f->physical_rows);
        kind[i] = f->physical_rows == 0 ? 0 : heavy ? 2 : 1;
        if (kind[i] && (all_indexed || (cov && (f->id > UINT32_MAX ||
                                                roaring_bitmap_contains(cov, (uint32_t)f->id))))) {
            c->rep->fragments_skipped_indexed++;
            kind[i] = 0;
        }
    }
    cgroup cur;
    memset(&cur, 0, sizeof cur);
    for (size_t i = 0; rc == 0 && i < n;) {
        if (kind[i] == 2) {
            rc = group_push_old(&cur, pb->fragments[i], live[i], del[i]);
            group_close(c, &cur);
            i++;
            continue;
        }
        if (kind[i] == 0) {
            i++;
            continue;
        }
        size_t j = i;
        unsigned level = tier_of(live[i], t);
        while (j < n && kind[j] == 1 && tier_of(live[j], t) == level)
            j++;
        if (j - i >= t) {
            for (size_t k = i; rc == 0 && k < j; k++) {
                rc = group_push_old(&cur, pb->fragments[k], live[k], del[k]);
                if (rc == 0 && cur.live >= c->target) group_close(c, &cur);
            }
            group_close(c, &cur);
        }
        i = j;
    }
    core_free(cur.old);
    core_free(live);
    core_free(del);
    core_free(kind);
    return rc;
}

static int plan(compactor *c)
{
    const lance_dataset *ds = c->ds;
    const Lance__Table__Manifest *pb = ds->m->pb;
    roaring_bitmap_t *cov = NULL;
    int all_indexed = 0;
    int rc = index_coverage(ds, &cov, &all_indexed);
    cgroup cur;
    memset(&cur, 0, sizeof cur);
    c->g = core_calloc(pb->n_fragments ? pb->n_fragments : 1, sizeof *c->g);
    if (!c->g) rc = core_err_nomem();
    if (rc == 0 && c->opt->tier_factor >= 2) {
        rc = plan_tiered(c, cov, all_indexed);
        goto index;
    }
    for (size_t i = 0; rc == 0 && i <= pb->n_fragments; i++) {
        int candidate = 0, close = i == pb->n_fragments, unindexed = 0;
        uint64_t deleted = 0, live = 0;
        const Lance__Table__DataFragment *f = NULL;
        if (!close) {
            f = pb->fragments[i];
            rc = frag_deleted(ds, f, &deleted);
            if (rc) break;
            live = f->physical_rows - deleted;
            c->rep->rows_before += live;
            c->rep->files_before += f->n_files;
            int small = live < c->target;
            int heavy = deleted == f->physical_rows ||
                        (c->opt->materialize_deletions && deleted > 0 &&
                         (double)deleted >
                             c->opt->materialize_deletions_threshold * (double)f->physical_rows);
            /* A fragment big enough for a segment that no segment of the declaration being
             * set covers (a new declaration covers nothing yet). */
            unindexed = c->opt->key_indexes && live >= LANCE_KIX_MIN_ROWS &&
                        (c->decl_changed || !healthy_has(c, f->id));
            /* physical_rows 0 means "unknown": such a fragment cannot be copied exactly. */
            candidate = (small || heavy || unindexed) && f->physical_rows > 0;
            if (candidate &&
                (all_indexed ||
                 (cov && (f->id > UINT32_MAX || roaring_bitmap_contains(cov, (uint32_t)f->id))))) {
                c->rep->fragments_skipped_indexed++;
                candidate = 0;
            }
            if (!candidate) close = 1;
        }
        if (candidate) {
            rc = group_push_old(&cur, f, live, deleted);
            if (rc) break;
            if (unindexed) cur.index_me = true;
            if (cur.live >= c->target) close = 1;
        }
        if (close && cur.n_old) {
            if (group_worth(c, &cur)) {
                c->g[c->n_g++] = cur;
            } else {
                core_free(cur.old);
            }
            memset(&cur, 0, sizeof cur);
        }
    }
    core_free(cur.old);
index:
    if (cov) roaring_bitmap_free(cov);
    if (rc) return rc;
    size_t n = 0;
    for (size_t i = 0; i < c->n_g; i++)
        n += c->g[i].n_old;
    c->by_id = core_calloc(n ? n : 1, sizeof *c->by_id);
    if (!c->by_id) return core_err_nomem();
    for (size_t i = 0; i < c->n_g; i++)
        for (size_t k = 0; k < c->g[i].n_old; k++)
            c->by_id[c->n_by_id++] = (id_group){c->g[i].old[k]->id, i};
    qsort(c->by_id, c->n_by_id, sizeof *c->by_id, cmp_id_group);
    return 0;
}

/* The group old fragment `id` belongs to, or -1. */
static long group_of(const compactor *c, uint64_t id)
{
    id_group key = {id, 0};
    const id_group *p = bsearch(&key, c->by_id, c->n_by_id, sizeof *c->by_id, cmp_id_group);
    return p ? (long)p->group : -1;
}

/* ---- encoding row ids ------------------------------------------------------------------ */

/* The old row ids of a new fragment's rows, as one segment: a range when contiguous, a
 * range_with_bitmap (LSB-first) when increasing and dense, else a (sorted) array. */
static int encode_rowids(core_arena *a, const uint64_t *ids, size_t n, ProtobufCBinaryData *out)
{
    lance_segment seg;
    memset(&seg, 0, sizeof seg);
    int sorted = 1;
    for (size_t i = 1; i < n && sorted; i++)
        sorted = ids[i] > ids[i - 1];
    uint8_t *bits = NULL;
    if (n == 0) {
        seg.kind = LANCE_SEG_RANGE;
    } else if (sorted && ids[n - 1] - ids[0] + 1 == n) {
        seg.kind = LANCE_SEG_RANGE;
        seg.start = ids[0];
        seg.end = ids[n - 1] + 1;
    } else if (sorted && (ids[n - 1] - ids[0]) / 8 + 1 <= (uint64_t)n * 4) {
        uint64_t span = ids[n - 1] - ids[0] + 1;
        bits = core_calloc((size_t)((span + 7) / 8), 1);
        if (!bits) return core_err_nomem();
        for (size_t i = 0; i < n; i++) {
            uint64_t b = ids[i] - ids[0];
            bits[b / 8] |= (uint8_t)(1u << (b % 8)); /* LSB-first */
        }
        seg.kind = LANCE_SEG_RANGE_BITMAP;
        seg.start = ids[0];
        seg.end = ids[n - 1] + 1;
        seg.bitmap = bits;
        seg.bitmap_len = (size_t)((span + 7) / 8);
    } else {
        seg.kind = sorted ? LANCE_SEG_SORTED_ARRAY : LANCE_SEG_ARRAY;
        seg.values = (uint64_t *)ids;
        seg.n_values = n;
    }
    lance_rowid_seq seq = {&seg, 1};
    core_buf buf = CORE_BUF_INIT;
    int rc = lance_rowid_seq_encode(&buf, &seq);
    if (rc == 0) rc = lance_fragment_bytes(a, &buf, out);
    core_buf_free(&buf);
    core_free(bits);
    return rc;
}

/* Expand an inline version sequence of fragment f (NULL *out when absent: unknown). */
static int frag_versions(const lance_dataset *ds, const Lance__Table__DataFragment *f, int created,
                         uint64_t **out)
{
    *out = NULL;
    const ProtobufCBinaryData *d;
    if (created) {
        if (f->created_at_version_sequence_case !=
            LANCE__TABLE__DATA_FRAGMENT__CREATED_AT_VERSION_SEQUENCE_INLINE_CREATED_AT_VERSIONS)
            return 0;
        d = &f->inline_created_at_versions;
    } else {
        if (f->last_updated_at_version_sequence_case !=
            LANCE__TABLE__DATA_FRAGMENT__LAST_UPDATED_AT_VERSION_SEQUENCE_INLINE_LAST_UPDATED_AT_VERSIONS)
            return 0;
        d = &f->inline_last_updated_at_versions;
    }
    lance_version_seq seq;
    memset(&seq, 0, sizeof seq);
    int rc = lance_version_seq_decode(&seq, d->data, d->len, ds->root);
    if (rc == 0) rc = lance_version_seq_expand(&seq, f->physical_rows, out);
    lance_version_seq_free(&seq);
    return rc;
}

/* ---- writing a group ------------------------------------------------------------------- */

typedef struct out_file {
    lance_file2_writer *w;
    char name[LANCE_DATA_FILE_NAME_LEN + 1];
    size_t rows;
    uint64_t *ids, *created, *updated; /* per row (0: unknown version) */
    size_t cap;
    bool apart; /* the stream of rows the classifier sets apart */
    size_t cur; /* index in the group's old fragments being read */
} out_file;

static void out_file_free(out_file *o)
{
    lance_file2_writer_free(o->w);
    core_free(o->ids);
    core_free(o->created);
    core_free(o->updated);
    bool apart = o->apart;
    memset(o, 0, sizeof *o);
    o->apart = apart;
}

static int push_pending(compactor *c, const char *key)
{
    if (c->n_pending == c->cap_pending) {
        size_t cap = c->cap_pending ? c->cap_pending * 2 : 8;
        const char **p = core_realloc(c->pending, cap * sizeof *p);
        if (!p) return core_err_nomem();
        c->pending = p;
        c->cap_pending = cap;
    }
    c->pending[c->n_pending] = core_arena_strdup(&c->arena, key);
    if (!c->pending[c->n_pending]) return core_err_nomem();
    c->n_pending++;
    return 0;
}

/* Finish the open file as a new fragment of group g. */
static int finish_file(compactor *c, cgroup *g, out_file *o)
{
    const lance_dataset *ds = c->ds;
    core_arena *a = &c->arena;
    char key[STORE_KEY_MAX];
    lance_file2_info info = {0};
    int rc = lance_key(key, ds->root, "data/", o->name);
    if (rc == 0) rc = lance_file2_writer_finish(o->w, ds->s, key, &info);
    lance_file2_writer_free(o->w);
    o->w = NULL;
    if (rc == 0) rc = push_pending(c, key);
    if (rc) {
        lance_file2_info_clear(&info);
        return rc;
    }
    c->rep->files_written++;
    Lance__Table__DataFile *df;
    Lance__Table__DataFragment *f;
    rc = lance_data_file_new(&df, a, o->name, ds->field_ids, ds->n_field_ids, info.size, info.xxh3);
    if (rc == 0) rc = lance_data_file_blocks(df, a, &info);
    lance_file2_info_clear(&info);
    if (rc == 0) rc = lance_fragment_new(&f, a, c->next_frag_id++, df, info.rows);
    if (rc) return rc;
    if (info.rows != o->rows)
        return core_err(OG_E_INTERNAL, "compaction wrote %" PRIu64 " rows, expected %zu", info.rows,
                        o->rows);
    if (c->stable) {
        f->row_id_sequence_case = LANCE__TABLE__DATA_FRAGMENT__ROW_ID_SEQUENCE_INLINE_ROW_IDS;
        rc = encode_rowids(a, o->ids, o->rows, &f->inline_row_ids);
        if (rc == 0 && lance_version_seq_keepable(o->created, o->rows, c->opt->version_runs_max)) {
            f->created_at_version_sequence_case =
                LANCE__TABLE__DATA_FRAGMENT__CREATED_AT_VERSION_SEQUENCE_INLINE_CREATED_AT_VERSIONS;
            rc = lance_fragment_versions(a, o->created, o->rows, &f->inline_created_at_versions);
        }
        if (rc == 0 && lance_version_seq_keepable(o->updated, o->rows, c->opt->version_runs_max)) {
            f->last_updated_at_version_sequence_case =
                LANCE__TABLE__DATA_FRAGMENT__LAST_UPDATED_AT_VERSION_SEQUENCE_INLINE_LAST_UPDATED_AT_VERSIONS;
            rc = lance_fragment_versions(a, o->updated, o->rows,
                                         &f->inline_last_updated_at_versions);
        }
        if (rc) return rc;
    }
    if (g->n_new == g->cap_new) {
        size_t cap = g->cap_new ? g->cap_new * 2 : 4;
        Lance__Table__DataFragment **p = core_arena_alloc(a, cap * sizeof *p);
        if (!p) return core_err_nomem();
        if (g->n_new) memcpy(p, g->nw, g->n_new * sizeof *p);
        g->nw = p;
        g->cap_new = cap;
    }
    /* The set-apart stream's fragments come first, in the order written, then the others. */
    size_t at = o->apart ? g->n_apart++ : g->n_new;
    memmove(&g->nw[at + 1], &g->nw[at], (g->n_new - at) * sizeof *g->nw);
    g->nw[at] = f;
    g->n_new++;
    c->rep->rows_rewritten += o->rows;
    o->rows = 0;
    return 0;
}

/* A snapshot holding only the group's old fragments, for scanning them. */
static int group_snapshot(const compactor *c, const cgroup *g, lance_dataset **out)
{
    const lance_dataset *ds = c->ds;
    Lance__Table__Manifest copy = *ds->m->pb;
    copy.fragments = (Lance__Table__DataFragment **)g->old;
    copy.n_fragments = g->n_old;
    core_buf buf = CORE_BUF_INIT;
    lance_manifest *m = NULL;
    int rc = lance_manifest_encode(&buf, &copy, NULL, 0, NULL, 0);
    if (rc == 0) rc = lance_manifest_decode(&m, buf.data, buf.len, ds->root);
    core_buf_free(&buf);
    if (rc) return rc;
    return lance_dataset_from_manifest(out, ds->s, ds->root, ds->naming, m);
}

/* Append rows of data (row addresses addr, stable row ids rid or NULL) to the open file of o,
 * finishing files at the target size. */
static int append_rows(compactor *c, cgroup *g, out_file *o, const arrow_batch *data,
                       const arrow_array *addr, const arrow_array *rid)
{
    const lance_dataset *ds = c->ds;
    lance_file2_options fo = LANCE_FILE2_OPTIONS_INIT;
    fo.field_ids = ds->field_ids;
    fo.n_field_ids = ds->n_field_ids;
    fo.put_flags = STORE_F_NOSYNC; /* made durable by lance_commit_pending */
    int64_t off = 0;
    int rc = 0;
    while (rc == 0 && off < data->num_rows) {
        if (!o->w) {
            rc = lance_data_file_name(o->name);
            if (rc == 0) rc = lance_file2_writer_new(&o->w, &ds->schema, &fo);
            if (rc) break;
        }
        uint64_t take = c->target - o->rows;
        if (take > (uint64_t)(data->num_rows - off)) take = (uint64_t)(data->num_rows - off);
        if (o->rows + take > o->cap) {
            size_t cap = o->cap ? o->cap : 1024;
            while (cap < o->rows + take)
                cap *= 2;
            uint64_t *p1 = core_realloc(o->ids, cap * sizeof *p1);
            if (p1) o->ids = p1;
            uint64_t *p2 = core_realloc(o->created, cap * sizeof *p2);
            if (p2) o->created = p2;
            uint64_t *p3 = core_realloc(o->updated, cap * sizeof *p3);
            if (p3) o->updated = p3;
            if (!p1 || !p2 || !p3) {
                rc = core_err_nomem();
                break;
            }
            o->cap = cap;
        }
        for (uint64_t r = 0; rc == 0 && r < take; r++) {
            uint64_t a = arrow_array_get_uint(addr, off + (int64_t)r);
            uint64_t fid = LANCE_ROW_ADDR_FRAG(a), row = LANCE_ROW_ADDR_OFF(a);
            while (o->cur < g->n_old && g->old[o->cur]->id != fid)
                o->cur++;
            if (o->cur == g->n_old || row >= g->old[o->cur]->physical_rows) {
                rc = core_err(OG_E_INTERNAL,
                              "table '%s': compaction scan returned row "
                              "address %" PRIu64 " outside its group",
                              ds->root, a);
                break;
            }
            o->ids[o->rows + r] = rid ? arrow_array_get_uint(rid, off + (int64_t)r) : a;
            o->created[o->rows + r] = g->created[o->cur] ? g->created[o->cur][row] : 0;
            o->updated[o->rows + r] = g->updated[o->cur] ? g->updated[o->cur][row] : 0;
        }
        if (rc) break;
        rc = lance_file2_writer_write_rows(o->w, data, off, (int64_t)take);
        if (rc == 0 && !o->apart)
            rc = lance_kix_builder_add(g->kb, data, off, (int64_t)take,
                                       (uint32_t)(g->n_new - g->n_apart), (uint32_t)o->rows);
        off += (int64_t)take;
        o->rows += take;
        if (rc == 0 && o->rows == c->target) rc = finish_file(c, g, o);
    }
    return rc;
}

/* The rows of one scanned batch whose class is cls, to stream o. */
static int append_class(compactor *c, cgroup *g, out_file *o, const arrow_batch *data,
                        const arrow_array *addr, const arrow_array *rid, const uint8_t *cls,
                        uint8_t want)
{
    size_t n = 0;
    for (int64_t i = 0; i < data->num_rows; i++)
        n += cls[i] == want;
    if (n == 0) return 0;
    if (n == (size_t)data->num_rows) return append_rows(c, g, o, data, addr, rid);
    int64_t *idx = core_malloc(n * sizeof *idx);
    if (!idx) return core_err_nomem();
    n = 0;
    for (int64_t i = 0; i < data->num_rows; i++)
        if (cls[i] == want) idx[n++] = i;
    arrow_batch *part = NULL;
    arrow_array *paddr = NULL, *prid = NULL;
    int rc = arrow_batch_take(&part, data, idx, n);
    if (rc == 0) rc = arrow_take(&paddr, addr, idx, n);
    if (rc == 0 && rid) rc = arrow_take(&prid, rid, idx, n);
    if (rc == 0) rc = append_rows(c, g, o, part, paddr, prid);
    arrow_batch_free(part);
    arrow_array_free(paddr);
    arrow_array_free(prid);
    core_free(idx);
    return rc;
}

static int write_group(compactor *c, cgroup *g)
{
    const lance_dataset *ds = c->ds;
    const lance_compact_options *opt = c->opt;
    size_t nf = ds->schema.n_fields;
    lance_dataset *sub = NULL;
    lance_scanner *sc = NULL;
    out_file o[2]; /* [0] the rows kept in place, [1] the rows set apart */
    memset(o, 0, sizeof o);
    o[1].apart = true;
    g->created = core_calloc(g->n_old, sizeof *g->created);
    g->updated = core_calloc(g->n_old, sizeof *g->updated);
    size_t *proj = core_calloc(nf ? nf : 1, sizeof *proj);
    uint8_t *cls = NULL;
    size_t cls_cap = 0;
    int rc = (!g->created || !g->updated || !proj) ? core_err_nomem() : 0;
    for (size_t i = 0; i < nf && rc == 0; i++)
        proj[i] = i;
    for (size_t k = 0; rc == 0 && c->stable && k < g->n_old; k++) {
        rc = frag_versions(ds, g->old[k], 1, &g->created[k]);
        if (rc == 0) rc = frag_versions(ds, g->old[k], 0, &g->updated[k]);
    }
    if (rc == 0) rc = group_snapshot(c, g, &sub);
    if (rc == 0)
        rc = opt->key_indexes ? lance_kix_builder_new_decl(&g->kb, ds, opt->key_indexes)
                              : lance_kix_builder_new(&g->kb, ds);
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.with_row_addr = true;
    so.with_row_id = c->stable != 0;
    if (rc == 0) rc = lance_scanner_open(&sc, sub, &so);
    while (rc == 0) {
        arrow_batch *b = NULL, *data = NULL;
        rc = lance_scanner_next(sc, &b);
        if (rc || !b) break;
        rc = arrow_batch_project(&data, b, proj, nf);
        const arrow_array *addr = b->columns[nf];
        const arrow_array *rid = c->stable ? b->columns[nf + 1] : NULL;
        if (rc == 0 && !opt->classify) {
            rc = append_rows(c, g, &o[0], data, addr, rid);
        } else if (rc == 0) {
            if ((size_t)b->num_rows > cls_cap) {
                core_free(cls);
                cls_cap = (size_t)b->num_rows;
                if (!(cls = core_malloc(cls_cap))) rc = core_err_nomem();
            }
            if (rc == 0) {
                memset(cls, LANCE_COMPACT_KEEP, (size_t)b->num_rows);
                rc = opt->classify(opt->classify_arg, data, cls);
            }
            for (int64_t i = 0; rc == 0 && i < b->num_rows; i++) {
                if (cls[i] > LANCE_COMPACT_APART)
                    rc = core_err(OG_E_INTERNAL, "compaction classifier returned %u", cls[i]);
                g->dropped += cls[i] == LANCE_COMPACT_DROP;
            }
            if (rc == 0) rc = append_class(c, g, &o[1], data, addr, rid, cls, LANCE_COMPACT_APART);
            if (rc == 0) rc = append_class(c, g, &o[0], data, addr, rid, cls, LANCE_COMPACT_KEEP);
        }
        arrow_batch_free(data);
        arrow_batch_free(b);
    }
    for (int k = 1; k >= 0; k--)
        if (rc == 0 && o[k].w && o[k].rows > 0) rc = finish_file(c, g, &o[k]);
    /* A segment over the new fragments (only when no row was set apart: the slots are the
     * kept stream's fragments in the order written). */
    if (rc == 0 && g->n_apart == 0 && lance_kix_builder_rows(g->kb) >= LANCE_KIX_MIN_ROWS) {
        size_t nn = g->n_new ? g->n_new : 1;
        uint64_t *rows = core_malloc(nn * 2 * sizeof *rows), *files = rows + nn;
        char key[STORE_KEY_MAX];
        if (!rows) rc = core_err_nomem();
        for (size_t k = 0; rc == 0 && k < g->n_new; k++) {
            rows[k] = g->nw[k]->physical_rows;
            files[k] = lance_kix_files_hash(g->nw[k]);
        }
        if (rc == 0) rc = lance_kix_builder_finish(g->kb, rows, files, g->n_new, &g->kix, key);
        if (rc == 0 && g->kix.n) rc = push_pending(c, key);
        core_free(rows);
    }
    lance_kix_builder_free(g->kb);
    g->kb = NULL;
    out_file_free(&o[0]);
    out_file_free(&o[1]);
    lance_scanner_free(sc);
    lance_dataset_free(sub);
    for (size_t k = 0; g->created && g->updated && k < g->n_old; k++) {
        core_free(g->created[k]);
        core_free(g->updated[k]);
    }
    core_free(g->created);
    core_free(g->updated);
    g->created = g->updated = NULL;
    core_free(proj);
    core_free(cls);
    if (rc == 0 && c->rep) {
        c->rep->deleted_rows_dropped += g->deleted;
        c->rep->rows_dropped += g->dropped;
    }
    return rc;
}

/* ---- committing ------------------------------------------------------------------------ */

/* ---- the list of fragments of set-apart rows (opt->apart_key) ---------------------------- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The ids listed under key in pb's table_metadata (unsorted, possibly stale). */
static int listed_ids(const Lance__Table__Manifest *pb, const char *key, uint64_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    const char *v = NULL;
    for (size_t i = 0; i < pb->n_table_metadata; i++)
        if (pb->table_metadata[i]->key && strcmp(pb->table_metadata[i]->key, key) == 0)
            v = pb->table_metadata[i]->value;
    if (!v || !*v) return 0;
    size_t cap = 1;
    for (const char *p = v; *p; p++)
        cap += *p == ',';
    uint64_t *out = core_malloc(cap * sizeof *out);
    if (!out) return core_err_nomem();
    size_t k = 0;
    for (const char *p = v; *p;) {
        char *end = NULL;
        unsigned long long x = strtoull(p, &end, 10);
        if (end == p || (*end && *end != ',') || k == cap) {
            core_free(out); /* not ours, or damaged: no list */
            return 0;
        }
        out[k++] = x;
        p = *end ? end + 1 : end;
    }
    *ids = out;
    *n = k;
    return 0;
}

static bool has_fragment(Lance__Table__DataFragment *const *frags, size_t n, uint64_t id)
{
    for (size_t i = 0; i < n; i++)
        if (frags[i]->id == id) return true;
    return false;
}

int lance_apart_fragments(const lance_dataset *ds, const char *key, uint64_t **ids, size_t *n)
{
    return lance_manifest_apart_fragments(ds->m->pb, key, ids, n);
}

int lance_manifest_apart_fragments(const Lance__Table__Manifest *pb, const char *key,
                                   uint64_t **ids, size_t *n)
{
    int rc = listed_ids(pb, key, ids, n);
    if (rc || !*ids) return rc;
    size_t k = 0;
    for (size_t i = 0; i < *n; i++)
        if (has_fragment(pb->fragments, pb->n_fragments, (*ids)[i])) (*ids)[k++] = (*ids)[i];
    *n = k;
    qsort(*ids, k, sizeof **ids, cmp_u64);
    return 0;
}

/* next's table_metadata with key listing the fragments of set-apart rows it has: those base
 * listed that are still there, and those groups [g0, g1) wrote (arena memory). */
static int record_apart(compactor *c, Lance__Table__Manifest *next,
                        const Lance__Table__Manifest *bp, size_t g0, size_t g1)
{
    const char *key = c->opt->apart_key;
    core_arena *a = &c->arena;
    uint64_t *old = NULL;
    size_t n_old = 0, n = 0;
    int rc = listed_ids(bp, key, &old, &n_old);
    if (rc) return rc;
    size_t cap = n_old;
    for (size_t i = g0; i < g1; i++)
        cap += c->g[i].n_apart;
    uint64_t *ids = core_arena_alloc(a, (cap ? cap : 1) * sizeof *ids);
    if (!ids) rc = core_err_nomem();
    for (size_t i = 0; rc == 0 && i < n_old; i++)
        if (has_fragment(next->fragments, next->n_fragments, old[i])) ids[n++] = old[i];
    core_free(old);
    for (size_t i = g0; rc == 0 && i < g1; i++)
        for (size_t k = 0; k < c->g[i].n_apart; k++)
            ids[n++] = c->g[i].nw[k]->id;
    if (rc) return rc;
    qsort(ids, n, sizeof *ids, cmp_u64);
    char *val = core_arena_alloc(a, n * 21 + 1);
    Lance__Table__Manifest__TableMetadataEntry **entries =
        core_arena_alloc(a, (bp->n_table_metadata + 1) * sizeof *entries);
    Lance__Table__Manifest__TableMetadataEntry *mine = core_arena_alloc(a, sizeof *mine);
    if (!val || !entries || !mine) return core_err_nomem();
    size_t len = 0;
    val[0] = 0;
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(val + len, 22, "%s%" PRIu64, i ? "," : "", ids[i]);
    size_t ne = 0;
    for (size_t i = 0; i < bp->n_table_metadata; i++)
        if (!bp->table_metadata[i]->key || strcmp(bp->table_metadata[i]->key, key) != 0)
            entries[ne++] = bp->table_metadata[i];
    lance__table__manifest__table_metadata_entry__init(mine);
    mine->key = (char *)key;
    mine->value = val;
    entries[ne++] = mine;
    next->n_table_metadata = ne;
    next->table_metadata = entries;
    return 0;
}

/* Commit groups [g0, g1) on top of base (the snapshot's manifest or the previous commit's).
 * On success *next_m is the new version's manifest (owned). */
static int commit_groups(compactor *c, const lance_manifest *base, size_t g0, size_t g1,
                         const char *uuid, lance_manifest **next_m)
{
    const lance_dataset *ds = c->ds;
    core_arena *a = &c->arena;
    const Lance__Table__Manifest *bp = base->pb;
    *next_m = NULL;
    size_t n_new = 0;
    for (size_t i = g0; i < g1; i++)
        n_new += c->g[i].n_new;
    Lance__Table__DataFragment **frags =
        core_arena_alloc(a, (bp->n_fragments + n_new + 1) * sizeof *frags);
    Lance__Table__Transaction__Rewrite__RewriteGroup *grp =
        core_arena_alloc(a, (g1 - g0) * sizeof *grp);
    Lance__Table__Transaction__Rewrite__RewriteGroup **grpp =
        core_arena_alloc(a, (g1 - g0) * sizeof *grpp);
    if (!frags || !grp || !grpp) return core_err_nomem();
    size_t n = 0, seen_old = 0;
    for (size_t i = 0; i < bp->n_fragments; i++) {
        Lance__Table__DataFragment *f = bp->fragments[i];
        long gi = group_of(c, f->id);
        if (gi < 0 || (size_t)gi < g0 || (size_t)gi >= g1) {
            frags[n++] = f;
            continue;
        }
        seen_old++;
        const cgroup *g = &c->g[gi];
        if (g->old[0]->id == f->id)
            for (size_t k = 0; k < g->n_new; k++)
                frags[n++] = g->nw[k];
    }
    size_t want_old = 0;
    for (size_t i = g0; i < g1; i++)
        want_old += c->g[i].n_old;
    if (seen_old != want_old)
        return core_err(OG_E_INTERNAL,
                        "table '%s': compaction base version %" PRIu64
                        " lacks fragments it planned on",
                        ds->root, bp->version);
    for (size_t i = g0; i < g1; i++) {
        Lance__Table__Transaction__Rewrite__RewriteGroup init =
            LANCE__TABLE__TRANSACTION__REWRITE__REWRITE_GROUP__INIT;
        grp[i - g0] = init;
        grp[i - g0].n_old_fragments = c->g[i].n_old;
        grp[i - g0].old_fragments = (Lance__Table__DataFragment **)c->g[i].old;
        grp[i - g0].n_new_fragments = c->g[i].n_new;
        grp[i - g0].new_fragments = c->g[i].nw;
        grpp[i - g0] = &grp[i - g0];
    }

    lance_manifest_next next;
    lance_manifest_next_init(&next, bp, bp->version + 1);
    next.pb.n_fragments = n;
    next.pb.fragments = frags;
    if (c->next_frag_id > 0 &&
        (!bp->has_max_fragment_id || bp->max_fragment_id < c->next_frag_id - 1)) {
        next.pb.has_max_fragment_id = 1;
        next.pb.max_fragment_id = (uint32_t)(c->next_frag_id - 1);
    }
    lance_manifest_update_flags(&next.pb);
    {
        /* Key index segments: the base's that still cover a fragment, and the groups'. */
        uint64_t *ids = core_arena_alloc(a, (n_new ? n_new : 1) * sizeof *ids);
        lance_kix_staged *ks = core_arena_alloc(a, (g1 - g0) * sizeof *ks);
        if (!ids || !ks) return core_err_nomem();
        size_t ni = 0, nk = 0;
        for (size_t i = g0; i < g1; i++) {
            if (c->g[i].kix.n == c->g[i].n_new && c->g[i].n_new) {
                ks[nk] = c->g[i].kix;
                ks[nk++].first = ni;
            }
            for (size_t k = 0; k < c->g[i].n_new; k++)
                ids[ni++] = c->g[i].nw[k]->id;
        }
        int krc = c->opt->key_indexes ? lance_kix_declare_pb(a, &next.pb, c->opt->key_indexes) : 0;
        if (krc == 0) krc = lance_kix_next_metadata(a, &next.pb, bp, ks, nk, ids, ni);
        if (krc) return krc;
    }
    if (c->opt->apart_key && c->opt->classify) {
        int arc = record_apart(c, &next.pb, bp, g0, g1);
        if (arc) return arc;
    }

    Lance__Table__Transaction txn = LANCE__TABLE__TRANSACTION__INIT;
    Lance__Table__Transaction__Rewrite rw = LANCE__TABLE__TRANSACTION__REWRITE__INIT;
    Lance__Table__Transaction__Update up = LANCE__TABLE__TRANSACTION__UPDATE__INIT;
    txn.has_read_version = 1;
    txn.read_version = bp->version;
    txn.uuid = (char *)uuid;
    uint64_t dropped = 0;
    for (size_t i = g0; i < g1; i++)
        dropped += c->g[i].dropped;
    if (dropped == 0) {
        rw.n_groups = g1 - g0;
        rw.groups = grpp;
        txn.operation_case = LANCE__TABLE__TRANSACTION__OPERATION_REWRITE;
        txn.rewrite = &rw;
    } else {
        /* Rows were removed, so the rows changed: an Update that removes the old fragments
         * and adds the new ones (a Rewrite promises the same rows). */
        uint64_t *removed = core_arena_alloc(a, (want_old ? want_old : 1) * sizeof *removed);
        Lance__Table__DataFragment **added =
            core_arena_alloc(a, (n_new ? n_new : 1) * sizeof *added);
        if (!removed || !added) return core_err_nomem();
        size_t nr = 0, na = 0;
        for (size_t i = g0; i < g1; i++) {
            for (size_t k = 0; k < c->g[i].n_old; k++)
                removed[nr++] = c->g[i].old[k]->id;
            for (size_t k = 0; k < c->g[i].n_new; k++)
                added[na++] = c->g[i].nw[k];
        }
        up.n_removed_fragment_ids = nr;
        up.removed_fragment_ids = removed;
        up.n_new_fragments = na;
        up.new_fragments = added;
        txn.operation_case = LANCE__TABLE__TRANSACTION__OPERATION_UPDATE;
        txn.update = &up;
    }
    lance_commit_info ci;
    int rc = 0;
    /* On a branch: the directory must still be the incarnation the plan was built on. */
    if (bp->branch) rc = lance_branch_check_base(ds->s, ds->root, ds->naming, base);
    if (rc == 0)
        rc = lance_commit_pending_on(ds->s, ds->root, ds->naming, &next.pb, base, NULL, &txn,
                                     base->index, base->index_len, LANCE_COMMIT_KEEP_BYTES,
                                     c->pending, c->n_pending, &ci);
    if (rc) return rc; /* the pending files stay pending for a rebased attempt */
    c->n_pending = 0;
    lance_compact_report *rep = c->rep;
    rep->versions[rep->n_commits] = ci.version;
    memcpy(rep->uuids[rep->n_commits], ci.uuid, sizeof ci.uuid);
    rep->n_commits++;
    /* The new version's manifest from the bytes just published, without reading it back;
     * the fragments compaction left alone stay shared with the base. */
    rc =
        lance_manifest_decode_on(next_m, ci.manifest_bytes, ci.manifest_len, ci.manifest_key, base);
    core_free(ci.manifest_bytes);
    return rc;
}

/* The latest version, if every old fragment of the plan is there unchanged (same id, same
 * deletion file); then the new fragments take ids after the latest's. OG_E_CONFLICT if not. */
static int rebase_onto_latest(compactor *c, lance_manifest **out)
{
    const lance_dataset *ds = c->ds;
    *out = NULL;
    lance_naming naming;
    lance_manifest *m = NULL;
    int rc = lance_version_load_latest(ds->s, ds->root, LANCE_ACCESS_WRITE, &m, &naming);
    if (rc) return rc;
    const Lance__Table__Manifest *pb = m->pb;
    uint64_t max_id = pb->has_max_fragment_id ? pb->max_fragment_id : 0;
    for (size_t i = 0; i < pb->n_fragments; i++)
        if (pb->fragments[i]->id > max_id) max_id = pb->fragments[i]->id;
    size_t found = 0;
    for (size_t i = 0; i < pb->n_fragments; i++) {
        const Lance__Table__DataFragment *f = pb->fragments[i];
        long gi = group_of(c, f->id);
        if (gi < 0) continue;
        const cgroup *g = &c->g[gi];
        const Lance__Table__DataFragment *old = NULL;
        for (size_t k = 0; k < g->n_old && !old; k++)
            if (g->old[k]->id == f->id) old = g->old[k];
        int same_del = (!old->deletion_file && !f->deletion_file) ||
                       (old->deletion_file && f->deletion_file &&
                        old->deletion_file->id == f->deletion_file->id &&
                        old->deletion_file->read_version == f->deletion_file->read_version);
        int same_files = old->n_files == f->n_files; /* an added column adds a file */
        for (size_t k = 0; same_files && k < f->n_files; k++)
            same_files = strcmp(old->files[k]->path, f->files[k]->path) == 0;
        if (!same_del || !same_files || old->physical_rows != f->physical_rows) break;
        found++;
    }
    /* A schema change or an index since the plan: the merged files would not match. */
    if (pb->n_fields != ds->m->pb->n_fields || m->index_len != ds->m->index_len) found = SIZE_MAX;
    /* A classifier decided on the whole snapshot (a row is dropped because another fragment
     * holds a newer one): only appends since may be rebased over, so every fragment of the
     * snapshot must still be there with the same deletions. */
    for (size_t i = 0; c->opt->classify && found != SIZE_MAX && i < ds->m->pb->n_fragments; i++) {
        const Lance__Table__DataFragment *o = ds->m->pb->fragments[i];
        const Lance__Table__DataFragment *f = NULL;
        for (size_t k = 0; k < pb->n_fragments && !f; k++)
            if (pb->fragments[k]->id == o->id) f = pb->fragments[k];
        bool same = f && o->physical_rows == f->physical_rows &&
                    (!o->deletion_file) == (!f->deletion_file) &&
                    (!o->deletion_file ||
                     (o->deletion_file->id == f->deletion_file->id &&
                      o->deletion_file->read_version == f->deletion_file->read_version));
        if (!same) found = SIZE_MAX;
    }
    if (found != c->n_by_id) {
        uint64_t v = pb->version;
        lance_manifest_free(m);
        core_err(OG_E_CONFLICT,
                 "table '%s': version %" PRIu64 " changed fragments the "
                 "compaction rewrites",
                 ds->root, v);
        core_err_detail(CORE_ERR_OBJECT, ds->root);
        return OG_E_CONFLICT;
    }
    uint64_t next = max_id + 1;
    for (size_t i = 0; i < c->n_g; i++)
        for (size_t k = 0; k < c->g[i].n_new; k++)
            c->g[i].nw[k]->id = next++;
    c->next_frag_id = next;
    *out = m;
    return 0;
}

/* A snapshot of manifest m (which it shares). */
static int snapshot_of(const lance_dataset *ds, const lance_manifest *m, lance_dataset **out)
{
    return lance_dataset_from_manifest(out, ds->s, ds->root, ds->naming, lance_manifest_share(m));
}

static void final_stats(lance_compact_report *rep, const Lance__Table__Manifest *pb)
{
    rep->fragments_after = pb->n_fragments;
    rep->files_after = 0;
    for (size_t i = 0; i < pb->n_fragments; i++)
        rep->files_after += pb->fragments[i]->n_files;
}

/* Validate the options and set up a compactor over ds (nothing planned yet). */
static int compactor_init(compactor *c, const lance_dataset *ds, const lance_compact_options *opt,
                          lance_compact_report *rep)
{
    int rc = 0;
    if (opt->version != 1)
        return core_err(OG_E_BAD_REQUEST, "lance_compact_options version %d is not 1",
                        opt->version);
    if (!(opt->materialize_deletions_threshold >= 0.0 &&
          opt->materialize_deletions_threshold <= 1.0))
        return core_err(OG_E_BAD_REQUEST, "materialize_deletions_threshold %g is not in [0, 1]",
                        opt->materialize_deletions_threshold);
    if (opt->uuid && strlen(opt->uuid) != LANCE_UUID_LEN)
        return core_err(OG_E_BAD_REQUEST, "transaction uuid '%s' is not a hyphenated uuid",
                        opt->uuid);
    if (opt->tier_factor == 1)
        return core_err(OG_E_BAD_REQUEST, "tier_factor 1 would never merge: use 0 (off) or >= 2");
    if (opt->key_indexes && (rc = lance_kix_decl_check(opt->key_indexes)) != 0) return rc;
    uint64_t target = opt->target_rows_per_fragment ? opt->target_rows_per_fragment
                                                    : LANCE_COMPACT_DEFAULT_TARGET_ROWS;
    if (target > UINT32_MAX)
        return core_err(OG_E_BAD_REQUEST,
                        "target_rows_per_fragment %" PRIu64
                        " exceeds a fragment's row offsets (2^32 - 1)",
                        target);
    const Lance__Table__Manifest *pb = ds->m->pb;
    rc = lance_manifest_check(pb, LANCE_ACCESS_WRITE, ds->root);
    if (rc) return rc;
    rep->read_version = pb->version;
    rep->fragments_before = pb->n_fragments;

    memset(c, 0, sizeof *c);
    c->ds = ds;
    c->decl_changed =
        opt->key_indexes && strcmp(opt->key_indexes, lance_kix_decl_text(ds->m->pb)) != 0;
    c->opt = opt;
    c->target = target;
    c->stable = (pb->writer_feature_flags & LANCE_FLAG_STABLE_ROW_IDS) != 0;
    c->rep = rep;
    core_arena_init(&c->arena, 16384);
    uint64_t max_id = pb->has_max_fragment_id ? pb->max_fragment_id : 0;
    int any = pb->has_max_fragment_id;
    for (size_t i = 0; i < pb->n_fragments; i++)
        if (!any || pb->fragments[i]->id > max_id) max_id = pb->fragments[i]->id, any = 1;
    c->next_frag_id = any ? max_id + 1 : 0;
    /* (last: nothing after it can fail and leave the list behind) */
    if (opt->key_indexes && !c->decl_changed)
        return lance_kix_healthy(ds, &c->healthy, &c->n_healthy);
    return 0;
}

/* Commit groups [g0, g1) on *cur (NULL: the snapshot's manifest), rebasing as the options
 * allow; *cur becomes the new version's manifest. */
static int commit_chunk(compactor *c, lance_manifest **cur, size_t g0, size_t g1)
{
    const lance_compact_options *opt = c->opt;
    const lance_dataset *ds = c->ds;
    char uuid[LANCE_UUID_LEN + 1];
    int rc = 0;
    if (g0 == 0 && opt->uuid)
        memcpy(uuid, opt->uuid, sizeof uuid);
    else
        rc = lance_uuid_new(uuid);
    lance_manifest *nm = NULL;
    if (rc == 0) rc = commit_groups(c, *cur ? *cur : ds->m, g0, g1, uuid, &nm);
    for (unsigned r = 0; rc == OG_E_CONFLICT && r < opt->rebase_attempts && g0 == 0 &&
                         g1 == c->n_g && !ds->m->pb->branch;
         r++) {
        lance_manifest *latest = NULL;
        og_error_clear();
        rc = rebase_onto_latest(c, &latest);
        if (rc == 0) rc = commit_groups(c, latest, g0, g1, uuid, &nm);
        lance_manifest_free(*cur);
        *cur = latest; /* the base of the attempt, or of the next one */
    }
    if (nm) {
        lance_manifest_free(*cur);
        *cur = nm;
    }
    for (size_t i = g0; rc == 0 && i < g1; i++) {
        c->rep->fragments_removed += c->g[i].n_old;
        c->rep->fragments_added += c->g[i].n_new;
    }
    return rc;
}

/* The report's "after" figures, and the snapshot after the last commit (out may be NULL). */
static int finish(compactor *c, const lance_manifest *cur, int rc, lance_dataset **out)
{
    const lance_dataset *ds = c->ds;
    lance_compact_report *rep = c->rep;
    const lance_manifest *fin = cur ? cur : ds->m;
    final_stats(rep, fin->pb);
    rep->rows_after = 0;
    for (size_t i = 0; rc == 0 && i < fin->pb->n_fragments; i++) {
        uint64_t del = 0;
        rc = frag_deleted(ds, fin->pb->fragments[i], &del);
        rep->rows_after += fin->pb->fragments[i]->physical_rows - del;
    }
    if (rc == 0 && out) rc = snapshot_of(ds, fin, out);
    return rc;
}

static void compactor_free(compactor *c)
{
    groups_free(c);
    core_free(c->by_id);
    core_free(c->pending);
    core_free(c->healthy);
    core_arena_free(&c->arena);
}

int lance_compact(lance_dataset **out, const lance_dataset *ds, const lance_compact_options *opt,
                  lance_compact_report *rep)
{
    if (out) *out = NULL;
    lance_compact_report local;
    if (!rep) rep = &local;
    memset(rep, 0, sizeof *rep);
    lance_compact_options def = LANCE_COMPACT_OPTIONS_INIT;
    if (!opt) opt = &def;
    compactor c;
    int rc = compactor_init(&c, ds, opt, rep);
    if (rc) return rc;
    rc = plan(&c);
    rep->groups = c.n_g;
    lance_manifest *cur = NULL; /* the last commit's manifest (NULL: ds's) */
    size_t per = opt->max_groups_per_commit ? opt->max_groups_per_commit : c.n_g;
    for (size_t g0 = 0; rc == 0 && g0 < c.n_g;) {
        size_t g1 = g0 + per > c.n_g ? c.n_g : g0 + per;
        if (rep->n_commits == LANCE_COMPACT_MAX_COMMITS - 1) g1 = c.n_g;
        for (size_t i = g0; rc == 0 && i < g1; i++)
            rc = write_group(&c, &c.g[i]);
        if (rc == 0) rc = commit_chunk(&c, &cur, g0, g1);
        g0 = g1;
    }
    rc = finish(&c, cur, rc, out);
    lance_manifest_free(cur);
    compactor_free(&c);
    return rc;
}

/* ---- staged compaction ------------------------------------------------------------------ */

struct lance_compact_plan {
    lance_dataset *ds; /* the snapshot planned on (owned) */
    lance_compact_options opt;
    char *key_indexes; /* opt.key_indexes, owned (the caller's may not live on) */
    lance_compact_report rep;
    compactor c;
    int committed;
};

int lance_compact_stage(lance_compact_plan **out, const lance_dataset *ds,
                        const lance_compact_options *opt)
{
    *out = NULL;
    lance_compact_options def = LANCE_COMPACT_OPTIONS_INIT;
    if (!opt) opt = &def;
    if (opt->max_groups_per_commit)
        return core_err(OG_E_BAD_REQUEST, "a staged compaction makes one commit: "
                                          "max_groups_per_commit must be 0");
    lance_compact_plan *p = core_calloc(1, sizeof *p);
    if (!p) return core_err_nomem();
    p->opt = *opt;
    int rc = 0;
    if (opt->key_indexes) {
        if (!(p->key_indexes = core_strdup(opt->key_indexes))) rc = core_err_nomem();
        p->opt.key_indexes = p->key_indexes;
    }
    if (rc == 0) rc = snapshot_of(ds, ds->m, &p->ds);
    if (rc == 0) rc = compactor_init(&p->c, p->ds, &p->opt, &p->rep);
    if (rc) {
        lance_dataset_free(p->ds);
        core_free(p->key_indexes);
        core_free(p);
        return rc;
    }
    rc = plan(&p->c);
    p->rep.groups = p->c.n_g;
    for (size_t i = 0; rc == 0 && i < p->c.n_g; i++)
        rc = write_group(&p->c, &p->c.g[i]);
    if (rc) {
        lance_compact_plan_discard(p);
        return rc;
    }
    *out = p;
    return 0;
}

size_t lance_compact_plan_groups(const lance_compact_plan *p)
{
    return p ? p->c.n_g : 0;
}

int lance_compact_plan_commit(lance_compact_plan *p, lance_dataset **out, lance_compact_report *rep)
{
    if (out) *out = NULL;
    if (p->committed)
        return core_err(OG_E_BAD_REQUEST, "lance_compact_plan_commit: already committed");
    p->committed = 1;
    lance_manifest *cur = NULL;
    int rc = p->c.n_g ? commit_chunk(&p->c, &cur, 0, p->c.n_g) : 0;
    rc = finish(&p->c, cur, rc, out);
    lance_manifest_free(cur);
    if (rep) *rep = p->rep;
    return rc;
}

/* Whether key is one of the plan's own files (under its table), not a key a caller asked to
 * make durable with them (lance_compact_plan_also_durable). */
static bool plan_owns(const lance_compact_plan *p, const char *key)
{
    size_t n = strlen(p->ds->root);
    return strncmp(key, p->ds->root, n) == 0 && key[n] == '/';
}

int lance_compact_plan_files(const lance_compact_plan *p, int (*fn)(void *arg, const char *key),
                             void *arg)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < p->c.n_pending; i++)
        if (plan_owns(p, p->c.pending[i])) rc = fn(arg, p->c.pending[i]);
    return rc;
}

void lance_compact_plan_discard(lance_compact_plan *p)
{
    if (!p) return;
    for (size_t i = 0; !p->committed && i < p->c.n_pending; i++)
        /* Best effort: a file left behind is an orphan that cleanup reclaims after its grace. */
        if (plan_owns(p, p->c.pending[i]) &&
            store_delete(p->ds->s, p->c.pending[i], STORE_F_NOSYNC) != 0)
            og_error_clear();
    lance_compact_plan_free(p);
}

int lance_compact_plan_also_durable(lance_compact_plan *p, const char *key)
{
    return push_pending(&p->c, key);
}

void lance_compact_plan_free(lance_compact_plan *p)
{
    if (!p) return;
    compactor_free(&p->c);
    lance_dataset_free(p->ds);
    core_free(p->key_indexes);
    core_free(p);
}

int lance_compact_due(const lance_dataset *ds, const lance_compact_options *opt, bool *due)
{
    *due = false;
    lance_compact_options def = LANCE_COMPACT_OPTIONS_INIT;
    if (!opt) opt = &def;
    lance_compact_report rep;
    memset(&rep, 0, sizeof rep);
    compactor c;
    int rc = compactor_init(&c, ds, opt, &rep);
    if (rc) return rc;
    rc = plan(&c);
    *due = rc == 0 && c.n_g > 0;
    groups_free(&c);
    core_free(c.by_id);
    core_arena_free(&c.arena);
    return rc;
}
