/* Fuzz target for recovery sidecars, which recovery reads from storage: any bytes must parse
 * or fail typed (corrupt / unsupported), never crash or leak; what parses must serialise and
 * parse again to the same bytes. The torn / foreign-content classifiers recovery applies to
 * what does not parse see the same bytes: what parses whole is never called torn. */
#include "write/internal.h"

#include "core/buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_KEY GRAPH_RECOVERY_DIR "/01ARZ3NDEKTSV4RRFFQ69G5FAV.json"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bool torn = write_sidecar_torn((const char *)data, size);
    (void)write_sidecar_names_other((const char *)data, size, "01ARZ3NDEKTSV4RRFFQ69G5FAV");
    write_intent in;
    int rc = write_intent_from_json(&in, (const char *)data, size, FUZZ_KEY);
    if (rc == 0 && torn) abort();
    if (rc != 0) {
        if (rc != OG_E_CORRUPT && rc != OG_E_UNSUPPORTED && rc != OG_E_NOMEM) abort();
        return 0;
    }
    core_buf a = CORE_BUF_INIT, b = CORE_BUF_INIT;
    if (write_intent_to_json(&in, &a) != 0) abort();
    write_intent again;
    if (write_intent_from_json(&again, (const char *)a.data, a.len, FUZZ_KEY) != 0) abort();
    if (write_intent_to_json(&again, &b) != 0 || a.len != b.len || memcmp(a.data, b.data, a.len))
        abort();
    write_intent_clear(&again);
    write_intent_clear(&in);
    core_buf_free(&a);
    core_buf_free(&b);
    return 0;
}
