#include "test_support.h"

#include <gtest/gtest.h>

#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace waste_test {

fs::path source_dir() { return fs::path(WASTE_SOURCE_DIR); }
fs::path shared_dir() { return source_dir().parent_path() / "shared"; }
fs::path fixture(const std::string& name) { return shared_dir() / "fixtures" / "upstream" / name; }
fs::path cli_path() { return fs::path(WASTE_CLI_PATH); }

TempDir::TempDir() {
    std::random_device random;
    const fs::path base = fs::temp_directory_path();
    for (int attempt = 0; attempt < 100; ++attempt) {
        fs::path candidate = base / ("waste-test-" + std::to_string(random()));
        if (fs::create_directory(candidate)) {
            path_ = candidate;
            return;
        }
    }
    throw std::runtime_error("cannot create a temporary directory");
}

TempDir::~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
}

void copy_container(const fs::path& from, const fs::path& dest) {
    fs::create_directories(dest);
    for (const auto& entry : fs::directory_iterator(from)) {
        fs::path target = dest / entry.path().filename();
        fs::copy_file(entry.path(), target, fs::copy_options::overwrite_existing);
        fs::permissions(target, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::add);
    }
}

std::unique_ptr<SynthCheckpoint> hf_synth(const std::string& args) {
    auto s = std::make_unique<SynthCheckpoint>();
    s->dir = s->tmp / "ckpt";
    s->expected = s->tmp / "expected.safetensors";
    const std::string command = "cd '" + (source_dir() / "python").string() +
                                "' && /usr/bin/python3 -m waste_ref.hf_synth '" + s->dir.string() + "' " + args +
                                " --expected-f32 '" + s->expected.string() + "'";
    std::string output;
    const int rc = run_command(command, &output);
    EXPECT_EQ(rc, 0) << command << "\n" << output;
    return s;
}

int run_command(const std::string& command, std::string* output) {
    FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
    if (!pipe) return -1;
    std::string text;
    char buffer[4096];
    size_t got;
    while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) text.append(buffer, got);
    const int status = ::pclose(pipe);
    if (output) *output = text;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

SmallFilesystem::SmallFilesystem(uint64_t bytes) {
    const std::string options = "size=" + std::to_string(bytes) + ",mode=0755";
    if (::mount("tmpfs", dir_.path().c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) == 0) {
        mounted_ = true;
    } else {
        why_ = "cannot mount a " + std::to_string(bytes) + "-byte tmpfs on " + dir_.path().string() + ": " +
               std::strerror(errno) + " (a real disk-full test needs root / CAP_SYS_ADMIN)";
    }
}

SmallFilesystem::~SmallFilesystem() {
    if (mounted_) ::umount2(dir_.path().c_str(), MNT_DETACH);
}

void SmallFilesystem::resize(uint64_t bytes) {
    const std::string options = "size=" + std::to_string(bytes);
    if (::mount("tmpfs", dir_.path().c_str(), "tmpfs", MS_REMOUNT | MS_NOSUID | MS_NODEV, options.c_str()) != 0)
        throw std::runtime_error("cannot resize the tmpfs on " + dir_.path().string() + ": " + std::strerror(errno));
}

void SmallFilesystem::fill() {
    const int fd = ::open((path() / "filler").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("cannot create the filler: " + std::string(std::strerror(errno)));
    const std::string block(4096, 'f');
    for (size_t size = block.size(); size >= 1;) {  // whole pages, then what is left of the last one
        if (::write(fd, block.data(), size) < 0) {
            if (errno != ENOSPC) break;
            size /= 2;
        }
    }
    ::close(fd);
}

void SmallFilesystem::unfill() { fs::remove(path() / "filler"); }

uint64_t SmallFilesystem::free_bytes() const {
    struct statvfs info {};
    if (::statvfs(path().c_str(), &info) != 0) return 0;
    return static_cast<uint64_t>(info.f_bavail) * info.f_frsize;
}

std::map<std::string, std::string> container_files(const fs::path& dir) {
    std::map<std::string, std::string> files;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.is_regular_file()) files[entry.path().filename().string()] = read_file(entry.path());
    return files;
}

std::vector<std::string> tmp_files_under(const fs::path& dir) {
    std::vector<std::string> found;
    std::error_code error;
    for (const auto& entry : fs::recursive_directory_iterator(dir, error))
        if (entry.path().filename().string().ends_with(".tmp")) found.push_back(entry.path().string());
    return found;
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

void write_file(const fs::path& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace waste_test
