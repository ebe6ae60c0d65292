// input_file.h — the one way a command reads a file the user named (a
// prompt, text to tokenize, a token stream, a specials.json): whole, with a
// size limit, refusing a directory, a missing or unreadable file and one
// over the limit with a RuntimeFailure (exit 1) that names the file. Pipes
// and other streams (`--file <(cmd)`, /dev/stdin) are read to the limit.
//
// Files the library opens itself (containers, rank files, traces, session
// states) are checked there.
#pragma once

#include <cstdint>
#include <string>

namespace waste_cli {

// `what` says what the file is for ("the prompt file", "the token stream").
std::string read_input_file(const std::string& path, uint64_t max_bytes, const std::string& what);

// A --chat-template FILE, bounded as the library bounds a template (1 MiB).
std::string read_chat_template_file(const std::string& path);

}  // namespace waste_cli
