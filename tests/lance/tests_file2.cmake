# Lance data file format 2.0 (writer, reader, Arrow <-> Lance fields) and its fuzz target.
og_test(test_lance_file2 LABELS "unit;lance" SOURCES lance/test_file2.c LINK og_lance)
og_fuzz(fuzz_lance_file2 SOURCES lance/fuzz_file2.c LINK og_lance
        CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/lance/corpus/file2)
