# JSONL bulk-load reader tests (and its fuzz target over a small seed corpus). The reader and
# the graph files it needs are compiled in directly, so these build while other files of the
# graph/write/exec layers are being written.
set(OG_LOAD_UNDER_TEST ${CMAKE_SOURCE_DIR}/src/exec/load.c ${CMAKE_SOURCE_DIR}/src/graph/validate.c
    ${CMAKE_SOURCE_DIR}/src/graph/tables.c)
og_test(test_exec_load LABELS "exec" SOURCES exec/test_exec_load.c ${OG_LOAD_UNDER_TEST}
        LINK og_lang og_lance)
og_fuzz(fuzz_load SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/exec/fuzz_load.c ${OG_LOAD_UNDER_TEST}
        LINK og_lang og_lance CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/exec/corpus/load)
