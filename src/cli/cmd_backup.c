/* omnigraph export|backup: a graph written out as the load format (JSONL that `load` reads
 * back into a fresh graph), and a consistent copy of a graph root taken while writers run.
 * Both open the graph read-only: they write nothing to it. Uses only the public API
 * (docs/cli.md, docs/maintenance.md "Backups"). */
#include "omnigraph.h"
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int cmd_export(int argc, char **argv);
static int cmd_backup(int argc, char **argv);

const cli_cmd cli_backup_commands[] = {
    {"export", cmd_export, "write a graph's rows as JSONL that `load` reads back",
     "omnigraph export [--branch B] [--at REF] [--type T]... [--out FILE [--json]] "
     "(--store ROOT | ROOT)"},
    {"backup", cmd_backup, "copy a graph consistently, while writers run, into a new directory",
     "omnigraph backup [--branch main] [--json] (--store ROOT DEST | ROOT DEST)"},
    CLI_TABLE_END,
};

#define MAX_TYPES 256

typedef struct backup_args {
    const char *root, *dest, *at, *out, *branch;
    const char *types[MAX_TYPES];
    size_t n_types;
    int json;
} backup_args;

/* Parse argv[1..argc). `allowed` letters: t=--at T=--type o=--out; --store, --branch and
 * --json always. `words`: bare words besides the root (backup: DEST). */
static int parse(backup_args *a, const cli_cmd *self, int argc, char **argv, const char *allowed,
                 int words)
{
    memset(a, 0, sizeof *a);
    const char *bare[3] = {NULL, NULL, NULL};
    int n_bare = 0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char **slot = NULL;
        if (!strcmp(o, "--json")) {
            a->json = 1;
            continue;
        }
        if (o[0] != '-' || !o[1]) {
            if (n_bare == words + 1) return cli_usage_error(self, "unexpected argument '%s'", o);
            bare[n_bare++] = o;
            continue;
        }
        if (!strcmp(o, "--store"))
            slot = &a->root;
        else if (!strcmp(o, "--branch"))
            slot = &a->branch;
        else if (!strcmp(o, "--at") && strchr(allowed, 't'))
            slot = &a->at;
        else if (!strcmp(o, "--out") && strchr(allowed, 'o'))
            slot = &a->out;
        else if (!(!strcmp(o, "--type") && strchr(allowed, 'T')))
            return cli_usage_error(self, "unknown option '%s'", o);
        if (i + 1 >= argc || !argv[i + 1][0]) return cli_usage_error(self, "%s needs a value", o);
        if (!slot) { /* --type, which repeats */
            if (a->n_types == MAX_TYPES)
                return cli_usage_error(self, "--type given more than %d times", MAX_TYPES);
            a->types[a->n_types++] = argv[++i];
            continue;
        }
        if (*slot) return cli_usage_error(self, "%s given twice", o);
        *slot = argv[++i];
    }
    /* Bare words: the root (unless --store gave it), then the command's own. */
    int w = 0;
    if (!a->root && n_bare)
        a->root = bare[w++];
    else if (a->root && n_bare > words)
        return cli_usage_error(self, "the root is given twice (--store and '%s')", bare[0]);
    if (!a->root) return cli_usage_error(self, "missing the graph root (--store ROOT or ROOT)");
    if (words) {
        if (w >= n_bare) return cli_usage_error(self, "missing DEST (the backup's directory)");
        a->dest = bare[w];
    }
    return 0;
}

static int open_readonly(og_graph **g, const char *root)
{
    og_open_options o = OG_OPEN_OPTIONS_INIT;
    o.read_only = 1;
    return og_graph_open(g, root, &o);
}

/* A failure of the CLI's own file handling (not the library's), reported as cli_fail would. */
static int file_failure(int json, const char *path, const char *what, int err)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s %s: %s", what, path, strerror(err));
    if (json) {
        printf("{\"ok\":false,\"error\":{\"code\":\"storage\",\"message\":");
        cli_json_str(stdout, msg);
        printf(",\"object\":");
        cli_json_str(stdout, path);
        printf("}}\n");
    } else {
        cli_error_text("storage", "%s", msg);
    }
    return CLI_ERROR;
}

/* fsync the directory holding path, so that a rename into it is durable. */
static int sync_parent(const char *path)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        dir[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errno;
    int err = fsync(fd) == 0 ? 0 : errno;
    close(fd);
    return err;
}

/* ---- export -------------------------------------------------------------------------------- */

static int cmd_export(int argc, char **argv)
{
    const cli_cmd *self = &cli_backup_commands[0];
    backup_args a;
    int rc = parse(&a, self, argc, argv, "tTo", 0);
    if (rc) return rc;
    /* --json prints one object on stdout, which the rows would share without --out. */
    if (a.json && !a.out)
        return cli_usage_error(self, "--json needs --out FILE (stdout holds the rows)");
    og_graph *g = NULL;
    if (open_readonly(&g, a.root) != 0) return cli_fail(a.json);
    og_export_options o = OG_EXPORT_OPTIONS_INIT;
    o.at = a.at;
    o.branch = a.branch;
    o.types = a.n_types ? a.types : NULL;
    o.n_types = a.n_types;
    FILE *f = stdout;
    char tmp[PATH_MAX];
    if (a.out) {
        /* Written beside the target, then renamed over it: FILE is whole or untouched. */
        if (snprintf(tmp, sizeof tmp, "%s.XXXXXX", a.out) >= (int)sizeof tmp) {
            og_graph_close(g);
            return file_failure(a.json, a.out, "cannot write", ENAMETOOLONG);
        }
        int fd = mkstemp(tmp);
        /* mkstemp makes it 0600; the export gets the mode a new file would get. */
        mode_t mask = umask(0);
        umask(mask);
        if (fd >= 0 && fchmod(fd, 0666 & ~mask) != 0) {
            int err = errno;
            close(fd);
            unlink(tmp);
            og_graph_close(g);
            return file_failure(a.json, a.out, "cannot write", err);
        }
        if (fd < 0 || !(f = fdopen(fd, "w"))) {
            int err = errno;
            if (fd >= 0) {
                close(fd);
                unlink(tmp);
            }
            og_graph_close(g);
            return file_failure(a.json, a.out, "cannot write", err);
        }
    }
    og_export_result *r = NULL;
    rc = og_graph_export(&r, f, g, &o);
    og_graph_close(g);
    if (a.out) {
        int err = 0;
        if (rc == 0 && fsync(fileno(f)) != 0) err = errno;
        if (fclose(f) != 0 && !err) err = errno;
        if (rc == 0 && !err && rename(tmp, a.out) != 0) err = errno;
        if (rc == 0 && !err) err = sync_parent(a.out);
        if (rc || err) unlink(tmp);
        if (rc == 0 && err) {
            og_export_result_free(r);
            return file_failure(a.json, a.out, "cannot write", err);
        }
    }
    if (rc) return cli_fail(a.json);
    if (a.json) {
        printf("{\"ok\":true,\"root\":");
        cli_json_str(stdout, a.root);
        printf(",\"out\":");
        cli_json_str(stdout, a.out);
        printf(",\"commit_id\":");
        if (r->commit_id[0])
            cli_json_str(stdout, r->commit_id);
        else
            fputs("null", stdout);
        printf(",\"manifest_version\":%llu,\"nodes\":%llu,\"edges\":%llu,\"node_types\":%zu,"
               "\"edge_types\":%zu,\"bytes\":%llu}\n",
               (unsigned long long)r->manifest_version, (unsigned long long)r->nodes,
               (unsigned long long)r->edges, r->node_types, r->edge_types,
               (unsigned long long)r->bytes);
    } else if (a.out) {
        printf("exported %llu nodes and %llu edges (%zu node types, %zu edge types) of commit %s "
               "to %s (",
               (unsigned long long)r->nodes, (unsigned long long)r->edges, r->node_types,
               r->edge_types, r->commit_id[0] ? r->commit_id : "-", a.out);
        cli_print_bytes(r->bytes);
        printf(")\n");
    }
    og_export_result_free(r);
    return CLI_OK;
}

/* ---- backup -------------------------------------------------------------------------------- */

static int cmd_backup(int argc, char **argv)
{
    const cli_cmd *self = &cli_backup_commands[1];
    backup_args a;
    int rc = parse(&a, self, argc, argv, "", 1);
    if (rc) return rc;
    og_graph *g = NULL;
    if (open_readonly(&g, a.root) != 0) return cli_fail(a.json);
    og_backup_options o = OG_BACKUP_OPTIONS_INIT;
    o.branch = a.branch;
    og_backup_result *r = NULL;
    rc = og_graph_backup(&r, g, a.dest, &o);
    og_graph_close(g);
    if (rc) return cli_fail(a.json);
    if (a.json) {
        printf("{\"ok\":true,\"root\":");
        cli_json_str(stdout, a.root);
        printf(",\"dest\":");
        cli_json_str(stdout, a.dest);
        printf(",\"commit_id\":");
        if (r->commit_id[0])
            cli_json_str(stdout, r->commit_id);
        else
            fputs("null", stdout);
        printf(",\"manifest_version\":%llu,\"tables\":%zu,\"rows\":%llu,\"files\":%llu,"
               "\"bytes\":%llu,\"attempts\":%u,\"verified\":true}\n",
               (unsigned long long)r->manifest_version, r->tables, (unsigned long long)r->rows,
               (unsigned long long)r->files, (unsigned long long)r->bytes, r->attempts);
    } else {
        printf("backed up %s to %s at commit %s (manifest version %llu)\n", a.root, a.dest,
               r->commit_id[0] ? r->commit_id : "-", (unsigned long long)r->manifest_version);
        printf("copied %llu files, ", (unsigned long long)r->files);
        cli_print_bytes(r->bytes);
        printf("; verified: %zu tables, %llu rows at the same versions\n", r->tables,
               (unsigned long long)r->rows);
    }
    og_backup_result_free(r);
    return CLI_OK;
}
