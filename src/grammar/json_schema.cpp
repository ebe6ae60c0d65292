#include "grammar/json_schema.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "grammar/regex_to_gbnf.h"
#include "platform/error.h"

namespace waste::grammar {

namespace {

using Json = nlohmann::ordered_json;  // properties are written in the schema's order

// The shared rules of JSON text (RFC 8259), named with a "j-" prefix so no
// schema-made rule can collide with them.
constexpr const char* json_primitives = R"(j-ws ::= " "?
j-value ::= j-object | j-array | j-string | j-number | "true" | "false" | "null"
j-object ::= "{" ( j-string ":" j-ws j-value ( "," j-ws j-string ":" j-ws j-value )* )? "}"
j-array ::= "[" ( j-value ( "," j-ws j-value )* )? "]"
j-string ::= "\"" j-char* "\""
j-char ::= [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
j-char-bmp ::= [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-cA-Ce-fE-F] [0-9a-fA-F]{3} )
j-number ::= j-integer ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
j-integer ::= "-"? ( "0" | [1-9] [0-9]* )
j-boolean ::= "true" | "false"
j-null ::= "null"
j-date ::= [0-9]{4} "-" ( ( "01" | "03" | "05" | "07" | "08" | "10" | "12" ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ) | ( "04" | "06" | "09" | "11" ) "-" ( "0" [1-9] | [12] [0-9] | "30" ) | "02-" ( "0" [1-9] | "1" [0-9] | "2" [0-8] ) )
j-time ::= ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,9} )? ( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] )
j-date-time ::= j-date "T" j-time
j-uuid ::= [0-9a-f]{8} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{12}
)";

// Keywords that describe and constrain nothing.
const std::set<std::string> annotations = {"title",   "description", "$schema",  "$id",       "$comment", "examples",
                                            "default", "deprecated",  "readOnly", "writeOnly", "$defs",    "definitions",
                                            "$anchor", "strict",
                                            "discriminator"};  // OpenAPI / Pydantic: names the tag, constrains nothing

std::string pointer_escape(const std::string& key) {
    std::string out;
    for (char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
    return out;
}

// A GBNF literal for text (a JSON value's serialisation).
std::string literal(const std::string& text) {
    std::string out = "\"";
    for (unsigned char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7F) {
            out += fmt::format("\\x{:02X}", c);
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

// Non-negative decimal ranges as GBNF (the digit-by-digit construction).
std::string same_length_range(const std::string& a, const std::string& b) {
    if (a.empty()) return "\"\"";
    const size_t rest = a.size() - 1;
    if (a[0] == b[0]) {
        const std::string tail = rest ? " " + same_length_range(a.substr(1), b.substr(1)) : "";
        return "( \"" + std::string(1, a[0]) + "\"" + tail + " )";
    }
    const bool a_floor = a.find_first_not_of('0', 1) == std::string::npos;
    const bool b_ceiling = b.find_first_not_of('9', 1) == std::string::npos;
    const std::string any_rest = rest ? fmt::format(" [0-9]{{{}}}", rest) : "";
    if (a_floor && b_ceiling) return fmt::format("( [{}-{}]{} )", a[0], b[0], any_rest);
    std::vector<std::string> parts;
    parts.push_back("\"" + std::string(1, a[0]) + "\" " + same_length_range(a.substr(1), std::string(rest, '9')));
    if (a[0] + 1 <= b[0] - 1) parts.push_back(fmt::format("[{}-{}]{}", static_cast<char>(a[0] + 1), static_cast<char>(b[0] - 1), any_rest));
    parts.push_back("\"" + std::string(1, b[0]) + "\" " + same_length_range(std::string(rest, '0'), b.substr(1)));
    std::string out = "( ";
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? " | " : "") + parts[i];
    return out + " )";
}

// [lo, hi] for 0 <= lo <= hi; hi < 0 means unbounded above.
std::string natural_range(long long lo, long long hi) {
    std::vector<std::string> parts;
    const std::string lo_text = std::to_string(lo);
    const size_t last_length = hi < 0 ? lo_text.size() : std::to_string(hi).size();
    long long power = 1;
    for (size_t d = 1; d < lo_text.size(); ++d) power *= 10;
    for (size_t d = lo_text.size(); d <= last_length; ++d, power *= 10) {
        const long long first = std::max(lo, d == 1 ? 0 : power);
        const long long last = hi < 0 ? power * 10 - 1 : std::min(hi, power * 10 - 1);
        if (first <= last) parts.push_back(same_length_range(std::to_string(first), std::to_string(last)));
    }
    if (hi < 0) parts.push_back(fmt::format("[1-9] [0-9]{{{},}}", last_length));
    std::string out = "( ";
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? " | " : "") + parts[i];
    return out + " )";
}

class Translator {
public:
    explicit Translator(const Json& root) : root_(root) {}

    std::string run() {
        const std::string body = translate(root_, "", "s", 0);
        std::string out = "root ::= " + body + "\n";
        for (const auto& [name, rule] : rules_) out += name + " ::= " + rule + "\n";
        return out + json_primitives;
    }

private:
    [[noreturn]] static void refuse(const std::string& path, const std::string& what) {
        fail(WASTE_ERR_INVALID_ARGUMENT, "json schema at {}: {}", path.empty() ? "/" : path, what);
    }

    std::string new_rule(const std::string& hint, const std::string& body) {
        std::string base;
        // '_' only: the grammar builder names the rules it generates "rule-N",
        // so a name made here never meets one made there
        for (char c : hint) base += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
        if (base.size() > 48) base.resize(48);
        std::string name = "s_" + base;
        for (int i = 2; rules_.count(name); ++i) name = fmt::format("s_{}_{}", base, i);
        rules_[name] = body;
        return name;
    }

    const Json& resolve(const std::string& ref, const std::string& path) {
        if (ref.empty() || ref[0] != '#') refuse(path, fmt::format("$ref '{}' is not within this schema (only '#...' refs)", ref));
        try {
            const Json::json_pointer pointer(ref.substr(1));
            return root_.at(pointer);
        } catch (const std::exception&) {
            refuse(path, fmt::format("$ref '{}' does not resolve", ref));
        }
    }

    std::string translate(const Json& schema, const std::string& path, const std::string& hint, size_t depth) {
        if (depth > max_schema_depth) refuse(path, fmt::format("subschemas nested deeper than {}", max_schema_depth));
        if (schema.is_boolean()) {
            if (!schema.get<bool>()) refuse(path, "schema false allows no value");
            return "j-value";
        }
        if (!schema.is_object()) refuse(path, fmt::format("a schema must be an object or a boolean, not {}", schema.type_name()));
        std::set<std::string> used;
        for (const auto& [key, value] : schema.items())
            if (!annotations.count(key)) used.insert(key);
        auto take = [&](const char* key) -> const Json* {
            auto it = schema.find(key);
            if (it == schema.end()) return nullptr;
            used.erase(key);
            return &*it;
        };
        auto leftover = [&](const std::string& context) {
            if (!used.empty()) refuse(path + "/" + pointer_escape(*used.begin()),
                                      fmt::format("keyword '{}' cannot be enforced by a grammar{}", *used.begin(), context));
        };
        if (const Json* ref = take("$ref")) {
            leftover(" beside $ref");
            if (!ref->is_string()) refuse(path + "/$ref", "$ref must be a string");
            const std::string target = ref->get<std::string>();
            if (auto it = ref_rules_.find(target); it != ref_rules_.end()) return it->second;
            if (++ref_depth_ > max_schema_depth * 16) refuse(path, "too many $ref targets");
            const std::string name = new_rule("ref-" + target.substr(target.rfind('/') + 1), "\"\"");
            ref_rules_[target] = name;  // before translating: a recursive schema refers to itself
            rules_[name] = translate(resolve(target, path + "/$ref"), target.substr(1), name, depth + 1);
            return name;
        }
        if (const Json* value = take("const")) {
            type_beside_values(path, Json::array({*value}), take("type"));
            leftover(" beside const");
            return literal(value->dump());
        }
        if (const Json* values = take("enum")) {
            if (!values->is_array() || values->empty()) refuse(path + "/enum", "enum must be a non-empty array");
            type_beside_values(path, *values, take("type"));
            leftover(" beside enum");
            if (values->size() > max_enum_values) refuse(path + "/enum", fmt::format("more than {} values", max_enum_values));
            std::string out = "( ";
            for (size_t i = 0; i < values->size(); ++i) out += (i ? " | " : "") + literal((*values)[i].dump());
            return out + " )";
        }
        for (const char* combinator : {"anyOf", "oneOf"}) {
            if (const Json* branches = take(combinator)) {
                leftover(fmt::format(" beside {}", combinator));
                if (!branches->is_array() || branches->empty()) refuse(path + "/" + combinator, "must be a non-empty array");
                if (std::string(combinator) == "oneOf")
                    if (const auto pair = overlapping_pair(*branches)) {
                        if (proof_exhausted_)
                            refuse(path + "/oneOf", fmt::format("proving oneOf's branches disjoint took more than {} "
                                                                "comparisons: too large to enforce exactly (use anyOf)",
                                                                max_oneof_comparisons));
                        refuse(path + "/oneOf", fmt::format("oneOf whose branches may overlap cannot be enforced exactly: "
                                                            "nothing proves branches {} and {} disjoint (give each branch a "
                                                            "different type, a required property with a different const or "
                                                            "enum, or use anyOf)", pair->first, pair->second));
                    }
                std::string out = "( ";
                for (size_t i = 0; i < branches->size(); ++i)
                    out += (i ? " | " : "") + translate((*branches)[i], fmt::format("{}/{}/{}", path, combinator, i),
                                                        fmt::format("{}-{}", hint, i), depth + 1);
                return out + " )";
            }
        }
        if (const Json* parts = take("allOf")) {
            if (!parts->is_array() || parts->empty()) refuse(path + "/allOf", "must be a non-empty array");
            Json merged = schema;
            merged.erase("allOf");
            for (size_t i = 0; i < parts->size(); ++i) {
                const Json& part = (*parts)[i];
                const std::string part_path = fmt::format("{}/allOf/{}", path, i);
                if (!part.is_object()) refuse(part_path, "allOf merges object schemas only");
                for (const auto& [key, value] : part.items()) {
                    if (annotations.count(key)) continue;
                    if (key == "properties" && value.is_object()) {
                        for (const auto& [name, property] : value.items()) {
                            if (merged["properties"].contains(name))
                                refuse(part_path + "/properties/" + pointer_escape(name), "allOf defines this property twice: not exactly translatable");
                            merged["properties"][name] = property;
                        }
                    } else if (key == "required" && value.is_array()) {
                        for (const auto& name : value) merged["required"].push_back(name);
                    } else if (!merged.contains(key)) {
                        merged[key] = value;
                    } else if (merged[key] != value) {
                        refuse(part_path + "/" + pointer_escape(key), fmt::format("allOf branches disagree on '{}': not exactly translatable", key));
                    }
                }
            }
            return translate(merged, path, hint, depth + 1);
        }
        // The type: given, or read from the keywords present.
        std::vector<std::string> types;
        if (const Json* type = take("type")) {
            if (type->is_string()) {
                types.push_back(type->get<std::string>());
            } else if (type->is_array() && !type->empty()) {
                for (const auto& t : *type) {
                    if (!t.is_string()) refuse(path + "/type", "type names must be strings");
                    types.push_back(t.get<std::string>());
                }
            } else {
                refuse(path + "/type", "type must be a string or a non-empty array of strings");
            }
        } else if (schema.contains("properties") || schema.contains("required") || schema.contains("additionalProperties")) {
            types = {"object"};
        } else if (schema.contains("items") || schema.contains("prefixItems") || schema.contains("minItems") || schema.contains("maxItems")) {
            types = {"array"};
        } else if (schema.contains("minLength") || schema.contains("maxLength") || schema.contains("pattern") || schema.contains("format")) {
            types = {"string"};
        } else if (schema.contains("minimum") || schema.contains("maximum") || schema.contains("exclusiveMinimum") || schema.contains("exclusiveMaximum")) {
            types = {"number"};
        } else {
            leftover("");
            return "j-value";
        }
        std::vector<std::string> out;
        for (const std::string& type : types) {
            if (type == "object") out.push_back(object(schema, path, hint, depth, take));
            else if (type == "array") out.push_back(array(schema, path, hint, depth, take));
            else if (type == "string") out.push_back(string(schema, path, take));
            else if (type == "integer") out.push_back(integer(schema, path, take));
            else if (type == "number") out.push_back(number(schema, path, take));
            else if (type == "boolean") out.push_back("j-boolean");
            else if (type == "null") out.push_back("j-null");
            else refuse(path + "/type", fmt::format("unknown type '{}'", type));
        }
        leftover(types.size() == 1 ? fmt::format(" for type {}", types[0]) : "");
        if (out.size() == 1) return out[0];
        std::string alternatives = "( ";
        for (size_t i = 0; i < out.size(); ++i) alternatives += (i ? " | " : "") + out[i];
        return alternatives + " )";
    }

    // "type" beside const or enum (as Pydantic writes a Literal) changes
    // nothing when every value has that type; a value of another type could
    // never be valid, so it is refused rather than written.
    void type_beside_values(const std::string& path, const Json& values, const Json* type) {
        if (!type) return;
        const unsigned bits = declared_bits(Json{{"type", *type}});
        for (const Json& v : values)
            if (!(value_bits(v) & bits))
                refuse(path + "/type", fmt::format("value {} is not of type {}", v.dump(), type->dump()));
    }

    // oneOf is enforced as the alternation of its branches, which is exact
    // only when no value can match two of them: every pair of branches must be
    // provably disjoint (GRAMMAR.md "oneOf"). The proof is over what each
    // schema means (not only what its grammar writes), so a branch without
    // "type", const or enum counts as allowing every type.
    // The first pair of branches not proved disjoint, if any.
    std::optional<std::pair<size_t, size_t>> overlapping_pair(const Json& branches) {
        for (size_t i = 0; i < branches.size(); ++i)
            for (size_t j = i + 1; j < branches.size(); ++j)
                if (!disjoint_pair(branches[i], branches[j], 0)) return std::pair{i, j};
        return std::nullopt;
    }

    // The JSON types a value can have, with numbers split so that "integer"
    // is a subset of "number" (1.0 is an integer in JSON Schema).
    enum TypeBit : unsigned { t_null = 1, t_boolean = 2, t_integer = 4, t_fraction = 8, t_string = 16, t_array = 32, t_object = 64 };
    static constexpr unsigned t_any = 127;

    static unsigned type_bits(const std::string& type) {
        if (type == "null") return t_null;
        if (type == "boolean") return t_boolean;
        if (type == "integer") return t_integer;
        if (type == "number") return t_integer | t_fraction;
        if (type == "string") return t_string;
        if (type == "array") return t_array;
        if (type == "object") return t_object;
        return t_any;  // unknown: translate() refuses it
    }
    static unsigned value_bits(const Json& value) {
        if (value.is_null()) return t_null;
        if (value.is_boolean()) return t_boolean;
        if (value.is_number_integer()) return t_integer;
        if (value.is_number_float()) {
            const double v = value.get<double>();
            return std::isfinite(v) && v == std::floor(v) ? t_integer : t_fraction;
        }
        if (value.is_string()) return t_string;
        if (value.is_array()) return t_array;
        return t_object;
    }
    // The types "type" allows, t_any without one.
    static unsigned declared_bits(const Json& schema) {
        auto it = schema.find("type");
        if (it == schema.end()) return t_any;
        if (it->is_string()) return type_bits(it->get<std::string>());
        unsigned bits = 0;
        if (it->is_array())
            for (const auto& t : *it) bits |= t.is_string() ? type_bits(t.get<std::string>()) : t_any;
        return bits ? bits : t_any;
    }
    // const or enum's values, empty when the schema names none.
    static std::vector<Json> listed_values(const Json& schema) {
        if (auto it = schema.find("const"); it != schema.end()) return {*it};
        if (auto it = schema.find("enum"); it != schema.end() && it->is_array()) return {it->begin(), it->end()};
        return {};
    }
    // A subschema's $ref followed (a chain of at most max_schema_depth); null
    // where it does not resolve (translate() refuses that).
    const Json* follow(const Json* schema) {
        for (size_t hops = 0; schema->is_object() && schema->contains("$ref"); ++hops) {
            const Json& ref = (*schema)["$ref"];
            if (hops > max_schema_depth || !ref.is_string()) return nullptr;
            const std::string target = ref.get<std::string>();
            if (target.empty() || target[0] != '#') return nullptr;
            try {
                schema = &root_.at(Json::json_pointer(target.substr(1)));
            } catch (const std::exception&) {
                return nullptr;
            }
        }
        return schema;
    }

    // True only when no JSON value is valid under both a and b: their types
    // (from type, const, enum) share none; or their listed values share none;
    // or both are objects only and a property both require is provably
    // disjoint between them (the tagged union: a discriminator's const or
    // enum); or one is closed (additionalProperties false) and the other
    // requires a property it does not list. anyOf/oneOf branches are
    // disjoint from b when each one is. Anything else is "may overlap".
    bool disjoint_pair(const Json& a_in, const Json& b_in, size_t depth) {
        if (depth > max_schema_depth) return false;
        // $refs can make the branches' expansion exponential: a schema's
        // proofs share one bound, and "may overlap" past it
        if (++proof_comparisons_ > max_oneof_comparisons) proof_exhausted_ = true;
        if (proof_exhausted_) return false;
        const Json* a = follow(&a_in);
        const Json* b = follow(&b_in);
        if (!a || !b || !a->is_object() || !b->is_object()) return false;  // true (any value), or refused later
        for (const Json* one : {a, b}) {
            const Json* other = one == a ? b : a;
            for (const char* combinator : {"anyOf", "oneOf"})
                if (auto it = one->find(combinator); it != one->end() && it->is_array() && !it->empty()) {
                    for (const auto& branch : *it)
                        if (!disjoint_pair(branch, *other, depth + 1)) return false;
                    return true;
                }
            if (one->contains("allOf") || one->contains("not")) return false;
        }
        const std::vector<Json> a_values = listed_values(*a), b_values = listed_values(*b);
        const unsigned a_types = declared_bits(*a), b_types = declared_bits(*b);
        auto allowed = [](const std::vector<Json>& values, unsigned types, const Json& v) {
            if (!(value_bits(v) & types)) return false;
            return values.empty() || std::find(values.begin(), values.end(), v) != values.end();
        };
        if (!a_values.empty() || !b_values.empty()) {
            const bool a_listed = !a_values.empty();
            const std::vector<Json>& listed = a_listed ? a_values : b_values;
            const std::vector<Json>& other_values = a_listed ? b_values : a_values;
            const unsigned own_types = a_listed ? a_types : b_types, other_types = a_listed ? b_types : a_types;
            bool any_shared = false;
            for (const Json& v : listed)
                if ((value_bits(v) & own_types) && allowed(other_values, other_types, v)) any_shared = true;
            if (!any_shared) return true;
        }
        const unsigned common = a_types & b_types;
        if (common == 0) return true;
        if (common != t_object) return false;
        // Both objects only: a property both require, provably disjoint.
        auto names = [](const Json& schema, const char* key) {
            std::set<std::string> out;
            if (auto it = schema.find(key); it != schema.end() && it->is_array())
                for (const auto& n : *it)
                    if (n.is_string()) out.insert(n.get<std::string>());
            return out;
        };
        auto property = [](const Json& schema, const std::string& name) -> const Json* {
            auto it = schema.find("properties");
            if (it == schema.end() || !it->is_object() || !it->contains(name)) return nullptr;
            return &(*it)[name];
        };
        const std::set<std::string> a_required = names(*a, "required"), b_required = names(*b, "required");
        for (const std::string& name : a_required)
            if (b_required.count(name)) {
                const Json* pa = property(*a, name);
                const Json* pb = property(*b, name);
                if (pa && pb && disjoint_pair(*pa, *pb, depth + 1)) return true;
            }
        // Closed objects: a required name the other neither lists nor allows.
        auto closed = [](const Json& schema) {
            auto it = schema.find("additionalProperties");
            return it != schema.end() && it->is_boolean() && !it->get<bool>() && !schema.contains("patternProperties");
        };
        for (const auto& [one, other_required] : {std::pair{a, &b_required}, std::pair{b, &a_required}})
            if (closed(*one))
                for (const std::string& name : *other_required)
                    if (!property(*one, name)) return true;
        return false;
    }

    template <typename Take>
    std::string object(const Json&, const std::string& path, const std::string& hint, size_t depth, Take& take) {
        const Json* properties = take("properties");
        const Json* required = take("required");
        const Json* additional = take("additionalProperties");
        if (const Json* n = take("minProperties"); n && !(n->is_number_unsigned() && n->get<uint64_t>() == 0))
            refuse(path + "/minProperties", "keyword 'minProperties' cannot be enforced by a grammar");
        std::set<std::string> required_names;
        if (required) {
            if (!required->is_array()) refuse(path + "/required", "required must be an array of names");
            for (const auto& name : *required) {
                if (!name.is_string()) refuse(path + "/required", "required must be an array of names");
                required_names.insert(name.get<std::string>());
            }
        }
        if (properties && !properties->is_object()) refuse(path + "/properties", "properties must be an object");
        const bool closed = additional && additional->is_boolean() && !additional->get<bool>();
        if (!properties || properties->empty()) {
            for (const auto& name : required_names)
                refuse(path + "/required", fmt::format("required property '{}' has no schema in properties", name));
            if (closed) return "\"{}\"";
            if (!additional || (additional->is_boolean())) return "j-object";
            // a map: every value follows the schema
            const std::string value = translate(*additional, path + "/additionalProperties", hint + "-value", depth + 1);
            return new_rule(hint + "-map", "\"{\" ( j-string \":\" j-ws " + value + " ( \",\" j-ws j-string \":\" j-ws " + value + " )* )? \"}\"");
        }
        if (additional && !additional->is_boolean())
            refuse(path + "/additionalProperties", "a schema for additionalProperties beside properties cannot be enforced exactly (use false)");
        // The listed properties in their order; additionalProperties true
        // allows more, but writing only the listed ones is always valid.
        struct Property {
            std::string rule;
            bool required;
        };
        std::vector<Property> list;
        for (const auto& [name, property_schema] : properties->items()) {
            const std::string value = translate(property_schema, path + "/properties/" + pointer_escape(name), hint + "-" + name, depth + 1);
            list.push_back({new_rule(hint + "-" + name + "-kv", literal(Json(name).dump()) + " \":\" j-ws " + value),
                            required_names.count(name) > 0});
            required_names.erase(name);
        }
        if (!required_names.empty())
            refuse(path + "/required", fmt::format("required property '{}' has no schema in properties", *required_names.begin()));
        // rest[i]: properties i.. after at least one was written (each with its comma);
        // first[i]: properties i.. when none was written yet.
        const size_t n = list.size();
        std::vector<std::string> rest(n + 1), first(n + 1);
        rest[n] = "\"\"";
        first[n] = "\"\"";
        for (size_t i = n; i-- > 0;) {
            const std::string& kv = list[i].rule;
            const std::string rest_body = list[i].required ? "\",\" j-ws " + kv + " " + rest[i + 1]
                                                           : "( \",\" j-ws " + kv + " )? " + rest[i + 1];
            rest[i] = new_rule(hint + "-rest", rest_body);
            const std::string first_body = list[i].required ? kv + " " + rest[i + 1] : kv + " " + rest[i + 1] + " | " + first[i + 1];
            first[i] = new_rule(hint + "-first", first_body);
        }
        return "\"{\" " + first[0] + " \"}\"";
    }

    template <typename Take>
    std::string array(const Json&, const std::string& path, const std::string& hint, size_t depth, Take& take) {
        const Json* items = take("items");
        const Json* prefix = take("prefixItems");
        const Json* min_items = take("minItems");
        const Json* max_items = take("maxItems");
        if (const Json* unique = take("uniqueItems"); unique && !(unique->is_boolean() && !unique->get<bool>()))
            refuse(path + "/uniqueItems", "keyword 'uniqueItems' cannot be enforced by a grammar");
        auto count = [&](const Json* value, const char* key) -> long long {
            if (!value) return -1;
            if (!value->is_number_unsigned() || value->get<uint64_t>() > max_repetition_count)
                refuse(path + "/" + key, fmt::format("{} must be an integer in [0, {}]", key, max_repetition_count));
            return static_cast<long long>(value->get<uint64_t>());
        };
        const long long min = std::max(0LL, count(min_items, "minItems"));
        const long long max = count(max_items, "maxItems");
        if (max >= 0 && min > max) refuse(path, fmt::format("minItems {} is above maxItems {}", min, max));
        std::vector<std::string> fixed;
        if (prefix) {
            if (!prefix->is_array()) refuse(path + "/prefixItems", "prefixItems must be an array");
            for (size_t i = 0; i < prefix->size(); ++i)
                fixed.push_back(translate((*prefix)[i], fmt::format("{}/prefixItems/{}", path, i), fmt::format("{}-{}", hint, i), depth + 1));
        }
        const bool closed = items && items->is_boolean() && !items->get<bool>();
        const std::string item = closed ? "" : items ? translate(*items, path + "/items", hint + "-item", depth + 1) : "j-value";
        const long long fixed_count = static_cast<long long>(fixed.size());
        if (closed && min > fixed_count) refuse(path + "/minItems", "minItems is above the number of prefixItems with items false");
        // The most items (-1: no bound), and the positions written before the
        // repeating tail: the prefix items, or the required ones if more.
        const long long limit = closed ? (max >= 0 ? std::min(max, fixed_count) : fixed_count) : max;
        long long base = std::max(fixed_count, min);
        if (limit >= 0) base = std::min(base, limit);
        auto element = [&](long long i) { return i < fixed_count ? fixed[static_cast<size_t>(i)] : item; };
        if (base == 0) {
            if (limit == 0) return "\"[]\"";
            const std::string more = limit < 0 ? "( \",\" j-ws " + item + " )*"
                                              : limit > 1 ? fmt::format("( \",\" j-ws {} ){{0,{}}}", item, limit - 1) : "";
            return "\"[\" ( " + item + " " + more + " )? \"]\"";
        }
        // After position base-1: more repeating items, up to the limit.
        std::string after = limit < 0 ? "( \",\" j-ws " + item + " )*"
                          : limit > base ? fmt::format("( \",\" j-ws {} ){{0,{}}}", item, limit - base) : "\"\"";
        // Positions base-1 down to 0, each wrapping what follows it: a
        // position at or past minItems is optional, and so is all after it.
        for (long long i = base; i-- > 0;) {
            const std::string step = (i == 0 ? "" : "\",\" j-ws ") + element(i) + " " + after;
            after = new_rule(hint + "-items", i >= min ? "( " + step + " )?" : step);
        }
        return "\"[\" " + after + " \"]\"";
    }

    template <typename Take>
    std::string string(const Json&, const std::string& path, Take& take) {
        const Json* min_length = take("minLength");
        const Json* max_length = take("maxLength");
        const Json* pattern = take("pattern");
        const Json* format = take("format");
        if (format) {
            if (min_length || max_length || pattern) refuse(path + "/format", "format beside minLength, maxLength or pattern cannot be enforced exactly");
            if (!format->is_string()) refuse(path + "/format", "format must be a string");
            const std::string f = format->get<std::string>();
            if (f == "date" || f == "time" || f == "date-time" || f == "uuid") return "\"\\\"\" j-" + f + " \"\\\"\"";
            refuse(path + "/format", fmt::format("format '{}' is not supported (date, time, date-time, uuid are)", f));
        }
        if (pattern) {
            if (min_length || max_length) refuse(path + "/pattern", "pattern beside minLength or maxLength cannot be enforced exactly");
            if (!pattern->is_string()) refuse(path + "/pattern", "pattern must be a string");
            try {
                return "\"\\\"\" " + new_rule("pattern", regex_to_gbnf(pattern->get<std::string>())) + " \"\\\"\"";
            } catch (const Error& e) {
                refuse(path + "/pattern", e.what());
            }
        }
        if (!min_length && !max_length) return "j-string";
        auto count = [&](const Json* value, const char* key) -> long long {
            if (!value) return -1;
            if (!value->is_number_unsigned() || value->get<uint64_t>() > max_repetition_count)
                refuse(path + "/" + key, fmt::format("{} must be an integer in [0, {}]", key, max_repetition_count));
            return static_cast<long long>(value->get<uint64_t>());
        };
        const long long min = std::max(0LL, count(min_length, "minLength"));
        const long long max = count(max_length, "maxLength");
        if (max >= 0 && min > max) refuse(path, fmt::format("minLength {} is above maxLength {}", min, max));
        // j-char-bmp: one code point per character (no surrogate escapes), so counting is exact.
        return max >= 0 ? fmt::format("\"\\\"\" j-char-bmp{{{},{}}} \"\\\"\"", min, max)
                        : fmt::format("\"\\\"\" j-char-bmp{{{},}} \"\\\"\"", min);
    }

    template <typename Take>
    std::string integer(const Json&, const std::string& path, Take& take) {
        constexpr long long bound = 1000000000000000LL;  // 1e15: exact in a double, and in ajv's numbers
        long long lo = 0, hi = 0;
        bool has_lo = false, has_hi = false;
        auto read = [&](const char* key, long long& into, bool& has, bool lower, bool exclusive) {
            const Json* v = take(key);
            if (!v) return;
            if (!v->is_number()) refuse(path + "/" + key, fmt::format("{} must be a number", key));
            const double d = v->get<double>();
            if (d < -bound || d > bound) refuse(path + "/" + key, fmt::format("{} {} is outside ±1e15", key, d));
            // the tightest integer bound
            double b = lower ? std::ceil(d) : std::floor(d);
            if (exclusive && b == d) b += lower ? 1 : -1;
            const auto value = static_cast<long long>(b);
            if (!has || (lower ? value > into : value < into)) into = value;
            has = true;
        };
        read("minimum", lo, has_lo, true, false);
        read("exclusiveMinimum", lo, has_lo, true, true);
        read("maximum", hi, has_hi, false, false);
        read("exclusiveMaximum", hi, has_hi, false, true);
        if (const Json* m = take("multipleOf"); m && !(m->is_number() && m->get<double>() == 1))
            refuse(path + "/multipleOf", "keyword 'multipleOf' cannot be enforced by a grammar");
        if (!has_lo && !has_hi) return "j-integer";
        if (has_lo && has_hi && lo > hi) refuse(path, fmt::format("no integer lies in [{}, {}]", lo, hi));
        std::vector<std::string> parts;
        // negative part: [lo, min(hi, -1)] as "-" [max(-hi, 1), -lo]
        if (!has_lo || lo < 0) {
            const long long magnitude_lo = has_hi ? std::max(1LL, -hi) : 1;
            const long long magnitude_hi = has_lo ? -lo : -1;
            if (magnitude_hi < 0 || magnitude_lo <= magnitude_hi) parts.push_back("\"-\" " + natural_range(magnitude_lo, magnitude_hi));
        }
        if (!has_hi || hi >= 0) {
            const long long from = has_lo ? std::max(0LL, lo) : 0;
            parts.push_back(natural_range(from, has_hi ? hi : -1));
        }
        std::string out = "( ";
        for (size_t i = 0; i < parts.size(); ++i) out += (i ? " | " : "") + parts[i];
        return out + " )";
    }

    template <typename Take>
    std::string number(const Json&, const std::string& path, Take& take) {
        for (const char* key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
            if (take(key)) refuse(path + "/" + key, fmt::format("keyword '{}' on a number cannot be enforced exactly (use type integer)", key));
        return "j-number";
    }

    const Json& root_;
    std::map<std::string, std::string> rules_;
    size_t proof_comparisons_ = 0;  // disjoint_pair calls for all of the schema's oneOfs
    bool proof_exhausted_ = false;
    std::map<std::string, std::string> ref_rules_;
    size_t ref_depth_ = 0;
};

}  // namespace

std::string json_schema_to_gbnf(std::string_view schema_text) {
    if (schema_text.size() > max_schema_bytes)
        fail(WASTE_ERR_INVALID_ARGUMENT, "json schema: {} bytes (at most {})", schema_text.size(), max_schema_bytes);
    Json schema;
    try {
        schema = Json::parse(schema_text, nullptr, true, false);
    } catch (const Json::parse_error& e) {
        fail(WASTE_ERR_INVALID_ARGUMENT, "json schema: not JSON: byte {}: {}", e.byte, e.what());
    }
    if (const auto depth_probe = schema.dump(); depth_probe.size() > max_schema_bytes * 4)
        fail(WASTE_ERR_INVALID_ARGUMENT, "json schema: too large");
    return Translator(schema).run();
}

std::string any_json_gbnf() { return std::string("root ::= j-value\n") + json_primitives; }

}  // namespace waste::grammar
