# Arrow layer tests.
og_test(test_arrow LABELS "unit;arrow" SOURCES arrow/test_arrow.c LINK og_arrow)
og_test(test_arrow_json LABELS "unit;arrow" SOURCES arrow/test_arrow_json.c LINK og_arrow)
