#include "memory_cgroup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "test_support.h"

namespace waste_test {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> split(const std::string& text, char separator) {
    std::vector<std::string> parts;
    std::istringstream in(text);
    for (std::string part; std::getline(in, part, separator);) parts.push_back(part);
    return parts;
}

bool contains(const std::vector<std::string>& words, const std::string& word) {
    for (const std::string& w : words)
        if (w == word) return true;
    return false;
}

struct Mount {
    std::string root, point;
};

// The mount of a cgroup filesystem: fstype "cgroup" with `option` among its
// super options (v1), or fstype "cgroup2" (option empty).
bool find_mount(const std::string& fstype, const std::string& option, Mount* mount) {
    std::ifstream in("/proc/self/mountinfo");
    for (std::string line; std::getline(in, line);) {
        const std::vector<std::string> fields = split(line, ' ');
        size_t dash = 0;
        while (dash < fields.size() && fields[dash] != "-") ++dash;
        if (dash < 5 || dash + 3 >= fields.size() || fields[dash + 1] != fstype) continue;
        if (!option.empty() && !contains(split(fields[dash + 3], ','), option)) continue;
        *mount = {fields[3], fields[4]};
        return true;
    }
    return false;
}

// This process's cgroup in the hierarchy holding `controller` (v1), or in
// the unified hierarchy (controller empty): "/a/b".
std::string own_cgroup(const std::string& controller) {
    std::ifstream in("/proc/self/cgroup");
    for (std::string line; std::getline(in, line);) {
        const auto first = line.find(':'), second = line.find(':', first + 1);
        if (first == std::string::npos || second == std::string::npos) continue;
        const std::string controllers = line.substr(first + 1, second - first - 1);
        if (controller.empty() ? controllers.empty() : contains(split(controllers, ','), controller))
            return line.substr(second + 1);
    }
    return "/";
}

bool write_text(const std::string& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    out.flush();
    return static_cast<bool>(out);
}

std::string unique_name() {
    static std::atomic<int> counter{0};
    return "waste-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

}  // namespace

std::unique_ptr<MemoryCgroup> MemoryCgroup::create(uint64_t limit_bytes, std::string* why) {
    const std::string limit = std::to_string(limit_bytes);
    std::string reasons;
    Mount mount;
    if (find_mount("cgroup", "memory", &mount)) {
        std::string own = own_cgroup("memory");
        if (mount.root != "/" && own.rfind(mount.root, 0) == 0) own = own.substr(mount.root.size());
        const std::string path = mount.point + (own == "/" ? "" : own) + "/" + unique_name();
        if (::mkdir(path.c_str(), 0755) == 0) {
            std::unique_ptr<MemoryCgroup> group(new MemoryCgroup(path, 1, limit_bytes));
            // the memory limit first: memsw may never be below it
            if (write_text(path + "/memory.limit_in_bytes", limit) &&
                (!fs::exists(path + "/memory.memsw.limit_in_bytes") || write_text(path + "/memory.memsw.limit_in_bytes", limit))) {
                write_text(path + "/memory.swappiness", "0");  // no swap where it is not accounted either
                return group;
            }
            reasons += "cgroup v1: cannot set the limits in " + path + "; ";
        } else {
            reasons += "cgroup v1: cannot create " + path + "; ";
        }
    } else {
        reasons += "cgroup v1: no memory controller mounted; ";
    }
    if (find_mount("cgroup2", "", &mount)) {
        const std::string base = mount.point;
        if (read_file(base + "/cgroup.controllers").find("memory") == std::string::npos) {
            reasons += "cgroup v2: the memory controller is not available at " + base;
        } else if (read_file(base + "/cgroup.subtree_control").find("memory") == std::string::npos &&
                   !write_text(base + "/cgroup.subtree_control", "+memory")) {
            reasons += "cgroup v2: cannot enable the memory controller in " + base + "/cgroup.subtree_control";
        } else {
            const std::string path = base + "/" + unique_name();
            if (::mkdir(path.c_str(), 0755) != 0) {
                reasons += "cgroup v2: cannot create " + path;
            } else {
                std::unique_ptr<MemoryCgroup> group(new MemoryCgroup(path, 2, limit_bytes));
                if (write_text(path + "/memory.max", limit) &&
                    (!fs::exists(path + "/memory.swap.max") || write_text(path + "/memory.swap.max", "0")))
                    return group;
                reasons += "cgroup v2: cannot set the limits in " + path;
            }
        }
    } else {
        reasons += "cgroup v2: not mounted";
    }
    *why = "no writable memory cgroup (" + reasons + ")";
    return nullptr;
}

MemoryCgroup::~MemoryCgroup() {
    // The last process may take a moment to leave after it was reaped.
    for (int attempt = 0; attempt < 100 && ::rmdir(path_.c_str()) != 0; ++attempt)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

uint64_t MemoryCgroup::read_number(const std::string& file) const {
    const std::string text = read_file(path_ + "/" + file);
    return text.empty() || text[0] < '0' || text[0] > '9' ? 0 : std::stoull(text);
}

uint64_t MemoryCgroup::read_key(const std::string& file, const std::string& key) const {
    std::istringstream in(read_file(path_ + "/" + file));
    std::string name;
    uint64_t value = 0;
    while (in >> name >> value)
        if (name == key) return value;
    return 0;
}

uint64_t MemoryCgroup::peak_bytes() const {
    return version_ == 1 ? read_number("memory.max_usage_in_bytes") : read_number("memory.peak");
}

uint64_t MemoryCgroup::oom_kills() const {
    return version_ == 1 ? read_key("memory.oom_control", "oom_kill") : read_key("memory.events", "oom_kill");
}

uint64_t MemoryCgroup::limit_hits() const {
    return version_ == 1 ? read_number("memory.failcnt") : read_key("memory.events", "max");
}

}  // namespace waste_test
