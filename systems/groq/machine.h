// The scheduler's view of an elaborated Groq system: every chip's timing (the
// nominal clock, as a real compiler must assume), every port's cable, and the
// job's ranks (sw/sched/machine.h).
#pragma once

#include "sw/sched/machine.h"
#include "systems/groq/system.h"

namespace fabricvp::groq {

sched::Machine machine_of(const System& sys);

}  // namespace fabricvp::groq
