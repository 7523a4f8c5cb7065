# omnigraph export through the built binary and og_graph_export: round trips of the demo
# graph and of every property type.
og_test(test_cli_backup LABELS "cli" SOURCES cli/test_cli_backup.c LINK omnigraph TIMEOUT 600)
add_dependencies(test_cli_backup omnigraph_cli)
