// output_file_test.cpp — platform/output_file's publishing rules that need
// no full disk (those are in disk_full_test.cpp): one writer per target at a
// time, and a killed writer's stale temporary reused.
#include <gtest/gtest.h>

#include <string>

#include "platform/error.h"
#include "platform/output_file.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;
using waste::platform::OutputFile;
using waste::platform::OutputFileOptions;

std::span<const uint8_t> bytes_of(const std::string& text) {
    return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

OutputFileOptions small_buffered() {
    OutputFileOptions options;
    options.want_direct = false;
    options.buffer_bytes = 4096;
    options.buffers = 2;
    return options;
}

// A second writer of the same target while the first is still writing (two
// `--learn` runs at once) would empty and overwrite the shared path.tmp; it
// must fail naming the file, leave the first one's temporary alone, and the
// first must publish exactly its own bytes.
TEST(OutputFile, ASecondWriterOfTheSameTargetFailsAndTheFirstPublishesItsOwnBytes) {
    waste_test::TempDir dir;
    const fs::path target = dir / "usage.waste";
    const std::string first(10000, 'a');
    OutputFile a(target.string(), small_buffered());
    a.write(bytes_of(first));
    try {
        OutputFile b(target.string(), small_buffered());
        FAIL() << "a second writer of " << target << " was let in";
    } catch (const waste::Error& e) {
        EXPECT_EQ(e.status(), WASTE_ERR_IO);
        EXPECT_NE(std::string(e.what()).find(target.string()), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("another writer"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(fs::exists(dir / "usage.waste.tmp")) << "the refused writer removed the first one's temporary";
    a.commit();
    EXPECT_EQ(waste_test::read_file(target), first);
    EXPECT_TRUE(waste_test::tmp_files_under(dir.path()).empty());
    // Once the first has published, the target is free again.
    EXPECT_NO_THROW(waste::platform::write_small_file(target.string(), "second"));
    EXPECT_EQ(waste_test::read_file(target), "second");
}

// A writer killed part-way leaves path.tmp with no lock on it: the next
// writer takes it over, empties it, and publishes only its own bytes.
TEST(OutputFile, AStaleTemporaryIsReusedAndEmptied) {
    waste_test::TempDir dir;
    const fs::path target = dir / "state.bin";
    waste_test::write_file(dir / "state.bin.tmp", std::string(50000, 'x'));
    waste::platform::write_small_file(target.string(), "fresh");
    EXPECT_EQ(waste_test::read_file(target), "fresh");
    EXPECT_FALSE(fs::exists(dir / "state.bin.tmp"));
}

}  // namespace
