/* Fuzz target for the JSONL loader: any bytes against a fixed schema must parse or fail with
 * a located bad request, never crash or leak. */
#include "exec/load.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *SCHEMA =
    "node Person { name: String @key  age: I32?  tags: [String]?  v: Vector(2)?  d: Date?"
    "  t: DateTime?  e: enum(a, b)?  f: F32?  u: U64? }\n"
    "node Pair { a: String  b: I64  @key(b, a) }\n"
    "node Doc { body: String  blob: Blob? }\n"
    "edge Knows: Person -> Person @card(0..2) { since: Date? }\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static lang_catalog *cat;
    static core_arena arena;
    if (!cat) {
        lang_diags diags;
        core_arena_init(&arena, 4096);
        lang_diags_init(&diags, &arena);
        if (lang_catalog_build(&cat, SCHEMA, strlen(SCHEMA), "f.pg", &diags)) abort();
    }
    graph_change_set cs;
    exec_load_stats st;
    int rc = exec_load_parse(&cs, cat, (const char *)data, size, "fuzz.jsonl", EXEC_LOAD_MERGE, &st,
                             NULL, NULL);
    if (rc && (cs.n || cs.changes)) abort();
    if (rc && rc != OG_E_BAD_REQUEST && rc != OG_E_NOMEM) abort();
    graph_change_set_clear(&cs);
    return 0;
}
