/* Internal side of the error model: set the calling thread's og_error and return its code.
 * Every failing path calls one of these exactly once, so og_error_last() is never stale. */
#ifndef OG_CORE_ERROR_H
#define OG_CORE_ERROR_H

#include "omnigraph.h"
#include <stdarg.h>

#if defined(__GNUC__)
#define CORE_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CORE_PRINTF(a, b)
#endif

/* Clear all details and set code + message. Returns code (so `return core_err(...)` works). */
int core_err(int code, const char *fmt, ...) CORE_PRINTF(2, 3);
int core_err_v(int code, const char *fmt, va_list ap);
/* A storage failure from errno `e` while touching `object`: the kind follows from e. */
int core_err_storage(int e, const char *object, const char *fmt, ...) CORE_PRINTF(3, 4);
/* Out of memory; never allocates. */
int core_err_nomem(void);
/* A bad request at file:line:column. */
int core_err_at(const char *file, int line, int column, const char *fmt, ...) CORE_PRINTF(4, 5);

/* Detail setters: attach to the error most recently set on this thread. */
typedef enum core_err_field {
    CORE_ERR_OBJECT,
    CORE_ERR_OPERATION_ID,
    CORE_ERR_MEMBER,
    CORE_ERR_EXPECTED,
    CORE_ERR_ACTUAL,
    CORE_ERR_KEY,
    CORE_ERR_FILE,
    CORE_ERR_FIELD_COUNT
} core_err_field;
void core_err_detail(core_err_field field, const char *value);
void core_err_set_storage_kind(int kind, int sys_errno);
/* Locate the error most recently set (any code): file (may be NULL), 1-based line and column
 * (0 if unknown). For errors other than OG_E_BAD_REQUEST that still come from a source line. */
void core_err_set_location(const char *file, int line, int column);

/* Prefix the current message with context ("reading manifest x: <old message>"). */
void core_err_prefix(const char *fmt, ...) CORE_PRINTF(1, 2);

/* A copy of one thread's error, to raise it again on another (a worker's failure re-raised by
 * the thread that joins it, with its code, message, details and location). */
#define CORE_ERR_MSG_CAP 1024
#define CORE_ERR_DETAIL_CAP 512
typedef struct core_err_saved {
    og_error pub;
    char message[CORE_ERR_MSG_CAP];
    char details[CORE_ERR_FIELD_COUNT][CORE_ERR_DETAIL_CAP];
} core_err_saved;
void core_err_save(core_err_saved *out);
/* Make a saved error the calling thread's; returns its code. */
int core_err_restore(const core_err_saved *saved);

/* Map an errno to an og_storage_kind. */
int core_storage_kind_of_errno(int e);

#endif
