# omnigraph export|backup through the built binary and og_graph_export / og_graph_backup:
# round trips of the demo graph and of every property type, backups under concurrent writers.
og_test(test_cli_backup LABELS "cli" SOURCES cli/test_cli_backup.c LINK omnigraph TIMEOUT 600)
add_dependencies(test_cli_backup omnigraph_cli)
