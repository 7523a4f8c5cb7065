# The library as users get it (label api): what libomnigraph.so exports.
# test_api_release (labels api;release): the release flavour has no test machinery, ignores
# OG_FAILPOINTS and OG_TEST_GATES_OFF, and writes nothing to stdout or stderr.
add_executable(release_embed api/release_embed.c)
target_link_libraries(release_embed PRIVATE omnigraph_shared)
target_include_directories(release_embed PRIVATE ${CMAKE_SOURCE_DIR}/include)
find_program(OG_NM nm)
if(OG_NM)
  add_test(NAME test_api_symbols
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_symbols.sh $<TARGET_FILE:omnigraph_shared>
                   ${CMAKE_SOURCE_DIR}/include/omnigraph.h)
  set_tests_properties(test_api_symbols PROPERTIES LABELS "api" TIMEOUT 60)
  add_test(NAME test_api_release
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_release.sh $<TARGET_FILE:omnigraph_shared>
                   $<TARGET_FILE:omnigraph> $<TARGET_FILE:omnigraph_cli>
                   $<TARGET_FILE:omnigraph_cli_testing> $<TARGET_FILE:release_embed>
                   ${CMAKE_SOURCE_DIR})
  set_tests_properties(test_api_release PROPERTIES LABELS "api;release" TIMEOUT 120)
else()
  message(WARNING "nm not found: test_api_symbols and test_api_release are not run")
endif()

# The public header alone, as C17 with the compiler that builds the library and as C++17
# (g++, or clang++ beside clang; CXX names another). Skipped when there is no C++ compiler.
add_test(NAME test_api_header_c
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_header.sh c ${CMAKE_C_COMPILER}
                 ${CMAKE_SOURCE_DIR}/include ${CMAKE_CURRENT_LIST_DIR}/header_only.c)
if(DEFINED ENV{CXX})
  find_program(OG_CXX NAMES $ENV{CXX})
elseif(CMAKE_C_COMPILER_ID MATCHES "Clang")
  find_program(OG_CXX NAMES clang++ c++ g++)
else()
  find_program(OG_CXX NAMES g++ c++ clang++)
endif()
set(og_cxx "")
if(OG_CXX)
  set(og_cxx ${OG_CXX})
endif()
add_test(NAME test_api_header_cxx
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_header.sh c++ "${og_cxx}"
                 ${CMAKE_SOURCE_DIR}/include ${CMAKE_CURRENT_LIST_DIR}/header_only.c)
set_tests_properties(test_api_header_c test_api_header_cxx PROPERTIES LABELS "api" TIMEOUT 120
                     SKIP_RETURN_CODE 77)

# `cmake --install` into a scratch prefix, then examples/embed.c built with only pkg-config
# and the C compiler, against the shared and the static library, and run.
set(og_user_flags "")
if(OG_SANITIZE OR OG_FUZZ)
  set(og_user_flags -fsanitize=address,undefined)
endif()
add_test(NAME test_api_install
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_install.sh ${CMAKE_COMMAND} ${CMAKE_BINARY_DIR}
                 ${CMAKE_SOURCE_DIR} ${CMAKE_INSTALL_LIBDIR} ${CMAKE_C_COMPILER} ${og_user_flags})
# The soname embed is linked against: the one CMakeLists.txt sets (OG_SOVERSION).
set_tests_properties(test_api_install PROPERTIES ENVIRONMENT "OG_SOVERSION=${OG_SOVERSION}")
set_tests_properties(test_api_install PROPERTIES LABELS "api" TIMEOUT 300)

# The options structs: og_..._options_init() against the _INIT macros, and unknown versions.
og_test(test_api_options LABELS "api" SOURCES api/test_api_options.c LINK omnigraph_testing)

# The header's shape rules (its top comment): no list held raw in a public struct, every _INIT
# macro with its _init() function, no og_graph_branch_* twin; the self-test plants one
# violation of each and expects it reported.
add_test(NAME test_api_conventions
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_conventions.sh ${CMAKE_SOURCE_DIR}/include/omnigraph.h)
add_test(NAME test_api_conventions_self_test
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/check_conventions.sh --self-test)
set_tests_properties(test_api_conventions test_api_conventions_self_test PROPERTIES LABELS "api"
                     TIMEOUT 60)
