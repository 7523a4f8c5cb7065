og_layer(store DEPS core
  SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/store.c
  ${CMAKE_CURRENT_LIST_DIR}/store_local.c
  ${CMAKE_CURRENT_LIST_DIR}/store_fault.c)
