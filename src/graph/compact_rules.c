/* Which rows of the graph manifest a merge of its fragments may leave out or set apart
 * (graph.h, "Manifest compaction"), and the scan of the rows other than commits that both the
 * rules and snapshots without lineage use. The rules are the reduction of snapshot.c read
 * backwards: a row the reduction of every later version ignores can go. */
#include "graph/graph.h"
#include "core/alloc.h"
#include "core/error.h"
#include "lance/compact.h"

#include <string.h>

/* The greatest version seen for one key: a table identity (table versions, tombstones), a
 * branch (heads; branch NULL is main) or the schema. */
typedef struct maxrow {
    int kind;
    uint64_t sid, inc;
    char *branch;
    uint64_t ver;
} maxrow;

struct graph_compact_rules {
    maxrow *m;
    size_t n, cap;
};

enum { C_TYPE, C_SID, C_INC, C_VER, C_BRANCH, N_C };
static const char *const col_names[N_C] = {
    "object_type", "stable_table_id", "table_incarnation_id", "table_version", "table_branch",
};

typedef struct cols {
    const arrow_array *a[N_C];
} cols;

static int find_cols(cols *c, const arrow_batch *b)
{
    for (int k = 0; k < N_C; k++) {
        c->a[k] = NULL;
        for (size_t i = 0; i < b->schema.n_fields; i++)
            if (strcmp(b->schema.fields[i].name, col_names[k]) == 0) c->a[k] = b->columns[i];
        if (!c->a[k]) return core_err(OG_E_CORRUPT, "graph manifest: no column %s", col_names[k]);
    }
    return 0;
}

static bool valid(const cols *c, int k, int64_t i)
{
    return arrow_array_is_valid(c->a[k], i);
}

/* The row's kind, and for the kinds with a greatest version, its key and version. Returns 0
 * for a row these rules keep whatever happens (registrations, format, unknown kinds, or a row
 * whose key cells are null: snapshot.c reports those). */
static int row_key(const cols *c, int64_t i, maxrow *k, const uint8_t **branch, size_t *blen)
{
    memset(k, 0, sizeof *k);
    *branch = NULL;
    *blen = 0;
    if (!valid(c, C_TYPE, i)) return 0;
    size_t n = 0;
    const uint8_t *p = arrow_array_get_bytes(c->a[C_TYPE], i, &n);
    char t[32];
    if (n >= sizeof t) return 0;
    memcpy(t, p, n);
    t[n] = 0;
    int kind = graph_row_kind_parse(t);
    if (kind == GRAPH_ROW_COMMIT) return kind;
    if (kind != GRAPH_ROW_TABLE_VERSION && kind != GRAPH_ROW_TOMBSTONE && kind != GRAPH_ROW_HEAD &&
        kind != GRAPH_ROW_SCHEMA)
        return 0;
    if (!valid(c, C_VER, i)) return 0;
    k->kind = kind;
    k->ver = arrow_array_get_uint(c->a[C_VER], i);
    if (kind == GRAPH_ROW_TABLE_VERSION || kind == GRAPH_ROW_TOMBSTONE) {
        if (!valid(c, C_SID, i) || !valid(c, C_INC, i)) return 0;
        k->sid = arrow_array_get_uint(c->a[C_SID], i);
        k->inc = arrow_array_get_uint(c->a[C_INC], i);
    } else if (kind == GRAPH_ROW_HEAD && valid(c, C_BRANCH, i)) {
        *branch = arrow_array_get_bytes(c->a[C_BRANCH], i, blen);
        if (!*branch) *branch = (const uint8_t *)"";
    }
    return kind;
}

static maxrow *lookup(graph_compact_rules *r, const maxrow *k, const uint8_t *branch, size_t blen)
{
    for (size_t j = 0; j < r->n; j++) {
        maxrow *m = &r->m[j];
        if (m->kind != k->kind || m->sid != k->sid || m->inc != k->inc) continue;
        if (k->kind != GRAPH_ROW_HEAD) return m;
        if (!branch
                ? !m->branch
                : m->branch && strlen(m->branch) == blen && memcmp(m->branch, branch, blen) == 0)
            return m;
    }
    return NULL;
}

static int fold(graph_compact_rules *r, const arrow_batch *b)
{
    cols c;
    int rc = find_cols(&c, b);
    for (int64_t i = 0; rc == 0 && i < b->num_rows; i++) {
        maxrow k;
        const uint8_t *branch;
        size_t blen;
        int kind = row_key(&c, i, &k, &branch, &blen);
        if (kind == 0 || kind == GRAPH_ROW_COMMIT) continue;
        maxrow *m = lookup(r, &k, branch, blen);
        if (m) {
            if (k.ver > m->ver) m->ver = k.ver;
            continue;
        }
        if (r->n == r->cap) {
            size_t cap = r->cap ? r->cap * 2 : 16;
            maxrow *p = core_realloc(r->m, cap * sizeof *p);
            if (!p) return core_err_nomem();
            r->m = p;
            r->cap = cap;
        }
        if (branch && !(k.branch = core_strndup((const char *)branch, blen)))
            return core_err_nomem();
        r->m[r->n++] = k;
    }
    return rc;
}

int graph_scan_no_commits(lance_scan_options *so, graph_no_commits *f,
                          const lance_dataset *manifest)
{
    memset(f, 0, sizeof *f);
    const char *commit_kind = graph_row_kind_name(GRAPH_ROW_COMMIT);
    f->term.column = "object_type";
    f->term.op = ARROW_CMP_NE;
    f->term.value.kind = ARROW_BINARY;
    f->term.value.bytes = commit_kind;
    f->term.value.n_bytes = strlen(commit_kind);
    f->filter.terms = &f->term;
    f->filter.n = 1;
    so->filter = &f->filter;
    int rc = lance_apart_fragments(manifest, GRAPH_COMMIT_FRAGMENTS_KEY, &f->skip, &f->n_skip);
    so->skip_fragments = f->skip;
    so->n_skip_fragments = f->n_skip;
    return rc;
}

void graph_scan_no_commits_clear(graph_no_commits *f)
{
    core_free(f->skip);
    f->skip = NULL;
    f->n_skip = 0;
}

int graph_compact_rules_new(graph_compact_rules **out, const lance_dataset *manifest)
{
    *out = NULL;
    graph_compact_rules *r = core_calloc(1, sizeof *r);
    if (!r) return core_err_nomem();
    /* Commit rows are kept whatever they say: scan the others. */
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.columns = col_names;
    so.n_columns = N_C;
    graph_no_commits nc;
    int rc = graph_scan_no_commits(&so, &nc, manifest);
    arrow_batch *b = NULL;
    if (rc == 0) rc = lance_dataset_scan_all(&b, manifest, &so);
    graph_scan_no_commits_clear(&nc);
    if (rc == 0) rc = fold(r, b);
    arrow_batch_free(b);
    if (rc) {
        graph_compact_rules_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

void graph_compact_rules_free(graph_compact_rules *r)
{
    if (!r) return;
    for (size_t j = 0; j < r->n; j++)
        core_free(r->m[j].branch);
    core_free(r->m);
    core_free(r);
}

int graph_compact_classify(void *arg, const arrow_batch *b, uint8_t *cls)
{
    graph_compact_rules *r = arg;
    cols c;
    int rc = find_cols(&c, b);
    for (int64_t i = 0; rc == 0 && i < b->num_rows; i++) {
        maxrow k;
        const uint8_t *branch;
        size_t blen;
        int kind = row_key(&c, i, &k, &branch, &blen);
        if (kind == GRAPH_ROW_COMMIT) {
            cls[i] = LANCE_COMPACT_APART;
        } else if (kind != 0) {
            /* Superseded: a row of the same key with a greater version exists in the version
             * the rules were built from, and compaction removes no row of another fragment. */
            const maxrow *m = lookup(r, &k, branch, blen);
            cls[i] = m && m->ver > k.ver ? LANCE_COMPACT_DROP : LANCE_COMPACT_KEEP;
        }
    }
    return rc;
}
