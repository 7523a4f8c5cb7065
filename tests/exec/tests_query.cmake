# The read-query executor over hand-built graphs (ids, traversal, anti-join, aggregates, order).
og_test(test_exec_query LABELS "exec;threads" SOURCES exec/test_exec_query.c LINK og_exec)
