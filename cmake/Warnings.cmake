# Compiler warnings for the whole project, one reason per flag.
# GV_WARNINGS is applied to our own targets only (tests and the sim included).
set(GV_WARNINGS
  -Wall                      # the common set
  -Wextra                    # unused parameters, sign/enum mistakes, missing initialisers
  -Wshadow                   # a local hiding another is a classic source of parser bugs
  -Wformat=2                 # printf-style calls with non-literal formats or wrong types
  -Wstrict-prototypes        # f() means "any arguments" in C; we always mean (void)
  -Wmissing-prototypes       # exported functions must come from a header (layering)
  -Wold-style-definition     # K&R definitions hide argument type errors
  -Wpointer-arith            # arithmetic on void* is a GNU extension that hides size bugs
  -Wcast-align               # NVML structs are read through byte buffers: keep casts honest
  -Wwrite-strings            # string literals are const
  -Wvla                      # no unbounded stack allocation from outsider-controlled sizes
  -Wundef                    # #if on an undefined macro is a typo
  -Wnull-dereference         # flow-based NULL checks (gcc)
  -Wimplicit-fallthrough     # switch fallthrough must be annotated
  -Wno-missing-field-initializers  # designated initialisers zero the rest on purpose
)
if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
  list(APPEND GV_WARNINGS
    -Wduplicated-cond        # if/else-if chains testing the same thing
    -Wlogical-op             # `a == x || a == x` and similar
    -Wformat-truncation=1    # snprintf into fixed buffers: size buffers for what goes in
  )
endif()
if(GV_WERROR)
  list(APPEND GV_WARNINGS -Werror)  # CI: a warning is a failed build
endif()
