/* The accepted schema contract: the identity of a catalog (a 128-bit hash of its canonical
 * JSON), and the two files that record the accepted schema at the graph root, _schema.pg
 * (the source) and _schema.json (its catalog with the stable ids, and the identity). */
#include "graph/graph.h"
#include "core/alloc.h"
#include "core/arena.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCHEMA_FILE_FORMAT 1
/* Two independent 64-bit XXH3 digests make the 128 bits of an identity. */
#define ID_SEED_HI 0x6f6d6e6967726170ULL
#define ID_SEED_LO 0x9e3779b97f4a7c15ULL

static void identity_of(const core_buf *json, char out[GRAPH_SCHEMA_HASH_LEN + 1])
{
    uint64_t hi = core_hash64(json->data, json->len, ID_SEED_HI);
    uint64_t lo = core_hash64(json->data, json->len, ID_SEED_LO);
    snprintf(out, GRAPH_SCHEMA_HASH_LEN + 1, "%016" PRIx64 "%016" PRIx64, hi, lo);
}

int graph_schema_identity(const lang_catalog *c, char out[GRAPH_SCHEMA_HASH_LEN + 1])
{
    core_buf b = CORE_BUF_INIT;
    int rc = lang_catalog_to_json(c, &b);
    if (rc == 0) identity_of(&b, out);
    core_buf_free(&b);
    return rc;
}

void graph_schema_version_keys(const char *identity, char pg[STORE_KEY_MAX],
                               char json[STORE_KEY_MAX])
{
    snprintf(pg, STORE_KEY_MAX, "%s/%s.pg", GRAPH_SCHEMA_DIR, identity);
    snprintf(json, STORE_KEY_MAX, "%s/%s.json", GRAPH_SCHEMA_DIR, identity);
}

/* The source and the catalog file of c under the two keys (the source first: a crash between
 * the two puts leaves files that disagree, which the reader reports instead of trusting
 * either). */
static int write_pair(store *s, const lang_catalog *c, const char *pg_key, const char *json_key,
                      char id_out[GRAPH_SCHEMA_HASH_LEN + 1])
{
    if (!c->source) return core_err(OG_E_BAD_REQUEST, "the catalog has no source text");
    core_buf cj = CORE_BUF_INIT, out = CORE_BUF_INIT;
    json_t *cat = NULL, *root = NULL;
    char id[GRAPH_SCHEMA_HASH_LEN + 1];
    int rc = lang_catalog_to_json(c, &cj);
    if (rc == 0) {
        identity_of(&cj, id);
        rc = core_json_parse(&cat, (const char *)cj.data, cj.len, "catalog");
    }
    if (rc == 0) {
        root = json_object();
        if (!root || json_object_set_new(root, "format", json_integer(SCHEMA_FILE_FORMAT)) ||
            json_object_set_new(root, "identity", json_string(id)) ||
            json_object_set(root, "catalog", cat))
            rc = core_err_nomem();
    }
    if (rc == 0) rc = core_json_dump(root, &out);
    if (rc == 0) rc = store_put(s, pg_key, c->source, c->source_len, 0);
    if (rc == 0) rc = store_put(s, json_key, out.data, out.len, 0);
    if (rc == 0 && id_out) memcpy(id_out, id, sizeof id);
    json_decref(cat);
    json_decref(root);
    core_buf_free(&cj);
    core_buf_free(&out);
    return rc;
}

int graph_schema_write_version(store *s, const lang_catalog *c)
{
    char id[GRAPH_SCHEMA_HASH_LEN + 1], pg[STORE_KEY_MAX], js[STORE_KEY_MAX];
    int rc = graph_schema_identity(c, id);
    if (rc) return rc;
    graph_schema_version_keys(id, pg, js);
    return write_pair(s, c, pg, js, NULL);
}

int graph_schema_mirror(store *s, const lang_catalog *c)
{
    return write_pair(s, c, GRAPH_SCHEMA_PG, GRAPH_SCHEMA_JSON, NULL);
}

int graph_schema_write(store *s, const lang_catalog *c)
{
    int rc = graph_schema_write_version(s, c);
    if (rc == 0) rc = graph_schema_mirror(s, c);
    return rc;
}

/* The pair being read (thread-local: named by the errors of one read). */
static _Thread_local const char *t_pg = GRAPH_SCHEMA_PG, *t_json = GRAPH_SCHEMA_JSON;

static int disagree(const char *what)
{
    core_err(OG_E_CORRUPT, "%s and %s disagree: %s", t_pg, t_json, what);
    core_err_detail(CORE_ERR_FILE, t_json);
    core_err_detail(CORE_ERR_OBJECT, t_json);
    return OG_E_CORRUPT;
}

static int bad_json(const char *what)
{
    core_err(OG_E_CORRUPT, "%s: %s", t_json, what);
    core_err_detail(CORE_ERR_FILE, t_json);
    core_err_detail(CORE_ERR_OBJECT, t_json);
    return OG_E_CORRUPT;
}

static int parse_id(const json_t *o, uint64_t *out)
{
    const char *s = json_string_value(json_object_get(o, "id"));
    if (!s || strlen(s) != 16) return bad_json("a type or property id is not 16 hex digits");
    char *end = NULL;
    *out = strtoull(s, &end, 16);
    if (!end || *end) return bad_json("a type or property id is not 16 hex digits");
    return 0;
}

/* The names and ids of the stored catalog, as a catalog shell lang_catalog_inherit can take
 * as the accepted side (it reads only kinds, names and ids). Names borrow from j. */
static int shell_from_json(const json_t *cat, lang_catalog *shell)
{
    memset(shell, 0, sizeof *shell);
    const json_t *types = json_object_get(cat, "types");
    if (!json_is_array(types)) return bad_json("catalog has no types array");
    size_t n = json_array_size(types);
    shell->types = core_calloc(n ? n : 1, sizeof *shell->types);
    if (!shell->types) return core_err_nomem();
    for (size_t i = 0; i < n; i++) {
        const json_t *t = json_array_get(types, i);
        lang_typedef *d = &shell->types[i];
        shell->n_types = i + 1;
        const char *kind = json_string_value(json_object_get(t, "kind"));
        d->name = json_string_value(json_object_get(t, "name"));
        if (!kind || !d->name) return bad_json("a catalog type has no kind or name");
        d->kind = strcmp(kind, "node") == 0 ? LANG_NODE : strcmp(kind, "edge") == 0 ? LANG_EDGE : 0;
        if (!d->kind) return bad_json("a catalog type is neither node nor edge");
        int rc = parse_id(t, &d->id);
        if (rc) return rc;
        const json_t *props = json_object_get(t, "properties");
        if (!json_is_array(props)) return bad_json("a catalog type has no properties array");
        size_t np = json_array_size(props);
        d->props = core_calloc(np ? np : 1, sizeof *d->props);
        if (!d->props) return core_err_nomem();
        d->n_props = np;
        for (size_t k = 0; k < np; k++) {
            const json_t *p = json_array_get(props, k);
            d->props[k].name = json_string_value(json_object_get(p, "name"));
            if (!d->props[k].name) return bad_json("a catalog property has no name");
            rc = parse_id(p, &d->props[k].id);
            if (rc) return rc;
        }
    }
    return 0;
}

static void shell_free(lang_catalog *shell)
{
    for (size_t i = 0; i < shell->n_types; i++)
        core_free(shell->types[i].props);
    core_free(shell->types);
}

/* Stable ids are derived from names and moved off collisions in declaration order, so
 * building _schema.pg again does not in general give the accepted ids (a rename keeps the old
 * id). The stored catalog is the accepted catalog of this very source, so every type and
 * property has a same-named counterpart in it: lang_catalog_inherit copies their ids exactly
 * (and re-sorts @key columns by id). The identity recomputed from the result must then equal
 * the stored identity; any edit to either file, or a torn pair of writes, makes it differ. */
static int read_pair(store *s, const char *pg_key, const char *json_key, lang_catalog **out,
                     char identity[GRAPH_SCHEMA_HASH_LEN + 1])
{
    *out = NULL;
    t_pg = pg_key;
    t_json = json_key;
    core_buf pg = CORE_BUF_INIT, js = CORE_BUF_INIT;
    int rc = store_get(s, pg_key, 0, STORE_ALL, &pg);
    if (rc == OG_E_NOT_FOUND) {
        core_buf_free(&pg);
        core_err(OG_E_NOT_FOUND, "the graph has no accepted schema (%s)", pg_key);
        core_err_detail(CORE_ERR_OBJECT, pg_key);
        return OG_E_NOT_FOUND;
    }
    if (rc == 0) {
        rc = store_get(s, json_key, 0, STORE_ALL, &js);
        if (rc == OG_E_NOT_FOUND) rc = disagree("the catalog file is missing");
    }
    json_t *root = NULL;
    const char *stored_id = NULL;
    int64_t format = 0;
    if (rc == 0) rc = core_json_parse_stored(&root, (const char *)js.data, js.len, json_key);
    if (rc == 0 && !json_is_object(root)) rc = bad_json("not a JSON object");
    if (rc == 0) rc = core_json_int(root, "format", &format, OG_E_CORRUPT, json_key);
    if (rc == 0 && format != SCHEMA_FILE_FORMAT) {
        rc = core_err(OG_E_UNSUPPORTED, "%s has format %" PRId64 "; this binary reads format %d",
                      json_key, format, SCHEMA_FILE_FORMAT);
        core_err_detail(CORE_ERR_FILE, json_key);
    }
    if (rc == 0) rc = core_json_str(root, "identity", &stored_id, OG_E_CORRUPT, json_key);
    if (rc == 0 && strlen(stored_id) != GRAPH_SCHEMA_HASH_LEN)
        rc = bad_json("identity has the wrong length");
    lang_catalog shell;
    memset(&shell, 0, sizeof shell);
    if (rc == 0) {
        const json_t *cat = json_object_get(root, "catalog");
        rc = json_is_object(cat) ? shell_from_json(cat, &shell) : bad_json("no catalog object");
    }
    lang_catalog *c = NULL;
    if (rc == 0) {
        core_arena da;
        core_arena_init(&da, 4096);
        lang_diags d;
        lang_diags_init(&d, &da);
        rc = lang_catalog_build(&c, (const char *)pg.data, pg.len, pg_key, &d);
        if (rc == OG_E_BAD_REQUEST) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", og_error_last()->message);
            core_err(OG_E_CORRUPT, "accepted schema %s does not build: %s", pg_key, msg);
            core_err_detail(CORE_ERR_FILE, pg_key);
            core_err_detail(CORE_ERR_OBJECT, pg_key);
            rc = OG_E_CORRUPT;
        }
        core_arena_free(&da);
    }
    char id[GRAPH_SCHEMA_HASH_LEN + 1];
    if (rc == 0) {
        lang_catalog_inherit(c, &shell);
        rc = graph_schema_identity(c, id);
    }
    if (rc == 0 && strcmp(id, stored_id) != 0)
        rc = disagree("the identity of the schema source with the recorded ids is not the "
                      "recorded identity");
    if (rc == 0) {
        memcpy(identity, id, sizeof id);
        *out = c;
        c = NULL;
    }
    lang_catalog_free(c);
    shell_free(&shell);
    json_decref(root);
    core_buf_free(&pg);
    core_buf_free(&js);
    return rc;
}

int graph_schema_read(store *s, lang_catalog **out, char identity[GRAPH_SCHEMA_HASH_LEN + 1])
{
    return read_pair(s, GRAPH_SCHEMA_PG, GRAPH_SCHEMA_JSON, out, identity);
}

int graph_schema_read_identity(store *s, const char *identity, lang_catalog **out)
{
    *out = NULL;
    char pg[STORE_KEY_MAX], js[STORE_KEY_MAX], got[GRAPH_SCHEMA_HASH_LEN + 1];
    if (strlen(identity) != GRAPH_SCHEMA_HASH_LEN ||
        strspn(identity, "0123456789abcdef") != GRAPH_SCHEMA_HASH_LEN)
        return core_err(OG_E_BAD_REQUEST, "'%s' is not a schema identity", identity);
    graph_schema_version_keys(identity, pg, js);
    int rc = read_pair(s, pg, js, out, got);
    if (rc == OG_E_NOT_FOUND) {
        /* A graph made before schemas were kept by identity: the accepted pair is the only
         * copy, and serves when it is the one asked for. */
        og_error_clear();
        rc = read_pair(s, GRAPH_SCHEMA_PG, GRAPH_SCHEMA_JSON, out, got);
        if (rc == 0 && strcmp(got, identity) != 0) {
            lang_catalog_free(*out);
            *out = NULL;
            rc = OG_E_NOT_FOUND;
        }
        if (rc == OG_E_NOT_FOUND) {
            core_err(OG_E_NOT_FOUND, "the schema %s is not stored (no %s)", identity, pg);
            core_err_detail(CORE_ERR_OBJECT, pg);
        }
    }
    if (rc == 0 && strcmp(got, identity) != 0) {
        lang_catalog_free(*out);
        *out = NULL;
        rc = core_err(OG_E_CORRUPT, "%s holds schema %s, not %s", js, got, identity);
        core_err_detail(CORE_ERR_OBJECT, js);
    }
    t_pg = GRAPH_SCHEMA_PG;
    t_json = GRAPH_SCHEMA_JSON;
    return rc;
}

int graph_schema_list(store *s, char (**ids)[GRAPH_SCHEMA_HASH_LEN + 1], size_t *n)
{
    *ids = NULL;
    *n = 0;
    store_list l;
    memset(&l, 0, sizeof l);
    int rc = store_list_prefix(s, GRAPH_SCHEMA_DIR "/", 0, &l);
    if (rc == OG_E_NOT_FOUND) {
        og_error_clear();
        return 0;
    }
    store_list_sort(&l);
    size_t cap = 0;
    for (size_t i = 0; rc == 0 && i < l.count; i++) {
        if (l.items[i].is_prefix) continue;
        const char *k = strrchr(l.items[i].key, '/');
        k = k ? k + 1 : l.items[i].key;
        if (strlen(k) != GRAPH_SCHEMA_HASH_LEN + 5 || strcmp(k + GRAPH_SCHEMA_HASH_LEN, ".json") ||
            strspn(k, "0123456789abcdef") != GRAPH_SCHEMA_HASH_LEN)
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 8;
            void *p = core_realloc(*ids, cap * sizeof **ids);
            if (!p) {
                rc = core_err_nomem();
                break;
            }
            *ids = p;
        }
        memcpy((*ids)[*n], k, GRAPH_SCHEMA_HASH_LEN);
        (*ids)[(*n)++][GRAPH_SCHEMA_HASH_LEN] = 0;
    }
    store_list_free(&l);
    if (rc) {
        core_free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return rc;
}

int graph_schema_restore(store *s, const char *recorded, bool write, bool *damaged)
{
    *damaged = false;
    lang_catalog *c = NULL;
    char id[GRAPH_SCHEMA_HASH_LEN + 1];
    int rc = graph_schema_read(s, &c, id);
    lang_catalog_free(c);
    c = NULL;
    if (rc == 0 && strcmp(id, recorded) == 0) return 0;
    if (rc != 0 && rc != OG_E_CORRUPT && rc != OG_E_NOT_FOUND) return rc;
    char why[600];
    snprintf(why, sizeof why, "%s",
             rc ? og_error_last()->message : "their identity is not the one the graph records");
    *damaged = true;
    /* The pair kept under the identity the graph records is a copy of the accepted one. */
    rc = graph_schema_read_identity(s, recorded, &c);
    if (rc == 0) {
        char kept[GRAPH_SCHEMA_HASH_LEN + 1];
        rc = graph_schema_identity(c, kept);
        if (rc == 0 && strcmp(kept, recorded) != 0) rc = OG_E_CORRUPT;
    }
    if (rc != 0) {
        lang_catalog_free(c);
        c = NULL;
        og_error_clear();
    }
    /* Else the catalog of an accepted source is rebuilt exactly (ids included) by the build
     * that accepted it, when no rename moved an id; its identity, equal to the recorded one,
     * proves it. */
    core_buf pg = CORE_BUF_INIT;
    if (!c) rc = store_get(s, GRAPH_SCHEMA_PG, 0, STORE_ALL, &pg);
    if (!c && rc == 0) {
        core_arena da;
        core_arena_init(&da, 4096);
        lang_diags d;
        lang_diags_init(&d, &da);
        rc = lang_catalog_build(&c, (const char *)pg.data, pg.len, GRAPH_SCHEMA_PG, &d);
        core_arena_free(&da);
    }
    core_buf_free(&pg);
    if (rc == 0) rc = graph_schema_identity(c, id);
    if (rc == 0 && strcmp(id, recorded) != 0) rc = OG_E_CORRUPT;
    if (rc != 0) {
        lang_catalog_free(c);
        core_err(OG_E_CORRUPT,
                 "the schema files cannot be read (%s), and neither %s/%s.pg nor %s can rebuild "
                 "them: they are missing or are not the schema the graph records (identity %s); "
                 "restore %s from a backup",
                 why, GRAPH_SCHEMA_DIR, recorded, GRAPH_SCHEMA_PG, recorded, GRAPH_SCHEMA_PG);
        core_err_detail(CORE_ERR_OBJECT, GRAPH_SCHEMA_PG);
        return OG_E_CORRUPT;
    }
    if (write) rc = graph_schema_write(s, c);
    lang_catalog_free(c);
    return rc;
}
