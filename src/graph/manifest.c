/* Graph manifest rows: the object_type names, the manifest's Arrow schema, and the builder
 * that turns the rows of one graph commit into one Arrow batch. Every row kind carries the
 * version it belongs to, so the manifest only ever grows (see graph.h). */
#include "graph/graph.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/json.h"
#include "lance/paths.h"
#include "lance/version.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char *const kind_names[] = {
    [GRAPH_ROW_FORMAT] = "format",
    [GRAPH_ROW_SCHEMA] = "schema",
    [GRAPH_ROW_TABLE] = "table",
    [GRAPH_ROW_TABLE_VERSION] = "table_version",
    [GRAPH_ROW_TOMBSTONE] = "table_tombstone",
    [GRAPH_ROW_COMMIT] = "graph_commit",
    [GRAPH_ROW_HEAD] = "graph_head",
};
#define N_KINDS (sizeof kind_names / sizeof kind_names[0])

const char *graph_row_kind_name(int kind)
{
    if (kind <= 0 || (size_t)kind >= N_KINDS) return NULL;
    return kind_names[kind];
}

int graph_row_kind_parse(const char *s)
{
    if (!s) return 0;
    for (size_t k = 1; k < N_KINDS; k++)
        if (strcmp(kind_names[k], s) == 0) return (int)k;
    return 0;
}

/* ---- schema ------------------------------------------------------------------------------ */

typedef struct col_def {
    const char *name;
    arrow_type_id type;
    bool nullable;
} col_def;

/* Column order is the batch order; readers find columns by name. */
static const col_def manifest_cols[] = {
    {"object_id", ARROW_UTF8, false},
    {"object_type", ARROW_UTF8, false},
    {"location", ARROW_UTF8, true},
    {"metadata", ARROW_UTF8, true},
    {"table_key", ARROW_UTF8, false},
    {"stable_table_id", ARROW_UINT64, true},
    {"table_incarnation_id", ARROW_UINT64, true},
    {"table_version", ARROW_UINT64, true},
    {"table_branch", ARROW_UTF8, true},
    {"row_count", ARROW_UINT64, true},
};
#define N_COLS (sizeof manifest_cols / sizeof manifest_cols[0])

int graph_manifest_schema(arrow_schema *out)
{
    arrow_schema_init(out);
    for (size_t i = 0; i < N_COLS; i++) {
        arrow_type t = arrow_type_simple(manifest_cols[i].type);
        arrow_field f;
        int rc = arrow_field_init(&f, manifest_cols[i].name, &t, manifest_cols[i].nullable);
        if (rc == 0) rc = arrow_schema_add(out, &f);
        arrow_field_clear(&f);
        if (rc) {
            arrow_schema_clear(out);
            return rc;
        }
    }
    return 0;
}

/* ---- row builder ------------------------------------------------------------------------- */

typedef struct mrow {
    int kind;
    char *object_id;
    char *location; /* NULL: null */
    char *metadata; /* NULL: null */
    char *table_key;
    char *table_branch;
    bool has_sid, has_inc, has_ver, has_rows;
    uint64_t sid, inc, ver, rows;
} mrow;

struct graph_rows {
    mrow *rows;
    size_t n, cap;
};

int graph_rows_new(graph_rows **out)
{
    *out = core_calloc(1, sizeof **out);
    return *out ? 0 : core_err_nomem();
}

static void mrow_clear(mrow *r)
{
    core_free(r->object_id);
    core_free(r->location);
    core_free(r->metadata);
    core_free(r->table_key);
    core_free(r->table_branch);
}

void graph_rows_free(graph_rows *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n; i++)
        mrow_clear(&r->rows[i]);
    core_free(r->rows);
    core_free(r);
}

size_t graph_rows_count(const graph_rows *r)
{
    return r ? r->n : 0;
}

static char *dup_or_null(const char *s, int *rc)
{
    if (!s) return NULL;
    char *d = core_strdup(s);
    if (!d) *rc = core_err_nomem();
    return d;
}

/* Append a row; strings are copied (location/metadata/table_branch may be NULL). The row is
 * only added when every copy succeeded. */
static int push_row(graph_rows *r, const mrow *src)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 8;
        mrow *p = core_realloc(r->rows, cap * sizeof *p);
        if (!p) return core_err_nomem();
        r->rows = p;
        r->cap = cap;
    }
    int rc = 0;
    mrow row = *src;
    row.object_id = dup_or_null(src->object_id, &rc);
    row.location = dup_or_null(src->location, &rc);
    row.metadata = dup_or_null(src->metadata, &rc);
    row.table_key = dup_or_null(src->table_key ? src->table_key : "", &rc);
    row.table_branch = dup_or_null(src->table_branch, &rc);
    if (rc) {
        mrow_clear(&row);
        return rc;
    }
    r->rows[r->n++] = row;
    return 0;
}

/* Compact, key-sorted JSON text of obj (consumed). */
static int json_text(json_t *obj, char **out)
{
    *out = NULL;
    if (!obj) return core_err_nomem();
    core_buf b = CORE_BUF_INIT;
    int rc = core_json_dump(obj, &b);
    json_decref(obj);
    if (rc == 0) rc = core_buf_append_byte(&b, 0);
    if (rc) {
        core_buf_free(&b);
        return rc;
    }
    *out = (char *)core_buf_detach(&b, NULL);
    return *out ? 0 : core_err_nomem();
}

/* json_object_set_new that reports allocation failure. */
static int jset(json_t *o, const char *key, json_t *v)
{
    if (!v || json_object_set_new(o, key, v) != 0) return core_err_nomem();
    return 0;
}

/* The metadata text {"key": v} (v consumed). */
static int meta1(const char *key, json_t *v, char **out)
{
    *out = NULL;
    json_t *o = json_object();
    int rc = o ? jset(o, key, v) : (json_decref(v), core_err_nomem());
    if (rc) {
        json_decref(o);
        return rc;
    }
    return json_text(o, out);
}

static int check_identity(uint64_t sid, uint64_t inc)
{
    if (sid == 0 || inc == 0)
        return core_err(OG_E_BAD_REQUEST,
                        "table identity %016" PRIx64 ":%016" PRIx64 " has a zero component", sid,
                        inc);
    return 0;
}

static int check_alias(const char *alias)
{
    if (!alias || !*alias) return core_err(OG_E_BAD_REQUEST, "a table row needs an alias");
    return 0;
}

int graph_rows_add_format(graph_rows *r, int format_version)
{
    if (format_version <= 0)
        return core_err(OG_E_BAD_REQUEST, "graph format version %d is not positive",
                        format_version);
    char *meta = NULL;
    int rc = meta1("format_version", json_integer(format_version), &meta);
    if (rc) return rc;
    mrow row = {.kind = GRAPH_ROW_FORMAT, .object_id = "format", .metadata = meta};
    rc = push_row(r, &row);
    core_free(meta);
    return rc;
}

int graph_rows_add_schema(graph_rows *r, const char *identity, uint64_t manifest_version)
{
    if (!identity || strlen(identity) != GRAPH_SCHEMA_HASH_LEN)
        return core_err(OG_E_BAD_REQUEST, "schema identity '%s' is not %d hex digits",
                        identity ? identity : "(null)", GRAPH_SCHEMA_HASH_LEN);
    char *meta = NULL;
    int rc = meta1("identity", json_string(identity), &meta);
    if (rc) return rc;
    char id[64];
    snprintf(id, sizeof id, "schema:%020" PRIu64, manifest_version);
    mrow row = {.kind = GRAPH_ROW_SCHEMA,
                .object_id = id,
                .metadata = meta,
                .has_ver = true,
                .ver = manifest_version};
    rc = push_row(r, &row);
    core_free(meta);
    return rc;
}

static int add_table(graph_rows *r, int kind, uint64_t sid, uint64_t inc, const char *alias,
                     uint64_t at)
{
    char path[STORE_KEY_MAX];
    int rc = check_identity(sid, inc);
    if (rc == 0) rc = check_alias(alias);
    if (rc == 0) rc = graph_table_path(path, kind, sid, inc);
    if (rc) return rc;
    char id[80];
    if (at)
        snprintf(id, sizeof id, "table:%016" PRIx64 ":%016" PRIx64 ":%020" PRIu64, sid, inc, at);
    else
        snprintf(id, sizeof id, "table:%016" PRIx64 ":%016" PRIx64, sid, inc);
    mrow row = {.kind = GRAPH_ROW_TABLE,
                .object_id = id,
                .location = path,
                .table_key = (char *)alias,
                .has_sid = true,
                .sid = sid,
                .has_inc = true,
                .inc = inc,
                .has_ver = at != 0,
                .ver = at};
    return push_row(r, &row);
}

int graph_rows_add_table(graph_rows *r, int kind, uint64_t sid, uint64_t inc, const char *alias)
{
    return add_table(r, kind, sid, inc, alias, 0);
}

int graph_rows_add_table_at(graph_rows *r, int kind, uint64_t sid, uint64_t inc, const char *alias,
                            uint64_t manifest_version)
{
    if (!manifest_version) return core_err(OG_E_INTERNAL, "a re-registration needs its version");
    return add_table(r, kind, sid, inc, alias, manifest_version);
}

int graph_rows_add_version(graph_rows *r, uint64_t sid, uint64_t inc, const char *alias,
                           uint64_t table_version, const char *table_branch, uint64_t row_count)
{
    return graph_rows_add_version_sum(r, sid, inc, alias, table_version, table_branch, row_count,
                                      NULL);
}

int graph_rows_add_version_sum(graph_rows *r, uint64_t sid, uint64_t inc, const char *alias,
                               uint64_t table_version, const char *table_branch, uint64_t row_count,
                               const uint64_t *manifest_xxh3)
{
    int rc = check_identity(sid, inc);
    if (rc == 0) rc = check_alias(alias);
    if (rc) return rc;
    char *meta = NULL;
    if (manifest_xxh3) {
        char hex[17];
        snprintf(hex, sizeof hex, "%016" PRIx64, *manifest_xxh3);
        if ((rc = meta1("manifest_xxh3", json_string(hex), &meta))) return rc;
    }
    if (table_version == 0)
        return core_err(OG_E_BAD_REQUEST, "table version 0 cannot be published");
    char id[96];
    snprintf(id, sizeof id, "table_version:%016" PRIx64 ":%016" PRIx64 ":%020" PRIu64, sid, inc,
             table_version);
    mrow row = {.kind = GRAPH_ROW_TABLE_VERSION,
                .object_id = id,
                .table_key = (char *)alias,
                .table_branch = (char *)(table_branch && *table_branch ? table_branch : NULL),
                .has_sid = true,
                .sid = sid,
                .has_inc = true,
                .inc = inc,
                .has_ver = true,
                .ver = table_version,
                .has_rows = true,
                .rows = row_count,
                .metadata = meta};
    rc = push_row(r, &row);
    core_free(meta);
    return rc;
}

int graph_rows_add_tombstone(graph_rows *r, uint64_t sid, uint64_t inc, const char *alias,
                             uint64_t table_version)
{
    int rc = check_identity(sid, inc);
    if (rc == 0) rc = check_alias(alias);
    if (rc) return rc;
    char id[96];
    snprintf(id, sizeof id, "table_tombstone:%016" PRIx64 ":%016" PRIx64 ":%020" PRIu64, sid, inc,
             table_version);
    mrow row = {.kind = GRAPH_ROW_TOMBSTONE,
                .object_id = id,
                .table_key = (char *)alias,
                .has_sid = true,
                .sid = sid,
                .has_inc = true,
                .inc = inc,
                .has_ver = true,
                .ver = table_version};
    return push_row(r, &row);
}

int graph_rows_add_commit(graph_rows *r, const graph_commit *c)
{
    if (!c || !core_ulid_valid(c->id))
        return core_err(OG_E_BAD_REQUEST, "commit id '%s' is not a ULID", c ? c->id : "(null)");
    if (c->parent[0] && !core_ulid_valid(c->parent))
        return core_err(OG_E_BAD_REQUEST, "parent commit id '%s' is not a ULID", c->parent);
    if (c->merged_parent[0] && !core_ulid_valid(c->merged_parent))
        return core_err(OG_E_BAD_REQUEST, "merged parent commit id '%s' is not a ULID",
                        c->merged_parent);
    json_t *o = json_object();
    int rc = o ? 0 : core_err_nomem();
    if (rc == 0 && c->parent[0]) rc = jset(o, "parent_commit_id", json_string(c->parent));
    if (rc == 0 && c->merged_parent[0])
        rc = jset(o, "merged_parent_commit_id", json_string(c->merged_parent));
    if (rc == 0 && c->actor) rc = jset(o, "actor_id", json_string(c->actor));
    if (rc == 0) rc = jset(o, "created_at", json_integer((json_int_t)c->created_at_us));
    if (rc == 0 && c->maintenance) rc = jset(o, "maintenance", json_true());
    char *meta = NULL;
    if (rc == 0) {
        rc = json_text(o, &meta);
    } else {
        json_decref(o);
    }
    if (rc) return rc;
    mrow row = {.kind = GRAPH_ROW_COMMIT,
                .object_id = (char *)c->id,
                .metadata = meta,
                .table_branch = c->branch && *c->branch ? c->branch : NULL,
                .has_ver = true,
                .ver = c->manifest_version};
    rc = push_row(r, &row);
    core_free(meta);
    return rc;
}

int graph_rows_add_head(graph_rows *r, const char *branch, const char *commit_id,
                        const char *content_commit_id, uint64_t manifest_version)
{
    if (!commit_id || !core_ulid_valid(commit_id))
        return core_err(OG_E_BAD_REQUEST, "head commit id '%s' is not a ULID",
                        commit_id ? commit_id : "(null)");
    if (content_commit_id && (!*content_commit_id || strcmp(content_commit_id, commit_id) == 0))
        content_commit_id = NULL;
    if (content_commit_id && !core_ulid_valid(content_commit_id))
        return core_err(OG_E_BAD_REQUEST, "content commit id '%s' is not a ULID",
                        content_commit_id);
    if (branch && !*branch) branch = NULL;
    char *meta = NULL;
    json_t *o = json_object();
    int rc = o ? 0 : core_err_nomem();
    if (rc == 0) rc = jset(o, "head_commit_id", json_string(commit_id));
    if (rc == 0 && content_commit_id)
        rc = jset(o, "content_commit_id", json_string(content_commit_id));
    if (rc == 0)
        rc = json_text(o, &meta);
    else
        json_decref(o);
    if (rc) return rc;
    size_t cap = strlen(branch ? branch : "main") + 64;
    char *id = core_malloc(cap);
    if (!id) {
        core_free(meta);
        return core_err_nomem();
    }
    snprintf(id, cap, "graph_head:%s:%020" PRIu64, branch ? branch : "main", manifest_version);
    /* table_branch (null = main) is what readers match on; the object id is for people. */
    mrow row = {.kind = GRAPH_ROW_HEAD,
                .object_id = id,
                .metadata = meta,
                .table_branch = (char *)branch,
                .has_ver = true,
                .ver = manifest_version};
    rc = push_row(r, &row);
    core_free(id);
    core_free(meta);
    return rc;
}

/* ---- batch ------------------------------------------------------------------------------- */

static int put_str(arrow_builder *b, const char *s)
{
    return s ? arrow_builder_append_str(b, s) : arrow_builder_append_null(b);
}

static int put_u64(arrow_builder *b, bool has, uint64_t v)
{
    return has ? arrow_builder_append_uint(b, v) : arrow_builder_append_null(b);
}

int graph_rows_to_batch(const graph_rows *r, arrow_batch **out)
{
    *out = NULL;
    arrow_schema schema;
    int rc = graph_manifest_schema(&schema);
    if (rc) return rc;
    arrow_builder *b[N_COLS] = {0};
    arrow_array *cols[N_COLS] = {0};
    for (size_t c = 0; rc == 0 && c < N_COLS; c++) {
        rc = arrow_builder_new(&b[c], &schema.fields[c].type);
        if (rc == 0) rc = arrow_builder_reserve(b[c], (int64_t)r->n);
    }
    for (size_t i = 0; rc == 0 && i < r->n; i++) {
        const mrow *w = &r->rows[i];
        rc = put_str(b[0], w->object_id);
        if (rc == 0) rc = put_str(b[1], graph_row_kind_name(w->kind));
        if (rc == 0) rc = put_str(b[2], w->location);
        if (rc == 0) rc = put_str(b[3], w->metadata);
        if (rc == 0) rc = put_str(b[4], w->table_key ? w->table_key : "");
        if (rc == 0) rc = put_u64(b[5], w->has_sid, w->sid);
        if (rc == 0) rc = put_u64(b[6], w->has_inc, w->inc);
        if (rc == 0) rc = put_u64(b[7], w->has_ver, w->ver);
        if (rc == 0) rc = put_str(b[8], w->table_branch);
        if (rc == 0) rc = put_u64(b[9], w->has_rows, w->rows);
    }
    for (size_t c = 0; rc == 0 && c < N_COLS; c++)
        rc = arrow_builder_finish(b[c], &cols[c]);
    if (rc == 0) rc = arrow_batch_new(out, &schema, cols, N_COLS);
    for (size_t c = 0; c < N_COLS; c++) {
        arrow_builder_free(b[c]);
        arrow_array_free(cols[c]);
    }
    arrow_schema_clear(&schema);
    return rc;
}

/* ---- the chain ---------------------------------------------------------------------------
 * Why the graph manifest is chained: it is the root of trust. Every table version it publishes
 * carries the checksum of that table's Lance manifest (graph_table.manifest_xxh3), but nothing
 * vouched for its own versions: one flipped byte in the newest one went unnoticed, and the next
 * write was acknowledged on top of it. Each version now records its own checksum (checked on
 * every open, before a row is read from it) and its parent's (checked when a cached head
 * moves on by one version), so a damaged version is refused before anything is built on it. */

/* "<root>/_versions/<name>" of ds's version ("" when it cannot be named). */
static void chain_key(char out[STORE_KEY_MAX], const lance_dataset *ds, uint64_t v)
{
    char name[LANCE_VERSION_NAME_CAP];
    out[0] = 0;
    if (lance_version_file_name(name, sizeof name,
                                ds->naming == LANCE_NAMING_V1 ? LANCE_NAMING_V1 : LANCE_NAMING_V2,
                                v) != 0 ||
        lance_key(out, ds->root, LANCE_VERSIONS_DIR, name) != 0)
        out[0] = 0;
}

static int chain_corrupt(const lance_dataset *ds, const char *why)
{
    char key[STORE_KEY_MAX];
    uint64_t v = lance_dataset_version(ds);
    chain_key(key, ds, v);
    core_err(OG_E_CORRUPT,
             "graph-manifest version %" PRIu64 " (%s) %s: the file was damaged after it was "
             "written, so nothing is read from it or written on top of it. `omnigraph verify` "
             "lists the damage; `omnigraph repair` restores a writable state from the newest "
             "intact version",
             v, key[0] ? key : ds->root, why);
    core_err_detail(CORE_ERR_OBJECT, key[0] ? key : ds->root);
    return OG_E_CORRUPT;
}

int graph_manifest_chain_check(const lance_dataset *ds)
{
    const lance_chain *c = &ds->m->chain;
    char why[200];
    switch (c->state) {
    case LANCE_CHAIN_PRESENT:
        if (c->recorded == c->actual) return 0;
        snprintf(why, sizeof why,
                 "fails its checksum (it records %016" PRIx64 ", its bytes hash to %016" PRIx64 ")",
                 c->recorded, c->actual);
        return chain_corrupt(ds, why);
    case LANCE_CHAIN_MALFORMED:
        return chain_corrupt(ds, "has a damaged checksum entry (" LANCE_CHAIN_KEY ")");
    default:
        /* No entry: a version of a build before chains, accepted unverified so old graphs
         * open. No build ever put config or fields this one does not know into a graph
         * manifest, so a version that has some lost its entry to damage (a flipped byte in the
         * entry's key or tag) and is not taken for an old one. */
        if (c->n_other_config || lance_manifest_has_unknown_fields(ds->m))
            return chain_corrupt(ds, "has no checksum entry but config or fields that only a "
                                     "damaged one leaves");
        return 0;
    }
}

int graph_manifest_chain_follows(store *s, const lance_dataset *ds, const lance_manifest *prev)
{
    uint64_t v = lance_dataset_version(ds);
    if (!prev || lance_manifest_version(prev) + 1 != v) return 0;
    const lance_chain *c = &ds->m->chain;
    bool prev_chained = prev->chain.state == LANCE_CHAIN_PRESENT;
    if (c->state == LANCE_CHAIN_PRESENT ? c->parent == prev->file_xxh3 : !prev_chained) return 0;
    /* Is the cached version still the store's version N? Only then is this a break. */
    lance_manifest *now = NULL;
    int rc = lance_version_load(s, ds->root, lance_manifest_version(prev), ds->naming,
                                LANCE_ACCESS_INSPECT, &now);
    bool same = rc == 0 && now->file_xxh3 == prev->file_xxh3;
    lance_manifest_free(now);
    og_error_clear();
    if (!same) return 0;
    char why[200];
    if (c->state == LANCE_CHAIN_PRESENT)
        snprintf(why, sizeof why,
                 "does not follow version %" PRIu64 " (it records parent %016" PRIx64
                 ", version %" PRIu64 " hashes to %016" PRIx64 ")",
                 lance_manifest_version(prev), c->parent, lance_manifest_version(prev),
                 prev->file_xxh3);
    else
        snprintf(why, sizeof why,
                 "has no checksum though version %" PRIu64 " before it has one (a chain never "
                 "returns to unchecksummed versions)",
                 lance_manifest_version(prev));
    return chain_corrupt(ds, why);
}
