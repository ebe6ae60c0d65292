// expert_record.h — one expert record of an expert bank (container-v0 §5).
//
// Owns the record layout implied by the shapes (where gate, up, down indices
// and the row scales sit), the 48-byte header, the always-on O(1) checks made
// on every read, and the CRC-32 checked on request. It does no I/O.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "format/manifest.h"

namespace waste::format {

constexpr uint32_t expert_record_magic = 0x50584557;  // "WEXP"
constexpr uint32_t expert_header_bytes = 48;
constexpr uint32_t codebook_magic = 0x4B424357;       // "WCBK"
constexpr uint64_t direct_io_block = 4096;

struct ExpertRecordHeader {
    uint32_t magic = 0;
    uint16_t layer = 0;
    uint16_t expert = 0;
    uint8_t fmt = 0;
    uint8_t flags = 0;
    uint16_t codebook_id = 0;
    uint16_t lowrank_id = 0;
    uint16_t reserved0 = 0;
    uint32_t blocks = 0;
    uint32_t gate_off = 0, up_off = 0, down_off = 0, scales_off = 0;
    uint32_t crc32 = 0;
    uint32_t reserved1[2] = {0, 0};
};

ExpertRecordHeader decode_expert_header(const uint8_t* bytes);   // 48 bytes
void encode_expert_header(const ExpertRecordHeader& header, uint8_t* bytes);

// One VQ matrix of an expert: M rows, N columns.
struct VqMatrixShape {
    uint32_t rows = 0, cols = 0;
    uint64_t index_bytes = 0;  // nb*64*nv*(S or 3)
};

// Where everything sits in a record of this model.
struct ExpertLayout {
    VqMatrixShape gate, up, down;   // gate/up [I, lat], down [lat, I]
    uint32_t gate_off = expert_header_bytes, up_off = 0, down_off = 0, scales_off = 0;
    uint32_t scale_count = 0;       // M_gate + M_up + M_down
    uint64_t payload_end = 0;       // scales_off + 2*scale_count (end of CRC range)
    uint64_t record_bytes = 0;      // the smallest multiple of 4096 that holds it
    uint8_t record_fmt = 4;         // the fmt code a writer puts in the header
};

ExpertLayout expert_layout(const ModelConfig& config, const ExpertQuant& quant);

// The always-on checks. Throws waste::Error(WASTE_ERR_CORRUPT) naming the
// record ("expert 412 of layer 37: magic 0x00000000 is not WEXP").
void check_expert_record(std::span<const uint8_t> record, int layer, int expert, const ExpertBank& bank,
                         const ExpertQuant& quant, const ExpertLayout& layout, uint64_t codebook_records);

// CRC-32 of the payload; throws WASTE_ERR_CORRUPT on mismatch.
void verify_expert_checksum(std::span<const uint8_t> record, int layer, int expert, const ExpertLayout& layout);

}  // namespace waste::format

namespace waste::format {

// When a codebook has fewer entries than the index width can name (entries <
// 256, or < 64 for 6-bit VQ4P), every index is checked to be < entries, so a
// corrupt byte can never read outside the lookup table. O(record); skipped
// for full-width codebooks, where every index value is valid.
void check_expert_indices(std::span<const uint8_t> record, int layer, int expert, const ExpertQuant& quant,
                          const ExpertLayout& layout);

}  // namespace waste::format
