/* Shared helpers for dataset tests: a three-column schema (id int64, name utf8?, score
 * float64?) and batches of it. */
#ifndef OG_TEST_DATASET_FIXTURE_H
#define OG_TEST_DATASET_FIXTURE_H

#include "testutil.h"
#include "lance/dataset.h"

#include <stdio.h>

static inline void fx_schema(arrow_schema *s)
{
    arrow_schema_init(s);
    arrow_field f;
    arrow_type t = arrow_type_simple(ARROW_INT64);
    assert_og_ok(arrow_field_init(&f, "id", &t, false));
    assert_og_ok(arrow_schema_add(s, &f));
    arrow_field_clear(&f);
    t = arrow_type_simple(ARROW_UTF8);
    assert_og_ok(arrow_field_init(&f, "name", &t, true));
    assert_og_ok(arrow_schema_add(s, &f));
    arrow_field_clear(&f);
    t = arrow_type_simple(ARROW_FLOAT64);
    assert_og_ok(arrow_field_init(&f, "score", &t, true));
    assert_og_ok(arrow_schema_add(s, &f));
    arrow_field_clear(&f);
}

/* Rows id = start .. start+n-1; name "n<id>" (null when id % 7 == 3); score id * 0.5. */
static inline arrow_batch *fx_batch(const arrow_schema *s, int64_t start, int64_t n)
{
    arrow_builder *b[3];
    for (int c = 0; c < 3; c++)
        assert_og_ok(arrow_builder_new(&b[c], &s->fields[c].type));
    for (int64_t i = start; i < start + n; i++) {
        assert_og_ok(arrow_builder_append_int(b[0], i));
        if (i % 7 == 3) {
            assert_og_ok(arrow_builder_append_null(b[1]));
        } else {
            char name[32];
            snprintf(name, sizeof name, "n%lld", (long long)i);
            assert_og_ok(arrow_builder_append_str(b[1], name));
        }
        assert_og_ok(arrow_builder_append_double(b[2], (double)i * 0.5));
    }
    arrow_array *cols[3];
    for (int c = 0; c < 3; c++) {
        assert_og_ok(arrow_builder_finish(b[c], &cols[c]));
        arrow_builder_free(b[c]);
    }
    arrow_batch *out = NULL;
    assert_og_ok(arrow_batch_new(&out, s, cols, 3));
    for (int c = 0; c < 3; c++)
        arrow_array_free(cols[c]);
    return out;
}

/* Sum of the id column over a whole scan, and the row count. */
static inline void fx_ids(const lance_dataset *ds, int64_t *sum, int64_t *rows)
{
    arrow_batch *b = NULL;
    assert_og_ok(lance_dataset_scan_all(&b, ds, NULL));
    *sum = 0;
    for (int64_t i = 0; i < b->num_rows; i++)
        *sum += arrow_array_get_int(b->columns[0], i);
    *rows = b->num_rows;
    arrow_batch_free(b);
}

#endif
