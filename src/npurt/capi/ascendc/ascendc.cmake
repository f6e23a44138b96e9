# npurt host Ascend C toolchain (ascendc.cmake): CANN's kernel-build functions, building
# Ascend C kernel sources with the host C++ compiler against npurt's kernel_operator.h, so
# the kernels run on npurt's simulated AI cores.
#
#   ascendc_library(<target> STATIC|SHARED <sources>...)   kernels + their <<<>>> launchers,
#       linked into the program (links libacl_rt.so, which runs the launches)
#   ascendc_fatbin_library(<target> <sources>...)          a kernel binary for
#       aclrtBinaryLoadFromFile: <target>.o (a shared object with a kernel table), built
#       in <build>/fatbin/<target>/ and installed to <prefix>/fatbin/<target>/
#   ascendc_compile_definitions(<target> PRIVATE|PUBLIC|INTERFACE <defs>...)
#   ascendc_compile_options(<target> PRIVATE|PUBLIC|INTERFACE <options>...)
#   ascendc_include_directories(<target> PRIVATE|PUBLIC|INTERFACE <dirs>...)
#
# Each source is rewritten at build time (npurt_ascendc_preprocess.cmake: <<<>>> launches,
# asm("trap"), the kernel table) into <build>/npurt_ascendc/<target>/, then compiled.
cmake_minimum_required(VERSION 3.16)
include_guard(GLOBAL)
enable_language(CXX)

get_filename_component(NPURT_ASCENDC_DIR "${CMAKE_CURRENT_LIST_DIR}" ABSOLUTE)
get_filename_component(NPURT_CANN_HOME "${NPURT_ASCENDC_DIR}/../.." ABSOLUTE)
if(NOT ASCEND_CANN_PACKAGE_PATH)
    set(ASCEND_CANN_PACKAGE_PATH "${NPURT_CANN_HOME}")
endif()
set(NPURT_ASCENDC_INCLUDE "${NPURT_ASCENDC_DIR}/include")
set(NPURT_ASCENDC_PREPROCESS "${NPURT_ASCENDC_DIR}/npurt_ascendc_preprocess.cmake")
set(NPURT_ACL_RT "${NPURT_CANN_HOME}/lib64/libacl_rt.so")

function(_npurt_ascendc_sources target out_var)
    set(generated "")
    set(index 0)
    foreach(src IN LISTS ARGN)
        get_filename_component(abs "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
        get_filename_component(dir "${abs}" DIRECTORY)
        get_filename_component(stem "${abs}" NAME_WE)
        set(out "${CMAKE_CURRENT_BINARY_DIR}/npurt_ascendc/${target}/${index}_${stem}.cpp")
        add_custom_command(
            OUTPUT "${out}"
            COMMAND "${CMAKE_COMMAND}" "-DIN=${abs}" "-DOUT=${out}" -P "${NPURT_ASCENDC_PREPROCESS}"
            DEPENDS "${abs}" "${NPURT_ASCENDC_PREPROCESS}"
            COMMENT "npurt ascendc: ${src}"
            VERBATIM)
        # quoted includes of the kernel resolve beside the original source
        set_source_files_properties("${out}" PROPERTIES COMPILE_OPTIONS "-iquote;${dir}")
        list(APPEND generated "${out}")
        math(EXPR index "${index} + 1")
    endforeach()
    set(${out_var} "${generated}" PARENT_SCOPE)
endfunction()

function(_npurt_ascendc_flags target)
    target_include_directories(${target} PRIVATE "${NPURT_ASCENDC_INCLUDE}")
    target_compile_features(${target} PRIVATE cxx_std_17)
    target_compile_options(${target} PRIVATE -O2 -fPIC)
    target_compile_definitions(${target} PRIVATE "NPURT_SOC_VERSION=\"${SOC_VERSION}\"")
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()

function(ascendc_library target kind)
    string(TOUPPER "${kind}" kind_upper)
    if(NOT kind_upper MATCHES "^(STATIC|SHARED)$")
        message(FATAL_ERROR "ascendc_library(${target} ${kind} ...): the library type must be STATIC or SHARED")
    endif()
    if(NOT ARGN)
        message(FATAL_ERROR "ascendc_library(${target} ...): no kernel sources given")
    endif()
    _npurt_ascendc_sources(${target} generated ${ARGN})
    add_library(${target} ${kind_upper} ${generated})
    _npurt_ascendc_flags(${target})
    target_link_libraries(${target} PUBLIC "${NPURT_ACL_RT}")
endfunction()

function(ascendc_fatbin_library target)
    if(NOT ARGN)
        message(FATAL_ERROR "ascendc_fatbin_library(${target} ...): no kernel sources given")
    endif()
    _npurt_ascendc_sources(${target} generated ${ARGN})
    add_library(${target} MODULE ${generated} "${NPURT_ASCENDC_DIR}/npurt_kernel_table.cpp")
    _npurt_ascendc_flags(${target})
    # a kernel binary exports its kernel table only: its registry stays its own
    target_compile_options(${target} PRIVATE -fvisibility=hidden -fvisibility-inlines-hidden)
    set_target_properties(${target} PROPERTIES PREFIX "" SUFFIX ".o" OUTPUT_NAME "${target}"
                          LIBRARY_OUTPUT_DIRECTORY "${CMAKE_BINARY_DIR}/fatbin/${target}")
    install(TARGETS ${target} LIBRARY DESTINATION "fatbin/${target}")
endfunction()

function(ascendc_compile_definitions target scope)
    set(defs "")
    foreach(def IN LISTS ARGN)
        string(REGEX REPLACE "^-D" "" def "${def}")
        list(APPEND defs "${def}")
    endforeach()
    target_compile_definitions(${target} ${scope} ${defs})
endfunction()

function(ascendc_compile_options target scope)
    target_compile_options(${target} ${scope} ${ARGN})
endfunction()

function(ascendc_include_directories target scope)
    target_include_directories(${target} ${scope} ${ARGN})
endfunction()
