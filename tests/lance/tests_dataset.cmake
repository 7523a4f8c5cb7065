og_test(test_lance_dataset LABELS "unit;lance" SOURCES lance/test_lance_dataset.c LINK og_lance)
og_test(test_lance_dataset_crash LABELS "lance;crash" SOURCES lance/test_lance_dataset_crash.c LINK og_lance)
og_test(test_lance_commit LABELS "unit;lance;race" SOURCES lance/test_lance_commit.c LINK og_lance)
og_test(test_lance_cleanup_branches LABELS "unit;lance" SOURCES lance/test_lance_cleanup_branches.c LINK og_lance)
