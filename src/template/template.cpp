// template.cpp — see template.h: the entry points and how failures become
// TemplateError naming the template and line.
#include "template/template.h"

#include "template/ast.h"
#include "template/evaluator.h"
#include "template/lexer.h"
#include "template/parser.h"

namespace waste::tmpl {

Template Template::parse(std::string_view source, std::string name) {
    Template result;
    try {
        result.parsed_ = std::make_shared<const ParsedTemplate>(tmpl::parse(tokenize(source, name), name));
    } catch (const Error& error) {
        throw TemplateError(error.status(), error.what(), error.what(), false);
    }
    return result;
}

const std::string& Template::name() const { return parsed_->name; }

std::string render(const Template& template_, const Value& context, const RenderOptions& options) {
    Evaluator evaluator(template_.parsed(), options);
    try {
        return evaluator.run(context);
    } catch (const RaisedByTemplate& raised) {
        throw TemplateError(WASTE_ERR_INVALID_ARGUMENT,
                            fmt::format("template {} line {}: raise_exception: {}", template_.name(), evaluator.line(), raised.message),
                            raised.message, true);
    } catch (const TemplateError&) {
        throw;
    } catch (const Error& error) {
        throw TemplateError(error.status(), fmt::format("template {} line {}: {}", template_.name(), evaluator.line(), error.what()),
                            error.what(), false);
    }
}

}  // namespace waste::tmpl
