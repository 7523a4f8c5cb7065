/* Staged writes on a dataset snapshot and their commit at exactly read_version + 1.
 * Staging writes data files (one per new fragment, bounded rows) and deletion files; nothing
 * refers to them until the commit publishes the next manifest, so an abandoned stage is
 * invisible and its files are reclaimable. Row ids and fragment ids are assigned at commit,
 * from the base manifest; updated rows keep their row ids and creation versions. */
#include "lance/dataset.h"
#include "lance/branch.h"
#include "core/alloc.h"
#include "core/arena.h"
#include "core/error.h"
#include "lance/deletion.h"
#include "lance/file2.h"
#include "lance/fragment.h"
#include "lance/keyindex.h"
#include "lance/rowids.h"
#include "lance/txn.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum st_kind { ST_APPEND, ST_OVERWRITE, ST_DELETE, ST_UPDATE } st_kind;

typedef struct new_frag {
    Lance__Table__DataFile *file;
    uint64_t rows;
    uint64_t *preset_ids; /* rows keep these row ids (updates), or NULL: assign new ones */
    uint64_t *created_at; /* their creation versions, with preset_ids */
} new_frag;

typedef struct upd_frag {
    const Lance__Table__DataFragment *base;
    roaring_bitmap_t *deleted; /* the fragment's full deletion set after this operation */
    uint64_t newly_deleted;
    int removed; /* every row is deleted: the fragment goes */
    Lance__Table__DeletionFile *df;
} upd_frag;

struct lance_staged {
    const lance_dataset *ds;
    store *s; /* ds's store, for discarding: ds may be gone by then (it is borrowed) */
    st_kind kind;
    char uuid[LANCE_UUID_LEN + 1];
    uint64_t max_rows;
    bool txn_file; /* lance_write_options.txn_file */
    bool chain;    /* lance_write_options.chain */
    core_arena arena;
    new_frag *nf;
    size_t n_nf, cap_nf;
    upd_frag *uf;
    size_t n_uf, cap_uf;
    Lance__File__Field **fields; /* overwrite: the new schema's fields */
    size_t n_fields;
    arrow_schema ow_schema;
    int32_t *ow_ids;
    size_t n_ow_ids;
    uint64_t rows_added, rows_deleted;
    size_t files_written;
    /* Data files written unsynced; the commit makes them durable in one batch (with a .txn
     * file if asked for) before the manifest names them. */
    const char **pending;
    size_t n_pending, cap_pending;
    /* Key index segments over the new fragments (keyindex.h), listed at commit: one per
     * write_rows call, so a stage fed in chunks (lance_stage_add_rows) keeps an index over
     * each chunk's fragments up to this many. */
    lance_kix_staged kix[64];
    size_t n_kix;
    /* Every file this stage wrote itself (data, deletion, key index), for
     * lance_staged_discard and lance_staged_files; the keys live in the arena. */
    const char **owned;
    size_t n_owned, cap_owned;
    bool commit_tried; /* a commit was attempted: its files may be named by a version */
    /* An upsert fed in chunks (lance_stage_upsert): the key column, and per fragment of the
     * read version the rows its chunks replaced, turned into deletion files only at
     * lance_stage_upsert_finish (one deletion file per fragment, whatever the chunks). */
    bool upsert;
    size_t upsert_key;
    struct pend_del {
        uint64_t frag;
        roaring_bitmap_t *rows;
    } * pd;
    size_t n_pd, cap_pd;
};

void lance_staged_free(lance_staged *st)
{
    if (!st) return;
    for (size_t i = 0; i < st->n_nf; i++) {
        core_free(st->nf[i].preset_ids);
        core_free(st->nf[i].created_at);
    }
    core_free(st->nf);
    for (size_t i = 0; i < st->n_uf; i++)
        if (st->uf[i].deleted) roaring_bitmap_free(st->uf[i].deleted);
    core_free(st->uf);
    for (size_t i = 0; i < st->n_pd; i++)
        roaring_bitmap_free(st->pd[i].rows);
    core_free(st->pd);
    lance_fields_free(st->fields, st->n_fields);
    arrow_schema_clear(&st->ow_schema);
    core_free(st->ow_ids);
    core_free(st->pending);
    core_free(st->owned);
    core_arena_free(&st->arena);
    core_free(st);
}

void lance_staged_discard(lance_staged *st)
{
    if (!st) return;
    for (size_t i = 0; !st->commit_tried && i < st->n_owned; i++)
        /* Best effort: a file left behind is an orphan that cleanup reclaims after its grace. */
        if (store_delete(st->s, st->owned[i], STORE_F_NOSYNC) != 0) og_error_clear();
    lance_staged_free(st);
}

int lance_staged_files(const lance_staged *st, int (*fn)(void *arg, const char *key), void *arg)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < st->n_owned; i++)
        rc = fn(arg, st->owned[i]);
    return rc;
}

static int staged_new(lance_staged **out, const lance_dataset *ds, st_kind kind,
                      const lance_write_options *opt)
{
    *out = NULL;
    lance_write_options def = LANCE_WRITE_OPTIONS_INIT;
    if (!opt) opt = &def;
    if (opt->version != 1)
        return core_err(OG_E_BAD_REQUEST, "lance_write_options version %d is not 1", opt->version);
    lance_staged *st = core_calloc(1, sizeof *st);
    if (!st) return core_err_nomem();
    st->ds = ds;
    st->s = ds->s;
    st->kind = kind;
    st->max_rows =
        opt->max_rows_per_file ? opt->max_rows_per_file : LANCE_DEFAULT_MAX_ROWS_PER_FILE;
    st->txn_file = opt->txn_file;
    st->chain = opt->chain;
    core_arena_init(&st->arena, 8192);
    arrow_schema_init(&st->ow_schema);
    int rc = 0;
    if (opt->uuid) {
        if (strlen(opt->uuid) != LANCE_UUID_LEN)
            rc = core_err(OG_E_BAD_REQUEST, "transaction uuid '%s' is not a hyphenated uuid",
                          opt->uuid);
        else
            memcpy(st->uuid, opt->uuid, LANCE_UUID_LEN + 1);
    } else {
        rc = lance_uuid_new(st->uuid);
    }
    if (rc) {
        lance_staged_free(st);
        return rc;
    }
    *out = st;
    return 0;
}

void lance_staged_get_info(const lance_staged *st, lance_staged_info *out)
{
    out->uuid = st->uuid;
    out->read_version = lance_dataset_version(st->ds);
    out->naming = st->ds->naming;
    out->rows_added = st->rows_added;
    out->rows_deleted = st->rows_deleted;
    out->files_written = st->files_written;
    out->noop = st->kind != ST_OVERWRITE && st->n_nf == 0 && st->n_uf == 0;
}

/* ---- data files ------------------------------------------------------------------------ */

static int push_new_frag(lance_staged *st, Lance__Table__DataFile *file, uint64_t rows,
                         const uint64_t *ids, const uint64_t *created)
{
    if (st->n_nf == st->cap_nf) {
        size_t cap = st->cap_nf ? st->cap_nf * 2 : 4;
        new_frag *p = core_realloc(st->nf, cap * sizeof *p);
        if (!p) return core_err_nomem();
        st->nf = p;
        st->cap_nf = cap;
    }
    new_frag *f = &st->nf[st->n_nf];
    memset(f, 0, sizeof *f);
    f->file = file;
    f->rows = rows;
    if (ids) {
        f->preset_ids = core_malloc(rows * sizeof *ids);
        f->created_at = core_malloc(rows * sizeof *created);
        if (!f->preset_ids || !f->created_at) {
            core_free(f->preset_ids);
            core_free(f->created_at);
            return core_err_nomem();
        }
        memcpy(f->preset_ids, ids, rows * sizeof *ids);
        memcpy(f->created_at, created, rows * sizeof *created);
    }
    st->n_nf++;
    st->rows_added += rows;
    return 0;
}

/* Finish one data file and record it as a new fragment. */

/* A key the commit makes durable before it links the manifest (copied). */
static int push_pending(lance_staged *st, const char *key)
{
    if (st->n_pending == st->cap_pending) {
        size_t cap = st->cap_pending ? st->cap_pending * 2 : 4;
        const char **p = core_realloc(st->pending, cap * sizeof *p);
        if (!p) return core_err_nomem();
        st->pending = p;
        st->cap_pending = cap;
    }
    st->pending[st->n_pending] = core_arena_strdup(&st->arena, key);
    if (!st->pending[st->n_pending]) return core_err_nomem();
    st->n_pending++;
    return 0;
}

/* A file the stage wrote itself (copied). */
static int push_owned(lance_staged *st, const char *key)
{
    if (st->n_owned == st->cap_owned) {
        size_t cap = st->cap_owned ? st->cap_owned * 2 : 4;
        const char **p = core_realloc(st->owned, cap * sizeof *p);
        if (!p) return core_err_nomem();
        st->owned = p;
        st->cap_owned = cap;
    }
    st->owned[st->n_owned] = core_arena_strdup(&st->arena, key);
    if (!st->owned[st->n_owned]) return core_err_nomem();
    st->n_owned++;
    return 0;
}

int lance_staged_also_durable(lance_staged *st, const char *key)
{
    return push_pending(st, key);
}

static int finish_file(lance_staged *st, lance_file2_writer *w, const char *name, size_t n_ids,
                       const uint64_t *ids, const uint64_t *created)
{
    const lance_dataset *ds = st->ds;
    char key[STORE_KEY_MAX];
    int rc = lance_key(key, ds->root, "data/", name);
    lance_file2_info info = {0};
    if (rc == 0) rc = lance_file2_writer_finish(w, ds->s, key, &info);
    if (rc == 0) rc = push_owned(st, key);
    if (rc == 0) st->files_written++;
    if (rc == 0) rc = push_pending(st, key);
    if (rc) {
        lance_file2_info_clear(&info);
        return rc;
    }
    const int32_t *fid = st->kind == ST_OVERWRITE ? st->ow_ids : ds->field_ids;
    Lance__Table__DataFile *df;
    rc = lance_data_file_new(&df, &st->arena, name, fid, n_ids, info.size, info.xxh3);
    if (rc == 0) rc = lance_data_file_blocks(df, &st->arena, &info);
    lance_file2_info_clear(&info);
    if (rc) return rc;
    return push_new_frag(st, df, info.rows, ids, created);
}

/* The key index segment over a write's new fragments, built from the input batches (all
 * known before the first file is written: row g lands in new fragment g / max_rows at offset
 * g % max_rows, and the files' names are drawn up front). */
typedef struct kix_job {
    const lance_dataset *ds;
    arrow_batch *const *b;
    size_t n;
    uint64_t max_rows;
    const uint64_t *slot_rows, *slot_files;
    size_t n_slots;
    lance_kix_staged out;
    char key[STORE_KEY_MAX];
    int rc;
    char msg[512];
} kix_job;

static void kix_job_run(kix_job *j)
{
    lance_kix_builder *kb = NULL;
    int rc = lance_kix_builder_new(&kb, j->ds);
    lance_kix_builder_borrow(kb); /* the batches outlive the job */
    uint64_t all = 0;
    for (size_t i = 0; i < j->n; i++)
        all += (uint64_t)j->b[i]->num_rows;
    if (rc == 0) rc = lance_kix_builder_reserve(kb, all);
    uint64_t g = 0;
    for (size_t i = 0; rc == 0 && kb && i < j->n; i++) {
        int64_t off = 0;
        while (rc == 0 && off < j->b[i]->num_rows) {
            uint64_t slot = g / j->max_rows, in = g % j->max_rows;
            uint64_t take = j->max_rows - in;
            if (take > (uint64_t)(j->b[i]->num_rows - off))
                take = (uint64_t)(j->b[i]->num_rows - off);
            rc = lance_kix_builder_add(kb, j->b[i], off, (int64_t)take, (uint32_t)slot,
                                       (uint32_t)in);
            off += (int64_t)take;
            g += take;
        }
    }
    if (rc == 0)
        rc = lance_kix_builder_finish(kb, j->slot_rows, j->slot_files, j->n_slots, &j->out, j->key);
    if (rc) snprintf(j->msg, sizeof j->msg, "%s", og_error_last()->message);
    j->rc = rc;
    lance_kix_builder_free(kb);
}

/* Write the rows of batches b[0..n) into data files of at most st->max_rows rows each.
 * ids/created (optional) run parallel to the concatenated rows. The declared key indexes get
 * a segment over the new fragments (64+ rows), built from the batches once the files are
 * written (the segment file is unsynced; the commit syncs it with the data files). */
static int write_rows(lance_staged *st, const arrow_schema *schema, arrow_batch *const *b, size_t n,
                      const uint64_t *ids, const uint64_t *created)
{
    const int32_t *fid = st->kind == ST_OVERWRITE ? st->ow_ids : st->ds->field_ids;
    size_t n_ids = st->kind == ST_OVERWRITE ? st->n_ow_ids : st->ds->n_field_ids;
    lance_file2_options fo = LANCE_FILE2_OPTIONS_INIT;
    fo.field_ids = fid;
    fo.n_field_ids = n_ids;
    fo.put_flags = STORE_F_NOSYNC; /* synced in one batch at commit */
    lance_file2_writer *w = NULL;
    uint64_t in_file = 0, done = 0, file_start = 0, total = 0;
    size_t first_nf = st->n_nf, file_no = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (!arrow_schema_equal(&b[i]->schema, schema)) {
            char want[128], got[128];
            snprintf(want, sizeof want, "%zu columns", schema->n_fields);
            snprintf(got, sizeof got, "%zu columns", b[i]->schema.n_fields);
            rc = core_err(OG_E_BAD_REQUEST,
                          "table '%s': batch %zu does not have the table's "
                          "schema (%s expected, %s given, or types/names differ)",
                          st->ds->root, i, want, got);
        }
        total += (uint64_t)b[i]->num_rows;
    }
    if (rc) return rc;
    /* The files' names up front, and what the segment needs to know of them. */
    size_t n_files = (size_t)((total + st->max_rows - 1) / st->max_rows);
    char(*names)[LANCE_DATA_FILE_NAME_LEN + 1] =
        core_malloc((n_files ? n_files : 1) * sizeof *names);
    uint64_t *slot_rows = core_malloc((n_files ? n_files : 1) * 2 * sizeof *slot_rows);
    uint64_t *slot_files = slot_rows ? slot_rows + (n_files ? n_files : 1) : NULL;
    if (!names || !slot_rows) rc = core_err_nomem();
    for (size_t k = 0; rc == 0 && k < n_files; k++) {
        rc = lance_data_file_name(names[k]);
        Lance__Table__DataFile df = LANCE__TABLE__DATA_FILE__INIT;
        Lance__Table__DataFile *dfp = &df;
        df.path = names[k];
        Lance__Table__DataFragment one = LANCE__TABLE__DATA_FRAGMENT__INIT;
        one.n_files = 1;
        one.files = &dfp;
        slot_rows[k] = k + 1 < n_files ? st->max_rows : total - st->max_rows * k;
        slot_files[k] = lance_kix_files_hash(&one);
    }
    /* Declared key indexes follow the rows (not when an overwrite changes the schema). */
    lance_kix_decl decls[LANCE_KIX_MAX_DECLS];
    size_t n_decls = 0;
    if (rc == 0 && total >= LANCE_KIX_MIN_ROWS && st->n_kix < sizeof st->kix / sizeof st->kix[0] &&
        arrow_schema_equal(schema, &st->ds->schema))
        rc = lance_kix_decls(st->ds, decls, &n_decls);
    kix_job job = {st->ds,         b,   n, st->max_rows, slot_rows, slot_files, n_files,
                   {{0}, 0, 0, 0}, {0}, 0, {0}};
    int want_index = rc == 0 && n_decls > 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        int64_t off = 0;
        while (rc == 0 && off < b[i]->num_rows) {
            if (!w) {
                rc = lance_file2_writer_new(&w, schema, &fo);
                if (rc) break;
                in_file = 0;
                file_start = done;
            }
            uint64_t room = st->max_rows - in_file;
            uint64_t take = (uint64_t)(b[i]->num_rows - off);
            if (take > room) take = room;
            rc = lance_file2_writer_write_rows(w, b[i], off, (int64_t)take);
            off += (int64_t)take;
            in_file += take;
            done += take;
            if (rc == 0 && in_file == st->max_rows) {
                rc = finish_file(st, w, names[file_no++], n_ids, ids ? ids + file_start : NULL,
                                 created ? created + file_start : NULL);
                lance_file2_writer_free(w);
                w = NULL;
            }
        }
    }
    if (rc == 0 && w && in_file > 0)
        rc = finish_file(st, w, names[file_no++], n_ids, ids ? ids + file_start : NULL,
                         created ? created + file_start : NULL);
    lance_file2_writer_free(w);
    /* The segment after the data files, not beside them: its trees are encoded on workers of
     * their own (keyindex.c), and building it while the files were encoded held both at once
     * (a 1 GB load peaked at 473-485 MB that way, 352-357 MB after) without finishing sooner
     * on two cores (the 100k/500k load took 0.91-0.98 times as long after). */
    if (want_index && rc == 0) kix_job_run(&job);
    if (rc == 0 && want_index && job.rc) rc = core_err(job.rc, "%s", job.msg);
    if (rc == 0 && want_index && job.out.n) {
        if (job.out.n != st->n_nf - first_nf)
            rc = core_err(OG_E_INTERNAL, "table '%s': key index over %zu fragments, %zu written",
                          st->ds->root, job.out.n, st->n_nf - first_nf);
        if (rc == 0) {
            job.out.first = first_nf;
            st->kix[st->n_kix++] = job.out;
            rc = push_owned(st, job.key);
            if (rc == 0) rc = push_pending(st, job.key);
        }
    }
    core_free(names);
    core_free(slot_rows);
    return rc;
}

/* ---- deletions ------------------------------------------------------------------------- */

static const Lance__Table__DataFragment *find_fragment(const lance_dataset *ds, uint64_t id)
{
    const Lance__Table__Manifest *pb = ds->m->pb;
    for (size_t i = 0; i < pb->n_fragments; i++)
        if (pb->fragments[i]->id == id) return pb->fragments[i];
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Delete the rows at these addresses (sorted here). Writes one deletion file per touched
 * fragment that keeps rows; a fragment losing its last row is removed instead. */
static int add_deletions(lance_staged *st, uint64_t *addrs, size_t n)
{
    const lance_dataset *ds = st->ds;
    qsort(addrs, n, sizeof *addrs, cmp_u64);
    size_t i = 0;
    int rc = 0;
    while (rc == 0 && i < n) {
        uint64_t fid = LANCE_ROW_ADDR_FRAG(addrs[i]);
        size_t j = i;
        while (j < n && LANCE_ROW_ADDR_FRAG(addrs[j]) == fid)
            j++;
        const Lance__Table__DataFragment *f = find_fragment(ds, fid);
        if (!f) {
            rc = core_err(OG_E_BAD_REQUEST, "table '%s' has no fragment %llu (row address %llu)",
                          ds->root, (unsigned long long)fid, (unsigned long long)addrs[i]);
            break;
        }
        roaring_bitmap_t *bm = NULL;
        if (f->deletion_file)
            rc = lance_dataset_deletion_load(ds, fid, f->deletion_file, &bm); /* base_id aware */
        else if (!(bm = roaring_bitmap_create()))
            rc = core_err_nomem();
        if (rc) break;
        uint64_t before = roaring_bitmap_get_cardinality(bm);
        for (size_t k = i; rc == 0 && k < j; k++) {
            uint32_t off = LANCE_ROW_ADDR_OFF(addrs[k]);
            if (off >= f->physical_rows)
                rc = core_err(OG_E_BAD_REQUEST,
                              "row address %llu is beyond fragment %llu's %llu rows",
                              (unsigned long long)addrs[k], (unsigned long long)fid,
                              (unsigned long long)f->physical_rows);
            else
                roaring_bitmap_add(bm, off);
        }
        uint64_t after = roaring_bitmap_get_cardinality(bm);
        if (rc || after == before) {
            roaring_bitmap_free(bm);
            i = j;
            continue;
        }
        if (st->n_uf == st->cap_uf) {
            size_t cap = st->cap_uf ? st->cap_uf * 2 : 4;
            upd_frag *p = core_realloc(st->uf, cap * sizeof *p);
            if (!p) {
                roaring_bitmap_free(bm);
                rc = core_err_nomem();
                break;
            }
            st->uf = p;
            st->cap_uf = cap;
        }
        upd_frag *u = &st->uf[st->n_uf++];
        memset(u, 0, sizeof *u);
        u->base = f;
        u->deleted = bm;
        u->newly_deleted = after - before;
        st->rows_deleted += u->newly_deleted;
        if (after >= f->physical_rows) {
            u->removed = 1;
        } else {
            u->df = core_arena_alloc(&st->arena, sizeof *u->df);
            if (!u->df) {
                rc = core_err_nomem();
                break;
            }
            lance__table__deletion_file__init(u->df);
            rc = lance_deletion_write(ds->s, ds->root, fid, lance_dataset_version(ds), bm, u->df);
            if (rc == 0) {
                char name[96], key[STORE_KEY_MAX];
                st->files_written++;
                rc = lance_deletion_file_name(name, sizeof name, fid, u->df->read_version,
                                              u->df->id, 1);
                if (rc == 0) rc = lance_key(key, ds->root, LANCE_DELETIONS_DIR, name);
                if (rc == 0) rc = push_owned(st, key);
            }
        }
        i = j;
    }
    return rc;
}

/* Addresses (and optionally row ids, creation versions and full rows) of the rows matching a
 * filter. */
typedef struct matches {
    uint64_t *addrs;
    uint64_t *ids;
    size_t n;
    arrow_batch *rows; /* all columns, when asked */
} matches;

static void matches_free(matches *m)
{
    core_free(m->addrs);
    core_free(m->ids);
    arrow_batch_free(m->rows);
    memset(m, 0, sizeof *m);
}

static int find_matches(const lance_dataset *ds, const lance_filter *filter, int full_rows,
                        matches *out)
{
    memset(out, 0, sizeof *out);
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.filter = filter;
    so.with_row_addr = true;
    so.with_row_id = lance_dataset_stable_row_ids(ds);
    const char *first = ds->schema.fields[0].name;
    if (!full_rows) {
        /* Read as little as possible: the filter's first column, or the first column. */
        if (filter && filter->n) first = filter->terms[0].column;
        so.columns = &first;
        so.n_columns = 1;
    }
    arrow_batch *b = NULL;
    int rc = lance_dataset_scan_all(&b, ds, &so);
    if (rc) return rc;
    size_t n = (size_t)b->num_rows;
    size_t ncols = b->n_columns;
    size_t addr_col = ncols - 1 - (so.with_row_id ? 1 : 0);
    out->addrs = core_malloc((n ? n : 1) * sizeof *out->addrs);
    out->ids = core_malloc((n ? n : 1) * sizeof *out->ids);
    if (!out->addrs || !out->ids) {
        arrow_batch_free(b);
        matches_free(out);
        return core_err_nomem();
    }
    for (size_t i = 0; i < n; i++) {
        out->addrs[i] = arrow_array_get_uint(b->columns[addr_col], (int64_t)i);
        out->ids[i] = so.with_row_id ? arrow_array_get_uint(b->columns[ncols - 1], (int64_t)i) : 0;
    }
    out->n = n;
    if (full_rows) {
        size_t *idx = core_malloc((ds->schema.n_fields ? ds->schema.n_fields : 1) * sizeof *idx);
        if (!idx) {
            arrow_batch_free(b);
            matches_free(out);
            return core_err_nomem();
        }
        for (size_t i = 0; i < ds->schema.n_fields; i++)
            idx[i] = i;
        rc = arrow_batch_project(&out->rows, b, idx, ds->schema.n_fields);
        core_free(idx);
    }
    arrow_batch_free(b);
    if (rc) matches_free(out);
    return rc;
}

/* Creation versions of rows, by row address (read from each fragment's sequence). Rows of a
 * fragment without a creation sequence get 0: unknown. */
static int creation_versions(const lance_dataset *ds, const uint64_t *addrs, size_t n,
                             uint64_t *out)
{
    uint64_t cached_frag = UINT64_MAX;
    uint64_t *vers = NULL;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        uint64_t fid = LANCE_ROW_ADDR_FRAG(addrs[i]);
        if (fid != cached_frag) {
            core_free(vers);
            vers = NULL;
            cached_frag = fid;
            const Lance__Table__DataFragment *f = find_fragment(ds, fid);
            if (f &&
                f->created_at_version_sequence_case ==
                    LANCE__TABLE__DATA_FRAGMENT__CREATED_AT_VERSION_SEQUENCE_INLINE_CREATED_AT_VERSIONS) {
                lance_version_seq seq = {0};
                rc = lance_version_seq_decode(&seq, f->inline_created_at_versions.data,
                                              f->inline_created_at_versions.len, ds->root);
                if (rc == 0) rc = lance_version_seq_expand(&seq, f->physical_rows, &vers);
                lance_version_seq_free(&seq);
            }
        }
        out[i] = vers ? vers[LANCE_ROW_ADDR_OFF(addrs[i])] : 0;
    }
    core_free(vers);
    return rc;
}

/* ---- staging entry points -------------------------------------------------------------- */

int lance_stage_append(lance_staged **out, const lance_dataset *ds, arrow_batch *const *b, size_t n,
                       const lance_write_options *opt)
{
    int rc = staged_new(out, ds, ST_APPEND, opt);
    if (rc) return rc;
    rc = write_rows(*out, &ds->schema, b, n, NULL, NULL);
    if (rc) {
        lance_staged_discard(*out);
        *out = NULL;
    }
    return rc;
}

int lance_stage_overwrite(lance_staged **out, const lance_dataset *ds, const arrow_schema *schema,
                          arrow_batch *const *b, size_t n, const lance_write_options *opt)
{
    int rc = staged_new(out, ds, ST_OVERWRITE, opt);
    if (rc) return rc;
    lance_staged *st = *out;
    if (!schema) schema = &ds->schema;
    if (arrow_schema_equal(schema, &ds->schema)) {
        /* Same schema: keep the field ids. */
        rc = lance_fields_from_arrow(&st->fields, &st->n_fields, schema, ds->field_ids,
                                     ds->n_field_ids);
    } else {
        rc = lance_fields_from_arrow(&st->fields, &st->n_fields, schema, NULL, 0);
    }
    if (rc == 0) rc = arrow_schema_copy(&st->ow_schema, schema);
    if (rc == 0) {
        st->n_ow_ids = st->n_fields;
        st->ow_ids = core_malloc((st->n_fields ? st->n_fields : 1) * sizeof *st->ow_ids);
        if (!st->ow_ids) rc = core_err_nomem();
        for (size_t i = 0; rc == 0 && i < st->n_fields; i++)
            st->ow_ids[i] = st->fields[i]->id;
    }
    if (rc == 0) rc = write_rows(st, &st->ow_schema, b, n, NULL, NULL);
    if (rc) {
        lance_staged_discard(st);
        *out = NULL;
    }
    return rc;
}

int lance_stage_add_rows(lance_staged *st, arrow_batch *const *b, size_t n)
{
    if (st->kind != ST_APPEND && st->kind != ST_OVERWRITE)
        return core_err(OG_E_BAD_REQUEST,
                        "table '%s': only an append or an overwrite stage takes "
                        "more rows",
                        st->ds->root);
    if (st->commit_tried)
        return core_err(OG_E_BAD_REQUEST, "table '%s': the stage was committed already",
                        st->ds->root);
    /* Files already written stay the stage's (owned): a discard still deletes them. */
    return write_rows(st, st->kind == ST_OVERWRITE ? &st->ow_schema : &st->ds->schema, b, n, NULL,
                      NULL);
}

int lance_stage_delete_rows(lance_staged **out, const lance_dataset *ds, const uint64_t *addrs,
                            size_t n, const lance_write_options *opt)
{
    int rc = staged_new(out, ds, ST_DELETE, opt);
    if (rc) return rc;
    uint64_t *copy = core_malloc((n ? n : 1) * sizeof *copy);
    if (!copy) rc = core_err_nomem();
    if (rc == 0) {
        if (n) memcpy(copy, addrs, n * sizeof *copy);
        rc = add_deletions(*out, copy, n);
    }
    core_free(copy);
    if (rc) {
        lance_staged_discard(*out);
        *out = NULL;
    }
    return rc;
}

int lance_stage_delete(lance_staged **out, const lance_dataset *ds, const lance_filter *filter,
                       const lance_write_options *opt)
{
    matches m;
    int rc = find_matches(ds, filter, 0, &m);
    if (rc) return rc;
    rc = staged_new(out, ds, ST_DELETE, opt);
    if (rc == 0) rc = add_deletions(*out, m.addrs, m.n);
    matches_free(&m);
    if (rc) {
        lance_staged_discard(*out);
        *out = NULL;
    }
    return rc;
}

/* A column of n copies of a scalar, of the given type. */
static int constant_array(arrow_array **out, const arrow_type *t, const arrow_scalar *v, int64_t n)
{
    if (v->is_null) return arrow_array_new_null(out, t, n);
    arrow_builder *b = NULL;
    int rc = arrow_builder_new(&b, t);
    if (rc) return rc;
    rc = arrow_builder_reserve(b, n);
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        switch (t->id) {
        case ARROW_BOOL:
            rc = arrow_builder_append_bool(b, v->b);
            break;
        case ARROW_INT32:
        case ARROW_INT64:
        case ARROW_DATE32:
        case ARROW_DATE64:
        case ARROW_TIMESTAMP:
            rc = v->kind == ARROW_UINT64 ? arrow_builder_append_int(b, (int64_t)v->u)
                                         : arrow_builder_append_int(b, v->i);
            break;
        case ARROW_UINT32:
        case ARROW_UINT64:
            rc = v->kind == ARROW_INT64 ? arrow_builder_append_int(b, v->i)
                                        : arrow_builder_append_uint(b, v->u);
            break;
        case ARROW_FLOAT32:
        case ARROW_FLOAT64:
            rc = arrow_builder_append_double(b, v->d);
            break;
        case ARROW_UTF8:
        case ARROW_LARGE_UTF8:
        case ARROW_BINARY:
        case ARROW_LARGE_BINARY:
            rc = arrow_builder_append_bytes(b, v->bytes, v->n_bytes);
            break;
        default:
            rc = core_err(OG_E_BAD_REQUEST, "cannot set a nested column to a scalar");
        }
    }
    if (rc == 0) rc = arrow_builder_finish(b, out);
    arrow_builder_free(b);
    return rc;
}

/* Stage: delete the matched rows and write `rows` (the replacement rows, in the same order)
 * as new fragments that keep the matched rows' ids and creation versions. The rows at
 * also[0..n_also) are deleted with them: one deletion file per fragment takes both. */
static int stage_replace(lance_staged *st, matches *m, arrow_batch *rows, const uint64_t *also,
                         size_t n_also)
{
    uint64_t *created = core_malloc((m->n ? m->n : 1) * sizeof *created);
    if (!created) return core_err_nomem();
    int rc = creation_versions(st->ds, m->addrs, m->n, created);
    int stable = lance_dataset_stable_row_ids(st->ds);
    if (rc == 0)
        rc = write_rows(st, &st->ds->schema, &rows, 1, stable ? m->ids : NULL,
                        stable ? created : NULL);
    core_free(created);
    if (rc == 0 && !n_also) rc = add_deletions(st, m->addrs, m->n);
    if (rc == 0 && n_also) {
        uint64_t *all = core_malloc((m->n + n_also) * sizeof *all);
        if (!all) return core_err_nomem();
        memcpy(all, m->addrs, m->n * sizeof *all);
        memcpy(all + m->n, also, n_also * sizeof *all);
        rc = add_deletions(st, all, m->n + n_also);
        core_free(all);
    }
    return rc;
}

int lance_stage_update(lance_staged **out, const lance_dataset *ds, const lance_filter *filter,
                       const char *const *set_columns, const arrow_scalar *values, size_t n_set,
                       const lance_write_options *opt)
{
    *out = NULL;
    size_t *setidx = core_malloc((n_set ? n_set : 1) * sizeof *setidx);
    if (!setidx) return core_err_nomem();
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n_set; i++)
        rc = lance_dataset_column(ds, set_columns[i], &setidx[i]);
    matches m = {0};
    if (rc == 0) rc = find_matches(ds, filter, 1, &m);
    if (rc == 0) rc = staged_new(out, ds, ST_UPDATE, opt);
    arrow_batch *rows = NULL;
    if (rc == 0 && m.n > 0) {
        size_t nc = ds->schema.n_fields;
        arrow_array **cols = core_calloc(nc, sizeof *cols);
        if (!cols) rc = core_err_nomem();
        for (size_t c = 0; rc == 0 && c < nc; c++) {
            size_t k = 0;
            while (k < n_set && setidx[k] != c)
                k++;
            if (k < n_set) {
                if (values[k].is_null && !ds->schema.fields[c].nullable)
                    rc = core_err(OG_E_BAD_REQUEST, "column '%s' is not nullable",
                                  ds->schema.fields[c].name);
                else
                    rc = constant_array(&cols[c], &ds->schema.fields[c].type, &values[k],
                                        (int64_t)m.n);
            } else {
                cols[c] = arrow_array_ref(m.rows->columns[c]);
            }
        }
        if (rc == 0) rc = arrow_batch_new(&rows, &ds->schema, cols, nc);
        for (size_t c = 0; cols && c < nc; c++)
            arrow_array_free(cols[c]);
        core_free(cols);
        if (rc == 0) rc = stage_replace(*out, &m, rows, NULL, 0);
    }
    arrow_batch_free(rows);
    matches_free(&m);
    core_free(setidx);
    if (rc) {
        lance_staged_discard(*out);
        *out = NULL;
    }
    return rc;
}

/* ---- rows by key ----------------------------------------------------------------------- */

/* Rows of a table found by key: key values, row addresses, stable row ids (0 without). */
typedef struct table_keys {
    arrow_array *key;
    uint64_t *addr, *id;
    int64_t n;
} table_keys;

static void table_keys_free(table_keys *t)
{
    arrow_array_free(t->key);
    core_free(t->addr);
    core_free(t->id);
    memset(t, 0, sizeof *t);
}

/* Stable row ids of rows by address (each fragment's sequence decoded once). */
static int row_ids_at(const lance_dataset *ds, const uint64_t *addrs, size_t n, uint64_t *out)
{
    uint64_t cached = UINT64_MAX;
    uint64_t *ids = NULL;
    size_t n_ids = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        uint64_t fid = LANCE_ROW_ADDR_FRAG(addrs[i]), off = LANCE_ROW_ADDR_OFF(addrs[i]);
        if (fid != cached) {
            core_free(ids);
            ids = NULL;
            n_ids = 0;
            cached = fid;
            const Lance__Table__DataFragment *f = find_fragment(ds, fid);
            if (!f || f->row_id_sequence_case !=
                          LANCE__TABLE__DATA_FRAGMENT__ROW_ID_SEQUENCE_INLINE_ROW_IDS)
                return core_err(OG_E_UNSUPPORTED,
                                "table '%s' fragment %" PRIu64 ": row ids not stored inline",
                                ds->root, fid);
            lance_rowid_seq seq = {0};
            rc = lance_rowid_seq_decode(&seq, f->inline_row_ids.data, f->inline_row_ids.len,
                                        ds->root);
            if (rc == 0) rc = lance_rowid_seq_expand(&seq, &ids, &n_ids);
            lance_rowid_seq_free(&seq);
        }
        if (rc == 0 && off >= n_ids)
            rc = core_err(OG_E_CORRUPT,
                          "table '%s' fragment %" PRIu64 ": row %" PRIu64 " has no row id",
                          ds->root, fid, off);
        if (rc == 0) out[i] = ids[off];
    }
    core_free(ids);
    return rc;
}

typedef struct key_hits {
    int64_t *row; /* the input row whose key matched */
    uint64_t *addr;
    size_t n, cap;
} key_hits;

static int on_key_hit(void *arg, size_t key, uint64_t addr, const uint8_t *pay, size_t plen)
{
    key_hits *h = arg;
    (void)pay;
    (void)plen;
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 16;
        int64_t *r = core_realloc(h->row, nc * sizeof *r);
        if (r) h->row = r;
        uint64_t *a = core_realloc(h->addr, nc * sizeof *a);
        if (a) h->addr = a;
        if (!r || !a) return core_err_nomem();
        h->cap = nc;
    }
    h->row[h->n] = (int64_t)key;
    h->addr[h->n++] = addr;
    return 0;
}

typedef struct pos_ent {
    uint64_t pos, addr;
    int64_t row;
} pos_ent;

static int pos_cmp(const void *a, const void *b)
{
    uint64_t x = ((const pos_ent *)a)->pos, y = ((const pos_ent *)b)->pos;
    return x < y ? -1 : x > y;
}

/* Sort hits by scan position (fragment order in the manifest, then offset). */
static int key_hits_scan_order(const lance_dataset *ds, key_hits *h)
{
    if (h->n < 2) return 0;
    pos_ent *e = core_malloc(h->n * sizeof *e);
    if (!e) return core_err_nomem();
    for (size_t i = 0; i < h->n; i++)
        e[i] = (pos_ent){lance_dataset_scan_pos(ds, h->addr[i]), h->addr[i], h->row[i]};
    qsort(e, h->n, sizeof *e, pos_cmp);
    for (size_t i = 0; i < h->n; i++) {
        h->addr[i] = e[i].addr;
        h->row[i] = e[i].row;
    }
    core_free(e);
    return 0;
}

static int table_keys_find(table_keys *out, const lance_dataset *ds, const char *column,
                           const arrow_array *keys)
{
    memset(out, 0, sizeof *out);
    int stable = lance_dataset_stable_row_ids(ds);
    int rc = 0;
    if (arrow_type_is_binary_like(keys->type.id) && lance_kix_declared(ds, column, NULL) &&
        lance_dataset_physical_rows(ds) >= LANCE_KIX_LOOKUP_MIN_ROWS) {
        size_t n = (size_t)keys->length;
        const uint8_t **kp = core_malloc((n ? n : 1) * sizeof *kp);
        size_t *kl = core_malloc((n ? n : 1) * sizeof *kl);
        key_hits h = {0};
        rc = kp && kl ? 0 : core_err_nomem();
        size_t nk = 0;
        int64_t *orig = rc == 0 ? core_malloc((n ? n : 1) * sizeof *orig) : NULL;
        if (rc == 0 && !orig) rc = core_err_nomem();
        for (size_t i = 0; rc == 0 && i < n; i++) {
            if (!arrow_array_is_valid(keys, (int64_t)i)) continue;
            kp[nk] = arrow_array_get_bytes(keys, (int64_t)i, &kl[nk]);
            orig[nk++] = (int64_t)i;
        }
        if (rc == 0) rc = lance_kix_lookup(ds, column, NULL, kp, kl, nk, on_key_hit, &h, NULL);
        for (size_t i = 0; rc == 0 && i < h.n; i++)
            h.row[i] = orig[h.row[i]];
        /* in scan order, as a scan would have found them (the last of duplicate keys wins) */
        if (rc == 0) rc = key_hits_scan_order(ds, &h);
        out->n = (int64_t)h.n;
        out->addr = h.addr;
        h.addr = NULL;
        out->id = core_calloc(h.n ? h.n : 1, sizeof *out->id);
        if (rc == 0 && !out->id) rc = core_err_nomem();
        if (rc == 0 && stable) rc = row_ids_at(ds, out->addr, h.n, out->id);
        if (rc == 0) rc = arrow_take(&out->key, keys, h.row, h.n);
        core_free(h.row);
        core_free(h.addr);
        core_free(kp);
        core_free(kl);
        core_free(orig);
    } else {
        arrow_batch *b = NULL;
        lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
        so.columns = &column;
        so.n_columns = 1;
        so.with_row_addr = true;
        so.with_row_id = stable;
        rc = lance_dataset_scan_all(&b, ds, &so);
        if (rc == 0) {
            out->n = b->num_rows;
            out->key = arrow_array_ref(b->columns[0]);
            out->addr = core_malloc((size_t)(b->num_rows ? b->num_rows : 1) * sizeof *out->addr);
            out->id = core_calloc((size_t)(b->num_rows ? b->num_rows : 1), sizeof *out->id);
            if (!out->addr || !out->id) rc = core_err_nomem();
            for (int64_t r = 0; rc == 0 && r < b->num_rows; r++) {
                out->addr[r] = arrow_array_get_uint(b->columns[1], r);
                if (stable) out->id[r] = arrow_array_get_uint(b->columns[2], r);
            }
        }
        arrow_batch_free(b);
    }
    if (rc) table_keys_free(out);
    return rc;
}

/* ---- merge-insert ---------------------------------------------------------------------- */

typedef struct key_slot {
    uint64_t hash;
    int64_t row; /* -1: empty */
} key_slot;

/* The keys to look up and hash: the input's key column, then the keys to delete (a column of
 * the key's type). */
static int merge_keys(arrow_array **out, const lance_dataset *ds, size_t kc,
                      const arrow_array *skey, const char *const *del, size_t n_del)
{
    const arrow_field *kf = &ds->schema.fields[kc];
    if (!n_del) {
        *out = arrow_array_ref((arrow_array *)skey);
        return 0;
    }
    if (!arrow_type_is_binary_like(kf->type.id))
        return core_err(OG_E_BAD_REQUEST,
                        "merge key '%s' is not text: it cannot take keys to delete", kf->name);
    arrow_builder *bld = NULL;
    arrow_array *da = NULL;
    int rc = arrow_builder_new(&bld, &kf->type);
    if (rc == 0) rc = arrow_builder_reserve(bld, (int64_t)n_del);
    for (size_t i = 0; rc == 0 && i < n_del; i++)
        rc = del[i] ? arrow_builder_append_bytes(bld, del[i], strlen(del[i]))
                    : core_err(OG_E_BAD_REQUEST, "key to delete %zu is null", i);
    if (rc == 0) rc = arrow_builder_finish(bld, &da);
    arrow_builder_free(bld);
    arrow_array *parts[2] = {(arrow_array *)skey, da};
    if (rc == 0) rc = arrow_array_concat(out, parts, 2);
    arrow_array_free(da);
    return rc;
}

static int merge_insert(lance_staged **out, const lance_dataset *ds, const char *key_column,
                        arrow_batch *const *b, size_t n, lance_merge_mode mode,
                        const char *const *del, size_t n_del, const lance_write_options *opt)
{
    *out = NULL;
    size_t kc;
    int rc = lance_dataset_column(ds, key_column, &kc);
    if (rc) return rc;
    arrow_type_id kid = ds->schema.fields[kc].type.id;
    if (kid == ARROW_LIST || kid == ARROW_FIXED_SIZE_LIST || kid == ARROW_STRUCT || kid == ARROW_NA)
        return core_err(OG_E_BAD_REQUEST, "merge key '%s' must be a scalar column", key_column);
    /* The input as one batch. */
    arrow_batch *src = NULL;
    {
        size_t nc = ds->schema.n_fields;
        arrow_array **cols = core_calloc(nc, sizeof *cols);
        arrow_array **parts = core_calloc(n ? n : 1, sizeof *parts);
        if (!cols || !parts) rc = core_err_nomem();
        for (size_t i = 0; rc == 0 && i < n; i++)
            if (!arrow_schema_equal(&b[i]->schema, &ds->schema))
                rc = core_err(OG_E_BAD_REQUEST,
                              "table '%s': merge batch %zu does not have the "
                              "table's schema",
                              ds->root, i);
        for (size_t c = 0; rc == 0 && c < nc; c++) {
            for (size_t i = 0; i < n; i++)
                parts[i] = b[i]->columns[c];
            rc = n ? arrow_array_concat(&cols[c], parts, n)
                   : arrow_array_new_null(&cols[c], &ds->schema.fields[c].type, 0);
        }
        if (rc == 0) rc = arrow_batch_new(&src, &ds->schema, cols, nc);
        for (size_t c = 0; cols && c < nc; c++)
            arrow_array_free(cols[c]);
        core_free(cols);
        core_free(parts);
    }
    if (rc) return rc;
    int64_t ns = src->num_rows;
    /* keys[0..ns) are the input's, keys[ns..nk) the ones to delete */
    arrow_array *skey = NULL;
    rc = merge_keys(&skey, ds, kc, src->columns[kc], del, n_del);
    if (rc) {
        arrow_batch_free(src);
        return rc;
    }
    int64_t nk = skey->length;
    /* Hash the input keys; refuse nulls and duplicates (a key to delete twice is once). */
    size_t cap = 16;
    while (cap < (size_t)nk * 2)
        cap *= 2;
    key_slot *tab = core_malloc(cap * sizeof *tab);
    uint64_t *h = core_malloc((size_t)(nk ? nk : 1) * sizeof *h);
    int64_t *match_of = core_malloc((size_t)(ns ? ns : 1) * sizeof *match_of); /* dataset pos */
    if (!tab || !h || !match_of) rc = core_err_nomem();
    if (rc == 0) {
        for (size_t i = 0; i < cap; i++)
            tab[i].row = -1;
        arrow_hash_rows(skey, h, false);
    }
    for (int64_t r = 0; rc == 0 && r < nk; r++) {
        if (r < ns) match_of[r] = -1;
        if (!arrow_array_is_valid(skey, r)) {
            rc = core_err(OG_E_BAD_REQUEST, "merge input row %lld has a null key '%s'",
                          (long long)r, key_column);
            break;
        }
        size_t s = (size_t)h[r] & (cap - 1);
        int again = 0;
        while (tab[s].row >= 0) {
            if (tab[s].hash == h[r] && arrow_compare_rows(skey, tab[s].row, skey, r) == 0) {
                again = 1;
                if (r < ns)
                    rc = core_err(OG_E_BAD_REQUEST,
                                  "merge input has key '%s' twice (rows %lld and %lld)", key_column,
                                  (long long)tab[s].row, (long long)r);
                else if (tab[s].row < ns)
                    rc = core_err(OG_E_BAD_REQUEST,
                                  "merge input row %lld has a key '%s' that is also to be deleted",
                                  (long long)tab[s].row, key_column);
                break;
            }
            s = (s + 1) & (cap - 1);
        }
        if (rc) break;
        if (again) continue;
        tab[s].hash = h[r];
        tab[s].row = r;
    }
    /* The table's rows holding one of the keys: through the key index when the column has
     * one (reads what the index does not cover), else a scan of the key column. */
    table_keys cur = {0};
    if (rc == 0) rc = table_keys_find(&cur, ds, key_column, skey);
    uint64_t *ch = NULL, *dels = NULL;
    if (rc == 0) {
        ch = core_malloc((size_t)(cur.n ? cur.n : 1) * sizeof *ch);
        dels = core_malloc((size_t)(cur.n ? cur.n : 1) * sizeof *dels);
        if (!ch || !dels)
            rc = core_err_nomem();
        else
            arrow_hash_rows(cur.key, ch, false);
    }
    size_t n_match = 0, n_dels = 0;
    for (int64_t r = 0; rc == 0 && r < cur.n; r++) {
        if (!arrow_array_is_valid(cur.key, r)) continue;
        size_t s = (size_t)ch[r] & (cap - 1);
        while (tab[s].row >= 0) {
            if (tab[s].hash == ch[r] && arrow_compare_rows(cur.key, r, skey, tab[s].row) == 0) {
                if (tab[s].row >= ns) {
                    dels[n_dels++] = cur.addr[r]; /* every row holding a key to delete */
                    break;
                }
                if (mode == LANCE_MERGE_INSERT_ONLY) {
                    char kbuf[256] = "";
                    if (arrow_type_is_binary_like(kid)) {
                        size_t len;
                        const uint8_t *p = arrow_array_get_bytes(skey, tab[s].row, &len);
                        snprintf(kbuf, sizeof kbuf, "%.*s", (int)(len < 200 ? len : 200), p);
                    } else if (kid == ARROW_UINT32 || kid == ARROW_UINT64) {
                        snprintf(kbuf, sizeof kbuf, "%llu",
                                 (unsigned long long)arrow_array_get_uint(skey, tab[s].row));
                    } else if (kid == ARROW_FLOAT32 || kid == ARROW_FLOAT64) {
                        snprintf(kbuf, sizeof kbuf, "%g", arrow_array_get_double(skey, tab[s].row));
                    } else if (kid == ARROW_BOOL) {
                        snprintf(kbuf, sizeof kbuf, "%s",
                                 arrow_array_get_bool(skey, tab[s].row) ? "true" : "false");
                    } else {
                        snprintf(kbuf, sizeof kbuf, "%lld",
                                 (long long)arrow_array_get_int(skey, tab[s].row));
                    }
                    rc = core_err(OG_E_KEY_CONFLICT, "table '%s' already has %s = %s", ds->root,
                                  key_column, kbuf);
                    core_err_detail(CORE_ERR_KEY, kbuf);
                    core_err_detail(CORE_ERR_OBJECT, ds->root);
                    break;
                }
                if (match_of[tab[s].row] < 0) n_match++;
                match_of[tab[s].row] = r;
                break;
            }
            s = (s + 1) & (cap - 1);
        }
    }
    if (rc == 0) rc = staged_new(out, ds, n_match || n_dels ? ST_UPDATE : ST_APPEND, opt);
    /* Split the input: matched rows replace table rows (keeping ids), the rest are inserted. */
    int64_t *ins = NULL, *upd = NULL;
    matches m = {0};
    if (rc == 0) {
        ins = core_malloc((size_t)(ns ? ns : 1) * sizeof *ins);
        upd = core_malloc((size_t)(ns ? ns : 1) * sizeof *upd);
        m.addrs = core_malloc((n_match ? n_match : 1) * sizeof *m.addrs);
        m.ids = core_malloc((n_match ? n_match : 1) * sizeof *m.ids);
        if (!ins || !upd || !m.addrs || !m.ids) rc = core_err_nomem();
    }
    size_t n_ins = 0, n_upd = 0;
    for (int64_t r = 0; rc == 0 && r < ns; r++) {
        if (match_of[r] >= 0) {
            int64_t cr = match_of[r];
            upd[n_upd] = r;
            m.addrs[n_upd] = cur.addr[cr];
            m.ids[n_upd] = cur.id[cr];
            n_upd++;
        } else {
            ins[n_ins++] = r;
        }
    }
    m.n = n_upd;
    if (rc == 0 && n_upd) {
        arrow_batch *rows = NULL;
        rc = arrow_batch_take(&rows, src, upd, n_upd);
        if (rc == 0) rc = stage_replace(*out, &m, rows, dels, n_dels);
        arrow_batch_free(rows);
    } else if (rc == 0 && n_dels) {
        rc = add_deletions(*out, dels, n_dels);
    }
    if (rc == 0 && n_ins) {
        arrow_batch *rows = NULL;
        rc = arrow_batch_take(&rows, src, ins, n_ins);
        if (rc == 0) rc = write_rows(*out, &ds->schema, &rows, 1, NULL, NULL);
        arrow_batch_free(rows);
    }
    matches_free(&m);
    core_free(ins);
    core_free(upd);
    core_free(ch);
    core_free(dels);
    table_keys_free(&cur);
    core_free(tab);
    core_free(h);
    core_free(match_of);
    arrow_array_free(skey);
    arrow_batch_free(src);
    if (rc) {
        lance_staged_discard(*out);
        *out = NULL;
    }
    return rc;
}

int lance_stage_merge_insert(lance_staged **out, const lance_dataset *ds, const char *key_column,
                             arrow_batch *const *b, size_t n, lance_merge_mode mode,
                             const lance_write_options *opt)
{
    return merge_insert(out, ds, key_column, b, n, mode, NULL, 0, opt);
}

int lance_stage_merge_insert_ex(lance_staged **out, const lance_dataset *ds, const char *key_column,
                                arrow_batch *const *b, size_t n, lance_merge_mode mode,
                                const char *const *delete_keys, size_t n_delete_keys,
                                const lance_write_options *opt)
{
    return merge_insert(out, ds, key_column, b, n, mode, delete_keys, n_delete_keys, opt);
}

/* ---- upsert in chunks ------------------------------------------------------------------ */

int lance_stage_upsert(lance_staged **out, const lance_dataset *ds, const char *key_column,
                       const lance_write_options *opt)
{
    size_t kc;
    int rc = lance_dataset_column(ds, key_column, &kc);
    if (rc) return rc;
    if (!arrow_type_is_binary_like(ds->schema.fields[kc].type.id))
        return core_err(OG_E_BAD_REQUEST, "upsert key '%s' must be a text column", key_column);
    if ((rc = staged_new(out, ds, ST_APPEND, opt)) != 0) return rc;
    (*out)->upsert = true;
    (*out)->upsert_key = kc;
    return 0;
}

/* The pending deletions of fragment frag (made on first use). */
static int pend_del_of(lance_staged *st, uint64_t frag, roaring_bitmap_t **out)
{
    size_t lo = 0, hi = st->n_pd;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (st->pd[mid].frag < frag)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < st->n_pd && st->pd[lo].frag == frag) {
        *out = st->pd[lo].rows;
        return 0;
    }
    if (st->n_pd == st->cap_pd) {
        size_t cap = st->cap_pd ? st->cap_pd * 2 : 16;
        struct pend_del *p = core_realloc(st->pd, cap * sizeof *p);
        if (!p) return core_err_nomem();
        st->pd = p;
        st->cap_pd = cap;
    }
    roaring_bitmap_t *bm = roaring_bitmap_create();
    if (!bm) return core_err_nomem();
    memmove(st->pd + lo + 1, st->pd + lo, (st->n_pd - lo) * sizeof *st->pd);
    st->pd[lo].frag = frag;
    st->pd[lo].rows = bm;
    st->n_pd++;
    *out = bm;
    return 0;
}

/* Row ids and creation versions of the replacing rows of one lance_stage_upsert_add call. */
typedef struct upsert_ids {
    uint64_t *id, *created;
    size_t n, cap;
} upsert_ids;

/* Split one batch of an upsert in chunks: its rows whose key a row of the read version holds
 * replace that row (*upd, with that row's id and creation version appended to ui; the old row
 * is deleted at finish), the others are appended (*ins). Either may be NULL (no such row); *ins
 * is the batch itself when no row matches. A key given twice (in one batch or across batches)
 * is not refused here: the caller's checks of the whole input refuse it before any commit;
 * its later rows are appended. */
static int upsert_split(lance_staged *st, arrow_batch *src, arrow_batch **upd_out,
                        arrow_batch **ins_out, upsert_ids *ui)
{
    *upd_out = *ins_out = NULL;
    const lance_dataset *ds = st->ds;
    const char *column = ds->schema.fields[st->upsert_key].name;
    const arrow_array *key = src->columns[st->upsert_key];
    int64_t ns = src->num_rows;
    size_t cap = 16;
    while (cap < (size_t)ns * 2)
        cap *= 2;
    key_slot *tab = core_malloc(cap * sizeof *tab);
    uint64_t *h = core_malloc((size_t)(ns ? ns : 1) * sizeof *h);
    int64_t *match_of = core_malloc((size_t)(ns ? ns : 1) * sizeof *match_of);
    int rc = tab && h && match_of ? 0 : core_err_nomem();
    if (rc == 0) {
        for (size_t i = 0; i < cap; i++)
            tab[i].row = -1;
        arrow_hash_rows(key, h, false);
    }
    for (int64_t r = 0; rc == 0 && r < ns; r++) {
        match_of[r] = -1;
        if (!arrow_array_is_valid(key, r)) {
            rc = core_err(OG_E_BAD_REQUEST, "upsert input row %lld has a null key '%s'",
                          (long long)r, column);
            break;
        }
        size_t s = (size_t)h[r] & (cap - 1);
        bool again = false;
        while (tab[s].row >= 0 && !again) {
            again = tab[s].hash == h[r] && arrow_compare_rows(key, tab[s].row, key, r) == 0;
            if (!again) s = (s + 1) & (cap - 1);
        }
        if (again) continue; /* the first row of a key is the one matched */
        tab[s].hash = h[r];
        tab[s].row = r;
    }
    core_free(h);
    h = NULL;
    table_keys cur = {0};
    if (rc == 0) rc = table_keys_find(&cur, ds, column, key);
    uint64_t *ch = rc == 0 ? core_malloc((size_t)(cur.n ? cur.n : 1) * sizeof *ch) : NULL;
    if (rc == 0 && !ch) rc = core_err_nomem();
    if (rc == 0) arrow_hash_rows(cur.key, ch, false);
    for (int64_t r = 0; rc == 0 && r < cur.n; r++) {
        if (!arrow_array_is_valid(cur.key, r)) continue;
        size_t s = (size_t)ch[r] & (cap - 1);
        while (tab[s].row >= 0) {
            if (tab[s].hash == ch[r] && arrow_compare_rows(cur.key, r, key, tab[s].row) == 0) {
                match_of[tab[s].row] = r; /* the last in scan order, as merge_insert */
                break;
            }
            s = (s + 1) & (cap - 1);
        }
    }
    core_free(ch);
    core_free(tab);
    /* which rows replace one (not replaced by an earlier batch already) */
    int64_t *ins = NULL, *upd = NULL;
    uint64_t *addrs = NULL;
    if (rc == 0) {
        ins = core_malloc((size_t)(ns ? ns : 1) * sizeof *ins);
        upd = core_malloc((size_t)(ns ? ns : 1) * sizeof *upd);
        addrs = core_malloc((size_t)(cur.n ? cur.n : 1) * sizeof *addrs);
        if (!ins || !upd || !addrs) rc = core_err_nomem();
    }
    size_t n_ins = 0, n_upd = 0;
    for (int64_t r = 0; rc == 0 && r < ns; r++) {
        int64_t cr = match_of[r];
        roaring_bitmap_t *bm = NULL;
        if (cr >= 0) rc = pend_del_of(st, LANCE_ROW_ADDR_FRAG(cur.addr[cr]), &bm);
        if (rc) break;
        if (cr >= 0 && roaring_bitmap_add_checked(bm, LANCE_ROW_ADDR_OFF(cur.addr[cr]))) {
            if (ui->n + 1 > ui->cap) {
                size_t nc = ui->cap ? ui->cap * 2 : 1024;
                uint64_t *i2 = core_realloc(ui->id, nc * sizeof *i2);
                if (i2) ui->id = i2;
                uint64_t *c2 = i2 ? core_realloc(ui->created, nc * sizeof *c2) : NULL;
                if (!c2) {
                    rc = core_err_nomem();
                    break;
                }
                ui->created = c2;
                ui->cap = nc;
            }
            ui->id[ui->n] = cur.id[cr];
            addrs[n_upd] = cur.addr[cr];
            upd[n_upd++] = r;
            ui->n++;
        } else {
            ins[n_ins++] = r;
        }
    }
    /* their creation versions, in the same order as their ids */
    if (rc == 0 && n_upd) rc = creation_versions(ds, addrs, n_upd, ui->created + ui->n - n_upd);
    /* a batch whose rows all replace (or all are new) is taken as it is, not copied */
    if (rc == 0 && n_upd == (size_t)ns)
        rc = arrow_batch_new(upd_out, &src->schema, src->columns, src->schema.n_fields);
    else if (rc == 0 && n_upd)
        rc = arrow_batch_take(upd_out, src, upd, n_upd);
    if (rc == 0 && n_ins == (size_t)ns)
        rc = arrow_batch_new(ins_out, &src->schema, src->columns, src->schema.n_fields);
    else if (rc == 0 && n_ins)
        rc = arrow_batch_take(ins_out, src, ins, n_ins);
    core_free(ins);
    core_free(upd);
    core_free(addrs);
    core_free(match_of);
    table_keys_free(&cur);
    if (rc) {
        arrow_batch_free(*upd_out);
        arrow_batch_free(*ins_out);
        *upd_out = *ins_out = NULL;
    }
    return rc;
}

int lance_stage_upsert_add(lance_staged *st, arrow_batch *const *b, size_t n)
{
    if (!st->upsert)
        return core_err(OG_E_BAD_REQUEST, "table '%s': the stage is not an upsert in chunks",
                        st->ds->root);
    if (st->commit_tried)
        return core_err(OG_E_BAD_REQUEST, "table '%s': the stage was committed already",
                        st->ds->root);
    for (size_t i = 0; i < n; i++)
        if (!arrow_schema_equal(&b[i]->schema, &st->ds->schema))
            return core_err(OG_E_BAD_REQUEST,
                            "table '%s': upsert batch %zu does not have the table's schema",
                            st->ds->root, i);
    /* every batch split first, then the replacing rows and the new ones each written as one
     * run of files (whole fragments, one key index segment each) */
    arrow_batch **upd = core_calloc(n ? n : 1, sizeof *upd);
    arrow_batch **ins = core_calloc(n ? n : 1, sizeof *ins);
    upsert_ids ui = {0};
    int rc = upd && ins ? 0 : core_err_nomem();
    size_t nu = 0, ni = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        arrow_batch *u = NULL, *x = NULL;
        if (b[i]->num_rows) rc = upsert_split(st, b[i], &u, &x, &ui);
        if (u) upd[nu++] = u;
        if (x) ins[ni++] = x;
    }
    int stable = lance_dataset_stable_row_ids(st->ds);
    if (rc == 0 && nu) {
        st->kind = ST_UPDATE; /* its deletions make it an Update, as merge_insert's */
        rc = write_rows(st, &st->ds->schema, upd, nu, stable ? ui.id : NULL,
                        stable ? ui.created : NULL);
    }
    if (rc == 0 && ni) rc = write_rows(st, &st->ds->schema, ins, ni, NULL, NULL);
    for (size_t i = 0; i < nu; i++)
        arrow_batch_free(upd[i]);
    for (size_t i = 0; i < ni; i++)
        arrow_batch_free(ins[i]);
    core_free(upd);
    core_free(ins);
    core_free(ui.id);
    core_free(ui.created);
    return rc;
}

int lance_stage_upsert_finish(lance_staged *st)
{
    if (!st->upsert) return 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < st->n_pd; i++) {
        roaring_bitmap_t *bm = st->pd[i].rows;
        uint64_t n = roaring_bitmap_get_cardinality(bm);
        uint32_t *off = core_malloc((size_t)(n ? n : 1) * sizeof *off);
        uint64_t *addrs = core_malloc((size_t)(n ? n : 1) * sizeof *addrs);
        if (!off || !addrs) rc = core_err_nomem();
        if (rc == 0) roaring_bitmap_to_uint32_array(bm, off);
        for (uint64_t k = 0; rc == 0 && k < n; k++)
            addrs[k] = (st->pd[i].frag << 32) | off[k];
        if (rc == 0) rc = add_deletions(st, addrs, (size_t)n);
        core_free(off);
        core_free(addrs);
    }
    for (size_t i = 0; i < st->n_pd; i++)
        roaring_bitmap_free(st->pd[i].rows);
    core_free(st->pd);
    st->pd = NULL;
    st->n_pd = st->cap_pd = 0;
    st->upsert = false; /* finished: no more rows */
    return rc;
}

/* ---- commit ---------------------------------------------------------------------------- */

static int encode_preset_ids(core_arena *a, const uint64_t *ids, uint64_t n,
                             ProtobufCBinaryData *out)
{
    lance_segment seg = {0};
    int sorted = 1;
    for (uint64_t i = 1; i < n && sorted; i++)
        sorted = ids[i] > ids[i - 1];
    seg.kind = sorted ? LANCE_SEG_SORTED_ARRAY : LANCE_SEG_ARRAY;
    seg.values = (uint64_t *)ids;
    seg.n_values = (size_t)n;
    lance_rowid_seq seq = {&seg, 1};
    core_buf buf = CORE_BUF_INIT;
    int rc = lance_rowid_seq_encode(&buf, &seq);
    if (rc == 0) rc = lance_fragment_bytes(a, &buf, out);
    core_buf_free(&buf);
    return rc;
}

/* Build the manifest of bm's version + 1 from bm and this operation, and commit it. bm is the
 * read version's manifest, or a later one the operation was found compatible with. */
static int commit_on(lance_staged *st, const lance_manifest *bm, lance_dataset **out_ds,
                     uint64_t *version)
{
    const lance_dataset *ds = st->ds;
    const Lance__Table__Manifest *base = bm->pb;
    uint64_t R = lance_dataset_version(ds); /* the version the operation read */
    uint64_t V = base->version + 1;         /* the version it creates */
    core_arena *a = &st->arena;
    lance_manifest_next next;
    lance_manifest_next_init(&next, base, V);
    int stable = (base->writer_feature_flags & LANCE_FLAG_STABLE_ROW_IDS) != 0;

    size_t cap = base->n_fragments + st->n_nf;
    Lance__Table__DataFragment **frags = core_arena_alloc(a, (cap ? cap : 1) * sizeof *frags);
    Lance__Table__DataFragment **updated =
        core_arena_alloc(a, (st->n_uf ? st->n_uf : 1) * sizeof *updated);
    uint64_t *removed = core_arena_alloc(a, (st->n_uf ? st->n_uf : 1) * sizeof *removed);
    Lance__Table__DataFragment **added =
        core_arena_alloc(a, (st->n_nf ? st->n_nf : 1) * sizeof *added);
    if (!frags || !updated || !removed || !added) return core_err_nomem();
    size_t nfr = 0, nupd = 0, nrem = 0;
    uint64_t max_id = 0;
    int any = base->has_max_fragment_id;
    if (any) max_id = base->max_fragment_id;
    for (size_t i = 0; i < base->n_fragments; i++) {
        const Lance__Table__DataFragment *f = base->fragments[i];
        if (!any || f->id > max_id) max_id = f->id, any = 1;
        if (st->kind == ST_OVERWRITE) continue;
        const upd_frag *u = NULL;
        for (size_t k = 0; k < st->n_uf && !u; k++)
            if (st->uf[k].base->id == f->id) u = &st->uf[k];
        if (!u) {
            frags[nfr++] = (Lance__Table__DataFragment *)f; /* borrowed, unchanged */
        } else if (u->removed) {
            removed[nrem++] = f->id;
        } else {
            Lance__Table__DataFragment *c = core_arena_alloc(a, sizeof *c);
            if (!c) return core_err_nomem();
            *c = *f; /* shallow: only the deletion file changes */
            c->deletion_file = u->df;
            frags[nfr++] = c;
            updated[nupd++] = c;
        }
    }
    if (nupd + nrem != st->n_uf) {
        /* A fragment this operation changes is gone from the base: someone removed it. */
        return core_err(OG_E_CONFLICT,
                        "table '%s': a fragment this write deletes from was removed "
                        "by version %llu; re-stage on the new version",
                        ds->root, (unsigned long long)base->version);
    }
    uint64_t next_id = any ? max_id + 1 : 0;
    uint64_t next_row_id = base->next_row_id;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < st->n_nf; i++) {
        const new_frag *nf = &st->nf[i];
        Lance__Table__DataFragment *f;
        if ((rc = lance_fragment_new(&f, a, next_id++, nf->file, nf->rows)) != 0) return rc;
        if (stable) {
            core_buf buf = CORE_BUF_INIT;
            f->row_id_sequence_case = LANCE__TABLE__DATA_FRAGMENT__ROW_ID_SEQUENCE_INLINE_ROW_IDS;
            if (nf->preset_ids) {
                rc = encode_preset_ids(a, nf->preset_ids, nf->rows, &f->inline_row_ids);
            } else {
                rc = lance_rowids_assign(&buf, &next_row_id, nf->rows);
                if (rc == 0) rc = lance_fragment_bytes(a, &buf, &f->inline_row_ids);
            }
            core_buf_clear(&buf);
            f->last_updated_at_version_sequence_case =
                LANCE__TABLE__DATA_FRAGMENT__LAST_UPDATED_AT_VERSION_SEQUENCE_INLINE_LAST_UPDATED_AT_VERSIONS;
            /* Rewritten rows keep their creation versions while those are known and few
             * (lance_version_seq_keepable); otherwise the fragment carries none rather than
             * claiming they were created now. */
            int created_kept =
                !nf->created_at ||
                lance_version_seq_keepable(nf->created_at, nf->rows, LANCE_VERSION_RUNS_MAX);
            if (created_kept)
                f->created_at_version_sequence_case =
                    LANCE__TABLE__DATA_FRAGMENT__CREATED_AT_VERSION_SEQUENCE_INLINE_CREATED_AT_VERSIONS;
            if (rc == 0 && nf->created_at && created_kept) {
                rc = lance_fragment_versions(a, nf->created_at, nf->rows,
                                             &f->inline_created_at_versions);
            } else if (rc == 0 && created_kept) {
                rc = lance_version_seq_uniform(&buf, nf->rows, V);
                if (rc == 0) rc = lance_fragment_bytes(a, &buf, &f->inline_created_at_versions);
            }
            core_buf_clear(&buf);
            if (rc == 0) rc = lance_version_seq_uniform(&buf, nf->rows, V);
            if (rc == 0) rc = lance_fragment_bytes(a, &buf, &f->inline_last_updated_at_versions);
            core_buf_free(&buf);
        }
        frags[nfr++] = f;
        added[i] = f;
    }
    if (rc) return rc;
    next.pb.n_fragments = nfr;
    next.pb.fragments = frags;
    if (next_id > 0) {
        next.pb.has_max_fragment_id = 1;
        next.pb.max_fragment_id = (uint32_t)(next_id - 1);
    }
    if (stable) {
        next.pb.has_next_row_id = 1;
        next.pb.next_row_id = next_row_id;
    }
    if (st->kind == ST_OVERWRITE) {
        next.pb.n_fields = st->n_fields;
        next.pb.fields = st->fields;
    }
    lance_manifest_update_flags(&next.pb);
    /* Key index segments: the base's that still cover a fragment, and this write's. */
    uint64_t *new_ids = core_arena_alloc(a, (st->n_nf ? st->n_nf : 1) * sizeof *new_ids);
    if (!new_ids) return core_err_nomem();
    for (size_t i = 0; i < st->n_nf; i++)
        new_ids[i] = added[i]->id;
    if ((rc = lance_kix_next_metadata(a, &next.pb, base, st->kix, st->n_kix, new_ids, st->n_nf)))
        return rc;

    Lance__Table__Transaction txn = LANCE__TABLE__TRANSACTION__INIT;
    Lance__Table__Transaction__Append ap = LANCE__TABLE__TRANSACTION__APPEND__INIT;
    Lance__Table__Transaction__Delete dl = LANCE__TABLE__TRANSACTION__DELETE__INIT;
    Lance__Table__Transaction__Overwrite ow = LANCE__TABLE__TRANSACTION__OVERWRITE__INIT;
    Lance__Table__Transaction__Update up = LANCE__TABLE__TRANSACTION__UPDATE__INIT;
    txn.has_read_version = 1;
    txn.read_version = R;
    txn.uuid = st->uuid;
    switch (st->kind) {
    case ST_APPEND:
        ap.n_fragments = st->n_nf;
        ap.fragments = added;
        txn.operation_case = LANCE__TABLE__TRANSACTION__OPERATION_APPEND;
        txn.append = &ap;
        break;
    case ST_DELETE:
        dl.n_updated_fragments = nupd;
        dl.updated_fragments = updated;
        dl.n_deleted_fragment_ids = nrem;
        dl.deleted_fragment_ids = removed;
        txn.operation_case = LANCE__TABLE__TRANSACTION__OPERATION_DELETE;
        txn.delete_ = &dl;
        break;
    case ST_OVERWRITE:
        ow.n_fragments = st->n_nf;
        ow.fragments = added;
        ow.n_schema = st->n_fields;
        ow.schema = st->fields;
        txn.operation_case = LANCE__TABLE__TRANSACTION__OPERATION_OVERWRITE;
        txn.overwrite = &ow;
        break;
    case ST_UPDATE:
        up.n_removed_fragment_ids = nrem;
        up.removed_fragment_ids = removed;
        up.n_updated_fragments = nupd;
        up.updated_fragments = updated;
        up.n_new_fragments = st->n_nf;
        up.new_fragments = added;
        txn.operation_case = LANCE__TABLE__TRANSACTION__OPERATION_UPDATE;
        txn.update = &up;
        break;
    }
    lance_commit_info ci;
    /* On a branch: the directory must still be the incarnation this write was built on. */
    if (base->branch) rc = lance_branch_check_base(ds->s, ds->root, ds->naming, bm);
    if (rc) return rc;
    rc = lance_commit_pending_on(
        ds->s, ds->root, ds->naming, &next.pb, bm, NULL, &txn, bm->index, bm->index_len,
        (out_ds ? LANCE_COMMIT_KEEP_BYTES : 0) | (st->txn_file ? LANCE_COMMIT_TXN_FILE : 0) |
            (st->chain ? LANCE_COMMIT_CHAIN : 0),
        st->pending, st->n_pending, &ci);
    if (rc) return rc;
    if (version) *version = ci.version;
    if (!out_ds) return 0;
    /* The new snapshot from the bytes just published: no read back, no second encode, and
     * the fragments kept from the base are shared with it rather than decoded again. */
    lance_manifest *m = NULL;
    rc = lance_manifest_decode_on(&m, ci.manifest_bytes, ci.manifest_len, ci.manifest_key, bm);
    core_free(ci.manifest_bytes);
    if (rc == 0) rc = lance_dataset_from_manifest(out_ds, ds->s, ds->root, ds->naming, m);
    return rc;
}

/* Fragment ids a transaction changes or removes (not the ones it adds). */
static void touched_ids(const Lance__Table__Transaction *t, const uint64_t **ids1, size_t *n1,
                        Lance__Table__DataFragment *const **frags, size_t *nf)
{
    *ids1 = NULL;
    *n1 = 0;
    *frags = NULL;
    *nf = 0;
    switch (t->operation_case) {
    case LANCE__TABLE__TRANSACTION__OPERATION_DELETE:
        *ids1 = t->delete_->deleted_fragment_ids;
        *n1 = t->delete_->n_deleted_fragment_ids;
        *frags = t->delete_->updated_fragments;
        *nf = t->delete_->n_updated_fragments;
        break;
    case LANCE__TABLE__TRANSACTION__OPERATION_UPDATE:
        *ids1 = t->update->removed_fragment_ids;
        *n1 = t->update->n_removed_fragment_ids;
        *frags = t->update->updated_fragments;
        *nf = t->update->n_updated_fragments;
        break;
    default:
        break;
    }
}

static int we_touch(const lance_staged *st, uint64_t id)
{
    for (size_t k = 0; k < st->n_uf; k++)
        if (st->uf[k].base->id == id) return 1;
    return 0;
}

static int rewrite_overlaps(const lance_staged *st, const Lance__Table__Transaction__Rewrite *rw)
{
    for (size_t i = 0; i < rw->n_old_fragments; i++)
        if (we_touch(st, rw->old_fragments[i]->id)) return 1;
    for (size_t g = 0; g < rw->n_groups; g++)
        for (size_t i = 0; i < rw->groups[g]->n_old_fragments; i++)
            if (we_touch(st, rw->groups[g]->old_fragments[i]->id)) return 1;
    return 0;
}

typedef enum compat { COMPAT_OK, COMPAT_RETRY, COMPAT_NO } compat;

/* Lance's conflict rules (lance-format-subset.md §5.3), seen from this operation against a
 * transaction committed since its read version. Deletes and updates against deletes and
 * updates of the same fragment are retryable: the simplest correct answer. */
static compat check_against(const lance_staged *st, const Lance__Table__Transaction *t)
{
    int op = t->operation_case;
    switch (st->kind) {
    case ST_APPEND:
        switch (op) {
        case LANCE__TABLE__TRANSACTION__OPERATION_OVERWRITE:
        case LANCE__TABLE__TRANSACTION__OPERATION_RESTORE:
            return COMPAT_NO;
        case LANCE__TABLE__TRANSACTION__OPERATION_APPEND:
        case LANCE__TABLE__TRANSACTION__OPERATION_DELETE:
        case LANCE__TABLE__TRANSACTION__OPERATION_UPDATE:
        case LANCE__TABLE__TRANSACTION__OPERATION_REWRITE:
        case LANCE__TABLE__TRANSACTION__OPERATION_CREATE_INDEX:
        case LANCE__TABLE__TRANSACTION__OPERATION_MERGE:
        case LANCE__TABLE__TRANSACTION__OPERATION_UPDATE_CONFIG:
        case LANCE__TABLE__TRANSACTION__OPERATION_RESERVE_FRAGMENTS:
        case LANCE__TABLE__TRANSACTION__OPERATION_CLONE:
            return COMPAT_OK;
        default:
            return COMPAT_NO; /* an operation we do not know: be safe */
        }
    case ST_DELETE:
    case ST_UPDATE:
        switch (op) {
        case LANCE__TABLE__TRANSACTION__OPERATION_OVERWRITE:
        case LANCE__TABLE__TRANSACTION__OPERATION_RESTORE:
            return COMPAT_NO;
        case LANCE__TABLE__TRANSACTION__OPERATION_APPEND:
        case LANCE__TABLE__TRANSACTION__OPERATION_CREATE_INDEX:
        case LANCE__TABLE__TRANSACTION__OPERATION_UPDATE_CONFIG:
        case LANCE__TABLE__TRANSACTION__OPERATION_RESERVE_FRAGMENTS:
        case LANCE__TABLE__TRANSACTION__OPERATION_CLONE:
            return COMPAT_OK;
        case LANCE__TABLE__TRANSACTION__OPERATION_MERGE:
            return COMPAT_RETRY;
        case LANCE__TABLE__TRANSACTION__OPERATION_REWRITE:
            return rewrite_overlaps(st, t->rewrite) ? COMPAT_RETRY : COMPAT_OK;
        case LANCE__TABLE__TRANSACTION__OPERATION_DELETE:
        case LANCE__TABLE__TRANSACTION__OPERATION_UPDATE: {
            const uint64_t *ids;
            size_t n, nf;
            Lance__Table__DataFragment *const *frags;
            touched_ids(t, &ids, &n, &frags, &nf);
            for (size_t i = 0; i < n; i++)
                if (we_touch(st, ids[i])) return COMPAT_RETRY;
            for (size_t i = 0; i < nf; i++)
                if (we_touch(st, frags[i]->id)) return COMPAT_RETRY;
            return COMPAT_OK;
        }
        default:
            return COMPAT_NO;
        }
    case ST_OVERWRITE:
        /* An overwrite replaces everything; only unknown operations stop it. */
        return op >= LANCE__TABLE__TRANSACTION__OPERATION_APPEND &&
                       op <= LANCE__TABLE__TRANSACTION__OPERATION_UPDATE_BASES
                   ? COMPAT_OK
                   : COMPAT_NO;
    }
    return COMPAT_NO;
}

static const char *op_name(int op)
{
    switch (op) {
    case LANCE__TABLE__TRANSACTION__OPERATION_APPEND:
        return "append";
    case LANCE__TABLE__TRANSACTION__OPERATION_DELETE:
        return "delete";
    case LANCE__TABLE__TRANSACTION__OPERATION_OVERWRITE:
        return "overwrite";
    case LANCE__TABLE__TRANSACTION__OPERATION_CREATE_INDEX:
        return "create_index";
    case LANCE__TABLE__TRANSACTION__OPERATION_REWRITE:
        return "rewrite";
    case LANCE__TABLE__TRANSACTION__OPERATION_MERGE:
        return "merge";
    case LANCE__TABLE__TRANSACTION__OPERATION_RESTORE:
        return "restore";
    case LANCE__TABLE__TRANSACTION__OPERATION_UPDATE:
        return "update";
    default:
        return "other";
    }
}

int lance_staged_commit_ex(lance_staged *st, const lance_commit_options *opt,
                           lance_dataset **out_ds, lance_commit_result *res)
{
    lance_commit_options def = LANCE_COMMIT_OPTIONS_INIT;
    if (!opt) opt = &def;
    if (opt->version != 1)
        return core_err(OG_E_BAD_REQUEST, "lance_commit_options version %d is not 1", opt->version);
    if (out_ds) *out_ds = NULL;
    lance_commit_result r = {0, 0, 0};
    const lance_dataset *ds = st->ds;
    if (st->n_pd)
        return core_err(OG_E_INTERNAL, "table '%s': an upsert in chunks is committed unfinished",
                        ds->root);
    uint64_t R = lance_dataset_version(ds);
    lance_staged_info info;
    lance_staged_get_info(st, &info);
    int rc;
    if (info.noop) {
        r.version = R;
        if (res) *res = r;
        return out_ds ? lance_dataset_open(out_ds, ds->s, ds->root, R, LANCE_ACCESS_WRITE) : 0;
    }
    st->commit_tried = true; /* from here its files may be named by a version */
    unsigned max_attempts =
        opt->mode == LANCE_COMMIT_EXACT ? 1 : (opt->max_attempts ? opt->max_attempts : 20);
    lance_manifest *cur = NULL; /* the base of the next attempt when it is not ds->m */
    for (;;) {
        r.attempts++;
        rc = commit_on(st, cur ? cur : ds->m, out_ds, &r.version);
        if (rc != OG_E_CONFLICT || r.attempts >= max_attempts) break;
        /* Someone took the version: check every transaction since the base we tried. */
        uint64_t from = (cur ? cur->pb->version : R) + 1, latest;
        lance_naming naming;
        rc = lance_version_latest(ds->s, ds->root, &latest, &naming);
        for (uint64_t v = from; rc == 0 && v <= latest; v++) {
            lance_manifest *m = NULL;
            Lance__Table__Transaction *t = NULL;
            rc = lance_version_load(ds->s, ds->root, v, ds->naming, LANCE_ACCESS_WRITE, &m);
            if (rc == 0) rc = lance_txn_load(ds->s, ds->root, m, &t);
            if (rc == OG_E_NOT_FOUND) {
                core_err(OG_E_CONFLICT,
                         "table '%s' version %llu has no transaction to check "
                         "against; re-stage on the new version",
                         ds->root, (unsigned long long)v);
                rc = OG_E_CONFLICT;
            }
            if (rc == 0) {
                compat c = check_against(st, t);
                if (c != COMPAT_OK) {
                    core_err(OG_E_CONFLICT,
                             "table '%s': this write (read version %llu) %s the %s "
                             "committed as version %llu%s",
                             ds->root, (unsigned long long)R,
                             c == COMPAT_RETRY ? "overlaps" : "is incompatible with",
                             op_name(t->operation_case), (unsigned long long)v,
                             c == COMPAT_RETRY ? "; re-stage on the new version" : "");
                    char exp[32], act[32];
                    snprintf(exp, sizeof exp, "%llu", (unsigned long long)R);
                    snprintf(act, sizeof act, "%llu", (unsigned long long)v);
                    core_err_detail(CORE_ERR_OBJECT, ds->root);
                    core_err_detail(CORE_ERR_EXPECTED, exp);
                    core_err_detail(CORE_ERR_ACTUAL, act);
                    rc = OG_E_CONFLICT;
                }
            }
            lance_pb_free(t);
            if (rc == 0 && v == latest) {
                lance_manifest_free(cur);
                cur = m;
                r.rebased_over = (unsigned)(latest - R);
            } else {
                lance_manifest_free(m);
            }
        }
        if (rc) break;
    }
    lance_manifest_free(cur);
    if (rc == 0 && res) *res = r;
    return rc;
}

int lance_staged_commit(lance_staged *st, lance_dataset **out_ds, uint64_t *version)
{
    lance_commit_result r;
    int rc = lance_staged_commit_ex(st, NULL, out_ds, &r);
    if (rc == 0 && version) *version = r.version;
    return rc;
}

int lance_find_txn_version(store *s, const char *root, const char *uuid, uint64_t from,
                           uint64_t *version)
{
    uint64_t latest;
    lance_naming naming;
    int rc = lance_version_latest(s, root, &latest, &naming);
    if (rc) return rc;
    for (uint64_t v = latest; v >= (from ? from : 1) && v > 0; v--) {
        lance_manifest *m = NULL;
        Lance__Table__Transaction *t = NULL;
        rc = lance_version_load(s, root, v, naming, LANCE_ACCESS_READ, &m);
        if (rc == OG_E_NOT_FOUND) continue; /* cleaned up */
        if (rc == 0) rc = lance_txn_load(s, root, m, &t);
        int found = rc == 0 && t->uuid && strcmp(t->uuid, uuid) == 0;
        if (rc == OG_E_NOT_FOUND) rc = 0; /* no transaction recorded: not ours */
        lance_pb_free(t);
        lance_manifest_free(m);
        if (rc) return rc;
        if (found) {
            *version = v;
            return 0;
        }
    }
    core_err(OG_E_NOT_FOUND, "table '%s' has no version made by transaction %s", root, uuid);
    return OG_E_NOT_FOUND;
}

int lance_dataset_append(lance_dataset **out, const lance_dataset *ds, arrow_batch *const *b,
                         size_t n)
{
    lance_staged *st = NULL;
    int rc = lance_stage_append(&st, ds, b, n, NULL);
    if (rc == 0) rc = lance_staged_commit(st, out, NULL);
    lance_staged_discard(st); /* frees only, once a commit was tried */
    return rc;
}

int lance_dataset_delete(lance_dataset **out, const lance_dataset *ds, const lance_filter *filter)
{
    lance_staged *st = NULL;
    int rc = lance_stage_delete(&st, ds, filter, NULL);
    if (rc == 0) rc = lance_staged_commit(st, out, NULL);
    lance_staged_discard(st); /* frees only, once a commit was tried */
    return rc;
}
