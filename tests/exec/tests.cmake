file(GLOB OG_EXEC_TEST_FILES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/tests_*.cmake)
foreach(f ${OG_EXEC_TEST_FILES})
  include(${f})
endforeach()
