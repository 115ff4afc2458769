# add_lab(): every target of one lab, from its folder and its manifest.
#
#   add_lab(<lab>)        reads labs/<lab>/lab.json (cmake/LabKitManifest.cmake)
#
# labs/CMakeLists.txt calls it for every folder that holds a lab.json, so a new lab is
# one folder. For labs/<lab>/ (and solutions/<lab>/ when solutions are built) it makes:
#   <lab>_cpu             the sequential version (static library)
#   <lab>_test            GoogleTest suite linked with the student's <lab>.cu    (CTest label: student)
#   <lab>_bench           timing harness linked with the student's <lab>.cu
#   <lab>_student         the student's code as a shared library (what the grader's judge loads)
#   <lab>_solution        the reference as a shared library (the bench dlopen()s it)
#   <lab>_solution_test   GoogleTest suite linked with the reference              (CTest label: solution)
#   <lab>_solution_bench  timing harness linked with the reference
# and the grader's trusted programs (DESIGN.md, "Trust boundary"):
#   <lab>_judge_test      the same tests, linked with a proxy of <lab>.h instead of any implementation
#   <lab>_judge_bench     the same bench, likewise
#   <lab>_worker          the sandboxed process that loads an implementation library and runs
#                         the calls the proxy forwards to it
# The test and bench sources are compiled once (object libraries) and linked to each
# implementation and to the proxy: nvcc time is what CI waits for.

include(${CMAKE_CURRENT_LIST_DIR}/LabKitManifest.cmake)

# The kit's warning flags; the student's file gets exactly the same ones.
function(labkit_warnings target)
  set(host_flags -Wall -Wextra)
  set(cuda_flags "SHELL:-Xcompiler=-Wall,-Wextra")
  if(LABKIT_WERROR)
    list(APPEND host_flags -Werror)
    list(APPEND cuda_flags "SHELL:-Xcompiler=-Werror" "SHELL:-Werror all-warnings")
  endif()
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:${host_flags}>
    $<$<COMPILE_LANGUAGE:CUDA>:${cuda_flags}>)
endfunction()

# Options every CUDA translation unit of the kit compiles with.
function(labkit_cuda_options target)
  # -lineinfo: compute-sanitizer and ncu can then name the source line, at no run-time cost.
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
  labkit_warnings(${target})
endfunction()

# An object library compiled with the kit's flags.
function(labkit_object_library name)
  add_library(${name} OBJECT ${ARGN})
  labkit_cuda_options(${name})
endfunction()

# A shared library holding one implementation of a lab (the student's or the reference),
# as the judge's worker and the bench load it: only the variant registry is exported;
# static libraries stay private to it, and -Bsymbolic binds its own calls to its own
# code even if the program that loads it has equal names.
function(labkit_implementation_library name objects)
  add_library(${name} SHARED)
  target_link_libraries(${name} PRIVATE ${objects})
  target_link_options(${name} PRIVATE "LINKER:--exclude-libs,ALL" "LINKER:-Bsymbolic")
endfunction()

# Registers a GoogleTest program with CTest as two tests: <name>.cpu runs the suites
# without "Gpu" in their name, <name>.gpu the others, and shows as skipped (not
# passed) on a machine without a GPU. `label` is added to both (e.g. student, whose
# tests fail by design until the lab is done: the kit's own test preset excludes it).
# Extra arguments after `label` are passed to the program.
#
# Suites named *OwnBuildOnly* need the GPU to themselves (they fill its memory or read
# its free memory): where the test source named by ALONE_SOURCE=<file> (optional, right
# after `label`) has any, they get a test <name>.gpu_alone of their own that CTest runs
# with nothing beside it (RUN_SERIAL). Judge programs leave them out (common/testing/test_main.cpp).
function(labkit_add_gtest name target label)
  set(extra ${ARGN})
  set(alone FALSE)
  list(LENGTH extra count)
  if(count GREATER 0)
    list(GET extra 0 first)
    if(first MATCHES "^ALONE_SOURCE=(.*)$")
      list(REMOVE_AT extra 0)
      file(READ "${CMAKE_MATCH_1}" source)
      string(FIND "${source}" "OwnBuildOnly" found)
      if(NOT found EQUAL -1)
        set(alone TRUE)
      endif()
    endif()
  endif()
  add_test(NAME ${name}.cpu COMMAND ${target} ${extra} --gtest_filter=-*Gpu*)
  set_tests_properties(${name}.cpu PROPERTIES LABELS "${label};cpu" TIMEOUT 900)
  add_test(NAME ${name}.gpu COMMAND ${target} ${extra} --gtest_filter=*Gpu*:-*OwnBuildOnly*)
  set_tests_properties(${name}.gpu PROPERTIES LABELS "${label};gpu" TIMEOUT 900
                       SKIP_REGULAR_EXPRESSION "\\[labkit\\] No CUDA GPU")
  if(alone)
    add_test(NAME ${name}.gpu_alone COMMAND ${target} ${extra} --gtest_filter=*OwnBuildOnly*)
    set_tests_properties(${name}.gpu_alone PROPERTIES LABELS "${label};gpu" TIMEOUT 900 RUN_SERIAL TRUE
                         SKIP_REGULAR_EXPRESSION "\\[labkit\\] No CUDA GPU")
  endif()
endfunction()

# Reads the declaration of `fn` from `header`: its return type and its parameter list
# (the text between the parentheses) and the parameter names. The interface headers
# declare each function on its own, e.g. `void vector_add(const float* a, ..., int n);`.
function(labkit_interface_signature header fn out_return out_params out_names)
  file(READ ${header} text)
  string(REGEX REPLACE "//[^\n]*" "" text "${text}")
  string(REGEX MATCH "(^|[;}\n])[ \t]*([A-Za-z_][A-Za-z_0-9]*)[ \t\n]+${fn}[ \t\n]*\\(([^)]*)\\)[ \t\n]*;" found "${text}")
  if(NOT found)
    message(FATAL_ERROR "${header}: no declaration `<type> ${fn}(<parameters>);` found. The manifest names "
                        "${fn} among \"functions\": declare it in the header, on its own, returning void or a value.")
  endif()
  set(return_type "${CMAKE_MATCH_2}")
  string(REGEX REPLACE "[ \t\n]+" " " params "${CMAKE_MATCH_3}")
  string(STRIP "${params}" params)
  set(names "")
  if(NOT params STREQUAL "" AND NOT params STREQUAL "void")
    string(REPLACE "," ";" pieces "${params}")
    foreach(piece ${pieces})
      if(NOT piece MATCHES "([A-Za-z_][A-Za-z_0-9]*)[ ]*$")
        message(FATAL_ERROR "${header}: every parameter of ${fn} needs a name (got `${piece}`).")
      endif()
      list(APPEND names ${CMAKE_MATCH_1})
    endforeach()
  endif()
  set(${out_return} "${return_type}" PARENT_SCOPE)
  set(${out_params} "${params}" PARENT_SCOPE)
  set(${out_names} "${names}" PARENT_SCOPE)
endfunction()

# The manifest's "bounds" of interface function `fn` ({"a": "n", "out": "1"}: how many
# elements each pointer argument holds, a C++ expression of the other arguments) as the
# judge's bounds function (lab/judge/proxy.h, LAB_JUDGE_BOUNDS); "" when it names none.
function(labkit_bounds_function file json fn params names out)
  string(JSON members ERROR_VARIABLE none LENGTH "${json}" bounds ${fn})
  if(none OR members EQUAL 0)
    set(${out} "" PARENT_SCOPE)
    return()
  endif()
  math(EXPR last "${members} - 1")
  foreach(i RANGE ${last})
    string(JSON key MEMBER "${json}" bounds ${fn} ${i})
    if(NOT key IN_LIST names)
      message(FATAL_ERROR "${file}: \"bounds\" of ${fn} names \"${key}\", which is no parameter of ${fn} (${names}).")
    endif()
  endforeach()
  set(body "")
  set(index 0)
  foreach(name ${names})
    string(JSON expr ERROR_VARIABLE unbounded GET "${json}" bounds ${fn} ${name})
    if(NOT unbounded)
      if(NOT expr MATCHES "^[A-Za-z0-9_ +*/()-]+$")
        message(FATAL_ERROR "${file}: \"bounds\" of ${fn}: \"${expr}\" for ${name} must be arithmetic on "
                            "the other arguments, e.g. \"n\" or \"m * k\".")
      endif()
      string(APPEND body "  count[${index}] = static_cast<long long>(${expr});\n")
    endif()
    string(APPEND body "  (void)${name};\n")
    math(EXPR index "${index} + 1")
  endforeach()
  set(${out} "static void lab_bounds_${fn}(long long* count, ${params}) {\n${body}}\nLAB_JUDGE_BOUNDS(${fn}, lab_bounds_${fn});\n" PARENT_SCOPE)
endfunction()

# ---- add_lab and its parts --------------------------------------------------------------
#
# add_lab() reads the manifest and calls the parts below in order, one job each. Each part
# takes the lab's name and reads add_lab's own variables: `dir` (labs/<lab>), `gen` (the
# folder of the lab's generated sources) and `manifest_*` (labkit_read_manifest).

function(add_lab lab)
  set(dir ${CMAKE_CURRENT_SOURCE_DIR}/${lab})
  if(LABKIT_LABS AND NOT lab IN_LIST LABKIT_LABS)
    return()  # the user asked for other labs only
  endif()
  labkit_read_manifest(${dir}/lab.json manifest)
  labkit_lab_check_files(${lab})
  set(gen ${CMAKE_CURRENT_BINARY_DIR}/${lab}_generated)

  labkit_lab_interface_code(${lab} registrations proxies dispatch)
  labkit_lab_generate_sources(${lab} "${registrations}" "${dispatch}")
  labkit_lab_implementations(${lab})
  labkit_lab_worker(${lab})
  labkit_lab_programs(${lab})
  if(NOT LABKIT_BUILD_TESTS)
    return()
  endif()
  labkit_lab_direct_programs(${lab})
  labkit_lab_judge_programs(${lab} "${proxies}")
  labkit_lab_register_tests(${lab})
endfunction()

# Every lab folder has the same five files.
function(labkit_lab_check_files lab)
  foreach(file ${lab}.h ${lab}.cu ${lab}_cpu.cpp ${lab}_test.cu ${lab}_bench.cu)
    if(NOT EXISTS ${dir}/${file})
      message(FATAL_ERROR "add_lab(${lab}): ${dir}/${file} is missing; every lab folder has the same files (see labs/README.md).")
    endif()
  endforeach()
endfunction()

# The code generated from the interface functions of <lab>.h (those the manifest's
# "functions" names), one piece per generated file:
#  registrations  (exports) each function as the variant "default" of its implementation;
#  proxies        (proxy) the judge's definitions of the functions, each forwarding its
#                 call to the worker process (lab/judge/proxy.h), with their bounds;
#  dispatch       (dispatch) the worker's table of the functions (lab/judge/worker.h).
function(labkit_lab_interface_code lab out_registrations out_proxies out_dispatch)
  set(registrations "")
  set(proxies "")
  set(dispatch "")
  file(READ ${dir}/lab.json manifest_json)
  foreach(fn ${manifest_FUNCTIONS})
    labkit_interface_signature(${dir}/${lab}.h ${fn} return_type params names)
    set(args "")
    foreach(name ${names})
      string(APPEND args ", ${name}")
    endforeach()
    labkit_bounds_function(${dir}/lab.json "${manifest_json}" ${fn} "${params}" "${names}" bounds)
    string(APPEND proxies "${bounds}")
    # Weak: a student library whose file lacks one interface function (a stub deleted, or a
    # file from before a part was added) still links and loads; that function is simply not
    # registered, so only its own tests fail (the worker says it is not defined).
    string(APPEND registrations
      "__attribute__((weak)) decltype(${fn}) ${fn};\n"
      "LAB_REGISTER_VARIANT(${fn}, \"default\", ${fn}, \"the interface function: what the tests and the grader call\");\n")
    string(APPEND proxies
      "${return_type} ${fn}(${params}) {\n  return ::lab::judge::call_interface<decltype(${fn})>(\"${fn}\"${args});\n}\n"
      "LAB_JUDGE_FUNCTION(${fn});\n\n")
    string(APPEND dispatch "LAB_WORKER_FUNCTION(${fn});\n")
  endforeach()
  set(${out_registrations} "${registrations}" PARENT_SCOPE)
  set(${out_proxies} "${proxies}" PARENT_SCOPE)
  set(${out_dispatch} "${dispatch}" PARENT_SCOPE)
endfunction()

# The note at the top of every generated file.
function(labkit_generated_note lab out)
  set(${out} "// Generated by add_lab(${lab}) (cmake/LabKit.cmake) from labs/${lab}/; edits are overwritten." PARENT_SCOPE)
endfunction()

# Generated sources, one set per lab in `gen` (edits are overwritten); the proxy is the
# judge's (labkit_lab_judge_programs):
#  exports   registers each interface function as the variant "default" of its
#            implementation, and exports the registry, so that a bench or a worker can
#            find the graded function in a loaded library whose other symbols are hidden;
#  facts     the manifest's facts the tests and benches use (slow variants, the
#            reference variant the lab is graded against, the questions answered with
#            a bench figure);
#  dispatch  the worker's table of the interface functions (lab/judge/worker.h).
function(labkit_lab_generate_sources lab registrations dispatch)
  set(slow "")
  foreach(pattern ${manifest_SLOW_VARIANTS})
    string(APPEND slow "\"${pattern}\", ")
  endforeach()
  set(bench_questions "")
  foreach(question ${manifest_BENCH_QUESTIONS})
    string(REGEX MATCH "^([^=]+)=([^|]+)[|](.*)$" parsed "${question}")
    string(APPEND bench_questions "{\"${CMAKE_MATCH_1}\", \"${CMAKE_MATCH_2}\", \"${CMAKE_MATCH_3}\"}, ")
  endforeach()
  labkit_generated_note(${lab} generated_note)
  file(CONFIGURE OUTPUT ${gen}/${lab}_exports.cu CONTENT
"${generated_note}
#include \"${lab}.h\"
#include \"lab/variants.h\"

${registrations}LAB_EXPORT_VARIANT_REGISTRY()
" @ONLY)
  file(CONFIGURE OUTPUT ${gen}/${lab}_facts.cpp CONTENT
"${generated_note}
#include \"lab/variants.h\"

// labs/${lab}/: the lab's name (the bench's, lab/bench.h).
LAB_NAME(\"${lab}\");
// labs/${lab}/lab.json \"slow_variants\": too slow for the large sizes.
LAB_SLOW_VARIANTS(${slow});
// labs/${lab}/lab.json \"reference_variant\": the reference's variant the lab is graded against.
LAB_GRADED_REFERENCE_VARIANT(\"${manifest_REFERENCE_VARIANT}\");
// labs/${lab}/lab.json \"questions\" with \"check\": \"bench\": the bench prints the line to paste for each.
LAB_BENCH_QUESTIONS(${bench_questions});
" @ONLY)
  file(CONFIGURE OUTPUT ${gen}/${lab}_dispatch.cu CONTENT
"${generated_note}
#include \"${lab}.h\"
#include \"lab/judge/worker.h\"

${dispatch}LAB_WORKER_LAB(\"${lab}\");
" @ONLY)
endfunction()

# The lab's libraries: <lab>_cpu, the sequential version (golden results for tests, the
# CPU baseline for the bench); the generated exports and facts; and the implementations,
# the student's file (<lab>_student_obj, <lab>_student) and the reference when it is
# built (<lab>_solution_obj, <lab>_solution).
function(labkit_lab_implementations lab)
  add_library(${lab}_cpu STATIC ${dir}/${lab}_cpu.cpp)
  target_include_directories(${lab}_cpu PUBLIC ${dir})
  target_link_libraries(${lab}_cpu PUBLIC labkit::common)
  labkit_warnings(${lab}_cpu)

  labkit_object_library(${lab}_exports ${gen}/${lab}_exports.cu)
  target_link_libraries(${lab}_exports PUBLIC ${lab}_cpu)
  labkit_object_library(${lab}_facts ${gen}/${lab}_facts.cpp)
  target_link_libraries(${lab}_facts PUBLIC labkit::common)

  labkit_object_library(${lab}_student_obj ${dir}/${lab}.cu)
  target_link_libraries(${lab}_student_obj PUBLIC ${lab}_cpu ${manifest_LIBRARIES})
  labkit_implementation_library(${lab}_student "${lab}_student_obj;${lab}_exports;${lab}_cpu")

  set(solution_dir ${PROJECT_SOURCE_DIR}/solutions/${lab})
  if(LABKIT_BUILD_SOLUTIONS AND IS_DIRECTORY ${solution_dir})
    file(GLOB solution_sources CONFIGURE_DEPENDS ${solution_dir}/*.cu ${solution_dir}/*.cpp)
    if(NOT solution_sources)
      message(FATAL_ERROR "add_lab(${lab}): ${solution_dir} holds no .cu or .cpp file.")
    endif()
    labkit_object_library(${lab}_solution_obj ${solution_sources})
    target_include_directories(${lab}_solution_obj PRIVATE ${solution_dir})
    target_link_libraries(${lab}_solution_obj PUBLIC ${lab}_cpu ${manifest_LIBRARIES})
    labkit_implementation_library(${lab}_solution "${lab}_solution_obj;${lab}_exports;${lab}_cpu")
  endif()
endfunction()

# The worker (<lab>_worker): loads one implementation library and runs the judge's calls,
# sandboxed (common/worker/).
function(labkit_lab_worker lab)
  add_executable(${lab}_worker ${gen}/${lab}_dispatch.cu)
  target_link_libraries(${lab}_worker PRIVATE labkit_worker_main ${lab}_cpu)
  labkit_cuda_options(${lab}_worker)
  # The worker's own launch entry points (common/worker/worker_main.cu) must be what the
  # implementation library's launches bind to: exported from the program.
  set(worker_exports ${PROJECT_SOURCE_DIR}/common/worker/worker_exports.list)
  target_link_options(${lab}_worker PRIVATE "LINKER:--dynamic-list=${worker_exports}")
  set_property(TARGET ${lab}_worker APPEND PROPERTY LINK_DEPENDS ${worker_exports})
endfunction()

# Programs a lab adds for its students (manifest "programs"), e.g. sobel's image tool:
# linked with the student's code; --reference runs the reference library instead.
function(labkit_lab_programs lab)
  foreach(program ${manifest_PROGRAMS})
    string(REGEX MATCH "^([^=]+)=(.+)$" parsed "${program}")
    set(program_name ${CMAKE_MATCH_1})
    add_executable(${program_name} ${dir}/${CMAKE_MATCH_2})
    target_link_libraries(${program_name} PRIVATE ${lab}_student_obj ${lab}_exports labkit::bench)
    labkit_cuda_options(${program_name})
    if(TARGET ${lab}_solution)
      target_compile_definitions(${program_name} PRIVATE LABKIT_DEFAULT_REFERENCE="$<TARGET_FILE:${lab}_solution>")
      add_dependencies(${program_name} ${lab}_solution)
    endif()
  endforeach()
endfunction()

# The test and bench sources compiled once (<lab>_test_obj, <lab>_bench_obj), and linked
# with each implementation: <lab>_test and <lab>_bench (the student's file),
# <lab>_solution_test and <lab>_solution_bench (the reference).
function(labkit_lab_direct_programs lab)
  labkit_object_library(${lab}_test_obj ${dir}/${lab}_test.cu)
  target_link_libraries(${lab}_test_obj PUBLIC ${lab}_cpu labkit::testing)
  labkit_object_library(${lab}_bench_obj ${dir}/${lab}_bench.cu)
  target_link_libraries(${lab}_bench_obj PUBLIC ${lab}_cpu labkit::bench ${manifest_BENCH_LIBRARIES})
  if(TARGET ${lab}_solution)
    # The bench times the implementation it is linked with against this reference.
    target_compile_definitions(${lab}_bench_obj PRIVATE
      LABKIT_DEFAULT_REFERENCE="$<TARGET_FILE:${lab}_solution>")
  endif()

  labkit_lab_impls(${lab} impls)
  foreach(impl ${impls})
    labkit_lab_direct_prefix(${lab} ${impl} prefix)
    add_executable(${prefix}_test)
    target_link_libraries(${prefix}_test PRIVATE ${lab}_test_obj ${lab}_${impl}_obj ${lab}_exports ${lab}_facts
                          labkit_test_main labkit::testing)
    add_executable(${prefix}_bench)
    target_link_libraries(${prefix}_bench PRIVATE ${lab}_bench_obj ${lab}_${impl}_obj ${lab}_exports ${lab}_facts
                          labkit::bench)
    if(TARGET ${lab}_solution)
      add_dependencies(${prefix}_bench ${lab}_solution)
    endif()
  endforeach()
endfunction()

# The implementations built: student, and solution when the reference is.
function(labkit_lab_impls lab out)
  set(impls student)
  if(TARGET ${lab}_solution)
    list(APPEND impls solution)
  endif()
  set(${out} "${impls}" PARENT_SCOPE)
endfunction()

# What the direct programs of an implementation are named before _test and _bench:
# <lab> for the student's, <lab>_solution for the reference.
function(labkit_lab_direct_prefix lab impl out)
  if(impl STREQUAL "student")
    set(${out} ${lab} PARENT_SCOPE)
  else()
    set(${out} ${lab}_solution PARENT_SCOPE)
  endif()
endfunction()

# The judge: the same test and bench objects, linked with the proxy of <lab>.h
# (<lab>_proxy, from the generated <lab>_proxy.cu): <lab>_judge_test, <lab>_judge_bench.
# The proxy's defaults name this build's worker and student library; the grader always
# passes --impl (and --reference) explicitly.
function(labkit_lab_judge_programs lab proxies)
  set(reference_default "")
  if(TARGET ${lab}_solution)
    set(reference_default "$<TARGET_FILE:${lab}_solution>")
  endif()
  labkit_generated_note(${lab} generated_note)
  file(CONFIGURE OUTPUT ${gen}/${lab}_proxy.cu.in CONTENT
"${generated_note}
#include \"${lab}.h\"
#include \"lab/judge/proxy.h\"

${proxies}LAB_JUDGE_LAB(\"${lab}\", \"$<TARGET_FILE:${lab}_worker>\", \"$<TARGET_FILE:${lab}_student>\",
              \"${reference_default}\");
" @ONLY)
  file(GENERATE OUTPUT ${gen}/${lab}_proxy.cu INPUT ${gen}/${lab}_proxy.cu.in)
  labkit_object_library(${lab}_proxy ${gen}/${lab}_proxy.cu)
  target_link_libraries(${lab}_proxy PUBLIC ${lab}_cpu labkit_judge)
  add_executable(${lab}_judge_test)
  target_link_libraries(${lab}_judge_test PRIVATE ${lab}_test_obj ${lab}_proxy ${lab}_exports ${lab}_facts
                        labkit_test_main labkit::testing labkit_judge)
  add_executable(${lab}_judge_bench)
  target_link_libraries(${lab}_judge_bench PRIVATE ${lab}_bench_obj ${lab}_proxy ${lab}_exports ${lab}_facts
                        labkit::bench labkit_judge)
  # The worker comes with the judge; the student library does not (a submission's is
  # built on its own, and a student file that does not compile must not stop the judge's build).
  add_dependencies(${lab}_judge_test ${lab}_worker)
  add_dependencies(${lab}_judge_bench ${lab}_worker)
  if(TARGET ${lab}_solution)
    add_dependencies(${lab}_judge_bench ${lab}_solution)
    add_dependencies(${lab}_judge_test ${lab}_solution)
  endif()
endfunction()

# The lab's CTest entries: its test programs (labels student, solution, judge: see
# labkit_add_gtest) and the checks of its manifest and of the judge's options.
function(labkit_lab_register_tests lab)
  labkit_lab_impls(${lab} impls)
  foreach(impl ${impls})
    labkit_lab_direct_prefix(${lab} ${impl} prefix)
    labkit_add_gtest(${lab}.${impl} ${prefix}_test ${impl} ALONE_SOURCE=${dir}/${lab}_test.cu)
  endforeach()
  if(TARGET ${lab}_solution)
    # The kit's own check of the trusted path: the judge runs the reference's tests
    # through the worker, as the grader runs a student's.
    labkit_add_gtest(${lab}.judge ${lab}_judge_test judge --impl=$<TARGET_FILE:${lab}_solution>)
  endif()
  # Every sanitizer test the manifest names must exist (a renamed test would otherwise
  # turn the grader's sanitizer stage into a note).
  if(Python3_EXECUTABLE)
    add_test(NAME ${lab}.manifest
             COMMAND ${Python3_EXECUTABLE} -m grader.manifest --check-tests ${lab} $<TARGET_FILE:${lab}_judge_test>
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties(${lab}.manifest PROPERTIES LABELS "cpu;manifest" TIMEOUT 120)
  endif()
  # The grader's gate (--gate-fd) must be a descriptor the bench holds; anything else is
  # refused before any set-up (exit 2), on a machine without a GPU too.
  if(TARGET ${lab}_judge_bench)
    add_test(NAME ${lab}.bench.gate_checked COMMAND ${lab}_judge_bench --gate-fd=97 --impl=none)
    set_tests_properties(${lab}.bench.gate_checked PROPERTIES LABELS "cpu;manifest" TIMEOUT 60
                         PASS_REGULAR_EXPRESSION "--gate-fd 97 is not an open file descriptor")
  endif()
  # Run by hand, the bench compares with the variant the grader grades against.
  add_test(NAME ${lab}.bench.reference_variant COMMAND ${lab}_bench --help)
  set_tests_properties(${lab}.bench.reference_variant PROPERTIES LABELS "cpu;manifest" TIMEOUT 60
                       PASS_REGULAR_EXPRESSION
                       "--reference-variant NAME[^\n]*\\(default: ${manifest_REFERENCE_VARIANT}, ")
endfunction()
