# Graph manifest rows, snapshots, lineage, the accepted-schema files, and
# lance_dataset_create_rows (label "graph"); lancedb reading a graph manifest (label "interop").
og_test(test_graph_manifest LABELS "graph"
        SOURCES graph/test_graph_manifest.c LINK og_graph TIMEOUT 600)
og_test(test_graph_manifest_interop LABELS "graph;interop"
        SOURCES graph/test_graph_manifest_interop.c LINK og_graph TIMEOUT 600)
target_link_libraries(test_graph_manifest_interop PRIVATE PkgConfig::JANSSON)
