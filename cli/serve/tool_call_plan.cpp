#include "tool_call_plan.h"

#include <cstdio>
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

// The grammar of a string argument's raw text: §5.4 writes a string
// unquoted, so the JSON Schema translation (quoted) does not apply.
std::string raw_string_gbnf(const Ordered& schema, const std::string& where) {
    std::vector<std::string> values;
    if (const auto it = schema.find("const"); it != schema.end()) {
        if (!it->is_string()) throw refuse(where + "/const: a string argument's const must be a string");
        values.push_back(it->get<std::string>());
    }
    if (const auto it = schema.find("enum"); it != schema.end()) {
        if (!it->is_array() || it->empty()) throw refuse(where + "/enum: enum must be a non-empty array");
        for (const auto& v : *it) {
            if (!v.is_string()) throw refuse(where + "/enum: a string argument's enum must hold strings only");
            values.push_back(v.get<std::string>());
        }
    }
    for (const auto& [key, value] : schema.items())
        if (key != "type" && key != "enum" && key != "const" && key != "minLength" && key != "maxLength" && !kAnnotations.count(key))
            throw refuse(where + "/" + key + ": keyword '" + key + "' cannot be enforced on an argument written as raw text");
    if (!values.empty()) {
        std::string root = "root ::= ";
        for (size_t i = 0; i < values.size(); ++i) root += (i ? " | " : "") + gbnf_literal(values[i]);
        return root + "\n";
    }
    const auto bound = [&](const char* name, uint64_t fallback) -> uint64_t {
        const auto it = schema.find(name);
        if (it == schema.end()) return fallback;
        if (!it->is_number_unsigned() || it->get<uint64_t>() > 10000)
            throw refuse(where + "/" + name + ": " + name + " must be an integer from 0 to 10000 here");
        return it->get<uint64_t>();
    };
    const uint64_t low = bound("minLength", 0);
    const uint64_t high = bound("maxLength", UINT64_MAX);
    if (high != UINT64_MAX && high < low) throw refuse(where + ": maxLength is below minLength");
    // Any character: the value ends at the <|close|> marker, which text
    // cannot spell (Rule 1), so no character needs excluding.
    if (low == 0 && high == UINT64_MAX) return "root ::= .*\n";
    return "root ::= .{" + std::to_string(low) + "," + (high == UINT64_MAX ? std::string() : std::to_string(high)) + "}\n";
}

Argument plan_argument(GrammarCache& grammars, const std::string& key, const Ordered& schema, const std::string& where) {
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
            argument.value = grammars.get({WASTE_GRAMMAR_GBNF, raw_string_gbnf(schema, where)});
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

ToolPlan plan_tool(GrammarCache& grammars, const std::string& name, const Ordered* parameters) {
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
            plan.arguments.push_back(plan_argument(grammars, key, schema, where + "/properties/" + key));
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

}  // namespace

std::unique_ptr<ConstrainedReply> constrain_tool_call(const nlohmann::json& request, const std::string& body, GrammarCache& grammars,
                                                      const waste_tokenizer* tokenizer, const std::string& format,
                                                      const std::string& channel, std::vector<int32_t> think_ends) {
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
    // family writes calls its own way (Hermes JSON, DSML, harmony, ...),
    // read back by the reply parsers but not yet held to by a grammar: a
    // demand the server cannot keep is a 400, never a silent "auto".
    if (format == "jinja")
        throw refuse("a demanded call is held to a grammar for K3's XTML only, not yet through this model's Jinja chat "
                     "template; send \"auto\" or \"none\"");
    if (format != "xtml") return nullptr;

    const Ordered ordered = Ordered::parse(body);
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
    std::string names = "root ::= (";
    for (size_t i = 0; i < tools.size(); ++i) names += (i ? " | " : "") + gbnf_literal(attribute(tools[i].name));
    names += ") " + gbnf_literal("\" index=\"1\"") + "\n";
    SharedGrammar names_grammar;
    try {
        names_grammar = grammars.get({WASTE_GRAMMAR_GBNF, names});
    } catch (const GrammarRefused& refused) {  // over the engine's bounds (thousands of tools)
        throw refuse(std::string("the tools' names: ") + refused.what());
    }
    Stage pick = Stage::held(std::move(names_grammar), {m.sep}, false);
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
