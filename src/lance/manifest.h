/* Lance manifest files: decode and encode the `_versions/<name>.manifest` container
 *   [u32 len][Transaction]? [u32 len][IndexSection]? [u32 len][Manifest] [i64 P][u16 0][u16
 * 2]"LANC" and the checks that decide whether this engine may read or write a table version.
 *
 * In memory a manifest is the protobuf-c message Lance__Table__Manifest (see
 * proto/table.proto), so fields this engine does not interpret (schema_metadata, config,
 * table_metadata, base_paths, branch, next_row_id, and fields added by newer lance versions,
 * kept by protobuf-c as unknown fields) are carried into the next version unchanged.
 *
 * Ownership
 *  - lance_manifest owns its decoded message and copies of the raw inline transaction and
 *    index section bytes; free it with lance_manifest_free (NULL is fine). A decoded manifest
 *    is never changed, so it may have several holders (lance_manifest_share) and a manifest
 *    decoded on a base shares the base's unchanged fragments (lance_manifest_decode_on).
 *  - lance_manifest_next_init() makes a *shallow* copy: the new message borrows every
 *    pointer from the previous manifest, which must outlive it. Replace the members you
 *    change with memory you own (an arena is convenient), never free borrowed ones.
 *  - lance_manifest_encode() only reads its inputs.
 *
 * proto2 caveat: table.proto and transaction.proto are proto2, because protobuf-c 1.4.1
 * cannot generate proto3 `optional` (presence for max_fragment_id, index_section, base_id,
 * ...). When building a message, set has_<field> = 1 next to every scalar you set: a scalar
 * without it is not written. When reading, use the value and ignore has_ except for the
 * genuinely optional fields: lance (proto3) omits zero values, so has_ is 0 for them.
 * Strings: NULL means absent. In a DataFragment oneof, set the *_case member too. */
#ifndef OG_LANCE_MANIFEST_H
#define OG_LANCE_MANIFEST_H

#include "core/arena.h"
#include "core/buf.h"
#include "lance/proto/table.pb-c.h"
#include "lance/proto/transaction.pb-c.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Feature flags (Manifest.reader/writer_feature_flags). */
#define LANCE_FLAG_DELETION_FILES 1u /* some fragment has a deletion file */
#define LANCE_FLAG_STABLE_ROW_IDS 2u /* fragments carry row id sequences */
#define LANCE_FLAG_TABLE_CONFIG 8u   /* config map present */
#define LANCE_FLAG_BASE_PATHS 16u    /* data may live under other base paths */
#define LANCE_FLAGS_KNOWN                                                                          \
    (LANCE_FLAG_DELETION_FILES | LANCE_FLAG_STABLE_ROW_IDS | LANCE_FLAG_TABLE_CONFIG |             \
     LANCE_FLAG_BASE_PATHS)

#define LANCE_FOOTER_LEN 16
#define LANCE_WRITER_LIBRARY "omnigraph"

/* The protobuf-c allocator every lance message goes through (core_malloc/core_free, so the
 * allocation-failure tests reach protobuf decoding too). */
extern ProtobufCAllocator lance_pb_allocator;

/* ---- chained versions ----------------------------------------------------------------------
 * A chained table (the graph manifest: src/graph/manifest.c says which and why) records in
 * every version a checksum of that version's own file and of the file of the version it was
 * committed on top of, as the config entry LANCE_CHAIN_KEY = "xxh3:<self>:<parent>" (16 lower
 * hex digits each). Config is a map lance readers carry but do not interpret, so the file stays
 * a lance manifest that lancedb reads. <self> is XXH3-64 of the whole file except its own 16
 * digits (lance_chain_read); <parent> is XXH3-64 of the parent's whole file
 * (lance_manifest.file_xxh3), 0 for a first version. The entry costs ~60 bytes of the manifest
 * and no store operation. */
#define LANCE_CHAIN_KEY "omnigraph.chain"
#define LANCE_CHAIN_VALUE_LEN 38 /* "xxh3:" 16 ":" 16 */

enum {
    LANCE_CHAIN_NONE = 0,  /* no entry: a version of an unchained table, or of an older build */
    LANCE_CHAIN_PRESENT,   /* entry found: recorded, actual and parent are set */
    LANCE_CHAIN_MALFORMED, /* an entry that cannot be read or placed in the bytes */
};

typedef struct lance_chain {
    int state;             /* LANCE_CHAIN_* */
    uint64_t recorded;     /* the self checksum the version records */
    uint64_t actual;       /* what its bytes hash to (equal to recorded when intact) */
    uint64_t parent;       /* the recorded checksum of the parent's file (0: none) */
    size_t n_other_config; /* config entries besides the chain's */
} lance_chain;

typedef struct lance_manifest {
    Lance__Table__Manifest *pb; /* decoded message, owned: every part of it lives in arena */
    core_arena arena;           /* one block allocation per chunk instead of one malloc per
                                   fragment, file and sequence; freed with the manifest */
    unsigned char *txn;         /* inline Transaction message bytes (no length prefix), or NULL */
    size_t txn_len;
    unsigned char *index; /* IndexSection message bytes (no length prefix), or NULL */
    size_t index_len;
    uint64_t file_size; /* size of the manifest file it was decoded from */
    uint64_t file_xxh3; /* XXH3-64 (seed 0) of that file's bytes: what the graph manifest
                         * records for a table version (graph_table.manifest_xxh3) */
    /* The encoded Manifest message and where each fragment's field (tag, length, message) lies
     * in it, in pb->fragments order (in arena; NULL when the layout was not as expected), so a
     * next manifest can copy the fragments it keeps instead of encoding them again. */
    const unsigned char *msg;
    size_t msg_len;
    uint32_t *frag_off, *frag_len;
    /* A manifest decoded on a base (lance_manifest_decode_on) borrows the base's decoded
     * fragments that it keeps unchanged, and holds a share of the base (parent) so they stay
     * alive; depth counts the manifests so held in a chain, n_borrowed the fragments borrowed. */
    struct lance_manifest *parent;
    unsigned depth;
    size_t n_borrowed;
    lance_chain chain; /* the version's chain entry, as found in its bytes (lance_chain_read) */
    _Atomic unsigned shares; /* holders besides the first: lance_manifest_free drops one */
} lance_manifest;

/* How many manifests one decoded on a base may keep alive through parents: the next decode
 * after that is a full one, so a chain of commits holds at most this many old manifests. */
#define LANCE_MANIFEST_SHARE_DEPTH 8

/* Decode a whole manifest file. `object` names it in errors (a key or path). Every offset and
 * length is checked; damaged bytes give OG_E_CORRUPT naming the object. Does not check feature
 * flags or data format: see lance_manifest_check. */
int lance_manifest_decode(lance_manifest **out, const void *data, size_t len, const char *object);

/* As lance_manifest_decode, for manifest bytes that were written on top of `base` (a commit's
 * own new version): every fragment whose encoded bytes are identical to one of base's is not
 * decoded again but shared with base (the result holds a share of base; base itself is not
 * changed and may be freed by its owner at any time). The result decodes to the same message
 * as lance_manifest_decode. With no base, a base without a recorded layout, or a chain already
 * LANCE_MANIFEST_SHARE_DEPTH deep, this is lance_manifest_decode. */
int lance_manifest_decode_on(lance_manifest **out, const void *data, size_t len, const char *object,
                             const lance_manifest *base);
/* One more holder of m (a decoded manifest is never changed, so holders may share it):
 * returns m, which each holder frees with lance_manifest_free. */
lance_manifest *lance_manifest_share(const lance_manifest *m);
/* Drop one holder; the last frees it (and then its share of its parent). NULL is fine. */
void lance_manifest_free(lance_manifest *m);
/* The version m describes. */
uint64_t lance_manifest_version(const lance_manifest *m);
/* Fragments of m. */
size_t lance_manifest_fragment_count(const lance_manifest *m);
/* What a version of a table holds, summed over its fragments (no file is read). */
typedef struct lance_manifest_summary {
    uint64_t version;
    int64_t timestamp_ns; /* commit time, nanoseconds since the epoch (0: not recorded) */
    uint64_t fragments;
    uint64_t data_files;
    uint64_t data_bytes; /* the data file sizes the manifest records */
    uint64_t physical_rows;
    uint64_t deletion_files_arrow, deletion_files_bitmap;
    uint64_t reader_flags, writer_flags;
    const char *data_storage_version; /* as lance_manifest_data_version (static or m's) */
} lance_manifest_summary;
void lance_manifest_summarize(const lance_manifest *m, lance_manifest_summary *out);
/* Whether m's message holds fields this engine does not know (some build or other writer
 * wrote them, or damage made them). */
bool lance_manifest_has_unknown_fields(const lance_manifest *m);

typedef enum lance_access {
    LANCE_ACCESS_READ = 0,   /* scan it: reader flags and data storage version checked */
    LANCE_ACCESS_WRITE = 1,  /* commit on top of it: writer flags and version checked */
    LANCE_ACCESS_INSPECT = 2 /* metadata only (versions, stats): nothing checked */
} lance_access;

/* May this engine read (or write on top of) this manifest? OG_E_UNSUPPORTED naming the first
 * unknown feature bit ("unsupported reader feature flag 32") or the data storage version
 * ("unsupported data storage version 2.1"). */
int lance_manifest_check(const Lance__Table__Manifest *m, lance_access access, const char *object);
/* lance_manifest_check of a decoded manifest. */
int lance_manifest_check_access(const lance_manifest *m, lance_access access, const char *object);

/* The data storage version as "major.minor" ("2.0"), or "" when absent (legacy tables). */
const char *lance_manifest_data_version(const Lance__Table__Manifest *m);

/* Encode a manifest file into out (replacing its contents). txn and index are the raw message
 * bytes of the inline Transaction and IndexSection (either may be NULL/0). The transaction
 * goes at offset 0 and the index section after it; the encoder sets transaction_section and
 * index_section in the written message accordingly (the input is not modified). */
int lance_manifest_encode(core_buf *out, const Lance__Table__Manifest *m, const void *txn,
                          size_t txn_len, const void *index, size_t index_len);

/* The manifest of the next version, with storage for the members it owns itself. It points
 * into itself: initialise it in place and do not move it. */
typedef struct lance_manifest_next {
    Lance__Table__Manifest pb;
    Lance__Table__Timestamp timestamp;
    Lance__Table__Manifest__WriterVersion writer;
    Lance__Table__Manifest__DataStorageFormat format;
} lance_manifest_next;

/* As lance_manifest_encode, for a manifest m built on `base` (may be NULL): every fragment of
 * m that is one of base's own fragment structs (the same pointer: borrowed, unchanged) is
 * copied from base's encoded bytes instead of being encoded again; the fragments then follow
 * the other fields (protobuf readers accept fields in any order; the result decodes to the
 * same message). A fragment struct of base must never be changed in place. */
int lance_manifest_encode_on(core_buf *out, const Lance__Table__Manifest *m,
                             const lance_manifest *base, const void *txn, size_t txn_len,
                             const void *index, size_t index_len);

/* Initialise *next as the manifest of `version` following prev (NULL prev: an empty
 * manifest of a new table with data storage version 2.0): a shallow copy of prev that carries
 * every field forward except the per-version ones, which are reset: version, timestamp (now),
 * tag, transaction_file, transaction_section, index_section (set again by the encoder when
 * the index bytes are passed on), version_aux_data and writer_version (ours). The caller then
 * sets fragments, fields, max_fragment_id, next_row_id etc. as its operation requires and
 * calls lance_manifest_update_flags. */
void lance_manifest_next_init(lance_manifest_next *next, const Lance__Table__Manifest *prev,
                              uint64_t version);

/* Recompute the deletion-file flag (bit 1) from the fragments; other bits are kept. */
void lance_manifest_update_flags(Lance__Table__Manifest *m);

/* Schema sanity used by the decoder: every parent_id is -1 or the id of an earlier field,
 * and ids are unique. OG_E_CORRUPT naming the object otherwise. */
int lance_schema_check(Lance__File__Field *const *fields, size_t n, const char *object);

/* Unpack/pack helpers over lance_pb_allocator, mapping failures to typed errors. */
int lance_pb_unpack(ProtobufCMessage **out, const ProtobufCMessageDescriptor *d, const void *data,
                    size_t len, const char *what, const char *object);
/* The same with another allocator (the message is then freed through it, not lance_pb_free). */
int lance_pb_unpack_with(ProtobufCMessage **out, const ProtobufCMessageDescriptor *d,
                         const void *data, size_t len, const char *what, const char *object,
                         ProtobufCAllocator *al);
int lance_pb_pack(core_buf *out, const ProtobufCMessage *m);
/* Read the varint at b[*i..n), advancing *i: 0, or -1 if it runs past n or over 10 bytes. */
int lance_pb_varint(const unsigned char *b, size_t n, size_t *i, uint64_t *v);
void lance_pb_free(void *m);

/* Record in m->chain what file (len bytes, the message at [msg_off, msg_off + msg_len))
 * says about its chain entry. Called by the decoders; never fails (damage is a finding). */
void lance_chain_read(lance_manifest *m, const void *file, size_t len, uint64_t msg_off,
                      uint64_t msg_len);
/* Does this (next) manifest carry a chain entry from its base? Then its commit chains too. */
bool lance_chain_carried(const Lance__Table__Manifest *m);

/* The chain entry of a manifest being committed: attach it to the shallow copy m (its config
 * becomes the others plus ours, with zero self digits), encode m, then seal the bytes (the
 * self digits written in place). Clear it after the encode. */
typedef struct lance_chain_entry {
    Lance__Table__Manifest__ConfigEntry entry;
    char value[LANCE_CHAIN_VALUE_LEN + 1];
    Lance__Table__Manifest__ConfigEntry **cfg;
    uint64_t parent;
} lance_chain_entry;
int lance_chain_attach(lance_chain_entry *ce, Lance__Table__Manifest *m, uint64_t parent);
int lance_chain_seal(const lance_chain_entry *ce, unsigned char *file, size_t len, uint64_t *self);
void lance_chain_entry_clear(lance_chain_entry *ce);

/* Tests only (the setter is defined in a testing build, OG_TESTING): with writes off, commits write
 * no chain entry, as builds before chains did (to make a graph of the old format). On by default.
 */
void lance_chain_set_writes(bool on);
bool lance_chain_writes(void);

#endif
