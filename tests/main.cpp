// SystemC owns main(); tests run from sc_main. Each test runs in its own
// process (gtest_discover_tests), because SystemC elaborates once per process.
#include <gtest/gtest.h>

#include <systemc>

#include <cstdlib>

int sc_main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
