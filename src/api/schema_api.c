/* og_graph_schema (include/omnigraph.h): the accepted schema a commit of a branch was made
 * under, with its catalog's stable ids, read from the graph root's schema files. */
#include "omnigraph.h"

#include "api/graph_internal.h"
#include "core/alloc.h"
#include "core/buf.h"
#include "core/error.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

typedef struct schema_box {
    og_schema_info pub;
    char *branch, *source, *catalog;
} schema_box;

void og_schema_info_free(og_schema_info *s)
{
    if (!s) return;
    schema_box *b = (schema_box *)s;
    core_free(b->branch);
    core_free(b->source);
    core_free(b->catalog);
    core_free(b);
}

/* The catalog object of _schema.json, as compact JSON text. */
static int catalog_text(store *s, char **out)
{
    core_buf body = CORE_BUF_INIT;
    int rc = store_get(s, GRAPH_SCHEMA_JSON, 0, STORE_ALL, &body);
    if (rc) return rc;
    json_error_t je;
    json_t *root = json_loadb((const char *)body.data, body.len, 0, &je);
    core_buf_free(&body);
    const json_t *cat = root ? json_object_get(root, "catalog") : NULL;
    char *text = cat ? json_dumps(cat, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(root);
    if (!text) {
        rc = core_err(OG_E_CORRUPT, "%s holds no catalog", GRAPH_SCHEMA_JSON);
        core_err_detail(CORE_ERR_OBJECT, GRAPH_SCHEMA_JSON);
        return rc;
    }
    *out = core_strdup(text);
    free(text); /* jansson's allocation */
    return *out ? 0 : core_err_nomem();
}

int og_graph_schema(og_schema_info **out, og_graph *g, const char *branch, const char *at)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_graph_schema: out is NULL");
    *out = NULL;
    if (!g) return core_err(OG_E_BAD_REQUEST, "og_graph_schema: no graph");
    graph_snapshot *snap = NULL;
    int rc = api_snapshot_at(&snap, g, branch, at, 0);
    if (rc) return rc;
    /* The graph keeps the accepted schema only: a commit made under another one (schema
     * evolution) cannot be shown from these files. */
    if (strcmp(snap->schema_identity, g->h->schema_identity) != 0) {
        rc = core_err(OG_E_NOT_FOUND,
                      "commit %s was made under schema %s, which this graph no longer keeps "
                      "(the accepted schema is %s)",
                      snap->head, snap->schema_identity, g->h->schema_identity);
        core_err_detail(CORE_ERR_OBJECT, snap->schema_identity);
        graph_snapshot_free(snap);
        return rc;
    }
    schema_box *b = core_calloc(1, sizeof *b);
    if (!b) rc = core_err_nomem();
    if (rc == 0) {
        og_schema_info *si = &b->pub;
        snprintf(si->commit, sizeof si->commit, "%s", snap->head);
        snprintf(si->identity, sizeof si->identity, "%s", snap->schema_identity);
        const lang_catalog *c = g->h->catalog;
        b->branch = core_strdup(snap->branch ? snap->branch : "main");
        b->source = core_malloc(c->source_len + 1);
        if (!b->branch || !b->source) rc = core_err_nomem();
        if (rc == 0) {
            memcpy(b->source, c->source, c->source_len);
            b->source[c->source_len] = 0;
            si->branch = b->branch;
            si->source = b->source;
            si->source_len = c->source_len;
            rc = catalog_text(g->h->s, &b->catalog);
            si->catalog_json = b->catalog;
        }
    }
    graph_snapshot_free(snap);
    if (rc) {
        og_schema_info_free(b ? &b->pub : NULL);
        return rc;
    }
    *out = &b->pub;
    return 0;
}
