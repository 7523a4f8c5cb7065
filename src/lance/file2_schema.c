/* Arrow types <-> Lance fields: logical type strings (lance-format-subset.md §2.2) and the
 * pre-order flattening of nested fields with ids and parent ids. */
#include "lance/file2.h"

#include "core/alloc.h"
#include "core/error.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const unit_names[] = {"s", "ms", "us", "ns"};

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int lance_logical_type(const arrow_type *t, char *buf, size_t cap)
{
    const char *s = NULL;
    switch (t->id) {
    case ARROW_NA:
        s = "null";
        break;
    case ARROW_BOOL:
        s = "bool";
        break;
    case ARROW_INT32:
        s = "int32";
        break;
    case ARROW_INT64:
        s = "int64";
        break;
    case ARROW_UINT32:
        s = "uint32";
        break;
    case ARROW_UINT64:
        s = "uint64";
        break;
    case ARROW_FLOAT32:
        s = "float";
        break;
    case ARROW_FLOAT64:
        s = "double";
        break;
    case ARROW_UTF8:
        s = "string";
        break;
    case ARROW_LARGE_UTF8:
        s = "large_string";
        break;
    case ARROW_BINARY:
        s = "binary";
        break;
    case ARROW_LARGE_BINARY:
        s = "large_binary";
        break;
    case ARROW_DATE32:
        s = "date32:day";
        break;
    case ARROW_DATE64:
        s = "date64:ms";
        break;
    case ARROW_STRUCT:
        s = "struct";
        break;
    case ARROW_LIST:
        s = (t->n_children == 1 && t->children[0].type.id == ARROW_STRUCT) ? "list.struct" : "list";
        break;
    case ARROW_TIMESTAMP:
        if ((size_t)snprintf(buf, cap, "timestamp:%s:%s", unit_names[t->unit & 3],
                             t->tz && t->tz[0] ? t->tz : "-") >= cap)
            return core_err(OG_E_BAD_REQUEST, "time zone name too long");
        return 0;
    case ARROW_FIXED_SIZE_LIST: {
        if (t->n_children != 1) return core_err(OG_E_BAD_REQUEST, "fixed-size list without item");
        const arrow_type *it = &t->children[0].type;
        if (arrow_type_bit_width(it->id) <= 1 || it->id == ARROW_TIMESTAMP)
            return core_err(OG_E_UNSUPPORTED, "fixed-size list items must be a fixed-width "
                                              "number type in file format 2.0");
        char inner[64];
        int rc = lance_logical_type(it, inner, sizeof inner);
        if (rc) return rc;
        if ((size_t)snprintf(buf, cap, "fixed_size_list:%s:%d", inner, (int)t->list_size) >= cap)
            return core_err(OG_E_BAD_REQUEST, "logical type too long");
        return 0;
    }
    default:
        return core_err(OG_E_UNSUPPORTED, "type id %d has no Lance logical type", (int)t->id);
    }
    if ((size_t)snprintf(buf, cap, "%s", s) >= cap)
        return core_err(OG_E_BAD_REQUEST, "logical type buffer too small");
    return 0;
}

/* Scalar and fixed-size-list logical types; list/struct are resolved by the tree walk. */
static int parse_logical(const char *lt, arrow_type *out, const char *field, const char *object)
{
    static const struct {
        const char *name;
        arrow_type_id id;
    } simple[] = {{"bool", ARROW_BOOL},
                  {"int32", ARROW_INT32},
                  {"int64", ARROW_INT64},
                  {"uint32", ARROW_UINT32},
                  {"uint64", ARROW_UINT64},
                  {"float", ARROW_FLOAT32},
                  {"double", ARROW_FLOAT64},
                  {"string", ARROW_UTF8},
                  {"large_string", ARROW_LARGE_UTF8},
                  {"binary", ARROW_BINARY},
                  {"large_binary", ARROW_LARGE_BINARY},
                  {"date32:day", ARROW_DATE32},
                  {"date64:ms", ARROW_DATE64}};
    *out = arrow_type_simple(ARROW_NA);
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++)
        if (strcmp(lt, simple[i].name) == 0) {
            out->id = simple[i].id;
            return 0;
        }
    if (strncmp(lt, "timestamp:", 10) == 0) {
        const char *u = lt + 10;
        const char *colon = strchr(u, ':');
        size_t ulen = colon ? (size_t)(colon - u) : strlen(u);
        for (int k = 0; k < 4; k++)
            if (strlen(unit_names[k]) == ulen && strncmp(u, unit_names[k], ulen) == 0) {
                const char *tz = colon ? colon + 1 : NULL;
                if (tz && (strcmp(tz, "-") == 0 || tz[0] == '\0')) tz = NULL;
                return arrow_type_timestamp(out, (arrow_time_unit)k, tz);
            }
        return core_err(OG_E_CORRUPT, "%s: field %s has bad timestamp type '%s'", object, field,
                        lt);
    }
    if (strncmp(lt, "fixed_size_list:", 16) == 0) {
        const char *inner = lt + 16;
        const char *last = strrchr(inner, ':');
        if (!last || last == inner)
            return core_err(OG_E_CORRUPT, "%s: field %s has bad type '%s'", object, field, lt);
        errno = 0;
        char *end;
        long n = strtol(last + 1, &end, 10);
        if (errno || *end || n <= 0 || n > INT32_MAX)
            return core_err(OG_E_CORRUPT, "%s: field %s has bad list size in '%s'", object, field,
                            lt);
        char item[64];
        size_t ilen = (size_t)(last - inner);
        if (ilen >= sizeof item)
            return core_err(OG_E_UNSUPPORTED, "%s: field %s: type '%s' not supported", object,
                            field, lt);
        memcpy(item, inner, ilen);
        item[ilen] = '\0';
        arrow_field itf;
        memset(&itf, 0, sizeof itf);
        int rc = parse_logical(item, &itf.type, field, object);
        if (rc) return rc;
        if (arrow_type_bit_width(itf.type.id) <= 1) {
            arrow_type_clear(&itf.type);
            return core_err(OG_E_UNSUPPORTED, "%s: field %s: fixed-size list of '%s' not supported",
                            object, field, item);
        }
        itf.name = (char *)"item";
        itf.nullable = true;
        rc = arrow_type_fixed_size_list(out, &itf, (int32_t)n);
        arrow_type_clear(&itf.type);
        return rc;
    }
    return core_err(OG_E_UNSUPPORTED,
                    "%s: field %s has logical type '%s', which this engine "
                    "does not read",
                    object, field, lt);
}

static size_t lance_field_count_type(const arrow_type *t)
{
    size_t n = 1;
    if (t->id == ARROW_LIST || t->id == ARROW_STRUCT)
        for (size_t i = 0; i < t->n_children; i++)
            n += lance_field_count_type(&t->children[i].type);
    return n;
}

size_t lance_field_count(const arrow_schema *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n_fields; i++)
        n += lance_field_count_type(&s->fields[i].type);
    return n;
}

void lance_fields_free(Lance__File__Field **f, size_t n)
{
    if (!f) return;
    for (size_t i = 0; i < n; i++) {
        if (!f[i]) continue;
        if (f[i]->name != protobuf_c_empty_string) core_free(f[i]->name);
        if (f[i]->logical_type != protobuf_c_empty_string) core_free(f[i]->logical_type);
        core_free(f[i]);
    }
    core_free(f);
}

typedef struct flat_ctx {
    Lance__File__Field **out;
    size_t n, cap;
    const int32_t *ids;
    size_t n_ids;
} flat_ctx;

static int flatten(flat_ctx *c, const arrow_field *af, int32_t parent)
{
    if (c->n >= c->cap) return core_err(OG_E_INTERNAL, "field count miscomputed");
    Lance__File__Field *f = core_calloc(1, sizeof *f);
    if (!f) return core_err_nomem();
    lance__file__field__init(f);
    c->out[c->n] = f;
    int32_t id = c->ids ? c->ids[c->n] : (int32_t)c->n;
    c->n++;
    char lt[256];
    int rc = lance_logical_type(&af->type, lt, sizeof lt);
    if (rc) {
        core_err_prefix("field %s: ", af->name);
        return rc;
    }
    f->name = core_strdup(af->name);
    f->logical_type = core_strdup(lt);
    if (!f->name || !f->logical_type) return core_err_nomem();
    f->id = id;
    f->parent_id = parent;
    f->nullable = af->nullable;
    if (af->type.id == ARROW_LIST || af->type.id == ARROW_STRUCT)
        for (size_t i = 0; i < af->type.n_children; i++) {
            rc = flatten(c, &af->type.children[i], id);
            if (rc) return rc;
        }
    return 0;
}

int lance_fields_from_arrow(Lance__File__Field ***out, size_t *n_out, const arrow_schema *s,
                            const int32_t *ids, size_t n_ids)
{
    *out = NULL;
    *n_out = 0;
    size_t n = lance_field_count(s);
    if (ids && n_ids != n)
        return core_err(OG_E_BAD_REQUEST, "%zu field ids given for a schema of %zu Lance fields",
                        n_ids, n);
    if (ids) {
        int32_t *sorted = core_malloc((n ? n : 1) * sizeof *sorted);
        if (!sorted) return core_err_nomem();
        memcpy(sorted, ids, n * sizeof *sorted);
        qsort(sorted, n, sizeof *sorted, cmp_i32);
        for (size_t i = 0; i < n; i++)
            if (sorted[i] < 0 || (i && sorted[i] == sorted[i - 1])) {
                int bad = sorted[i];
                core_free(sorted);
                return core_err(OG_E_BAD_REQUEST, "field id %d is negative or given twice", bad);
            }
        core_free(sorted);
    }
    flat_ctx c = {core_calloc(n ? n : 1, sizeof(Lance__File__Field *)), 0, n, ids, n_ids};
    if (!c.out) return core_err_nomem();
    int rc = 0;
    for (size_t i = 0; i < s->n_fields && rc == 0; i++)
        rc = flatten(&c, &s->fields[i], -1);
    if (rc) {
        lance_fields_free(c.out, c.n);
        return rc;
    }
    *out = c.out;
    *n_out = c.n;
    return 0;
}

typedef struct tree_ctx {
    Lance__File__Field *const *f;
    size_t n, pos;
    int32_t *ids;
    const char *object;
} tree_ctx;

static int build_field(tree_ctx *c, arrow_field *out, int depth)
{
    memset(out, 0, sizeof *out);
    if (depth > 32) return core_err(OG_E_CORRUPT, "%s: schema nested too deeply", c->object);
    const Lance__File__Field *lf = c->f[c->pos];
    const char *name = lf->name ? lf->name : "";
    const char *lt = lf->logical_type ? lf->logical_type : "";
    if (c->ids) c->ids[c->pos] = lf->id;
    c->pos++;
    arrow_type t = arrow_type_simple(ARROW_NA);
    int rc = 0;
    if (strcmp(lt, "list") == 0 || strcmp(lt, "list.struct") == 0) {
        if (c->pos >= c->n || c->f[c->pos]->parent_id != lf->id)
            return core_err(OG_E_CORRUPT, "%s: list field %s has no item field", c->object, name);
        arrow_field item;
        rc = build_field(c, &item, depth + 1);
        if (rc == 0) rc = arrow_type_list(&t, &item);
        arrow_field_clear(&item);
    } else if (strcmp(lt, "struct") == 0) {
        arrow_field *kids = NULL;
        size_t nk = 0;
        while (rc == 0 && c->pos < c->n && c->f[c->pos]->parent_id == lf->id) {
            arrow_field *nkids = core_realloc(kids, (nk + 1) * sizeof *kids);
            if (!nkids) {
                rc = core_err_nomem();
                break;
            }
            kids = nkids;
            rc = build_field(c, &kids[nk], depth + 1);
            nk++;
        }
        if (rc == 0) rc = arrow_type_struct(&t, kids, nk);
        for (size_t i = 0; i < nk; i++)
            arrow_field_clear(&kids[i]);
        core_free(kids);
    } else if (strcmp(lt, "large_list") == 0 || strcmp(lt, "large_list.struct") == 0) {
        rc = core_err(OG_E_UNSUPPORTED, "%s: field %s: large_list is not supported", c->object,
                      name);
    } else {
        rc = parse_logical(lt, &t, name, c->object);
    }
    if (rc == 0) rc = arrow_field_init(out, name, &t, lf->nullable);
    arrow_type_clear(&t);
    return rc;
}

int lance_arrow_from_fields(arrow_schema *out, Lance__File__Field *const *f, size_t n,
                            int32_t *ids_out, const char *object)
{
    arrow_schema_init(out);
    tree_ctx c = {f, n, 0, ids_out, object};
    /* ids must be unique: sort a copy (n may be large in a hostile file) */
    int32_t *sorted = core_malloc((n ? n : 1) * sizeof *sorted);
    if (!sorted) return core_err_nomem();
    for (size_t i = 0; i < n; i++) {
        if (!f[i]) {
            core_free(sorted);
            return core_err(OG_E_CORRUPT, "%s: missing field", object);
        }
        sorted[i] = f[i]->id;
    }
    qsort(sorted, n, sizeof *sorted, cmp_i32);
    for (size_t i = 1; i < n; i++)
        if (sorted[i] == sorted[i - 1]) {
            int dup = sorted[i];
            core_free(sorted);
            return core_err(OG_E_CORRUPT, "%s: field id %d appears twice", object, dup);
        }
    core_free(sorted);
    int rc = 0;
    while (c.pos < n && rc == 0) {
        if (f[c.pos]->parent_id != -1) {
            rc = core_err(OG_E_CORRUPT,
                          "%s: field %s (id %d) has parent %d, which is not an "
                          "enclosing list or struct before it",
                          object, f[c.pos]->name ? f[c.pos]->name : "", (int)f[c.pos]->id,
                          (int)f[c.pos]->parent_id);
            break;
        }
        arrow_field af;
        rc = build_field(&c, &af, 0);
        if (rc == 0) rc = arrow_schema_add(out, &af);
        arrow_field_clear(&af);
    }
    if (rc) arrow_schema_clear(out);
    return rc;
}
