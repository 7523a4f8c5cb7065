/* Table shapes of the graph layer: where a type's Lance table lives, its alias in the
 * manifest, the Arrow schema of its rows (id, [src, dst,] properties) and the options its empty
 * table is created with. Pure functions over the catalog: no storage. */
#include "graph/graph.h"
#include "lance/keyindex.h"

#include "core/error.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int graph_table_path(char out[STORE_KEY_MAX], int kind, uint64_t sid, uint64_t inc)
{
    if (kind != LANG_NODE && kind != LANG_EDGE)
        return core_err(OG_E_BAD_REQUEST, "table kind %d is neither node nor edge", kind);
    snprintf(out, STORE_KEY_MAX, "%s/%016" PRIx64 "-%016" PRIx64 ".lance",
             kind == LANG_NODE ? GRAPH_NODES_DIR : GRAPH_EDGES_DIR, sid, inc);
    return 0;
}

int graph_table_alias(char *out, size_t cap, int kind, const char *type_name)
{
    if (kind != LANG_NODE && kind != LANG_EDGE)
        return core_err(OG_E_BAD_REQUEST, "table kind %d is neither node nor edge", kind);
    int n = snprintf(out, cap, "%s:%s", kind == LANG_NODE ? "node" : "edge", type_name);
    if (n < 0 || (size_t)n >= cap)
        return core_err(OG_E_BAD_REQUEST, "alias of type '%s' does not fit %zu bytes", type_name,
                        cap);
    return 0;
}

static arrow_type_id scalar_arrow(int scalar)
{
    switch (scalar) {
    case LANG_S_STRING:
        return ARROW_UTF8;
    case LANG_S_BOOL:
        return ARROW_BOOL;
    case LANG_S_I32:
        return ARROW_INT32;
    case LANG_S_I64:
        return ARROW_INT64;
    case LANG_S_U32:
        return ARROW_UINT32;
    case LANG_S_U64:
        return ARROW_UINT64;
    case LANG_S_F32:
        return ARROW_FLOAT32;
    case LANG_S_F64:
        return ARROW_FLOAT64;
    case LANG_S_DATE:
        return ARROW_DATE32;
    case LANG_S_BLOB:
        return ARROW_BINARY;
    default:
        return ARROW_NA; /* DateTime is built apart (it carries a unit) */
    }
}

/* The Arrow type of one scalar (DateTime = Timestamp(ms, no zone)). */
static int scalar_type(arrow_type *out, int scalar)
{
    if (scalar == LANG_S_DATETIME) return arrow_type_timestamp(out, ARROW_UNIT_MILLI, NULL);
    arrow_type_id id = scalar_arrow(scalar);
    if (id == ARROW_NA) return core_err(OG_E_INTERNAL, "no Arrow type for scalar %d", scalar);
    *out = arrow_type_simple(id);
    return 0;
}

static int prop_type(arrow_type *out, const lang_type *lt)
{
    arrow_type item_t;
    arrow_field item;
    int rc;
    switch (lt->kind) {
    case LANG_TY_SCALAR:
        return scalar_type(out, lt->scalar);
    case LANG_TY_ENUM:
        *out = arrow_type_simple(ARROW_UTF8);
        return 0;
    case LANG_TY_LIST:
    case LANG_TY_VECTOR:
        if (lt->kind == LANG_TY_LIST) {
            rc = scalar_type(&item_t, lt->scalar);
        } else {
            item_t = arrow_type_simple(ARROW_FLOAT32);
            rc = 0;
        }
        if (rc) return rc;
        /* Items are named "item" and nullable, as Arrow and Lance writers spell list items;
         * the loader never writes a null item. */
        rc = arrow_field_init(&item, "item", &item_t, true);
        arrow_type_clear(&item_t);
        if (rc) return rc;
        if (lt->kind == LANG_TY_LIST)
            rc = arrow_type_list(out, &item);
        else if (lt->dim == 0 || lt->dim > INT32_MAX)
            rc = core_err(OG_E_BAD_REQUEST, "vector dimension %u out of range", lt->dim);
        else
            rc = arrow_type_fixed_size_list(out, &item, (int32_t)lt->dim);
        arrow_field_clear(&item);
        return rc;
    default:
        return core_err(OG_E_INTERNAL, "unknown property type kind %d", lt->kind);
    }
}

static int add_field(arrow_schema *s, const char *name, const arrow_type *t, bool nullable)
{
    arrow_field f;
    int rc = arrow_field_init(&f, name, t, nullable);
    if (rc) return rc;
    rc = arrow_schema_add(s, &f);
    arrow_field_clear(&f);
    return rc;
}

int graph_type_schema(arrow_schema *out, const lang_typedef *t)
{
    arrow_schema_init(out);
    arrow_type utf8 = arrow_type_simple(ARROW_UTF8);
    int rc = add_field(out, GRAPH_COL_ID, &utf8, false);
    if (!rc && t->kind == LANG_EDGE) {
        rc = add_field(out, GRAPH_COL_SRC, &utf8, false);
        if (!rc) rc = add_field(out, GRAPH_COL_DST, &utf8, false);
    }
    for (size_t i = 0; !rc && i < t->n_props; i++) {
        arrow_type at;
        rc = prop_type(&at, &t->props[i].type);
        if (rc) break;
        rc = add_field(out, t->props[i].name, &at, t->props[i].type.nullable != 0);
        arrow_type_clear(&at);
    }
    if (rc) arrow_schema_clear(out);
    return rc;
}

static const char *const id_key[] = {GRAPH_COL_ID};

int graph_type_key_indexes(char *buf, size_t cap, const lang_typedef *t)
{
    size_t used = 0;
    int n = snprintf(buf, cap, "%s",
                     t->kind == LANG_EDGE ? GRAPH_COL_ID ">" GRAPH_COL_SRC ";" GRAPH_COL_SRC
                                                         ">" GRAPH_COL_DST ";" GRAPH_COL_DST
                                                         ">" GRAPH_COL_SRC
                                          : GRAPH_COL_ID);
    if (n < 0 || (size_t)n >= cap) return core_err(OG_E_INTERNAL, "key index declaration too long");
    used = (size_t)n;
    int decls = t->kind == LANG_EDGE ? 3 : 1;
    /* a String (or enum) property under @unique or @index: value -> rows, carrying the id */
    for (size_t i = 0; i < t->n_cons && decls < LANCE_KIX_MAX_DECLS; i++) {
        const lang_constraint *c = &t->cons[i];
        if ((c->kind != LANG_CON_UNIQUE && c->kind != LANG_CON_INDEX) || c->n_cols != 1 ||
            c->cols[0] < 0 || (size_t)c->cols[0] >= t->n_props)
            continue;
        /* (a String @index is an equality index here; the reference's full-text search is
         * not built) */
        if (c->kind == LANG_CON_INDEX && c->index_kind == LANG_INDEX_VECTOR) continue;
        const lang_prop *p = &t->props[c->cols[0]];
        int text = (p->type.kind == LANG_TY_SCALAR && p->type.scalar == LANG_S_STRING) ||
                   p->type.kind == LANG_TY_ENUM;
        if (!text || p->is_key) continue;
        char one[160];
        snprintf(one, sizeof one, ";%s>" GRAPH_COL_ID, p->name);
        if (strstr(buf, one)) continue; /* @unique and @index on the same property */
        n = snprintf(buf + used, cap - used, "%s", one);
        if (n < 0 || (size_t)n >= cap - used || lance_kix_decl_check(buf) != 0) {
            buf[used] = '\0'; /* a name the declaration cannot hold: left unindexed */
            og_error_clear();
            continue;
        }
        used += (size_t)n;
        decls++;
    }
    return 0;
}

int graph_type_create_options(lance_create_options *out, const lang_typedef *t,
                              char kix[GRAPH_KIX_DECL_MAX])
{
    lance_create_options o = LANCE_CREATE_OPTIONS_INIT;
    o.stable_row_ids = true;
    o.primary_key = id_key;
    o.n_primary_key = 1;
    int rc = graph_type_key_indexes(kix, GRAPH_KIX_DECL_MAX, t);
    o.key_indexes = rc ? NULL : kix;
    *out = o;
    return rc;
}
