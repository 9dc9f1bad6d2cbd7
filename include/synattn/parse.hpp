// synattn — module header of the parser: raw text or tokens in, dependency
// trees out (the tokenizer and sentence segmenter of text/, the biaffine
// parser of parse/, their model files, CoNLL-U in and out, the CoNLL 2018
// scorer). Model files are safetensors with JSON metadata, so this needs
// nlohmann-json: link synattn::checkpoint. synattn.hpp leaves it out, since
// a program that only adds a tree bias to its own model does not need it.
#ifndef SYNATTN_PARSE_HPP
#define SYNATTN_PARSE_HPP

#if !__has_include(<nlohmann/json.hpp>)
#error "<synattn/parse.hpp> needs nlohmann-json (the model files' metadata): link synattn::checkpoint, or add nlohmann-json's include path (Debian: nlohmann-json3-dev)"
#endif

#include "text/utf8.hpp"
#include "text/document.hpp"
#include "text/word_spans.hpp"
#include "io/conllu_text.hpp"
#include "io/conllu_writer.hpp"
#include "text/conll18_eval.hpp"
#include "text/segmenter_net.hpp"
#include "text/segmenter_labels.hpp"
#include "text/multiword.hpp"
#include "text/tokenizer_model.hpp"
#include "text/tokenizer_training.hpp"
#include "text/subword_alignment.hpp"

#include "parse/arborescence.hpp"
#include "parse/char_cnn.hpp"
#include "parse/biaffine.hpp"
#include "parse/parser_vocabulary.hpp"
#include "parse/parser_batch.hpp"
#include "parse/parser.hpp"
#include "parse/parser_model.hpp"
#include "parse/sentence_length.hpp"
#include "io/conllu_document.hpp"
#include "parse/token_text.hpp"
#include "parse/metrics.hpp"
#include "parse/pipeline.hpp"

#endif  // SYNATTN_PARSE_HPP
