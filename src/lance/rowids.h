/* Stable row ids (manifest flag 2): a fragment's RowIdSequence and its created-at /
 * last-updated-at RowDatasetVersionSequences (lance-format-subset.md §4.2), encoded as the
 * bytes stored inline in DataFragment fields 5, 7 and 9.
 *
 * In memory a sequence is a list of segments; each segment owns its arrays (free the whole
 * sequence with its _free function). Decoding validates every segment (ranges ordered,
 * holes and sorted arrays increasing and inside their range, bitmaps long enough, array
 * lengths whole), so a decoded sequence can be expanded without further checks. */
#ifndef OG_LANCE_ROWIDS_H
#define OG_LANCE_ROWIDS_H

#include "core/buf.h"

#include <stddef.h>
#include <stdint.h>

typedef enum lance_seg_kind {
    LANCE_SEG_RANGE = 1,    /* start..end */
    LANCE_SEG_RANGE_HOLES,  /* start..end minus values[] (sorted holes) */
    LANCE_SEG_RANGE_BITMAP, /* start + i for each set bit i of bitmap (LSB-first) */
    LANCE_SEG_SORTED_ARRAY, /* values[], increasing */
    LANCE_SEG_ARRAY         /* values[], any order */
} lance_seg_kind;

typedef struct lance_segment {
    lance_seg_kind kind;
    uint64_t start, end; /* ranges: [start, end) */
    uint64_t *values;    /* holes or array values (owned) */
    size_t n_values;
    uint8_t *bitmap; /* RANGE_BITMAP (owned) */
    size_t bitmap_len;
} lance_segment;

typedef struct lance_rowid_seq {
    lance_segment *segs;
    size_t n;
} lance_rowid_seq;

/* Bound on the rows a decoded sequence may describe (checked before any expansion). */
#define LANCE_ROWIDS_MAX_ROWS (UINT64_C(1) << 32)

int lance_rowid_seq_decode(lance_rowid_seq *out, const void *data, size_t len, const char *object);
/* Encode, replacing out's contents. Arrays are stored as u16/u32 offsets from their minimum
 * when they fit, else as u64 values. */
int lance_rowid_seq_encode(core_buf *out, const lance_rowid_seq *seq);
void lance_rowid_seq_free(lance_rowid_seq *seq);
/* Number of row ids the sequence holds. */
uint64_t lance_rowid_seq_len(const lance_rowid_seq *seq);
/* All ids in order (caller frees *ids with core_free). */
int lance_rowid_seq_expand(const lance_rowid_seq *seq, uint64_t **ids, size_t *n);

/* Number of values a segment holds. */
uint64_t lance_segment_len(const lance_segment *s);

/* Row ids for a new fragment of n rows: [range{*next_row_id, +n}], then *next_row_id += n.
 * Replaces out's contents with the encoded RowIdSequence. */
int lance_rowids_assign(core_buf *out, uint64_t *next_row_id, uint64_t n);

/* ---- created-at / last-updated-at version sequences ------------------------------------- */

typedef struct lance_version_run {
    lance_segment span; /* which rows (offsets in the fragment) */
    uint64_t version;
} lance_version_run;

typedef struct lance_version_seq {
    lance_version_run *runs;
    size_t n;
} lance_version_seq;

int lance_version_seq_decode(lance_version_seq *out, const void *data, size_t len,
                             const char *object);
int lance_version_seq_encode(core_buf *out, const lance_version_seq *seq);
void lance_version_seq_free(lance_version_seq *seq);
/* The sequence of per-row versions v[0..n): one run per stretch of equal values. Replaces
 * out's contents with the encoded RowDatasetVersionSequence. */
int lance_version_seq_from_rows(core_buf *out, const uint64_t *v, uint64_t n);
/* The bound on a fragment's runs that the graph engine uses (lance_compact_options
 * .version_runs_max, and rows an update rewrites). Every manifest repeats every fragment's
 * sequences, so a fragment compacted from many small writes (one run per write) would make
 * every later commit rewrite one run per row it holds. Past the bound the fragment carries no
 * sequence: the versions are unknown, which Lance readers accept (they report their
 * defaults), rather than approximated, which would claim a false version. */
#define LANCE_VERSION_RUNS_MAX 8
/* Whether per-row versions v[0..n) are kept as a sequence: every one known (0 is unknown)
 * and at most max_runs runs (0: any number). */
int lance_version_seq_keepable(const uint64_t *v, uint64_t n, size_t max_runs);
/* {runs: [{span: range{0, n}, version}]}: every row of a fragment written at `version`. */
int lance_version_seq_uniform(core_buf *out, uint64_t n_rows, uint64_t version);
/* The version of each of n_rows rows, in row order (the runs must cover exactly n_rows rows
 * taken in order; OG_E_CORRUPT otherwise). Caller frees *versions with core_free. */
int lance_version_seq_expand(const lance_version_seq *seq, uint64_t n_rows, uint64_t **versions);

#endif
