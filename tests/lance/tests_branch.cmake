# Native branches (src/lance/branch.c and the base-path reading in scan.c/dataset.c/write.c).
og_test(test_lance_branch LABELS "unit;lance;threads" SOURCES lance/test_lance_branch.c LINK og_lance)
og_test(test_lance_branch_crash LABELS "lance;crash" SOURCES lance/test_lance_branch_crash.c LINK og_lance)
