# The public API sits on every layer that exists.
file(GLOB OG_API_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
set(OG_API_DEPS "")
foreach(l core store arrow lance lang graph write exec)
  if(TARGET og_${l})
    list(APPEND OG_API_DEPS ${l})
  endif()
endforeach()
og_layer(api DEPS ${OG_API_DEPS} SOURCES ${OG_API_SOURCES})
