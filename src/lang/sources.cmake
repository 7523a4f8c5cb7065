# The .pg schema and .gq query languages: lexer, parsers, catalog, type checker, lowering to
# IR, lint, schema diff. Pure: no storage.
og_layer(lang DEPS core
  SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/diag.c
  ${CMAKE_CURRENT_LIST_DIR}/lex.c
  ${CMAKE_CURRENT_LIST_DIR}/parse_util.c
  ${CMAKE_CURRENT_LIST_DIR}/parse_pg.c
  ${CMAKE_CURRENT_LIST_DIR}/parse_gq.c
  ${CMAKE_CURRENT_LIST_DIR}/catalog.c
  ${CMAKE_CURRENT_LIST_DIR}/identity.c
  ${CMAKE_CURRENT_LIST_DIR}/check.c
  ${CMAKE_CURRENT_LIST_DIR}/history.c
  ${CMAKE_CURRENT_LIST_DIR}/lower.c
  ${CMAKE_CURRENT_LIST_DIR}/ir_dump.c
  ${CMAKE_CURRENT_LIST_DIR}/lint.c
  ${CMAKE_CURRENT_LIST_DIR}/schema_diff.c)
