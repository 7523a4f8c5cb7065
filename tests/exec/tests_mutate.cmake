# .gq mutations end to end through the write protocol (insert/update/delete, cascade, CAS).
og_test(test_exec_mutate LABELS "exec" SOURCES exec/test_exec_mutate.c LINK og_exec)
# Cold reads over subset tables found through key indexes, against whole tables.
og_test(test_exec_subset LABELS "exec" SOURCES exec/test_exec_subset.c LINK og_exec TIMEOUT 600)
