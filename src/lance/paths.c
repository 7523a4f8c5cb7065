/* Names inside a Lance table: keys under the root, UUIDs, data and deletion file names, and
 * the store keys base paths name. */
#include "lance/paths.h"

#include "core/error.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

int lance_random_bytes(void *p, size_t n)
{
    unsigned char *b = p;
    while (n) {
        ssize_t r = getrandom(b, n, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            return core_err_storage(errno, "getrandom", "reading the system random source");
        }
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

void lance_uuid_format(const uint8_t b[16], char out[LANCE_UUID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[o++] = '-';
        out[o++] = hex[b[i] >> 4];
        out[o++] = hex[b[i] & 15];
    }
    out[o] = '\0';
}

int lance_uuid_new(char out[LANCE_UUID_LEN + 1])
{
    uint8_t b[16];
    int rc = lance_random_bytes(b, sizeof b);
    if (rc) return rc;
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    lance_uuid_format(b, out);
    return 0;
}

void lance_data_file_name_from(const uint8_t b[16], char out[LANCE_DATA_FILE_NAME_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (int i = 0; i < 3; i++)
        for (int bit = 7; bit >= 0; bit--)
            out[o++] = (char)('0' + ((b[i] >> bit) & 1));
    for (int i = 3; i < 16; i++) {
        out[o++] = hex[b[i] >> 4];
        out[o++] = hex[b[i] & 15];
    }
    memcpy(out + o, ".lance", 7);
}

int lance_data_file_name(char out[LANCE_DATA_FILE_NAME_LEN + 1])
{
    uint8_t b[16];
    int rc = lance_random_bytes(b, sizeof b);
    if (rc) return rc;
    lance_data_file_name_from(b, out);
    return 0;
}

int lance_key(char out[STORE_KEY_MAX], const char *root, const char *a, const char *b)
{
    int n = snprintf(out, STORE_KEY_MAX, "%s%s%s%s", root && root[0] ? root : "",
                     root && root[0] ? "/" : "", a, b ? b : "");
    if (n < 0 || n >= STORE_KEY_MAX) {
        core_err(OG_E_BAD_REQUEST, "lance object key under '%s' is longer than %d bytes",
                 root ? root : "", STORE_KEY_MAX - 1);
        return OG_E_BAD_REQUEST;
    }
    return 0;
}

int lance_deletion_file_name(char *out, size_t cap, uint64_t frag_id, uint64_t read_version,
                             uint64_t id, int bitmap)
{
    int n = snprintf(out, cap, "%" PRIu64 "-%" PRIu64 "-%" PRIu64 ".%s", frag_id, read_version, id,
                     bitmap ? "bin" : "arrow");
    if (n < 0 || (size_t)n >= cap)
        return core_err(OG_E_INTERNAL, "deletion file name buffer of %zu bytes is too small", cap);
    return 0;
}

/* ---- base paths ---------------------------------------------------------------------------- */

const char *lance_store_dir(store *s)
{
    for (int i = 0; s && i < 8; i++) {
        const char *r = store_local_root(s);
        if (r) return r;
        if (s->ops && s->ops->name && strcmp(s->ops->name, "fault") == 0)
            s = store_fault_inner(s);
        else
            break;
    }
    return NULL;
}

/* If p is prefix or lies under it, copy the rest (a key prefix, "" for prefix itself). */
static int strip_under(const char *prefix, const char *p, char out[STORE_KEY_MAX])
{
    size_t n = strlen(prefix);
    while (n > 1 && prefix[n - 1] == '/')
        n--;
    if (strncmp(p, prefix, n) != 0 || (p[n] != '\0' && p[n] != '/')) return 0;
    const char *rest = p + n;
    while (*rest == '/')
        rest++;
    size_t rl = strlen(rest);
    while (rl > 0 && rest[rl - 1] == '/')
        rl--;
    if (rl >= STORE_KEY_MAX) return 0;
    memcpy(out, rest, rl);
    out[rl] = '\0';
    return 1;
}

int lance_base_path_key(store *s, const char *path, char out[STORE_KEY_MAX])
{
    const char *p = path ? path : "";
    if (strncmp(p, "file://", 7) == 0) p += 7;
    int rc = 0;
    if (p[0] != '/') {
        /* A store key, as we write on stores without a local directory. */
        size_t n = strlen(p);
        while (n > 0 && p[n - 1] == '/')
            n--;
        if (n >= STORE_KEY_MAX) return core_err(OG_E_UNSUPPORTED, "base path '%s' is too long", p);
        memcpy(out, p, n);
        out[n] = '\0';
        if (n && store_key_check(out) != 0) {
            core_err(OG_E_UNSUPPORTED, "base path '%s' is neither absolute nor a store key", path);
            core_err_detail(CORE_ERR_OBJECT, path);
            return OG_E_UNSUPPORTED;
        }
        return 0;
    }
    const char *lr = lance_store_dir(s);
    if (!lr) {
        core_err(OG_E_UNSUPPORTED,
                 "base path '%s' is a filesystem path but the store is not a "
                 "local directory",
                 path);
        core_err_detail(CORE_ERR_OBJECT, path);
        return OG_E_UNSUPPORTED;
    }
    char rroot[PATH_MAX], rpath[PATH_MAX];
    int found = strip_under(lr, p, out);
    if (!found && realpath(lr, rroot)) {
        found = strip_under(rroot, p, out);
        if (!found && realpath(p, rpath)) found = strip_under(rroot, rpath, out);
    }
    if (found && out[0] && store_key_check(out) != 0) found = 0;
    if (!found) {
        core_err(OG_E_UNSUPPORTED, "base path '%s' lies outside the store at '%s'", path, lr);
        core_err_detail(CORE_ERR_OBJECT, path);
        rc = OG_E_UNSUPPORTED;
    }
    return rc;
}
