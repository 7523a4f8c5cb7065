/* Test fixture: a record batch with one column of every type the arrow layer supports, with
 * nulls in deterministic places, so round trips (C Data Interface, Lance files) can compare. */
#ifndef OG_TEST_ARROW_FIXTURE_H
#define OG_TEST_ARROW_FIXTURE_H

#include "arrow/arrow.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static inline arrow_field fx_field(const char *name, arrow_type t, bool nullable)
{
    arrow_field f;
    f.name = (char *)name;
    f.nullable = nullable;
    f.type = t;
    return f;
}

/* Build the fixture schema into *s. */
static inline void fx_schema(arrow_schema *s)
{
    arrow_schema_init(s);
    static const struct {
        const char *name;
        arrow_type_id id;
        bool nullable;
    } simple[] = {
        {"id", ARROW_INT64, false},   {"b", ARROW_BOOL, true},      {"i32", ARROW_INT32, true},
        {"u32", ARROW_UINT32, true},  {"u64", ARROW_UINT64, false}, {"f32", ARROW_FLOAT32, true},
        {"f64", ARROW_FLOAT64, true}, {"s", ARROW_UTF8, true},      {"bin", ARROW_BINARY, true},
        {"d32", ARROW_DATE32, true},  {"d64", ARROW_DATE64, true}};
    for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++) {
        arrow_field f =
            fx_field(simple[i].name, arrow_type_simple(simple[i].id), simple[i].nullable);
        arrow_schema_add(s, &f);
    }
    arrow_type t;
    arrow_type_timestamp(&t, ARROW_UNIT_MILLI, NULL);
    arrow_field f = fx_field("ts_ms", t, true);
    arrow_schema_add(s, &f);
    arrow_type_clear(&t);
    arrow_type_timestamp(&t, ARROW_UNIT_MICRO, "UTC");
    f = fx_field("ts_us", t, true);
    arrow_schema_add(s, &f);
    arrow_type_clear(&t);

    arrow_field item = fx_field("item", arrow_type_simple(ARROW_FLOAT32), true);
    arrow_type_fixed_size_list(&t, &item, 4);
    f = fx_field("vec", t, true);
    arrow_schema_add(s, &f);
    arrow_type_clear(&t);

    item = fx_field("item", arrow_type_simple(ARROW_INT32), true);
    arrow_type_list(&t, &item);
    f = fx_field("lst", t, true);
    arrow_schema_add(s, &f);
    arrow_type_clear(&t);

    item = fx_field("item", arrow_type_simple(ARROW_UTF8), true);
    arrow_type_list(&t, &item);
    f = fx_field("lst_s", t, true);
    arrow_schema_add(s, &f);
    arrow_type_clear(&t);

    arrow_field kids[2] = {fx_field("a", arrow_type_simple(ARROW_INT64), true),
                           fx_field("b", arrow_type_simple(ARROW_UTF8), true)};
    arrow_type_struct(&t, kids, 2);
    f = fx_field("st", t, false);
    arrow_schema_add(s, &f);
    arrow_type_clear(&t);

    f = fx_field("allnull", arrow_type_simple(ARROW_INT64), true);
    arrow_schema_add(s, &f);
}

static inline int fx_append_row(arrow_builder **bs, int64_t r)
{
    int rc = 0;
    char sbuf[64];
#define FX(x)                                                                                      \
    do {                                                                                           \
        if ((rc = (x)) != 0) return rc;                                                            \
    } while (0)
    FX(arrow_builder_append_int(bs[0], r));
    FX(r % 7 == 3 ? arrow_builder_append_null(bs[1])
                  : arrow_builder_append_bool(bs[1], r % 2 == 0));
    FX(r % 3 == 2 ? arrow_builder_append_null(bs[2])
                  : arrow_builder_append_int(bs[2], r * 10 - 500));
    FX(r % 11 == 5 ? arrow_builder_append_null(bs[3])
                   : arrow_builder_append_int(bs[3], (r * 7919) % 4000000000LL));
    FX(arrow_builder_append_uint(bs[4], UINT64_MAX - (uint64_t)r));
    FX(r % 4 == 1 ? arrow_builder_append_null(bs[5])
                  : arrow_builder_append_double(bs[5], (double)r * 1.5));
    FX(r % 9 == 4
           ? arrow_builder_append_null(bs[6])
           : arrow_builder_append_double(bs[6], r % 13 == 0 ? -0.25 * (double)r : (double)r / 3.0));
    if (r % 5 == 2) {
        FX(arrow_builder_append_null(bs[7]));
    } else {
        if (r % 10 == 0)
            sbuf[0] = '\0';
        else
            snprintf(sbuf, sizeof sbuf, "str%lld-\xc3\xa9", (long long)r);
        FX(arrow_builder_append_str(bs[7], sbuf));
    }
    if (r % 6 == 1) {
        FX(arrow_builder_append_null(bs[8]));
    } else {
        unsigned char bin[5] = {0, (unsigned char)r, 0xff, (unsigned char)(r >> 8), 0};
        FX(arrow_builder_append_bytes(bs[8], bin, (size_t)(r % 5)));
    }
    FX(r % 8 == 7 ? arrow_builder_append_null(bs[9]) : arrow_builder_append_int(bs[9], 19000 + r));
    FX(r % 8 == 6 ? arrow_builder_append_null(bs[10])
                  : arrow_builder_append_int(bs[10], 1700000000000LL + r * 86400000LL));
    FX(r % 5 == 4 ? arrow_builder_append_null(bs[11])
                  : arrow_builder_append_int(bs[11], 1700000000123LL + r));
    FX(r % 5 == 3 ? arrow_builder_append_null(bs[12])
                  : arrow_builder_append_int(bs[12], 1700000000123456LL + r));
    /* vec: fixed-size list<float32, 4>, null rows and one null item pattern */
    if (r % 6 == 5) {
        FX(arrow_builder_append_null(bs[13]));
    } else {
        arrow_builder *it = arrow_builder_child(bs[13], 0);
        for (int k = 0; k < 4; k++)
            FX(r % 10 == 3 && k == 2 ? arrow_builder_append_null(it)
                                     : arrow_builder_append_double(it, (double)r + k * 0.25));
        FX(arrow_builder_append_valid(bs[13]));
    }
    /* lst: list<int32> with null lists, empty lists and null items */
    if (r % 4 == 3) {
        FX(arrow_builder_append_null(bs[14]));
    } else {
        arrow_builder *it = arrow_builder_child(bs[14], 0);
        int n = (int)(r % 3);
        for (int k = 0; k < n; k++)
            FX(k == 1 && r % 5 == 0 ? arrow_builder_append_null(it)
                                    : arrow_builder_append_int(it, r + k));
        FX(arrow_builder_append_list(bs[14], n));
    }
    /* lst_s: list<utf8> */
    if (r % 7 == 6) {
        FX(arrow_builder_append_null(bs[15]));
    } else {
        arrow_builder *it = arrow_builder_child(bs[15], 0);
        int n = (int)(r % 4);
        for (int k = 0; k < n; k++) {
            snprintf(sbuf, sizeof sbuf, "w%lld.%d", (long long)(r % 17), k);
            FX(k == 2 ? arrow_builder_append_null(it) : arrow_builder_append_str(it, sbuf));
        }
        FX(arrow_builder_append_list(bs[15], n));
    }
    /* st: struct{a int64?, b utf8?} with child nulls, no null rows */
    FX(r % 3 == 0 ? arrow_builder_append_null(arrow_builder_child(bs[16], 0))
                  : arrow_builder_append_int(arrow_builder_child(bs[16], 0), -r));
    snprintf(sbuf, sizeof sbuf, "k%lld", (long long)(r % 23));
    FX(r % 4 == 0 ? arrow_builder_append_null(arrow_builder_child(bs[16], 1))
                  : arrow_builder_append_str(arrow_builder_child(bs[16], 1), sbuf));
    FX(arrow_builder_append_valid(bs[16]));
    FX(arrow_builder_append_null(bs[17]));
#undef FX
    return 0;
}

/* Rows [start, start+n) of the fixture. Returns 0 or an og code. */
static inline int fx_batch(arrow_batch **out, int64_t start, int64_t n)
{
    arrow_schema s;
    fx_schema(&s);
    arrow_builder *bs[32] = {0};
    arrow_array *cols[32] = {0};
    int rc = 0;
    for (size_t i = 0; i < s.n_fields && rc == 0; i++)
        rc = arrow_builder_new(&bs[i], &s.fields[i].type);
    for (int64_t r = start; r < start + n && rc == 0; r++)
        rc = fx_append_row(bs, r);
    for (size_t i = 0; i < s.n_fields && rc == 0; i++)
        rc = arrow_builder_finish(bs[i], &cols[i]);
    if (rc == 0) rc = arrow_batch_new(out, &s, cols, s.n_fields);
    for (size_t i = 0; i < s.n_fields; i++) {
        arrow_builder_free(bs[i]);
        arrow_array_free(cols[i]);
    }
    arrow_schema_clear(&s);
    return rc;
}

#endif
