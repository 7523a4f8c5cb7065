/* In-memory columnar data in the Arrow layout: types, schemas, immutable arrays, builders,
 * record batches, export/import through the Arrow C Data Interface, and the kernels the
 * layers below need (filter, take, compare, hash, sort).
 *
 * Ownership and lifetimes
 *  - arrow_type / arrow_field / arrow_schema are plain values that own their strings and
 *    children; arrow_*_copy() deep-copies, arrow_*_clear() frees what they own.
 *  - arrow_array is immutable once built and reference counted: arrow_array_ref() adds a
 *    reference, arrow_array_free() drops one (NULL is fine). Every function that returns an
 *    array returns a new reference the caller owns. Arrays own a copy of their type and their
 *    buffers (always allocated with core_malloc, offset 0: there are no slices).
 *  - Reference counts are atomic, so an array may be shared read-only between threads.
 *  - arrow_batch owns its schema copy and one reference to each column.
 *  - Export (arrow_array_export & co.) is zero-copy: the exported ArrowArray holds a reference
 *    on our array until the consumer calls its release callback. Import copies the consumer's
 *    buffers into a new arrow_array (so offsets and foreign allocators never leak inward) and
 *    then calls the source's release callback (on success and on failure).
 *
 * Errors follow the house model: 0 or a negative og_code with the thread's error set. */
#ifndef OG_ARROW_ARROW_H
#define OG_ARROW_ARROW_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Arrow C Data Interface -------------------------------------------------------------
 * struct ArrowSchema / ArrowArray / ArrowArrayStream and the ARROW_FLAG_* values come from the
 * public header, which declares them once, exactly as the Arrow specification does. */
#include "omnigraph.h"

/* ---- Types ------------------------------------------------------------------------------- */

typedef enum arrow_type_id {
    ARROW_NA = 0, /* the null type: every slot is null (what an all-null unknown column is) */
    ARROW_BOOL,
    ARROW_INT32,
    ARROW_INT64,
    ARROW_UINT32,
    ARROW_UINT64,
    ARROW_FLOAT32,
    ARROW_FLOAT64,
    ARROW_UTF8,
    ARROW_LARGE_UTF8,
    ARROW_BINARY,
    ARROW_LARGE_BINARY,
    ARROW_DATE32,    /* days since the epoch, int32 */
    ARROW_DATE64,    /* milliseconds since the epoch, int64 */
    ARROW_TIMESTAMP, /* int64 in `unit`, optional time zone */
    ARROW_FIXED_SIZE_LIST,
    ARROW_LIST,
    ARROW_STRUCT,
    ARROW_TYPE_COUNT
} arrow_type_id;

typedef enum arrow_time_unit {
    ARROW_UNIT_SECOND = 0,
    ARROW_UNIT_MILLI,
    ARROW_UNIT_MICRO,
    ARROW_UNIT_NANO,
} arrow_time_unit;

typedef struct arrow_field arrow_field;

typedef struct arrow_type {
    arrow_type_id id;
    arrow_time_unit unit; /* ARROW_TIMESTAMP */
    char *tz;             /* ARROW_TIMESTAMP: time zone or NULL */
    int32_t list_size;    /* ARROW_FIXED_SIZE_LIST: items per row (> 0) */
    size_t n_children;    /* list / fixed-size list: 1 (the item field); struct: fields */
    arrow_field *children;
} arrow_type;

struct arrow_field {
    char *name;
    bool nullable;
    arrow_type type;
};

typedef struct arrow_schema {
    size_t n_fields;
    arrow_field *fields;
} arrow_schema;

/* Constructors for types. Nested constructors copy the item/child fields given. */
arrow_type arrow_type_simple(arrow_type_id id); /* scalar types only; nothing to free */
int arrow_type_timestamp(arrow_type *out, arrow_time_unit unit, const char *tz);
int arrow_type_list(arrow_type *out, const arrow_field *item);
int arrow_type_fixed_size_list(arrow_type *out, const arrow_field *item, int32_t size);
int arrow_type_struct(arrow_type *out, const arrow_field *fields, size_t n);
int arrow_type_copy(arrow_type *out, const arrow_type *in);
void arrow_type_clear(arrow_type *t);
bool arrow_type_equal(const arrow_type *a, const arrow_type *b);
/* Name for messages ("int64", "list<int32>", ...). Writes at most cap bytes. */
void arrow_type_describe(const arrow_type *t, char *buf, size_t cap);
/* Fixed width in bits of one value (1 for bool), 0 for variable/nested types. */
int arrow_type_bit_width(arrow_type_id id);
bool arrow_type_is_binary_like(arrow_type_id id); /* utf8/binary, large or not */
bool arrow_type_is_large(arrow_type_id id);       /* 64-bit offsets */

/* Field: copies name and type. */
int arrow_field_init(arrow_field *out, const char *name, const arrow_type *type, bool nullable);
int arrow_field_copy(arrow_field *out, const arrow_field *in);
void arrow_field_clear(arrow_field *f);

/* Schema: arrow_schema_add copies the field. */
void arrow_schema_init(arrow_schema *s);
int arrow_schema_add(arrow_schema *s, const arrow_field *f);
int arrow_schema_copy(arrow_schema *out, const arrow_schema *in);
void arrow_schema_clear(arrow_schema *s);
/* Index of the top-level field called name, or -1. */
int arrow_schema_find(const arrow_schema *s, const char *name);
bool arrow_schema_equal(const arrow_schema *a, const arrow_schema *b);

/* ---- Arrays ------------------------------------------------------------------------------ */

/* Layout per type (all buffers little-endian, offset 0, validity LSB-first):
 *  NA:               no buffers; null_count == length
 *  BOOL:             values = bit-packed
 *  fixed width:      values = length * width
 *  UTF8/BINARY:      offsets = int32[length+1], values = bytes
 *  LARGE_*:          offsets = int64[length+1], values = bytes
 *  LIST:             offsets = int32[length+1], children[0] = items
 *  FIXED_SIZE_LIST:  children[0] has length * list_size items
 *  STRUCT:           children[i] one per field, each `length` long
 * validity is NULL when every slot is valid (null_count == 0). */
typedef struct arrow_array {
    _Atomic long refs;
    arrow_type type;
    int64_t length;
    int64_t null_count;
    uint8_t *validity;
    void *offsets;
    void *values;
    size_t values_size; /* bytes in values */
    size_t n_children;
    struct arrow_array **children;
} arrow_array;

arrow_array *arrow_array_ref(arrow_array *a);
void arrow_array_free(arrow_array *a);

static inline bool arrow_bit_get(const uint8_t *bits, int64_t i)
{
    return (bits[i >> 3] >> (i & 7)) & 1;
}
static inline void arrow_bit_set(uint8_t *bits, int64_t i, bool v)
{
    if (v)
        bits[i >> 3] |= (uint8_t)(1u << (i & 7));
    else
        bits[i >> 3] &= (uint8_t) ~(1u << (i & 7));
}
static inline bool arrow_array_is_valid(const arrow_array *a, int64_t i)
{
    if (a->type.id == ARROW_NA) return false;
    return a->validity == NULL || arrow_bit_get(a->validity, i);
}

/* Typed accessors for row i (caller checks the type and bounds). */
int64_t arrow_array_get_int(const arrow_array *a, int64_t i);   /* any integer/date/ts type */
uint64_t arrow_array_get_uint(const arrow_array *a, int64_t i); /* uint32/uint64 */
double arrow_array_get_double(const arrow_array *a, int64_t i); /* float32/float64 */
bool arrow_array_get_bool(const arrow_array *a, int64_t i);
/* utf8/binary (large or not): pointer into the array and length. */
const uint8_t *arrow_array_get_bytes(const arrow_array *a, int64_t i, size_t *len);
/* list or fixed-size list: row i's items are [start, end) of children[0]. */
void arrow_array_list_range(const arrow_array *a, int64_t i, int64_t *start, int64_t *end);

/* Build an all-null array of the given type (nested children are all null too). */
int arrow_array_new_null(arrow_array **out, const arrow_type *type, int64_t length);
/* Concatenate arrays of one type. */
int arrow_array_concat(arrow_array **out, arrow_array *const *parts, size_t n);
/* Deep equality of type, length, validity and valid values (null slots' bytes ignored). */
bool arrow_array_equal(const arrow_array *a, const arrow_array *b);
/* Structural self-check of an array (offsets monotone and in range, child lengths,
 * null counts): OG_E_CORRUPT naming what is wrong. Used on data read from files. */
int arrow_array_validate(const arrow_array *a);

/* Internal constructor for layers that build arrays directly (e.g. file decoders): takes
 * ownership of the buffers and children given (on failure too: they are freed). */
int arrow_array_make(arrow_array **out, const arrow_type *type, int64_t length, int64_t null_count,
                     uint8_t *validity, void *offsets, void *values, size_t values_size,
                     arrow_array **children, size_t n_children);

/* ---- Builders ---------------------------------------------------------------------------- */

/* A builder makes one array of a fixed type. Appends grow buffers geometrically.
 * For nested types, append the items/children through arrow_builder_child() first, then
 * close the row on the parent:
 *   list:            append k items to child 0, then arrow_builder_append_list(b, k)
 *   fixed-size list: append list_size items to child 0, then arrow_builder_append_valid(b)
 *   struct:          append one value to every child, then arrow_builder_append_valid(b)
 * arrow_builder_append_null() on a fixed-size list or struct appends the null children for
 * you. Typed appends check the builder's type (OG_E_BAD_REQUEST on a mismatch). */
typedef struct arrow_builder arrow_builder;

int arrow_builder_new(arrow_builder **out, const arrow_type *type);
void arrow_builder_free(arrow_builder *b);
arrow_builder *arrow_builder_child(arrow_builder *b, size_t i);
int64_t arrow_builder_length(const arrow_builder *b);
int arrow_builder_reserve(arrow_builder *b, int64_t rows);
int arrow_builder_append_null(arrow_builder *b);
int arrow_builder_append_nulls(arrow_builder *b, int64_t n);
int arrow_builder_append_bool(arrow_builder *b, bool v);
/* int32/int64/uint32/uint64/date32/date64/timestamp; range checked against the type. */
int arrow_builder_append_int(arrow_builder *b, int64_t v);
int arrow_builder_append_uint(arrow_builder *b, uint64_t v);
int arrow_builder_append_double(arrow_builder *b, double v);               /* float32/float64 */
int arrow_builder_append_bytes(arrow_builder *b, const void *p, size_t n); /* utf8/binary */
int arrow_builder_append_str(arrow_builder *b, const char *s);
int arrow_builder_append_list(arrow_builder *b, int64_t n_items);
int arrow_builder_append_valid(arrow_builder *b); /* fixed-size list / struct row */
/* Append row i of src (same type). */
int arrow_builder_append_from(arrow_builder *b, const arrow_array *src, int64_t i);
/* Finish: the builder is reset (empty, same type) and may be reused. After a failed finish
 * its contents are unspecified: free it. */
int arrow_builder_finish(arrow_builder *b, arrow_array **out);

/* ---- Record batches ---------------------------------------------------------------------- */

typedef struct arrow_batch {
    arrow_schema schema;
    int64_t num_rows;
    size_t n_columns;
    arrow_array **columns;
} arrow_batch;

/* Takes a reference to each column (the caller keeps its own); checks types and lengths. */
int arrow_batch_new(arrow_batch **out, const arrow_schema *schema, arrow_array *const *cols,
                    size_t n);
void arrow_batch_free(arrow_batch *b);
/* A batch of columns idx[0..n) of b, in that order (new references to the same arrays). */
int arrow_batch_project(arrow_batch **out, const arrow_batch *b, const size_t *idx, size_t n);
bool arrow_batch_equal(const arrow_batch *a, const arrow_batch *b);

/* ---- C Data Interface -------------------------------------------------------------------- */

int arrow_schema_export_field(const arrow_field *f, struct ArrowSchema *out);
/* A schema exports as a struct ("+s") whose children are the fields. */
int arrow_schema_export(const arrow_schema *s, struct ArrowSchema *out);
int arrow_array_export(arrow_array *a, struct ArrowArray *out);
/* A batch exports as a struct array of its columns (no nulls). */
int arrow_batch_export(arrow_batch *b, struct ArrowArray *out);

/* Import releases `in` (its release callback is called, success or not). */
int arrow_field_import(arrow_field *out, struct ArrowSchema *in);
int arrow_schema_import(arrow_schema *out, struct ArrowSchema *in);
int arrow_array_import(arrow_array **out, const arrow_type *type, struct ArrowArray *in);
int arrow_batch_import(arrow_batch **out, const arrow_schema *schema, struct ArrowArray *in);

/* A stream over batches, exported in order. The stream takes ownership of the batches array
 * and the batches in it (allocated with core_malloc; freed by the stream's release, and on
 * failure here). */
int arrow_stream_export(const arrow_schema *schema, arrow_batch **batches, size_t n,
                        struct ArrowArrayStream *out);

/* Consume a producer's stream: its schema and every batch (copied), then release it (also on
 * failure). *batches is a core_malloc'd array the caller frees with core_free after
 * arrow_batch_free on each. A get_schema/get_next error gives OG_E_BAD_REQUEST with the
 * producer's message. */
int arrow_stream_import(arrow_schema *schema, arrow_batch ***batches, size_t *n,
                        struct ArrowArrayStream *in);

/* ---- Kernels ----------------------------------------------------------------------------- */

/* Rows where mask is true (null mask slots count as false). mask is a BOOL array. */
int arrow_filter(arrow_array **out, const arrow_array *a, const arrow_array *mask);
int arrow_batch_filter(arrow_batch **out, const arrow_batch *b, const arrow_array *mask);
/* Rows idx[0..n); an index of -1 gives a null row; others must be in [0, length). */
int arrow_take(arrow_array **out, const arrow_array *a, const int64_t *idx, size_t n);
int arrow_batch_take(arrow_batch **out, const arrow_batch *b, const int64_t *idx, size_t n);

typedef enum arrow_cmp_op {
    ARROW_CMP_EQ = 0,
    ARROW_CMP_NE,
    ARROW_CMP_LT,
    ARROW_CMP_LE,
    ARROW_CMP_GT,
    ARROW_CMP_GE,
} arrow_cmp_op;

/* A scalar for comparisons: kind follows the array it is compared with. */
typedef struct arrow_scalar {
    bool is_null;
    arrow_type_id kind; /* ARROW_INT64 (for any signed int/date/ts), ARROW_UINT64,
                           ARROW_FLOAT64, ARROW_BOOL, ARROW_BINARY (bytes) */
    int64_t i;
    uint64_t u;
    double d;
    bool b;
    const void *bytes;
    size_t n_bytes;
} arrow_scalar;

/* Total order of row i of a and row j of b (same type): negative, 0, positive.
 * Nulls sort before every value; NaN after every number; -0.0 == 0.0; bytes compare
 * lexicographically (unsigned); lists and fixed-size lists element by element, then by
 * length; structs field by field. */
int arrow_compare_rows(const arrow_array *a, int64_t i, const arrow_array *b, int64_t j);
/* Elementwise comparison into a BOOL array; a row is null if either side is null.
 * Scalars must be compatible with the array type (OG_E_BAD_REQUEST otherwise). */
int arrow_compare_scalar(arrow_array **out, const arrow_array *a, arrow_cmp_op op,
                         const arrow_scalar *s);
int arrow_compare(arrow_array **out, const arrow_array *a, arrow_cmp_op op, const arrow_array *b);

/* Per-row hash (XXH3): hashes[i] = hash of row i combined with hashes[i] when `combine`
 * (so several columns hash into one key). Nulls hash to a fixed value; equal rows under
 * arrow_compare_rows() == 0 hash equally (-0.0 and 0.0, all NaNs). */
void arrow_hash_rows(const arrow_array *a, uint64_t *hashes, bool combine);

typedef struct arrow_sort_key {
    const arrow_array *column;
    bool descending;
    bool nulls_first; /* independent of direction */
} arrow_sort_key;

/* Stable sort of row numbers 0..length-1 by the keys in order; out has room for length. */
int arrow_sort_indices(int64_t *out, const arrow_sort_key *keys, size_t n_keys, int64_t length);

/* Byte-comparable sort keys: row i's key is (*data)[offs[i], offs[i+1]), and comparing two keys
 * with memcmp (a shorter key that is a prefix of a longer one sorts first) gives the order of
 * arrow_sort_indices for the same keys; equal keys are exactly the rows that compare equal
 * (so keys also serve for grouping and joins). offs has room for length + 1. *data is
 * allocated with core_malloc; the caller frees it with core_free. */
int arrow_sort_keys_encode(uint8_t **data, size_t *offs, const arrow_sort_key *keys, size_t n_keys,
                           int64_t length);

#endif
