# Graph branches (src/write/branch.c): the ref control protocol, races and crash enumeration.
og_test(test_write_branch LABELS "write;crash;race" SOURCES write/test_write_branch.c TIMEOUT 600)
og_test(test_branch_isolation LABELS "write" SOURCES write/test_branch_isolation.c TIMEOUT 600)
