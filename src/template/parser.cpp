// parser.cpp — see parser.h. A recursive-descent parser in the shape of
// Jinja2's own grammar (parse_condexpr > or > and > not > compare > math1 >
// concat > math2 > pow > unary > primary/postfix/filters).
#include "template/parser.h"

#include <charconv>
#include <cstdlib>
#include <initializer_list>
#include <set>

#include "platform/error.h"
#include "template/filters.h"
#include "template/frame_analysis.h"

namespace waste::tmpl {

namespace {

// Deeper nesting than this (expressions or blocks) is refused: real
// templates nest under 20, and each level costs stack in parser and evaluator.
constexpr int max_nesting = 128;
// Real templates' deepest expression is a chain of ~40 '+' (DeepSeek-V3.2's tools header).
constexpr int max_expression_height = 256;

class Parser {
public:
    Parser(std::vector<Token> tokens, const std::string& name) : tokens_(std::move(tokens)), name_(name) {}

    Body parse_body(const std::vector<std::string>& end_tags);

private:
    const Token& current() const { return tokens_[pos_]; }
    const Token& peek(size_t ahead = 1) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
    void next() { if (pos_ + 1 < tokens_.size()) ++pos_; }
    [[noreturn]] void error(const std::string& message, int line = 0) const {
        fail(WASTE_ERR_INVALID_ARGUMENT, "template {} line {}: {}", name_, line ? line : current().line, message);
    }
    bool is_op(const char* op) const { return current().type == TokenType::operator_ && current().text == op; }
    bool is_name(const char* name) const { return current().type == TokenType::name && current().text == name; }
    void expect_op(const char* op) {
        if (!is_op(op)) error(fmt::format("expected '{}', found {}", op, describe(current())));
        next();
    }
    std::string expect_name() {
        if (current().type != TokenType::name) error(fmt::format("expected a name, found {}", describe(current())));
        std::string name = current().text;
        next();
        return name;
    }
    void expect_block_end() {
        if (current().type != TokenType::block_end) error(fmt::format("expected the end of the statement, found {}", describe(current())));
        next();
    }
    static std::string describe(const Token& token) {
        switch (token.type) {
        case TokenType::end_of_input: return "the end of the template";
        case TokenType::block_end: return "'%}'";
        case TokenType::variable_end: return "'}}'";
        case TokenType::data: return "template text";
        default: return "'" + token.text + "'";
        }
    }
    struct Depth {
        Parser& parser;
        explicit Depth(Parser& p) : parser(p) {
            if (++parser.depth_ > max_nesting) parser.error(fmt::format("nested deeper than {}", max_nesting));
        }
        ~Depth() { --parser.depth_; }
    };
    // Every child goes through attach(), which keeps each node's height:
    // chains such as a.b.c... or 1+1+1... build deep trees without
    // recursing here, and evaluating or freeing them recurses.
    void grow(Expr& parent, const Expr& child) {
        parent.height = std::max(parent.height, child.height + 1);
        if (parent.height > max_expression_height)
            error(fmt::format("an expression nested deeper than {}", max_expression_height), parent.line);
    }
    void attach(Expr& parent, ExprPtr child) {
        if (child) grow(parent, *child);
        parent.children.push_back(std::move(child));
    }
    ExprPtr make(ExprKind kind, int line) {
        auto expr = std::make_unique<Expr>();
        expr->kind = kind;
        expr->line = line;
        return expr;
    }

    StmtPtr parse_statement();
    StmtPtr parse_if(int line);
    StmtPtr parse_for(int line);
    StmtPtr parse_set(int line);
    StmtPtr parse_macro(int line);
    StmtPtr parse_call_block(int line);
    StmtPtr parse_filter_block(int line);
    void parse_params(Stmt& stmt);
    void parse_filter_chain(Stmt& stmt);
    // A macro's or call block's body: which of caller/varargs/kwargs it reads.
    void parse_function_body(Stmt& stmt, const char* end_tag);
    // The rest of a block statement: '%}', the body, then {% end_tag %}.
    void parse_block_body(Stmt& stmt, const char* end_tag);
    std::vector<std::string> parse_targets();

    ExprPtr parse_expression() { Depth d(*this); return parse_conditional(); }
    ExprPtr parse_tuple_or_expression();
    ExprPtr parse_conditional();
    // One left-associative level: operands joined by any of `operators`
    // (keywords such as "or", or operator symbols).
    ExprPtr parse_binary(ExprPtr (Parser::*operand)(), std::initializer_list<const char*> operators, bool keywords);
    ExprPtr parse_or() { return parse_binary(&Parser::parse_and, {"or"}, true); }
    ExprPtr parse_and() { return parse_binary(&Parser::parse_not, {"and"}, true); }
    ExprPtr parse_not();
    ExprPtr parse_compare();
    ExprPtr parse_math1() { return parse_binary(&Parser::parse_concat, {"+", "-"}, false); }
    ExprPtr parse_concat() { return parse_binary(&Parser::parse_math2, {"~"}, false); }
    ExprPtr parse_math2() { return parse_binary(&Parser::parse_pow, {"*", "/", "//", "%"}, false); }
    ExprPtr parse_pow() { return parse_binary(&Parser::parse_filtered_unary, {"**"}, false); }
    ExprPtr parse_filtered_unary() { return parse_unary(true); }
    ExprPtr parse_unary(bool with_filter);
    ExprPtr parse_primary();
    ExprPtr parse_postfix(ExprPtr node);
    ExprPtr parse_filter_expr(ExprPtr node);
    std::string parse_dotted_name();  // a filter or test name: a or a.b
    ExprPtr parse_filter(ExprPtr node);
    ExprPtr parse_test(ExprPtr node);
    void parse_call_args(Expr& expr);
    ExprPtr parse_call(ExprPtr callee);
    // Elements up to `close` (consumed), separated by commas, a trailing comma allowed.
    template <typename Element>
    void parse_comma_separated(const char* close, Element element) {
        bool first = true;
        while (!is_op(close)) {
            if (!first) expect_op(",");
            first = false;
            if (is_op(close)) break;
            element();
        }
        next();
    }
    ExprPtr parse_subscript(ExprPtr node);
    void mark_name(const std::string& name) {
        for (auto* used : name_usage_) used->insert(name);
    }

    std::vector<Token> tokens_;
    const std::string& name_;
    size_t pos_ = 0;
    int depth_ = 0;
    bool soft_ = false;  // inside an if: unknown filters fail only when run (as in Jinja2)
    int loop_depth_ = 0;  // for bodies around this point (break/continue need one)
    bool in_capture_ = false;  // inside a block set or filter block (and no loop of its own)
    std::vector<std::set<std::string>*> name_usage_;  // macros being parsed: which names their bodies read
};

Body Parser::parse_body(const std::vector<std::string>& end_tags) {
    Depth d(*this);
    Body body;
    while (true) {
        const Token& token = current();
        if (token.type == TokenType::end_of_input) {
            if (!end_tags.empty()) error(fmt::format("unexpected end of template, expected '{}'", end_tags.front()));
            return body;
        }
        if (token.type == TokenType::data) {
            auto stmt = std::make_unique<Stmt>();
            stmt->kind = StmtKind::text;
            stmt->line = token.line;
            stmt->text = token.text;
            body.push_back(std::move(stmt));
            next();
            continue;
        }
        if (token.type == TokenType::variable_begin) {
            auto stmt = std::make_unique<Stmt>();
            stmt->kind = StmtKind::print;
            stmt->line = token.line;
            next();
            stmt->expr = parse_tuple_or_expression();
            if (current().type != TokenType::variable_end) error(fmt::format("expected '}}}}', found {}", describe(current())));
            next();
            body.push_back(std::move(stmt));
            continue;
        }
        if (token.type != TokenType::block_begin) error(fmt::format("unexpected {}", describe(token)));
        const Token& keyword = peek();
        if (keyword.type == TokenType::name) {
            for (const auto& end : end_tags)
                if (keyword.text == end) return body;  // the caller consumes the end tag
        }
        body.push_back(parse_statement());
    }
}

StmtPtr Parser::parse_statement() {
    next();  // {%
    const int line = current().line;
    if (current().type != TokenType::name) error(fmt::format("expected a statement name, found {}", describe(current())));
    const std::string keyword = current().text;
    next();
    if (keyword == "if") return parse_if(line);
    if (keyword == "for") return parse_for(line);
    if (keyword == "set") return parse_set(line);
    if (keyword == "macro") return parse_macro(line);
    if (keyword == "call") return parse_call_block(line);
    if (keyword == "filter") return parse_filter_block(line);
    if (keyword == "break" || keyword == "continue") {
        if (in_capture_) error(fmt::format("'{}' inside a block set or filter block is not supported", keyword), line);
        if (loop_depth_ == 0) error(fmt::format("'{}' outside a loop", keyword), line);
        auto stmt = std::make_unique<Stmt>();
        stmt->kind = keyword == "break" ? StmtKind::break_ : StmtKind::continue_;
        stmt->line = line;
        expect_block_end();
        return stmt;
    }
    error(fmt::format("unsupported or unknown statement '{}'", keyword), line);
}

StmtPtr Parser::parse_if(int line) {
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = StmtKind::if_;
    stmt->line = line;
    const bool outer_soft = soft_;
    soft_ = true;
    stmt->conditions.push_back(parse_tuple_or_expression());
    expect_block_end();
    while (true) {
        stmt->bodies.push_back(parse_body({"elif", "else", "endif"}));
        next();  // {%
        const std::string tag = current().text;
        next();
        if (tag == "elif") {
            stmt->conditions.push_back(parse_tuple_or_expression());
            expect_block_end();
            continue;
        }
        if (tag == "else") {
            expect_block_end();
            stmt->else_body = parse_body({"endif"});
            next();
            next();
        }
        expect_block_end();
        break;
    }
    soft_ = outer_soft;
    return stmt;
}

std::vector<std::string> Parser::parse_targets() {
    std::vector<std::string> targets;
    const bool parenthesised = is_op("(");
    if (parenthesised) next();
    while (true) {
        targets.push_back(expect_name());
        if (!is_op(",")) break;
        next();
        if (current().type != TokenType::name) break;  // trailing comma
    }
    if (parenthesised) expect_op(")");
    return targets;
}

StmtPtr Parser::parse_for(int line) {
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = StmtKind::for_;
    stmt->line = line;
    stmt->targets = parse_targets();
    if (!is_name("in")) error(fmt::format("expected 'in' in a for statement, found {}", describe(current())));
    next();
    // Jinja2 parses the iterable with parse_tuple(with_condexpr=False): an
    // `if` after it is the loop filter, not an inline if.
    {
        Depth d(*this);
        stmt->expr = parse_or();
        if (is_op(",")) error("a tuple as a for iterable is not supported");
    }
    const bool outer_soft = soft_;
    soft_ = false;
    if (is_name("if")) {
        next();
        stmt->condition = parse_expression();
    }
    if (is_name("recursive")) error("recursive for loops are not supported");
    expect_block_end();
    ++loop_depth_;
    const bool outer_capture = in_capture_;
    in_capture_ = false;
    stmt->body = parse_body({"endfor", "else"});
    in_capture_ = outer_capture;
    --loop_depth_;
    if (stmt->condition && body_may_change_state(stmt->body))
        error("a loop filter ('for ... if') over a body that calls or sets a namespace attribute is not supported "
              "(Jinja2 filters lazily, item by item)", line);
    next();
    if (current().text == "else") {
        next();
        expect_block_end();
        stmt->else_body = parse_body({"endfor"});
        next();
    }
    next();  // endfor
    expect_block_end();
    soft_ = outer_soft;
    return stmt;
}

StmtPtr Parser::parse_set(int line) {
    auto stmt = std::make_unique<Stmt>();
    stmt->line = line;
    const std::string first = expect_name();
    if (is_op(".")) {
        next();
        stmt->kind = StmtKind::set;
        stmt->targets = {first};
        stmt->attribute = expect_name();
        expect_op("=");
        stmt->expr = parse_tuple_or_expression();
        expect_block_end();
        return stmt;
    }
    stmt->targets = {first};
    while (is_op(",")) {
        next();
        if (current().type != TokenType::name) break;
        stmt->targets.push_back(expect_name());
    }
    if (is_op("=")) {
        next();
        stmt->kind = StmtKind::set;
        stmt->expr = parse_tuple_or_expression();
        expect_block_end();
        return stmt;
    }
    if (stmt->targets.size() != 1) error("a block set takes one name");
    stmt->kind = StmtKind::set_block;
    parse_filter_chain(*stmt);
    parse_block_body(*stmt, "endset");
    return stmt;
}

void Parser::parse_filter_chain(Stmt& stmt) {
    while (is_op("|")) {
        next();
        stmt.filters.push_back(parse_filter(nullptr));
    }
}

void Parser::parse_block_body(Stmt& stmt, const char* end_tag) {
    expect_block_end();
    const bool outer_capture = in_capture_;
    in_capture_ = true;
    stmt.body = parse_body({end_tag});
    in_capture_ = outer_capture;
    next();  // {%
    next();  // the end tag
    expect_block_end();
}

void Parser::parse_params(Stmt& stmt) {
    expect_op("(");
    while (!is_op(")")) {
        if (!stmt.params.empty()) expect_op(",");
        if (is_op(")")) break;
        stmt.params.push_back(expect_name());
        if (is_op("=")) {
            next();
            stmt.defaults.push_back(parse_expression());
        } else {
            if (!stmt.defaults.empty() && stmt.defaults.back()) error("a parameter without default follows one with a default");
            stmt.defaults.push_back(nullptr);
        }
    }
    next();
}

StmtPtr Parser::parse_macro(int line) {
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = StmtKind::macro;
    stmt->line = line;
    stmt->text = expect_name();
    parse_params(*stmt);
    parse_function_body(*stmt, "endmacro");
    return stmt;
}

void Parser::parse_function_body(Stmt& stmt, const char* end_tag) {
    expect_block_end();
    std::set<std::string> used;
    name_usage_.push_back(&used);
    const bool outer_soft = soft_;
    const int outer_loop_depth = loop_depth_;
    soft_ = false;
    loop_depth_ = 0;  // a macro body is a function: a loop around its definition is not its loop
    const bool outer_capture = in_capture_;
    in_capture_ = false;
    stmt.body = parse_body({end_tag});
    in_capture_ = outer_capture;
    soft_ = outer_soft;
    loop_depth_ = outer_loop_depth;
    name_usage_.pop_back();
    next();  // {%
    next();  // the end tag
    if (current().type == TokenType::name) next();  // {% endmacro name %}
    expect_block_end();
    stmt.uses_caller = used.count("caller") > 0;
    stmt.uses_varargs = used.count("varargs") > 0;
    stmt.uses_kwargs = used.count("kwargs") > 0;
}

StmtPtr Parser::parse_call_block(int line) {
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = StmtKind::call_block;
    stmt->line = line;
    if (is_op("(")) parse_params(*stmt);
    stmt->expr = parse_expression();
    if (stmt->expr->kind != ExprKind::call) error("expected a call after {% call %}", line);
    parse_function_body(*stmt, "endcall");
    return stmt;
}

StmtPtr Parser::parse_filter_block(int line) {
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = StmtKind::filter_block;
    stmt->line = line;
    stmt->filters.push_back(parse_filter(nullptr));
    parse_filter_chain(*stmt);
    parse_block_body(*stmt, "endfilter");
    return stmt;
}

ExprPtr Parser::parse_tuple_or_expression() {
    const int line = current().line;
    auto first = parse_expression();
    if (!is_op(",")) return first;
    auto tuple = make(ExprKind::list, line);
    tuple->is_tuple = true;
    attach(*tuple, std::move(first));
    while (is_op(",")) {
        next();
        if (current().type == TokenType::block_end || current().type == TokenType::variable_end || is_op(")")) break;
        attach(*tuple, parse_expression());
    }
    return tuple;
}

ExprPtr Parser::parse_conditional() {
    auto node = parse_or();
    while (is_name("if")) {
        const int line = current().line;
        next();
        const bool outer_soft = soft_;
        soft_ = true;
        auto condition = parse_or();
        ExprPtr otherwise;
        if (is_name("else")) {
            next();
            Depth d(*this);
            otherwise = parse_conditional();
        }
        soft_ = outer_soft;
        auto cond = make(ExprKind::conditional, line);
        attach(*cond, std::move(condition));
        attach(*cond, std::move(node));
        attach(*cond, std::move(otherwise));
        node = std::move(cond);
    }
    return node;
}

ExprPtr Parser::parse_not() {
    if (is_name("not")) {
        Depth d(*this);
        auto unary = make(ExprKind::unary, current().line);
        next();
        unary->name = "not";
        attach(*unary, parse_not());
        return unary;
    }
    return parse_compare();
}

ExprPtr Parser::parse_compare() {
    const int line = current().line;
    auto first = parse_math1();
    ExprPtr compare;
    while (true) {
        std::string op;
        if (current().type == TokenType::operator_ &&
            (current().text == "==" || current().text == "!=" || current().text == "<" || current().text == "<=" ||
             current().text == ">" || current().text == ">=")) {
            op = current().text;
            next();
        } else if (is_name("in")) {
            op = "in";
            next();
        } else if (is_name("not") && peek().type == TokenType::name && peek().text == "in") {
            op = "not in";
            next();
            next();
        } else {
            break;
        }
        if (!compare) {
            compare = make(ExprKind::compare, line);
            attach(*compare, std::move(first));
        }
        compare->operators.push_back(op);
        attach(*compare, parse_math1());
    }
    return compare ? std::move(compare) : std::move(first);
}

ExprPtr Parser::parse_binary(ExprPtr (Parser::*operand)(), std::initializer_list<const char*> operators, bool keywords) {
    auto node = (this->*operand)();
    while (true) {
        const char* matched = nullptr;
        for (const char* op : operators)
            if (keywords ? is_name(op) : is_op(op)) matched = op;
        if (!matched) return node;
        auto binary = make(ExprKind::binary, current().line);
        binary->name = matched;
        next();
        attach(*binary, std::move(node));
        attach(*binary, (this->*operand)());
        node = std::move(binary);
    }
}

ExprPtr Parser::parse_unary(bool with_filter) {
    Depth d(*this);
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
        node = make(ExprKind::unary, current().line);
        node->name = current().text;
        next();
        attach(*node, parse_unary(false));
    } else {
        node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
}

ExprPtr Parser::parse_primary() {
    const Token& token = current();
    const int line = token.line;
    if (token.type == TokenType::name) {
        const std::string& name = token.text;
        auto constant = make(ExprKind::constant, line);
        if (name == "true" || name == "True") constant->value = Value::boolean(true);
        else if (name == "false" || name == "False") constant->value = Value::boolean(false);
        else if (name == "none" || name == "None") constant->value = Value::none();
        else {
            auto expr = make(ExprKind::name, line);
            expr->name = name;
            mark_name(name);
            next();
            return expr;
        }
        next();
        return constant;
    }
    if (token.type == TokenType::string) {
        std::string text = token.text;
        next();
        while (current().type == TokenType::string) {  // adjacent literals concatenate
            text += current().text;
            next();
        }
        auto constant = make(ExprKind::constant, line);
        constant->value = Value::string(std::move(text));
        return constant;
    }
    if (token.type == TokenType::integer) {
        int64_t value = 0;
        const auto& text = token.text;
        const auto result = std::from_chars(text.data(), text.data() + text.size(), value);
        if (result.ec != std::errc() || result.ptr != text.data() + text.size()) error(fmt::format("integer literal {} is out of range", text));
        auto constant = make(ExprKind::constant, line);
        constant->value = Value::integer(value);
        next();
        return constant;
    }
    if (token.type == TokenType::floating) {
        auto constant = make(ExprKind::constant, line);
        constant->value = Value::floating(std::strtod(token.text.c_str(), nullptr));
        next();
        return constant;
    }
    if (is_op("(")) {
        next();
        if (is_op(")")) {
            next();
            auto tuple = make(ExprKind::list, line);
            tuple->is_tuple = true;
            return tuple;
        }
        auto first = parse_expression();
        if (is_op(")")) {
            next();
            return first;
        }
        auto tuple = make(ExprKind::list, line);
        tuple->is_tuple = true;
        attach(*tuple, std::move(first));
        while (is_op(",")) {
            next();
            if (is_op(")")) break;
            attach(*tuple, parse_expression());
        }
        expect_op(")");
        return tuple;
    }
    if (is_op("[")) {
        next();
        auto list = make(ExprKind::list, line);
        parse_comma_separated("]", [&] { attach(*list, parse_expression()); });
        return list;
    }
    if (is_op("{")) {
        next();
        auto dict = make(ExprKind::dict, line);
        parse_comma_separated("}", [&] {
            attach(*dict, parse_expression());
            expect_op(":");
            attach(*dict, parse_expression());
        });
        return dict;
    }
    error(fmt::format("unexpected {} in an expression", describe(token)));
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
    while (true) {
        if (is_op(".")) {
            const int line = current().line;
            next();
            if (current().type == TokenType::name) {
                auto attr = make(ExprKind::getattr, line);
                attr->name = current().text;
                next();
                attach(*attr, std::move(node));
                node = std::move(attr);
            } else if (current().type == TokenType::integer) {
                auto item = make(ExprKind::getitem, line);
                auto index = make(ExprKind::constant, line);
                index->value = Value::integer(std::strtoll(current().text.c_str(), nullptr, 10));
                next();
                attach(*item, std::move(node));
                attach(*item, std::move(index));
                node = std::move(item);
            } else {
                error(fmt::format("expected an attribute name after '.', found {}", describe(current())));
            }
        } else if (is_op("[")) {
            node = parse_subscript(std::move(node));
        } else if (is_op("(")) {
            node = parse_call(std::move(node));
        } else {
            return node;
        }
    }
}

ExprPtr Parser::parse_subscript(ExprPtr node) {
    const int line = current().line;
    next();  // [
    ExprPtr parts[3];
    int part = 0;
    bool is_slice = false;
    while (!is_op("]")) {
        if (is_op(":")) {
            is_slice = true;
            if (++part > 2) error("a slice takes at most three parts");
            next();
            continue;
        }
        if (parts[part]) error(fmt::format("unexpected {} in a subscript", describe(current())));
        parts[part] = parse_expression();
        if (is_op(",")) error("tuple subscripts are not supported");
    }
    next();
    if (!is_slice) {
        if (!parts[0]) error("empty subscript", line);
        auto item = make(ExprKind::getitem, line);
        attach(*item, std::move(node));
        attach(*item, std::move(parts[0]));
        return item;
    }
    auto slice = make(ExprKind::slice, line);
    attach(*slice, std::move(node));
    for (auto& p : parts) attach(*slice, std::move(p));
    return slice;
}

ExprPtr Parser::parse_call(ExprPtr callee) {
    auto call = make(ExprKind::call, current().line);
    attach(*call, std::move(callee));
    parse_call_args(*call);
    return call;
}

void Parser::parse_call_args(Expr& expr) {
    expect_op("(");
    while (!is_op(")")) {
        if (!expr.args.empty() || !expr.kwargs.empty()) expect_op(",");
        if (is_op(")")) break;
        if (is_op("*") || is_op("**")) error("*args and **kwargs in calls are not supported");
        if (current().type == TokenType::name && peek().type == TokenType::operator_ && peek().text == "=") {
            std::string key = current().text;
            next();
            next();
            expr.kwargs.emplace_back(std::move(key), parse_expression());
            grow(expr, *expr.kwargs.back().second);
        } else {
            if (!expr.kwargs.empty()) error("a positional argument follows a keyword argument");
            expr.args.push_back(parse_expression());
            grow(expr, *expr.args.back());
        }
    }
    next();
}

std::string Parser::parse_dotted_name() {
    std::string name = expect_name();
    while (is_op(".")) {
        next();
        name += "." + expect_name();
    }
    return name;
}

ExprPtr Parser::parse_filter(ExprPtr node) {
    const int line = current().line;
    auto filter = make(ExprKind::filter, line);
    filter->name = parse_dotted_name();
    filter->known = is_known_filter(filter->name);
    if (!filter->known && !soft_) error(fmt::format("no filter named '{}'", filter->name), line);
    if (node) attach(*filter, std::move(node));
    else attach(*filter, nullptr);
    if (is_op("(")) parse_call_args(*filter);
    return filter;
}

ExprPtr Parser::parse_test(ExprPtr node) {
    const int line = current().line;
    auto test = make(ExprKind::test, line);
    if (is_name("not")) {
        test->negated = true;
        next();
    }
    test->name = parse_dotted_name();
    test->known = is_known_test(test->name);
    if (!test->known && !soft_) error(fmt::format("no test named '{}'", test->name), line);
    attach(*test, std::move(node));
    if (is_op("(")) {
        parse_call_args(*test);
    } else if ((current().type == TokenType::name || current().type == TokenType::string || current().type == TokenType::integer ||
                current().type == TokenType::floating || is_op("[") || is_op("{")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
        if (is_name("is")) error("tests cannot be chained with 'is'");
        auto argument = parse_postfix(parse_primary());
        grow(*test, *argument);
        test->args.push_back(std::move(argument));
    }
    return test;
}

ExprPtr Parser::parse_filter_expr(ExprPtr node) {
    while (true) {
        if (is_op("|")) {
            next();
            node = parse_filter(std::move(node));
        } else if (is_name("is")) {
            next();
            node = parse_test(std::move(node));
        } else if (is_op("(")) {
            node = parse_call(std::move(node));
        } else {
            return node;
        }
    }
}

}  // namespace

ParsedTemplate parse(std::vector<Token> tokens, const std::string& template_name) {
    Parser parser(std::move(tokens), template_name);
    ParsedTemplate parsed;
    parsed.name = template_name;
    parsed.body = parser.parse_body({});
    parsed.undefined_at_start = names_undefined_at_start(parsed.body);
    return parsed;
}

}  // namespace waste::tmpl
