/* Verify a graph root (verify.h): reads only, and turns every failed check into a problem of
 * the report instead of an error, so one damaged object does not hide the others. */
#include "write/verify.h"

#include "core/alloc.h"
#include "core/arena.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/hmap.h"
#include "graph/graph.h"
#include "lance/cleanup.h"
#include "lance/dataset.h"
#include "lance/file2.h"
#include "lance/keyindex.h"
#include "lance/paths.h"
#include "lance/refs.h"
#include "lance/branch.h"
#include "lance/version.h"
#include "write/write.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Every remedy must be safe to follow as written (docs/maintenance.md lists them): none may
 * undo or drop an acknowledged commit. The files these name are never rewritten once written,
 * so a backup's copy of one is exact, while a whole older backup would drop later commits. */
#define REMEDY_BACKUP                                                                              \
    "restore this file (or directory) from a backup taken after it was written (omnigraph "        \
    "backup makes one): it never changes once written, so the backup's copy is exact; do not "     \
    "restore a whole older graph over this one, which would drop the commits made since"
/* The newest manifest version: repair keeps the damaged file and rolls its data forward. */
#define REMEDY_REPAIR                                                                              \
    "if a backup holds this version file, restoring the file keeps its commit records too; "       \
    "otherwise omnigraph repair --confirm moves it to _repair/ (kept) and makes a repair commit "  \
    "that pins every table at its HEAD, so the data of its commits stays (only their records "     \
    "are lost); where that cannot keep an acknowledged commit (a lost schema apply) repair "       \
    "refuses and names it"
#define REMEDY_SCHEMA                                                                              \
    "omnigraph repair rewrites the schema files from the graph's records (it checks the "          \
    "identity the head names), or restore them from a backup taken since the last schema apply"
/* A table above its pin with no write in flight: never "restore the table", which would undo
 * a commit whose manifest version was lost (its rows are in the table, acknowledged). */
#define REMEDY_AHEAD                                                                               \
    "a newer graph-manifest version that published this table's HEAD was lost: omnigraph repair "  \
    "--confirm rolls it forward (a repair commit pins the table at its HEAD, keeping the "         \
    "acknowledged rows); never restore the table to the pinned version, which would drop them"
#define REMEDY_AHEAD_BRANCH                                                                        \
    "a newer graph-manifest version of the branch that published this fork's HEAD was lost: "      \
    "omnigraph repair --branch BRANCH --confirm rolls it forward (a repair commit on the branch "  \
    "pins the fork at its HEAD, keeping the acknowledged rows); never restore the fork to the "    \
    "pinned version, which would drop them"
/* Branch refs are small files that never change once written: a copy from any backup that
 * holds the branch is exact. Creating a branch of that name again would clear its files. */
#define REMEDY_REF                                                                                 \
    "omnigraph repair --confirm rebuilds a table fork's ref from the fork's first version (the "   \
    "fork its create wrote, which records the identity and fork point); for a graph branch's own " \
    "ref, omnigraph repair --branch NAME --confirm does, if the branch was not deleted on "        \
    "purpose (an interrupted delete leaves the same). Or restore this ref file from a backup "     \
    "that holds the branch (a ref never changes once written); do not create or delete a branch "  \
    "of that name first: that clears the branch's files"
/* Key index segments are derived data: lookups skip a bad one and scan, answers unchanged. */
#define REMEDY_KIX                                                                                 \
    "nothing is wrong with the data (lookups skip this segment and scan its fragments); "          \
    "omnigraph optimize writes a new segment for the head, and omnigraph cleanup drops the "       \
    "older versions that name this one"
/* The audit log records resolved recoveries; the graph's data does not depend on it. */
#define REMEDY_AUDIT                                                                               \
    "the graph's data is unaffected; the lost recovery records are only in a backup taken after "  \
    "they were written (restore that version file from it). Otherwise nothing needs doing: the "   \
    "next recovery recorded appends after the newest stored version"
#define DEEP_CHUNK_ROWS 65536

typedef struct vctx {
    store *s;
    const write_verify_options *opt;
    write_verify_report *r;
    core_arena arena; /* keys of the sets below */
    core_bmap files;  /* every file checked (value: 1 when it had a problem) */
    core_bmap pairs;  /* "root@version" of every table version checked */
    write_pending *pending;
    size_t n_pending;
    const lance_dataset *ds; /* the version whose other files are being checked */
    core_bmap schemas;       /* schema identities a retained commit or branch head names */
    core_bmap paths;         /* table paths pinned anywhere */
    core_bmap forks;         /* "path\nfork\ngraph branch" of every pin on a table fork */
    core_bmap fork_refs;     /* "path\nfork" of every table branch ref seen (sound or not) */
    core_bmap live;          /* graph branches whose ref reads */
    core_bmap kix_lists;     /* "root\nsegment list\ndeclarations" checked */
    core_bmap kix_missing;   /* segment names already reported (missing or damaged) */
    char root_identity[GRAPH_SCHEMA_HASH_LEN + 1]; /* of _schema.pg/.json ("" unreadable) */
} vctx;

static int problem(vctx *c, const char *kind, const char *object, const char *remedy,
                   const char *fmt, ...) CORE_PRINTF(5, 6);
static int problem(vctx *c, const char *kind, const char *object, const char *remedy,
                   const char *fmt, ...)
{
    write_verify_report *r = c->r;
    if (r->n_problems == r->cap) {
        size_t nc = r->cap ? 2 * r->cap : 8;
        write_verify_problem *p = core_realloc(r->problems, nc * sizeof *p);
        if (!p) return core_err_nomem();
        r->problems = p;
        r->cap = nc;
    }
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    write_verify_problem *p = &r->problems[r->n_problems];
    p->kind = core_strdup(kind);
    p->object = core_strdup(object);
    p->message = core_strdup(msg);
    p->remedy = core_strdup(remedy);
    if (!p->kind || !p->object || !p->message || !p->remedy) {
        core_free(p->kind);
        core_free(p->object);
        core_free(p->message);
        core_free(p->remedy);
        return core_err_nomem();
    }
    r->n_problems++;
    return 0;
}

/* The message of the error just raised, taken off the thread (the check goes on). */
static const char *last_message(void)
{
    static _Thread_local char buf[CORE_ERR_MSG_CAP];
    const og_error *e = og_error_last();
    snprintf(buf, sizeof buf, "%s", e && e->message ? e->message : "unknown error");
    og_error_clear();
    return buf;
}

static void progress(vctx *c, const char *fmt, ...) CORE_PRINTF(2, 3);
static void progress(vctx *c, const char *fmt, ...)
{
    if (!c->opt->progress) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    c->opt->progress(c->opt->progress_arg, line);
}

/* 1 when key was seen before (it is recorded otherwise). */
static int seen(vctx *c, core_bmap *set, const char *key, int *out)
{
    core_bmap_entry *e;
    int fresh = 0;
    size_t n = strlen(key);
    if (core_bmap_find(set, key, n)) {
        *out = 1;
        return 0;
    }
    char *copy = core_arena_strdup(&c->arena, key);
    if (!copy) return core_err_nomem();
    int rc = core_bmap_put(set, copy, n, &e, &fresh);
    *out = 0;
    return rc;
}

/* ---- files ------------------------------------------------------------------------------- */

/* A file a manifest references: exists, with `size` bytes when size is nonzero. 1 in *ok when
 * it passed. */
static int check_exists(vctx *c, const char *key, uint64_t size, int *ok)
{
    *ok = 0;
    store_meta m;
    int rc = store_head(c->s, key, &m);
    if (rc == OG_E_NOT_FOUND) {
        og_error_clear();
        return problem(c, "file_missing", key, REMEDY_BACKUP,
                       "a retained version references it, but it does not exist");
    }
    if (rc) return problem(c, "file_unreadable", key, REMEDY_BACKUP, "%s", last_message());
    c->r->files++;
    c->r->bytes += m.size;
    if (size && m.size != size)
        return problem(c, "file_size", key, REMEDY_BACKUP,
                       "it holds %" PRIu64 " bytes, the manifest records %" PRIu64, m.size, size);
    *ok = 1;
    return 0;
}

/* Deep: read the data file whole, compare its checksum, decode every page of every column. */
static int check_data_deep(vctx *c, const char *key, const lance_data_file_info *df)
{
    core_buf b = CORE_BUF_INIT;
    int rc = store_get(c->s, key, 0, STORE_ALL, &b);
    if (rc) {
        core_buf_free(&b);
        return problem(c, "file_unreadable", key, REMEDY_BACKUP, "%s", last_message());
    }
    if (df->has_xxh3) {
        uint64_t got = core_hash64(b.data, b.len, 0);
        if (got != df->xxh3) {
            rc = problem(c, "checksum", key, REMEDY_BACKUP,
                         "its bytes hash to %016" PRIx64 ", the manifest recorded %016" PRIx64
                         ": the file was damaged after it was written",
                         got, df->xxh3);
            core_buf_free(&b);
            return rc;
        }
    }
    lance_file2_reader *r = NULL;
    rc = lance_file2_open_bytes(&r, b.data, b.len, key, NULL);
    uint64_t n = rc ? 0 : lance_file2_num_rows(r);
    for (uint64_t at = 0; rc == 0 && at < n; at += DEEP_CHUNK_ROWS) {
        arrow_batch *batch = NULL;
        rc = lance_file2_read(r, NULL, 0, at, DEEP_CHUNK_ROWS, &batch);
        arrow_batch_free(batch);
    }
    lance_file2_close(r);
    core_buf_free(&b);
    if (rc == OG_E_NOMEM) return rc;
    if (rc) return problem(c, "page_decode", key, REMEDY_BACKUP, "%s", last_message());
    c->r->rows += n;
    return 0;
}

/* Without --deep: the checksums our writers recorded, read in bounded pieces and without
 * decoding. A file of at most LANCE_FILE2_SMALL_FILE_BYTES whole against og_xxh3 (what every
 * read of it checks); a larger one block by block against og_block_xxh3 (what ranged reads
 * check), VERIFY_SUM_CHUNK bytes per get. A file with neither (lancedb's, or an older build's
 * larger file without block checksums) is not read here (--deep reads it whole). */
#define VERIFY_SUM_CHUNK (4u << 20)
static int sum_read(vctx *c, const char *key, uint64_t off, uint64_t len, core_buf *b)
{
    int rc = store_get(c->s, key, off, len, b);
    if (rc == 0 || rc == OG_E_NOMEM) return rc;
    rc = problem(c, "file_unreadable", key, REMEDY_BACKUP, "%s", last_message());
    return rc ? rc : 1; /* reported: stop checking this file */
}

static int check_data_sums(vctx *c, const char *key, const lance_data_file_info *df)
{
    uint64_t size = df->size;
    core_buf b = CORE_BUF_INIT;
    int rc = 0;
    if (df->has_xxh3 && size && size <= LANCE_FILE2_SMALL_FILE_BYTES) {
        if ((rc = sum_read(c, key, 0, STORE_ALL, &b)) != 0) goto out;
        uint64_t got = core_hash64(b.data, b.len, 0);
        if (got != df->xxh3)
            rc = problem(c, "checksum", key, REMEDY_BACKUP,
                         "its bytes hash to %016" PRIx64 ", the manifest recorded %016" PRIx64
                         ": the file was damaged after it was written",
                         got, df->xxh3);
        goto out;
    }
    if (!size || !df->block_bytes || !df->n_block_xxh3) goto out;
    const uint64_t bs = df->block_bytes;
    const uint64_t per = VERIFY_SUM_CHUNK / bs ? VERIFY_SUM_CHUNK / bs : 1;
    for (size_t i = 0; i < df->n_block_xxh3; i += per) {
        uint64_t off = (uint64_t)i * bs;
        if (off >= size) break;
        uint64_t len = size - off < per * bs ? size - off : per * bs;
        if ((rc = sum_read(c, key, off, len, &b)) != 0) goto out;
        for (size_t k = 0; k < per && i + k < df->n_block_xxh3; k++) {
            uint64_t at = (uint64_t)k * bs;
            if (at >= b.len) break;
            uint64_t n = b.len - at < bs ? b.len - at : bs;
            uint64_t got = core_hash64(b.data + at, n, 0);
            if (got != df->block_xxh3[i + k]) { /* one problem per file */
                rc = problem(c, "checksum", key, REMEDY_BACKUP,
                             "block %zu (bytes %" PRIu64 "..%" PRIu64 ") hashes to %016" PRIx64
                             ", the manifest recorded %016" PRIx64
                             ": the file was damaged after it was written",
                             i + k, off + at, off + at + n, got, df->block_xxh3[i + k]);
                goto out;
            }
        }
    }
out:
    core_buf_free(&b);
    return rc == 1 ? 0 : rc;
}

static int check_data_file(vctx *c, const lance_dataset *ds, size_t frag, size_t file)
{
    lance_data_file_info df;
    int rc = lance_dataset_data_file(ds, frag, file, &df);
    if (rc)
        return problem(c, "table_version_unreadable", ds->root, REMEDY_BACKUP, "%s",
                       last_message());
    int was, ok;
    if ((rc = seen(c, &c->files, df.key, &was)) || was) return rc;
    rc = check_exists(c, df.key, df.size, &ok);
    if (rc || !ok) return rc;
    if (df.has_xxh3)
        c->r->checksummed++;
    else
        c->r->unchecked++;
    return c->opt->deep ? check_data_deep(c, df.key, &df) : check_data_sums(c, df.key, &df);
}

static int check_deletion_file(vctx *c, const lance_dataset *ds, lance_file_keys *keys, size_t frag)
{
    char key[STORE_KEY_MAX];
    int rc = lance_file_keys_deletion(keys, frag, key);
    if (rc)
        return problem(c, "table_version_unreadable", ds->root, REMEDY_BACKUP, "%s",
                       last_message());
    int was, ok;
    if ((rc = seen(c, &c->files, key, &was)) || was) return rc;
    if ((rc = check_exists(c, key, 0, &ok)) || !ok) return rc;
    if (lance_dataset_deletion_checksummed(ds, frag))
        c->r->checksummed++;
    else
        c->r->unchecked++;
    roaring_bitmap_t *rows = NULL;
    rc = lance_dataset_fragment_deletions(ds, frag, &rows);
    if (rows) roaring_bitmap_free(rows);
    if (rc == OG_E_NOMEM) return rc;
    if (rc) return problem(c, "deletion_file", key, REMEDY_BACKUP, "%s", last_message());
    return 0;
}

/* A key index segment a branch's version lists but does not hold: the version inherited it
 * from the version it was forked from, and it lives in that dataset's _ogkix/ (readers look
 * there too, keyindex.c). The key there, in out, when key is such a segment and it exists. */
static bool inherited_segment(vctx *c, const char *key, char out[STORE_KEY_MAX])
{
    const lance_dataset *ds = c->ds;
    size_t n = strlen(ds->root), k = strlen(LANCE_KIX_DIR);
    if (strncmp(key, ds->root, n) != 0 || key[n] != '/' ||
        strncmp(key + n + 1, LANCE_KIX_DIR, k) != 0)
        return false;
    const char *name = key + n + 1 + k;
    for (size_t i = 0; i < lance_dataset_base_path_count(ds); i++) {
        char dir[STORE_KEY_MAX];
        store_meta m;
        if (lance_dataset_base_dir(ds, i, dir) != 0 ||
            lance_key(out, dir, LANCE_KIX_DIR, name) != 0) {
            og_error_clear();
            continue;
        }
        if (store_head(c->s, out, &m) == 0) return true;
        og_error_clear();
    }
    return false;
}

/* Every other file the manifest references (transaction files, key index segments): it
 * exists. */
static int check_other(void *arg, const char *key)
{
    vctx *c = arg;
    int was, ok;
    int rc = seen(c, &c->files, key, &was);
    if (rc || was) return rc;
    store_meta m;
    char there[STORE_KEY_MAX];
    if (c->ds && store_head(c->s, key, &m) == OG_E_NOT_FOUND) {
        og_error_clear();
        if (inherited_segment(c, key, there)) {
            if ((rc = seen(c, &c->files, there, &was)) != 0 || was) return rc;
            return check_exists(c, there, 0, &ok);
        }
        const char *seg = strstr(key, "/" LANCE_KIX_DIR);
        if (seg) { /* derived data: not lost, and not a backup's business */
            seg += 1 + strlen(LANCE_KIX_DIR);
            if ((rc = seen(c, &c->kix_missing, seg, &was)) != 0) return rc;
            return problem(c, "key_index_missing", key, REMEDY_KIX,
                           "%s version %" PRIu64 " lists this key index segment, which does "
                           "not exist",
                           c->ds->root, lance_dataset_version(c->ds));
        }
    }
    return check_exists(c, key, 0, &ok);
}

/* ---- key indexes ----------------------------------------------------------------------------- */

typedef struct kix_arg {
    vctx *c;
    const lance_dataset *ds;
    int rc;
} kix_arg;

static void kix_problem(void *arg, const char *segment, const char *what)
{
    kix_arg *a = arg;
    int was = 0; /* one report per segment (missing, or its first problem) */
    if (a->rc || (a->rc = seen(a->c, &a->c->kix_missing, segment, &was)) != 0 || was) return;
    char key[STORE_KEY_MAX];
    if (lance_key(key, a->ds->root, LANCE_KIX_DIR, segment) != 0) {
        og_error_clear();
        snprintf(key, sizeof key, "%s", a->ds->root);
    }
    a->rc = problem(a->c, "key_index_damaged", key, REMEDY_KIX,
                    "key index segment of %s version %" PRIu64 " %s", a->ds->root,
                    lance_dataset_version(a->ds), what);
}

/* The key index segments a version lists: each opens and matches the version's fragments
 * (a read of each segment's tail); with deep, every entry is compared with the data. A segment
 * list checked for this table once (the same segments, the same fragments) is not again. */
static int check_key_indexes(vctx *c, const lance_dataset *ds)
{
    const char *segs = lance_dataset_table_meta(ds, LANCE_KIX_SEG_KEY);
    const char *decl = lance_dataset_table_meta(ds, LANCE_KIX_DECL_KEY);
    if (!*segs) return 0;
    size_t n = strlen(ds->root) + strlen(segs) + strlen(decl) + 3;
    char *k = core_malloc(n);
    if (!k) return core_err_nomem();
    snprintf(k, n, "%s\n%s\n%s", ds->root, segs, decl);
    int was;
    int rc = seen(c, &c->kix_lists, k, &was);
    core_free(k);
    if (rc || was) return rc;
    lance_kix_verify_report rep;
    kix_arg a = {c, ds, 0};
    rc = c->opt->deep ? lance_kix_verify(ds, &rep, kix_problem, &a)
                      : lance_kix_check(ds, &rep, kix_problem, &a);
    if (rc == OG_E_NOMEM) return rc;
    if (rc) /* the indexed columns do not read: the data checks report why */
        og_error_clear();
    return a.rc;
}

/* One Lance version of a dataset: its manifest decodes (and matches the checksum the graph
 * manifest recorded for it, when `t` is the graph table pinning it and records one), every
 * file it references checks. */
static int check_dataset(vctx *c, const char *root, uint64_t version, const graph_table *t)
{
    char pair[STORE_KEY_MAX + 32];
    snprintf(pair, sizeof pair, "%s@%" PRIu64, root, version);
    int was;
    int rc = seen(c, &c->pairs, pair, &was);
    if (rc || was) return rc;
    c->r->table_versions++;
    if (c->opt->deep) progress(c, "checking %s version %" PRIu64, root, version);
    lance_dataset *ds = NULL;
    rc = lance_dataset_open(&ds, c->s, root, version, LANCE_ACCESS_INSPECT);
    if (rc == OG_E_NOMEM) return rc;
    if (rc == OG_E_NOT_FOUND) {
        og_error_clear();
        return problem(c, "table_version_missing", pair, REMEDY_BACKUP,
                       "version %" PRIu64 " of %s is retained by the graph but does not exist",
                       version, root);
    }
    if (rc)
        return problem(c, "table_version_unreadable", pair, REMEDY_BACKUP, "%s", last_message());
    c->r->files++; /* the version's manifest file */
    c->r->bytes += ds->m->file_size;
    if (t && t->has_manifest_xxh3) {
        c->r->checksummed++;
        char name[LANCE_VERSION_NAME_CAP], key[STORE_KEY_MAX];
        if (ds->m->file_xxh3 != t->manifest_xxh3 &&
            lance_version_file_name(name, sizeof name, ds->naming, version) == 0 &&
            lance_key(key, root, LANCE_VERSIONS_DIR, name) == 0)
            rc = problem(c, "checksum", key, REMEDY_BACKUP,
                         "the Lance manifest of %s version %" PRIu64 " hashes to %016" PRIx64
                         ", the graph manifest recorded %016" PRIx64,
                         t->alias, version, ds->m->file_xxh3, t->manifest_xxh3);
    } else if (t) {
        c->r->unchecked++;
    }
    lance_file_keys *keys = NULL;
    if (rc == 0 && (rc = lance_file_keys_new(&keys, ds)) != 0)
        rc = problem(c, "table_version_unreadable", ds->root, REMEDY_BACKUP, "%s", last_message());
    for (size_t i = 0; rc == 0 && i < lance_dataset_fragment_count(ds); i++) {
        lance_fragment_info f;
        lance_dataset_fragment_info(ds, i, &f);
        for (size_t j = 0; rc == 0 && j < f.n_files; j++)
            rc = check_data_file(c, ds, i, j);
        if (rc == 0 && f.deletions) rc = check_deletion_file(c, ds, keys, i);
    }
    lance_file_keys_free(keys);
    c->ds = ds;
    if (rc == 0) rc = lance_manifest_files_of(ds->m, root, check_other, c, NULL);
    c->ds = NULL;
    if (rc == 0) rc = check_key_indexes(c, ds);
    lance_dataset_free(ds);
    return rc;
}

/* ---- tables at the head ------------------------------------------------------------------ */

/* The directory of the Lance branch a pin reads: the table's own, or its fork's. */
static int pin_root(char out[STORE_KEY_MAX], const graph_table *t)
{
    if (!t->table_branch || !*t->table_branch) {
        snprintf(out, STORE_KEY_MAX, "%s", t->path);
        return 0;
    }
    return lance_branch_root(out, t->path, t->table_branch);
}

/* Whether a table HEAD above its pin, read as `latest`, is a write that was in flight rather
 * than damage: the rule the writers' revalidation uses (coordinator.c). A writer writes its
 * sidecar before its first table commit and deletes it only after its graph-manifest commit
 * (or recovery's rollback commit) is visible. So, looked at in this order after `latest` was
 * read: a sidecar naming the table now, or else a head of the branch that now pins `latest`
 * or above (the write that made it has published since), explains it. Neither means nobody
 * in the protocol made that version. 1 explained, 0 not, or a negative error. */
static int ahead_explained(vctx *c, const char *branch, const graph_table *t, uint64_t latest)
{
    write_pending *p = NULL;
    size_t n = 0;
    int rc = write_pending_list(c->s, false, &p, &n);
    if (rc == OG_E_NOMEM) return rc;
    if (rc) {
        og_error_clear(); /* sidecars_unreadable is reported by check_sidecars */
        n = 0;
    }
    bool named = false;
    for (size_t i = 0; i < n && !named; i++)
        for (size_t k = 0; k < p[i].n_effects && !named; k++)
            named = p[i].tables && p[i].tables[k] && !strcmp(p[i].tables[k], t->alias);
    write_pending_list_free(p, n);
    if (named) return 1;
    graph_snapshot *now = NULL;
    rc = graph_snapshot_load(&now, c->s, branch, 0, 0);
    if (rc == OG_E_NOMEM) return rc;
    if (rc) { /* the head is read (and reported) by the other checks */
        og_error_clear();
        lance_branch ref; /* unless the branch was deleted meanwhile (its forks with it) */
        if (branch && lance_branch_get(c->s, GRAPH_MANIFEST_DIR, branch, &ref) == OG_E_NOT_FOUND) {
            og_error_clear();
            return 1;
        }
        og_error_clear();
        return 0;
    }
    int explained = 1; /* the table is no longer at the head (dropped since): not the head's */
    for (size_t i = 0; i < now->n_tables; i++) {
        const graph_table *u = &now->tables[i];
        const char *ub = u->table_branch && *u->table_branch ? u->table_branch : NULL;
        const char *tb = t->table_branch && *t->table_branch ? t->table_branch : NULL;
        if (strcmp(u->path, t->path) != 0 || (ub ? !tb || strcmp(ub, tb) : tb != NULL)) continue;
        explained = u->version >= latest;
    }
    graph_snapshot_free(now);
    return explained;
}

/* The file graph-manifest version v of branch (NULL: main) has or had, into out ("" when
 * it cannot be named): what a table ahead of every pin says was lost. */
static void manifest_version_key(vctx *c, const char *branch, uint64_t v, char out[STORE_KEY_MAX])
{
    char root[STORE_KEY_MAX], name[LANCE_VERSION_NAME_CAP];
    uint64_t latest = 0;
    lance_naming nm;
    out[0] = '\0';
    if (lance_branch_root(root, GRAPH_MANIFEST_DIR, branch) != 0 ||
        lance_version_latest(c->s, root, &latest, &nm) != 0 ||
        lance_version_file_name(name, sizeof name, nm, v) != 0 ||
        lance_key(out, root, LANCE_VERSIONS_DIR, name) != 0)
        out[0] = '\0';
    og_error_clear(); /* only a name for the message */
}

/* The head's pin of t (on `branch`'s head, at graph-manifest version head_version: only a
 * table that branch forked is written by it) against the Lance HEAD of the table (or fork) it
 * reads. */
static int check_head_pin(vctx *c, const char *branch, uint64_t head_version, const graph_table *t)
{
    const char *tb = t->table_branch && *t->table_branch ? t->table_branch : NULL;
    if (tb ? !branch || strcmp(tb, branch) != 0 : branch != NULL)
        return 0; /* another branch's table, which that branch's head is checked against */
    char root[STORE_KEY_MAX];
    int rc = pin_root(root, t);
    if (rc)
        return rc == OG_E_NOMEM ? rc
                                : problem(c, "table_version_unreadable", t->path, REMEDY_BACKUP,
                                          "%s", last_message());
    uint64_t latest = 0;
    lance_naming nm;
    rc = lance_version_latest(c->s, root, &latest, &nm);
    if (rc == OG_E_NOMEM) return rc;
    char obj[STORE_KEY_MAX + 32];
    snprintf(obj, sizeof obj, "%s@%" PRIu64, root, t->version);
    if (rc == OG_E_NOT_FOUND) {
        og_error_clear();
        return problem(c, "table_missing", t->path, REMEDY_BACKUP,
                       "table %s pinned at version %" PRIu64 " has no versions at all", t->alias,
                       t->version);
    }
    if (rc) return problem(c, "table_version_unreadable", obj, REMEDY_BACKUP, "%s", last_message());
    if (latest <= t->version) return 0;
    int ex = ahead_explained(c, branch, t, latest);
    if (ex) return ex < 0 ? ex : 0;
    /* Name the version that would have published it, as a read at the head does. */
    char lost[STORE_KEY_MAX];
    manifest_version_key(c, branch, head_version + 1, lost);
    return problem(c, "table_ahead", obj, branch ? REMEDY_AHEAD_BRANCH : REMEDY_AHEAD,
                   "table %s is at Lance version %" PRIu64 " but the graph pins %" PRIu64
                   " and no pending recovery intent names it (re-checked after the table: no "
                   "write was in flight): the newest graph-manifest version (version %" PRIu64
                   "%s%s, after the head %" PRIu64 ") was lost, or a writer outside omnigraph "
                   "(lancedb) committed to the table",
                   t->alias, latest, t->version, head_version + 1, lost[0] ? ", " : "", lost,
                   head_version);
}

/* ---- the graph manifest, schema, sidecars, audit log -------------------------------------- */

static int check_lineage(vctx *c, uint64_t version)
{
    graph_snapshot *snap = NULL;
    int rc = graph_snapshot_load(&snap, c->s, NULL, version, GRAPH_SNAP_LINEAGE);
    if (rc == OG_E_NOMEM) return rc;
    if (rc) return 0; /* reported by the reconstruction check */
    /* A merge's merged parent is a commit of the source branch's lineage, not this one's (and
     * it is gone with the source when that branch is deleted): only first parents are held. */
    for (size_t i = 0; rc == 0 && i < snap->n_commits; i++) {
        const graph_commit *g = &snap->commits[i];
        if (g->parent[0] && !graph_lineage_find(snap, g->parent))
            rc = problem(c, "lineage_parent_missing", g->id, REMEDY_BACKUP,
                         "commit %s names parent %s, which the lineage does not hold", g->id,
                         g->parent);
    }
    graph_snapshot_free(snap);
    return rc;
}

static int check_schema(vctx *c, const graph_snapshot *head)
{
    const char *files[2] = {GRAPH_SCHEMA_PG, GRAPH_SCHEMA_JSON};
    int missing = 0, rc = 0;
    for (int i = 0; rc == 0 && i < 2; i++) {
        store_meta m;
        int hr = store_head(c->s, files[i], &m);
        if (hr == OG_E_NOT_FOUND) {
            og_error_clear();
            missing = 1;
            rc = problem(c, "schema_missing", files[i], REMEDY_SCHEMA,
                         "the accepted schema file is missing");
        } else if (hr) {
            rc = problem(c, "schema_unreadable", files[i], REMEDY_SCHEMA, "%s", last_message());
            missing = 1;
        }
    }
    if (rc || missing) return rc;
    lang_catalog *cat = NULL;
    char identity[GRAPH_SCHEMA_HASH_LEN + 1];
    rc = graph_schema_read(c->s, &cat, identity);
    lang_catalog_free(cat);
    if (rc == 0) memcpy(c->root_identity, identity, sizeof identity);
    if (rc == OG_E_NOMEM) return rc;
    if (rc)
        return problem(c, "schema_damaged", GRAPH_SCHEMA_PG, REMEDY_SCHEMA, "%s", last_message());
    if (head && strcmp(identity, head->schema_identity) != 0)
        return problem(c, "schema_mismatch", GRAPH_SCHEMA_JSON, REMEDY_SCHEMA,
                       "the schema files have identity %s, the head (manifest version %" PRIu64
                       ") names %s",
                       identity, head->manifest_version, head->schema_identity);
    return 0;
}

static int check_sidecars(vctx *c)
{
    int rc = write_pending_list(c->s, false, &c->pending, &c->n_pending);
    if (rc == OG_E_NOMEM) return rc;
    if (rc)
        return problem(c, "sidecars_unreadable", GRAPH_RECOVERY_DIR "/", "omnigraph recover list",
                       "%s", last_message());
    c->r->sidecars = c->n_pending;
    for (size_t i = 0; rc == 0 && i < c->n_pending; i++) {
        const write_pending *p = &c->pending[i];
        if (!p->damaged) continue;
        /* A finished writer's sidecar is deleted by recycling its storage (STORE_F_RECYCLE):
         * read while that happened, it looks damaged. Read again by its name: gone, or whole
         * now, it was a write that finished, not damage. */
        write_pending again;
        int ar = write_pending_show(c->s, false, p->operation_id, &again);
        bool damaged = ar == 0 ? again.damaged : ar != OG_E_NOT_FOUND;
        if (ar == OG_E_NOMEM) return ar;
        if (ar) og_error_clear();
        if (ar == 0) write_pending_clear(&again);
        if (!damaged) continue;
        char obj[64], remedy[400];
        snprintf(obj, sizeof obj, GRAPH_RECOVERY_DIR "/%s.json", p->operation_id);
        snprintf(remedy, sizeof remedy,
                 "omnigraph recover show %s, then omnigraph recover resolve %s --discard "
                 "--confirm --force (a commit it made stays; effects it never published are "
                 "then reported as table_ahead)",
                 p->operation_id, p->operation_id);
        rc = problem(c, "sidecar_damaged", obj, remedy, "%s",
                     p->problem ? p->problem : "the file does not parse as a recovery intent");
    }
    return rc;
}

static int check_audit(vctx *c)
{
    uint64_t v = 0;
    lance_naming nm;
    /* Only this engine appends to the log, writing the hint after each version exists: a
     * hint above every stored version means the newest records were lost. */
    int rc = lance_version_latest_owned(c->s, GRAPH_AUDIT_DIR, 0, true, &v, &nm);
    if (rc == OG_E_NOT_FOUND) { /* made by the first recovery */
        og_error_clear();
        return 0;
    }
    if (rc == OG_E_NOMEM) return rc;
    if (rc == OG_E_CORRUPT) {
        char obj[STORE_KEY_MAX];
        snprintf(obj, sizeof obj, "%s", og_error_last()->object ? og_error_last()->object : "");
        return problem(c, "audit_version_lost", obj[0] ? obj : GRAPH_AUDIT_DIR, REMEDY_AUDIT, "%s",
                       last_message());
    }
    if (rc) return problem(c, "audit_log", GRAPH_AUDIT_DIR, REMEDY_BACKUP, "%s", last_message());
    size_t before = c->r->n_problems;
    rc = check_dataset(c, GRAPH_AUDIT_DIR, v, NULL);
    if (rc || c->r->n_problems != before) return rc;
    lance_dataset *ds = NULL;
    uint64_t n = 0;
    rc = lance_dataset_open(&ds, c->s, GRAPH_AUDIT_DIR, v, LANCE_ACCESS_READ);
    if (rc == 0) rc = lance_dataset_count_rows(ds, &n);
    lance_dataset_free(ds);
    if (rc == OG_E_NOMEM) return rc;
    if (rc) return problem(c, "audit_log", GRAPH_AUDIT_DIR, REMEDY_BACKUP, "%s", last_message());
    return 0;
}

/* ---- branch refs, schema history ------------------------------------------------------------ */

static int note(vctx *c, core_bmap *set, const char *key)
{
    int was;
    return seen(c, set, key, &was);
}

static bool noted(const core_bmap *set, const char *key)
{
    return core_bmap_find(set, key, strlen(key)) != NULL;
}

/* What a snapshot names that is checked once at the end: its schema, its tables' paths, and
 * its pins on table forks (branch: the graph branch the snapshot is the head of). */
static int note_snapshot(vctx *c, const graph_snapshot *snap, const char *branch)
{
    int rc = snap->schema_identity[0] ? note(c, &c->schemas, snap->schema_identity) : 0;
    for (size_t i = 0; rc == 0 && i < snap->n_tables; i++) {
        const graph_table *t = &snap->tables[i];
        rc = note(c, &c->paths, t->path);
        if (rc == 0 && branch && t->table_branch && *t->table_branch) {
            char k[3 * STORE_KEY_MAX];
            snprintf(k, sizeof k, "%s\n%s\n%s", t->path, t->table_branch, branch);
            rc = note(c, &c->forks, k);
        }
    }
    return rc;
}

/* Every branch ref file under root/_refs/branches/: fn(c, key, name, arg) with the name
 * unescaped ('/' is %2F in the file name); files that name no branch are skipped, as lance
 * skips them. */
typedef int (*ref_fn)(vctx *c, const char *root, const char *key, const char *name);
static int each_ref(vctx *c, const char *root, ref_fn fn)
{
    char prefix[STORE_KEY_MAX];
    int rc = lance_key(prefix, root, LANCE_REFS_BRANCHES_DIR, "");
    if (rc)
        return rc == OG_E_NOMEM ? rc
                                : problem(c, "branch_refs_unreadable", root, REMEDY_BACKUP, "%s",
                                          last_message());
    store_list l;
    memset(&l, 0, sizeof l);
    rc = store_list_prefix(c->s, prefix, 0, &l);
    if (rc == OG_E_NOT_FOUND) {
        og_error_clear();
        return 0;
    }
    if (rc == OG_E_NOMEM) return rc;
    if (rc)
        return problem(c, "branch_refs_unreadable", prefix, REMEDY_BACKUP, "%s", last_message());
    store_list_sort(&l);
    size_t np = strlen(prefix);
    for (size_t i = 0; rc == 0 && i < l.count; i++) {
        const char *key = l.items[i].key, *file = key + np;
        size_t len = strlen(file);
        if (l.items[i].is_prefix || strncmp(key, prefix, np) != 0 || len <= 5 ||
            strchr(file, '/') || strcmp(file + len - 5, ".json") != 0)
            continue;
        char name[LANCE_BRANCH_NAME_MAX + 1];
        size_t k = 0;
        bool ok = len - 5 <= LANCE_BRANCH_NAME_MAX;
        for (size_t j = 0; ok && j < len - 5; j++) {
            if (file[j] != '%') {
                name[k++] = file[j];
            } else if (j + 2 < len - 5 && file[j + 1] == '2' &&
                       (file[j + 2] == 'F' || file[j + 2] == 'f')) {
                name[k++] = '/';
                j += 2;
            } else {
                ok = false;
            }
        }
        name[k] = '\0';
        if (!ok || lance_branch_name_check(name) != 0) {
            og_error_clear();
            continue;
        }
        rc = fn(c, root, key, name);
    }
    store_list_free(&l);
    return rc;
}

/* A graph branch ref: it reads. The graph branches are then those whose ref reads. */
static int graph_ref(vctx *c, const char *root, const char *key, const char *name)
{
    if (write_branch_name_check(name) != 0) { /* an internal or foreign ref of the manifest */
        og_error_clear();
        return 0;
    }
    lance_branch ref;
    int rc = lance_branch_get(c->s, root, name, &ref);
    if (rc == OG_E_NOT_FOUND) { /* deleted since it was listed */
        og_error_clear();
        return 0;
    }
    if (rc == OG_E_NOMEM) return rc;
    if (rc)
        return problem(c, "branch_ref_damaged", key, REMEDY_REF,
                       "the ref of graph branch %s does not read (the branch is invisible and "
                       "every branch listing fails): %s",
                       name, last_message());
    return note(c, &c->live, name);
}

/* Graph-manifest branch directories (tree/<name>/ holding _versions/) that no readable ref
 * names: a branch made invisible by the loss of its ref. dir is "tree/" or a directory below
 * it; one delimited listing per directory that is not a known branch. */
static int orphan_trees(vctx *c, const char *dir, int depth)
{
    char prefix[STORE_KEY_MAX];
    int rc = lance_key(prefix, GRAPH_MANIFEST_DIR, dir, "");
    if (rc) return rc == OG_E_NOMEM ? rc : 0;
    store_list l;
    memset(&l, 0, sizeof l);
    rc = store_list_prefix(c->s, prefix, STORE_LIST_DELIMITED, &l);
    if (rc == OG_E_NOT_FOUND) {
        og_error_clear();
        return 0;
    }
    if (rc)
        return rc == OG_E_NOMEM ? rc
                                : problem(c, "branch_refs_unreadable", prefix, REMEDY_BACKUP, "%s",
                                          last_message());
    store_list_sort(&l);
    size_t np = strlen(prefix), nt = strlen(LANCE_TREE_DIR);
    bool versions = false;
    for (size_t i = 0; i < l.count; i++)
        if (l.items[i].is_prefix && !strcmp(l.items[i].key + np, LANCE_VERSIONS_DIR))
            versions = true;
    if (versions && depth > 0) {
        char name[STORE_KEY_MAX];
        snprintf(name, sizeof name, "%.*s", (int)(strlen(dir) - nt - 1), dir + nt);
        if (!noted(&c->live, name) && write_branch_name_check(name) == 0) {
            char key[STORE_KEY_MAX], file[STORE_KEY_MAX];
            size_t k = 0;
            for (const char *q = name; *q && k + 4 < sizeof file; q++) {
                if (*q == '/') {
                    memcpy(file + k, "%2F", 3);
                    k += 3;
                } else {
                    file[k++] = *q;
                }
            }
            snprintf(file + k, sizeof file - k, ".json");
            store_meta m;
            if (lance_key(key, GRAPH_MANIFEST_DIR, LANCE_REFS_BRANCHES_DIR, file) != 0)
                og_error_clear();
            else if (store_head(c->s, key, &m) == 0)
                goto done; /* there but damaged: branch_ref_damaged */
            rc = problem(c, "branch_ref_missing", key,
                         "if the branch was not deleted on purpose, " REMEDY_REF
                         "; if it was (or was never created), these are leftovers, harmless and "
                         "invisible",
                         "graph branch %s has its manifest versions under %s%s but no ref: "
                         "the branch is invisible to every command. Its ref was lost, or a branch "
                         "delete was interrupted (or is running) after removing it, or a "
                         "create before writing it",
                         name, prefix, LANCE_VERSIONS_DIR);
        }
    done:
        og_error_clear();
    } else if (depth < 8) {
        for (size_t i = 0; rc == 0 && i < l.count; i++) {
            if (!l.items[i].is_prefix) continue;
            const char *child = l.items[i].key + np; /* "seg/" */
            char sub[STORE_KEY_MAX];
            snprintf(sub, sizeof sub, "%s%s", dir, child);
            char name[STORE_KEY_MAX];
            snprintf(name, sizeof name, "%.*s", (int)(strlen(sub) - nt - 1), sub + nt);
            if (depth > 0 && child[0] == '_') continue; /* a branch's own files */
            if (noted(&c->live, name)) continue;        /* a branch: its checks read it */
            rc = orphan_trees(c, sub, depth + 1);
        }
    }
    store_list_free(&l);
    return rc;
}

/* A table branch ref (a fork of a table on a graph branch): it reads, and its directory holds
 * versions from the fork point on. */
static int table_ref(vctx *c, const char *root, const char *key, const char *name)
{
    char k[2 * STORE_KEY_MAX];
    snprintf(k, sizeof k, "%s\n%s", root, name);
    int rc = note(c, &c->fork_refs, k);
    if (rc) return rc;
    lance_branch ref;
    rc = lance_branch_get(c->s, root, name, &ref);
    if (rc == OG_E_NOT_FOUND) {
        og_error_clear();
        return 0;
    }
    if (rc == OG_E_NOMEM) return rc;
    if (rc)
        return problem(c, "table_branch_ref_damaged", key, REMEDY_REF,
                       "the ref of fork %s of table %s does not read (every read of graph "
                       "branch %s fails, and lance cannot list the table's branches): %s",
                       name, root, name, last_message());
    char dir[STORE_KEY_MAX];
    uint64_t latest = 0;
    lance_naming nm;
    rc = lance_branch_root(dir, root, name);
    if (rc == 0) rc = lance_version_latest(c->s, dir, &latest, &nm);
    if (rc == OG_E_NOMEM) return rc;
    if (rc == 0 && latest >= ref.parent_version) return 0;
    if (rc) og_error_clear();
    return problem(c, "table_branch_version_missing", key, REMEDY_BACKUP,
                   "fork %s of table %s starts at version %" PRIu64
                   ", but its directory %s holds %s",
                   name, root, ref.parent_version, dir, rc ? "no version" : "only older versions");
}

static int check_refs(vctx *c)
{
    int rc = orphan_trees(c, LANCE_TREE_DIR, 0);
    for (size_t i = 0; rc == 0 && i < core_bmap_count(&c->paths); i++)
        rc = each_ref(c, (const char *)c->paths.e[i].key, table_ref);
    /* every pin on a fork has its fork's ref (a branch deleted meanwhile took its forks) */
    for (size_t i = 0; rc == 0 && i < core_bmap_count(&c->forks); i++) {
        char path[STORE_KEY_MAX], fork[STORE_KEY_MAX], branch[STORE_KEY_MAX];
        const char *k = (const char *)c->forks.e[i].key;
        const char *a = strchr(k, '\n'), *b = a ? strchr(a + 1, '\n') : NULL;
        if (!a || !b) continue;
        snprintf(path, sizeof path, "%.*s", (int)(a - k), k);
        snprintf(fork, sizeof fork, "%.*s", (int)(b - a - 1), a + 1);
        snprintf(branch, sizeof branch, "%s", b + 1);
        char pf[2 * STORE_KEY_MAX];
        snprintf(pf, sizeof pf, "%s\n%s", path, fork);
        lance_branch ref;
        if (noted(&c->fork_refs, pf) &&
            lance_branch_get(c->s, path, fork, &ref) != OG_E_NOT_FOUND) {
            og_error_clear();
            continue;
        }
        og_error_clear();
        if (lance_branch_get(c->s, GRAPH_MANIFEST_DIR, branch, &ref) == OG_E_NOT_FOUND) {
            og_error_clear(); /* the graph branch was deleted meanwhile */
            continue;
        }
        og_error_clear();
        char key[STORE_KEY_MAX], file[STORE_KEY_MAX];
        size_t n = 0;
        for (const char *q = fork; *q && n + 4 < sizeof file; q++) {
            if (*q == '/') {
                memcpy(file + n, "%2F", 3);
                n += 3;
            } else {
                file[n++] = *q;
            }
        }
        snprintf(file + n, sizeof file - n, ".json");
        if (lance_key(key, path, LANCE_REFS_BRANCHES_DIR, file) != 0) og_error_clear();
        rc = problem(c, "table_branch_ref_missing", key, REMEDY_REF,
                     "graph branch %s pins table %s on its fork %s, whose ref is gone: every "
                     "read of the branch fails",
                     branch, path, fork);
    }
    return rc;
}

/* Every schema a retained commit or a branch head names is kept under _schemas/ by identity,
 * reads, and hashes to that identity (graph_schema_read_identity). A graph made before
 * schemas were kept (no _schemas/ at all) reads its one schema from the root pair. */
static int check_schema_history(vctx *c)
{
    char(*kept)[GRAPH_SCHEMA_HASH_LEN + 1] = NULL;
    size_t n_kept = 0;
    int rc = graph_schema_list(c->s, &kept, &n_kept);
    core_free(kept);
    if (rc == OG_E_NOMEM) return rc;
    if (rc) {
        og_error_clear();
        n_kept = 1; /* a listing that fails is no proof of an older graph */
    }
    rc = 0;
    for (size_t i = 0; rc == 0 && i < core_bmap_count(&c->schemas); i++) {
        const char *id = (const char *)c->schemas.e[i].key;
        bool accepted = !strcmp(id, c->root_identity);
        char pg[STORE_KEY_MAX], js[STORE_KEY_MAX], remedy[STORE_KEY_MAX * 3];
        graph_schema_version_keys(id, pg, js);
        if (accepted)
            snprintf(remedy, sizeof remedy,
                     "copy %s to %s and %s to %s (the accepted schema's pair is the same two "
                     "files), or restore them from a backup",
                     GRAPH_SCHEMA_PG, pg, GRAPH_SCHEMA_JSON, js);
        else
            snprintf(remedy, sizeof remedy,
                     "restore %s and %s from a backup (they never change once written)", pg, js);
        store_meta m;
        const char *missing = NULL;
        if (store_head(c->s, pg, &m) != 0)
            missing = pg;
        else if (store_head(c->s, js, &m) != 0)
            missing = js;
        og_error_clear();
        if (missing) {
            if (n_kept == 0 && accepted) continue;
            rc = problem(c, "schema_history_missing", missing, remedy,
                         "commits of this graph were made under schema %s, whose kept copy is "
                         "missing: reads at those commits fail",
                         id);
            continue;
        }
        c->r->files += 2;
        lang_catalog *cat = NULL;
        int sr = graph_schema_read_identity(c->s, id, &cat);
        lang_catalog_free(cat);
        if (sr == OG_E_NOMEM) return sr;
        if (sr)
            rc = problem(c, "schema_history_damaged", pg, remedy,
                         "the kept copy of schema %s does not read as that schema: %s", id,
                         last_message());
    }
    return rc;
}

/* ---- the whole graph ------------------------------------------------------------------------ */

/* Every other graph branch at its head: it reconstructs, its lineage is whole, every table
 * version it pins (its forks' and those it shares with the branch it came from) is sound, and
 * each fork's Lance HEAD is the version the branch pins unless a pending intent names it. A
 * branch's older manifest versions are not reconstructed (main's are). */
static int check_branches(vctx *c)
{
    /* each ref read one by one, so one damaged ref is named and does not hide the others */
    int rc = each_ref(c, GRAPH_MANIFEST_DIR, graph_ref);
    size_t n = core_bmap_count(&c->live);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const char *name = (const char *)c->live.e[i].key;
        if (!strcmp(name, "main")) continue;
        progress(c, "branch %s", name);
        graph_snapshot *snap = NULL;
        int lr = graph_snapshot_load(&snap, c->s, name, 0, GRAPH_SNAP_LINEAGE);
        if (lr == OG_E_NOMEM) {
            rc = lr;
            break;
        }
        lance_branch ref;
        if (lr && lance_branch_get(c->s, GRAPH_MANIFEST_DIR, name, &ref) == OG_E_NOT_FOUND) {
            og_error_clear(); /* deleted since it was listed */
            continue;
        }
        if (lr) {
            rc = problem(c, "branch_unreadable", name, REMEDY_BACKUP,
                         "the head of branch %s does not reconstruct: %s", name, last_message());
            continue;
        }
        c->r->branches++;
        rc = note_snapshot(c, snap, name);
        for (size_t t = 0; rc == 0 && t < snap->n_tables; t++) {
            char root[STORE_KEY_MAX];
            if (pin_root(root, &snap->tables[t]) != 0) {
                rc = problem(c, "table_version_unreadable", snap->tables[t].path, REMEDY_BACKUP,
                             "%s", last_message());
                continue;
            }
            rc = check_dataset(c, root, snap->tables[t].version, &snap->tables[t]);
            if (rc == 0) rc = check_head_pin(c, name, snap->manifest_version, &snap->tables[t]);
        }
        for (size_t k = 0; rc == 0 && k < snap->n_commits; k++) { /* first parents, as above */
            const graph_commit *g = &snap->commits[k];
            if (g->parent[0] && !graph_lineage_find(snap, g->parent))
                rc = problem(c, "lineage_parent_missing", g->id, REMEDY_BACKUP,
                             "commit %s of branch %s names parent %s, which its lineage "
                             "does not hold",
                             g->id, name, g->parent);
        }
        graph_snapshot_free(snap);
    }
    return rc;
}

/* The hole between stored graph-manifest versions lo and hi is still there in a second
 * listing, with lo still stored (a cleanup deletes lo before anything above it). */
static bool hole_confirmed(vctx *c, uint64_t lo, uint64_t hi)
{
    lance_version_list vl = {0};
    if (lance_versions_list(c->s, GRAPH_MANIFEST_DIR, &vl) != 0) {
        og_error_clear();
        return false;
    }
    bool lo_there = false, inside = false;
    for (size_t i = 0; i < vl.n; i++) {
        if (vl.v[i] == lo) lo_there = true;
        if (vl.v[i] > lo && vl.v[i] < hi) inside = true;
    }
    lance_version_list_free(&vl);
    return lo_there && !inside;
}

static int run(vctx *c)
{
    lance_version_list vl = {0};
    int rc = lance_versions_list(c->s, GRAPH_MANIFEST_DIR, &vl);
    if (rc == 0 && vl.n == 0) {
        lance_version_list_free(&vl);
        return core_err(OG_E_NOT_FOUND, "no graph here: '%s' holds no versions",
                        GRAPH_MANIFEST_DIR);
    }
    if (rc) return rc;
    if ((rc = check_sidecars(c))) goto done;
    /* A hole at or above the hint (cleanup makes them only below it, after moving the hint):
     * the search for the head stops there (docs/maintenance.md, "A head that is never silently
     * stale"). The newer versions hold every commit; repair moves the hint above it. */
    uint64_t hint = lance_hint_read(c->s, GRAPH_MANIFEST_DIR);
    for (size_t i = 0; rc == 0 && i + 1 < vl.n; i++) {
        if (vl.v[i + 1] == vl.v[i] + 1) continue;
        bool above = vl.v[i + 1] - 1 >= hint;
        /* Below the hint the head search does not meet it, but graph cleanup deletes only the
         * oldest versions (one run is kept up to the latest), so a hole above a stored version
         * is a lost file too, and reads --at its commits fail: unless a cleanup running now
         * deleted them after the listing (oldest first: the version below goes first). */
        if (!above && !hole_confirmed(c, vl.v[i], vl.v[i + 1])) continue;
        char name[LANCE_VERSION_NAME_CAP], key[STORE_KEY_MAX];
        rc = lance_version_file_name(name, sizeof name, vl.naming, vl.v[i] + 1);
        if (rc == 0) rc = lance_key(key, GRAPH_MANIFEST_DIR, LANCE_VERSIONS_DIR, name);
        if (rc == 0 && above)
            rc = problem(c, "manifest_version_lost", key,
                         "omnigraph repair starts the search for the head above the gap (it "
                         "loses no commit: every newer version holds them all); restoring the "
                         "file from a backup also keeps reads --at it",
                         "graph-manifest versions %" PRIu64 "..%" PRIu64
                         " are missing while newer ones exist: reads at the head stop there",
                         vl.v[i] + 1, vl.v[i + 1] - 1);
        else if (rc == 0)
            rc = problem(c, "manifest_version_lost", key,
                         "restore the file from a backup taken after it was written (nothing "
                         "else is needed: the head and the other commits read as before)",
                         "graph-manifest versions %" PRIu64 "..%" PRIu64
                         " are missing while older and newer ones are stored (cleanup removes "
                         "only the oldest): reads --at their commits fail",
                         vl.v[i] + 1, vl.v[i + 1] - 1);
    }
    if (rc) goto done;
    graph_snapshot *head = NULL;
    /* Newest first, so the head is the newest version that reconstructs. */
    for (size_t i = vl.n; rc == 0 && i-- > 0;) {
        uint64_t v = vl.v[i];
        char name[LANCE_VERSION_NAME_CAP], key[STORE_KEY_MAX];
        rc = lance_version_file_name(name, sizeof name, vl.naming, v);
        if (rc == 0) rc = lance_key(key, GRAPH_MANIFEST_DIR, LANCE_VERSIONS_DIR, name);
        if (rc) break;
        progress(c, "graph manifest version %" PRIu64, v);
        graph_snapshot *snap = NULL;
        int lr = graph_snapshot_load(&snap, c->s, NULL, v, 0);
        if (lr == OG_E_NOMEM) {
            rc = lr;
            break;
        }
        if (lr) {
            rc = problem(c, "manifest_version_unreadable", key,
                         i == vl.n - 1 ? REMEDY_REPAIR : REMEDY_BACKUP,
                         "graph-manifest version %" PRIu64 " does not reconstruct: %s", v,
                         last_message());
            /* The files it names, unless its own bytes fail their checksum: names read from
             * damaged bytes would be reported as missing files that never existed. */
            lance_dataset *ds = NULL;
            bool intact =
                lance_dataset_open(&ds, c->s, GRAPH_MANIFEST_DIR, v, LANCE_ACCESS_INSPECT) == 0 &&
                graph_manifest_chain_check(ds) == 0;
            lance_dataset_free(ds);
            og_error_clear(); /* reported above */
            if (rc == 0 && intact) rc = check_dataset(c, GRAPH_MANIFEST_DIR, v, NULL);
            continue;
        }
        c->r->manifest_versions++;
        rc = note_snapshot(c, snap, NULL);
        if (rc == 0) rc = check_dataset(c, GRAPH_MANIFEST_DIR, v, NULL);
        for (size_t t = 0; rc == 0 && t < snap->n_tables; t++)
            if (!snap->tables[t].table_branch || !*snap->tables[t].table_branch)
                rc = check_dataset(c, snap->tables[t].path, snap->tables[t].version,
                                   &snap->tables[t]);
        if (!head)
            head = snap;
        else
            graph_snapshot_free(snap);
    }
    if (rc == 0 && head) {
        c->r->tables = head->n_tables;
        for (size_t t = 0; rc == 0 && t < head->n_tables; t++)
            rc = check_head_pin(c, NULL, head->manifest_version, &head->tables[t]);
        if (rc == 0) rc = check_lineage(c, head->manifest_version);
    }
    if (rc == 0) rc = check_branches(c);
    if (rc == 0) rc = check_refs(c);
    if (rc == 0) rc = check_schema(c, head);
    if (rc == 0) rc = check_schema_history(c);
    if (rc == 0) rc = check_audit(c);
    graph_snapshot_free(head);
done:
    lance_version_list_free(&vl);
    return rc;
}

int write_verify(store *s, const write_verify_options *opt, write_verify_report *out)
{
    write_verify_options def = {0};
    memset(out, 0, sizeof *out);
    vctx c = {.s = s,
              .opt = opt ? opt : &def,
              .r = out,
              .files = CORE_BMAP_INIT,
              .pairs = CORE_BMAP_INIT,
              .schemas = CORE_BMAP_INIT,
              .paths = CORE_BMAP_INIT,
              .forks = CORE_BMAP_INIT,
              .fork_refs = CORE_BMAP_INIT,
              .live = CORE_BMAP_INIT,
              .kix_lists = CORE_BMAP_INIT,
              .kix_missing = CORE_BMAP_INIT};
    core_arena_init(&c.arena, 0);
    int rc = run(&c);
    core_bmap_free(&c.files);
    core_bmap_free(&c.pairs);
    core_bmap *sets[] = {&c.schemas, &c.paths,     &c.forks,      &c.fork_refs,
                         &c.live,    &c.kix_lists, &c.kix_missing};
    for (size_t i = 0; i < sizeof sets / sizeof *sets; i++)
        core_bmap_free(sets[i]);
    core_arena_free(&c.arena);
    write_pending_list_free(c.pending, c.n_pending);
    if (rc) write_verify_report_clear(out);
    return rc;
}

void write_verify_report_clear(write_verify_report *r)
{
    for (size_t i = 0; i < r->n_problems; i++) {
        core_free(r->problems[i].kind);
        core_free(r->problems[i].object);
        core_free(r->problems[i].message);
        core_free(r->problems[i].remedy);
    }
    core_free(r->problems);
    memset(r, 0, sizeof *r);
}
