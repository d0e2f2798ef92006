// Catch2 v2 entry point for qkscope_tests (Debian's single header, v2.13).
// Kept alone in its own translation unit: the Catch2 implementation compiles once.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
