# Our commits racing lancedb's on one 2.0 table (tests/interop/race_tool.cjs; label "interop").
og_test(test_interop_race LABELS "interop;race;lance"
        SOURCES interop/test_interop_race.c LINK og_lance TIMEOUT 600)
add_dependencies(test_interop_race omnigraph_cli_testing)
