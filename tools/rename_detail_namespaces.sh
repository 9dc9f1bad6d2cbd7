#!/bin/sh
# Merges the per-header detail namespaces into one `detail` per public
# namespace, as Eigen (Eigen::internal) and fmt (fmt::detail) keep theirs:
#
#   synattn::detail           was atomic_file_detail, attention_detail,
#                             checked_size_detail, checkpoint_detail,
#                             metadata_number_detail, npy_detail,
#                             output_path_detail, parallel_detail,
#                             safetensors_detail, schedule_detail (and detail)
#   synattn::kernels::detail  was dropout_detail, gemm_detail (and detail)
#   synattn::kernels::<isa>::detail
#                             was linear_detail (and the detail of
#                             attention_rows_algorithm.inc), per ISA namespace
#   synattn::nn::detail       was binding_detail, distillation_detail
#   synattn::parse::detail    was biaffine_detail, json_detail, metrics_detail,
#                             token_text_detail (and detail)
#   synattn::text::detail     was conll18_detail, conllu_text_detail,
#                             conllu_writer_detail, multiword_detail,
#                             utf8_detail, word_spans_detail
#
# References are qualified so that they still find their namespace from a
# nested one that now has a `detail` of its own (inside synattn::nn,
# `detail::` is nn::detail): a top-level one becomes synattn::detail::, a
# nested one <parent>::detail::.
#
# Names that would meet in one namespace, and what is done about them:
#   folder_of     io/atomic_file.hpp took io/output_path.hpp's by a using-
#                 declaration (the same function): the declaration goes.
#   number_text   train/checkpoint.hpp's and io/npy.hpp's have the same
#                 signature: checkpoint's becomes exact_number_text.
#   excerpt       io/conllu_text.hpp (string_view, size_t) and
#                 text/conll18_eval.hpp (u32string, size_t, size_t): two
#                 overloads, no call is ambiguous; left as they are.
#   span_text     text/conll18_eval.hpp names synattn::detail's as bare
#                 detail::span_text, which inside synattn::text would find
#                 text::detail: qualified first.
#
# Checked on the tree it was written for: every header (the umbrella, the
# parser module, io/, util/, train/, data/, nn/, kernels/) compiles after it
# with the attention layer, the tagger and the parser instantiated, and so do
# the tests that name detail functions. The full build and the tests are the
# final check of the list above.
#
# Usage: tools/rename_detail_namespaces.sh [checkout], in a clean checkout
# (it rewrites the tracked files in place; git diff shows what it did).
set -eu
cd "${1:-.}"
files=$(git ls-files -- include src tests bench fuzz examples python/src | grep -E '\.(hpp|cpp|inc|h)$')

# The special cases first (see above).
perl -ni -e 'print unless /^\s*using output_path_detail::folder_of;/' include/synattn/io/atomic_file.hpp
perl -pi -e 's/\bnumber_text\b/exact_number_text/g' include/synattn/train/checkpoint.hpp
perl -pi -e 's/(?<![\w:])detail::span_text\b/synattn::detail::span_text/g' include/synattn/text/conll18_eval.hpp

top="atomic_file_detail attention_detail checked_size_detail checkpoint_detail metadata_number_detail npy_detail output_path_detail parallel_detail safetensors_detail schedule_detail"
nested="kernels:dropout_detail kernels:gemm_detail nn:binding_detail nn:distillation_detail parse:biaffine_detail parse:json_detail parse:metrics_detail parse:token_text_detail text:conll18_detail text:conllu_text_detail text:conllu_writer_detail text:multiword_detail text:utf8_detail text:word_spans_detail"

for f in $files; do
  # A file whose code lies in namespace synattn only (and its details) keeps
  # bare detail:: references; any other spells synattn::detail:: out.
  if grep -E '^\s*namespace [A-Za-z_:]+ *\{' "$f" | grep -qvE 'namespace (synattn|detail|[a-z0-9_]+_detail) *\{'; then
    here=synattn::detail
  else
    here=detail
  fi
  for s in $top; do
    perl -pi -e "s{(?<!using )\bnamespace $s\b}{namespace detail}g; s{\bsynattn::$s\b}{synattn::detail}g; s{(?<![\w:])$s\b}{$here}g" "$f"
  done
  for pn in $nested; do
    p=${pn%%:*} s=${pn#*:}
    perl -pi -e "s{(?<!using )\bnamespace $s\b}{namespace detail}g; s{\b((?:synattn::)?$p::)$s\b}{\${1}detail}g; s{(?<![\w:])$s\b}{$p::detail}g" "$f"
  done
  # Per ISA namespace: the few-rows kernel's helpers join the rows' detail.
  perl -pi -e 's{\blinear_detail\b}{detail}g' "$f"
done
