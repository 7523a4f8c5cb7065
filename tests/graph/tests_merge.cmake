# Merge, graph layer: the merge base in the commit DAG (graph/merge.h).
og_test(test_merge_base LABELS "unit;graph" SOURCES graph/test_merge_base.c LINK og_graph)
# Row-level three-way merge: tables in three states built as native Lance branches; rows come
# from the JSONL reader (exec layer).
og_test(test_merge_rows LABELS "graph" SOURCES graph/test_merge_rows.c LINK og_exec)
