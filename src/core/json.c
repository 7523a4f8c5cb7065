/* jansson wrappers. Errors carry the jansson position so bad input is easy to fix. */
#include "core/json.h"
#include "core/alloc.h"
#include "core/error.h"

#include <stdlib.h>
#include <string.h>

const char *core_json_error_text(const json_error_t *je)
{
    /* jansson's own text names its flag ("... without JSON_ALLOW_NUL"). */
    if (json_error_code(je) == json_error_null_character)
        return "\\u0000 (the NUL character) is not allowed in a string";
    return je->text;
}

/* jansson allocates through core_malloc, so that out-of-memory tests reach its allocations too.
 * Set when the library loads, and only over jansson's defaults: a host program that gave
 * jansson an allocator of its own keeps it (its objects must be freed by its own functions). */
static void *json_alloc(size_t n)
{
    return core_malloc(n);
}

__attribute__((constructor)) static void json_use_core_alloc(void)
{
    json_malloc_t m = NULL;
    json_free_t f = NULL;
    json_get_alloc_funcs(&m, &f);
    if (m == malloc && f == free) json_set_alloc_funcs(json_alloc, core_free);
}

json_t *core_json_loadb(const char *text, size_t len, size_t flags, json_error_t *je)
{
    memset(je, 0, sizeof *je);
    core_alloc_inject_hold();
    json_t *v = json_loadb(text, len, flags, je);
    core_alloc_inject_release();
    return v;
}

static int parse(json_t **out, const char *text, size_t len, const char *source, int code)
{
    json_error_t je;
    /* Input is refused when a string holds \u0000: every consumer reads strings as C strings,
     * so "ada\u0000x" would silently become "ada". Stored JSON is ours and read as it is. */
    size_t flags = JSON_REJECT_DUPLICATES | (code == OG_E_BAD_REQUEST ? 0 : JSON_ALLOW_NUL);
    uint64_t failures = core_alloc_failures();
    json_t *v = core_json_loadb(text, len, flags, &je);
    if (!v) {
        /* jansson does not always say that it ran out of memory (some paths leave the error
         * empty): an allocation that failed meanwhile says it. */
        if (json_error_code(&je) == json_error_out_of_memory || core_alloc_failures() != failures)
            return core_err_nomem();
        if (code == OG_E_BAD_REQUEST) {
            /* Said once, in the message: the text is not a file, so no file location. */
            core_err(code, "%s: invalid JSON at line %d, column %d: %s",
                     source ? source : "<input>", je.line, je.column, core_json_error_text(&je));
            core_err_set_location(NULL, je.line, je.column);
            return code;
        }
        core_err(code, "%s: damaged JSON at line %d column %d: %s", source ? source : "<stored>",
                 je.line, je.column, je.text);
        if (source) core_err_detail(CORE_ERR_OBJECT, source);
        return code;
    }
    *out = v;
    return 0;
}

int core_json_parse(json_t **out, const char *text, size_t len, const char *source)
{
    return parse(out, text, len, source, OG_E_BAD_REQUEST);
}

int core_json_parse_stored(json_t **out, const char *text, size_t len, const char *object)
{
    return parse(out, text, len, object, OG_E_CORRUPT);
}

static json_t *field(const json_t *obj, const char *key)
{
    return json_is_object(obj) ? json_object_get(obj, key) : NULL;
}

static int bad(int code, const char *what, const char *key, const char *want, const json_t *v)
{
    return core_err(code, "%s: field '%s' %s %s", what ? what : "record", key,
                    v ? "is not" : "is missing; expected", want);
}

int core_json_str(const json_t *obj, const char *key, const char **out, int code, const char *what)
{
    json_t *v = field(obj, key);
    if (!json_is_string(v)) return bad(code, what, key, "a string", v);
    *out = json_string_value(v);
    return 0;
}

int core_json_int(const json_t *obj, const char *key, int64_t *out, int code, const char *what)
{
    json_t *v = field(obj, key);
    if (!json_is_integer(v)) return bad(code, what, key, "an integer", v);
    *out = (int64_t)json_integer_value(v);
    return 0;
}

int core_json_u64(const json_t *obj, const char *key, uint64_t *out, int code, const char *what)
{
    json_t *v = field(obj, key);
    /* jansson integers are signed 64-bit; larger unsigned values are stored as strings. */
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return 0;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end = NULL;
        if (*s >= '0' && *s <= '9') {
            unsigned long long u = strtoull(s, &end, 10);
            if (end && *end == '\0') {
                *out = u;
                return 0;
            }
        }
    }
    return bad(code, what, key, "a non-negative integer", v);
}

int core_json_bool(const json_t *obj, const char *key, int *out, int code, const char *what)
{
    json_t *v = field(obj, key);
    if (!json_is_boolean(v)) return bad(code, what, key, "a boolean", v);
    *out = json_is_true(v);
    return 0;
}

int core_json_obj(const json_t *obj, const char *key, json_t **out, int code, const char *what)
{
    json_t *v = field(obj, key);
    if (!json_is_object(v)) return bad(code, what, key, "an object", v);
    *out = v;
    return 0;
}

int core_json_arr(const json_t *obj, const char *key, json_t **out, int code, const char *what)
{
    json_t *v = field(obj, key);
    if (!json_is_array(v)) return bad(code, what, key, "an array", v);
    *out = v;
    return 0;
}

/* The text goes straight into b through a callback, which also records a failed append:
 * jansson (2.14) ignores the result of writing an object's key, so json_dumps out of memory
 * can return a text with a key left out ({"":...} fragments) as if it were whole. */
typedef struct dump_sink {
    core_buf *b;
    int failed;
} dump_sink;

static int dump_append(const char *buf, size_t n, void *data)
{
    dump_sink *d = data;
    if (d->failed || core_buf_append(d->b, buf, n) != 0) d->failed = 1;
    return d->failed ? -1 : 0;
}

static int dump(const json_t *v, core_buf *b, size_t flags)
{
    size_t before = b->len;
    dump_sink d = {b, 0};
    int rc = json_dump_callback(v, dump_append, &d, flags | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    if (rc == 0 && !d.failed) return 0;
    core_buf_resize(b, before);
    return core_err_nomem();
}

int core_json_dump(const json_t *v, core_buf *b)
{
    return dump(v, b, JSON_COMPACT);
}

int core_json_dump_pretty(const json_t *v, core_buf *b)
{
    return dump(v, b, JSON_INDENT(2));
}

int core_json_dump_ascii(const json_t *v, core_buf *b)
{
    return dump(v, b, JSON_COMPACT | JSON_ENSURE_ASCII);
}
