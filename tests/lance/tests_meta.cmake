# Lance table metadata (manifests, versions, commits, deletion files, stable row ids).
og_test(test_lance_manifest LABELS "unit;lance;threads" SOURCES lance/test_lance_manifest.c LINK og_lance)
og_test(test_lance_deletion LABELS "unit;lance" SOURCES lance/test_lance_deletion.c LINK og_lance)
og_test(test_lance_rowids LABELS "unit;lance" SOURCES lance/test_lance_rowids.c LINK og_lance)
og_fuzz(fuzz_lance_manifest SOURCES lance/fuzz_manifest.c LINK og_lance
        CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/lance/corpus/manifest)
og_fuzz(fuzz_lance_deletion SOURCES lance/fuzz_deletion.c LINK og_lance
        CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/lance/corpus/deletion)
# Key indexes (src/lance/keyindex.c).
og_test(test_lance_keyindex LABELS "unit;lance" SOURCES lance/test_lance_keyindex.c LINK og_lance)
og_fuzz(fuzz_lance_keyindex SOURCES lance/fuzz_keyindex.c LINK og_lance
        CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/lance/corpus/keyindex)
