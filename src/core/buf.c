/* Growable buffer with doubling growth and a trailing NUL kept outside len. */
#include "core/buf.h"
#include "core/alloc.h"
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int core_buf_reserve(core_buf *b, size_t extra)
{
    size_t need;
    if (core_size_add(&need, b->len, extra) != 0 || core_size_add(&need, need, 1) != 0)
        return core_err(OG_E_RESOURCE_LIMIT, "buffer size overflows");
    if (need <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    unsigned char *p = core_realloc(b->data, cap);
    if (!p) return core_err_nomem();
    b->data = p;
    b->cap = cap;
    return 0;
}

int core_buf_append(core_buf *b, const void *p, size_t n)
{
    int rc = core_buf_reserve(b, n);
    if (rc) return rc;
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int core_buf_append_str(core_buf *b, const char *s)
{
    return core_buf_append(b, s, strlen(s));
}

int core_buf_append_byte(core_buf *b, unsigned char c)
{
    return core_buf_append(b, &c, 1);
}

int core_buf_append_zeros(core_buf *b, size_t n)
{
    int rc = core_buf_reserve(b, n);
    if (rc) return rc;
    memset(b->data + b->len, 0, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int core_buf_append_u16le(core_buf *b, uint16_t v)
{
    unsigned char t[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
    return core_buf_append(b, t, 2);
}

int core_buf_append_u32le(core_buf *b, uint32_t v)
{
    unsigned char t[4];
    for (int i = 0; i < 4; i++)
        t[i] = (unsigned char)(v >> (8 * i));
    return core_buf_append(b, t, 4);
}

int core_buf_append_u64le(core_buf *b, uint64_t v)
{
    unsigned char t[8];
    for (int i = 0; i < 8; i++)
        t[i] = (unsigned char)(v >> (8 * i));
    return core_buf_append(b, t, 8);
}

int core_buf_printf(core_buf *b, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    int rc = n < 0 ? core_err(OG_E_INTERNAL, "bad format string") : core_buf_reserve(b, (size_t)n);
    if (rc == 0) {
        vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
    return rc;
}

int core_buf_resize(core_buf *b, size_t n)
{
    if (n > b->len) return core_buf_append_zeros(b, n - b->len);
    b->len = n;
    if (b->data) b->data[n] = '\0';
    return 0;
}

void core_buf_clear(core_buf *b)
{
    b->len = 0;
    if (b->data) b->data[0] = '\0';
}

unsigned char *core_buf_detach(core_buf *b, size_t *len)
{
    unsigned char *d = b->data;
    if (len) *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return d;
}

void core_buf_free(core_buf *b)
{
    core_free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

const char *core_buf_cstr(const core_buf *b)
{
    return b->data ? (const char *)b->data : "";
}
