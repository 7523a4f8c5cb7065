# Conventions that check themselves (label "conventions"): scripts over the source tree, no
# build products needed.

# Include direction: no layer includes a layer it may not use (docs/architecture.md, Layers);
# the self-test plants one violation per rule in a scratch tree and expects each reported.
add_test(NAME test_layers_include_direction
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_layers.sh ${CMAKE_SOURCE_DIR})
add_test(NAME test_layers_self_test COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_layers.sh --self-test)
set_tests_properties(test_layers_include_direction test_layers_self_test PROPERTIES
                     LABELS "conventions" TIMEOUT 60)

# The documents stay inside the repository and name only paths and functions that exist.
add_test(NAME test_docs_references COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_docs.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(test_docs_references PROPERTIES LABELS "conventions" TIMEOUT 120)

# The failpoint table of docs/conventions.md lists exactly the OG_FAILPOINT names in src/, and
# every name a test arms exists.
add_test(NAME test_failpoints_documented
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_failpoints.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(test_failpoints_documented PROPERTIES LABELS "conventions" TIMEOUT 60)

# Every C file we write follows .clang-format (`make format` applies it).
add_test(NAME test_format COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_format.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(test_format PROPERTIES LABELS "conventions" TIMEOUT 300)
