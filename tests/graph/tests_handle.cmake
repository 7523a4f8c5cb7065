# The open-graph handle: opening, the schema, the cached head of main. Graphs are made and
# written through the write layer (and the JSONL reader, exec layer).
og_test(test_graph_handle LABELS "graph" SOURCES graph/test_graph_handle.c LINK og_exec)
