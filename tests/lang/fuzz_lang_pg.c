/* libFuzzer target: any bytes as a .pg schema. Must never crash, hang or leak; a valid
 * schema must also serialise to JSON. */
#include "lang/catalog.h"

#include <stdint.h>
#include <stddef.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    core_arena a;
    core_arena_init(&a, 4096);
    lang_diags d;
    lang_diags_init(&d, &a);
    lang_catalog *cat = NULL;
    if (lang_catalog_build(&cat, (const char *)data, size, "fuzz.pg", &d) == 0) {
        core_buf b = CORE_BUF_INIT;
        lang_catalog_to_json(cat, &b);
        core_buf_free(&b);
        lang_catalog_free(cat);
    }
    core_arena_free(&a);
    return 0;
}
