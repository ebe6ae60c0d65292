// image_source_test.cpp — where a chat request's image bytes come from
// (k3-chat.md §10, waste_image_source_read): base64 data: URLs always,
// paths and file:// URLs only when allowed, http(s) never; every refusal
// with OpenAI's error object and its code. Exact comparisons: bytes are bytes.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "waste/waste.h"

namespace {

namespace fs = std::filesystem;

struct Read {
    waste_status status = WASTE_OK;
    std::string bytes, code, message;
};

// flags for waste_image_source_read; with `dir`, waste_image_source_read_in_dir
// instead, reading no file over max_file_bytes (0: the 64 MiB bound).
Read read_source(const std::string& ref, uint32_t flags = 0, const char* dir = nullptr, bool in_dir = false, uint64_t max_file_bytes = 0) {
    Read out;
    char* bytes = nullptr;
    size_t size = 0;
    char* error_json = nullptr;
    waste_error error{};
    out.status = in_dir ? waste_image_source_read_in_dir(ref.data(), ref.size(), dir, max_file_bytes, &bytes, &size, &error_json, &error)
                        : waste_image_source_read(ref.data(), ref.size(), flags, &bytes, &size, &error_json, &error);
    if (bytes) out.bytes.assign(bytes, size);
    if (error_json) {
        const auto parsed = nlohmann::json::parse(error_json);
        out.code = parsed.value("code", nlohmann::json()).is_string() ? parsed["code"].get<std::string>() : "";
        EXPECT_EQ(parsed.value("param", ""), "messages");
        EXPECT_EQ(parsed.value("message", ""), error.message);
    }
    out.message = error.message;
    waste_string_free(bytes);
    waste_string_free(error_json);
    return out;
}

TEST(ImageSource, Base64DataUrlsDecodeToTheirBytes) {
    // "\x89PNG\r\n\x1a\n\0\xff" in base64
    const Read r = read_source("data:image/png;base64,iVBORw0KGgoA/w==");
    ASSERT_EQ(r.status, WASTE_OK) << r.message;
    EXPECT_EQ(r.bytes, std::string("\x89PNG\r\n\x1a\n\0\xff", 10));
    EXPECT_EQ(read_source("DATA:;BASE64,AAEC").bytes, std::string("\0\1\2", 3)) << "scheme and ;base64 are case-insensitive";
}

TEST(ImageSource, RefusalsCarryTheirCode) {
    const struct {
        std::string ref, code;
    } cases[] = {
        {"data:image/png,rawbytes", "invalid_image_url"},           // not base64
        {"data:image/png;base64", "invalid_image_url"},             // no comma
        {"data:image/png;base64,iVBORw0KGgo", "invalid_image_url"},  // length not a multiple of 4
        {"data:image/png;base64,iV!ORw0K", "invalid_image_url"},     // outside the alphabet
        {"https://example.com/cat.png", "image_url_not_fetched"},
        {"HTTP://10.0.0.1/x.png", "image_url_not_fetched"},
        {"ftp://example.com/x.png", "invalid_image_url"},
        {"", "invalid_image_url"},
        {"/etc/hostname", "local_images_disallowed"},
        {"file:///etc/hostname", "local_images_disallowed"},
    };
    for (const auto& c : cases) {
        const Read r = read_source(c.ref);
        EXPECT_EQ(r.status, WASTE_ERR_INVALID_ARGUMENT) << c.ref;
        EXPECT_EQ(r.code, c.code) << c.ref << ": " << r.message;
        EXPECT_TRUE(r.bytes.empty());
    }
    // A long data: URL is quoted, not echoed whole.
    const Read long_one = read_source("data:image/png;base64," + std::string(100000, '!'));
    EXPECT_LT(long_one.message.size(), 300u) << long_one.message;
}

TEST(ImageSource, LocalFilesOnlyWhenAllowedAndBounded) {
    waste_test::TempDir tmp;
    const std::string path = (tmp / "img.bin").string();
    waste_test::write_file(path, std::string("GIF89a\0\1", 8));
    for (const std::string& ref : {path, "file://" + path}) {
        const Read r = read_source(ref, WASTE_IMAGE_LOCAL_FILES);
        ASSERT_EQ(r.status, WASTE_OK) << ref << ": " << r.message;
        EXPECT_EQ(r.bytes, std::string("GIF89a\0\1", 8));
    }
    EXPECT_EQ(read_source((tmp / "missing.png").string(), WASTE_IMAGE_LOCAL_FILES).code, "invalid_image");
    EXPECT_EQ(read_source(tmp.path().string(), WASTE_IMAGE_LOCAL_FILES).code, "invalid_image") << "a directory";
    // Over 64 MiB (a sparse file: nothing is written) is refused, not read whole.
    const std::string big = (tmp / "big.png").string();
    waste_test::write_file(big, "x");
    ASSERT_EQ(::truncate(big.c_str(), (off_t{64} << 20) + 1), 0);
    const Read r = read_source(big, WASTE_IMAGE_LOCAL_FILES);
    EXPECT_EQ(r.code, "invalid_image");
    EXPECT_NE(r.message.find("more than"), std::string::npos) << r.message;
    waste_error error{};
    char* bytes = nullptr;
    size_t size = 0;
    EXPECT_EQ(waste_image_source_read("x", 1, 2, &bytes, &size, nullptr, &error), WASTE_ERR_INVALID_ARGUMENT) << "unknown flag";
    // A FIFO named as an image is refused at once, not waited on for a writer.
    const std::string fifo = (tmp / "fifo.png").string();
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_EQ(read_source(fifo, WASTE_IMAGE_LOCAL_FILES).code, "invalid_image");
}

// A server's --image-dir (issue 35): only regular files under the directory,
// after links and ".." are resolved; what lies outside is refused in words
// that do not say whether it exists, and no refusal quotes a file.
TEST(ImageSource, AnImageDirReadsOnlyRegularFilesUnderIt) {
    waste_test::TempDir tmp;
    const fs::path dir = tmp / "images";
    fs::create_directories(dir / "sub");
    const std::string gif("GIF89a\0\1", 8);
    waste_test::write_file(dir / "ok.gif", gif);
    waste_test::write_file(dir / "sub" / "deep.gif", gif);
    waste_test::write_file(tmp / "secret.txt", "PRIVATE-CONTENTS");
    fs::create_symlink(tmp / "secret.txt", dir / "outside-link.gif");
    fs::create_symlink(dir / "ok.gif", dir / "inside-link.gif");
    fs::create_symlink("/dev/zero", dir / "zero.gif");
    ASSERT_EQ(::mkfifo((dir / "fifo.gif").c_str(), 0600), 0);
    const std::string d = dir.string();
    auto in_dir = [&](const std::string& ref) { return read_source(ref, 0, d.c_str(), true); };

    for (const std::string& ref : std::vector<std::string>{(dir / "ok.gif").string(), "ok.gif", "file://" + (dir / "ok.gif").string(), "sub/deep.gif",
                                   "sub/../ok.gif", "inside-link.gif", (tmp / "images" / "." / "ok.gif").string()}) {
        const Read r = in_dir(ref);
        ASSERT_EQ(r.status, WASTE_OK) << ref << ": " << r.message;
        EXPECT_EQ(r.bytes.size(), 8u) << ref;
    }
    // Outside: the same refusal whether or not the file exists.
    const std::string outside_words = "is not allowed: only files under the server's image directory are read";
    for (const std::string& ref : std::vector<std::string>{(tmp / "secret.txt").string(), (tmp / "missing.txt").string(), "../secret.txt",
                                   "sub/../../secret.txt", "outside-link.gif", "zero.gif", "/etc/passwd", "/dev/zero",
                                   "missing.gif", d, "file://" + (tmp / "secret.txt").string()}) {
        const Read r = in_dir(ref);
        EXPECT_EQ(r.status, WASTE_ERR_INVALID_ARGUMENT) << ref;
        EXPECT_EQ(r.code, "local_images_disallowed") << ref << ": " << r.message;
        EXPECT_NE(r.message.find(outside_words), std::string::npos) << r.message;
        EXPECT_EQ(r.message.find("PRIVATE"), std::string::npos) << r.message;
        EXPECT_EQ(r.message.find("No such file"), std::string::npos) << r.message;
    }
    // Inside but not a regular file: refused at once (a FIFO never blocks)
    for (const std::string ref : {"fifo.gif", "sub"}) {
        const Read r = in_dir(ref);
        EXPECT_EQ(r.code, "invalid_image") << ref << ": " << r.message;
        EXPECT_NE(r.message.find("is not an image file"), std::string::npos) << r.message;
    }
    // No directory: nothing local; a directory that is not one: an argument error
    EXPECT_EQ(read_source((dir / "ok.gif").string(), 0, nullptr, true).code, "local_images_disallowed");
    const std::string not_dir = (dir / "ok.gif").string();
    const Read bad = read_source("ok.gif", 0, not_dir.c_str(), true);
    EXPECT_EQ(bad.status, WASTE_ERR_INVALID_ARGUMENT);
    EXPECT_NE(bad.message.find("is not a directory"), std::string::npos) << bad.message;
    // data: URLs as ever
    EXPECT_EQ(in_dir("DATA:;BASE64,AAEC").bytes, std::string("\0\1\2", 3));
    // The caller's bound (what a server's request may still hold): a file of
    // exactly that many bytes is read, one byte over is refused unread.
    EXPECT_EQ(read_source("ok.gif", 0, d.c_str(), true, 8).bytes, gif);
    const Read over = read_source("ok.gif", 0, d.c_str(), true, 7);
    EXPECT_EQ(over.code, "invalid_image") << over.message;
    EXPECT_NE(over.message.find("over 7 bytes"), std::string::npos) << over.message;
    EXPECT_EQ(read_source("ok.gif", 0, d.c_str(), true, uint64_t{1} << 40).bytes, gif) << "a bound over 64 MiB is 64 MiB";
}

}  // namespace
