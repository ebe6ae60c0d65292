// nfc_normalizer_windows.cpp — NFC through Windows' own NormalizeString
// (nfc_normalizer.h): Windows ships the Unicode normalisation tables, so the
// Windows build needs no ICU. The text goes through UTF-16 and back.
#include "text/nfc_normalizer.h"

#include <windows.h>

#include "platform/error.h"
#include "platform/windows_text.h"

namespace waste::text {

bool is_nfc(std::string_view text) {
    if (text.empty()) return true;
    const std::wstring wide = platform::utf8_to_wide(text, "text to normalise");
    return ::IsNormalizedString(NormalizationC, wide.data(), static_cast<int>(wide.size()));
}

std::string to_nfc(std::string_view text) {
    if (text.size() > INT32_MAX) fail(WASTE_ERR_INVALID_ARGUMENT, "text: {} bytes, too long to normalise", text.size());
    if (text.empty()) return {};
    const std::wstring wide = platform::utf8_to_wide(text, "text to normalise");
    // The first call estimates the size; a wrong estimate is answered with
    // ERROR_INSUFFICIENT_BUFFER and a better one (Microsoft's documented loop).
    int capacity = ::NormalizeString(NormalizationC, wide.data(), static_cast<int>(wide.size()), nullptr, 0);
    for (int attempt = 0; attempt < 10 && capacity > 0; ++attempt) {
        std::wstring out(static_cast<size_t>(capacity), L'\0');
        const int length = ::NormalizeString(NormalizationC, wide.data(), static_cast<int>(wide.size()), out.data(), capacity);
        if (length > 0) return platform::wide_to_utf8({out.data(), static_cast<size_t>(length)});
        const DWORD error = ::GetLastError();
        if (error != ERROR_INSUFFICIENT_BUFFER)
            fail(WASTE_ERR_INTERNAL, "NFC normalisation failed: {}", platform::windows_error_text(error));
        capacity = -length;
    }
    fail(WASTE_ERR_INTERNAL, "NFC normalisation failed: NormalizeString could not size its output");
}

}  // namespace waste::text
