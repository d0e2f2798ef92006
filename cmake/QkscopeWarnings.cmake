# qkscope_warnings: the warning set for every target compiled from this repo.
# Eigen comes in as an imported target, so its headers are SYSTEM and stay quiet.
add_library(qkscope_warnings INTERFACE)
target_compile_options(qkscope_warnings INTERFACE -Wall -Wextra)
