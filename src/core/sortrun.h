/* Sorted runs: an external sort of (key, line, aux) records in bounded memory. Records are
 * gathered in a buffer of a fixed budget; a full buffer is sorted (by key bytes, then line) and
 * written as one run to a file that has no name (unlinked as soon as it is created, so nothing
 * is left behind by a failure or a crash); a merge reads every run back in order through a
 * small buffer per run. Memory: the budget while adding, one read buffer per run while merging,
 * whatever the number of records. A sorter that never filled its buffer is merged in memory. */
#ifndef OG_CORE_SORTRUN_H
#define OG_CORE_SORTRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct core_sortrun core_sortrun;
typedef struct core_sortrun_iter core_sortrun_iter;

typedef struct core_sortrun_rec {
    const uint8_t *key;
    size_t klen;
    uint64_t line;
    const uint8_t *aux; /* carried along, not compared */
    size_t alen;
} core_sortrun_rec;

/* A sorter whose buffer holds about `budget` bytes (0: 8 MiB). Its runs go to a nameless file
 * in $TMPDIR (else /tmp), created when the first run is written. */
int core_sortrun_new(core_sortrun **out, size_t budget);
void core_sortrun_free(core_sortrun *s);
int core_sortrun_add(core_sortrun *s, const void *key, size_t klen, uint64_t line, const void *aux,
                     size_t alen);
uint64_t core_sortrun_count(const core_sortrun *s);
/* Whether every record was added in strictly increasing key order (then keys are distinct). */
bool core_sortrun_increasing(const core_sortrun *s);
size_t core_sortrun_runs(const core_sortrun *s);

/* A merge of every record added so far, in (key, line) order; a sorter may be merged any number
 * of times, and records may not be added while a merge is open. *rec stays valid until the
 * next call. */
int core_sortrun_iter_open(core_sortrun_iter **out, core_sortrun *s);
int core_sortrun_iter_next(core_sortrun_iter *it, core_sortrun_rec *rec, bool *done);
void core_sortrun_iter_free(core_sortrun_iter *it);

/* Bytes of memory held, over every sorter and merge of the process (their buffers and run
 * lists), plus what a caller adds for what it keeps beside them (core_sortrun_account): a
 * counter tests read to bound a streamed load's memory. The peak is since the last reset. */
void core_sortrun_account(int64_t delta);
uint64_t core_sortrun_held(void);
uint64_t core_sortrun_peak(void);
void core_sortrun_reset_peak(void);

#endif
