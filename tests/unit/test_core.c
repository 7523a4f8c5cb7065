/* Unit tests for src/core: errors, allocation hooks, arena, buffers, ULIDs, JSON, hashing,
 * clocks and failpoints. */
#include "testutil.h"

#include "core/alloc.h"
#include "core/arena.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/failpoint.h"
#include "core/hash.h"
#include "core/json.h"
#include "core/log.h"
#include "core/ulid.h"

#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_version(void **state)
{
    (void)state;
    assert_string_equal(og_version(), OG_VERSION_STRING);
    assert_int_equal(og_version_number(), OG_VERSION_NUMBER);
}

static void test_error_model(void **state)
{
    (void)state;
    og_error_clear();
    assert_int_equal(og_error_last()->code, OG_OK);
    assert_string_equal(og_error_last()->message, "");
    int rc = core_err(OG_E_READ_SET_CONFLICT, "table %s moved", "nodes/Person");
    assert_int_equal(rc, OG_E_READ_SET_CONFLICT);
    core_err_detail(CORE_ERR_MEMBER, "nodes/Person");
    core_err_detail(CORE_ERR_EXPECTED, "7");
    core_err_detail(CORE_ERR_ACTUAL, "8");
    const og_error *e = og_error_last();
    assert_int_equal(e->code, OG_E_READ_SET_CONFLICT);
    assert_string_equal(e->message, "table nodes/Person moved");
    assert_string_equal(e->member, "nodes/Person");
    assert_string_equal(e->expected, "7");
    assert_string_equal(e->actual, "8");
    assert_null(e->key);
    /* A new error clears old details. */
    core_err_at("q.gq", 3, 14, "unexpected token");
    assert_int_equal(e->code, OG_E_BAD_REQUEST);
    assert_null(e->member);
    assert_string_equal(e->file, "q.gq");
    assert_int_equal(e->line, 3);
    assert_int_equal(e->column, 14);
    core_err_prefix("parsing %s", "q.gq");
    assert_string_equal(e->message, "parsing q.gq: unexpected token");
    core_err_storage(28, "a/b", "writing %s", "a/b");
    assert_int_equal(e->storage_kind, OG_STORAGE_NO_SPACE);
    assert_int_equal(e->sys_errno, 28);
    assert_string_equal(e->object, "a/b");
    assert_non_null(strstr(e->message, "writing a/b: "));
    /* Every code has a distinct name. */
    for (int a = OG_E_INTERNAL; a <= OG_ITER_OVER; a++) {
        assert_string_not_equal(og_code_name(a), "unknown");
        for (int b = a + 1; b <= OG_ITER_OVER; b++)
            assert_string_not_equal(og_code_name(a), og_code_name(b));
    }
    assert_string_equal(og_code_name(OG_ITER_OVER), "iter_over");
    assert_string_equal(og_code_name(-999), "unknown");
    assert_string_equal(og_storage_kind_name(OG_STORAGE_CRASHED), "crashed");
}

static void *other_thread(void *arg)
{
    (void)arg;
    core_err(OG_E_CORRUPT, "in another thread");
    return NULL;
}

static void test_error_is_per_thread(void **state)
{
    (void)state;
    core_err(OG_E_NOT_FOUND, "here");
    pthread_t t;
    pthread_create(&t, NULL, other_thread, NULL);
    pthread_join(t, NULL);
    assert_int_equal(og_error_last()->code, OG_E_NOT_FOUND);
    assert_string_equal(og_error_last()->message, "here");
}

static void test_alloc_fail_nth(void **state)
{
    (void)state;
    core_alloc_fail_at(2, 0);
    void *a = core_malloc(8);
    void *b = core_malloc(8);
    void *c = core_malloc(8);
    assert_non_null(a);
    assert_null(b);
    assert_non_null(c);
    assert_int_equal(core_alloc_injected(), 1);
    core_free(a);
    core_free(c);
    core_alloc_fail_at(1, 1);
    assert_null(core_malloc(1));
    assert_null(core_strdup("x"));
    core_alloc_fail_at(0, 0);
    char *d = core_strdup("ok");
    assert_string_equal(d, "ok");
    core_free(d);
    size_t out;
    assert_int_equal(core_size_mul(&out, SIZE_MAX / 2, 3), -1);
    assert_int_equal(core_size_add(&out, 1, 2), 0);
    assert_int_equal(out, 3);
}

static void test_arena(void **state)
{
    (void)state;
    core_arena a;
    core_arena_init(&a, 64);
    char *s = core_arena_strdup(&a, "hello");
    assert_string_equal(s, "hello");
    for (int i = 0; i < 1000; i++) {
        int *p = core_arena_calloc(&a, 3, sizeof(int));
        assert_non_null(p);
        assert_int_equal(((uintptr_t)p) % _Alignof(max_align_t), 0);
        assert_int_equal(p[0] + p[1] + p[2], 0);
        p[2] = i;
    }
    char *big = core_arena_alloc(&a, 100000); /* bigger than a chunk */
    assert_non_null(big);
    memset(big, 1, 100000);
    char *f = core_arena_sprintf(&a, "%d-%s", 42, "x");
    assert_string_equal(f, "42-x");
    assert_string_equal(s, "hello");
    assert_null(core_arena_calloc(&a, SIZE_MAX / 2, 4));
    assert_int_equal(og_error_last()->code, OG_E_RESOURCE_LIMIT);
    core_alloc_fail_at(1, 0);
    core_arena b;
    core_arena_init(&b, 0);
    assert_null(core_arena_alloc(&b, 10));
    assert_int_equal(og_error_last()->code, OG_E_NOMEM);
    core_alloc_fail_at(0, 0);
    core_arena_free(&b);
    core_arena_free(&a);
}

/* Blocks past 4 MiB move by hand into huge-page-advised memory when they grow: the content
 * survives every growth and a shrink, and an injected failure leaves the block intact. */
static void test_large_realloc(void **state)
{
    (void)state;
    size_t n = (size_t)1 << 20;
    unsigned char *p = core_malloc(n);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 31 + 7);
    size_t filled = n;
    while (n < ((size_t)64 << 20)) {
        n *= 2;
        p = core_realloc(p, n);
        assert_non_null(p);
        for (size_t i = 0; i < filled; i += 4093)
            assert_int_equal(p[i], (unsigned char)(i * 31 + 7));
        assert_int_equal(p[filled - 1], (unsigned char)((filled - 1) * 31 + 7));
        for (size_t i = filled; i < n; i++)
            p[i] = (unsigned char)(i * 31 + 7);
        filled = n;
    }
    core_alloc_fail_at(1, 0);
    assert_null(core_realloc(p, n * 2));
    core_alloc_fail_at(0, 0);
    assert_int_equal(p[n - 1], (unsigned char)((n - 1) * 31 + 7));
    p = core_realloc(p, (size_t)8 << 20); /* shrink within the large range */
    assert_non_null(p);
    for (size_t i = 0; i < ((size_t)8 << 20); i += 4093)
        assert_int_equal(p[i], (unsigned char)(i * 31 + 7));
    unsigned char *z = core_calloc((size_t)6 << 20, 1);
    assert_non_null(z);
    for (size_t i = 0; i < ((size_t)6 << 20); i += 4096)
        assert_int_equal(z[i], 0);
    core_free(z);
    core_free(p);
}

static void test_buf(void **state)
{
    (void)state;
    core_buf b = CORE_BUF_INIT;
    assert_string_equal(core_buf_cstr(&b), "");
    assert_og_ok(core_buf_append_str(&b, "abc"));
    assert_og_ok(core_buf_printf(&b, "-%d-", 7));
    assert_og_ok(core_buf_append_byte(&b, 'z'));
    assert_string_equal(core_buf_cstr(&b), "abc-7-z");
    assert_og_ok(core_buf_append_u32le(&b, 0x01020304));
    assert_int_equal(b.len, 11);
    assert_int_equal(b.data[7], 4);
    assert_int_equal(b.data[10], 1);
    assert_og_ok(core_buf_append_u64le(&b, 0x1122334455667788ULL));
    assert_int_equal(b.data[11], 0x88);
    assert_og_ok(core_buf_resize(&b, 3));
    assert_string_equal(core_buf_cstr(&b), "abc");
    for (int i = 0; i < 10000; i++)
        assert_og_ok(core_buf_append(&b, "0123456789", 10));
    assert_int_equal(b.len, 100003);
    size_t len;
    unsigned char *d = core_buf_detach(&b, &len);
    assert_int_equal(len, 100003);
    assert_null(b.data);
    core_free(d);
    core_alloc_fail_at(1, 0);
    assert_og_error(core_buf_append_str(&b, "x"), OG_E_NOMEM);
    core_alloc_fail_at(0, 0);
    core_buf_free(&b);
}

/* Blocks reserved while another thread mints: no id is handed out twice. */
enum { RACE_MINTS = 20000, RACE_BLOCKS = 200, RACE_BLOCK = 40 };
static core_ulid race_minted[RACE_MINTS];

static void *race_minter(void *arg)
{
    (void)arg;
    for (int i = 0; i < RACE_MINTS; i++)
        if (core_ulid_new(&race_minted[i])) return (void *)1;
    return NULL;
}

static int ulid_cmp_qsort(const void *a, const void *b)
{
    return core_ulid_cmp(a, b);
}

static void test_ulid_reserve_race(void **state)
{
    (void)state;
    size_t n = RACE_MINTS + RACE_BLOCKS * RACE_BLOCK;
    core_ulid *all = malloc(n * sizeof *all);
    assert_non_null(all);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, race_minter, NULL), 0);
    size_t k = RACE_MINTS;
    for (int b = 0; b < RACE_BLOCKS; b++) {
        core_ulid u;
        assert_og_ok(core_ulid_reserve(&u, RACE_BLOCK));
        for (int i = 0; i < RACE_BLOCK; i++) {
            all[k++] = u;
            core_ulid_step(&u);
        }
    }
    void *ret;
    assert_int_equal(pthread_join(th, &ret), 0);
    assert_null(ret);
    memcpy(all, race_minted, sizeof race_minted);
    qsort(all, n, sizeof *all, ulid_cmp_qsort);
    for (size_t i = 1; i < n; i++)
        if (core_ulid_cmp(&all[i - 1], &all[i]) == 0) fail_msg("id %zu handed out twice", i);
    free(all);
}

static void test_ulid(void **state)
{
    (void)state;
    core_ulid a, b, p;
    char s[CORE_ULID_LEN + 1], t[CORE_ULID_LEN + 1];
    assert_og_ok(core_ulid_new(&a));
    core_ulid_format(&a, s);
    assert_int_equal(strlen(s), 26);
    assert_true(core_ulid_valid(s));
    assert_og_ok(core_ulid_parse(&p, s));
    assert_int_equal(core_ulid_cmp(&a, &p), 0);
    uint64_t now = core_wall_ms();
    assert_true(core_ulid_time_ms(&a) <= now && core_ulid_time_ms(&a) + 5000 > now);
    /* Monotonic, also within one millisecond; text order equals byte order. */
    for (int i = 0; i < 20000; i++) {
        assert_og_ok(core_ulid_new_at(&b, 1700000000000ULL));
        core_ulid_format(&b, t);
        assert_true(core_ulid_cmp(&a, &b) < 0);
        assert_true(strcmp(s, t) < 0);
        a = b;
        memcpy(s, t, sizeof s);
    }
    /* Reserved blocks: every id of a block is below every id of a later block and below
     * every id minted after it. */
    core_ulid b1, b2, c, last1;
    assert_og_ok(core_ulid_reserve(&b1, 5000));
    assert_og_ok(core_ulid_reserve(&b2, 3));
    assert_true(core_ulid_cmp(&a, &b1) < 0);
    last1 = b1;
    for (int i = 0; i < 4999; i++) {
        core_ulid prev = last1;
        core_ulid_step(&last1);
        assert_true(core_ulid_cmp(&prev, &last1) < 0);
    }
    assert_true(core_ulid_cmp(&last1, &b2) < 0);
    core_ulid_step(&b2);
    core_ulid_step(&b2);
    assert_og_ok(core_ulid_new(&c));
    assert_true(core_ulid_cmp(&b2, &c) < 0);
    /* a huge block (2^64 ids) still leaves later mints above it */
    assert_og_ok(core_ulid_reserve(&b1, UINT64_MAX));
    assert_og_ok(core_ulid_new(&b2));
    assert_true(core_ulid_cmp(&c, &b1) < 0);
    assert_true(core_ulid_cmp(&b1, &b2) < 0);
    core_ulid top = b1; /* the block's last id: b1 + 2^64 - 2 */
    for (int i = 15, carry = 0; i >= 6; i--) {
        unsigned v = top.b[i] + (i >= 8 ? 0xFFu : 0u) + (unsigned)carry - (i == 15 ? 1u : 0u);
        top.b[i] = (uint8_t)v;
        carry = (int)(v >> 8);
    }
    assert_true(core_ulid_cmp(&top, &b2) < 0);
    /* Known value: time 0x01 and random 0 formats as the spec's layout. */
    core_ulid z;
    memset(&z, 0, sizeof z);
    z.b[5] = 1;
    core_ulid_format(&z, t);
    assert_string_equal(t, "00000000010000000000000000");
    assert_int_equal(core_ulid_time_ms(&z), 1);
    memset(&z, 0xff, sizeof z);
    core_ulid_format(&z, t);
    assert_string_equal(t, "7ZZZZZZZZZZZZZZZZZZZZZZZZZ");
    assert_og_ok(core_ulid_parse(&p, "7zzzzzzzzzzzzzzzzzzzzzzzzz"));
    assert_int_equal(core_ulid_cmp(&p, &z), 0);
    /* Invalid strings get a typed error. */
    assert_og_error(core_ulid_parse(&p, "8ZZZZZZZZZZZZZZZZZZZZZZZZZ"), OG_E_BAD_REQUEST);
    assert_og_error(core_ulid_parse(&p, "01ARZ3NDEKTSV4RRFFQ69G5FA"), OG_E_BAD_REQUEST);
    assert_og_error(core_ulid_parse(&p, "01ARZ3NDEKTSV4RRFFQ69G5FAVX"), OG_E_BAD_REQUEST);
    assert_og_error(core_ulid_parse(&p, "01ARZ3NDEKTSV4RRFFQ69G5FAU"), OG_E_BAD_REQUEST);
    assert_og_error(core_ulid_parse(&p, "01ARZ3NDEKTSV4RRFFQ69G5FA!"), OG_E_BAD_REQUEST);
    assert_og_error(core_ulid_parse(&p, NULL), OG_E_BAD_REQUEST);
    assert_false(core_ulid_valid("01ARZ3NDEKTSV4RRFFQ69G5FAI"));
    assert_true(core_ulid_valid("01ARZ3NDEKTSV4RRFFQ69G5FAV"));
}

static void test_json(void **state)
{
    (void)state;
    json_t *v = NULL;
    const char *text = "{\"a\":\"x\",\"n\":-5,\"u\":\"18446744073709551615\",\"b\":true,"
                       "\"o\":{},\"l\":[1]}";
    assert_og_ok(core_json_parse(&v, text, strlen(text), "t.json"));
    const char *s;
    int64_t n;
    uint64_t u;
    int b;
    json_t *o;
    assert_og_ok(core_json_str(v, "a", &s, OG_E_CORRUPT, "rec"));
    assert_string_equal(s, "x");
    assert_og_ok(core_json_int(v, "n", &n, OG_E_CORRUPT, "rec"));
    assert_int_equal(n, -5);
    assert_og_ok(core_json_u64(v, "u", &u, OG_E_CORRUPT, "rec"));
    assert_true(u == UINT64_MAX);
    assert_og_ok(core_json_bool(v, "b", &b, OG_E_CORRUPT, "rec"));
    assert_true(b);
    assert_og_ok(core_json_obj(v, "o", &o, OG_E_CORRUPT, "rec"));
    assert_og_ok(core_json_arr(v, "l", &o, OG_E_CORRUPT, "rec"));
    assert_og_error(core_json_str(v, "n", &s, OG_E_CORRUPT, "rec"), OG_E_CORRUPT);
    assert_non_null(strstr(og_error_last()->message, "'n'"));
    assert_og_error(core_json_int(v, "missing", &n, OG_E_BAD_REQUEST, "rec"), OG_E_BAD_REQUEST);
    assert_og_error(core_json_u64(v, "n", &u, OG_E_CORRUPT, "rec"), OG_E_CORRUPT);
    core_buf out = CORE_BUF_INIT;
    assert_og_ok(core_json_dump(v, &out));
    assert_string_equal(core_buf_cstr(&out), "{\"a\":\"x\",\"b\":true,\"l\":[1],\"n\":-5,\"o\":{},"
                                             "\"u\":\"18446744073709551615\"}");
    core_buf_free(&out);
    json_decref(v);
    const char *bad = "{\n  \"a\": 1,\n  \"b\" 2\n}";
    assert_og_error(core_json_parse(&v, bad, strlen(bad), "bad.json"), OG_E_BAD_REQUEST);
    assert_int_equal(og_error_last()->line, 3);
    /* the source is named once, in the message; the text is not a file to locate */
    assert_null(og_error_last()->file);
    assert_non_null(strstr(og_error_last()->message, "bad.json: invalid JSON at line 3, column "));
    assert_og_error(core_json_parse_stored(&v, "{\"a\":1,\"a\":2}", 13, "x.json"), OG_E_CORRUPT);
    assert_og_error(core_json_parse(&v, "", 0, NULL), OG_E_BAD_REQUEST);
}

static void test_hash(void **state)
{
    (void)state;
    assert_true(core_hash64("abc", 3, 0) == core_hash64("abc", 3, 0));
    assert_true(core_hash64("abc", 3, 0) != core_hash64("abd", 3, 0));
    assert_true(core_hash64("abc", 3, 0) != core_hash64("abc", 3, 1));
    assert_true(core_hash_str("abc") == core_hash64("abc", 3, 0));
    core_hasher *h = core_hasher_new(7);
    core_hasher_update(h, "ab", 2);
    core_hasher_update(h, "c", 1);
    uint64_t d1 = core_hasher_digest(h);
    core_hasher_free(h);
    h = core_hasher_new(7);
    core_hasher_update(h, "abc", 3);
    assert_true(d1 == core_hasher_digest(h));
    core_hasher_free(h);
    core_hasher_free(NULL);
}

static void test_clock(void **state)
{
    (void)state;
    uint64_t a = core_mono_ns();
    uint64_t b = core_mono_ns();
    assert_true(b >= a);
    assert_true(core_wall_ms() > 1600000000000ULL);
    assert_true(core_wall_us() / 1000 >= core_wall_ms() - 1000);
}

static int site(void)
{
    return OG_FAILPOINT("test.site");
}

static void test_failpoints(void **state)
{
    (void)state;
    core_fp_clear_all();
    assert_int_equal(site(), 0);
    assert_og_ok(core_fp_set("test.site", CORE_FP_COUNT, 0, 0));
    for (int i = 0; i < 5; i++)
        assert_int_equal(site(), 0);
    assert_int_equal(core_fp_hits("test.site"), 5);
    assert_og_ok(core_fp_set("test.site", CORE_FP_ERROR, OG_E_NOT_FOUND, 0));
    assert_og_error(site(), OG_E_NOT_FOUND);
    assert_non_null(strstr(og_error_last()->message, "test.site"));
    assert_og_ok(core_fp_set("test.site", CORE_FP_ERROR, 0, 3));
    assert_int_equal(site(), 0);
    assert_int_equal(site(), 0);
    assert_og_error(site(), OG_E_STORAGE);
    assert_int_equal(site(), 0);
    core_fp_clear("test.site");
    assert_int_equal(site(), 0);
    assert_int_equal(core_fp_hits("test.site"), 0);
    /* The spec syntax, including exit, which ends the process at once. */
    assert_og_ok(core_fp_parse("test.site=2*exit(7);other=count"));
    pid_t pid = fork();
    if (pid == 0) {
        site();
        site();
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 7);
    assert_og_error(core_fp_parse("nonsense"), OG_E_BAD_REQUEST);
    assert_og_error(core_fp_parse("a=explode"), OG_E_BAD_REQUEST);
    assert_og_error(core_fp_parse("a=0*error"), OG_E_BAD_REQUEST);
    assert_og_error(core_fp_parse("a=error(x)"), OG_E_BAD_REQUEST);
    core_fp_clear_all();
    assert_int_equal(atomic_load(&core_fp_armed), 0);
}

/* Messages reach the embedder's sink up to its level, and nothing else: with no sink the
 * library prints nothing (stderr is redirected to a file here and must stay empty). */
typedef struct captured {
    int n, last_level;
    char last[128];
} captured;

static void capture(void *arg, int level, const char *message)
{
    captured *c = arg;
    c->n++;
    c->last_level = level;
    snprintf(c->last, sizeof c->last, "%s", message);
}

static void test_log_sink(void **state)
{
    (void)state;
    captured c = {0};
    og_set_log(capture, &c, OG_LOG_WARN);
    core_log(CORE_LOG_WARN, "skipped %d", 7);
    core_log(CORE_LOG_INFO, "not wanted");
    assert_int_equal(c.n, 1);
    assert_int_equal(c.last_level, OG_LOG_WARN);
    assert_string_equal(c.last, "skipped 7");
    assert_true(core_log_enabled(CORE_LOG_ERROR));
    assert_false(core_log_enabled(CORE_LOG_DEBUG));
    assert_string_equal(og_log_level_name(OG_LOG_INFO), "info");
    assert_string_equal(og_log_level_name(9), "unknown");

    og_set_log(NULL, NULL, OG_LOG_DEBUG);
    assert_false(core_log_enabled(CORE_LOG_ERROR));
    fflush(stderr);
    int saved = dup(2);
    char dir[TEST_SANDBOX_PATH], path[TEST_SANDBOX_PATH + 16];
    test_sandbox_new(dir, sizeof dir, "log");
    snprintf(path, sizeof path, "%s/stderr", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    core_log(CORE_LOG_ERROR, "must not be printed");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    off_t size = lseek(fd, 0, SEEK_END);
    close(fd);
    test_sandbox_done(dir);
    assert_int_equal(size, 0);
    assert_int_equal(c.n, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_error_model),
        cmocka_unit_test(test_error_is_per_thread),
        cmocka_unit_test(test_alloc_fail_nth),
        cmocka_unit_test(test_arena),
        cmocka_unit_test(test_buf),
        cmocka_unit_test(test_large_realloc),
        cmocka_unit_test(test_ulid),
        cmocka_unit_test(test_ulid_reserve_race),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_hash),
        cmocka_unit_test(test_clock),
        cmocka_unit_test(test_failpoints),
        cmocka_unit_test(test_log_sink),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
