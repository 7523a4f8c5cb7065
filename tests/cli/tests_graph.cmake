# The graph commands (init, load, snapshot, commit) through the built binary, and the public
# graph API (og_graph_*) they sit on.
og_test(test_cli_graph LABELS "cli" SOURCES cli/test_cli_graph.c LINK omnigraph)
add_dependencies(test_cli_graph omnigraph_cli)
# The output promises of every command (docs/cli.md, "Conventions"): --json, messages, refusals.
og_test(test_cli_output LABELS "cli" SOURCES cli/test_cli_output.c LINK omnigraph)
add_dependencies(test_cli_output omnigraph_cli)
