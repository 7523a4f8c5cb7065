# omnigraph query|mutate through the built binary and the og_graph_query / og_graph_mutate API
# they sit on; examples/embed.c run as a user would run it.
og_test(test_cli_query LABELS "cli" SOURCES cli/test_cli_query.c LINK omnigraph_testing TIMEOUT 600)
add_dependencies(test_cli_query omnigraph_cli_testing)
og_test(test_embed_example LABELS "cli" SOURCES cli/test_embed_example.c LINK omnigraph_testing)
add_dependencies(test_embed_example embed_example)
