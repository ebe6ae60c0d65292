#include "tool_call_plan.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <functional>
#include <set>

#include "api_error.h"

namespace waste_serve {

namespace {

using Ordered = nlohmann::ordered_json;

ApiError refuse(const std::string& message) { return bad_request("tool_choice cannot be enforced: " + message, "tool_choice"); }

// §1: attribute values escape & first, then ".
std::string attribute(const std::string& value) {
    std::string out;
    for (const char c : value) {
        if (c == '&') out += "&amp;";
        else if (c == '"') out += "&quot;";
        else out += c;
    }
    return out;
}

// A GBNF string literal of text (docs/GRAMMAR.md escapes).
std::string gbnf_literal(const std::string& text) {
    std::string out = "\"";
    for (const unsigned char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7f) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02X", c);
            out += hex;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

bool contains_ref(const Ordered& value) {
    if (value.is_object()) {
        if (value.contains("$ref")) return true;
        for (const auto& [key, child] : value.items())
            if (contains_ref(child)) return true;
    } else if (value.is_array()) {
        for (const auto& child : value)
            if (contains_ref(child)) return true;
    }
    return false;
}

const char* json_kind(const Ordered& v) {
    if (v.is_boolean()) return "boolean";
    if (v.is_null()) return "null";
    if (v.is_number()) return "number";
    if (v.is_string()) return "string";
    if (v.is_object()) return "object";
    return "array";
}

const std::set<std::string> kAnnotations = {"title", "description", "$schema", "$id", "$comment", "examples", "default",
                                            "deprecated", "readOnly", "writeOnly", "$anchor"};

struct Argument {
    std::string key;
    std::string type;  // §5.4's type attribute
    SharedGrammar value;
};

struct ToolPlan {
    std::string name;
    std::vector<Argument> arguments;
};

// What a string argument's schema allows: one of `values` (its const or
// enum), else any text of `low` to `high` characters (high: unbounded when
// UINT64_MAX). `written` says how the value is written, for a refusal.
struct StringSchema {
    std::vector<std::string> values;
    uint64_t low = 0, high = UINT64_MAX;
};

StringSchema read_string_schema(const Ordered& schema, const std::string& where, const std::string& written) {
    StringSchema out;
    if (const auto it = schema.find("const"); it != schema.end()) {
        if (!it->is_string()) throw refuse(where + "/const: a string argument's const must be a string");
        out.values.push_back(it->get<std::string>());
    }
    if (const auto it = schema.find("enum"); it != schema.end()) {
        if (!it->is_array() || it->empty()) throw refuse(where + "/enum: enum must be a non-empty array");
        for (const auto& v : *it) {
            if (!v.is_string()) throw refuse(where + "/enum: a string argument's enum must hold strings only");
            out.values.push_back(v.get<std::string>());
        }
    }
    for (const auto& [key, value] : schema.items())
        if (key != "type" && key != "enum" && key != "const" && key != "minLength" && key != "maxLength" && !kAnnotations.count(key))
            throw refuse(where + "/" + key + ": keyword '" + key + "' cannot be enforced on " + written);
    const auto bound = [&](const char* name, uint64_t fallback) -> uint64_t {
        const auto it = schema.find(name);
        if (it == schema.end()) return fallback;
        if (!it->is_number_unsigned() || it->get<uint64_t>() > 10000)
            throw refuse(where + "/" + name + ": " + name + " must be an integer from 0 to 10000 here");
        return it->get<uint64_t>();
    };
    out.low = bound("minLength", 0);
    out.high = bound("maxLength", UINT64_MAX);
    if (out.high != UINT64_MAX && out.high < out.low) throw refuse(where + ": maxLength is below minLength");
    return out;
}

std::string one_of_gbnf(const std::vector<std::string>& values) {
    std::string root = "root ::= ";
    for (size_t i = 0; i < values.size(); ++i) root += (i ? " | " : "") + gbnf_literal(values[i]);
    return root + "\n";
}

// The grammar of a string argument's raw text: §5.4 writes a string
// unquoted, so the JSON Schema translation (quoted) does not apply.
std::string raw_string_gbnf(const Ordered& schema, const std::string& where) {
    const StringSchema s = read_string_schema(schema, where, "an argument written as raw text");
    if (!s.values.empty()) return one_of_gbnf(s.values);
    // Any character: the value ends at the <|close|> marker, which text
    // cannot spell (Rule 1), so no character needs excluding.
    if (s.low == 0 && s.high == UINT64_MAX) return "root ::= .*\n";
    return "root ::= .{" + std::to_string(s.low) + "," + (s.high == UINT64_MAX ? std::string() : std::to_string(s.high)) + "}\n";
}

// The grammar the model picks a tool's name under: one of names, then the
// text `after` (empty: none). Over the engine's bounds (thousands of tools)
// is a refusal naming tool_choice.
SharedGrammar names_grammar(GrammarCache& grammars, const std::vector<std::string>& names, const std::string& after) {
    std::string gbnf = "root ::= (";
    for (size_t i = 0; i < names.size(); ++i) gbnf += (i ? " | " : "") + gbnf_literal(names[i]);
    gbnf += ")" + (after.empty() ? std::string() : " " + gbnf_literal(after)) + "\n";
    try {
        return grammars.get({WASTE_GRAMMAR_GBNF, gbnf});
    } catch (const GrammarRefused& refused) {
        throw refuse(std::string("the tools' names: ") + refused.what());
    }
}

// How a format writes a string argument's value: the GBNF of its text.
using StringGrammar = std::function<std::string(const Ordered& schema, const std::string& where)>;

Argument plan_argument(GrammarCache& grammars, const std::string& key, const Ordered& schema, const std::string& where,
                       const StringGrammar& string_gbnf) {
    if (!schema.is_object()) throw refuse(where + ": a property's schema must be an object");
    if (contains_ref(schema)) throw refuse(where + ": keyword '$ref' (an argument's schema is compiled on its own)");
    std::string type;
    if (const auto it = schema.find("type"); it != schema.end()) {
        if (!it->is_string()) throw refuse(where + "/type: one type is needed (an argument declares one type)");
        type = it->get<std::string>();
    } else {
        std::vector<Ordered> values;
        if (const auto c = schema.find("const"); c != schema.end()) values.push_back(*c);
        if (const auto e = schema.find("enum"); e != schema.end() && e->is_array()) values.insert(values.end(), e->begin(), e->end());
        for (const auto& v : values) {
            if (type.empty()) type = json_kind(v);
            else if (type != json_kind(v)) type = "-";
        }
        if (type.empty() || type == "-") throw refuse(where + ": keyword 'type' is needed (an argument declares one type)");
    }
    Argument argument{key, type, nullptr};
    if (type == "string") {
        try {
            argument.value = grammars.get({WASTE_GRAMMAR_GBNF, string_gbnf(schema, where)});
        } catch (const GrammarRefused& refused) {  // over the engine's bounds (a huge enum)
            throw refuse(where + ": " + refused.what());
        }
    } else if (type == "integer" || type == "number" || type == "boolean" || type == "null" || type == "object" || type == "array") {
        if (type == "integer") argument.type = "number";
        try {
            argument.value = grammars.get({WASTE_GRAMMAR_JSON_SCHEMA, schema.dump()});
        } catch (const GrammarRefused& refused) {
            throw refuse(where + ": " + refused.what());  // the engine's path is within the property's schema
        }
    } else {
        throw refuse(where + "/type: unknown type '" + type + "'");
    }
    return argument;
}

ToolPlan plan_tool(GrammarCache& grammars, const std::string& name, const Ordered* parameters,
                   const StringGrammar& string_gbnf = raw_string_gbnf) {
    ToolPlan plan{name, {}};
    const std::string where = "function '" + name + "' parameters";
    if (!parameters || parameters->is_null()) return plan;
    if (!parameters->is_object()) throw refuse(where + ": must be an object schema");
    for (const auto& [key, value] : parameters->items()) {
        if (key == "type") {
            if (value != "object") throw refuse(where + "/type: must be \"object\"");
        } else if (key != "properties" && key != "required" && key != "additionalProperties" && key != "$defs" &&
                   key != "definitions" && !kAnnotations.count(key)) {
            throw refuse(where + "/" + key + ": keyword '" + key + "' cannot be enforced on a call's arguments");
        }
    }
    const auto properties = parameters->find("properties");
    std::set<std::string> listed;
    if (properties != parameters->end()) {
        if (!properties->is_object()) throw refuse(where + "/properties: must be an object");
        for (const auto& [key, schema] : properties->items()) {
            listed.insert(key);
            plan.arguments.push_back(plan_argument(grammars, key, schema, where + "/properties/" + key, string_gbnf));
        }
    }
    if (const auto required = parameters->find("required"); required != parameters->end()) {
        if (!required->is_array()) throw refuse(where + "/required: must be an array of names");
        for (const auto& name : *required)
            if (!name.is_string() || !listed.count(name.get<std::string>()))
                throw refuse(where + "/required: required property " + name.dump() + " has no schema in properties");
    }
    return plan;
}

// Every declared tool: the request's `tools` and those a system message
// carries (lazy tool loading, §5.2); the flat and the nested shapes.
std::vector<std::pair<std::string, const Ordered*>> declared_tools(const Ordered& body) {
    std::vector<std::pair<std::string, const Ordered*>> tools;
    const auto add = [&](const Ordered& list) {
        if (!list.is_array()) return;
        for (const auto& entry : list) {
            if (!entry.is_object()) continue;
            const Ordered& function = entry.contains("function") && entry["function"].is_object() ? entry["function"] : entry;
            if (!function.contains("name") || !function["name"].is_string()) continue;
            const auto parameters = function.find("parameters");
            tools.emplace_back(function["name"].get<std::string>(), parameters == function.end() ? nullptr : &*parameters);
        }
    };
    if (const auto it = body.find("tools"); it != body.end()) add(*it);
    if (const auto messages = body.find("messages"); messages != body.end() && messages->is_array())
        for (const auto& m : *messages)
            if (m.is_object() && m.contains("tools")) add(m["tools"]);
    return tools;
}

// Appends a tool's arguments, then nothing: the reply ends after them.
void add_arguments(ConstrainedReply& reply, const ToolPlan& tool) {
    const Markup& m = reply.markup();
    for (const auto& argument : tool.arguments) {
        reply.add(Stage::force(m.tag(m.open, "argument key=\"" + attribute(argument.key) + "\" type=\"" + argument.type + "\"")));
        reply.add(Stage::held(argument.value, {m.close}, false));
        std::vector<int32_t> rest = m.plain("argument");  // after the <|close|> the value ended with
        rest.push_back(m.sep);
        reply.add(Stage::force(std::move(rest)));
    }
}

// --- A Jinja family's call (the renderer's call_syntax) -------------------

// One part of the family's call (waste_chat_render_json's call_syntax).
struct Part {
    std::string kind, text;
    std::vector<Part> argument;
};

std::vector<Part> parts_of(const nlohmann::json& list) {
    std::vector<Part> parts;
    for (const auto& entry : list) {
        Part part{entry.at("kind").get<std::string>(), entry.value("text", ""), {}};
        if (const auto it = entry.find("argument"); it != entry.end()) part.argument = parts_of(*it);
        parts.push_back(std::move(part));
    }
    return parts;
}

struct FamilyTool {
    std::string name;
    SharedGrammar arguments;                                    // the "arguments" part: the JSON object
    std::vector<std::pair<std::string, SharedGrammar>> each;   // "each_argument": key and value, in order
};

struct FamilyCall {
    std::vector<Part> parts;
    std::vector<FamilyTool> tools;
    SharedGrammar names;  // several tools: the names, and the text after the name part
};

// parts[at]'s id when it is a marker the tokenizer has as one special token, else -1.
int32_t special_at(const std::vector<Part>& parts, size_t at, const Markup& m) {
    return at < parts.size() && parts[at].kind == "marker" ? m.special(parts[at].text) : -1;
}

// What ends the name part parts[at]: the text parts right after it, joined
// (`after`), or, with none, the marker right after it (`end`, -1: none);
// `next` is the first part after those. Neither: the name is undelimited.
struct NameEnd {
    std::string after;
    int32_t end = -1;
    size_t next = 0;
};

NameEnd name_end(const std::vector<Part>& parts, size_t at, const Markup& m) {
    NameEnd out;
    for (out.next = at + 1; out.next < parts.size() && parts[out.next].kind == "text"; ++out.next) out.after += parts[out.next].text;
    if (out.after.empty() && (out.end = special_at(parts, out.next, m)) >= 0) ++out.next;
    return out;
}

// A name the family's call holds exactly: written bare into JSON strings,
// tags and headers, so only characters none of them escape or end on.
void check_family_name(const std::string& name, const std::string& family) {
    const bool plain = !name.empty() && name.size() <= 256 && std::all_of(name.begin(), name.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '_' || c == '-' || c == '.';
    });
    if (!plain)
        throw refuse("function name " + nlohmann::json(name).dump() + ": a call in " + family +
                     "'s format is held only for names of letters, digits, '_', '-' and '.' (1 to 256)");
}

// A string argument's text where the family reads a value back as JSON when
// it parses (GLM: the template writes strings bare, anything else as JSON):
// the grammar allows only text that reads back as that string. So no '<'
// (the value's end is found by a text search for its closing tag); not
// starting with a space, a digit, '-', a quote or a bracket (JSON, or JSON
// once trimmed); and true, false or null only as the start of a longer word
// (the next character not a space). minLength/maxLength count characters.
std::string read_back_string_gbnf(const Ordered& schema, const std::string& where, const std::string& family) {
    const StringSchema s = read_string_schema(schema, where, "a string argument in " + family + "'s format (written bare)");
    for (const std::string& v : s.values) {
        const bool json = !nlohmann::json::parse(v, nullptr, false).is_discarded();
        if (json || v.find('<') != std::string::npos || (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))))
            throw refuse(where + ": the value " + nlohmann::json(v).dump() + " would not read back as that string in " + family +
                         "'s format (it writes strings bare)");
    }
    if (!s.values.empty()) return one_of_gbnf(s.values);
    constexpr uint64_t unbounded = UINT64_MAX;
    const uint64_t low = s.low, high = s.high;
    // The branches of a value of `low` to `high` characters; `used`: those
    // its fixed start takes, `start`: that start as GBNF.
    std::vector<std::string> branches;
    const auto branch = [&](uint64_t used, const std::string& start) {
        if (high != unbounded && used > high) return;
        const uint64_t from = low > used ? low - used : 0;
        const std::string to = high == unbounded ? std::string() : std::to_string(high - used);
        branches.push_back(start + (high != unbounded && from == 0 && high == used ? std::string()
                                                                                     : " [^<]{" + std::to_string(from) + "," + to + "}"));
    };
    if (low == 0) branches.push_back("\"\"");
    branch(1, "[^ \\t\\r\\n\"\\[{0-9<tfn-]");
    for (const std::string word : {"true", "false", "null"}) {
        for (size_t k = 1; k < word.size(); ++k) {  // a proper prefix, then another character (or the end)
            if (k >= low && (high == unbounded || k <= high)) branches.push_back(gbnf_literal(word.substr(0, k)));
            branch(k + 1, gbnf_literal(word.substr(0, k)) + " [^" + word.substr(k, 1) + "<]");
        }
        branch(word.size() + 1, gbnf_literal(word) + " [^ \\t\\r\\n<]");
    }
    std::string root = "root ::= ";
    for (size_t i = 0; i < branches.size(); ++i) root += (i ? " | " : "") + branches[i];
    return root + "\n";
}

FamilyTool plan_family_tool(GrammarCache& grammars, const std::string& name, const Ordered* parameters, const std::vector<Part>& parts,
                            const std::string& family) {
    check_family_name(name, family);
    FamilyTool tool{name, nullptr, {}};
    const std::string where = "function '" + name + "' parameters";
    const bool whole = std::any_of(parts.begin(), parts.end(), [](const Part& p) { return p.kind == "arguments"; });
    if (whole) {
        if (parameters && !parameters->is_null() &&
            (!parameters->is_object() || (parameters->contains("type") && (*parameters)["type"] != "object")))
            throw refuse(where + ": must be an object schema (type \"object\")");
        const std::string schema = parameters && !parameters->is_null() ? parameters->dump() : std::string(R"({"type": "object"})");
        try {
            tool.arguments = grammars.get({WASTE_GRAMMAR_JSON_SCHEMA, schema});
        } catch (const GrammarRefused& refused) {
            throw refuse(where + ": " + refused.what());
        }
        return tool;
    }
    // each_argument: the XTML plan's checks of the schema, string values as the family writes them
    const StringGrammar bare = [&family](const Ordered& schema, const std::string& at) { return read_back_string_gbnf(schema, at, family); };
    for (auto& argument : plan_tool(grammars, name, parameters, bare).arguments) {
        if (argument.key.empty() || argument.key.find('<') != std::string::npos || argument.key.find('\n') != std::string::npos)
            throw refuse(where + "/properties: the key " + nlohmann::json(argument.key).dump() + " cannot be written in " + family +
                         "'s format");
        tool.each.emplace_back(argument.key, std::move(argument.value));
    }
    return tool;
}

void append(std::vector<int32_t>& to, const std::vector<int32_t>& ids) { to.insert(to.end(), ids.begin(), ids.end()); }

// A marker: its special id where the tokenizer has one, else its text (a
// marker the family reads from text).
std::vector<int32_t> marker_ids(const Markup& m, const std::string& marker) {
    const int32_t id = m.special(marker);
    return id >= 0 ? std::vector<int32_t>{id} : m.plain(marker);
}

// Appends the stages that write parts[from...] of the call to tool, or, with
// tool null, up to the name: the model picks it under a grammar of the
// tools' names (and the text after it), and that tool's stages follow.
void add_family_stages(ConstrainedReply& reply, const std::shared_ptr<const FamilyCall>& call, size_t from, const FamilyTool* tool) {
    const Markup& m = reply.markup();
    std::vector<int32_t> forced;
    const auto flush = [&] {
        if (!forced.empty()) reply.add(Stage::force(std::move(forced)));
        forced.clear();
    };
    // A value's grammar ends by itself, or at the marker after it (emitted as its end).
    const auto value_stage = [&](const SharedGrammar& grammar, const std::vector<Part>& parts, size_t& i) {
        flush();
        std::vector<int32_t> ends;
        if (const int32_t end = special_at(parts, i + 1, m); end >= 0) {
            ends.push_back(end);
            ++i;
        }
        reply.add(Stage::held(grammar, std::move(ends), false));
    };
    const auto& parts = call->parts;
    for (size_t i = from; i < parts.size(); ++i) {
        const Part& part = parts[i];
        if (part.kind == "marker") {
            append(forced, marker_ids(m, part.text));
        } else if (part.kind == "text") {
            append(forced, m.plain(part.text));
        } else if (part.kind == "name" && tool) {
            append(forced, m.plain(tool->name));
        } else if (part.kind == "name") {
            flush();
            // Text after the name ends its grammar; a marker right after it is its end.
            const NameEnd delimiter = name_end(parts, i, m);
            std::vector<int32_t> ends;
            if (delimiter.end >= 0) ends.push_back(delimiter.end);
            Stage pick = Stage::held(call->names, ends, false);
            pick.on_done = [call, delimiter](ConstrainedReply& r, const std::vector<int32_t>& taken) {
                const std::vector<int32_t> chosen(taken.begin(), taken.end() - (delimiter.end >= 0 ? 1 : 0));
                const std::string text = r.markup().text(chosen);
                for (const auto& candidate : call->tools)
                    if (text == candidate.name + delimiter.after) return add_family_stages(r, call, delimiter.next, &candidate);
                throw std::runtime_error("the grammar of tool names let through '" + text + "'");
            };
            reply.add(std::move(pick));
            return;
        } else if (part.kind == "arguments") {
            value_stage(tool->arguments, parts, i);
        } else if (part.kind == "each_argument") {
            for (const auto& [key, value] : tool->each) {
                for (size_t j = 0; j < part.argument.size(); ++j) {
                    const Part& a = part.argument[j];
                    if (a.kind == "marker") append(forced, marker_ids(m, a.text));
                    else if (a.kind == "text") append(forced, m.plain(a.text));
                    else if (a.kind == "key") append(forced, m.plain(key));
                    else if (a.kind == "value") value_stage(value, part.argument, j);
                }
            }
        }
    }
    flush();
}

}  // namespace

namespace {

// A Jinja family's call: think (if the prompt opened it), then the call as
// the family's call_syntax writes it, the tool's arguments held to its
// parameters; the reply ends after the call's last part.
std::unique_ptr<ConstrainedReply> constrain_family_call(const Ordered& ordered, const std::string& wanted, bool named,
                                                        GrammarCache& grammars, const waste_tokenizer* tokenizer,
                                                        const nlohmann::json& rendered, const std::string& channel,
                                                        std::vector<int32_t> think_ends) {
    const std::string family = rendered.value("reply_format", "");
    const auto syntax = rendered.find("call_syntax");
    if (syntax == rendered.end() || !syntax->is_object())
        throw refuse("this model's reply format (" + family + ") writes no tool calls the server can hold a reply to; send \"auto\" or \"none\"");
    auto call = std::make_shared<FamilyCall>();
    call->parts = parts_of(syntax->at("call"));
    for (const auto& [name, parameters] : declared_tools(ordered)) {
        if (named && name != wanted) continue;
        call->tools.push_back(plan_family_tool(grammars, name, parameters, call->parts, family));
        if (named) break;
    }
    if (call->tools.empty())
        throw bad_request(named ? "tool_choice names '" + wanted + "', which is not in tools" : "tool_choice \"required\" needs tools",
                          "tool_choice");

    auto markup = std::make_shared<Markup>(tokenizer, false);
    const auto add_structure = [&](const std::vector<Part>& parts, const auto& self) -> void {
        for (const Part& part : parts) {
            if (const int32_t id = part.kind == "marker" ? markup->special(part.text) : -1; id >= 0) markup->structure.push_back(id);
            self(part.argument, self);
        }
    };
    add_structure(call->parts, add_structure);
    const std::string think_close = syntax->value("think_close", "");
    if (channel == "think") {
        markup->think_exit = think_close.empty() ? -1 : markup->special(think_close);
        if (markup->think_exit < 0)
            throw refuse("the prompt leaves reasoning open, and this model's tokenizer has no " +
                         (think_close.empty() ? std::string("marker that ends it") : think_close + " token"));
        for (const auto& masked : syntax->value("think_masked", std::vector<std::string>{}))
            if (const int32_t id = markup->special(masked); id >= 0) markup->think_masked.push_back(id);
    }
    if (call->tools.size() > 1) {
        const auto at = std::find_if(call->parts.begin(), call->parts.end(), [](const Part& p) { return p.kind == "name"; });
        const NameEnd delimiter = at == call->parts.end() ? NameEnd{} : name_end(call->parts, at - call->parts.begin(), *markup);
        if (at == call->parts.end() || (delimiter.after.empty() && delimiter.end < 0))
            throw refuse("this model's call format does not delimit a tool's name; name the function in tool_choice");
        std::vector<std::string> names;
        for (const auto& tool : call->tools) names.push_back(tool.name);
        call->names = names_grammar(grammars, names, delimiter.after);
    }
    auto reply = std::make_unique<ConstrainedReply>(std::move(markup), std::move(think_ends));
    if (channel == "think") reply->add(Stage::think());
    add_family_stages(*reply, call, 0, call->tools.size() == 1 ? &call->tools[0] : nullptr);
    return reply;
}

}  // namespace

std::unique_ptr<ConstrainedReply> constrain_tool_call(const nlohmann::json& request, const std::string& body, GrammarCache& grammars,
                                                      const waste_tokenizer* tokenizer, const nlohmann::json& rendered,
                                                      const std::string& channel, std::vector<int32_t> think_ends) {
    const std::string format = rendered.value("format", "");
    const auto choice = request.find("tool_choice");
    if (choice == request.end()) return nullptr;
    const bool required = choice->is_string() && *choice == "required";
    const bool named = choice->is_object();
    if (!required && !named) return nullptr;
    // The renderer checked that the object names a function, nested
    // ({"function": {"name": X}}) or flat ({"name": X}), as a string.
    std::string wanted;
    if (named) {
        const auto function = choice->find("function");
        const nlohmann::json& holder = function != choice->end() && function->is_object() ? *function : *choice;
        wanted = holder.value("name", "");
    }
    // chat.json: the renderer refuses a demanded call. A Jinja template's
    // family writes calls its own way (Hermes JSON, K2's sections, harmony,
    // ...): its call syntax says how; a demand the server cannot keep is a
    // 400, never a silent "auto".
    if (format != "xtml" && format != "jinja") return nullptr;
    const Ordered ordered = Ordered::parse(body);
    if (format == "jinja")
        return constrain_family_call(ordered, wanted, named, grammars, tokenizer, rendered, channel, std::move(think_ends));
    std::vector<ToolPlan> tools;
    for (const auto& [name, parameters] : declared_tools(ordered)) {
        if (named && name != wanted) continue;
        tools.push_back(plan_tool(grammars, name, parameters));
        if (named) break;
    }
    if (tools.empty())
        throw bad_request(named ? "tool_choice names '" + wanted + "', which is not in tools"
                                : "tool_choice \"required\" needs tools",
                          "tool_choice");

    auto markup = std::make_shared<const Markup>(tokenizer, true);
    const Markup& m = *markup;
    auto reply = std::make_unique<ConstrainedReply>(markup, std::move(think_ends));
    std::vector<int32_t> opening;
    const auto append = [&](const std::vector<int32_t>& ids) { opening.insert(opening.end(), ids.begin(), ids.end()); };
    if (channel == "think") {
        reply->add(Stage::think());
        append(m.plain("think"));  // after the model's <|close|>
        opening.push_back(m.sep);
        append(m.tag(m.open, "response"));
    }
    append(m.tag(m.close, "response"));
    append(m.tag(m.open, "tools"));
    opening.push_back(m.open);
    if (tools.size() == 1) {
        append(m.plain("call tool=\"" + attribute(tools[0].name) + "\" index=\"1\""));
        opening.push_back(m.sep);
        reply->add(Stage::force(std::move(opening)));
        add_arguments(*reply, tools[0]);
        return reply;
    }
    // Several tools: the model picks the name under a grammar of them all,
    // then that tool's arguments follow.
    append(m.plain("call tool=\""));
    reply->add(Stage::force(std::move(opening)));
    std::vector<std::string> names;
    for (const auto& tool : tools) names.push_back(attribute(tool.name));
    Stage pick = Stage::held(names_grammar(grammars, names, "\" index=\"1\""), {m.sep}, false);
    pick.on_done = [tools](ConstrainedReply& r, const std::vector<int32_t>& taken) {
        const std::string text = r.markup().text(std::vector<int32_t>(taken.begin(), taken.end() - 1));  // less the <|sep|>
        for (const auto& tool : tools)
            if (text == attribute(tool.name) + "\" index=\"1\"") return add_arguments(r, tool);
        throw std::runtime_error("the grammar of tool names let through '" + text + "'");
    };
    reply->add(std::move(pick));
    return reply;
}

}  // namespace waste_serve
