/* The helpers every omnigraph command shares: one error printer (text or JSON) and the exit
 * code of each og_code, the usage-error printer, the input-file reader and JSON strings. A
 * command reports every failure through these, so the forms docs/cli.md promises hold for all
 * of them. */
#include "omnigraph.h"
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- JSON ------------------------------------------------------------------------------- */

void cli_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        default:
            if (*p < 0x20)
                fprintf(f, "\\u%04x", *p);
            else
                fputc(*p, f);
        }
    }
    fputc('"', f);
}

void cli_json_write_tables(FILE *f, const og_write_result *r)
{
    fputc('[', f);
    for (size_t i = 0; i < og_write_result_table_count(r); i++) {
        const og_table_change *t = og_write_result_table(r, i);
        fprintf(f, "%s{\"alias\":", i ? "," : "");
        cli_json_str(f, t->alias);
        fprintf(f, ",\"from_version\":%llu,\"to_version\":%llu,\"row_count\":%llu}",
                (unsigned long long)t->from_version, (unsigned long long)t->to_version,
                (unsigned long long)t->row_count);
    }
    fputc(']', f);
}

/* ---- errors and exit codes ---------------------------------------------------------------- */

int cli_exit_code(int code)
{
    switch (code) {
    case OG_OK:
        return CLI_OK;
    case OG_E_READ_SET_CONFLICT:
    case OG_E_CONFLICT:
        return CLI_CONFLICT;
    case OG_E_PRECONDITION_FAILED:
        return CLI_PRECONDITION;
    case OG_E_RECOVERY_REQUIRED:
        return CLI_RECOVERY;
    case OG_E_MERGE_CONFLICTS:
        return CLI_MERGE_CONFLICTS;
    default:
        return CLI_ERROR;
    }
}

/* Whether the command line asked for --json (main sets it before dispatching). */
static int g_json_requested;

/* ---- warnings ---------------------------------------------------------------------------- */

#define CLI_WARNINGS_MAX 16
static char *g_warnings[CLI_WARNINGS_MAX];
static size_t g_n_warnings;

void cli_warning_keep(const char *message)
{
    if (g_n_warnings == CLI_WARNINGS_MAX) return;
    for (size_t i = 0; i < g_n_warnings; i++)
        if (strcmp(g_warnings[i], message) == 0) return; /* the same damage, met twice */
    size_t len = strlen(message);
    char *m = malloc(len + 1);
    if (!m) return;
    memcpy(m, message, len + 1);
    g_warnings[g_n_warnings++] = m;
}

void cli_json_warnings(FILE *f)
{
    if (!g_n_warnings) return;
    fputs(",\"warnings\":[", f);
    for (size_t i = 0; i < g_n_warnings; i++) {
        if (i) fputc(',', f);
        cli_json_str(f, g_warnings[i]);
    }
    fputc(']', f);
}

void cli_set_json_requested(int on)
{
    g_json_requested = on;
}

/* One error as the members "ok":false,"error":{...} (no braces around them): the code's name,
 * the message and whichever details e has (e may be NULL: none). */
static void print_json_error_members(const char *code, const char *message, const og_error *e,
                                     const char *object)
{
    printf("\"ok\":false,\"error\":{\"code\":");
    cli_json_str(stdout, code);
    printf(",\"message\":");
    cli_json_str(stdout, message);
    if (e && e->code == OG_E_STORAGE) {
        printf(",\"storage_kind\":");
        cli_json_str(stdout, og_storage_kind_name(e->storage_kind));
    }
    const char *names[] = {"object", "operation_id", "member", "expected", "actual", "key", "file"};
    const char *vals[] = {object, NULL, NULL, NULL, NULL, NULL, NULL};
    if (e) {
        const char *details[] = {e->object, e->operation_id, e->member, e->expected,
                                 e->actual, e->key,          e->file};
        memcpy(vals, details, sizeof vals);
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!vals[i]) continue;
        printf(",\"%s\":", names[i]);
        cli_json_str(stdout, vals[i]);
    }
    if (e && e->line) printf(",\"line\":%d,\"column\":%d", e->line, e->column);
    printf("}");
}

/* The same as a whole object on its own line. */
static void print_json_error(const char *code, const char *message, const og_error *e,
                             const char *object)
{
    printf("{");
    print_json_error_members(code, message, e, object);
    printf("}\n");
}

void cli_error_text(const char *code, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (msg[0])
        fprintf(stderr, "omnigraph: error[%s]: %s\n", code, msg);
    else /* the message was printed already, located in its file */
        fprintf(stderr, "omnigraph: error[%s]\n", code);
}

static int report(int json, int write)
{
    const og_error *e = og_error_last();
    const char *code = og_code_name(e->code);
    if (json) {
        print_json_error(code, e->message, e, NULL);
    } else if (e->file && e->line > 0) {
        const char *msg = e->message;
        /* The loader's messages start with "line N: ": the location already says it. */
        char prefix[32];
        int pl = snprintf(prefix, sizeof prefix, "line %d: ", e->line);
        if (pl > 0 && !strncmp(msg, prefix, (size_t)pl)) msg += pl;
        if (e->column > 0)
            fprintf(stderr, "%s:%d:%d: %s\n", e->file, e->line, e->column, msg);
        else
            fprintf(stderr, "%s:%d: %s\n", e->file, e->line, msg);
        cli_error_text(code, "%s", write ? "nothing was written" : "");
    } else {
        cli_error_text(code, "%s", e->message);
        if (write) fprintf(stderr, "omnigraph: nothing was written\n");
    }
    return cli_exit_code(e->code);
}

int cli_fail(int json)
{
    return report(json, 0);
}

int cli_fail_write(int json)
{
    return report(json, 1);
}

int cli_fail_json_end(void)
{
    const og_error *e = og_error_last();
    printf(",");
    print_json_error_members(og_code_name(e->code), e->message, e, NULL);
    printf("}\n");
    return cli_exit_code(e->code);
}

int cli_usage_error(const cli_cmd *cmd, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (g_json_requested) {
        printf("{\"ok\":false,\"error\":{\"code\":\"usage\",\"message\":");
        cli_json_str(stdout, msg);
        if (cmd) {
            printf(",\"usage\":");
            cli_json_str(stdout, cmd->usage);
        }
        printf("}}\n");
        return CLI_USAGE;
    }
    cli_error_text("usage", "%s", msg);
    if (cmd) fprintf(stderr, "usage: %s\n", cmd->usage);
    return CLI_USAGE;
}

/* ---- input files -------------------------------------------------------------------------- */

/* A file that could not be read: errno `err` says why. */
static int file_error(cli_file *f, const char *path, int err, int json)
{
    cli_file_close(f);
    char msg[1024];
    snprintf(msg, sizeof msg, "cannot read %s: %s", path, strerror(err));
    const char *code = err == ENOENT || err == ENOTDIR ? "not_found" : "storage";
    if (json)
        print_json_error(code, msg, NULL, path);
    else
        cli_error_text(code, "%s", msg);
    return CLI_ERROR;
}

/* Read what fd gives until its end (a pipe, a character device). */
static int read_all(cli_file *f, int fd)
{
    size_t cap = 0;
    for (;;) {
        if (f->len == cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *n = realloc(f->buf_, ncap);
            if (!n) return ENOMEM;
            f->buf_ = n;
            cap = ncap;
        }
        ssize_t got = read(fd, f->buf_ + f->len, cap - f->len);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return errno;
        if (got == 0) return 0;
        f->len += (size_t)got;
    }
}

int cli_file_open(cli_file *f, const char *path, int json)
{
    memset(f, 0, sizeof *f);
    f->name = path;
    f->data = "";
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return file_error(f, path, errno, json);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return file_error(f, path, err, json);
    }
    int err = 0;
    if (S_ISDIR(st.st_mode)) {
        err = EISDIR;
    } else if (S_ISREG(st.st_mode)) {
        f->len = (size_t)st.st_size;
        if (f->len) {
            void *p = mmap(NULL, f->len, PROT_READ, MAP_PRIVATE, fd, 0);
            if (p == MAP_FAILED)
                err = errno;
            else
                f->map_ = p;
        }
    } else {
        err = read_all(f, fd);
    }
    close(fd);
    if (err) return file_error(f, path, err, json);
    f->name = path;
    if (f->map_)
        f->data = f->map_;
    else if (f->buf_)
        f->data = f->buf_;
    return CLI_OK;
}

void cli_file_close(cli_file *f)
{
    if (f->map_) munmap(f->map_, f->len);
    free(f->buf_);
    memset(f, 0, sizeof *f);
    f->data = "";
}

void cli_print_bytes(uint64_t b)
{
    if (b >= (10u << 20))
        printf("%.1f MiB", (double)b / (1 << 20));
    else if (b >= (10u << 10))
        printf("%.1f KiB", (double)b / (1 << 10));
    else
        printf("%llu bytes", (unsigned long long)b);
}

/* The i-th conflict of m, or else of a (NULL past the last). */
static const og_merge_conflict *conflict_at(const og_merge_result *m,
                                            const og_schema_apply_result *a, size_t i)
{
    return m ? og_merge_result_conflict(m, i) : og_schema_apply_result_violation(a, i);
}

void cli_conflicts_json(const og_merge_result *m, const og_schema_apply_result *a)
{
    putchar('[');
    const og_merge_conflict *c;
    for (size_t i = 0; (c = conflict_at(m, a, i)) != NULL; i++) {
        printf("%s{\"kind\":", i ? "," : "");
        cli_json_str(stdout, c->kind);
        printf(",\"type\":");
        cli_json_str(stdout, c->type);
        printf(",\"id\":");
        if (c->id)
            cli_json_str(stdout, c->id);
        else
            fputs("null", stdout);
        printf(",\"message\":");
        cli_json_str(stdout, c->message);
        putchar('}');
    }
    putchar(']');
}

void cli_conflicts_text(const og_merge_result *m, const og_schema_apply_result *a)
{
    const og_merge_conflict *c;
    for (size_t i = 0; (c = conflict_at(m, a, i)) != NULL; i++)
        fprintf(stderr, "  %s  %s%s%s: %s\n", c->kind, c->type, c->id ? " " : "",
                c->id ? c->id : "", c->message);
}
