/* Key indexes of this engine over Lance tables: the rows holding a value of a declared column
 * (and a second "payload" column carried with each entry), found without reading the table.
 *
 * Not a Lance index type. The files live in the table's `_ogkix/` directory (Lance and lancedb
 * ignore it; their cleanup never lists it) and the version that uses them names them in its
 * manifest's table_metadata:
 *   "ogkix.decl" = "col[>payload];..."            the declared indexes, carried by every commit
 *   "ogkix.seg"  = "name:size:frag,frag,...;..."   the segments this version may use
 * A segment is one immutable file holding one sorted tree per declared index over the rows of
 * the fragments it lists (deleted rows included), entry = (value, payload, fragment slot, row
 * offset). A write of this engine that adds at least LANCE_KIX_MIN_ROWS rows writes a segment
 * for its new fragments, as does a compaction for its outputs; smaller fragments, and
 * fragments written by another writer, are covered by none, and a lookup scans them: an LSM
 * whose memtable is the table's handful of small fragments (at most 7 per size tier below the
 * threshold, see lance_compact_options.tier_factor).
 *
 * Derived data, never authoritative: a segment counts for a listed fragment only while the
 * version has that fragment with the physical row count and the data files the segment
 * recorded (fragment ids are never reused); hits on deleted rows are dropped with the fragment's
 * deletion file; a segment that is missing, cut short or fails a checksum is skipped, its fragments
 * scanned, and the event counted (lance_kix_damaged) and logged. So a lookup answers exactly what a
 * scan of the version answers, whatever state the files are in. */
#ifndef OG_LANCE_KEYINDEX_H
#define OG_LANCE_KEYINDEX_H

#include "core/arena.h"
#include "core/buf.h"
#include "lance/dataset.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LANCE_KIX_DECL_KEY "ogkix.decl"
#define LANCE_KIX_SEG_KEY "ogkix.seg"
#define LANCE_KIX_DIR "_ogkix/"
/* New fragments of fewer rows (in one write or compaction) get no segment. */
#define LANCE_KIX_MIN_ROWS 64
#define LANCE_KIX_MAX_DECLS 8
/* Below this many rows a table's key column is read whole rather than through its segments:
 * one get per fragment costs less than a segment's tail and blocks. */
#define LANCE_KIX_LOOKUP_MIN_ROWS 2048

/* One declared index: positions of its columns in the dataset's schema (payload -1: none).
 * Only Utf8/Binary columns can be indexed. */
typedef struct lance_kix_decl {
    char column[64];
    char payload[64];
    int col, pay;
} lance_kix_decl;

/* The indexes declared by ds (none: *n = 0). A declaration naming a column the schema does not
 * have, or of another type, is ignored (the table carries on unindexed). */
int lance_kix_decls(const lance_dataset *ds, lance_kix_decl *out, size_t *n);
/* The declaration text of a manifest ("" when none). */
const char *lance_kix_decl_text(const Lance__Table__Manifest *pb);
/* Does some listed segment of pb cover fragment frag_id? */
bool lance_kix_covers(const Lance__Table__Manifest *pb, uint64_t frag_id);
/* Would declaring decls (NULL: ds's own) index something new: a fragment of at least
 * LANCE_KIX_MIN_ROWS live rows that no usable segment of that declaration covers (a
 * segment that is missing, damaged or of another format covers nothing)? */
bool lance_kix_missing(const lance_dataset *ds, const char *decls);
/* The fragments of ds a usable segment covers (the segment opens, has a tree for every
 * declared index, and matches the fragment's rows and data files): reads each listed
 * segment's tail. Free *ids with core_free. */
int lance_kix_healthy(const lance_dataset *ds, uint64_t **ids, size_t *n);
/* Physical rows of ds's fragments that some listed segment names (not checked further). */
uint64_t lance_kix_covered_rows(const lance_dataset *ds);

/* ---- building ---------------------------------------------------------------------------- */

/* A segment staged for new fragments that have no ids yet: the commit that numbers them lists
 * it (lance_kix_next_metadata). */
typedef struct lance_kix_staged {
    char name[40]; /* file name under _ogkix/ */
    uint64_t size;
    size_t first, n; /* new-fragment ordinals it covers, in slot order */
} lance_kix_staged;

/* Entries for a segment, gathered as rows are written (keys and payloads copied). NULL (and
 * 0) when ds declares no index: every other call accepts a NULL builder. */
typedef struct lance_kix_builder lance_kix_builder;
int lance_kix_builder_new(lance_kix_builder **out, const lance_dataset *ds);
/* The same for another declaration than ds's own (one being set by this commit). */
int lance_kix_builder_new_decl(lance_kix_builder **out, const lance_dataset *ds, const char *decls);
/* Rows [off, off+n) of b (ds's schema) are rows first_off.. of new-fragment slot `slot`. */
int lance_kix_builder_add(lance_kix_builder *kb, const arrow_batch *b, int64_t off, int64_t n,
                          uint32_t slot, uint32_t first_off);
/* Room for this many rows' entries in one allocation (growing by doubling copies them). */
int lance_kix_builder_reserve(lance_kix_builder *kb, uint64_t rows);
uint64_t lance_kix_builder_rows(const lance_kix_builder *kb);
/* Keep pointers into the added batches instead of copies (the caller keeps every batch alive
 * until lance_kix_builder_finish has returned). */
void lance_kix_builder_borrow(lance_kix_builder *kb);
/* Write the segment (unsynced; its key to key_out, for the commit's batch of syncs) over slots
 * 0..n_slots with these physical rows and data files (lance_kix_files_hash). Nothing is written
 * (out->n = 0) below LANCE_KIX_MIN_ROWS rows. out->first is left 0 for the caller to set. */
int lance_kix_builder_finish(lance_kix_builder *kb, const uint64_t *slot_rows,
                             const uint64_t *slot_files, size_t n_slots, lance_kix_staged *out,
                             char key_out[STORE_KEY_MAX]);
/* The identity of a fragment's data files (lance_kix_builder_finish's slot_files): a segment
 * counts for a fragment only while its files are the ones the segment was built from. */
uint64_t lance_kix_files_hash(const Lance__Table__DataFragment *f);
void lance_kix_builder_free(lance_kix_builder *kb);

/* The table_metadata of `next` (a manifest being built on base_pb, fragments and declaration
 * final): base's segments that still name a fragment of next (none when next declares other
 * indexes than base), then each staged segment with its ordinals resolved through new_ids.
 * Memory from arena. */
int lance_kix_next_metadata(core_arena *a, Lance__Table__Manifest *next,
                            const Lance__Table__Manifest *base_pb, const lance_kix_staged *st,
                            size_t n_st, const uint64_t *new_ids, size_t n_new_ids);

/* 0 when decls is a valid declaration text "col[>payload];..." (at most LANCE_KIX_MAX_DECLS,
 * names without ';', '>', ':', ',' or control characters), else OG_E_BAD_REQUEST. */
int lance_kix_decl_check(const char *decls);
/* Set pb's declared indexes to decls (NULL or "": none), arena memory. */
int lance_kix_declare_pb(core_arena *a, Lance__Table__Manifest *pb, const char *decls);

/* ---- segment files (exposed for tests and the fuzzer) ------------------------------------ */

typedef struct lance_kix_entry {
    const uint8_t *key, *pay;
    uint32_t klen, plen;
    uint32_t slot, off;
} lance_kix_entry;

/* Encode a segment: n_idx trees, tree i over e[i][0..ne[i]) (sorted here), names[i] its
 * declaration text, and the physical rows of each slot. */
int lance_kix_encode(core_buf *out, const char *const *names, lance_kix_entry *const *e,
                     const size_t *ne, size_t n_idx, const uint64_t *slot_rows,
                     const uint64_t *slot_files, size_t n_slots);

typedef struct lance_kix_seg lance_kix_seg;

/* Open a segment (reads its tail: one get when the directory fits in 4 KiB). OG_E_CORRUPT for
 * anything malformed. */
int lance_kix_seg_open(lance_kix_seg **out, store *s, const char *key, uint64_t size);
/* Over bytes in memory (borrowed; for the fuzzer). */
int lance_kix_seg_open_bytes(lance_kix_seg **out, const void *data, size_t len);
void lance_kix_seg_close(lance_kix_seg *g);
size_t lance_kix_seg_slots(const lance_kix_seg *g, const uint64_t **rows, const uint64_t **files);
/* Tree index of a declaration text, or -1. */
int lance_kix_seg_find_tree(const lance_kix_seg *g, const char *decl);

typedef int (*lance_kix_seg_hit_fn)(void *arg, size_t key, uint32_t slot, uint32_t off,
                                    const uint8_t *pay, size_t plen);
/* Every entry of tree t equal to one of keys[0..n) (sorted ascending by bytes, unique), in
 * key order. OG_E_CORRUPT when a block is malformed (hits may have been reported). */
int lance_kix_seg_lookup(lance_kix_seg *g, int t, const uint8_t *const *keys, const size_t *klens,
                         size_t n, lance_kix_seg_hit_fn fn, void *arg);
/* Every entry of tree t in key order, checking the order, the blocks and the count. */
int lance_kix_seg_walk(lance_kix_seg *g, int t, lance_kix_seg_hit_fn fn, void *arg);
/* The same with each entry whole (its key bytes too; borrowed for the call). */
typedef int (*lance_kix_seg_entry_fn)(void *arg, const lance_kix_entry *e);
int lance_kix_seg_walk_entries(lance_kix_seg *g, int t, lance_kix_seg_entry_fn fn, void *arg);

/* ---- lookups ----------------------------------------------------------------------------- */

typedef struct lance_kix_stats {
    uint64_t segments;          /* segments probed */
    uint64_t fragments_indexed; /* fragments answered by a segment */
    uint64_t fragments_scanned; /* fragments read instead */
    uint64_t rows_scanned;
    uint64_t damaged; /* segments skipped as missing or damaged */
} lance_kix_stats;

/* A live row whose column holds a looked-up value: key is the index into the caller's keys,
 * addr the row address, pay the payload column's value (NULL when no payload or null). */
typedef int (*lance_kix_hit_fn)(void *arg, size_t key, uint64_t addr, const uint8_t *pay,
                                size_t plen);

/* Every live row of ds whose `column` equals one of keys[0..n) (any order, duplicates
 * allowed: each hit is reported for the first equal key). With an index declared on the
 * column (payload: the declared one), segments answer what they cover and the rest is
 * scanned; without, the whole column is scanned (same answers). Hits come in no particular
 * order. payload may be NULL (no payload wanted). st may be NULL. */
int lance_kix_lookup(const lance_dataset *ds, const char *column, const char *payload,
                     const uint8_t *const *keys, const size_t *klens, size_t n, lance_kix_hit_fn fn,
                     void *arg, lance_kix_stats *st);

/* The row addresses of every live row whose column is one of the C strings keys[0..n) (NULL
 * entries skipped), through lance_kix_lookup. Free with lance_kix_addrs_clear. */
typedef struct lance_kix_addrs {
    uint64_t *a;
    size_t n, cap;
} lance_kix_addrs;
int lance_kix_lookup_strs(lance_kix_addrs *out, const lance_dataset *ds, const char *column,
                          char *const *keys, size_t n);
void lance_kix_addrs_clear(lance_kix_addrs *a);

/* Does ds declare an index on column (with that payload, or any when payload is NULL)? */
bool lance_kix_declared(const lance_dataset *ds, const char *column, const char *payload);

/* Segments skipped as missing or damaged by lookups in this process. */
uint64_t lance_kix_damaged(void);

/* The integrity check of ds's key index segments: each listed segment opens, holds a tree
 * for every declared index, matches the fragments it counts for (rows and data files), and
 * every entry agrees with the data: each live row of those fragments has exactly one entry,
 * with its value and payload (reads the segments and the indexed columns whole). A problem
 * never changes an answer (lookups scan what no usable segment covers) but is reported
 * through fn (the segment's name and what is wrong; the first few per segment) and counted.
 * Returns nonzero only when the data cannot be read. */
typedef struct lance_kix_verify_report {
    uint64_t segments;          /* listed by the version */
    uint64_t segments_ok;       /* without a problem */
    uint64_t fragments_covered; /* fragments a segment without a problem counts for */
    uint64_t entries;           /* entries compared with the data */
    uint64_t problems;
} lance_kix_verify_report;
typedef void (*lance_kix_problem_fn)(void *arg, const char *segment, const char *what);
int lance_kix_verify(const lance_dataset *ds, lance_kix_verify_report *rep, lance_kix_problem_fn fn,
                     void *arg);

/* The same without reading the entries or the data: each listed segment opens (its tail:
 * directory and checksums of what it reads), holds a tree for every declared index and
 * matches the rows and data files of the fragments it counts for. One read per segment. */
int lance_kix_check(const lance_dataset *ds, lance_kix_verify_report *rep, lance_kix_problem_fn fn,
                    void *arg);

/* Segment file keys named by manifest pb (under root), for cleanup: fn per key. */
int lance_kix_files(const Lance__Table__Manifest *pb, const char *root,
                    int (*fn)(void *arg, const char *key), void *arg);

#endif
