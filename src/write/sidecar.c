/* Recovery sidecars: the durable form of an armed write intent (RFC-022 §4.5), one JSON object
 * per operation at __recovery/<ULID>.json, written whole but unsynced when the write arms
 * (write_sidecar_put_unsynced) and made durable before the first physical effect: the first
 * table commit syncs it with its own files before it links (write_intent_carry_sidecar);
 * and the read set / effect bookkeeping they carry. */
#include "write/internal.h"

#include "core/alloc.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- read set ------------------------------------------------------------------------------ */

void write_rs_clear(write_read_set *rs)
{
    for (size_t i = 0; i < rs->n_tables; i++)
        core_free(rs->tables[i].alias);
    core_free(rs->tables);
    memset(rs, 0, sizeof *rs);
}

int write_rs_add_table(write_read_set *rs, const char *alias, uint64_t version, bool written)
{
    size_t lo = 0, hi = rs->n_tables;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(rs->tables[mid].alias, alias);
        if (c == 0) {
            rs->tables[mid].written = rs->tables[mid].written || written;
            return 0;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    write_rs_table *t = core_realloc(rs->tables, (rs->n_tables + 1) * sizeof *t);
    if (!t) return core_err_nomem();
    rs->tables = t;
    char *a = core_strdup(alias);
    if (!a) return core_err_nomem();
    memmove(&t[lo + 1], &t[lo], (rs->n_tables - lo) * sizeof *t);
    t[lo] = (write_rs_table){a, version, written};
    rs->n_tables++;
    return 0;
}

void write_rs_capture(write_read_set *rs, const graph_snapshot *snap)
{
    rs->manifest_version = snap->manifest_version;
    snprintf(rs->branch_identity, sizeof rs->branch_identity, "%s", snap->branch_identity);
    snprintf(rs->graph_head, sizeof rs->graph_head, "%s", snap->head);
    snprintf(rs->schema_identity, sizeof rs->schema_identity, "%s", snap->schema_identity);
}

static int rs_mismatch(const char *member, const char *expected, const char *actual)
{
    int rc = core_err(OG_E_READ_SET_CONFLICT, "read set member %s moved: expected %s, now %s",
                      member, expected[0] ? expected : "(none)", actual[0] ? actual : "(none)");
    core_err_detail(CORE_ERR_MEMBER, member);
    core_err_detail(CORE_ERR_EXPECTED, expected);
    core_err_detail(CORE_ERR_ACTUAL, actual);
    return rc;
}

int write_rs_check(const write_read_set *rs, const graph_snapshot *snap)
{
    const char *b = snap->branch ? snap->branch : "main";
    char member[300];
    if (strcmp(rs->branch_identity, snap->branch_identity) != 0) {
        snprintf(member, sizeof member, "branch_identity:%s", b);
        return rs_mismatch(member, rs->branch_identity, snap->branch_identity);
    }
    if (strcmp(rs->graph_head, snap->head) != 0) {
        snprintf(member, sizeof member, "graph_head:%s", b);
        return rs_mismatch(member, rs->graph_head, snap->head);
    }
    if (strcmp(rs->schema_identity, snap->schema_identity) != 0)
        return rs_mismatch("schema_identity", rs->schema_identity, snap->schema_identity);
    for (size_t i = 0; i < rs->n_tables; i++) {
        const graph_table *t = graph_snapshot_table(snap, rs->tables[i].alias);
        char exp[32], act[32];
        snprintf(exp, sizeof exp, "%" PRIu64, rs->tables[i].version);
        snprintf(act, sizeof act, "%s", "absent");
        if (t) snprintf(act, sizeof act, "%" PRIu64, t->version);
        if (!t || t->version != rs->tables[i].version) {
            snprintf(member, sizeof member, "table:%s", rs->tables[i].alias);
            return rs_mismatch(member, exp, act);
        }
    }
    return 0;
}

/* ---- effects and intents ------------------------------------------------------------------- */

void write_effect_clear(write_effect *e)
{
    core_free(e->alias);
    core_free(e->path);
    core_free(e->table_branch);
    core_free(e->fork_from);
    lance_staged_discard(e->staged);
    lance_compact_plan_discard(e->compaction);
    for (size_t i = 0; i < e->n_files; i++)
        core_free(e->files[i]);
    core_free(e->files);
    lance_dataset_free(e->base);
    lance_dataset_free(e->after);
    arrow_array_free(e->app_id);
    arrow_array_free(e->app_src);
    arrow_array_free(e->app_dst);
    memset(e, 0, sizeof *e);
}

void write_intent_clear(write_intent *in)
{
    core_free(in->actor);
    core_free(in->branch);
    write_rs_clear(&in->rs);
    for (size_t i = 0; i < in->n_effects; i++)
        write_effect_clear(&in->effects[i]);
    core_free(in->effects);
    for (size_t i = 0; i < in->n_rollback; i++)
        core_free(in->rollback[i].alias);
    core_free(in->rollback);
    for (size_t i = 0; i < in->n_schema_tables; i++)
        core_free(in->schema_tables[i].alias);
    core_free(in->schema_tables);
    if (in->owned_changes) {
        graph_change_set_clear(in->owned_changes);
        core_free(in->owned_changes);
    }
    memset(in, 0, sizeof *in);
}

void write_sidecar_key(char out[STORE_KEY_MAX], const char *operation_id)
{
    snprintf(out, STORE_KEY_MAX, "%s/%s.json", GRAPH_RECOVERY_DIR, operation_id);
}

void write_intent_owner_lock(const write_intent *in, char out[STORE_KEY_MAX])
{
    if (in->owner_lock[0])
        snprintf(out, STORE_KEY_MAX, "%s", in->owner_lock);
    else
        snprintf(out, STORE_KEY_MAX, "sidecar-%s", in->operation_id);
}

int64_t write_now_us(void)
{
    return (int64_t)core_wall_us();
}

/* ---- JSON encoding ------------------------------------------------------------------------- */

static json_t *jstr_or_null(const char *s)
{
    return s && s[0] ? json_string(s) : json_null();
}

static json_t *ju64(uint64_t v)
{
    /* Versions fit in a JSON integer (int64) in practice; ids are written as hex strings. */
    return json_integer((json_int_t)v);
}

static json_t *jhex(uint64_t v)
{
    char b[17];
    snprintf(b, sizeof b, "%016" PRIx64, v);
    return json_string(b);
}

static int add_file(void *arg, const char *key)
{
    return json_array_append_new(arg, json_string(key));
}

int write_intent_to_json(const write_intent *in, core_buf *out)
{
    json_t *root = json_object();
    json_t *rs = json_object(), *rst = json_array(), *eff = json_array();
    json_t *lin = json_object();
    if (!root || !rs || !rst || !eff || !lin) {
        json_decref(root), json_decref(rs), json_decref(rst), json_decref(eff), json_decref(lin);
        return core_err_nomem();
    }
    int bad = 0;
    bad |= json_object_set_new(root, "format", json_integer(in->format));
    bad |= json_object_set_new(root, "operation_id", json_string(in->operation_id));
    if (in->owner_lock[0])
        bad |= json_object_set_new(root, "owner_lock", json_string(in->owner_lock));
    if (in->owner_pid > 0)
        bad |= json_object_set_new(root, "owner_pid", json_integer(in->owner_pid));
    bad |= json_object_set_new(root, "writer_kind", json_string(write_kind_name(in->kind)));
    bad |= json_object_set_new(root, "actor", jstr_or_null(in->actor));
    bad |= json_object_set_new(root, "started_at_us", json_integer(in->started_at_us));
    bad |= json_object_set_new(root, "branch", jstr_or_null(in->branch));
    bad |= json_object_set_new(rs, "manifest_version", ju64(in->rs.manifest_version));
    bad |= json_object_set_new(rs, "branch_identity", json_string(in->rs.branch_identity));
    bad |= json_object_set_new(rs, "graph_head", json_string(in->rs.graph_head));
    bad |= json_object_set_new(rs, "schema_identity", json_string(in->rs.schema_identity));
    for (size_t i = 0; i < in->rs.n_tables; i++) {
        json_t *t =
            json_pack("{s:s, s:I, s:b}", "alias", in->rs.tables[i].alias, "version",
                      (json_int_t)in->rs.tables[i].version, "written", in->rs.tables[i].written);
        bad |= !t || json_array_append_new(rst, t);
    }
    bad |= json_object_set_new(rs, "tables", rst);
    bad |= json_object_set_new(root, "read_set", rs);
    bad |= json_object_set_new(lin, "commit_id", json_string(in->commit_id));
    bad |= json_object_set_new(lin, "parent_commit_id", jstr_or_null(in->parent_commit_id));
    if (in->merged_parent_commit_id[0])
        bad |= json_object_set_new(lin, "merged_parent_commit_id",
                                   json_string(in->merged_parent_commit_id));
    bad |= json_object_set_new(lin, "created_at_us", json_integer(in->created_at_us));
    bad |= json_object_set_new(root, "lineage", lin);
    bad |= json_object_set_new(root, "rollback_commit_id", json_string(in->rollback_commit_id));
    for (size_t i = 0; i < in->n_effects; i++) {
        const write_effect *e = &in->effects[i];
        json_t *o = json_object();
        bad |= !o;
        if (!o) break;
        bad |= json_object_set_new(o, "alias", json_string(e->alias));
        bad |= json_object_set_new(o, "kind", json_string(e->kind == LANG_EDGE ? "edge" : "node"));
        bad |= json_object_set_new(o, "stable_table_id", jhex(e->sid));
        bad |= json_object_set_new(o, "table_incarnation_id", jhex(e->inc));
        bad |= json_object_set_new(o, "path", json_string(e->path));
        bad |= json_object_set_new(o, "table_branch", jstr_or_null(e->table_branch));
        bad |= json_object_set_new(o, "expected_version", ju64(e->expected_version));
        bad |= json_object_set_new(o, "transaction_uuid", json_string(e->uuid));
        if (e->fork) {
            json_t *ft = json_object();
            bad |= !ft || json_object_set_new(ft, "from_branch", jstr_or_null(e->fork_from));
            bad |= json_object_set_new(o, "first_touch", ft);
        }
        json_t *files = json_array();
        bad |= !files;
        if (files) {
            if (e->staged)
                bad |= lance_staged_files(e->staged, add_file, files) != 0;
            else if (e->compaction)
                bad |= lance_compact_plan_files(e->compaction, add_file, files) != 0;
            else
                for (size_t k = 0; k < e->n_files; k++)
                    bad |= add_file(files, e->files[k]) != 0;
            bad |= json_object_set_new(o, "files", files);
        }
        bad |= json_array_append_new(eff, o);
    }
    bad |= json_object_set_new(root, "effects", eff);
    if (in->n_rollback) {
        json_t *rb = json_array();
        bad |= !rb;
        for (size_t i = 0; rb && i < in->n_rollback; i++) {
            const write_rollback *r = &in->rollback[i];
            json_t *o = json_pack("{s:s, s:I, s:I, s:s}", "alias", r->alias, "from_version",
                                  (json_int_t)r->from, "to_version", (json_int_t)r->to,
                                  "transaction_uuid", r->uuid);
            bad |= !o || json_array_append_new(rb, o);
        }
        bad |= json_object_set_new(root, "rollback", rb);
    }
    if (in->schema_target[0]) {
        static const char *OPS[] = {"", "create", "rename", "drop"};
        json_t *tabs = json_array();
        bad |= !tabs;
        for (size_t i = 0; tabs && i < in->n_schema_tables; i++) {
            const write_schema_table *t = &in->schema_tables[i];
            char sid[17], inc[17];
            snprintf(sid, sizeof sid, "%016" PRIx64, t->sid);
            snprintf(inc, sizeof inc, "%016" PRIx64, t->inc);
            json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s}", "op", OPS[t->op], "kind",
                                  t->kind == LANG_NODE ? "node" : "edge", "stable_table_id", sid,
                                  "table_incarnation_id", inc, "version", (json_int_t)t->version,
                                  "alias", t->alias);
            bad |= !o || json_array_append_new(tabs, o);
        }
        json_t *sc = json_pack("{s:s, s:o}", "identity", in->schema_target, "tables", tabs);
        bad |= !sc || json_object_set_new(root, "schema", sc);
    }
    if (in->repair_mode)
        bad |= json_object_set_new(
            root, "repair",
            json_string(in->repair_mode == WRITE_REPAIR_FORWARD ? "forward" : "forced"));
    int rc = bad ? core_err_nomem() : core_json_dump_pretty(root, out);
    json_decref(root);
    return rc;
}

static int corrupt(const char *key, const char *what)
{
    int rc =
        core_err(OG_E_CORRUPT, "recovery sidecar %s is damaged (%s); nothing was applied from it",
                 key, what);
    core_err_detail(CORE_ERR_OBJECT, key);
    return rc;
}

static int copy_id(char out[GRAPH_ID_LEN + 1], const char *s, bool allow_empty)
{
    if (!s || (!s[0] && allow_empty)) {
        out[0] = 0;
        return 0;
    }
    if (!core_ulid_valid(s)) return -1;
    snprintf(out, GRAPH_ID_LEN + 1, "%s", s);
    return 0;
}

static int parse_hex(const char *s, uint64_t *out)
{
    if (!s || strlen(s) != 16) return -1;
    char *end;
    *out = strtoull(s, &end, 16);
    return *end ? -1 : 0;
}

/* The effect's recorded files: each must be a file of the effect's own table, in a directory
 * where a transaction writes new files (data/, _deletions/, _ogkix/), so that a sidecar can
 * never point recovery's deletes anywhere else. */
static int parse_files(write_effect *e, const json_t *jfiles, const char *key)
{
    size_t n = jfiles ? json_array_size(jfiles) : 0;
    if (!n) return 0;
    char root[STORE_KEY_MAX];
    int rc = lance_branch_root(root, e->path, e->table_branch);
    if (rc != 0) return corrupt(key, "an effect's table branch is not a valid name");
    if (!(e->files = core_calloc(n, sizeof *e->files))) return core_err_nomem();
    size_t rl = strlen(root);
    static const char *const dirs[] = {"data/", "_deletions/", "_ogkix/"};
    for (size_t i = 0; i < n; i++) {
        const char *f = json_string_value(json_array_get(jfiles, i));
        bool ok = f && store_key_check(f) == 0 && strncmp(f, root, rl) == 0 && f[rl] == '/';
        bool in_dir = false;
        for (size_t d = 0; ok && d < sizeof dirs / sizeof dirs[0]; d++) {
            size_t dl = strlen(dirs[d]);
            const char *rest = f + rl + 1;
            in_dir |= strncmp(rest, dirs[d], dl) == 0 && rest[dl] && !strchr(rest + dl, '/');
        }
        if (!ok || !in_dir) {
            og_error_clear();
            return corrupt(key, "an effect names a file outside its table's data");
        }
        if (!(e->files[e->n_files] = core_strdup(f))) return core_err_nomem();
        e->n_files++;
    }
    return 0;
}

int write_intent_from_json(write_intent *out, const char *body, size_t len, const char *key)
{
    memset(out, 0, sizeof *out);
    json_error_t jerr;
    uint64_t failures = core_alloc_failures();
    json_t *root = core_json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    /* Out of memory is not damage: the sidecar must not be judged by a parse that never ran. */
    if (!root && core_alloc_failures() != failures) return core_err_nomem();
    if (!root || !json_is_object(root)) {
        json_decref(root);
        return corrupt(key, "not a JSON object");
    }
    int rc = 0;
    json_int_t format = 0, started = 0, created = 0, mver = 0;
    const char *opid = NULL, *kind = NULL, *actor = NULL, *branch = NULL, *bid = NULL, *head = NULL,
               *schema = NULL, *commit = NULL, *parent = NULL, *rbid = NULL;
    json_t *rs = NULL, *rst = NULL, *eff = NULL, *lin = NULL, *rb = NULL;
    json_t *jactor = NULL, *jbranch = NULL, *jparent = NULL;
    if (json_unpack(root, "{s:I}", "format", &format) != 0)
        return json_decref(root), corrupt(key, "no format");
    if (format > WRITE_SIDECAR_FORMAT || format < 1) {
        json_decref(root);
        rc = core_err(OG_E_UNSUPPORTED,
                      "recovery sidecar %s has format %lld, this binary reads format %d: %s", key,
                      (long long)format, WRITE_SIDECAR_FORMAT,
                      format > WRITE_SIDECAR_FORMAT ? "upgrade omnigraph to recover it"
                                                    : "it cannot be recovered by this binary");
        core_err_detail(CORE_ERR_OBJECT, key);
        return rc;
    }
    if (json_unpack_ex(root, &jerr, 0, "{s:s, s:s, s?o, s:I, s?o, s:o, s:o, s:s, s:o, s?o}",
                       "operation_id", &opid, "writer_kind", &kind, "actor", &jactor,
                       "started_at_us", &started, "branch", &jbranch, "read_set", &rs, "lineage",
                       &lin, "rollback_commit_id", &rbid, "effects", &eff, "rollback", &rb) != 0 ||
        json_unpack_ex(rs, &jerr, 0, "{s:I, s:s, s:s, s:s, s:o}", "manifest_version", &mver,
                       "branch_identity", &bid, "graph_head", &head, "schema_identity", &schema,
                       "tables", &rst) != 0 ||
        json_unpack_ex(lin, &jerr, 0, "{s:s, s?o, s:I}", "commit_id", &commit, "parent_commit_id",
                       &jparent, "created_at_us", &created) != 0 ||
        !json_is_array(rst) || !json_is_array(eff) || (rb && !json_is_array(rb))) {
        char why[300];
        snprintf(why, sizeof why, "missing or mistyped fields: %s", jerr.text);
        json_decref(root);
        return corrupt(key, why);
    }
    /* Nullable strings: absent or null is NULL; anything else must be a string. */
    if ((jactor && !json_is_null(jactor) && !json_is_string(jactor)) ||
        (jbranch && !json_is_null(jbranch) && !json_is_string(jbranch)) ||
        (jparent && !json_is_null(jparent) && !json_is_string(jparent))) {
        json_decref(root);
        return corrupt(key, "a nullable field is neither a string nor null");
    }
    actor = json_string_value(jactor);
    branch = json_string_value(jbranch);
    parent = json_string_value(jparent);
    out->format = (int)format;
    out->kind = write_kind_parse(kind);
    if (!out->kind || copy_id(out->operation_id, opid, false) ||
        copy_id(out->commit_id, commit, false) || copy_id(out->parent_commit_id, parent, true) ||
        copy_id(out->rollback_commit_id, rbid, false) || mver < 0 ||
        strlen(bid) >= sizeof out->rs.branch_identity || strlen(head) > GRAPH_ID_LEN ||
        strlen(schema) > GRAPH_SCHEMA_HASH_LEN) {
        json_decref(root);
        return corrupt(key, "invalid identifiers");
    }
    /* A merge's merged parent: optional (only merges write it). */
    json_t *jmerged = json_object_get(lin, "merged_parent_commit_id");
    if (jmerged && (!json_is_string(jmerged) ||
                    copy_id(out->merged_parent_commit_id, json_string_value(jmerged), false))) {
        json_decref(root);
        return corrupt(key, "invalid merged_parent_commit_id");
    }
    /* The owner's lock: optional; when present a short name of letters, digits and '-'. */
    json_t *jowner = json_object_get(root, "owner_lock");
    if (jowner) {
        const char *o = json_string_value(jowner);
        size_t ol = o ? strlen(o) : 0;
        bool ok = o && ol > 0 && ol < sizeof out->owner_lock;
        for (size_t i = 0; ok && i < ol; i++)
            ok = (o[i] >= 'a' && o[i] <= 'z') || (o[i] >= 'A' && o[i] <= 'Z') ||
                 (o[i] >= '0' && o[i] <= '9') || o[i] == '-';
        if (!ok) {
            json_decref(root);
            return corrupt(key, "owner_lock is not a lock name");
        }
        memcpy(out->owner_lock, o, ol + 1);
    }
    json_t *jpid = json_object_get(root, "owner_pid");
    if (jpid && (!json_is_integer(jpid) || json_integer_value(jpid) <= 0)) {
        json_decref(root);
        return corrupt(key, "owner_pid is not a process id");
    }
    out->owner_pid = jpid ? (int64_t)json_integer_value(jpid) : 0;
    /* The file must be named after its operation: a copied or misdirected sidecar is never
     * applied under another name. */
    char expect_key[STORE_KEY_MAX];
    write_sidecar_key(expect_key, out->operation_id);
    if (strcmp(expect_key, key) != 0) {
        json_decref(root);
        return corrupt(key, "its operation id does not match its file name");
    }
    out->started_at_us = started;
    out->created_at_us = created;
    out->rs.manifest_version = (uint64_t)mver;
    snprintf(out->rs.branch_identity, sizeof out->rs.branch_identity, "%s", bid);
    snprintf(out->rs.graph_head, sizeof out->rs.graph_head, "%s", head);
    snprintf(out->rs.schema_identity, sizeof out->rs.schema_identity, "%s", schema);
    if ((actor && !(out->actor = core_strdup(actor))) ||
        (branch && !(out->branch = core_strdup(branch)))) {
        rc = core_err_nomem();
        goto fail;
    }
    size_t i;
    json_t *v;
    json_array_foreach(rst, i, v)
    {
        const char *alias;
        json_int_t ver;
        int written = 0;
        if (json_unpack(v, "{s:s, s:I, s?b}", "alias", &alias, "version", &ver, "written",
                        &written) != 0 ||
            ver < 0) {
            rc = corrupt(key, "bad read-set table");
            goto fail;
        }
        if ((rc = write_rs_add_table(&out->rs, alias, (uint64_t)ver, written)) != 0) goto fail;
    }
    size_t ne = json_array_size(eff);
    if (ne && !(out->effects = core_calloc(ne, sizeof *out->effects))) {
        rc = core_err_nomem();
        goto fail;
    }
    json_array_foreach(eff, i, v)
    {
        const char *alias, *ekind, *sid, *inc, *path, *tb = NULL, *uuid;
        json_t *jtb = NULL, *jfiles = NULL;
        json_int_t ev;
        if (json_unpack(v, "{s:s, s:s, s:s, s:s, s:s, s?o, s:I, s:s, s?o}", "alias", &alias, "kind",
                        &ekind, "stable_table_id", &sid, "table_incarnation_id", &inc, "path",
                        &path, "table_branch", &jtb, "expected_version", &ev, "transaction_uuid",
                        &uuid, "files", &jfiles) != 0 ||
            ev < 0 || strlen(uuid) >= WRITE_UUID_CAP ||
            (jtb && !json_is_null(jtb) && !json_is_string(jtb)) ||
            (jfiles && !json_is_array(jfiles))) {
            rc = corrupt(key, "bad effect");
            goto fail;
        }
        tb = json_string_value(jtb);
        /* A first-touch fork of the table onto table_branch (absent: the table was not forked
         * by this write). */
        json_t *ft = json_object_get(v, "first_touch"), *jfrom = NULL;
        if (ft && (!json_is_object(ft) || !tb ||
                   ((jfrom = json_object_get(ft, "from_branch")) && !json_is_null(jfrom) &&
                    !json_is_string(jfrom)))) {
            rc = corrupt(key, "bad first_touch of an effect");
            goto fail;
        }
        write_effect *e = &out->effects[out->n_effects++];
        e->fork = ft != NULL;
        if (jfrom && json_is_string(jfrom) &&
            !(e->fork_from = core_strdup(json_string_value(jfrom)))) {
            rc = core_err_nomem();
            goto fail;
        }
        e->kind = strcmp(ekind, "edge") == 0 ? LANG_EDGE : LANG_NODE;
        e->expected_version = (uint64_t)ev;
        snprintf(e->uuid, sizeof e->uuid, "%s", uuid);
        if (parse_hex(sid, &e->sid) || parse_hex(inc, &e->inc) || !e->sid || !e->inc) {
            rc = corrupt(key, "bad table identity");
            goto fail;
        }
        /* The path must be the identity's canonical path: a sidecar never points recovery at
         * a foreign dataset. */
        char canon[STORE_KEY_MAX];
        if (graph_table_path(canon, e->kind, e->sid, e->inc) != 0 || strcmp(canon, path) != 0) {
            rc = corrupt(key, "an effect's path is not its table's canonical path");
            goto fail;
        }
        if (!(e->alias = core_strdup(alias)) || !(e->path = core_strdup(path)) ||
            (tb && !(e->table_branch = core_strdup(tb)))) {
            rc = core_err_nomem();
            goto fail;
        }
        if ((rc = parse_files(e, jfiles, key)) != 0) goto fail;
    }
    json_t *jschema = json_object_get(root, "schema");
    if (jschema) {
        const char *ident = NULL;
        json_t *tabs = NULL;
        if (json_unpack(jschema, "{s:s, s:o}", "identity", &ident, "tables", &tabs) != 0 ||
            !json_is_array(tabs) || strlen(ident) != GRAPH_SCHEMA_HASH_LEN ||
            strspn(ident, "0123456789abcdef") != GRAPH_SCHEMA_HASH_LEN) {
            rc = corrupt(key, "bad schema apply record");
            goto fail;
        }
        memcpy(out->schema_target, ident, GRAPH_SCHEMA_HASH_LEN + 1);
        size_t nt = json_array_size(tabs);
        if (nt && !(out->schema_tables = core_calloc(nt, sizeof *out->schema_tables))) {
            rc = core_err_nomem();
            goto fail;
        }
        json_array_foreach(tabs, i, v)
        {
            const char *op, *tkind, *sid, *inc, *alias;
            json_int_t ver;
            write_schema_table *t = &out->schema_tables[out->n_schema_tables];
            if (json_unpack(v, "{s:s, s:s, s:s, s:s, s:I, s:s}", "op", &op, "kind", &tkind,
                            "stable_table_id", &sid, "table_incarnation_id", &inc, "version", &ver,
                            "alias", &alias) != 0 ||
                ver < 0 || parse_hex(sid, &t->sid) || parse_hex(inc, &t->inc) || !t->sid ||
                !t->inc) {
                rc = corrupt(key, "bad schema apply table");
                goto fail;
            }
            t->op = !strcmp(op, "create")   ? WRITE_SCHEMA_CREATE
                    : !strcmp(op, "rename") ? WRITE_SCHEMA_RENAME
                    : !strcmp(op, "drop")   ? WRITE_SCHEMA_DROP
                                            : 0;
            t->kind = !strcmp(tkind, "node") ? LANG_NODE : !strcmp(tkind, "edge") ? LANG_EDGE : 0;
            t->version = (uint64_t)ver;
            if (!t->op || !t->kind) {
                rc = corrupt(key, "bad schema apply table");
                goto fail;
            }
            if (!(t->alias = core_strdup(alias))) {
                rc = core_err_nomem();
                goto fail;
            }
            out->n_schema_tables++;
        }
    } else if (out->kind == WRITE_KIND_SCHEMA) {
        rc = corrupt(key, "a schema apply without its schema record");
        goto fail;
    }
    if (rb) {
        size_t nr = json_array_size(rb);
        if (nr && !(out->rollback = core_calloc(nr, sizeof *out->rollback))) {
            rc = core_err_nomem();
            goto fail;
        }
        json_array_foreach(rb, i, v)
        {
            const char *alias, *uuid;
            json_int_t from, to;
            if (json_unpack(v, "{s:s, s:I, s:I, s:s}", "alias", &alias, "from_version", &from,
                            "to_version", &to, "transaction_uuid", &uuid) != 0 ||
                from < 0 || to < 0 || strlen(uuid) >= WRITE_UUID_CAP) {
                rc = corrupt(key, "bad rollback plan");
                goto fail;
            }
            write_rollback *r = &out->rollback[out->n_rollback++];
            r->from = (uint64_t)from;
            r->to = (uint64_t)to;
            snprintf(r->uuid, sizeof r->uuid, "%s", uuid);
            if (!(r->alias = core_strdup(alias))) {
                rc = core_err_nomem();
                goto fail;
            }
        }
    }
    /* A repair's intent (optional: other writers and older repairs have none). */
    json_t *jrepair = json_object_get(root, "repair");
    if (jrepair) {
        const char *m = json_string_value(jrepair);
        out->repair_mode = !m                      ? 0
                           : !strcmp(m, "forward") ? WRITE_REPAIR_FORWARD
                           : !strcmp(m, "forced")  ? WRITE_REPAIR_FORCED
                                                   : 0;
        if (!out->repair_mode) {
            rc = corrupt(key, "\"repair\" is neither \"forward\" nor \"forced\"");
            goto fail;
        }
    }
    json_decref(root);
    return 0;
fail:
    json_decref(root);
    write_intent_clear(out);
    return rc;
}

int write_sidecar_put(store *s, const write_intent *in)
{
    core_buf b = CORE_BUF_INIT;
    int rc = write_intent_to_json(in, &b);
    if (rc == 0) {
        char key[STORE_KEY_MAX];
        write_sidecar_key(key, in->operation_id);
        rc = store_put(s, key, b.data, b.len, 0);
    }
    core_buf_free(&b);
    return rc;
}

bool write_sidecar_torn(const char *body, size_t len)
{
    while (len > 0 && body[len - 1] == 0)
        len--;
    if (len == 0) return true;
    for (size_t i = 0; i < len; i++)
        if (body[i] == 0) return false; /* zeros inside: not a cut */
    json_error_t jerr;
    json_t *root = core_json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root) {
        json_decref(root);
        return false;
    }
    /* A document cut short fails where the input ends (and not because something follows a
     * whole document). */
    return jerr.position >= 0 && (size_t)jerr.position >= len &&
           json_error_code(&jerr) != json_error_end_of_input_expected;
}

bool write_sidecar_names_other(const char *body, size_t len, const char *operation_id)
{
    json_error_t jerr;
    json_t *root = core_json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    json_t *id = root ? json_object_get(root, "operation_id") : NULL;
    bool other = json_is_string(id) && strcmp(json_string_value(id), operation_id) != 0;
    json_decref(root);
    return other;
}

int write_sidecar_put_unsynced(store *s, write_intent *in)
{
    core_buf b = CORE_BUF_INIT;
    int rc = write_intent_to_json(in, &b);
    if (rc == 0) {
        char key[STORE_KEY_MAX];
        write_sidecar_key(key, in->operation_id);
        rc = store_put(s, key, b.data, b.len, STORE_F_NOSYNC);
    }
    core_buf_free(&b);
    in->sidecar_unsynced = rc == 0;
    return rc;
}

int write_sidecar_sync(store *s, write_intent *in)
{
    if (!in->sidecar_unsynced) return 0;
    char key[STORE_KEY_MAX];
    write_sidecar_key(key, in->operation_id);
    const char *keys[1] = {key};
    int rc = store_sync(s, keys, 1);
    if (rc == 0) in->sidecar_unsynced = false;
    return rc;
}

int write_intent_carry_sidecar(const write_intent *in, lance_staged *st, lance_compact_plan *plan)
{
    if (!in->sidecar_unsynced) return 0;
    char key[STORE_KEY_MAX];
    write_sidecar_key(key, in->operation_id);
    return st ? lance_staged_also_durable(st, key) : lance_compact_plan_also_durable(plan, key);
}

int write_sidecar_list(store *s, char (**ids)[GRAPH_ID_LEN + 1], size_t *n)
{
    *ids = NULL;
    *n = 0;
    store_list l;
    memset(&l, 0, sizeof l);
    int rc = store_list_prefix(s, GRAPH_RECOVERY_DIR "/", STORE_LIST_DELIMITED, &l);
    if (rc == OG_E_NOT_FOUND) return 0;
    if (rc != 0) return rc;
    char(*out)[GRAPH_ID_LEN + 1] = NULL;
    if (l.count && !(out = core_calloc(l.count, sizeof *out))) {
        store_list_free(&l);
        return core_err_nomem();
    }
    size_t k = 0;
    const size_t plen = strlen(GRAPH_RECOVERY_DIR "/");
    for (size_t i = 0; i < l.count; i++) {
        if (l.items[i].is_prefix) continue;
        const char *name = l.items[i].key + plen;
        size_t nl = strlen(name);
        if (nl != GRAPH_ID_LEN + 5 || strcmp(name + GRAPH_ID_LEN, ".json") != 0) continue;
        char id[GRAPH_ID_LEN + 1];
        memcpy(id, name, GRAPH_ID_LEN);
        id[GRAPH_ID_LEN] = 0;
        if (!core_ulid_valid(id)) continue;
        memcpy(out[k++], id, sizeof id);
    }
    store_list_free(&l);
    /* Listings are sorted by key and ULIDs sort by age. */
    *ids = out;
    *n = k;
    if (!k) {
        core_free(out);
        *ids = NULL;
    }
    return 0;
}

static bool same_branch(const char *a, const char *b)
{
    return strcmp(a && *a ? a : "main", b && *b ? b : "main") == 0;
}

/* Whether the sidecar of operation `id` can overlap an operation on branch scope. */
static int sidecar_overlaps(store *s, const char *id, const char *scope, bool *overlaps)
{
    *overlaps = true;
    char key[STORE_KEY_MAX];
    write_sidecar_key(key, id);
    core_buf body = CORE_BUF_INIT;
    int rc = store_get(s, key, 0, UINT64_MAX, &body);
    if (rc == OG_E_NOT_FOUND) { /* finished meanwhile */
        og_error_clear();
        *overlaps = false;
        return 0;
    }
    if (rc != 0) return rc;
    write_intent in;
    if (write_intent_from_json(&in, (const char *)body.data, body.len, key) != 0) {
        og_error_clear(); /* not told: it overlaps, and recovery looks at it */
        core_buf_free(&body);
        return 0;
    }
    core_buf_free(&body);
    /* A merge writes the target's tables only (it reads the source's published state). */
    bool data = in.kind == WRITE_KIND_LOAD || in.kind == WRITE_KIND_MUTATION ||
                in.kind == WRITE_KIND_OPTIMIZE || in.kind == WRITE_KIND_MERGE;
    bool ov = !data || same_branch(in.branch, scope);
    for (size_t i = 0; !ov && i < in.n_effects; i++)
        ov = same_branch(in.effects[i].table_branch, scope);
    write_intent_clear(&in);
    *overlaps = ov;
    return 0;
}

int write_sidecar_list_overlapping(store *s, const char *scope, char (**ids)[GRAPH_ID_LEN + 1],
                                   size_t *n)
{
    int rc = write_sidecar_list(s, ids, n);
    if (rc != 0 || !scope) return rc;
    size_t k = 0;
    for (size_t i = 0; rc == 0 && i < *n; i++) {
        bool ov = true;
        rc = sidecar_overlaps(s, (*ids)[i], scope, &ov);
        if (rc == 0 && ov) memmove((*ids)[k++], (*ids)[i], sizeof(*ids)[i]);
    }
    if (rc != 0) {
        core_free(*ids);
        *ids = NULL;
        *n = 0;
        return rc;
    }
    *n = k;
    if (!k) {
        core_free(*ids);
        *ids = NULL;
    }
    return 0;
}

int write_sidecar_fork_claimed(store *s, const char *self, const char *path,
                               const char *table_branch, bool *claimed)
{
    *claimed = false;
    char(*ids)[GRAPH_ID_LEN + 1] = NULL;
    size_t n = 0;
    int rc = write_sidecar_list(s, &ids, &n);
    for (size_t i = 0; rc == 0 && !*claimed && i < n; i++) {
        if (self && strcmp(ids[i], self) == 0) continue;
        char key[STORE_KEY_MAX];
        write_sidecar_key(key, ids[i]);
        core_buf body = CORE_BUF_INIT;
        rc = store_get(s, key, 0, UINT64_MAX, &body);
        if (rc == OG_E_NOT_FOUND) { /* finished meanwhile */
            og_error_clear();
            rc = 0;
            continue;
        }
        if (rc != 0) break;
        write_intent in;
        if (write_intent_from_json(&in, (const char *)body.data, body.len, key) != 0) {
            og_error_clear(); /* cannot be told: it may name the fork */
            *claimed = true;
        } else {
            for (size_t k = 0; k < in.n_effects && !*claimed; k++)
                *claimed = in.effects[k].path && strcmp(in.effects[k].path, path) == 0 &&
                           same_branch(in.effects[k].table_branch, table_branch);
            write_intent_clear(&in);
        }
        core_buf_free(&body);
    }
    core_free(ids);
    return rc;
}

/* ---- delta rows ---------------------------------------------------------------------------- */

const uint64_t *write_effect_manifest_sum(const write_effect *e, uint64_t v)
{
    if (!e->after || lance_dataset_version(e->after) != v) return NULL;
    return &e->after->m->file_xxh3;
}

int write_rows_versions(graph_rows *rows, const write_intent *in, const uint64_t *versions,
                        const uint64_t *counts, const bool *which, bool skip_unmoved)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < in->n_effects; i++) {
        const write_effect *e = &in->effects[i];
        uint64_t v = versions ? versions[i] : e->achieved_version;
        uint64_t n = counts ? counts[i] : e->row_count;
        if ((which && !which[i]) || (skip_unmoved && v == e->expected_version)) continue;
        rc = graph_rows_add_version_sum(rows, e->sid, e->inc, e->alias, v, e->table_branch, n,
                                        write_effect_manifest_sum(e, v));
    }
    return rc;
}

int write_rows_lineage(graph_rows *rows, const write_intent *in, const char *id, const char *parent,
                       const char *actor, int64_t created_at_us, uint64_t mver, bool maintenance)
{
    graph_commit c;
    memset(&c, 0, sizeof c);
    snprintf(c.id, sizeof c.id, "%s", id);
    snprintf(c.parent, sizeof c.parent, "%s", parent ? parent : "");
    c.actor = (char *)actor; /* only read by graph_rows_add_commit */
    c.branch = in->branch;
    if (strcmp(id, in->commit_id) == 0) /* not its rollback */
        snprintf(c.merged_parent, sizeof c.merged_parent, "%s", in->merged_parent_commit_id);
    c.created_at_us = created_at_us;
    c.manifest_version = mver;
    c.maintenance = maintenance;
    int rc = graph_rows_add_commit(rows, &c);
    if (rc == 0)
        rc = graph_rows_add_head(rows, in->branch, id, maintenance ? in->content_parent : NULL,
                                 mver);
    return rc;
}
