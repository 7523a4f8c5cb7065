# The accepted-schema pair read back from storage (_schema.pg/_schema.json, the copies kept by
# identity, the restore): a fuzz target whose seeds tests/graph/make_schema_seeds.py writes.
og_fuzz(fuzz_schema SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/graph/fuzz_schema.c LINK og_graph
        CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/graph/corpus/schema)
