# Graph layer tests; each helper area has its own file.
file(GLOB OG_GRAPH_TEST_FILES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/tests_*.cmake)
foreach(f ${OG_GRAPH_TEST_FILES})
  include(${f})
endforeach()
