/* Online backup (backup.h): copy one pinned snapshot of a graph root into another store in an
 * order that leaves the copy's commit point (its graph-manifest version) for last, make it
 * durable, then reopen the copy and check it against the pin. A claim written first and
 * deleted last marks the destination as an unfinished backup until then (GRAPH_BACKUP_CLAIM). */
#include "write/backup.h"

#include "core/alloc.h"
#include "core/buf.h"
#include "core/error.h"
#include "core/failpoint.h"
#include "core/hmap.h"
#include "core/log.h"
#include "lance/cleanup.h"
#include "lance/dataset.h"
#include "lance/keyindex.h"
#include "lance/paths.h"
#include "lance/version.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define BACKUP_DEFAULT_ATTEMPTS 5

/* ---- a set of keys (insertion order kept) ------------------------------------------------- */

typedef struct keyset {
    char **v;
    size_t n, cap;
    core_hmap map;
} keyset;

static void keyset_free(keyset *k)
{
    for (size_t i = 0; i < k->n; i++)
        core_free(k->v[i]);
    core_free(k->v);
    core_hmap_free(&k->map);
    memset(k, 0, sizeof *k);
}

static int keyset_has(const keyset *k, const char *key)
{
    uint64_t h = core_hmap_hash(key, strlen(key));
    core_hmap_probe p = core_hmap_probe_of(&k->map, h);
    uint32_t e;
    while (core_hmap_next(&k->map, &p, &e))
        if (!strcmp(k->v[e], key)) return 1;
    return 0;
}

/* Add key unless present. */
static int keyset_add(keyset *k, const char *key)
{
    uint64_t h = core_hmap_hash(key, strlen(key));
    core_hmap_probe p = core_hmap_probe_of(&k->map, h);
    uint32_t e;
    while (core_hmap_next(&k->map, &p, &e))
        if (!strcmp(k->v[e], key)) return 0;
    if (k->n == k->cap) {
        size_t nc = k->cap ? 2 * k->cap : 64;
        char **v = core_realloc(k->v, nc * sizeof *v);
        if (!v) return core_err_nomem();
        k->v = v;
        k->cap = nc;
    }
    char *copy = core_strdup(key);
    if (!copy) return core_err_nomem();
    int rc = core_hmap_add_at(&k->map, &p, h, (uint32_t)k->n);
    if (rc) {
        core_free(copy);
        return rc;
    }
    k->v[k->n++] = copy;
    return 0;
}

/* ---- copying ------------------------------------------------------------------------------- */

typedef struct backup_ctx {
    store *src, *dst;
    keyset written; /* every key this backup wrote into dst, over all attempts */
    keyset needed;  /* what the current attempt's pin needs */
    keyset pending; /* written unsynced, not yet synced */
    core_buf buf;
    uint64_t files, bytes;
} backup_ctx;

/* Copy key from src to dst unsynced (it joins `pending`). Data, deletion, transaction, index
 * and manifest files are immutable under their names, so one already written by an earlier
 * attempt is not copied again; `mutable` files (the schema) always are. A key index segment
 * that is gone is derived data readers do without (keyindex.h): it is skipped. */
static int copy_object(backup_ctx *c, const char *key, int mutable, unsigned flags)
{
    int rc = keyset_add(&c->needed, key);
    if (rc || (!mutable && keyset_has(&c->written, key))) return rc;
    rc = store_get(c->src, key, 0, STORE_ALL, &c->buf);
    if (rc == OG_E_NOT_FOUND && strstr(key, "/" LANCE_KIX_DIR)) {
        core_log(CORE_LOG_WARN,
                 "backup: key index segment '%s' is gone; the copy's lookups scan "
                 "its fragments instead",
                 key);
        og_error_clear();
        return 0;
    }
    if (rc) return rc;
    if (!mutable) {
        /* An immutable object read short or from elsewhere must not be copied as if whole: its
         * size must be what the store says it holds (bytes of the same size from elsewhere
         * need checksums to tell). */
        store_meta meta;
        if ((rc = store_head(c->src, key, &meta)) != 0) return rc;
        if (meta.size != c->buf.len) {
            rc = core_err(OG_E_CORRUPT,
                          "backup: reading '%s' returned %zu bytes, the store holds %" PRIu64
                          "; nothing of it was copied",
                          key, c->buf.len, meta.size);
            core_err_detail(CORE_ERR_OBJECT, key);
            return rc;
        }
    }
    rc = store_put(c->dst, key, c->buf.data, c->buf.len, flags);
    if (!rc) rc = keyset_add(&c->written, key);
    if (!rc && (flags & STORE_F_NOSYNC)) rc = keyset_add(&c->pending, key);
    if (!rc) {
        c->files++;
        c->bytes += c->buf.len;
    }
    return rc;
}

static int copy_ref(void *arg, const char *key)
{
    return copy_object(arg, key, 0, STORE_F_NOSYNC);
}

/* Make every pending write durable (files and their directories), in one batch. The
 * failpoint "backup.step" is hit after each durable step before the commit point, so a test can
 * kill the process there (OG_FAILPOINTS="backup.step=N*exit"). */
static int sync_pending(backup_ctx *c)
{
    if (!c->pending.n) return 0;
    int rc = store_sync(c->dst, (const char *const *)c->pending.v, c->pending.n);
    keyset_free(&c->pending);
    if (rc == 0) rc = OG_FAILPOINT("backup.step");
    return rc;
}

static int unsupported(const char *root, const char *what)
{
    core_err(OG_E_UNSUPPORTED, "backup of '%s': %s is not supported by this build", root, what);
    core_err_detail(CORE_ERR_OBJECT, root);
    return OG_E_UNSUPPORTED;
}

/* The files of one Lance index: everything under its _indices/<uuid>/. */
static int copy_index(void *arg, const char *prefix)
{
    backup_ctx *c = arg;
    store_list l = {0};
    int rc = store_list_prefix(c->src, prefix, 0, &l);
    if (rc == 0 && l.count == 0) rc = core_err(OG_E_NOT_FOUND, "no files of index %s", prefix);
    for (size_t k = 0; rc == 0 && k < l.count; k++)
        if (!l.items[k].is_prefix) rc = copy_object(c, l.items[k].key, 0, STORE_F_NOSYNC);
    store_list_free(&l);
    return rc;
}

/* The files of each Lance index the manifest lists. */
static int copy_indices(backup_ctx *c, const lance_dataset *ds, const char *root)
{
    size_t foreign = 0;
    int rc = lance_dataset_indices(ds, copy_index, c, &foreign);
    if (rc == 0 && foreign) rc = unsupported(root, "an index under another base path");
    return rc;
}

/* Stale keys of earlier attempts, deleted before the commit point: a table manifest of an
 * older pin would otherwise leave a gap below the copy's latest version. */
static int drop_unneeded(backup_ctx *c)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < c->written.n; i++)
        if (!keyset_has(&c->needed, c->written.v[i])) rc = store_delete(c->dst, c->written.v[i], 0);
    return rc;
}

/* Copy Lance dataset `root` at `version` (0: its latest): the files the version references,
 * synced, then its manifest, durably (`last`: first delete what earlier attempts left that
 * this one does not need, since this manifest is the copy's commit point). *rows (may be
 * NULL) receives its row count. */
static int copy_dataset(backup_ctx *c, const char *root, uint64_t version, int last)
{
    lance_dataset *ds = NULL;
    int rc = lance_dataset_open(&ds, c->src, root, version, LANCE_ACCESS_INSPECT);
    if (rc) return rc;
    if (lance_dataset_external_sequences(ds))
        rc = unsupported(root, "a fragment whose row sequences live in external files");
    size_t foreign = 0;
    if (rc == 0) rc = lance_manifest_files_of(ds->m, root, copy_ref, c, &foreign);
    if (rc == 0 && foreign) rc = unsupported(root, "a version with files under another base path");
    if (rc == 0) rc = copy_indices(c, ds, root);
    if (rc == 0) rc = sync_pending(c);
    char name[LANCE_VERSION_NAME_CAP], key[STORE_KEY_MAX];
    uint64_t v = lance_dataset_version(ds);
    if (rc == 0) rc = lance_version_file_name(name, sizeof name, ds->naming, v);
    if (rc == 0) rc = lance_key(key, root, LANCE_VERSIONS_DIR, name);
    if (rc == 0 && last) rc = keyset_add(&c->needed, key);
    if (rc == 0 && last) rc = drop_unneeded(c);
    if (rc == 0) rc = copy_object(c, key, 0, 0);
    /* Only a hint (unsynced): without it readers list _versions/, which holds one version. */
    if (rc == 0) rc = lance_hint_write(c->dst, root, v);
    lance_dataset_free(ds);
    return rc;
}

/* ---- one attempt --------------------------------------------------------------------------- */

/* Copy the head of main as it is now. *snap_out receives the pin. */
static int copy_head(backup_ctx *c, graph_snapshot **snap_out)
{
    graph_snapshot *snap = NULL;
    int rc = graph_snapshot_load(&snap, c->src, NULL, 0, 0);
    if (rc) return rc;
    *snap_out = snap;
    keyset_free(&c->needed);
    keyset_free(&c->pending);
    for (size_t i = 0; rc == 0 && i < snap->n_tables; i++) {
        const graph_table *t = &snap->tables[i];
        if (t->table_branch && *t->table_branch)
            rc = unsupported(t->path, "a table pinned on a Lance branch");
        else
            rc = copy_dataset(c, t->path, t->version, 0);
    }
    /* The recovery audit log: its own history, at its latest version (made by the first
     * recovery, so often absent). */
    if (rc == 0) {
        uint64_t v = 0;
        lance_naming nm;
        rc = lance_version_latest(c->src, GRAPH_AUDIT_DIR, &v, &nm);
        if (rc == OG_E_NOT_FOUND) {
            og_error_clear();
            rc = 0;
        } else if (rc == 0) {
            rc = copy_dataset(c, GRAPH_AUDIT_DIR, v, 0);
        }
    }
    /* The accepted schema, which must be the one the pinned version names. */
    if (rc == 0) rc = copy_object(c, GRAPH_SCHEMA_PG, 1, STORE_F_NOSYNC);
    if (rc == 0) rc = copy_object(c, GRAPH_SCHEMA_JSON, 1, STORE_F_NOSYNC);
    /* ... and its pair kept by identity (absent in graphs made before those were kept). */
    if (rc == 0) {
        char kpg[STORE_KEY_MAX], kjs[STORE_KEY_MAX];
        store_meta meta;
        graph_schema_version_keys(snap->schema_identity, kpg, kjs);
        if (store_head(c->src, kjs, &meta) == 0) {
            rc = copy_object(c, kpg, 0, STORE_F_NOSYNC);
            if (rc == 0) rc = copy_object(c, kjs, 0, STORE_F_NOSYNC);
        } else
            og_error_clear();
    }
    if (rc == 0) rc = sync_pending(c);
    if (rc == 0) {
        lang_catalog *cat = NULL;
        char identity[GRAPH_SCHEMA_HASH_LEN + 1];
        rc = graph_schema_read(c->dst, &cat, identity);
        lang_catalog_free(cat);
        if (rc == 0 && strcmp(identity, snap->schema_identity) != 0) {
            /* A schema change published between the pin and the read: pin again. */
            rc = core_err(OG_E_NOT_FOUND,
                          "the accepted schema is %s, not the %s of manifest "
                          "version %" PRIu64,
                          identity, snap->schema_identity, snap->manifest_version);
        }
    }
    /* The graph manifest last: its version file is the copy's commit point. */
    if (rc == 0) rc = copy_dataset(c, GRAPH_MANIFEST_DIR, snap->manifest_version, 1);
    return rc;
}

/* ---- verification -------------------------------------------------------------------------- */

static int mismatch(const char *what, const char *expected, const char *actual)
{
    core_err(OG_E_CORRUPT, "the backup does not verify: %s is %s in the copy, %s in the source",
             what, actual, expected);
    core_err_detail(CORE_ERR_EXPECTED, expected);
    core_err_detail(CORE_ERR_ACTUAL, actual);
    return OG_E_CORRUPT;
}

static int verify(store *dst, const graph_snapshot *pin, uint64_t *rows)
{
    *rows = 0;
    graph_snapshot *copy = NULL;
    int rc = graph_snapshot_load(&copy, dst, NULL, 0, 0);
    if (rc) {
        core_err_prefix("the backup does not open");
        return rc;
    }
    char a[64], b[64];
    if (copy->manifest_version != pin->manifest_version) {
        snprintf(a, sizeof a, "%" PRIu64, pin->manifest_version);
        snprintf(b, sizeof b, "%" PRIu64, copy->manifest_version);
        rc = mismatch("the manifest version", a, b);
    } else if (strcmp(copy->head, pin->head) != 0) {
        rc = mismatch("the head commit", pin->head, copy->head);
    } else if (strcmp(copy->schema_identity, pin->schema_identity) != 0) {
        rc = mismatch("the schema identity", pin->schema_identity, copy->schema_identity);
    } else if (copy->n_tables != pin->n_tables) {
        snprintf(a, sizeof a, "%zu", pin->n_tables);
        snprintf(b, sizeof b, "%zu", copy->n_tables);
        rc = mismatch("the number of tables", a, b);
    }
    lang_catalog *cat = NULL;
    char identity[GRAPH_SCHEMA_HASH_LEN + 1];
    if (rc == 0) rc = graph_schema_read(dst, &cat, identity);
    lang_catalog_free(cat);
    for (size_t i = 0; rc == 0 && i < pin->n_tables; i++) {
        const graph_table *p = &pin->tables[i], *t = &copy->tables[i];
        char what[600];
        snprintf(what, sizeof what, "table %s", p->alias);
        if (strcmp(p->alias, t->alias) || strcmp(p->path, t->path)) {
            rc = mismatch(what, p->path, t->path);
            break;
        }
        uint64_t n = 0;
        lance_dataset *ds = NULL;
        rc = graph_table_open(&ds, dst, t, LANCE_ACCESS_READ);
        if (rc == 0) rc = lance_dataset_count_rows(ds, &n);
        /* Every page of the copy is read once: a data file read short or from elsewhere at
         * copy time fails to decode or disagrees with its fragment, here and not in a restore. */
        lance_scanner *sc = NULL;
        if (rc == 0) rc = lance_scanner_open(&sc, ds, NULL);
        uint64_t scanned = 0;
        for (arrow_batch *batch = NULL; rc == 0;) {
            if ((rc = lance_scanner_next(sc, &batch)) != 0 || !batch) break;
            scanned += (uint64_t)batch->num_rows;
            arrow_batch_free(batch);
        }
        lance_scanner_free(sc);
        if (rc == 0 && scanned != n)
            rc = core_err(OG_E_CORRUPT,
                          "the backup's %s scans %" PRIu64 " rows, its manifest says %" PRIu64,
                          p->alias, scanned, n);
        lance_dataset_free(ds);
        if (rc) {
            core_err_prefix("the backup's %s does not open at version %" PRIu64, p->alias,
                            t->version);
            break;
        }
        if (t->version != p->version || n != p->row_count || t->row_count != p->row_count) {
            snprintf(a, sizeof a, "version %" PRIu64 " with %" PRIu64 " rows", p->version,
                     p->row_count);
            snprintf(b, sizeof b, "version %" PRIu64 " with %" PRIu64 " rows", t->version, n);
            rc = mismatch(what, a, b);
        }
        *rows += n;
    }
    graph_snapshot_free(copy);
    return rc;
}

/* The claim, durable before the first file of the copy: until the commit point, the
 * destination then reads as an unfinished backup (no graph, run the backup again), not as a
 * graph that lost its manifest (graph_root_absent_error). */
static int write_claim(store *dst)
{
    static const char claim[] =
        "{\"kind\":\"backup\",\"note\":\"a backup into this directory has not finished: "
        "until its graph manifest is written it holds no graph\"}\n";
    int rc = store_put(dst, GRAPH_BACKUP_CLAIM, claim, sizeof claim - 1, 0);
    if (rc == 0) rc = OG_FAILPOINT("backup.step");
    return rc;
}

int write_backup(store *src, store *dst, const write_backup_options *opt, write_backup_report *out)
{
    write_backup_options def = WRITE_BACKUP_OPTIONS_INIT;
    if (!opt) opt = &def;
    memset(out, 0, sizeof *out);
    unsigned attempts = opt->attempts ? opt->attempts : BACKUP_DEFAULT_ATTEMPTS;
    backup_ctx c = {.src = src, .dst = dst, .buf = CORE_BUF_INIT};
    graph_snapshot *pin = NULL;
    int claimed = write_claim(dst);
    int rc = claimed;
    unsigned n = 0;
    while (claimed == 0 && n < attempts) {
        n++;
        graph_snapshot_free(pin);
        pin = NULL;
        rc = copy_head(&c, &pin);
        /* A file of the pin vanished: a cleanup let the pinned versions go once the head had
         * moved on. Pin the new head. A first pin that finds nothing is a source without a
         * graph. */
        if (rc != OG_E_NOT_FOUND || (!pin && n == 1)) break;
        core_log(CORE_LOG_INFO, "backup: %s; pinning the head again (attempt %u of %u)",
                 og_error_last()->message, n + 1, attempts);
#ifdef OG_TESTING
        if (opt->test_between_attempts && n < attempts)
            opt->test_between_attempts(opt->test_arg, n);
#endif
    }
    if (rc == OG_E_NOT_FOUND && n > 1)
        core_err_prefix("backup: files of the pinned version kept vanishing (%u attempts)", n);
    uint64_t rows = 0;
    if (rc == 0) rc = verify(dst, pin, &rows);
    /* The copy is a whole graph now: its claim is stale. Left behind (a crash here), it is
     * harmless: readers consult it only when no manifest version exists, and the first
     * read-write open removes it. */
    if (rc == 0 && store_delete(dst, GRAPH_BACKUP_CLAIM, 0) != 0) {
        core_log(CORE_LOG_WARN, "backup: could not remove %s (harmless): %s", GRAPH_BACKUP_CLAIM,
                 og_error_last()->message);
        og_error_clear();
    }
    if (rc == 0) {
        snprintf(out->commit_id, sizeof out->commit_id, "%s", pin->head);
        snprintf(out->schema_identity, sizeof out->schema_identity, "%s", pin->schema_identity);
        out->manifest_version = pin->manifest_version;
        out->tables = pin->n_tables;
        out->rows = rows;
        out->files = c.files;
        out->bytes = c.bytes;
        out->attempts = n;
    }
    graph_snapshot_free(pin);
    keyset_free(&c.written);
    keyset_free(&c.needed);
    keyset_free(&c.pending);
    core_buf_free(&c.buf);
    return rc;
}
