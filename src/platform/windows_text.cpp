// windows_text.cpp — windows_text.h. Compiled on Windows only (CMakeLists.txt
// takes *_windows.cpp and windows_*.cpp there, *_posix.cpp elsewhere).
#include "platform/windows_text.h"

#include <windows.h>

#include "platform/error.h"

namespace waste::platform {

std::wstring utf8_to_wide(std::string_view text, const char* what) {
    if (text.empty()) return {};
    if (text.size() > 0x7fffffff) fail(WASTE_ERR_INVALID_ARGUMENT, "{} is {} bytes long", what, text.size());
    const int length = static_cast<int>(text.size());
    const int wide_length = ::MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, text.data(), length, nullptr, 0);
    if (wide_length <= 0) fail(WASTE_ERR_INVALID_ARGUMENT, "{} \"{}\" is not valid UTF-8", what, text);
    std::wstring wide(static_cast<size_t>(wide_length), L'\0');
    ::MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, text.data(), length, wide.data(), wide_length);
    return wide;
}

std::string wide_to_utf8(std::wstring_view text) {
    if (text.empty()) return {};
    const int length = static_cast<int>(text.size());
    const int bytes = ::WideCharToMultiByte(CP_UTF8, 0, text.data(), length, nullptr, 0, nullptr, nullptr);
    if (bytes <= 0) return {};
    std::string out(static_cast<size_t>(bytes), '\0');
    ::WideCharToMultiByte(CP_UTF8, 0, text.data(), length, out.data(), bytes, nullptr, nullptr);
    return out;
}

std::string windows_error_text(unsigned long error) {
    wchar_t* text = nullptr;
    const DWORD length =
        ::FormatMessageW(FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, nullptr,
                         error, 0, reinterpret_cast<wchar_t*>(&text), 0, nullptr);
    std::string words = length ? wide_to_utf8({text, length}) : std::string();
    if (text) ::LocalFree(text);
    while (!words.empty() && (words.back() == '\n' || words.back() == '\r' || words.back() == ' ' || words.back() == '.'))
        words.pop_back();
    return fmt::format("{} (Windows error {})", words.empty() ? "unknown error" : words, error);
}

}  // namespace waste::platform
