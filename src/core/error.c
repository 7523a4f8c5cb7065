/* Thread-local error state behind og_error_last(). Fixed-size buffers per thread, so setting
 * an error never allocates and an out-of-memory error can always be reported. */
#include "core/error.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define MSG_CAP CORE_ERR_MSG_CAP
#define DETAIL_CAP CORE_ERR_DETAIL_CAP

typedef core_err_saved err_state;

static _Thread_local err_state tls_err = {.pub = {.message = ""}};

static void reset(int code)
{
    memset(&tls_err.pub, 0, sizeof tls_err.pub);
    tls_err.pub.code = code;
    tls_err.message[0] = '\0';
    tls_err.pub.message = tls_err.message;
}

const og_error *og_error_last(void)
{
    if (!tls_err.pub.message) tls_err.pub.message = tls_err.message;
    return &tls_err.pub;
}

void og_error_clear(void)
{
    reset(OG_OK);
}

int core_err_v(int code, const char *fmt, va_list ap)
{
    reset(code);
    vsnprintf(tls_err.message, MSG_CAP, fmt, ap);
    return code;
}

int core_err(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    core_err_v(code, fmt, ap);
    va_end(ap);
    return code;
}

int core_err_nomem(void)
{
    reset(OG_E_NOMEM);
    snprintf(tls_err.message, MSG_CAP, "out of memory");
    return OG_E_NOMEM;
}

int core_storage_kind_of_errno(int e)
{
    switch (e) {
    case ENOSPC:
    case EDQUOT:
        return OG_STORAGE_NO_SPACE;
    case EACCES:
    case EPERM:
    case EROFS:
        return OG_STORAGE_PERMISSION;
    case ENOTSUP:
#if EOPNOTSUPP != ENOTSUP
    case EOPNOTSUPP:
#endif
    case EXDEV:
        return OG_STORAGE_UNSUPPORTED;
    default:
        return OG_STORAGE_IO;
    }
}

int core_err_storage(int e, const char *object, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    core_err_v(OG_E_STORAGE, fmt, ap);
    va_end(ap);
    size_t n = strlen(tls_err.message);
    if (e && n < MSG_CAP - 1) snprintf(tls_err.message + n, MSG_CAP - n, ": %s", strerror(e));
    tls_err.pub.storage_kind = core_storage_kind_of_errno(e);
    tls_err.pub.sys_errno = e;
    if (object) core_err_detail(CORE_ERR_OBJECT, object);
    return OG_E_STORAGE;
}

int core_err_at(const char *file, int line, int column, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    core_err_v(OG_E_BAD_REQUEST, fmt, ap);
    va_end(ap);
    if (file) core_err_detail(CORE_ERR_FILE, file);
    tls_err.pub.line = line;
    tls_err.pub.column = column;
    return OG_E_BAD_REQUEST;
}

void core_err_detail(core_err_field field, const char *value)
{
    if (field < 0 || field >= CORE_ERR_FIELD_COUNT) return;
    char *dst = tls_err.details[field];
    snprintf(dst, DETAIL_CAP, "%s", value ? value : "");
    const char *v = value ? dst : NULL;
    switch (field) {
    case CORE_ERR_OBJECT:
        tls_err.pub.object = v;
        break;
    case CORE_ERR_OPERATION_ID:
        tls_err.pub.operation_id = v;
        break;
    case CORE_ERR_MEMBER:
        tls_err.pub.member = v;
        break;
    case CORE_ERR_EXPECTED:
        tls_err.pub.expected = v;
        break;
    case CORE_ERR_ACTUAL:
        tls_err.pub.actual = v;
        break;
    case CORE_ERR_KEY:
        tls_err.pub.key = v;
        break;
    case CORE_ERR_FILE:
        tls_err.pub.file = v;
        break;
    default:
        break;
    }
}

void core_err_save(core_err_saved *out)
{
    (void)og_error_last();
    *out = tls_err;
}

int core_err_restore(const core_err_saved *saved)
{
    tls_err = *saved;
    /* the pointers pointed into the saved copy's buffers: point them into ours */
    tls_err.pub.message = tls_err.message;
    const char **field[CORE_ERR_FIELD_COUNT] = {
        [CORE_ERR_OBJECT] = &tls_err.pub.object,
        [CORE_ERR_OPERATION_ID] = &tls_err.pub.operation_id,
        [CORE_ERR_MEMBER] = &tls_err.pub.member,
        [CORE_ERR_EXPECTED] = &tls_err.pub.expected,
        [CORE_ERR_ACTUAL] = &tls_err.pub.actual,
        [CORE_ERR_KEY] = &tls_err.pub.key,
        [CORE_ERR_FILE] = &tls_err.pub.file,
    };
    for (int f = 0; f < CORE_ERR_FIELD_COUNT; f++)
        if (field[f] && *field[f]) *field[f] = tls_err.details[f];
    return tls_err.pub.code;
}

void core_err_set_storage_kind(int kind, int sys_errno)
{
    tls_err.pub.storage_kind = kind;
    tls_err.pub.sys_errno = sys_errno;
}

void core_err_set_location(const char *file, int line, int column)
{
    if (file) core_err_detail(CORE_ERR_FILE, file);
    tls_err.pub.line = line;
    tls_err.pub.column = column;
}

void core_err_prefix(const char *fmt, ...)
{
    char prefix[MSG_CAP], old[MSG_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, tls_err.message, MSG_CAP);
    /* Truncation is fine here: the message is for people, and stays NUL-terminated. */
    size_t n = strnlen(prefix, MSG_CAP - 3);
    memcpy(tls_err.message, prefix, n);
    memcpy(tls_err.message + n, ": ", 2);
    size_t rest = MSG_CAP - 1 - (n + 2);
    size_t m = strnlen(old, rest);
    memcpy(tls_err.message + n + 2, old, m);
    tls_err.message[n + 2 + m] = '\0';
}

const char *og_code_name(int code)
{
    switch (code) {
    case OG_OK:
        return "ok";
    case OG_ITER_OVER:
        return "iter_over";
    case OG_E_STORAGE:
        return "storage";
    case OG_E_NOT_FOUND:
        return "not_found";
    case OG_E_EXISTS:
        return "exists";
    case OG_E_BAD_REQUEST:
        return "bad_request";
    case OG_E_READ_SET_CONFLICT:
        return "read_set_conflict";
    case OG_E_KEY_CONFLICT:
        return "key_conflict";
    case OG_E_MERGE_CONFLICTS:
        return "merge_conflicts";
    case OG_E_RECOVERY_REQUIRED:
        return "recovery_required";
    case OG_E_PRECONDITION_FAILED:
        return "precondition_failed";
    case OG_E_RESOURCE_LIMIT:
        return "resource_limit";
    case OG_E_CORRUPT:
        return "corrupt";
    case OG_E_UNSUPPORTED:
        return "unsupported";
    case OG_E_CONFLICT:
        return "conflict";
    case OG_E_NOMEM:
        return "nomem";
    case OG_E_INTERNAL:
        return "internal";
    default:
        return "unknown";
    }
}

const char *og_storage_kind_name(int kind)
{
    switch (kind) {
    case OG_STORAGE_NONE:
        return "none";
    case OG_STORAGE_IO:
        return "io";
    case OG_STORAGE_NO_SPACE:
        return "no_space";
    case OG_STORAGE_PERMISSION:
        return "permission";
    case OG_STORAGE_CRASHED:
        return "crashed";
    case OG_STORAGE_UNSUPPORTED:
        return "unsupported";
    default:
        return "unknown";
    }
}
