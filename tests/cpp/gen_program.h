// The random program generator lives in the library (interp/random_program.h),
// so that `eqiforge-opt gen-program` and the whole-optimizer fuzzer draw the
// same programs as these tests.
#pragma once

#include "interp/random_program.h"
