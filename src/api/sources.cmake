og_layer(api DEPS core store
  SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/selfcheck.c)
