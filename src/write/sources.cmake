file(GLOB OG_WRITE_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
og_layer(write DEPS core store arrow lance lang graph SOURCES ${OG_WRITE_SOURCES})
