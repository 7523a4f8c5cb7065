# Native branches against lancedb (tests/interop/branch_tool.cjs; label "interop").
og_test(test_interop_branch LABELS "interop;lance"
        SOURCES interop/test_interop_branch.c LINK og_lance TIMEOUT 600)
target_link_libraries(test_interop_branch PRIVATE PkgConfig::JANSSON)
