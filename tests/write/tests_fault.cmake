# Storage faults for every writer, and the files a failed write leaves (issue 16 item 5, fault g).
og_test(test_write_fault LABELS "write;crash" SOURCES write/test_write_fault.c TIMEOUT 600)
