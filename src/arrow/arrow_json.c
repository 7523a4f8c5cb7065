/* The canonical JSON form of Arrow values (see arrow_json.h and tests/interop/README.md). */
#include "arrow/arrow_json.h"

#include "core/error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- numbers --------------------------------------------------------------------------------- */

size_t arrow_json_format_double(char out[ARROW_JSON_DOUBLE_CAP], double x)
{
    if (isnan(x)) return (size_t)snprintf(out, ARROW_JSON_DOUBLE_CAP, "\"NaN\"");
    if (isinf(x))
        return (size_t)snprintf(out, ARROW_JSON_DOUBLE_CAP,
                                x > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    if (x == 0) return (size_t)snprintf(out, ARROW_JSON_DOUBLE_CAP, "0"); /* -0 too */
    double ax = fabs(x);
    char sci[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(sci, sizeof sci, "%.*e", p - 1, ax);
        if (strtod(sci, NULL) == ax) break;
    }
    /* sci is d[.ddd]e[+-]XX: collect the digits and the exponent. */
    char dig[24];
    int k = 0;
    const char *q = sci;
    for (; *q && *q != 'e'; q++)
        if (*q >= '0' && *q <= '9') dig[k++] = *q;
    int e = (*q == 'e') ? atoi(q + 1) : 0;
    while (k > 1 && dig[k - 1] == '0')
        k--;
    int n = e + 1;
    char *o = out;
    if (x < 0) *o++ = '-';
    if (k <= n && n <= 21) {
        memcpy(o, dig, (size_t)k);
        o += k;
        for (int z = 0; z < n - k; z++)
            *o++ = '0';
    } else if (0 < n && n <= 21) {
        memcpy(o, dig, (size_t)n);
        o += n;
        *o++ = '.';
        memcpy(o, dig + n, (size_t)(k - n));
        o += k - n;
    } else if (-6 < n && n <= 0) {
        *o++ = '0';
        *o++ = '.';
        for (int z = 0; z < -n; z++)
            *o++ = '0';
        memcpy(o, dig, (size_t)k);
        o += k;
    } else {
        *o++ = dig[0];
        if (k > 1) {
            *o++ = '.';
            memcpy(o, dig + 1, (size_t)(k - 1));
            o += k - 1;
        }
        o += snprintf(o, 8, "e%c%d", n - 1 < 0 ? '-' : '+', abs(n - 1));
    }
    *o = '\0';
    return (size_t)(o - out);
}

/* ---- strings --------------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at p (at most n bytes), or 0 if it is not one. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned cp, min;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2, cp = c & 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3, cp = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return len;
}

int arrow_json_string(core_buf *out, const void *data, size_t n)
{
    const unsigned char *p = data;
    size_t start = out->len;
    int rc = core_buf_reserve(out, n + 2);
    if (rc) return rc;
    out->data[out->len++] = '"';
    size_t i = 0;
    while (i < n) {
        /* copy the longest run that needs no escape */
        size_t j = i;
        while (j < n && p[j] >= 0x20 && p[j] != '"' && p[j] != '\\' && p[j] < 0x80)
            j++;
        if (j > i && (rc = core_buf_append(out, p + i, j - i))) return rc;
        i = j;
        if (i >= n) break;
        unsigned char c = p[i];
        if (c >= 0x80) {
            size_t len = utf8_seq(p + i, n - i);
            if (len == 0) {
                out->len = start;
                out->data[start] = '\0';
                return core_err(OG_E_CORRUPT, "invalid UTF-8 at byte %zu of a string value", i);
            }
            if ((rc = core_buf_append(out, p + i, len))) return rc;
            i += len;
            continue;
        }
        char esc[8];
        switch (c) {
        case '"':
            strcpy(esc, "\\\"");
            break;
        case '\\':
            strcpy(esc, "\\\\");
            break;
        case '\b':
            strcpy(esc, "\\b");
            break;
        case '\f':
            strcpy(esc, "\\f");
            break;
        case '\n':
            strcpy(esc, "\\n");
            break;
        case '\r':
            strcpy(esc, "\\r");
            break;
        case '\t':
            strcpy(esc, "\\t");
            break;
        default:
            snprintf(esc, sizeof esc, "\\u%04x", c);
            break;
        }
        if ((rc = core_buf_append_str(out, esc))) return rc;
        i++;
    }
    return core_buf_append_byte(out, '"');
}

/* ---- dates and times ------------------------------------------------------------------------- */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}

/* Proleptic Gregorian date of a day count since 1970-01-01 (400-year eras of 146097 days,
 * years counted from March so the leap day ends the year). */
static void civil_from_days(int64_t days, int64_t *y, int *m, int *d)
{
    int64_t z = days + 719468; /* days since 0000-03-01 */
    int64_t era = floor_div(z, 146097);
    int64_t doe = z - era * 146097;                                      /* [0, 146096] */
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* [0, 365] */
    int64_t mp = (5 * doy + 2) / 153;                                    /* March = 0 */
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

static size_t format_ymd(char *out, size_t cap, int64_t days)
{
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    if (y >= 0 && y <= 9999)
        return (size_t)snprintf(out, cap, "%04lld-%02d-%02d", (long long)y, m, d);
    return (size_t)snprintf(out, cap, "%c%06lld-%02d-%02d", y < 0 ? '-' : '+',
                            (long long)(y < 0 ? -y : y), m, d);
}

size_t arrow_json_format_date(char out[24], int64_t days)
{
    return format_ymd(out, 24, days);
}

size_t arrow_json_format_instant(char out[48], int64_t v, int unit)
{
    static const int64_t per_sec[] = {1, 1000, 1000000, 1000000000};
    static const int digits[] = {0, 3, 6, 9};
    if (unit < 0 || unit > 3) unit = 0;
    int64_t secs = v / per_sec[unit], frac = v % per_sec[unit]; /* no overflow at INT64_MIN */
    if (frac < 0) {
        frac += per_sec[unit];
        secs--;
    }
    int64_t days = floor_div(secs, 86400);
    int64_t sod = secs - days * 86400;
    size_t n = format_ymd(out, 48, days);
    n += (size_t)snprintf(out + n, 48 - n, "T%02d:%02d:%02d", (int)(sod / 3600),
                          (int)(sod / 60 % 60), (int)(sod % 60));
    if (digits[unit])
        n += (size_t)snprintf(out + n, 48 - n, ".%0*lld", digits[unit], (long long)frac);
    n += (size_t)snprintf(out + n, 48 - n, "Z");
    return n;
}

/* ---- values ---------------------------------------------------------------------------------- */

static const char HEX[] = "0123456789abcdef";

static int put_quoted(core_buf *out, const char *s, size_t n)
{
    int rc = core_buf_reserve(out, n + 2);
    if (rc) return rc;
    out->data[out->len++] = '"';
    memcpy(out->data + out->len, s, n);
    out->len += n;
    out->data[out->len++] = '"';
    out->data[out->len] = '\0';
    return 0;
}

int arrow_json_value(core_buf *out, const arrow_array *a, int64_t i)
{
    if (!arrow_array_is_valid(a, i)) return core_buf_append(out, "null", 4);
    char tmp[64];
    size_t n;
    int rc;
    switch (a->type.id) {
    case ARROW_BOOL:
        return arrow_array_get_bool(a, i) ? core_buf_append(out, "true", 4)
                                          : core_buf_append(out, "false", 5);
    case ARROW_INT32:
    case ARROW_INT64:
        n = (size_t)snprintf(tmp, sizeof tmp, "%lld", (long long)arrow_array_get_int(a, i));
        return core_buf_append(out, tmp, n);
    case ARROW_UINT32:
    case ARROW_UINT64:
        n = (size_t)snprintf(tmp, sizeof tmp, "%llu",
                             (unsigned long long)arrow_array_get_uint(a, i));
        return core_buf_append(out, tmp, n);
    case ARROW_FLOAT32:
    case ARROW_FLOAT64:
        n = arrow_json_format_double(tmp, arrow_array_get_double(a, i));
        return core_buf_append(out, tmp, n);
    case ARROW_UTF8:
    case ARROW_LARGE_UTF8: {
        size_t len;
        const uint8_t *p = arrow_array_get_bytes(a, i, &len);
        return arrow_json_string(out, p, len);
    }
    case ARROW_BINARY:
    case ARROW_LARGE_BINARY: {
        size_t len;
        const uint8_t *p = arrow_array_get_bytes(a, i, &len);
        if ((rc = core_buf_reserve(out, 2 * len + 2))) return rc;
        out->data[out->len++] = '"';
        for (size_t k = 0; k < len; k++) {
            out->data[out->len++] = (unsigned char)HEX[p[k] >> 4];
            out->data[out->len++] = (unsigned char)HEX[p[k] & 15];
        }
        out->data[out->len++] = '"';
        out->data[out->len] = '\0';
        return 0;
    }
    case ARROW_DATE32:
        n = arrow_json_format_date(tmp, arrow_array_get_int(a, i));
        return put_quoted(out, tmp, n);
    case ARROW_DATE64:
        n = arrow_json_format_instant(tmp, arrow_array_get_int(a, i), ARROW_UNIT_MILLI);
        return put_quoted(out, tmp, n);
    case ARROW_TIMESTAMP:
        n = arrow_json_format_instant(tmp, arrow_array_get_int(a, i), (int)a->type.unit);
        return put_quoted(out, tmp, n);
    case ARROW_LIST:
    case ARROW_FIXED_SIZE_LIST: {
        int64_t s, e;
        if (a->type.id == ARROW_LIST) {
            arrow_array_list_range(a, i, &s, &e);
        } else {
            s = i * a->type.list_size;
            e = s + a->type.list_size;
        }
        if ((rc = core_buf_append_byte(out, '['))) return rc;
        for (int64_t k = s; k < e; k++) {
            if (k > s && (rc = core_buf_append_byte(out, ','))) return rc;
            if ((rc = arrow_json_value(out, a->children[0], k))) return rc;
        }
        return core_buf_append_byte(out, ']');
    }
    case ARROW_STRUCT:
        if ((rc = core_buf_append_byte(out, '{'))) return rc;
        for (size_t c = 0; c < a->n_children; c++) {
            const char *name = a->type.children[c].name ? a->type.children[c].name : "";
            if (c && (rc = core_buf_append_byte(out, ','))) return rc;
            if ((rc = arrow_json_string(out, name, strlen(name)))) return rc;
            if ((rc = core_buf_append_byte(out, ':'))) return rc;
            if ((rc = arrow_json_value(out, a->children[c], i))) return rc;
        }
        return core_buf_append_byte(out, '}');
    default: {
        char desc[64];
        arrow_type_describe(&a->type, desc, sizeof desc);
        return core_err(OG_E_UNSUPPORTED, "no JSON form for Arrow type %s", desc);
    }
    }
}

int arrow_json_row(core_buf *out, const arrow_batch *b, int64_t i)
{
    int rc = core_buf_append_byte(out, '{');
    for (size_t c = 0; c < b->n_columns && rc == 0; c++) {
        const char *name = b->schema.fields[c].name ? b->schema.fields[c].name : "";
        if (c) rc = core_buf_append_byte(out, ',');
        if (!rc) rc = arrow_json_string(out, name, strlen(name));
        if (!rc) rc = core_buf_append_byte(out, ':');
        if (!rc) rc = arrow_json_value(out, b->columns[c], i);
    }
    return rc ? rc : core_buf_append_byte(out, '}');
}
