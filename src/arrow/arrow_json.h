/* The canonical JSON form of Arrow values and rows (tests/interop/README.md, "The canonical
 * dump"): what `omnigraph lance cat --json` prints and the interop suite compares byte for byte
 * with lancedb's side.
 *
 *  - integers in full 64-bit precision; float64 as the shortest decimal that reads back as the
 *    same double, laid out as ECMAScript Number#toString does ("-0" prints "0"; NaN and the
 *    infinities are the strings "NaN", "Infinity", "-Infinity"); float32 widened exactly;
 *  - utf8 as a JSON string escaped as JSON.stringify does; invalid UTF-8 is OG_E_CORRUPT;
 *  - binary as lowercase hex; dates and timestamps as ISO strings (UTC, floor toward earlier
 *    times, years outside 0000-9999 as a sign and 6 digits);
 *  - lists as arrays, structs as objects in field order, null as null.
 *
 * Every function appends to a core_buf and returns 0 or a negative og_code (OG_E_NOMEM,
 * OG_E_CORRUPT, OG_E_UNSUPPORTED for a type it has no form for). */
#ifndef OG_ARROW_ARROW_JSON_H
#define OG_ARROW_ARROW_JSON_H

#include "arrow/arrow.h"
#include "core/buf.h"

#include <stddef.h>
#include <stdint.h>

/* Room for any arrow_json_format_double result plus the NUL. */
#define ARROW_JSON_DOUBLE_CAP 40

/* The canonical text of a double into out (NUL-terminated); returns its length. NaN and the
 * infinities give the quoted strings. */
size_t arrow_json_format_double(char out[ARROW_JSON_DOUBLE_CAP], double x);

/* A JSON string literal of n bytes of UTF-8. OG_E_CORRUPT (and nothing appended) if the bytes
 * are not valid UTF-8 (overlong forms, surrogates and code points above U+10FFFF included). */
int arrow_json_string(core_buf *out, const void *p, size_t n);

/* Days since 1970-01-01 as "YYYY-MM-DD" (NUL-terminated, at most 16 bytes with the NUL). */
size_t arrow_json_format_date(char out[24], int64_t days);
/* An instant as "YYYY-MM-DDTHH:MM:SS[.f]Z": v counts units (0 s, 1 ms, 2 us, 3 ns) since the
 * epoch; 0/3/6/9 fraction digits. At most 40 bytes with the NUL. */
size_t arrow_json_format_instant(char out[48], int64_t v, int unit);

/* Row i of array a as a JSON value. */
int arrow_json_value(core_buf *out, const arrow_array *a, int64_t i);

/* Row i of the batch as a JSON object whose keys are the column names, in column order (no
 * trailing newline). */
int arrow_json_row(core_buf *out, const arrow_batch *b, int64_t i);

#endif
