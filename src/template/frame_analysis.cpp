// frame_analysis.cpp — see frame_analysis.h. Mirrors the order in which
// Jinja2's FrameSymbolVisitor meets names at one frame level: a set's value
// before its target, a for loop's iterable only, an if's test then its
// branches (where an assignment counts as a mention, not as a first store).
#include "template/frame_analysis.h"

#include <set>

namespace waste::tmpl {

namespace {

class FrameWalk {
public:
    std::vector<std::string> undefined_first;

    void load(const std::string& name) { seen_.insert(name); }
    void store(const std::string& name, bool unconditional) {
        if (seen_.insert(name).second && unconditional) undefined_first.push_back(name);
    }

    void loads_in(const Expr* expr) {
        if (!expr) return;
        if (expr->kind == ExprKind::name) load(expr->name);
        for (const auto& child : expr->children) loads_in(child.get());
        for (const auto& arg : expr->args) loads_in(arg.get());
        for (const auto& [key, arg] : expr->kwargs) loads_in(arg.get());
    }

    void walk(const Body& body, bool unconditional) {
        for (const auto& stmt : body) {
            switch (stmt->kind) {
            case StmtKind::print: loads_in(stmt->expr.get()); break;
            case StmtKind::set:
                loads_in(stmt->expr.get());
                if (!stmt->attribute.empty()) load(stmt->targets[0]);
                else
                    for (const auto& target : stmt->targets) store(target, unconditional);
                break;
            case StmtKind::set_block:
                for (const auto& filter : stmt->filters) loads_in(filter.get());
                store(stmt->targets[0], unconditional);
                break;
            case StmtKind::macro: store(stmt->text, unconditional); break;
            case StmtKind::call_block: loads_in(stmt->expr.get()); break;
            case StmtKind::filter_block:
                for (const auto& filter : stmt->filters) loads_in(filter.get());
                break;
            case StmtKind::for_: loads_in(stmt->expr.get()); break;
            case StmtKind::if_:
                for (size_t i = 0; i < stmt->conditions.size(); ++i) {
                    loads_in(stmt->conditions[i].get());
                    walk(stmt->bodies[i], false);
                }
                walk(stmt->else_body, false);
                break;
            default: break;
            }
        }
    }

private:
    std::set<std::string> seen_;
};

bool has_call(const Expr* expr) {
    if (!expr) return false;
    if (expr->kind == ExprKind::call) return true;
    for (const auto& child : expr->children)
        if (has_call(child.get())) return true;
    for (const auto& arg : expr->args)
        if (has_call(arg.get())) return true;
    for (const auto& [key, arg] : expr->kwargs)
        if (has_call(arg.get())) return true;
    return false;
}

}  // namespace

bool body_may_change_state(const Body& body) {
    for (const auto& stmt : body) {
        if (stmt->kind == StmtKind::set && !stmt->attribute.empty()) return true;
        if (stmt->kind == StmtKind::call_block) return true;
        if (has_call(stmt->expr.get()) || has_call(stmt->condition.get())) return true;
        for (const auto& condition : stmt->conditions)
            if (has_call(condition.get())) return true;
        for (const auto& filter : stmt->filters)
            if (has_call(filter.get())) return true;
        for (const auto& branch : stmt->bodies)
            if (body_may_change_state(branch)) return true;
        if (body_may_change_state(stmt->body) || body_may_change_state(stmt->else_body)) return true;
    }
    return false;
}

std::vector<std::string> names_undefined_at_start(const Body& root) {
    FrameWalk walk;
    walk.walk(root, true);
    return walk.undefined_first;
}

}  // namespace waste::tmpl
