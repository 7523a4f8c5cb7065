/* libFuzzer target: any bytes as a .gq file, checked against a fixed schema, then linted and
 * its IR dumped. Must never crash, hang or leak. */
#include "lang/ir.h"
#include "lang/lint.h"

#include <stdint.h>
#include <stddef.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char SCHEMA[] =
    "interface Named { name: String }\n"
    "node Person implements Named { age: I32? tags: [String]? status: enum(a, b)? born: Date?\n"
    "  seen: DateTime? score: F64? photo: Blob? emb: Vector(3)? @embed(\"name\") @key(name) }\n"
    "node Company { name: String @key size: U32? }\n"
    "node Tag { label: String }\n"
    "edge Knows: Person -> Person { since: Date? w: F32? }\n"
    "edge WorksAt: Person -> Company @card(0..1)\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static lang_catalog *cat;
    core_arena a;
    core_arena_init(&a, 4096);
    lang_diags d;
    lang_diags_init(&d, &a);
    if (!cat && lang_catalog_build(&cat, SCHEMA, strlen(SCHEMA), "fuzz.pg", &d)) __builtin_trap();
    lang_query_set *qs = NULL;
    lang_query_set_build(&qs, cat, (const char *)data, size, "fuzz.gq", &d);
    if (qs) {
        lang_lint(qs, &d);
        core_buf b = CORE_BUF_INIT;
        for (size_t i = 0; i < qs->n_queries; i++)
            if (!qs->status[i]) lang_ir_dump(qs, &qs->queries[i], &b);
        lang_lint_report_json(qs, &d, &b);
        core_buf_free(&b);
    }
    lang_query_set_free(qs);
    core_arena_free(&a);
    return 0;
}
