# Differential tests of the executor against SQLite on seeded random graphs (issue 7 item 7).
# libsqlite3-dev comes from scripts/deps.sh; without it the test is not built (and says so).
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(OG_DIFF_SQLITE3 QUIET IMPORTED_TARGET sqlite3)
endif()
if(OG_DIFF_SQLITE3_FOUND)
  og_test(test_exec_differential LABELS "exec" SOURCES exec/test_exec_differential.c
          LINK og_exec PkgConfig::OG_DIFF_SQLITE3 TIMEOUT 600)
else()
  og_test_unregistered(exec/test_exec_differential.c
                       "sqlite3 not found (pkg-config; scripts/deps.sh installs libsqlite3-dev)")
endif()
