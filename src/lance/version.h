/* Lance table versions: manifest naming (V1 "{v}.manifest", V2 "{u64max-v:020}.manifest"),
 * listing, latest-version discovery (from the hint file, checked by probing the versions after
 * it, so its cost does not grow with history; the listing only when the hint cannot be used),
 * loading the manifest of a version, and the hint file.
 * A table keeps the naming scheme it was created with; mixing schemes is refused. */
#ifndef OG_LANCE_VERSION_H
#define OG_LANCE_VERSION_H

#include "lance/manifest.h"
#include "store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum lance_naming {
    LANCE_NAMING_UNKNOWN = 0,
    LANCE_NAMING_V1 = 1,
    LANCE_NAMING_V2 = 2
} lance_naming;

#define LANCE_VERSIONS_DIR "_versions/"
#define LANCE_HINT_NAME "latest_version_hint.json"
#define LANCE_VERSION_NAME_CAP 40

/* The manifest file name (no directory) of version v (v >= 1). */
int lance_version_file_name(char *out, size_t cap, lance_naming naming, uint64_t v);
/* Parse a file name (a key's last segment, or a whole key): 1 and *v, *naming set if it names
 * a manifest; 0 for anything else, which callers skip: the hint, detached versions ("d..."),
 * staging files ("{name}.manifest-{uuid}"), names that are not numbers or that overflow. */
int lance_version_parse_name(const char *name, uint64_t *v, lance_naming *naming);

/* The versions present, ascending, and their naming scheme. */
typedef struct lance_version_list {
    uint64_t *v;
    size_t n;
    lance_naming naming;
} lance_version_list;

/* One delimited listing of root/_versions/. An empty table gives n = 0 (not an error).
 * V1 and V2 names side by side: OG_E_CORRUPT. */
int lance_versions_list(store *s, const char *root, lance_version_list *out);
void lance_version_list_free(lance_version_list *l);

/* The latest version and the scheme; OG_E_NOT_FOUND if there is none. Reads the hint, then
 * heads the versions after it (O(log(latest - hint)) heads); lists _versions/ only when the
 * hint is missing, unreadable or names a version that does not exist. */
int lance_version_latest(store *s, const char *root, uint64_t *v, lance_naming *naming);
/* The same for a dataset whose version `floor` (0: none) is known to have been made, such as a
 * branch's first version (its ref's parentVersion): when the hint cannot be used, the versions
 * after `floor` are probed (O(log(latest - floor)) heads) before falling back to the listing. */
int lance_version_latest_above(store *s, const char *root, uint64_t floor, uint64_t *v,
                               lance_naming *naming);
/* The latest version of a table whose version `known` (named with `naming`) the caller opened
 * or published: heads only, three when nothing came after it (the successor, the one after it
 * for a gap, then `known` again: if cleanup deleted `known` meanwhile, the search starts over
 * from the hint). */
int lance_version_latest_from(store *s, const char *root, lance_naming naming, uint64_t known,
                              uint64_t *v);
/* The same without the looks above and at the version found (two heads fewer): only for a caller
 * that re-checks the answer under a gate that excludes cleanup (a pre-gate base capture), or
 * for whom `known` cannot have been cleaned up (a table's pinned version: cleanup keeps every
 * version from the oldest retained commit's pins up). */
int lance_version_latest_from_unchecked(store *s, const char *root, lance_naming naming,
                                        uint64_t known, uint64_t *v);
/* The same with the choice of looks: LANCE_LATEST_CHECK looks at the version found again (the
 * checked variant above); LANCE_LATEST_GAPS heads the version after the first missing one, so
 * that a lost version with newer ones above it is a typed OG_E_CORRUPT naming it instead of a
 * stale answer (a hole below the hint is a cleanup's, and the search goes on from the hint).
 * Discovery from the hint (lance_version_latest*) always looks for gaps. */
#define LANCE_LATEST_CHECK 1u
#define LANCE_LATEST_GAPS 2u
int lance_version_latest_from_flags(store *s, const char *root, lance_naming naming, uint64_t known,
                                    unsigned flags, uint64_t *v);
/* lance_version_latest_above for a dataset only this engine writes (the graph manifest and its
 * branches), `owned`: a hint that names a version above every stored one is then a typed
 * OG_E_CORRUPT (the newest versions were lost) instead of a stale hint to ignore. */
int lance_version_latest_owned(store *s, const char *root, uint64_t floor, bool owned, uint64_t *v,
                               lance_naming *naming);
/* How many discoveries in this process fell back to listing _versions/ (for cost tests). */
uint64_t lance_version_listings(void);

/* Load and decode the manifest of version v (naming UNKNOWN: detect from the listing).
 * OG_E_NOT_FOUND if absent; OG_E_CORRUPT if damaged or if it claims another version;
 * then lance_manifest_check for `access`. */
int lance_version_load(store *s, const char *root, uint64_t v, lance_naming naming,
                       lance_access access, lance_manifest **out);
/* Latest version, loaded; *naming (may be NULL) receives the scheme to continue with. */
int lance_version_load_latest(store *s, const char *root, lance_access access, lance_manifest **out,
                              lance_naming *naming);

/* The version the hint names, or 0 when there is no readable hint. */
uint64_t lance_hint_read(store *s, const char *root);
/* Rewrite root/_versions/latest_version_hint.json as {"version":v}, atomically but without
 * an fsync (it is only a hint). */
int lance_hint_write(store *s, const char *root, uint64_t v);

#endif
