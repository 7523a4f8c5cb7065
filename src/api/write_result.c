/* og_write_result: what a graph write did (the commit, the tables it changed, and counts that
 * depend on the kind of write), for og_graph_load and og_graph_mutate, and the writes to come.
 * Opaque with accessors, so it can gain counts and fields without an ABI break, and its table
 * list has no fixed size. */
#include "omnigraph.h"

#include "api/graph_internal.h"
#include "core/alloc.h"
#include "core/error.h"

#include <string.h>

int api_write_result_new(og_write_result **out)
{
    *out = NULL;
    og_write_result *r = core_calloc(1, sizeof *r);
    if (!r) return core_err_nomem();
    r->query_name = core_strdup("");
    if (!r->query_name) {
        core_free(r);
        return core_err_nomem();
    }
    *out = r;
    return 0;
}

/* write_options.on_table: one more changed table. Runs after the commit is visible, so an
 * allocation failure is only noted; api_write_result_finish reports it. */
static void on_table(void *arg, const char *alias, uint64_t from_version, uint64_t to_version,
                     uint64_t row_count)
{
    og_write_result *r = arg;
    if (r->n_tables == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 8;
        og_table_change *t = core_realloc(r->tables, cap * sizeof *t);
        if (!t) {
            r->lost_table = true;
            return;
        }
        r->tables = t;
        r->cap = cap;
    }
    char *a = core_strdup(alias ? alias : "");
    if (!a) {
        r->lost_table = true;
        return;
    }
    og_table_change *t = &r->tables[r->n_tables++];
    memset(t, 0, sizeof *t);
    t->alias = a;
    t->from_version = from_version;
    t->to_version = to_version;
    t->row_count = row_count;
}

void api_write_result_collect(og_write_result *r, write_options *wo)
{
    wo->on_table = on_table;
    wo->on_table_arg = r;
}

int api_write_result_finish(og_write_result *r, const write_result *wr)
{
    if (wr->committed) {
        memcpy(r->commit_id, wr->commit_id, sizeof r->commit_id);
        memcpy(r->operation_id, wr->operation_id, sizeof r->operation_id);
    }
    r->manifest_version = wr->manifest_version;
    r->counts[OG_WRITE_REPREPARES] = wr->reprepares;
    if (r->lost_table)
        return core_err(OG_E_NOMEM,
                        "out of memory listing the tables of commit %s (the commit "
                        "stands)",
                        r->commit_id);
    return 0;
}

void og_write_result_free(og_write_result *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n_tables; i++)
        core_free((char *)r->tables[i].alias);
    core_free(r->tables);
    core_free(r->query_name);
    core_free(r);
}

const char *og_write_result_commit_id(const og_write_result *r)
{
    return r ? r->commit_id : "";
}

const char *og_write_result_operation_id(const og_write_result *r)
{
    return r ? r->operation_id : "";
}

uint64_t og_write_result_manifest_version(const og_write_result *r)
{
    return r ? r->manifest_version : 0;
}

const char *og_write_result_query_name(const og_write_result *r)
{
    return r ? r->query_name : "";
}

uint64_t og_write_result_count(const og_write_result *r, int what)
{
    return r && what > 0 && what < API_WRITE_COUNTS ? r->counts[what] : 0;
}

size_t og_write_result_table_count(const og_write_result *r)
{
    return r ? r->n_tables : 0;
}

const og_table_change *og_write_result_table(const og_write_result *r, size_t i)
{
    return r && i < r->n_tables ? &r->tables[i] : NULL;
}
