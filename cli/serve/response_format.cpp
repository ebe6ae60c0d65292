#include "response_format.h"

#include "api_error.h"
#include "waste/waste.h"

namespace waste_serve {

namespace {

using Ordered = nlohmann::ordered_json;

// Python's truthiness, as §8's reference reads the three shapes: null,
// false, 0, "" and empty containers do not count as a schema.
bool truthy(const Ordered* value) {
    if (!value || value->is_null()) return false;
    if (value->is_boolean()) return value->get<bool>();
    if (value->is_number()) return value->get<double>() != 0;
    if (value->is_string() || value->is_object() || value->is_array()) return !value->empty();
    return true;
}

const Ordered* member(const Ordered& object, const char* name) {
    if (!object.is_object()) return nullptr;
    const auto it = object.find(name);
    return it == object.end() ? nullptr : &*it;
}

// An object with any members: the JSON Schema translation of a bare
// "object" type (a map whose values are any JSON value).
constexpr const char* kAnyObjectSchema = R"({"type":"object"})";

}  // namespace

std::optional<OutputGrammar> read_response_format(const nlohmann::json& request, const std::string& body) {
    const auto format = request.find("response_format");
    if (format == request.end() || format->is_null()) return std::nullopt;
    // The renderer has already refused a response_format that is not an
    // object, or whose type is not a string; what is left is the type.
    const auto type = format->find("type");
    if (type == format->end() || type->is_null()) return std::nullopt;
    if (!type->is_string()) throw bad_request("'response_format.type' must be a string", "response_format");
    const std::string& name = type->get_ref<const std::string&>();
    if (name == "text") return std::nullopt;
    if (name == "json_object") return OutputGrammar{WASTE_GRAMMAR_JSON_SCHEMA, kAnyObjectSchema};
    if (name != "json_schema")
        throw bad_request("'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", not \"" + name + "\"",
                          "response_format");

    const Ordered ordered = Ordered::parse(body);  // valid: the body parsed already
    const Ordered* wrapper = member(ordered.at("response_format"), "json_schema");
    if (!wrapper || wrapper->is_null())
        throw bad_request("'response_format' of type \"json_schema\" needs 'json_schema': {\"name\", \"schema\"}", "response_format");
    const Ordered* schema = member(*wrapper, "schema");
    if (!truthy(schema)) schema = member(*wrapper, "json_schema");
    if (!truthy(schema)) schema = wrapper;
    return OutputGrammar{WASTE_GRAMMAR_JSON_SCHEMA, schema->dump()};
}

}  // namespace waste_serve
