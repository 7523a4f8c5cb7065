# src/lang: unit tests, the case corpus, the CLI commands, and the two parser fuzz targets.
og_test(test_lang LABELS "unit;lang" SOURCES lang/test_lang.c LINK og_lang)
og_test(test_lang_cases LABELS "unit;lang" SOURCES lang/test_lang_cases.c LINK og_lang)
og_test(test_lang_cli LABELS "cli;lang" SOURCES lang/test_lang_cli.c)
add_dependencies(test_lang_cli omnigraph_cli_testing)
og_fuzz(fuzz_lang_pg SOURCES lang/fuzz_lang_pg.c LINK og_lang CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/lang/corpus/pg)
og_fuzz(fuzz_lang_gq SOURCES lang/fuzz_lang_gq.c LINK og_lang CORPUS ${CMAKE_CURRENT_SOURCE_DIR}/lang/corpus/gq)
# What became of a name across schema versions (issue 19 item 3), and the checker's wording.
og_test(test_lang_history LABELS "unit;lang" SOURCES lang/test_lang_history.c LINK og_lang)
