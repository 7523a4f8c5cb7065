# omnigraph export|backup through the built binary and og_graph_export / og_graph_backup:
# round trips of the demo graph and of every property type, backups under concurrent writers.
og_test(test_cli_backup LABELS "cli;threads" SOURCES cli/test_cli_backup.c LINK omnigraph_testing TIMEOUT 600)
add_dependencies(test_cli_backup omnigraph_cli_testing)
# omnigraph verify and og_root_verify: a clean graph, and each kind of damage found and named.
og_test(test_cli_verify LABELS "cli" SOURCES cli/test_cli_verify.c LINK omnigraph_testing)
add_dependencies(test_cli_verify omnigraph_cli_testing)
