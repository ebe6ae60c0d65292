// hostile_test.cpp — damaged, truncated and lying containers are refused.
//
// Every case copies an upstream fixture into a temporary directory (shared/
// is read-only), breaks one thing, and checks both the status and that the
// message names the offending object (the key, the file, "expert 3 of layer
// 1"), as docs/design.md asks. What format v0 says to ignore (a record's
// flags and reserved fields, the padding after the payload) is checked to be
// accepted. The CLI cases at the end run the `waste` binary.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/container.h"
#include "format/expert_record.h"
#include "platform/aligned_buffer.h"
#include "platform/error.h"
#include "test_support.h"
#include "waste/waste.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using waste::format::Container;
using waste::format::ContainerOptions;
using waste_test::TempDir;

// tiny.waste's facts the cases lean on (checked in FixtureFacts below).
constexpr uint64_t record_bytes = 12288;   // 3 x 4096
constexpr uint64_t payload_end = 9776;     // 48 + 3 x 3072 indices + 2 x (64+64+128) scales
constexpr uint64_t bank_bytes = 8 * record_bytes;
constexpr uint64_t codebook_record = 4112;  // 16 + 256 x 8 x 2

// A writable copy of an upstream fixture.
class Damaged {
public:
    explicit Damaged(const std::string& name = "tiny") : root_(dir_ / "model.waste") {
        waste_test::copy_container(waste_test::fixture(name + ".waste"), root_);
    }
    const fs::path& root() const { return root_; }
    std::string path() const { return root_.string(); }

    json manifest() const { return json::parse(waste_test::read_file(root_ / "manifest.json")); }
    void write_manifest(const json& manifest) const { write_manifest_text(manifest.dump(1)); }
    void write_manifest_text(const std::string& text) const { waste_test::write_file(root_ / "manifest.json", text); }
    void edit_manifest(const std::function<void(json&)>& edit) const {
        json m = manifest();
        edit(m);
        write_manifest(m);
    }

    // Overwrites bytes of a file in place.
    void patch(const std::string& file, uint64_t offset, const void* bytes, size_t size) const {
        std::string content = waste_test::read_file(root_ / file);
        ASSERT_LE(offset + size, content.size()) << file;
        std::memcpy(content.data() + offset, bytes, size);
        waste_test::write_file(root_ / file, content);
    }
    template <typename T>
    void patch_value(const std::string& file, uint64_t offset, T value) const {
        patch(file, offset, &value, sizeof value);
    }
    void flip_bit(const std::string& file, uint64_t offset, int bit) const {
        std::string content = waste_test::read_file(root_ / file);
        ASSERT_LT(offset, content.size()) << file;
        content[offset] = static_cast<char>(content[offset] ^ (1 << bit));
        waste_test::write_file(root_ / file, content);
    }
    void resize(const std::string& file, uint64_t size) const { fs::resize_file(root_ / file, size); }

private:
    TempDir dir_;
    fs::path root_;
};

json& trunk_entry(json& manifest, const std::string& name) {
    for (json& entry : manifest["trunk"])
        if (entry["name"] == name) return entry;
    throw std::runtime_error("no trunk tensor " + name);
}

::testing::AssertionResult contains_all(const std::string& message, const std::vector<std::string>& needles) {
    for (const std::string& needle : needles)
        if (message.find(needle) == std::string::npos)
            return ::testing::AssertionFailure() << "message \"" << message << "\" lacks \"" << needle << "\"";
    return ::testing::AssertionSuccess();
}

// Opening must fail with `status` and a message holding every needle, both
// through format::Container and through the C API (metadata only: the
// cheapest open must already refuse).
void expect_open_refused(const Damaged& damaged, waste_status status, const std::vector<std::string>& needles) {
    try {
        Container::open(damaged.path(), ContainerOptions{});
        ADD_FAILURE() << "Container::open accepted the damaged container";
    } catch (const waste::Error& error) {
        EXPECT_EQ(error.status(), status) << error.what();
        EXPECT_TRUE(contains_all(error.what(), needles));
    }
    waste_open_options options;
    waste_open_options_init(&options);
    options.flags = WASTE_OPEN_METADATA_ONLY;
    waste_model* model = nullptr;
    waste_error error{};
    const waste_status got = waste_model_open(damaged.path().c_str(), &options, &model, &error);
    EXPECT_EQ(got, status) << error.message;
    EXPECT_EQ(error.status, status);
    EXPECT_EQ(model, nullptr);
    EXPECT_TRUE(contains_all(error.message, needles));
    if (model) waste_model_close(model);
}

TEST(Hostile, FixtureFacts) {
    Damaged damaged;
    auto container = Container::open(damaged.path(), ContainerOptions{});
    EXPECT_EQ(container->expert_layout().record_bytes, record_bytes);
    EXPECT_EQ(container->expert_layout().payload_end, payload_end);
    EXPECT_EQ(container->bank(1).bytes, bank_bytes);
    EXPECT_EQ(container->manifest().quant.codebook_record_bytes(), codebook_record);
    EXPECT_EQ(container->bank(3).codebook_base, 18u);
}

// ------------------------------------------------------------------ manifest

struct ManifestCase {
    const char* name;
    std::function<void(json&)> edit;
    waste_status status;
    std::vector<std::string> needles;
};

std::ostream& operator<<(std::ostream& out, const ManifestCase& c) { return out << c.name; }

class ManifestTest : public ::testing::TestWithParam<ManifestCase> {};

TEST_P(ManifestTest, IsRefusedNamingTheKey) {
    Damaged damaged;
    damaged.edit_manifest(GetParam().edit);
    expect_open_refused(damaged, GetParam().status, GetParam().needles);
}

const char* const lm_head = "lm_head.weight";
const char* const norm = "model.norm.weight";

const ManifestCase manifest_cases[] = {
    {"format_version_missing", [](json& m) { m.erase("format_version"); }, WASTE_ERR_FORMAT, {"format_version is missing"}},
    {"format_version_999", [](json& m) { m["format_version"] = 999; }, WASTE_ERR_FORMAT, {"format_version 999"}},
    {"format_version_string", [](json& m) { m["format_version"] = "0"; }, WASTE_ERR_FORMAT, {"format_version \"0\""}},
    {"format_version_negative", [](json& m) { m["format_version"] = -1; }, WASTE_ERR_FORMAT, {"format_version -1"}},
    {"bank_file_parent", [](json& m) { m["layers"]["1"]["file"] = "../x"; }, WASTE_ERR_FORMAT, {"layers.1.file", "../x"}},
    {"bank_file_absolute", [](json& m) { m["layers"]["1"]["file"] = "/etc/passwd"; }, WASTE_ERR_FORMAT,
     {"layers.1.file", "/etc/passwd"}},
    {"bank_file_subdir", [](json& m) { m["layers"]["2"]["file"] = "sub/experts-L2.bin"; }, WASTE_ERR_FORMAT,
     {"layers.2.file", "sub/experts-L2.bin"}},
    {"bank_file_empty", [](json& m) { m["layers"]["2"]["file"] = ""; }, WASTE_ERR_FORMAT, {"layers.2.file"}},
    {"bank_file_dotdot", [](json& m) { m["layers"]["2"]["file"] = ".."; }, WASTE_ERR_FORMAT, {"layers.2.file"}},
    {"bank_file_not_string", [](json& m) { m["layers"]["2"]["file"] = 7; }, WASTE_ERR_FORMAT, {"layers.2.file"}},
    {"bank_file_absent", [](json& m) { m["layers"]["3"]["file"] = "experts-L9.bin"; }, WASTE_ERR_IO, {"experts-L9.bin"}},
    {"trunk_offset_past_end", [](json& m) { trunk_entry(m, lm_head)["off"] = 386152 - 100; }, WASTE_ERR_FORMAT,
     {"trunk tensor lm_head.weight", "past the end of trunk.bin"}},
    {"trunk_offset_huge", [](json& m) { trunk_entry(m, lm_head)["off"] = uint64_t{1} << 60; }, WASTE_ERR_FORMAT,
     {"trunk tensor lm_head.weight", "off"}},
    {"trunk_scales_past_end", [](json& m) { trunk_entry(m, lm_head)["scale_off"] = 386152 - 1; }, WASTE_ERR_FORMAT,
     {"trunk tensor lm_head.weight", "scales", "past the end of trunk.bin"}},
    {"trunk_shape_past_end",
     [](json& m) {
         json& t = trunk_entry(m, lm_head);  // [256, 128] Q8G -> [512, 128], with bytes to match
         t["shape"] = {512, 128};
         t["bytes"] = 512 * 128 + 512 * 2;
         t["scale_off"] = t["off"].get<uint64_t>() + 512 * 128;
     },
     WASTE_ERR_FORMAT, {"trunk tensor lm_head.weight", "past the end of trunk.bin"}},
    {"trunk_shape_disagrees_with_bytes", [](json& m) { trunk_entry(m, norm)["shape"] = {129}; }, WASTE_ERR_FORMAT,
     {"trunk tensor model.norm.weight", "bytes 512"}},
    {"trunk_shape_2_to_the_40",
     [](json& m) { trunk_entry(m, norm)["shape"] = {1048576, 1048576}; }, WASTE_ERR_FORMAT,
     {"trunk tensor model.norm.weight", "2^36"}},
    {"trunk_shape_four_max_dims",
     [](json& m) { trunk_entry(m, norm)["shape"] = {67108864, 67108864, 67108864, 67108864}; }, WASTE_ERR_FORMAT,
     {"trunk tensor model.norm.weight", "2^36"}},
    {"trunk_dim_over_2_to_the_26", [](json& m) { trunk_entry(m, norm)["shape"] = {67108865}; }, WASTE_ERR_FORMAT,
     {"trunk tensor model.norm.weight", "67108865"}},
    {"trunk_dim_huge_unsigned", [](json& m) { trunk_entry(m, norm)["shape"] = {UINT64_MAX}; }, WASTE_ERR_FORMAT,
     {"trunk tensor model.norm.weight", "out of range"}},
    {"trunk_dim_zero", [](json& m) { trunk_entry(m, norm)["shape"] = {0}; }, WASTE_ERR_FORMAT,
     {"trunk tensor model.norm.weight", "dimension 0"}},
    {"trunk_dim_negative", [](json& m) { trunk_entry(m, norm)["shape"] = {-128}; }, WASTE_ERR_FORMAT,
     {"trunk tensor model.norm.weight", "dimension -128"}},
    {"trunk_dim_not_integer", [](json& m) { trunk_entry(m, norm)["shape"] = {128.5}; }, WASTE_ERR_FORMAT,
     {"trunk tensor model.norm.weight", "128.5"}},
    {"trunk_no_dims", [](json& m) { trunk_entry(m, norm)["shape"] = json::array(); }, WASTE_ERR_FORMAT,
     {"trunk tensor model.norm.weight", "0 dims"}},
    {"trunk_five_dims", [](json& m) { trunk_entry(m, norm)["shape"] = {1, 1, 1, 1, 128}; }, WASTE_ERR_FORMAT,
     {"trunk tensor model.norm.weight", "5 dims"}},
    {"trunk_shape_missing", [](json& m) { trunk_entry(m, norm).erase("shape"); }, WASTE_ERR_FORMAT,
     {"trunk tensor model.norm.weight", "shape"}},
    {"trunk_fmt_unknown", [](json& m) { trunk_entry(m, norm)["fmt"] = 5; }, WASTE_ERR_FORMAT,
     {"trunk tensor model.norm.weight", "fmt 5"}},
    {"trunk_group_zero", [](json& m) { trunk_entry(m, lm_head)["group"] = 0; }, WASTE_ERR_FORMAT,
     {"trunk tensor lm_head.weight", "group 0"}},
    {"trunk_group_huge", [](json& m) { trunk_entry(m, lm_head)["group"] = 1 << 20; }, WASTE_ERR_FORMAT,
     {"trunk tensor lm_head.weight", "group"}},
    {"trunk_q4g_group_odd", [](json& m) { trunk_entry(m, "model.layers.0.mlp.up_proj.weight")["group"] = 127; },
     WASTE_ERR_FORMAT, {"trunk tensor model.layers.0.mlp.up_proj.weight", "odd"}},
    {"trunk_scale_off_missing", [](json& m) { trunk_entry(m, lm_head).erase("scale_off"); }, WASTE_ERR_FORMAT,
     {"trunk tensor lm_head.weight", "scale_off"}},
    {"trunk_duplicate_name", [](json& m) { m["trunk"][1]["name"] = m["trunk"][0]["name"]; }, WASTE_ERR_FORMAT,
     {"model.embed_tokens.weight", "twice"}},
    {"trunk_name_missing", [](json& m) { m["trunk"][2].erase("name"); }, WASTE_ERR_FORMAT, {"trunk[2]", "name"}},
    {"trunk_missing", [](json& m) { m.erase("trunk"); }, WASTE_ERR_FORMAT, {"trunk is missing"}},
    {"trunk_entry_not_object", [](json& m) { m["trunk"][3] = 17; }, WASTE_ERR_FORMAT, {"trunk[3]"}},
    {"codebook_base_out_of_range", [](json& m) { m["layers"]["3"]["codebook_base"] = 20; }, WASTE_ERR_FORMAT,
     {"layers.3.codebook_base 20"}},
    {"codebook_base_over_u16", [](json& m) { m["layers"]["3"]["codebook_base"] = 65536; }, WASTE_ERR_FORMAT,
     {"layers.3.codebook_base", "65536"}},
    {"bank_bytes_not_divisible", [](json& m) { m["layers"]["1"]["bytes"] = 98305; }, WASTE_ERR_FORMAT,
     {"layers.1.bytes", "98305", "experts 8"}},
    {"bank_bytes_zero", [](json& m) { m["layers"]["1"]["bytes"] = 0; }, WASTE_ERR_FORMAT, {"layers.1.bytes"}},
    {"record_not_multiple_of_4096", [](json& m) { m["layers"]["2"]["bytes"] = 8 * 4000; }, WASTE_ERR_FORMAT,
     {"layers.2", "record size 4000", "4096"}},
    {"bank_bytes_disagree_with_file", [](json& m) { m["layers"]["2"]["bytes"] = 8 * 16384; }, WASTE_ERR_FORMAT,
     {"layer 2", "experts-L2.bin", "98304"}},
    {"experts_not_num_experts", [](json& m) { m["layers"]["1"]["experts"] = 4; }, WASTE_ERR_FORMAT,
     {"layers.1.experts", "4", "num_experts 8"}},
    {"layers_entry_missing", [](json& m) { m["layers"].erase("2"); }, WASTE_ERR_FORMAT, {"layers.2 is missing"}},
    {"layers_missing", [](json& m) { m.erase("layers"); }, WASTE_ERR_FORMAT, {"layers"}},
    {"layers_entry_for_dense_layer", [](json& m) { m["layers"]["0"] = m["layers"]["1"]; }, WASTE_ERR_FORMAT,
     {"layers.0", "not an MoE layer"}},
    {"layers_entry_past_the_model", [](json& m) { m["layers"]["4"] = m["layers"]["1"]; }, WASTE_ERR_FORMAT,
     {"layers.4", "not an MoE layer"}},
    {"layers_key_not_decimal", [](json& m) { m["layers"]["x1"] = m["layers"]["1"]; }, WASTE_ERR_FORMAT,
     {"layers.x1", "decimal"}},
    {"layers_key_leading_zero", [](json& m) { m["layers"]["01"] = m["layers"]["1"]; }, WASTE_ERR_FORMAT,
     {"layers.01", "decimal"}},
    {"vec_dim_zero", [](json& m) { m["expert_quant"]["vec_dim"] = 0; }, WASTE_ERR_FORMAT, {"expert_quant.vec_dim", "0"}},
    {"vec_dim_65", [](json& m) { m["expert_quant"]["vec_dim"] = 65; }, WASTE_ERR_FORMAT, {"expert_quant.vec_dim", "65"}},
    {"vec_dim_does_not_divide", [](json& m) { m["expert_quant"]["vec_dim"] = 7; }, WASTE_ERR_FORMAT,
     {"expert_quant.vec_dim 7", "divide"}},
    {"entries_zero", [](json& m) { m["expert_quant"]["entries"] = 0; }, WASTE_ERR_FORMAT, {"expert_quant.entries", "0"}},
    {"entries_257", [](json& m) { m["expert_quant"]["entries"] = 257; }, WASTE_ERR_FORMAT,
     {"expert_quant.entries", "257"}},
    {"entries_disagree_with_codebooks", [](json& m) { m["expert_quant"]["entries"] = 64; }, WASTE_ERR_FORMAT,
     {"codebooks.bin", "111024"}},
    {"stages_zero", [](json& m) { m["expert_quant"]["stages"] = 0; }, WASTE_ERR_FORMAT, {"expert_quant.stages", "0"}},
    {"stages_9", [](json& m) { m["expert_quant"]["stages"] = 9; }, WASTE_ERR_FORMAT, {"expert_quant.stages", "9"}},
    {"stages_past_the_codebooks", [](json& m) { m["expert_quant"]["stages"] = 4; }, WASTE_ERR_FORMAT,
     {"layers.3.codebook_base 18", "27 codebook records"}},
    {"index_bits_7", [](json& m) { m["expert_quant"]["index_bits"] = 7; }, WASTE_ERR_FORMAT,
     {"expert_quant.index_bits", "7"}},
    {"index_bits_6_with_3_stages",
     [](json& m) {
         m["expert_quant"]["fmt"] = "VQ4P";
         m["expert_quant"]["index_bits"] = 6;
     },
     WASTE_ERR_FORMAT, {"expert_quant.index_bits", "stages 4", "stages 3"}},
    {"vq4p_with_index_bits_8",
     [](json& m) {
         m["expert_quant"] = {{"fmt", "VQ4P"}, {"stages", 4}, {"vec_dim", 8}, {"entries", 64}, {"index_block", 64},
                              {"index_bits", 8}};
     },
     WASTE_ERR_FORMAT, {"expert_quant", "VQ4P", "index_bits 8"}},
    {"vq4p_with_index_bits_absent",
     [](json& m) { m["expert_quant"] = {{"fmt", "VQ4P"}, {"stages", 4}, {"vec_dim", 8}, {"entries", 64}}; },
     WASTE_ERR_FORMAT, {"expert_quant", "VQ4P", "index_bits 8"}},
    {"vq3r_with_index_bits_6",
     [](json& m) { m["expert_quant"] = {{"fmt", "VQ3R"}, {"stages", 4}, {"vec_dim", 8}, {"entries", 64}, {"index_bits", 6}}; },
     WASTE_ERR_FORMAT, {"expert_quant", "VQ3R", "index_bits 6"}},
    {"expert_fmt_unknown", [](json& m) { m["expert_quant"]["fmt"] = "VQ9Z"; }, WASTE_ERR_FORMAT,
     {"expert_quant.fmt", "VQ9Z"}},
    {"index_block_32", [](json& m) { m["expert_quant"]["index_block"] = 32; }, WASTE_ERR_FORMAT,
     {"expert_quant.index_block", "32"}},
    {"expert_quant_missing", [](json& m) { m.erase("expert_quant"); }, WASTE_ERR_FORMAT, {"expert_quant is missing"}},
    {"config_missing", [](json& m) { m.erase("config"); }, WASTE_ERR_FORMAT, {"config is missing"}},
    {"config_not_object", [](json& m) { m["config"] = json::array(); }, WASTE_ERR_FORMAT, {"config"}},
    {"hidden_size_absurd", [](json& m) { m["config"]["hidden_size"] = int64_t{1} << 40; }, WASTE_ERR_FORMAT,
     {"config.hidden_size", "1099511627776"}},
    {"hidden_size_huge_unsigned", [](json& m) { m["config"]["hidden_size"] = UINT64_MAX; }, WASTE_ERR_FORMAT,
     {"config.hidden_size", "out of range"}},
    {"hidden_size_negative", [](json& m) { m["config"]["hidden_size"] = -128; }, WASTE_ERR_FORMAT,
     {"config.hidden_size", "-128"}},
    {"hidden_size_string", [](json& m) { m["config"]["hidden_size"] = "128"; }, WASTE_ERR_FORMAT,
     {"config.hidden_size", "\"128\""}},
    {"hidden_size_fraction", [](json& m) { m["config"]["hidden_size"] = 128.5; }, WASTE_ERR_FORMAT,
     {"config.hidden_size", "128.5"}},
    {"hidden_size_missing", [](json& m) { m["config"].erase("hidden_size"); }, WASTE_ERR_FORMAT, {"hidden_size"}},
    {"num_experts_zero", [](json& m) { m["config"]["num_experts"] = 0; }, WASTE_ERR_FORMAT, {"config.num_experts"}},
    {"num_experts_absurd", [](json& m) { m["config"]["num_experts"] = 1 << 30; }, WASTE_ERR_FORMAT,
     {"config.num_experts"}},
    {"top_k_above_experts", [](json& m) { m["config"]["num_experts_per_token"] = 9; }, WASTE_ERR_FORMAT,
     {"config.num_experts_per_token", "9"}},
    {"eos_outside_vocab", [](json& m) { m["config"]["eos_token_id"] = 256; }, WASTE_ERR_FORMAT,
     {"config.eos_token_id", "256"}},
    {"bos_outside_vocab", [](json& m) { m["config"]["bos_token_id"] = 1000; }, WASTE_ERR_FORMAT,
     {"config.bos_token_id", "1000"}},
    {"attn_res_block_above_layers", [](json& m) { m["config"]["attn_res_block_size"] = 99; }, WASTE_ERR_FORMAT,
     {"config.attn_res_block_size", "99"}},
    {"layer_key_leading_zero", [](json& m) { m["layers"]["01"] = m["layers"]["1"]; }, WASTE_ERR_FORMAT,
     {"layers.01", "not a decimal layer index"}},
    {"layers_absurd", [](json& m) { m["config"]["num_hidden_layers"] = 1 << 30; }, WASTE_ERR_FORMAT,
     {"config.num_hidden_layers"}},
    {"more_layers_than_banks", [](json& m) { m["config"]["num_hidden_layers"] = 5; }, WASTE_ERR_FORMAT,
     {"layers.4 is missing"}},
    {"vocab_absurd", [](json& m) { m["config"]["vocab_size"] = int64_t{1} << 40; }, WASTE_ERR_FORMAT,
     {"config.vocab_size"}},
    {"kda_layer_out_of_range", [](json& m) { m["config"]["linear_attn_config"]["kda_layers"] = {1, 2, 9}; },
     WASTE_ERR_FORMAT, {"kda_layers", "9"}},
    {"rms_eps_negative", [](json& m) { m["config"]["rms_norm_eps"] = -1.0; }, WASTE_ERR_FORMAT,
     {"config.rms_norm_eps"}},
    {"tensor_prefix_not_string", [](json& m) { m["tensor_prefix"] = 3; }, WASTE_ERR_FORMAT, {"tensor_prefix"}},
};

INSTANTIATE_TEST_SUITE_P(Cases, ManifestTest, ::testing::ValuesIn(manifest_cases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(HostileManifest, NotJson) {
    for (const std::string& text : {std::string("not json at all"), std::string(""), std::string("{\"format_version\": 0,"),
                                   std::string("\xff\xfe{}", 4)}) {
        SCOPED_TRACE(text);
        Damaged damaged;
        damaged.write_manifest_text(text);
        expect_open_refused(damaged, WASTE_ERR_FORMAT, {"manifest", "not valid JSON"});
    }
}

TEST(HostileManifest, NotAnObject) {
    Damaged damaged;
    damaged.write_manifest_text("[0, 1, 2]");
    expect_open_refused(damaged, WASTE_ERR_FORMAT, {"manifest", "object"});
}

TEST(HostileManifest, TruncatedHalfway) {
    Damaged damaged;
    const std::string text = waste_test::read_file(damaged.root() / "manifest.json");
    damaged.write_manifest_text(text.substr(0, text.size() / 2));
    expect_open_refused(damaged, WASTE_ERR_FORMAT, {"manifest", "not valid JSON"});
}

TEST(HostileManifest, DeepNestingIsRefusedNotRecursedInto) {
    // 200,000 nested arrays in a key nobody reads: copying, printing or
    // destroying such a value recursively would overflow the stack.
    Damaged damaged;
    std::string text = waste_test::read_file(damaged.root() / "manifest.json");
    const size_t at = text.find("\"config\": {");
    ASSERT_NE(at, std::string::npos);
    const size_t depth = 200000;
    text.insert(at + std::strlen("\"config\": {"), "\"deep\": " + std::string(depth, '[') + std::string(depth, ']') + ", ");
    damaged.write_manifest_text(text);
    expect_open_refused(damaged, WASTE_ERR_FORMAT, {"manifest", "nested"});
    // The same depth where a number is expected.
    Damaged second;
    second.edit_manifest([](json& m) { m["format_version"] = "PLACEHOLDER"; });
    text = waste_test::read_file(second.root() / "manifest.json");
    const size_t placeholder = text.find("\"PLACEHOLDER\"");
    ASSERT_NE(placeholder, std::string::npos);
    text.replace(placeholder, std::strlen("\"PLACEHOLDER\""), std::string(depth, '[') + std::string(depth, ']'));
    second.write_manifest_text(text);
    expect_open_refused(second, WASTE_ERR_FORMAT, {"manifest", "nested"});
}

TEST(HostileManifest, Missing) {
    Damaged damaged;
    fs::remove(damaged.root() / "manifest.json");
    expect_open_refused(damaged, WASTE_ERR_IO, {"manifest", "manifest.json"});
}

TEST(HostileManifest, NotADirectory) {
    Damaged damaged;
    try {
        Container::open((damaged.root() / "trunk.bin").string(), ContainerOptions{});
        ADD_FAILURE() << "a file opened as a container";
    } catch (const waste::Error& error) {
        EXPECT_EQ(error.status(), WASTE_ERR_IO);
        EXPECT_TRUE(contains_all(error.what(), {"trunk.bin", "not a container directory"}));
    }
}

// ------------------------------------------------------------------ files

TEST(HostileFiles, TruncatedBankIsRefusedAtOpen) {
    Damaged damaged;
    damaged.resize("experts-L2.bin", bank_bytes - 4096);
    expect_open_refused(damaged, WASTE_ERR_FORMAT, {"layer 2", "experts-L2.bin", "94208"});
}

TEST(HostileFiles, LongerBankIsRefusedAtOpen) {
    Damaged damaged;
    damaged.resize("experts-L3.bin", bank_bytes + 4096);
    expect_open_refused(damaged, WASTE_ERR_FORMAT, {"layer 3", "experts-L3.bin", "102400"});
}

TEST(HostileFiles, EmptyBankIsRefusedAtOpen) {
    Damaged damaged;
    damaged.resize("experts-L1.bin", 0);
    expect_open_refused(damaged, WASTE_ERR_FORMAT, {"layer 1", "experts-L1.bin"});
}

TEST(HostileFiles, BankMissing) {
    Damaged damaged;
    fs::remove(damaged.root() / "experts-L3.bin");
    expect_open_refused(damaged, WASTE_ERR_IO, {"experts-L3.bin"});
}

TEST(HostileFiles, BankIsADirectory) {
    Damaged damaged;
    fs::remove(damaged.root() / "experts-L3.bin");
    fs::create_directory(damaged.root() / "experts-L3.bin");
    expect_open_refused(damaged, WASTE_ERR_IO, {"experts-L3.bin"});
}

TEST(HostileFiles, TrunkMissingOrTruncated) {
    {
        Damaged damaged;
        fs::remove(damaged.root() / "trunk.bin");
        expect_open_refused(damaged, WASTE_ERR_IO, {"trunk", "trunk.bin"});
    }
    {
        Damaged damaged;
        damaged.resize("trunk.bin", 386152 - 1);  // cuts into lm_head's scales, the last tensor
        expect_open_refused(damaged, WASTE_ERR_FORMAT, {"trunk tensor lm_head.weight", "past the end of trunk.bin"});
    }
}

TEST(HostileFiles, CodebooksMissingTruncatedOrDamaged) {
    {
        Damaged damaged;
        fs::remove(damaged.root() / "codebooks.bin");
        expect_open_refused(damaged, WASTE_ERR_IO, {"codebooks", "codebooks.bin"});
    }
    {
        Damaged damaged;
        damaged.resize("codebooks.bin", 27 * codebook_record - 1);
        expect_open_refused(damaged, WASTE_ERR_FORMAT, {"codebooks.bin", "111023"});
    }
    {
        Damaged damaged;  // one whole record short: layer 3's books 18..26 no longer fit
        damaged.resize("codebooks.bin", 26 * codebook_record);
        expect_open_refused(damaged, WASTE_ERR_FORMAT, {"layers.3.codebook_base 18", "26 codebook records"});
    }
    {
        Damaged damaged;
        damaged.patch_value<uint32_t>("codebooks.bin", 10 * codebook_record, 0xDEADBEEF);
        expect_open_refused(damaged, WASTE_ERR_CORRUPT, {"codebook 10 (layer 2)", "magic 0xdeadbeef"});
    }
    {
        Damaged damaged;
        damaged.patch_value<uint16_t>("codebooks.bin", 4 * codebook_record + 4, 5);
        expect_open_refused(damaged, WASTE_ERR_CORRUPT, {"codebook 4 (layer 1)", "id 5"});
    }
    {
        Damaged damaged;
        damaged.patch_value<uint8_t>("codebooks.bin", 20 * codebook_record + 7, 4);
        expect_open_refused(damaged, WASTE_ERR_CORRUPT, {"codebook 20 (layer 3)", "x 4"});
    }
    {
        Damaged damaged;
        damaged.patch_value<uint32_t>("codebooks.bin", 20 * codebook_record + 8, 255);
        expect_open_refused(damaged, WASTE_ERR_CORRUPT, {"codebook 20 (layer 3)", "255 entries"});
    }
    {
        Damaged damaged;  // a NaN centroid value
        damaged.patch_value<uint16_t>("codebooks.bin", 2 * codebook_record + 16 + 2 * 37, 0x7E00);
        expect_open_refused(damaged, WASTE_ERR_CORRUPT, {"codebook 2 (layer 1)", "37", "not finite"});
    }
}

TEST(HostileFiles, NonFiniteTrunkValuesAreRefusedAtLoad) {
    for (const bool scale : {false, true}) {
        SCOPED_TRACE(scale ? "Q8G scale" : "F32 value");
        Damaged damaged;
        const json m = damaged.manifest();
        std::string name;
        uint64_t offset = 0;
        for (const json& t : m["trunk"]) {
            if (!scale && t["name"] == norm) offset = t["off"].get<uint64_t>() + 4 * 3, name = norm;
            if (scale && t["name"] == lm_head) offset = t["scale_off"].get<uint64_t>() + 2 * 5, name = lm_head;
        }
        ASSERT_FALSE(name.empty());
        if (scale) damaged.patch_value<uint16_t>("trunk.bin", offset, 0x7C00);
        else damaged.patch_value<uint32_t>("trunk.bin", offset, 0x7FC00000);
        // info and plan do not read the trunk: metadata-only still opens.
        waste_open_options options;
        waste_open_options_init(&options);
        options.flags = WASTE_OPEN_METADATA_ONLY;
        waste_model* model = nullptr;
        waste_error error{};
        ASSERT_EQ(waste_model_open(damaged.path().c_str(), &options, &model, &error), WASTE_OK) << error.message;
        waste_model_close(model);
        model = nullptr;
        options.flags = 0;
        EXPECT_EQ(waste_model_open(damaged.path().c_str(), &options, &model, &error), WASTE_ERR_CORRUPT);
        EXPECT_EQ(model, nullptr);
        EXPECT_TRUE(contains_all(error.message, {"trunk tensor " + name, scale ? "scale 5" : "value 3", "not finite"}));
    }
}

// A trunk tensor whose index entry is self-consistent but wrong for the model
// passes the reader (metadata-only open) and is refused when the engine binds
// the weights, naming the tensor.
void expect_full_open_refused(const Damaged& damaged, const std::vector<std::string>& needles) {
    waste_open_options options;
    waste_open_options_init(&options);
    options.flags = WASTE_OPEN_METADATA_ONLY;
    waste_model* model = nullptr;
    waste_error error{};
    ASSERT_EQ(waste_model_open(damaged.path().c_str(), &options, &model, &error), WASTE_OK) << error.message;
    waste_model_close(model);
    model = nullptr;
    options.flags = 0;
    EXPECT_EQ(waste_model_open(damaged.path().c_str(), &options, &model, &error), WASTE_ERR_FORMAT) << error.message;
    EXPECT_EQ(model, nullptr);
    EXPECT_TRUE(contains_all(error.message, needles));
    if (model) waste_model_close(model);
}

TEST(HostileTrunk, TensorOfTheWrongShapeIsRefusedAtFullOpen) {
    Damaged damaged;
    damaged.edit_manifest([](json& m) {
        json& t = trunk_entry(m, norm);  // [128] F32 -> [64], bytes to match
        t["shape"] = {64};
        t["bytes"] = 64 * 4;
    });
    expect_full_open_refused(damaged, {"model.norm.weight"});
}

TEST(HostileTrunk, MissingTensorIsRefusedAtFullOpen) {
    Damaged damaged;
    damaged.edit_manifest([](json& m) { trunk_entry(m, "model.layers.2.self_attn.kv_b_proj.weight")["name"] = "renamed"; });
    expect_full_open_refused(damaged, {"model.layers.2.self_attn.kv_b_proj.weight", "missing"});
}

// ------------------------------------------------------------------ expert records

struct HeaderField {
    const char* name;
    uint32_t offset;
    uint32_t size;       // 1, 2 or 4 bytes
    uint32_t value;      // written in place of the field
    const char* needle;  // "" when the field is ignored and the record must pass
};

std::ostream& operator<<(std::ostream& out, const HeaderField& f) { return out << f.name; }

class RecordHeaderTest : public ::testing::TestWithParam<HeaderField> {};

const HeaderField header_fields[] = {
    {"magic", 0, 4, 0x50584558, "magic 0x50584558 is not WEXP"},
    {"magic_zero", 0, 4, 0, "magic 0x00000000"},
    {"layer", 4, 2, 2, "header says layer 2"},
    {"expert_id", 6, 2, 4, "header says expert 4"},
    {"fmt_vq4p", 8, 1, 8, "fmt 8 disagrees with the manifest's VQ3R"},
    {"fmt_vq2r", 8, 1, 5, "fmt 5 disagrees"},
    {"fmt_zero", 8, 1, 0, "fmt 0 disagrees"},
    {"codebook_id", 10, 2, 9, "codebook_id 9"},
    {"codebook_id_past_books", 10, 2, 0xFFFF, "codebook_id 65535"},
    {"lowrank_id", 12, 2, 1, "lowrank_id 1"},
    {"blocks", 16, 4, 2, "2 blocks"},
    {"blocks_zero", 16, 4, 0, "0 blocks"},
    {"blocks_huge", 16, 4, 0xFFFFFFFF, "4294967295 blocks"},
    {"gate_off", 20, 4, 52, "gate_off 52"},
    {"up_off", 24, 4, 48 + 3072 + 1, "up_off 3121"},
    {"down_off", 28, 4, 48, "down_off 48"},
    {"scales_off", 32, 4, 12288, "scales_off 12288"},
    {"scales_off_huge", 32, 4, 0xFFFFFFF0, "scales_off 4294967280"},
    // Ignored by format v0 (written 0, never read); the CRC does not cover the header.
    {"flags", 9, 1, 0xFF, ""},
    {"reserved_14", 14, 2, 0xBEEF, ""},
    {"reserved_40", 40, 4, 0xFFFFFFFF, ""},
    {"reserved_44", 44, 4, 0x12345678, ""},
};

INSTANTIATE_TEST_SUITE_P(Fields, RecordHeaderTest, ::testing::ValuesIn(header_fields),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_P(RecordHeaderTest, CorruptFieldIsRefusedNamingTheRecord) {
    const HeaderField field = GetParam();
    Damaged damaged;
    const uint64_t at = 3 * record_bytes + field.offset;  // expert 3 of layer 1
    if (field.size == 1) damaged.patch_value<uint8_t>("experts-L1.bin", at, static_cast<uint8_t>(field.value));
    if (field.size == 2) damaged.patch_value<uint16_t>("experts-L1.bin", at, static_cast<uint16_t>(field.value));
    if (field.size == 4) damaged.patch_value<uint32_t>("experts-L1.bin", at, field.value);
    for (const bool verify : {false, true}) {
        SCOPED_TRACE(verify ? "with checksums" : "without checksums");
        ContainerOptions options;
        options.verify_checksums = verify;
        auto container = Container::open(damaged.path(), options);  // open reads no record
        waste::platform::AlignedBuffer record(record_bytes);
        ASSERT_NO_THROW(container->read_expert(1, 2, record.span()));  // the neighbours are intact
        ASSERT_NO_THROW(container->read_expert(1, 4, record.span()));
        if (!*field.needle) {
            EXPECT_NO_THROW(container->read_expert(1, 3, record.span()));
            continue;
        }
        try {
            container->read_expert(1, 3, record.span());
            ADD_FAILURE() << "a record with a corrupt " << field.name << " was accepted";
        } catch (const waste::Error& error) {
            EXPECT_EQ(error.status(), WASTE_ERR_CORRUPT) << error.what();
            EXPECT_TRUE(contains_all(error.what(), {"expert 3 of layer 1", field.needle}));
        }
    }
}

TEST(HostileRecord, CorruptHeaderFailsApiVerifyNamingTheRecord) {
    Damaged damaged;
    damaged.patch_value<uint32_t>("experts-L1.bin", 3 * record_bytes, 0);
    waste_open_options options;
    waste_open_options_init(&options);
    options.flags = WASTE_OPEN_METADATA_ONLY;
    waste_model* model = nullptr;
    waste_error error{};
    ASSERT_EQ(waste_model_open(damaged.path().c_str(), &options, &model, &error), WASTE_OK) << error.message;
    EXPECT_EQ(waste_model_verify(model, nullptr, nullptr, &error), WASTE_ERR_CORRUPT);
    EXPECT_TRUE(contains_all(error.message, {"expert 3 of layer 1", "magic"}));
    waste_model_close(model);
}

TEST(HostileRecord, RecordOfAnotherLayerIsRefused) {
    // A whole, self-consistent record (valid magic and CRC) in the wrong place.
    Damaged damaged;
    const std::string layer3 = waste_test::read_file(damaged.root() / "experts-L3.bin");
    damaged.patch("experts-L1.bin", 5 * record_bytes, layer3.data() + 5 * record_bytes, record_bytes);
    ContainerOptions options;
    options.verify_checksums = true;
    auto container = Container::open(damaged.path(), options);
    waste::platform::AlignedBuffer record(record_bytes);
    try {
        container->read_expert(1, 5, record.span());
        ADD_FAILURE() << "layer 3's record was accepted as layer 1's";
    } catch (const waste::Error& error) {
        EXPECT_EQ(error.status(), WASTE_ERR_CORRUPT);
        EXPECT_TRUE(contains_all(error.what(), {"expert 5 of layer 1", "header says layer 3"}));
    }
}

TEST(HostileRecord, OutOfRangeRequestsAreInvalidArguments) {
    Damaged damaged;
    auto container = Container::open(damaged.path(), ContainerOptions{});
    waste::platform::AlignedBuffer record(record_bytes);
    EXPECT_THROW(container->read_expert(1, 8, record.span()), waste::Error);
    EXPECT_THROW(container->read_expert(1, -1, record.span()), waste::Error);
    EXPECT_THROW(container->read_expert(0, 0, record.span()), waste::Error);  // layer 0 is dense
    EXPECT_THROW(container->read_expert(4, 0, record.span()), waste::Error);
    waste::platform::AlignedBuffer small(4096);
    EXPECT_THROW(container->read_expert(1, 0, small.span()), waste::Error);
    try {
        container->read_expert(2, 8, record.span());
    } catch (const waste::Error& error) {
        EXPECT_EQ(error.status(), WASTE_ERR_INVALID_ARGUMENT);
        EXPECT_TRUE(contains_all(error.what(), {"expert 8 of layer 2"}));
    }
}

struct BitFlip {
    const char* name;
    uint64_t offset;  // within the record
    bool covered;     // inside the CRC range [48, payload_end)
};

std::ostream& operator<<(std::ostream& out, const BitFlip& f) { return out << f.name; }

class PayloadBitTest : public ::testing::TestWithParam<BitFlip> {};

INSTANTIATE_TEST_SUITE_P(Where, PayloadBitTest,
                         ::testing::Values(BitFlip{"first_gate_index", 48, true}, BitFlip{"an_up_index", 48 + 3072 + 999, true},
                                           BitFlip{"a_down_index", 48 + 2 * 3072 + 5, true},
                                           BitFlip{"a_scale", 48 + 3 * 3072 + 301, true},
                                           BitFlip{"last_scale_byte", payload_end - 1, true},
                                           BitFlip{"padding", payload_end, false},
                                           BitFlip{"last_padding_byte", record_bytes - 1, false}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_P(PayloadBitTest, ReportedWithChecksumsOnlyInsideThePayload) {
    const BitFlip flip = GetParam();
    Damaged damaged;
    damaged.flip_bit("experts-L3.bin", 5 * record_bytes + flip.offset, 3);
    {
        auto container = Container::open(damaged.path(), ContainerOptions{});
        waste::platform::AlignedBuffer record(record_bytes);
        EXPECT_NO_THROW(container->read_expert(3, 5, record.span())) << "without --verify, only O(1) checks run";
    }
    ContainerOptions options;
    options.verify_checksums = true;
    auto container = Container::open(damaged.path(), options);
    waste::platform::AlignedBuffer record(record_bytes);
    ASSERT_NO_THROW(container->read_expert(3, 4, record.span()));
    if (!flip.covered) {
        EXPECT_NO_THROW(container->read_expert(3, 5, record.span())) << "padding is outside the CRC";
        return;
    }
    try {
        container->read_expert(3, 5, record.span());
        ADD_FAILURE() << "a flipped payload bit passed the checksum";
    } catch (const waste::Error& error) {
        EXPECT_EQ(error.status(), WASTE_ERR_CORRUPT);
        EXPECT_TRUE(contains_all(error.what(), {"expert 5 of layer 3", "checksum mismatch"}));
    }
}

TEST(HostileRecord, FlippedBitThroughTheApi) {
    Damaged damaged;
    damaged.flip_bit("experts-L3.bin", 5 * record_bytes + 2000, 0);
    for (const uint32_t flags : {static_cast<uint32_t>(WASTE_OPEN_METADATA_ONLY),
                                 static_cast<uint32_t>(WASTE_OPEN_METADATA_ONLY | WASTE_OPEN_VERIFY_CHECKSUMS)}) {
        waste_open_options options;
        waste_open_options_init(&options);
        options.flags = flags;
        waste_model* model = nullptr;
        waste_error error{};
        ASSERT_EQ(waste_model_open(damaged.path().c_str(), &options, &model, &error), WASTE_OK) << error.message;
        // waste_model_verify checks every CRC whatever the open flags.
        EXPECT_EQ(waste_model_verify(model, nullptr, nullptr, &error), WASTE_ERR_CORRUPT);
        EXPECT_TRUE(contains_all(error.message, {"expert 5 of layer 3", "checksum mismatch"}));
        waste_model_close(model);
    }
}

// ------------------------------------------------------------------ CLI

std::string cli() { return "'" + waste_test::cli_path().string() + "'"; }

TEST(HostileCli, InfoOnDamagedContainerExits1NamingTheKey) {
    Damaged damaged;
    damaged.edit_manifest([](json& m) { m["layers"]["1"]["file"] = "../x"; });
    std::string output;
    EXPECT_EQ(waste_test::run_command(cli() + " info '" + damaged.path() + "'", &output), 1) << output;
    EXPECT_TRUE(contains_all(output, {"layers.1.file", "../x"}));
}

TEST(HostileCli, InfoOnTruncatedBankExits1NamingTheFile) {
    Damaged damaged;
    damaged.resize("experts-L2.bin", bank_bytes - 4096);
    std::string output;
    EXPECT_EQ(waste_test::run_command(cli() + " info '" + damaged.path() + "'", &output), 1) << output;
    EXPECT_TRUE(contains_all(output, {"experts-L2.bin"}));
    EXPECT_EQ(waste_test::run_command(cli() + " info --json '" + damaged.path() + "'", &output), 1) << output;
    EXPECT_TRUE(contains_all(output, {"experts-L2.bin"}));
}

TEST(HostileCli, InfoOnNonJsonManifestExits1) {
    Damaged damaged;
    damaged.write_manifest_text("{{{");
    std::string output;
    EXPECT_EQ(waste_test::run_command(cli() + " info '" + damaged.path() + "'", &output), 1) << output;
    EXPECT_TRUE(contains_all(output, {"manifest", "not valid JSON"}));
}

TEST(HostileCli, InfoOnMissingDirectoryExits1) {
    TempDir dir;
    std::string output;
    EXPECT_EQ(waste_test::run_command(cli() + " info '" + (dir / "absent.waste").string() + "'", &output), 1) << output;
    EXPECT_TRUE(contains_all(output, {"absent.waste"}));
}

TEST(HostileCli, VerifyReportsTheFlippedBit) {
    Damaged damaged;
    std::string output;
    EXPECT_EQ(waste_test::run_command(cli() + " verify '" + damaged.path() + "'", &output), 0) << output;
    damaged.flip_bit("experts-L3.bin", 5 * record_bytes + 2000, 6);
    EXPECT_EQ(waste_test::run_command(cli() + " verify '" + damaged.path() + "'", &output), 1) << output;
    EXPECT_TRUE(contains_all(output, {"expert 5 of layer 3", "checksum mismatch"}));
    // info does not read records: the same container still describes itself.
    EXPECT_EQ(waste_test::run_command(cli() + " info '" + damaged.path() + "'", &output), 0) << output;
}

TEST(HostileCli, MissingArgumentExits2) {
    std::string output;
    EXPECT_EQ(waste_test::run_command(cli() + " info", &output), 2) << output;
    EXPECT_EQ(waste_test::run_command(cli() + " verify", &output), 2) << output;
    EXPECT_EQ(waste_test::run_command(cli() + " no-such-command", &output), 2) << output;
}

}  // namespace
