# Writes ${OUT} with the fabricvp version (project version + git describe),
# only when it changed, so every build reports the commit it was built from.
execute_process(COMMAND git describe --always --dirty --tags
                WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE GIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT GIT)
  set(GIT "unknown")
endif()
set(TEXT "#pragma once\n#define FABRICVP_VERSION \"${VERSION}+${GIT}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} OLD)
endif()
if(NOT "${OLD}" STREQUAL "${TEXT}")
  file(WRITE ${OUT} "${TEXT}")
endif()
