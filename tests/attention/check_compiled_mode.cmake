# Compiled mode's promise, checked on the symbols: the user's object files
# (built with SYNATTN_COMPILED) define none of SyntaxBiasedAttention's
# out-of-line members, and the synattn_compiled library defines them for
# float and double.   -DNM -DUSER_OBJECTS=a.o;b.o -DLIBRARY=libsynattn_compiled.a
set(member "synattn::SyntaxBiasedAttention<float>::forward_core(")
set(member_double "synattn::SyntaxBiasedAttention<double>::backward(")

function(defined_symbols out)
  execute_process(COMMAND "${NM}" -C --defined-only ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm failed (${rc}): ${err}")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

defined_symbols(lib ${LIBRARY})
foreach(m IN ITEMS "${member}" "${member_double}")
  string(FIND "${lib}" "${m}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${LIBRARY} does not define ${m}")
  endif()
endforeach()

# Members defined in the class body (the implicit destructor, accessors) are
# inline and may still be emitted where used; the out-of-line ones, which are
# the whole layer (construction, checks, forward, backward, inference), must
# not be.
defined_symbols(user ${USER_OBJECTS})
set(out_of_line "SyntaxBiasedAttention<(float|double)>::(forward|backward|infer|check_|reset_parameters|SyntaxBiasedAttention\\(synattn::AttentionOptions)")
string(REGEX MATCH "[^\n]*${out_of_line}[^\n]*" hit "${user}")
if(hit)
  message(FATAL_ERROR "a user object file defines layer code although SYNATTN_COMPILED is on: ${hit}")
endif()
string(REGEX MATCH "[^\n]*${out_of_line}[^\n]*" lib_hit "${lib}")
if(NOT lib_hit)
  message(FATAL_ERROR "the check's pattern matches nothing in ${LIBRARY}: it would pass vacuously")
endif()
message(STATUS "user objects define no out-of-line SyntaxBiasedAttention member; the library defines them")
