// windows_text.h — UTF-8 (the library's text everywhere) to and from the
// UTF-16 that Windows' wide ("W") functions take. Windows builds only.
#pragma once

#include <string>
#include <string_view>

namespace waste::platform {

// Throws WASTE_ERR_INVALID_ARGUMENT naming `what` when the text is not UTF-8.
std::wstring utf8_to_wide(std::string_view text, const char* what);
std::string wide_to_utf8(std::wstring_view text);

// The system's words for a GetLastError() code.
std::string windows_error_text(unsigned long error);

}  // namespace waste::platform
