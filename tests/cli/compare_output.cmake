# Runs EXE with ARGS in WORKDIR and compares stdout + stderr with EXPECTED; checks the exit code.
# With the environment variable UPDATE_EXPECTED set, writes EXPECTED instead of comparing.
string(REPLACE "|" ";" args "${ARGS}")
execute_process(
  COMMAND ${EXE} ${args}
  WORKING_DIRECTORY ${WORKDIR}
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err
  RESULT_VARIABLE rc)
set(actual "${out}${err}")
if(NOT rc EQUAL EXPECT_RC)
  message(FATAL_ERROR "exit code ${rc}, expected ${EXPECT_RC}\n--- output ---\n${actual}")
endif()
if(DEFINED ENV{UPDATE_EXPECTED})
  file(WRITE ${EXPECTED} "${actual}")
  message(STATUS "updated ${EXPECTED}")
  return()
endif()
if(NOT EXISTS ${EXPECTED})
  message(FATAL_ERROR "no expected file ${EXPECTED}; run with UPDATE_EXPECTED=1 to create it\n"
                      "--- actual ---\n${actual}")
endif()
file(READ ${EXPECTED} expected)
if(NOT actual STREQUAL expected)
  file(WRITE ${EXPECTED}.actual "${actual}")
  message(FATAL_ERROR "output differs from ${EXPECTED}\n"
                      "Expectation:\n${expected}\nActual result:\n${actual}\n"
                      "(actual written to ${EXPECTED}.actual)")
endif()
