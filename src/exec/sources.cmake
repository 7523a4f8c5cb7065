# Query execution and write staging: the JSONL loader, the query executor, mutation staging.
# Every write is handed to src/write/ as an adapter input.
file(GLOB OG_EXEC_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
og_layer(exec DEPS core store arrow lance lang graph write SOURCES ${OG_EXEC_SOURCES})
