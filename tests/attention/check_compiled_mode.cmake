# Compiled mode's promise, checked on the symbols: the user's object files
# (built with SYNATTN_COMPILED) define none of SyntaxBiasedAttention's
# out-of-line members, nor (PARSER_OBJECTS, TAGGER_OBJECTS, optional) of
# BiaffineParser's or SyntaxTransformerTagger's, and the synattn_compiled
# library defines them for float and double. Nor do they define the kernel
# registry's tables (kernels::detail::table_of, whose instantiation compiles
# every ISA's kernels), and (PIPELINE_OBJECTS, optional: built with
# SYNATTN_COMPILED_PIPELINE) no parse::Pipeline loading or parsing and no
# per-ISA kernel, which the library defines. TREES_OBJECTS (optional: a
# file that builds trees and calls make_bucket_batch) define neither
# DependencyTree's validation and indexes nor make_bucket_batch.
#   -DNM -DUSER_OBJECTS=a.o;b.o [-DPARSER_OBJECTS=c.o] [-DTAGGER_OBJECTS=d.o] [-DPIPELINE_OBJECTS=e.o]
#   [-DTREES_OBJECTS=f.o] -DLIBRARY=libsynattn_compiled.a
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

# The library defines the symbols matching `pattern` for float and for double
# (@TYPE@ in `pattern` and `what` stands for each).
#   library_defines_both(<pattern> <what>)
function(library_defines_both pattern what)
  foreach(type IN ITEMS float double)
    string(REPLACE "@TYPE@" "${type}" typed "${pattern}")
    string(REPLACE "@TYPE@" "${type}" typed_what "${what}")
    string(REGEX MATCH "[^\n]*${typed}[^\n]*" lib_hit "${lib}")
    if(NOT lib_hit)
      message(FATAL_ERROR "${LIBRARY} does not define ${typed_what}")
    endif()
  endforeach()
endfunction()

# The parser and the tagger: the same promise for their out-of-line members.
#   check_extern(<objects> <class> <members regex>)
function(check_extern objects class members)
  defined_symbols(user_text ${objects})
  string(REGEX MATCH "[^\n]*${class}<(float|double)>::(${members})[^\n]*" hit "${user_text}")
  if(hit)
    message(FATAL_ERROR "an object file defines ${class} code although SYNATTN_COMPILED is on: ${hit}")
  endif()
  library_defines_both("${class}<@TYPE@>::(forward|backward)" "${class}<@TYPE@>'s forward or backward")
  message(STATUS "${objects}: no out-of-line ${class} member; the library defines them")
endfunction()
if(PARSER_OBJECTS)
  check_extern("${PARSER_OBJECTS}" BiaffineParser
    "forward|loss|backward|parse|check_batch|label_forward|BiaffineParser\\(synattn::parse::ParserOptions")
endif()
if(TAGGER_OBJECTS)
  check_extern("${TAGGER_OBJECTS}" SyntaxTransformerTagger
    "forward|loss|backward|predict|stage_offset|SyntaxTransformerTagger\\(synattn::nn::TaggerOptions")
endif()

# The kernel registry's tables: every user object leaves them to the library.
set(tables "synattn::kernels::detail::table_of<(float|double)>\\(")
library_defines_both("synattn::kernels::detail::table_of<@TYPE@>\\(" "kernels::detail::table_of<@TYPE@>")
defined_symbols(all_users ${USER_OBJECTS} ${PARSER_OBJECTS} ${TAGGER_OBJECTS} ${PIPELINE_OBJECTS})
string(REGEX MATCH "[^\n]*${tables}[^\n]*" hit "${all_users}")
if(hit)
  message(FATAL_ERROR "a user object file defines a kernel table although SYNATTN_COMPILED is on: ${hit}")
endif()
message(STATUS "user objects define no kernel table; the library defines them")

if(PIPELINE_OBJECTS)
  string(FIND "${lib}" "synattn::parse::Pipeline::parse_text(" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${LIBRARY} does not define parse::Pipeline::parse_text")
  endif()
  defined_symbols(pipeline_text ${PIPELINE_OBJECTS})
  string(REGEX MATCH "[^\n]*(parse::Pipeline::(load\\(|parse_text|parse_sentences)|kernels::(portable|avx2|avx512|neon)::)[^\n]*"
    hit "${pipeline_text}")
  if(hit)
    message(FATAL_ERROR "an object file defines pipeline or kernel code although SYNATTN_COMPILED_PIPELINE is on: ${hit}")
  endif()
  message(STATUS "${PIPELINE_OBJECTS}: no parse::Pipeline member but load_default, no kernel; the library defines them")
endif()

if(TREES_OBJECTS)
  set(trees_code "synattn::(DependencyTree::(DependencyTree\\(std::vector|build\\(|merge_intervals_bottom_up\\()|make_bucket_batch\\()")
  string(REGEX MATCH "[^\n]*${trees_code}[^\n]*" lib_hit "${lib}")
  if(NOT lib_hit)
    message(FATAL_ERROR "${LIBRARY} does not define DependencyTree's constructor or make_bucket_batch")
  endif()
  defined_symbols(trees_text ${TREES_OBJECTS})
  string(REGEX MATCH "[^\n]*${trees_code}[^\n]*" hit "${trees_text}")
  if(hit)
    message(FATAL_ERROR "an object file defines tree code although SYNATTN_COMPILED is on: ${hit}")
  endif()
  message(STATUS "${TREES_OBJECTS}: no DependencyTree validation or make_bucket_batch; the library defines them")
endif()
