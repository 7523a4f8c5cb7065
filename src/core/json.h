/* JSON helpers over jansson: parsing with located errors, typed field access that reports
 * what is missing or mistyped, and deterministic (sorted, compact) serialisation. */
#ifndef OG_CORE_JSON_H
#define OG_CORE_JSON_H

#include "core/buf.h"
#include <jansson.h>
#include <stdint.h>

/* Parse `len` bytes of `text` (a JSON text given directly, such as query params). On failure:
 * OG_E_BAD_REQUEST "SOURCE: invalid JSON at line L, column C: ...", with line and column in
 * the error but no file (the text is not one). A string holding \u0000 is refused: strings
 * are used as C strings. */
int core_json_parse(json_t **out, const char *text, size_t len, const char *source);
/* As core_json_parse, but the bytes come from storage: failure is OG_E_CORRUPT. */
int core_json_parse_stored(json_t **out, const char *text, size_t len, const char *object);

/* The text of a jansson parse error for people: jansson's own, except where it names a
 * library flag (a string holding \u0000). */
const char *core_json_error_text(const json_error_t *je);

/* Typed field access. `code` is the error returned when the field is missing or mistyped
 * (OG_E_BAD_REQUEST for user input, OG_E_CORRUPT for stored records); `what` names the
 * record in the message. Borrowed results live as long as obj. */
int core_json_str(const json_t *obj, const char *key, const char **out, int code, const char *what);
int core_json_int(const json_t *obj, const char *key, int64_t *out, int code, const char *what);
int core_json_u64(const json_t *obj, const char *key, uint64_t *out, int code, const char *what);
int core_json_bool(const json_t *obj, const char *key, int *out, int code, const char *what);
int core_json_obj(const json_t *obj, const char *key, json_t **out, int code, const char *what);
int core_json_arr(const json_t *obj, const char *key, json_t **out, int code, const char *what);

/* json_loadb, without an injected allocation failure inside it (core_alloc_inject_hold):
 * jansson 2.14's lexer drops a failed allocation and goes on with its buffer out of step with
 * its input, then reads and writes past it (jansson issue #362). Tests still fail the
 * allocations around a parse; a real out-of-memory inside one is jansson's to survive.
 * Every parse of JSON text in src/ goes through this. */
json_t *core_json_loadb(const char *text, size_t len, size_t flags, json_error_t *je);

/* Serialise compactly with sorted keys, appended to b. */
int core_json_dump(const json_t *v, core_buf *b);
/* Serialise for people: indented, sorted keys. */
int core_json_dump_pretty(const json_t *v, core_buf *b);
/* Serialise compactly with sorted keys and only ASCII (\uXXXX escapes), appended to b. */
int core_json_dump_ascii(const json_t *v, core_buf *b);

#endif
