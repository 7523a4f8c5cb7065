/* The canonical JSON form (src/arrow/arrow_json.c): exact strings for doubles (ECMAScript
 * layout, shortest round trip), float32 widening, 64-bit integers, string escapes and UTF-8
 * validation, hex binaries, dates and instants (before 1970, extended years, every unit),
 * lists, fixed-size lists, structs, nulls, and whole rows. */
#include "testutil.h"

#include "arrow/arrow.h"
#include "arrow/arrow_json.h"
#include "core/buf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void check_double(double x, const char *want)
{
    char got[ARROW_JSON_DOUBLE_CAP];
    size_t n = arrow_json_format_double(got, x);
    assert_string_equal(got, want);
    assert_int_equal(n, strlen(want));
    /* a number reads back exactly */
    if (want[0] != '"') assert_true(strtod(got, NULL) == x || (x == 0 && strtod(got, NULL) == 0));
}

static void test_doubles(void **state)
{
    (void)state;
    check_double(0.0, "0");
    check_double(-0.0, "0");
    check_double(1.0, "1");
    check_double(-998.625, "-998.625");
    check_double(0.1, "0.1");
    check_double(1.0 / 3.0, "0.3333333333333333");
    check_double(2.0 / 3.0, "0.6666666666666666");
    check_double(100.0, "100");
    check_double(123456789012345680000.0, "123456789012345680000");
    check_double(1e21, "1e+21");
    check_double(1e300, "1e+300");
    check_double(1.5e-7, "1.5e-7");
    check_double(0.000001, "0.000001");
    check_double(0.0000015, "0.0000015");
    check_double(1e-7, "1e-7");
    check_double(5e-324, "5e-324");
    check_double(-1.7976931348623157e308, "-1.7976931348623157e+308");
    check_double(9007199254740993.0, "9007199254740992");
    check_double(1e20, "100000000000000000000");
    check_double(12345.678, "12345.678");
    check_double((double)0.1f, "0.10000000149011612");
    check_double((double)2.5f, "2.5");
    check_double(NAN, "\"NaN\"");
    check_double(INFINITY, "\"Infinity\"");
    check_double(-INFINITY, "\"-Infinity\"");

    /* random bit patterns: every output reads back exactly and no shorter digit string does */
    uint64_t rng = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < 20000; i++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        double x;
        memcpy(&x, &rng, sizeof x);
        if (!isfinite(x)) continue;
        char got[ARROW_JSON_DOUBLE_CAP];
        arrow_json_format_double(got, x);
        if (x != 0 && strtod(got, NULL) != x) fail_msg("%s does not read back as %.17g", got, x);
        int digits = 0, leading = 1;
        for (const char *q = got; *q && *q != 'e'; q++) {
            if (*q < '0' || *q > '9') continue;
            if (*q == '0' && leading) continue;
            leading = 0;
            digits++;
        }
        /* trailing zeros of an integer layout are padding, not significant digits */
        if (!strchr(got, 'e') && !strchr(got, '.'))
            for (const char *q = got + strlen(got) - 1; q > got && *q == '0'; q--)
                digits--;
        if (digits > 1) {
            char shorter[64];
            snprintf(shorter, sizeof shorter, "%.*e", digits - 2, fabs(x));
            assert_true(strtod(shorter, NULL) != fabs(x));
        }
    }
}

static void check_string(const char *in, size_t n, const char *want)
{
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(arrow_json_string(&b, in, n));
    assert_string_equal(core_buf_cstr(&b), want);
    core_buf_free(&b);
}

static void test_strings(void **state)
{
    (void)state;
    check_string("", 0, "\"\"");
    check_string("abc", 3, "\"abc\"");
    check_string("q\"b\\", 4, "\"q\\\"b\\\\\"");
    check_string("\b\f\n\r\t", 5, "\"\\b\\f\\n\\r\\t\"");
    check_string("\x01\x1f\x7f", 3, "\"\\u0001\\u001f\x7f\"");
    check_string("a\0b", 3, "\"a\\u0000b\"");
    /* non-ASCII, U+2028 and non-BMP stay raw */
    check_string("\xc3\xa9\xe4\xb8\xad\xe2\x80\xa8\xf0\x9f\x98\x80", 12,
                 "\"\xc3\xa9\xe4\xb8\xad\xe2\x80\xa8\xf0\x9f\x98\x80\"");
    /* invalid UTF-8: a lone continuation byte, a truncated sequence, an overlong '/', a
     * surrogate, a code point above U+10FFFF, 0xff */
    const char *bad[] = {"a\x80",        "\xe4\xb8",         "\xc0\xaf",
                         "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xff"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        core_buf b = CORE_BUF_INIT;
        assert_og_ok(core_buf_append_str(&b, "keep"));
        assert_og_error(arrow_json_string(&b, bad[i], strlen(bad[i])), OG_E_CORRUPT);
        assert_string_equal(core_buf_cstr(&b), "keep"); /* nothing half-written stays */
        core_buf_free(&b);
    }
}

static void test_dates_and_instants(void **state)
{
    (void)state;
    char s[48];
    arrow_json_format_date(s, 0);
    assert_string_equal(s, "1970-01-01");
    arrow_json_format_date(s, -1);
    assert_string_equal(s, "1969-12-31");
    arrow_json_format_date(s, 11016);
    assert_string_equal(s, "2000-02-29");
    arrow_json_format_date(s, -25567);
    assert_string_equal(s, "1900-01-01");
    arrow_json_format_date(s, -719528);
    assert_string_equal(s, "0000-01-01");
    arrow_json_format_date(s, -719529);
    assert_string_equal(s, "-000001-12-31");
    arrow_json_format_date(s, 2932897);
    assert_string_equal(s, "+010000-01-01");
    arrow_json_format_date(s, 2932896);
    assert_string_equal(s, "9999-12-31");
    arrow_json_format_instant(s, 0, ARROW_UNIT_SECOND);
    assert_string_equal(s, "1970-01-01T00:00:00Z");
    arrow_json_format_instant(s, -1, ARROW_UNIT_MICRO);
    assert_string_equal(s, "1969-12-31T23:59:59.999999Z");
    arrow_json_format_instant(s, 1700000000000LL, ARROW_UNIT_MILLI);
    assert_string_equal(s, "2023-11-14T22:13:20.000Z");
    arrow_json_format_instant(s, -1, ARROW_UNIT_NANO);
    assert_string_equal(s, "1969-12-31T23:59:59.999999999Z");
    arrow_json_format_instant(s, 86399999LL, ARROW_UNIT_MILLI);
    assert_string_equal(s, "1970-01-01T23:59:59.999Z");
    arrow_json_format_instant(s, INT64_MIN, ARROW_UNIT_NANO);
    assert_string_equal(s, "1677-09-21T00:12:43.145224192Z");
}

static arrow_array *finish(arrow_builder *b)
{
    arrow_array *a = NULL;
    assert_og_ok(arrow_builder_finish(b, &a));
    arrow_builder_free(b);
    return a;
}

static void check_value(const arrow_array *a, int64_t i, const char *want)
{
    core_buf b = CORE_BUF_INIT;
    assert_og_ok(arrow_json_value(&b, a, i));
    assert_string_equal(core_buf_cstr(&b), want);
    core_buf_free(&b);
}

static void test_scalar_values(void **state)
{
    (void)state;
    arrow_type t = arrow_type_simple(ARROW_INT64);
    arrow_builder *b;
    assert_og_ok(arrow_builder_new(&b, &t));
    assert_og_ok(arrow_builder_append_int(b, INT64_MIN));
    assert_og_ok(arrow_builder_append_null(b));
    assert_og_ok(arrow_builder_append_int(b, INT64_MAX));
    arrow_array *a = finish(b);
    check_value(a, 0, "-9223372036854775808");
    check_value(a, 1, "null");
    check_value(a, 2, "9223372036854775807");
    arrow_array_free(a);

    t = arrow_type_simple(ARROW_UINT64);
    assert_og_ok(arrow_builder_new(&b, &t));
    assert_og_ok(arrow_builder_append_uint(b, UINT64_MAX));
    a = finish(b);
    check_value(a, 0, "18446744073709551615");
    arrow_array_free(a);

    t = arrow_type_simple(ARROW_FLOAT32);
    assert_og_ok(arrow_builder_new(&b, &t));
    assert_og_ok(arrow_builder_append_double(b, 0.1));
    a = finish(b);
    check_value(a, 0, "0.10000000149011612");
    arrow_array_free(a);

    t = arrow_type_simple(ARROW_BOOL);
    assert_og_ok(arrow_builder_new(&b, &t));
    assert_og_ok(arrow_builder_append_bool(b, true));
    assert_og_ok(arrow_builder_append_bool(b, false));
    a = finish(b);
    check_value(a, 0, "true");
    check_value(a, 1, "false");
    arrow_array_free(a);

    t = arrow_type_simple(ARROW_LARGE_BINARY);
    assert_og_ok(arrow_builder_new(&b, &t));
    assert_og_ok(arrow_builder_append_bytes(b, "\x00\x0f\x10\xff", 4));
    assert_og_ok(arrow_builder_append_bytes(b, "", 0));
    a = finish(b);
    check_value(a, 0, "\"000f10ff\"");
    check_value(a, 1, "\"\"");
    arrow_array_free(a);

    t = arrow_type_simple(ARROW_UTF8);
    assert_og_ok(arrow_builder_new(&b, &t));
    assert_og_ok(arrow_builder_append_bytes(b, "ok\n", 3));
    assert_og_ok(arrow_builder_append_bytes(b, "\xfe", 1));
    a = finish(b);
    check_value(a, 0, "\"ok\\n\"");
    core_buf out = CORE_BUF_INIT;
    assert_og_error(arrow_json_value(&out, a, 1), OG_E_CORRUPT);
    core_buf_free(&out);
    arrow_array_free(a);

    t = arrow_type_simple(ARROW_DATE32);
    assert_og_ok(arrow_builder_new(&b, &t));
    assert_og_ok(arrow_builder_append_int(b, -10000));
    a = finish(b);
    check_value(a, 0, "\"1942-08-16\"");
    arrow_array_free(a);

    t = arrow_type_simple(ARROW_DATE64);
    assert_og_ok(arrow_builder_new(&b, &t));
    assert_og_ok(arrow_builder_append_int(b, -20000LL * 86400000LL));
    a = finish(b);
    check_value(a, 0, "\"1915-03-31T00:00:00.000Z\"");
    arrow_array_free(a);

    assert_og_ok(arrow_type_timestamp(&t, ARROW_UNIT_MICRO, "UTC"));
    assert_og_ok(arrow_builder_new(&b, &t));
    arrow_type_clear(&t);
    assert_og_ok(arrow_builder_append_int(b, -3000009LL));
    a = finish(b);
    check_value(a, 0, "\"1969-12-31T23:59:56.999991Z\"");
    arrow_array_free(a);
}

static void test_nested_values_and_rows(void **state)
{
    (void)state;
    /* list<int32>: [], null, [1,null,3] */
    arrow_field item;
    arrow_type i32 = arrow_type_simple(ARROW_INT32), f32 = arrow_type_simple(ARROW_FLOAT32);
    arrow_type lt, ft, st;
    assert_og_ok(arrow_field_init(&item, "item", &i32, true));
    assert_og_ok(arrow_type_list(&lt, &item));
    arrow_field_clear(&item);
    arrow_builder *b;
    assert_og_ok(arrow_builder_new(&b, &lt));
    assert_og_ok(arrow_builder_append_list(b, 0));
    assert_og_ok(arrow_builder_append_null(b));
    assert_og_ok(arrow_builder_append_int(arrow_builder_child(b, 0), 1));
    assert_og_ok(arrow_builder_append_null(arrow_builder_child(b, 0)));
    assert_og_ok(arrow_builder_append_int(arrow_builder_child(b, 0), 3));
    assert_og_ok(arrow_builder_append_list(b, 3));
    arrow_array *la = finish(b);
    check_value(la, 0, "[]");
    check_value(la, 1, "null");
    check_value(la, 2, "[1,null,3]");

    /* fixed_size_list<float,2>: [0.5,-0.75], null */
    assert_og_ok(arrow_field_init(&item, "item", &f32, true));
    assert_og_ok(arrow_type_fixed_size_list(&ft, &item, 2));
    arrow_field_clear(&item);
    assert_og_ok(arrow_builder_new(&b, &ft));
    assert_og_ok(arrow_builder_append_double(arrow_builder_child(b, 0), 0.5));
    assert_og_ok(arrow_builder_append_double(arrow_builder_child(b, 0), -0.75));
    assert_og_ok(arrow_builder_append_valid(b));
    assert_og_ok(arrow_builder_append_null(b));
    arrow_array *fa = finish(b);
    check_value(fa, 0, "[0.5,-0.75]");
    check_value(fa, 1, "null");

    /* struct{a int32, "b\"" utf8}: {a:7,b:null}, null */
    arrow_type u8 = arrow_type_simple(ARROW_UTF8);
    arrow_field kids[2];
    assert_og_ok(arrow_field_init(&kids[0], "a", &i32, true));
    assert_og_ok(arrow_field_init(&kids[1], "b\"", &u8, true));
    assert_og_ok(arrow_type_struct(&st, kids, 2));
    arrow_field_clear(&kids[0]);
    arrow_field_clear(&kids[1]);
    assert_og_ok(arrow_builder_new(&b, &st));
    assert_og_ok(arrow_builder_append_int(arrow_builder_child(b, 0), 7));
    assert_og_ok(arrow_builder_append_null(arrow_builder_child(b, 1)));
    assert_og_ok(arrow_builder_append_valid(b));
    assert_og_ok(arrow_builder_append_null(b));
    arrow_array *sa = finish(b);
    check_value(sa, 0, "{\"a\":7,\"b\\\"\":null}");
    check_value(sa, 1, "null");

    /* a batch row: keys in column order */
    arrow_schema s;
    arrow_schema_init(&s);
    arrow_field f;
    assert_og_ok(arrow_field_init(&f, "li", &lt, true));
    assert_og_ok(arrow_schema_add(&s, &f));
    arrow_field_clear(&f);
    assert_og_ok(arrow_field_init(&f, "v2", &ft, true));
    assert_og_ok(arrow_schema_add(&s, &f));
    arrow_field_clear(&f);
    arrow_array *cols[2];
    assert_og_ok(arrow_take(&cols[0], la, (const int64_t[]){2, 0}, 2));
    cols[1] = arrow_array_ref(fa);
    arrow_batch *batch;
    assert_og_ok(arrow_batch_new(&batch, &s, cols, 2));
    core_buf out = CORE_BUF_INIT;
    assert_og_ok(arrow_json_row(&out, batch, 0));
    assert_og_ok(core_buf_append_byte(&out, '\n'));
    assert_og_ok(arrow_json_row(&out, batch, 1));
    assert_string_equal(core_buf_cstr(&out), "{\"li\":[1,null,3],\"v2\":[0.5,-0.75]}\n"
                                             "{\"li\":[],\"v2\":null}");
    core_buf_free(&out);
    arrow_batch_free(batch);
    arrow_array_free(cols[0]);
    arrow_array_free(cols[1]);
    arrow_schema_clear(&s);
    arrow_array_free(la);
    arrow_array_free(fa);
    arrow_array_free(sa);
    arrow_type_clear(&lt);
    arrow_type_clear(&ft);
    arrow_type_clear(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_doubles),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_dates_and_instants),
        cmocka_unit_test(test_scalar_values),
        cmocka_unit_test(test_nested_values_and_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
