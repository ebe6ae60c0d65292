// json_schema.h — a JSON Schema to GBNF text, and the grammar of any JSON
// value (docs/GRAMMAR.md lists the keywords).
//
// The translation is exact or refused: every keyword it reads is enforced
// by the grammar, and a keyword it cannot enforce (multipleOf, a non-integer
// bound, uniqueItems, a pattern outside the regex subset, ...) is an error
// naming the keyword and its JSON path in the schema ("json schema at
// /properties/age: 'multipleOf' cannot be enforced by a grammar"), never
// silently dropped. Annotations that constrain nothing (title, description,
// $schema, $id, examples, default, $comment, deprecated, readOnly,
// writeOnly) are allowed.
//
// Output whitespace: none inside the value except one optional space after
// ':' and ',' — a model that writes {"a": 1} and one that writes {"a":1} both
// fit, and the grammar stays small and unambiguous.
#pragma once

#include <string>
#include <string_view>

namespace waste::grammar {

constexpr size_t max_schema_bytes = 1u << 20;    // a schema is a request's field: 1 MiB is generous
constexpr size_t max_schema_depth = 64;          // nesting of subschemas, and of $ref chains
constexpr size_t max_enum_values = 4096;
// Pairwise comparisons spent proving a schema's oneOf branches disjoint (a
// 256-branch oneOf of tagged objects costs ~100,000).
constexpr size_t max_oneof_comparisons = 1u << 20;

// GBNF text whose rule "root" is the schema's language.
std::string json_schema_to_gbnf(std::string_view schema_text);
// GBNF text whose rule "root" is any JSON value (RFC 8259).
std::string any_json_gbnf();

}  // namespace waste::grammar
