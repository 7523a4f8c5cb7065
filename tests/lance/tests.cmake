# Lance layer tests: every tests_*.cmake here (one per part of the layer, so the helpers
# building the layer each own a file).
file(GLOB OG_LANCE_TEST_PARTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/tests_*.cmake)
foreach(part ${OG_LANCE_TEST_PARTS})
  include(${part})
endforeach()
