/* libFuzzer target: the deletion-file readers (roaring `.bin` and Arrow IPC `.arrow`) and
 * the row id sequence decoder. Every input is given to each; each ends in a result or a typed
 * error, never a crash, and a decoded `.bin` re-encodes to a bitmap with the same rows. */
#include "core/alloc.h"
#include "lance/deletion.h"
#include "lance/rowids.h"
#include "omnigraph.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    roaring_bitmap_t *r = NULL;
    int rc = lance_deletion_bin_decode(&r, data, size, "fuzz.bin");
    check(rc == 0 || rc == OG_E_CORRUPT || rc == OG_E_NOMEM);
    if (r) {
        core_buf b = CORE_BUF_INIT;
        if (lance_deletion_bin_encode(&b, r) == 0) {
            roaring_bitmap_t *r2 = NULL;
            check(lance_deletion_bin_decode(&r2, b.data, b.len, "again") == 0);
            check(roaring_bitmap_equals(r, r2));
            roaring_bitmap_free(r2);
        }
        core_buf_free(&b);
        roaring_bitmap_free(r);
    }
    r = NULL;
    rc = lance_deletion_arrow_decode(&r, data, size, "fuzz.arrow");
    check(rc == 0 || rc == OG_E_CORRUPT || rc == OG_E_UNSUPPORTED || rc == OG_E_NOMEM);
    check((rc == 0) == (r != NULL));
    if (r) roaring_bitmap_free(r);
    lance_rowid_seq s;
    if (lance_rowid_seq_decode(&s, data, size, "fuzz.rowids") == 0) {
        if (lance_rowid_seq_len(&s) <= 65536) {
            uint64_t *ids = NULL;
            size_t n = 0;
            if (lance_rowid_seq_expand(&s, &ids, &n) == 0) core_free(ids);
        }
        lance_rowid_seq_free(&s);
    }
    return 0;
}
