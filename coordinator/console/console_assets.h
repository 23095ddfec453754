// The console's static files (coordinator/console/static/), compiled into the binary at build
// time by embed_assets.cmake: no file is read and nothing is fetched at run time.
#ifndef COORDINATOR_CONSOLE_CONSOLE_ASSETS_H_
#define COORDINATOR_CONSOLE_CONSOLE_ASSETS_H_

#include <cstddef>
#include <string>

namespace coordinator {

struct ConsoleAsset {
  const char* name;  // the file's name, such as "console.js"
  const char* data;
  size_t size;
  const char* content_type;
};

// The file called `name` (no directories), or nullptr.
const ConsoleAsset* FindConsoleAsset(const std::string& name);

}  // namespace coordinator

#endif  // COORDINATOR_CONSOLE_CONSOLE_ASSETS_H_
