// jinja_reference.cpp — see jinja_reference.h.
#include "jinja_reference.h"

#include <fstream>

#include <gtest/gtest.h>

#include "template/template.h"
#include "test_support.h"

namespace waste_test {

std::map<std::string, nlohmann::ordered_json> render_with_jinja2(const std::vector<JinjaJob>& jobs) {
    TempDir dir;
    nlohmann::ordered_json request;
    request["now"] = jinja_reference_now;
    request["jobs"] = nlohmann::ordered_json::array();
    for (const auto& job : jobs)
        request["jobs"].push_back({{"id", job.id}, {"template", job.template_source}, {"context", job.context}});
    {
        std::ofstream out(dir / "jobs.json", std::ios::binary);
        out << request.dump();
    }
    const std::string script = (source_dir() / "tools" / "jinja-reference" / "render.py").string();
    std::string output;
    const std::string command = "/usr/bin/python3 '" + script + "' < '" + (dir / "jobs.json").string() + "' > '" +
                                (dir / "results.json").string() + "'";
    const int rc = run_command(command, &output);
    if (rc != 0) {
        ADD_FAILURE() << "the Jinja2 reference failed (is python3-jinja2 installed? scripts/setup.sh installs it): " << output;
        return {};
    }
    const auto results = nlohmann::ordered_json::parse(read_file(dir / "results.json"));
    std::map<std::string, nlohmann::ordered_json> by_id;
    for (const auto& [id, result] : results.items()) by_id[id] = result;
    return by_id;
}

std::string compare_with_jinja2(const JinjaJob& job, const nlohmann::ordered_json& reference) {
    namespace tmpl = waste::tmpl;
    std::string ours;
    std::string error;
    bool raised = false;
    waste_status status = WASTE_OK;
    try {
        const auto parsed = tmpl::Template::parse(job.template_source, job.id);
        tmpl::RenderOptions options;
        options.now = static_cast<std::time_t>(jinja_reference_now);
        ours = tmpl::render(parsed, tmpl::from_json(job.context), options);
    } catch (const tmpl::TemplateError& e) {
        error = e.raised() ? e.message() : e.what();
        raised = e.raised();
        status = e.status();
        if (error.empty()) error = "(empty message)";
    }
    if (reference.contains("output")) {
        const std::string expected = reference["output"].get<std::string>();
        if (!error.empty()) return "Jinja2 rendered, WASTE failed: " + error + "\nJinja2 rendered:\n" + expected;
        if (ours == expected) return "";
        size_t at = 0;
        while (at < ours.size() && at < expected.size() && ours[at] == expected[at]) ++at;
        const size_t from = at > 80 ? at - 80 : 0;
        return "outputs differ at byte " + std::to_string(at) + " (WASTE " + std::to_string(ours.size()) + " bytes, Jinja2 " +
               std::to_string(expected.size()) + ")\nWASTE:  ..." + ours.substr(from, 200) + "\nJinja2: ..." +
               expected.substr(from, 200);
    }
    const auto& expected = reference["error"];
    if (error.empty()) return "Jinja2 failed (" + expected["type"].get<std::string>() + ": " + expected["message"].get<std::string>() +
                              "), WASTE rendered:\n" + ours;
    if (expected["raised"].get<bool>() != raised)
        return "Jinja2 failed with " + expected["type"].get<std::string>() + ": " + expected["message"].get<std::string>() +
               "; WASTE failed with: " + error;
    // Failing because the engine lacks something is not failing alike.
    if (status == WASTE_ERR_UNSUPPORTED || status == WASTE_ERR_INTERNAL)
        return "Jinja2 failed with " + expected["type"].get<std::string>() + ": " + expected["message"].get<std::string>() +
               (status == WASTE_ERR_UNSUPPORTED ? "; WASTE failed as unsupported: " : "; WASTE failed as internal: ") + error;
    if (raised && expected["message"].get<std::string>() != error)
        return "raise_exception messages differ: Jinja2 '" + expected["message"].get<std::string>() + "', WASTE '" + error + "'";
    return "";
}

}  // namespace waste_test
