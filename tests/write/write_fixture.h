/* Helpers shared by the write-path tests: opening stores and graphs, and loading JSONL text
 * through the coordinator. Header-only: each test is its own binary. */
#ifndef OG_TEST_WRITE_FIXTURE_H
#define OG_TEST_WRITE_FIXTURE_H

#include "testutil.h"

#include "arrow/arrow_json.h"
#include "core/alloc.h"
#include "exec/load.h"
#include "lance/version.h"
#include "write/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A local store on dir (the test fails if it cannot be opened). */
static inline store *wf_store(const char *dir)
{
    store *s = NULL;
    assert_og_ok(store_local_open(&s, dir));
    return s;
}

/* A store that does not own `inner` (write_graph_open takes ownership of what it is given). */
static inline store *wf_borrow(store *inner)
{
    store *w = NULL;
    return store_fault_open(&w, inner, 0) == 0 ? w : NULL;
}

/* Open the graph at dir read-write on its own store; returns the open's result. */
static inline int wf_open(write_graph **g, const char *dir)
{
    store *s = NULL;
    int rc = store_local_open(&s, dir);
    return rc ? rc : write_graph_open(g, s, dir, NULL);
}

/* Parse JSONL text and load it as one write; res may be NULL. */
static inline int wf_load(write_graph *g, const char *text, exec_load_mode mode, write_result *res)
{
    graph_change_set cs;
    memset(&cs, 0, sizeof cs);
    exec_load_stats st;
    write_result local;
    int rc =
        exec_load_parse(&cs, g->h->catalog, text, strlen(text), "d.jsonl", mode, &st, NULL, NULL);
    if (rc == 0) rc = write_changes(g, WRITE_KIND_LOAD, &cs, NULL, res ? res : &local);
    graph_change_set_clear(&cs);
    return rc;
}

/* wf_load with write options (opt->on_table to see the tables a commit changed). */
static inline int wf_load_opt(write_graph *g, const char *text, exec_load_mode mode,
                              const write_options *opt, write_result *res)
{
    graph_change_set cs;
    memset(&cs, 0, sizeof cs);
    exec_load_stats st;
    int rc =
        exec_load_parse(&cs, g->h->catalog, text, strlen(text), "d.jsonl", mode, &st, NULL, NULL);
    if (rc == 0) rc = write_changes(g, WRITE_KIND_LOAD, &cs, opt, res);
    graph_change_set_clear(&cs);
    return rc;
}

/* The ids of a table at its pin (column "id"), as one batch (caller frees). */
static inline arrow_batch *wf_ids(store *s, const graph_table *t)
{
    lance_dataset *ds = NULL;
    arrow_batch *b = NULL;
    const char *cols[] = {GRAPH_COL_ID, GRAPH_COL_SRC, GRAPH_COL_DST};
    lance_scan_options so = LANCE_SCAN_OPTIONS_INIT;
    so.columns = cols;
    so.n_columns = t->kind == LANG_EDGE ? 3 : 1;
    assert_og_ok(graph_table_open(&ds, s, t, LANCE_ACCESS_READ));
    assert_og_ok(lance_dataset_scan_all(&b, ds, &so));
    lance_dataset_free(ds);
    return b;
}

static inline bool wf_has_id(const arrow_batch *b, const uint8_t *id, size_t n)
{
    for (int64_t k = 0; k < b->num_rows; k++) {
        size_t l;
        const uint8_t *v = arrow_array_get_bytes(b->columns[0], k, &l);
        if (l == n && memcmp(v, id, l) == 0) return true;
    }
    return false;
}

/* The graph at dir is sound: no sidecar is left, every table's pin equals its Lance HEAD, and
 * every edge's endpoints exist in its endpoint types' tables. */
static inline void wf_assert_sound(const char *dir)
{
    write_graph *g = NULL;
    assert_og_ok(wf_open(&g, dir));
    graph_snapshot *snap = NULL;
    assert_og_ok(graph_snapshot_load(&snap, g->h->s, NULL, 0, 0));
    for (size_t i = 0; i < snap->n_tables; i++) {
        char root[STORE_KEY_MAX];
        uint64_t head = 0;
        lance_naming nm;
        assert_og_ok(lance_branch_root(root, snap->tables[i].path, snap->tables[i].table_branch));
        assert_og_ok(lance_version_latest(g->h->s, root, &head, &nm));
        assert_int_equal(head, snap->tables[i].version);
    }
    for (size_t t = 0; t < g->h->catalog->n_types; t++) {
        const lang_typedef *e = &g->h->catalog->types[t];
        if (e->kind != LANG_EDGE) continue;
        char ea[256], fa[256], ta[256];
        graph_table_alias(ea, sizeof ea, LANG_EDGE, e->name);
        graph_table_alias(fa, sizeof fa, LANG_NODE, g->h->catalog->types[e->from].name);
        graph_table_alias(ta, sizeof ta, LANG_NODE, g->h->catalog->types[e->to].name);
        arrow_batch *eb = wf_ids(g->h->s, graph_snapshot_table(snap, ea));
        arrow_batch *fb = wf_ids(g->h->s, graph_snapshot_table(snap, fa));
        arrow_batch *tb = wf_ids(g->h->s, graph_snapshot_table(snap, ta));
        for (int64_t r = 0; r < eb->num_rows; r++) {
            size_t sl, dl;
            const uint8_t *sv = arrow_array_get_bytes(eb->columns[1], r, &sl);
            const uint8_t *dv = arrow_array_get_bytes(eb->columns[2], r, &dl);
            if (!wf_has_id(fb, sv, sl) || !wf_has_id(tb, dv, dl))
                fail_msg("orphan %s edge %.*s -> %.*s", e->name, (int)sl, sv, (int)dl, dv);
        }
        arrow_batch_free(eb);
        arrow_batch_free(fb);
        arrow_batch_free(tb);
    }
    graph_snapshot_free(snap);
    char(*ids)[GRAPH_ID_LEN + 1] = NULL;
    size_t n = 0;
    assert_og_ok(write_sidecar_list(g->h->s, &ids, &n));
    free(ids);
    assert_int_equal(n, 0);
    write_graph_close(g);
}

/* ---- crash-check helpers (they report instead of asserting: crashsim counts violations) -- */

typedef struct wf_recovery_counts {
    unsigned recovered, rolled_back, rolled_forward, discarded;
} wf_recovery_counts;

static inline int wf_count_sidecars(store *s, size_t *n)
{
    char(*ids)[GRAPH_ID_LEN + 1] = NULL;
    int rc = write_sidecar_list(s, &ids, n);
    free(ids);
    return rc;
}

/* Open the graph on s read-write (which recovers) and check what recovery must leave: no
 * sidecar, and exactly one audit row for each sidecar that was pending (a crash after the
 * audit append and before the sidecar delete leaves the row already there); tally the new
 * rows' outcomes. 0, or 1 with the reason in why. */
static inline int wf_open_recovered(store *s, write_graph **g, wf_recovery_counts *c, char *why,
                                    size_t cap)
{
    *g = NULL;
    write_audit_row *audit = NULL;
    char(*ids)[GRAPH_ID_LEN + 1] = NULL;
    size_t pending = 0, before = 0, after = 0, left = 0;
    int rc = 1;
    if (write_sidecar_list(s, &ids, &pending) != 0 || write_audit_list(s, &audit, &before) != 0) {
        snprintf(why, cap, "listing: %s", og_error_last()->message);
        goto out;
    }
    free(audit);
    audit = NULL;
    if (write_graph_open(g, wf_borrow(s), "", NULL) != 0) {
        snprintf(why, cap, "read-write open failed: %s", og_error_last()->message);
        goto out;
    }
    if (wf_count_sidecars(s, &left) != 0 || left != 0) {
        snprintf(why, cap, "%zu sidecars left after open", left);
        goto out;
    }
    if (write_audit_list(s, &audit, &after) != 0) {
        snprintf(why, cap, "audit: %s", og_error_last()->message);
        goto out;
    }
    for (size_t k = 0; k < pending; k++) {
        size_t rows = 0;
        for (size_t i = 0; i < after; i++)
            rows += strcmp(audit[i].operation_id, ids[k]) == 0;
        if (rows != 1) {
            snprintf(why, cap, "%zu audit rows for recovered operation %s", rows, ids[k]);
            goto out;
        }
    }
    for (size_t i = before; i < after; i++) {
        c->recovered++;
        c->rolled_back += strcmp(audit[i].kind, "rolled_back") == 0;
        c->rolled_forward += strcmp(audit[i].kind, "rolled_forward") == 0;
        c->discarded += strcmp(audit[i].kind, "discarded") == 0;
    }
    rc = 0;
out:
    free(ids);
    free(audit);
    return rc;
}

/* A table's manifest pin equals its Lance HEAD, and the pinned version holds row_count rows.
 * 0, or 1 with the reason in why. */
static inline int wf_check_table(store *s, const graph_table *t, char *why, size_t cap)
{
    char root[STORE_KEY_MAX];
    uint64_t head = 0, rows = 0;
    lance_naming nm;
    if (lance_branch_root(root, t->path, t->table_branch) != 0 ||
        lance_version_latest(s, root, &head, &nm) != 0)
        return snprintf(why, cap, "head of %s: %s", t->alias, og_error_last()->message), 1;
    if (head != t->version)
        return snprintf(why, cap, "%s pin %llu != HEAD %llu", t->alias,
                        (unsigned long long)t->version, (unsigned long long)head),
               1;
    lance_dataset *ds = NULL;
    int rc = graph_table_open(&ds, s, t, LANCE_ACCESS_READ);
    if (rc == 0) rc = lance_dataset_count_rows(ds, &rows);
    lance_dataset_free(ds);
    if (rc != 0 || rows != t->row_count)
        return snprintf(why, cap, "%s has %llu rows, manifest says %llu", t->alias,
                        (unsigned long long)rows, (unsigned long long)t->row_count),
               1;
    return 0;
}

static inline int wf_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The whole content of a branch (NULL: main) at manifest version mver (0: its latest): for
 * every table in alias order, every column of every row as JSON, rows sorted, in *text (the
 * caller frees); the code of the first failing read otherwise (error set). */
static inline int wf_content_at(store *s, const char *branch, uint64_t mver, char **text)
{
    *text = NULL;
    graph_snapshot *snap = NULL;
    core_buf out = CORE_BUF_INIT;
    int rc = graph_snapshot_load(&snap, s, branch, mver, 0);
    for (size_t t = 0; rc == 0 && t < snap->n_tables; t++) {
        const graph_table *tb = &snap->tables[t];
        lance_dataset *ds = NULL;
        arrow_batch *b = NULL;
        rc = graph_table_open(&ds, s, tb, LANCE_ACCESS_READ);
        if (rc == 0) rc = lance_dataset_scan_all(&b, ds, NULL);
        lance_dataset_free(ds);
        char **rows = NULL;
        int64_t n = rc == 0 ? b->num_rows : 0;
        if (rc == 0 && !(rows = core_calloc(n ? (size_t)n : 1, sizeof *rows))) rc = OG_E_NOMEM;
        for (int64_t i = 0; rc == 0 && i < n; i++) {
            core_buf r = CORE_BUF_INIT;
            rc = arrow_json_row(&r, b, i);
            if (rc == 0 && !(rows[i] = strdup(core_buf_cstr(&r)))) rc = OG_E_NOMEM;
            core_buf_free(&r);
        }
        if (rc == 0) {
            qsort(rows, (size_t)n, sizeof *rows, wf_cmp_str);
            rc = core_buf_printf(&out, "%s (%lld rows)\n", tb->alias, (long long)n);
        }
        for (int64_t i = 0; rc == 0 && i < n; i++)
            rc = core_buf_printf(&out, "  %s\n", rows[i]);
        for (int64_t i = 0; rows && i < n; i++)
            free(rows[i]);
        core_free(rows);
        arrow_batch_free(b);
    }
    if (rc == 0 && !(*text = strdup(core_buf_cstr(&out)))) rc = OG_E_NOMEM;
    core_buf_free(&out);
    graph_snapshot_free(snap);
    return rc;
}

/* wf_content_at at the latest version; NULL on failure (error set). */
static inline char *wf_content(store *s, const char *branch)
{
    char *text = NULL;
    return wf_content_at(s, branch, 0, &text) == 0 ? text : NULL;
}

#endif
