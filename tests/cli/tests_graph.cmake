# The graph commands (init, load, snapshot, commit) through the built binary, and the public
# graph API (og_graph_*) they sit on.
og_test(test_cli_graph LABELS "cli" SOURCES cli/test_cli_graph.c LINK omnigraph_testing)
add_dependencies(test_cli_graph omnigraph_cli_testing)
# The output promises of every command (docs/cli.md, "Conventions"): --json, messages, refusals.
og_test(test_cli_output LABELS "cli" SOURCES cli/test_cli_output.c LINK omnigraph_testing)
add_dependencies(test_cli_output omnigraph_cli_testing)
# omnigraph recover list|show|resolve and the pending intents snapshot lists.
og_test(test_cli_recover LABELS "cli" SOURCES cli/test_cli_recover.c LINK omnigraph_testing)
add_dependencies(test_cli_recover omnigraph_cli_testing)
# omnigraph branch create|list|delete (the graph-branch control protocol).
og_test(test_cli_branch LABELS "cli" SOURCES cli/test_cli_branch.c LINK omnigraph_testing)
add_dependencies(test_cli_branch omnigraph_cli_testing)
# omnigraph repair, the damage-tolerant reads and the gate timeout (issue 16 c, d, e, j).
og_test(test_cli_repair LABELS "cli" SOURCES cli/test_cli_repair.c LINK omnigraph_testing)
add_dependencies(test_cli_repair omnigraph_cli_testing)
# Time travel across schema changes at the shell (issue 19 item 3): query/schema show/export
# --at under the commit's schema, lint --store with history-worded errors.
og_test(test_cli_time_travel LABELS "cli" SOURCES cli/test_cli_time_travel.c LINK omnigraph_testing)
add_dependencies(test_cli_time_travel omnigraph_cli_testing)
# Every error the CLI prints without --json carries error[CODE] (issue 33 F11): a table of bad
# invocations, each checked for its exit code and coded stderr.
og_test(test_cli_errors LABELS "cli" SOURCES cli/test_cli_errors.c LINK omnigraph_testing)
add_dependencies(test_cli_errors omnigraph_cli_testing)
