/* The public verification API (include/omnigraph.h, "Verification"): opens the root read-only
 * as a plain store, not as a graph, so a graph too damaged to open still gets a report, and
 * runs the checks of src/write/verify.c. */
#include "omnigraph.h"

#include "api/options.h"
#include "core/alloc.h"
#include "core/error.h"
#include "graph/graph_handle.h"
#include "store/store.h"
#include "write/verify.h"

#include <string.h>

/* The report, then its problems, in one allocation, followed by their strings. */
typedef struct verify_box {
    og_verify_report pub; /* first: the pointer handed out */
    size_t n;
    og_verify_problem *problems;
} verify_box;

size_t og_verify_report_problem_count(const og_verify_report *r)
{
    return r ? ((const verify_box *)r)->n : 0;
}

const og_verify_problem *og_verify_report_problem(const og_verify_report *r, size_t i)
{
    return r && i < ((const verify_box *)r)->n ? &((const verify_box *)r)->problems[i] : NULL;
}

static int report_of(og_verify_report **out, const write_verify_report *w)
{
    size_t strings = 0;
    for (size_t i = 0; i < w->n_problems; i++) {
        const write_verify_problem *p = &w->problems[i];
        strings += strlen(p->kind) + strlen(p->object) + strlen(p->message) + strlen(p->remedy) + 4;
    }
    size_t head = sizeof(verify_box) + w->n_problems * sizeof(og_verify_problem);
    verify_box *b = core_calloc(1, head + strings);
    if (!b) return core_err_nomem();
    og_verify_report *r = &b->pub;
    og_verify_problem *probs = (og_verify_problem *)(b + 1);
    char *at = (char *)b + head;
    for (size_t i = 0; i < w->n_problems; i++) {
        const char *src[4] = {w->problems[i].kind, w->problems[i].object, w->problems[i].message,
                              w->problems[i].remedy};
        const char **dst[4] = {&probs[i].kind, &probs[i].object, &probs[i].message,
                               &probs[i].remedy};
        for (int k = 0; k < 4; k++) {
            size_t n = strlen(src[k]) + 1;
            memcpy(at, src[k], n);
            *dst[k] = at;
            at += n;
        }
    }
    b->n = w->n_problems;
    b->problems = probs;
    r->manifest_versions = w->manifest_versions;
    r->tables = w->tables;
    r->table_versions = w->table_versions;
    r->files = w->files;
    r->bytes = w->bytes;
    r->checksummed = w->checksummed;
    r->unchecked = w->unchecked;
    r->rows = w->rows;
    r->sidecars = w->sidecars;
    r->branches = w->branches;
    *out = r;
    return 0;
}

int og_root_verify(og_verify_report **out, const char *root_dir, const og_verify_options *opt)
{
    if (!out) return core_err(OG_E_BAD_REQUEST, "og_root_verify: out is NULL");
    *out = NULL;
    if (!root_dir || !*root_dir) return core_err(OG_E_BAD_REQUEST, "og_root_verify: no root");
    og_verify_options def = OG_VERIFY_OPTIONS_INIT;
    if (!opt) opt = &def;
    int rc = api_options_check(opt->version, OG_VERIFY_OPTIONS_VERSION, "og_verify_options");
    if (rc == 0) rc = store_local_check_root(root_dir);
    if (rc) return rc;
    store *s = NULL;
    if ((rc = store_local_open_readonly(&s, root_dir))) return rc;
    /* An init or a backup that did not finish holds no graph: said as every command says it
     * (with what to run again), not reported as a graph's damage. */
    if ((rc = graph_root_check_unfinished(s)) != 0) {
        store_close(s);
        core_err_prefix("verifying '%s'", root_dir);
        return rc;
    }
    write_verify_options wo = {
        .deep = opt->deep != 0, .progress = opt->progress, .progress_arg = opt->progress_arg};
    write_verify_report w;
    rc = write_verify(s, &wo, &w);
    store_close(s);
    if (rc == OG_E_NOT_FOUND) core_err_prefix("verifying '%s'", root_dir);
    if (rc) return rc;
    rc = report_of(out, &w);
    write_verify_report_clear(&w);
    return rc;
}

void og_verify_report_free(og_verify_report *r)
{
    core_free(r); /* its verify_box: pub is its first member */
}
