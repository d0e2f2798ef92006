// The one instantiation of the templates declared in support/instantiations.hpp (which
// tests/CMakeLists.txt forces into every test file, this one included).
#include "support/instantiations.hpp"

QKSCOPE_TEST_INSTANTIATIONS()
