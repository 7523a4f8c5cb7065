# Tags, restore and cleanup against lancedb (tests/interop/refs_tool.cjs; label "interop").
og_test(test_interop_refs LABELS "interop;lance"
        SOURCES interop/test_interop_refs.c LINK og_lance TIMEOUT 600)
target_link_libraries(test_interop_refs PRIVATE PkgConfig::JANSSON)
