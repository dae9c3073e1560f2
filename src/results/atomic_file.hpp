#pragma once
// Result files are replaced whole or not at all: written beside the target,
// flushed to disk, then renamed over it.
#include <filesystem>
#include <string_view>

namespace latest {

void write_file_atomically(const std::filesystem::path& path, std::string_view contents);

// Whether `dir` exists and is writable, or could be created and written:
// checked without creating anything, so a refused run leaves no files.
bool directory_writable(const std::filesystem::path& dir);

}  // namespace latest
