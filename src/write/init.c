/* Graph init: a claim-based control protocol. The claim (__init_claim.json, create-if-absent,
 * plus an advisory lock held for the whole attempt) makes two concurrent inits exclusive; the
 * genesis is the graph manifest's version 1, written in one Lance commit with every table
 * registration, the format and schema rows and the genesis commit, so a crash leaves either no
 * graph (a later init finds the claim's lock free and takes over) or a complete one. */
#include "write/internal.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/failpoint.h"
#include "core/json.h"
#include "lance/paths.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define INIT_LOCK "graph-init"
#define INIT_INCARNATION 1 /* the first incarnation of every table */

static bool graph_exists(store *s)
{
    uint64_t v = 0;
    lance_naming naming;
    return lance_version_latest(s, GRAPH_MANIFEST_DIR, &v, &naming) == 0 && v >= 1;
}

/* Remove what a crashed attempt left: table datasets and schema files nothing refers to (the
 * manifest, which would refer to them, does not exist). Only called under the claim lock. */
static int clear_partial(store *s)
{
    const char *prefixes[] = {GRAPH_NODES_DIR "/", GRAPH_EDGES_DIR "/", GRAPH_MANIFEST_DIR "/"};
    for (size_t p = 0; p < 3; p++) {
        store_list l;
        memset(&l, 0, sizeof l);
        int rc = store_list_prefix(s, prefixes[p], 0, &l);
        if (rc == OG_E_NOT_FOUND) continue;
        if (rc != 0) return rc;
        for (size_t i = 0; rc == 0 && i < l.count; i++)
            if (!l.items[i].is_prefix) rc = store_delete(s, l.items[i].key, 0);
        store_list_free(&l);
        if (rc != 0) return rc;
    }
    return 0;
}

/* sums[i]: the checksum of type i's version-1 Lance manifest (NULL: not known). */
static int genesis_rows(graph_rows *rows, const lang_catalog *cat, const char *identity,
                        const graph_commit *c, const uint64_t *sums)
{
    int rc = graph_rows_add_format(rows, GRAPH_FORMAT_VERSION);
    if (rc == 0) rc = graph_rows_add_schema(rows, identity, 1);
    for (size_t i = 0; rc == 0 && i < cat->n_types; i++) {
        const lang_typedef *t = &cat->types[i];
        char alias[256];
        if ((rc = graph_table_alias(alias, sizeof alias, t->kind, t->name)) != 0) break;
        rc = graph_rows_add_table(rows, t->kind, t->id, INIT_INCARNATION, alias);
        if (rc == 0)
            rc = graph_rows_add_version_sum(rows, t->id, INIT_INCARNATION, alias, 1, NULL, 0,
                                            sums ? &sums[i] : NULL);
    }
    if (rc == 0) rc = graph_rows_add_commit(rows, c);
    if (rc == 0) rc = graph_rows_add_head(rows, NULL, c->id, NULL, 1);
    return rc;
}

/* Did the manifest's version 1 come from this attempt? (an acknowledgement may be lost) */
static bool genesis_is_ours(store *s, const char *uuid)
{
    uint64_t v = 0;
    return lance_find_txn_version(s, GRAPH_MANIFEST_DIR, uuid, 1, &v) == 0 && v == 1;
}

static int build_catalog(lang_catalog **cat, const char *schema_src, size_t len, const char *file)
{
    lang_diags diags;
    core_arena arena;
    core_arena_init(&arena, 0);
    lang_diags_init(&diags, &arena);
    *cat = NULL;
    int rc = lang_catalog_build(cat, schema_src, len, file, &diags);
    core_arena_free(&arena);
    if (rc != 0) {
        lang_catalog_free(*cat);
        *cat = NULL;
    }
    return rc;
}

int write_init_check(const char *schema_src, size_t len, const char *file)
{
    lang_catalog *cat = NULL;
    int rc = build_catalog(&cat, schema_src, len, file);
    lang_catalog_free(cat);
    return rc;
}

int write_init(store *s, const char *schema_src, size_t len, const char *file,
               write_init_result *res)
{
    memset(res, 0, sizeof *res);
    lang_catalog *cat = NULL;
    int rc = build_catalog(&cat, schema_src, len, file);
    if (rc != 0) return rc;
    if (graph_exists(s)) {
        lang_catalog_free(cat);
        return core_err(OG_E_EXISTS, "a graph already exists here");
    }

    /* The checksums of the tables' version-1 manifests, recorded by genesis (none on failure
     * to allocate: those versions are then unchecked). */
    uint64_t *sums = core_calloc(cat->n_types ? cat->n_types : 1, sizeof *sums);

    /* Claim: exclusive among concurrent inits, and a crashed claim is recognisable. */
    core_ulid u;
    char attempt[GRAPH_ID_LEN + 1];
    store_lock *lock = NULL;
    if ((rc = core_ulid_new(&u)) != 0) goto out;
    core_ulid_format(&u, attempt);
    rc = store_lock_acquire(s, INIT_LOCK, 0, &lock);
    if (rc == OG_E_CONFLICT) {
        rc = core_err(OG_E_CONFLICT, "another init of this graph is running");
        goto out;
    }
    if (rc != 0) goto out;
    char claim[128];
    int cl = snprintf(claim, sizeof claim, "{\"attempt_id\":\"%s\",\"version\":1}\n", attempt);
    rc = store_put_if_absent(s, GRAPH_INIT_CLAIM, claim, (size_t)cl, 0);
    if (rc == OG_E_EXISTS) {
        /* We hold the lock, so the claim's owner is gone. A complete graph means it finished. */
        if (graph_exists(s)) {
            rc = core_err(OG_E_EXISTS, "a graph already exists here");
            goto out;
        }
        res->took_over = true;
        rc = store_put(s, GRAPH_INIT_CLAIM, claim, (size_t)cl, 0);
    }
    if (rc != 0) goto out;
    if (graph_exists(s)) { /* finished by someone between our check and the claim */
        rc = core_err(OG_E_EXISTS, "a graph already exists here");
        goto out;
    }
    if ((rc = clear_partial(s)) != 0) goto out;
    if ((rc = OG_FAILPOINT("init.post_claim")) != 0) goto out;

    /* The schema contract, then one empty dataset per type. */
    char identity[GRAPH_SCHEMA_HASH_LEN + 1];
    if ((rc = graph_schema_identity(cat, identity)) != 0 || (rc = graph_schema_write(s, cat)) != 0)
        goto out;
    for (size_t i = 0; i < cat->n_types; i++) {
        const lang_typedef *t = &cat->types[i];
        char path[STORE_KEY_MAX];
        arrow_schema sch;
        lance_create_options co;
        char kix[GRAPH_KIX_DECL_MAX];
        if ((rc = graph_type_create_options(&co, t, kix)) != 0) goto out;
        if ((rc = graph_table_path(path, t->kind, t->id, INIT_INCARNATION)) != 0 ||
            (rc = graph_type_schema(&sch, t)) != 0)
            goto out;
        lance_dataset *ds = NULL;
        rc = lance_dataset_create(&ds, s, path, &sch, &co);
        arrow_schema_clear(&sch);
        if (rc == 0 && sums) sums[i] = ds->m->file_xxh3;
        lance_dataset_free(ds);
        if (rc != 0) goto out;
        if (t->kind == LANG_NODE)
            res->node_types++;
        else
            res->edge_types++;
    }
    if ((rc = OG_FAILPOINT("init.pre_manifest")) != 0) goto out;

    /* Genesis: the manifest's version 1, in one commit. */
    graph_commit c;
    memset(&c, 0, sizeof c);
    if ((rc = core_ulid_new(&u)) != 0) goto out;
    core_ulid_format(&u, c.id);
    c.created_at_us = write_now_us();
    c.manifest_version = 1;
    graph_rows *rows = NULL;
    arrow_batch *batch = NULL;
    arrow_schema msch;
    arrow_schema_init(&msch);
    char uuid[LANCE_UUID_LEN + 1];
    rc = lance_uuid_new(uuid);
    if (rc == 0) rc = graph_rows_new(&rows);
    if (rc == 0) rc = genesis_rows(rows, cat, identity, &c, sums);
    if (rc == 0) rc = graph_rows_to_batch(rows, &batch);
    if (rc == 0) rc = graph_manifest_schema(&msch);
    if (rc == 0) {
        lance_create_options co = LANCE_CREATE_OPTIONS_INIT;
        const char *pk[] = {"object_id"};
        co.primary_key = pk;
        co.n_primary_key = 1;
        /* No stable row ids: the graph manifest only appends and is compacted, nothing reads
         * its rows by id, and with them every Lance manifest of it would carry per-row
         * version sequences that grow with every commit ever made (docs/maintenance.md). */
        co.stable_row_ids = false;
        co.chain = true; /* every version checksummed and chained (graph/manifest.c) */
        lance_dataset *m = NULL;
        rc = lance_dataset_create_rows(&m, s, GRAPH_MANIFEST_DIR, &msch, &batch, 1, &co, uuid);
        lance_dataset_free(m);
        /* An error after the put may hide a success (lost acknowledgement): ask the store. */
        if (rc != 0) {
            char saved[1024];
            snprintf(saved, sizeof saved, "%s", og_error_last()->message);
            if (genesis_is_ours(s, uuid))
                rc = 0;
            else
                rc = core_err(rc, "%s", saved);
        }
    }
    arrow_schema_clear(&msch);
    arrow_batch_free(batch);
    graph_rows_free(rows);
    if (rc != 0) goto out;
    memcpy(res->commit_id, c.id, sizeof res->commit_id);
    if (OG_FAILPOINT("init.post_manifest") == 0 && store_delete(s, GRAPH_INIT_CLAIM, 0) != 0) {
        /* The graph is complete; the stale claim is removed by the next read-write open. */
    }
out:
    store_lock_release(lock);
    lang_catalog_free(cat);
    core_free(sums);
    return rc;
}
