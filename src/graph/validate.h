/* Validation of a set of changes to a graph against a pinned snapshot: value constraints
 * (types, enums, @range, @check), identity (@key-derived ids, duplicate ids in the input),
 * @unique, edge endpoints (referential integrity) and @card. Every committed table a check
 * reads is recorded as a probe, so the write protocol can put it in the read set (RFC-022
 * §2.2: a table belongs in the read set because its value affected the decision).
 *
 * The input rows of a change are already in the table's Arrow schema (graph_type_schema)
 * with their "id" filled in; errors name the change's source line when it has one. */
#ifndef OG_GRAPH_VALIDATE_H
#define OG_GRAPH_VALIDATE_H

#include "graph/graph.h"

typedef enum graph_change_mode {
    GRAPH_CHANGE_INSERT = 1, /* strict insert: an id that exists is OG_E_KEY_CONFLICT */
    GRAPH_CHANGE_UPSERT,     /* insert or replace by id */
    GRAPH_CHANGE_REPLACE,    /* the rows become the table's whole content */
    GRAPH_CHANGE_DELETE,     /* delete the rows whose ids are listed */
    GRAPH_CHANGE_DELTA,      /* upsert `rows` (may be NULL or empty) and delete `delete_ids`
                              * (no id in both), as one transaction: a merge's delta onto its
                              * target (src/graph/merge.h) */
} graph_change_mode;

/* Changes to one table. */
typedef struct graph_change {
    int type_index;    /* index into the catalog's types */
    int mode;          /* graph_change_mode */
    arrow_batch *rows; /* INSERT/UPSERT/REPLACE/DELTA: rows in graph_type_schema (owned) */
    uint64_t *lines;   /* source line of each row (owned; NULL when not from a file) */
    char **delete_ids; /* DELETE/DELTA: ids (owned) */
    size_t n_delete_ids;
} graph_change;

typedef struct graph_change_set {
    graph_change *changes; /* at most one per type, ordered by type index */
    size_t n;
    const char *file; /* source name for error locations (not owned), or NULL */
} graph_change_set;

void graph_change_set_clear(graph_change_set *cs);

/* The committed tables a validation read. */
typedef struct graph_probes {
    char **aliases; /* sorted, unique */
    size_t n;
} graph_probes;

void graph_probes_clear(graph_probes *p);
int graph_probes_add(graph_probes *p, const char *alias);

typedef struct graph_validate_stats {
    uint64_t rows_checked;
    uint64_t tables_scanned; /* committed tables read whole (columns of every row) */
    uint64_t index_lookups;  /* committed tables asked through their key indexes */
    uint64_t rows_scanned;   /* committed rows read (whole reads, and the fragments a key
                                index does not cover) */
} graph_validate_stats;

/* Check the change set against snapshot `snap` read through store s. 0 when every constraint
 * holds after the changes; otherwise the first violation as OG_E_BAD_REQUEST (value, enum,
 * range, check, endpoint, cardinality: message names the type, property, id and line),
 * OG_E_KEY_CONFLICT (an inserted id exists, or an id twice in the input), with the thread
 * error's file/line set when the row has a line. Tables read are added to *probes (even when
 * validation fails). */
int graph_validate(const lang_catalog *cat, const graph_snapshot *snap, store *s,
                   const graph_change_set *cs, graph_probes *probes, graph_validate_stats *stats);

/* How validation opens a committed table (a snapshot table of `snap`): the dataset is
 * borrowed and stays valid for the whole call. NULL: graph_table_open + free per read. */
typedef int (*graph_table_open_fn)(void *arg, const graph_table *t, const lance_dataset **out);

int graph_validate_ex(const lang_catalog *cat, const graph_snapshot *snap, store *s,
                      const graph_change_set *cs, graph_probes *probes, graph_validate_stats *stats,
                      graph_table_open_fn open, void *open_arg);

/* A change set too large to hold at once (a streamed bulk load) is checked in two scopes:
 * each chunk's rows on their own (ROWS: value types, enums, @range, @check, the presence of
 * ids and endpoints: all that one row decides), then the whole set once, in rows that may
 * carry only the columns the set checks read (SET: ids, endpoints, @unique columns; any other
 * column may be a null column of type ARROW_NA), with the ROWS checks skipped. ALL is both, as
 * graph_validate_ex. Errors are those of graph_validate_ex. */
enum graph_validate_scope {
    GRAPH_VALIDATE_ALL = 0,
    GRAPH_VALIDATE_ROWS = 1,
    GRAPH_VALIDATE_SET = 2,
};

int graph_validate_scoped(const lang_catalog *cat, const graph_snapshot *snap, store *s,
                          const graph_change_set *cs, graph_probes *probes,
                          graph_validate_stats *stats, graph_table_open_fn open, void *open_arg,
                          int scope);

/* The whole set of a streamed load too large to keep in memory, as sorted runs
 * (core/sortrun.h) instead of rows: per type present, its ids as (id, line) records; per edge
 * type present, its endpoints as (src, line, aux = edge id) and (dst, line, aux = edge id).
 * graph_validate_sorted makes the checks of GRAPH_VALIDATE_SET on them by merge joins, in
 * memory independent of the number of rows: ids distinct within the input, an inserted id not
 * committed, every endpoint an input node of its type or (unless that table is replaced) a
 * committed one, and no committed edge left dangling by a replaced node table (the one check
 * that holds the replaced node type's ids in memory). It does not check @unique or @card: a
 * catalog with either keeps its whole set in rows (graph_validate_sorted_covers). Errors and
 * their lines are those graph_validate_scoped would report for the same rows; the one whose
 * line comes first when several break the same check. Probes as graph_validate_ex. */
typedef struct graph_sorted_set {
    const char *file;          /* for error locations */
    const int *mode;           /* per catalog type: GRAPH_CHANGE_INSERT or _REPLACE, 0: absent */
    struct core_sortrun **ids; /* per catalog type (NULL: absent) */
    struct core_sortrun **src, **dst; /* per edge type (NULL: absent) */
} graph_sorted_set;

bool graph_validate_sorted_covers(const lang_catalog *cat);
int graph_validate_sorted(const lang_catalog *cat, const graph_snapshot *snap, store *s,
                          const graph_sorted_set *ss, graph_probes *probes,
                          graph_validate_stats *stats, graph_table_open_fn open, void *open_arg);

struct graph_conflicts; /* graph/merge.h */

/* The same check reporting every violation instead of the first (a merge reports all its
 * conflicts): each is appended to *out as a graph_conflict (orphan_edge, unique_violation,
 * cardinality_violation, value_constraint_violation; type, id where known, message) and
 * validation goes on. 0 when everything could be checked, whether or not violations were
 * found; nonzero only for an error that stopped it (I/O, OG_E_NOMEM, a malformed change). */
int graph_validate_all(const lang_catalog *cat, const graph_snapshot *snap, store *s,
                       const graph_change_set *cs, graph_probes *probes,
                       graph_validate_stats *stats, graph_table_open_fn open, void *open_arg,
                       struct graph_conflicts *out);

#endif
