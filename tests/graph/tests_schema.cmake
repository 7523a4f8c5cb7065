# The accepted-schema pair read back from storage (_schema.pg/_schema.json, the copies kept by
# identity, the restore): a fuzz target whose seeds tests/graph/make_schema_seeds.py writes.
og_fuzz(fuzz_schema SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/graph/fuzz_schema.c LINK og_graph
        CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/graph/corpus/schema)
# Generated schema pairs: thousands planned, a few dozen applied to populated graphs.
og_test(test_schema_pairs LABELS "graph;fuzz" SOURCES graph/test_schema_pairs.c TIMEOUT 300)
target_link_libraries(test_schema_pairs PRIVATE PkgConfig::JANSSON)
