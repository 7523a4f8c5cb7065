/* include/omnigraph.h on its own, compiled as C17 and as C++17 (check_header.sh): the header
 * needs nothing included before it, its declarations are C linkage in C++, and every
 * ..._INIT macro initialises its options struct without a warning in either language. */
#include <omnigraph.h>

int header_only_check(void);

int header_only_check(void)
{
    og_selfcheck_options selfcheck = OG_SELFCHECK_OPTIONS_INIT;
    og_schema_plan_options plan = OG_SCHEMA_PLAN_OPTIONS_INIT;
    og_scan_options scan = OG_SCAN_OPTIONS_INIT;
    og_init_options init = OG_INIT_OPTIONS_INIT;
    og_open_options open_opts = OG_OPEN_OPTIONS_INIT;
    og_load_options load = OG_LOAD_OPTIONS_INIT;
    og_optimize_options optimize = OG_OPTIMIZE_OPTIONS_INIT;
    og_cleanup_options cleanup = OG_CLEANUP_OPTIONS_INIT;
    og_query_options query = OG_QUERY_OPTIONS_INIT;
    og_mutate_options mutate = OG_MUTATE_OPTIONS_INIT;
    og_export_options export_opts = OG_EXPORT_OPTIONS_INIT;
    og_backup_options backup = OG_BACKUP_OPTIONS_INIT;
    og_recover_options recover = OG_RECOVER_OPTIONS_INIT;
    int versions = selfcheck.version + plan.version + scan.version + init.version +
                   open_opts.version + load.version + optimize.version + cleanup.version +
                   query.version + mutate.version + export_opts.version + backup.version +
                   recover.version;
    /* A call, so the object references og_version_number by its C name. */
    return og_version_number() == OG_VERSION_NUMBER && versions > 0;
}
