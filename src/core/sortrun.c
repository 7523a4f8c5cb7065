/* Sorted runs (sortrun.h): records [u32 klen][u32 alen][u64 line][key][aux], gathered in one
 * buffer, sorted through an array of offsets, written run after run to one nameless file and
 * merged back with a binary heap over one small read buffer per run. */
#include "core/sortrun.h"

#include "core/alloc.h"
#include "core/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REC_HDR 16u
#define SORTRUN_BUDGET_DEFAULT ((size_t)8 << 20)
#define WRITE_BUF ((size_t)256 << 10)
/* Runs merged at once: past this many, a sorter merges its runs into one as it adds (so a
 * merge never holds more than FANIN read buffers, whatever the number of records). */
#define FANIN 32

static _Atomic int64_t g_held;
static _Atomic int64_t g_peak;

void core_sortrun_account(int64_t delta)
{
    int64_t now = atomic_fetch_add(&g_held, delta) + delta;
    int64_t peak = atomic_load(&g_peak);
    while (now > peak && !atomic_compare_exchange_weak(&g_peak, &peak, now)) {
    }
}

uint64_t core_sortrun_held(void)
{
    int64_t h = atomic_load(&g_held);
    return h > 0 ? (uint64_t)h : 0;
}

uint64_t core_sortrun_peak(void)
{
    int64_t p = atomic_load(&g_peak);
    return p > 0 ? (uint64_t)p : 0;
}

void core_sortrun_reset_peak(void)
{
    atomic_store(&g_peak, atomic_load(&g_held));
}

typedef struct run {
    uint64_t off, len;
} run;

/* A record of the buffer: its offset and its key's first 8 bytes as a big-endian number
 * (zero-padded), which decides most comparisons without reading the record. */
typedef struct slot {
    uint64_t pfx;
    size_t off;
} slot;

struct core_sortrun {
    size_t budget;
    uint8_t *buf; /* records of the current buffer */
    size_t len, cap;
    slot *at; /* the buffer's records: offsets, with their keys' first bytes */
    size_t n, cap_at;
    bool buf_sorted; /* the buffer's records were added in order */
    int fd;          /* -1 until the first run */
    uint64_t file_len;
    run *runs;
    size_t n_runs, cap_runs;
    uint64_t count;
    bool increasing;
    uint8_t *last; /* the last key added (for `increasing` across runs) */
    size_t last_len, last_cap;
    int64_t held; /* what this sorter accounted */
};

/* The read buffer of one run in a merge: a sixteenth of the budget, within 4-64 KiB. */
static size_t read_buf(const core_sortrun *s)
{
    size_t b = s->budget / 16;
    return b < 4096 ? 4096 : b > ((size_t)64 << 10) ? (size_t)64 << 10 : b;
}

static void account_to(int64_t *held, int64_t now)
{
    core_sortrun_account(now - *held);
    *held = now;
}

static void sorter_account(core_sortrun *s)
{
    account_to(&s->held, (int64_t)(s->cap + s->cap_at * sizeof *s->at + s->last_cap +
                                   s->cap_runs * sizeof *s->runs));
}

static void rec_decode(const uint8_t *p, core_sortrun_rec *r)
{
    uint32_t kl, al;
    memcpy(&kl, p, 4);
    memcpy(&al, p + 4, 4);
    memcpy(&r->line, p + 8, 8);
    r->key = p + REC_HDR;
    r->klen = kl;
    r->aux = p + REC_HDR + kl;
    r->alen = al;
}

static size_t rec_size(const uint8_t *p)
{
    uint32_t kl, al;
    memcpy(&kl, p, 4);
    memcpy(&al, p + 4, 4);
    return REC_HDR + (size_t)kl + al;
}

static int key_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    if (c) return c;
    return an < bn ? -1 : an > bn;
}

static int rec_cmp(const core_sortrun_rec *a, const core_sortrun_rec *b)
{
    int c = key_cmp(a->key, a->klen, b->key, b->klen);
    if (c) return c;
    return a->line < b->line ? -1 : a->line > b->line;
}

static int rec_cmp_at(const uint8_t *pa, const uint8_t *pb)
{
    core_sortrun_rec a, b;
    rec_decode(pa, &a);
    rec_decode(pb, &b);
    return rec_cmp(&a, &b);
}

static int cmp_slot(const void *x, const void *y, void *base)
{
    const slot *a = x, *b = y;
    if (a->pfx != b->pfx) return a->pfx < b->pfx ? -1 : 1;
    const uint8_t *buf = base;
    return rec_cmp_at(buf + a->off, buf + b->off);
}

static uint64_t key_prefix(const uint8_t *k, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < 8; i++)
        v = (v << 8) | (i < n ? k[i] : 0);
    return v;
}

int core_sortrun_new(core_sortrun **out, size_t budget)
{
    core_sortrun *s = core_calloc(1, sizeof *s);
    if (!s) return core_err_nomem();
    s->budget = budget ? budget : SORTRUN_BUDGET_DEFAULT;
    s->fd = -1;
    s->increasing = true;
    s->buf_sorted = true;
    *out = s;
    return 0;
}

void core_sortrun_free(core_sortrun *s)
{
    if (!s) return;
    if (s->fd >= 0) close(s->fd);
    core_free(s->buf);
    core_free(s->at);
    core_free(s->runs);
    core_free(s->last);
    account_to(&s->held, 0);
    core_free(s);
}

uint64_t core_sortrun_count(const core_sortrun *s)
{
    return s ? s->count : 0;
}

bool core_sortrun_increasing(const core_sortrun *s)
{
    return !s || s->increasing;
}

size_t core_sortrun_runs(const core_sortrun *s)
{
    return s ? s->n_runs : 0;
}

/* The nameless file the runs go to. */
static int open_file(core_sortrun *s)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
#ifdef O_TMPFILE
    s->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (s->fd >= 0) return 0;
#endif
    char path[4096];
    snprintf(path, sizeof path, "%s/omnigraph-sort-XXXXXX", dir);
    s->fd = mkostemp(path, O_CLOEXEC);
    if (s->fd < 0)
        return core_err(OG_E_STORAGE, "cannot create a temporary file in %s: %s (set TMPDIR)", dir,
                        strerror(errno));
    unlink(path);
    return 0;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0)
            return core_err(errno == ENOSPC ? OG_E_RESOURCE_LIMIT : OG_E_STORAGE,
                            "cannot write a temporary sort file: %s",
                            w < 0 ? strerror(errno) : "short write");
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Sort the buffer's records (unless they came in order). */
static void sort_buffer(core_sortrun *s)
{
    if (!s->buf_sorted) qsort_r(s->at, s->n, sizeof *s->at, cmp_slot, s->buf);
    s->buf_sorted = true;
}

/* Records written out through a buffer, at the end of the file. */
typedef struct writer {
    core_sortrun *s;
    uint8_t *wb;
    size_t wn;
} writer;

static int writer_put(writer *w, const uint8_t *p, size_t sz)
{
    core_sortrun *s = w->s;
    int rc = 0;
    if (w->wn + sz > WRITE_BUF && w->wn) {
        rc = write_all(s->fd, w->wb, w->wn);
        s->file_len += w->wn;
        w->wn = 0;
    }
    if (rc == 0 && sz > WRITE_BUF) {
        rc = write_all(s->fd, p, sz);
        s->file_len += sz;
    } else if (rc == 0) {
        memcpy(w->wb + w->wn, p, sz);
        w->wn += sz;
    }
    return rc;
}

static int writer_end(writer *w, int rc)
{
    if (rc == 0 && w->wn) {
        rc = write_all(w->s->fd, w->wb, w->wn);
        w->s->file_len += w->wn;
    }
    core_free(w->wb);
    return rc;
}

static int add_run(core_sortrun *s, uint64_t start)
{
    if (s->n_runs == s->cap_runs) {
        size_t cap = s->cap_runs ? s->cap_runs * 2 : 16;
        run *r = core_realloc(s->runs, cap * sizeof *r);
        if (!r) return core_err_nomem();
        s->runs = r;
        s->cap_runs = cap;
        sorter_account(s);
    }
    s->runs[s->n_runs++] = (run){start, s->file_len - start};
    return 0;
}

static int merge_runs(core_sortrun *s);

/* The buffer as one more run. */
static int flush(core_sortrun *s)
{
    if (!s->n) return 0;
    int rc = s->fd < 0 ? open_file(s) : 0;
    if (rc) return rc;
    sort_buffer(s);
    writer w = {s, core_malloc(WRITE_BUF), 0};
    if (!w.wb) return core_err_nomem();
    uint64_t start = s->file_len;
    for (size_t i = 0; rc == 0 && i < s->n; i++) {
        const uint8_t *p = s->buf + s->at[i].off;
        rc = writer_put(&w, p, rec_size(p));
    }
    rc = writer_end(&w, rc);
    if (rc == 0) rc = add_run(s, start);
    if (rc) return rc;
    s->len = 0;
    s->n = 0;
    s->buf_sorted = true;
    return s->n_runs >= FANIN ? merge_runs(s) : 0;
}

int core_sortrun_add(core_sortrun *s, const void *key, size_t klen, uint64_t line, const void *aux,
                     size_t alen)
{
    if (klen > UINT32_MAX || alen > UINT32_MAX)
        return core_err(OG_E_RESOURCE_LIMIT, "a sort record of %zu bytes", klen + alen);
    size_t sz = REC_HDR + klen + alen;
    if (s->n && s->len + sz > s->budget) {
        int rc = flush(s);
        if (rc) return rc;
    }
    if (s->len + sz > s->cap) {
        size_t cap = s->cap ? s->cap : ((size_t)64 << 10);
        while (cap < s->len + sz)
            cap *= 2;
        if (cap > s->budget && s->len + sz <= s->budget) cap = s->budget;
        uint8_t *b = core_realloc(s->buf, cap);
        if (!b) return core_err_nomem();
        s->buf = b;
        s->cap = cap;
        sorter_account(s);
    }
    if (s->n == s->cap_at) {
        size_t cap = s->cap_at ? s->cap_at * 2 : 1024;
        slot *a = core_realloc(s->at, cap * sizeof *a);
        if (!a) return core_err_nomem();
        s->at = a;
        s->cap_at = cap;
        sorter_account(s);
    }
    uint8_t *p = s->buf + s->len;
    uint32_t kl = (uint32_t)klen, al = (uint32_t)alen;
    memcpy(p, &kl, 4);
    memcpy(p + 4, &al, 4);
    memcpy(p + 8, &line, 8);
    if (klen) memcpy(p + REC_HDR, key, klen);
    if (alen) memcpy(p + REC_HDR + klen, aux, alen);
    if (s->buf_sorted && s->n && rec_cmp_at(s->buf + s->at[s->n - 1].off, p) > 0)
        s->buf_sorted = false;
    if (s->increasing && s->count && key_cmp(s->last, s->last_len, key, klen) >= 0)
        s->increasing = false;
    if (s->increasing) {
        if (klen > s->last_cap) {
            size_t cap = klen < 64 ? 64 : klen;
            uint8_t *l = core_realloc(s->last, cap);
            if (!l) return core_err_nomem();
            s->last = l;
            s->last_cap = cap;
            sorter_account(s);
        }
        if (klen) memcpy(s->last, key, klen);
        s->last_len = klen;
    }
    s->at[s->n++] = (slot){key_prefix(key, klen), s->len};
    s->len += sz;
    s->count++;
    return 0;
}

/* ---- the merge ---------------------------------------------------------------------------- */

typedef struct reader {
    uint64_t off, end; /* what is left of the run in the file */
    uint8_t *buf;
    size_t cap, pos, have;
    core_sortrun_rec cur;
} reader;

struct core_sortrun_iter {
    core_sortrun *s;
    size_t next_mem; /* in-memory iteration: the next record */
    reader *r;
    size_t nr;
    size_t *heap; /* reader indexes, smallest current record first */
    size_t nh;
    bool started;
    int64_t held;
};

/* Decode the reader's next record into cur: 0 with *eof set when the run is done. */
static int reader_next(core_sortrun_iter *it, reader *r, bool *eof)
{
    *eof = false;
    for (;;) {
        size_t left = r->have - r->pos;
        if (left >= REC_HDR) {
            size_t sz = rec_size(r->buf + r->pos);
            if (left >= sz) {
                rec_decode(r->buf + r->pos, &r->cur);
                r->pos += sz;
                return 0;
            }
            if (sz > r->cap) {
                uint8_t *b = core_malloc(sz);
                if (!b) return core_err_nomem();
                memcpy(b, r->buf + r->pos, left);
                core_free(r->buf);
                account_to(&it->held, it->held + (int64_t)sz - (int64_t)r->cap);
                r->buf = b;
                r->cap = sz;
                r->pos = 0;
                r->have = left;
            }
        }
        if (r->off >= r->end) {
            if (left) return core_err(OG_E_CORRUPT, "a temporary sort file ends in a record");
            *eof = true;
            return 0;
        }
        memmove(r->buf, r->buf + r->pos, left);
        r->pos = 0;
        r->have = left;
        size_t want = r->cap - r->have;
        if ((uint64_t)want > r->end - r->off) want = (size_t)(r->end - r->off);
        ssize_t got = pread(it->s->fd, r->buf + r->have, want, (off_t)r->off);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0)
            return core_err(OG_E_STORAGE, "cannot read a temporary sort file: %s",
                            got < 0 ? strerror(errno) : "short read");
        r->off += (uint64_t)got;
        r->have += (size_t)got;
    }
}

static bool heap_less(const core_sortrun_iter *it, size_t a, size_t b)
{
    int c = rec_cmp(&it->r[a].cur, &it->r[b].cur);
    return c < 0 || (c == 0 && a < b);
}

static void heap_down(core_sortrun_iter *it, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < it->nh && heap_less(it, it->heap[l], it->heap[m])) m = l;
        if (l + 1 < it->nh && heap_less(it, it->heap[l + 1], it->heap[m])) m = l + 1;
        if (m == i) return;
        size_t t = it->heap[i];
        it->heap[i] = it->heap[m];
        it->heap[m] = t;
        i = m;
    }
}

int core_sortrun_iter_open(core_sortrun_iter **out, core_sortrun *s)
{
    *out = NULL;
    int rc = s->n_runs ? flush(s) : 0; /* on disk already: the buffer joins the runs */
    if (rc) return rc;
    if (!s->n_runs) sort_buffer(s);
    core_sortrun_iter *it = core_calloc(1, sizeof *it);
    if (!it) return core_err_nomem();
    it->s = s;
    if (s->n_runs) {
        it->r = core_calloc(s->n_runs, sizeof *it->r);
        it->heap = core_malloc(s->n_runs * sizeof *it->heap);
        if (!it->r || !it->heap) rc = core_err_nomem();
        it->nr = rc ? 0 : s->n_runs;
        account_to(&it->held, (int64_t)(s->n_runs * (sizeof *it->r + sizeof *it->heap)));
        for (size_t i = 0; rc == 0 && i < it->nr; i++) {
            reader *r = &it->r[i];
            r->off = s->runs[i].off;
            r->end = s->runs[i].off + s->runs[i].len;
            r->cap = read_buf(s);
            if (!(r->buf = core_malloc(r->cap))) rc = core_err_nomem();
            if (rc == 0) account_to(&it->held, it->held + (int64_t)r->cap);
        }
    }
    if (rc) {
        core_sortrun_iter_free(it);
        return rc;
    }
    *out = it;
    return 0;
}

int core_sortrun_iter_next(core_sortrun_iter *it, core_sortrun_rec *rec, bool *done)
{
    core_sortrun *s = it->s;
    *done = false;
    if (!s->n_runs) {
        if (it->next_mem >= s->n) {
            *done = true;
            return 0;
        }
        rec_decode(s->buf + s->at[it->next_mem++].off, rec);
        return 0;
    }
    int rc;
    bool eof;
    if (!it->started) {
        it->started = true;
        for (size_t i = 0; i < it->nr; i++) {
            if ((rc = reader_next(it, &it->r[i], &eof))) return rc;
            if (!eof) it->heap[it->nh++] = i;
        }
        for (size_t i = it->nh / 2; i-- > 0;)
            heap_down(it, i);
    } else if (it->nh) {
        /* the record returned last is consumed now: its reader moves on */
        size_t top = it->heap[0];
        if ((rc = reader_next(it, &it->r[top], &eof))) return rc;
        if (eof) it->heap[0] = it->heap[--it->nh];
        heap_down(it, 0);
    }
    if (!it->nh) {
        *done = true;
        return 0;
    }
    *rec = it->r[it->heap[0]].cur;
    return 0;
}

void core_sortrun_iter_free(core_sortrun_iter *it)
{
    if (!it) return;
    for (size_t i = 0; it->r && i < it->nr; i++)
        core_free(it->r[i].buf);
    core_free(it->r);
    core_free(it->heap);
    account_to(&it->held, 0);
    core_free(it);
}

/* Every run merged into one, written after them; the space they held goes back to the file
 * system where it can (a hole punched). */
static int merge_runs(core_sortrun *s)
{
    core_sortrun_iter *it;
    int rc = core_sortrun_iter_open(&it, s);
    if (rc) return rc;
    writer w = {s, core_malloc(WRITE_BUF), 0};
    if (!w.wb) rc = core_err_nomem();
    uint64_t start = s->file_len, old_from = s->runs[0].off;
    while (rc == 0) {
        core_sortrun_rec r;
        bool done;
        if ((rc = core_sortrun_iter_next(it, &r, &done)) || done) break;
        /* the record is whole in its reader's buffer: header, key, aux in a row */
        const uint8_t *p = r.key - REC_HDR;
        rc = writer_put(&w, p, REC_HDR + r.klen + r.alen);
    }
    core_sortrun_iter_free(it);
    rc = w.wb ? writer_end(&w, rc) : rc;
    if (rc) return rc;
#ifdef FALLOC_FL_PUNCH_HOLE
    (void)fallocate(s->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)old_from,
                    (off_t)(start - old_from));
#else
    (void)old_from;
#endif
    s->n_runs = 0;
    return add_run(s, start);
}
