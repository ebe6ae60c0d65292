// regex_to_gbnf.h — a JSON Schema `pattern` (an ECMAScript regular
// expression, as validators run it with the "u" flag) to a GBNF expression
// over the characters of a JSON string written without escapes.
//
// The subset (docs/GRAMMAR.md): literals; escapes \d \D \w \W \s \S \t \n
// \r \f \v \0 \xHH \uHHHH \u{H...} and escaped punctuation; classes [...]
// with ranges and negation; `.`; groups ( ) (?: ) (?<name> ); alternation;
// quantifiers * + ? {m} {m,} {m,n} (lazy forms match the same language);
// ^ and $ at the ends of a top-level branch (a branch without ^ may be
// preceded, without $ followed, by any characters: a pattern is a search).
// Refused with the offset: backreferences, lookaround, \b \B, anchors
// elsewhere, and anything unknown.
//
// The output never contains '"', '\' or control characters (a JSON string
// would need them escaped): it is the pattern's language cut to what a JSON
// string holds unescaped, which is always a valid match.
#pragma once

#include <string>

namespace waste::grammar {

std::string regex_to_gbnf(const std::string& pattern);

}  // namespace waste::grammar
