# Validator tests: committed tables are built by hand in a temporary local store. The files
# under test are compiled in directly (load.c makes the input rows), so these build while
# other files of the graph/write/exec layers are being written.
og_test(test_graph_validate LABELS "graph" SOURCES graph/test_graph_validate.c
        ${CMAKE_SOURCE_DIR}/src/graph/validate.c ${CMAKE_SOURCE_DIR}/src/graph/tables.c
        ${CMAKE_SOURCE_DIR}/src/exec/load.c
        LINK og_lang og_lance)
