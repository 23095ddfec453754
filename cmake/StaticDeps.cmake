# COORD_STATIC_DEPS: our executables link gRPC, Protobuf, Abseil, RE2, c-ares, zlib and RocksDB's
# compression libraries from Debian's static archives (the -dev packages ship a .a beside each .so)
# instead of their 60-odd shared objects. A process then starts without mapping and relocating
# dozens of libraries: `coordctl --help` takes about a third of the CPU it took (docs/ci.md), which
# every script that calls coordctl in a loop, every agent start and every test process gets.
# OpenSSL (security updates come with Debian's libssl), libstdc++, libc and cpp-httplib (no static
# archive) stay shared.
#
# How: Debian's CMake packages describe shared libraries. After find_package, each imported
# target of the top directory whose file is lib<name>.so[.N...] is pointed at lib<name>.a when
# that exists, and so is each such path or bare library name in their link interfaces. The
# targets' dependency lists stay as the packages wrote them; lld finds a symbol in any archive of
# the command line whatever its position, so their order does not matter (GNU ld's would, hence
# COORD_STATIC_DEPS needs lld).

set(COORD_SHARED_ONLY "^(OpenSSL::|Threads::|PkgConfig::HTTPLIB$)")
set(COORD_SYSTEM_LIBS "^(dl|m|rt|pthread|atomic|c|stdc\\+\\+|gcc_s)$")

# The static archive beside a shared library, or "" when there is none.
function(coord_static_archive item out)
  set(result "")
  if(item MATCHES "^(/.*/lib[^/]+)\\.so(\\.[0-9]+)*$")
    if(EXISTS "${CMAKE_MATCH_1}.a")
      set(result "${CMAKE_MATCH_1}.a")
    endif()
  elseif(item MATCHES "^(-l)?([A-Za-z0-9_+.-]+)$" AND NOT TARGET "${item}")
    set(name "${CMAKE_MATCH_2}")
    if(NOT name MATCHES "${COORD_SYSTEM_LIBS}")
      foreach(dir /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE} /usr/lib /lib/${CMAKE_LIBRARY_ARCHITECTURE})
        if(EXISTS "${dir}/lib${name}.a")
          set(result "${dir}/lib${name}.a")
          break()
        endif()
      endforeach()
    endif()
  endif()
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

function(coord_use_static_deps)
  get_directory_property(targets DIRECTORY ${PROJECT_SOURCE_DIR} IMPORTED_TARGETS)
  set(moved 0)
  foreach(target ${targets})
    if(target MATCHES "${COORD_SHARED_ONLY}")
      continue()
    endif()
    get_target_property(type ${target} TYPE)
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(configs ${target} IMPORTED_CONFIGURATIONS)
      set(properties IMPORTED_LOCATION)
      foreach(config ${configs})
        list(APPEND properties IMPORTED_LOCATION_${config})
      endforeach()
      foreach(property ${properties})
        get_target_property(location ${target} ${property})
        if(location)
          coord_static_archive("${location}" archive)
          if(archive)
            set_target_properties(${target} PROPERTIES ${property} "${archive}")
            math(EXPR moved "${moved} + 1")
          endif()
        endif()
      endforeach()
    endif()
    get_target_property(links ${target} INTERFACE_LINK_LIBRARIES)
    if(links)
      set(rewritten)
      foreach(item ${links})
        set(inner "${item}")
        if(item MATCHES "^\\$<LINK_ONLY:(.*)>$")
          set(inner "${CMAKE_MATCH_1}")
        endif()
        coord_static_archive("${inner}" archive)
        if(archive)
          string(REPLACE "${inner}" "${archive}" item "${item}")
        endif()
        list(APPEND rewritten "${item}")
      endforeach()
      set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES "${rewritten}")
    endif()
  endforeach()
  message(STATUS "COORD_STATIC_DEPS: ${moved} imported libraries linked from static archives")
endfunction()
