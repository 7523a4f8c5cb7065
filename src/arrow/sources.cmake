# Arrow layer: in-memory columnar data (Arrow C Data Interface layout), builders, kernels.
og_layer(arrow DEPS core
  SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/arrow.c
  ${CMAKE_CURRENT_LIST_DIR}/arrow_json.c
  ${CMAKE_CURRENT_LIST_DIR}/cdata.c
  ${CMAKE_CURRENT_LIST_DIR}/kernels.c)
