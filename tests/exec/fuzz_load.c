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
    /* Once by one thread, once split in two halves (exec_load_set_split_min): both must agree
     * on the outcome, its line, the counts and the rows. */
    graph_change_set cs, cs2;
    exec_load_stats st, st2;
    exec_load_set_split_min(SIZE_MAX);
    int rc = exec_load_parse(&cs, cat, (const char *)data, size, "fuzz.jsonl", EXEC_LOAD_MERGE, &st,
                             NULL, NULL);
    int line = rc ? og_error_last()->line : 0;
    exec_load_set_split_min(2);
    int rc2 = exec_load_parse(&cs2, cat, (const char *)data, size, "fuzz.jsonl", EXEC_LOAD_MERGE,
                              &st2, NULL, NULL);
    int line2 = rc2 ? og_error_last()->line : 0;
    exec_load_set_split_min(0);
    if (rc && (cs.n || cs.changes)) abort();
    if (rc && rc != OG_E_BAD_REQUEST && rc != OG_E_NOMEM) abort();
    if (rc != rc2 || line != line2 || st.lines != st2.lines || st.nodes != st2.nodes ||
        st.edges != st2.edges || cs.n != cs2.n)
        abort();
    for (size_t i = 0; i < cs.n; i++)
        if (cs.changes[i].type_index != cs2.changes[i].type_index ||
            cs.changes[i].rows->num_rows != cs2.changes[i].rows->num_rows)
            abort();
    graph_change_set_clear(&cs);
    graph_change_set_clear(&cs2);
    return 0;
}
