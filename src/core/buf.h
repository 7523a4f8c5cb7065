/* Growable byte buffer, also used as a string builder (always NUL-terminated past len). */
#ifndef OG_CORE_BUF_H
#define OG_CORE_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct core_buf {
    unsigned char *data;
    size_t len;
    size_t cap;
} core_buf;

#define CORE_BUF_INIT                                                                              \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* Make room for `extra` more bytes. 0 or OG_E_NOMEM/OG_E_RESOURCE_LIMIT. */
int core_buf_reserve(core_buf *b, size_t extra);
int core_buf_append(core_buf *b, const void *p, size_t n);
int core_buf_append_str(core_buf *b, const char *s);
int core_buf_append_byte(core_buf *b, unsigned char c);
int core_buf_printf(core_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append n zero bytes. */
int core_buf_append_zeros(core_buf *b, size_t n);
/* Little-endian fixed-width appends. */
int core_buf_append_u16le(core_buf *b, uint16_t v);
int core_buf_append_u32le(core_buf *b, uint32_t v);
int core_buf_append_u64le(core_buf *b, uint64_t v);
/* Resize to exactly n bytes (growing fills with zeros). */
int core_buf_resize(core_buf *b, size_t n);
void core_buf_clear(core_buf *b);
/* Give the bytes away: returns data (caller frees with core_free) and resets b. */
unsigned char *core_buf_detach(core_buf *b, size_t *len);
void core_buf_free(core_buf *b);
/* The contents as a C string (never NULL). */
const char *core_buf_cstr(const core_buf *b);

#endif
