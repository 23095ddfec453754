// The one source of the precompiled-header targets (CMakeLists.txt, COORD_PCH): a target needs
// a source for CMake to make its precompiled header.
