# Merge, graph layer: the merge base in the commit DAG (graph/merge.h).
og_test(test_merge_base LABELS "unit;graph" SOURCES graph/test_merge_base.c LINK og_graph)
