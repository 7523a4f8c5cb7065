# Compaction (src/lance/compact.c): unit tests and crash enumeration.
og_test(test_lance_compact LABELS "unit;lance" SOURCES lance/test_lance_compact.c LINK og_lance)
og_test(test_lance_compact_crash LABELS "lance;crash" SOURCES lance/test_lance_compact_crash.c LINK og_lance)
