// The text format (docs/ir.md): S-expressions, easy to write by hand.
#pragma once

#include <string>
#include <string_view>

#include "eqiforge/ir/program.h"

namespace eqf {

// Parses one program. Throws eqf::Error with file:line:col on malformed text,
// unknown ops, wrong arity, undefined or duplicate names, cycles. Does not
// type-check (see typecheck.h); parse_and_check does both.
Program parse_program(std::string_view text, const std::string& file = "<string>");
Program parse_program_file(const std::string& path);
Program parse_and_check(std::string_view text, const std::string& file = "<string>");
Program parse_and_check_file(const std::string& path);

// Prints a program; parse_program(print_program(p)) is the same program
// (Program::same_as) and printing it again gives the same text.
std::string print_program(const Program& p);
// Prints the term rooted at one node (lets inlined), e.g. for messages.
std::string print_term(const Program& p, NodeId root);

}  // namespace eqf
