/* libFuzzer target for the Lance 2.0 data-file reader: open the bytes, read every column, and
 * check that whatever decodes is structurally valid and survives a round trip through our
 * writer (write it with small pages, read it back, compare). Any crash, leak, sanitizer report
 * or abort is a finding; typed errors are the expected outcome for damaged input. */
#include "arrow/arrow.h"
#include "core/buf.h"
#include "lance/file2.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void roundtrip(const arrow_batch *b)
{
    lance_file2_options o = LANCE_FILE2_OPTIONS_INIT;
    o.page_bytes = 256;
    lance_file2_writer *w;
    if (lance_file2_writer_new(&w, &b->schema, &o) != 0) return; /* e.g. a type we cannot write */
    core_buf out = CORE_BUF_INIT;
    if (lance_file2_writer_write(w, b) == 0 &&
        lance_file2_writer_finish_bytes(w, &out, NULL) == 0) {
        lance_file2_reader *r;
        arrow_batch *back = NULL;
        if (lance_file2_open_bytes(&r, out.data, out.len, "roundtrip.lance", NULL) != 0) abort();
        if (lance_file2_read(r, NULL, 0, 0, UINT64_MAX, &back) != 0) abort();
        if (!arrow_batch_equal(b, back)) abort();
        arrow_batch_free(back);
        lance_file2_close(r);
    }
    core_buf_free(&out);
    lance_file2_writer_free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lance_file2_reader *r;
    lance_file2_read_options o = LANCE_FILE2_READ_OPTIONS_INIT;
    o.max_bytes = 64u << 20; /* keep claimed sizes inside the fuzzer's memory limit */
    if (lance_file2_open_bytes(&r, data, size, "fuzz.lance", &o) != 0) return 0;
    arrow_batch *b = NULL;
    if (lance_file2_read(r, NULL, 0, 0, UINT64_MAX, &b) == 0) {
        for (size_t i = 0; i < b->n_columns; i++)
            if (arrow_array_validate(b->columns[i]) != 0) abort();
        if (b->num_rows <= 4096) roundtrip(b);
        arrow_batch_free(b);
    }
    /* a projected, ranged read exercises the page-window paths */
    size_t col = 0;
    if (lance_file2_schema(r)->n_fields > 0 &&
        lance_file2_read(r, &col, 1, lance_file2_num_rows(r) / 2, 3, &b) == 0)
        arrow_batch_free(b);
    lance_file2_close(r);
    return 0;
}
