# Runs EXE with ARGS (| separated) in WORKDIR, with the environment assignments ENV (| separated,
# NAME=VALUE), and checks the exit code is EXPECT_RC ("nonzero": any failure) and stdout + stderr
# match the regex MATCH.
# For outputs that carry machine-specific text (a CUDA driver message) that an expected file
# cannot hold.
string(REPLACE "|" ";" args "${ARGS}")
string(REPLACE "|" ";" env "${ENV}")
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env ${env} ${EXE} ${args}
  WORKING_DIRECTORY ${WORKDIR}
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err
  RESULT_VARIABLE rc)
set(actual "${out}${err}")
if(EXPECT_RC STREQUAL "nonzero")
  if(rc EQUAL 0)
    message(FATAL_ERROR "exit code 0, expected a failure\n--- output ---\n${out}${err}")
  endif()
elseif(NOT rc EQUAL EXPECT_RC)
  message(FATAL_ERROR "exit code ${rc}, expected ${EXPECT_RC}\n--- output ---\n${actual}")
endif()
if(NOT actual MATCHES "${MATCH}")
  message(FATAL_ERROR "Expectation: output matching\n  ${MATCH}\nActual result:\n${actual}")
endif()
