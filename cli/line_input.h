// line_input.h — `waste chat`'s lines from stdin, and Ctrl-C: it stops the
// answer being generated, or discards the line being typed, without
// quitting (Ctrl-D, or Ctrl-Z Enter on Windows, at the prompt quits).
//
// One implementation per system family: line_input_posix.cpp (a SIGINT
// handler and the self-pipe trick), line_input_windows.cpp (a console
// control handler).
#pragma once

#include <string>

namespace waste_cli {

enum class LineResult { line, interrupted, end };

// Installs the Ctrl-C handler; throws RuntimeFailure when it cannot.
void install_interrupt_handler();
// 1 after a Ctrl-C not yet cleared (the shape of a generation's stop callback).
int interrupt_requested();
// Forgets a Ctrl-C already acted on (an answer it stopped).
void clear_interrupt();
// One line from stdin without its line ending. Ctrl-C while typing discards it.
LineResult read_line(std::string& line);

}  // namespace waste_cli
