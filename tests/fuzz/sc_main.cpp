// SystemC's library calls sc_main from its main(); a fuzz target's main is
// libFuzzer's, so this one is never called.
extern "C" int sc_main(int, char**) { return 0; }
