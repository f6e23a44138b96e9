# npurt host Ascend C toolchain: turn an Ascend C kernel source into host C++ (cmake -P).
#   -DIN=<kernel source> -DOUT=<generated C++>
# - `kernel<<<blocks, l2ctrl, stream>>>(args)` becomes
#   `::npurt_ascendc::launcher(kernel, "kernel", blocks, l2ctrl, stream)(args)`;
# - `asm("trap")` / `asm volatile("trap")` becomes `::npurt_ascendc::trap()`;
# - every (non-template) `__global__ __aicore__ void name(` gets a registration in the
#   image's kernel table (NPURT_ASCENDC_REGISTER), for kernel binaries.
# A #line directive keeps compiler messages pointing at the original file.
file(READ "${IN}" source)
string(REGEX REPLACE "(__asm__|asm)[ \t]*(volatile[ \t]*|__volatile__[ \t]*)?\\([ \t]*\"trap\"[ \t]*\\)"
       "::npurt_ascendc::trap()" source "${source}")
string(REGEX REPLACE "([A-Za-z_][A-Za-z0-9_]*)[ \t\r\n]*<<<([^;>]*)>>>"
       "::npurt_ascendc::launcher(\\1, \"\\1\", \\2)" source "${source}")

set(names "")
set(ws "[ \t\r\n]")
string(REGEX MATCHALL "(template${ws}*<[^>]*>${ws}*)?(extern${ws}+\"C\"${ws}+)?(__global__${ws}+__aicore__|__aicore__${ws}+__global__)${ws}+void${ws}+[A-Za-z_][A-Za-z0-9_]*${ws}*\\("
       kernels "${source}")
foreach(decl IN LISTS kernels)
    if(decl MATCHES "^template")
        continue()
    endif()
    string(REGEX REPLACE ".*void${ws}+([A-Za-z_][A-Za-z0-9_]*)${ws}*\\($" "\\1" name "${decl}")
    list(APPEND names "${name}")
endforeach()
list(REMOVE_DUPLICATES names)

set(registrations "\n/* npurt: the kernel table of this image */\n")
foreach(name IN LISTS names)
    string(APPEND registrations "NPURT_ASCENDC_REGISTER(${name});\n")
endforeach()
file(WRITE "${OUT}.tmp" "#include \"kernel_operator.h\"\n#line 1 \"${IN}\"\n${source}${registrations}")
file(RENAME "${OUT}.tmp" "${OUT}")
