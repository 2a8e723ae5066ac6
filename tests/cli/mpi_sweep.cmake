# The same sweep threaded and as `mpirun -np 2`: the CSV rows must be bit-identical.
set(args sweep ${WORKDIR}/scenarios/small-3tier.yaml --vary fabric.oversubscription=1,2
         --vary cluster.nic_gbps=200,400)
file(REMOVE_RECURSE ${OUTDIR})
execute_process(COMMAND ${EXE} ${args} --threads 2 --out ${OUTDIR}/threads RESULT_VARIABLE rc1 OUTPUT_QUIET)
execute_process(COMMAND ${MPIEXEC} --allow-run-as-root --oversubscribe -np 2 ${EXE} ${args} --out ${OUTDIR}/mpi
                RESULT_VARIABLE rc2 OUTPUT_VARIABLE out2 ERROR_VARIABLE err2)
if(NOT rc1 EQUAL 0 OR NOT rc2 EQUAL 0)
  message(FATAL_ERROR "sweep failed: threads rc ${rc1}, mpirun rc ${rc2}\n${out2}\n${err2}")
endif()
file(READ ${OUTDIR}/threads/sweep.csv threaded)
file(READ ${OUTDIR}/mpi/sweep.csv distributed)
if(NOT threaded STREQUAL distributed)
  message(FATAL_ERROR "Expectation:\n${threaded}\nActual result (mpirun -np 2):\n${distributed}")
endif()
# Rerunning into the same folder reuses every finished point.
execute_process(COMMAND ${EXE} ${args} --out ${OUTDIR}/threads RESULT_VARIABLE rc3 OUTPUT_QUIET ERROR_VARIABLE err3)
if(NOT err3 MATCHES "reusing 4 finished point")
  message(FATAL_ERROR "rerun did not reuse the finished points: ${err3}")
endif()
file(READ ${OUTDIR}/threads/sweep.csv again)
if(NOT again STREQUAL threaded)
  message(FATAL_ERROR "resumed sweep differs:\n${again}")
endif()
