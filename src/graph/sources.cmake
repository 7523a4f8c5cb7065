# The graph layer: root layout, graph manifest rows, snapshots, lineage, schema contract, table
# shapes, validators, the open-graph handle. Reads graph state; never decides when a write may
# happen.
set(OG_GRAPH_DIR ${CMAKE_CURRENT_LIST_DIR})
og_layer(graph DEPS core store arrow lance lang
  SOURCES
  ${OG_GRAPH_DIR}/manifest.c
  ${OG_GRAPH_DIR}/snapshot.c
  ${OG_GRAPH_DIR}/compact_rules.c
  ${OG_GRAPH_DIR}/graph_handle.c
  ${OG_GRAPH_DIR}/lineage.c
  ${OG_GRAPH_DIR}/merge.c
  ${OG_GRAPH_DIR}/merge_rows.c
  ${OG_GRAPH_DIR}/schema.c
  ${OG_GRAPH_DIR}/tables.c
  ${OG_GRAPH_DIR}/validate.c)
