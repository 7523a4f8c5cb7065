/* Data-driven corpus: every case in tests/lang/cases (files ending .pgcases and .gqcases) is
 * checked. A case starts with a header line
 *     === name: ok                  (valid; "ok warn=L201" also requires that warning)
 *     === name: CODE LINE:COL       (invalid; the first error must have this code and place)
 * and its source is every line up to the next header (line 1 is the line after the header).
 * .gqcases are checked against cases/base.pg. */
#include "testutil.h"

#include "lang/catalog.h"
#include "lang/ir.h"
#include "lang/lint.h"

#include <dirent.h>
#include <string.h>

typedef struct tcase {
    char name[128];
    char expect[64];
    char *src;
    size_t len;
} tcase;

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    size_t got = fread(b, 1, (size_t)n, f);
    fclose(f);
    b[got] = '\0';
    *len = got;
    return b;
}

/* Split a cases file; returns the number of cases (at most cap). */
static size_t split_cases(char *text, tcase *out, size_t cap)
{
    size_t n = 0;
    char *p = text;
    while (p && *p) {
        if (strncmp(p, "=== ", 4) != 0) {
            char *nl = strchr(p, '\n');
            p = nl ? nl + 1 : NULL;
            continue;
        }
        char *nl = strchr(p, '\n');
        if (!nl) break;
        *nl = '\0';
        char *colon = strstr(p + 4, ": ");
        assert_non_null(colon);
        tcase *c = &out[n++];
        assert_true(n <= cap);
        snprintf(c->name, sizeof c->name, "%.*s", (int)(colon - (p + 4)), p + 4);
        snprintf(c->expect, sizeof c->expect, "%s", colon + 2);
        c->src = nl + 1;
        char *next = c->src;
        for (;;) {
            char *e = strstr(next, "\n=== ");
            if (!e) {
                c->len = strlen(c->src);
                p = NULL;
                break;
            }
            if (e >= c->src) {
                c->len = (size_t)(e - c->src);
                *e = '\0';
                p = e + 1;
                break;
            }
        }
    }
    return n;
}

static int first_error(const lang_diags *d, const lang_diag **out)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->items[i].severity == LANG_SEV_ERROR) {
            *out = &d->items[i];
            return 1;
        }
    return 0;
}

static int has_code(const lang_diags *d, const char *code)
{
    for (size_t i = 0; i < d->n; i++)
        if (!strcmp(d->items[i].code, code)) return 1;
    return 0;
}

/* 0 when the outcome matches the expectation; prints why otherwise. */
static int judge(const char *file, const tcase *c, lang_diags *d)
{
    lang_diags_sort(d);
    const lang_diag *e = NULL;
    int has_err = first_error(d, &e);
    if (!strncmp(c->expect, "ok", 2)) {
        if (has_err) {
            print_message("%s/%s: expected ok, got %s %d:%d %s\n", file, c->name, e->code, e->line,
                          e->col, e->message);
            return 1;
        }
        const char *w = strstr(c->expect, "warn=");
        if (w && !has_code(d, w + 5)) {
            print_message("%s/%s: expected warning %s\n", file, c->name, w + 5);
            return 1;
        }
        return 0;
    }
    char code[16];
    int line, col;
    if (sscanf(c->expect, "%15s %d:%d", code, &line, &col) != 3) {
        print_message("%s/%s: bad header '%s'\n", file, c->name, c->expect);
        return 1;
    }
    if (!has_err) {
        print_message("%s/%s: expected %s %d:%d, got no error\n", file, c->name, code, line, col);
        return 1;
    }
    if (strcmp(e->code, code) || e->line != line || e->col != col) {
        print_message("%s/%s: expected %s %d:%d, got %s %d:%d %s\n", file, c->name, code, line, col,
                      e->code, e->line, e->col, e->message);
        return 1;
    }
    return 0;
}

static void test_corpus(void **state)
{
    (void)state;
    const char *srcdir = getenv("OG_TEST_SRCDIR");
    char dir[512], path[1024];
    snprintf(dir, sizeof dir, "%s/tests/lang/cases", srcdir ? srcdir : ".");
    snprintf(path, sizeof path, "%s/base.pg", dir);
    size_t blen = 0;
    char *base = slurp(path, &blen);
    assert_non_null(base);
    core_arena da;
    core_arena_init(&da, 4096);
    lang_diags bd;
    lang_diags_init(&bd, &da);
    lang_catalog *cat = NULL;
    assert_og_ok(lang_catalog_build(&cat, base, blen, "base.pg", &bd));
    core_arena_free(&da);

    DIR *dh = opendir(dir);
    assert_non_null(dh);
    struct dirent *de;
    size_t total = 0, valid = 0, invalid = 0, fails = 0;
    static tcase cases[1000];
    while ((de = readdir(dh))) {
        int is_pg = strstr(de->d_name, ".pgcases") != NULL;
        int is_gq = strstr(de->d_name, ".gqcases") != NULL;
        if (!is_pg && !is_gq) continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        size_t len;
        char *text = slurp(path, &len);
        assert_non_null(text);
        size_t n = split_cases(text, cases, 1000);
        for (size_t i = 0; i < n; i++) {
            tcase *c = &cases[i];
            core_arena a;
            core_arena_init(&a, 4096);
            lang_diags d;
            lang_diags_init(&d, &a);
            if (is_pg) {
                lang_catalog *sc = NULL;
                int rc = lang_catalog_build(&sc, c->src, c->len, c->name, &d);
                /* the return code agrees with the diagnostics: 0 or OG_E_BAD_REQUEST */
                if ((rc == 0) != (d.errors == 0) || (rc == 0) != (sc != NULL) ||
                    (rc && rc != OG_E_BAD_REQUEST)) {
                    print_message("%s: rc %d disagrees with %zu errors\n", c->name, rc, d.errors);
                    fails++;
                }
                lang_catalog_free(sc);
            } else {
                lang_query_set *qs = NULL;
                int rc = lang_query_set_build(&qs, cat, c->src, c->len, c->name, &d);
                if (qs && rc == 0) lang_lint(qs, &d);
                if ((rc == 0) != (d.errors == 0) || (rc && rc != OG_E_BAD_REQUEST)) {
                    print_message("%s: rc %d disagrees with %zu errors\n", c->name, rc, d.errors);
                    fails++;
                }
                lang_query_set_free(qs);
            }
            fails += (size_t)judge(de->d_name, c, &d);
            if (!strncmp(c->expect, "ok", 2))
                valid++;
            else
                invalid++;
            total++;
            core_arena_free(&a);
        }
        free(text);
    }
    closedir(dh);
    lang_catalog_free(cat);
    free(base);
    print_message("lang corpus: %zu cases (%zu valid, %zu invalid), %zu failed\n", total, valid,
                  invalid, fails);
    assert_true(total >= 150);
    assert_true(valid >= 50 && invalid >= 100);
    assert_int_equal(fails, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_corpus)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
