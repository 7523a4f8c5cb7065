# The library as users get it (label api): what libomnigraph.so exports.
find_program(OG_NM nm)
if(OG_NM)
  add_test(NAME test_api_symbols
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_symbols.sh $<TARGET_FILE:omnigraph_shared>
                   ${CMAKE_SOURCE_DIR}/include/omnigraph.h)
  set_tests_properties(test_api_symbols PROPERTIES LABELS "api" TIMEOUT 60)
else()
  message(WARNING "nm not found: test_api_symbols is not run")
endif()
