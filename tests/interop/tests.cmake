# Lance interop suite (label "interop"), run by `make test`. The driver installs the pinned node
# packages on first use (tests/interop/setup.sh: npm ci from package-lock.json, needs the npm
# registry) and fails, not skips, when it cannot. See tests/interop/README.md.
og_test(test_interop_harness LABELS "interop"
        SOURCES interop/test_interop_harness.c interop/interop_c.c LINK omnigraph_testing TIMEOUT 900)
# The driver runs the CLI (`omnigraph lance cat --json`, `lance stats --json`) as the C reader.
add_dependencies(test_interop_harness omnigraph_cli_testing)
target_link_libraries(test_interop_harness PRIVATE PkgConfig::JANSSON)
include(${CMAKE_CURRENT_LIST_DIR}/tests_refs.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/tests_compact.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/tests_branch.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/tests_race.cmake)
