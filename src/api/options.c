/* Every public options struct's og_..._options_init() (the function form of its ..._INIT
 * macro, for callers that cannot use a C initialiser: other languages through an FFI, C++
 * code that assigns later), and the version check the calls that take them make. */
#include "omnigraph.h"

#include "api/options.h"
#include "core/error.h"

#include <stddef.h>
#include <string.h>

int api_options_check(int version, int current, const char *type)
{
    if (version >= 1 && version <= current) return 0;
    return core_err(OG_E_BAD_REQUEST,
                    "%s: version %d is not one this library knows (1 to %d): "
                    "initialise it with its _INIT macro or _options_init()",
                    type, version, current);
}

/* Fill the `size` bytes of opts with `defaults` (the _INIT macro's values) for `version`.
 * Every version so far is 1: when a struct gains a version 2, an older caller's struct is
 * the version 1 size, and only that many bytes may be written. */
static int options_init(void *opts, const void *defaults, size_t size, int version, int current,
                        const char *type)
{
    if (!opts) return core_err(OG_E_BAD_REQUEST, "%s_init: no struct given", type);
    int rc = api_options_check(version, current, type);
    if (rc) return rc;
    memcpy(opts, defaults, size);
    memcpy(opts, &version, sizeof version); /* every options struct begins with its version */
    return 0;
}

#define OPTIONS_INIT_FN(name, type, INIT, VERSION)                                                 \
    int name(type *opts, int version)                                                              \
    {                                                                                              \
        static const type defaults = INIT;                                                         \
        _Static_assert(offsetof(type, version) == 0, #type " must begin with its version");        \
        return options_init(opts, &defaults, sizeof defaults, version, VERSION, #type);            \
    }

OPTIONS_INIT_FN(og_selfcheck_options_init, og_selfcheck_options, OG_SELFCHECK_OPTIONS_INIT,
                OG_SELFCHECK_OPTIONS_VERSION)
OPTIONS_INIT_FN(og_schema_plan_options_init, og_schema_plan_options, OG_SCHEMA_PLAN_OPTIONS_INIT,
                OG_SCHEMA_PLAN_OPTIONS_VERSION)
OPTIONS_INIT_FN(og_lint_options_init, og_lint_options, OG_LINT_OPTIONS_INIT,
                OG_LINT_OPTIONS_VERSION)
OPTIONS_INIT_FN(og_scan_options_init, og_scan_options, OG_SCAN_OPTIONS_INIT,
                OG_SCAN_OPTIONS_VERSION)
OPTIONS_INIT_FN(og_init_options_init, og_init_options, OG_INIT_OPTIONS_INIT,
                OG_INIT_OPTIONS_VERSION)
/* Version 1 of og_open_options ends before gate_timeout_ms: only that much is written. */
int og_open_options_init(og_open_options *opts, int version)
{
    static const og_open_options defaults = OG_OPEN_OPTIONS_INIT;
    size_t size =
        version == 1 ? offsetof(og_open_options, gate_timeout_ms) : sizeof(og_open_options);
    return options_init(opts, &defaults, size, version, OG_OPEN_OPTIONS_VERSION, "og_open_options");
}
/* Version 1 of og_load_options ends before from. */
int og_load_options_init(og_load_options *opts, int version)
{
    static const og_load_options defaults = OG_LOAD_OPTIONS_INIT;
    size_t size = version == 1 ? offsetof(og_load_options, from) : sizeof(og_load_options);
    return options_init(opts, &defaults, size, version, OG_LOAD_OPTIONS_VERSION, "og_load_options");
}
OPTIONS_INIT_FN(og_optimize_options_init, og_optimize_options, OG_OPTIMIZE_OPTIONS_INIT,
                OG_OPTIMIZE_OPTIONS_VERSION)
OPTIONS_INIT_FN(og_cleanup_options_init, og_cleanup_options, OG_CLEANUP_OPTIONS_INIT,
                OG_CLEANUP_OPTIONS_VERSION)
OPTIONS_INIT_FN(og_query_options_init, og_query_options, OG_QUERY_OPTIONS_INIT,
                OG_QUERY_OPTIONS_VERSION)
OPTIONS_INIT_FN(og_mutate_options_init, og_mutate_options, OG_MUTATE_OPTIONS_INIT,
                OG_MUTATE_OPTIONS_VERSION)
OPTIONS_INIT_FN(og_export_options_init, og_export_options, OG_EXPORT_OPTIONS_INIT,
                OG_EXPORT_OPTIONS_VERSION)
OPTIONS_INIT_FN(og_backup_options_init, og_backup_options, OG_BACKUP_OPTIONS_INIT,
                OG_BACKUP_OPTIONS_VERSION)
OPTIONS_INIT_FN(og_recover_options_init, og_recover_options, OG_RECOVER_OPTIONS_INIT,
                OG_RECOVER_OPTIONS_VERSION)
OPTIONS_INIT_FN(og_branch_options_init, og_branch_options, OG_BRANCH_OPTIONS_INIT,
                OG_BRANCH_OPTIONS_VERSION)
OPTIONS_INIT_FN(og_verify_options_init, og_verify_options, OG_VERIFY_OPTIONS_INIT,
                OG_VERIFY_OPTIONS_VERSION)
/* Version 1 of og_repair_options ends before force. */
int og_repair_options_init(og_repair_options *opts, int version)
{
    static const og_repair_options defaults = OG_REPAIR_OPTIONS_INIT;
    size_t size = version == 1 ? offsetof(og_repair_options, force) : sizeof(og_repair_options);
    return options_init(opts, &defaults, size, version, OG_REPAIR_OPTIONS_VERSION,
                        "og_repair_options");
}
OPTIONS_INIT_FN(og_merge_options_init, og_merge_options, OG_MERGE_OPTIONS_INIT,
                OG_MERGE_OPTIONS_VERSION)
OPTIONS_INIT_FN(og_snapshot_options_init, og_snapshot_options, OG_SNAPSHOT_OPTIONS_INIT,
                OG_SNAPSHOT_OPTIONS_VERSION)
OPTIONS_INIT_FN(og_commit_options_init, og_commit_options, OG_COMMIT_OPTIONS_INIT,
                OG_COMMIT_OPTIONS_VERSION)
OPTIONS_INIT_FN(og_schema_apply_options_init, og_schema_apply_options, OG_SCHEMA_APPLY_OPTIONS_INIT,
                OG_SCHEMA_APPLY_OPTIONS_VERSION)
OPTIONS_INIT_FN(og_schema_check_options_init, og_schema_check_options, OG_SCHEMA_CHECK_OPTIONS_INIT,
                OG_SCHEMA_CHECK_OPTIONS_VERSION)
OPTIONS_INIT_FN(og_query_lint_options_init, og_query_lint_options, OG_QUERY_LINT_OPTIONS_INIT,
                OG_QUERY_LINT_OPTIONS_VERSION)
