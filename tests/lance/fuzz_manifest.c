/* libFuzzer target: the Lance manifest reader. Whatever the bytes, decoding ends in a manifest
 * or OG_E_CORRUPT/OG_E_NOMEM, never a crash; a decoded manifest re-encodes and decodes again
 * (also with its fragments spliced from its own bytes, which must decode to the same message,
 * and decoded sharing the fragments of the manifest it was built on); and the input itself,
 * decoded on a fixed base, succeeds or fails exactly as the full decoder does, with the same
 * message),
 * and the inline transaction, row id and row version sequences and fragment-id lists in its
 * table metadata it carries decode safely. */
#include "core/alloc.h"
#include "lance/compact.h"
#include "lance/keyindex.h"
#include "lance/manifest.h"
#include "lance/rowids.h"
#include "lance/txn.h"
#include "omnigraph.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok) abort();
}

static void sequences(const Lance__Table__DataFragment *f)
{
    if (f->row_id_sequence_case == LANCE__TABLE__DATA_FRAGMENT__ROW_ID_SEQUENCE_INLINE_ROW_IDS) {
        lance_rowid_seq s;
        if (lance_rowid_seq_decode(&s, f->inline_row_ids.data, f->inline_row_ids.len, "f") == 0) {
            if (lance_rowid_seq_len(&s) <= 65536) {
                uint64_t *ids = NULL;
                size_t n = 0;
                if (lance_rowid_seq_expand(&s, &ids, &n) == 0) core_free(ids);
            }
            lance_rowid_seq_free(&s);
        }
    }
    const ProtobufCBinaryData *vs[2] = {NULL, NULL};
    if (f->created_at_version_sequence_case ==
        LANCE__TABLE__DATA_FRAGMENT__CREATED_AT_VERSION_SEQUENCE_INLINE_CREATED_AT_VERSIONS)
        vs[0] = &f->inline_created_at_versions;
    if (f->last_updated_at_version_sequence_case ==
        LANCE__TABLE__DATA_FRAGMENT__LAST_UPDATED_AT_VERSION_SEQUENCE_INLINE_LAST_UPDATED_AT_VERSIONS)
        vs[1] = &f->inline_last_updated_at_versions;
    for (int i = 0; i < 2; i++) {
        if (!vs[i]) continue;
        lance_version_seq s;
        if (lance_version_seq_decode(&s, vs[i]->data, vs[i]->len, "v") == 0) {
            uint64_t *v = NULL;
            if (f->physical_rows <= 65536 &&
                lance_version_seq_expand(&s, f->physical_rows, &v) == 0)
                core_free(v);
            lance_version_seq_free(&s);
        }
    }
}

/* a and b are the same message (and, with sections, the same inline transaction and index
 * bytes), compared through a canonical re-encode; an allocation failure proves nothing. */
static int kix_file(void *arg, const char *key)
{
    (void)arg;
    check(strncmp(key, "t.lance/" LANCE_KIX_DIR, strlen("t.lance/" LANCE_KIX_DIR)) == 0);
    check(strstr(key + strlen("t.lance/"), "..") == NULL &&
          strchr(key + strlen("t.lance/" LANCE_KIX_DIR), '/') == NULL);
    return 0;
}

static void check_same(const lance_manifest *a, const lance_manifest *b, int sections)
{
    core_buf ea = CORE_BUF_INIT, eb = CORE_BUF_INIT;
    if (lance_manifest_encode(&ea, a->pb, sections ? a->txn : NULL, sections ? a->txn_len : 0,
                              sections ? a->index : NULL, sections ? a->index_len : 0) == 0 &&
        lance_manifest_encode(&eb, b->pb, sections ? b->txn : NULL, sections ? b->txn_len : 0,
                              sections ? b->index : NULL, sections ? b->index_len : 0) == 0)
        check(ea.len == eb.len && memcmp(ea.data, eb.data, ea.len) == 0);
    core_buf_free(&ea);
    core_buf_free(&eb);
}

/* A base with one fragment (so it has a recorded layout) to decode any input on. */
static lance_manifest *fixed_base(void)
{
    static lance_manifest *base;
    if (base) return base;
    Lance__Table__Manifest m = LANCE__TABLE__MANIFEST__INIT;
    Lance__Table__DataFragment f = LANCE__TABLE__DATA_FRAGMENT__INIT, *fp = &f;
    Lance__Table__DataFile df = LANCE__TABLE__DATA_FILE__INIT, *dfp = &df;
    df.path = (char *)"a.lance";
    f.has_id = 1;
    f.id = 0;
    f.n_files = 1;
    f.files = &dfp;
    f.has_physical_rows = 1;
    f.physical_rows = 1;
    m.has_version = 1;
    m.version = 1;
    m.n_fragments = 1;
    m.fragments = &fp;
    core_buf b = CORE_BUF_INIT;
    if (lance_manifest_encode(&b, &m, NULL, 0, NULL, 0) == 0)
        (void)lance_manifest_decode(&base, b.data, b.len, "base");
    core_buf_free(&b);
    return base;
}

/* Decoding on a base must give what the full decoder gives, for any bytes. */
static void differential(const uint8_t *data, size_t size, const lance_manifest *full, int rc)
{
    const lance_manifest *base = fixed_base();
    if (!base || !base->frag_off) return;
    lance_manifest *on = NULL;
    int rc_on = lance_manifest_decode_on(&on, data, size, "fuzz.on", base);
    if (rc == OG_E_NOMEM || rc_on == OG_E_NOMEM) {
        lance_manifest_free(on);
        return;
    }
    check((rc == 0) == (rc_on == 0));
    check((rc_on == 0) == (on != NULL));
    if (full && on) check_same(full, on, 1);
    lance_manifest_free(on);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lance_manifest *m = NULL;
    int rc = lance_manifest_decode(&m, data, size, "fuzz.manifest");
    differential(data, size, m, rc);
    if (rc) {
        check(rc == OG_E_CORRUPT || rc == OG_E_NOMEM);
        check(m == NULL);
        return 0;
    }
    (void)lance_manifest_check(m->pb, LANCE_ACCESS_READ, "fuzz");
    (void)lance_manifest_check(m->pb, LANCE_ACCESS_WRITE, "fuzz");
    (void)lance_manifest_data_version(m->pb);
    for (size_t i = 0; i < m->pb->n_fragments; i++)
        sequences(m->pb->fragments[i]);
    /* Lists of fragment ids in the table metadata (lance_compact_options.apart_key): any
     * value gives ascending ids of fragments the manifest has, or none. */
    for (size_t i = 0; i < m->pb->n_table_metadata; i++) {
        const char *key = m->pb->table_metadata[i]->key;
        uint64_t *ids = NULL;
        size_t n = 0;
        if (!key || lance_manifest_apart_fragments(m->pb, key, &ids, &n) != 0) continue;
        for (size_t k = 0; k < n; k++) {
            check(k == 0 || ids[k - 1] <= ids[k]);
            int have = 0;
            for (size_t f = 0; f < m->pb->n_fragments && !have; f++)
                have = m->pb->fragments[f]->id == ids[k];
            check(have);
        }
        core_free(ids);
    }
    /* Key index declarations and segment listings (keyindex.h) in the table metadata: any
     * text parses into names that stay under the table's _ogkix/, or into nothing. */
    for (size_t i = 0; i < m->pb->n_table_metadata; i++) {
        const char *v = m->pb->table_metadata[i]->value;
        if (v) (void)lance_kix_decl_check(v);
    }
    (void)lance_kix_files(m->pb, "t.lance", kix_file, NULL);
    for (size_t f = 0; f < m->pb->n_fragments; f++)
        (void)lance_kix_covers(m->pb, m->pb->fragments[f]->id);
    if (m->txn) {
        Lance__Table__Transaction *t = NULL;
        if (lance_txn_decode(&t, m->txn, m->txn_len, "txn") == 0) lance_pb_free(t);
    }
    /* Carry forward into a next version, encode, decode: must round-trip. */
    lance_manifest_next next;
    lance_manifest_next_init(&next, m->pb, m->pb->version + 1);
    lance_manifest_update_flags(&next.pb);
    core_arena ka;
    core_arena_init(&ka, 1024);
    (void)lance_kix_next_metadata(&ka, &next.pb, m->pb, NULL, 0, NULL, 0);
    core_buf b = CORE_BUF_INIT;
    rc = lance_manifest_encode(&b, &next.pb, m->txn, m->txn_len, m->index, m->index_len);
    if (rc == 0) {
        lance_manifest *m2 = NULL;
        rc = lance_manifest_decode(&m2, b.data, b.len, "again");
        check(rc == 0 || rc == OG_E_NOMEM);
        if (m2) {
            check(m2->pb->n_fragments == m->pb->n_fragments);
            check(m2->pb->n_fields == m->pb->n_fields);
            check(m2->index_len == m->index_len);
        }
        /* The same next version with every kept fragment copied from m's bytes decodes to
         * the same message as the full encoding (compared through a canonical re-encode). */
        core_buf sp = CORE_BUF_INIT;
        if (m2 && lance_manifest_encode_on(&sp, &next.pb, m, m->txn, m->txn_len, m->index,
                                           m->index_len) == 0) {
            lance_manifest *m3 = NULL;
            rc = lance_manifest_decode(&m3, sp.data, sp.len, "spliced");
            check(rc == 0 || rc == OG_E_NOMEM);
            if (m3) check_same(m2, m3, 0);
            /* Decoded on m (sharing m's fragments): the same message as the full decode. */
            lance_manifest *m4 = NULL;
            rc = lance_manifest_decode_on(&m4, sp.data, sp.len, "on", m);
            check(rc == 0 || rc == OG_E_NOMEM);
            check((rc == 0) == (m4 != NULL));
            if (m3 && m4) {
                check(m4->n_borrowed <= m4->pb->n_fragments);
                check_same(m3, m4, 1);
            }
            lance_manifest_free(m4);
            lance_manifest_free(m3);
        }
        core_buf_free(&sp);
        lance_manifest_free(m2);
    }
    core_buf_free(&b);
    core_arena_free(&ka);
    lance_manifest_free(m);
    return 0;
}
