// memory_cgroup.h — a child memory cgroup with a hard limit and no swap, to
// run a command the way a user's container holds it (the kernel's OOM killer
// ends it if it goes over), and to read afterwards whether that happened.
//
// cgroup v1 where the memory controller is mounted writable: a child of this
// process's own memory cgroup (memory.limit_in_bytes, memory.memsw.limit_in_
// bytes when swap is accounted, swappiness 0). Else cgroup v2: a child of the
// cgroup2 mount's root, whose subtree_control must (be able to) hold memory
// (a non-root cgroup with processes cannot delegate it); memory.max and
// memory.swap.max 0. Else none, with the reason, and the caller skips.
//
// What a cgroup charges beyond the process's resident set: the page cache of
// the files it reads (reclaimed at the limit, never a cause to kill) and
// kernel memory: page tables, thread stacks, io_uring rings, slab. Pages
// written before the child joined stay charged where they were.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace waste_test {

class MemoryCgroup {
public:
    // nullptr and *why when no writable memory controller is found.
    static std::unique_ptr<MemoryCgroup> create(uint64_t limit_bytes, std::string* why);
    ~MemoryCgroup();  // removes the cgroup (its processes must have ended)
    MemoryCgroup(const MemoryCgroup&) = delete;
    MemoryCgroup& operator=(const MemoryCgroup&) = delete;

    const std::string& path() const { return path_; }
    std::string procs_file() const { return path_ + "/cgroup.procs"; }
    int version() const { return version_; }
    uint64_t limit_bytes() const { return limit_; }
    // The most it charged (v1 memory.max_usage_in_bytes, v2 memory.peak; 0
    // where the kernel has no such file): resident set, page cache and kernel
    // memory together.
    uint64_t peak_bytes() const;
    uint64_t oom_kills() const;   // processes the OOM killer ended in it
    uint64_t limit_hits() const;  // times a charge hit the limit (and reclaimed)

private:
    MemoryCgroup(std::string path, int version, uint64_t limit) : path_(std::move(path)), version_(version), limit_(limit) {}
    uint64_t read_number(const std::string& file) const;
    uint64_t read_key(const std::string& file, const std::string& key) const;

    std::string path_;
    int version_ = 0;
    uint64_t limit_ = 0;
};

}  // namespace waste_test
