/* Snapshot reconstruction: one projected scan of the graph manifest (main or a graph branch,
 * at any version) reduced to the live tables, this branch's head, the schema identity and the
 * format, and optionally the decoded commit lineage. Also opening the manifest and the tables
 * a snapshot pins. */
#include "graph/graph.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/json.h"
#include "core/log.h"
#include "lance/branch.h"
#include "lance/compact.h"
#include "lance/paths.h"
#include "lance/version.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_main(const char *branch)
{
    return !branch || !*branch || strcmp(branch, "main") == 0;
}

int graph_manifest_open(lance_dataset **out, store *s, const char *branch, uint64_t version,
                        lance_access access)
{
    *out = NULL;
    int rc = is_main(branch)
                 ? lance_dataset_open(out, s, GRAPH_MANIFEST_DIR, version, access)
                 : lance_branch_open(out, s, GRAPH_MANIFEST_DIR, branch, version, NULL, access);
    if (rc == 0 && (rc = graph_manifest_chain_check(*out)) != 0) {
        lance_dataset_free(*out);
        *out = NULL;
    }
    return rc;
}

/* A table pinned on a Lance branch with the checksum of its manifest: that manifest read from
 * the branch's directory, one get. Its bytes are the ones the graph published, so it is that
 * branch incarnation's version without reading the ref and the fork's first version
 * (lance_branch_open's incarnation check). 1 when it cannot be used this way (not there under
 * the V2 name, or other bytes: lance_branch_open then says why). */
static int open_pinned_fork(lance_dataset **out, store *s, const graph_table *t,
                            lance_access access)
{
    char dir[STORE_KEY_MAX];
    lance_manifest *m = NULL;
    int rc = lance_branch_root(dir, t->path, t->table_branch);
    if (rc == 0) rc = lance_version_load(s, dir, t->version, LANCE_NAMING_V2, access, &m);
    if (rc == OG_E_NOT_FOUND || (rc == 0 && m->file_xxh3 != t->manifest_xxh3)) {
        og_error_clear();
        lance_manifest_free(m);
        return 1;
    }
    if (rc == 0) rc = lance_dataset_from_manifest(out, s, dir, LANCE_NAMING_V2, m);
    return rc;
}

/* A pinned version of main's table that is not stored, though a later one is: Lance versions
 * are made one after another and only cleanup deletes them, so cleanup removed it (a commit
 * outside the retention window; or, left by a cleanup of an older build killed part way, a
 * commit whose graph-manifest version is still stored). Say so, as graph_snapshot_load does
 * when the manifest version itself is gone; anything else keeps the open's own error. */
static int table_version_gone(store *s, const graph_table *t)
{
    core_err_saved was;
    core_err_save(&was);
    uint64_t latest = 0;
    lance_naming nm;
    if (lance_version_latest(s, t->path, &latest, &nm) != 0 || latest <= t->version)
        return core_err_restore(&was);
    int rc = core_err(OG_E_NOT_FOUND,
                      "table %s version %" PRIu64 " is no longer stored: cleanup removed it "
                      "(commits outside the retention window cannot be read)",
                      t->alias ? t->alias : t->path, t->version);
    core_err_detail(CORE_ERR_OBJECT, t->path);
    return rc;
}

int graph_table_open(lance_dataset **out, store *s, const graph_table *t, lance_access access)
{
    *out = NULL;
    if (!t || !t->path || t->version == 0)
        return core_err(OG_E_BAD_REQUEST, "graph_table_open: no table or no pinned version");
    int rc;
    if (t->table_branch && *t->table_branch) {
        if (t->has_manifest_xxh3 && (rc = open_pinned_fork(out, s, t, access)) != 1) return rc;
        rc = lance_branch_open(out, s, t->path, t->table_branch, t->version, NULL, access);
    } else {
        rc = lance_dataset_open(out, s, t->path, t->version, access);
        if (rc == OG_E_NOT_FOUND) rc = table_version_gone(s, t);
    }
    if (rc == 0 && (rc = graph_table_check(t, *out)) != 0) {
        lance_dataset_free(*out);
        *out = NULL;
    }
    return rc;
}

int graph_table_check(const graph_table *t, const lance_dataset *ds)
{
    if (!t->has_manifest_xxh3 || ds->m->file_xxh3 == t->manifest_xxh3) return 0;
    char name[LANCE_VERSION_NAME_CAP];
    if (lance_version_file_name(name, sizeof name, ds->naming, t->version)) name[0] = 0;
    core_err(OG_E_CORRUPT,
             "table %s: the Lance manifest of version %" PRIu64 " (%s/_versions/%s) does not "
             "match the checksum the graph manifest recorded for it (the file was damaged or "
             "replaced after it was written)",
             t->alias ? t->alias : t->path, t->version, t->path, name);
    core_err_detail(CORE_ERR_OBJECT, t->path);
    return OG_E_CORRUPT;
}

/* ---- freeing and lookup ------------------------------------------------------------------ */

static void table_clear(graph_table *t)
{
    core_free(t->alias);
    core_free(t->type_name);
    core_free(t->path);
    core_free(t->table_branch);
}

void graph_snapshot_free(graph_snapshot *snap)
{
    if (!snap) return;
    for (size_t i = 0; i < snap->n_tables; i++)
        table_clear(&snap->tables[i]);
    core_free(snap->tables);
    for (size_t i = 0; i < snap->n_commits; i++) {
        core_free(snap->commits[i].actor);
        core_free(snap->commits[i].branch);
    }
    core_free(snap->commits);
    core_free(snap->branch);
    core_free(snap);
}

static char *dup_or_null(const char *s, int *bad)
{
    if (!s) return NULL;
    char *d = core_strdup(s);
    if (!d) *bad = 1;
    return d;
}

int graph_snapshot_copy(graph_snapshot **out, const graph_snapshot *in)
{
    *out = NULL;
    graph_snapshot *c = core_calloc(1, sizeof *c);
    if (!c) return core_err_nomem();
    int bad = 0;
    memcpy(c->branch_identity, in->branch_identity, sizeof c->branch_identity);
    memcpy(c->schema_identity, in->schema_identity, sizeof c->schema_identity);
    memcpy(c->head, in->head, sizeof c->head);
    memcpy(c->content_head, in->content_head, sizeof c->content_head);
    c->manifest_version = in->manifest_version;
    c->format_version = in->format_version;
    c->branch = dup_or_null(in->branch, &bad);
    if (in->n_tables && !(c->tables = core_calloc(in->n_tables, sizeof *c->tables))) bad = 1;
    for (size_t i = 0; !bad && i < in->n_tables; i++) {
        const graph_table *t = &in->tables[i];
        graph_table *d = &c->tables[c->n_tables++];
        *d = *t;
        d->alias = dup_or_null(t->alias, &bad);
        d->type_name = dup_or_null(t->type_name, &bad);
        d->path = dup_or_null(t->path, &bad);
        d->table_branch = dup_or_null(t->table_branch, &bad);
    }
    if (bad) {
        graph_snapshot_free(c);
        return core_err_nomem();
    }
    *out = c;
    return 0;
}

int graph_snapshot_fork(graph_snapshot **out, const graph_snapshot *src, const char *branch,
                        const char *identity)
{
    *out = NULL;
    if (is_main(branch) || !identity)
        return core_err(OG_E_INTERNAL, "graph_snapshot_fork: a fork is a named branch");
    graph_snapshot *c = NULL;
    int rc = graph_snapshot_copy(&c, src);
    if (rc) return rc;
    core_free(c->branch);
    if (!(c->branch = core_strdup(branch))) {
        graph_snapshot_free(c);
        return core_err_nomem();
    }
    snprintf(c->branch_identity, sizeof c->branch_identity, "%s", identity);
    *out = c;
    return 0;
}

const graph_table *graph_snapshot_table(const graph_snapshot *snap, const char *alias)
{
    if (!snap || !alias) return NULL;
    size_t lo = 0, hi = snap->n_tables;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(snap->tables[mid].alias, alias);
        if (c == 0) return &snap->tables[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* ---- the scan ---------------------------------------------------------------------------- */

enum { C_ID, C_TYPE, C_LOC, C_META, C_KEY, C_SID, C_INC, C_VER, C_BRANCH, C_ROWS, N_C };
static const char *const scan_cols[N_C] = {
    "object_id",       "object_type",          "location",      "metadata",     "table_key",
    "stable_table_id", "table_incarnation_id", "table_version", "table_branch", "row_count",
};

typedef struct reader {
    const arrow_batch *b;
    const char *object; /* the manifest root, for messages */
} reader;

static bool is_null(const reader *r, int col, int64_t i)
{
    return !arrow_array_is_valid(r->b->columns[col], i);
}

/* A copy of a string cell (NULL for a null cell; *rc set on allocation failure). */
static char *cell_dup(const reader *r, int col, int64_t i, int *rc)
{
    if (is_null(r, col, i)) return NULL;
    size_t n = 0;
    const uint8_t *p = arrow_array_get_bytes(r->b->columns[col], i, &n);
    char *d = core_strndup((const char *)(p ? p : (const uint8_t *)""), n);
    if (!d) *rc = core_err_nomem();
    return d;
}

/* Does a string cell equal s (a null cell equals only NULL)? */
static bool cell_eq(const reader *r, int col, int64_t i, const char *s)
{
    if (is_null(r, col, i)) return s == NULL;
    if (!s) return false;
    size_t n = 0;
    const uint8_t *p = arrow_array_get_bytes(r->b->columns[col], i, &n);
    return strlen(s) == n && (n == 0 || memcmp(p, s, n) == 0);
}

/* Do two cells of one string column hold the same value (both null counts as equal)? */
static bool cells_equal(const reader *r, int col, int64_t i, int64_t j)
{
    bool ni = is_null(r, col, i), nj = is_null(r, col, j);
    if (ni || nj) return ni && nj;
    size_t n1 = 0, n2 = 0;
    const uint8_t *p1 = arrow_array_get_bytes(r->b->columns[col], i, &n1);
    const uint8_t *p2 = arrow_array_get_bytes(r->b->columns[col], j, &n2);
    return n1 == n2 && (n1 == 0 || memcmp(p1, p2, n1) == 0);
}

static int corrupt(const reader *r, int64_t i, const char *what)
{
    int rc = 0;
    char *id = cell_dup(r, C_ID, i, &rc);
    core_err(OG_E_CORRUPT, "graph manifest '%s': row '%s': %s", r->object, id ? id : "?", what);
    core_err_detail(CORE_ERR_OBJECT, r->object);
    core_free(id);
    return OG_E_CORRUPT;
}

static int cell_u64(const reader *r, int col, int64_t i, uint64_t *out, const char *what)
{
    if (is_null(r, col, i)) return corrupt(r, i, what);
    *out = arrow_array_get_uint(r->b->columns[col], i);
    return 0;
}

static int cell_json(const reader *r, int64_t i, json_t **out);

/* A table_version row's recorded manifest checksum (metadata "manifest_xxh3", 16 hex digits),
 * when it has one. */
static int version_checksum(const reader *r, int64_t i, graph_table *tbl)
{
    json_t *o = NULL;
    int rc = cell_json(r, i, &o);
    if (rc) return rc;
    const char *hex = json_string_value(json_object_get(o, "manifest_xxh3"));
    if (hex) {
        char *end = NULL;
        uint64_t v = strtoull(hex, &end, 16);
        if (strlen(hex) != 16 || !end || *end)
            rc = corrupt(r, i, "manifest_xxh3 is not 16 hex digits");
        tbl->has_manifest_xxh3 = rc == 0;
        tbl->manifest_xxh3 = v;
    }
    json_decref(o);
    return rc;
}

/* The row's metadata JSON (an object), or OG_E_CORRUPT. */
static int cell_json(const reader *r, int64_t i, json_t **out)
{
    *out = NULL;
    if (is_null(r, C_META, i)) return corrupt(r, i, "metadata is null");
    size_t n = 0;
    const uint8_t *p = arrow_array_get_bytes(r->b->columns[C_META], i, &n);
    int rc = core_json_parse_stored(out, (const char *)p, n, r->object);
    if (rc == 0 && !json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        return corrupt(r, i, "metadata is not a JSON object");
    }
    return rc;
}

/* A table-bearing row, for grouping by identity. */
typedef struct trow {
    uint64_t sid, inc;
    int kind;     /* GRAPH_ROW_TABLE / _TABLE_VERSION / _TOMBSTONE */
    uint64_t ver; /* 0 for registrations */
    int64_t idx;  /* row in the batch (ties keep the first) */
} trow;

static int trow_cmp(const void *a, const void *b)
{
    const trow *x = a, *y = b;
    if (x->sid != y->sid) return x->sid < y->sid ? -1 : 1;
    if (x->inc != y->inc) return x->inc < y->inc ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int table_cmp(const void *a, const void *b)
{
    return strcmp(((const graph_table *)a)->alias, ((const graph_table *)b)->alias);
}

static int commit_cmp(const void *a, const void *b)
{
    const graph_commit *x = a, *y = b; /* newest first */
    if (x->manifest_version != y->manifest_version)
        return x->manifest_version > y->manifest_version ? -1 : 1;
    if (x->created_at_us != y->created_at_us) return x->created_at_us > y->created_at_us ? -1 : 1;
    int c = strcmp(x->id, y->id);
    return c > 0 ? -1 : c < 0;
}

/* Copy an optional ULID member of a commit's metadata into dst ("" when absent). */
static int meta_ulid(const reader *r, int64_t i, const json_t *o, const char *key,
                     char dst[GRAPH_ID_LEN + 1])
{
    dst[0] = 0;
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_string(v) || !core_ulid_valid(json_string_value(v)))
        return corrupt(r, i, "a parent commit id is not a ULID");
    memcpy(dst, json_string_value(v), GRAPH_ID_LEN + 1);
    return 0;
}

static int decode_commit(const reader *r, int64_t i, graph_commit *c)
{
    memset(c, 0, sizeof *c);
    size_t n = 0;
    const uint8_t *p = arrow_array_get_bytes(r->b->columns[C_ID], i, &n);
    if (n != GRAPH_ID_LEN) return corrupt(r, i, "commit id is not a ULID");
    memcpy(c->id, p, n);
    c->id[n] = 0;
    if (!core_ulid_valid(c->id)) return corrupt(r, i, "commit id is not a ULID");
    int rc = cell_u64(r, C_VER, i, &c->manifest_version, "commit without table_version");
    json_t *o = NULL;
    if (rc == 0) rc = cell_json(r, i, &o);
    if (rc == 0) rc = meta_ulid(r, i, o, "parent_commit_id", c->parent);
    if (rc == 0) rc = meta_ulid(r, i, o, "merged_parent_commit_id", c->merged_parent);
    if (rc == 0) {
        json_t *ca = json_object_get(o, "created_at");
        if (!json_is_integer(ca))
            rc = corrupt(r, i, "commit without integer created_at");
        else
            c->created_at_us = (int64_t)json_integer_value(ca);
    }
    if (rc == 0) {
        json_t *mt = json_object_get(o, "maintenance");
        if (mt && !json_is_boolean(mt)) rc = corrupt(r, i, "maintenance is not a boolean");
        c->maintenance = json_is_true(mt);
    }
    if (rc == 0) {
        json_t *a = json_object_get(o, "actor_id");
        if (a && json_is_string(a)) {
            c->actor = core_strdup(json_string_value(a));
            if (!c->actor) rc = core_err_nomem();
        } else if (a && !json_is_null(a)) {
            rc = corrupt(r, i, "actor_id is not a string");
        }
    }
    if (rc == 0) c->branch = cell_dup(r, C_BRANCH, i, &rc);
    json_decref(o);
    if (rc) {
        core_free(c->actor);
        core_free(c->branch);
        c->actor = c->branch = NULL;
    }
    return rc;
}

/* Reduce one identity's rows t[0..n) (same sid/inc, scan order) into a live table, or none.
 * *live is set to 1 when tbl was filled. */
static int reduce_identity(const reader *r, const trow *t, size_t n, graph_table *tbl, int *live)
{
    *live = 0;
    const trow *reg = NULL, *ver = NULL;
    uint64_t tomb = 0;
    bool has_tomb = false;
    for (size_t k = 0; k < n; k++) {
        if (t[k].kind == GRAPH_ROW_TABLE) {
            /* The registration of the greatest version wins (a rename re-registers). */
            if (!reg || t[k].ver > reg->ver)
                reg = &t[k];
            else if (t[k].ver == reg->ver && (!cells_equal(r, C_KEY, reg->idx, t[k].idx) ||
                                              !cells_equal(r, C_LOC, reg->idx, t[k].idx)))
                return corrupt(r, t[k].idx, "two different registrations of one table identity");
        } else if (t[k].kind == GRAPH_ROW_TABLE_VERSION) {
            if (!ver || t[k].ver > ver->ver) ver = &t[k];
        } else {
            if (!has_tomb || t[k].ver > tomb) tomb = t[k].ver;
            has_tomb = true;
        }
    }
    if (!ver) return 0; /* registered (or tombstoned) but never published */
    if (!reg) return corrupt(r, ver->idx, "table version without a registration");
    if (has_tomb && tomb >= ver->ver) return 0;

    int rc = 0;
    memset(tbl, 0, sizeof *tbl);
    tbl->sid = t[0].sid;
    tbl->inc = t[0].inc;
    tbl->version = ver->ver;
    tbl->alias = cell_dup(r, C_KEY, reg->idx, &rc);
    tbl->path = cell_dup(r, C_LOC, reg->idx, &rc);
    tbl->table_branch = cell_dup(r, C_BRANCH, ver->idx, &rc);
    tbl->row_count =
        is_null(r, C_ROWS, ver->idx) ? 0 : arrow_array_get_uint(r->b->columns[C_ROWS], ver->idx);
    if (rc == 0 && !is_null(r, C_META, ver->idx)) rc = version_checksum(r, ver->idx, tbl);
    if (rc == 0 && (!tbl->alias || !tbl->path))
        rc = corrupt(r, reg->idx, "registration without alias or location");
    if (rc == 0) {
        if (strncmp(tbl->alias, "node:", 5) == 0)
            tbl->kind = LANG_NODE;
        else if (strncmp(tbl->alias, "edge:", 5) == 0)
            tbl->kind = LANG_EDGE;
        else
            rc = corrupt(r, reg->idx, "alias is neither node:<Type> nor edge:<Type>");
    }
    if (rc == 0 && tbl->alias[5] == 0) rc = corrupt(r, reg->idx, "alias has no type name");
    if (rc == 0) {
        tbl->type_name = core_strdup(tbl->alias + 5);
        if (!tbl->type_name) rc = core_err_nomem();
    }
    char canon[STORE_KEY_MAX];
    if (rc == 0) rc = graph_table_path(canon, tbl->kind, tbl->sid, tbl->inc);
    if (rc == 0 && strcmp(canon, tbl->path) != 0)
        rc = corrupt(r, reg->idx, "location is not the identity's canonical path");
    if (rc) {
        table_clear(tbl);
        return rc;
    }
    *live = 1;
    return 0;
}

static int format_check(int found, int64_t v, const char *object)
{
    if (!found) {
        core_err(OG_E_UNSUPPORTED,
                 "graph manifest '%s' has no format row: it was not written "
                 "by a graph of format %d (a torn or foreign manifest)",
                 object, GRAPH_FORMAT_VERSION);
    } else if (v > GRAPH_FORMAT_VERSION) {
        core_err(OG_E_UNSUPPORTED,
                 "graph format %" PRId64 " is newer than this binary (%d): "
                 "upgrade omnigraph",
                 v, GRAPH_FORMAT_VERSION);
    } else if (v < GRAPH_FORMAT_VERSION) {
        core_err(OG_E_UNSUPPORTED,
                 "graph format %" PRId64 " is older than this binary (%d): "
                 "rebuild the graph by export and import",
                 v, GRAPH_FORMAT_VERSION);
    } else {
        return 0;
    }
    core_err_detail(CORE_ERR_OBJECT, object);
    return OG_E_UNSUPPORTED;
}

/* The reduction of graph.h / reference §1.3 over one scanned batch. */
static int reduce(graph_snapshot *snap, const reader *r, const char *branch, unsigned flags)
{
    const arrow_batch *b = r->b;
    int64_t nrows = b->num_rows;
    trow *t = core_malloc((size_t)(nrows ? nrows : 1) * sizeof *t);
    if (!t) return core_err_nomem();
    size_t nt = 0, ncommits = 0;
    int rc = 0, have_format = 0;
    int64_t format = 0;
    uint64_t schema_ver = 0, head_ver = 0, any_head_ver = 0;
    int64_t schema_row = -1, head_row = -1, any_head_row = -1;
    char tbuf[32];
    for (int64_t i = 0; rc == 0 && i < nrows; i++) {
        if (is_null(r, C_ID, i) || is_null(r, C_TYPE, i)) {
            rc = corrupt(r, i, "null object_id or object_type");
            break;
        }
        size_t n = 0;
        const uint8_t *p = arrow_array_get_bytes(b->columns[C_TYPE], i, &n);
        if (n >= sizeof tbuf) continue; /* no known type is that long: skip it */
        memcpy(tbuf, p, n);
        tbuf[n] = 0;
        int kind = graph_row_kind_parse(tbuf);
        switch (kind) {
        case GRAPH_ROW_TABLE:
        case GRAPH_ROW_TABLE_VERSION:
        case GRAPH_ROW_TOMBSTONE: {
            trow *w = &t[nt];
            w->kind = kind;
            w->idx = i;
            w->ver = 0;
            rc = cell_u64(r, C_SID, i, &w->sid, "table row without stable_table_id");
            if (rc == 0)
                rc = cell_u64(r, C_INC, i, &w->inc, "table row without table_incarnation_id");
            if (rc == 0 && (w->sid == 0 || w->inc == 0)) rc = corrupt(r, i, "zero table identity");
            if (rc == 0 && kind != GRAPH_ROW_TABLE)
                rc = cell_u64(r, C_VER, i, &w->ver, "version row without table_version");
            else if (rc == 0 && !is_null(r, C_VER, i)) /* a re-registration (a rename) */
                rc = cell_u64(r, C_VER, i, &w->ver, "registration");
            if (rc == 0) nt++;
            break;
        }
        case GRAPH_ROW_FORMAT: {
            json_t *o = NULL;
            rc = cell_json(r, i, &o);
            int64_t v = 0;
            if (rc == 0) rc = core_json_int(o, "format_version", &v, OG_E_CORRUPT, "format row");
            json_decref(o);
            if (rc == 0 && (!have_format || v > format)) format = v;
            have_format = 1;
            break;
        }
        case GRAPH_ROW_SCHEMA: {
            uint64_t v = 0;
            rc = cell_u64(r, C_VER, i, &v, "schema row without table_version");
            if (rc == 0 && (schema_row < 0 || v > schema_ver)) schema_ver = v, schema_row = i;
            break;
        }
        case GRAPH_ROW_HEAD: {
            /* This branch's heads only: a branch inherits stale copies of others' heads. */
            bool mine = is_main(branch) ? is_null(r, C_BRANCH, i) : cell_eq(r, C_BRANCH, i, branch);
            uint64_t v = 0;
            rc = cell_u64(r, C_VER, i, &v, "graph_head row without table_version");
            if (rc == 0 && mine && (head_row < 0 || v > head_ver)) head_ver = v, head_row = i;
            if (rc == 0 && (any_head_row < 0 || v > any_head_ver))
                any_head_ver = v, any_head_row = i;
            break;
        }
        case GRAPH_ROW_COMMIT:
            ncommits++;
            break;
        default:
            break; /* an object type from a newer writer: skipped */
        }
    }
    /* A branch before its first commit has no head row of its own: its head is the one it
     * was forked at. Its manifest holds only rows up to its fork point from the branches it
     * descends from (each row carries the version it was written at, and versions continue
     * from the fork point), so the newest head row of any branch is that fork-point head. */
    if (rc == 0 && head_row < 0 && !is_main(branch)) head_row = any_head_row;
    if (rc == 0) rc = format_check(have_format, format, r->object);
    if (rc == 0) snap->format_version = (int)format;
    if (rc == 0 && schema_row >= 0) {
        json_t *o = NULL;
        const char *id = NULL;
        rc = cell_json(r, schema_row, &o);
        if (rc == 0) rc = core_json_str(o, "identity", &id, OG_E_CORRUPT, "schema row");
        if (rc == 0 && strlen(id) != GRAPH_SCHEMA_HASH_LEN)
            rc = corrupt(r, schema_row, "schema identity has the wrong length");
        if (rc == 0) memcpy(snap->schema_identity, id, GRAPH_SCHEMA_HASH_LEN + 1);
        json_decref(o);
    }
    if (rc == 0 && head_row >= 0) {
        json_t *o = NULL;
        const char *id = NULL;
        rc = cell_json(r, head_row, &o);
        if (rc == 0) rc = core_json_str(o, "head_commit_id", &id, OG_E_CORRUPT, "graph_head row");
        if (rc == 0 && !core_ulid_valid(id)) rc = corrupt(r, head_row, "head is not a ULID");
        if (rc == 0) memcpy(snap->head, id, GRAPH_ID_LEN + 1);
        /* A maintenance commit's head names the last content commit too (graph.h). */
        json_t *content = rc == 0 ? json_object_get(o, "content_commit_id") : NULL;
        if (content && (!json_is_string(content) || !core_ulid_valid(json_string_value(content))))
            rc = corrupt(r, head_row, "content_commit_id is not a ULID");
        if (rc == 0)
            memcpy(snap->content_head, content ? json_string_value(content) : id, GRAPH_ID_LEN + 1);
        json_decref(o);
    }

    /* Tables: group by identity, reduce each, sort by alias, refuse a shared alias. */
    if (rc == 0) {
        qsort(t, nt, sizeof *t, trow_cmp);
        snap->tables = core_calloc(nt ? nt : 1, sizeof *snap->tables);
        if (!snap->tables) rc = core_err_nomem();
    }
    for (size_t k = 0; rc == 0 && k < nt;) {
        size_t e = k + 1;
        while (e < nt && t[e].sid == t[k].sid && t[e].inc == t[k].inc)
            e++;
        int live = 0;
        rc = reduce_identity(r, t + k, e - k, &snap->tables[snap->n_tables], &live);
        if (rc == 0 && live) snap->n_tables++;
        k = e;
    }
    if (rc == 0) qsort(snap->tables, snap->n_tables, sizeof *snap->tables, table_cmp);
    for (size_t k = 1; rc == 0 && k < snap->n_tables; k++) {
        if (strcmp(snap->tables[k - 1].alias, snap->tables[k].alias) == 0) {
            core_err(OG_E_CORRUPT,
                     "graph manifest '%s': two live tables have the alias '%s' "
                     "(%016" PRIx64 ":%016" PRIx64 " and %016" PRIx64 ":%016" PRIx64 ")",
                     r->object, snap->tables[k].alias, snap->tables[k - 1].sid,
                     snap->tables[k - 1].inc, snap->tables[k].sid, snap->tables[k].inc);
            core_err_detail(CORE_ERR_OBJECT, r->object);
            rc = OG_E_CORRUPT;
        }
    }
    core_free(t);

    if (rc == 0 && (flags & GRAPH_SNAP_LINEAGE) && ncommits) {
        snap->commits = core_calloc(ncommits, sizeof *snap->commits);
        if (!snap->commits) rc = core_err_nomem();
        for (int64_t i = 0; rc == 0 && i < nrows; i++) {
            if (!cell_eq(r, C_TYPE, i, graph_row_kind_name(GRAPH_ROW_COMMIT))) continue;
            rc = decode_commit(r, i, &snap->commits[snap->n_commits]);
            if (rc == 0) snap->n_commits++;
        }
        if (rc == 0) qsort(snap->commits, snap->n_commits, sizeof *snap->commits, commit_cmp);
    }
    return rc;
}

/* The reduction of an open manifest, with the branch identity already known. */
static int from_dataset(graph_snapshot **out, const lance_dataset *manifest, const char *branch,
                        const char *identity, unsigned flags)
{
    *out = NULL;
    /* Nothing is read from a version that does not verify (graph/manifest.c, the chain). */
    int rc = graph_manifest_chain_check(manifest);
    if (rc) return rc;
    graph_snapshot *snap = core_calloc(1, sizeof *snap);
    if (!snap) return core_err_nomem();
    if (!is_main(branch)) {
        snap->branch = core_strdup(branch);
        if (!snap->branch) rc = core_err_nomem();
        snprintf(snap->branch_identity, sizeof snap->branch_identity, "%s",
                 identity ? identity : "");
    }
    snap->manifest_version = lance_dataset_version(manifest);
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.columns = scan_cols;
    so.n_columns = N_C;
    /* Without lineage the commit rows are not read (graph.h, "Manifest compaction"). */
    graph_no_commits nc;
    memset(&nc, 0, sizeof nc);
    if (rc == 0 && !(flags & GRAPH_SNAP_LINEAGE)) rc = graph_scan_no_commits(&so, &nc, manifest);
    arrow_batch *b = NULL;
    if (rc == 0) rc = lance_dataset_scan_all(&b, manifest, &so);
    graph_scan_no_commits_clear(&nc);
    if (rc == 0 && b->n_columns != N_C)
        rc = core_err(OG_E_CORRUPT,
                      "graph manifest '%s': scan "
                      "returned %zu columns",
                      manifest->root, b->n_columns);
    if (rc == 0) {
        reader r = {b, manifest->root};
        rc = reduce(snap, &r, branch, flags);
    }
    arrow_batch_free(b);
    if (rc) {
        graph_snapshot_free(snap);
        return rc;
    }
    *out = snap;
    return 0;
}

/* ---- the registry (cleanup's reclamation of dropped tables) --------------------------- */

static int path_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void graph_registry_free(graph_registry *g)
{
    if (!g) return;
    for (size_t i = 0; i < g->n_paths; i++)
        core_free(g->paths[i]);
    core_free(g->paths);
    core_free(g->schema_versions);
    memset(g, 0, sizeof *g);
}

int graph_registry_load(graph_registry *out, const lance_dataset *manifest)
{
    memset(out, 0, sizeof *out);
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.columns = scan_cols;
    so.n_columns = N_C;
    graph_no_commits nc;
    memset(&nc, 0, sizeof nc);
    int rc = graph_scan_no_commits(&so, &nc, manifest);
    arrow_batch *b = NULL;
    if (rc == 0) rc = lance_dataset_scan_all(&b, manifest, &so);
    graph_scan_no_commits_clear(&nc);
    if (rc == 0 && b->n_columns != N_C)
        rc = core_err(OG_E_CORRUPT, "graph manifest '%s': scan returned %zu columns",
                      manifest->root, b->n_columns);
    int64_t n = rc == 0 ? b->num_rows : 0;
    if (rc == 0) {
        out->paths = core_calloc(n ? (size_t)n : 1, sizeof *out->paths);
        out->schema_versions = core_calloc(n ? (size_t)n : 1, sizeof *out->schema_versions);
        if (!out->paths || !out->schema_versions) rc = core_err_nomem();
    }
    reader r = {b, manifest->root};
    for (int64_t i = 0; rc == 0 && i < n; i++) {
        if (cell_eq(&r, C_TYPE, i, graph_row_kind_name(GRAPH_ROW_SCHEMA))) {
            rc = cell_u64(&r, C_VER, i, &out->schema_versions[out->n_schema_versions],
                          "schema row without table_version");
            if (rc == 0) out->n_schema_versions++;
        } else if (cell_eq(&r, C_TYPE, i, graph_row_kind_name(GRAPH_ROW_TABLE))) {
            if (is_null(&r, C_LOC, i)) {
                rc = corrupt(&r, i, "registration without alias or location");
                break;
            }
            char *p = cell_dup(&r, C_LOC, i, &rc);
            if (p) out->paths[out->n_paths++] = p;
        }
    }
    arrow_batch_free(b);
    if (rc) {
        graph_registry_free(out);
        return rc;
    }
    qsort(out->paths, out->n_paths, sizeof *out->paths, path_cmp);
    size_t k = 0; /* a renamed table is registered more than once, under one path */
    for (size_t i = 0; i < out->n_paths; i++) {
        if (k && strcmp(out->paths[k - 1], out->paths[i]) == 0)
            core_free(out->paths[i]);
        else
            out->paths[k++] = out->paths[i];
    }
    out->n_paths = k;
    qsort(out->schema_versions, out->n_schema_versions, sizeof *out->schema_versions, u64_cmp);
    return 0;
}

bool graph_registry_has(const graph_registry *g, const char *path)
{
    return bsearch(&path, g->paths, g->n_paths, sizeof *g->paths, path_cmp) != NULL;
}

int graph_snapshot_from_dataset(graph_snapshot **out, const lance_dataset *manifest,
                                const char *branch, unsigned flags)
{
    *out = NULL;
    lance_branch ref;
    if (!is_main(branch)) {
        int rc = lance_branch_get(manifest->s, GRAPH_MANIFEST_DIR, branch, &ref);
        if (rc) return rc;
    }
    return from_dataset(out, manifest, branch, is_main(branch) ? NULL : ref.identity, flags);
}

static int snapshot_load(graph_snapshot **out, store *s, const char *branch, uint64_t version,
                         unsigned flags, lance_naming *naming);

int graph_snapshot_load(graph_snapshot **out, store *s, const char *branch, uint64_t version,
                        unsigned flags)
{
    /* At the head, checked before it is served (graph_head_check_tables): a newer version that
     * was lost would otherwise make it a silently stale head. Read again when a writer
     * published meanwhile. */
    for (int tries = 0;; tries++) {
        lance_naming naming = LANCE_NAMING_UNKNOWN;
        int rc = snapshot_load(out, s, branch, version, flags, &naming);
        if (rc != 0 || version != 0) return rc;
        bool moved = false;
        rc = graph_head_check_tables(s, *out, naming, &moved);
        if (rc == 0 && (!moved || tries == 4)) return 0;
        graph_snapshot_free(*out);
        *out = NULL;
        if (rc != 0) return rc;
    }
}

/* Whether main's graph-manifest version `version`, not stored while a newer one is, was lost
 * rather than removed by cleanup (its file's key into key): graph cleanup deletes the oldest
 * versions first and keeps one run up to the latest (lance_cleanup_options.contiguous), so a
 * stored version below it means the file was lost. Listed twice: a listing that raced a cleanup
 * (deleting oldest first) may have seen an older version that the second no longer holds. */
static bool manifest_version_lost(store *s, uint64_t version, lance_naming nm,
                                  char key[STORE_KEY_MAX])
{
    char name[LANCE_VERSION_NAME_CAP];
    if (lance_version_file_name(name, sizeof name, nm, version) != 0 ||
        lance_key(key, GRAPH_MANIFEST_DIR, LANCE_VERSIONS_DIR, name) != 0) {
        og_error_clear();
        return false;
    }
    for (int pass = 0; pass < 2; pass++) {
        lance_version_list vl = {0};
        if (lance_versions_list(s, GRAPH_MANIFEST_DIR, &vl) != 0) {
            og_error_clear();
            return false;
        }
        bool below = vl.n > 0 && vl.v[0] < version, present = false;
        for (size_t i = 0; i < vl.n; i++)
            if (vl.v[i] == version) present = true;
        lance_version_list_free(&vl);
        if (!below || present) return false;
    }
    return true;
}

static int snapshot_load(graph_snapshot **out, store *s, const char *branch, uint64_t version,
                         unsigned flags, lance_naming *naming)
{
    *out = NULL;
    lance_dataset *m = NULL;
    lance_branch ref;
    int rc;
    if (is_main(branch)) {
        rc = lance_dataset_open(&m, s, GRAPH_MANIFEST_DIR, version, LANCE_ACCESS_READ);
        uint64_t latest = 0;
        lance_naming nm;
        if (rc == OG_E_NOT_FOUND && version > 0 &&
            lance_version_latest(s, GRAPH_MANIFEST_DIR, &latest, &nm) == 0) {
            char lost[STORE_KEY_MAX];
            if (latest > version && manifest_version_lost(s, version, nm, lost)) {
                rc = core_err(OG_E_CORRUPT,
                              "graph-manifest version %llu (%s) is missing, though older "
                              "versions are stored: the file was lost (cleanup removes only "
                              "the oldest versions). The head and every other commit read as "
                              "before; restoring the file from a backup makes this commit "
                              "readable again (`omnigraph verify` lists the damage)",
                              (unsigned long long)version, lost);
                core_err_detail(CORE_ERR_OBJECT, lost);
                lance_dataset_free(m);
                return rc;
            }
            if (latest > version) /* the graph went past it: cleanup removed it */
                rc = core_err(OG_E_NOT_FOUND,
                              "manifest version %llu is no longer stored: cleanup removed it "
                              "(commits outside the retention window cannot be read)",
                              (unsigned long long)version);
            else
                rc = core_err(OG_E_NOT_FOUND,
                              "manifest version %llu does not exist (the "
                              "latest is %llu)",
                              (unsigned long long)version, (unsigned long long)latest);
            core_err_detail(CORE_ERR_OBJECT, GRAPH_MANIFEST_DIR);
        }
    } else {
        /* Read the ref first and open under its identity, so the identity reported is the
         * incarnation whose rows were read. */
        rc = lance_branch_get(s, GRAPH_MANIFEST_DIR, branch, &ref);
        if (rc == 0)
            rc = lance_branch_open_ref(&m, s, GRAPH_MANIFEST_DIR, &ref, version, LANCE_ACCESS_READ);
    }
    if (rc == 0) rc = from_dataset(out, m, branch, is_main(branch) ? NULL : ref.identity, flags);
    if (rc == 0) *naming = m->naming;
    lance_dataset_free(m);
    return rc;
}

int graph_manifest_snapshot(lance_dataset **manifest, graph_snapshot **out, store *s,
                            const char *branch, uint64_t version, lance_access access)
{
    *manifest = NULL;
    *out = NULL;
    lance_dataset *m = NULL;
    lance_branch ref;
    int rc;
    if (is_main(branch)) {
        rc = lance_dataset_open(&m, s, GRAPH_MANIFEST_DIR, version, access);
    } else {
        rc = lance_branch_get(s, GRAPH_MANIFEST_DIR, branch, &ref);
        if (rc == 0) rc = lance_branch_open_ref(&m, s, GRAPH_MANIFEST_DIR, &ref, version, access);
    }
    if (rc == 0) rc = from_dataset(out, m, branch, is_main(branch) ? NULL : ref.identity, 0);
    if (rc == 0)
        *manifest = m;
    else
        lance_dataset_free(m);
    return rc;
}

/* ---- damage at the top of history ------------------------------------------------------ */

/* The file of version v of main's manifest ("" when it cannot be named). */
static void version_key(char out[STORE_KEY_MAX], lance_naming naming, uint64_t v)
{
    char name[LANCE_VERSION_NAME_CAP];
    out[0] = 0;
    if (lance_version_file_name(name, sizeof name,
                                naming == LANCE_NAMING_V1 ? LANCE_NAMING_V1 : LANCE_NAMING_V2,
                                v) != 0 ||
        lance_key(out, GRAPH_MANIFEST_DIR, LANCE_VERSIONS_DIR, name) != 0)
        out[0] = 0;
}

int graph_manifest_inspect(store *s, const char *branch, graph_manifest_damage *d)
{
    memset(d, 0, sizeof *d);
    if (branch && (!*branch || !strcmp(branch, "main"))) branch = NULL;
    char root[STORE_KEY_MAX];
    int rc = lance_branch_root(root, GRAPH_MANIFEST_DIR, branch);
    if (rc != 0) return rc;
    lance_version_list l;
    if ((rc = lance_versions_list(s, root, &l)) != 0) return rc;
    if (l.n == 0) {
        lance_version_list_free(&l);
        /* main's: no graph here; a branch's (its ref names it): a branch that lost them */
        rc = branch
                 ? core_err(OG_E_CORRUPT,
                            "graph branch %s has no graph-manifest versions (%s/%s is empty)",
                            branch, root, LANCE_VERSIONS_DIR)
                 : core_err(OG_E_NOT_FOUND, "the graph manifest has no versions (%s/%s is empty)",
                            root, LANCE_VERSIONS_DIR);
        core_err_detail(CORE_ERR_OBJECT, root);
        return rc;
    }
    d->latest = l.v[l.n - 1];
    uint64_t hint = lance_hint_read(s, root);
    if (hint > d->latest) d->hinted = hint;
    for (size_t i = l.n; i-- > 0 && d->intact == 0;) {
        graph_snapshot *snap = NULL;
        rc = graph_snapshot_load(&snap, s, branch, l.v[i], GRAPH_SNAP_LINEAGE);
        graph_snapshot_free(snap);
        if (rc == 0) {
            d->intact = l.v[i];
        } else if (rc == OG_E_CORRUPT || rc == OG_E_NOT_FOUND) {
            if (!d->damaged_key[0]) {
                char name[LANCE_VERSION_NAME_CAP];
                if (lance_version_file_name(name, sizeof name, l.naming, l.v[i]) != 0 ||
                    lance_key(d->damaged_key, root, LANCE_VERSIONS_DIR, name) != 0)
                    d->damaged_key[0] = 0;
                snprintf(d->why, sizeof d->why, "%s", og_error_last()->message);
            }
        } else {
            lance_version_list_free(&l);
            return rc;
        }
    }
    lance_version_list_free(&l);
    og_error_clear();
    return 0;
}

int graph_head_damaged(int rc, uint64_t version)
{
    if (rc != OG_E_CORRUPT && rc != OG_E_NOT_FOUND) return rc;
    char why[600], obj[STORE_KEY_MAX];
    snprintf(why, sizeof why, "%s", og_error_last()->message);
    snprintf(obj, sizeof obj, "%s", og_error_last()->object ? og_error_last()->object : "");
    char vkey[STORE_KEY_MAX];
    version_key(vkey, LANCE_NAMING_V2, version);
    /* A cause that already names the remedy (a failed checksum) is not told it twice. */
    bool told = strstr(why, "omnigraph repair") != NULL;
    core_err(OG_E_CORRUPT, "the newest graph-manifest version %llu (%s) cannot be read: %s%s",
             (unsigned long long)version, vkey, why,
             told ? ""
                  : ". Older commits can still be read with --at where their files are intact; "
                    "`omnigraph repair` restores a writable state from the newest intact "
                    "version (`omnigraph verify` lists the damage)");
    core_err_detail(CORE_ERR_OBJECT, obj[0] ? obj : vkey);
    return OG_E_CORRUPT;
}

int graph_head_lost(int rc)
{
    if (rc != OG_E_CORRUPT) return rc;
    char why[600], obj[STORE_KEY_MAX];
    snprintf(why, sizeof why, "%s", og_error_last()->message);
    snprintf(obj, sizeof obj, "%s", og_error_last()->object ? og_error_last()->object : "");
    core_err(OG_E_CORRUPT,
             "the head of the graph cannot be found: %s. Reads at the head and writes are "
             "refused rather than served from an older version; older commits can still be "
             "read with --at; `omnigraph verify` lists the damage and `omnigraph repair` "
             "restores a writable state",
             why);
    core_err_detail(CORE_ERR_OBJECT, obj[0] ? obj : GRAPH_MANIFEST_DIR);
    return OG_E_CORRUPT;
}

int graph_snapshot_load_tolerant(graph_snapshot **out, store *s, unsigned flags)
{
    *out = NULL;
    int rc = graph_snapshot_load(out, s, NULL, 0, flags);
    if (rc != 0 && rc != OG_E_CORRUPT && rc != OG_E_NOT_FOUND) return rc;
    if (rc == 0) {
        /* A missing newest version (deleted, lost) leaves the hint pointing past the latest. */
        uint64_t hint = lance_hint_read(s, GRAPH_MANIFEST_DIR), now = 0;
        lance_naming nm;
        /* A commit made since the read rewrites the hint after its version exists: only a
         * hint still above the latest after the read names a version that is gone. */
        if (hint > (*out)->manifest_version &&
            lance_version_latest(s, GRAPH_MANIFEST_DIR, &now, &nm) == 0 && now < hint)
            core_log(CORE_LOG_WARN,
                     "graph manifest version %llu is missing (the version hint names it) and "
                     "the newest stored is %llu: commits of the missing version cannot be read; "
                     "`omnigraph repair` restores a writable state",
                     (unsigned long long)hint, (unsigned long long)(*out)->manifest_version);
        return 0;
    }
    char saved[600];
    int saved_rc = rc;
    snprintf(saved, sizeof saved, "%s", og_error_last()->message);
    char saved_obj[STORE_KEY_MAX];
    snprintf(saved_obj, sizeof saved_obj, "%s",
             og_error_last()->object ? og_error_last()->object : "");
    graph_manifest_damage d;
    int irc = graph_manifest_inspect(s, NULL, &d);
    if (irc != 0 || d.intact == 0) {
        core_err(saved_rc, "%s", saved);
        if (saved_obj[0]) core_err_detail(CORE_ERR_OBJECT, saved_obj);
        /* No graph at all stays not_found; versions that exist but none reads is damage. */
        return irc == OG_E_NOT_FOUND ? saved_rc : graph_head_damaged(saved_rc, d.latest);
    }
    rc = graph_snapshot_load(out, s, NULL, d.intact, flags);
    if (rc == 0 && d.intact == d.latest)
        core_log(CORE_LOG_WARN,
                 "%s; reading the newest stored version %llu for its history. `omnigraph verify` "
                 "lists the damage",
                 saved, (unsigned long long)d.intact);
    else if (rc == 0)
        core_log(CORE_LOG_WARN,
                 "graph manifest version %llu (%s) cannot be read (%s); reading the newest intact "
                 "version %llu instead. `omnigraph repair` restores a writable state",
                 (unsigned long long)d.latest, d.damaged_key, d.why, (unsigned long long)d.intact);
    return rc;
}

/* ---- a head that may be stale ------------------------------------------------------------
 * The newest graph-manifest version found is the head only if no newer one was lost. A lost
 * newest version leaves behind the tables its commit moved: each is at a Lance version after
 * the one the found head pins. A write in flight moves its tables ahead too, but it holds a
 * recovery sidecar from before its first effect until after its publish, so: a table of this
 * branch ahead of its pin, no sidecar at all, and the manifest still at the version read (after
 * the sidecar listing, so a publish that removed its sidecar is seen) is damage. */
int graph_head_check_tables(store *s, const graph_snapshot *snap, lance_naming naming, bool *moved)
{
    *moved = false;
    const graph_table *ahead = NULL;
    uint64_t at = 0;
    bool fork = false;
    char root[STORE_KEY_MAX];
    for (size_t i = 0; i < snap->n_tables && !ahead; i++) {
        const graph_table *t = &snap->tables[i];
        /* This branch's own tables: a branch reads the versions of its source's tables it
         * has not forked, which the source moves on from legitimately. */
        bool own = snap->branch ? t->table_branch && strcmp(t->table_branch, snap->branch) == 0
                                : !t->table_branch;
        if (t->version == 0) continue;
        if (!own && snap->branch) {
            /* One it reads from its source: a fork of it named after this branch, made at
             * exactly the pinned version (what a first touch does) and with commits of its
             * own, holds what a first-touch commit published in a manifest version that is
             * gone. (A first touch that staged nothing leaves its fork at the fork point; one
             * rolled back is published pinned.) */
            lance_branch fr;
            int rc = lance_branch_get(s, t->path, snap->branch, &fr);
            if (rc == OG_E_NOT_FOUND || rc == OG_E_CORRUPT) { /* a damaged ref: verify names it */
                og_error_clear();
                continue;
            }
            if (rc != 0) return rc;
            if (strcmp(fr.parent, t->table_branch ? t->table_branch : "") != 0 ||
                fr.parent_version != t->version)
                continue;
            uint64_t latest = 0;
            rc = lance_branch_root(root, t->path, snap->branch);
            if (rc == 0)
                rc = lance_version_latest_from_flags(s, root, LANCE_NAMING_V2, fr.parent_version, 0,
                                                     &latest);
            if (rc != 0) return rc;
            if (latest > fr.parent_version) ahead = t, at = latest, fork = true;
            continue;
        }
        if (!own) continue;
        uint64_t latest = 0;
        int rc = lance_branch_root(root, t->path, t->table_branch);
        if (rc == 0)
            rc = lance_version_latest_from_flags(s, root, LANCE_NAMING_V2, t->version, 0, &latest);
        if (rc != 0) return rc;
        if (latest > t->version) ahead = t, at = latest;
    }
    if (!ahead) return 0;
    char key[STORE_KEY_MAX];
    snprintf(key, sizeof key, "%s/", GRAPH_RECOVERY_DIR);
    store_list l = {0};
    int rc = store_list_prefix(s, key, STORE_LIST_DELIMITED, &l);
    size_t pending = 0;
    for (size_t i = 0; rc == 0 && i < l.count; i++)
        if (!l.items[i].is_prefix) pending++;
    store_list_free(&l);
    if (rc == OG_E_NOT_FOUND) rc = 0, og_error_clear();
    if (rc != 0) return rc;
    if (pending) return 0; /* a write in flight, or one recovery will resolve */
    uint64_t now = 0;
    rc = lance_branch_root(root, GRAPH_MANIFEST_DIR, snap->branch);
    if (rc == 0)
        rc = lance_version_latest_from_flags(s, root, naming, snap->manifest_version,
                                             LANCE_LATEST_CHECK | LANCE_LATEST_GAPS, &now);
    if (rc != 0) return rc;
    if (now != snap->manifest_version) {
        *moved = true;
        return 0;
    }
    char vkey[STORE_KEY_MAX], name[LANCE_VERSION_NAME_CAP];
    if (lance_version_file_name(name, sizeof name, naming, snap->manifest_version + 1) != 0 ||
        lance_key(vkey, root, LANCE_VERSIONS_DIR, name) != 0)
        vkey[0] = 0;
    core_err(OG_E_CORRUPT,
             "the newest graph-manifest version%s%s is %llu, but table %s%s is at Lance version "
             "%llu, after the version %llu that it pins, and no pending write explains it: a "
             "newer graph-manifest version (%s) was lost, so the head cannot be trusted. Older "
             "commits can still be read with --at; `omnigraph verify` lists the damage and "
             "`omnigraph repair --confirm%s%s` rolls the lost commit's rows forward (or names what "
             "it cannot keep)",
             snap->branch ? " of branch " : "", snap->branch ? snap->branch : "",
             (unsigned long long)snap->manifest_version, ahead->alias,
             fork ? " (its fork for this branch)" : "", (unsigned long long)at,
             (unsigned long long)ahead->version, vkey[0] ? vkey : "the next one",
             snap->branch ? " --branch " : "", snap->branch ? snap->branch : "");
    core_err_detail(CORE_ERR_OBJECT, vkey[0] ? vkey : ahead->path);
    return OG_E_CORRUPT;
}
