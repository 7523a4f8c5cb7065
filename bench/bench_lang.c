/* Benchmark: parse and type-check a generated file of 1,000 .gq queries (reads with bindings,
 * traversals, filters, not {}, aggregates, order/limit, and mutations) against a small schema,
 * lowering each to IR. Prints the time per run and per query. */
#include "core/buf.h"
#include "lang/catalog.h"
#include "lang/ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char SCHEMA[] = "interface Named { name: String }\n"
                             "node Person implements Named { age: I32? email: String? @unique "
                             "status: enum(a, b)? born: Date?\n"
                             "  @key(name) @range(age, 0..200) }\n"
                             "node Company { name: String @key size: U32? }\n"
                             "edge Knows: Person -> Person { since: Date? }\n"
                             "edge WorksAt: Person -> Company @card(0..1)\n";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void gen(core_buf *b, int n)
{
    for (int i = 0; i < n; i++) {
        switch (i % 5) {
        case 0:
            core_buf_printf(
                b,
                "query q%d($n: String) { match { $p: Person { name: $n }  $p knows{1,3} $f  "
                "$f.age > %d } return { $f.name, $f.age } order { $f.age desc } limit %d }\n",
                i, i % 90, 10 + i % 7);
            break;
        case 1:
            core_buf_printf(
                b,
                "query q%d() { match { $p: Person  not { $p worksAt $_ }  $p.status = \"a\" } "
                "return { $p.name } }\n",
                i);
            break;
        case 2:
            core_buf_printf(b,
                            "query q%d() { match { $p: Person  $p worksAt $c } return { $c.name, "
                            "count($p) as n, avg($p.age) as a } order { n desc } limit 5 }\n",
                            i);
            break;
        case 3:
            core_buf_printf(
                b,
                "query q%d($n: String, $a: I32) { insert Person { name: $n, age: $a, "
                "born: date(\"2001-02-03\") } insert Knows { from: $n, to: \"x%d\" } }\n",
                i, i);
            break;
        default:
            core_buf_printf(
                b, "query q%d($n: String) { update Person set { age: %d } where name = $n }\n", i,
                i % 100);
        }
    }
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    if (rounds < 1) rounds = 1;
    core_buf q = CORE_BUF_INIT;
    gen(&q, 1000);
    core_arena a;
    core_arena_init(&a, 4096);
    lang_diags d;
    lang_diags_init(&d, &a);
    lang_catalog *cat = NULL;
    if (lang_catalog_build(&cat, SCHEMA, strlen(SCHEMA), "bench.pg", &d)) {
        fprintf(stderr, "schema failed\n");
        return 1;
    }
    double best = 1e9, total = 0;
    for (int r = 0; r < rounds; r++) {
        lang_diags_init(&d, &a);
        double t0 = now_s();
        lang_query_set *qs = NULL;
        int rc = lang_query_set_build(&qs, cat, core_buf_cstr(&q), q.len, "bench.gq", &d);
        double dt = now_s() - t0;
        if (rc || qs->n_queries != 1000) {
            fprintf(stderr, "check failed: %s\n", d.n ? d.items[0].message : "?");
            return 1;
        }
        lang_query_set_free(qs);
        total += dt;
        if (dt < best) best = dt;
    }
    printf("bench_lang: 1000 queries (%zu bytes), parse+check+lower: best %.2f ms, mean %.2f ms "
           "over %d runs (%.2f us/query)\n",
           q.len, best * 1e3, total / rounds * 1e3, rounds, best * 1e6 / 1000);
    lang_catalog_free(cat);
    core_arena_free(&a);
    core_buf_free(&q);
    return 0;
}
