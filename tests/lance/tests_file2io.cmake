# Store access of the Lance 2.0 reader: gets and bytes per open/read, coalescing, faults.
og_test(test_lance_file2_io LABELS "unit;lance" SOURCES lance/test_file2_io.c LINK og_lance)
