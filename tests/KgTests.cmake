# kg_add_c_tests(TARGET t LABELS "unit;ipc" TIMEOUT 30 CASES a b c)
# Registers each case of a kg_test.h program as its own ctest entry "t.case".
function(kg_add_c_tests)
  cmake_parse_arguments(A "" "TARGET;TIMEOUT" "LABELS;CASES" ${ARGN})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 30)
  endif()
  foreach(c ${A_CASES})
    add_test(NAME ${A_TARGET}.${c} COMMAND ${A_TARGET} ${c})
    set_tests_properties(${A_TARGET}.${c} PROPERTIES LABELS "${A_LABELS}" TIMEOUT ${A_TIMEOUT})
  endforeach()
endfunction()

# kg_add_pytest(NAME n FILE path LABELS "integration" TIMEOUT 300 [ENV ...])
# Runs one pytest file under Debian's interpreter with the project's test env.
function(kg_add_pytest)
  cmake_parse_arguments(A "" "NAME;FILE;TIMEOUT" "LABELS;ENV;ARGS" ${ARGN})
  add_test(NAME ${A_NAME}
           COMMAND ${KGUARD_PYTHON} -m pytest -q -p no:cacheprovider ${A_FILE} ${A_ARGS}
           WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
  set_tests_properties(${A_NAME} PROPERTIES LABELS "${A_LABELS}" TIMEOUT ${A_TIMEOUT}
                       ENVIRONMENT "${KG_TEST_ENV};${A_ENV}")
endfunction()
