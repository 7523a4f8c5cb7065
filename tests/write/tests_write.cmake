# The coordinator: unit/integration, crash enumeration, races.
og_test(test_write LABELS "write" SOURCES write/test_write.c)
og_test(test_write_crash LABELS "write;crash" SOURCES write/test_write_crash.c TIMEOUT 900)
og_test(test_write_race LABELS "write;race;threads" SOURCES write/test_write_race.c TIMEOUT 600)
og_test(test_write_torture LABELS "write;crash;race" SOURCES write/test_write_torture.c TIMEOUT 600)
og_test(test_write_cost LABELS "write" SOURCES write/test_write_cost.c TIMEOUT 600)
og_test(test_write_cost_size LABELS "write" SOURCES write/test_write_cost_size.c TIMEOUT 600)
og_test(test_write_interop LABELS "write;interop" SOURCES write/test_write_interop.c TIMEOUT 600)
# Checksummed, chained graph-manifest versions and audit records (issue 33, F2).
og_test(test_manifest_chain LABELS "write;graph" SOURCES write/test_manifest_chain.c TIMEOUT 600)
og_fuzz(fuzz_sidecar SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/write/fuzz_sidecar.c LINK og_write
        CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/write/corpus/sidecar)
# Damage at the top of history (issue 16 c, d, e, j) and og_root_repair.
og_test(test_repair LABELS "write;crash;interop" SOURCES write/test_repair.c TIMEOUT 600)
# Head discovery never silently stale (issue 33 item 1): every manifest version deleted in turn.
og_test(test_head_discovery LABELS "write;graph" SOURCES write/test_head_discovery.c TIMEOUT 600)
# Cleanup killed at every delete (issue 33 F3): the graph verifies clean after each.
og_test(test_cleanup_crash LABELS "write;crash" SOURCES write/test_cleanup_crash.c TIMEOUT 900)
# verify beside a running writer (thread and process): no false report (issue 33 F4).
og_test(test_verify_race LABELS "write;race;threads" SOURCES write/test_verify_race.c TIMEOUT 300)
# The storage-damage matrix (issue 33 item 9): every kind of file x six damages, through the
# omnigraph binary ($OMNIGRAPH_BIN to run it against another build).
og_test(test_damage_matrix LABELS "write;crash" SOURCES write/test_damage_matrix.c LINK og_core
        TIMEOUT 900)
add_dependencies(test_damage_matrix omnigraph_cli_testing)
# A lost graph-manifest version named for what it is by reads --at and verify (damage matrix
# cells).
og_test(test_lost_version LABELS "write;graph" SOURCES write/test_lost_version.c)
