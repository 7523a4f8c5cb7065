# Validator tests: committed tables are built by hand in a temporary local store; input rows
# come from the JSONL reader (exec layer).
og_test(test_graph_validate LABELS "graph" SOURCES graph/test_graph_validate.c LINK og_exec)
# DELTA changes (a merge's delta) and graph_validate_all (every violation as a conflict).
og_test(test_validate_delta LABELS "graph" SOURCES graph/test_validate_delta.c LINK og_exec)
