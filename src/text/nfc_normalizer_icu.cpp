// nfc_normalizer_icu.cpp — NFC through ICU's Normalizer2 (nfc_normalizer.h), on
// every system but Windows (CMakeLists.txt).
#include "text/nfc_normalizer.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>

#include "platform/error.h"

namespace waste::text {
namespace {

const icu::Normalizer2& nfc() {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* normalizer = icu::Normalizer2::getNFCInstance(status);
    if (U_FAILURE(status) || normalizer == nullptr)
        fail(WASTE_ERR_INTERNAL, "ICU: no NFC normalizer ({})", u_errorName(status));
    return *normalizer;
}

}  // namespace

bool is_nfc(std::string_view text) {
    UErrorCode status = U_ZERO_ERROR;
    const bool normalized =
        nfc().isNormalizedUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())), status);
    return U_SUCCESS(status) && normalized;
}

std::string to_nfc(std::string_view text) {
    if (text.size() > INT32_MAX) fail(WASTE_ERR_INVALID_ARGUMENT, "text: {} bytes, too long to normalise", text.size());
    std::string out;
    icu::StringByteSink<std::string> sink(&out);
    UErrorCode status = U_ZERO_ERROR;
    nfc().normalizeUTF8(0, icu::StringPiece(text.data(), static_cast<int32_t>(text.size())), sink, nullptr, status);
    if (U_FAILURE(status)) fail(WASTE_ERR_INTERNAL, "ICU: NFC normalisation failed ({})", u_errorName(status));
    return out;
}

}  // namespace waste::text
