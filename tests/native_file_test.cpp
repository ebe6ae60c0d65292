// native_file_test.cpp — the platform layer's files on every system
// (native_file.h under DirectFile, the read pool and OutputFile): offsets
// past 4 GiB (64-bit on Windows too, where ReadFile takes the offset in two
// halves), UTF-8 names that are not ASCII (Windows opens files by their
// UTF-16 names), a file replaced or resized under an open handle, and a
// missing file named in the error. Every comparison is of bytes: exact.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "platform/aligned_buffer.h"
#include "platform/async_reader.h"
#include "platform/direct_file.h"
#include "platform/error.h"
#include "platform/output_file.h"
#include "platform/utf8_path.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using waste::platform::AlignedBuffer;
using waste::platform::DirectFile;

constexpr uint64_t page = 4096;

std::vector<uint8_t> pattern(size_t bytes, uint8_t seed) {
    std::vector<uint8_t> out(bytes);
    for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 8));
    return out;
}

void write_at(const fs::path& path, uint64_t offset, const std::vector<uint8_t>& bytes) {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(file.is_open()) << path;
    file.seekp(static_cast<std::streamoff>(offset));
    ASSERT_TRUE(file.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size())).flush());
}

// A sparse file a little over 4 GiB (holes cost no disk), with a pattern
// written past the 4 GiB line, read back through every path: direct and
// buffered read_at, read_any at an unaligned offset, and the read pool.
TEST(NativeFile, OffsetsPastFourGibReadBackThroughEveryPath) {
    waste_test::TempDir dir;
    const fs::path path = dir / "large.bin";
    const uint64_t at = (uint64_t{4} << 30) + 2 * page;
    { std::ofstream create(path, std::ios::binary); }
    fs::resize_file(path, at + 4 * page);
    const std::vector<uint8_t> expected = pattern(2 * page, 11);
    write_at(path, at, expected);

    for (const bool direct : {true, false}) {
        const DirectFile file(path.string(), direct);
        EXPECT_EQ(file.size(), at + 4 * page);
        AlignedBuffer buffer(2 * page);
        file.read_at(at, buffer.span());
        EXPECT_EQ(0, std::memcmp(buffer.data(), expected.data(), expected.size())) << "direct=" << direct << ": " << file.io_mode_reason();
        std::vector<uint8_t> unaligned(1000);
        file.read_any(at + 123, unaligned);
        EXPECT_EQ(0, std::memcmp(unaligned.data(), expected.data() + 123, unaligned.size())) << "direct=" << direct;

        auto reader = waste::platform::make_async_reader(waste::platform::IoBackend::pread, 2);
        AlignedBuffer pooled(2 * page);
        reader->submit({file.native(), at, pooled.data(), static_cast<uint32_t>(2 * page), 7});
        waste::platform::ReadCompletion done;
        ASSERT_TRUE(reader->wait(&done));
        EXPECT_EQ(done.tag, 7u);
        EXPECT_EQ(done.error, 0) << waste::platform::system_error_text(done.error);
        EXPECT_EQ(done.bytes, 2 * page);
        EXPECT_EQ(0, std::memcmp(pooled.data(), expected.data(), expected.size())) << "direct=" << direct;
    }
}

// A file whose UTF-8 name is not ASCII is written by OutputFile, listed by
// std::filesystem under that name, and read back by DirectFile.
TEST(NativeFile, NonAsciiNamesAreUtf8) {
    waste_test::TempDir dir;
    const std::string name = "données-数据-" "\xF0\x9F\x93\x84" ".bin";  // U+1F4C4 needs a UTF-16 surrogate pair
    const std::string path = waste::platform::utf8_text(dir.path()) + "/" + name;
    const std::vector<uint8_t> expected = pattern(3 * page + 17, 3);
    waste::platform::OutputFile out(path);
    out.write(expected);
    out.commit();
    std::vector<std::string> listed;
    for (const auto& entry : fs::directory_iterator(dir.path())) listed.push_back(waste::platform::utf8_text(entry.path().filename()));
    ASSERT_EQ(listed, std::vector<std::string>{name});
    const DirectFile file(path, false);
    std::vector<uint8_t> read(expected.size());
    file.read_at(0, read);
    EXPECT_EQ(read, expected);
}

// check_unchanged: a file resized in place, or replaced by a rename, under
// an open handle is reported naming it; an untouched one is not.
TEST(NativeFile, ResizedOrReplacedFilesAreNoticed) {
    waste_test::TempDir dir;
    const fs::path path = dir / "bank.bin";
    waste_test::write_file(path, std::string(2 * page, 'a'));
    {
        const DirectFile file(path.string(), true);
        EXPECT_NO_THROW(file.check_unchanged());
        fs::resize_file(path, 3 * page);
        try {
            file.check_unchanged();
            ADD_FAILURE() << "a resized file passed";
        } catch (const waste::Error& e) {
            EXPECT_NE(std::string(e.what()).find("changed size"), std::string::npos) << e.what();
        }
    }
    const DirectFile file(path.string(), true);
    waste_test::write_file(dir / "other.bin", std::string(3 * page, 'b'));
    std::error_code refused;
    fs::rename(dir / "other.bin", path, refused);
    if (refused) {
        // Windows (and Wine) refuse to rename over a file another handle has
        // open: then nothing changed under this one, and it must say so.
        std::printf("the rename over the open file was refused: %s\n", refused.message().c_str());
        EXPECT_NO_THROW(file.check_unchanged());
        return;
    }
    try {
        file.check_unchanged();
        ADD_FAILURE() << "a replaced file passed";
    } catch (const waste::Error& e) {
        EXPECT_NE(std::string(e.what()).find("replaced"), std::string::npos) << e.what();
    }
}

TEST(NativeFile, AMissingFileIsNamed) {
    waste_test::TempDir dir;
    const std::string path = (dir / "absent.bin").string();
    for (const bool direct : {true, false}) {
        try {
            const DirectFile file(path, direct);
            ADD_FAILURE() << "opened a missing file";
        } catch (const waste::Error& e) {
            EXPECT_EQ(e.status(), WASTE_ERR_IO);
            EXPECT_NE(std::string(e.what()).find("absent.bin"), std::string::npos) << e.what();
        }
    }
}

}  // namespace
