/* Fuzz target for query parameters (user input from --params / og_query_options): any bytes
 * either fail to parse as JSON or are checked against the query's declared parameters, with
 * a typed bad request on any mismatch; never a crash or a leak. */
#include "exec/query.h"

#include "core/json.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *SCHEMA = "node Person { name: String @key  age: I32?  born: Date?"
                            "  seen: DateTime?  tags: [String]?  v: Vector(3)?  s: F64? }\n";
static const char *QUERY =
    "query q($n: String, $a: I32, $d: Date, $t: DateTime, $tags: [String], $v: Vector(3),"
    " $u: U64, $f: F64, $b: Bool) { match { $p: Person { name: $n } } return { $p.age } }";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static lang_catalog *cat;
    static lang_query_set *qs;
    static core_arena arena;
    if (!cat) {
        lang_diags diags;
        core_arena_init(&arena, 4096);
        lang_diags_init(&diags, &arena);
        if (lang_catalog_build(&cat, SCHEMA, strlen(SCHEMA), "f.pg", &diags) ||
            lang_query_set_build(&qs, cat, QUERY, strlen(QUERY), "f.gq", &diags))
            abort();
    }
    json_t *obj = NULL;
    if (core_json_parse(&obj, (const char *)data, size, "params") != 0) return 0;
    exec_params *p = NULL;
    int rc = exec_params_from_json(&p, &qs->queries[0], obj);
    if (rc != 0 && rc != OG_E_BAD_REQUEST && rc != OG_E_NOMEM) abort();
    if (rc != 0 && p) abort();
    exec_params_free(p);
    json_decref(obj);
    return 0;
}
