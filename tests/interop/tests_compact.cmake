# Compaction against lancedb (tests/interop/compact_tool.cjs; label "interop").
og_test(test_interop_compact LABELS "interop;lance"
        SOURCES interop/test_interop_compact.c LINK og_lance TIMEOUT 600)
target_link_libraries(test_interop_compact PRIVATE PkgConfig::JANSSON)
