// checkpoint_source.cpp — the converter's WeightSource over a safetensors
// checkpoint directory (checkpoint.h), and convert_checkpoint().
#include <algorithm>
#include <filesystem>
#include <fstream>

#include "convert/checkpoint.h"
#include "convert/checkpoint_source.h"
#include "convert/converter.h"
#include "platform/error.h"

namespace waste::convert {
namespace {

class CheckpointSource final : public WeightSource {
public:
    explicit CheckpointSource(const Checkpoint& checkpoint) : ck_(checkpoint) {}
    std::vector<std::string> names() const override { return ck_.names(); }
    bool has(const std::string& name) const override { return ck_.has(name); }
    SourceTensor info(const std::string& name) const override {
        const TensorInfo& t = ck_.info(name);
        SourceTensor out;
        out.shape = t.shape;
        out.storage = std::string(encoding_name(t.encoding)) + " " + dtype_name(t.dtype);
        out.shards.push_back(t.shard);
        for (const std::string& shard : t.part_shards)
            if (std::find(out.shards.begin(), out.shards.end(), shard) == out.shards.end()) out.shards.push_back(shard);
        return out;
    }
    void read_rows(const std::string& name, uint64_t first, uint64_t count, std::span<float> out) const override {
        ck_.read_f32_rows(name, first, count, out);
    }
    std::vector<std::string> shards() const override {
        std::vector<std::string> out;
        for (const ShardInfo& s : ck_.shards()) out.push_back(s.file);
        return out;
    }
    void release_shard(const std::string& shard) const override { ck_.release_shard(shard); }
    bool shard_reclaimed(const std::string& shard) const override { return ck_.shard_file(shard).is_reclaimed(); }

private:
    const Checkpoint& ck_;
};

}  // namespace

std::unique_ptr<WeightSource> checkpoint_source(const Checkpoint& checkpoint) {
    return std::make_unique<CheckpointSource>(checkpoint);
}

nlohmann::ordered_json read_release_config(const std::string& source_dir) {
    const std::filesystem::path config_path = std::filesystem::path(source_dir) / "config.json";
    // Key order kept: the manifest holds config.json verbatim.
    std::ifstream in(config_path);
    if (!in) fail(WASTE_ERR_IO, "cannot open {}", config_path.string());
    nlohmann::ordered_json config = nlohmann::ordered_json::parse(in, nullptr, false);
    if (config.is_discarded() || !config.is_object())
        fail(WASTE_ERR_FORMAT, "{}: not a JSON object", config_path.string());
    return config;
}

nlohmann::json convert_checkpoint(const std::string& source_dir, const std::string& out_dir,
                                  const ConvertOptions& options) {
    const nlohmann::ordered_json config = read_release_config(source_dir);
    // Shards a previous run of this conversion reclaimed are opened from the
    // headers it recorded; any other missing shard is still refused.
    const Checkpoint checkpoint = Checkpoint::open(source_dir, recorded_reclaimed_shards(out_dir));
    const CheckpointSource source(checkpoint);
    return convert_source(source, config, source_dir, out_dir, options);
}

}  // namespace waste::convert
