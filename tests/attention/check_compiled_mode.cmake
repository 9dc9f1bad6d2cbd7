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

defined_symbols(user ${USER_OBJECTS})
string(FIND "${user}" "synattn::SyntaxBiasedAttention<" at)
if(NOT at EQUAL -1)
  string(SUBSTRING "${user}" ${at} 200 excerpt)
  message(FATAL_ERROR "a user object file defines layer code although SYNATTN_COMPILED is on: ${excerpt}")
endif()
message(STATUS "user objects define no SyntaxBiasedAttention member; the library defines them")
