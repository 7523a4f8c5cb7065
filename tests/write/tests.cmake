og_test(test_gates LABELS "unit;write;race" SOURCES write/test_gates.c LINK og_write)
