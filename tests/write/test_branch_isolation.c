/* Branch isolation (issue 17, item 5): 1,000 random writes spread over main and three graph
 * branches created during the run, and every branch's content equals a model the test keeps.
 *
 * The writes mix both write paths: .gq mutations (og_graph_mutate: keyed inserts that upsert,
 * multi-statement inserts, single- and multi-row updates, deletes with their edge cascade, edge
 * inserts and edge deletes) and JSONL loads (append, merge, and overwrite of one type), the
 * loads half through og_graph_load and half through the write layer (exec_load_parse +
 * write_changes on the handle's writer). Branches: "dev" forked early from main at its head,
 * "feature/x" later from dev at its head, and "hotfix" from a random branch at an older commit
 * of it (write_branch_create and og_graph_create_branch both used). A few extra writes are
 * refused on purpose (a key the branch has, an edge to a node only another branch has) or
 * commit nothing (an update matching no row).
 *
 * The model: per branch, the nodes (type, key -> properties) and edges (src, dst, since), and a
 * copy of it for every commit id. Checked:
 *   - after every write, only the written branch's head moved (to the write's commit), and a
 *     refused or empty write moved no head;
 *   - every ~100 writes one random branch, and at the end every branch, read through
 *     og_graph_query on the branch equals the model exactly; its commit list
 *     (og_graph_commits with a branch) is exactly the lineage the test recorded; and reading `at`
 *     random earlier commits of it equals the model as of that commit.
 *
 * The seed is printed; OG_ISO_SEED overrides it, OG_ISO_WRITES the number of writes. A
 * mismatch prints the seed, the write index, the branch and the differing rows. */
#include "write_fixture.h"

#include "api/graph_internal.h"

#include <stdarg.h>
#include <stdbool.h>
#include <time.h>

static const char *SCHEMA = "node Person {\n"
                            "    name: String @key\n"
                            "    age: I32?\n"
                            "    city: String?\n"
                            "}\n"
                            "node Company {\n"
                            "    name: String @key\n"
                            "    size: I64?\n"
                            "    city: String?\n"
                            "}\n"
                            "edge WorksAt: Person -> Company { since: I32? }\n";

static const char *MUTATIONS =
    "query add_person($n: String, $a: I32?, $c: String?) {\n"
    "    insert Person { name: $n, age: $a, city: $c }\n"
    "}\n"
    "query add_company($n: String, $s: I64?, $c: String?) {\n"
    "    insert Company { name: $n, size: $s, city: $c }\n"
    "}\n"
    "query add_pair($p: String, $a: I32?, $c: String, $s: I32?) {\n"
    "    insert Person { name: $p, age: $a }\n"
    "    insert Company { name: $c }\n"
    "    insert WorksAt { from: $p, to: $c, since: $s }\n"
    "}\n"
    "query link($p: String, $c: String, $s: I32?) {\n"
    "    insert WorksAt { from: $p, to: $c, since: $s }\n"
    "}\n"
    "query set_age($n: String, $a: I32?) { update Person set { age: $a } where name = $n }\n"
    "query set_city_older($x: I32, $c: String?) {\n"
    "    update Person set { city: $c } where age > $x\n"
    "}\n"
    "query set_company($n: String, $s: I64?, $c: String?) {\n"
    "    update Company set { size: $s, city: $c } where name = $n\n"
    "}\n"
    "query drop_person($n: String) { delete Person where name = $n }\n"
    "query drop_company($n: String) { delete Company where name = $n }\n"
    "query drop_young($x: I32) { delete Person where age < $x }\n"
    "query unlink_from($p: String) { delete WorksAt where from = $p }\n";

static const char *READS =
    "query persons() { match { $p: Person } return { $p.name, $p.age, $p.city } }\n"
    "query companies() { match { $c: Company } return { $c.name, $c.size, $c.city } }\n"
    "query works() {\n"
    "    match { $p: Person  $p $e:worksAt $c }\n"
    "    return { $p.name, $c.name, $e.since }\n"
    "}\n";

static const char *CITIES[] = {"oslo", "lima", "rome", "kyiv", "pune", "kobe"};
#define N_CITIES (sizeof CITIES / sizeof CITIES[0])

/* ---- the model ------------------------------------------------------------------------------ */

enum { T_PERSON = 0, T_COMPANY = 1 };
static const char *TYPE_NAME[] = {"Person", "Company"};

/* A node: Person {name, age, city} or Company {name, size, city}; `i` is age or size. */
typedef struct mnode {
    char key[16];
    int8_t type;
    bool has_i, has_s;
    int64_t i;
    char s[8];
} mnode;

typedef struct medge {
    char src[16], dst[16];
    bool has_since;
    int32_t since;
} medge;

typedef struct model {
    mnode *n;
    size_t nn, capn;
    medge *e;
    size_t ne, cape;
} model;

static void model_free(model *m)
{
    free(m->n);
    free(m->e);
    memset(m, 0, sizeof *m);
}

static void model_copy(model *dst, const model *src)
{
    memset(dst, 0, sizeof *dst);
    dst->capn = dst->nn = src->nn;
    dst->cape = dst->ne = src->ne;
    dst->n = malloc((src->nn ? src->nn : 1) * sizeof *dst->n);
    dst->e = malloc((src->ne ? src->ne : 1) * sizeof *dst->e);
    assert_non_null(dst->n);
    assert_non_null(dst->e);
    if (src->nn) memcpy(dst->n, src->n, src->nn * sizeof *src->n);
    if (src->ne) memcpy(dst->e, src->e, src->ne * sizeof *src->e);
}

static ssize_t model_find(const model *m, int type, const char *key)
{
    for (size_t i = 0; i < m->nn; i++)
        if (m->n[i].type == type && strcmp(m->n[i].key, key) == 0) return (ssize_t)i;
    return -1;
}

static size_t model_count(const model *m, int type)
{
    size_t c = 0;
    for (size_t i = 0; i < m->nn; i++)
        c += m->n[i].type == type;
    return c;
}

/* Insert or replace the node of (type, key). */
static void model_put(model *m, const mnode *n)
{
    ssize_t at = model_find(m, n->type, n->key);
    if (at >= 0) {
        m->n[at] = *n;
        return;
    }
    if (m->nn == m->capn) {
        m->capn = m->capn ? m->capn * 2 : 64;
        m->n = realloc(m->n, m->capn * sizeof *m->n);
        assert_non_null(m->n);
    }
    m->n[m->nn++] = *n;
}

static void model_add_edge(model *m, const medge *e)
{
    if (m->ne == m->cape) {
        m->cape = m->cape ? m->cape * 2 : 64;
        m->e = realloc(m->e, m->cape * sizeof *m->e);
        assert_non_null(m->e);
    }
    m->e[m->ne++] = *e;
}

/* Remove every edge from person p (src) or to company c (dst); NULL matches nothing. */
static size_t model_del_edges(model *m, const char *p, const char *c)
{
    size_t w = 0, gone = 0;
    for (size_t r = 0; r < m->ne; r++) {
        bool hit = (p && strcmp(m->e[r].src, p) == 0) || (c && strcmp(m->e[r].dst, c) == 0);
        if (hit)
            gone++;
        else
            m->e[w++] = m->e[r];
    }
    m->ne = w;
    return gone;
}

/* Delete a node and (the mutation's cascade) its edges. */
static void model_del_node(model *m, int type, const char *key)
{
    ssize_t at = model_find(m, type, key);
    assert_true(at >= 0);
    m->n[at] = m->n[--m->nn];
    if (type == T_PERSON)
        model_del_edges(m, key, NULL);
    else
        model_del_edges(m, NULL, key);
}

/* ---- rows as text, for comparison ----------------------------------------------------------- */

typedef struct rowset {
    char **r;
    size_t n, cap;
} rowset;

static void rows_add(rowset *rs, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (rs->n == rs->cap) {
        rs->cap = rs->cap ? rs->cap * 2 : 64;
        rs->r = realloc(rs->r, rs->cap * sizeof *rs->r);
        assert_non_null(rs->r);
    }
    rs->r[rs->n] = strdup(buf);
    assert_non_null(rs->r[rs->n]);
    rs->n++;
}

static void rows_free(rowset *rs)
{
    for (size_t i = 0; i < rs->n; i++)
        free(rs->r[i]);
    free(rs->r);
    memset(rs, 0, sizeof *rs);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void rows_sort(rowset *rs)
{
    if (rs->n) qsort(rs->r, rs->n, sizeof *rs->r, cmp_str);
}

static const char *opt_int(char *buf, size_t cap, bool has, int64_t v)
{
    if (!has) return "null";
    snprintf(buf, cap, "%lld", (long long)v);
    return buf;
}

/* The model's rows of one read (0 persons, 1 companies, 2 works), in the read's text form. */
static void model_rows(const model *m, int which, rowset *out)
{
    char a[32];
    if (which < 2) {
        for (size_t i = 0; i < m->nn; i++) {
            const mnode *n = &m->n[i];
            if (n->type != which) continue;
            rows_add(out, "%s|%s|%s", n->key, opt_int(a, sizeof a, n->has_i, n->i),
                     n->has_s ? n->s : "null");
        }
    } else {
        for (size_t i = 0; i < m->ne; i++) {
            const medge *e = &m->e[i];
            rows_add(out, "%s|%s|%s", e->src, e->dst, opt_int(a, sizeof a, e->has_since, e->since));
        }
    }
    rows_sort(out);
}

/* ---- the run -------------------------------------------------------------------------------- */

#define MAX_BRANCHES 4
#define NAME_CAP 32

/* One graph commit the run saw, and the model as of it. */
typedef struct crec {
    char id[OG_ID_LEN + 1];
    uint64_t mver;
    int branch; /* where it was made */
    model m;
} crec;

typedef struct branch {
    char name[NAME_CAP];
    model cur;
    char head[OG_ID_LEN + 1];
    size_t *lineage; /* indexes into the commits, oldest first (inherited ones included) */
    size_t nl, capl;
    unsigned writes;
} branch;

enum wkind {
    K_M_INSERT,      /* insert a node with a new (or another branch's / deleted) key */
    K_M_UPSERT,      /* insert a node the branch has: the whole row is replaced */
    K_M_PAIR,        /* three statements: person, company, an edge between them */
    K_M_LINK,        /* insert an edge */
    K_M_UPDATE,      /* update one node */
    K_M_UPDATE_MANY, /* update every person older than x */
    K_M_DELETE,      /* delete one node (and its edges) */
    K_M_DELETE_MANY, /* delete every person younger than x (and their edges) */
    K_M_UNLINK,      /* delete every edge from one person */
    K_L_APPEND,      /* load, append mode */
    K_L_MERGE,       /* load, merge mode */
    K_L_OVERWRITE,   /* load, overwrite mode (edges, or companies) */
    K_COUNT
};
static const char *KIND_NAME[] = {"m.insert", "m.upsert",      "m.pair",   "m.link",
                                  "m.update", "m.update_many", "m.delete", "m.delete_many",
                                  "m.unlink", "l.append",      "l.merge",  "l.overwrite"};

typedef struct iso {
    og_graph *g;
    char dir[TEST_SANDBOX_PATH];
    uint64_t seed, rng;
    unsigned idx; /* the write index (committed writes so far) */
    branch b[MAX_BRANCHES];
    int nb;
    crec *c;
    size_t nc, capc;
    unsigned next_key[2]; /* keys p0.., c0.. ever used: p<next_key[0]> is the next new one */
    unsigned counts[K_COUNT][MAX_BRANCHES];
    unsigned via_layer, via_api; /* loads through the write layer / og_graph_load */
    unsigned refused, noops, maint_commits, checks, travels;
    unsigned head_calls; /* check_heads calls (every LIST_EVERY-th lists the branches) */
    double write_s, heads_s, settle_s; /* time in the writes, the head checks, maintenance */
} iso;

static uint64_t rnd(iso *t)
{
    /* splitmix64 */
    uint64_t z = (t->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static unsigned below(iso *t, unsigned n)
{
    return n ? (unsigned)(rnd(t) % n) : 0;
}

static bool chance(iso *t, unsigned percent)
{
    return below(t, 100) < percent;
}

static const char *bname(const iso *t, int bi)
{
    return t->b[bi].name;
}

static size_t record_commit(iso *t, const char *id, uint64_t mver, int bi, const model *m)
{
    if (t->nc == t->capc) {
        t->capc = t->capc ? t->capc * 2 : 256;
        t->c = realloc(t->c, t->capc * sizeof *t->c);
        assert_non_null(t->c);
    }
    crec *c = &t->c[t->nc];
    memset(c, 0, sizeof *c);
    snprintf(c->id, sizeof c->id, "%s", id);
    c->mver = mver;
    c->branch = bi;
    model_copy(&c->m, m);
    return t->nc++;
}

static void lineage_push(branch *b, size_t ci)
{
    if (b->nl == b->capl) {
        b->capl = b->capl ? b->capl * 2 : 64;
        b->lineage = realloc(b->lineage, b->capl * sizeof *b->lineage);
        assert_non_null(b->lineage);
    }
    b->lineage[b->nl++] = ci;
}

#define ISO_FAIL(t, bi, ...)                                                                       \
    do {                                                                                           \
        print_error("isolation failure: seed %llu, write %u, branch %s\n",                         \
                    (unsigned long long)(t)->seed, (t)->idx, (bi) >= 0 ? bname(t, bi) : "-");      \
        fail_msg(__VA_ARGS__);                                                                     \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- reads ---------------------------------------------------------------------------------- */

static void append_cell(char *buf, size_t cap, size_t *len, og_value *v)
{
    char tmp[64];
    const char *s = tmp;
    size_t n;
    switch (v->type) {
    case OG_VALUE_NULL:
        s = "null";
        n = 4;
        break;
    case OG_VALUE_INT:
        n = (size_t)snprintf(tmp, sizeof tmp, "%lld", (long long)v->i);
        break;
    case OG_VALUE_UINT:
        n = (size_t)snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v->u);
        break;
    case OG_VALUE_STRING:
        s = v->str;
        n = v->len;
        break;
    default:
        s = "?";
        n = 1;
    }
    if (*len + n + 2 >= cap) fail_msg("row text too long");
    if (*len) buf[(*len)++] = '|';
    memcpy(buf + *len, s, n);
    *len += n;
    buf[*len] = '\0';
}

/* Rows of read `which` on branch bi at `at` (NULL: the head), sorted. */
static void db_rows(iso *t, int bi, const char *at, int which, rowset *out)
{
    static const char *const names[] = {"persons", "companies", "works"};
    og_query_options qo = OG_QUERY_OPTIONS_INIT;
    qo.source = READS;
    qo.name = names[which];
    qo.branch = bname(t, bi);
    qo.at = at;
    og_result *r = NULL;
    int rc = og_graph_query(&r, t->g, &qo);
    if (rc)
        ISO_FAIL(t, bi, "query %s at %s: %s: %s", names[which], at ? at : "head", og_code_name(rc),
                 og_error_last()->message);
    size_t cols = og_result_column_count(r);
    for (uint64_t row = 0; row < og_result_row_count(r); row++) {
        char buf[256];
        size_t len = 0;
        buf[0] = '\0';
        for (size_t c = 0; c < cols; c++) {
            og_value v;
            assert_og_ok(og_result_value(&v, r, row, c));
            append_cell(buf, sizeof buf, &len, &v);
        }
        rows_add(out, "%s", buf);
    }
    og_result_free(r);
    rows_sort(out);
}

/* The branch read at `at` equals model m; on a difference print both sides' extra rows. */
static void check_content(iso *t, int bi, const char *at, const model *m)
{
    static const char *const what[] = {"Person", "Company", "WorksAt"};
    for (int which = 0; which < 3; which++) {
        rowset want = {0}, got = {0};
        model_rows(m, which, &want);
        db_rows(t, bi, at, which, &got);
        size_t i = 0, j = 0, diffs = 0;
        while (i < want.n || j < got.n) {
            int c = i == want.n ? 1 : j == got.n ? -1 : strcmp(want.r[i], got.r[j]);
            if (c == 0) {
                i++, j++;
                continue;
            }
            if (diffs++ < 20) {
                if (c < 0)
                    print_error("  %s only in the model: %s\n", what[which], want.r[i]);
                else
                    print_error("  %s only in the graph: %s\n", what[which], got.r[j]);
            }
            if (c < 0)
                i++;
            else
                j++;
        }
        size_t nw = want.n, ng = got.n;
        rows_free(&want);
        rows_free(&got);
        if (diffs)
            ISO_FAIL(t, bi,
                     "%s rows at %s differ from the model (%zu differences; model %zu "
                     "rows, graph %zu)",
                     what[which], at ? at : "the head", diffs, nw, ng);
    }
}

/* The branch's commit list is exactly the recorded lineage (newest first). */
static void check_lineage(iso *t, int bi)
{
    branch *b = &t->b[bi];
    og_commit_list *l = NULL;
    assert_og_ok(og_graph_commits(
        &l, t->g, &(og_commit_options){.version = OG_COMMIT_OPTIONS_VERSION, .branch = b->name}));
    size_t n = og_commit_list_count(l);
    if (n != b->nl) {
        og_commit_list_free(l);
        ISO_FAIL(t, bi, "%zu commits listed, %zu recorded", n, b->nl);
    }
    for (size_t i = 0; i < n; i++) {
        const og_commit_info *ci = og_commit_list_get(l, i);
        const crec *want = &t->c[b->lineage[n - 1 - i]];
        if (strcmp(ci->id, want->id) != 0) {
            char got[OG_ID_LEN + 1];
            snprintf(got, sizeof got, "%s", ci->id);
            og_commit_list_free(l);
            ISO_FAIL(t, bi, "commit %zu (newest first) is %s, recorded %s", i, got, want->id);
        }
    }
    og_commit_list_free(l);
}

/* Time travel: reading `at` random earlier commits of the branch equals the model then. */
static void check_travel(iso *t, int bi, unsigned times)
{
    branch *b = &t->b[bi];
    for (unsigned k = 0; k < times && b->nl > 1; k++) {
        const crec *c = &t->c[b->lineage[below(t, (unsigned)b->nl - 1)]];
        check_content(t, bi, c->id, &c->m);
        t->travels++;
    }
}

/* Every branch's head is the one recorded (`except` may have moved: returned in moved).
 * Every LIST_EVERY calls (and in every branch check) through og_graph_branches, which also
 * names the branches; otherwise through the handle's heads of each branch, which are the latest
 * manifest version's (a cached head is taken only while its branch's ref and latest version
 * are still the ones it was read at). The list loads the snapshot of every branch that wrote
 * (listing after every write took 34 of 45 seconds of a run when it loaded two of every branch
 * and branches' manifests were not yet compacted). */
#define LIST_EVERY 25
static void check_heads(iso *t, int except, char *moved)
{
    double t0 = now_s();
    if (t->head_calls++ % LIST_EVERY != 0) {
        for (int k = 0; k < t->nb; k++) {
            graph_head *hd = NULL;
            int rc = graph_handle_branch_head(t->g->h, k ? t->b[k].name : NULL, &hd);
            if (rc) ISO_FAIL(t, except, "head of %s: %s", t->b[k].name, og_error_last()->message);
            const char *head = graph_head_snapshot(hd)->head;
            if (k == except) {
                if (moved) snprintf(moved, OG_ID_LEN + 1, "%s", head);
            } else if (strcmp(head, t->b[k].head) != 0) {
                char now[OG_ID_LEN + 1];
                snprintf(now, sizeof now, "%s", head);
                graph_head_release(hd);
                ISO_FAIL(t, except, "branch %s moved from %s to %s", t->b[k].name, t->b[k].head,
                         now);
            }
            graph_head_release(hd);
        }
        t->heads_s += now_s() - t0;
        return;
    }
    og_branch_list *l = NULL;
    assert_og_ok(og_graph_branches(&l, t->g));
    size_t n = og_branch_list_count(l);
    if (n != (size_t)t->nb) ISO_FAIL(t, except, "%zu branches listed, %d expected", n, t->nb);
    for (size_t i = 0; i < n; i++) {
        const og_branch_info *bi = og_branch_list_get(l, i);
        int k = -1;
        for (int j = 0; j < t->nb; j++)
            if (strcmp(t->b[j].name, bi->name) == 0) k = j;
        if (k < 0) ISO_FAIL(t, except, "unexpected branch %s", bi->name);
        if (k == except) {
            if (moved) snprintf(moved, OG_ID_LEN + 1, "%s", bi->head);
        } else if (strcmp(bi->head, t->b[k].head) != 0) {
            ISO_FAIL(t, except, "branch %s moved from %s to %s", bi->name, t->b[k].head, bi->head);
        }
    }
    og_branch_list_free(l);
    t->heads_s += now_s() - t0;
}

static void check_branch(iso *t, int bi, unsigned travels)
{
    check_content(t, bi, NULL, &t->b[bi].cur);
    check_lineage(t, bi);
    check_travel(t, bi, travels);
    t->head_calls = 0; /* the list's turn */
    check_heads(t, -1, NULL);
    t->checks++;
}

/* ---- writes --------------------------------------------------------------------------------- */

/* A write: mutation `query` with params, or a load of `text` in `mode`. */
typedef struct wreq {
    const char *query;
    char params[512];
    char *text;
    size_t len, cap;
    int mode; /* og_load_mode, for a load */
} wreq;

static void text_add(wreq *w, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < sizeof buf);
    if (w->len + (size_t)n + 1 > w->cap) {
        w->cap = (w->cap + (size_t)n + 1) * 2;
        w->text = realloc(w->text, w->cap);
        assert_non_null(w->text);
    }
    memcpy(w->text + w->len, buf, (size_t)n + 1);
    w->len += (size_t)n;
}

/* A random node of type (of the branch's model m), or NULL. */
static const mnode *pick_node(iso *t, const model *m, int type)
{
    size_t n = model_count(m, type);
    if (!n) return NULL;
    size_t k = below(t, (unsigned)n);
    for (size_t i = 0; i < m->nn; i++)
        if (m->n[i].type == type && k-- == 0) return &m->n[i];
    return NULL;
}

/* A key of type that m lacks: new, or (sometimes) one used before, on another branch or
 * deleted since. */
static void fresh_key(iso *t, const model *m, int type, char *key, size_t cap)
{
    const char pre = type == T_PERSON ? 'p' : 'c';
    if (t->next_key[type] > 0 && chance(t, 30)) {
        for (int tries = 0; tries < 8; tries++) {
            snprintf(key, cap, "%c%u", pre, below(t, t->next_key[type]));
            if (model_find(m, type, key) < 0) return;
        }
    }
    snprintf(key, cap, "%c%u", pre, t->next_key[type]++);
}

static void random_props(iso *t, mnode *n)
{
    n->has_i = !chance(t, 20);
    n->i = n->type == T_PERSON ? (int64_t)below(t, 100) : (int64_t)below(t, 100000) + 1;
    if (!n->has_i) n->i = 0;
    n->has_s = !chance(t, 30);
    snprintf(n->s, sizeof n->s, "%s", n->has_s ? CITIES[below(t, N_CITIES)] : "");
}

static void random_edge(iso *t, medge *e, const char *src, const char *dst)
{
    memset(e, 0, sizeof *e);
    snprintf(e->src, sizeof e->src, "%s", src);
    snprintf(e->dst, sizeof e->dst, "%s", dst);
    e->has_since = !chance(t, 25);
    e->since = e->has_since ? 1990 + (int32_t)below(t, 40) : 0;
}

/* `"name":value` for a nullable property: null written out, or (sometimes) left out. */
static void json_prop(iso *t, char *buf, size_t cap, const char *name, bool has, const char *v,
                      bool quote)
{
    if (!has && chance(t, 50))
        buf[0] = '\0';
    else if (!has)
        snprintf(buf, cap, ",\"%s\":null", name);
    else
        snprintf(buf, cap, quote ? ",\"%s\":\"%s\"" : ",\"%s\":%s", name, v);
}

static void node_line(iso *t, wreq *w, const mnode *n)
{
    char iv[32], ip[64], sp[64];
    snprintf(iv, sizeof iv, "%lld", (long long)n->i);
    json_prop(t, ip, sizeof ip, n->type == T_PERSON ? "age" : "size", n->has_i, iv, false);
    json_prop(t, sp, sizeof sp, "city", n->has_s, n->s, true);
    text_add(w, "{\"type\":\"%s\",\"data\":{\"name\":\"%s\"%s%s}}\n", TYPE_NAME[n->type], n->key,
             ip, sp);
}

static void edge_line(iso *t, wreq *w, const medge *e)
{
    if (!e->has_since && chance(t, 50)) {
        text_add(w, "{\"edge\":\"WorksAt\",\"from\":\"%s\",\"to\":\"%s\"}\n", e->src, e->dst);
        return;
    }
    char v[32], p[64];
    snprintf(v, sizeof v, "%d", e->since);
    json_prop(t, p, sizeof p, "since", e->has_since, v, false);
    text_add(w, "{\"edge\":\"WorksAt\",\"from\":\"%s\",\"to\":\"%s\",\"data\":{%s}}\n", e->src,
             e->dst, p[0] ? p + 1 : "");
}

/* Params of a node insert or update: the nullable ones null or left out when absent. */
static void node_params(iso *t, wreq *w, const mnode *n, bool with_key)
{
    char iv[32], ip[64], sp[64];
    snprintf(iv, sizeof iv, "%lld", (long long)n->i);
    json_prop(t, ip, sizeof ip, n->type == T_PERSON ? "a" : "s", n->has_i, iv, false);
    json_prop(t, sp, sizeof sp, "c", n->has_s, n->s, true);
    snprintf(w->params, sizeof w->params, "{\"n\":\"%s\"%s%s}", with_key ? n->key : "", ip, sp);
}

/* Build a write of kind k on model m (changed as the write will change the branch). Returns
 * false when the branch has nothing the kind needs (the caller picks another), and sets
 * *commits to whether the write must commit (an update or delete matching nothing does
 * not). */
static bool make_write(iso *t, int k, model *m, wreq *w, bool *commits)
{
    *commits = true;
    mnode n;
    medge e;
    memset(&n, 0, sizeof n);
    const mnode *p, *c;
    switch (k) {
    case K_M_INSERT:
        n.type = (int8_t)below(t, 2);
        fresh_key(t, m, n.type, n.key, sizeof n.key);
        random_props(t, &n);
        w->query = n.type == T_PERSON ? "add_person" : "add_company";
        node_params(t, w, &n, true);
        model_put(m, &n);
        return true;
    case K_M_UPSERT:
        n.type = (int8_t)below(t, 2);
        if (!(p = pick_node(t, m, n.type))) return false;
        snprintf(n.key, sizeof n.key, "%s", p->key);
        random_props(t, &n);
        w->query = n.type == T_PERSON ? "add_person" : "add_company";
        node_params(t, w, &n, true);
        model_put(m, &n); /* the whole row: what the insert leaves out becomes null */
        return true;
    case K_M_PAIR: {
        mnode pn, cn;
        memset(&pn, 0, sizeof pn);
        memset(&cn, 0, sizeof cn);
        pn.type = T_PERSON;
        cn.type = T_COMPANY;
        if ((p = chance(t, 50) ? pick_node(t, m, T_PERSON) : NULL))
            snprintf(pn.key, sizeof pn.key, "%s", p->key);
        else
            fresh_key(t, m, T_PERSON, pn.key, sizeof pn.key);
        if ((c = chance(t, 50) ? pick_node(t, m, T_COMPANY) : NULL))
            snprintf(cn.key, sizeof cn.key, "%s", c->key);
        else
            fresh_key(t, m, T_COMPANY, cn.key, sizeof cn.key);
        random_props(t, &pn);
        pn.has_s = false; /* add_pair sets no city and nothing of the company */
        pn.s[0] = '\0';
        random_edge(t, &e, pn.key, cn.key);
        char av[32], ap[64], sv[32], sp[64];
        snprintf(av, sizeof av, "%lld", (long long)pn.i);
        snprintf(sv, sizeof sv, "%d", e.since);
        json_prop(t, ap, sizeof ap, "a", pn.has_i, av, false);
        json_prop(t, sp, sizeof sp, "s", e.has_since, sv, false);
        snprintf(w->params, sizeof w->params, "{\"p\":\"%s\",\"c\":\"%s\"%s%s}", pn.key, cn.key, ap,
                 sp);
        w->query = "add_pair";
        model_put(m, &pn);
        model_put(m, &cn);
        model_add_edge(m, &e);
        return true;
    }
    case K_M_LINK: {
        if (!(p = pick_node(t, m, T_PERSON)) || !(c = pick_node(t, m, T_COMPANY))) return false;
        random_edge(t, &e, p->key, c->key);
        char sv[32], sp[64];
        snprintf(sv, sizeof sv, "%d", e.since);
        json_prop(t, sp, sizeof sp, "s", e.has_since, sv, false);
        snprintf(w->params, sizeof w->params, "{\"p\":\"%s\",\"c\":\"%s\"%s}", e.src, e.dst, sp);
        w->query = "link";
        model_add_edge(m, &e);
        return true;
    }
    case K_M_UPDATE: {
        int type = (int)below(t, 2);
        if (!(p = pick_node(t, m, type))) return false;
        mnode u = *p, r;
        memset(&r, 0, sizeof r);
        r.type = (int8_t)type;
        random_props(t, &r);
        char iv[32], ip[64], sp[64];
        snprintf(iv, sizeof iv, "%lld", (long long)r.i);
        if (type == T_PERSON) { /* set_age: the age alone */
            u.has_i = r.has_i;
            u.i = r.i;
            json_prop(t, ip, sizeof ip, "a", r.has_i, iv, false);
            snprintf(w->params, sizeof w->params, "{\"n\":\"%s\"%s}", u.key, ip);
            w->query = "set_age";
        } else { /* set_company: size and city */
            u.has_i = r.has_i;
            u.i = r.i;
            u.has_s = r.has_s;
            memcpy(u.s, r.s, sizeof u.s);
            json_prop(t, ip, sizeof ip, "s", r.has_i, iv, false);
            json_prop(t, sp, sizeof sp, "c", r.has_s, r.s, true);
            snprintf(w->params, sizeof w->params, "{\"n\":\"%s\"%s%s}", u.key, ip, sp);
            w->query = "set_company";
        }
        model_put(m, &u);
        return true;
    }
    case K_M_UPDATE_MANY: {
        if (!model_count(m, T_PERSON)) return false;
        int x = (int)below(t, 100);
        bool has = !chance(t, 30);
        const char *city = has ? CITIES[below(t, N_CITIES)] : "";
        char sp[64];
        json_prop(t, sp, sizeof sp, "c", has, city, true);
        snprintf(w->params, sizeof w->params, "{\"x\":%d%s}", x, sp);
        w->query = "set_city_older";
        size_t hit = 0;
        for (size_t i = 0; i < m->nn; i++) {
            mnode *q = &m->n[i];
            if (q->type != T_PERSON || !q->has_i || q->i <= x) continue; /* null never matches */
            q->has_s = has;
            snprintf(q->s, sizeof q->s, "%s", city);
            hit++;
        }
        *commits = hit > 0;
        return true;
    }
    case K_M_DELETE: {
        int type = (int)below(t, 2);
        if (!(p = pick_node(t, m, type))) return false;
        char key[16];
        snprintf(key, sizeof key, "%s", p->key);
        snprintf(w->params, sizeof w->params, "{\"n\":\"%s\"}", key);
        w->query = type == T_PERSON ? "drop_person" : "drop_company";
        model_del_node(m, type, key);
        return true;
    }
    case K_M_DELETE_MANY: {
        if (!model_count(m, T_PERSON)) return false;
        int x = (int)below(t, 8);
        snprintf(w->params, sizeof w->params, "{\"x\":%d}", x);
        w->query = "drop_young";
        size_t hit = 0;
        for (size_t i = 0; i < m->nn;) {
            mnode *q = &m->n[i];
            if (q->type == T_PERSON && q->has_i && q->i < x) {
                char key[16];
                snprintf(key, sizeof key, "%s", q->key);
                model_del_node(m, T_PERSON, key);
                hit++;
            } else {
                i++;
            }
        }
        *commits = hit > 0;
        return true;
    }
    case K_M_UNLINK: {
        if (!m->ne) return false;
        /* mostly a person with edges; sometimes any person */
        char key[16];
        if (chance(t, 80) || !(p = pick_node(t, m, T_PERSON)))
            snprintf(key, sizeof key, "%s", m->e[below(t, (unsigned)m->ne)].src);
        else
            snprintf(key, sizeof key, "%s", p->key);
        snprintf(w->params, sizeof w->params, "{\"p\":\"%s\"}", key);
        w->query = "unlink_from";
        *commits = model_del_edges(m, key, NULL) > 0;
        return true;
    }
    case K_L_APPEND:
    case K_L_MERGE: {
        bool merge = k == K_L_MERGE;
        w->mode = merge ? OG_LOAD_MERGE : OG_LOAD_APPEND;
        /* node rows: new keys (append), or new and existing ones (merge); no key twice */
        unsigned rows = 1 + below(t, 6);
        char written[8][16];
        unsigned nw = 0;
        for (unsigned r = 0; r < rows; r++) {
            memset(&n, 0, sizeof n);
            n.type = (int8_t)below(t, 2);
            p = merge && chance(t, 50) ? pick_node(t, m, n.type) : NULL;
            bool dup = false;
            for (unsigned j = 0; p && j < nw; j++)
                dup |= strcmp(written[j], p->key) == 0;
            if (p && !dup)
                snprintf(n.key, sizeof n.key, "%s", p->key);
            else
                fresh_key(t, m, n.type, n.key, sizeof n.key);
            random_props(t, &n);
            node_line(t, w, &n);
            model_put(m, &n); /* a merge replaces the whole row too */
            snprintf(written[nw++], sizeof written[0], "%s", n.key);
        }
        unsigned edges = below(t, 4);
        for (unsigned r = 0; r < edges; r++) {
            if (!(p = pick_node(t, m, T_PERSON)) || !(c = pick_node(t, m, T_COMPANY))) break;
            random_edge(t, &e, p->key, c->key);
            edge_line(t, w, &e);
            model_add_edge(m, &e);
        }
        return true;
    }
    case K_L_OVERWRITE: {
        w->mode = OG_LOAD_OVERWRITE;
        if (chance(t, 60)) { /* WorksAt: a random part of the edges, and new ones */
            if (!(p = pick_node(t, m, T_PERSON)) || !(c = pick_node(t, m, T_COMPANY))) return false;
            size_t kept = 0;
            for (size_t i = 0; i < m->ne; i++)
                if (chance(t, 60)) m->e[kept++] = m->e[i];
            m->ne = kept;
            unsigned more = (kept ? 0 : 1) + below(t, 3);
            for (unsigned r = 0; r < more; r++) {
                p = pick_node(t, m, T_PERSON);
                c = pick_node(t, m, T_COMPANY);
                random_edge(t, &e, p->key, c->key);
                model_add_edge(m, &e);
            }
            for (size_t i = 0; i < m->ne; i++)
                edge_line(t, w, &m->e[i]);
            return true;
        }
        /* Company: every company an edge names stays (else the load would leave edges
         * dangling), others stay or go, all get new properties, and new ones join */
        model next;
        memset(&next, 0, sizeof next);
        for (size_t i = 0; i < m->nn; i++) {
            const mnode *q = &m->n[i];
            bool named = false;
            for (size_t j = 0; q->type == T_COMPANY && j < m->ne && !named; j++)
                named = strcmp(m->e[j].dst, q->key) == 0;
            if (q->type == T_PERSON || named || chance(t, 60)) {
                mnode r = *q;
                if (q->type == T_COMPANY) random_props(t, &r);
                model_put(&next, &r);
            }
        }
        unsigned more = below(t, 3) + (model_count(&next, T_COMPANY) ? 0 : 1);
        for (unsigned r = 0; r < more; r++) {
            memset(&n, 0, sizeof n);
            n.type = T_COMPANY;
            fresh_key(t, &next, T_COMPANY, n.key, sizeof n.key);
            random_props(t, &n);
            model_put(&next, &n);
        }
        for (size_t i = 0; i < next.nn; i++)
            if (next.n[i].type == T_COMPANY) node_line(t, w, &next.n[i]);
        for (size_t i = 0; i < m->ne; i++)
            model_add_edge(&next, &m->e[i]);
        model_free(m);
        *m = next;
        return true;
    }
    }
    return false;
}

static int pick_kind(iso *t)
{
    /* weights per kind, in percent */
    static const unsigned w[K_COUNT] = {13, 6, 4, 12, 11, 3, 7, 2, 4, 17, 17, 4};
    unsigned r = below(t, 100), acc = 0;
    for (int k = 0; k < K_COUNT; k++)
        if (r < (acc += w[k])) return k;
    return K_L_APPEND;
}

/* Run the write on branch bi. 0 and the commit id ("" when nothing was committed), or the
 * failure's code. */
static int run_write(iso *t, int bi, const wreq *w, char *commit, uint64_t *mver)
{
    commit[0] = '\0';
    *mver = 0;
    if (w->query) {
        og_mutate_options mo = OG_MUTATE_OPTIONS_INIT;
        mo.source = MUTATIONS;
        mo.source_file = "iso.gq";
        mo.name = w->query;
        mo.params_json = w->params;
        mo.branch = bname(t, bi);
        og_write_result *r = NULL;
        int rc = og_graph_mutate(&r, t->g, &mo);
        if (rc) return rc;
        snprintf(commit, OG_ID_LEN + 1, "%s", og_write_result_commit_id(r));
        *mver = og_write_result_manifest_version(r);
        og_write_result_free(r);
        return 0;
    }
    if (chance(t, 50)) { /* the public call */
        t->via_api++;
        og_load_options lo = OG_LOAD_OPTIONS_INIT;
        lo.mode = w->mode;
        lo.branch = bname(t, bi);
        og_write_result *r = NULL;
        int rc = og_graph_load(&r, t->g, "iso.jsonl", w->text, w->len, &lo);
        if (rc) return rc;
        snprintf(commit, OG_ID_LEN + 1, "%s", og_write_result_commit_id(r));
        *mver = og_write_result_manifest_version(r);
        og_write_result_free(r);
        return 0;
    }
    /* the write layer: parse into a change set, write it through the handle's writer */
    t->via_layer++;
    write_graph *wg = t->g->w;
    graph_change_set cs;
    memset(&cs, 0, sizeof cs);
    exec_load_stats st;
    int rc = exec_load_parse(&cs, wg->h->catalog, w->text, w->len, "iso.jsonl",
                             (exec_load_mode)w->mode, &st, NULL, NULL);
    write_options wo = WRITE_OPTIONS_INIT;
    wo.branch = bname(t, bi);
    write_result res;
    memset(&res, 0, sizeof res);
    if (rc == 0) rc = write_changes(wg, WRITE_KIND_LOAD, &cs, &wo, &res);
    graph_change_set_clear(&cs);
    if (rc) return rc;
    if (res.committed) {
        snprintf(commit, OG_ID_LEN + 1, "%s", res.commit_id);
        *mver = res.manifest_version;
    }
    return 0;
}

/* After a commit on branch bi, the maintenance it made due (compaction of the branch's tables
 * or manifest: a content-preserving commit on that branch, and on no other) has run; record
 * the commits it added above `own`. */
static void settle(iso *t, int bi, const char *own)
{
    double t0 = now_s();
    write_maintenance_drain(t->g->w);
    t->settle_s += now_s() - t0;
    branch *b = &t->b[bi];
    char head[OG_ID_LEN + 1];
    check_heads(t, bi, head);
    if (strcmp(head, own) == 0) {
        snprintf(b->head, sizeof b->head, "%s", own);
        return;
    }
    og_commit_list *l = NULL;
    assert_og_ok(og_graph_commits(
        &l, t->g, &(og_commit_options){.version = OG_COMMIT_OPTIONS_VERSION, .branch = b->name}));
    size_t n = og_commit_list_count(l), at = n;
    for (size_t i = 0; i < n && at == n; i++)
        if (strcmp(og_commit_list_get(l, i)->id, own) == 0) at = i;
    if (at == n) ISO_FAIL(t, bi, "the branch's commits do not list the write's commit %s", own);
    for (size_t i = at; i-- > 0;) {
        const og_commit_info *ci = og_commit_list_get(l, i);
        if (ci->actor) ISO_FAIL(t, bi, "commit %s above the write has an actor", ci->id);
        lineage_push(b, record_commit(t, ci->id, ci->manifest_version, bi, &b->cur));
        t->maint_commits++;
    }
    snprintf(b->head, sizeof b->head, "%s", og_commit_list_get(l, 0)->id);
    og_commit_list_free(l);
    if (strcmp(head, b->head) != 0) ISO_FAIL(t, bi, "the branch's head %s is not its newest", head);
}

static void wreq_clear(wreq *w)
{
    free(w->text);
    memset(w, 0, sizeof *w);
}

/* One committed write (or, when the branch's model has nothing the kind needs or the write
 * would commit nothing, a retry with another kind; an empty write is still run and must
 * commit nothing). */
static void one_write(iso *t)
{
    int bi = (int)below(t, (unsigned)t->nb);
    branch *b = &t->b[bi];
    for (;;) {
        int k = pick_kind(t);
        model next;
        model_copy(&next, &b->cur);
        wreq w;
        memset(&w, 0, sizeof w);
        bool commits = true;
        if (!make_write(t, k, &next, &w, &commits)) {
            model_free(&next);
            wreq_clear(&w);
            continue;
        }
        char commit[OG_ID_LEN + 1];
        uint64_t mver = 0;
        double t0 = now_s();
        int rc = run_write(t, bi, &w, commit, &mver);
        t->write_s += now_s() - t0;
        if (rc)
            ISO_FAIL(t, bi, "%s failed: %s: %s\n  %s%s", KIND_NAME[k], og_code_name(rc),
                     og_error_last()->message, w.query ? w.query : "load:\n",
                     w.query ? w.params : w.text);
        if (!commits) {
            /* an update or delete that matched nothing: no commit, no head moved */
            if (commit[0])
                ISO_FAIL(t, bi, "%s matching nothing committed %s", KIND_NAME[k], commit);
            check_heads(t, -1, NULL);
            t->noops++;
            model_free(&next);
            wreq_clear(&w);
            continue;
        }
        if (!commit[0])
            ISO_FAIL(t, bi, "%s committed nothing\n  %s%s", KIND_NAME[k],
                     w.query ? w.query : "load:\n", w.query ? w.params : w.text);
        model_free(&b->cur);
        b->cur = next;
        lineage_push(b, record_commit(t, commit, mver, bi, &b->cur));
        settle(t, bi, commit);
        t->counts[k][bi]++;
        b->writes++;
        wreq_clear(&w);
        return;
    }
}

/* A write that must be refused, or commit nothing, leaving every head where it was. */
static void one_refusal(iso *t)
{
    int bi = (int)below(t, (unsigned)t->nb);
    const model *m = &t->b[bi].cur;
    wreq w;
    memset(&w, 0, sizeof w);
    int want;
    const mnode *p;
    unsigned r = below(t, 3);
    if (r == 0 && (p = pick_node(t, m, (int)below(t, 2)))) {
        /* append of a key the branch has (after a new one: nothing of it may land) */
        mnode n;
        memset(&n, 0, sizeof n);
        n.type = (int8_t)(p->type == T_PERSON ? T_COMPANY : T_PERSON);
        fresh_key(t, m, n.type, n.key, sizeof n.key);
        random_props(t, &n);
        node_line(t, &w, &n);
        n = *p;
        random_props(t, &n);
        node_line(t, &w, &n);
        w.mode = OG_LOAD_APPEND;
        want = OG_E_KEY_CONFLICT;
    } else if (r == 1 && (p = pick_node(t, m, T_COMPANY))) {
        /* an edge from a person this branch lacks (maybe another branch has it) */
        char key[16];
        fresh_key(t, m, T_PERSON, key, sizeof key);
        snprintf(w.params, sizeof w.params, "{\"p\":\"%s\",\"c\":\"%s\"}", key, p->key);
        w.query = "link";
        want = OG_E_BAD_REQUEST;
    } else {
        /* an update of a key the branch lacks: nothing matches, nothing commits */
        char key[16];
        fresh_key(t, m, T_PERSON, key, sizeof key);
        snprintf(w.params, sizeof w.params, "{\"n\":\"%s\",\"a\":7}", key);
        w.query = "set_age";
        want = 0;
    }
    char commit[OG_ID_LEN + 1];
    uint64_t mver;
    int rc = run_write(t, bi, &w, commit, &mver);
    if (rc != want)
        ISO_FAIL(t, bi, "refusal: expected %s, got %s: %s\n  %s%s", og_code_name(want),
                 og_code_name(rc), og_error_last()->message, w.query ? w.query : "load:\n",
                 w.query ? w.params : w.text);
    if (rc == 0 && commit[0]) ISO_FAIL(t, bi, "an update matching nothing committed %s", commit);
    check_heads(t, -1, NULL);
    if (rc)
        t->refused++;
    else
        t->noops++;
    wreq_clear(&w);
}

/* ---- branches ------------------------------------------------------------------------------- */

/* Create branch `name` from branch `from` at its head, or at an older commit of it. */
static void create_branch(iso *t, const char *name, int from, bool older, bool public_api)
{
    assert_true(t->nb < MAX_BRANCHES);
    branch *pb = &t->b[from];
    size_t upto = pb->nl - 1; /* the position in from's lineage forked at */
    char at[OG_ID_LEN + 1] = "";
    if (older) {
        assert_true(pb->nl > 1);
        upto = below(t, (unsigned)pb->nl - 1);
        const crec *c = &t->c[pb->lineage[upto]];
        /* its own commits by id or by manifest version; inherited ones by id */
        if (c->branch == from && chance(t, 40))
            snprintf(at, sizeof at, "%llu", (unsigned long long)c->mver);
        else
            snprintf(at, sizeof at, "%s", c->id);
    }
    const crec *fork = &t->c[pb->lineage[upto]];
    char head[OG_ID_LEN + 1], forked[OG_ID_LEN + 1];
    if (public_api) {
        og_branch_options bo = OG_BRANCH_OPTIONS_INIT;
        bo.from = pb->name;
        bo.at = at[0] ? at : NULL;
        og_branch_info *info = NULL;
        int rc = og_graph_create_branch(&info, t->g, name, &bo);
        if (rc) ISO_FAIL(t, from, "create %s: %s", name, og_error_last()->message);
        snprintf(head, sizeof head, "%s", info->head);
        snprintf(forked, sizeof forked, "%s", info->forked_from);
        og_branch_info_free(info);
    } else {
        write_branch_info info;
        int rc = write_branch_create(t->g->w, name, pb->name, at[0] ? at : NULL, &info);
        if (rc) ISO_FAIL(t, from, "create %s: %s", name, og_error_last()->message);
        snprintf(head, sizeof head, "%s", info.head);
        snprintf(forked, sizeof forked, "%s", info.forked_from);
    }
    if (strcmp(head, fork->id) != 0 || strcmp(forked, fork->id) != 0)
        ISO_FAIL(t, from, "branch %s forked at %s (head %s), expected %s", name, forked, head,
                 fork->id);
    print_message("write %u: branch %s from %s at %s%s (%s)\n", t->idx, name, pb->name,
                  at[0] ? at : "its head", at[0] ? "" : "", fork->id);
    branch *nb = &t->b[t->nb];
    memset(nb, 0, sizeof *nb);
    snprintf(nb->name, sizeof nb->name, "%s", name);
    model_copy(&nb->cur, &fork->m);
    snprintf(nb->head, sizeof nb->head, "%s", fork->id);
    for (size_t i = 0; i <= upto; i++)
        lineage_push(nb, pb->lineage[i]);
    t->nb++;
    check_heads(t, -1, NULL); /* a create makes no commit anywhere */
    check_branch(t, t->nb - 1, 2);
}

/* ---- the test ------------------------------------------------------------------------------- */

static void test_random_writes_over_branches(void **state)
{
    (void)state;
    iso *t = calloc(1, sizeof *t);
    assert_non_null(t);
    t->seed = 0x1509017ull;
    const char *env = getenv("OG_ISO_SEED");
    if (env && *env) t->seed = strtoull(env, NULL, 0);
    t->rng = t->seed;
    unsigned n_writes = 1000;
    env = getenv("OG_ISO_WRITES");
    if (env && *env) n_writes = (unsigned)strtoul(env, NULL, 0);
    print_message("seed %llu (OG_ISO_SEED overrides), %u writes\n", (unsigned long long)t->seed,
                  n_writes);
    double t0 = now_s();

    test_sandbox_new(t->dir, sizeof t->dir, "branch-iso");
    og_init_options io = OG_INIT_OPTIONS_INIT;
    io.schema_source = SCHEMA;
    og_init_result *ir = NULL;
    assert_og_ok(og_root_init(&ir, t->dir, &io));
    og_open_options oo = OG_OPEN_OPTIONS_INIT;
    oo.actor = "iso"; /* user commits carry it; maintenance commits none */
    assert_og_ok(og_graph_open(&t->g, t->dir, &oo));
    t->nb = 1;
    snprintf(t->b[0].name, sizeof t->b[0].name, "main");
    snprintf(t->b[0].head, sizeof t->b[0].head, "%s", ir->commit_id);
    lineage_push(&t->b[0], record_commit(t, ir->commit_id, 0, 0, &t->b[0].cur));
    og_init_result_free(ir);

    /* when the branches are made: dev early from main, feature/x later from dev at its head,
     * hotfix later still from any branch at an older commit of it */
    unsigned at_dev = n_writes * 2 / 100 + below(t, n_writes * 4 / 100 + 1);
    unsigned at_feature = n_writes * 25 / 100 + below(t, n_writes * 10 / 100 + 1);
    unsigned at_hotfix = n_writes * 50 / 100 + below(t, n_writes * 15 / 100 + 1);
    unsigned next_check = 100;

    for (t->idx = 0; t->idx < n_writes;) {
        if (t->idx == at_dev && t->nb == 1) create_branch(t, "dev", 0, false, false);
        if (t->idx == at_feature && t->nb == 2) create_branch(t, "feature/x", 1, false, true);
        if (t->idx == at_hotfix && t->nb == 3) {
            int from = (int)below(t, 3);
            create_branch(t, "hotfix", from, true, chance(t, 50));
        }
        if (chance(t, 4)) {
            one_refusal(t);
            continue;
        }
        one_write(t);
        t->idx++;
        if (t->idx >= next_check) {
            next_check += 100;
            check_branch(t, (int)below(t, (unsigned)t->nb), 3);
        }
    }
    double t1 = now_s();
    for (int bi = 0; bi < t->nb; bi++)
        check_branch(t, bi, 6);
    /* and again through a fresh read-only handle: nothing cached, nothing recovered */
    og_graph_close(t->g);
    og_open_options ro = OG_OPEN_OPTIONS_INIT;
    ro.read_only = 1;
    assert_og_ok(og_graph_open(&t->g, t->dir, &ro));
    for (int bi = 0; bi < t->nb; bi++) {
        check_content(t, bi, NULL, &t->b[bi].cur);
        check_lineage(t, bi);
        check_travel(t, bi, 3);
    }
    double t2 = now_s();

    print_message("writes per branch:");
    for (int bi = 0; bi < t->nb; bi++)
        print_message(" %s %u,", t->b[bi].name, t->b[bi].writes);
    print_message(" refused %u, empty %u, maintenance commits %u\n", t->refused, t->noops,
                  t->maint_commits);
    for (int k = 0; k < K_COUNT; k++) {
        print_message("  %-14s", KIND_NAME[k]);
        unsigned sum = 0;
        for (int bi = 0; bi < t->nb; bi++) {
            print_message(" %5u", t->counts[k][bi]);
            sum += t->counts[k][bi];
        }
        print_message("  = %u\n", sum);
    }
    print_message(
        "loads through og_graph_load %u, through the write layer %u; %u branch checks, "
        "%u time-travel reads; writes %.1f s (in the write calls %.1f s, head checks %.1f s, "
        "waiting for maintenance %.1f s), final checks %.1f s\n",
        t->via_api, t->via_layer, t->checks, t->travels, t1 - t0, t->write_s, t->heads_s,
        t->settle_s, t2 - t1);

    og_graph_close(t->g);
    og_verify_report *vr = NULL;
    assert_og_ok(og_root_verify(&vr, t->dir, NULL));
    for (size_t i = 0; i < og_verify_report_problem_count(vr); i++)
        print_error("verify: %s %s: %s\n", og_verify_report_problem(vr, i)->kind,
                    og_verify_report_problem(vr, i)->object,
                    og_verify_report_problem(vr, i)->message);
    assert_int_equal(og_verify_report_problem_count(vr), 0);
    og_verify_report_free(vr);
    wf_assert_sound(t->dir);

    for (int bi = 0; bi < t->nb; bi++) {
        model_free(&t->b[bi].cur);
        free(t->b[bi].lineage);
    }
    for (size_t i = 0; i < t->nc; i++)
        model_free(&t->c[i].m);
    free(t->c);
    test_sandbox_done(t->dir);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_writes_over_branches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
