// gbnf_parser.h — llama.cpp's GBNF grammar text to a Grammar
// (docs/GRAMMAR.md lists the syntax).
//
//   rule     ::= name "::=" alternatives        one rule per line; a rule
//                                               continues over newlines only
//                                               inside ( ), after "::=" or "|"
//   items    literals "a\n\x41\u00e9", classes [a-z_] [^"\\], any char `.`,
//            rule names [A-Za-z0-9_-]+, groups ( ... ), repetition ? * +
//            {m} {m,} {m,n} {,n}; "#" starts a comment to the end of the line.
//
// Errors are WASTE_ERR_INVALID_ARGUMENT with "grammar line L:C: ..." (and the
// rule name for undefined rules, left recursion, empty languages). Parsing is
// linear in the text; the text is bounded (max_gbnf_bytes) and so is the
// nesting of groups, so hostile text can neither hang nor overflow the stack.
#pragma once

#include <string>
#include <string_view>

#include "grammar/grammar.h"

namespace waste::grammar {

constexpr size_t max_gbnf_bytes = 1u << 20;  // 1 MiB: far above any hand-written or schema-made grammar
constexpr size_t max_group_depth = 128;      // nested ( ): recursion depth of the parser

Grammar parse_gbnf(std::string_view text, const std::string& root = "root");

}  // namespace waste::grammar
