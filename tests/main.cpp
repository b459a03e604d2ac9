// SystemC owns main(); tests run from sc_main. Each test runs in its own
// process (gtest_discover_tests), because SystemC elaborates once per process.
#include <gtest/gtest.h>

#include <systemc>

#include <cstdlib>

#include "models/core/kernel.h"

int sc_main(int argc, char** argv) {
  fabricvp::core::init_kernel();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
