# Tags, restore and cleanup (src/lance/refs.c, restore.c, cleanup.c).
og_test(test_lance_refs LABELS "unit;lance;threads" SOURCES lance/test_lance_refs.c LINK og_lance)
og_test(test_lance_refs_crash LABELS "lance;crash" SOURCES lance/test_lance_refs_crash.c LINK og_lance)
