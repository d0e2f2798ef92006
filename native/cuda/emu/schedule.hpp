// native/cuda/emu/schedule.hpp — the CPU interpreter's thread-order policy, without the rest
// of emu.hpp (which defines threadIdx & co. as macros): tests include only this.
#pragma once

namespace qkemu {

/// Order in which the ready threads of a block run between synchronisation points:
/// lowest_first / highest_first let one warp run as far as it can before the others move
/// (exposes missing barriers between warps); round_robin keeps warps in lockstep.
enum class Schedule { lowest_first, highest_first, round_robin };
Schedule schedule();
/// For the calling OS thread's later launches. Default: lowest_first.
void set_schedule(Schedule s);

}  // namespace qkemu
