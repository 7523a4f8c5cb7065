# JSONL bulk-load reader tests, and its fuzz target over a small seed corpus.
og_test(test_exec_load LABELS "exec;threads" SOURCES exec/test_exec_load.c LINK og_exec)
# The load in chunks (a small chunk size): one commit, same rows, late-chunk errors leave nothing.
og_test(test_exec_load_chunks LABELS "exec" SOURCES exec/test_exec_load_chunks.c)
og_fuzz(fuzz_load SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/exec/fuzz_load.c
        LINK og_exec CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/exec/corpus/load)
og_fuzz(fuzz_params SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/exec/fuzz_params.c
        LINK og_exec CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/exec/corpus/params)
# The load whose kept columns go to sorted runs on disk: memory bounded at two input sizes,
# every whole-set error across chunks the same as in memory, with its line.
og_test(test_exec_load_spill LABELS "exec" SOURCES exec/test_exec_load_spill.c)
