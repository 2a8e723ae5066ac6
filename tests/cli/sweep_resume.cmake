# A resumed sweep reuses only points computed for the same study: a rerun into the same --out
# with another --set is refused (it used to report the old numbers), the same study is reused.
set(args sweep ${WORKDIR}/scenarios/small-3tier.yaml --vary fabric.oversubscription=1,2
         --threads 1)
file(REMOVE_RECURSE ${OUTDIR})
execute_process(COMMAND ${EXE} ${args} --out ${OUTDIR}/a RESULT_VARIABLE rc OUTPUT_VARIABLE first)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "first sweep failed: ${rc}\n${first}")
endif()
execute_process(COMMAND ${EXE} ${args} --set training.tokens=1e12 --out ${OUTDIR}/a
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "holds the results of another sweep")
  message(FATAL_ERROR "Expectation: exit 2, 'holds the results of another sweep'\n"
                      "Actual result: exit ${rc}\n${out}${err}")
endif()
execute_process(COMMAND ${EXE} ${args} --set training.tokens=1e12 --out ${OUTDIR}/b
                RESULT_VARIABLE rc OUTPUT_VARIABLE fresh)
if(fresh STREQUAL first)
  message(FATAL_ERROR "a tenth of the tokens gave the same table:\n${fresh}")
endif()
execute_process(COMMAND ${EXE} ${args} --out ${OUTDIR}/a RESULT_VARIABLE rc OUTPUT_VARIABLE again
                ERROR_VARIABLE err)
if(NOT err MATCHES "reusing 2 finished point" OR NOT again STREQUAL first)
  message(FATAL_ERROR "Expectation: 'reusing 2 finished point(s)' and the first table\n"
                      "Actual result: ${err}\n${again}")
endif()
execute_process(COMMAND ${EXE} ${args} --campaign --trials 2 --out ${OUTDIR}/a
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err MATCHES "not that of a --campaign sweep")
  message(FATAL_ERROR "Expectation: a step-only directory refused for --campaign\n"
                      "Actual result: exit ${rc}\n${err}")
endif()
