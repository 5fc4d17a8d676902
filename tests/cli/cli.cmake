# The `fastinfer` program end to end: the self-test and the plotter (a stored benchmark file from
# the H200, session 1). `check` runs the CUDA kernels where a GPU is, else the CPU reference.
add_test(NAME cli_check COMMAND fastinfer_cli check)
add_test(NAME cli_plot COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:fastinfer_cli>
         -DJSON=${CMAKE_CURRENT_LIST_DIR}/bench_sample.json -DPNG=${CMAKE_CURRENT_BINARY_DIR}/cli_plot.png
         -P ${CMAKE_CURRENT_LIST_DIR}/scripts/plot_test.cmake)
add_test(NAME cli_plot_rejects_bad_json COMMAND fastinfer_cli plot ${CMAKE_CURRENT_LIST_DIR}/cli.cmake -o unused.png)
set_tests_properties(cli_plot_rejects_bad_json PROPERTIES WILL_FAIL TRUE)
set_tests_properties(cli_check cli_plot cli_plot_rejects_bad_json PROPERTIES LABELS cpu TIMEOUT 300)

# The README shows examples/quickstart.{cpp,py} verbatim; this keeps them from drifting apart.
add_test(NAME readme_examples_in_sync COMMAND ${CMAKE_COMMAND} -DROOT=${PROJECT_SOURCE_DIR}
         -P ${CMAKE_CURRENT_LIST_DIR}/scripts/readme_examples_test.cmake)
set_tests_properties(readme_examples_in_sync PROPERTIES LABELS cpu)
